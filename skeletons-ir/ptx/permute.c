/*
 * skeletons-ir/ptx/permute.c: permute on the GPU, with per-block copies
 * of a small result (the PTX target's own SK_PERMUTE skeleton).
 *
 * The contract is permute.c's, for the same host driver
 * (runtime/exec_permute.c): entry 0 the atomic grid-stride loop and
 * entry 1 the plain one, both emitted by the shared skeleton itself.
 * When the combine is one native atomic (PERMUTE_RMW: add, min, max, and,
 * or, xor; fadd) the kernel has a third entry, and k->privatise says so:
 *
 *   entry 2, a block per chunk of sources (n = source elements, grain the
 *   chunk, so chunk c is [c grain, min(n, (c + 1) grain)), as the
 *   target's range loop cuts [0, n); item_threads SK_ITEM_BLOCK):
 *
 *       copy[b] = identity               for every bin b of the result
 *       barrier
 *       for each chunk c of this block (c = block, block + grid, ...):
 *           for each source i of c (groups of 4 consecutive sources,
 *           group lo + 4 thread, stepping by 4 blocks, so that a group's
 *           reads are one vector load): the step of permute.c
 *           (sk_permute_step) with the update an atomicrmw on copy[j]
 *           instead of out[j]
 *       barrier
 *       out[b] = out[b] op copy[b]       (atomic) for every bin b whose
 *                                        copy is not the identity
 *
 * where copy is an array in shared memory of SK_PERMUTE_SHARED_BYTES (the
 * driver uses entry 2 only for a result that fits).  So a block's updates
 * contend in its own shared memory, and the output sees one global atomic
 * per block and bin touched instead of one per source: the histogram case
 * (2^28 sources into 256 bins) goes from 2^28 atomics on 256 addresses to
 * a few hundred thousand.
 *
 * The identity of op is 0 for add, or, xor and unsigned max, all ones for
 * and and unsigned min, the type's largest value for min and its smallest
 * for max, and -0.0 for fadd (x + -0.0 = x for every x, -0.0 and NaN
 * included, where x + 0.0 would turn a -0.0 into 0.0).  Combining the
 * identity changes nothing, so skipping the bins whose copy still holds
 * it (compared as bits) is exact; `ignore` targets and targets outside the
 * result behave as in permute.c, since the step is permute.c's, with the
 * copy's extents those of the output.
 *
 * Barriers.  The two barriers stand at the top level of the kernel,
 * outside every loop and branch, and no thread returns early, so every
 * thread of the block reaches each of them; the loops between them hold
 * no barrier, so their bounds need not be uniform.  The block's chunks
 * all go into one copy, flushed once at the end.
 */
#include "../sk.h"

static LLVMValueRef wide(cg_fn *fn, LLVMValueRef x)
{
    return LLVMBuildZExt(fn->b, x, LLVMInt64TypeInContext(fn->llctx), "");
}


/* The identity of atomic operation op on scalar type ty (register form;
 * see the head comment). */
static LLVMValueRef identity(cg_fn *fn, LLVMAtomicRMWBinOp op, weft_type ty)
{
    LLVMTypeRef t = cg_type(fn->llctx, ty);
    if (op == LLVMAtomicRMWBinOpFAdd) {
        return LLVMConstReal(t, -0.0);
    }
    int bits = fe_type_bits(ty);
    uint64_t ones = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    uint64_t v = 0;
    switch (op) {
    case LLVMAtomicRMWBinOpAnd:
    case LLVMAtomicRMWBinOpUMin:
        v = ones;
        break;
    case LLVMAtomicRMWBinOpMin:
        v = ones >> 1;
        break;
    case LLVMAtomicRMWBinOpMax:
        v = 1ull << (bits - 1);
        break;
    default: /* add, or, xor, umax */
        v = 0;
        break;
    }
    return LLVMConstInt(t, v, 0);
}

/* x as the integer of its bits (floats), or x. */
static LLVMValueRef as_bits(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind) {
        return x;
    }
    unsigned bits = LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? 64 : 32;
    return LLVMBuildBitCast(fn->b, x, LLVMIntTypeInContext(fn->llctx, bits),
                            "");
}

enum { GROUP = 4 }; /* consecutive sources a thread takes at a time */

/* The permute step of sources [lo, hi) into the block's copy. */
static weft_status private_run(sk_fn *f, const cg_array *copy,
                               LLVMValueRef *sext, LLVMValueRef lo,
                               LLVMValueRef hi)
{
    cg_loop l;
    LLVMValueRef i;
    cg_loop_begin(&f->fn, &l, lo, hi, &i);
    weft_status s = sk_permute_step(f, copy, sext, i, sk_permute_update_rmw);
    cg_loop_end(&f->fn, &l);
    return s;
}

/* Entry 2 (see the head comment). */
static weft_status emit_private(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMAtomicRMWBinOp op;
    if (!sk_permute_rmw_op(f->e->k->op, &op)) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: permute: the combine is not atomic");
    }
    const cg_array *out = sk_out_array(f, 0);
    weft_type ty = out->leaf[0];
    int64_t cap = SK_PERMUTE_SHARED_BYTES / (int64_t)weft_type_size(ty);
    cg_array copy = *out;
    copy.ptr = fe_arena_alloc(fn->arena, sizeof *copy.ptr);
    if (!copy.ptr) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY, "weft_compile: out of memory");
    }
    copy.ptr[0] = tg->shared_array(fn, cg_mem_type(fn->llctx, ty), cap);
    LLVMValueRef bins = sk_size(f, out);
    LLVMValueRef tid = wide(fn, tg->thread_index(fn, 0));
    LLVMValueRef bs = wide(fn, tg->block_size(fn, 0));
    LLVMValueRef id = identity(fn, op, ty);
    LLVMValueRef sext[WEFT_MAX_RANK];
    weft_status s = sk_permute_begin(f, sext);
    if (s) {
        return s;
    }
    /* the block's copy starts at the identity */
    cg_sloop init;
    LLVMValueRef b = cg_sloop_begin(fn, &init, tid, bins, bs, "init");
    cg_store(fn, ty, copy.ptr[0], b, id);
    cg_sloop_end(fn, &init);
    tg->barrier(fn);
    /* the block's chunks into the copy */
    LLVMValueRef chunks = LLVMBuildUDiv(
        fn->b,
        LLVMBuildSub(fn->b, LLVMBuildAdd(fn->b, f->n, f->grain, ""),
                     cg_i64(fn, 1), ""),
        f->grain, "chunks");
    cg_sloop cl;
    LLVMValueRef c = cg_sloop_begin(fn, &cl, wide(fn, tg->block_index(fn, 0)),
                                 chunks, wide(fn, tg->grid_size(fn, 0)),
                                 "chunk");
    LLVMValueRef lo = LLVMBuildMul(fn->b, c, f->grain, "lo");
    LLVMValueRef hi = LLVMBuildAdd(fn->b, lo, f->grain, "");
    hi = LLVMBuildSelect(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, hi, f->n, ""),
                         hi, f->n, "hi");
    /* GROUP consecutive sources per thread and step: lo is a multiple
     * of the grain, which the driver makes a multiple of 1024, so the
     * `and` changes nothing but tells LLVM that a group is aligned (its
     * reads become one vector load) */
    lo = LLVMBuildAnd(fn->b, lo, cg_i64(fn, -GROUP), "");
    cg_sloop el;
    LLVMValueRef g = cg_sloop_begin(
        fn, &el,
        LLVMBuildAdd(fn->b, lo, LLVMBuildMul(fn->b, tid, cg_i64(fn, GROUP), ""),
                     ""),
        hi, LLVMBuildMul(fn->b, bs, cg_i64(fn, GROUP), ""), "src");
    LLVMValueRef gend = LLVMBuildNSWAdd(fn->b, g, cg_i64(fn, GROUP), "");
    cg_if whole;
    cg_if_begin(fn, &whole, LLVMBuildICmp(fn->b, LLVMIntSLE, gend, hi, ""));
    if ((s = private_run(f, &copy, sext, g, gend)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &whole);
    if ((s = private_run(f, &copy, sext, g, hi)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &whole);
    cg_sloop_end(fn, &el);
    cg_sloop_end(fn, &cl);
    tg->barrier(fn);
    /* the bins the block touched into the output, one atomic each */
    cg_sloop flush;
    b = cg_sloop_begin(fn, &flush, tid, bins, bs, "flush");
    LLVMValueRef v = cg_load(fn, ty, copy.ptr[0], b);
    cg_if touched;
    cg_if_begin(fn, &touched,
                LLVMBuildICmp(fn->b, LLVMIntNE, as_bits(fn, v),
                              as_bits(fn, id), ""));
    LLVMValueRef p = LLVMBuildInBoundsGEP2(
        fn->b, cg_mem_type(fn->llctx, ty), out->ptr[0], &b, 1, "");
    tg->atomic_rmw(fn, op, p, v);
    cg_if_end(fn, &touched);
    cg_sloop_end(fn, &flush);
    return WEFT_OK;
}

static weft_status ptx_permute_prepare(weft_context *ctx, fe_arena *arena,
                                       sk_kernel *k)
{
    weft_status s = sk_permute.prepare(ctx, arena, k);
    LLVMAtomicRMWBinOp op;
    if (s || !sk_permute_rmw_op(k->op, &op)) {
        return s;
    }
    k->nentry = 3;
    k->privatise = true;
    /* a block per chunk, in both variants (a fused zipWith has two) */
    k->item_threads[2] = SK_ITEM_BLOCK;
    k->item_threads[3 + 2] = SK_ITEM_BLOCK;
    /* the copy's size is part of the compiled code: into the key */
    k->flags |= (unsigned)SK_PERMUTE_SHARED_BYTES << 8;
    return WEFT_OK;
}

static weft_status ptx_permute_emit(sk_emit *e, const char *const *names)
{
    weft_status s = sk_permute.emit(e, names);
    if (s || !e->k->privatise) {
        return s;
    }
    sk_fn f;
    if ((s = sk_fn_begin_raw(e, &f, names[2])) != WEFT_OK) {
        return s;
    }
    if ((s = emit_private(&f)) != WEFT_OK) {
        /* close the half-built function; the module is thrown away */
        LLVMBuildUnreachable(f.fn.b);
        cg_fn_end(&f.fn);
        return s;
    }
    sk_fn_end(&f);
    return WEFT_OK;
}

static bool ptx_permute_supported(const fe_term *t)
{
    return sk_permute.supported(t);
}

const sk_skeleton sk_ptx_permute = {
    .name = "ptx-permute",
    .family = SK_PERMUTE,
    .supported = ptx_permute_supported,
    .prepare = ptx_permute_prepare,
    .emit = ptx_permute_emit,
    .fuses_input = true,
};
