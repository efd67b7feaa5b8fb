/*
 * skeletons-ir/ptx/foldseg.c: foldSeg on the GPU in two passes, the PTX
 * target's own SK_FOLD_SEG skeleton, of family SK_FOLD_SEG_PASS (driver
 * rt_exec_fold_seg_pass, runtime/exec_foldseg_pass.c, which runs both
 * entries in one job).  fold1Seg keeps the shared skeleton (foldseg.c).
 *
 * Semantics are foldseg.c's: the input is `outer` rows of `inner`
 * elements, every row cut the same way by the nseg segment lengths (any
 * integral type), and result q = o nseg + k is z `f` (the elements of
 * segment k of row o, in order), z alone for an empty segment.  The
 * combine is associative but need not be commutative: every step below
 * keeps left-to-right order and none needs an identity.  The seed enters
 * once on the left of each segment's fold (f(z, x0 . x1 . ...), which is
 * the interpreter's f(...f(f(z, x0), x1)...) up to associativity: equal
 * for integers, within rounding for floats).
 *
 * Why two passes.  The kernel before this one did it all in one pass: a
 * block per tile of 256 segments scanned their lengths, found the tile's
 * first element by decoupled look-back, staged the elements through
 * shared memory and folded (merge path for long segments).  It held 80
 * registers (the look-back and the staging), so 23 warps a multiprocessor,
 * where the hand CSR-vector kernel of bench/gpu holds 32 registers and 56
 * warps; smvm is latency-bound, and with no eligible warp 66% of cycles
 * (ncu, H200, seg3's r1) the one pass stayed 1.75x behind the hand kernel
 * on a banded matrix.  Now the scan is a light pass of its own and the
 * fold a kernel of 40 registers with no shared memory and no barrier.
 *
 * Entry 0, offsets (tiles of S B segments, S = SEGS, B the block, at most
 * BLOCK; blocks take tiles from a counter in order, aux 1, zeroed, and
 * loop until none is left, as ptx/scan.c does, so that look-back always
 * makes progress):
 *
 *   1. thread i reads the lengths of segments s0 + S i .. s0 + S i + S - 1
 *      (0 past nseg; a 64-bit length kept within [-1, inner + 1], so that
 *      no sum overflows), and the block scans their sums (i64: warp
 *      shuffles, then the warp totals through shared memory);
 *   2. look-back (warp 0, as ptx/scan.c with the packed status: flag in
 *      the top two bits of a 64-bit word, the value in the low 62, one
 *      volatile store and load, no fence): tile 0 publishes its inclusive
 *      prefix at once; the others their aggregate, then look at their
 *      predecessors 32 at a time until an inclusive prefix, and publish
 *      theirs.  P, the tile's first element;
 *   3. checks, as the host driver made them: a negative length, or one
 *      that takes the running sum past inner, reports CG_ERR_SEG_NEG or
 *      CG_ERR_SEG_PAST with the segment as the report's element (the
 *      least wins, as the interpreter reports the first bad segment);
 *   4. the offsets P + the exclusive sums into aux 2 (nseg + 1 of them,
 *      the end too).  The lengths are the same for every row, so this is
 *      done once whatever `outer` (the one pass scanned them per row).
 *
 * Entry 1, the fold (a warp per item; the grid is what stays resident
 * and warps loop over the items): L = 2^lg lanes a segment (lg from the
 * driver, aux 3: the greatest power of two not above inner / nseg, at
 * most 32), so a warp item is 32 / L consecutive segments q of all the
 * rows (row q / nseg, a division only when outer > 1).  A lane reads its
 * segment's two offsets, kept within [0, inner] and in order (after a bad
 * length they are whatever entry 0 wrote; the fold then does nothing: a
 * warp that finds the error word set skips its items, so that no gather
 * reports before the lengths, as the interpreter would not).  Then trips,
 * while some segment of the warp has elements left (a ballot: the
 * shuffles need every lane): in a trip the L lanes of a segment take its
 * next U L elements, lane i the U consecutive ones from U i (U =
 * LANE_ITEMS), read at once with no branch (positions clamped into the
 * input: a lane past its segment reads an element it does not use) and
 * folded in order; a tree of shuffles folds the lanes' values in order
 * (lane i takes lane i + d's where lane i + d holds elements: d = 1, 2,
 * .., below L, steps that are uniform branches), and lane 0 adds the
 * trip's fold to the segment's, which began as z.  A light kernel's
 * combine is computed in every lane and selected (a branch would let LLVM
 * sink a trip's reads behind it); any other behind a branch.  A warp with
 * a segment longer than LONG_TRIPS trips folds its 32 / L segments one
 * after the other over the whole warp, LONG_ITEMS elements a lane a trip
 * (a power-law matrix's rows of 10^4 would otherwise keep the warp's
 * other groups idle while their own rows are long done).
 *
 * Reads.  The kernel sets sk_fn.local_errors and cg_fn.flat_reads, so that
 * a gather or a ! ix outside its array reads a cell of zeros instead of
 * branching around the load, and a gather's error is a bit in a register
 * that each thread reports once, at its end: ptxas then issues a trip's
 * reads of cols and vals at once, and then those of x (with a branch and a
 * compare-and-swap loop in every read, it kept them one after the other).
 *
 * Timed on the H200 (bench/results/gpu-profile.md, "rounds q1 and q2"):
 * TIMING-PLACEHOLDER
 *
 * Aux items: 0 the tile status words (i64, zeroed; sized by the driver
 * for blocks of MIN_BLOCK threads), 1 the tile counter (i64, zeroed), 2
 * the offsets (i64, nseg + 1), 3 lg (a scalar).
 */
#include <stdlib.h>
#include <string.h>

#include "../sk.h"

enum {
    WARP = 32,
    BLOCK = 256, /* the most threads of a block */
    MAX_WARPS = BLOCK / WARP,
    FLAG_AGG = 1, /* the status word's top two bits */
    FLAG_PREFIX = 2,
    AUX_STATUS = 0,
    AUX_TICKET = 1,
    AUX_OFFSETS = 2, /* the segments' offsets (entry 0 writes them) */
    AUX_LANES = 3,   /* scalar: log2 of the lanes a segment (entry 1) */
    SEGS = 4,        /* segments a thread of entry 0's tiles (S) */
    MAX_S = SEGS,    /* bound of the per-segment arrays */
    MIN_BLOCKS = 4,  /* entry 0's blocks a multiprocessor (launch
                        bounds: 64 registers) */
    LANE_ITEMS = 2,  /* elements a lane reads a trip (entry 1, U) */
    MAX_LANE_ITEMS = 8,
    PREFETCH = 0,     /* entry 1 reads the next item's offsets early */
    LONG_TRIPS = 2,   /* a segment of more trips is long (entry 1) */
    LONG_ITEMS = 4,   /* elements a lane reads a trip of a long segment */
    LANES_BLOCKS = 6, /* entry 1's blocks a multiprocessor (40 registers) */
};

/* ---- small helpers ---------------------------------------------------- */

static LLVMTypeRef t_i64(cg_fn *fn)
{
    return LLVMInt64TypeInContext(fn->llctx);
}

static LLVMTypeRef t_i32(cg_fn *fn)
{
    return LLVMInt32TypeInContext(fn->llctx);
}

static LLVMValueRef c32(cg_fn *fn, int v)
{
    return LLVMConstInt(t_i32(fn), (unsigned)v, 0);
}

static LLVMValueRef load64(cg_fn *fn, LLVMValueRef base, LLVMValueRef i)
{
    LLVMValueRef p = LLVMBuildInBoundsGEP2(fn->b, t_i64(fn), base, &i, 1, "");
    LLVMValueRef x = LLVMBuildLoad2(fn->b, t_i64(fn), p, "");
    LLVMSetAlignment(x, 8); /* the data layout comes later (cg_ptx_finish) */
    return x;
}

static void store64(cg_fn *fn, LLVMValueRef base, LLVMValueRef i,
                    LLVMValueRef x)
{
    LLVMValueRef p = LLVMBuildInBoundsGEP2(fn->b, t_i64(fn), base, &i, 1, "");
    LLVMSetAlignment(LLVMBuildStore(fn->b, x, p), 8);
}

/* A mutable i1, i32 or i64 (an alloca; mem2reg makes it SSA). */
static LLVMValueRef var(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef init)
{
    LLVMValueRef p = cg_alloca(fn, ty, "v");
    LLVMBuildStore(fn->b, init, p);
    return p;
}

static LLVMValueRef get(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef p)
{
    return LLVMBuildLoad2(fn->b, ty, p, "");
}

static LLVMValueRef i1c(cg_fn *fn, bool v)
{
    return LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), v, 0);
}

/* m = m `f` x (x the later value), with the combine's reassoc flag. */
static weft_status comb_back(sk_fn *f, const cg_mut *m, const cg_val *x)
{
    cg_fn *fn = &f->fn;
    cg_val args[2], y;
    weft_status s = cg_mut_get(fn, m, &args[0]);
    if (s) {
        return s;
    }
    args[1] = *x;
    fn->fmf = LLVMFastMathAllowReassoc;
    s = cg_apply(fn, f->e->k->op->fun[0], args, &y);
    fn->fmf = 0;
    if (s == WEFT_OK) {
        cg_mut_set(fn, m, &y);
    }
    return s;
}

/* ---- the tile --------------------------------------------------------- */

typedef struct tile {
    LLVMValueRef tid, lane, warp, nwarps, bs; /* i64 */
    LLVMValueRef inner, nseg;                 /* i64 */
    LLVMValueRef sh_tile, sh_prefix;          /* shared scalars (i64): the
                                                 tile, its prefix */
    int S;                                    /* segments a thread */
    LLVMValueRef span;                        /* i64: segments a tile,
                                                 S B */
    LLVMValueRef sh_wsum, sh_wneg;            /* shared i64[MAX_WARPS] */
    LLVMValueRef ntiles;                      /* i64 */
    LLVMValueRef tp;                          /* i64 slot: the tile */
    LLVMValueRef rawp[MAX_S];                 /* slots of the lengths' type:
                                                 the thread's lengths of the
                                                 tile */
    /* per tile */
    LLVMValueRef t, s0, nt;
} tile;

/* Segment q of thread tid in a tile: tid S + q (i64). */
static LLVMValueRef seg_of(cg_fn *fn, const tile *T, int q)
{
    return LLVMBuildAdd(fn->b,
                        LLVMBuildMul(fn->b, T->tid, cg_i64(fn, T->S), ""),
                        cg_i64(fn, q), "");
}

/* Tile t is the block's next: T->tp = t, and the thread's lengths of it
 * (0 past the segments, or past the tiles) in T->rawp. */
static void read_lengths(sk_fn *f, tile *T, LLVMValueRef t)
{
    cg_fn *fn = &f->fn;
    const cg_array *seg = sk_kid_array(f, 2);
    weft_type lt = seg->leaf[0];
    LLVMBuildStore(fn->b, t, T->tp);
    LLVMValueRef s0 = LLVMBuildMul(fn->b, t, T->span, "s0");
    LLVMValueRef live = LLVMBuildICmp(fn->b, LLVMIntULT, t, T->ntiles, "");
    for (int q = 0; q < T->S; q++) {
        LLVMValueRef sidx = LLVMBuildAdd(fn->b, s0, seg_of(fn, T, q), "");
        LLVMValueRef ok = LLVMBuildAnd(
            fn->b, live, LLVMBuildICmp(fn->b, LLVMIntULT, sidx, T->nseg, ""),
            "");
        LLVMBuildStore(fn->b, LLVMConstNull(cg_type(fn->llctx, lt)),
                       T->rawp[q]);
        cg_if in;
        cg_if_begin(fn, &in, ok);
        LLVMBuildStore(fn->b, cg_load(fn, lt, seg->ptr[0], sidx), T->rawp[q]);
        cg_if_end(fn, &in);
    }
}

/* The length (i64) of raw, a leaf of the descriptor: signed types extended
 * with their sign; a u64 past INT64_MAX becomes negative, which the checks
 * report as a sum past the extent, as the host did.  A 64-bit length is
 * kept within [-1, limit] (limit = inner + 1), which changes no check's
 * outcome and keeps the tile's sums from overflowing. */
static LLVMValueRef seg_len(sk_fn *f, LLVMValueRef v, LLVMValueRef limit,
                            LLVMValueRef *huge)
{
    cg_fn *fn = &f->fn;
    weft_type lt = sk_kid_array(f, 2)->leaf[0];
    LLVMTypeRef ty = LLVMTypeOf(v);
    unsigned w = LLVMGetIntTypeWidth(ty);
    bool sgn = fe_is_signed(lt);
    *huge = i1c(fn, false);
    if (w < 64) {
        return sgn ? LLVMBuildSExt(fn->b, v, t_i64(fn), "")
                   : LLVMBuildZExt(fn->b, v, t_i64(fn), "");
    }
    if (!sgn) {
        *huge = LLVMBuildICmp(fn->b, LLVMIntSLT, v, cg_i64(fn, 0), "");
    }
    return cg_smax(fn, cg_i64(fn, -1), cg_smin(fn, v, limit));
}

/* Report code at segment s (i64) into the error word. */
static void report(sk_fn *f, LLVMValueRef s, int code)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef key = LLVMBuildOr(
        fn->b, LLVMBuildShl(fn->b, s, cg_i64(fn, CG_KEY_ELEM_SHIFT), ""),
        cg_i64(fn, (int64_t)code << 10), "");
    sk_report_key(f, key);
}

/* Step 1: the threads' sums of lengths (len) scanned; returns each
 * thread's exclusive offset and sets *total (the tile's A) and *neg (i1:
 * some thread's isneg). */
static void scan_lengths(sk_fn *f, tile *T, LLVMValueRef len,
                         LLVMValueRef isneg, LLVMValueRef *excl,
                         LLVMValueRef *total, LLVMValueRef *neg)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMBuilderRef B = fn->b;
    LLVMValueRef lane32 = LLVMBuildTrunc(B, T->lane, t_i32(fn), "");
    LLVMValueRef x = len;
    for (int d = 1; d < WARP; d *= 2) {
        LLVMValueRef src = LLVMBuildSelect(
            B, LLVMBuildICmp(B, LLVMIntUGE, lane32, c32(fn, d), ""),
            LLVMBuildSub(B, lane32, c32(fn, d), ""), lane32, "");
        LLVMValueRef y = tg->shuffle_idx(fn, x, src);
        x = LLVMBuildSelect(
            B, LLVMBuildICmp(B, LLVMIntUGE, lane32, c32(fn, d), ""),
            LLVMBuildAdd(B, x, y, ""), x, "");
    }
    /* the warp's negative lengths */
    LLVMValueRef negw = cg_zext64(fn, tg->ballot(fn, isneg));
    cg_if last;
    cg_if_begin(fn, &last,
                LLVMBuildICmp(B, LLVMIntEQ, T->lane, cg_i64(fn, WARP - 1), ""));
    store64(fn, T->sh_wsum, T->warp, x);
    store64(fn, T->sh_wneg, T->warp, negw);
    cg_if_end(fn, &last);
    tg->barrier(fn);
    /* the warps before this one, and all of them: MAX_WARPS steps with no
     * loop (a loop of nwarps trips, unrolled by LLVM with remainders, was
     * larger and slower) */
    LLVMValueRef before = cg_i64(fn, 0), all = cg_i64(fn, 0);
    LLVMValueRef flags = cg_i64(fn, 0);
    for (int k = 0; k < MAX_WARPS; k++) {
        LLVMValueRef w = cg_i64(fn, k);
        LLVMValueRef there = LLVMBuildICmp(B, LLVMIntULT, w, T->nwarps, "");
        LLVMValueRef ws = LLVMBuildSelect(B, there, load64(fn, T->sh_wsum, w),
                                          cg_i64(fn, 0), "");
        all = LLVMBuildAdd(B, all, ws, "");
        before = LLVMBuildAdd(
            B, before,
            LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, w, T->warp, ""), ws,
                            cg_i64(fn, 0), ""),
            "");
        flags = LLVMBuildOr(B, flags,
                            LLVMBuildSelect(B, there, load64(fn, T->sh_wneg, w),
                                            cg_i64(fn, 0), ""),
                            "");
    }
    *excl = LLVMBuildSub(B, LLVMBuildAdd(B, before, x, ""), len, "");
    *total = all;
    *neg = LLVMBuildICmp(B, LLVMIntNE, flags, cg_i64(fn, 0), "");
}

/* The packed status word of flag and v (v clamped to 62 bits' range by
 * the caller). */
static LLVMValueRef pack(cg_fn *fn, int flag, LLVMValueRef v)
{
    LLVMValueRef bits =
        LLVMBuildAnd(fn->b, v, cg_i64(fn, (INT64_C(1) << 62) - 1), "");
    return LLVMBuildOr(fn->b, bits, cg_i64(fn, (int64_t)((uint64_t)flag << 62)),
                       "");
}

static void publish(sk_fn *f, const tile *T, int flag, LLVMValueRef v)
{
    cg_fn *fn = &f->fn;
    const cg_array *st = sk_aux_array(f, AUX_STATUS);
    sk_ptx_vstore(fn, WEFT_I64, st->ptr[0], T->t, pack(fn, flag, v));
}

/* Step 2 (warp 0, every lane): the sum of the lengths of the row's tiles
 * before this one, by look-back; piece 0 has none. */
static LLVMValueRef look_back(sk_fn *f, const tile *T, LLVMValueRef piece)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const cg_array *st = sk_aux_array(f, AUX_STATUS);
    LLVMTypeRef i64 = t_i64(fn), i32 = t_i32(fn);
    LLVMValueRef excl = var(fn, i64, cg_i64(fn, 0));
    LLVMValueRef endp = var(fn, i64, piece); /* window: pieces end-1-lane */
    LLVMValueRef first = LLVMBuildSub(fn->b, T->t, piece, "");
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lb.window");
    LLVMBasicBlockRef spin =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lb.spin");
    LLVMBasicBlockRef got =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lb.got");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lb.done");
    LLVMBuildCondBr(fn->b,
                    LLVMBuildICmp(fn->b, LLVMIntEQ, piece, cg_i64(fn, 0), ""),
                    done, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    LLVMValueRef end = get(fn, i64, endp);
    LLVMValueRef j = LLVMBuildSub(
        fn->b, LLVMBuildSub(fn->b, end, cg_i64(fn, 1), ""), T->lane, "");
    LLVMValueRef inr = LLVMBuildICmp(fn->b, LLVMIntSGE, j, cg_i64(fn, 0), "");
    LLVMValueRef gi = LLVMBuildSelect(
        fn->b, inr, LLVMBuildAdd(fn->b, first, j, ""), T->t, "");
    LLVMBuildBr(fn->b, spin);
    LLVMPositionBuilderAtEnd(fn->b, spin);
    LLVMValueRef word = sk_ptx_vload(fn, WEFT_I64, st->ptr[0], gi);
    /* lanes before the row's first piece count as a prefix of 0 */
    word =
        LLVMBuildSelect(fn->b, inr, word,
                        cg_i64(fn, (int64_t)((uint64_t)FLAG_PREFIX << 62)), "");
    LLVMValueRef fl = LLVMBuildTrunc(
        fn->b, LLVMBuildLShr(fn->b, word, cg_i64(fn, 62), ""), i32, "");
    LLVMValueRef pm = tg->ballot(
        fn, LLVMBuildICmp(fn->b, LLVMIntEQ, fl, c32(fn, FLAG_PREFIX), ""));
    LLVMValueRef zm =
        tg->ballot(fn, LLVMBuildICmp(fn->b, LLVMIntEQ, fl, c32(fn, 0), ""));
    LLVMValueRef ctz_args[2] = {pm, i1c(fn, false)};
    LLVMValueRef fp = cg_intrinsic(fn, "llvm.cttz", &i32, 1, ctz_args, 2);
    /* lanes 0 .. fp (all 32 when there is no prefix) must be set */
    LLVMValueRef upto =
        LLVMBuildShl(fn->b, cg_i64(fn, 2), cg_zext64(fn, fp), "");
    LLVMValueRef need = LLVMBuildTrunc(
        fn->b, LLVMBuildSub(fn->b, upto, cg_i64(fn, 1), ""), i32, "");
    LLVMValueRef wait = LLVMBuildICmp(
        fn->b, LLVMIntNE, LLVMBuildAnd(fn->b, zm, need, ""), c32(fn, 0), "");
    LLVMBuildCondBr(fn->b, wait, spin, got);
    LLVMPositionBuilderAtEnd(fn->b, got);
    /* the value, sign-extended from 62 bits, of lanes 0 .. fp */
    LLVMValueRef v = LLVMBuildAShr(
        fn->b, LLVMBuildShl(fn->b, word, cg_i64(fn, 2), ""), cg_i64(fn, 2), "");
    v = LLVMBuildSelect(
        fn->b, LLVMBuildICmp(fn->b, LLVMIntULE, T->lane, cg_zext64(fn, fp), ""),
        v, cg_i64(fn, 0), "");
    for (int d = 1; d < WARP; d *= 2) {
        v = LLVMBuildAdd(
            fn->b, v,
            tg->shuffle_down(fn, v, c32(fn, d)) /* past lane 31: own */, "");
    }
    /* shuffle_down past lane 31 gives the lane's own value: only lane 0's
     * sum is complete, which the warp then shares */
    v = tg->shuffle_idx(fn, v, c32(fn, 0));
    LLVMBuildStore(fn->b, LLVMBuildAdd(fn->b, get(fn, i64, excl), v, ""), excl);
    LLVMBuildStore(fn->b, LLVMBuildSub(fn->b, end, cg_i64(fn, WARP), ""), endp);
    LLVMBuildCondBr(fn->b,
                    LLVMBuildICmp(fn->b, LLVMIntULT, fp, c32(fn, WARP), ""),
                    done, head);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return get(fn, i64, excl);
}

/* Shared memory of the tile loop. */
static void tile_shared(sk_fn *f, tile *T)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMTypeRef i64 = t_i64(fn);
    LLVMValueRef sc = tg->shared_array(fn, i64, 2);
    LLVMValueRef one = cg_i64(fn, 1);
    T->sh_tile = sc;
    T->sh_prefix = LLVMBuildInBoundsGEP2(fn->b, i64, sc, &one, 1, "");
    T->sh_wsum = tg->shared_array(fn, i64, MAX_WARPS);
    T->sh_wneg = tg->shared_array(fn, i64, MAX_WARPS);
}

/* Entry 0's step 4: the tile's offsets, P + excl, into aux AUX_OFFSETS
 * (the last tile also the end, P + total).  A bad tile's offsets are
 * written too: entry 1 runs after an error all the same, and keeps every
 * offset within [0, inner] (emit_lanes). */
static void write_offsets(sk_fn *f, const tile *T, const LLVMValueRef *excl,
                          LLVMValueRef P, LLVMValueRef total)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef off = sk_aux_array(f, AUX_OFFSETS)->ptr[0];
    for (int q = 0; q < T->S && q < MAX_S; q++) {
        LLVMValueRef sq = seg_of(fn, T, q);
        cg_if in;
        cg_if_begin(fn, &in, LLVMBuildICmp(fn->b, LLVMIntSLT, sq, T->nt, ""));
        store64(fn, off, LLVMBuildAdd(fn->b, T->s0, sq, ""),
                LLVMBuildAdd(fn->b, P, excl[q], ""));
        cg_if_end(fn, &in);
    }
    cg_if end;
    cg_if_begin(
        fn, &end,
        LLVMBuildAnd(
            fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, T->tid, cg_i64(fn, 0), ""),
            LLVMBuildICmp(fn->b, LLVMIntEQ,
                          LLVMBuildAdd(fn->b, T->s0, T->nt, ""), T->nseg, ""),
            ""));
    store64(fn, off, T->nseg, LLVMBuildAdd(fn->b, P, total, ""));
    cg_if_end(fn, &end);
}

/* One tile (T->t): steps 1 to 4. */
static void one_tile(sk_fn *f, tile *T)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMBuilderRef B = fn->b;
    LLVMValueRef piece = T->t; /* of the one row */
    T->s0 = LLVMBuildMul(B, T->t, T->span, "s0");
    T->nt = cg_smin(fn, T->span, LLVMBuildSub(B, T->nseg, T->s0, ""));
    /* 1. the lengths (read_lengths; 0 past nseg), the thread's S summed */
    LLVMValueRef huge[MAX_S] = {0}, len[MAX_S] = {0}, excl[MAX_S] = {0};
    LLVMValueRef sum = cg_i64(fn, 0), isneg = i1c(fn, false);
    for (int q = 0; q < T->S; q++) {
        len[q] =
            seg_len(f,
                    get(fn, cg_type(fn->llctx, sk_kid_array(f, 2)->leaf[0]),
                        T->rawp[q]),
                    LLVMBuildAdd(B, T->inner, cg_i64(fn, 1), ""), &huge[q]);
        sum = LLVMBuildAdd(B, sum, len[q], "");
        isneg = LLVMBuildOr(
            B, isneg, LLVMBuildICmp(B, LLVMIntSLT, len[q], cg_i64(fn, 0), ""),
            "");
    }
    /* a huge u64 length scans as negative: the tile is bad either way */
    LLVMValueRef total, neg;
    scan_lengths(f, T, sum, isneg, &excl[0], &total, &neg);
    for (int q = 1; q < T->S && q < MAX_S; q++) {
        excl[q] = LLVMBuildAdd(B, excl[q - 1], len[q - 1], "");
    }
    /* 2. the prefix (warp 0) */
    cg_if w0;
    cg_if_begin(fn, &w0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, T->warp, cg_i64(fn, 0), ""));
    LLVMValueRef limit = LLVMBuildAdd(fn->b, T->inner, cg_i64(fn, 1), "");
    cg_if p0;
    cg_if_begin(
        fn, &p0,
        LLVMBuildAnd(
            fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, T->lane, cg_i64(fn, 0), ""),
            LLVMBuildICmp(fn->b, LLVMIntNE, piece, cg_i64(fn, 0), ""), ""));
    publish(f, T, FLAG_AGG,
            cg_smax(fn, cg_i64(fn, -1), cg_smin(fn, total, limit)));
    cg_if_end(fn, &p0);
    LLVMValueRef pre = look_back(f, T, piece);
    cg_if l0;
    cg_if_begin(fn, &l0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, T->lane, cg_i64(fn, 0), ""));
    /* the inclusive prefix, kept within [-1, inner + 1]: past that it is
     * an error anyway, and it stays far from the 62 bits */
    LLVMValueRef incl =
        cg_smax(fn, cg_i64(fn, -1),
                cg_smin(fn, LLVMBuildAdd(fn->b, pre, total, ""), limit));
    publish(f, T, FLAG_PREFIX, incl);
    store64(fn, T->sh_prefix, cg_i64(fn, 0), pre);
    cg_if_end(fn, &l0);
    cg_if_end(fn, &w0);
    tg->barrier(fn);
    /* 3. the checks */
    LLVMValueRef P = load64(fn, T->sh_prefix, cg_i64(fn, 0));
    LLVMValueRef bad = LLVMBuildOr(
        fn->b, neg,
        LLVMBuildOr(
            fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, P, cg_i64(fn, 0), ""),
            LLVMBuildICmp(fn->b, LLVMIntSGT, LLVMBuildAdd(fn->b, P, total, ""),
                          T->inner, ""),
            ""),
        "bad");
    cg_if chk;
    cg_if_begin(fn, &chk, bad);
    for (int q = 0; q < T->S; q++) {
        LLVMValueRef sq = seg_of(fn, T, q);
        LLVMValueRef sidx = LLVMBuildAdd(B, T->s0, sq, "seg");
        LLVMValueRef past =
            LLVMBuildICmp(fn->b, LLVMIntSGT, len[q],
                          LLVMBuildSub(fn->b, T->inner,
                                       LLVMBuildAdd(fn->b, P, excl[q], ""), ""),
                          "");
        LLVMValueRef qneg =
            LLVMBuildICmp(fn->b, LLVMIntSLT, len[q], cg_i64(fn, 0), "");
        cg_if in, n;
        cg_if_begin(fn, &in, LLVMBuildICmp(B, LLVMIntSLT, sq, T->nt, ""));
        cg_if_begin(
            fn, &n,
            LLVMBuildAnd(fn->b, qneg, LLVMBuildNot(fn->b, huge[q], ""), ""));
        report(f, sidx, CG_ERR_SEG_NEG);
        cg_if_else(fn, &n);
        cg_if pp;
        cg_if_begin(fn, &pp, LLVMBuildOr(fn->b, huge[q], past, ""));
        report(f, sidx, CG_ERR_SEG_PAST);
        cg_if_end(fn, &pp);
        cg_if_end(fn, &n);
        cg_if_end(fn, &in);
    }
    cg_if_end(fn, &chk);
    write_offsets(f, T, excl, P, total);
}

/* Entry 0: blocks take tiles of the lengths until none is left. */
static weft_status emit_tiles(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *t = f->e->k->op;
    const fe_term *src = t->kid[1];
    tile T;
    memset(&T, 0, sizeof T);
    T.S = SEGS;
    tile_shared(f, &T);
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, src, ext);
    if (s) {
        return s;
    }
    T.inner = ext[src->rank - 1];
    T.nseg = sk_kid_array(f, 2)->extent[0];
    T.tid = cg_zext64(fn, tg->thread_index(fn, 0));
    T.bs = cg_zext64(fn, tg->block_size(fn, 0));
    T.lane = LLVMBuildAnd(fn->b, T.tid, cg_i64(fn, WARP - 1), "lane");
    T.warp = LLVMBuildLShr(fn->b, T.tid, cg_i64(fn, 5), "warp");
    T.nwarps = LLVMBuildLShr(fn->b, T.bs, cg_i64(fn, 5), "");
    T.span = LLVMBuildMul(fn->b, T.bs, cg_i64(fn, T.S), "span");
    T.ntiles = LLVMBuildUDiv(
        fn->b,
        LLVMBuildAdd(fn->b, T.nseg,
                     LLVMBuildSub(fn->b, T.span, cg_i64(fn, 1), ""), ""),
        T.span, "tiles");
    T.tp = var(fn, t_i64(fn), cg_i64(fn, 0));
    for (int q = 0; q < T.S; q++) {
        T.rawp[q] = cg_alloca(
            fn, cg_type(fn->llctx, sk_kid_array(f, 2)->leaf[0]), "raw");
    }
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "tile");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "tile.body");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "tile.done");
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    tg->barrier(fn); /* the last tile's shared memory is read */
    cg_if t0;
    cg_if_begin(fn, &t0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, T.tid, cg_i64(fn, 0), ""));
    store64(fn, T.sh_tile, cg_i64(fn, 0),
            tg->atomic_rmw(fn, LLVMAtomicRMWBinOpAdd,
                           sk_aux_array(f, AUX_TICKET)->ptr[0], cg_i64(fn, 1)));
    cg_if_end(fn, &t0);
    tg->barrier(fn);
    read_lengths(f, &T, load64(fn, T.sh_tile, cg_i64(fn, 0)));
    T.t = get(fn, t_i64(fn), T.tp);
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntULT, T.t, T.ntiles, ""),
                    body, done);
    LLVMPositionBuilderAtEnd(fn->b, body);
    one_tile(f, &T);
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return WEFT_OK;
}

/* ---- entry 1: L lanes a segment ---------------------------------------- */

/* Elements a lane reads a trip (U): $WEFT_SEG4_U for timing, else
 * LANE_ITEMS. */
static int lane_items(void)
{
    const char *k = getenv("WEFT_SEG4_U");
    int u = k ? atoi(k) : LANE_ITEMS;
    return u < 1 ? 1 : u > MAX_LANE_ITEMS ? MAX_LANE_ITEMS : u;
}

/* A segment is long past long_trips() trips of its group
 * ($WEFT_SEG4_LONG for timing, else LONG_TRIPS); a lane of a warp of long
 * segments reads long_items() elements a trip ($WEFT_SEG4_UL, else
 * LONG_ITEMS). */
static int prefetch(void)
{
    const char *k = getenv("WEFT_SEG4_PF");
    return k ? atoi(k) : PREFETCH;
}

static int long_trips(void)
{
    const char *k = getenv("WEFT_SEG4_LONG");
    return k ? atoi(k) : LONG_TRIPS;
}

static int long_items(void)
{
    const char *k = getenv("WEFT_SEG4_UL");
    int u = k ? atoi(k) : LONG_ITEMS;
    return u < 1 ? 1 : u > MAX_LANE_ITEMS ? MAX_LANE_ITEMS : u;
}

/* x = x `f` y where take (x the earlier value).  A light kernel's
 * combine is computed in every lane and selected (no branch, so that
 * LLVM does not sink a trip's reads behind it: the garbage of a lane
 * past its segment is combined and dropped; a combine's division by zero
 * does not trap on the GPU); any other behind a branch. */
static weft_status comb_if(sk_fn *f, const cg_mut *x, const cg_val *y,
                           LLVMValueRef take)
{
    cg_fn *fn = &f->fn;
    if (f->e->k->light) {
        cg_val a, z;
        cg_mut tmp;
        weft_status s = cg_mut_new(fn, f->e->k->op->type, &tmp);
        if (s || (s = cg_mut_get(fn, x, &a)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &tmp, &a);
        if ((s = comb_back(f, &tmp, y)) != WEFT_OK ||
            (s = cg_mut_get(fn, &tmp, &z)) != WEFT_OK) {
            return s;
        }
        for (int l = 0; l < z.n; l++) {
            z.v[l] = LLVMBuildSelect(fn->b, take, z.v[l], a.v[l], "");
        }
        cg_mut_set(fn, x, &z);
        return WEFT_OK;
    }
    cg_if t;
    cg_if_begin(fn, &t, take);
    weft_status s = comb_back(f, x, y);
    cg_if_end(fn, &t);
    return s;
}

/* A warp's lanes in groups of L = 2^lg (lg an i64, the same in every
 * lane), each group a span: entry 1's fold.  lane: the lane's place in
 * its group (li, i64); u: elements a lane reads a trip. */
typedef struct lanes {
    LLVMValueRef lg, L, L32, li, li32; /* i64 but L32 and li32 */
    int U;
    LLVMValueRef last; /* the input's last element (i64) */
} lanes;

/* acc (z on entry) = acc `f` the elements [base + lo, base + hi) of the
 * input, in order, in lane 0 of each group (the others end with junk). */
static weft_status fold_span(sk_fn *f, const lanes *G, LLVMValueRef lo,
                             LLVMValueRef hi, LLVMValueRef base,
                             const cg_mut *acc)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *op = f->e->k->op;
    const fe_term *src = op->kid[1];
    LLVMTypeRef i64 = t_i64(fn), i32 = t_i32(fn);
    LLVMValueRef lg = G->lg, L = G->L, L32 = G->L32, li = G->li;
    LLVMValueRef li32 = G->li32, last = G->last;
    int U = G->U;
    weft_status s;
    cg_mut x;
    if ((s = cg_mut_new(fn, op->type, &x)) != WEFT_OK) {
        return s;
    }
    (void)lg;
    /* trips while some segment of the warp has elements left (a ballot:
     * the loop is the warp's, as its shuffles need every lane) */
    LLVMValueRef c0p = var(fn, i64, lo);
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "trip");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "trip.body");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "trip.done");
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    LLVMValueRef c0 = get(fn, i64, c0p);
    LLVMValueRef more =
        tg->ballot(fn, LLVMBuildICmp(fn->b, LLVMIntSLT, c0, hi, ""));
    LLVMBuildCondBr(fn->b,
                    LLVMBuildICmp(fn->b, LLVMIntNE, more, c32(fn, 0), ""), body,
                    done);
    LLVMPositionBuilderAtEnd(fn->b, body);
    /* elements of the trip: n32 in [0, U L]; lane i's are c0 + U i + u
     * for u < U, read at once (positions clamped into the array: a lane
     * past its segment reads an element it does not use) and folded in
     * order */
    LLVMValueRef UL = LLVMBuildMul(fn->b, L, cg_i64(fn, U), "");
    LLVMValueRef n32 = LLVMBuildTrunc(
        fn->b,
        cg_smax(fn, cg_i64(fn, 0),
                cg_smin(fn, LLVMBuildSub(fn->b, hi, c0, ""), UL)),
        i32, "n_in");
    LLVMValueRef at = LLVMBuildAdd(
        fn->b, base,
        LLVMBuildAdd(fn->b, c0, LLVMBuildMul(fn->b, li, cg_i64(fn, U), ""), ""),
        "");
    cg_val e[MAX_LANE_ITEMS];
    for (int u = 0; u < U; u++) {
        LLVMValueRef args[2] = {LLVMBuildAdd(fn->b, at, cg_i64(fn, u), ""),
                                last};
        LLVMValueRef idx = cg_intrinsic(fn, "llvm.umin", &i64, 1, args, 2);
        if ((s = sk_read(f, src, idx, NULL, &e[u])) != WEFT_OK) {
            return s;
        }
    }
    cg_mut_set(fn, &x, &e[0]);
    /* the trip's elements from the lane's first on (i32, maybe negative):
     * compared with constants below (compares of U i + k with n32 made
     * LLVM keep a register for each k) */
    LLVMValueRef rem = LLVMBuildSub(
        fn->b, n32, LLVMBuildMul(fn->b, li32, c32(fn, U), ""), "rem");
    for (int u = 1; u < U; u++) {
        if ((s = comb_if(f, &x, &e[u],
                         LLVMBuildICmp(fn->b, LLVMIntSGT, rem, c32(fn, u),
                                       ""))) != WEFT_OK) {
            return s;
        }
    }
    /* the tree: lane i takes lane i + d's fold where both hold elements
     * (then lane i + d is of the same segment: n32 <= L); lane 0's is
     * the trip's */
    for (int d = 1; d < WARP; d *= 2) {
        cg_if st; /* steps below L only (uniform) */
        cg_if_begin(fn, &st,
                    LLVMBuildICmp(fn->b, LLVMIntUGT, L32, c32(fn, d), ""));
        cg_val xv, y;
        if ((s = cg_mut_get(fn, &x, &xv)) != WEFT_OK) {
            return s;
        }
        if ((s = cg_val_make(fn, xv.n, &y)) != WEFT_OK) {
            return s;
        }
        for (int l = 0; l < xv.n; l++) {
            y.v[l] = tg->shuffle_down(fn, xv.v[l], c32(fn, d));
        }
        LLVMValueRef take =
            LLVMBuildICmp(fn->b, LLVMIntSGT, rem, c32(fn, d * U), "");
        if ((s = comb_if(f, &x, &y, take)) != WEFT_OK) {
            return s;
        }
        cg_if_end(fn, &st);
    }
    cg_val xv;
    if ((s = cg_mut_get(fn, &x, &xv)) != WEFT_OK ||
        (s = comb_if(
             f, acc, &xv,
             LLVMBuildAnd(
                 fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, li32, c32(fn, 0), ""),
                 LLVMBuildICmp(fn->b, LLVMIntNE, n32, c32(fn, 0), ""), ""))) !=
            WEFT_OK) {
        return s;
    }
    LLVMBuildStore(fn->b, LLVMBuildAdd(fn->b, c0, UL, ""), c0p);
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return WEFT_OK;
}

/* Segment q of entry 1 (i64, maybe past the last, nq): its elements
 * [base + lo, base + hi) of the input (none past nq). */
typedef struct span {
    LLVMValueRef nq, nseg, inner, one_row; /* in */
    LLVMValueRef pre_lo, pre_hi;           /* in: its offsets as read
                                              before, or NULL */
    LLVMValueRef live, lo, hi, base;       /* out */
    LLVMValueRef raw_lo, raw_hi;           /* out: the offsets read */
} span;

static void span_of(sk_fn *f, span *sp, LLVMValueRef q)
{
    cg_fn *fn = &f->fn;
    LLVMTypeRef i64 = t_i64(fn);
    LLVMValueRef nq = sp->nq, nseg = sp->nseg, inner = sp->inner;
    LLVMValueRef one_row = sp->one_row;
    LLVMValueRef off = sk_aux_array(f, AUX_OFFSETS)->ptr[0];
    LLVMValueRef live = LLVMBuildICmp(fn->b, LLVMIntULT, q, nq, "live");
    /* row and segment of q: no division for one row (a block-uniform
     * branch) */
    LLVMValueRef rowp = var(fn, i64, cg_i64(fn, 0));
    LLVMValueRef kp = var(fn, i64, q);
    cg_if several;
    cg_if_begin(fn, &several, LLVMBuildNot(fn->b, one_row, ""));
    {
        LLVMValueRef qs = LLVMBuildSelect(fn->b, live, q, cg_i64(fn, 0), "");
        LLVMValueRef r = LLVMBuildUDiv(fn->b, qs, nseg, "");
        LLVMBuildStore(fn->b, r, rowp);
        LLVMBuildStore(
            fn->b,
            LLVMBuildSub(fn->b, qs, LLVMBuildMul(fn->b, r, nseg, ""), ""), kp);
    }
    cg_if_end(fn, &several);
    LLVMValueRef row = get(fn, i64, rowp);
    LLVMValueRef k =
        LLVMBuildSelect(fn->b, live, get(fn, i64, kp), cg_i64(fn, 0), "k");
    /* the offsets, kept within [0, inner] and in order (after a bad length
     * they are whatever entry 0 wrote; the error is reported all the
     * same) */
    LLVMValueRef lo = sp->pre_lo ? sp->pre_lo : load64(fn, off, k);
    LLVMValueRef hi =
        sp->pre_hi ? sp->pre_hi
                   : load64(fn, off, LLVMBuildAdd(fn->b, k, cg_i64(fn, 1), ""));
    sp->raw_lo = lo;
    sp->raw_hi = hi;
    lo = cg_smax(fn, cg_i64(fn, 0), cg_smin(fn, lo, inner));
    hi = cg_smax(fn, lo, cg_smin(fn, hi, inner));
    hi = LLVMBuildSelect(fn->b, live, hi, lo, "hi");
    LLVMValueRef base = LLVMBuildMul(fn->b, row, inner, "base");
    sp->live = live;
    sp->lo = lo;
    sp->hi = hi;
    sp->base = base;
}

/* Result q = z `f` the elements of span sp, folded over G's lanes and
 * stored by the first of its group (where q is a segment). */
static weft_status fold_segment(sk_fn *f, const lanes *G, const span *sp,
                                LLVMValueRef q, const cg_mut *acc)
{
    cg_fn *fn = &f->fn;
    cg_mut_set(fn, acc, sk_kid_value(f, 0));
    weft_status s = fold_span(f, G, sp->lo, sp->hi, sp->base, acc);
    if (s) {
        return s;
    }
    cg_if put;
    cg_if_begin(
        fn, &put,
        LLVMBuildAnd(fn->b, sp->live,
                     LLVMBuildICmp(fn->b, LLVMIntEQ, G->li, cg_i64(fn, 0), ""),
                     ""));
    cg_val y;
    if ((s = cg_mut_get(fn, acc, &y)) != WEFT_OK) {
        return s;
    }
    cg_array_store(fn, sk_out_array(f, 0), q, &y);
    cg_if_end(fn, &put);
    return WEFT_OK;
}

/* Entry 1: the fold of every segment of every row from the offsets that
 * entry 0 wrote, L = 2^lg lanes a segment (lg: aux AUX_LANES, the same in
 * every lane), 32 / L segments a warp item (f->n items).  Each trip the
 * L lanes of a segment read L consecutive elements (lane i the i-th, so
 * the warp's reads are coalesced as the hand CSR-vector kernel's), fold
 * them by a tree of shuffles that keeps their order (lane i takes lane i
 * + d's value where i is a multiple of 2d and lane i + d holds elements),
 * and lane 0 adds the trip's fold to the segment's, z first.  The trips
 * run to the longest segment of the warp (shuffles need every lane).  No
 * shared memory and no barrier: few registers, many warps. */
static weft_status emit_lanes(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *op = f->e->k->op;
    const fe_term *src = op->kid[1];
    LLVMTypeRef i64 = t_i64(fn), i32 = t_i32(fn);
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, src, ext);
    if (s) {
        return s;
    }
    LLVMValueRef inner = ext[src->rank - 1];
    LLVMValueRef outer = cg_i64(fn, 1);
    for (int d = 0; d + 1 < src->rank; d++) {
        outer = LLVMBuildMul(fn->b, outer, ext[d], "");
    }
    LLVMValueRef nseg = sk_kid_array(f, 2)->extent[0];
    LLVMValueRef nq = LLVMBuildMul(fn->b, outer, nseg, "nq");
    LLVMValueRef lg = sk_aux_value(f, AUX_LANES)->v[0];
    LLVMValueRef L = LLVMBuildShl(fn->b, cg_i64(fn, 1), lg, "L");
    LLVMValueRef L32 = LLVMBuildTrunc(fn->b, L, i32, "");
    LLVMValueRef tid = cg_zext64(fn, tg->thread_index(fn, 0));
    LLVMValueRef lane = LLVMBuildAnd(fn->b, tid, cg_i64(fn, WARP - 1), "lane");
    LLVMValueRef li = LLVMBuildAnd(
        fn->b, lane, LLVMBuildSub(fn->b, L, cg_i64(fn, 1), ""), "li");
    LLVMValueRef li32 = LLVMBuildTrunc(fn->b, li, i32, "");
    LLVMValueRef per = LLVMBuildLShr(fn->b, cg_i64(fn, WARP), lg, "per");
    LLVMValueRef wpb = LLVMBuildLShr(
        fn->b, cg_zext64(fn, tg->block_size(fn, 0)), cg_i64(fn, 5), "");
    LLVMValueRef w0 = LLVMBuildAdd(
        fn->b,
        LLVMBuildMul(fn->b,
                     LLVMBuildAdd(fn->b, f->first,
                                  cg_zext64(fn, tg->block_index(fn, 0)), ""),
                     wpb, ""),
        LLVMBuildLShr(fn->b, tid, cg_i64(fn, 5), ""), "w0");
    LLVMValueRef step =
        LLVMBuildMul(fn->b, cg_zext64(fn, tg->grid_size(fn, 0)), wpb, "");
    LLVMValueRef one_row =
        LLVMBuildICmp(fn->b, LLVMIntEQ, outer, cg_i64(fn, 1), "");
    /* the input's last element (only read where some segment has
     * elements, so the input has some) */
    LLVMValueRef last = LLVMBuildSub(
        fn->b, LLVMBuildMul(fn->b, outer, inner, ""), cg_i64(fn, 1), "last");
    int U = lane_items();
    /* nothing after a bad length that entry 0 reported (so that a gather
     * of the fold, from offsets past the lengths' checks, cannot report
     * an error of its own first, which the interpreter would not) */
    LLVMValueRef end = f->n;
    if (f->e->k->err_item >= 0) {
        LLVMValueRef ew =
            LLVMBuildLoad2(fn->b, i64, f->arr[f->e->k->err_item].ptr[0], "");
        LLVMSetOrdering(ew, LLVMAtomicOrderingMonotonic);
        LLVMSetAlignment(ew, 8);
        end = LLVMBuildSelect(
            fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, ew, cg_i64(fn, 0), ""), f->n,
            cg_i64(fn, 0), "end");
    }
    LLVMValueRef g0 = LLVMBuildLShr(fn->b, lane, lg, "");
    span sp = {.nq = nq, .nseg = nseg, .inner = inner, .one_row = one_row};
    /* the next item's offsets read before this item's fold (its loads
     * then wait behind nothing) */
    LLVMValueRef plo = NULL, phi = NULL;
    if (prefetch()) {
        span_of(f, &sp,
                LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, w0, per, ""), g0, ""));
        plo = var(fn, i64, sp.raw_lo);
        phi = var(fn, i64, sp.raw_hi);
    }
    cg_sloop items;
    LLVMValueRef w = cg_sloop_begin(fn, &items, w0, end, step, "item");
    LLVMValueRef q =
        LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, w, per, ""), g0, "q");
    if (plo) {
        span nx = sp;
        nx.pre_lo = nx.pre_hi = NULL;
        sp.pre_lo = get(fn, i64, plo);
        sp.pre_hi = get(fn, i64, phi);
        span_of(
            f, &nx,
            LLVMBuildAdd(
                fn->b,
                LLVMBuildMul(fn->b, LLVMBuildAdd(fn->b, w, step, ""), per, ""),
                g0, ""));
        LLVMBuildStore(fn->b, nx.raw_lo, plo);
        LLVMBuildStore(fn->b, nx.raw_hi, phi);
    }
    span_of(f, &sp, q);
    sp.pre_lo = sp.pre_hi = NULL;
    LLVMValueRef lo = sp.lo, hi = sp.hi;
    cg_mut acc;
    if ((s = cg_mut_new(fn, op->type, &acc)) != WEFT_OK) {
        return s;
    }
    lanes G = {.lg = lg,
               .L = L,
               .L32 = L32,
               .li = li,
               .li32 = li32,
               .U = U,
               .last = last};
    /* a warp with a long segment (more than LONG_TRIPS trips of its
     * group) folds its segments one after the other, each over the whole
     * warp (more elements a trip: the other groups would wait for the
     * long one idle) */
    LLVMValueRef longer =
        long_trips() <= 0
            ? i1c(fn, false)
            : LLVMBuildICmp(
                  fn->b, LLVMIntNE,
                  tg->ballot(fn,
                             LLVMBuildICmp(
                                 fn->b, LLVMIntSGT,
                                 LLVMBuildSub(fn->b, hi, lo, ""),
                                 LLVMBuildMul(fn->b, L,
                                              cg_i64(fn, U * long_trips()), ""),
                                 "")),
                  c32(fn, 0), "longer");
    cg_if lw;
    cg_if_begin(fn, &lw, LLVMBuildNot(fn->b, longer, ""));
    if ((s = fold_segment(f, &G, &sp, q, &acc)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &lw);
    {
        lanes W = {.lg = cg_i64(fn, 5),
                   .L = cg_i64(fn, WARP),
                   .L32 = c32(fn, WARP),
                   .li = lane,
                   .li32 = LLVMBuildTrunc(fn->b, lane, i32, ""),
                   .U = long_items(),
                   .last = last};
        cg_loop gl;
        LLVMValueRef g;
        cg_loop_begin(fn, &gl, cg_i64(fn, 0), per, &g);
        LLVMValueRef gq =
            LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, w, per, ""), g, "");
        /* the span again (a few loads from L1 rather than registers
         * across the loop) */
        span_of(f, &sp, gq);
        if ((s = fold_segment(f, &W, &sp, gq, &acc)) != WEFT_OK) {
            return s;
        }
        cg_loop_end(fn, &gl);
    }
    cg_if_end(fn, &lw);
    cg_sloop_end(fn, &items);
    return WEFT_OK;
}

/* ---- the skeleton ------------------------------------------------------ */

static bool ptx_fold_seg_supported(const fe_term *t)
{
    return t->kind == FE_FOLD_SEG && t->atype->narrays == 1 && t->nfun == 1 &&
           t->nkid == 3;
}

static weft_status ptx_fold_seg_prepare(weft_context *ctx, fe_arena *arena,
                                        sk_kernel *k)
{
    k->nentry = 2;
    for (int v = 0; v < 2; v++) { /* both variants (sk_kernel.general) */
        k->item_threads[2 * v + 0] = SK_ITEM_BLOCK;
        k->item_threads[2 * v + 1] = WARP;
    }
    k->block_max = BLOCK;
    k->may_fail = true; /* the lengths are checked in the kernel */
    weft_status s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, AUX_STATUS,
                                WEFT_I64, 1);
    k->aux_item[AUX_STATUS] = k->nitem - 1;
    if (s == WEFT_OK) {
        s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, AUX_TICKET,
                        WEFT_I64, 1);
        k->aux_item[AUX_TICKET] = k->nitem - 1;
    }
    if (s == WEFT_OK) {
        s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, AUX_OFFSETS,
                        WEFT_I64, 1);
        k->aux_item[AUX_OFFSETS] = k->nitem - 1;
    }
    if (s == WEFT_OK) {
        s = sk_add_item(ctx, arena, k, SK_SCALAR, SK_SRC_AUX, AUX_LANES,
                        WEFT_I64, 0);
        k->aux_item[AUX_LANES] = k->nitem - 1;
    }
    return s;
}

/* Entry `entry` (0 offsets, 1 lanes). */
static weft_status emit_entry(sk_emit *e, const char *name, int entry)
{
    sk_fn f;
    weft_status s = sk_fn_begin_raw(e, &f, name);
    if (s) {
        return s;
    }
    /* reads without branches, so that ptxas issues a lane's reads of a
     * trip together (smvm: cols, vals, then x): errors in a local flag
     * (every thread ends at sk_fn_end), reads outside an array from a
     * cell of zeros */
    f.local_errors = true;
    f.fn.flat_reads = true;
    const char *bk = getenv("WEFT_SEG4_BLK");
    int lb = bk ? atoi(bk) : LANES_BLOCKS;
    cg_ptx_launch_bounds(&f.fn, BLOCK, entry == 1 ? lb : MIN_BLOCKS);
    s = entry == 1 ? emit_lanes(&f) : emit_tiles(&f);
    if (s) {
        LLVMBuildUnreachable(f.fn.b);
        cg_fn_end(&f.fn);
        return s;
    }
    sk_fn_end(&f);
    return WEFT_OK;
}

static weft_status ptx_fold_seg_emit(sk_emit *e, const char *const *names)
{
    weft_status s = WEFT_OK;
    for (int entry = 0; s == WEFT_OK && entry < 2; entry++) {
        s = emit_entry(e, names[entry], entry);
    }
    return s;
}

const sk_skeleton sk_ptx_fold_seg = {
    .name = "ptx-fold-seg",
    .family = SK_FOLD_SEG_PASS,
    .supported = ptx_fold_seg_supported,
    .prepare = ptx_fold_seg_prepare,
    .emit = ptx_fold_seg_emit,
    .fuses_input = true,
};
