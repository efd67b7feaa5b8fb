/*
 * lib/exec.c: the pipeline driver (compile once, run many).
 *
 * weft_compile runs the passes in order (sharing recovery, simplify, fuse)
 * into an arena owned by the executable, so that the executable does
 * not depend on the program afterwards, then hands the core to the
 * context's backend (a compiled backend plans its kernels itself:
 * runtime/plan.c).  weft_run checks the inputs against the parameters'
 * types and calls the backend.
 *
 * Deep programs.  The passes and the interpreter recurse over the terms, so
 * the stack they need follows the program's depth (a chain of 50,000
 * additions is 50,000 deep).  A program deeper than DEEP_DIRECT levels is
 * compiled, run and dumped on a thread of its own whose stack is sized for
 * its depth (DEEP_PER_LEVEL bytes a level: the passes need about 700 in a
 * release build, test_deep measures it; the stack is only reserved, and
 * pages are used as the recursion reaches them); a program too deep for the largest
 * stack weft asks for (DEEP_MAX) or for the memory there is fails with
 * WEFT_ERR_OUT_OF_MEMORY and a message, never with a crash.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fe.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEEP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEEP_ASAN 1
#endif
#endif
#ifndef DEEP_ASAN
#define DEEP_ASAN 0
#endif

enum { DEEP_DIRECT = 256 }; /* levels run on the caller's own stack */
#define DEEP_PER_LEVEL ((uint64_t)(DEEP_ASAN ? 16384 : 4096))
#define DEEP_BASE ((uint64_t)8 << 20)
#define DEEP_MAX ((uint64_t)32 << 30)

typedef struct deep_call {
    weft_status (*fn)(void *);
    void *arg;
    weft_status st;
    char msg[FE_MSG_MAX];
} deep_call;

static void *deep_main(void *p)
{
    deep_call *c = p;
    c->st = c->fn(c->arg);
    if (c->st != WEFT_OK) {
        snprintf(c->msg, sizeof c->msg, "%s", weft_last_error());
    }
    return NULL;
}

/* fn(arg), on a stack that fits `depth` levels of recursion: on the
 * calling thread for a shallow program, else on a thread of its own (the
 * caller waits; its message comes back as the caller's last error). */
static weft_status deep_call_run(const char *who, uint64_t depth,
                                 weft_status (*fn)(void *), void *arg)
{
    if (depth <= DEEP_DIRECT) {
        return fn(arg);
    }
    uint64_t per = DEEP_PER_LEVEL;
    uint64_t bytes = DEEP_BASE + depth * per;
    if (depth > DEEP_MAX / per || bytes > DEEP_MAX) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                        "%s: the program is %llu terms deep, deeper than "
                        "weft handles (%llu)",
                        who, (unsigned long long)depth,
                        (unsigned long long)(DEEP_MAX / per));
    }
    deep_call c = {fn, arg, WEFT_OK, ""};
    pthread_attr_t attr;
    pthread_t th;
    int e = pthread_attr_init(&attr);
    if (e == 0) {
        e = pthread_attr_setstacksize(&attr, (size_t)bytes);
        if (e == 0) {
            e = pthread_create(&th, &attr, deep_main, &c);
        }
        pthread_attr_destroy(&attr);
    }
    if (e != 0) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                        "%s: the program is %llu terms deep and no thread "
                        "with a stack of %llu MiB for it could be made",
                        who, (unsigned long long)depth,
                        (unsigned long long)(bytes >> 20));
    }
    pthread_join(th, NULL);
    return c.st == WEFT_OK ? WEFT_OK : fe_error_copy(c.st, c.msg);
}

/* The passes between sharing recovery and the backend, in order, with
 * their names in traces. */
static const struct {
    weft_status (*run)(fe_core *);
    const char *name;
} passes[] = {
    {fe_simplify, "simplify"},
    {fe_fuse, "fuse"},
};

/* $WEFT_DUMP=plan: write the plan of each compiled executable to
 * <dump_dir>/weft-plan-<n>.txt (n counts compilations in the process).
 * A file that cannot be written is skipped: dumps never fail a compile. */
static void dump_plan_file(const weft_executable *exe)
{
    static atomic_int counter;
    const char *dump = exe->ctx->cfg.dump;
    if (!dump || !strstr(dump, "plan")) {
        return;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/weft-plan-%d.txt",
             exe->ctx->cfg.dump_dir ? exe->ctx->cfg.dump_dir : ".",
             atomic_fetch_add(&counter, 1));
    FILE *f = fopen(path, "w");
    if (f) {
        weft_executable_dump(exe, f);
        fclose(f);
    }
}

static void exe_destroy(weft_executable *exe)
{
    weft_context *ctx = exe->ctx;
    if (exe->be_state && ctx->be->exe_free) {
        ctx->be->exe_free(exe);
    }
    fe_core_release_uses(&exe->core);
    fe_arena_release(&exe->arena);
    fe_free(ctx, exe, sizeof *exe);
}

typedef struct compile_job {
    weft_program *p;
    weft_acc *const *results;
    int n;
    weft_executable *exe;
} compile_job;

/* Sharing recovery, the passes and the backend's compile for weft_compile. */
static weft_status compile_passes(void *arg)
{
    compile_job *j = arg;
    weft_executable *exe = j->exe;
    uint64_t t = fe_clock_ns();
    weft_status st =
        fe_share(j->p, "weft_compile", (fe_term *const *)j->results, j->n,
                 &exe->arena, &exe->core);
    t = fe_phase_end(exe->ctx, FE_PHASE_FRONTEND, t, "sharing", NULL);
    exe->core.no_fusion = (exe->ctx->cfg.flags & WEFT_FLAG_NO_FUSION) != 0;
    bool verify = st == WEFT_OK && fe_verify_enabled(exe->ctx);
    if (verify) {
        st = fe_verify_pass(exe->ctx, &exe->core, "sharing");
        t = fe_phase_end(exe->ctx, FE_PHASE_FRONTEND, t, "verify", NULL);
    }
    for (size_t i = 0; st == WEFT_OK && i < sizeof passes / sizeof *passes;
         i++) {
        st = passes[i].run(&exe->core);
        t = fe_phase_end(exe->ctx, FE_PHASE_FRONTEND, t, passes[i].name, NULL);
        if (st == WEFT_OK && verify) {
            st = fe_verify_pass(exe->ctx, &exe->core, passes[i].name);
            t = fe_phase_end(exe->ctx, FE_PHASE_FRONTEND, t, "verify", NULL);
        }
    }
    if (st == WEFT_OK) {
        exe->depth = fe_core_depth(exe->ctx, &exe->core);
        st = exe->ctx->be->compile(exe);
    }
    return st;
}

weft_status weft_compile(weft_program *p, weft_acc *const *results, int n,
                         weft_executable **out)
{
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_compile: out is NULL");
    }
    *out = NULL;
    if (!p || (n > 0 && !results)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_compile: %s is NULL",
                        p ? "results" : "the program");
    }
    if (p->status) {
        return fe_error_copy(p->status, p->msg);
    }
    if (n < 1) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_compile: a program needs at least one result");
    }
    weft_context *ctx = p->ctx;
    weft_executable *exe = fe_calloc(ctx, sizeof *exe);
    if (!exe) {
        return fe_oom("weft_compile");
    }
    exe->ctx = ctx;
    fe_arena_init(&exe->arena, ctx);
    uint64_t t0 = fe_trace_begin(ctx);
    compile_job job = {p, results, n, exe};
    weft_status st = deep_call_run(
        "weft_compile", fe_program_depth(p, (fe_term *const *)results, n),
        compile_passes, &job);
    if (FE_TRACING(ctx)) {
        fe_trace_span(ctx, t0, "compile", "weft_compile",
                      "\"status\":%d,\"outputs\":%d", (int)st,
                      st ? 0 : exe->core.noutput);
    }
    if (st) {
        exe_destroy(exe);
        return st;
    }
    dump_plan_file(exe);
    *out = exe;
    return WEFT_OK;
}

typedef struct dump_job {
    const weft_context *ctx;
    const fe_core *core;
    FILE *out;
} dump_job;

static weft_status dump_core(void *arg)
{
    dump_job *j = arg;
    return fe_dump(j->ctx, j->core, j->out);
}

weft_status weft_executable_dump(const weft_executable *exe, FILE *out)
{
    if (!exe || !out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_executable_dump: %s is NULL",
                        exe ? "out" : "the executable");
    }
    dump_job job = {exe->ctx, &exe->core, out};
    weft_status st =
        deep_call_run("weft_executable_dump", exe->depth, dump_core, &job);
    if (st == WEFT_OK && exe->ctx->be->dump_plan) {
        exe->ctx->be->dump_plan(exe, out);
    }
    return st;
}

void weft_executable_free(weft_executable *exe)
{
    if (exe) {
        exe_destroy(exe);
    }
}

int weft_executable_inputs(const weft_executable *exe)
{
    return exe ? exe->core.nparam : 0;
}

int weft_executable_outputs(const weft_executable *exe)
{
    return exe ? exe->core.noutput : 0;
}

typedef struct run_job {
    weft_executable *exe;
    weft_array *const *in;
    weft_array **out;
    fe_cancel *cancel;
    weft_array *const *into;
} run_job;

static weft_status run_backend(void *arg)
{
    run_job *j = arg;
    return j->exe->ctx->be->run(j->exe, j->in, j->out, j->cancel, j->into);
}

/* Check weft_run's (or weft_run_into's) counts and inputs. */
static weft_status check_inputs(const char *who, weft_executable *exe,
                                weft_array *const *in, int n_in, int n_out)
{
    const fe_core *core = &exe->core;
    if (n_in != core->nparam) {
        return fe_error(WEFT_ERR_ARGUMENT_COUNT,
                        "%s: %d input arrays given, the program has %d "
                        "parameters",
                        who, n_in, core->nparam);
    }
    if (n_out != core->noutput) {
        return fe_error(WEFT_ERR_ARGUMENT_COUNT,
                        "%s: room for %d outputs given, the program has %d",
                        who, n_out, core->noutput);
    }
    for (int i = 0; i < n_in; i++) {
        const fe_atype *t = core->param[i];
        char want[128], got[128];
        if (!in[i]) {
            return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: input %d is NULL", who,
                            i);
        }
        if (in[i]->ctx != exe->ctx) {
            return fe_error(WEFT_ERR_PROGRAM_MISMATCH,
                            "%s: input %d belongs to another context", who, i);
        }
        if (in[i]->type != t->elt) {
            return fe_error(
                WEFT_ERR_TYPE_MISMATCH,
                "%s: input %d has element type %s, parameter "
                "%d takes %s",
                who, i, fe_type_name(exe->ctx, in[i]->type, got, sizeof got), i,
                fe_type_name(exe->ctx, t->elt, want, sizeof want));
        }
        if (in[i]->rank != t->rank) {
            return fe_error(WEFT_ERR_RANK_MISMATCH,
                            "%s: input %d has rank %d, parameter %d has "
                            "rank %d",
                            who, i, in[i]->rank, i, t->rank);
        }
    }
    return WEFT_OK;
}

/* Run the backend (on a deep stack when needed) and check cancellation;
 * on failure no output is left in out. */
static weft_status run_untraced(weft_executable *exe, weft_array *const *in,
                                weft_array **out, int n_out,
                                weft_array *const *into)
{
    /* The run may be cancelled from now on (lib/cancel.c). */
    fe_cancel cancel;
    fe_cancel_begin(exe->ctx, &cancel);
    run_job job = {exe, in, out, &cancel, into};
    weft_status st =
        exe->depth <= DEEP_DIRECT
            ? run_backend(&job)
            : deep_call_run("weft_run", exe->depth, run_backend, &job);
    if (st == WEFT_OK && fe_cancel_hit(&cancel)) {
        /* work stopped early somewhere that had no way to say so */
        for (int i = 0; i < n_out; i++) {
            weft_array_release(out[i]);
            out[i] = NULL;
        }
        st = fe_cancel_error(&cancel);
    }
    return st;
}

/* run_untraced as a "weft_run" span (out of line: the untraced path stays
 * one test). */
static __attribute__((noinline)) weft_status run_traced(weft_executable *exe,
                                                        weft_array *const *in,
                                                        weft_array **out,
                                                        int n_out,
                                                        weft_array *const *into)
{
    uint64_t t0 = fe_clock_ns();
    weft_status st = run_untraced(exe, in, out, n_out, into);
    fe_trace_span(exe->ctx, t0, "run", into ? "weft_run_into" : "weft_run",
                  "\"status\":%d", (int)st);
    return st;
}

/* The run of weft_run and weft_run_into once their arguments are checked.
 * The run may be cancelled from now on (lib/cancel.c). */
static weft_status run_checked(weft_executable *exe, weft_array *const *in,
                               weft_array **out, int n_out,
                               weft_array *const *into)
{
    if (FE_TRACING(exe->ctx)) {
        return run_traced(exe, in, out, n_out, into);
    }
    return run_untraced(exe, in, out, n_out, into);
}

weft_status weft_run(weft_executable *exe, weft_array *const *in, int n_in,
                     weft_array **out, int n_out)
{
    if (!exe || (n_in > 0 && !in) || (n_out > 0 && !out)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_run: %s is NULL",
                        !exe                ? "the executable"
                        : (n_in > 0 && !in) ? "in"
                                            : "out");
    }
    for (int i = 0; i < n_out; i++) {
        out[i] = NULL;
    }
    weft_status st = check_inputs("weft_run", exe, in, n_in, n_out);
    return st ? st : run_checked(exe, in, out, n_out, NULL);
}

/* Check weft_run_into's output arrays; into[i] is out[i] where the run may
 * write it in place, NULL where it must be copied in afterwards (an array
 * that is also an input or a `use` of the program). */
static weft_status check_outputs(weft_executable *exe, weft_array *const *in,
                                 int n_in, weft_array *const *out, int n_out,
                                 weft_array **into)
{
    static const char who[] = "weft_run_into";
    const fe_core *core = &exe->core;
    for (int i = 0; i < n_out; i++) {
        const fe_atype *t = core->output[i];
        weft_array *a = out[i];
        char want[128], got[128];
        if (!a) {
            return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: output %d is NULL",
                            who, i);
        }
        if (a->ctx != exe->ctx) {
            return fe_error(WEFT_ERR_PROGRAM_MISMATCH,
                            "%s: output %d belongs to another context", who, i);
        }
        if (a->type != t->elt) {
            return fe_error(WEFT_ERR_TYPE_MISMATCH,
                            "%s: output %d has element type %s, the program's "
                            "output %d is %s",
                            who, i,
                            fe_type_name(exe->ctx, a->type, got, sizeof got), i,
                            fe_type_name(exe->ctx, t->elt, want, sizeof want));
        }
        if (a->rank != t->rank) {
            return fe_error(WEFT_ERR_RANK_MISMATCH,
                            "%s: output %d has rank %d, the program's output "
                            "%d has rank %d",
                            who, i, a->rank, i, t->rank);
        }
        if (a->read_only) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: output %d is read-only (a read-only DLPack "
                            "tensor)",
                            who, i);
        }
        into[i] = a;
        for (int k = 0; k < i; k++) {
            if (out[k] == a) {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "%s: outputs %d and %d are the same array", who,
                                k, i);
            }
        }
        for (int k = 0; k < n_in; k++) {
            into[i] = in[k] == a ? NULL : into[i];
        }
        for (int k = 0; k < core->nuse; k++) {
            into[i] = core->uses[k] == a ? NULL : into[i];
        }
    }
    return WEFT_OK;
}

weft_status weft_run_into(weft_executable *exe, weft_array *const *in, int n_in,
                          weft_array *const *out, int n_out)
{
    static const char who[] = "weft_run_into";
    if (!exe || (n_in > 0 && !in) || (n_out > 0 && !out)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: %s is NULL", who,
                        !exe                ? "the executable"
                        : (n_in > 0 && !in) ? "in"
                                            : "out");
    }
    weft_status st = check_inputs(who, exe, in, n_in, n_out);
    if (st) {
        return st;
    }
    weft_context *ctx = exe->ctx;
    size_t n = (size_t)(n_out > 0 ? n_out : 1);
    weft_array **into = fe_calloc(ctx, sizeof *into * n);
    weft_array **res = fe_calloc(ctx, sizeof *res * n);
    if (!into || !res) {
        fe_free(ctx, into, sizeof *into * n);
        fe_free(ctx, res, sizeof *res * n);
        return fe_oom(who);
    }
    st = check_outputs(exe, in, n_in, out, n_out, into);
    if (st == WEFT_OK) {
        st = run_checked(exe, in, res, n_out, into);
    }
    /* Outputs not written in place: check every shape, then copy. */
    for (int i = 0; st == WEFT_OK && i < n_out; i++) {
        if (res[i] != out[i] &&
            memcmp(res[i]->shape, out[i]->shape,
                   sizeof *res[i]->shape * (size_t)res[i]->rank) != 0) {
            char got[160] = "", want[160] = "";
            for (int d = 0; d < res[i]->rank; d++) {
                size_t g = strlen(got), w = strlen(want);
                snprintf(got + g, sizeof got - g, "%s%lld", d ? " " : "",
                         (long long)out[i]->shape[d]);
                snprintf(want + w, sizeof want - w, "%s%lld", d ? " " : "",
                         (long long)res[i]->shape[d]);
            }
            st = fe_error(WEFT_ERR_BAD_SHAPE,
                          "%s: output %d has shape [%s], the run computed [%s]",
                          who, i, got, want);
        }
    }
    /* A result that is one of the output arrays (an input returned, and
     * given as an output too) is read before that output is written. */
    for (int i = 0; st == WEFT_OK && i < n_out; i++) {
        for (int k = 0; st == WEFT_OK && k < n_out; k++) {
            if (k != i && res[i] == out[k] && res[i] != out[i]) {
                weft_array *c;
                st = fe_array_new_raw(ctx, who, res[i]->type, res[i]->rank,
                                      res[i]->shape, &c);
                if (st == WEFT_OK) {
                    st = fe_array_copy(c, res[i], who);
                    weft_array_release(res[i]);
                    res[i] = c;
                }
            }
        }
    }
    for (int i = 0; st == WEFT_OK && i < n_out; i++) {
        st = fe_array_copy(out[i], res[i], who);
    }
    /* A host output holds its values when this returns. */
    for (int i = 0; st == WEFT_OK && i < n_out; i++) {
        if (!out[i]->on_device) {
            st = fe_array_host(out[i]);
        }
    }
    for (int i = 0; i < n_out; i++) {
        weft_array_release(res[i]);
    }
    fe_free(ctx, into, sizeof *into * n);
    fe_free(ctx, res, sizeof *res * n);
    return st;
}

weft_status weft_run1(weft_program *p, weft_acc *const *results, int n,
                      weft_array *const *in, int n_in, weft_array **out,
                      int n_out)
{
    weft_executable *exe;
    weft_status st = weft_compile(p, results, n, &exe);
    if (st) {
        for (int i = 0; out && i < n_out; i++) {
            out[i] = NULL;
        }
        return st;
    }
    st = weft_run(exe, in, n_in, out, n_out);
    weft_executable_free(exe);
    return st;
}

typedef struct program_dump_job {
    weft_program *p;
    weft_acc *const *results;
    int n;
    FILE *out;
    fe_arena *arena;
    fe_core *core;
} program_dump_job;

static weft_status program_dump(void *arg)
{
    program_dump_job *j = arg;
    weft_status st =
        fe_share(j->p, "weft_program_dump", (fe_term *const *)j->results, j->n,
                 j->arena, j->core);
    if (st == WEFT_OK) {
        st = fe_dump(j->p->ctx, j->core, j->out);
        fe_core_release_uses(j->core);
    }
    return st;
}

weft_status weft_program_dump(weft_program *p, weft_acc *const *results, int n,
                              FILE *out)
{
    if (!p || !out || (n > 0 && !results)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_program_dump: %s is NULL",
                        !p     ? "the program"
                        : !out ? "out"
                               : "results");
    }
    if (p->status) {
        return fe_error_copy(p->status, p->msg);
    }
    fe_arena arena;
    fe_core core;
    memset(&core, 0, sizeof core);
    fe_arena_init(&arena, p->ctx);
    program_dump_job job = {p, results, n, out, &arena, &core};
    weft_status st = deep_call_run(
        "weft_program_dump", fe_program_depth(p, (fe_term *const *)results, n),
        program_dump, &job);
    fe_arena_release(&arena);
    return st;
}
