/*
 * lib/exec.c: the pipeline driver (compile once, run many).
 *
 * weft_compile runs the passes in order (sharing recovery, simplify, fuse,
 * plan) into an arena owned by the executable, so that the executable does
 * not depend on the program afterwards, then hands the core to the
 * context's backend.  weft_run checks the inputs against the parameters'
 * types and calls the backend.
 */
#include <stdio.h>
#include <string.h>

#include "fe.h"

/* The passes between sharing recovery and the backend, in order. */
static weft_status (*const passes[])(fe_core *) = {
    fe_simplify,
    fe_fuse,
    fe_plan,
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
        return fe_error(WEFT_ERR_OUT_OF_MEMORY, "weft_compile: out of memory");
    }
    exe->ctx = ctx;
    fe_arena_init(&exe->arena, ctx);
    weft_status st = fe_share(p, "weft_compile", (fe_term *const *)results, n,
                              &exe->arena, &exe->core);
    exe->core.no_fusion = (ctx->cfg.flags & WEFT_FLAG_NO_FUSION) != 0;
    for (size_t i = 0; st == WEFT_OK && i < sizeof passes / sizeof *passes; i++) {
        st = passes[i](&exe->core);
    }
    if (st == WEFT_OK) {
        st = ctx->be->compile(exe);
    }
    if (st) {
        exe_destroy(exe);
        return st;
    }
    dump_plan_file(exe);
    *out = exe;
    return WEFT_OK;
}

weft_status weft_executable_dump(const weft_executable *exe, FILE *out)
{
    if (!exe || !out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_executable_dump: %s is NULL",
                        exe ? "out" : "the executable");
    }
    weft_status st = fe_dump(exe->ctx, &exe->core, out);
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

weft_status weft_run(weft_executable *exe, weft_array *const *in, int n_in,
                     weft_array **out, int n_out)
{
    if (!exe || (n_in > 0 && !in) || (n_out > 0 && !out)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_run: %s is NULL",
                        !exe ? "the executable" : (n_in > 0 && !in) ? "in" : "out");
    }
    const fe_core *core = &exe->core;
    for (int i = 0; i < n_out; i++) {
        out[i] = NULL;
    }
    if (n_in != core->nparam) {
        return fe_error(WEFT_ERR_ARGUMENT_COUNT,
                        "weft_run: %d input arrays given, the program has %d "
                        "parameters", n_in, core->nparam);
    }
    if (n_out != core->noutput) {
        return fe_error(WEFT_ERR_ARGUMENT_COUNT,
                        "weft_run: room for %d outputs given, the program has %d",
                        n_out, core->noutput);
    }
    for (int i = 0; i < n_in; i++) {
        const fe_atype *t = core->param[i];
        char want[128], got[128];
        if (!in[i]) {
            return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_run: input %d is NULL", i);
        }
        if (in[i]->ctx != exe->ctx) {
            return fe_error(WEFT_ERR_PROGRAM_MISMATCH,
                            "weft_run: input %d belongs to another context", i);
        }
        if (in[i]->type != t->elt) {
            return fe_error(WEFT_ERR_TYPE_MISMATCH,
                            "weft_run: input %d has element type %s, parameter "
                            "%d takes %s", i,
                            fe_type_name(exe->ctx, in[i]->type, got, sizeof got),
                            i, fe_type_name(exe->ctx, t->elt, want, sizeof want));
        }
        if (in[i]->rank != t->rank) {
            return fe_error(WEFT_ERR_RANK_MISMATCH,
                            "weft_run: input %d has rank %d, parameter %d has "
                            "rank %d", i, in[i]->rank, i, t->rank);
        }
    }
    return exe->ctx->be->run(exe, in, out);
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

weft_status weft_program_dump(weft_program *p, weft_acc *const *results, int n,
                              FILE *out)
{
    if (!p || !out || (n > 0 && !results)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_program_dump: %s is NULL",
                        !p ? "the program" : !out ? "out" : "results");
    }
    if (p->status) {
        return fe_error_copy(p->status, p->msg);
    }
    fe_arena arena;
    fe_core core;
    memset(&core, 0, sizeof core);
    fe_arena_init(&arena, p->ctx);
    weft_status st = fe_share(p, "weft_program_dump", (fe_term *const *)results,
                              n, &arena, &core);
    if (st == WEFT_OK) {
        st = fe_dump(p->ctx, &core, out);
        fe_core_release_uses(&core);
    }
    fe_arena_release(&arena);
    return st;
}
