/*
 * skeletons-ir/ptx/target.c: how a phase becomes a PTX kernel.
 *
 * The entry point of a phase is a kernel
 *
 *     void entry(uint64_t args[nwords] byval, int64_t n, int64_t grain,
 *                int64_t first, int64_t skip)
 *
 * The argument block travels by value in the kernel's parameter space (the
 * driver copies it with the launch; no device buffer, no upload), laid out
 * exactly as on the CPU (sk.h), with device addresses where the CPU has
 * host pointers.  Its threads cut [0, n) into chunks of `grain` elements
 * and walk them in a grid-stride loop,
 *
 *     for (c = first + global thread id; c grain < n; c += threads in grid)
 *         body(c grain, min(n, (c + 1) grain))
 *
 * `first` is 0 but where a context over several GPUs runs the chunks
 * [first, ceil(n / grain)) of one kernel on one of its devices
 * (runtime-gpu/multi.c, "Kernels"); entries of this target's own
 * (sk_fn_begin_raw) take it too, so that every entry has one signature
 * and the runtime one way to launch, and those the runtime splits over
 * devices (the fold's, ptx/fold.c) start their items at it; the others
 * ignore it.  `skip` is 0 but in the pieces of an uneven kernel split
 * over several GPUs ("Pieces" below); every other entry ignores it.
 *
 * so consecutive threads take consecutive chunks: with grain 1 a map
 * reads and writes memory coalesced, and any body written for the CPU's
 * [start, end) ranges runs unchanged.  The grid is sized by the runtime
 * from the kernel's occupancy (runtime-gpu), never from n, so one launch
 * covers any n.  Counters are 64-bit: n may exceed 2^32.
 *
 * Blocks have at most SK_PTX_ELEMENT_BLOCK (256) threads (.maxntid, unless
 * the skeleton sets sk_kernel.block_max): the occupancy query then picks
 * no larger block, blocks of 256 reach full occupancy as well as 1024,
 * and a grid of 65,536 elements fills 256 blocks, every SM of an H100
 * (in blocks of 1024 it filled 64 of 132).  The generate family without
 * a while loop (sk_ptx_wide) takes chunk_elems elements per chunk
 * whatever grain the runtime passes, which generate.c reads and writes
 * 16 bytes at a time; with a while loop an element is a chunk, so that
 * a small n still gives every thread one element.
 *
 * The chunk number c reaches the body through an inline-assembly copy:
 * LLVM's loop strength reduction would otherwise turn every array's
 * address c grain + i into a 64-bit pointer of its own, stepped by the
 * grid's stride and kept alive across the chunk loop, beside the inner
 * loop's copies (Black-Scholes: 47 registers; 38 with the copy).
 *
 * The grid.  Element-wise work of even cost runs on a persistent grid
 * (as many blocks as are resident; runtime-gpu), each thread taking
 * chunks grid threads apart.  Where an element's cost varies (a while
 * loop: sk_ptx_uneven), such a stride can resonate with the rows of a 2D
 * generate: with Mandelbrot's 8192-pixel rows and 132 SMs x 8 blocks of
 * 256 threads resident (24 registers), the stride is 33 rows exactly, every
 * thread walks one column, and the kernel took 3.20 ms on an H200 against
 * 2.36 with 6 blocks resident.  Such kernels get one chunk per thread (as
 * many blocks as that takes), and the hardware hands blocks to SMs as
 * they free up.  Not where every loop counts from a start to a bound
 * that are the same in every element (sk_kernel.even_loops): k-means'
 * loop over its 16 centroids costs the same for every point, and on the
 * persistent grid a block stages the centroids once for all its points
 * (codegen/stage.c) instead of once per 128 points.
 *
 * Pieces.  A context over several GPUs deals an uneven kernel's chunks
 * out in pieces, round robin (runtime-gpu/multi.c, "Kernels"), so that
 * every device gets its share of every region of the index space (the
 * Mandelbrot set sits in the middle rows: split in four ranges, the middle
 * devices worked 1.8 times the mean).  Device i's launch is a grid of
 * rows of blocks: each row's gridDim.x blocks cover one piece of chunks,
 * row y starts at chunk first + y skip (first: the device's first piece,
 * skip: the chunks from one of its pieces to its next), and a thread then
 * steps by skip times the rows (gridDim.y, at most 65,535) while its chunk
 * is below n.  With skip 0 the grid is one row and the loop as above.
 * Only uneven kernels carry this code; the others ignore skip.
 *
 * Skeletons whose parallel structure differs on the GPU (block reductions
 * with warp shuffles) are this target's own (sk_target_ptx.own) and use
 * sk_fn_begin_raw, which skips the loop.
 */

#include "../sk.h"

/* Kernels of the PTX target's own, by family (NULL: the shared one). */
static const sk_skeleton *const ptx_own[SK_FAMILY_COUNT_] = {
    [SK_FOLD] = &sk_ptx_fold,       [SK_SCAN] = &sk_ptx_scan,
    [SK_PERMUTE] = &sk_ptx_permute, [SK_FOLD_SEG] = &sk_ptx_fold_seg,
    [SK_STENCIL] = &sk_ptx_stencil,
};

static weft_status ptx_entry_begin(sk_emit *e, sk_fn *f, const char *name)
{
    LLVMContextRef c = e->llctx;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    unsigned nwords = (unsigned)(e->k->nwords > 0 ? e->k->nwords : 1);
    LLVMTypeRef block = LLVMArrayType2(i64, nwords);
    LLVMTypeRef params[5] = {LLVMPointerTypeInContext(c, 0), i64, i64, i64,
                             i64};
    LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 5, 0);
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
    f->first = LLVMGetParam(f->fn.fn, 3);
    return WEFT_OK;
}

/* Whether term t, or a function or fused producer in it, has a while
 * loop.  Manifest array operands are other kernels' work. */
static bool has_loop(const fe_term *t)
{
    if (!t) {
        return false;
    }
    if (t->kind == FE_WHILE) {
        return true;
    }
    for (int i = 0; i < t->nfun; i++) {
        if (t->fun[i] && has_loop(t->fun[i]->body)) {
            return true;
        }
    }
    for (int i = 0; i < t->nkid; i++) {
        const fe_term *kid = t->kid[i];
        if (kid && (!kid->acc || kid->delayed) && has_loop(kid)) {
            return true;
        }
    }
    return false;
}

bool sk_ptx_wide(const sk_kernel *k)
{
    return k->skel && k->skel->family == SK_GENERATE && !has_loop(k->op);
}

bool sk_ptx_uneven(const sk_kernel *k)
{
    return has_loop(k->op) && !k->even_loops;
}

int sk_ptx_launch_block(int block, int64_t items, int sms)
{
    enum { LEAST = 64 };
    if (block <= LEAST || items <= 0 || sms <= 0 ||
        (items + block - 1) / block >= sms) {
        return block > 0 ? block : LEAST;
    }
    int b = LEAST;
    while (b * 2 < block) {
        b *= 2; /* the largest power of two below block */
    }
    for (; b > LEAST; b /= 2) {
        if ((items + b - 1) / b >= sms) {
            return b;
        }
    }
    return LEAST;
}

static void ptx_range_begin(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *t = fn->target;
    LLVMBuilderRef b = fn->b;
    int most = f->e->k->block_max > 0 ? f->e->k->block_max
               : f->e->stage          ? SK_PTX_STAGED_BLOCK
                                      : SK_PTX_ELEMENT_BLOCK;
    cg_ptx_launch_bounds(fn, most, f->e->stage ? SK_PTX_STAGED_MIN_BLOCKS : 0);
    LLVMValueRef bs = cg_zext64(fn, t->block_size(fn, 0));
    LLVMValueRef gid = LLVMBuildAdd(
        b, LLVMBuildMul(b, cg_zext64(fn, t->block_index(fn, 0)), bs, ""),
        cg_zext64(fn, t->thread_index(fn, 0)), "");
    gid = LLVMBuildAdd(b, gid, LLVMGetParam(fn->fn, 3), "gid");
    f->loop_step = LLVMBuildMul(b, cg_zext64(fn, t->grid_size(fn, 0)), bs, "");
    if (sk_ptx_uneven(f->e->k)) {
        /* pieces `skip` chunks apart, a row of blocks each ("Pieces") */
        LLVMValueRef skip = LLVMGetParam(fn->fn, 4);
        LLVMValueRef row = cg_zext64(fn, t->block_index(fn, 1));
        LLVMValueRef rows = cg_zext64(fn, t->grid_size(fn, 1));
        gid = LLVMBuildAdd(b, gid, LLVMBuildMul(b, row, skip, ""), "gid");
        f->loop_step = LLVMBuildSelect(
            b, LLVMBuildICmp(b, LLVMIntEQ, skip, cg_i64(fn, 0), ""),
            f->loop_step, LLVMBuildMul(b, skip, rows, ""), "");
    }
    if (sk_ptx_wide(f->e->k)) {
        f->grain = cg_i64(fn, f->e->target->chunk_elems);
    }
    /* staged (sk_emit.stage): a chunk is one element, and the block runs
     * while its first thread's chunk c - tid is in range */
    LLVMValueRef lead = NULL;
    if (f->e->stage) {
        f->grain = cg_i64(fn, 1);
        lead = cg_zext64(fn, t->thread_index(fn, 0));
    }
    /* c grain < n rather than c < ceil(n / grain): no 64-bit division,
     * whose slow path is a call (c grain < n + grain never wraps) */
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    f->loop_head = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk.body");
    f->loop_exit =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk.end");
    LLVMBuildBr(b, f->loop_head);
    LLVMPositionBuilderAtEnd(b, f->loop_head);
    f->loop_i = LLVMBuildPhi(b, LLVMInt64TypeInContext(fn->llctx), "c");
    LLVMAddIncoming(f->loop_i, &gid, &pre, 1);
    LLVMBuildCondBr(
        b,
        LLVMBuildICmp(b, LLVMIntULT,
                      lead ? LLVMBuildSub(b, f->loop_i, lead, "")
                           : LLVMBuildMul(b, f->loop_i, f->grain, ""),
                      f->n, ""),
        body, f->loop_exit);
    LLVMPositionBuilderAtEnd(b, body);
    f->chunk = sk_ptx_opaque(fn, f->loop_i);
    f->start = LLVMBuildMul(b, f->chunk, f->grain, "start");
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
    .chunk_elems = 4, /* runtime-gpu's element-wise grain: 16 bytes of f32 */
    .array_align = FE_DEVICE_ALIGN, /* cuMemAlloc blocks; caller memory
                                       is checked (lib/array.c) */
};
