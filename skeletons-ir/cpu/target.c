/*
 * skeletons-ir/cpu/target.c: how a phase becomes a CPU entry point.
 *
 * The body of a phase is the entry point itself:
 *
 *     void entry(int64_t start, int64_t end, const void *args)
 *
 * The gang (runtime-cpu/gang.c) calls it on the ranges it hands out, so
 * there is no loop of the target's own: start and end are the parameters.
 * The argument block is noalias (nothing the kernel writes aliases it).
 * Permute is this target's own (cpu/permute.c: private copies of a small
 * result per chunk of sources).
 */
#include "../sk.h"

/* Kernels of the CPU target's own, by family (NULL: the shared one). */
static const sk_skeleton *const cpu_own[SK_FAMILY_COUNT_] = {
    [SK_PERMUTE] = &sk_cpu_permute,
};

static weft_status cpu_entry_begin(sk_emit *e, sk_fn *f, const char *name)
{
    LLVMContextRef c = e->llctx;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    LLVMTypeRef params[3] = {i64, i64, LLVMPointerTypeInContext(c, 0)};
    LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 3, 0);
    weft_status s = cg_fn_begin(&f->fn, e->ctx, &cg_target_cpu, e->arena,
                                e->mod, name, ty, e->core->nvar);
    if (s) {
        return s;
    }
    f->args = LLVMGetParam(f->fn.fn, 2);
    cg_noalias(&f->fn, 2);
    return WEFT_OK;
}

static void cpu_range_begin(sk_fn *f)
{
    f->start = LLVMGetParam(f->fn.fn, 0);
    f->end = LLVMGetParam(f->fn.fn, 1);
}

static void cpu_range_end(sk_fn *f)
{
    (void)f;
}

const sk_target sk_target_cpu = {
    .name = "cpu",
    .cg = &cg_target_cpu,
    .own = cpu_own,
    .entry_begin = cpu_entry_begin,
    .range_begin = cpu_range_begin,
    .range_end = cpu_range_end,
};
