/*
 * bench/gpu/weft_gpu.c: the weft side of the GPU benchmark, a shared
 * library that bench/gpu/run.py drives through ctypes.
 *
 * It uses only the public API (weft.h).  For each program of gpubench.h
 * it builds the weft program (the formulations of bench/weft_bench.c),
 * compiles it in a context of its own (freed when the program closes, so
 * that weft's device memory goes back before the next program), waits for
 * its optimised code (weft_context_wait_optimised: tiered compilation),
 * makes the input arrays from the driver's host buffers and runs once,
 * which uploads them; they stay on the device from then on, since nothing
 * writes them on the host.  wg_run then times one weft_run as ref.cu times its runs, two
 * ways at once: CUDA events recorded on weft's stream (weft_context_stream)
 * before and after weft_run, through the functions the driver gives
 * (wg_set_events: ref.cu's rf_event_record and rf_event_finish), and the
 * host clock from before the first event to the moment the second has
 * completed (the result is then complete on the device; it is not
 * downloaded, and a scalar result is not read).  Without those functions,
 * or on a backend without a stream (interp, cpu), only the host clock,
 * up to weft_array_wait on the result (weft_run itself returns when the
 * work is done on the CPU).
 *
 * Also here, in plain C and with no weft: the input generators (a hash of
 * the element's index, so any implementation can be fed the same inputs),
 * the comparisons run.py uses for its checks, and a sequential reference
 * of every program (run.py --quick --backend cpu checks weft against it).
 *
 * Build (next to libweft.so):
 *   gcc -std=c17 -O2 -shared -fPIC -Iinclude bench/gpu/weft_gpu.c \
 *       -o bench_weft_gpu.so -L. -lweft -Wl,-rpath,'$ORIGIN' -lm
 *
 * Built with -DWG_PHASES_MAIN it is instead a program that prints, for
 * every program, where its first compile's time goes (weft_stats' phase
 * split: the frontend's passes, IR, LLVM's optimisation, PTX emission,
 * the driver's compile and load of PTX, the disk cache), each compile in a
 * new context on a new, empty disk cache, and what a second compile in
 * another new context on that cache costs (the disk hit); the last column,
 * "tiered", is the time from the first compile's start until its
 * optimised code was in place (weft_context_wait_optimised):
 *   gcc -std=c17 -O2 -DWG_PHASES_MAIN -Iinclude bench/gpu/weft_gpu.c \
 *       -o wg_phases -L. -lweft -Wl,-rpath,'$ORIGIN' -lm && ./wg_phases
 * (a backend name as argument: interp, cpu, ptx; ptx by default).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../programs.h"
#include "gpubench.h"
#include "weft.h"
#include "../programs.h" /* Jacobi (bp_jacobi) */

#define WG_API __attribute__((visibility("default")))
#define MAX_IN 4

/* ---- errors, clock, configuration ---------------------------------------- */

static char wg_msg[512];
static int (*wg_record)(int which, void *stream);
static double (*wg_finish)(void);
static weft_backend wg_backend = WEFT_BACKEND_PTX;
static char wg_cache[1024];

static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(wg_msg, sizeof wg_msg, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_weft(const char *what)
{
    return fail("%s: %s", what, weft_last_error());
}

/* The message of the last failure. */
WG_API const char *wg_error(void)
{
    return wg_msg;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* The backend (0 interp, 1 cpu, 2 ptx) and disk cache directory (NULL:
 * weft's default) of the contexts opened from now on. */
WG_API void wg_configure(int backend, const char *cache_dir)
{
    wg_backend = (weft_backend)backend;
    snprintf(wg_cache, sizeof wg_cache, "%s", cache_dir ? cache_dir : "");
}

/* How wg_run times a run by CUDA events on weft's stream: record(0 or 1,
 * stream) records the first or second event, finish() waits for the
 * second and gives the ms between them (see the head comment; NULL: no
 * events). */
WG_API void wg_set_events(int (*record)(int which, void *stream),
                          double (*finish)(void))
{
    wg_record = record;
    wg_finish = finish;
}

static weft_status open_context(const char *dir, weft_context **ctx)
{
    weft_config cfg = weft_config_default();
    cfg.backend = wg_backend;
    cfg.cache_dir = dir && dir[0] ? dir : NULL;
    return weft_context_create(&cfg, ctx);
}

/* ---- inputs and checks (plain C) ---------------------------------------- */

static uint64_t mix(uint64_t z) /* splitmix64's finaliser */
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* x[i] uniform in [lo, hi) (24 random bits), a function of (seed, i). */
WG_API void wg_fill_f32(float *x, int64_t n, float lo, float hi, uint64_t seed)
{
    uint64_t s = mix(seed);
    for (int64_t i = 0; i < n; i++) {
        uint32_t r = (uint32_t)(mix(s ^ (uint64_t)i) >> 40);
        x[i] = lo + (hi - lo) * (float)r * (1.0f / 16777216.0f);
    }
}

/* x[i] = k / 16, k uniform in 0 .. 15: sums of these are exact in f32
 * longer, so that the checks of sum and dotp see the order only. */
WG_API void wg_fill_f32_16ths(float *x, int64_t n, uint64_t seed)
{
    uint64_t s = mix(seed);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)(mix(s ^ (uint64_t)i) >> 60) * 0.0625f;
    }
}

/* x[i] uniform in 0 .. m - 1. */
WG_API void wg_fill_i32(int32_t *x, int64_t n, int32_t m, uint64_t seed)
{
    uint64_t s = mix(seed);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (int32_t)((mix(s ^ (uint64_t)i) >> 32) % (uint64_t)m);
    }
}

/* The number of i where |a[i] - b[i]| / max(floor, |b[i]|) > tol (NaN
 * counts); *max_err gets the largest such measure. */
WG_API int64_t wg_compare_f32(const float *a, const float *b, int64_t n,
                              double floor, double tol, double *max_err)
{
    int64_t bad = 0;
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / fmax(floor, fabs(b[i]));
        if (!(d <= tol)) {
            bad++;
        }
        if (!(d <= e)) {
            e = d;
        }
    }
    *max_err = e;
    return bad;
}

/* The number of i where a[i] != b[i]. */
WG_API int64_t wg_compare_i32(const int32_t *a, const int32_t *b, int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bad += a[i] != b[i];
    }
    return bad;
}

WG_API double wg_max_abs_f32(const float *a, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        m = fmax(m, fabs(a[i]));
    }
    return m;
}

WG_API double wg_sum_i32(const int32_t *a, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += a[i];
    }
    return s;
}

/* ---- the sequential C reference ----------------------------------------- */

static float cnd(float d)
{
    static const float c[5] = {0.31938153f, -0.356563782f, 1.781477937f,
                               -1.821255978f, 1.330274429f};
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float poly = c[4];
    for (int i = 3; i >= 0; i--) {
        poly = c[i] + k * poly;
    }
    float r = (GB_RSQRT2PI * expf(-0.5f * (d * d))) * (k * poly);
    return d > 0.0f ? 1.0f - r : r;
}

static void nbody_c(const gb_shape *s, const float *const *in, float *ax,
                    float *ay, float *az)
{
    const float *x = in[0], *y = in[1], *z = in[2], *m = in[3];
    for (int64_t i = 0; i < s->n; i++) {
        double sx = 0, sy = 0, sz = 0;
        for (int64_t j = 0; j < s->n; j++) {
            float dx = x[j] - x[i], dy = y[j] - y[i], dz = z[j] - z[i];
            float r2 = dx * dx + dy * dy + dz * dz + s->eps2;
            float inv = 1.0f / sqrtf(r2);
            float f = m[j] * (inv * inv * inv);
            sx += dx * f;
            sy += dy * f;
            sz += dz * f;
        }
        ax[i] = (float)sx;
        ay[i] = (float)sy;
        az[i] = (float)sz;
    }
}

/* ---- smvm and k-means: inputs and references (helper smvm) -------------- */

/* The CSR matrix of the last wg_smvm_make. */
static bp_csr sv_matrix;

/* Make the matrix of smvm (bench/programs.h, as bench/weft_bench.c: 10
 * nonzeros a row on average over n columns; banded n x n, or power-law
 * rows of 1 to 10^4) and keep it for wg_smvm_copy: dims[0..2] get its
 * rows, nonzeros and columns.  Returns 0, or -1 (out of memory). */
WG_API int wg_smvm_make(int powerlaw, int64_t n, int64_t *dims)
{
    bp_csr_free(&sv_matrix);
    int ok = powerlaw ? bp_csr_powerlaw(&sv_matrix, n * 10, n, 10000, 0x5eed)
                      : bp_csr_banded(&sv_matrix, n, 10, 0x5eed);
    if (!ok) {
        return fail("wg_smvm_make: out of memory");
    }
    dims[0] = sv_matrix.nrows;
    dims[1] = sv_matrix.nnz;
    dims[2] = sv_matrix.ncols;
    return 0;
}

/* Copy the matrix of wg_smvm_make out (sizes from its dims) and free it. */
WG_API void wg_smvm_copy(float *vals, int32_t *cols, int32_t *rowlen,
                         int32_t *rowptr)
{
    const bp_csr *m = &sv_matrix;
    memcpy(vals, m->vals, sizeof *vals * (size_t)m->nnz);
    memcpy(cols, m->cols, sizeof *cols * (size_t)m->nnz);
    memcpy(rowlen, m->rowlen, sizeof *rowlen * (size_t)m->nrows);
    memcpy(rowptr, m->rowptr, sizeof *rowptr * (size_t)(m->nrows + 1));
    bp_csr_free(&sv_matrix);
}

/* k-means' points (bench/programs.h: k blobs) into px, py (n each), the
 * first k also into cx, cy. */
WG_API void wg_kmeans_points(float *px, float *py, int64_t n, int32_t k,
                             float *cx, float *cy)
{
    bp_kmeans_points(px, py, n, k, 2.5f, 0x5eed);
    memcpy(cx, px, sizeof *cx * (size_t)k);
    memcpy(cy, py, sizeof *cy * (size_t)k);
}

/* smvm and k-means sequentially (gpubench.h's inputs and outputs). */
static int sv_cref(int prog, const gb_shape *s, const void *const *in,
                   void *const *out)
{
    if (prog == GB_SMVM_BANDED || prog == GB_SMVM_POWER) {
        const float *vals = in[0], *x = in[3];
        const int32_t *cols = in[1], *rowptr = in[4];
        float *y = out[0];
        for (int64_t r = 0; r < s->n; r++) {
            double acc = 0;
            for (int32_t k = rowptr[r]; k < rowptr[r + 1]; k++) {
                acc += (double)vals[k] * x[cols[k]];
            }
            y[r] = (float)acc;
        }
        return 0;
    }
    const float *px = in[0], *py = in[1];
    int k = s->bins;
    float *r = out[0]; /* cx, cy, iterations */
    int32_t *assign = malloc(sizeof *assign * (size_t)(s->n ? s->n : 1));
    double *acc = malloc(sizeof *acc * 3 * (size_t)k);
    if (!assign || !acc) {
        free(assign);
        free(acc);
        return fail("wg_cref: out of memory");
    }
    memcpy(r, in[2], sizeof(float) * (size_t)k);
    memcpy(r + k, in[3], sizeof(float) * (size_t)k);
    for (int64_t i = 0; i < s->n; i++) {
        assign[i] = -1;
    }
    int32_t it = 0, moved = 1;
    while (moved > 0 && it < s->max_iter) {
        memset(acc, 0, sizeof *acc * 3 * (size_t)k);
        moved = 0;
        for (int64_t i = 0; i < s->n; i++) {
            int32_t best = 0;
            float bd = INFINITY;
            for (int j = 0; j < k; j++) {
                float dx = px[i] - r[j], dy = py[i] - r[k + j];
                float d = dx * dx + dy * dy;
                if (d < bd) {
                    bd = d;
                    best = j;
                }
            }
            moved += best != assign[i];
            assign[i] = best;
            acc[3 * best] += px[i];
            acc[3 * best + 1] += py[i];
            acc[3 * best + 2] += 1;
        }
        for (int j = 0; j < k; j++) {
            if (acc[3 * j + 2] > 0) {
                r[j] = (float)(acc[3 * j] / acc[3 * j + 2]);
                r[k + j] = (float)(acc[3 * j + 1] / acc[3 * j + 2]);
            }
        }
        it++;
    }
    r[2 * k] = (float)it;
    free(assign);
    free(acc);
    return 0;
}

/* The elements of input i of program prog (smvm's and k-means' inputs
 * differ in length; every other program's are all n long). */
static int64_t sv_input_len(int prog, int i, const gb_shape *s)
{
    switch (prog) {
    case GB_SMVM_BANDED:
    case GB_SMVM_POWER: {
        const int64_t len[4] = {s->h, s->h, s->n + 1, s->bins}; /* rowptr */
        return len[i];
    }
    case GB_KMEANS:
    case GB_KMEANS_WHILE: return i < 2 ? s->n : s->bins;
    }
    return s->n;
}

/* k-means of bench/programs.h, its three results (cx, cy, iterations) as
 * one f32 array of 2 k + 1: [cx, cy, iterations]. */
static weft_acc *sv_build_kmeans(weft_context *ctx, weft_program *p,
                                 weft_acc *const *x, const gb_shape *s,
                                 int by_while)
{
    weft_acc *r =
        bp_kmeans(ctx, p, x[0], x[1], x[2], x[3], s->max_iter, by_while);
    weft_acc *cx = weft_aget(r, 0), *cy = weft_aget(r, 1);
    weft_acc *it = weft_aget(r, 2);
    weft_exp *k = weft_size(cx);
    weft_exp *itf = weft_convert(weft_the(it), WEFT_F32);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_exp *last = weft_sub(k, weft_i64(p, 1));
    weft_exp *ix = weft_prim2(WEFT_OP_MIN, i, last);
    weft_exp *iy = weft_prim2(WEFT_OP_MAX, weft_i64(p, 0),
                              weft_prim2(WEFT_OP_MIN, weft_sub(i, k), last));
    /* the count added, not chosen by a conditional: a conditional whose
     * other side is a free scalar fails the CPU's SPMD code (LLVM: PHI
     * node operands are not the same type as the result) */
    weft_exp *two_k = weft_add(k, k);
    weft_exp *v = weft_add(
        weft_cond(weft_lt(i, k), weft_at(cx, weft_index1(ix)),
                  weft_cond(weft_lt(i, two_k), weft_at(cy, weft_index1(iy)),
                            weft_f32(p, 0))),
        weft_mul(itf, weft_convert(weft_eq(i, two_k), WEFT_F32)));
    weft_fun_return(g, v);
    return weft_generate(weft_index1(weft_add(weft_add(k, k), weft_i64(p, 1))),
                         g);
}
/* -- Jacobi (stencil) -- */

/* max_iter 5-point steps of the h x n grid u into r, clamped, in
 * bp_jacobi's order of operations (0.25 * (((n + s) + w) + e)).  Returns
 * 0, or -1 when out of memory. */
static int jacobi_c(const gb_shape *s, const float *u, float *r)
{
    int64_t h = s->h, w = s->n;
    float *tmp = malloc((size_t)(h * w) * sizeof *tmp);
    if (!tmp) {
        return fail("wg_cref: out of memory");
    }
    /* the last step writes r: start in r or tmp by the parity */
    float *bufs[2] = {s->max_iter % 2 ? r : tmp, s->max_iter % 2 ? tmp : r};
    memcpy(r, u, (size_t)(h * w) * sizeof *r);
    const float *from = u;
    for (int32_t it = 0; it < s->max_iter; it++) {
        float *to = bufs[it % 2];
        for (int64_t y = 0; y < h; y++) {
            int64_t yn = y > 0 ? y - 1 : 0, ys = y + 1 < h ? y + 1 : h - 1;
            for (int64_t x = 0; x < w; x++) {
                int64_t xw = x > 0 ? x - 1 : 0, xe = x + 1 < w ? x + 1 : w - 1;
                to[y * w + x] =
                    0.25f * (((from[yn * w + x] + from[ys * w + x]) +
                              from[y * w + xw]) +
                             from[y * w + xe]);
            }
        }
        from = to;
    }
    free(tmp);
    return 0;
}

/* -- end Jacobi -- */

/* Program prog in plain C, sequentially (sums in double): in and out as
 * in gpubench.h.  For checking at small sizes. */
WG_API int wg_cref(int prog, const gb_shape *s, const void *const *in,
                   void *const *out)
{
    int64_t n = s->n;
    const float *x = in ? in[0] : NULL;
    switch (prog) {
    case GB_SAXPY: {
        const float *y = in[1];
        float *r = out[0];
        for (int64_t i = 0; i < n; i++) {
            r[i] = s->a * x[i] + y[i];
        }
        return 0;
    }
    case GB_SUM:
    case GB_DOTP: {
        double acc = 0;
        for (int64_t i = 0; i < n; i++) {
            acc += prog == GB_SUM ? x[i]
                                  : (double)x[i] * ((const float *)in[1])[i];
        }
        *(float *)out[0] = (float)acc;
        return 0;
    }
    case GB_SCAN: {
        const int32_t *a = in[0];
        int32_t *r = out[0];
        uint32_t acc = 0;
        for (int64_t i = 0; i < n; i++) {
            acc += (uint32_t)a[i];
            r[i] = (int32_t)acc;
        }
        return 0;
    }
    case GB_BS: {
        const float *strike = in[1], *years = in[2];
        float *call = out[0], *put = out[1];
        const float drift =
            GB_RISKFREE + 0.5f * (GB_VOLATILITY * GB_VOLATILITY);
        for (int64_t i = 0; i < n; i++) {
            float sp = x[i], k = strike[i], t = years[i];
            float v_sqrtt = GB_VOLATILITY * sqrtf(t);
            float d1 = (logf(sp / k) + drift * t) / v_sqrtt;
            float d2 = d1 - v_sqrtt;
            float c1 = cnd(d1), c2 = cnd(d2);
            float x_exprt = k * expf(-GB_RISKFREE * t);
            call[i] = sp * c1 - x_exprt * c2;
            put[i] = x_exprt * (1.0f - c2) - sp * (1.0f - c1);
        }
        return 0;
    }
    case GB_NBODY:
    case GB_NBODY_FOLD:
        nbody_c(s, (const float *const *)in, out[0], out[1], out[2]);
        return 0;
    case GB_MANDEL: {
        int32_t *r = out[0];
        for (int64_t py = 0; py < s->h; py++) {
            float ci = s->y0 + s->dy * (float)py;
            for (int64_t px = 0; px < s->n; px++) {
                float cr = s->x0 + s->dx * (float)px;
                float zr = 0.0f, zi = 0.0f;
                int32_t it = 0;
                while (it < s->max_iter && zr * zr + zi * zi <= 4.0f) {
                    float nr = zr * zr - zi * zi + cr;
                    zi = 2.0f * zr * zi + ci;
                    zr = nr;
                    it++;
                }
                r[py * s->n + px] = it;
            }
        }
        return 0;
    }
    case GB_HIST: {
        const int32_t *k = in[0];
        int32_t *r = out[0];
        memset(r, 0, (size_t)s->bins * sizeof(int32_t));
        for (int64_t i = 0; i < n; i++) {
            r[k[i]]++;
        }
        return 0;
    }
    case GB_SMVM_BANDED:
    case GB_SMVM_POWER:
    case GB_KMEANS:
    case GB_KMEANS_WHILE: return sv_cref(prog, s, in, out);
    case GB_JACOBI:
    case GB_JACOBI_LOOP: return jacobi_c(s, x, out[0]);
    }
    return fail("wg_cref: no program %d", prog);
}

/* ---- the weft programs --------------------------------------------------- */

static weft_fun *binop(weft_program *p, weft_type t, weft_op op)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_prim2(op, weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* A function of a rank-1 index that returns the constant c. */
static weft_fun *const_fun(weft_program *p, weft_exp *c)
{
    weft_fun *f = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(f, c);
    return f;
}

/* N(d), Abramowitz and Stegun 26.2.17 (as bench/weft_bench.c). */
static weft_exp *cnd_term(weft_program *p, weft_exp *d)
{
    static const float c[5] = {0.31938153f, -0.356563782f, 1.781477937f,
                               -1.821255978f, 1.330274429f};
    weft_exp *k =
        weft_fdiv(weft_f32(p, 1),
                  weft_add(weft_f32(p, 1),
                           weft_mul(weft_f32(p, 0.2316419f), weft_abs(d))));
    weft_exp *poly = weft_f32(p, c[4]);
    for (int i = 3; i >= 0; i--) {
        poly = weft_add(weft_f32(p, c[i]), weft_mul(k, poly));
    }
    weft_exp *r = weft_mul(
        weft_mul(weft_f32(p, GB_RSQRT2PI),
                 weft_fexp(weft_mul(weft_f32(p, -0.5f), weft_mul(d, d)))),
        weft_mul(k, poly));
    return weft_cond(weft_gt(d, weft_f32(p, 0)), weft_sub(weft_f32(p, 1), r),
                     r);
}

static weft_acc *build_bs(weft_program *p, weft_acc *const *in)
{
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_exp *s = weft_arg(f, 0), *x = weft_arg(f, 1), *t = weft_arg(f, 2);
    weft_exp *r = weft_f32(p, GB_RISKFREE);
    weft_exp *v = weft_f32(p, GB_VOLATILITY);
    weft_exp *v_sqrtt = weft_mul(v, weft_sqrt(t));
    weft_exp *drift =
        weft_f32(p, GB_RISKFREE + 0.5f * (GB_VOLATILITY * GB_VOLATILITY));
    weft_exp *d1 = weft_fdiv(
        weft_add(weft_log(weft_fdiv(s, x)), weft_mul(drift, t)), v_sqrtt);
    weft_exp *d2 = weft_sub(d1, v_sqrtt);
    weft_exp *c1 = cnd_term(p, d1), *c2 = cnd_term(p, d2);
    weft_exp *x_exprt = weft_mul(x, weft_fexp(weft_mul(weft_neg(r), t)));
    weft_exp *one = weft_f32(p, 1);
    weft_exp *res[2] = {weft_sub(weft_mul(s, c1), weft_mul(x_exprt, c2)),
                        weft_sub(weft_mul(x_exprt, weft_sub(one, c2)),
                                 weft_mul(s, weft_sub(one, c1)))};
    weft_fun_return(f, weft_tuple(p, 2, res));
    return weft_zipwith3(f, in[0], in[1], in[2]);
}

/* The pull of body j on body i, a 3-tuple (as bench/weft_bench.c). */
static weft_exp *interaction(weft_program *p, weft_acc *const *in, weft_exp *i,
                             weft_exp *j, float eps2)
{
    weft_exp *ii = weft_index1(i), *jj = weft_index1(j);
    weft_exp *d[3];
    for (int k = 0; k < 3; k++) {
        d[k] = weft_sub(weft_at(in[k], jj), weft_at(in[k], ii));
    }
    weft_exp *r2 =
        weft_add(weft_add(weft_add(weft_mul(d[0], d[0]), weft_mul(d[1], d[1])),
                          weft_mul(d[2], d[2])),
                 weft_f32(p, eps2));
    weft_exp *inv = weft_fdiv(weft_f32(p, 1), weft_sqrt(r2));
    weft_exp *s =
        weft_mul(weft_at(in[3], jj), weft_mul(weft_mul(inv, inv), inv));
    weft_exp *c[3] = {weft_mul(d[0], s), weft_mul(d[1], s), weft_mul(d[2], s)};
    return weft_tuple(p, 3, c);
}

/* generate n (\i -> while over j: acc + pull j i) */
static weft_acc *build_nbody_while(weft_context *ctx, weft_program *p,
                                   weft_acc *const *in, float eps2)
{
    weft_type st = weft_type_tuple(
        ctx, 4, (weft_type[]){WEFT_I64, WEFT_F32, WEFT_F32, WEFT_F32});
    weft_exp *n = weft_size(in[0]);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);

    weft_fun *cond = weft_fun1(p, st);
    weft_fun_return(cond, weft_lt(weft_get(weft_arg(cond, 0), 0), n));

    weft_fun *body = weft_fun1(p, st);
    weft_exp *s = weft_arg(body, 0);
    weft_exp *j = weft_get(s, 0);
    weft_exp *c = interaction(p, in, i, j, eps2);
    weft_exp *next[4] = {weft_add(j, weft_i64(p, 1)),
                         weft_add(weft_get(s, 1), weft_get(c, 0)),
                         weft_add(weft_get(s, 2), weft_get(c, 1)),
                         weft_add(weft_get(s, 3), weft_get(c, 2))};
    weft_fun_return(body, weft_tuple(p, 4, next));

    weft_exp *init[4] = {weft_i64(p, 0), weft_f32(p, 0), weft_f32(p, 0),
                         weft_f32(p, 0)};
    weft_exp *r = weft_while(cond, body, weft_tuple(p, 4, init));
    weft_exp *acc[3] = {weft_get(r, 1), weft_get(r, 2), weft_get(r, 3)};
    weft_fun_return(g, weft_tuple(p, 3, acc));
    return weft_generate(weft_index1(n), g);
}

/* fold (+3) (0,0,0) (generate (n, n) (\(i, j) -> pull j i)) */
static weft_acc *build_nbody_fold(weft_context *ctx, weft_program *p,
                                  weft_acc *const *in, float eps2)
{
    weft_type v3 =
        weft_type_tuple(ctx, 3, (weft_type[]){WEFT_F32, WEFT_F32, WEFT_F32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_fun_return(g,
                    interaction(p, in, weft_get(ix, 0), weft_get(ix, 1), eps2));
    weft_exp *n = weft_size(in[0]);
    weft_acc *all = weft_generate(weft_index2(n, n), g);
    weft_fun *plus = weft_fun2(p, v3, v3);
    weft_exp *a = weft_arg(plus, 0), *b = weft_arg(plus, 1), *c[3], *z[3];
    for (int k = 0; k < 3; k++) {
        c[k] = weft_add(weft_get(a, k), weft_get(b, k));
        z[k] = weft_f32(p, 0);
    }
    weft_fun_return(plus, weft_tuple(p, 3, c));
    return weft_fold(plus, weft_tuple(p, 3, z), all);
}

/* generate (h, w) (\(i, j) -> the iterations of a while over (zr, zi, k)) */
static weft_acc *build_mandel(weft_context *ctx, weft_program *p,
                              const gb_shape *s)
{
    weft_type st =
        weft_type_tuple(ctx, 3, (weft_type[]){WEFT_F32, WEFT_F32, WEFT_I32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *ci = weft_add(
        weft_f32(p, s->y0),
        weft_mul(weft_f32(p, s->dy), weft_convert(weft_get(ix, 0), WEFT_F32)));
    weft_exp *cr = weft_add(
        weft_f32(p, s->x0),
        weft_mul(weft_f32(p, s->dx), weft_convert(weft_get(ix, 1), WEFT_F32)));

    weft_fun *cond = weft_fun1(p, st);
    weft_exp *z = weft_arg(cond, 0);
    weft_exp *zr = weft_get(z, 0), *zi = weft_get(z, 1), *it = weft_get(z, 2);
    weft_fun_return(
        cond, weft_and(weft_lt(it, weft_i32(p, s->max_iter)),
                       weft_le(weft_add(weft_mul(zr, zr), weft_mul(zi, zi)),
                               weft_f32(p, 4))));

    weft_fun *body = weft_fun1(p, st);
    z = weft_arg(body, 0);
    zr = weft_get(z, 0);
    zi = weft_get(z, 1);
    it = weft_get(z, 2);
    weft_exp *next[3] = {
        weft_add(weft_sub(weft_mul(zr, zr), weft_mul(zi, zi)), cr),
        weft_add(weft_mul(weft_mul(weft_f32(p, 2), zr), zi), ci),
        weft_add(it, weft_i32(p, 1))};
    weft_fun_return(body, weft_tuple(p, 3, next));

    weft_exp *init[3] = {weft_f32(p, 0), weft_f32(p, 0), weft_i32(p, 0)};
    weft_fun_return(
        g, weft_get(weft_while(cond, body, weft_tuple(p, 3, init)), 2));
    return weft_generate(weft_index2(weft_i64(p, s->h), weft_i64(p, s->n)), g);
}

/* permute (+) (generate bins 0) (\i -> keys ! i) (generate n 1) */
static weft_acc *build_hist(weft_program *p, weft_acc *keys, int32_t bins)
{
    weft_acc *zeros = weft_generate(weft_index1(weft_i64(p, bins)),
                                    const_fun(p, weft_i32(p, 0)));
    weft_acc *ones =
        weft_generate(weft_shape(keys), const_fun(p, weft_i32(p, 1)));
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(weft_at(keys, weft_arg(ix, 0)),
                                                 WEFT_I64)));
    return weft_permute(binop(p, WEFT_I32, WEFT_OP_ADD), zeros, ix, ones);
}

/* The parameters (type, count) of each program, in gpubench.h's order. */
static int prog_inputs(int prog, weft_type *t)
{
    switch (prog) {
    case GB_SAXPY:
    case GB_DOTP: t[0] = t[1] = WEFT_F32; return 2;
    case GB_SUM: t[0] = WEFT_F32; return 1;
    case GB_SCAN:
    case GB_HIST: t[0] = WEFT_I32; return 1;
    case GB_BS: t[0] = t[1] = t[2] = WEFT_F32; return 3;
    case GB_NBODY:
    case GB_NBODY_FOLD: t[0] = t[1] = t[2] = t[3] = WEFT_F32; return 4;
    case GB_MANDEL: return 0;
    case GB_SMVM_BANDED:
    case GB_SMVM_POWER:
        t[0] = t[3] = WEFT_F32;
        t[1] = t[2] = WEFT_I32;
        return 4;
    case GB_KMEANS:
    case GB_KMEANS_WHILE: t[0] = t[1] = t[2] = t[3] = WEFT_F32; return 4;
    case GB_JACOBI:
    case GB_JACOBI_LOOP: t[0] = WEFT_F32; return 1;
    }
    return -1;
}

/* The shape of program prog's inputs (all alike) into shape; returns the
 * rank: Jacobi's grid h x n, else n. */
static int prog_input_shape(int prog, const gb_shape *s, int64_t *shape)
{
    if (prog == GB_JACOBI || prog == GB_JACOBI_LOOP) {
        shape[0] = s->h;
        shape[1] = s->n;
        return 2;
    }
    shape[0] = s->n;
    return 1;
}

static weft_acc *build(int prog, weft_context *ctx, weft_program *p,
                       weft_acc *const *x, const gb_shape *s)
{
    switch (prog) {
    case GB_SAXPY: {
        weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(f, weft_add(weft_mul(weft_f32(p, s->a), weft_arg(f, 0)),
                                    weft_arg(f, 1)));
        return weft_zipwith(f, x[0], x[1]);
    }
    case GB_SUM:
        return weft_fold_all(binop(p, WEFT_F32, WEFT_OP_ADD), weft_f32(p, 0),
                             x[0]);
    case GB_DOTP:
        return weft_fold(
            binop(p, WEFT_F32, WEFT_OP_ADD), weft_f32(p, 0),
            weft_zipwith(binop(p, WEFT_F32, WEFT_OP_MUL), x[0], x[1]));
    case GB_SCAN: return weft_scanl1(binop(p, WEFT_I32, WEFT_OP_ADD), x[0]);
    case GB_BS: return build_bs(p, x);
    case GB_NBODY: return build_nbody_while(ctx, p, x, s->eps2);
    case GB_NBODY_FOLD: return build_nbody_fold(ctx, p, x, s->eps2);
    case GB_MANDEL: return build_mandel(ctx, p, s);
    case GB_HIST: return build_hist(p, x[0], s->bins);
    case GB_SMVM_BANDED:
    case GB_SMVM_POWER: return bp_smvm(p, x[0], x[1], x[2], x[3]);
    case GB_KMEANS: return sv_build_kmeans(ctx, p, x, s, 0);
    case GB_KMEANS_WHILE: return sv_build_kmeans(ctx, p, x, s, 1);
    case GB_JACOBI: return bp_jacobi(p, x[0], s->max_iter);
    case GB_JACOBI_LOOP: return bp_jacobi_step(p, x[0]);
    }
    return NULL;
}

/* ---- sessions: one compiled program and its inputs ------------------------ */

typedef struct session {
    weft_context *ctx;
    weft_program *p;
    weft_executable *exe;
    weft_array *in[MAX_IN];
    int nin;
    int scalar;        /* the result is rank 0 */
    void *stream;      /* weft's CUDA stream (NULL: none, not ptx) */
    double compile_ms; /* wall time of weft_compile */
    int32_t steps;     /* Jacobi's host loop: runs of one step per run */
    weft_stats after;  /* the context's counters after the compile */
} session;

static session sessions[GB_NPROG];

static session *session_of(int prog)
{
    return prog >= 0 && prog < GB_NPROG && sessions[prog].exe ? &sessions[prog]
                                                              : NULL;
}

/* Close program prog: free its executable, arrays and context. */
WG_API void wg_close(int prog)
{
    if (prog < 0 || prog >= GB_NPROG) {
        return;
    }
    session *s = &sessions[prog];
    for (int i = 0; i < MAX_IN; i++) {
        weft_array_release(s->in[i]);
    }
    weft_executable_free(s->exe);
    weft_program_free(s->p);
    weft_context_free(s->ctx);
    memset(s, 0, sizeof *s);
}

/* -- Jacobi (stencil): the host loop -- */

/* s->steps runs of the one-step executable, each on the last one's
 * result (the first on the input), each result released once the next
 * run is queued: the results stay on the device, and their buffers go
 * back to weft's pool for the run after the next (two buffers in turn,
 * as ref.cu's launches ping-pong).  weft_run_into into host arrays would
 * download every step (r3 on the H100: 29 ms a step).  *out gets the last
 * result.  Returns 0 or -1. */
static int run_steps(session *s, weft_array **out)
{
    weft_array *from = s->in[0];
    weft_array_retain(from);
    for (int32_t i = 0; i < s->steps; i++) {
        weft_array *to = NULL;
        weft_status st = weft_run(s->exe, &from, 1, &to, 1);
        weft_array_release(from);
        if (st) {
            return fail_weft("weft_run");
        }
        from = to;
    }
    *out = from;
    return 0;
}

/* -- end Jacobi -- */

/* Run s once; *out gets the result (the caller releases it).  Waits for
 * the result as the comment at the top says; *event_ms gets the events'
 * time, or -1 when there are none. */
static int run_wait(session *s, weft_array **out, double *event_ms)
{
    *out = NULL;
    *event_ms = -1;
    bool events = wg_record && wg_finish && s->stream;
    if (events && wg_record(0, s->stream)) {
        return fail("wg_run: the first event could not be recorded");
    }
    if (s->steps > 0                              ? run_steps(s, out)
        : weft_run(s->exe, s->in, s->nin, out, 1) ? fail_weft("weft_run")
                                                  : 0) {
        return -1;
    }
    if (events) {
        if (wg_record(1, s->stream) || (*event_ms = wg_finish()) < 0) {
            weft_array_release(*out);
            *out = NULL;
            return fail("wg_run: the second event failed");
        }
    } else if (weft_array_wait(*out)) {
        weft_array_release(*out);
        *out = NULL;
        return fail_weft("weft_array_wait");
    }
    return 0;
}

/* Open program prog of size *sh in a new context: build, compile (timed),
 * make the inputs from the host buffers in[] (copied) and run once.
 * Returns 0, or -1 with wg_error() set (nothing stays open). */
WG_API int wg_open(int prog, const gb_shape *sh, const void *const *in)
{
    weft_type t[MAX_IN];
    int nin = prog_inputs(prog, t);
    if (nin < 0) {
        return fail("wg_open: no program %d", prog);
    }
    wg_close(prog);
    session *s = &sessions[prog];
    if (open_context(wg_cache, &s->ctx)) {
        return fail_weft("weft_context_create");
    }
    if (weft_program_create(s->ctx, &s->p)) {
        fail_weft("weft_program_create");
        wg_close(prog);
        return -1;
    }
    int64_t shape[2];
    int rank = prog_input_shape(prog, sh, shape);
    weft_acc *x[MAX_IN];
    for (int i = 0; i < nin; i++) {
        x[i] = weft_param(s->p, t[i], rank);
    }
    weft_acc *r = build(prog, s->ctx, s->p, x, sh);
    double t0 = now_ms();
    weft_executable *exe = NULL;
    if (weft_compile(s->p, &r, 1, &exe)) {
        fail_weft("weft_compile");
        wg_close(prog);
        return -1;
    }
    s->compile_ms = now_ms() - t0;
    s->exe = exe;
    /* runs are timed on the optimised code (tiered compilation) */
    if (weft_context_wait_optimised(s->ctx)) {
        fail_weft("weft_context_wait_optimised");
        wg_close(prog);
        return -1;
    }
    s->scalar = weft_acc_rank(r) == 0;
    if (weft_context_stream(s->ctx, &s->stream)) {
        s->stream = NULL; /* interp, cpu: the host clock only */
    }
    weft_context_stats(s->ctx, &s->after);
    for (int i = 0; i < nin; i++) {
        /* rank 1: each input its own length (smvm, k-means); Jacobi's
         * grid: the shape */
        int64_t n = sv_input_len(prog, i, sh);
        const void *data[1] = {in[i]};
        if (weft_array_from_host(s->ctx, t[i], rank, rank == 1 ? &n : shape,
                                 data, &s->in[i])) {
            fail_weft("weft_array_from_host");
            wg_close(prog);
            return -1;
        }
        s->nin = i + 1;
    }
    if (prog == GB_JACOBI_LOOP) {
        s->steps = sh->max_iter;
    }
    weft_array *out;
    double ev;
    if (run_wait(s, &out, &ev)) {
        wg_close(prog);
        return -1;
    }
    weft_array_release(out);
    return 0;
}

/* One timed run of the open program prog: the host clock's milliseconds,
 * and in *event_ms the events' (-1: none), or -1 (wg_error). */
WG_API double wg_run(int prog, double *event_ms)
{
    *event_ms = -1;
    session *s = session_of(prog);
    if (!s) {
        fail("wg_run: program %d is not open", prog);
        return -1;
    }
    weft_array *out;
    double t0 = now_ms();
    if (run_wait(s, &out, event_ms)) {
        return -1;
    }
    double ms = now_ms() - t0;
    weft_array_release(out);
    return ms;
}

/* Run the open program prog once more and copy each leaf of its result
 * into out[leaf] (bytes[leaf] bytes each).  Returns 0 or -1. */
WG_API int wg_result(int prog, void *const *out, const int64_t *bytes)
{
    session *s = session_of(prog);
    if (!s) {
        return fail("wg_result: program %d is not open", prog);
    }
    weft_array *r;
    double ev;
    if (run_wait(s, &r, &ev)) {
        return -1;
    }
    int leaves = weft_type_leaves(s->ctx, weft_array_type(r));
    int rc = 0;
    for (int k = 0; k < leaves && rc == 0; k++) {
        if (weft_array_read(r, k, out[k], (size_t)bytes[k])) {
            rc = fail_weft("weft_array_read");
        }
    }
    weft_array_release(r);
    return rc;
}

/* The open program's compile: wall ms, and kernels compiled and loaded
 * from the disk cache by its context.  Returns the wall ms, -1 if closed. */
WG_API double wg_compile_info(int prog, int64_t *compiled, int64_t *loaded)
{
    session *s = session_of(prog);
    if (!s) {
        return -1;
    }
    *compiled = (int64_t)s->after.kernels_compiled;
    *loaded = (int64_t)s->after.kernels_loaded;
    return s->compile_ms;
}

/* The bytes the context of open program prog has handed between its
 * devices so far (weft_stats.device_bytes_moved: the partials of folds
 * and scans split over several GPUs), or -1 (wg_error). */
WG_API int64_t wg_moved(int prog)
{
    session *s = session_of(prog);
    if (!s) {
        fail("wg_moved: program %d is not open", prog);
        return -1;
    }
    weft_stats st;
    if (weft_context_stats(s->ctx, &st)) {
        fail_weft("weft_context_stats");
        return -1;
    }
    return (int64_t)st.device_bytes_moved;
}

/* The kernels of the open program's plan, their lines joined by "; " into
 * buf (cap bytes); returns how many, -1 if closed. */
WG_API int wg_plan(int prog, char *buf, int64_t cap)
{
    session *s = session_of(prog);
    buf[0] = 0;
    if (!s) {
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        return -1;
    }
    weft_executable_dump(s->exe, f);
    fclose(f);
    int n = 0;
    size_t used = 0;
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (end) {
            *end = 0;
        }
        if (strncmp(line, "kernel ", 7) == 0) {
            const char *c = strchr(line, ':');
            c = c ? c + 2 : line;
            int w = snprintf(buf + used, (size_t)cap - used, "%s%s",
                             n ? "; " : "", c);
            if (w > 0 && (size_t)w < (size_t)cap - used) {
                used += (size_t)w;
            }
            n++;
        }
        line = end ? end + 1 : NULL;
    }
    free(text);
    return n;
}

/* The name of the backend contexts get now ($WEFT_BACKEND may override
 * wg_configure's), or NULL with wg_error() set when none can be made. */
WG_API const char *wg_backend_name(void)
{
    weft_context *ctx;
    if (open_context(wg_cache, &ctx)) {
        fail_weft("weft_context_create");
        return NULL;
    }
    weft_backend b = weft_context_backend(ctx);
    weft_context_free(ctx);
    return b == WEFT_BACKEND_PTX   ? "ptx"
           : b == WEFT_BACKEND_CPU ? "cpu"
                                   : "interp";
}

/* ---- compile times of dotp (as bench/ptx_smoke.c) ------------------------ */

static int compile_dotp(weft_context *ctx, double *ms)
{
    weft_program *p;
    if (weft_program_create(ctx, &p)) {
        return fail_weft("weft_program_create");
    }
    weft_acc *x[2] = {weft_param(p, WEFT_F32, 1), weft_param(p, WEFT_F32, 1)};
    weft_acc *d = build(GB_DOTP, ctx, p, x, NULL);
    weft_executable *exe = NULL;
    double t0 = now_ms();
    weft_status st = weft_compile(p, &d, 1, &exe);
    *ms = now_ms() - t0;
    if (st) {
        fail_weft("weft_compile");
    }
    weft_executable_free(exe);
    weft_program_free(p);
    return st ? -1 : 0;
}

/* Compile dotp in a new context on the cache directory dir (which should
 * be empty: the first compile, IR to cubin), then in a second new context
 * on the same directory (from the disk cache).  ms[0], ms[1]: the wall
 * times; k[0]: kernels compiled by the first, k[1], k[2]: kernels loaded
 * and compiled by the second.  Returns 0 or -1. */
WG_API int wg_compile_dotp(const char *dir, double *ms, int64_t *k)
{
    weft_context *c1 = NULL, *c2 = NULL;
    weft_stats st;
    int rc = -1;
    if (open_context(dir, &c1)) {
        return fail_weft("weft_context_create");
    }
    if (compile_dotp(c1, &ms[0]) == 0) {
        weft_context_stats(c1, &st);
        k[0] = (int64_t)st.kernels_compiled;
        if (open_context(dir, &c2)) {
            fail_weft("weft_context_create");
        } else if (compile_dotp(c2, &ms[1]) == 0) {
            weft_context_stats(c2, &st);
            k[1] = (int64_t)st.kernels_loaded;
            k[2] = (int64_t)st.kernels_compiled;
            rc = 0;
        }
    }
    weft_context_free(c2);
    weft_context_free(c1);
    return rc;
}

#ifdef WG_PHASES_MAIN
/* ---- the first compile's phases (-DWG_PHASES_MAIN) ----------------------- */

#include <unistd.h>

static const char *const prog_names[GB_NPROG] = {
    [GB_SAXPY] = "saxpy",
    [GB_SUM] = "sum",
    [GB_DOTP] = "dotp",
    [GB_SCAN] = "scan",
    [GB_BS] = "blackscholes",
    [GB_NBODY] = "nbody",
    [GB_NBODY_FOLD] = "nbody-fold",
    [GB_MANDEL] = "mandelbrot",
    [GB_HIST] = "histogram",
    [GB_SMVM_BANDED] = "smvm-banded",
    [GB_SMVM_POWER] = "smvm-power",
    [GB_KMEANS] = "kmeans",
    [GB_KMEANS_WHILE] = "kmeans-while",
    [GB_HIST] = "histogram",
    [GB_JACOBI] = "jacobi",
    [GB_JACOBI_LOOP] = "jacobi-loop",
};

/* Compile program prog in a new context on cache dir; *wall its wall
 * time in ms, *st the context's stats right after it, *tiered the time
 * from its start until weft_context_wait_optimised returned (the tier-up
 * of its kernels done, their optimised PTX on disk).  Returns 0 or -1. */
static int compile_once(int prog, const char *dir, double *wall, weft_stats *st,
                        double *tiered)
{
    gb_shape sh = {.n = 1 << 20,
                   .h = 1024,
                   .max_iter = 255,
                   .bins = 256,
                   .a = 2.5f,
                   .eps2 = 0.01f,
                   .x0 = -2.0f,
                   .y0 = -1.25f,
                   .dx = 2.5f / 1024,
                   .dy = 2.5f / 1024};
    weft_type t[MAX_IN];
    int nin = prog_inputs(prog, t);
    int64_t shape[2];
    int rank = prog_input_shape(prog, &sh, shape);
    weft_context *ctx = NULL;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    int rc = -1;
    if (open_context(dir, &ctx) || weft_program_create(ctx, &p)) {
        fail_weft("weft_context_create");
        goto out;
    }
    weft_acc *x[MAX_IN];
    for (int i = 0; i < nin; i++) {
        x[i] = weft_param(p, t[i], rank);
    }
    weft_acc *r = build(prog, ctx, p, x, &sh);
    double t0 = now_ms();
    if (weft_compile(p, &r, 1, &exe)) {
        fail_weft("weft_compile");
        goto out;
    }
    *wall = now_ms() - t0;
    weft_context_stats(ctx, st);
    if (weft_context_wait_optimised(ctx)) {
        fail_weft("weft_context_wait_optimised");
        goto out;
    }
    *tiered = now_ms() - t0;
    rc = 0;
out:
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    return rc;
}

/* Compile program prog in a new context on the empty cache dir and print
 * its wall time and phase split; then again in another new context on
 * the same dir (a disk hit: the kernels' PTX from weft's cache, their
 * code from the driver's) and print that one's wall time and driver
 * phase.  Returns 0 or -1. */
static int phases_of(int prog, const char *dir)
{
    double wall = 0, wall2 = 0, tiered = 0, tiered2 = 0;
    weft_stats st, st2;
    if (compile_once(prog, dir, &wall, &st, &tiered) ||
        compile_once(prog, dir, &wall2, &st2, &tiered2)) {
        return -1;
    }
    double sum = st.frontend_ms + st.ir_ms + st.llvm_opt_ms + st.ptx_ms +
                 st.driver_link_ms + st.disk_ms + st.llvm_codegen_ms +
                 st.jit_link_ms;
    printf("| %-12s | %7.1f | %3d | %6.2f | %6.2f | %7.2f | %6.2f | %7.2f "
           "| %6.2f | %7.2f | %7.1f | %7.2f (%d) | %7.2f | %7.1f |\n",
           prog_names[prog], wall, (int)st.kernels_compiled, st.frontend_ms,
           st.ir_ms, st.llvm_opt_ms, st.ptx_ms, st.driver_link_ms, st.disk_ms,
           st.llvm_codegen_ms + st.jit_link_ms, wall - sum, wall2,
           (int)st2.kernels_loaded, st2.driver_link_ms, tiered);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && weft_backend_from_name(argv[1], &wg_backend)) {
        fprintf(stderr, "wg_phases: %s\n", weft_last_error());
        return 2;
    }
    printf("First compile of each program, ms (a new context on an empty "
           "disk cache; weft_stats), then a second compile in another new "
           "context on that cache (disk hit: wall, kernels loaded, the "
           "driver's part); tiered: from the first compile's start until "
           "its tier-up was done (weft_context_wait_optimised)\n\n"
           "| program      |    wall | krn | front  |   IR   | LLVM opt |"
           "  PTX   | driver  |  disk  | cpu cg+link | other | hit wall "
           "(krn) | hit driver | tiered |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
           "---:|---:|\n");
    int rc = 0;
    for (int prog = 0; prog < GB_NPROG; prog++) {
        char dir[] = "/tmp/wg-phases-XXXXXX";
        if (!mkdtemp(dir)) {
            perror("wg_phases: mkdtemp");
            return 1;
        }
        if (phases_of(prog, dir)) {
            fprintf(stderr, "wg_phases: %s: %s\n", prog_names[prog], wg_msg);
            rc = 1;
        }
        char cmd[64];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) {
            fprintf(stderr, "wg_phases: could not remove %s\n", dir);
        }
    }
    return rc;
}
#endif /* WG_PHASES_MAIN */
