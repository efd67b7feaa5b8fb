/*
 * skeletons-ir/foldseg.c: foldSeg and fold1Seg, segmented reductions along
 * the innermost dimension.
 *
 * The input is `outer` rows of `inner` elements; the segment descriptor
 * cuts every row the same way into nseg consecutive segments.  The driver
 * (runtime/exec_foldseg.c) checks the lengths and turns them into
 * offsets on the host: aux 0 is an i64 array of nseg + 1 offsets, off[0] =
 * 0, off[k + 1] = off[k] + len[k].  The offset form (weft_fold_seg_offsets,
 * fe_term.op FE_SEG_OFFSETS) is given them: the driver only checks them,
 * and the kernel reads off[k] from the descriptor itself (any integral
 * type; aux 0 is then unused).  One entry point runs over the results
 * (outer * nseg of them, row-major), or, when aux 2 is 1, over parts:
 * part p is the results [part[p], part[p + 1]) (aux 1, parts + 1 of them,
 * which the driver cuts so that each part holds about as many elements:
 * segments of very different lengths, as a power-law matrix's rows, are
 * shared out by elements, not by count).  When aux 2 is 2 (foldSeg of one
 * row, lengths checked by the driver), the parts come with no offsets:
 * aux 0 holds each part's first element (parts + 1 of them) and a part
 * walks the lengths themselves (kid 2), adding them up as it goes; the
 * driver then never writes nor the kernel reads the 8 bytes of an offset
 * per segment (a million rows: 16 MB of traffic).  The offset form's
 * parts are mode 1's (runtime/exec_foldseg.c says why: no walk of its
 * offsets).  Otherwise result q is row o = q /
 * nseg, segment k = q % nseg (divided once at the start of the range,
 * then stepped: k + 1, or 0 and the next row), and folds the elements
 * [o * inner + off[k], o * inner + off[k + 1]) of the input from left to
 * right:
 *
 *     acc = z (foldSeg) or the segment's first element (fold1Seg);
 *     for the rest: acc = f(acc, a[i]);  out[q] = acc
 *
 * as the interpreter does.  The inner loop reads linearly (through
 * sk_read: a producer fused into the input is computed inline) and the
 * combine carries the reassoc flag, as fold's does, so a floating-point
 * sum vectorises.  On the CPU a short segment's loop comes in two copies,
 * one for segments inside every array the input reads at the element's
 * own index, whose reads of them go unchecked (fold_short).  Empty
 * segments of fold1Seg never reach the kernel: the driver reports them
 * first.
 */
#include "sk.h"

static bool fold_seg_supported(const fe_term *t)
{
    return t->atype->narrays == 1 && t->nfun == 1 &&
           t->nkid == (t->kind == FE_FOLD_SEG ? 3 : 2);
}

static weft_status fold_seg_prepare(weft_context *ctx, fe_arena *arena,
                                    sk_kernel *k)
{
    k->nentry = 1;
    weft_status s =
        sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 0, WEFT_I64, 1);
    k->aux_item[0] = k->nitem - 1;
    if (s == WEFT_OK) {
        s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 1, WEFT_I64, 1);
        k->aux_item[1] = k->nitem - 1;
    }
    if (s == WEFT_OK) {
        s = sk_add_item(ctx, arena, k, SK_SCALAR, SK_SRC_AUX, 2, WEFT_I64, 0);
        k->aux_item[2] = k->nitem - 1;
    }
    return s;
}

/* Where the results of the range begin or end: at (start or end) itself,
 * or by parts at part[at]; the part array is read at 0 when not by parts
 * (it has one element then), so that nothing is read outside it. */
static LLVMValueRef range_at(cg_fn *fn, LLVMValueRef byparts,
                             const cg_array *part, LLVMValueRef at)
{
    LLVMBuilderRef B = fn->b;
    LLVMValueRef i = LLVMBuildSelect(B, byparts, at, cg_i64(fn, 0), "");
    LLVMValueRef q = cg_load(fn, WEFT_I64, part->ptr[0], i);
    return LLVMBuildSelect(B, byparts, q, at, "");
}

/* Entry k (i64) of the descriptor (the last kid: lengths or offsets),
 * any integral type (the driver has checked them). */
static LLVMValueRef seg_entry(sk_fn *f, LLVMValueRef k)
{
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    const cg_array *seg = sk_kid_array(f, t->nkid - 1);
    weft_type lt = seg->leaf[0];
    LLVMValueRef v = cg_load(fn, lt, seg->ptr[0], k);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    if (LLVMGetIntTypeWidth(LLVMTypeOf(v)) == 64) {
        return v;
    }
    return fe_is_signed(lt) ? LLVMBuildSExt(fn->b, v, i64, "")
                            : LLVMBuildZExt(fn->b, v, i64, "");
}

/* Offset k (i64) of the segments: the descriptor's own entry in the
 * offset form, else the driver's offsets (aux 0). */
static LLVMValueRef offset_at(sk_fn *f, const cg_array *off, LLVMValueRef k)
{
    if (f->e->k->op->op == FE_SEG_OFFSETS) {
        return seg_entry(f, k);
    }
    return cg_load(&f->fn, WEFT_I64, off->ptr[0], k);
}

/* Segments shorter than this take fold_one's short loop on the CPU: one
 * vector of f32 under AVX-512, so that the vectorised loop would only
 * have run its remainder. */
enum { SHORT_SEG = 16 };

/* The back-edge weights of the short loop: a few trips each time, which
 * keeps IRCE from splitting it (it wants ten or more). */
enum { SHORT_TRIPS = 4 };

/* The short loop's alignment in bytes (llvm.loop.align): Zen 5 ran smvm's
 * rows of 10 in 5.4 ms where the 40 bytes of the scalar loop crossed a
 * 64-byte line, in 4.1 aligned (the same code, one thread). */
enum { SHORT_ALIGN = 64 };

/* The odds of a segment being short, as the branch to the short loop's
 * weights: the register allocator weighs spills by block frequency (see
 * fold_one). */
enum { SHORT_ODDS = 8 };

/* The loop ID of the short loop, on br, its back edge: aligned to
 * SHORT_ALIGN bytes and left to run as it is (llvm.loop.vectorize.enable
 * false).  Masked vector trips (llvm.loop.vectorize.predicate.enable: a
 * row of 10 one trip of 16 lanes) were tried in session 34 and were
 * slower on both machines measured: on Zen 5 smvm's masked gathers took
 * four times the scalar loop's time, on a Sapphire Rapids Xeon as long on
 * 16 threads and 10% longer on one (bench/results/smvm-cpu.md). */
static void short_loop_id(sk_fn *f, LLVMValueRef br)
{
    cg_fn *fn = &f->fn;
    LLVMContextRef c = fn->llctx;
    LLVMMetadataRef align[2] = {
        LLVMMDStringInContext2(c, "llvm.loop.align", 15),
        LLVMValueAsMetadata(
            LLVMConstInt(LLVMInt32TypeInContext(c), SHORT_ALIGN, 0))};
    LLVMMetadataRef vec[2] = {
        LLVMMDStringInContext2(c, "llvm.loop.vectorize.enable", 26),
        LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(c), 0, 0))};
    LLVMMetadataRef props[2] = {LLVMMDNodeInContext2(c, align, 2),
                                LLVMMDNodeInContext2(c, vec, 2)};
    cg_loop_props(fn, br, props, 2);
}

/* acc = f(acc, a[i]) for i in [lo, hi), f the fold's combine with the
 * reassoc flag.  A short loop (few trips) is left to run as it is: the
 * IR vectorisers do not touch it, and its back edge says that it runs
 * few times.  in: one of fold_short's copies, or NULL. */
static weft_status fold_loop(sk_fn *f, const fe_term *src, const cg_mut *acc,
                             LLVMValueRef lo, LLVMValueRef hi, bool few,
                             cg_inside *in)
{
    cg_fn *fn = &f->fn;
    cg_loop li;
    LLVMValueRef i;
    cg_val args[2], y;
    cg_loop_begin(fn, &li, lo, hi, &i);
    li.scalar = li.scalar && !few; /* the short loop's ID: short_loop_id */
    if (in) {
        in->index = i;
        fn->inside = in;
    }
    weft_status s;
    if ((s = cg_mut_get(fn, acc, &args[0])) == WEFT_OK &&
        (s = sk_read(f, src, i, NULL, &args[1])) == WEFT_OK) {
        fn->fmf = LLVMFastMathAllowReassoc;
        s = cg_apply(fn, f->e->k->op->fun[0], args, &y);
        fn->fmf = 0;
    }
    fn->inside = NULL;
    if (s) {
        return s;
    }
    cg_mut_set(fn, acc, &y);
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(fn->b);
    cg_loop_end(fn, &li);
    if (few) {
        LLVMValueRef br = LLVMGetBasicBlockTerminator(latch);
        cg_branch_weights(fn, br, SHORT_TRIPS, 1);
        short_loop_id(f, br);
    }
    return WEFT_OK;
}

/* The short loop over [lo, hi) (fold_loop, few), in two copies
 * (cg_inside): one that checks every read as usual, and one for segments
 * inside every array of rank 1 that the input reads at the element's own
 * index (smvm's cols ! i), whose reads of those go unchecked; a segment
 * takes the second when 0 <= lo and hi <= each such array's extent,
 * tested once.  smvm's element loop on the CPU lost a compare and a
 * branch (the column index against cols' length), and its load of the
 * column became one sign-extending load. */
static weft_status fold_short(sk_fn *f, const fe_term *src, const cg_mut *acc,
                              LLVMValueRef lo, LLVMValueRef hi)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    LLVMBasicBlockRef test = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef checked =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "seg.checked");
    LLVMBasicBlockRef inside =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "seg.inside");
    LLVMBasicBlockRef join =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "seg.join");
    cg_inside in = {.skip = false};
    LLVMPositionBuilderAtEnd(B, checked);
    weft_status s = fold_loop(f, src, acc, lo, hi, true, &in);
    if (s) {
        return s;
    }
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, inside);
    in.skip = true;
    if (in.n > 0 &&
        (s = fold_loop(f, src, acc, lo, hi, true, &in)) != WEFT_OK) {
        return s;
    }
    LLVMBuildBr(B, join);
    /* the test, where the segment's bounds are known */
    LLVMPositionBuilderAtEnd(B, test);
    LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 0, 0);
    if (in.n > 0) {
        ok = LLVMBuildICmp(B, LLVMIntSGE, lo, cg_i64(fn, 0), "");
    }
    for (int k = 0; k < in.n; k++) {
        cg_array a;
        if ((s = cg_array_of(fn, in.array[k], &a)) != WEFT_OK) {
            return s;
        }
        ok = LLVMBuildAnd(
            B, ok, LLVMBuildICmp(B, LLVMIntSLE, hi, a.extent[0], ""), "");
    }
    LLVMValueRef br = LLVMBuildCondBr(B, ok, inside, checked);
    cg_branch_weights(fn, br, CG_USUAL, CG_RARE);
    LLVMPositionBuilderAtEnd(B, join);
    return WEFT_OK;
}

/* out[q] = the fold of the input's elements [lo, hi) (see the head
 * comment), acc the accumulator.  On the CPU a segment of fewer than
 * SHORT_SEG elements takes a plain loop of its own (fold_loop, few): the
 * vectorised loop needs a vector's worth (two, interleaved), and below
 * that LLVM ran an 8-wide epilogue and its horizontal reduction, or a
 * scalar remainder that IRCE had split in three, whose bounds took some
 * twenty instructions to set up for each segment.  smvm's rows of ten
 * took 7% less time on one thread and 15-20% less by parts on two
 * (Zen 5, 131072 rows in the L3 cache).  The branch to it is weighted
 * SHORT_ODDS to 1, so that the register allocator keeps the row loop's
 * state in registers (three stack accesses a row where there were
 * eight) and the vectorised loop's too.  One thread here, before and
 * after: smvm banded 6.15-6.21 ms -> 5.21-5.24, power law unchanged
 * (17.1-17.5 -> 17.2-17.3); a segmented sum of a map over 2^16 floats,
 * segments of 16: 0.62 -> 0.43, of 4096: 0.10 either way.  Weighted as
 * the usual branch (2^20 to 1) the banded matrix took 4.9-5.0 but the
 * vectorised loop spilled its counter: segments of 4096 took 0.13.  The
 * short loop comes in two copies (fold_short). */
static weft_status fold_one(sk_fn *f, const cg_mut *acc, LLVMValueRef q,
                            LLVMValueRef lo, LLVMValueRef hi)
{
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    bool seeded = t->kind == FE_FOLD_SEG;
    const fe_term *src = t->kid[seeded ? 1 : 0];
    weft_status s;
    if (seeded) {
        cg_mut_set(fn, acc, sk_kid_value(f, 0));
    } else {
        cg_val x0;
        if ((s = sk_read(f, src, lo, NULL, &x0)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, acc, &x0);
        lo = LLVMBuildAdd(fn->b, lo, cg_i64(fn, 1), "");
    }
    bool split = fn->target == &cg_target_cpu;
    cg_if few;
    if (split) {
        LLVMValueRef len = LLVMBuildSub(fn->b, hi, lo, "");
        cg_if_begin(
            fn, &few,
            LLVMBuildICmp(fn->b, LLVMIntSLT, len, cg_i64(fn, SHORT_SEG), ""));
        cg_branch_weights(fn, few.br, SHORT_ODDS, 1);
        if ((s = fold_short(f, src, acc, lo, hi)) != WEFT_OK) {
            return s;
        }
        cg_if_else(fn, &few);
    }
    if ((s = fold_loop(f, src, acc, lo, hi, false, NULL)) != WEFT_OK) {
        return s;
    }
    if (split) {
        cg_if_end(fn, &few);
    }
    cg_val y;
    if ((s = cg_mut_get(fn, acc, &y)) != WEFT_OK) {
        return s;
    }
    cg_array_store(fn, sk_out_array(f, 0), q, &y);
    return WEFT_OK;
}

/* Mode 2: the parts [start, end) of one row, walking the lengths from
 * element first[start] on (aux 0), each segment's end the next one's
 * start. */
static weft_status emit_walk(sk_fn *f, const cg_mut *acc)
{
    cg_fn *fn = &f->fn;
    const cg_array *part = sk_aux_array(f, 1);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMValueRef q0 = cg_load(fn, WEFT_I64, part->ptr[0], f->start);
    LLVMValueRef q1 = cg_load(fn, WEFT_I64, part->ptr[0], f->end);
    LLVMValueRef lop = cg_alloca(fn, i64, "lo");
    LLVMBuildStore(fn->b,
                   cg_load(fn, WEFT_I64, sk_aux_array(f, 0)->ptr[0], f->start),
                   lop);
    cg_loop l;
    LLVMValueRef q;
    cg_loop_begin(fn, &l, q0, q1, &q);
    LLVMValueRef lo = LLVMBuildLoad2(fn->b, i64, lop, "");
    LLVMValueRef hi = LLVMBuildAdd(fn->b, lo, seg_entry(f, q), "");
    LLVMBuildStore(fn->b, hi, lop);
    weft_status s = fold_one(f, acc, q, lo, hi);
    if (s) {
        return s;
    }
    cg_loop_end(fn, &l);
    return WEFT_OK;
}

/* The loop over results [start, end). */
static weft_status emit_loop(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    bool seeded = t->kind == FE_FOLD_SEG;
    const fe_term *src = t->kid[seeded ? 1 : 0];
    const cg_array *out = sk_out_array(f, 0);
    const cg_array *off = sk_aux_array(f, 0);
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, src, ext);
    if (s) {
        return s;
    }
    LLVMValueRef inner = ext[src->rank - 1];
    LLVMValueRef nseg = out->extent[out->rank - 1];
    cg_mut acc;
    if ((s = cg_mut_new(fn, t->type, &acc)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef mode = sk_aux_value(f, 2)->v[0];
    cg_if bylen;
    /* mode 2: foldSeg by lengths */
    bool mode2 = seeded && t->op != FE_SEG_OFFSETS;
    if (mode2) {
        cg_if_begin(fn, &bylen,
                    LLVMBuildICmp(fn->b, LLVMIntEQ, mode, cg_i64(fn, 2), ""));
        s = emit_walk(f, &acc);
        if (s) {
            return s;
        }
        cg_if_else(fn, &bylen);
    }
    /* the results [q0, q1) of the range: the range itself, or by parts */
    LLVMBuilderRef B = fn->b;
    LLVMValueRef byparts = LLVMBuildICmp(B, LLVMIntNE, mode, cg_i64(fn, 0), "");
    const cg_array *part = sk_aux_array(f, 1);
    LLVMValueRef q0 = range_at(fn, byparts, part, f->start);
    LLVMValueRef q1 = range_at(fn, byparts, part, f->end);
    /* the segment k of result q and its row's base, divided out once per
     * range and then stepped (a division per result costs more than the
     * fold of a short segment) */
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    bool one_row = src->rank == 1; /* then k = q and the base is 0 */
    LLVMValueRef kslot = NULL, bslot = NULL;
    if (!one_row) {
        kslot = cg_alloca(fn, i64, "seg");
        bslot = cg_alloca(fn, i64, "rowbase");
        LLVMBuildStore(B, LLVMBuildSRem(B, q0, nseg, ""), kslot);
        LLVMBuildStore(
            B, LLVMBuildMul(B, LLVMBuildSDiv(B, q0, nseg, ""), inner, ""),
            bslot);
    }
    cg_loop l;
    LLVMValueRef q;
    cg_loop_begin(fn, &l, q0, q1, &q);
    LLVMValueRef k = q, base = cg_i64(fn, 0);
    if (!one_row) {
        k = LLVMBuildLoad2(B, i64, kslot, "");
        base = LLVMBuildLoad2(B, i64, bslot, "");
    }
    LLVMValueRef k1 = LLVMBuildAdd(B, k, cg_i64(fn, 1), "");
    if (!one_row) {
        LLVMValueRef wrap = LLVMBuildICmp(B, LLVMIntEQ, k1, nseg, "");
        LLVMBuildStore(B, LLVMBuildSelect(B, wrap, cg_i64(fn, 0), k1, ""),
                       kslot);
        LLVMBuildStore(B,
                       LLVMBuildSelect(
                           B, wrap, LLVMBuildAdd(B, base, inner, ""), base, ""),
                       bslot);
    }
    LLVMValueRef lo = LLVMBuildAdd(fn->b, base, offset_at(f, off, k), "");
    LLVMValueRef hi = LLVMBuildAdd(fn->b, base, offset_at(f, off, k1), "");
    if ((s = fold_one(f, &acc, q, lo, hi)) != WEFT_OK) {
        return s;
    }
    cg_loop_end(fn, &l);
    if (mode2) {
        cg_if_end(fn, &bylen);
    }
    return WEFT_OK;
}

static weft_status fold_seg_emit(sk_emit *e, const char *const *names)
{
    sk_fn f;
    weft_status s = sk_fn_begin(e, &f, names[0]);
    if (s) {
        return s;
    }
    s = emit_loop(&f);
    if (s) {
        /* close the half-built function; the module is thrown away */
        LLVMBuildUnreachable(f.fn.b);
        cg_fn_end(&f.fn);
        return s;
    }
    sk_fn_end(&f);
    return WEFT_OK;
}

const sk_skeleton sk_fold_seg = {
    .name = "fold_seg",
    .family = SK_FOLD_SEG,
    .supported = fold_seg_supported,
    .prepare = fold_seg_prepare,
    .emit = fold_seg_emit,
    .fuses_input = true,
};
