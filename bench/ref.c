/*
 * bench/ref.c: hand-written C and OpenMP references for the benchmark.
 *
 * Each is what a careful C programmer would write without weft: one
 * parallel loop (static schedule; dynamic by rows for Mandelbrot, whose
 * rows cost unevenly), `omp simd` on reductions so that the compiler may
 * reorder a floating-point sum and vectorise it (weft's fold carries the
 * same permission, the reassoc flag; not smvm's short row sums, see
 * there), and the prefix sum in the classic
 * three phases (each thread sums its block, one thread scans the block
 * sums, each thread rescans its block from its carry).  The formulas and
 * their order of operations match the weft programs in weft_bench.c, so
 * that element-wise results agree to rounding.
 *
 * Built with -O3 -march=native -fopenmp (and -fno-math-errno, so that
 * sqrtf may become one vector instruction as LLVM's llvm.sqrt does in
 * weft; nothing else of fast math): the functions ref_*.  bench/run.sh
 * compiles this file a second time with -ffast-math -DREF_FAST, which
 * names them reff_* (see ref.h): the same loops as a programmer who
 * allows fast math gets them (FMA contraction, reassociation, vector
 * math from glibc's libmvec for expf and logf).
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "ref.h"

#ifndef REF_FAST
void ref_set_threads(int n)
{
    omp_set_num_threads(n);
}

int ref_threads(void)
{
    return omp_get_max_threads();
}

const char *ref_openmp(void)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "OpenMP %d", _OPENMP);
    return buf;
}

void ref_copy(float *restrict dst, const float *restrict src, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        dst[i] = src[i];
    }
}

void ref_zero(float *restrict dst, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        dst[i] = 0.0f;
    }
}

#endif /* REF_FAST */

float REF(dotp)(const float *restrict x, const float *restrict y, int64_t n)
{
    float s = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; i++) {
        s += x[i] * y[i];
    }
    return s;
}

void REF(saxpy)(float a, const float *restrict x, const float *restrict y,
                float *restrict out, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        out[i] = a * x[i] + y[i];
    }
}

float REF(sum)(const float *restrict x, int64_t n)
{
    float s = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
    }
    return s;
}

/* At most this many threads take part in the prefix sum (their block sums
 * live on the stack). */
#define MAX_THREADS 1024

void REF(prefix_sum)(const int32_t *restrict x, int32_t *restrict out,
                     int64_t n)
{
    int32_t block_sum[MAX_THREADS + 1];
#pragma omp parallel
    {
        int nt = omp_get_num_threads();
        if (nt > MAX_THREADS) {
            nt = MAX_THREADS;
        }
        int t = omp_get_thread_num();
        int64_t lo = t < nt ? n * t / nt : n;
        int64_t hi = t < nt ? n * (t + 1) / nt : n;
        int32_t s = 0;
        for (int64_t i = lo; i < hi; i++) {
            s += x[i];
        }
        if (t < nt) {
            block_sum[t + 1] = s;
        }
#pragma omp barrier
#pragma omp single
        {
            block_sum[0] = 0;
            for (int k = 1; k <= nt; k++) {
                block_sum[k] += block_sum[k - 1];
            }
        }
        /* (single ends with a barrier) */
        if (t < nt) {
            int32_t carry = block_sum[t];
            for (int64_t i = lo; i < hi; i++) {
                carry += x[i];
                out[i] = carry;
            }
        }
    }
}

/* ---- Black-Scholes ------------------------------------------------------ */

#define RSQRT2PI 0.39894228040143267793994605993438f

static inline float cnd(float d)
{
    static const float c[5] = {0.31938153f, -0.356563782f, 1.781477937f,
                               -1.821255978f, 1.330274429f};
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float poly = c[4];
    for (int i = 3; i >= 0; i--) {
        poly = c[i] + k * poly;
    }
    float r = (RSQRT2PI * expf(-0.5f * (d * d))) * (k * poly);
    return d > 0.0f ? 1.0f - r : r;
}

void REF(black_scholes)(const float *restrict price,
                        const float *restrict strike,
                        const float *restrict years, float *restrict call,
                        float *restrict put, int64_t n, float riskfree,
                        float volatility)
{
    const float drift = riskfree + 0.5f * (volatility * volatility);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float s = price[i], x = strike[i], t = years[i];
        float v_sqrtt = volatility * sqrtf(t);
        float d1 = (logf(s / x) + drift * t) / v_sqrtt;
        float d2 = d1 - v_sqrtt;
        float c1 = cnd(d1), c2 = cnd(d2);
        float x_exprt = x * expf(-riskfree * t);
        call[i] = s * c1 - x_exprt * c2;
        put[i] = x_exprt * (1.0f - c2) - s * (1.0f - c1);
    }
}

/* ---- Mandelbrot --------------------------------------------------------- */

void REF(mandelbrot)(int64_t w, int64_t h, int32_t max_iter, float x0, float y0,
                     float dx, float dy, int32_t *restrict out)
{
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t py = 0; py < h; py++) {
        float ci = y0 + dy * (float)py;
        for (int64_t px = 0; px < w; px++) {
            float cr = x0 + dx * (float)px;
            float zr = 0.0f, zi = 0.0f;
            int32_t it = 0;
            while (it < max_iter && zr * zr + zi * zi <= 4.0f) {
                float nr = zr * zr - zi * zi + cr;
                zi = 2.0f * zr * zi + ci;
                zr = nr;
                it++;
            }
            out[py * w + px] = it;
        }
    }
}

/* ---- n-body ------------------------------------------------------------- */

void REF(nbody)(const float *restrict x, const float *restrict y,
                const float *restrict z, const float *restrict m,
                float *restrict ax, float *restrict ay, float *restrict az,
                int64_t n, float eps2)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float xi = x[i], yi = y[i], zi = z[i];
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
#pragma omp simd reduction(+ : sx, sy, sz)
        for (int64_t j = 0; j < n; j++) {
            float dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
            float r2 = dx * dx + dy * dy + dz * dz + eps2;
            float inv = 1.0f / sqrtf(r2);
            float s = m[j] * (inv * inv * inv);
            sx += dx * s;
            sy += dy * s;
            sz += dz * s;
        }
        ax[i] = sx;
        ay[i] = sy;
        az[i] = sz;
    }
}

/* ---- sparse matrix times vector (CSR) ----------------------------------- */

/* The first row of thread t's share when nt threads split the nonzeros
 * evenly: the row where the running count passes t / nt of them (a
 * binary search in rowptr).  Rows stay whole. */
static int64_t nnz_split(const int32_t *rowptr, int64_t nrows, int t, int nt)
{
    int64_t want = (int64_t)rowptr[nrows] * t / nt;
    int64_t lo = 0, hi = nrows;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (rowptr[mid] < want) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* y = A x, each thread a share of rows with as many nonzeros.  The row sum
 * is a plain loop, not an `omp simd` reduction: GCC 12 keeps such a
 * reduction's partial sums in a vector on the stack, stored and reloaded
 * at every vector step and summed across its lanes at the end of every
 * row, and a row of 10 runs entirely in the scalar remainder (still
 * through that stack slot).  On the banded matrix (10 a row), 2 threads
 * of the Zen 5 here: 5.8 ms with -ffast-math against 1.9 for the plain
 * loop, which GCC vectorises by itself there (a gather, the sum across
 * lanes in registers); 3.1 ms strict either way (in order, as C says).
 * 16 threads of a Xeon: strict 1.35 ms with `omp simd`, 0.86 plain
 * (bench/results/smvm-cpu.md). */
void REF(smvm)(const int32_t *restrict rowptr, const int32_t *restrict cols,
               const float *restrict vals, const float *restrict x,
               float *restrict y, int64_t nrows)
{
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t r0 = nnz_split(rowptr, nrows, t, nt);
        int64_t r1 = nnz_split(rowptr, nrows, t + 1, nt);
        for (int64_t r = r0; r < r1; r++) {
            float s = 0.0f;
            for (int32_t i = rowptr[r]; i < rowptr[r + 1]; i++) {
                s += vals[i] * x[cols[i]];
            }
            y[r] = s;
        }
    }
}

/* ---- Jacobi ------------------------------------------------------------- */

/* One step from u into v (h x w, clamped): rows in parallel, the first and
 * last columns apart so that the loop between them vectorises. */
static void jacobi_step(const float *restrict u, float *restrict v, int64_t h,
                        int64_t w)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < h; i++) {
        const float *n = u + (i > 0 ? i - 1 : 0) * w;
        const float *c = u + i * w;
        const float *s = u + (i < h - 1 ? i + 1 : h - 1) * w;
        float *o = v + i * w;
        if (w == 1) {
            o[0] = 0.25f * (((n[0] + s[0]) + c[0]) + c[0]);
            continue;
        }
        o[0] = 0.25f * (((n[0] + s[0]) + c[0]) + c[1]);
#pragma omp simd
        for (int64_t j = 1; j < w - 1; j++) {
            o[j] = 0.25f * (((n[j] + s[j]) + c[j - 1]) + c[j + 1]);
        }
        o[w - 1] = 0.25f * (((n[w - 1] + s[w - 1]) + c[w - 2]) + c[w - 1]);
    }
}

const float *REF(jacobi)(const float *restrict u, float *restrict buf0,
                         float *restrict buf1, int64_t h, int64_t w,
                         int32_t iterations)
{
    const float *from = u;
    float *bufs[2] = {buf0, buf1};
    for (int32_t it = 0; it < iterations; it++) {
        float *to = bufs[it & 1];
        jacobi_step(from, to, h, w);
        from = to;
    }
    return from;
}

/* ---- k-means ------------------------------------------------------------ */

#define KMEANS_MAX_K 64
#define KMEANS_MAX_THREADS 256

int32_t REF(kmeans)(const float *restrict px, const float *restrict py,
                    int64_t n, int k, float *restrict cx, float *restrict cy,
                    int32_t *restrict assign, int32_t max_iter)
{
    static float part_x[KMEANS_MAX_THREADS][KMEANS_MAX_K];
    static float part_y[KMEANS_MAX_THREADS][KMEANS_MAX_K];
    static int64_t part_n[KMEANS_MAX_THREADS][KMEANS_MAX_K];
    int64_t part_moved[KMEANS_MAX_THREADS];
    if (k > KMEANS_MAX_K) {
        return -1;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        assign[i] = -1;
    }
    int32_t iter = 0;
    int64_t moved = 1;
    while (moved > 0 && iter < max_iter) {
        int nt_used = 1;
#pragma omp parallel
        {
            int nt = omp_get_num_threads(), t = omp_get_thread_num();
            if (nt > KMEANS_MAX_THREADS) {
                nt = KMEANS_MAX_THREADS;
            }
            if (t == 0) {
                nt_used = nt;
            }
            if (t < nt) {
                float sx[KMEANS_MAX_K] = {0}, sy[KMEANS_MAX_K] = {0};
                int64_t cnt[KMEANS_MAX_K] = {0}, mv = 0;
                int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
                for (int64_t i = lo; i < hi; i++) {
                    float x = px[i], y = py[i];
                    float best = INFINITY;
                    int32_t bj = 0;
                    for (int j = 0; j < k; j++) {
                        float dx = x - cx[j], dy = y - cy[j];
                        float d = dx * dx + dy * dy;
                        if (d < best) {
                            best = d;
                            bj = j;
                        }
                    }
                    mv += assign[i] != bj;
                    assign[i] = bj;
                    sx[bj] += x;
                    sy[bj] += y;
                    cnt[bj]++;
                }
                for (int j = 0; j < k; j++) {
                    part_x[t][j] = sx[j];
                    part_y[t][j] = sy[j];
                    part_n[t][j] = cnt[j];
                }
                part_moved[t] = mv;
            }
        }
        moved = 0;
        for (int t = 0; t < nt_used; t++) {
            moved += part_moved[t];
        }
        for (int j = 0; j < k; j++) {
            float sx = 0.0f, sy = 0.0f;
            int64_t cnt = 0;
            for (int t = 0; t < nt_used; t++) {
                sx += part_x[t][j];
                sy += part_y[t][j];
                cnt += part_n[t][j];
            }
            if (cnt > 0) {
                cx[j] = sx / (float)cnt;
                cy[j] = sy / (float)cnt;
            }
        }
        iter++;
    }
    return iter;
}
