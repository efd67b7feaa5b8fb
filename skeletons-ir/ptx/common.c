/*
 * skeletons-ir/ptx/common.c: IR that the PTX target's own skeletons
 * (ptx/fold.c, scan.c, foldseg.c, permute.c, stencil.c) and its range
 * loop (ptx/target.c) share: an opaque copy of a value, the grid's last
 * block taking its ticket, and the volatile accesses of the tile status
 * words that the look-back scans (ptx/scan.c, ptx/foldseg.c) publish and
 * read.
 *
 * ptx/target.c names the skeletons in its table, so what they share
 * lives below it, here: the skeletons call this file, and it calls
 * nothing of theirs.
 */

#include "../sk.h"

LLVMValueRef sk_ptx_opaque(cg_fn *fn, LLVMValueRef x)
{
    return cg_target_ptx.opaque(fn, x);
}

/* The last block's ticket.  Thread 0 of each block (after a fence of its
 * own when fence is true, so that what it wrote is out first) adds one to
 * *ticket (i32, global memory) and tells its block through shared memory
 * whether it drew the grid's size less one (of the ticket's low bits in
 * mask, where mask is not 0); the block meets at a barrier, and the block
 * that drew it, block-uniformly, enters *fin after a fence, so that the
 * others' writes are visible there.  A block alone in its grid (a fold
 * of a short row, a small permute) is the last without asking: it takes
 * no ticket and fences neither time (the barrier orders its own threads'
 * writes before their reads; a 1,000-element dot product spent 9.6 us in
 * its kernel on an H100 with them).  The caller closes *fin (cg_if_end)
 * and puts the ticket back to zero inside it.  Returns tid == 0 (i1), for
 * the thread that writes the result. */
LLVMValueRef sk_ptx_last_block(cg_fn *fn, LLVMValueRef tid, LLVMValueRef ticket,
                               bool fence, uint32_t mask, cg_if *fin)
{
    const cg_target *tg = fn->target;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef flag = tg->shared_array(fn, i32, 1);
    LLVMValueRef t0 = LLVMBuildICmp(fn->b, LLVMIntEQ, tid, cg_i64(fn, 0), "");
    LLVMValueRef solo = LLVMBuildICmp(fn->b, LLVMIntEQ, tg->grid_size(fn, 0),
                                      LLVMConstInt(i32, 1, 0), "solo");
    cg_if draw, alone;
    cg_if_begin(fn, &draw, t0);
    cg_if_begin(fn, &alone, solo);
    LLVMBuildStore(fn->b, LLVMConstInt(i32, 1, 0), flag);
    cg_if_else(fn, &alone);
    if (fence) {
        tg->fence(fn);
    }
    LLVMValueRef old = tg->atomic_rmw(fn, LLVMAtomicRMWBinOpAdd, ticket,
                                      LLVMConstInt(i32, 1, 0));
    LLVMValueRef last = LLVMBuildICmp(
        fn->b, LLVMIntEQ,
        mask ? LLVMBuildAnd(fn->b, old, LLVMConstInt(i32, mask, 0), "") : old,
        LLVMBuildSub(fn->b, tg->grid_size(fn, 0), LLVMConstInt(i32, 1, 0), ""),
        "");
    LLVMBuildStore(fn->b, LLVMBuildZExt(fn->b, last, i32, ""), flag);
    cg_if_end(fn, &alone);
    cg_if_end(fn, &draw);
    tg->barrier(fn);
    LLVMValueRef drew = LLVMBuildLoad2(fn->b, i32, flag, "");
    cg_if_begin(
        fn, fin,
        LLVMBuildICmp(fn->b, LLVMIntNE, drew, LLVMConstInt(i32, 0, 0), ""));
    cg_if others;
    cg_if_begin(fn, &others, LLVMBuildNot(fn->b, solo, ""));
    tg->fence(fn);
    cg_if_end(fn, &others);
    return t0;
}

/* Volatile load / store of element i of a leaf buffer (cg_load and
 * cg_store, volatile): the tile status.  Each access states its natural
 * alignment: the data layout comes later (cg_ptx_finish), and without it
 * NVPTX at CodeGenOpt::None (the quick tier) split the packed 64-bit
 * status into two 32-bit volatile accesses, so that the look-back could
 * read a flag with another tile's value (wrong scans on an H100); the
 * optimising pipeline had inferred the alignment and hidden it. */
LLVMValueRef sk_ptx_vload(cg_fn *fn, weft_type t, LLVMValueRef base,
                          LLVMValueRef i)
{
    LLVMTypeRef mt = cg_mem_type(fn->llctx, t);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(fn->b, mt, base, &i, 1, "");
    LLVMValueRef x = LLVMBuildLoad2(fn->b, mt, p, "");
    LLVMSetVolatile(x, 1);
    LLVMSetAlignment(x, (unsigned)weft_type_size(t));
    if (t == WEFT_BOOL) {
        x = LLVMBuildICmp(fn->b, LLVMIntNE, x, LLVMConstInt(mt, 0, 0), "");
    }
    return x;
}

void sk_ptx_vstore(cg_fn *fn, weft_type t, LLVMValueRef base, LLVMValueRef i,
                   LLVMValueRef x)
{
    LLVMTypeRef mt = cg_mem_type(fn->llctx, t);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(fn->b, mt, base, &i, 1, "");
    if (t == WEFT_BOOL) {
        x = LLVMBuildZExt(fn->b, x, mt, "");
    }
    LLVMValueRef st = LLVMBuildStore(fn->b, x, p);
    LLVMSetVolatile(st, 1);
    LLVMSetAlignment(st, (unsigned)weft_type_size(t));
}
