/*
 * skeletons-ir/ptx/target.c: how a phase becomes a PTX kernel.
 *
 * The entry point of a phase is a kernel
 *
 *     void entry(uint64_t args[nwords] byval, int64_t n, int64_t grain)
 *
 * The argument block travels by value in the kernel's parameter space (the
 * driver copies it with the launch; no device buffer, no upload), laid out
 * exactly as on the CPU (sk.h), with device addresses where the CPU has
 * host pointers.  Its threads cut [0, n) into chunks of `grain` elements
 * and walk them in a grid-stride loop,
 *
 *     for (c = global thread id; c < ceil(n / grain); c += threads in grid)
 *         body(c grain, min(n, (c + 1) grain))
 *
 * so consecutive threads take consecutive chunks: with grain 1 a map
 * reads and writes memory coalesced, and any body written for the CPU's
 * [start, end) ranges runs unchanged.  The grid is sized by the runtime
 * from the kernel's occupancy (runtime-gpu), never from n, so one launch
 * covers any n.  Counters are 64-bit: n may exceed 2^32.
 *
 * Skeletons whose parallel structure differs on the GPU (block reductions
 * with warp shuffles) are this target's own (sk_target_ptx.own) and use
 * sk_fn_begin_raw, which skips the loop.
 */
#include <string.h>

#include "../sk.h"

/* Kernels of the PTX target's own, by family (NULL: the shared one). */
static const sk_skeleton *const ptx_own[SK_FAMILY_COUNT_] = {
    [SK_FOLD] = &sk_ptx_fold,
    [SK_SCAN] = &sk_ptx_scan,
    [SK_PERMUTE] = &sk_ptx_permute,
};

void sk_ptx_launch_bounds(cg_fn *fn, int maxntid, int minctasm)
{
    static const char *const key[2] = {"maxntidx", "minctasm"};
    const int val[2] = {maxntid, minctasm};
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    for (int a = 0; a < 2; a++) {
        LLVMMetadataRef md[3] = {
            LLVMValueAsMetadata(fn->fn),
            LLVMMDStringInContext2(fn->llctx, key[a], strlen(key[a])),
            LLVMValueAsMetadata(LLVMConstInt(i32, (unsigned)val[a], 0)),
        };
        LLVMMetadataRef node = LLVMMDNodeInContext2(fn->llctx, md, 3);
        LLVMAddNamedMetadataOperand(fn->mod, "nvvm.annotations",
                                    LLVMMetadataAsValue(fn->llctx, node));
    }
}

static weft_status ptx_entry_begin(sk_emit *e, sk_fn *f, const char *name)
{
    LLVMContextRef c = e->llctx;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    unsigned nwords = (unsigned)(e->k->nwords > 0 ? e->k->nwords : 1);
    LLVMTypeRef block = LLVMArrayType2(i64, nwords);
    LLVMTypeRef params[3] = {LLVMPointerTypeInContext(c, 0), i64, i64};
    LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 3, 0);
    weft_status s = cg_fn_begin(&f->fn, e->ctx, &cg_target_ptx, e->arena,
                                e->mod, name, ty, e->core->nvar);
    if (s) {
        return s;
    }
    unsigned kind = LLVMGetEnumAttributeKindForName("byval", 5);
    LLVMAddAttributeAtIndex(f->fn.fn, 1,
                            LLVMCreateTypeAttribute(c, kind, block));
    unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
    LLVMAddAttributeAtIndex(f->fn.fn, 1, LLVMCreateEnumAttribute(c, align, 8));
    cg_noalias(&f->fn, 0);
    f->args = LLVMGetParam(f->fn.fn, 0);
    f->n = LLVMGetParam(f->fn.fn, 1);
    f->grain = LLVMGetParam(f->fn.fn, 2);
    return WEFT_OK;
}

static LLVMValueRef wide(cg_fn *fn, LLVMValueRef x)
{
    return LLVMBuildZExt(fn->b, x, LLVMInt64TypeInContext(fn->llctx), "");
}

static void ptx_range_begin(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *t = fn->target;
    LLVMBuilderRef b = fn->b;
    LLVMValueRef bs = wide(fn, t->block_size(fn, 0));
    LLVMValueRef gid = LLVMBuildAdd(
        b, LLVMBuildMul(b, wide(fn, t->block_index(fn, 0)), bs, ""),
        wide(fn, t->thread_index(fn, 0)), "gid");
    f->loop_step = LLVMBuildMul(b, wide(fn, t->grid_size(fn, 0)), bs, "");
    LLVMValueRef one = cg_i64(fn, 1);
    LLVMValueRef chunks = LLVMBuildUDiv(
        b, LLVMBuildSub(b, LLVMBuildAdd(b, f->n, f->grain, ""), one, ""),
        f->grain, "chunks");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    f->loop_head = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk.body");
    f->loop_exit = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk.end");
    LLVMBuildBr(b, f->loop_head);
    LLVMPositionBuilderAtEnd(b, f->loop_head);
    f->loop_i = LLVMBuildPhi(b, LLVMInt64TypeInContext(fn->llctx), "c");
    LLVMAddIncoming(f->loop_i, &gid, &pre, 1);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, f->loop_i, chunks, ""),
                    body, f->loop_exit);
    LLVMPositionBuilderAtEnd(b, body);
    f->chunk = f->loop_i;
    f->start = LLVMBuildMul(b, f->loop_i, f->grain, "start");
    LLVMValueRef hi = LLVMBuildAdd(b, f->start, f->grain, "");
    f->end = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, hi, f->n, ""), hi,
                             f->n, "end");
}

static void ptx_range_end(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef next = LLVMBuildAdd(fn->b, f->loop_i, f->loop_step, "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(fn->b);
    LLVMAddIncoming(f->loop_i, &next, &latch, 1);
    LLVMBuildBr(fn->b, f->loop_head);
    LLVMPositionBuilderAtEnd(fn->b, f->loop_exit);
}

const sk_target sk_target_ptx = {
    .name = "ptx",
    .cg = &cg_target_ptx,
    .own = ptx_own,
    .entry_begin = ptx_entry_begin,
    .range_begin = ptx_range_begin,
    .range_end = ptx_range_end,
    .chunk_elems = 4,    /* runtime-gpu's element-wise grain: 16 bytes of f32 */
    .array_align = FE_DEVICE_ALIGN, /* cuMemAlloc blocks; caller memory
                                       is checked (lib/array.c) */
};
