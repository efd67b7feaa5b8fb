/*
 * skeletons-ir/ptx/stencil.c: stencil and stencil2 of ranks 2 and 3 on
 * the GPU, in tiles whose halo is loaded once into shared memory (the
 * PTX target's own SK_STENCIL skeleton).
 *
 * The semantics are stencil.c's: the result has the extent of its array
 * (stencil2: the intersection of both), its element at ix is f of the
 * windows around ix in row-major order (stencil2: the first array's
 * window, then the second's), and a window element outside its array
 * reads what the boundary says (clamp, mirror, wrap, constant).
 *
 * The shared skeleton gives a GPU thread a run of columns of one row and
 * reads every element once per window that holds it.  Here each plane of
 * the result (rank 2: the one plane) is cut into tiles of TW x TH
 * elements (constants of the kernel, chosen by tile_pick below), and a
 * block takes a tile at a time (grid-stride over the tiles: the grid is
 * what stays resident):
 *
 *     tile t: plane z, rows [y0, y0 + TH), columns [x0, x0 + TW), t in
 *             row-major order of (z, tile row, tile column)
 *     load:   for each array i, the wz_i planes of (TH + 2 hy_i) x (TW +
 *             2 hx_i) elements around the tile (wz 1 for rank 2) into
 *             shared memory (one array per leaf), row by row, so that a
 *             warp reads consecutive addresses
 *     barrier
 *     apply:  each result element of the tile inside the result: f of
 *             the windows read from shared memory (at constant offsets
 *             from the element's place), stored
 *     barrier (the next tile overwrites the shared arrays)
 *
 * A tile whose halo lies inside every array (interior: every tile but a
 * band of the outermost ones) loads with no boundary test at all, and
 * its loads are unrolled into straight-line code: the TW middle columns
 * of BLOCK / TW rows a round, a thread's positions a constant apart from
 * round to round, then the 2 hx halo columns; a thread's loads are all
 * issued before its shared stores, so that it keeps several in flight
 * (with one load at a time 2048 threads an SM keep too few bytes moving
 * to cover the memory's latency).  Other tiles load through the boundary
 * (bound below: no division, the index reflected or wrapped in a loop
 * that runs at most a few times when an array is narrower than its halo)
 * in a plain loop.  Likewise a tile inside the result is applied with no
 * test, a thread's elements a constant number of rows apart, and the
 * tiles that the result's last rows and columns cut test each element.
 *
 * Threads.  The unrolled interior load and apply are written for blocks
 * of BLOCK (256) threads; the block size comes from the occupancy API
 * (at most BLOCK, .maxntid), which may choose fewer, and then the block's
 * threads play the BLOCK in turn (virtual_begin); the plain loops give
 * element e of the tile to thread e % bs.  The barriers stand at the top
 * level of the tile loop, which every thread of the block runs with the
 * same bounds.  With TW 64 a warp takes 32
 * consecutive columns of a row: its shared-memory reads are consecutive
 * words (no bank conflict), and its global stores 128 bytes of f32.
 *
 * Tiles.  TW x TH starts at 64 x 32 and halves (TH down to 8, then TW
 * down to 32) until the shared arrays of both sides fit in SHARED_MAX
 * bytes.  Where even 32 x 8 does not fit (wide tuples in 9 x 9 windows,
 * most 7 x 7 x 7 ones), for windows of more than SK_STENCIL_COMPACT
 * elements (whose unrolled form takes LLVM seconds) and for rank 1, the
 * shared skeleton (stencil.c) runs instead, its rows cut into pieces of
 * a few columns (SK_STENCIL_FINE).  The tile's shape is part of the
 * compiled code and the driver needs it (runtime/exec_stencil.c counts
 * the tiles), so it is in sk_kernel.flags (SK_STENCIL_TILED, and so in
 * the kernel's key).
 *
 * Checked mode names the result's linear element (cg_set_elem) before f;
 * a while loop in f polls the cancel word as everywhere (codegen/exp.c),
 * and a thread that leaves its loop on cancellation goes on to the
 * barriers with the others.
 */
#include "../sk.h"

enum {
    BLOCK = 256, /* the threads the phases are written for */
    TILE_W = 64, /* the widest tile */
    TILE_H = 32, /* the tallest tile */
    MIN_W = 32,  /* a warp's columns */
    MIN_H = 8,
    /* shared bytes of one block's tiles (both sides): 24 KiB lets 8 blocks
     * of 256 threads (every thread an SM holds) stay resident in the 228
     * KiB of an H100's SM */
    SHARED_MAX = 24576,
    TILED_VERSION = 1 /* of this file's code (sk_kernel.flags, the key) */
};

/* The tile of stencil t (rank 2): *tw x *th, or false when none fits
 * (then the shared skeleton runs).  ctx: for the element types' leaves. */
static bool tile_pick(const weft_context *ctx, const fe_term *t, int *tw,
                      int *th)
{
    int nside = t->kind == FE_STENCIL2 ? 2 : 1;
    int r = t->rank;
    if (r != 2 && r != 3) {
        return false;
    }
    int64_t esize[2] = {0, 0}, k = 0;
    for (int i = 0; i < nside; i++) {
        int64_t ki = 1;
        for (int d = 0; d < r; d++) {
            ki *= t->u.st.window[i][d];
        }
        k += ki;
        const weft_type *leaf = NULL;
        int n = fe_type_leaves(ctx, t->kid[2 * i]->type, &leaf);
        for (int l = 0; l < n; l++) {
            esize[i] += (int64_t)weft_type_size(leaf[l]);
        }
    }
    if (k > SK_STENCIL_COMPACT) {
        return false; /* stencil.c's compact form */
    }
    for (*tw = TILE_W, *th = TILE_H;;) {
        int64_t bytes = 0;
        for (int i = 0; i < nside; i++) {
            int64_t wz = r == 3 ? t->u.st.window[i][0] : 1;
            int64_t lh = *th + 2 * (t->u.st.window[i][r - 2] / 2);
            int64_t lw = *tw + 2 * (t->u.st.window[i][r - 1] / 2);
            bytes += wz * lh * lw * esize[i];
        }
        if (bytes <= SHARED_MAX) {
            return true;
        }
        if (*th > MIN_H) {
            *th /= 2;
        } else if (*tw > MIN_W) {
            *tw /= 2;
        } else {
            return false;
        }
    }
}

static int log2i(int x)
{
    int k = 0;
    while ((1 << k) < x) {
        k++;
    }
    return k;
}

/* sk_kernel.flags of a tiled kernel: SK_STENCIL_TILED, log2 TW in bits
 * 4..7, log2 TH in bits 8..11, the version in bits 28.. */
static unsigned tile_flags(int tw, int th)
{
    return SK_STENCIL_TILED | (unsigned)log2i(tw) << 4 |
           (unsigned)log2i(th) << 8 | (unsigned)TILED_VERSION << 28;
}

int sk_stencil_tile_w(unsigned flags)
{
    return 1 << (flags >> 4 & 0xf);
}

int sk_stencil_tile_h(unsigned flags)
{
    return 1 << (flags >> 8 & 0xf);
}

/* Where a tile lies: its plane z of the result (rank 3; 0 for rank 2),
 * its first row y0 and column x0 in the plane, orow = z Y, the result's
 * rows before its plane, and the result's rows Y and columns X a plane
 * (all i64). */
typedef struct tpos {
    LLVMValueRef z, y0, x0, orow, Y, X;
} tpos;

/* One array of the stencil as a tile sees it. */
typedef struct tside {
    const cg_array *a;
    int rank;
    int wz, wy, wx, hz, hy, hx; /* window extents and radii (rank 2: wz 1) */
    int lh, lw;                 /* a plane of the tile with its halo; the
                                 tile has wz planes */
    LLVMValueRef ez, ey, ex;    /* the array's extents (rank 2: ez NULL) */
    weft_boundary_kind bnd;
    const cg_val *cval; /* constant boundary value, or NULL */
    LLVMValueRef *sh;   /* a shared array per leaf (lh lw elements) */
} tside;

static LLVMValueRef i32c(cg_fn *fn, int64_t x)
{
    return LLVMConstInt(LLVMInt32TypeInContext(fn->llctx),
                        (unsigned long long)x, 1);
}

/* The loop over the BLOCK threads that the unrolled code is written
 * for, played by the bs of the block: v = tid, tid + bs, ... < BLOCK
 * (once when bs is BLOCK; the occupancy API may choose fewer threads
 * where they make more warps resident, e.g. 96 for a kernel of 40
 * registers).  v (i32) goes through sk_ptx_opaque, so that the positions
 * of an interior tile's unrolled loads and of a full tile's elements are
 * computed per tile instead of being hoisted out of the tile loop (two
 * 64-bit registers per load, kept across the loop: Jacobi's kernel took
 * 60 registers instead of 32).  Close with cg_sloop_end. */
static LLVMValueRef virtual_begin(cg_fn *fn, cg_sloop *l, LLVMValueRef tid,
                                  LLVMValueRef bs)
{
    LLVMValueRef v = cg_sloop_begin(fn, l, cg_zext64(fn, tid),
                                    cg_i64(fn, BLOCK), cg_zext64(fn, bs), "v");
    return LLVMBuildTrunc(fn->b, sk_ptx_opaque(fn, v),
                          LLVMInt32TypeInContext(fn->llctx), "");
}

static LLVMValueRef select_lt(cg_fn *fn, LLVMValueRef x, LLVMValueRef y,
                              bool min)
{
    LLVMValueRef lt = LLVMBuildICmp(fn->b, LLVMIntSLT, x, y, "");
    return min ? LLVMBuildSelect(fn->b, lt, x, y, "")
               : LLVMBuildSelect(fn->b, lt, y, x, "");
}

/* x (i64, from the phi of a loop head) stepped by step(x) while more(x):
 * the loop of bound() (body builds the next x where fn->b is). */
typedef LLVMValueRef (*step_fn)(cg_fn *fn, LLVMValueRef x, LLVMValueRef n);
typedef LLVMValueRef (*test_fn)(cg_fn *fn, LLVMValueRef x, LLVMValueRef n);

static LLVMValueRef repeat(cg_fn *fn, LLVMValueRef x0, LLVMValueRef n,
                           test_fn more, step_fn step)
{
    LLVMBuilderRef B = fn->b;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "bound");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "bound.step");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "bound.done");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef x = LLVMBuildPhi(B, LLVMTypeOf(x0), "x");
    LLVMAddIncoming(x, &x0, &pre, 1);
    LLVMBuildCondBr(B, more(fn, x, n), body, done);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMValueRef next = step(fn, x, n);
    LLVMBasicBlockRef end = LLVMGetInsertBlock(B);
    LLVMAddIncoming(x, &next, &end, 1);
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, done);
    return x;
}

static LLVMValueRef outside(cg_fn *fn, LLVMValueRef x, LLVMValueRef n)
{
    return LLVMBuildICmp(fn->b, LLVMIntUGE, x, n, ""); /* x < 0 or x >= n */
}

/* wrap: x + n below 0, x - n from n on */
static LLVMValueRef wrap_step(cg_fn *fn, LLVMValueRef x, LLVMValueRef n)
{
    LLVMValueRef neg = LLVMBuildICmp(fn->b, LLVMIntSLT, x, cg_i64(fn, 0), "");
    return LLVMBuildSelect(fn->b, neg, LLVMBuildAdd(fn->b, x, n, ""),
                           LLVMBuildSub(fn->b, x, n, ""), "");
}

/* mirror without repeating the edge: -x below 0, 2n - 2 - x from n on */
static LLVMValueRef mirror_step(cg_fn *fn, LLVMValueRef x, LLVMValueRef n)
{
    LLVMBuilderRef B = fn->b;
    LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, x, cg_i64(fn, 0), "");
    LLVMValueRef hi =
        LLVMBuildSub(B,
                     LLVMBuildSub(B, LLVMBuildShl(B, n, cg_i64(fn, 1), ""),
                                  cg_i64(fn, 2), ""),
                     x, "");
    return LLVMBuildSelect(B, neg, LLVMBuildNeg(B, x, ""), hi, "");
}

/* Where index i of an extent-n dimension (n >= 1) reads under boundary
 * b (always inside [0, n)), and in *inside (constant boundary) whether i
 * is.  Equal to stencil.c's bound(), without its divisions (a 64-bit
 * division is a slow call on the GPU): wrap and mirror step the index
 * back by a period or a reflection while it is outside, which a halo of
 * at most 4 needs a few times at most (mirror of an extent 1 reads 0). */
static LLVMValueRef bound(cg_fn *fn, weft_boundary_kind b, LLVMValueRef i,
                          LLVMValueRef n, LLVMValueRef *inside)
{
    LLVMBuilderRef B = fn->b;
    switch (b) {
    case WEFT_BOUNDARY_WRAP: return repeat(fn, i, n, outside, wrap_step);
    case WEFT_BOUNDARY_MIRROR: {
        LLVMValueRef one = LLVMBuildICmp(B, LLVMIntEQ, n, cg_i64(fn, 1), "");
        LLVMValueRef x = LLVMBuildSelect(B, one, cg_i64(fn, 0), i, "");
        return repeat(fn, x, n, outside, mirror_step);
    }
    case WEFT_BOUNDARY_CONSTANT:
    case WEFT_BOUNDARY_CLAMP:
    default:
        /* constant: read at the clamped position, the caller selects */
        if (b == WEFT_BOUNDARY_CONSTANT) {
            *inside = LLVMBuildICmp(B, LLVMIntULT, i, n, "");
        }
        return select_lt(
            fn, cg_i64(fn, 0),
            select_lt(fn, i, LLVMBuildSub(B, n, cg_i64(fn, 1), ""), true),
            false);
    }
}

static weft_status side_init(sk_fn *f, tside *sd, int which, int tw, int th)
{
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    int kid = 2 * which;
    sd->a = sk_kid_array(f, kid);
    if (!sd->a) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: a stencil without its array");
    }
    int r = sd->rank = t->rank;
    sd->wz = r == 3 ? t->u.st.window[which][0] : 1;
    sd->wy = t->u.st.window[which][r - 2];
    sd->wx = t->u.st.window[which][r - 1];
    sd->ez = r == 3 ? sd->a->extent[0] : NULL;
    sd->ey = sd->a->extent[r - 2];
    sd->ex = sd->a->extent[r - 1];
    sd->hz = sd->wz / 2;
    sd->hy = sd->wy / 2;
    sd->hx = sd->wx / 2;
    sd->lh = th + 2 * sd->hy;
    sd->lw = tw + 2 * sd->hx;
    sd->bnd = t->u.st.bnd[which];
    weft_status s = sk_stencil_boundary_value(f, which, &sd->cval);
    if (s) {
        return s;
    }
    sd->sh = fe_arena_alloc(f->e->arena, sizeof *sd->sh * (size_t)sd->a->nleaf);
    if (!sd->sh) {
        return fe_oom("weft_compile");
    }
    for (int l = 0; l < sd->a->nleaf; l++) {
        sd->sh[l] =
            fn->target->shared_array(fn, cg_mem_type(fn->llctx, sd->a->leaf[l]),
                                     (int64_t)sd->wz * sd->lh * sd->lw);
    }
    return WEFT_OK;
}

/* Store x at e (i32) of the side's shared arrays. */
static void shared_put(cg_fn *fn, const tside *sd, LLVMValueRef e,
                       const cg_val *x)
{
    for (int l = 0; l < sd->a->nleaf; l++) {
        cg_store(fn, sd->a->leaf[l], sd->sh[l], cg_zext64(fn, e), x->v[l]);
    }
}

/* One load of an interior tile: global position at, shared index e,
 * stored only where ok (NULL: always). */
typedef struct tload {
    LLVMValueRef at, e, ok;
    cg_val x;
} tload;

/* Load plane pz of an interior tile of side sd (its halo inside the
 * array) in a block of BLOCK threads, thread tid (i32), from the array's
 * element base (the plane's first, halo included) into the shared arrays
 * from element soff.  The tile's tw middle columns
 * go BLOCK / tw rows a round: thread tid takes row tid / tw + k BLOCK / tw
 * of round k, column tid % tw, so that its positions differ by constants
 * from round to round (one add each); then the 2 hx halo columns of every
 * row, element e = tid + k BLOCK of them row e / (2 hx).  Every load is
 * issued first (unrolled), then the shared stores; the last rounds'
 * threads past the tile load an element inside it and store nothing. */
static weft_status load_plane(sk_fn *f, const tside *sd, LLVMValueRef tid,
                              LLVMValueRef base, int soff, int tw)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    LLVMValueRef m = sd->ex;
    int rp = BLOCK / tw;                   /* middle rows a round */
    int km = (sd->lh + rp - 1) / rp;       /* middle rounds */
    int hc = 2 * sd->hx, nh = sd->lh * hc; /* halo columns, elements */
    int kh = (nh + BLOCK - 1) / BLOCK;     /* halo rounds */
    tload *ld = fe_arena_alloc(f->e->arena, sizeof *ld * (size_t)(km + kh));
    if (!ld) {
        return fe_oom("weft_compile");
    }
    LLVMValueRef r0 = LLVMBuildUDiv(B, tid, i32c(fn, tw), "");
    LLVMValueRef c0 = LLVMBuildAdd(B, LLVMBuildURem(B, tid, i32c(fn, tw), ""),
                                   i32c(fn, sd->hx), "");
    LLVMValueRef mid =
        LLVMBuildAdd(B, base,
                     LLVMBuildAdd(B, LLVMBuildMul(B, cg_zext64(fn, r0), m, ""),
                                  cg_zext64(fn, c0), ""),
                     "mid");
    LLVMValueRef step = LLVMBuildMul(B, m, cg_i64(fn, rp), "");
    int n = 0;
    for (int k = 0; k < km; k++, n++) {
        LLVMValueRef r = LLVMBuildAdd(B, r0, i32c(fn, (int64_t)k * rp), "");
        ld[n].ok = NULL;
        LLVMValueRef at =
            LLVMBuildAdd(B, mid, LLVMBuildMul(B, step, cg_i64(fn, k), ""), "");
        if ((k + 1) * rp > sd->lh) {
            /* rows past the tile read its last row */
            LLVMValueRef in =
                LLVMBuildICmp(B, LLVMIntULT, r, i32c(fn, sd->lh), "");
            ld[n].ok = in;
            LLVMValueRef last = LLVMBuildAdd(
                B, base,
                LLVMBuildAdd(B, LLVMBuildMul(B, cg_i64(fn, sd->lh - 1), m, ""),
                             cg_zext64(fn, c0), ""),
                "");
            at = LLVMBuildSelect(B, in, at, last, "");
        }
        ld[n].at = at;
        ld[n].e = LLVMBuildAdd(B, LLVMBuildMul(B, r, i32c(fn, sd->lw), ""),
                               LLVMBuildAdd(B, c0, i32c(fn, soff), ""), "");
    }
    for (int k = 0; k < kh; k++, n++) {
        LLVMValueRef e = LLVMBuildAdd(B, tid, i32c(fn, (int64_t)k * BLOCK), "");
        ld[n].ok = NULL;
        if ((k + 1) * BLOCK > nh) {
            ld[n].ok = LLVMBuildICmp(B, LLVMIntULT, e, i32c(fn, nh), "");
            e = select_lt(fn, e, i32c(fn, nh - 1), true);
        }
        LLVMValueRef r = LLVMBuildUDiv(B, e, i32c(fn, hc), "");
        LLVMValueRef j = LLVMBuildURem(B, e, i32c(fn, hc), "");
        /* halo column j: j left of the tile, tw + j right of it */
        LLVMValueRef c = LLVMBuildSelect(
            B, LLVMBuildICmp(B, LLVMIntULT, j, i32c(fn, sd->hx), ""), j,
            LLVMBuildAdd(B, j, i32c(fn, tw), ""), "");
        ld[n].at = LLVMBuildAdd(
            B, base,
            LLVMBuildAdd(B, LLVMBuildMul(B, cg_zext64(fn, r), m, ""),
                         cg_zext64(fn, c), ""),
            "");
        ld[n].e = LLVMBuildAdd(B, LLVMBuildMul(B, r, i32c(fn, sd->lw), ""),
                               LLVMBuildAdd(B, c, i32c(fn, soff), ""), "");
    }
    for (int i = 0; i < n; i++) {
        weft_status s = cg_array_load(fn, sd->a, ld[i].at, &ld[i].x);
        if (s) {
            return s;
        }
    }
    for (int i = 0; i < n; i++) {
        cg_if in;
        if (ld[i].ok) {
            cg_if_begin(fn, &in, ld[i].ok);
        }
        shared_put(fn, sd, ld[i].e, &ld[i].x);
        if (ld[i].ok) {
            cg_if_end(fn, &in);
        }
    }
    return WEFT_OK;
}

/* The array's row of the tile's halo row 0 in plane pz (rank 3: of plane
 * z - hz + pz of the array, as a row of all its planes' rows; rank 2: y0
 * - hy). */
static LLVMValueRef halo_row(cg_fn *fn, const tside *sd, LLVMValueRef z,
                             LLVMValueRef y0, int pz)
{
    LLVMBuilderRef B = fn->b;
    LLVMValueRef row = LLVMBuildSub(B, y0, cg_i64(fn, sd->hy), "");
    if (sd->rank == 3) {
        LLVMValueRef gz = LLVMBuildAdd(B, z, cg_i64(fn, pz - sd->hz), "");
        row = LLVMBuildAdd(B, LLVMBuildMul(B, gz, sd->ey, ""), row, "");
    }
    return row;
}

/* Load an interior tile of side sd (load_plane for each of its wz
 * planes). */
static weft_status load_interior(sk_fn *f, const tside *sd, LLVMValueRef tid,
                                 const tpos *tp, int tw)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    for (int pz = 0; pz < sd->wz; pz++) {
        LLVMValueRef base = LLVMBuildAdd(
            B, LLVMBuildMul(B, halo_row(fn, sd, tp->z, tp->y0, pz), sd->ex, ""),
            LLVMBuildSub(B, tp->x0, cg_i64(fn, sd->hx), ""), "base");
        weft_status s = load_plane(f, sd, tid, base, pz * sd->lh * sd->lw, tw);
        if (s) {
            return s;
        }
    }
    return WEFT_OK;
}

/* Load a tile of side sd whose halo may leave the array (or any tile in
 * a block of other than BLOCK threads), through the boundary: elements
 * tid, tid + bs, ... < lh lw in a loop. */
static weft_status load_border(sk_fn *f, const tside *sd, LLVMValueRef tid,
                               LLVMValueRef bs, const tpos *tp)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    LLVMValueRef z = tp->z, y0 = tp->y0, x0 = tp->x0;
    int plane = sd->lh * sd->lw;
    cg_sloop l;
    LLVMValueRef e64 = cg_sloop_begin(fn, &l, cg_zext64(fn, tid),
                                      cg_i64(fn, (int64_t)sd->wz * plane),
                                      cg_zext64(fn, bs), "e");
    LLVMValueRef e =
        LLVMBuildTrunc(B, e64, LLVMInt32TypeInContext(fn->llctx), "");
    LLVMValueRef lw = i32c(fn, sd->lw);
    LLVMValueRef in_plane = LLVMBuildURem(B, e, i32c(fn, plane), "");
    LLVMValueRef r = cg_zext64(fn, LLVMBuildUDiv(B, in_plane, lw, ""));
    LLVMValueRef c = cg_zext64(fn, LLVMBuildURem(B, in_plane, lw, ""));
    LLVMValueRef t1 = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0);
    LLVMValueRef in_z = t1, in_y = t1, in_x = t1;
    LLVMValueRef gy = bound(
        fn, sd->bnd,
        LLVMBuildAdd(B, y0, LLVMBuildSub(B, r, cg_i64(fn, sd->hy), ""), ""),
        sd->ey, &in_y);
    if (sd->rank == 3) {
        LLVMValueRef pz =
            cg_zext64(fn, LLVMBuildUDiv(B, e, i32c(fn, plane), ""));
        LLVMValueRef gz = bound(
            fn, sd->bnd,
            LLVMBuildAdd(B, z, LLVMBuildSub(B, pz, cg_i64(fn, sd->hz), ""), ""),
            sd->ez, &in_z);
        gy = LLVMBuildAdd(B, LLVMBuildMul(B, gz, sd->ey, ""), gy, "");
    }
    LLVMValueRef gx = bound(
        fn, sd->bnd,
        LLVMBuildAdd(B, x0, LLVMBuildSub(B, c, cg_i64(fn, sd->hx), ""), ""),
        sd->ex, &in_x);
    cg_val x;
    weft_status s = cg_array_load(
        fn, sd->a, LLVMBuildAdd(B, LLVMBuildMul(B, gy, sd->ex, ""), gx, ""),
        &x);
    if (s) {
        return s;
    }
    if (sd->cval) {
        LLVMValueRef inside =
            LLVMBuildAnd(B, LLVMBuildAnd(B, in_z, in_y, ""), in_x, "");
        for (int k = 0; k < x.n; k++) {
            x.v[k] = LLVMBuildSelect(B, inside, x.v[k], sd->cval->v[k], "");
        }
    }
    shared_put(fn, sd, e, &x);
    cg_sloop_end(fn, &l);
    return WEFT_OK;
}

/* Whether [at - h, at + n + h) lies inside [0, extent) (i1). */
static LLVMValueRef span_inside(cg_fn *fn, LLVMValueRef at, int n, int h,
                                LLVMValueRef extent)
{
    LLVMBuilderRef B = fn->b;
    return LLVMBuildAnd(
        B, LLVMBuildICmp(B, LLVMIntSGE, at, cg_i64(fn, h), ""),
        LLVMBuildICmp(B, LLVMIntSLE, LLVMBuildAdd(B, at, cg_i64(fn, n + h), ""),
                      extent, ""),
        "");
}

/* Whether side sd's halo around tile tp lies inside its array (i1). */
static LLVMValueRef tile_inside(cg_fn *fn, const tside *sd, const tpos *tp,
                                int tw, int th)
{
    LLVMBuilderRef B = fn->b;
    LLVMValueRef in =
        LLVMBuildAnd(B, span_inside(fn, tp->y0, th, sd->hy, sd->ey),
                     span_inside(fn, tp->x0, tw, sd->hx, sd->ex), "");
    if (sd->rank == 3) {
        in = LLVMBuildAnd(B, in, span_inside(fn, tp->z, 1, sd->hz, sd->ez), "");
    }
    return in;
}

/* out[pos] = f of the windows of a tile's element, read from the
 * sides' shared tiles: side i's window starts at sb[i] (i64, r lw + c for
 * the element's row r and column c in the tile), its element (dz, dy,
 * dx) at sb[i] + (dz lh + dy) lw + dx, a constant offset that the
 * address takes. */
static weft_status apply_at(sk_fn *f, const tside *sd, int nside,
                            const LLVMValueRef *sb, LLVMValueRef pos,
                            cg_val *args)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    const cg_array *out = sk_out_array(f, 0);
    weft_status s = WEFT_OK;
    int at = 0;
    for (int i = 0; i < nside && s == WEFT_OK; i++) {
        /* the window in row-major order: planes, rows, columns */
        for (int j = 0; j < sd[i].wz * sd[i].wy * sd[i].wx && s == WEFT_OK;
             j++) {
            int dz = j / (sd[i].wy * sd[i].wx), dy = j / sd[i].wx % sd[i].wy;
            int dx = j % sd[i].wx;
            {
                LLVMValueRef p = LLVMBuildNUWAdd(
                    B, sb[i],
                    cg_i64(fn, ((int64_t)dz * sd[i].lh + dy) * sd[i].lw + dx),
                    "");
                cg_val *a = &args[at++];
                s = cg_val_make(fn, sd[i].a->nleaf, a);
                for (int q = 0; s == WEFT_OK && q < sd[i].a->nleaf; q++) {
                    a->v[q] = cg_load(fn, sd[i].a->leaf[q], sd[i].sh[q], p);
                }
            }
        }
    }
    if (s) {
        return s;
    }
    cg_set_elem(fn, pos); /* reports of f name the result's element */
    cg_val res;
    if ((s = cg_apply(fn, f->e->k->op->fun[0], args, &res)) == WEFT_OK) {
        cg_array_store(fn, out, pos, &res);
    }
    return s;
}

/* The apply phase of a tile inside the result in a block of BLOCK
 * threads: thread tid takes column tid % tw of rows tid / tw + k BLOCK /
 * tw, k < tw th / BLOCK (a loop of constant count, which LLVM unrolls
 * where f is small), no test. */
static weft_status apply_full(sk_fn *f, const tside *sd, int nside,
                              LLVMValueRef tid, const tpos *tp, int tw, int th,
                              cg_val *args)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    int rp = BLOCK / tw;
    LLVMValueRef r0 = cg_zext64(fn, LLVMBuildUDiv(B, tid, i32c(fn, tw), ""));
    LLVMValueRef c = cg_zext64(fn, LLVMBuildURem(B, tid, i32c(fn, tw), ""));
    /* round k: row r0 + k rp, so every position steps by a constant */
    LLVMValueRef row =
        LLVMBuildAdd(B, tp->orow, LLVMBuildAdd(B, tp->y0, r0, ""), "");
    LLVMValueRef pos0 = LLVMBuildAdd(B, LLVMBuildMul(B, row, tp->X, ""),
                                     LLVMBuildAdd(B, tp->x0, c, ""), "pos0");
    LLVMValueRef pstep = LLVMBuildMul(B, tp->X, cg_i64(fn, rp), "");
    LLVMValueRef sb0[2], sb[2];
    for (int i = 0; i < nside; i++) {
        sb0[i] = LLVMBuildNUWAdd(
            B, LLVMBuildNUWMul(B, r0, cg_i64(fn, sd[i].lw), ""), c, "");
    }
    cg_loop l;
    LLVMValueRef k;
    cg_loop_begin(fn, &l, cg_i64(fn, 0), cg_i64(fn, (int64_t)tw * th / BLOCK),
                  &k);
    for (int i = 0; i < nside; i++) {
        sb[i] = LLVMBuildNUWAdd(
            B, sb0[i],
            LLVMBuildNUWMul(B, k, cg_i64(fn, (int64_t)rp * sd[i].lw), ""), "");
    }
    LLVMValueRef pos = LLVMBuildAdd(B, pos0, LLVMBuildMul(B, k, pstep, ""), "");
    weft_status s = apply_at(f, sd, nside, sb, pos, args);
    cg_loop_end(fn, &l);
    return s;
}

/* The apply phase of any tile in a block of any size: elements tid, tid +
 * bs, ... of the tile (row e / tw, column e % tw) that lie inside the
 * result. */
static weft_status apply_tile(sk_fn *f, const tside *sd, int nside,
                              LLVMValueRef tid, LLVMValueRef bs, const tpos *tp,
                              int tw, int th, cg_val *args)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef B = fn->b;
    cg_sloop l;
    LLVMValueRef e = LLVMBuildTrunc(B,
                                    cg_sloop_begin(fn, &l, cg_zext64(fn, tid),
                                                   cg_i64(fn, (int64_t)tw * th),
                                                   cg_zext64(fn, bs), "e"),
                                    LLVMInt32TypeInContext(fn->llctx), "");
    LLVMValueRef r = cg_zext64(fn, LLVMBuildUDiv(B, e, i32c(fn, tw), ""));
    LLVMValueRef c = cg_zext64(fn, LLVMBuildURem(B, e, i32c(fn, tw), ""));
    LLVMValueRef y = LLVMBuildAdd(B, tp->y0, r, "y");
    LLVMValueRef x = LLVMBuildAdd(B, tp->x0, c, "x");
    cg_if in;
    cg_if_begin(fn, &in,
                LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSLT, y, tp->Y, ""),
                             LLVMBuildICmp(B, LLVMIntSLT, x, tp->X, ""), ""));
    LLVMValueRef sb[2];
    for (int i = 0; i < nside; i++) {
        sb[i] = LLVMBuildNUWAdd(
            B, LLVMBuildNUWMul(B, r, cg_i64(fn, sd[i].lw), ""), c, "");
    }
    LLVMValueRef pos = LLVMBuildAdd(
        B, LLVMBuildMul(B, LLVMBuildAdd(B, tp->orow, y, ""), tp->X, ""), x,
        "at");
    weft_status s = apply_at(f, sd, nside, sb, pos, args);
    cg_if_end(fn, &in);
    cg_sloop_end(fn, &l);
    return s;
}

/* The one entry (see the head comment): n = tiles, grain 1. */
static weft_status emit_tiled(sk_fn *f, int tw, int th)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMBuilderRef B = fn->b;
    const fe_term *t = f->e->k->op;
    int nside = t->kind == FE_STENCIL2 ? 2 : 1;
    tside sd[2];
    int ktotal = 0;
    weft_status s = WEFT_OK;
    for (int i = 0; i < nside && s == WEFT_OK; i++) {
        s = side_init(f, &sd[i], i, tw, th);
        ktotal += sd[i].wz * sd[i].wy * sd[i].wx;
    }
    if (s) {
        return s;
    }
    cg_val *args = fe_arena_alloc(f->e->arena, sizeof *args * (size_t)ktotal);
    if (!args) {
        return fe_oom("weft_compile");
    }
    cg_ptx_launch_bounds(fn, BLOCK, 0);
    const cg_array *out = sk_out_array(f, 0);
    int rank = t->rank;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef tid = tg->thread_index(fn, 0);
    LLVMValueRef bs = tg->block_size(fn, 0);
    tpos tp = {.Y = out->extent[rank - 2], .X = out->extent[rank - 1]};
    /* tiles per row and per plane; tile numbers fit in 32 bits (2^31
     * tiles are 2^39 elements at least), so they are cut by 32-bit
     * divisions */
    LLVMValueRef tiles_x = LLVMBuildTrunc(
        B,
        LLVMBuildLShr(B, LLVMBuildAdd(B, tp.X, cg_i64(fn, tw - 1), ""),
                      cg_i64(fn, log2i(tw)), ""),
        i32, "tiles_x");
    LLVMValueRef tiles_y = LLVMBuildTrunc(
        B,
        LLVMBuildLShr(B, LLVMBuildAdd(B, tp.Y, cg_i64(fn, th - 1), ""),
                      cg_i64(fn, log2i(th)), ""),
        i32, "tiles_y");
    cg_sloop tl;
    /* tiles [first, n): first > 0 on a device of several (multi.c) */
    LLVMValueRef tile = cg_sloop_begin(
        fn, &tl,
        LLVMBuildAdd(B, f->first, cg_zext64(fn, tg->block_index(fn, 0)), ""),
        f->n, cg_zext64(fn, tg->grid_size(fn, 0)), "tile");
    LLVMValueRef t32 = LLVMBuildTrunc(B, tile, i32, "");
    LLVMValueRef q = LLVMBuildUDiv(B, t32, tiles_x, "");
    tp.x0 = LLVMBuildMul(B, cg_zext64(fn, LLVMBuildURem(B, t32, tiles_x, "")),
                         cg_i64(fn, tw), "x0");
    if (rank == 3) {
        tp.z = cg_zext64(fn, LLVMBuildUDiv(B, q, tiles_y, ""));
        q = LLVMBuildURem(B, q, tiles_y, "");
        tp.orow = LLVMBuildMul(B, tp.z, tp.Y, "orow");
    } else {
        tp.z = tp.orow = cg_i64(fn, 0);
    }
    tp.y0 = LLVMBuildMul(B, cg_zext64(fn, q), cg_i64(fn, th), "y0");
    LLVMValueRef interior =
        LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0);
    for (int i = 0; i < nside; i++) {
        interior =
            LLVMBuildAnd(B, interior, tile_inside(fn, &sd[i], &tp, tw, th), "");
    }
    /* load: unrolled where the tile is interior */
    cg_if ii;
    cg_if_begin(fn, &ii, interior);
    cg_sloop vl;
    LLVMValueRef v = virtual_begin(fn, &vl, tid, bs);
    for (int i = 0; i < nside && s == WEFT_OK; i++) {
        s = load_interior(f, &sd[i], v, &tp, tw);
    }
    cg_sloop_end(fn, &vl);
    cg_if_else(fn, &ii);
    for (int i = 0; i < nside && s == WEFT_OK; i++) {
        s = load_border(f, &sd[i], tid, bs, &tp);
    }
    cg_if_end(fn, &ii);
    if (s) {
        return s;
    }
    tg->barrier(fn);
    /* apply: with no test where the tile lies inside the result */
    LLVMValueRef full = LLVMBuildAnd(
        B,
        LLVMBuildICmp(B, LLVMIntSLE, LLVMBuildAdd(B, tp.y0, cg_i64(fn, th), ""),
                      tp.Y, ""),
        LLVMBuildICmp(B, LLVMIntSLE, LLVMBuildAdd(B, tp.x0, cg_i64(fn, tw), ""),
                      tp.X, ""),
        "");
    cg_if fi;
    cg_if_begin(fn, &fi, full);
    v = virtual_begin(fn, &vl, tid, bs);
    s = apply_full(f, sd, nside, v, &tp, tw, th, args);
    cg_sloop_end(fn, &vl);
    cg_if_else(fn, &fi);
    if (s == WEFT_OK) {
        s = apply_tile(f, sd, nside, tid, bs, &tp, tw, th, args);
    }
    cg_if_end(fn, &fi);
    if (s) {
        return s;
    }
    tg->barrier(fn);
    cg_sloop_end(fn, &tl);
    return WEFT_OK;
}

static weft_status ptx_stencil_prepare(weft_context *ctx, fe_arena *arena,
                                       sk_kernel *k)
{
    weft_status s = sk_stencil.prepare(ctx, arena, k);
    int tw, th;
    if (s) {
        return s;
    }
    if (!tile_pick(ctx, k->op, &tw, &th)) {
        k->flags |= SK_STENCIL_FINE; /* stencil.c's kernel, fine pieces */
        return WEFT_OK;
    }
    k->flags |= tile_flags(tw, th);
    k->block_max = BLOCK;
    k->item_threads[0] = SK_ITEM_BLOCK; /* a block per tile */
    return WEFT_OK;
}

static weft_status ptx_stencil_emit(sk_emit *e, const char *const *names)
{
    if (!(e->k->flags & SK_STENCIL_TILED)) {
        return sk_stencil.emit(e, names);
    }
    sk_fn f;
    weft_status s = sk_fn_begin_raw(e, &f, names[0]);
    if (s) {
        return s;
    }
    if ((s = emit_tiled(&f, sk_stencil_tile_w(e->k->flags),
                        sk_stencil_tile_h(e->k->flags))) != WEFT_OK) {
        /* close the half-built function; the module is thrown away */
        LLVMBuildUnreachable(f.fn.b);
        cg_fn_end(&f.fn);
        return s;
    }
    sk_fn_end(&f);
    return WEFT_OK;
}

static bool ptx_stencil_supported(const fe_term *t)
{
    return sk_stencil.supported(t);
}

const sk_skeleton sk_ptx_stencil = {
    .name = "ptx-stencil",
    .family = SK_STENCIL,
    .supported = ptx_stencil_supported,
    .prepare = ptx_stencil_prepare,
    .emit = ptx_stencil_emit,
};
