/*
 * bench/programs.h: sparse matrix times vector, a Jacobi stencil and
 * k-means, each written once in weft, with the inputs they run on; for
 * the CPU benchmark (bench/weft_bench.c) and the GPU one (bench/gpu/), so
 * that both time the same formulation.  Header only (static inline, uses
 * only weft.h and the C library), so that each benchmark needs nothing
 * more to build than including it.
 *
 *   smvm      y = foldSeg' (+) 0 (zipWith (*) vals (backpermute nnz
 *             (\i -> cols ! i) x)) rowptr: CSR with its row pointers as
 *             the segments' offsets (Accelerate's smvm, with foldSeg'),
 *             f32 values, i32 columns;
 *   Jacobi    `iterations` times u = stencil 3x3 (clamp) of the 5-point
 *             average 0.25 * (((n + s) + w) + e), through an awhile over
 *             (u, unit count);
 *   k-means   Lloyd's iterations over 2-D points (px, py) from centroids
 *             (cx, cy) until no point changes cluster or max_iter
 *             iterations, in one awhile: each step assigns every point the
 *             nearest centroid (generate (n, k) of (distance, j) folded by
 *             the lesser distance, the lower j on ties; or, by_while,
 *             generate n of a while loop over j), sums the points and
 *             counts per cluster with permute (+), divides (a cluster that
 *             lost every point keeps its centroid), and counts the points
 *             whose cluster changed.
 *
 * The inputs: a banded matrix (every row `band` consecutive columns,
 * shifted at the edges so that all rows are equally long); a power-law
 * one (row lengths l with density proportional to l^-2 between 1 and
 * maxlen, columns uniform, as many nonzeros as asked); k-means' points in
 * k Gaussian blobs on a grid, the first k points the initial centroids.
 * All from a seeded generator: the same inputs on every machine.
 */
#ifndef WEFT_BENCH_PROGRAMS_H
#define WEFT_BENCH_PROGRAMS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "weft.h"

/* ---- a seeded generator (splitmix64) ------------------------------------- */

static inline uint64_t bp_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 24 bits. */
static inline float bp_unit(uint64_t *s)
{
    return (float)(bp_next(s) >> 40) * (1.0f / 16777216.0f);
}

/* ---- CSR matrices --------------------------------------------------------- */

typedef struct bp_csr {
    int64_t nrows, ncols, nnz;
    int32_t *rowlen; /* nrows: the segments of weft's foldSeg */
    int32_t *rowptr; /* nrows + 1: the C and numba references' */
    int32_t *cols;   /* nnz */
    float *vals;     /* nnz */
} bp_csr;

static inline void bp_csr_free(bp_csr *m)
{
    free(m->rowlen);
    free(m->rowptr);
    free(m->cols);
    free(m->vals);
    m->rowlen = m->rowptr = m->cols = NULL;
    m->vals = NULL;
}

/* rowptr from rowlen and values in [-1, 1); 0 if out of memory. */
static inline int bp_csr_finish(bp_csr *m, uint64_t *seed)
{
    m->rowptr = malloc(sizeof *m->rowptr * (size_t)(m->nrows + 1));
    m->vals = malloc(sizeof *m->vals * (size_t)(m->nnz ? m->nnz : 1));
    if (!m->rowptr || !m->vals) {
        return 0;
    }
    m->rowptr[0] = 0;
    for (int64_t r = 0; r < m->nrows; r++) {
        m->rowptr[r + 1] = m->rowptr[r] + m->rowlen[r];
    }
    for (int64_t i = 0; i < m->nnz; i++) {
        m->vals[i] = 2.0f * bp_unit(seed) - 1.0f;
    }
    return 1;
}

/* n x n, every row `band` (<= n) consecutive columns around the diagonal.
 * Returns 0 if out of memory (m is then freed). */
static inline int bp_csr_banded(bp_csr *m, int64_t n, int band, uint64_t seed)
{
    *m = (bp_csr){.nrows = n, .ncols = n, .nnz = n * band};
    m->rowlen = malloc(sizeof *m->rowlen * (size_t)n);
    m->cols = malloc(sizeof *m->cols * (size_t)m->nnz);
    if (!m->rowlen || !m->cols) {
        bp_csr_free(m);
        return 0;
    }
    for (int64_t r = 0; r < n; r++) {
        int64_t c0 = r - band / 2;
        c0 = c0 < 0 ? 0 : c0 > n - band ? n - band : c0;
        m->rowlen[r] = band;
        for (int b = 0; b < band; b++) {
            m->cols[r * band + b] = (int32_t)(c0 + b);
        }
    }
    if (!bp_csr_finish(m, &seed)) {
        bp_csr_free(m);
        return 0;
    }
    return 1;
}

/* nnz nonzeros in rows of l in [1, maxlen] (density ~ l^-2: a continuous
 * Pareto of index 1 truncated, by inverting its distribution; the last
 * row is cut to make nnz), over ncols columns drawn uniformly.  Returns 0
 * if out of memory. */
static inline int bp_csr_powerlaw(bp_csr *m, int64_t nnz, int64_t ncols,
                                  int32_t maxlen, uint64_t seed)
{
    *m = (bp_csr){.ncols = ncols, .nnz = nnz};
    int64_t cap = nnz; /* at least one nonzero per row */
    m->rowlen = malloc(sizeof *m->rowlen * (size_t)(cap ? cap : 1));
    m->cols = malloc(sizeof *m->cols * (size_t)(nnz ? nnz : 1));
    if (!m->rowlen || !m->cols) {
        bp_csr_free(m);
        return 0;
    }
    double top = 1.0 - 1.0 / ((double)maxlen + 1.0);
    int64_t used = 0;
    while (used < nnz) {
        double u = (double)bp_unit(&seed);
        int64_t l = (int64_t)(1.0 / (1.0 - u * top));
        l = l < 1 ? 1 : l > maxlen ? maxlen : l;
        if (l > nnz - used) {
            l = nnz - used;
        }
        m->rowlen[m->nrows++] = (int32_t)l;
        used += l;
    }
    for (int64_t i = 0; i < nnz; i++) {
        m->cols[i] = (int32_t)(bp_next(&seed) % (uint64_t)ncols);
    }
    if (!bp_csr_finish(m, &seed)) {
        bp_csr_free(m);
        return 0;
    }
    return 1;
}

/* ---- the programs ---------------------------------------------------------- */

/* (a, b) -> op(a, b) on type t. */
static inline weft_fun *bp_binop(weft_program *p, weft_type t, weft_op op)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_prim2(op, weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* y = A x for A in CSR: vals (f32), cols (i32), rowptr (i32, nrows + 1),
 * x (f32). */
static inline weft_acc *bp_smvm(weft_program *p, weft_acc *vals, weft_acc *cols,
                                weft_acc *rowptr, weft_acc *x)
{
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(weft_at(cols, weft_arg(ix, 0)),
                                                 WEFT_I64)));
    weft_acc *xs = weft_backpermute(weft_shape(vals), ix, x);
    weft_acc *prod = weft_zipwith(bp_binop(p, WEFT_F32, WEFT_OP_MUL), vals, xs);
    return weft_fold_seg_offsets(bp_binop(p, WEFT_F32, WEFT_OP_ADD),
                                 weft_f32(p, 0), prod, rowptr);
}

/* One Jacobi step: the 5-point average of u (rank 2, f32), clamped. */
static inline weft_acc *bp_jacobi_step(weft_program *p, weft_acc *u)
{
    weft_type t9[9];
    for (int i = 0; i < 9; i++) {
        t9[i] = WEFT_F32;
    }
    weft_fun *f = weft_fun_create(p, 9, t9);
    /* the window row-major: 1 north, 3 west, 5 east, 7 south */
    weft_exp *sum = weft_add(
        weft_add(weft_add(weft_arg(f, 1), weft_arg(f, 7)), weft_arg(f, 3)),
        weft_arg(f, 5));
    weft_fun_return(f, weft_mul(weft_f32(p, 0.25f), sum));
    weft_boundary clamp = {WEFT_BOUNDARY_CLAMP, NULL};
    return weft_stencil(f, (const int[]){3, 3}, clamp, u);
}

/* `iterations` Jacobi steps of u, in an awhile over (u, unit count). */
static inline weft_acc *bp_jacobi(weft_program *p, weft_acc *u,
                                  int32_t iterations)
{
    weft_acc *init[2] = {u, weft_unit(weft_i32(p, 0))};
    weft_acc *s0 = weft_atuple(p, 2, init);
    weft_afun *cond = weft_afun_like(s0);
    weft_acc *c = weft_afun_arg(cond);
    weft_afun_return(cond, weft_unit(weft_lt(weft_the(weft_aget(c, 1)),
                                             weft_i32(p, iterations))));
    weft_afun *body = weft_afun_like(s0);
    weft_acc *b = weft_afun_arg(body);
    weft_acc *next[2] = {
        bp_jacobi_step(p, weft_aget(b, 0)),
        weft_unit(weft_add(weft_the(weft_aget(b, 1)), weft_i32(p, 1)))};
    weft_afun_return(body, weft_atuple(p, 2, next));
    return weft_aget(weft_awhile(cond, body, s0), 0);
}

/* k points in k Gaussian blobs (sigma `spread`) centred on a grid of
 * spacing 10; px, py hold n floats each.  The first k points are where
 * the iterations start (bp_kmeans' cx, cy). */
static inline void bp_kmeans_points(float *px, float *py, int64_t n, int k,
                                    float spread, uint64_t seed)
{
    int side = (int)ceil(sqrt((double)k));
    for (int64_t i = 0; i < n; i++) {
        int c = (int)(bp_next(&seed) % (uint64_t)k);
        /* Box-Muller */
        double u1 = ((double)(bp_next(&seed) >> 11) + 1.0) * 0x1p-53;
        double u2 = (double)(bp_next(&seed) >> 11) * 0x1p-53;
        double r = sqrt(-2.0 * log(u1)) * spread;
        px[i] = (float)(10.0 * (c % side) + r * cos(6.283185307179586 * u2));
        py[i] = (float)(10.0 * (c / side) + r * sin(6.283185307179586 * u2));
    }
}

/* The squared distance of point i to centroid j (i64 indices). */
static inline weft_exp *bp_dist2(weft_acc *px, weft_acc *py, weft_acc *cx,
                                 weft_acc *cy, weft_exp *i, weft_exp *j)
{
    weft_exp *ii = weft_index1(i), *jj = weft_index1(j);
    weft_exp *dx = weft_sub(weft_at(px, ii), weft_at(cx, jj));
    weft_exp *dy = weft_sub(weft_at(py, ii), weft_at(cy, jj));
    return weft_add(weft_mul(dx, dx), weft_mul(dy, dy));
}

/* The nearest centroid of every point (i32), the lower j on ties: fold
 * (nearer) of generate (n, k) (\(i, j) -> (distance, j)). */
static inline weft_acc *bp_nearest_fold(weft_context *ctx, weft_program *p,
                                        weft_acc *px, weft_acc *py,
                                        weft_acc *cx, weft_acc *cy)
{
    weft_type dj = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_F32, WEFT_I32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *dist[2] = {
        bp_dist2(px, py, cx, cy, weft_get(ix, 0), weft_get(ix, 1)),
        weft_convert(weft_get(ix, 1), WEFT_I32)};
    weft_fun_return(g, weft_tuple(p, 2, dist));
    /* the nearer, the lower j on ties: associative and commutative (bor
     * and band evaluate both sides: no branch) */
    weft_fun *near = weft_fun2(p, dj, dj);
    weft_exp *a = weft_arg(near, 0), *b = weft_arg(near, 1);
    weft_exp *b_wins =
        weft_bor(weft_lt(weft_get(b, 0), weft_get(a, 0)),
                 weft_band(weft_eq(weft_get(b, 0), weft_get(a, 0)),
                           weft_lt(weft_get(b, 1), weft_get(a, 1))));
    weft_fun_return(near, weft_cond(b_wins, b, a));
    weft_exp *none[2] = {weft_f32(p, INFINITY), weft_i32(p, 0)};
    weft_acc *best =
        weft_fold(near, weft_tuple(p, 2, none),
                  weft_generate(weft_index2(weft_size(px), weft_size(cx)), g));
    weft_fun *second = weft_fun1(p, dj);
    weft_fun_return(second, weft_get(weft_arg(second, 0), 1));
    return weft_map(second, best);
}

/* The same by generate n (\i -> a while loop over j keeping the nearest,
 * the first on ties). */
static inline weft_acc *bp_nearest_while(weft_context *ctx, weft_program *p,
                                         weft_acc *px, weft_acc *py,
                                         weft_acc *cx, weft_acc *cy)
{
    weft_type st =
        weft_type_tuple(ctx, 3, (weft_type[]){WEFT_I64, WEFT_F32, WEFT_I32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_fun *cond = weft_fun1(p, st);
    weft_fun_return(cond,
                    weft_lt(weft_get(weft_arg(cond, 0), 0), weft_size(cx)));
    weft_fun *body = weft_fun1(p, st);
    weft_exp *s = weft_arg(body, 0);
    weft_exp *j = weft_get(s, 0);
    weft_exp *d = bp_dist2(px, py, cx, cy, i, j);
    weft_exp *nearer = weft_lt(d, weft_get(s, 1));
    weft_exp *next[3] = {
        weft_add(j, weft_i64(p, 1)), weft_cond(nearer, d, weft_get(s, 1)),
        weft_cond(nearer, weft_convert(j, WEFT_I32), weft_get(s, 2))};
    weft_fun_return(body, weft_tuple(p, 3, next));
    weft_exp *init[3] = {weft_i64(p, 0), weft_f32(p, INFINITY), weft_i32(p, 0)};
    weft_fun_return(
        g, weft_get(weft_while(cond, body, weft_tuple(p, 3, init)), 2));
    return weft_generate(weft_index1(weft_size(px)), g);
}

/* k-means of the points (px, py: f32 vectors) from the centroids (cx, cy:
 * f32 vectors of k); the result is a tuple of three arrays: the centroids
 * cx, cy and a unit i32, the iterations run.  by_while picks
 * bp_nearest_while for the assignment, else bp_nearest_fold. */
static inline weft_acc *bp_kmeans(weft_context *ctx, weft_program *p,
                                  weft_acc *px, weft_acc *py, weft_acc *cx,
                                  weft_acc *cy, int32_t max_iter, int by_while)
{
    weft_exp *n = weft_size(px);
    weft_fun *neg1 = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(neg1, weft_i32(p, -1));
    /* state: cx, cy, assignment, iterations, moved */
    weft_acc *init[5] = {cx, cy, weft_generate(weft_index1(n), neg1),
                         weft_unit(weft_i32(p, 0)), weft_unit(weft_i32(p, 1))};
    weft_acc *s0 = weft_atuple(p, 5, init);

    weft_afun *cond = weft_afun_like(s0);
    weft_acc *c = weft_afun_arg(cond);
    weft_afun_return(
        cond, weft_unit(weft_and(
                  weft_gt(weft_the(weft_aget(c, 4)), weft_i32(p, 0)),
                  weft_lt(weft_the(weft_aget(c, 3)), weft_i32(p, max_iter)))));

    weft_afun *body = weft_afun_like(s0);
    weft_acc *s = weft_afun_arg(body);
    weft_acc *ccx = weft_aget(s, 0), *ccy = weft_aget(s, 1);
    weft_acc *old = weft_aget(s, 2);
    weft_exp *k = weft_size(ccx);
    weft_acc *assign = by_while ? bp_nearest_while(ctx, p, px, py, ccx, ccy)
                                : bp_nearest_fold(ctx, p, px, py, ccx, ccy);

    /* sums and counts per cluster */
    weft_fun *to = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(to, weft_index1(weft_convert(
                            weft_at(assign, weft_arg(to, 0)), WEFT_I64)));
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_f32(p, 0));
    weft_fun *zero_i = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero_i, weft_i32(p, 0));
    weft_fun *one = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(one, weft_i32(p, 1));
    weft_fun *add = bp_binop(p, WEFT_F32, WEFT_OP_ADD);
    weft_acc *sx =
        weft_permute(add, weft_generate(weft_index1(k), zero), to, px);
    weft_acc *sy =
        weft_permute(add, weft_generate(weft_index1(k), zero), to, py);
    weft_acc *cnt = weft_permute(bp_binop(p, WEFT_I32, WEFT_OP_ADD),
                                 weft_generate(weft_index1(k), zero_i), to,
                                 weft_generate(weft_index1(n), one));
    /* the mean, or the old centroid for a cluster without points */
    weft_fun *mean = weft_fun3(p, WEFT_F32, WEFT_I32, WEFT_F32);
    weft_exp *m = weft_arg(mean, 1);
    weft_fun_return(
        mean, weft_cond(weft_gt(m, weft_i32(p, 0)),
                        weft_fdiv(weft_arg(mean, 0), weft_convert(m, WEFT_F32)),
                        weft_arg(mean, 2)));

    weft_fun *differ = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(
        differ, weft_convert(weft_ne(weft_arg(differ, 0), weft_arg(differ, 1)),
                             WEFT_I32));
    weft_acc *moved =
        weft_fold_all(bp_binop(p, WEFT_I32, WEFT_OP_ADD), weft_i32(p, 0),
                      weft_zipwith(differ, assign, old));
    weft_acc *next[5] = {
        weft_zipwith3(mean, sx, cnt, ccx), weft_zipwith3(mean, sy, cnt, ccy),
        assign, weft_unit(weft_add(weft_the(weft_aget(s, 3)), weft_i32(p, 1))),
        moved};
    weft_afun_return(body, weft_atuple(p, 5, next));
    weft_acc *r = weft_awhile(cond, body, s0);
    weft_acc *out[3] = {weft_aget(r, 0), weft_aget(r, 1), weft_aget(r, 3)};
    return weft_atuple(p, 3, out);
}

#endif /* WEFT_BENCH_PROGRAMS_H */
