/*
 * runtime-cpu/backend.c: the CPU backend (WEFT_BACKEND_CPU).
 *
 * Per context: one ORC LLJIT with its kernel caches (jit.c, cache.c) and
 * one gang of workers (gang.c).
 *
 * weft_compile: every collective operation of the core that has a skeleton
 * becomes a kernel (skeletons-ir/): its layout is prepared, its cache key
 * computed from a canonical description, and its entry points fetched from
 * the JIT, which builds the module only when neither memory nor disk has
 * it.
 *
 * weft_run: the interpreter's walker evaluates the core (lets, acond,
 * awhile, tuples, the scalar terms the host computes), and hands each
 * operation that has a kernel to this file's hook, which evaluates the
 * operands, allocates the outputs, fills the argument block and runs the
 * kernel's phases on the gang (exec.c: one driver per skeleton).
 */
#ifdef WEFT_HAVE_LLVM
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "../skeletons-ir/sk.h"

typedef struct cpu_state {
    cpu_jit *jit;
    cpu_gang *gang;
} cpu_state;

/* The compiled form of an executable: its kernels, by operation. */
typedef struct cpu_exe {
    int n, cap;
    sk_kernel **k;
} cpu_exe;

static cpu_state *state_of(const weft_context *ctx)
{
    return (cpu_state *)ctx->be_state;
}

/* ---- context ----------------------------------------------------------- */

static weft_status cpu_context_init(weft_context *ctx)
{
    cpu_state *st = fe_calloc(ctx, sizeof *st);
    if (!st) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                        "weft_context_create: out of memory");
    }
    cpu_jit_options opt;
    memset(&opt, 0, sizeof opt);
    opt.cpu = ctx->cfg.target_cpu;
    opt.cache_dir = ctx->cfg.cache_dir;
    opt.dump = ctx->cfg.dump ? cpu_dump_flags(ctx->cfg.dump) : 0;
    opt.dump_dir = ctx->cfg.dump_dir ? ctx->cfg.dump_dir : ".";
    weft_status s = cpu_jit_create(ctx, &opt, &st->jit);
    if (s == WEFT_OK) {
        s = cpu_gang_create(ctx, ctx->cfg.threads, &st->gang);
    }
    if (s) {
        cpu_jit_free(st->jit);
        fe_free(ctx, st, sizeof *st);
        return s;
    }
    ctx->be_state = st;
    return WEFT_OK;
}

static void cpu_context_fini(weft_context *ctx)
{
    cpu_state *st = state_of(ctx);
    if (st) {
        cpu_gang_free(st->gang);
        cpu_jit_free(st->jit);
        fe_free(ctx, st, sizeof *st);
        ctx->be_state = NULL;
    }
}

static void cpu_stats(const weft_context *ctx, weft_stats *out)
{
    cpu_state *st = state_of(ctx);
    cpu_jit_stats js;
    cpu_jit_stats_get(st->jit, &js);
    out->kernels_compiled = js.compiled;
    out->kernels_loaded = js.disk_loads;
    out->kernels_reused = js.memory_hits;
    out->compile_ms = js.compile_ms;
    out->threads = cpu_gang_size(st->gang);
}

/* ---- compile ----------------------------------------------------------- */

typedef struct build {
    weft_context *ctx;
    const fe_core *core;
    sk_kernel *k;
    const char *const *names;
} build;

static weft_status build_module(void *user, LLVMContextRef llctx,
                                LLVMModuleRef *out)
{
    build *b = user;
    *out = NULL;
    fe_arena scratch;
    fe_arena_init(&scratch, b->ctx);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("weft", llctx);
    sk_emit e = {
        .ctx = b->ctx,
        .core = b->core,
        .k = b->k,
        .arena = &scratch,
        .llctx = llctx,
        .mod = mod,
        .target = &sk_target_cpu,
    };
    weft_status s = sk_emit_kernel(&e, b->names);
    fe_arena_release(&scratch);
    if (s) {
        LLVMDisposeModule(mod);
        return s;
    }
    *out = mod;
    return WEFT_OK;
}

static void key_add(void *user, const void *p, size_t n)
{
    cpu_key_add(user, p, n);
}

static weft_status add_kernel(weft_executable *exe, cpu_exe *ce,
                              const fe_term *t)
{
    weft_context *ctx = exe->ctx;
    cpu_state *st = state_of(ctx);
    sk_kernel *k = fe_arena_alloc(&exe->arena, sizeof *k);
    if (!k) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY, "weft_compile: out of memory");
    }
    weft_status s = sk_prepare(ctx, &exe->core, &exe->arena, &sk_target_cpu, t, k);
    if (s) {
        return s;
    }
    cpu_key key;
    cpu_key_begin(st->jit, &key);
    sk_describe(&exe->core, k, key_add, &key);
    cpu_key_finish(&key, k->key);
    char names[SK_MAX_ENTRY][CPU_SYMBOL_MAX];
    const char *np[SK_MAX_ENTRY];
    int nsym = k->nentry * (k->general ? 2 : 1);
    if (nsym > SK_MAX_ENTRY) {
        return fe_error(WEFT_ERR_INTERNAL, "weft_compile: too many entry points");
    }
    for (int i = 0; i < nsym; i++) {
        cpu_jit_symbol(k->key, i, names[i]);
        np[i] = names[i];
    }
    build b = {.ctx = ctx, .core = &exe->core, .k = k, .names = np};
    s = cpu_jit_get(st->jit, k->key, build_module, &b, np, nsym, k->entry);
    if (s) {
        return s;
    }
    if (ce->n == ce->cap) {
        int cap = ce->cap ? 2 * ce->cap : 16;
        sk_kernel **nk = fe_arena_alloc(&exe->arena, sizeof *nk * (size_t)cap);
        if (!nk) {
            return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                            "weft_compile: out of memory");
        }
        if (ce->n) {
            memcpy(nk, ce->k, sizeof *nk * (size_t)ce->n);
        }
        ce->k = nk;
        ce->cap = cap;
    }
    ce->k[ce->n++] = k;
    return WEFT_OK;
}

static weft_status compile_term(weft_executable *exe, cpu_exe *ce,
                                const fe_term *t)
{
    weft_status s;
    if (!t) {
        return WEFT_OK;
    }
    /* A fused operand stays fused only where this operation's skeleton
     * reads operands inline; elsewhere it becomes an array of its own. */
    const sk_skeleton *sk = sk_skeleton_of(t, &sk_target_cpu);
    for (int i = 0; i < t->nkid; i++) {
        fe_term *kid = t->kid[i];
        if (kid && kid->delayed && !(sk && sk->fuses_input)) {
            kid->delayed = false;
        }
    }
    if (sk && !t->delayed) {
        if ((s = add_kernel(exe, ce, t)) != WEFT_OK) {
            return s;
        }
    }
    for (int i = 0; i < t->nkid; i++) {
        if ((s = compile_term(exe, ce, t->kid[i])) != WEFT_OK) {
            return s;
        }
    }
    for (int i = 0; i < t->nfun; i++) {
        if ((s = compile_term(exe, ce, t->fun[i]->body)) != WEFT_OK) {
            return s;
        }
    }
    return WEFT_OK;
}

static weft_status cpu_compile(weft_executable *exe)
{
    cpu_exe *ce = fe_arena_alloc(&exe->arena, sizeof *ce);
    if (!ce) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY, "weft_compile: out of memory");
    }
    weft_status s = compile_term(exe, ce, exe->core.root);
    if (s) {
        return s;
    }
    exe->be_state = ce;
    return WEFT_OK;
}

/* ---- run --------------------------------------------------------------- */

static sk_kernel *kernel_of(const cpu_exe *ce, const fe_term *t)
{
    for (int i = 0; i < ce->n; i++) {
        if (ce->k[i]->op == t) {
            return ce->k[i];
        }
    }
    return NULL;
}

static weft_status hook(void *user, fe_ix *ix, const fe_term *t,
                        weft_array **out, bool *handled)
{
    weft_executable *exe = user;
    sk_kernel *k = kernel_of(exe->be_state, t);
    if (!k) {
        return WEFT_OK;
    }
    *handled = true;
    return cpu_exec(exe->ctx, state_of(exe->ctx)->gang, ix, k, out);
}

static weft_status cpu_run(weft_executable *exe, weft_array *const *in,
                           weft_array **out)
{
    if (!cpu_jit_runnable(state_of(exe->ctx)->jit)) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft_run: this context compiles for another CPU "
                        "(target_cpu) and cannot run kernels");
    }
    return fe_interp_hooked(exe->ctx, &exe->core, in, out, hook, exe);
}

/* The delayed producers inside t, for the plan. */
static void fused_names(const fe_term *t, FILE *out, int *n)
{
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *kid = t->kid[i];
        if (kid && kid->acc && kid->delayed) {
            fprintf(out, "%s%s", (*n)++ ? ", " : ", fused: ",
                    fe_acc_name(kid->kind));
            fused_names(kid, out, n);
        }
    }
}

static void cpu_dump_plan(const weft_executable *exe, FILE *out)
{
    const cpu_exe *ce = exe->be_state;
    for (int i = 0; ce && i < ce->n; i++) {
        const sk_kernel *k = ce->k[i];
        int n = 0;
        fprintf(out, "kernel %d: %s", i, fe_acc_name(k->op->kind));
        fused_names(k->op, out, &n);
        fprintf(out, " (%d phase%s%s)\n", k->nentry, k->nentry > 1 ? "s" : "",
                k->general ? ", two variants" : "");
    }
}

static void cpu_exe_free(weft_executable *exe)
{
    (void)exe; /* everything lives in the executable's arena */
}

const fe_backend fe_backend_cpu = {
    .name = "cpu",
    .context_init = cpu_context_init,
    .context_fini = cpu_context_fini,
    .compile = cpu_compile,
    .run = cpu_run,
    .exe_free = cpu_exe_free,
    .stats = cpu_stats,
    .dump_plan = cpu_dump_plan,
};

#endif /* WEFT_HAVE_LLVM */
