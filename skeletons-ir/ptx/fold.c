/*
 * skeletons-ir/ptx/fold.c: fold and fold1 on the GPU, with warps and
 * blocks working together (the PTX target's own SK_FOLD skeleton).
 *
 * The contract is fold.c's, for the same host driver (runtime/exec.c,
 * rt_exec_fold): three entries over [0, n), aux 0 the partials (rank 1,
 * the element type), aux 1 C, the chunks per row.
 *
 *   entry 0, a warp per row (n = rows; the grid is sized for that):
 *       out[r] = z `f` row r (fold), or the row's fold1; empty for an
 *       input of rank 1 (SK_FOLD_CHUNKS_ONLY, as in fold.c);
 *   entry 1, a block per chunk (n = rows * C):
 *       partial[c] = fold1 of piece c % C of row c / C (pieces as in fold.c:
 *       contiguous, never empty);
 *   entry 2, a warp per row (n = rows), by teams as entry 0 of computed
 *       elements (below):
 *       out[r] = z `f` (the row's C partials, left to right), or without z;
 *       z alone when C = 0 (an empty row).
 *
 * For an input of rank 1 (one row) entry 1 also finishes the fold (the
 * last block, below; SK_FOLD_LAST_BLOCK, aux 2 its ticket counter), so
 * the driver launches entry 1 alone when C > 0, and entry 2 then only
 * writes z for an empty input.
 *
 * Each entry walks its items in a loop (item = global warp or block id,
 * step = warps or blocks in the grid: the runtime sizes the grid by
 * k->item_threads and the occupancy, never by n), but for one row, where
 * the blocks take pieces as they finish (below).
 *
 * Order.  The combine function is associative but need not be
 * commutative, so every step keeps left-to-right order and no step needs
 * an identity element.  The lanes of a warp (or of a team of g lanes,
 * below) hold values of consecutive runs of a range, and the warp reduces
 * them in order,
 *
 *     for d = 1, 2, 4, 8, 16 (d < g):
 *         y = shuffle_down(x, d)                    (every lane)
 *         if (lane % 2d == 0 && lane + d is valid)  x = f(x, y)
 *
 * after which lane 0 holds the fold (the valid lanes, those whose run is
 * not empty, always form a prefix: lane j is valid when lo + j K < hi,
 * which needs no division; the lane at lane + d, when valid, holds its
 * group's fold).  Two ways cut a range [lo, hi) into the lanes' runs:
 *
 * Tiles, for streamed elements (manifest arrays under maps, zipWiths and
 * reshapes: consecutive elements are consecutive in memory).  The warp
 * walks tiles of 32 K consecutive elements: lane l folds [t + l K,
 * t + (l + 1) K), the warp reduces, and lane 0 accumulates acc = f(acc,
 * tile) (acc = tile for the first one when there is no seed).  K is a
 * constant of the kernel, a power of two of at most 16 (see vec_plan):
 * as many elements as make 32 bytes of the fold's leaves (8 for 4-byte
 * elements), or, for vector reads (below), 64 bytes both of the fold's
 * leaves and of the leaves loaded per element (16 for a sum of f32, 8 for
 * a dot product of f32); at least 1.  A full tile reads its K elements
 * per lane unconditionally and all before combining them, so that K loads
 * per lane are in flight at once, and reduces with no bounds at all; the
 * warp pays one reduction per 32 K elements, and its loads stay within
 * 32 K consecutive elements, so what it fetches is all used.  Only the
 * last, partial tile of a range checks bounds, as lanes (below) with runs
 * of ceil(rest / 32), so that short rows still use every lane.
 *
 * Lanes (warp_lanes), for computed elements (generates, gathers: their
 * reads follow the index function, not the position) and for the
 * partials.  Each lane folds one contiguous run of ceil((hi - lo) / g)
 * elements one after the other, and the team reduces once at the end:
 * one copy of the element code, a plain loop, no reduction per tile.
 * Entry 0 of such a source (emit_teams) gives each row a team of g lanes,
 * g the largest power of two up to 32 with rows g <= the threads of the
 * grid (sized for a warp per row, at most the resident blocks): many rows
 * take a thread each, and a read of a column-indexed array (n-body's
 * bodies j) is then one address across the warp, few rows a warp each.
 * The teams of a warp take consecutive rows and the warp loops while its
 * first row is in range, so that every lane meets every shuffle.  Rows of
 * streamed elements no longer than SHORT_ROW go by teams too (a warp per
 * row would idle most lanes and reduce once per row).
 *
 * A block folds its range by cutting it into per-warp sub-ranges of S
 * elements (S a multiple of the tile, or of 32 lanes' runs, so only the
 * last one is short; the non-empty ones are again a prefix), each warp as
 * above; lane 0 of each warp puts its fold into shared memory (one array
 * of 32 per leaf: a block has at most 1024 threads), a barrier, warp 0
 * reduces the warp results in order, and thread 0 writes.  A second
 * barrier keeps the next item from overwriting shared memory before warp
 * 0 has read it.  Both barriers are at block-uniform points: the item
 * loop's bounds are the same for every thread of the block, and nothing
 * returns early.
 *
 * Block sizes are whatever the runtime launches (block_size at run time);
 * they must be a multiple of 32 (the occupancy API's always are), since
 * the shuffles take the full warp.  Inputs are read through sk_read (fused
 * producers inline), by linear position or, where that would cost a
 * division per element, by multi-index, as fold.c does; reads and
 * combines are guarded so that no lane reads past its range or applies
 * f to values that are not there.
 *
 * Vector reads: head, body, tail.  Where the source is read by linear
 * position and is manifest read-only arrays under maps, zipWiths (equal
 * shapes) and reshapes, with 4- and 8-byte leaves (a sum, a dot product,
 * a fold of a map), a full tile's lane loads its run of K elements per
 * leaf as K size / 16 vector loads of 16 bytes (ld.global.nc.v4.f32,
 * .v2.f64, ...), extracts the elements and computes the fused producers
 * on them one by one, in the same order as the scalar reads.  That needs
 * every run 16-byte aligned: every array a kernel sees is a whole device
 * buffer, FE_DEVICE_ALIGN-aligned (wrap_device and from_dlpack refuse or
 * copy anything else), so a run that starts at a multiple of K is.  A
 * warp's range [lo, hi) is folded as a head [lo, a) up to the next
 * multiple a of K (fewer than K elements, a partial tile, scalar), the
 * body of full tiles from a (vector loads; tiles of 32 K keep every run at
 * a multiple of K) and the tail as before; the head is a tile of its own,
 * folded into acc first.  Where every range starts at a whole tile (one
 * row, below) there is no head.  Other sources (multi-index reads,
 * gathers, 1- and 2-byte leaves) read scalars.
 *
 * One row and the last block.  A fold of one row (rank-1 input, m
 * elements) is entry 1 and then the fold of its partials.  The row is cut
 * into P pieces, [p(i), p(i + 1)) with p(i) = i m / P rounded down to a
 * whole tile (p(P) = m; m < 2^48), P the largest power of two up to
 * min(C, PIECES_PER_BLOCK grid, m / tile, MAX_PIECES) (at least 1), so
 * that no piece is empty and p is a shift, and the blocks take
 * them in turn as they finish one: thread 0 adds 2^16 to the ticket word
 * (aux 2, an i32 the runtime zeroes with the job's other aux arrays), the
 * high half is the piece, and the block folds it into partial[i] (only
 * block_fold's two barriers and the take's one per piece).  Blocks that
 * stream faster take more pieces, so that all of them stream to the end
 * (one fixed piece per block left SMs idle before the end: a sum of 2^28
 * f32 on an H200 took 0.261 ms, 0.256 ms by pieces taken in turn, CUB
 * 0.242).  Instead of a second launch, each block, when no piece is
 * left, takes a ticket: thread 0 fences (its partials are visible before
 * its ticket), adds one to the word's low half and tells the block through
 * shared memory whether it drew the last ticket (the grid's size less
 * one).  That block, and only it, fences again (the others' partials after
 * their tickets), folds the P partials in order as entry 2 would, writes
 * z `f` that (or that) to the result and stores 0 into the word, so that
 * it is zero again for whatever runs next.  The branches are
 * block-uniform, so their barriers are too.
 *
 * Several devices (runtime-gpu/multi.c).  Entries 0 and 1 (not of one
 * row) start their items at the kernel's `first` parameter, so that each
 * device of a context runs a range of rows or chunks of the same launch;
 * entry 2 then folds the rows' partials on one device.  One row is cut
 * into one part per device (emit_one_row): each part's pieces (the
 * driver's, a piece a block: runtime-gpu/backend.c fold_pieces), ticket
 * and last block are its own, the last block writes the part's fold to a
 * partial of its own, and entry 2, with grain D, folds the D parts' folds
 * in order.  So the result of a fold of one row depends on the device
 * count (the association of its terms), never on timing.
 */
#include "../sk.h"

enum {
    WARP = 32,          /* lanes */
    MAX_WARPS = 32,     /* warps of a block of 1024 threads */
    MAX_RUN = 16,       /* the most consecutive elements a lane reads alone */
    RUN_BYTES = 32,     /* ... and the most bytes of them (fold values) */
    VEC_RUN_BYTES = 64, /* ... with vector reads (see vec_plan) */
    VEC_BYTES = 16,     /* a vector load: ld.global.nc.v4 of 4-byte leaves,
                         .v2 of 8-byte ones */
    MAX_VEC_ARRAYS = 8, /* manifest arrays a vector-read source may have */
    SHORT_ROW = 16, /* streamed rows up to this long go by teams (entry 0) */
    PIECES_PER_BLOCK = 16, /* one row: pieces per block of the grid, which
                              blocks take as they finish */
    MAX_PIECES = 32768,    /* ... at most (the ticket word's high half counts
                           the pieces taken, its low half the blocks done) */
};

static weft_status ptx_fold_prepare(weft_context *ctx, fe_arena *arena,
                                    sk_kernel *k)
{
    k->nentry = 3;
    sk_fold_chunks_only(k);
    /* a warp per row, a block per chunk, a warp per row of partials; the
     * general variant (a fused zipWith) has the same three again */
    for (int v = 0; v < 2; v++) {
        k->item_threads[3 * v + 0] = WARP;
        k->item_threads[3 * v + 1] = SK_ITEM_BLOCK;
        k->item_threads[3 * v + 2] = WARP;
    }
    /* a block per chunk: chunks of at least 16K elements, so that a
     * block streams long runs between its barriers (64 tiles of 256 i32
     * keep 22 of a 768-thread block's 24 warps busy); and no more, so
     * that one row of a few million fills the GPU: the driver launches a
     * block a chunk up to the resident ones, and k-means' moved count
     * (2^22 pairs of i32; chunks of 32K then) ran 128 blocks of 768, 37%
     * occupancy and 49% of DRAM.  A sum of 2^28 is cut by
     * PIECES_PER_BLOCK as before. */
    k->chunk_min = 16384;
    weft_status s = sk_add_chunk_items(ctx, arena, k, fe_fold_type(k->op));
    if (s == WEFT_OK && (k->flags & SK_FOLD_CHUNKS_ONLY)) {
        /* one row: the last block finishes it (sk.h), its ticket in aux 2 */
        k->flags |= SK_FOLD_LAST_BLOCK;
        s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 2, WEFT_I32, 1);
        k->aux_item[2] = k->nitem - 1;
    }
    return s;
}

/* ---- small helpers ---------------------------------------------------- */

/* floor(log2 x) for x >= 1. */
static LLVMValueRef log2_floor(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMValueRef args[2] = {
        x, LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0)};
    LLVMValueRef lz = cg_intrinsic(fn, "llvm.ctlz", &i64, 1, args, 2);
    return LLVMBuildSub(fn->b, cg_i64(fn, 63), lz, "");
}

/* out = f(a, b) with the combine function (reassociation allowed). */
static weft_status combine(sk_fn *f, const cg_val *a, const cg_val *b,
                           cg_val *out)
{
    cg_fn *fn = &f->fn;
    cg_val args[2] = {*a, *b};
    fn->fmf = LLVMFastMathAllowReassoc;
    weft_status s = cg_apply(fn, f->e->k->op->fun[0], args, out);
    fn->fmf = 0;
    return s;
}

/* m = f(m, x). */
static weft_status combine_into(sk_fn *f, const cg_mut *m, const cg_val *x)
{
    cg_val a, y;
    weft_status s = cg_mut_get(&f->fn, m, &a);
    if (s == WEFT_OK) {
        s = combine(f, &a, x, &y);
    }
    if (s == WEFT_OK) {
        cg_mut_set(&f->fn, m, &y);
    }
    return s;
}

/* m = zero in every leaf (a placeholder for lanes without a value). */
static void mut_zero(cg_fn *fn, const cg_mut *m)
{
    for (int l = 0; l < m->n; l++) {
        LLVMBuildStore(fn->b, LLVMConstNull(cg_type(fn->llctx, m->leaf[l])),
                       m->slot[l]);
    }
}

/* A run length K: the most consecutive elements a lane reads before the
 * warp combines, a power of two of at most MAX_RUN and at least 1, such
 * that K elements of `bytes` bytes each stay within `budget` bytes. */
static int run_of(int bytes, int budget)
{
    int k = MAX_RUN;
    while (k > 1 && k * bytes > budget) {
        k /= 2;
    }
    return k;
}

/* The bytes of one value of the fold's type (its leaves). */
static int fold_bytes(sk_fn *f)
{
    const weft_type *leaf;
    int n = cg_leaves(&f->fn, fe_fold_type(f->e->k->op), &leaf);
    int bytes = 0;
    for (int l = 0; l < n; l++) {
        bytes += (int)weft_type_size(leaf[l]);
    }
    return bytes;
}

/* ---- reading the source ----------------------------------------------- */

/* What a fold reads: the input term src, one row of it (sk_row: by
 * linear position, or by multi-index when a linear read of src would need
 * a division), or, when src is NULL, the partials. */
typedef struct source {
    const fe_term *src;
    const cg_array *part;
    sk_row row;
    int k;      /* the run length K of its full tiles */
    bool vec;   /* full tiles read by vector loads (vec_plan) */
    bool lanes; /* computed elements, or the partials: lanes read
                           contiguous runs (warp_lanes), not tiles */
    bool tiled; /* every range to fold starts at a multiple of K
                           (no head) */
    int narr;   /* vec: the manifest arrays read, each once */
    const cg_array *arr[MAX_VEC_ARRAYS];
} source;

/* ---- vector reads ------------------------------------------------------ */

/* Whether term t, read by linear position, is manifest read-only arrays
 * under maps, zipWiths (equal shapes) and reshapes, every leaf of them 4
 * or 8 bytes; each array goes into sr->arr once. */
static bool vec_terms(sk_fn *f, source *sr, const fe_term *t)
{
    if (!t->delayed) {
        const cg_array *a = sk_manifest_array(f, t);
        if (!a || !a->readonly) {
            return false;
        }
        for (int l = 0; l < a->nleaf; l++) {
            int size = (int)weft_type_size(a->leaf[l]);
            if (size != 4 && size != 8) {
                return false;
            }
        }
        for (int i = 0; i < sr->narr; i++) {
            if (sr->arr[i] == a) {
                return true;
            }
        }
        if (sr->narr == MAX_VEC_ARRAYS) {
            return false;
        }
        sr->arr[sr->narr++] = a;
        return true;
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP: return vec_terms(f, sr, t->kid[0]);
    case FE_ZIPWITH:
        for (int c = 0; c < t->nkid; c++) {
            if (!f->e->uniform || c >= 3 || !vec_terms(f, sr, t->kid[c])) {
                return false;
            }
        }
        return true;
    case FE_RESHAPE: return vec_terms(f, sr, t->kid[1]);
    default: return false;
    }
}

/* sr->k and sr->vec.  A source read by multi-index has runs of
 * RUN_BYTES of the fold's values; a source of vector reads
 * has runs of VEC_RUN_BYTES both of the fold's values and of the leaves it
 * loads per element (a lane's loads are all in flight together), and each
 * leaf's run must be whole vector loads.  Every array a kernel sees is a
 * whole device buffer, FE_DEVICE_ALIGN-aligned (wrap_device and
 * from_dlpack refuse or copy others), so a run that starts at a multiple
 * of K is 16-byte aligned. */
static void vec_plan(sk_fn *f, source *sr)
{
    sr->narr = 0;
    sr->k = run_of(fold_bytes(f), RUN_BYTES);
    sr->vec = sr->src && !sr->row.by_index && vec_terms(f, sr, sr->src);
    if (!sr->vec) {
        return;
    }
    int bytes = 0;
    for (int i = 0; i < sr->narr; i++) {
        for (int l = 0; l < sr->arr[i]->nleaf; l++) {
            bytes += (int)weft_type_size(sr->arr[i]->leaf[l]);
        }
    }
    int k = run_of(bytes, VEC_RUN_BYTES);
    int kf = run_of(fold_bytes(f), VEC_RUN_BYTES);
    k = k < kf ? k : kf;
    for (int i = 0; i < sr->narr; i++) {
        const cg_array *a = sr->arr[i];
        for (int l = 0; l < a->nleaf; l++) {
            if (k * (int)weft_type_size(a->leaf[l]) % VEC_BYTES != 0) {
                sr->vec = false;
                return;
            }
        }
    }
    sr->k = k;
}

/* The leaves of every array of sr at positions j0 .. j0 + k - 1 (j0 k
 * elements past a 16-byte aligned base: whole vector loads), into
 * vals[array][leaf * k + i].  The loads are llvm.nvvm.ldg.global (the
 * arrays are read-only: ld.global.nc.v4 / .v2): a plain vector load whose
 * lanes are all extracted, VectorCombine turns back into scalar loads,
 * without their !invariant.load. */
static weft_status vec_load(sk_fn *f, const source *sr, LLVMValueRef j0, int k,
                            LLVMValueRef **vals)
{
    cg_fn *fn = &f->fn;
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef g = LLVMPointerTypeInContext(c, 1);
    for (int i = 0; i < sr->narr; i++) {
        const cg_array *a = sr->arr[i];
        vals[i] =
            fe_arena_alloc(fn->arena, sizeof *vals[i] * (size_t)(a->nleaf * k));
        if (!vals[i]) {
            return fe_oom("weft_compile");
        }
        for (int l = 0; l < a->nleaf; l++) {
            LLVMTypeRef mt = cg_mem_type(c, a->leaf[l]);
            int per = VEC_BYTES / (int)weft_type_size(a->leaf[l]);
            LLVMTypeRef vt = LLVMVectorType(mt, (unsigned)per);
            for (int q = 0; q < k; q += per) {
                LLVMValueRef at = LLVMBuildAdd(fn->b, j0, cg_i64(fn, q), "");
                LLVMValueRef p =
                    LLVMBuildInBoundsGEP2(fn->b, mt, a->ptr[l], &at, 1, "");
                LLVMValueRef args[2] = {
                    LLVMBuildAddrSpaceCast(fn->b, p, g, ""),
                    LLVMConstInt(LLVMInt32TypeInContext(c), VEC_BYTES, 0)};
                LLVMTypeRef over[2] = {vt, g};
                LLVMValueRef v = cg_intrinsic(fn,
                                              fe_is_float(a->leaf[l])
                                                  ? "llvm.nvvm.ldg.global.f"
                                                  : "llvm.nvvm.ldg.global.i",
                                              over, 2, args, 2);
                for (int e = 0; e < per; e++) {
                    vals[i][l * k + q + e] = LLVMBuildExtractElement(
                        fn->b, v,
                        LLVMConstInt(LLVMInt32TypeInContext(c), (unsigned)e, 0),
                        "");
                }
            }
        }
    }
    return WEFT_OK;
}

/* Element i of the run that vec_load loaded: t as read_at (input.c) reads
 * it, the loads replaced by the loaded leaves. */
static weft_status vec_read(sk_fn *f, const source *sr, LLVMValueRef **vals,
                            int k, const fe_term *t, int i, cg_val *out)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    cg_val x[3];
    if (!t->delayed) {
        const cg_array *a = sk_manifest_array(f, t);
        int n = 0;
        while (sr->arr[n] != a) {
            n++;
        }
        if ((s = cg_val_make(fn, a->nleaf, out)) != WEFT_OK) {
            return s;
        }
        for (int l = 0; l < a->nleaf; l++) {
            out->v[l] = vals[n][l * k + i];
        }
        return WEFT_OK;
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP:
        if ((s = vec_read(f, sr, vals, k, t->kid[0], i, &x[0])) != WEFT_OK) {
            return s;
        }
        return cg_apply(fn, t->fun[0], x, out);
    case FE_ZIPWITH:
        for (int c = 0; c < t->nkid; c++) {
            s = vec_read(f, sr, vals, k, t->kid[c], i, &x[c]);
            if (s) {
                return s;
            }
        }
        return cg_apply(fn, t->fun[0], x, out);
    default: /* FE_RESHAPE (vec_terms) */
        return vec_read(f, sr, vals, k, t->kid[1], i, out);
    }
}

/* Whether term t streams manifest arrays (maps, zipWiths and reshapes of
 * them): its element at a position reads the arrays at that position, so
 * consecutive elements are consecutive in memory, which tiles read
 * coalesced.  Other sources (generates, gathers, replicates...) compute
 * their elements, and the lanes of a team read contiguous runs of them
 * (warp_lanes). */
static bool streamed(const fe_term *t)
{
    if (!t->delayed) {
        return true;
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP: return streamed(t->kid[0]);
    case FE_ZIPWITH:
        for (int c = 0; c < t->nkid; c++) {
            if (!streamed(t->kid[c])) {
                return false;
            }
        }
        return true;
    case FE_RESHAPE: return streamed(t->kid[1]);
    default: return false;
    }
}

/* Prepare to read row r of src (extents ext) starting at linear position
 * base. */
static weft_status source_row(sk_fn *f, source *sr, LLVMValueRef *ext,
                              LLVMValueRef r, LLVMValueRef base)
{
    weft_status s = sk_row_begin(f, sr->src, ext, r, base, true, &sr->row);
    sr->lanes = sr->src && !streamed(sr->src);
    vec_plan(f, sr);
    return s;
}

/* Element j (a linear position) of the source. */
static weft_status source_read(sk_fn *f, const source *sr, LLVMValueRef j,
                               cg_val *out)
{
    if (!sr->src) {
        return cg_array_load(&f->fn, sr->part, j, out);
    }
    return sk_row_read(f, &sr->row, j, out);
}

/* ---- warps ------------------------------------------------------------ */

typedef struct warp warp;
static weft_status warp_lanes(sk_fn *f, warp *w, const source *sr,
                              LLVMValueRef lo, LLVMValueRef hi);

/* The lanes of a warp, and the mutable values a warp fold works in. */
struct warp {
    LLVMValueRef lane; /* i64 0..31 */
    LLVMValueRef tl;   /* i64: the lane within its team (warp_lanes) */
    LLVMValueRef g;    /* i64: lanes per team, a power of two up to 32;
                           NULL: the whole warp (tl = lane) */
    LLVMValueRef lg;   /* i64: log2 g (with g) */
    cg_mut x;          /* a lane's value */
    cg_mut acc;        /* lane 0: the fold so far */
    LLVMValueRef have; /* i1 slot: lane 0 has a value in acc */
};

static weft_status warp_init(sk_fn *f, warp *w, LLVMValueRef tid)
{
    cg_fn *fn = &f->fn;
    weft_type t = fe_fold_type(f->e->k->op);
    w->lane = LLVMBuildAnd(fn->b, tid, cg_i64(fn, WARP - 1), "lane");
    w->tl = w->lane;
    w->g = NULL;
    w->lg = NULL;
    weft_status s = cg_mut_new(fn, t, &w->x);
    if (s == WEFT_OK) {
        s = cg_mut_new(fn, t, &w->acc);
    }
    w->have = cg_alloca(fn, LLVMInt1TypeInContext(fn->llctx), "have");
    return s;
}

/* In-order reduction of x over the valid lanes of each team (the whole
 * warp, or teams of w->g lanes), lane j of its team being valid when
 * at + j stride < hi (the same bounds in every lane of a team, lane 0
 * valid: the valid lanes are a prefix, and no division is needed to count
 * them; hi NULL: every lane valid): lane 0 of the team ends with x[0] `f`
 * x[1] `f` ... over the valid lanes.  Every lane of the warp must run it
 * (w->g the same in all). */
static weft_status warp_reduce(sk_fn *f, warp *w, LLVMValueRef at,
                               LLVMValueRef stride, LLVMValueRef hi)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    weft_status s;
    /* teams of one lane (a row a thread) skip the steps at one branch */
    cg_if many;
    if (w->g) {
        cg_if_begin(fn, &many,
                    LLVMBuildICmp(fn->b, LLVMIntSGT, w->g, cg_i64(fn, 1), ""));
    }
    for (int d = 1; d < WARP; d *= 2) {
        cg_if team;
        if (w->g) {
            cg_if_begin(
                fn, &team,
                LLVMBuildICmp(fn->b, LLVMIntSLT, cg_i64(fn, d), w->g, ""));
        }
        cg_val x, y;
        if ((s = cg_mut_get(fn, &w->x, &x)) != WEFT_OK ||
            (s = cg_val_make(fn, x.n, &y)) != WEFT_OK) {
            return s;
        }
        for (int l = 0; l < x.n; l++) {
            y.v[l] =
                tg->shuffle_down(fn, x.v[l], LLVMConstInt(i32, (unsigned)d, 0));
        }
        LLVMValueRef take =
            LLVMBuildICmp(fn->b, LLVMIntEQ,
                          LLVMBuildAnd(fn->b, w->tl, cg_i64(fn, 2 * d - 1), ""),
                          cg_i64(fn, 0), "");
        if (hi) {
            LLVMValueRef other = LLVMBuildAdd(fn->b, w->tl, cg_i64(fn, d), "");
            LLVMValueRef there = LLVMBuildICmp(
                fn->b, LLVMIntSLT,
                LLVMBuildAdd(fn->b, at, LLVMBuildMul(fn->b, other, stride, ""),
                             ""),
                hi, "");
            take = LLVMBuildAnd(fn->b, take, there, "");
        }
        cg_if c;
        cg_if_begin(fn, &c, take);
        s = combine_into(f, &w->x, &y);
        cg_if_end(fn, &c);
        if (s) {
            return s;
        }
        if (w->g) {
            cg_if_end(fn, &team);
        }
    }
    if (w->g) {
        cg_if_end(fn, &many);
    }
    return WEFT_OK;
}

/* Lane 0: acc = have ? acc `f` x : x; have = true. */
static weft_status warp_accumulate(sk_fn *f, warp *w)
{
    cg_fn *fn = &f->fn;
    cg_val x;
    weft_status s = cg_mut_get(fn, &w->x, &x);
    if (s) {
        return s;
    }
    cg_if lane0, have;
    cg_if_begin(fn, &lane0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, w->lane, cg_i64(fn, 0), ""));
    LLVMValueRef h =
        LLVMBuildLoad2(fn->b, LLVMInt1TypeInContext(fn->llctx), w->have, "");
    cg_if_begin(fn, &have, h);
    s = combine_into(f, &w->acc, &x);
    cg_if_else(fn, &have);
    cg_mut_set(fn, &w->acc, &x);
    cg_if_end(fn, &have);
    LLVMBuildStore(fn->b, LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0),
                   w->have);
    cg_if_end(fn, &lane0);
    return s;
}

/* One full tile at t: lane l reads its K elements (all first, so that
 * they are in flight together), folds them and the warp reduces (every
 * lane valid).  vec: by vector loads (t a multiple of K). */
static weft_status full_tile(sk_fn *f, warp *w, const source *sr,
                             LLVMValueRef t, int k, bool vec)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    LLVMValueRef K = cg_i64(fn, k);
    LLVMValueRef llo =
        LLVMBuildAdd(fn->b, t, LLVMBuildMul(fn->b, w->lane, K, ""), "");
    cg_val x[MAX_RUN], y;
    LLVMValueRef *vals[MAX_VEC_ARRAYS];
    if (vec && (s = vec_load(f, sr, llo, k, vals)) != WEFT_OK) {
        return s;
    }
    for (int i = 0; i < k; i++) {
        LLVMValueRef j = LLVMBuildAdd(fn->b, llo, cg_i64(fn, i), "");
        if (vec) {
            cg_set_elem(fn, j);
            s = vec_read(f, sr, vals, k, sr->src, i, &x[i]);
        } else {
            s = source_read(f, sr, j, &x[i]);
        }
        if (s) {
            return s;
        }
    }
    for (int i = 1; i < k; i++) {
        if ((s = combine(f, &x[0], &x[i], &y)) != WEFT_OK) {
            return s;
        }
        x[0] = y;
    }
    cg_mut_set(fn, &w->x, &x[0]);
    if ((s = warp_reduce(f, w, t, K, NULL)) != WEFT_OK) {
        return s;
    }
    return warp_accumulate(f, w);
}

/* The last, partial tile at t (t < hi < t + 32 K), as warp_lanes: lane
 * l folds [t + l k, min(t + (l + 1) k, hi)) with k = ceil((hi - t) / 32)
 * (1 .. K, so that a short row still spreads over the lanes), and lane 0
 * adds the tile's fold to acc. */
static weft_status part_tile(sk_fn *f, warp *w, const source *sr,
                             LLVMValueRef t, LLVMValueRef hi)
{
    weft_status s = warp_lanes(f, w, sr, t, hi);
    return s ? s : warp_accumulate(f, w);
}

/* The warp folds [lo, hi) of the source (bounds the same in every lane)
 * into lane 0's acc / have: the full tiles of 32 K elements, then the
 * partial one if any.  A source with vector reads first folds a head
 * [lo, a) up to the next multiple a of K as a partial tile, so that its
 * full tiles start at multiples of K. */
static weft_status warp_fold(sk_fn *f, warp *w, const source *sr,
                             LLVMValueRef lo, LLVMValueRef hi)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    int k = sr->k;
    LLVMValueRef T = cg_i64(fn, (int64_t)k * WARP);
    if (sr->vec && !sr->tiled) {
        LLVMValueRef a = cg_smin(
            fn,
            LLVMBuildAnd(fn->b, LLVMBuildAdd(fn->b, lo, cg_i64(fn, k - 1), ""),
                         cg_i64(fn, -k), ""),
            hi);
        cg_if head;
        cg_if_begin(fn, &head, LLVMBuildICmp(fn->b, LLVMIntSLT, lo, a, ""));
        if ((s = part_tile(f, w, sr, lo, a)) != WEFT_OK) {
            return s;
        }
        cg_if_end(fn, &head);
        lo = a;
    }
    LLVMValueRef len =
        cg_smax(fn, LLVMBuildSub(fn->b, hi, lo, ""), cg_i64(fn, 0));
    LLVMValueRef full = LLVMBuildAdd(
        fn->b, lo, LLVMBuildMul(fn->b, LLVMBuildUDiv(fn->b, len, T, ""), T, ""),
        "full");
    cg_sloop tl;
    LLVMValueRef t = cg_sloop_begin(fn, &tl, lo, full, T, "tile");
    if ((s = full_tile(f, w, sr, t, k, sr->vec)) != WEFT_OK) {
        return s;
    }
    cg_sloop_end(fn, &tl);
    cg_if tail;
    cg_if_begin(fn, &tail, LLVMBuildICmp(fn->b, LLVMIntSLT, full, hi, ""));
    if ((s = part_tile(f, w, sr, full, hi)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &tail);
    return WEFT_OK;
}

/* The lanes of each team (w->g, or the whole warp) fold [lo, hi) of the
 * source (bounds the same in every lane of a team, the range possibly
 * empty), each lane its own contiguous run of L = ceil((hi - lo) / g)
 * elements one after the other, then the team reduces in order: lane 0
 * of the team ends with the fold in x when lo < hi.  For elements that
 * are computed rather than streamed (a generate, a gather): no per-tile
 * reduction, one copy of the element code, and where the teams are small
 * the lanes of a warp read the same few columns.  Every lane of the warp
 * must run it. */
static weft_status warp_lanes(sk_fn *f, warp *w, const source *sr,
                              LLVMValueRef lo, LLVMValueRef hi)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    LLVMValueRef len =
        cg_smax(fn, LLVMBuildSub(fn->b, hi, lo, ""), cg_i64(fn, 0));
    LLVMValueRef L = LLVMBuildLShr(
        fn->b,
        LLVMBuildAdd(fn->b, len,
                     w->g ? LLVMBuildSub(fn->b, w->g, cg_i64(fn, 1), "")
                          : cg_i64(fn, WARP - 1),
                     ""),
        w->g ? w->lg : cg_i64(fn, 5), "run");
    LLVMValueRef llo =
        LLVMBuildAdd(fn->b, lo, LLVMBuildMul(fn->b, w->tl, L, ""), "");
    LLVMValueRef lhi = cg_smin(fn, LLVMBuildAdd(fn->b, llo, L, ""), hi);
    mut_zero(fn, &w->x);
    cg_if valid;
    cg_if_begin(fn, &valid, LLVMBuildICmp(fn->b, LLVMIntSLT, llo, lhi, ""));
    cg_val x0;
    if ((s = source_read(f, sr, llo, &x0)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &w->x, &x0);
    cg_loop run;
    LLVMValueRef j;
    cg_loop_begin(fn, &run, LLVMBuildAdd(fn->b, llo, cg_i64(fn, 1), ""), lhi,
                  &j);
    cg_val xj;
    if ((s = source_read(f, sr, j, &xj)) != WEFT_OK ||
        (s = combine_into(f, &w->x, &xj)) != WEFT_OK) {
        return s;
    }
    cg_loop_end(fn, &run);
    cg_if_end(fn, &valid);
    return warp_reduce(f, w, lo, L, hi);
}

/* ---- staged columns ----------------------------------------------------
 *
 * n-body's fold, generate (n, n) (\(i, j) -> pull of body j on body i)
 * folded along j: every row reads the bodies at j in the same order.  So
 * the teams of a block walk their rows' columns in lockstep, a tile of
 * STAGE_TILE columns at a time, and the block first loads the arrays that
 * the generate reads at `index j` into a shared-memory tile, a record per
 * column (codegen/stage.c, cg_stage_fun); the elements then read the
 * tile, and the reads at `index i` (the row) are read once per row.
 * Order is kept: lane l of a team of g still folds its contiguous run
 * [l L, (l + 1) L) of the row (L = ceil(m / g)), tile by tile: tile k
 * holds, for each lane l, the S = STAGE_TILE / g columns l L + k S ...
 * of its run, so that a lane's record q is l S + s; a lane starts from
 * its run's first record, or, in a fold, lane 0 of a team from the seed,
 * folding its whole run (a team of one lane a row, as k-means' 2^22 rows
 * of 16 have, then folds the row in whole unrolled trips, without a
 * remainder, and stores it without another combine).  The trips count in
 * 32 bits (at most STAGE_TILE).  A tile is filled between two
 * barriers, and only when it does not hold those records already
 * (cg_stage_fresh): k-means' fold of (distance, j) over 16 centroids
 * fills its one tile once per block, not once per row.  The rows loop
 * and the tiles are block-uniform (the block runs while its first warp's
 * first row is in range; a lane past the last row folds the last row and
 * does not store it), so every thread meets every barrier.
 */
enum { STAGE_TILE = 256 };

/* The tile of source src read by multi-index (a generate), or NULL. */
static weft_status stage_source(sk_fn *f, const fe_term *src, cg_stage **g)
{
    *g = NULL;
    if (!src || f->e->k->checked || !src->delayed || src->kind != FE_GENERATE ||
        src->nfun != 1 || sk_linear_ok(f, src)) {
        return WEFT_OK;
    }
    cg_walker w = cg_scalar_walker(&f->fn);
    return cg_stage_fun(&w, src->fun[0], STAGE_TILE, g);
}

/* warp_lanes over staged columns: the lanes of each team fold [base, base
 * + m) of the source (the same m in every thread of the block; sr a row
 * read by multi-index, its reads at the row set by cg_stage_fix), each
 * lane its run, the team reducing in order at the end.  With a seed z
 * (fold), lane 0 of each team starts from z and folds its whole run, so
 * that it ends with z `f` the row (z alone when m = 0) and the row is
 * stored as it is; the other lanes start from their run's first element.
 * Every thread of the block must run it (it has barriers). */
static weft_status staged_lanes(sk_fn *f, warp *w, const source *sr,
                                cg_stage *g, LLVMValueRef base, LLVMValueRef m,
                                const cg_val *z)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    weft_status s;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef one = cg_i64(fn, 1);
    LLVMValueRef lgs =
        LLVMBuildSub(fn->b, cg_i64(fn, __builtin_ctz(STAGE_TILE)), w->lg, "");
    LLVMValueRef S = LLVMBuildShl(fn->b, one, lgs, "");
    LLVMValueRef smask = LLVMBuildSub(fn->b, S, one, "");
    LLVMValueRef L = LLVMBuildLShr(
        fn->b, LLVMBuildAdd(fn->b, m, LLVMBuildSub(fn->b, w->g, one, ""), ""),
        w->lg, "run");
    LLVMValueRef llo = LLVMBuildMul(fn->b, w->tl, L, "");
    LLVMValueRef lhi = cg_smin(fn, LLVMBuildAdd(fn->b, llo, L, ""), m);
    LLVMValueRef valid = LLVMBuildICmp(fn->b, LLVMIntSLT, llo, lhi, "");
    /* own: the lane starts from z (lane 0 of its team, a fold) */
    LLVMValueRef own = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 0, 0);
    mut_zero(fn, &w->x);
    if (z) {
        own = LLVMBuildICmp(fn->b, LLVMIntEQ, w->tl, cg_i64(fn, 0), "own");
        cg_if start;
        cg_if_begin(fn, &start, own);
        cg_mut_set(fn, &w->x, z);
        cg_if_end(fn, &start);
    }
    if ((s = cg_stage_fix(fn, g, &sr->row.ix)) != WEFT_OK) {
        return s;
    }
    /* K = ceil(L / S) tiles, tile k holding columns [k S, (k + 1) S) of
     * every lane's run */
    LLVMValueRef K =
        LLVMBuildLShr(fn->b, LLVMBuildAdd(fn->b, L, smask, ""), lgs, "tiles");
    LLVMValueRef tid = cg_zext64(fn, tg->thread_index(fn, 0));
    LLVMValueRef bs = cg_zext64(fn, tg->block_size(fn, 0));
    cg_loop tiles;
    LLVMValueRef k;
    cg_loop_begin(fn, &tiles, cg_i64(fn, 0), K, &k);
    LLVMValueRef c0 = LLVMBuildShl(fn->b, k, lgs, "");
    /* the records depend on c0, L and lg only, and L and lg are the same
     * in every row of a launch (as long as the tile's state lives): a
     * tile that holds c0's records (the previous row's) is not filled
     * again */
    cg_if fresh;
    cg_if_begin(fn, &fresh, cg_stage_fresh(fn, g, &c0, 1));
    tg->barrier(fn); /* the tile's readers are done */
    /* record q: lane q >> lgs's column c0 + (q & (S - 1)) of its run */
    cg_sloop fill;
    LLVMValueRef q =
        cg_sloop_begin(fn, &fill, tid, cg_i64(fn, STAGE_TILE), bs, "stage");
    LLVMValueRef col = LLVMBuildAdd(
        fn->b, LLVMBuildMul(fn->b, LLVMBuildLShr(fn->b, q, lgs, ""), L, ""),
        LLVMBuildAdd(fn->b, c0, LLVMBuildAnd(fn->b, q, smask, ""), ""), "");
    if ((s = cg_stage_put(fn, g, q, col)) != WEFT_OK) {
        return s;
    }
    cg_sloop_end(fn, &fill);
    tg->barrier(fn);
    cg_if_end(fn, &fresh);
    cg_if mine;
    cg_if_begin(fn, &mine, valid);
    /* the tile's trips [t0, count) of this lane, in 32 bits (count <= S
     * <= STAGE_TILE; count <= 0 where the lane's run ends before c0) */
    LLVMValueRef at = LLVMBuildAdd(fn->b, llo, c0, "");
    LLVMValueRef from = LLVMBuildAdd(fn->b, base, at, "");
    LLVMValueRef count = LLVMBuildTrunc(
        fn->b, cg_smin(fn, S, LLVMBuildSub(fn->b, lhi, at, "")), i32, "");
    LLVMValueRef q0 = LLVMBuildShl(fn->b, w->tl, lgs, "");
    /* the run's first element starts a lane that does not own z */
    LLVMValueRef first = LLVMBuildAnd(
        fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, k, cg_i64(fn, 0), ""),
        LLVMBuildNot(fn->b, own, ""), "first");
    cg_if lead;
    cg_if_begin(fn, &lead, first);
    cg_val x0;
    cg_stage_use(fn, g, q0);
    s = source_read(f, sr, from, &x0);
    cg_stage_use(fn, NULL, NULL);
    if (s != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &w->x, &x0);
    cg_if_end(fn, &lead);
    LLVMValueRef t0 = LLVMBuildZExt(fn->b, first, i32, "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(fn->b);
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged.trip");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged.body");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "staged.done");
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    LLVMValueRef t = LLVMBuildPhi(fn->b, i32, "t");
    LLVMAddIncoming(t, &t0, &pre, 1);
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, t, count, ""), body,
                    done);
    LLVMPositionBuilderAtEnd(fn->b, body);
    cg_val xj;
    LLVMValueRef t64 =
        LLVMBuildZExt(fn->b, t, LLVMInt64TypeInContext(fn->llctx), "");
    cg_stage_use(fn, g, LLVMBuildAdd(fn->b, q0, t64, ""));
    s = source_read(f, sr, LLVMBuildAdd(fn->b, from, t64, ""), &xj);
    cg_stage_use(fn, NULL, NULL);
    if (s != WEFT_OK || (s = combine_into(f, &w->x, &xj)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef t1 = LLVMBuildNSWAdd(fn->b, t, LLVMConstInt(i32, 1, 0), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(fn->b);
    cg_stage_unroll(fn, LLVMBuildBr(fn->b, head));
    LLVMAddIncoming(t, &t1, &latch, 1);
    LLVMPositionBuilderAtEnd(fn->b, done);
    cg_if_end(fn, &mine);
    cg_loop_end(fn, &tiles);
    return warp_reduce(f, w, base, L, LLVMBuildAdd(fn->b, base, m, ""));
}

/* ---- blocks ----------------------------------------------------------- */

/* A block's threads and its shared memory (32 values per leaf). */
typedef struct block {
    LLVMValueRef tid;     /* i64 */
    LLVMValueRef wid;     /* i64: warp within the block */
    LLVMValueRef nwarp;   /* i64: warps in the block */
    LLVMValueRef *shared; /* per leaf: [32 x memory type] */
    warp w;
} block;

static weft_status block_init(sk_fn *f, block *bk)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    bk->tid = cg_zext64(fn, tg->thread_index(fn, 0));
    bk->wid = LLVMBuildLShr(fn->b, bk->tid, cg_i64(fn, 5), "warp");
    bk->nwarp = LLVMBuildLShr(fn->b, cg_zext64(fn, tg->block_size(fn, 0)),
                              cg_i64(fn, 5), "nwarp");
    weft_status s = warp_init(f, &bk->w, bk->tid);
    if (s) {
        return s;
    }
    int n = bk->w.x.n;
    bk->shared =
        fe_arena_alloc(fn->arena, sizeof *bk->shared * (size_t)(n + 1));
    if (!bk->shared) {
        return fe_oom("weft_compile");
    }
    for (int l = 0; l < n; l++) {
        bk->shared[l] = tg->shared_array(
            fn, cg_mem_type(fn->llctx, bk->w.x.leaf[l]), MAX_WARPS);
    }
    return WEFT_OK;
}

/* The block folds the non-empty range [lo, hi) of the source (bounds the
 * same in every thread); thread 0 ends with the fold in bk->w.acc.  Every
 * thread of the block must run it (it has two barriers). */
static weft_status block_fold(sk_fn *f, block *bk, const source *sr,
                              LLVMValueRef lo, LLVMValueRef hi)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    warp *w = &bk->w;
    weft_status s;
    /* warp v takes [lo + v S, min(lo + (v + 1) S, hi)), S a whole number
     * of tiles (or of 32 lanes' runs), so that the non-empty sub-ranges
     * are a prefix */
    LLVMValueRef len = LLVMBuildSub(fn->b, hi, lo, "len");
    int64_t t = sr->lanes ? WARP : (int64_t)sr->k * WARP;
    LLVMValueRef tiles =
        LLVMBuildLShr(fn->b, LLVMBuildAdd(fn->b, len, cg_i64(fn, t - 1), ""),
                      cg_i64(fn, __builtin_ctzll((unsigned long long)t)), "");
    LLVMValueRef S = LLVMBuildMul(
        fn->b, cg_ceil_div_small(fn, tiles, bk->nwarp), cg_i64(fn, t), "span");
    LLVMValueRef wlo = cg_smin(
        fn, LLVMBuildAdd(fn->b, lo, LLVMBuildMul(fn->b, bk->wid, S, ""), ""),
        hi);
    LLVMValueRef whi = cg_smin(fn, LLVMBuildAdd(fn->b, wlo, S, ""), hi);
    LLVMBuildStore(fn->b, LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 0, 0),
                   w->have);
    s = sr->lanes ? part_tile(f, w, sr, wlo, whi)
                  : warp_fold(f, w, sr, wlo, whi);
    if (s) {
        return s;
    }
    /* lane 0 of every warp with a value: shared[warp] = acc */
    LLVMValueRef lane0 =
        LLVMBuildICmp(fn->b, LLVMIntEQ, w->lane, cg_i64(fn, 0), "");
    LLVMValueRef busy = LLVMBuildICmp(fn->b, LLVMIntSLT, wlo, whi, "");
    cg_if put;
    cg_if_begin(fn, &put, LLVMBuildAnd(fn->b, lane0, busy, ""));
    cg_val a;
    if ((s = cg_mut_get(fn, &w->acc, &a)) != WEFT_OK) {
        return s;
    }
    for (int l = 0; l < a.n; l++) {
        cg_store(fn, w->acc.leaf[l], bk->shared[l], bk->wid, a.v[l]);
    }
    cg_if_end(fn, &put);
    tg->barrier(fn);
    /* warp 0: the warp results in order (warp v had a value when
     * lo + v S < hi) */
    cg_if first;
    cg_if_begin(fn, &first,
                LLVMBuildICmp(fn->b, LLVMIntEQ, bk->wid, cg_i64(fn, 0), ""));
    mut_zero(fn, &w->x);
    cg_if get;
    cg_if_begin(
        fn, &get,
        LLVMBuildICmp(
            fn->b, LLVMIntSLT,
            LLVMBuildAdd(fn->b, lo, LLVMBuildMul(fn->b, w->lane, S, ""), ""),
            hi, ""));
    cg_val x;
    if ((s = cg_val_make(fn, w->x.n, &x)) != WEFT_OK) {
        return s;
    }
    for (int l = 0; l < x.n; l++) {
        x.v[l] = cg_load(fn, w->x.leaf[l], bk->shared[l], w->lane);
    }
    cg_mut_set(fn, &w->x, &x);
    cg_if_end(fn, &get);
    if ((s = warp_reduce(f, w, lo, S, hi)) != WEFT_OK) {
        return s;
    }
    cg_val total;
    if ((s = cg_mut_get(fn, &w->x, &total)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &w->acc, &total);
    cg_if_end(fn, &first);
    tg->barrier(fn);
    return WEFT_OK;
}

/* ---- the entries ------------------------------------------------------ */

/* out[r] = z `f` y, or y without a seed; z alone when the row is empty
 * (y not there: m = 0). */
static weft_status put_row(sk_fn *f, bool has_seed, LLVMValueRef r,
                           LLVMValueRef m, const cg_val *y)
{
    cg_fn *fn = &f->fn;
    if (!has_seed) {
        return sk_fold_put(f, r, y);
    }
    const cg_val *z = sk_kid_value(f, 0);
    cg_val zy, out;
    cg_if some;
    cg_if_begin(fn, &some,
                LLVMBuildICmp(fn->b, LLVMIntSGT, m, cg_i64(fn, 0), ""));
    weft_status s = combine(f, z, y, &zy);
    if (s) {
        return s;
    }
    cg_if_else(fn, &some);
    if ((s = cg_if_merge(fn, &some, &zy, z, &out)) != WEFT_OK) {
        return s;
    }
    return sk_fold_put(f, r, &out);
}

/* Entry 0 for computed elements (!streamed): teams of g lanes per row,
 * each lane a contiguous run of the row (warp_lanes), g chosen from the
 * grid the runtime launched (sized for a warp per row, at most as many
 * blocks as are resident): the largest power of two up to 32 with
 * rows g <= the grid's threads, so that many rows take a thread each
 * (whose loads of a column-indexed array are then the same address in
 * every lane) and few rows a warp each.  The teams of a warp take
 * consecutive rows; the warp loops while its first row is in range, so
 * that its lanes meet at every shuffle. */
static weft_status emit_teams(sk_fn *f, bool has_seed, const fe_term *src,
                              LLVMValueRef *ext, LLVMValueRef m)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    weft_status s;
    LLVMValueRef bs = cg_zext64(fn, tg->block_size(fn, 0));
    LLVMValueRef gtid = LLVMBuildAdd(
        fn->b,
        LLVMBuildMul(fn->b, cg_zext64(fn, tg->block_index(fn, 0)), bs, ""),
        cg_zext64(fn, tg->thread_index(fn, 0)), "");
    LLVMValueRef threads =
        LLVMBuildMul(fn->b, cg_zext64(fn, tg->grid_size(fn, 0)), bs, "");
    /* g = 2^lg: rows g <= threads (no division: a 64-bit one is a call
     * in the driver's relocatable compile, which costs registers); the
     * rows are [first, n) (first > 0 on a device of several) */
    LLVMValueRef nrows = LLVMBuildSub(fn->b, f->n, f->first, "");
    LLVMValueRef lg = cg_i64(fn, 0);
    for (int b = 1; b <= 5; b++) {
        lg = LLVMBuildSelect(
            fn->b,
            LLVMBuildICmp(fn->b, LLVMIntSGE,
                          LLVMBuildLShr(fn->b, threads, cg_i64(fn, b), ""),
                          nrows, ""),
            cg_i64(fn, b), lg, "");
    }
    warp w;
    if ((s = warp_init(f, &w, gtid)) != WEFT_OK) {
        return s;
    }
    w.g = LLVMBuildShl(fn->b, cg_i64(fn, 1), lg, "team");
    w.lg = lg;
    w.tl = LLVMBuildAnd(fn->b, w.lane,
                        LLVMBuildSub(fn->b, w.g, cg_i64(fn, 1), ""), "");
    LLVMValueRef per = LLVMBuildLShr(fn->b, cg_i64(fn, WARP), lg, "");
    /* warp v of block b is warp v grid + b: consecutive rows go to
     * different blocks, so that with fewer busy warps than launched ones
     * (teams of several rows) every SM still has its share */
    LLVMValueRef vw = LLVMBuildAdd(
        fn->b,
        LLVMBuildMul(fn->b,
                     LLVMBuildLShr(fn->b,
                                   cg_zext64(fn, tg->thread_index(fn, 0)),
                                   cg_i64(fn, 5), ""),
                     cg_zext64(fn, tg->grid_size(fn, 0)), ""),
        cg_zext64(fn, tg->block_index(fn, 0)), "");
    LLVMValueRef first =
        LLVMBuildAdd(fn->b, f->first, LLVMBuildMul(fn->b, vw, per, ""), "");
    LLVMValueRef step = LLVMBuildMul(
        fn->b, LLVMBuildLShr(fn->b, threads, cg_i64(fn, 5), ""), per, "");
    cg_stage *g;
    if ((s = stage_source(f, src, &g)) != WEFT_OK) {
        return s;
    }
    /* staged: the block runs while its first warp's first row (block b's
     * b per) is in range */
    LLVMValueRef lead =
        g ? LLVMBuildAdd(fn->b, f->first,
                         LLVMBuildMul(fn->b,
                                      cg_zext64(fn, tg->block_index(fn, 0)),
                                      per, ""),
                         "")
          : first;
    cg_sloop rows;
    LLVMValueRef r0 = cg_sloop_begin(fn, &rows, lead, f->n, step, "rows");
    if (g) {
        r0 = LLVMBuildAdd(fn->b, r0, LLVMBuildSub(fn->b, first, lead, ""), "");
    }
    LLVMValueRef r =
        LLVMBuildAdd(fn->b, r0, LLVMBuildLShr(fn->b, w.lane, lg, ""), "row");
    LLVMValueRef on = LLVMBuildICmp(fn->b, LLVMIntSLT, r, f->n, "");
    r = LLVMBuildSelect(fn->b, on, r,
                        g ? LLVMBuildSub(fn->b, f->n, cg_i64(fn, 1), "") : r0,
                        "");
    LLVMValueRef base = LLVMBuildMul(fn->b, r, m, "");
    source sr = {.src = src, .part = src ? NULL : sk_aux_array(f, 0)};
    if ((s = source_row(f, &sr, ext, r, base)) != WEFT_OK) {
        return s;
    }
    /* staged, a fold: lane 0 of each team starts from z (staged_lanes) */
    const cg_val *z = g && has_seed ? sk_kid_value(f, 0) : NULL;
    s = g ? staged_lanes(f, &w, &sr, g, base, m, z)
          : warp_lanes(f, &w, &sr, base,
                       LLVMBuildSelect(fn->b, on,
                                       LLVMBuildAdd(fn->b, base, m, ""), base,
                                       ""));
    if (s != WEFT_OK) {
        return s;
    }
    cg_if put;
    cg_if_begin(
        fn, &put,
        LLVMBuildAnd(fn->b, on,
                     LLVMBuildICmp(fn->b, LLVMIntEQ, w.tl, cg_i64(fn, 0), ""),
                     ""));
    cg_val y;
    if ((s = cg_mut_get(fn, &w.x, &y)) != WEFT_OK) {
        return s;
    }
    if (z) {
        s = sk_fold_put(f, r, &y);
    } else {
        s = put_row(f, has_seed, r, m, &y);
    }
    if (s != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &put);
    cg_sloop_end(fn, &rows);
    return WEFT_OK;
}

/* Entry 0: a warp per row of streamed elements (rows longer than
 * SHORT_ROW), else emit_teams. */
static weft_status emit_rows(sk_fn *f, bool has_seed)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *src = f->e->k->op->kid[has_seed ? 1 : 0];
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, src, ext);
    if (s) {
        return s;
    }
    LLVMValueRef m = ext[src->rank - 1];
    if (!streamed(src)) {
        return emit_teams(f, has_seed, src, ext, m);
    }
    /* rows of a few elements: a warp each would leave most lanes idle and
     * pay a reduction per row */
    cg_if few;
    cg_if_begin(fn, &few,
                LLVMBuildICmp(fn->b, LLVMIntSLE, m, cg_i64(fn, SHORT_ROW), ""));
    if ((s = emit_teams(f, has_seed, src, ext, m)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &few);
    LLVMValueRef bs = cg_zext64(fn, tg->block_size(fn, 0));
    LLVMValueRef gtid = LLVMBuildAdd(
        fn->b,
        LLVMBuildMul(fn->b, cg_zext64(fn, tg->block_index(fn, 0)), bs, ""),
        cg_zext64(fn, tg->thread_index(fn, 0)), "");
    LLVMValueRef first = LLVMBuildAdd(
        fn->b, f->first, LLVMBuildLShr(fn->b, gtid, cg_i64(fn, 5), ""), "");
    LLVMValueRef step = LLVMBuildLShr(
        fn->b, LLVMBuildMul(fn->b, cg_zext64(fn, tg->grid_size(fn, 0)), bs, ""),
        cg_i64(fn, 5), "");
    warp w;
    if ((s = warp_init(f, &w, gtid)) != WEFT_OK) {
        return s;
    }
    cg_sloop rows;
    LLVMValueRef r = cg_sloop_begin(fn, &rows, first, f->n, step, "row");
    LLVMValueRef base = LLVMBuildMul(fn->b, r, m, "");
    source sr = {.src = src};
    if ((s = source_row(f, &sr, ext, r, base)) != WEFT_OK) {
        return s;
    }
    if (has_seed) {
        cg_mut_set(fn, &w.acc, sk_kid_value(f, 0));
    } else {
        mut_zero(fn, &w.acc);
    }
    LLVMBuildStore(fn->b,
                   LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), has_seed, 0),
                   w.have);
    if ((s = warp_fold(f, &w, &sr, base, LLVMBuildAdd(fn->b, base, m, ""))) !=
        WEFT_OK) {
        return s;
    }
    cg_if lane0;
    cg_if_begin(fn, &lane0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, w.lane, cg_i64(fn, 0), ""));
    cg_val y;
    if ((s = cg_mut_get(fn, &w.acc, &y)) != WEFT_OK) {
        return s;
    }
    if ((s = sk_fold_put(f, r, &y)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &lane0);
    cg_sloop_end(fn, &rows);
    cg_if_end(fn, &few);
    return WEFT_OK;
}

/* out[0] = z `f` y, or y without a seed (thread 0). */
static weft_status put_result(sk_fn *f, bool has_seed, LLVMValueRef r,
                              const cg_val *y)
{
    cg_val out = *y;
    if (has_seed) {
        weft_status s = combine(f, sk_kid_value(f, 0), y, &out);
        if (s) {
            return s;
        }
    }
    return sk_fold_put(f, r, &out);
}

/* The end of entry 1 of a fold of one row (SK_FOLD_LAST_BLOCK), after
 * the block's piece: thread 0 takes a ticket (a fence first, so that its
 * partial is out before), and the block that drew the last one (the
 * grid's size less one) folds the P > 0 partials [p0, p0 + P) in order,
 * writes the result (on a device of several, `dev`: partial[dev], without
 * the seed) and puts the counter back to zero. */
static weft_status last_block(sk_fn *f, block *bk, bool has_seed,
                              const cg_array *part, LLVMValueRef ticket,
                              LLVMValueRef p0, LLVMValueRef P,
                              LLVMValueRef several, LLVMValueRef dev)
{
    cg_fn *fn = &f->fn;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    cg_if fin;
    LLVMValueRef t0 =
        sk_ptx_last_block(fn, bk->tid, ticket, true, 0xffff, &fin);
    source sr = {.part = part, .lanes = true, .k = 1};
    weft_status s = block_fold(f, bk, &sr, p0, LLVMBuildAdd(fn->b, p0, P, ""));
    if (s) {
        return s;
    }
    cg_if put, mine;
    cg_if_begin(fn, &put, t0);
    cg_val y;
    if ((s = cg_mut_get(fn, &bk->w.acc, &y)) != WEFT_OK) {
        return s;
    }
    cg_if_begin(fn, &mine, several);
    cg_array_store(fn, part, dev, &y);
    cg_if_else(fn, &mine);
    if ((s = put_result(f, has_seed, cg_i64(fn, 0), &y)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &mine);
    LLVMBuildStore(fn->b, LLVMConstInt(i32, 0, 0), ticket);
    cg_if_end(fn, &put);
    cg_if_end(fn, &fin);
    return WEFT_OK;
}

/* The block folds [lo, hi) (not empty) of sr into partial[c]. */
static weft_status fold_piece(sk_fn *f, block *bk, const source *sr,
                              LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef c)
{
    cg_fn *fn = &f->fn;
    weft_status s = block_fold(f, bk, sr, lo, hi);
    if (s) {
        return s;
    }
    cg_if t0;
    cg_if_begin(fn, &t0,
                LLVMBuildICmp(fn->b, LLVMIntEQ, bk->tid, cg_i64(fn, 0), ""));
    cg_val y;
    if ((s = cg_mut_get(fn, &bk->w.acc, &y)) != WEFT_OK) {
        return s;
    }
    cg_array_store(fn, sk_aux_array(f, 0), c, &y);
    cg_if_end(fn, &t0);
    return WEFT_OK;
}

/* Entry 1: a block per chunk c, into partial[c]. */
static weft_status emit_chunks(sk_fn *f, bool has_seed)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *src = f->e->k->op->kid[has_seed ? 1 : 0];
    LLVMValueRef C = sk_aux_value(f, 1)->v[0];
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, src, ext);
    block bk;
    if (s || (s = block_init(f, &bk)) != WEFT_OK) {
        return s;
    }
    cg_sloop items;
    LLVMValueRef c =
        cg_sloop_begin(fn, &items,
                       LLVMBuildAdd(fn->b, f->first,
                                    cg_zext64(fn, tg->block_index(fn, 0)), ""),
                       f->n, cg_zext64(fn, tg->grid_size(fn, 0)), "item");
    /* piece q of row c / C covers [q m / C, (q + 1) m / C) */
    LLVMValueRef m = ext[src->rank - 1];
    LLVMValueRef row = LLVMBuildSDiv(fn->b, c, C, "");
    LLVMValueRef q = LLVMBuildSRem(fn->b, c, C, "");
    LLVMValueRef base = LLVMBuildMul(fn->b, row, m, "");
    LLVMValueRef q1 = LLVMBuildAdd(fn->b, q, cg_i64(fn, 1), "");
    LLVMValueRef lo = LLVMBuildAdd(
        fn->b, base, LLVMBuildSDiv(fn->b, LLVMBuildMul(fn->b, q, m, ""), C, ""),
        "");
    LLVMValueRef hi = LLVMBuildAdd(
        fn->b, base,
        LLVMBuildSDiv(fn->b, LLVMBuildMul(fn->b, q1, m, ""), C, ""), "");
    source sr = {.src = src};
    if ((s = source_row(f, &sr, ext, row, base)) != WEFT_OK ||
        (s = fold_piece(f, &bk, &sr, lo, hi, c)) != WEFT_OK) {
        return s;
    }
    cg_sloop_end(fn, &items);
    return WEFT_OK;
}

/* Entry 1 of a fold of one row (SK_FOLD_LAST_BLOCK): the blocks take
 * the P pieces in turn into their partials, then the last block folds the
 * P partials (see the head comment).  The pieces start at whole tiles, so
 * the vector reads need no head.
 *
 * On a device of several (grain g >= 2; runtime-gpu/multi.c, "Kernels"):
 * the part of device d = g - 2, elements [first, n) of the row (first a
 * multiple of SK_SPREAD_ALIGN, so of every tile), its pieces into
 * partial[SK_DEVICES_MAX + d C + b], taken in a fixed order (block b the
 * pieces b, b + grid, ...: the partials and tickets are small arrays on
 * device 0, where an atomic per piece would cross NVLink), P of L
 * elements each as the driver cut them (`skip`: P << SK_PIECES_SHIFT |
 * L, runtime-gpu/backend.c fold_pieces: a piece a block), its ticket
 * word aux 2 [d] for the last block only, and its
 * last block writes the part's fold to partial[d], which entry 2 on one
 * device then folds (emit_seed). */
static weft_status emit_one_row(sk_fn *f, bool has_seed)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *src = f->e->k->op->kid[has_seed ? 1 : 0];
    const cg_array *part = sk_aux_array(f, 0);
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, src, ext);
    block bk;
    if (s || (s = block_init(f, &bk)) != WEFT_OK) {
        return s;
    }
    source sr = {.src = src, .tiled = true};
    if ((s = source_row(f, &sr, ext, cg_i64(fn, 0), cg_i64(fn, 0))) !=
        WEFT_OK) {
        return s;
    }
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef C = sk_aux_value(f, 1)->v[0];
    LLVMValueRef several =
        LLVMBuildICmp(fn->b, LLVMIntSGE, f->grain, cg_i64(fn, 2), "several");
    LLVMValueRef dev = LLVMBuildSelect(
        fn->b, several, LLVMBuildSub(fn->b, f->grain, cg_i64(fn, 2), ""),
        cg_i64(fn, 0), "dev");
    /* the part [at, end) of the row, its partials from p0, its ticket */
    LLVMValueRef at =
        LLVMBuildSelect(fn->b, several, f->first, cg_i64(fn, 0), "");
    LLVMValueRef end = LLVMBuildSelect(fn->b, several, f->n, ext[0], "");
    LLVMValueRef m = LLVMBuildSub(fn->b, end, at, "");
    LLVMValueRef p0 =
        LLVMBuildSelect(fn->b, several,
                        LLVMBuildAdd(fn->b, cg_i64(fn, SK_DEVICES_MAX),
                                     LLVMBuildMul(fn->b, dev, C, ""), ""),
                        cg_i64(fn, 0), "");
    LLVMValueRef ticket = LLVMBuildInBoundsGEP2(
        fn->b, i32, sk_aux_array(f, 2)->ptr[0], &dev, 1, "ticket");
    int64_t t = (int64_t)sr.k * WARP;
    LLVMValueRef most = cg_smin(
        fn,
        cg_smin(fn, C,
                LLVMBuildMul(fn->b, cg_zext64(fn, tg->grid_size(fn, 0)),
                             cg_i64(fn, PIECES_PER_BLOCK), "")),
        cg_smin(fn, LLVMBuildLShr(fn->b, m, cg_i64(fn, __builtin_ctzll(t)), ""),
                cg_i64(fn, MAX_PIECES)));
    LLVMValueRef lgp = log2_floor(fn, cg_smax(fn, most, cg_i64(fn, 1)));
    /* on a device of several, the pieces are the driver's: `skip` is
     * their count P << SK_PIECES_SHIFT | their length L (0: the power of
     * two above, as one device's) */
    LLVMValueRef skip = LLVMGetParam(fn->fn, 4);
    LLVMValueRef given = LLVMBuildAnd(
        fn->b, several,
        LLVMBuildICmp(fn->b, LLVMIntNE, skip, cg_i64(fn, 0), ""), "given");
    LLVMValueRef L = LLVMBuildAnd(
        fn->b, skip, cg_i64(fn, ((int64_t)1 << SK_PIECES_SHIFT) - 1), "");
    LLVMValueRef P = LLVMBuildSelect(
        fn->b, given,
        LLVMBuildLShr(fn->b, skip, cg_i64(fn, SK_PIECES_SHIFT), ""),
        LLVMBuildShl(fn->b, cg_i64(fn, 1), lgp, ""), "pieces");
    /* thread 0 takes the next piece (the high half of the ticket word;
     * on a device of several, block, block + grid, ...: the ticket word
     * may be another device's memory, an atomic over NVLink per piece)
     * and tells the block */
    LLVMValueRef slot = tg->shared_array(fn, i32, 1);
    LLVMValueRef next = cg_alloca(fn, i32, "next");
    LLVMBuildStore(fn->b, tg->block_index(fn, 0), next);
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "take");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "piece");
    LLVMBasicBlockRef exit =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "pieces.end");
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    cg_if take;
    cg_if_begin(fn, &take,
                LLVMBuildICmp(fn->b, LLVMIntEQ, bk.tid, cg_i64(fn, 0), ""));
    cg_if fixed;
    cg_if_begin(fn, &fixed, several);
    LLVMValueRef mine = LLVMBuildLoad2(fn->b, i32, next, "");
    LLVMBuildStore(fn->b, mine, slot);
    LLVMBuildStore(fn->b, LLVMBuildAdd(fn->b, mine, tg->grid_size(fn, 0), ""),
                   next);
    cg_if_else(fn, &fixed);
    LLVMValueRef old = tg->atomic_rmw(fn, LLVMAtomicRMWBinOpAdd, ticket,
                                      LLVMConstInt(i32, 1u << 16, 0));
    LLVMBuildStore(
        fn->b, LLVMBuildLShr(fn->b, old, LLVMConstInt(i32, 16, 0), ""), slot);
    cg_if_end(fn, &fixed);
    cg_if_end(fn, &take);
    tg->barrier(fn);
    LLVMValueRef b = cg_zext64(fn, LLVMBuildLoad2(fn->b, i32, slot, "piece"));
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, b, P, ""), body,
                    exit);
    LLVMPositionBuilderAtEnd(fn->b, body);
    /* piece b: at + [p(b), p(b + 1)), p(b) = b m / P (a shift) to a whole
     * tile; the driver's b L where given, the last one to the end */
    LLVMValueRef b1 = LLVMBuildAdd(fn->b, b, cg_i64(fn, 1), "");
    LLVMValueRef lo = LLVMBuildAdd(
        fn->b, at,
        LLVMBuildSelect(
            fn->b, given, LLVMBuildMul(fn->b, b, L, ""),
            LLVMBuildAnd(
                fn->b,
                LLVMBuildLShr(fn->b, LLVMBuildMul(fn->b, b, m, ""), lgp, ""),
                cg_i64(fn, -t), ""),
            ""),
        "");
    LLVMValueRef hi = LLVMBuildSelect(
        fn->b, LLVMBuildICmp(fn->b, LLVMIntEQ, b1, P, ""), end,
        LLVMBuildAdd(fn->b, at,
                     LLVMBuildSelect(
                         fn->b, given, LLVMBuildMul(fn->b, b1, L, ""),
                         LLVMBuildAnd(fn->b,
                                      LLVMBuildLShr(
                                          fn->b, LLVMBuildMul(fn->b, b1, m, ""),
                                          lgp, ""),
                                      cg_i64(fn, -t), ""),
                         ""),
                     ""),
        "");
    if ((s = fold_piece(f, &bk, &sr, lo, hi, LLVMBuildAdd(fn->b, p0, b, ""))) !=
        WEFT_OK) {
        return s;
    }
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, exit);
    return last_block(f, &bk, has_seed, part, ticket, p0, P, several, dev);
}

/* Entry 2 of a fold of one row that its last block finishes
 * (SK_FOLD_LAST_BLOCK): the driver runs it for an empty row (C = 0),
 * whose fold is z (a fold1 of it is an error the driver reports), and,
 * with grain D >= 2, after the parts of D devices (emit_one_row): thread
 * 0 folds partial[0, D) in order, z `f` that (or that). */
static weft_status emit_seed(sk_fn *f, bool has_seed)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMValueRef first =
        LLVMBuildICmp(fn->b, LLVMIntEQ,
                      LLVMBuildOr(fn->b, cg_zext64(fn, tg->block_index(fn, 0)),
                                  cg_zext64(fn, tg->thread_index(fn, 0)), ""),
                      cg_i64(fn, 0), "");
    cg_if t0, parts;
    cg_if_begin(fn, &t0, first);
    cg_if_begin(
        fn, &parts,
        LLVMBuildICmp(fn->b, LLVMIntSGE, f->grain, cg_i64(fn, 2), "parts"));
    const cg_array *part = sk_aux_array(f, 0);
    cg_mut acc;
    cg_val x, y;
    weft_status s = cg_mut_new(fn, fe_fold_type(f->e->k->op), &acc);
    if (s || (s = cg_array_load(fn, part, cg_i64(fn, 0), &x)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &acc, &x);
    cg_loop l;
    LLVMValueRef i;
    cg_loop_begin(fn, &l, cg_i64(fn, 1), f->grain, &i);
    if ((s = cg_array_load(fn, part, i, &x)) != WEFT_OK ||
        (s = combine_into(f, &acc, &x)) != WEFT_OK) {
        return s;
    }
    cg_loop_end(fn, &l);
    if ((s = cg_mut_get(fn, &acc, &y)) != WEFT_OK ||
        (s = put_result(f, has_seed, cg_i64(fn, 0), &y)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &parts);
    if (has_seed) {
        if ((s = sk_fold_put(f, cg_i64(fn, 0), sk_kid_value(f, 0))) !=
            WEFT_OK) {
            return s;
        }
    }
    cg_if_end(fn, &parts);
    cg_if_end(fn, &t0);
    return WEFT_OK;
}

static weft_status emit_pieces(sk_fn *f, bool has_seed)
{
    if (f->e->k->flags & SK_FOLD_LAST_BLOCK) {
        return emit_one_row(f, has_seed);
    }
    return emit_chunks(f, has_seed);
}

/* Entry 2: the rows of C partials by teams (emit_teams), z `f` them, z
 * alone when C = 0. */
static weft_status emit_combine(sk_fn *f, bool has_seed)
{
    if (f->e->k->flags & SK_FOLD_LAST_BLOCK) {
        return emit_seed(f, has_seed);
    }
    return emit_teams(f, has_seed, NULL, NULL, sk_aux_value(f, 1)->v[0]);
}

static weft_status ptx_fold_emit(sk_emit *e, const char *const *names)
{
    bool has_seed = e->k->op->kind == FE_FOLD;
    weft_status (*const emit[3])(sk_fn *, bool) = {emit_rows, emit_pieces,
                                                   emit_combine};
    for (int i = 0; i < 3; i++) {
        bool empty = i == 0 && (e->k->flags & SK_FOLD_CHUNKS_ONLY);
        weft_status s =
            sk_fold_entry(e, names[i], true, empty, emit[i], has_seed);
        if (s) {
            return s;
        }
    }
    return WEFT_OK;
}

const sk_skeleton sk_ptx_fold = {
    .name = "ptx-fold",
    .family = SK_FOLD,
    .supported = sk_fold_supported,
    .prepare = ptx_fold_prepare,
    .emit = ptx_fold_emit,
    .fuses_input = true,
};
