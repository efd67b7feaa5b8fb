/*
 * bench/ref.h: the hand-written C references that bench/weft_bench.c
 * times against weft.  They live in bench/ref.c, compiled with
 * -O3 -march=native -fopenmp (ref_*) and once more with -ffast-math too
 * (reff_*), and run on ref_set_threads() threads.
 * Every function writes into buffers the caller owns and allocates
 * nothing.
 */
#ifndef WEFT_BENCH_REF_H
#define WEFT_BENCH_REF_H

#include <stdint.h>

/* Use n OpenMP threads from now on (n >= 1). */
void ref_set_threads(int n);
/* What the OpenMP runtime will use. */
int ref_threads(void);
/* A description of the OpenMP runtime ("OpenMP 201511"). */
const char *ref_openmp(void);

/* dst[i] = src[i]: the bandwidth yardstick. */
void ref_copy(float *dst, const float *src, int64_t n);
/* A first touch of n floats in parallel (so that pages are mapped as the
 * kernels will use them), filled with zeros. */
void ref_zero(float *dst, int64_t n);

/* The programs, declared for a prefix P: ref_ (strict: the flags above)
 * and reff_ (the same source built with -ffast-math -DREF_FAST).
 *
 *   P##dotp           sum x[i] * y[i];
 *   P##saxpy          out[i] = a * x[i] + y[i];
 *   P##sum            sum x[i];
 *   P##prefix_sum     out[i] = x[0] + ... + x[i] (inclusive), three phases;
 *   P##black_scholes  European call and put prices (the formulas of
 *                     examples/blackscholes.c, in f32);
 *   P##mandelbrot     escape iteration counts (at most max_iter) of the
 *                     w x h grid of points (x0 + dx * x, y0 + dy * y), row
 *                     y at out[y * w];
 *   P##nbody          the acceleration of each of n bodies from all n
 *                     (softened by eps2, so that a body's own term is
 *                     zero): a = sum_j m_j d / (|d|^2 + eps2)^1.5,
 *                     d = p_j - p_i;
 *   P##smvm           y = A x for A in CSR (rowptr of nrows + 1, cols,
 *                     vals), each thread a share of rows holding about
 *                     as many nonzeros as the others';
 *   P##jacobi         `iterations` 5-point Jacobi steps of the h x w grid u
 *                     (clamped), 0.25 * (((n + s) + w) + e), ping-ponging
 *                     between buf0 and buf1; returns the one holding the
 *                     result (u itself for 0 iterations);
 *   P##kmeans         Lloyd's iterations from the centroids (cx, cy) of k
 *                     <= 64, until no point changes cluster or max_iter
 *                     (the nearest centroid, the lower index on ties; a
 *                     cluster without points keeps its centroid): the
 *                     centroids are updated in place, assign (n) gets the
 *                     clusters; returns the iterations run (-1 for too
 *                     large a k). */
#define REF_PROGRAMS(P)                                                        \
    float P##dotp(const float *x, const float *y, int64_t n);                  \
    void P##saxpy(float a, const float *x, const float *y, float *out,         \
                  int64_t n);                                                  \
    float P##sum(const float *x, int64_t n);                                   \
    void P##prefix_sum(const int32_t *x, int32_t *out, int64_t n);             \
    void P##black_scholes(const float *price, const float *strike,             \
                          const float *years, float *call, float *put,         \
                          int64_t n, float riskfree, float volatility);        \
    void P##mandelbrot(int64_t w, int64_t h, int32_t max_iter, float x0,       \
                       float y0, float dx, float dy, int32_t *out);            \
    void P##nbody(const float *x, const float *y, const float *z,              \
                  const float *m, float *ax, float *ay, float *az, int64_t n,  \
                  float eps2);                                                 \
    void P##smvm(const int32_t *rowptr, const int32_t *cols,                   \
                 const float *vals, const float *x, float *y, int64_t nrows);  \
    const float *P##jacobi(const float *u, float *buf0, float *buf1,           \
                           int64_t h, int64_t w, int32_t iterations);          \
    int32_t P##kmeans(const float *px, const float *py, int64_t n, int k,      \
                      float *cx, float *cy, int32_t *assign,                   \
                      int32_t max_iter);

REF_PROGRAMS(ref_)
REF_PROGRAMS(reff_)

/* The name ref.c defines: ref_x, or reff_x when built with REF_FAST. */
#ifdef REF_FAST
#define REF(x) reff_##x
#else
#define REF(x) ref_##x
#endif

#endif /* WEFT_BENCH_REF_H */
