/*
 * skeletons-ir/ptx/foldseg.c: foldSeg on the GPU in one pass, the PTX
 * target's own SK_FOLD_SEG skeleton, of family SK_FOLD_SEG_PASS (driver
 * rt_exec_fold_seg_pass, runtime/exec_foldseg_pass.c).  fold1Seg keeps
 * the shared skeleton (foldseg.c).
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
 * The lengths are scanned on the device, in the same pass (the shared
 * skeleton's driver scanned them on the host and uploaded the offsets:
 * for a million rows that took longer than the fold).  One entry, a block
 * per tile, tiles taken from a counter in order (aux 1, zeroed) by blocks
 * that loop until none is left, as ptx/scan.c does, so that look-back
 * always makes progress.  A tile is S B consecutive segments of one row
 * (B the block size, at most BLOCK, a multiple of 32; S = SEGS segments a
 * thread; tile t is row t / tpr, piece t % tpr, tpr = ceil(nseg / S B)).
 * In a tile:
 *
 *   1. thread i reads the lengths of segments s0 + S i .. s0 + S i + S - 1
 *      (0 past nseg; a 64-bit length kept within [-1, inner + 1], so that
 *      no sum overflows), and the block scans their sums (i64: warp
 *      shuffles, then the warp totals through shared memory): each
 *      segment's offset within the tile (loc[S i + q], in shared memory,
 *      loc[nt] = A the tile's elements).  (A
 *      block that took its next ticket and read that tile's lengths during
 *      the tile before, to hide the two latencies, made the power-law
 *      matrix 3.6 times slower on the H100: look-back waits on a tile
 *      held but not begun, and a tile of a 10^4 row holds one long.)
 *   2. look-back (warp 0, as ptx/scan.c with the packed status: flag in
 *      the top two bits of a 64-bit word, the value in the low 62, one
 *      volatile store and load, no fence): piece 0 publishes its
 *      inclusive prefix A at once; the others their aggregate, then
 *      look at their predecessors 32 at a time until an inclusive prefix,
 *      and publish theirs.  P, the tile's first element within its row.
 *   3. checks, as the host driver made them: a negative length, or one
 *      that takes the running sum past inner, reports CG_ERR_SEG_NEG or
 *      CG_ERR_SEG_PAST with the segment as the report's element (the
 *      least wins, as the interpreter reports the first bad segment); a
 *      tile with a bad length (or after one) computes nothing more.
 *   4. a tile whose segments are all short (SHORT_SEG elements at most:
 *      a banded matrix's rows) stages its elements through shared memory
 *      and folds a segment per thread from there, z first and its elements
 *      in order (short_segments); any other tile is folded balanced by
 *      merge path (Merrill and Garland, "Merge-based
 *      Parallel Sparse Matrix-Vector Multiplication", 2016): the tile's
 *      nt segment ends and A elements, merged in order (an end comes
 *      before element j when loc[end + 1] <= j), are M = nt + A items, and
 *      thread i takes the items [i c, (i + 1) c), c = ceil(M / B): a binary
 *      search in loc finds where it starts, and it walks its items,
 *      folding elements (read through sk_read: fused producers inline) and
 *      closing segments.  A segment that starts and ends in the thread is
 *      written at once; the first one it closes may have begun in an
 *      earlier thread and waits.  Whatever is open at its end is its carry
 *      (segment key, value or none).  The block scans the carries by key
 *      (a segmented scan: (k1, v1) . (k2, v2) = (k2, k1 == k2 ? v1 . v2 :
 *      v2), associative), and each thread completes its waiting segment
 *      with the carries of the threads before it that hold the same key.
 *      So every thread does about c items whatever the lengths: a row of
 *      10^4 elements is spread over the whole block, a run of empty rows
 *      costs one item each.
 *
 * Reads.  A round's reads of a light kernel (stage_round) are straight-line
 * code: the kernel sets sk_fn.local_errors and cg_fn.flat_reads, so that a
 * gather or a ! ix outside its array reads a cell of zeros instead of
 * branching around the load, and a gather's error is a bit in a register
 * that each thread reports once, at its end.  With a branch (and a
 * compare-and-swap loop) in every read, ptxas kept a thread's reads one
 * after the other: smvm's 8 slots of a round cost 16 dependent memory
 * latencies (cols, then x, for each), with 24 warps a multiprocessor to
 * hide them (r3 on the H100: 22.9 cycles between issues, DRAM at 17%).
 * Without, it issues the round's 16 reads of cols and vals at once, then
 * the 8 of x.  A round reads only the slots it reaches: a thread's slots
 * are read in batches of MAX_FLIGHT before their stores, and within a
 * batch the slots from k on (k a power of two, or the batch's first)
 * wait behind a block-uniform guard k B < the round's elements, so the short
 * last round of a banded tile (512 of 2560 elements, rounds of 2048)
 * reads 2 slots a thread, not 8.
 *
 * Registers: launch bounds of three blocks of 256 a multiprocessor (80
 * registers a thread, 12 bytes spilled; two blocks take 108, and measured
 * slower on the H100 in s2, as did 40 bytes staged a thread, one round for
 * a banded tile of 2560 elements).  Timed and left out on the H200 in
 * seg3's r2 (bench/results/gpu-profile.md): 32-bit reads (mul.wide.u32
 * addresses where every array has fewer than 2^31 elements, 20
 * instructions an element instead of 27, the round staged in two copies
 * behind a uniform branch) were 15% slower; 4 or 5 blocks, S = 2 or 4
 * segments a thread, P = 16 (64 bytes staged) and SHORT_SEG 128 or 512,
 * timed only with those reads, were no faster than this code; the merge
 * path's walk in 32 bits and a round total without the loop over the
 * warps' totals made no difference.
 *
 * Two passes, timed and left out (session 30, helper seg4, H200 round r1a;
 * the code is on branch h-seg4 at b20d5e9, bench/results/gpu-profile.md
 * "two passes"): an entry that scans and checks the lengths into offsets
 * (look-back over tiles of 1024), then a CSR-vector entry of 40
 * registers, no shared memory, L lanes a segment and U elements a lane a
 * trip, folded in order by a tree of shuffles, a warp with a long
 * segment folding its segments over all 32 lanes.  Best banded 0.104 ms
 * (L = 4, U = 4; this kernel 0.129), but the power-law matrix 0.34 ms at
 * best against this kernel's 0.225: a segment of 10^4 stays on one warp,
 * one round trip of memory latency a trip, where the merge path here
 * spreads it over the block; and the offsets pass alone took 23 us under
 * ncu.  Where a long row takes a block or the grid (a worklist of long
 * segments from the offsets pass) it was not tried.
 *
 * Where the time goes (ncu on the H100 in s2, of a variant of two blocks
 * before the fold loop and the staging were trimmed): smvm's banded
 * matrix is bound by issue, not memory (DRAM at 20% of peak, 0.28
 * instructions issued a cycle per scheduler, 32M warp instructions for
 * 10.5M elements): a
 * thread stages each element with about 25 instructions (the clamped
 * position, the bounds checks of cols ! i and of x's gather with their
 * selects, 64-bit addresses) and spends about as many again per tile on
 * the length scan, look-back, checks and barriers, where the hand-written
 * CSR kernel reads row pointers (no scan) and checks nothing.  ncu on the
 * H200 in seg3's r1 puts the difference in latency more than in count:
 * the hand kernel issues 26M warp instructions to this kernel's 32M, but
 * with 32 registers it keeps 56 warps a multiprocessor (0.55 issued a
 * cycle per scheduler) where this one keeps 23 (0.34): 60 us against 119
 * us under ncu's clocks.  Its register use peaks in the look-back (a
 * tile's lengths and offsets held across it) and the staging.
 *
 * Barriers sit at block-uniform points (the tile loop's condition and the
 * bad-tile test come from shared memory).  The reads of one thread are
 * consecutive elements, of neighbouring threads neighbouring runs.
 *
 * The offset form (foldSeg', weft_fold_seg_offsets, fe_term.op
 * FE_SEG_OFFSETS: nseg + 1 offsets, CSR's row pointers, as every peer of
 * bench/gpu is given) needs neither the scan nor the look-back: a segment's
 * offsets are read (off[s] and off[s + 1], clamped into [-1, inner + 1] by
 * offset_val, which changes no check's outcome), their difference is its
 * length, and the checks are those of the offsets (a segment that starts
 * below 0 or ends before its start: CG_ERR_SEG_NEG; one that ends past
 * inner: CG_ERR_SEG_PAST; the driver words them for the offsets).  Three
 * entries; a segment is folded by lanes, a warp or a block as its length
 * asks, so that no unit of work holds much more than another (a power
 * law's rows run from 1 to 10^4 elements):
 *
 *   the check (check_tiles), a warp a tile of TILE (128) segments, once
 *      whatever the rows: checks the offsets and lists, where there are
 *      rows, the tile's long segments (over LONG_SEG, 1024 elements:
 *      AUX_LIST, count AUX_COUNT[0]) and its middle ones (over
 *      lanes_limit: AUX_MID, those of MID_SMALL (64) elements at most from
 *      its front, count AUX_COUNT[2], the others from its back, count
 *      AUX_COUNT[4]), an atomic a warp and list (reserve).  Unchecked it
 *      is the first part of entry 2; in checked mode entry 0 runs it
 *      alone, before the others;
 *   entry 2 (emit_lanes), a warp a group of a row's short segments: L =
 *      2^lg lanes a segment (lg from the driver, the least L whose trips
 *      hold the mean segment, sk_segoff_limit: two trips of L U elements,
 *      U = LANE_ITEMS = 4, or four of U where L is 1), the group's
 *      offsets read once, a segment's two a lane, and handed to each pass
 *      by shuffles; a pass folds 32 / L segments, their L lanes reading U
 *      consecutive elements each a trip with no branch and folding them
 *      in order by a tree of shuffles (fold_span: seg4's CSR-vector fold,
 *      session 30), a longer segment of the group left to entry 1.  Where
 *      lg is 0 a compact group (no segment over LONE_MOST, 12) takes a
 *      lane a segment, any other 2 (emit_lanes says why).  48 registers,
 *      no shared memory, no barrier;
 *   entry 1 (emit_long), after entry 2: a block a long segment of a row
 *      (from a ticket, AUX_COUNT[1]), its warps a piece each over their 32
 *      lanes, thread 0 folding z and the pieces in order; then the middle
 *      segments in batches of 32 a warp (mid_folds: the short ones 8 lanes
 *      each, the others a warp each).  It ends at once where nothing is
 *      listed (the banded matrix), and its last block to end puts the
 *      counts back to zero (AUX_COUNT[3] counts the blocks): nothing is
 *      zeroed before a run (no memset: RT_AUX_KEPT_ZERO).
 *
 * The order of reports: the interpreter checks the descriptor first.  In
 * checked mode a gather reports its element, so entry 0 checks the
 * offsets before any fold and entries 1 and 2 do nothing once it has
 * reported (the error word).  Unchecked a gather's report names no
 * element (CG_KEY_ELEM_NONE), so an offset's, which names its segment,
 * wins whatever the order, and entry 2 checks as it folds (folds of
 * clamped offsets, whose results do not count after a report).
 *
 * History, H200 (bench/results/gpu-profile.md).  Until session 33 entry
 * 0 flagged work tiles of 256 segments holding a segment over
 * lanes_limit and entry 1 folded those tiles by the merge path above
 * (steps 1, 3 and 4): on the power-law matrix 199-248 us for 73M warp
 * instructions (cuSPARSE's csrmv 89 us for 17M), about 200 instructions
 * an element.  Session 33 folded by length (entry 0 14 us, entry 1 116 us
 * for 1200 long rows and 69K middle ones a warp each, entry 2 62 us; a
 * ticket an item for the middle segments cost ~100 us more: 69K atomics
 * on one word), and the banded matrix took entry 2's 57 us after two
 * short launches (12 and 8 us).  Session 34 (smvm_env, round r2, weft
 * over the hand CSR-vector kernel): the check inside entry 2 and entry 1
 * ending at once took the banded matrix from three launches to two, and a
 * lane a row of 10 took entry 2 from 57 to 40-47 us: 1.50 -> 1.01-1.06;
 * the middle rows in batches took entry 1 from 124 to 104 us on the power
 * law: 1.01 -> 0.88-0.90.
 *
 * Aux items: 0 the tile status words (i64, zeroed; sized by the driver
 * for blocks of MIN_BLOCK threads), 1 the tile counter (i64, zeroed); in
 * the offset form (sk.h, SK_SEGOFF_*), 0 the long segments' list (i64), 1
 * lg (a scalar), 2 the counts and tickets (i64, kept zero: entry 1 puts
 * them back), 3 the middle segments' list.
 */
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
    STAGE_BYTES = 32, /* bytes of elements a thread stages in a
                                    round (items_per_thread) */
    MAX_P = 8,
    MAX_FLIGHT = 8,  /* slots of a round read before their stores (a
                       light kernel's batch, when P exceeds it) */
    SEGS = 1,        /* segments a thread of a tile (S) */
    MAX_S = SEGS,    /* bound of the per-segment arrays */
    SHORT_SEG = 256, /* a tile of no longer segments folds a
                                    segment per thread (short_segments) */
    MIN_BLOCKS = 3,  /* blocks resident a multiprocessor
                                    (launch bounds: 80 registers) */
    /* the offset form */
    AUX_LIST = SK_SEGOFF_LIST, /* aux indices and shapes: sk.h */
    AUX_LANES = SK_SEGOFF_LANES,
    AUX_COUNT = SK_SEGOFF_COUNT,
    AUX_MID = SK_SEGOFF_MID,
    GROUP = SK_SEGOFF_GROUP,
    TILE = SK_SEGOFF_TILE,
    GROUP_TILE = TILE / GROUP, /* groups of the check's tile (4: 8 spilled
                                  with three lists at 48 registers) */
    LONE_MOST = 12,            /* a group of no longer segments takes a lane a
                       segment where lg is 0 (emit_lanes) */
    MID_SMALL = SK_SEGOFF_MID_SMALL,
    COUNTS = SK_SEGOFF_COUNTS,
    LONG_SEG = SK_SEGOFF_LONG,
    LANE_ITEMS = SK_SEGOFF_LANE_ITEMS,
    LANE_TRIPS = SK_SEGOFF_LANE_TRIPS,
    LONG_BLOCKS = 4,  /* entry 1's (launch bounds: 62 registers, no
                         spill; 5 blocks spilled 64 bytes at 48 and took
                         3% longer on the power law, H200 round r2) */
    LANES_BLOCKS = 5, /* entries 0 and 2's blocks a multiprocessor
                         (launch bounds: 48 registers, no spill; 6
                         blocks, 40 registers, spilled 68 bytes) */
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

/* The set bits of an i32. */
static LLVMValueRef popc32(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef i32 = t_i32(fn);
    return cg_intrinsic(fn, "llvm.ctpop", &i32, 1, &x, 1);
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

/* x of lane `src` (i32), every leaf (every lane of the warp takes part). */
static weft_status shuffle_val(cg_fn *fn, const cg_val *x, LLVMValueRef src,
                               cg_val *out)
{
    weft_status s = cg_val_make(fn, x->n, out);
    for (int l = 0; s == WEFT_OK && l < x->n; l++) {
        out->v[l] = fn->target->shuffle_idx(fn, x->v[l], src);
    }
    return s;
}

/* A placeholder value of type t (every leaf zero). */
static weft_status zero_val(cg_fn *fn, weft_type t, cg_val *out)
{
    const weft_type *leaf;
    int n = cg_leaves(fn, t, &leaf);
    weft_status s = cg_val_make(fn, n, out);
    for (int l = 0; s == WEFT_OK && l < n; l++) {
        out->v[l] = LLVMConstNull(cg_type(fn->llctx, leaf[l]));
    }
    return s;
}

/* m = x `f` m (front: x the earlier value) or m = m `f` x, with the
 * combine's reassoc flag. */
static weft_status comb(sk_fn *f, const cg_mut *m, const cg_val *x, bool front)
{
    cg_fn *fn = &f->fn;
    cg_val args[2], y;
    weft_status s = cg_mut_get(fn, m, &args[front ? 1 : 0]);
    if (s) {
        return s;
    }
    args[front ? 0 : 1] = *x;
    fn->fmf = LLVMFastMathAllowReassoc;
    s = cg_apply(fn, f->e->k->op->fun[0], args, &y);
    fn->fmf = 0;
    if (s == WEFT_OK) {
        cg_mut_set(fn, m, &y);
    }
    return s;
}

static weft_status comb_front(sk_fn *f, const cg_val *a, const cg_mut *m)
{
    return comb(f, m, a, true);
}

static weft_status comb_back(sk_fn *f, const cg_mut *m, const cg_val *x)
{
    return comb(f, m, x, false);
}

/* A value that may be absent: (valid, x). */
typedef struct opt {
    LLVMValueRef valid; /* i1 slot */
    cg_mut x;
} opt;

static weft_status opt_new(sk_fn *f, opt *o)
{
    cg_fn *fn = &f->fn;
    o->valid = var(fn, LLVMInt1TypeInContext(fn->llctx), i1c(fn, false));
    cg_val z;
    weft_status s = cg_mut_new(fn, f->e->k->op->type, &o->x);
    if (s == WEFT_OK && (s = zero_val(fn, f->e->k->op->type, &z)) == WEFT_OK) {
        cg_mut_set(fn, &o->x, &z);
    }
    return s;
}

static LLVMValueRef opt_valid(cg_fn *fn, const opt *o)
{
    return get(fn, LLVMInt1TypeInContext(fn->llctx), o->valid);
}

/* o = a . o where a (valid when a_ok) is the earlier value. */
static weft_status opt_front(sk_fn *f, LLVMValueRef a_ok, const cg_val *a,
                             const opt *o)
{
    cg_fn *fn = &f->fn;
    weft_status s = WEFT_OK;
    cg_if has_a, both;
    cg_if_begin(fn, &has_a, a_ok);
    cg_if_begin(fn, &both, opt_valid(fn, o));
    s = comb_front(f, a, &o->x);
    cg_if_else(fn, &both);
    cg_mut_set(fn, &o->x, a);
    LLVMBuildStore(fn->b, i1c(fn, true), o->valid);
    cg_if_end(fn, &both);
    cg_if_end(fn, &has_a);
    return s;
}

/* ---- the tile --------------------------------------------------------- */

/* Carries kept in shared memory: arrays of keys, valid flags (i64) and
 * values (a shared array per leaf). */
typedef struct slots {
    LLVMValueRef key, ok;
    LLVMValueRef *val;
} slots;

typedef struct tile {
    LLVMValueRef tid, lane, warp, nwarps, bs; /* i64 */
    LLVMValueRef outer, inner, nseg, tpr;     /* i64 */
    LLVMValueRef sh_tile, sh_prefix;          /* shared scalars (i64): the
                                                 tile, its prefix */
    LLVMValueRef sh_loc;                      /* shared i64[S BLOCK + 1] */
    int S;                                    /* segments a thread */
    LLVMValueRef span;                        /* i64: segments a tile,
                                                 S B */
    LLVMValueRef sh_wsum, sh_wneg;            /* shared i64[MAX_WARPS] */
    LLVMValueRef sh_sp;                       /* shared i64[BLOCK + 1]: the
                                                 round's split points */
    LLVMValueRef *sh_stage;                   /* per leaf [BLOCK P]: the
                                                 round's elements */
    int P;                                    /* merge-path items of a
                                                 thread in a round */
    slots sh_w;                               /* the warps' carries */
    slots sh_r;                               /* the round's carry, two
                                                 slots (rounds r and r + 1) */
    LLVMValueRef ntiles;                      /* i64 */
    LLVMValueRef tp;                          /* i64 slot: the tile */
    LLVMValueRef rawp[MAX_S];                 /* slots of the lengths' type:
                                                 the thread's lengths of the
                                                 tile */
    /* per tile */
    LLVMValueRef t, row, s0, nt, len;
} tile;

/* The fold's input as rows: its innermost extent (*inner, the elements a
 * row) and the product of the others (*outer, the rows; i64). */
static weft_status input_rows(sk_fn *f, LLVMValueRef *inner,
                              LLVMValueRef *outer)
{
    cg_fn *fn = &f->fn;
    const fe_term *src = f->e->k->op->kid[1];
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, src, ext);
    if (s) {
        return s;
    }
    *inner = ext[src->rank - 1];
    *outer = cg_i64(fn, 1);
    for (int d = 0; d + 1 < src->rank; d++) {
        *outer = LLVMBuildMul(fn->b, *outer, ext[d], "");
    }
    return WEFT_OK;
}

/* Tile t's first segment (i64), its row and its piece of the row (*row,
 * *piece; either may be NULL): a 64-bit division once per tile. */
static LLVMValueRef tile_start(cg_fn *fn, const tile *T, LLVMValueRef t,
                               LLVMValueRef *row, LLVMValueRef *piece)
{
    LLVMValueRef r = LLVMBuildUDiv(fn->b, t, T->tpr, "row");
    LLVMValueRef pc =
        LLVMBuildSub(fn->b, t, LLVMBuildMul(fn->b, r, T->tpr, ""), "piece");
    if (row) {
        *row = r;
    }
    if (piece) {
        *piece = pc;
    }
    return LLVMBuildMul(fn->b, pc, T->span, "s0");
}

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
    LLVMValueRef s0 = tile_start(fn, T, t, NULL, NULL);
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

/* The offset form's segments: its descriptor's entries less one, none for
 * no entries. */
static LLVMValueRef offsets_nseg(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    return cg_smax(
        fn,
        LLVMBuildSub(fn->b, sk_kid_array(f, 2)->extent[0], cg_i64(fn, 1), ""),
        cg_i64(fn, 0));
}

/* An offset (i64) of raw, a leaf of the offset form's descriptor, kept
 * within [-1, limit] (limit = inner + 1; a u64 past INT64_MAX becomes
 * limit): which changes no check's outcome (below 0, past inner, before
 * the one before where neither is) and keeps differences and sums far
 * from overflow. */
static LLVMValueRef offset_val(sk_fn *f, LLVMValueRef v, LLVMValueRef limit)
{
    cg_fn *fn = &f->fn;
    weft_type lt = sk_kid_array(f, 2)->leaf[0];
    unsigned w = LLVMGetIntTypeWidth(LLVMTypeOf(v));
    bool sgn = fe_is_signed(lt);
    if (w < 64) {
        return sgn ? LLVMBuildSExt(fn->b, v, t_i64(fn), "")
                   : LLVMBuildZExt(fn->b, v, t_i64(fn), "");
    }
    if (!sgn) {
        v = LLVMBuildSelect(
            fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, v, cg_i64(fn, 0), ""),
            limit, v, "");
    }
    return cg_smax(fn, cg_i64(fn, -1), cg_smin(fn, v, limit));
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
 * thread's exclusive offset and sets *total (the tile's A), *neg (i1: some
 * thread's isneg) and *longer (i1: some thread's islong). */
static void scan_lengths(sk_fn *f, tile *T, LLVMValueRef len,
                         LLVMValueRef isneg, LLVMValueRef islong,
                         LLVMValueRef *excl, LLVMValueRef *total,
                         LLVMValueRef *neg, LLVMValueRef *longer)
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
    /* bit 0: the warp has a negative length, 1: a long one */
    LLVMValueRef negw = cg_i64(fn, 0);
    LLVMValueRef pred[2] = {isneg, islong};
    for (int b = 0; b < 2; b++) {
        LLVMValueRef any = LLVMBuildICmp(B, LLVMIntNE, tg->ballot(fn, pred[b]),
                                         c32(fn, 0), "");
        negw = LLVMBuildOr(
            B, negw,
            LLVMBuildShl(B, cg_zext64(fn, any), cg_i64(fn, (int64_t)b), ""),
            "");
    }
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
    LLVMValueRef *out[2] = {neg, longer};
    for (int b = 0; b < 2; b++) {
        *out[b] = LLVMBuildICmp(B, LLVMIntNE,
                                LLVMBuildAnd(B, flags, cg_i64(fn, 1 << b), ""),
                                cg_i64(fn, 0), "");
    }
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

/* Write result q of the output: z `f` acc when acc is valid, else z. */
static weft_status put_result(sk_fn *f, LLVMValueRef q, const opt *acc)
{
    cg_fn *fn = &f->fn;
    const cg_array *out = sk_out_array(f, 0);
    const cg_val *z = sk_kid_value(f, 0);
    opt r;
    weft_status s = opt_new(f, &r);
    if (s) {
        return s;
    }
    cg_mut_set(fn, &r.x, z);
    cg_if has;
    cg_if_begin(fn, &has, opt_valid(fn, acc));
    cg_val a;
    if ((s = cg_mut_get(fn, &acc->x, &a)) != WEFT_OK ||
        (s = comb_back(f, &r.x, &a)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &has);
    cg_val y;
    if ((s = cg_mut_get(fn, &r.x, &y)) != WEFT_OK) {
        return s;
    }
    cg_array_store(fn, out, q, &y);
    return WEFT_OK;
}

/* The merge-path split of diagonal d: how many segment ends (i) of the
 * tile come before it (its elements then d - i); loc in shared memory. */
static LLVMValueRef split(sk_fn *f, const tile *T, LLVMValueRef d,
                          LLVMValueRef total)
{
    cg_fn *fn = &f->fn;
    LLVMTypeRef i64 = t_i64(fn);
    LLVMValueRef lop = var(
        fn, i64, cg_smax(fn, cg_i64(fn, 0), LLVMBuildSub(fn->b, d, total, "")));
    LLVMValueRef hip = var(fn, i64, cg_smin(fn, d, T->nt));
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "mp.search");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "mp.step");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "mp.found");
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    LLVMValueRef lo = get(fn, i64, lop), hi = get(fn, i64, hip);
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, lo, hi, ""), body,
                    done);
    LLVMPositionBuilderAtEnd(fn->b, body);
    LLVMValueRef mid = LLVMBuildLShr(fn->b, LLVMBuildAdd(fn->b, lo, hi, ""),
                                     cg_i64(fn, 1), "");
    /* end `mid` comes before the diagonal: loc[mid + 1] <= d - mid - 1 */
    LLVMValueRef e =
        load64(fn, T->sh_loc, LLVMBuildAdd(fn->b, mid, cg_i64(fn, 1), ""));
    LLVMValueRef before = LLVMBuildICmp(
        fn->b, LLVMIntSLE, e,
        LLVMBuildSub(fn->b, LLVMBuildSub(fn->b, d, mid, ""), cg_i64(fn, 1), ""),
        "");
    LLVMBuildStore(fn->b,
                   LLVMBuildSelect(fn->b, before,
                                   LLVMBuildAdd(fn->b, mid, cg_i64(fn, 1), ""),
                                   lo, ""),
                   lop);
    LLVMBuildStore(fn->b, LLVMBuildSelect(fn->b, before, hi, mid, ""), hip);
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return lo;
}

/* A carry: the key (i64, -1: none) and the value, maybe absent. */
typedef struct carry {
    LLVMValueRef key; /* i64 slot */
    opt v;
} carry;

/* c = p . c for the segmented scan: where the keys agree the values
 * combine (p's first), else c stays. */
static weft_status carry_front(sk_fn *f, LLVMValueRef pkey, LLVMValueRef pok,
                               const cg_val *pv, const carry *c)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef same =
        LLVMBuildICmp(fn->b, LLVMIntEQ, pkey, get(fn, t_i64(fn), c->key), "");
    return opt_front(f, LLVMBuildAnd(fn->b, same, pok, ""), pv, &c->v);
}

static weft_status slot_load(sk_fn *f, const slots *sl, LLVMValueRef i,
                             LLVMValueRef *key, LLVMValueRef *ok, cg_val *v)
{
    cg_fn *fn = &f->fn;
    const weft_type *leaf;
    int nleaf = cg_leaves(fn, f->e->k->op->type, &leaf);
    *key = load64(fn, sl->key, i);
    *ok = LLVMBuildICmp(fn->b, LLVMIntNE, load64(fn, sl->ok, i), cg_i64(fn, 0),
                        "");
    weft_status s = cg_val_make(fn, nleaf, v);
    for (int l = 0; s == WEFT_OK && l < nleaf; l++) {
        v->v[l] = cg_load(fn, leaf[l], sl->val[l], i);
    }
    return s;
}

static void slot_store(sk_fn *f, const slots *sl, LLVMValueRef i,
                       LLVMValueRef key, LLVMValueRef ok, const cg_val *v)
{
    cg_fn *fn = &f->fn;
    const weft_type *leaf;
    int nleaf = cg_leaves(fn, f->e->k->op->type, &leaf);
    store64(fn, sl->key, i, key);
    store64(fn, sl->ok, i, cg_zext64(fn, ok));
    for (int l = 0; l < nleaf; l++) {
        cg_store(fn, leaf[l], sl->val[l], i, v->v[l]);
    }
}

/* c = (key, ok, v) . c for the segmented scan, (key, ok, v) the earlier
 * carry: c takes it whole where c's key is -1 (nothing before), combines
 * the values where the keys agree, else stays. */
static weft_status carry_in(sk_fn *f, const carry *c, LLVMValueRef key,
                            LLVMValueRef ok, const cg_val *v)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    LLVMValueRef fresh = LLVMBuildICmp(
        fn->b, LLVMIntEQ, get(fn, t_i64(fn), c->key), cg_i64(fn, -1), "");
    cg_if nf;
    cg_if_begin(fn, &nf, fresh);
    LLVMBuildStore(fn->b, key, c->key);
    LLVMBuildStore(fn->b, ok, c->v.valid);
    cg_mut_set(fn, &c->v.x, v);
    cg_if_else(fn, &nf);
    s = carry_front(f, key, ok, v, c);
    cg_if_end(fn, &nf);
    return s;
}

/* o = o . x where x is there (x_ok). */
static weft_status opt_back(sk_fn *f, const opt *o, LLVMValueRef x_ok,
                            const cg_val *x)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    cg_if has_x, both;
    cg_if_begin(fn, &has_x, x_ok);
    cg_if_begin(fn, &both, opt_valid(fn, o));
    s = comb_back(f, &o->x, x);
    cg_if_else(fn, &both);
    cg_mut_set(fn, &o->x, x);
    LLVMBuildStore(fn->b, i1c(fn, true), o->valid);
    cg_if_end(fn, &both);
    cg_if_end(fn, &has_x);
    return s;
}

/* Step 4's scan of one round's carries: c becomes the exclusive segmented
 * scan of the round's carry (slot `rin` of T->sh_r) and the block's
 * carries before this thread, in order; the last thread puts the round's
 * inclusive total (the carry of the next round) into slot `rout`. */
static weft_status scan_carries(sk_fn *f, const tile *T, const carry *c,
                                LLVMValueRef rin, LLVMValueRef rout)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMTypeRef i64 = t_i64(fn);
    LLVMValueRef lane32 = LLVMBuildTrunc(fn->b, T->lane, t_i32(fn), "");
    weft_status s;
    /* inclusive within the warp (Hillis-Steele, lane - d first) */
    for (int d = 1; d < WARP; d *= 2) {
        LLVMValueRef up =
            LLVMBuildICmp(fn->b, LLVMIntUGE, lane32, c32(fn, d), "");
        LLVMValueRef src = LLVMBuildSelect(
            fn->b, up, LLVMBuildSub(fn->b, lane32, c32(fn, d), ""), lane32, "");
        cg_val v, pv;
        if ((s = cg_mut_get(fn, &c->v.x, &v)) != WEFT_OK ||
            (s = shuffle_val(fn, &v, src, &pv)) != WEFT_OK) {
            return s;
        }
        LLVMValueRef pkey = tg->shuffle_idx(fn, get(fn, i64, c->key), src);
        LLVMValueRef pok = tg->shuffle_idx(fn, opt_valid(fn, &c->v), src);
        if ((s = carry_front(f, pkey, LLVMBuildAnd(fn->b, up, pok, ""), &pv,
                             c)) != WEFT_OK) {
            return s;
        }
    }
    /* the warp's total into shared memory */
    cg_val v;
    if ((s = cg_mut_get(fn, &c->v.x, &v)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef key = get(fn, i64, c->key), ok = opt_valid(fn, &c->v);
    cg_if last;
    cg_if_begin(
        fn, &last,
        LLVMBuildICmp(fn->b, LLVMIntEQ, T->lane, cg_i64(fn, WARP - 1), ""));
    slot_store(f, &T->sh_w, T->warp, key, ok, &v);
    cg_if_end(fn, &last);
    tg->barrier(fn);
    /* exclusive within the warp: lane - 1's inclusive */
    LLVMValueRef up = LLVMBuildICmp(fn->b, LLVMIntUGE, lane32, c32(fn, 1), "");
    LLVMValueRef src = LLVMBuildSelect(
        fn->b, up, LLVMBuildSub(fn->b, lane32, c32(fn, 1), ""), lane32, "");
    cg_val pv;
    if ((s = shuffle_val(fn, &v, src, &pv)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef pkey = tg->shuffle_idx(fn, key, src);
    LLVMValueRef pok = tg->shuffle_idx(fn, ok, src);
    LLVMBuildStore(fn->b, LLVMBuildSelect(fn->b, up, pkey, cg_i64(fn, -1), ""),
                   c->key);
    LLVMBuildStore(fn->b, LLVMBuildAnd(fn->b, up, pok, ""), c->v.valid);
    cg_mut_set(fn, &c->v.x, &pv);
    /* the warps' totals before this one, nearest first (keys never
     * decrease from thread to thread: a warp's total with c's key follows
     * warps that end in it or in a lower key), then the round's carry */
    cg_loop l;
    LLVMValueRef k;
    cg_loop_begin(fn, &l, cg_i64(fn, 0), T->warp, &k);
    LLVMValueRef w = LLVMBuildSub(
        fn->b, LLVMBuildSub(fn->b, T->warp, cg_i64(fn, 1), ""), k, "");
    LLVMValueRef wkey, wok;
    cg_val wv;
    if ((s = slot_load(f, &T->sh_w, w, &wkey, &wok, &wv)) != WEFT_OK ||
        (s = carry_in(f, c, wkey, wok, &wv)) != WEFT_OK) {
        return s;
    }
    cg_loop_end(fn, &l);
    LLVMValueRef rkey, rok;
    cg_val rv;
    if ((s = slot_load(f, &T->sh_r, rin, &rkey, &rok, &rv)) != WEFT_OK ||
        (s = carry_in(f, c, rkey, rok, &rv)) != WEFT_OK) {
        return s;
    }
    /* the last thread: the round's carry . every warp's total, in order */
    cg_if lt;
    cg_if_begin(fn, &lt,
                LLVMBuildICmp(fn->b, LLVMIntEQ, T->tid,
                              LLVMBuildSub(fn->b, T->bs, cg_i64(fn, 1), ""),
                              ""));
    carry tot = {.key = var(fn, i64, rkey)};
    if ((s = opt_new(f, &tot.v)) != WEFT_OK) {
        return s;
    }
    LLVMBuildStore(fn->b, rok, tot.v.valid);
    cg_mut_set(fn, &tot.v.x, &rv);
    cg_loop lw;
    LLVMValueRef w2;
    cg_loop_begin(fn, &lw, cg_i64(fn, 0), T->nwarps, &w2);
    LLVMValueRef tkey, tok;
    cg_val tv;
    if ((s = slot_load(f, &T->sh_w, w2, &tkey, &tok, &tv)) != WEFT_OK) {
        return s;
    }
    cg_if same;
    cg_if_begin(
        fn, &same,
        LLVMBuildICmp(fn->b, LLVMIntEQ, tkey, get(fn, i64, tot.key), ""));
    s = opt_back(f, &tot.v, tok, &tv);
    cg_if_else(fn, &same);
    LLVMBuildStore(fn->b, tkey, tot.key);
    LLVMBuildStore(fn->b, tok, tot.v.valid);
    cg_mut_set(fn, &tot.v.x, &tv);
    cg_if_end(fn, &same);
    if (s) {
        return s;
    }
    cg_loop_end(fn, &lw);
    cg_val tv2;
    if ((s = cg_mut_get(fn, &tot.v.x, &tv2)) != WEFT_OK) {
        return s;
    }
    slot_store(f, &T->sh_r, rout, get(fn, i64, tot.key), opt_valid(fn, &tot.v),
               &tv2);
    cg_if_end(fn, &lt);
    return WEFT_OK;
}

/* Step 4's staging: the round's elements [j_lo, j_hi) of the tile (j_hi >
 * j_lo), read coalesced (thread tid takes j_lo + tid + k B for k < P) into
 * T->sh_stage.  A light kernel reads all its slots first, with no branch
 * between them (a thread past j_hi reads element j_hi - 1 again, even in a
 * slot no thread needs), and then stores those below j_hi, so that
 * ptxas may have several reads in flight at once; other kernels compute
 * only their own elements, one after the other. */
static weft_status stage_round(sk_fn *f, const tile *T, LLVMValueRef j_lo,
                               LLVMValueRef j_hi, LLVMValueRef base)
{
    cg_fn *fn = &f->fn;
    const fe_term *src = f->e->k->op->kid[1];
    const weft_type *leaf;
    int nleaf = cg_leaves(fn, f->e->k->op->type, &leaf);
    weft_status s;
    /* positions within the round (at most B P) in i32, the element's
     * index (i64) from the round's first */
    LLVMTypeRef i32 = t_i32(fn);
    LLVMValueRef n =
        LLVMBuildTrunc(fn->b, LLVMBuildSub(fn->b, j_hi, j_lo, ""), i32, "");
    LLVMValueRef last = LLVMBuildSub(fn->b, n, c32(fn, 1), "");
    LLVMValueRef first = LLVMBuildAdd(fn->b, base, j_lo, "");
    LLVMValueRef tid = LLVMBuildTrunc(fn->b, T->tid, i32, "");
    LLVMValueRef bs = LLVMBuildTrunc(fn->b, T->bs, i32, "");
    bool light = f->e->k->light;
    int batch = light ? MAX_FLIGHT : T->P;
    cg_val zero;
    if (light && (s = zero_val(fn, f->e->k->op->type, &zero)) != WEFT_OK) {
        return s;
    }
    for (int b0 = 0; b0 < T->P; b0 += batch) {
        int b1 = b0 + batch < T->P ? b0 + batch : T->P;
        cg_mut x[MAX_P];
        cg_if need[MAX_P];
        int nneed = 0;
        for (int k = b0; light && k < b1; k++) {
            if ((s = cg_mut_new(fn, f->e->k->op->type, &x[k])) != WEFT_OK) {
                return s;
            }
            cg_mut_set(fn, &x[k], &zero);
        }
        for (int k = b0; light && k < b1; k++) {
            int r = k - b0;
            if (r == 0 ? k > 0 : (r & (r - 1)) == 0) {
                /* slots k .. b0 + 2r - 1 only where the round reaches them
                 * (block uniform): a short last round reads no more than
                 * it needs */
                cg_if_begin(
                    fn, &need[nneed++],
                    LLVMBuildICmp(fn->b, LLVMIntULT,
                                  LLVMBuildNUWMul(fn->b, bs, c32(fn, k), ""), n,
                                  ""));
            }
            LLVMValueRef at = LLVMBuildNUWAdd(
                fn->b, tid, LLVMBuildNUWMul(fn->b, bs, c32(fn, k), ""), "");
            LLVMValueRef args[2] = {at, last};
            LLVMValueRef o = cg_intrinsic(fn, "llvm.umin", &i32, 1, args, 2);
            cg_val v;
            LLVMValueRef idx = LLVMBuildAdd(fn->b, first, cg_zext64(fn, o), "");
            if ((s = sk_read(f, src, idx, NULL, &v)) != WEFT_OK) {
                return s;
            }
            cg_mut_set(fn, &x[k], &v);
        }
        while (nneed > 0) {
            cg_if_end(fn, &need[--nneed]);
        }
        for (int k = b0; k < b1; k++) {
            LLVMValueRef at = LLVMBuildNUWAdd(
                fn->b, tid, LLVMBuildNUWMul(fn->b, bs, c32(fn, k), ""), "");
            cg_if in;
            cg_if_begin(fn, &in, LLVMBuildICmp(fn->b, LLVMIntULT, at, n, ""));
            cg_val v;
            if (light) {
                s = cg_mut_get(fn, &x[k], &v);
            } else {
                s = sk_read(f, src,
                            LLVMBuildAdd(fn->b, first, cg_zext64(fn, at), ""),
                            NULL, &v);
            }
            if (s) {
                return s;
            }
            for (int l = 0; l < nleaf; l++) {
                cg_store(fn, leaf[l], T->sh_stage[l], at, v.v[l]);
            }
            cg_if_end(fn, &in);
        }
    }
    return WEFT_OK;
}

/* Step 4 for thread T->tid, by rounds of R = B P merge-path items: the
 * split points of the round's threads (shared memory), its elements
 * staged, each thread's walk over its P items, the carries scanned. */
static weft_status walk(sk_fn *f, const tile *T, LLVMValueRef total,
                        LLVMValueRef base, LLVMValueRef qbase)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const weft_type *leaf;
    int nleaf = cg_leaves(fn, f->e->k->op->type, &leaf);
    LLVMTypeRef i64 = t_i64(fn), i1 = LLVMInt1TypeInContext(fn->llctx);
    weft_status s;
    /* rounds of at most B P items, as even as whole items per thread make
     * them: P' = ceil(M / (rounds B)) <= P a thread */
    LLVMValueRef Rmax = LLVMBuildMul(fn->b, T->bs, cg_i64(fn, T->P), "");
    LLVMValueRef m = LLVMBuildAdd(fn->b, T->nt, total, "items");
    LLVMValueRef rounds = LLVMBuildUDiv(
        fn->b,
        LLVMBuildAdd(fn->b, m, LLVMBuildSub(fn->b, Rmax, cg_i64(fn, 1), ""),
                     ""),
        Rmax, "rounds");
    LLVMValueRef rb =
        LLVMBuildMul(fn->b, cg_smax(fn, rounds, cg_i64(fn, 1)), T->bs, "");
    LLVMValueRef P = LLVMBuildUDiv(
        fn->b,
        LLVMBuildAdd(fn->b, m, LLVMBuildSub(fn->b, rb, cg_i64(fn, 1), ""), ""),
        rb, "per");
    LLVMValueRef R = LLVMBuildMul(fn->b, T->bs, P, "R");
    /* nothing carried into the first round */
    cg_val zero;
    if ((s = zero_val(fn, f->e->k->op->type, &zero)) != WEFT_OK) {
        return s;
    }
    cg_if t0;
    cg_if_begin(fn, &t0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, T->tid, cg_i64(fn, 0), ""));
    slot_store(f, &T->sh_r, cg_i64(fn, 0), cg_i64(fn, -1), i1c(fn, false),
               &zero);
    cg_if_end(fn, &t0);
    cg_loop lr;
    LLVMValueRef r;
    cg_loop_begin(fn, &lr, cg_i64(fn, 0), rounds, &r);
    LLVMValueRef d_lo = LLVMBuildMul(fn->b, r, R, "");
    LLVMValueRef d_hi = cg_smin(fn, LLVMBuildAdd(fn->b, d_lo, R, ""), m);
    LLVMValueRef d0 = cg_smin(
        fn, LLVMBuildAdd(fn->b, d_lo, LLVMBuildMul(fn->b, T->tid, P, ""), ""),
        d_hi);
    LLVMValueRef d1 = cg_smin(fn, LLVMBuildAdd(fn->b, d0, P, ""), d_hi);
    LLVMValueRef i0 = split(f, T, d0, total);
    store64(fn, T->sh_sp, T->tid, i0);
    cg_if tl;
    cg_if_begin(fn, &tl,
                LLVMBuildICmp(fn->b, LLVMIntEQ, T->tid,
                              LLVMBuildSub(fn->b, T->bs, cg_i64(fn, 1), ""),
                              ""));
    store64(fn, T->sh_sp, T->bs, split(f, T, d_hi, total));
    cg_if_end(fn, &tl);
    tg->barrier(fn);
    LLVMValueRef j_lo =
        LLVMBuildSub(fn->b, d_lo, load64(fn, T->sh_sp, cg_i64(fn, 0)), "j_lo");
    LLVMValueRef j_hi =
        LLVMBuildSub(fn->b, d_hi, load64(fn, T->sh_sp, T->bs), "j_hi");
    cg_if some;
    cg_if_begin(fn, &some, LLVMBuildICmp(fn->b, LLVMIntSGT, j_hi, j_lo, ""));
    if ((s = stage_round(f, T, j_lo, j_hi, base)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &some);
    tg->barrier(fn);
    /* the walk */
    LLVMValueRef ip = var(fn, i64, i0);
    LLVMValueRef jp = var(fn, i64, LLVMBuildSub(fn->b, d0, i0, ""));
    LLVMValueRef waiting = var(fn, i1, i1c(fn, false));
    opt acc, first;
    if ((s = opt_new(f, &acc)) != WEFT_OK ||
        (s = opt_new(f, &first)) != WEFT_OK) {
        return s;
    }
    cg_loop l;
    LLVMValueRef step;
    cg_loop_begin(fn, &l, d0, d1, &step);
    (void)step;
    LLVMValueRef i = get(fn, i64, ip), j = get(fn, i64, jp);
    LLVMValueRef has_end = LLVMBuildICmp(fn->b, LLVMIntSLT, i, T->nt, "");
    /* loc[i + 1] read only for an end of the tile (loc has nt + 1) */
    LLVMValueRef at =
        cg_smin(fn, LLVMBuildAdd(fn->b, i, cg_i64(fn, 1), ""), T->nt);
    LLVMValueRef ends = LLVMBuildAnd(
        fn->b, has_end,
        LLVMBuildICmp(fn->b, LLVMIntSLE, load64(fn, T->sh_loc, at), j, ""),
        "ends");
    cg_if e;
    cg_if_begin(fn, &e, ends);
    {
        cg_if fst;
        cg_if_begin(fn, &fst, LLVMBuildICmp(fn->b, LLVMIntEQ, i, i0, ""));
        cg_val a;
        if ((s = cg_mut_get(fn, &acc.x, &a)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &first.x, &a);
        LLVMBuildStore(fn->b, opt_valid(fn, &acc), first.valid);
        LLVMBuildStore(fn->b, i1c(fn, true), waiting);
        cg_if_else(fn, &fst);
        if ((s = put_result(f, LLVMBuildAdd(fn->b, qbase, i, ""), &acc)) !=
            WEFT_OK) {
            return s;
        }
        cg_if_end(fn, &fst);
        LLVMBuildStore(fn->b, LLVMBuildAdd(fn->b, i, cg_i64(fn, 1), ""), ip);
        LLVMBuildStore(fn->b, i1c(fn, false), acc.valid);
    }
    cg_if_else(fn, &e);
    {
        cg_val x;
        if ((s = cg_val_make(fn, nleaf, &x)) != WEFT_OK) {
            return s;
        }
        LLVMValueRef sj = LLVMBuildSub(fn->b, j, j_lo, "");
        for (int li = 0; li < nleaf; li++) {
            x.v[li] = cg_load(fn, leaf[li], T->sh_stage[li], sj);
        }
        if ((s = opt_back(f, &acc, i1c(fn, true), &x)) != WEFT_OK) {
            return s;
        }
        LLVMBuildStore(fn->b, LLVMBuildAdd(fn->b, j, cg_i64(fn, 1), ""), jp);
    }
    cg_if_end(fn, &e);
    cg_loop_end(fn, &l);
    /* the carries, scanned; the waiting segment takes the one before */
    carry c = {.key = var(fn, i64, get(fn, i64, ip)), .v = acc};
    LLVMValueRef rin = LLVMBuildAnd(fn->b, r, cg_i64(fn, 1), "");
    LLVMValueRef rout = LLVMBuildXor(fn->b, rin, cg_i64(fn, 1), "");
    if ((s = scan_carries(f, T, &c, rin, rout)) != WEFT_OK) {
        return s;
    }
    cg_if w;
    cg_if_begin(fn, &w, get(fn, i1, waiting));
    cg_val cv;
    if ((s = cg_mut_get(fn, &c.v.x, &cv)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef same =
        LLVMBuildICmp(fn->b, LLVMIntEQ, get(fn, i64, c.key), i0, "");
    if ((s = opt_front(f, LLVMBuildAnd(fn->b, same, opt_valid(fn, &c.v), ""),
                       &cv, &first)) != WEFT_OK ||
        (s = put_result(f, LLVMBuildAdd(fn->b, qbase, i0, ""), &first)) !=
            WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &w);
    cg_loop_end(fn, &lr);
    return WEFT_OK;
}

/* Shared carries: n slots. */
static weft_status slots_new(sk_fn *f, slots *sl, int n)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const weft_type *leaf;
    int nleaf = cg_leaves(fn, f->e->k->op->type, &leaf);
    sl->key = tg->shared_array(fn, t_i64(fn), n);
    sl->ok = tg->shared_array(fn, t_i64(fn), n);
    sl->val = fe_arena_alloc(fn->arena,
                             sizeof *sl->val * (size_t)(nleaf > 0 ? nleaf : 1));
    if (!sl->val) {
        return fe_oom("weft_compile");
    }
    for (int l = 0; l < nleaf; l++) {
        sl->val[l] = tg->shared_array(fn, cg_mem_type(fn->llctx, leaf[l]), n);
    }
    return WEFT_OK;
}

/* Merge-path items a thread takes in a round: P elements of the element
 * type staged per thread are at most STAGE_BYTES (8 of an f32, 4 of an
 * f64, 2 of a 12-byte tuple), at least 1. */
static int items_per_thread(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const weft_type *leaf;
    int nleaf = cg_leaves(fn, f->e->k->op->type, &leaf);
    int bytes = 0;
    for (int l = 0; l < nleaf; l++) {
        bytes += (int)weft_type_size(leaf[l]);
    }
    int p = bytes > 0 ? STAGE_BYTES / bytes : MAX_P;
    return p < 1 ? 1 : p > MAX_P ? MAX_P : p;
}

/* Shared memory of the tile loop. */
static weft_status tile_shared(sk_fn *f, tile *T)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMTypeRef i64 = t_i64(fn);
    LLVMValueRef sc = tg->shared_array(fn, i64, 2);
    LLVMValueRef one = cg_i64(fn, 1);
    T->sh_tile = sc;
    T->sh_prefix = LLVMBuildInBoundsGEP2(fn->b, i64, sc, &one, 1, "");
    T->sh_loc = tg->shared_array(fn, i64, (int64_t)BLOCK * T->S + 1);
    T->sh_sp = tg->shared_array(fn, i64, BLOCK + 1);
    T->sh_wsum = tg->shared_array(fn, i64, MAX_WARPS);
    T->sh_wneg = tg->shared_array(fn, i64, MAX_WARPS);
    T->P = items_per_thread(f);
    const weft_type *leaf;
    int nleaf = cg_leaves(fn, f->e->k->op->type, &leaf);
    T->sh_stage = fe_arena_alloc(
        fn->arena, sizeof *T->sh_stage * (size_t)(nleaf > 0 ? nleaf : 1));
    if (!T->sh_stage) {
        return fe_oom("weft_compile");
    }
    for (int l = 0; l < nleaf; l++) {
        T->sh_stage[l] = tg->shared_array(fn, cg_mem_type(fn->llctx, leaf[l]),
                                          (int64_t)BLOCK * T->P);
    }
    weft_status s = slots_new(f, &T->sh_w, MAX_WARPS);
    if (s == WEFT_OK) {
        s = slots_new(f, &T->sh_r, 2);
    }
    return s;
}

/* acc = acc `f` the staged elements [a, b) (i64, at most B P: a loop of
 * i32 positions, not unrolled: a row of a banded matrix has 10 elements
 * in all, where LLVM's unrolling by 32 with two remainder loops cost more
 * than the fold, and 64-bit counters doubled each step). */
static weft_status fold_staged(sk_fn *f, const tile *T, const cg_mut *acc,
                               LLVMValueRef a, LLVMValueRef b)
{
    cg_fn *fn = &f->fn;
    const weft_type *leaf;
    int nleaf = cg_leaves(fn, f->e->k->op->type, &leaf);
    LLVMTypeRef i32 = t_i32(fn);
    LLVMValueRef a32 = LLVMBuildTrunc(fn->b, a, i32, "");
    LLVMValueRef b32 = LLVMBuildTrunc(fn->b, b, i32, "");
    LLVMBasicBlockRef guard = LLVMGetInsertBlock(fn->b);
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "fold.staged");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "fold.done");
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, a32, b32, ""), body,
                    done);
    LLVMPositionBuilderAtEnd(fn->b, body);
    LLVMValueRef k = LLVMBuildPhi(fn->b, i32, "k");
    LLVMAddIncoming(k, &a32, &guard, 1);
    cg_val x;
    weft_status s = cg_val_make(fn, nleaf, &x);
    if (s) {
        return s;
    }
    for (int l = 0; l < nleaf; l++) {
        x.v[l] = cg_load(fn, leaf[l], T->sh_stage[l], k);
    }
    if ((s = comb_back(f, acc, &x)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef k1 = LLVMBuildNSWAdd(fn->b, k, c32(fn, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(fn->b);
    LLVMValueRef br = LLVMBuildCondBr(
        fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, k1, b32, ""), body, done);
    LLVMMetadataRef off =
        LLVMMDStringInContext2(fn->llctx, "llvm.loop.unroll.disable", 24);
    cg_loop_id(fn, br, LLVMMDNodeInContext2(fn->llctx, &off, 1));
    LLVMAddIncoming(k, &k1, &latch, 1);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return WEFT_OK;
}

/* Step 4 of a tile whose segments are all short (at most SHORT_SEG
 * elements): the tile's elements staged through shared memory in rounds
 * of B P (coalesced, P reads of a light kernel in flight at once, as the
 * merge path's rounds), and thread tid folds its own segment from there,
 * z first and then its elements in order, as the interpreter does, its
 * value kept from round to round.  No merge path and no carries: for a
 * banded matrix's rows of 10 the merge path's bookkeeping cost more than
 * the fold, and a short segment's share of the shared-memory loop is
 * cheap next to its reads. */
static weft_status short_segments(sk_fn *f, const tile *T,
                                  const LLVMValueRef *excl,
                                  const LLVMValueRef *len, LLVMValueRef total,
                                  LLVMValueRef base, LLVMValueRef qbase)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    weft_status s;
    cg_mut acc[MAX_S];
    for (int q = 0; q < T->S; q++) {
        if ((s = cg_mut_new(fn, f->e->k->op->type, &acc[q])) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &acc[q], sk_kid_value(f, 0));
    }
    LLVMValueRef R = LLVMBuildMul(fn->b, T->bs, cg_i64(fn, T->P), "R");
    LLVMValueRef rounds = LLVMBuildUDiv(
        fn->b,
        LLVMBuildAdd(fn->b, total, LLVMBuildSub(fn->b, R, cg_i64(fn, 1), ""),
                     ""),
        R, "rounds");
    cg_loop lr;
    LLVMValueRef r;
    cg_loop_begin(fn, &lr, cg_i64(fn, 0), rounds, &r);
    LLVMValueRef j_lo = LLVMBuildMul(fn->b, r, R, "");
    LLVMValueRef j_hi = cg_smin(fn, LLVMBuildAdd(fn->b, j_lo, R, ""), total);
    tg->barrier(fn); /* the last round's elements are read */
    if ((s = stage_round(f, T, j_lo, j_hi, base)) != WEFT_OK) {
        return s;
    }
    tg->barrier(fn);
    /* the thread's elements of the round, as positions in the stage */
    LLVMValueRef n = LLVMBuildSub(fn->b, j_hi, j_lo, "");
    for (int q = 0; q < T->S; q++) {
        /* past nt a length is 0: nothing to fold */
        LLVMValueRef e1 = LLVMBuildAdd(fn->b, excl[q], len[q], "");
        LLVMValueRef a = cg_smin(
            fn,
            cg_smax(fn, LLVMBuildSub(fn->b, excl[q], j_lo, ""), cg_i64(fn, 0)),
            n);
        LLVMValueRef b = cg_smin(
            fn, cg_smax(fn, LLVMBuildSub(fn->b, e1, j_lo, ""), cg_i64(fn, 0)),
            n);
        if ((s = fold_staged(f, T, &acc[q], a, b)) != WEFT_OK) {
            return s;
        }
    }
    cg_loop_end(fn, &lr);
    for (int q = 0; q < T->S; q++) {
        LLVMValueRef sq = seg_of(fn, T, q);
        cg_if in;
        cg_if_begin(fn, &in, LLVMBuildICmp(fn->b, LLVMIntSLT, sq, T->nt, ""));
        cg_val y;
        if ((s = cg_mut_get(fn, &acc[q], &y)) != WEFT_OK) {
            return s;
        }
        cg_array_store(fn, sk_out_array(f, 0),
                       LLVMBuildAdd(fn->b, qbase, sq, ""), &y);
        cg_if_end(fn, &in);
    }
    return WEFT_OK;
}

/* The offset form: the longest segment entry 2 folds (i64), L U
 * LANE_TRIPS elements (L = 2^lg from aux AUX_LANES). */
static LLVMValueRef lanes_limit(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef lg = sk_aux_value(f, AUX_LANES)->v[0];
    return LLVMBuildSelect(
        fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, lg, cg_i64(fn, 0), ""),
        cg_i64(fn, sk_segoff_limit(0)),
        LLVMBuildShl(fn->b, cg_i64(fn, LANE_ITEMS * LANE_TRIPS), lg, ""), "");
}

/* Step 2 of the lengths' form: the tile's first element within its row
 * (P), by look-back (warp 0), published and shared with the block (the
 * barrier after it also makes step 1's loc visible). */
static LLVMValueRef prefix(sk_fn *f, const tile *T, LLVMValueRef piece,
                           LLVMValueRef total, LLVMValueRef limit)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    cg_if w0;
    cg_if_begin(fn, &w0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, T->warp, cg_i64(fn, 0), ""));
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
    return load64(fn, T->sh_prefix, cg_i64(fn, 0));
}

/* One tile (T->t): steps 1 to 4. */
static weft_status one_tile(sk_fn *f, tile *T)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    weft_status s;
    LLVMValueRef piece = NULL;
    T->s0 = tile_start(fn, T, T->t, &T->row, &piece);
    T->nt = cg_smin(fn, T->span, LLVMBuildSub(B, T->nseg, T->s0, ""));
    /* 1. the lengths (read_lengths; 0 past nseg), the thread's S summed */
    LLVMValueRef huge[MAX_S] = {0}, len[MAX_S] = {0}, excl[MAX_S] = {0};
    LLVMValueRef sum = cg_i64(fn, 0), isneg = i1c(fn, false);
    LLVMValueRef islong = i1c(fn, false);
    LLVMTypeRef lty = cg_type(fn->llctx, sk_kid_array(f, 2)->leaf[0]);
    LLVMValueRef limit = LLVMBuildAdd(B, T->inner, cg_i64(fn, 1), "");
    for (int q = 0; q < T->S; q++) {
        len[q] = seg_len(f, get(fn, lty, T->rawp[q]), limit, &huge[q]);
        sum = LLVMBuildAdd(B, sum, len[q], "");
        isneg = LLVMBuildOr(
            B, isneg, LLVMBuildICmp(B, LLVMIntSLT, len[q], cg_i64(fn, 0), ""),
            "");
        islong = LLVMBuildOr(
            B, islong,
            LLVMBuildICmp(B, LLVMIntSGT, len[q], cg_i64(fn, SHORT_SEG), ""),
            "");
    }
    /* a huge u64 length scans as negative: the tile is bad either way */
    LLVMValueRef total, neg, longer;
    scan_lengths(f, T, sum, isneg, islong, &excl[0], &total, &neg, &longer);
    for (int q = 0; q < T->S && q < MAX_S; q++) {
        if (q > 0) {
            excl[q] = LLVMBuildAdd(B, excl[q - 1], len[q - 1], "");
        }
        store64(fn, T->sh_loc, seg_of(fn, T, q), excl[q]);
    }
    cg_if lastt;
    cg_if_begin(fn, &lastt,
                LLVMBuildICmp(fn->b, LLVMIntEQ, T->tid, cg_i64(fn, 0), ""));
    store64(fn, T->sh_loc, T->nt, total);
    cg_if_end(fn, &lastt);
    /* 2. the prefix, by look-back (warp 0) */
    LLVMValueRef P = prefix(f, T, piece, total, limit);
    /* 3. the checks */
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
    /* 4. the fold of a good tile of a row that exists */
    cg_if go;
    cg_if_begin(
        fn, &go,
        LLVMBuildAnd(fn->b, LLVMBuildNot(fn->b, bad, ""),
                     LLVMBuildICmp(fn->b, LLVMIntULT, T->row, T->outer, ""),
                     ""));
    LLVMValueRef base = LLVMBuildAdd(
        fn->b, LLVMBuildMul(fn->b, T->row, T->inner, ""), P, "base");
    LLVMValueRef qbase = LLVMBuildAdd(
        fn->b, LLVMBuildMul(fn->b, T->row, T->nseg, ""), T->s0, "qbase");
    cg_if sh;
    cg_if_begin(fn, &sh, LLVMBuildNot(fn->b, longer, ""));
    s = short_segments(f, T, excl, len, total, base, qbase);
    cg_if_else(fn, &sh);
    if (s == WEFT_OK) {
        s = walk(f, T, total, base, qbase);
    }
    cg_if_end(fn, &sh);
    cg_if_end(fn, &go);
    return s;
}

/* The error word is still clear (i1): the offset form's folds do nothing
 * after a bad offset the check reported (in checked mode, so that no
 * gather of theirs reports first, as the interpreter's would not). */
static LLVMValueRef no_error_yet(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    if (f->e->k->err_item < 0) {
        return i1c(fn, true);
    }
    LLVMValueRef ew =
        LLVMBuildLoad2(fn->b, t_i64(fn), f->arr[f->e->k->err_item].ptr[0], "");
    LLVMSetOrdering(ew, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(ew, 8);
    return LLVMBuildICmp(fn->b, LLVMIntEQ, ew, cg_i64(fn, 0), "");
}

/* The entry: blocks take tiles until none is left. */
static weft_status emit_tiles(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    tile T;
    memset(&T, 0, sizeof T);
    T.S = SEGS;
    weft_status s = tile_shared(f, &T);
    if (s) {
        return s;
    }
    if ((s = input_rows(f, &T.inner, &T.outer)) != WEFT_OK) {
        return s;
    }
    T.nseg = sk_kid_array(f, 2)->extent[0];
    T.tid = cg_zext64(fn, tg->thread_index(fn, 0));
    T.bs = cg_zext64(fn, tg->block_size(fn, 0));
    T.lane = LLVMBuildAnd(fn->b, T.tid, cg_i64(fn, WARP - 1), "lane");
    T.warp = LLVMBuildLShr(fn->b, T.tid, cg_i64(fn, 5), "warp");
    T.nwarps = LLVMBuildLShr(fn->b, T.bs, cg_i64(fn, 5), "");
    T.span = LLVMBuildMul(fn->b, T.bs, cg_i64(fn, T.S), "span");
    T.tpr = LLVMBuildUDiv(
        fn->b,
        LLVMBuildAdd(fn->b, T.nseg,
                     LLVMBuildSub(fn->b, T.span, cg_i64(fn, 1), ""), ""),
        T.span, "tpr");
    /* rows 0 (an input of no rows) still check the lengths once */
    LLVMValueRef rows = cg_smax(fn, T.outer, cg_i64(fn, 1));
    T.ntiles = LLVMBuildMul(fn->b, rows, T.tpr, "tiles");
    T.tp = var(fn, t_i64(fn), cg_i64(fn, 0));
    LLVMTypeRef lty = cg_type(fn->llctx, sk_kid_array(f, 2)->leaf[0]);
    for (int q = 0; q < T.S; q++) {
        T.rawp[q] = cg_alloca(fn, lty, "raw");
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
    if ((s = one_tile(f, &T)) != WEFT_OK) {
        return s;
    }
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return WEFT_OK;
}

/* ---- the offset form: a block, a warp or L lanes a segment ---------------- */

/* x = x `f` y where take (x the earlier value).  A light kernel's
 * combine is computed in every lane and selected (no branch, so that
 * LLVM does not sink a trip's reads behind it: the junk of a lane past
 * its segment is combined and dropped; a combine's division by zero does
 * not trap on the GPU); any other behind a branch. */
static weft_status comb_if(sk_fn *f, const cg_mut *x, const cg_val *y,
                           LLVMValueRef take)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    if (f->e->k->light) {
        cg_val a, z;
        cg_mut tmp;
        if ((s = cg_mut_new(fn, f->e->k->op->type, &tmp)) != WEFT_OK ||
            (s = cg_mut_get(fn, x, &a)) != WEFT_OK) {
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
    s = comb_back(f, x, y);
    cg_if_end(fn, &t);
    return s;
}

/* A warp's lanes in groups of L = 2^lg, a segment each. */
typedef struct lanes {
    LLVMValueRef L, L32, li, li32; /* L, the lane's place in its group li:
                                      i64 and i32 */
    LLVMValueRef last;             /* the input's last element (i64) */
    bool lone;                     /* L is 1 (a constant) */
    bool mask;                     /* gathers masked (see fold_span) */
} lanes;

/* The U = LANE_ITEMS elements of the input from at (i64) on (e[u]), read
 * with no branch.  A lane past its segment reads elements it does not use,
 * which must still lie within the input: positions are clamped to last,
 * with `split` only in a warp that has a lane near the end (a uniform
 * branch and a second copy of the reads, where a 64-bit clamp costs four
 * instructions an element; with a tree of shuffles beside them the copies
 * spilled at 48 registers, so only a lone lane's trips take them). */
/* The input's last element (i64) of rows `outer` of `inner`. */
static LLVMValueRef input_last(cg_fn *fn, LLVMValueRef inner,
                               LLVMValueRef outer)
{
    return LLVMBuildSub(fn->b, LLVMBuildMul(fn->b, outer, inner, ""),
                        cg_i64(fn, 1), "last");
}

/* Place i of AUX_MID counted from its back (its longer middle segments):
 * the list's last place minus i. */
static LLVMValueRef mid_back(cg_fn *fn, const cg_array *mids, LLVMValueRef i)
{
    return LLVMBuildSub(
        fn->b, LLVMBuildSub(fn->b, mids->extent[0], cg_i64(fn, 1), ""), i, "");
}

static weft_status read_one(sk_fn *f, const fe_term *src, LLVMValueRef idx,
                            LLVMValueRef rem, int u, cg_val *out)
{
    cg_fn *fn = &f->fn;
    fn->flat_mask =
        rem ? LLVMBuildICmp(fn->b, LLVMIntSGT, rem, c32(fn, u), "") : NULL;
    weft_status s = sk_read(f, src, idx, NULL, out);
    fn->flat_mask = NULL;
    return s;
}

/* read_trip's reads, positions clamped to last or not (`clamp`). */
static weft_status read_side(sk_fn *f, const fe_term *src, LLVMValueRef at,
                             LLVMValueRef last, LLVMValueRef rem, bool clamp,
                             cg_val *e)
{
    cg_fn *fn = &f->fn;
    LLVMTypeRef i64 = t_i64(fn);
    weft_status s;
    for (int u = 0; u < LANE_ITEMS; u++) {
        LLVMValueRef idx = LLVMBuildAdd(fn->b, at, cg_i64(fn, u), "");
        if (clamp) {
            LLVMValueRef args[2] = {idx, last};
            idx = cg_intrinsic(fn, "llvm.umin", &i64, 1, args, 2);
        }
        if ((s = read_one(f, src, idx, rem, u, &e[u])) != WEFT_OK) {
            return s;
        }
    }
    return WEFT_OK;
}

static weft_status read_trip(sk_fn *f, const fe_term *src, LLVMValueRef at,
                             LLVMValueRef last, LLVMValueRef rem, bool split,
                             cg_val *e)
{
    cg_fn *fn = &f->fn;
    enum { U = LANE_ITEMS };
    weft_status s;
    if (!split) {
        return read_side(f, src, at, last, rem, true, e);
    }
    LLVMValueRef near = fn->target->ballot(
        fn, LLVMBuildICmp(fn->b, LLVMIntSGT,
                          LLVMBuildAdd(fn->b, at, cg_i64(fn, U - 1), ""), last,
                          "near"));
    cg_if end;
    cg_if_begin(fn, &end,
                LLVMBuildICmp(fn->b, LLVMIntNE, near, c32(fn, 0), ""));
    /* each side's values in one cg_val, U of e's leaves one after another,
     * joined by cg_if_merge */
    cg_val side[2];
    for (int clamp = 1; clamp >= 0; clamp--) {
        if (!clamp) {
            cg_if_else(fn, &end);
        }
        /* the plain side's positions from an opaque copy: else loop
         * strength reduction keeps a pointer an array (registers) */
        if ((s = read_side(f, src, clamp ? at : fn->target->opaque(fn, at),
                           last, rem, clamp, e)) != WEFT_OK ||
            (s = cg_val_make(fn, U * e[0].n, &side[clamp])) != WEFT_OK) {
            return s;
        }
        for (int u = 0; u < U; u++) {
            for (int l = 0; l < e[u].n; l++) {
                side[clamp].v[u * e[0].n + l] = e[u].v[l];
            }
        }
    }
    cg_val m;
    if ((s = cg_if_merge(fn, &end, &side[1], &side[0], &m)) != WEFT_OK) {
        return s;
    }
    for (int u = 0; u < U; u++) {
        for (int l = 0; l < e[u].n; l++) {
            e[u].v[l] = m.v[u * e[0].n + l];
        }
    }
    return WEFT_OK;
}

/* The lanes of L (i64) a segment, of thread tid (i64). */
static lanes lanes_make(cg_fn *fn, LLVMValueRef L, LLVMValueRef tid,
                        LLVMValueRef last)
{
    LLVMValueRef li = LLVMBuildAnd(
        fn->b, tid, LLVMBuildSub(fn->b, L, cg_i64(fn, 1), ""), "li");
    return (lanes){.L = L,
                   .L32 = LLVMBuildTrunc(fn->b, L, t_i32(fn), ""),
                   .li = li,
                   .li32 = LLVMBuildTrunc(fn->b, li, t_i32(fn), ""),
                   .last = last};
}

/* acc (z on entry) = acc `f` the elements [base + lo, base + hi) of the
 * input, in order, in lane 0 of each group (the others end with junk).
 * With `fresh` (an i1 variable, true on entry), acc holds nothing yet:
 * the first trip's fold becomes its value, and fresh false (a piece of a
 * segment, where z is not the piece's to add).
 * Trips while some segment of the warp has elements left (a ballot: the
 * shuffles need every lane): in a trip the L lanes of a segment take its
 * next U L elements, lane i the U consecutive ones from U i (U =
 * LANE_ITEMS), read at once with no branch (positions clamped into the
 * input: a lane past its segment reads an element it does not use) and
 * folded in order; a tree of shuffles folds the lanes' values in order
 * (lane i takes lane i + d's where lane i + d holds elements: d = 1, 2,
 * .., below L, steps that are uniform branches), and lane 0 adds the
 * trip's fold to the segment's. */
static weft_status fold_span(sk_fn *f, const lanes *G, LLVMValueRef lo,
                             LLVMValueRef hi, LLVMValueRef base,
                             const cg_mut *acc, LLVMValueRef fresh)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *op = f->e->k->op;
    const fe_term *src = op->kid[1];
    LLVMTypeRef i64 = t_i64(fn), i32 = t_i32(fn);
    enum { U = LANE_ITEMS };
    weft_status s;
    cg_mut x;
    if ((s = cg_mut_new(fn, op->type, &x)) != WEFT_OK) {
        return s;
    }
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
    /* the trip's elements: n32 in [0, U L] */
    LLVMValueRef UL = LLVMBuildMul(fn->b, G->L, cg_i64(fn, U), "");
    LLVMValueRef n32 = LLVMBuildTrunc(
        fn->b,
        cg_smax(fn, cg_i64(fn, 0),
                cg_smin(fn, LLVMBuildSub(fn->b, hi, c0, ""), UL)),
        i32, "n_in");
    LLVMValueRef at = LLVMBuildAdd(
        fn->b, base,
        LLVMBuildAdd(fn->b, c0, LLVMBuildMul(fn->b, G->li, cg_i64(fn, U), ""),
                     ""),
        "");
    /* the trip's elements from the lane's first on (i32, maybe negative),
     * compared with constants (compares of U i + k with n32 made LLVM keep
     * a register for each k); with G->mask (entry 1), an element the lane
     * does not use is not gathered (cg_fn.flat_mask: the cell of zeros,
     * one line a warp, where a partial trip read a line of x each: entry 1
     * 102 -> 86 us on the power law, round r3 on the H200; the mask's
     * select costs two instructions a gather, and entry 2, of rows of up
     * to 16 in one or two lanes, was no faster with it: 76.5 -> 78 us) */
    LLVMValueRef rem = LLVMBuildSub(
        fn->b, n32, LLVMBuildMul(fn->b, G->li32, c32(fn, U), ""), "rem");
    cg_val e[U];
    if ((s = read_trip(f, src, at, G->last, G->mask ? rem : NULL, G->lone,
                       e)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &x, &e[0]);
    for (int u = 1; u < U; u++) {
        if ((s = comb_if(f, &x, &e[u],
                         LLVMBuildICmp(fn->b, LLVMIntSGT, rem, c32(fn, u),
                                       ""))) != WEFT_OK) {
            return s;
        }
    }
    /* the tree: lane i takes lane i + d's fold where both hold elements
     * (then lane i + d is of the same segment); lane 0's is the trip's */
    for (int d = 1; d < WARP; d *= 2) {
        cg_if st; /* steps below L only (uniform) */
        cg_if_begin(fn, &st,
                    LLVMBuildICmp(fn->b, LLVMIntUGT, G->L32, c32(fn, d), ""));
        cg_val xv, y;
        if ((s = cg_mut_get(fn, &x, &xv)) != WEFT_OK ||
            (s = cg_val_make(fn, xv.n, &y)) != WEFT_OK) {
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
    LLVMValueRef take = LLVMBuildAnd(
        fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, G->li32, c32(fn, 0), ""),
        LLVMBuildICmp(fn->b, LLVMIntNE, n32, c32(fn, 0), ""), "");
    LLVMValueRef fr = fresh ? get(fn, LLVMInt1TypeInContext(fn->llctx), fresh)
                            : i1c(fn, false);
    if ((s = cg_mut_get(fn, &x, &xv)) != WEFT_OK ||
        (s = comb_if(f, acc, &xv,
                     LLVMBuildAnd(fn->b, take, LLVMBuildNot(fn->b, fr, ""),
                                  ""))) != WEFT_OK) {
        return s;
    }
    if (fresh) { /* the first trip's fold is acc's first value */
        cg_val a;
        LLVMValueRef first = LLVMBuildAnd(fn->b, take, fr, "");
        if ((s = cg_mut_get(fn, acc, &a)) != WEFT_OK) {
            return s;
        }
        for (int l = 0; l < a.n; l++) {
            a.v[l] = LLVMBuildSelect(fn->b, first, xv.v[l], a.v[l], "");
        }
        cg_mut_set(fn, acc, &a);
        LLVMBuildStore(
            fn->b, LLVMBuildAnd(fn->b, fr, LLVMBuildNot(fn->b, take, ""), ""),
            fresh);
    }
    LLVMBuildStore(fn->b, LLVMBuildAdd(fn->b, c0, UL, ""), c0p);
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return WEFT_OK;
}

/* Segment seg's offsets in the offset form (*lo, *hi), kept within [0,
 * inner] and in order (the check reports bad ones; see the head comment
 * for what is folded after). */
static void segment_span(sk_fn *f, LLVMValueRef seg, LLVMValueRef inner,
                         LLVMValueRef *lo, LLVMValueRef *hi)
{
    cg_fn *fn = &f->fn;
    const cg_array *desc = sk_kid_array(f, 2);
    LLVMValueRef limit = LLVMBuildAdd(fn->b, inner, cg_i64(fn, 1), "");
    LLVMValueRef a =
        offset_val(f, cg_load(fn, desc->leaf[0], desc->ptr[0], seg), limit);
    LLVMValueRef b =
        offset_val(f,
                   cg_load(fn, desc->leaf[0], desc->ptr[0],
                           LLVMBuildAdd(fn->b, seg, cg_i64(fn, 1), "")),
                   limit);
    *lo = cg_smax(fn, cg_i64(fn, 0), cg_smin(fn, a, inner));
    *hi = cg_smax(fn, *lo, cg_smin(fn, b, inner));
}

/* Item w of `per` items a row: its row (*row) and its place in the row
 * (*at), with no 64-bit division where there is one row (one_row). */
static void row_item(cg_fn *fn, LLVMValueRef w, LLVMValueRef per,
                     LLVMValueRef one_row, LLVMValueRef *row, LLVMValueRef *at)
{
    LLVMValueRef rowp = var(fn, t_i64(fn), cg_i64(fn, 0));
    LLVMValueRef atp = var(fn, t_i64(fn), w);
    cg_if several;
    cg_if_begin(fn, &several, LLVMBuildNot(fn->b, one_row, ""));
    LLVMValueRef r = LLVMBuildUDiv(fn->b, w, per, "");
    LLVMBuildStore(fn->b, r, rowp);
    LLVMBuildStore(fn->b,
                   LLVMBuildSub(fn->b, w, LLVMBuildMul(fn->b, r, per, ""), ""),
                   atp);
    cg_if_end(fn, &several);
    *row = get(fn, t_i64(fn), rowp);
    *at = get(fn, t_i64(fn), atp);
}

/* The offset form's warp items (entries 0 and 2, item_threads WARP):
 * the first item of thread tid's warp, and (*step) the stride of the
 * grid's warps. */
static LLVMValueRef warp_items(sk_fn *f, LLVMValueRef tid, LLVMValueRef *step)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMValueRef wpb = LLVMBuildLShr(
        fn->b, cg_zext64(fn, tg->block_size(fn, 0)), cg_i64(fn, 5), "");
    *step = LLVMBuildMul(fn->b, cg_zext64(fn, tg->grid_size(fn, 0)), wpb, "");
    return LLVMBuildAdd(
        fn->b,
        LLVMBuildMul(fn->b,
                     LLVMBuildAdd(fn->b, f->first,
                                  cg_zext64(fn, tg->block_index(fn, 0)), ""),
                     wpb, ""),
        LLVMBuildLShr(fn->b, tid, cg_i64(fn, 5), ""), "w0");
}

static weft_status check_tiles(sk_fn *f, LLVMValueRef tiles);

/* A batch of up to 32 segments that a warp folds, one a lane.  In entry 2
 * the group's segments gs + lane of row `row` (first element base), the
 * lane's offsets lo_l, hi_l (within [0, inner] and in order), folded where
 * short (at most `most` elements) and in the row (below nseg); in entry 1
 * listed segments of any rows: the lane's result's place out_l, its
 * elements' positions in the input lo_l, hi_l (base 0), and whether it
 * holds one (ok_l, i1). */
typedef struct group {
    LLVMValueRef lo_l, hi_l, gs, row, base, nseg, most;
    LLVMValueRef out_l, ok_l; /* entry 1 (out_l not NULL) */
} group;

/* The batch q folded by the lanes G, lg = log2 L, 32 / L segments at a
 * time (their offsets, segments and rows from their lanes by shuffles). */
static weft_status group_folds(sk_fn *f, const lanes *G, LLVMValueRef lg,
                               const group *q, const cg_mut *acc)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMValueRef lane =
        LLVMBuildAnd(fn->b, cg_zext64(fn, tg->thread_index(fn, 0)),
                     cg_i64(fn, WARP - 1), "lane");
    LLVMValueRef per = LLVMBuildLShr(fn->b, cg_i64(fn, WARP), lg, "per");
    LLVMValueRef g0 = LLVMBuildLShr(fn->b, lane, lg, "");
    weft_status s;
    cg_loop sub;
    LLVMValueRef j;
    cg_loop_begin(fn, &sub, cg_i64(fn, 0), G->L, &j);
    /* the j-th 32 / L of the batch, the lane's group */
    LLVMValueRef kg =
        LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, j, per, ""), g0, "");
    LLVMValueRef from = LLVMBuildTrunc(fn->b, kg, t_i32(fn), "");
    LLVMValueRef lo = tg->shuffle_idx(fn, q->lo_l, from);
    LLVMValueRef hi = tg->shuffle_idx(fn, q->hi_l, from);
    LLVMValueRef out, mine;
    if (q->out_l) {
        out = tg->shuffle_idx(fn, q->out_l, from);
        mine = LLVMBuildICmp(
            fn->b, LLVMIntNE,
            tg->shuffle_idx(fn, LLVMBuildZExt(fn->b, q->ok_l, t_i32(fn), ""),
                            from),
            c32(fn, 0), "mine");
    } else {
        /* segment k of the row: in the row, and short */
        LLVMValueRef k = LLVMBuildAdd(fn->b, q->gs, kg, "k");
        out = LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, q->row, q->nseg, ""), k,
                           "");
        mine = LLVMBuildAnd(
            fn->b, LLVMBuildICmp(fn->b, LLVMIntULT, k, q->nseg, ""),
            LLVMBuildICmp(fn->b, LLVMIntSLE, LLVMBuildSub(fn->b, hi, lo, ""),
                          q->most, ""),
            "mine");
    }
    hi = LLVMBuildSelect(fn->b, mine, hi, lo, "hi");
    cg_mut_set(fn, acc, sk_kid_value(f, 0));
    if ((s = fold_span(f, G, lo, hi, q->out_l ? cg_i64(fn, 0) : q->base, acc,
                       NULL)) != WEFT_OK) {
        return s;
    }
    cg_if put;
    cg_if_begin(
        fn, &put,
        LLVMBuildAnd(fn->b, mine,
                     LLVMBuildICmp(fn->b, LLVMIntEQ, G->li, cg_i64(fn, 0), ""),
                     ""));
    cg_val y;
    if ((s = cg_mut_get(fn, acc, &y)) != WEFT_OK) {
        return s;
    }
    cg_array_store(fn, sk_out_array(f, 0), out, &y);
    cg_if_end(fn, &put);
    cg_loop_end(fn, &sub);
    return WEFT_OK;
}

/* Entry 1's middle segments of one list (AUX_MID: those of MID_SMALL
 * elements at most from its front, count c, folded 8 lanes a segment; the
 * others from its back, a warp a segment), c of every row: item w is row
 * w / c, segment list[w % c].  The grid's warps stride the items, a batch
 * of 32 at a time: lane i reads the list entry and offsets of the warp's
 * item 32 b + i of batch b at once (one memory latency a batch, where an
 * item a time waited for the entry, then its offsets, then its elements),
 * and group_folds folds them. */
static weft_status mid_folds(sk_fn *f, bool small, LLVMValueRef c,
                             const cg_mut *acc)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMValueRef inner, outer;
    weft_status s = input_rows(f, &inner, &outer);
    if (s) {
        return s;
    }
    const cg_array *mids = sk_aux_array(f, AUX_MID);
    LLVMValueRef items = LLVMBuildMul(fn->b, c, outer, "items");
    LLVMValueRef one_row =
        LLVMBuildICmp(fn->b, LLVMIntEQ, outer, cg_i64(fn, 1), "");
    LLVMValueRef tid = cg_zext64(fn, tg->thread_index(fn, 0));
    LLVMValueRef lane = LLVMBuildAnd(fn->b, tid, cg_i64(fn, WARP - 1), "lane");
    LLVMValueRef step, w0 = warp_items(f, tid, &step);
    int lgc = small ? 3 : 5;
    lanes G =
        lanes_make(fn, cg_i64(fn, 1 << lgc), tid, input_last(fn, inner, outer));
    G.mask = true;
    cg_sloop batches;
    LLVMValueRef b0 = cg_sloop_begin(
        fn, &batches, w0, items,
        LLVMBuildMul(fn->b, step, cg_i64(fn, WARP), ""), "batch");
    LLVMValueRef wi =
        LLVMBuildAdd(fn->b, b0, LLVMBuildMul(fn->b, lane, step, ""), "");
    group q = {0};
    q.ok_l = LLVMBuildICmp(fn->b, LLVMIntULT, wi, items, "ok");
    LLVMValueRef row, li;
    row_item(fn, LLVMBuildSelect(fn->b, q.ok_l, wi, cg_i64(fn, 0), ""), c,
             one_row, &row, &li);
    if (!small) {
        li = mid_back(fn, mids, li);
    }
    LLVMValueRef seg = LLVMBuildSelect(
        fn->b, q.ok_l, load64(fn, mids->ptr[0], li), cg_i64(fn, 0), "seg");
    LLVMValueRef lo, hi, base = LLVMBuildMul(fn->b, row, inner, "base");
    segment_span(f, seg, inner, &lo, &hi);
    q.lo_l = LLVMBuildAdd(fn->b, base, lo, "");
    q.hi_l = LLVMBuildAdd(fn->b, base, hi, "");
    q.out_l = LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, row, offsets_nseg(f), ""),
                           seg, "out");
    if ((s = group_folds(f, &G, cg_i64(fn, lgc), &q, acc)) != WEFT_OK) {
        return s;
    }
    cg_sloop_end(fn, &batches);
    return WEFT_OK;
}

/* The offset form's entry 1: the long segments that the check listed (aux
 * AUX_LIST, count AUX_COUNT[0]) of every row, a block each: item w is
 * row w / count, segment list[w % count], taken from a ticket
 * (AUX_COUNT[1]: long segments differ tenfold in length).  The block's
 * warps take a piece each, of ceil(len / warps) consecutive elements, and
 * fold it over their 32 lanes (fold_span, the piece's first trip its
 * first value: z enters once); lane 0 puts the piece in shared memory
 * and thread 0 folds z and the pieces in order.  A segment of 10^4
 * elements takes 8 warps about 10 trips, where one warp took 80.  Then
 * the middle segments (mid_folds), and the last block to end puts the
 * counts back to zero. */
static weft_status emit_long(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *op = f->e->k->op;
    LLVMTypeRef i64 = t_i64(fn), i1 = LLVMInt1TypeInContext(fn->llctx);
    LLVMValueRef inner, outer;
    weft_status s = input_rows(f, &inner, &outer);
    if (s) {
        return s;
    }
    LLVMValueRef nseg = offsets_nseg(f);
    LLVMValueRef one_row =
        LLVMBuildICmp(fn->b, LLVMIntEQ, outer, cg_i64(fn, 1), "");
    LLVMValueRef tid = cg_zext64(fn, tg->thread_index(fn, 0));
    LLVMValueRef bs = cg_zext64(fn, tg->block_size(fn, 0));
    LLVMValueRef lane = LLVMBuildAnd(fn->b, tid, cg_i64(fn, WARP - 1), "lane");
    LLVMValueRef warp = LLVMBuildLShr(fn->b, tid, cg_i64(fn, 5), "warp");
    LLVMValueRef nw = LLVMBuildLShr(fn->b, bs, cg_i64(fn, 5), "warps");
    lanes W =
        lanes_make(fn, cg_i64(fn, WARP), tid, input_last(fn, inner, outer));
    W.mask = true;
    const cg_array *list = sk_aux_array(f, AUX_LIST);
    LLVMValueRef cnt = sk_aux_array(f, AUX_COUNT)->ptr[0];
    /* nothing listed (a banded matrix): nothing to fold or put back, and
     * the block ends at once */
    LLVMValueRef raw_long = load64(fn, cnt, cg_i64(fn, 0));
    LLVMValueRef raw_mid = load64(fn, cnt, cg_i64(fn, 2));
    LLVMValueRef raw_big = load64(fn, cnt, cg_i64(fn, 4));
    cg_if listed;
    cg_if_begin(
        fn, &listed,
        LLVMBuildICmp(fn->b, LLVMIntNE,
                      LLVMBuildOr(fn->b, raw_long,
                                  LLVMBuildOr(fn->b, raw_mid, raw_big, ""), ""),
                      cg_i64(fn, 0), "listed"));
    /* the listed segments (none after a report of the check's, no more
     * than the list holds) */
    LLVMValueRef count = LLVMBuildSelect(fn->b, no_error_yet(f),
                                         cg_smin(fn, raw_long, list->extent[0]),
                                         cg_i64(fn, 0), "count");
    LLVMValueRef items = LLVMBuildMul(fn->b, count, outer, "items");
    LLVMValueRef sh_item = tg->shared_array(fn, i64, 1);
    slots sl;
    if ((s = slots_new(f, &sl, MAX_WARPS)) != WEFT_OK) {
        return s;
    }
    cg_mut acc;
    if ((s = cg_mut_new(fn, op->type, &acc)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef fresh = cg_alloca(fn, i1, "fresh");
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "long");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "long.body");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "long.done");
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    tg->barrier(fn); /* the last item's shared memory is read */
    LLVMValueRef t0c =
        LLVMBuildICmp(fn->b, LLVMIntEQ, tid, cg_i64(fn, 0), "t0");
    cg_if t0;
    cg_if_begin(fn, &t0, t0c);
    LLVMValueRef one = cg_i64(fn, 1);
    store64(fn, sh_item, cg_i64(fn, 0),
            tg->atomic_rmw(fn, LLVMAtomicRMWBinOpAdd,
                           LLVMBuildInBoundsGEP2(fn->b, i64, cnt, &one, 1, ""),
                           cg_i64(fn, 1)));
    cg_if_end(fn, &t0);
    tg->barrier(fn);
    LLVMValueRef w = load64(fn, sh_item, cg_i64(fn, 0));
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, w, items, ""), body,
                    done);
    LLVMPositionBuilderAtEnd(fn->b, body);
    LLVMValueRef row, li;
    row_item(fn, w, count, one_row, &row, &li);
    LLVMValueRef seg = load64(fn, list->ptr[0], li);
    LLVMValueRef lo, hi;
    segment_span(f, seg, inner, &lo, &hi);
    LLVMValueRef per = LLVMBuildUDiv(
        fn->b,
        LLVMBuildAdd(fn->b, LLVMBuildSub(fn->b, hi, lo, ""),
                     LLVMBuildSub(fn->b, nw, cg_i64(fn, 1), ""), ""),
        nw, "per");
    LLVMValueRef plo = cg_smin(
        fn, LLVMBuildAdd(fn->b, lo, LLVMBuildMul(fn->b, warp, per, ""), ""),
        hi);
    LLVMValueRef phi = cg_smin(fn, LLVMBuildAdd(fn->b, plo, per, ""), hi);
    LLVMBuildStore(fn->b, i1c(fn, true), fresh);
    cg_mut_set(fn, &acc, sk_kid_value(f, 0)); /* any value: fresh */
    if ((s = fold_span(f, &W, plo, phi, LLVMBuildMul(fn->b, row, inner, "base"),
                       &acc, fresh)) != WEFT_OK) {
        return s;
    }
    cg_val v;
    if ((s = cg_mut_get(fn, &acc, &v)) != WEFT_OK) {
        return s;
    }
    cg_if l0;
    cg_if_begin(fn, &l0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, lane, cg_i64(fn, 0), ""));
    slot_store(f, &sl, warp, seg, LLVMBuildNot(fn->b, get(fn, i1, fresh), ""),
               &v);
    cg_if_end(fn, &l0);
    tg->barrier(fn);
    cg_if_begin(fn, &t0, t0c);
    {
        cg_mut_set(fn, &acc, sk_kid_value(f, 0));
        cg_loop lp;
        LLVMValueRef p;
        cg_loop_begin(fn, &lp, cg_i64(fn, 0), nw, &p);
        LLVMValueRef key, ok;
        cg_val pv;
        if ((s = slot_load(f, &sl, p, &key, &ok, &pv)) != WEFT_OK) {
            return s;
        }
        (void)key;
        cg_if has;
        cg_if_begin(fn, &has, ok);
        if ((s = comb_back(f, &acc, &pv)) != WEFT_OK) {
            return s;
        }
        cg_if_end(fn, &has);
        cg_loop_end(fn, &lp);
        if ((s = cg_mut_get(fn, &acc, &v)) != WEFT_OK) {
            return s;
        }
        cg_array_store(
            fn, sk_out_array(f, 0),
            LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, row, nseg, ""), seg, ""),
            &v);
    }
    cg_if_end(fn, &t0);
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, done);
    /* then the middle segments: those of MID_SMALL elements at most 8
     * lanes each, the others a warp each */
    const cg_array *mids = sk_aux_array(f, AUX_MID);
    for (int small = 1; small >= 0; small--) {
        LLVMValueRef c = LLVMBuildSelect(
            fn->b, no_error_yet(f),
            cg_smin(fn, small ? raw_mid : raw_big, mids->extent[0]),
            cg_i64(fn, 0), "mcount");
        if ((s = mid_folds(f, small, c, &acc)) != WEFT_OK) {
            return s;
        }
    }
    /* the counts and the ticket back to zero for the next run
     * (RT_AUX_KEPT_ZERO) by the last block to end (AUX_COUNT[3] counts
     * them), when every block has read them */
    tg->barrier(fn);
    cg_if_begin(fn, &t0, t0c);
    tg->fence(fn);
    LLVMValueRef three = cg_i64(fn, 3);
    LLVMValueRef ended = tg->atomic_rmw(
        fn, LLVMAtomicRMWBinOpAdd,
        LLVMBuildInBoundsGEP2(fn->b, i64, cnt, &three, 1, ""), cg_i64(fn, 1));
    cg_if last;
    cg_if_begin(
        fn, &last,
        LLVMBuildICmp(fn->b, LLVMIntEQ, ended,
                      LLVMBuildSub(fn->b, cg_zext64(fn, tg->grid_size(fn, 0)),
                                   cg_i64(fn, 1), ""),
                      "last"));
    for (int c = 0; c < COUNTS; c++) {
        store64(fn, cnt, cg_i64(fn, c), cg_i64(fn, 0));
    }
    cg_if_end(fn, &last);
    cg_if_end(fn, &t0);
    cg_if_end(fn, &listed);
    return WEFT_OK;
}

/* Entry 2's folds: the warp items from w0 on by step, below end, with the
 * lanes G (lg = log2 L), or where `lone` holds (i1, uniform) and every
 * segment of the group has at most LONE_MOST elements with G1 (a lane a
 * segment; see emit_lanes). */
static weft_status lanes_folds(sk_fn *f, const lanes *G, LLVMValueRef lg,
                               const lanes *G1, LLVMValueRef lone,
                               LLVMValueRef w0, LLVMValueRef step,
                               LLVMValueRef end)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *op = f->e->k->op;
    LLVMValueRef inner, outer;
    weft_status s = input_rows(f, &inner, &outer);
    if (s) {
        return s;
    }
    group q = {.nseg = offsets_nseg(f), .most = lanes_limit(f)};
    LLVMValueRef gpr = LLVMBuildUDiv(
        fn->b, LLVMBuildAdd(fn->b, q.nseg, cg_i64(fn, GROUP - 1), ""),
        cg_i64(fn, GROUP), "groups");
    LLVMValueRef lane =
        LLVMBuildAnd(fn->b, cg_zext64(fn, tg->thread_index(fn, 0)),
                     cg_i64(fn, WARP - 1), "lane");
    LLVMValueRef one_row =
        LLVMBuildICmp(fn->b, LLVMIntEQ, outer, cg_i64(fn, 1), "");
    cg_mut acc;
    if ((s = cg_mut_new(fn, op->type, &acc)) != WEFT_OK) {
        return s;
    }
    cg_sloop items;
    LLVMValueRef w = cg_sloop_begin(fn, &items, w0, end, step, "item");
    /* the row and group of item w */
    LLVMValueRef g;
    row_item(fn, w, gpr, one_row, &q.row, &g);
    q.base = LLVMBuildMul(fn->b, q.row, inner, "base");
    q.gs = LLVMBuildMul(fn->b, g, cg_i64(fn, GROUP), "");
    /* the group's offsets, a segment a lane (read once, coalesced: each
     * pass takes its segments' by shuffles, with no memory latency of its
     * own), kept within [0, inner] and in order (checked before any
     * fold's result counts) */
    LLVMValueRef sl = LLVMBuildAdd(fn->b, q.gs, lane, "");
    LLVMValueRef live = LLVMBuildICmp(fn->b, LLVMIntULT, sl, q.nseg, "");
    segment_span(f, LLVMBuildSelect(fn->b, live, sl, cg_i64(fn, 0), ""), inner,
                 &q.lo_l, &q.hi_l);
    LLVMValueRef over =
        LLVMBuildAnd(fn->b, live,
                     LLVMBuildICmp(fn->b, LLVMIntSGT,
                                   LLVMBuildSub(fn->b, q.hi_l, q.lo_l, ""),
                                   cg_i64(fn, LONE_MOST), ""),
                     "");
    cg_if compact;
    cg_if_begin(
        fn, &compact,
        LLVMBuildAnd(fn->b, lone,
                     LLVMBuildICmp(fn->b, LLVMIntEQ, tg->ballot(fn, over),
                                   c32(fn, 0), ""),
                     "compact"));
    if ((s = group_folds(f, G1, cg_i64(fn, 0), &q, &acc)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &compact);
    if ((s = group_folds(f, G, lg, &q, &acc)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &compact);
    cg_sloop_end(fn, &items);
    return WEFT_OK;
}

/* Entry 2 of the offset form: the short segments (lanes_limit elements at
 * most; entry 1 folds the others), L = 2^lg lanes a segment.  A warp item
 * is a GROUP of segments of one row (items of all the rows, row-major;
 * the grid is what stays resident and warps loop): the warp reads the
 * group's offsets, a segment's two a lane, kept within [0, inner] and in
 * order, and folds the group's short segments 32 / L at a time, each by
 * fold_span from z, its offsets by shuffles; the first lane of each
 * segment stores it.
 *
 * Where lg is 0 (a mean segment of 16 elements at most: the lanes fold
 * segments of up to 16), a group whose segments all have LONE_MOST (12)
 * elements at most takes a lane a segment (L = 1, up to three trips of 4,
 * no tree of shuffles, in a copy of its own with L a constant), any other
 * 2 lanes a segment (two trips of 8, the copy of any L).  On the H200
 * (session 34, round
 * r1) a lane a segment took the banded matrix's rows of 10 in 40 us (57
 * with 2 lanes), but the power law's short rows in 97 us (62): its
 * groups are spread over the rows that entry 1 folds, and a warp's 32
 * lanes read 32 lines apart each trip.
 *
 * Unchecked, the entry first checks the offsets and lists the long and
 * middle segments (check_tiles, entry 0's work; entry 1 runs after it).
 * After a bad offset the error word is set and the folds' results do not
 * count.  No shared memory and no barrier: few registers, many warps. */
static weft_status emit_lanes(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    weft_status s;
    /* unchecked, the offsets' check and lists first (entry 0's work: its
     * reports name a segment, which wins over a gather's, of no element),
     * in the same launch; the folds below do not wait for it (and what
     * they need is computed after it: fewer registers live across it) */
    if (!f->e->k->checked) {
        LLVMValueRef tiles = LLVMBuildUDiv(
            fn->b,
            LLVMBuildAdd(fn->b, offsets_nseg(f), cg_i64(fn, TILE - 1), ""),
            cg_i64(fn, TILE), "tiles");
        if ((s = check_tiles(f, tiles)) != WEFT_OK) {
            return s;
        }
    }
    LLVMValueRef inner, outer;
    if ((s = input_rows(f, &inner, &outer)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef lg = sk_aux_value(f, AUX_LANES)->v[0];
    LLVMValueRef tid = cg_zext64(fn, tg->thread_index(fn, 0));
    LLVMValueRef last = input_last(fn, inner, outer);
    LLVMValueRef step, w0 = warp_items(f, tid, &step);
    LLVMValueRef end =
        LLVMBuildSelect(fn->b, no_error_yet(f), f->n, cg_i64(fn, 0), "end");
    /* where lg is 0, the groups that are not compact take 2 lanes */
    LLVMValueRef lone = LLVMBuildICmp(fn->b, LLVMIntEQ, lg, cg_i64(fn, 0), "");
    LLVMValueRef lgg = LLVMBuildSelect(fn->b, lone, cg_i64(fn, 1), lg, "");
    lanes G1 = lanes_make(fn, cg_i64(fn, 1), tid, last);
    lanes G =
        lanes_make(fn, LLVMBuildShl(fn->b, cg_i64(fn, 1), lgg, "L"), tid, last);
    G1.lone = true;
    return lanes_folds(f, &G, lgg, &G1, lone, w0, step, end);
}

/* The check's lists: `n` places (i32, the same in the warp) taken from the
 * count AUX_COUNT[ci] by lane 0, the first of them (i64) in every lane. */
static LLVMValueRef reserve(sk_fn *f, LLVMValueRef n, int ci)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMValueRef at0 = var(fn, t_i64(fn), cg_i64(fn, 0));
    LLVMValueRef lane =
        LLVMBuildAnd(fn->b, tg->thread_index(fn, 0), c32(fn, WARP - 1), "");
    cg_if lead;
    cg_if_begin(
        fn, &lead,
        LLVMBuildAnd(fn->b,
                     LLVMBuildICmp(fn->b, LLVMIntEQ, lane, c32(fn, 0), ""),
                     LLVMBuildICmp(fn->b, LLVMIntNE, n, c32(fn, 0), ""), ""));
    LLVMValueRef ix = cg_i64(fn, ci);
    LLVMBuildStore(
        fn->b,
        tg->atomic_rmw(fn, LLVMAtomicRMWBinOpAdd,
                       LLVMBuildInBoundsGEP2(fn->b, t_i64(fn),
                                             sk_aux_array(f, AUX_COUNT)->ptr[0],
                                             &ix, 1, ""),
                       cg_zext64(fn, n)),
        at0);
    cg_if_end(fn, &lead);
    return tg->shuffle_idx(fn, get(fn, t_i64(fn), at0), c32(fn, 0));
}

/* The check of the offset form (entry 0, or the start of entry 2: the
 * head comment) over `tiles` tiles of TILE segments, a warp a tile (the
 * offsets are the same for every row: once).  Lane i takes segment s = 32
 * q + i of each of the tile's GROUP_TILE groups q: off[s] and off[s + 1]
 * (offset_val's clamp; a lane past the last segment reads the last one's
 * and ignores them), every group's read at once, then a report where s
 * starts below 0 or ends before its start (CG_ERR_SEG_NEG) or past inner
 * (CG_ERR_SEG_PAST), the least segment winning as the interpreter's
 * first.  Where there are rows, a segment longer than LONG_SEG is
 * appended to AUX_LIST, one over lanes_limit to AUX_MID (from its front
 * when of MID_SMALL elements at most, else from its back), each list's
 * count in AUX_COUNT (the warp's at once, in the order of its lanes).  A
 * light pass: 4 MB of offsets for a million rows, no barrier, nothing
 * written but the lists. */
static weft_status check_tiles(sk_fn *f, LLVMValueRef tiles)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const cg_array *desc = sk_kid_array(f, 2);
    LLVMValueRef inner, rows;
    weft_status s = input_rows(f, &inner, &rows);
    if (s) {
        return s;
    }
    LLVMValueRef limit = LLVMBuildAdd(fn->b, inner, cg_i64(fn, 1), "");
    LLVMValueRef nseg = offsets_nseg(f);
    LLVMValueRef tid = cg_zext64(fn, tg->thread_index(fn, 0));
    LLVMValueRef lane = LLVMBuildAnd(fn->b, tid, cg_i64(fn, WARP - 1), "lane");
    LLVMValueRef step, w0 = warp_items(f, tid, &step);
    cg_sloop items;
    LLVMValueRef wt = cg_sloop_begin(fn, &items, w0, tiles, step, "tile");
    LLVMValueRef first = LLVMBuildAdd(
        fn->b, LLVMBuildMul(fn->b, wt, cg_i64(fn, TILE), ""), lane, "");
    /* every group's offsets first (the reads in flight together), then
     * their checks; a lane past nseg reads the last segment's (nseg >= 1
     * where this entry runs) */
    LLVMValueRef sg[GROUP_TILE], live[GROUP_TILE], lo[GROUP_TILE],
        hi[GROUP_TILE];
    LLVMValueRef last = LLVMBuildSub(fn->b, nseg, cg_i64(fn, 1), "");
    for (int q = 0; q < GROUP_TILE; q++) {
        sg[q] = LLVMBuildAdd(fn->b, first, cg_i64(fn, q * GROUP), "seg");
        live[q] = LLVMBuildICmp(fn->b, LLVMIntULT, sg[q], nseg, "live");
        LLVMValueRef at = LLVMBuildSelect(fn->b, live[q], sg[q], last, "");
        lo[q] =
            offset_val(f, cg_load(fn, desc->leaf[0], desc->ptr[0], at), limit);
        hi[q] = offset_val(f,
                           cg_load(fn, desc->leaf[0], desc->ptr[0],
                                   LLVMBuildAdd(fn->b, at, cg_i64(fn, 1), "")),
                           limit);
    }
    /* the long segments listed for entry 1 (where there are rows), a
     * warp's at once: lane 0 takes their places, each its own by the
     * long ones of the lanes below it */
    LLVMTypeRef i32 = t_i32(fn);
    LLVMValueRef has_rows =
        LLVMBuildICmp(fn->b, LLVMIntNE, rows, cg_i64(fn, 0), "");
    LLVMValueRef lane32 = LLVMBuildTrunc(fn->b, lane, i32, "");
    LLVMValueRef below = LLVMBuildSub(
        fn->b, LLVMBuildShl(fn->b, c32(fn, 1), lane32, ""), c32(fn, 1), "");
    LLVMValueRef most = lanes_limit(f);
    LLVMValueRef in[3][GROUP_TILE], mask[3][GROUP_TILE];
    LLVMValueRef total[3] = {c32(fn, 0), c32(fn, 0), c32(fn, 0)};
    for (int q = 0; q < GROUP_TILE; q++) {
        LLVMValueRef len = LLVMBuildSub(fn->b, hi[q], lo[q], "len");
        LLVMValueRef neg = LLVMBuildOr(
            fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, lo[q], cg_i64(fn, 0), ""),
            LLVMBuildICmp(fn->b, LLVMIntSLT, len, cg_i64(fn, 0), ""), "");
        LLVMValueRef past = LLVMBuildICmp(fn->b, LLVMIntSGT, hi[q], inner, "");
        cg_if bad, n;
        cg_if_begin(fn, &bad,
                    LLVMBuildAnd(fn->b, live[q],
                                 LLVMBuildOr(fn->b, neg, past, ""), ""));
        cg_if_begin(fn, &n, neg);
        report(f, sg[q], CG_ERR_SEG_NEG);
        cg_if_else(fn, &n);
        report(f, sg[q], CG_ERR_SEG_PAST);
        cg_if_end(fn, &n);
        cg_if_end(fn, &bad);
        LLVMValueRef some =
            LLVMBuildAnd(fn->b, LLVMBuildAnd(fn->b, live[q], has_rows, ""),
                         LLVMBuildICmp(fn->b, LLVMIntSGT, len, most, ""), "");
        LLVMValueRef islong =
            LLVMBuildICmp(fn->b, LLVMIntSGT, len, cg_i64(fn, LONG_SEG), "");
        LLVMValueRef small = LLVMBuildICmp(fn->b, LLVMIntSLE, len,
                                           cg_i64(fn, MID_SMALL), "small");
        LLVMValueRef mid =
            LLVMBuildAnd(fn->b, some, LLVMBuildNot(fn->b, islong, ""), "mid");
        in[0][q] = LLVMBuildAnd(fn->b, some, islong, "long");
        in[1][q] = LLVMBuildAnd(fn->b, mid, small, "");
        in[2][q] = LLVMBuildAnd(fn->b, mid, LLVMBuildNot(fn->b, small, ""), "");
        for (int k = 0; k < 3; k++) {
            mask[k][q] = tg->ballot(fn, in[k][q]);
            total[k] =
                LLVMBuildAdd(fn->b, total[k], popc32(fn, mask[k][q]), "");
        }
    }
    /* the tile's long and middle segments appended, each list's at once
     * (one atomic a warp and list), in the order of q and of the lanes;
     * no more than a list holds (more only where offsets are bad, and
     * entry 1 then folds nothing) */
    for (int k = 0; k < 3; k++) {
        const cg_array *list = sk_aux_array(f, k ? AUX_MID : AUX_LIST);
        LLVMValueRef at = reserve(f, total[k], 2 * k);
        for (int q = 0; q < GROUP_TILE; q++) {
            LLVMValueRef mine = LLVMBuildAdd(
                fn->b, at,
                cg_zext64(
                    fn, popc32(fn, LLVMBuildAnd(fn->b, mask[k][q], below, ""))),
                "");
            cg_if put;
            cg_if_begin(fn, &put,
                        LLVMBuildAnd(fn->b, in[k][q],
                                     LLVMBuildICmp(fn->b, LLVMIntULT, mine,
                                                   list->extent[0], ""),
                                     ""));
            store64(fn, list->ptr[0], k == 2 ? mid_back(fn, list, mine) : mine,
                    sg[q]);
            cg_if_end(fn, &put);
            at = LLVMBuildAdd(fn->b, at, cg_zext64(fn, popc32(fn, mask[k][q])),
                              "");
        }
    }
    cg_sloop_end(fn, &items);
    return WEFT_OK;
}

static weft_status emit_check(sk_fn *f)
{
    return check_tiles(f, f->n);
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
    bool byoff = k->op->op == FE_SEG_OFFSETS;
    /* the lengths: the tiles; the offsets: the check, the long and middle
     * segments and the lanes (item_threads of both variants,
     * sk_kernel.general) */
    k->nentry = byoff ? 3 : 1;
    for (int v = 0; v < 2; v++) {
        int *it = &k->item_threads[k->nentry * v];
        it[0] = byoff ? WARP : SK_ITEM_BLOCK;
        if (byoff) {
            it[1] = SK_ITEM_BLOCK;
            it[2] = WARP;
        }
    }
    k->block_max = BLOCK;
    k->may_fail = true; /* the descriptor is checked in the kernel */
    /* aux 0 and 1: the lengths' status words and ticket (i64 arrays); the
     * offsets' items as sk.h's SK_SEGOFF_* (lg a scalar, the rest i64
     * arrays) */
    weft_status s = WEFT_OK;
    for (int a = 0; s == WEFT_OK && a < (byoff ? 4 : 2); a++) {
        bool scalar = a == AUX_LANES && byoff;
        s = sk_add_item(ctx, arena, k, scalar ? SK_SCALAR : SK_ARRAY,
                        SK_SRC_AUX, a, WEFT_I64, scalar ? 0 : 1);
        k->aux_item[a] = k->nitem - 1;
    }
    return s;
}

/* Entry `entry`: the tiles (the lengths' only entry, the offsets' 1), the
 * offsets' check (0) and lanes (2). */
static weft_status emit_entry(sk_emit *e, const char *name, int entry)
{
    sk_fn f;
    weft_status s = sk_fn_begin_raw(e, &f, name);
    if (s) {
        return s;
    }
    bool tiles = e->k->nentry == 1;
    /* the staged reads without branches, so that ptxas issues a thread's
     * reads of a round together (smvm: cols, vals, then x): errors in a
     * local flag (every thread ends at sk_fn_end), reads outside an array
     * from a cell of zeros */
    f.local_errors = true;
    f.fn.flat_reads = true;
    cg_ptx_launch_bounds(&f.fn, BLOCK,
                         tiles        ? MIN_BLOCKS
                         : entry == 1 ? LONG_BLOCKS
                                      : LANES_BLOCKS);
    s = tiles        ? emit_tiles(&f)
        : entry == 0 ? emit_check(&f)
        : entry == 1 ? emit_long(&f)
                     : emit_lanes(&f);
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
    for (int entry = 0; s == WEFT_OK && entry < e->k->nentry; entry++) {
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
