/*
 * bench/stencil_sweep.c: stencils of every rank and window size on the
 * CPU, beside a hand-written C loop and a map over the same array.
 *
 * Not a test.  Each case is a stencil over an f32 array (a rank, a window,
 * a boundary, a shape) whose function is the weighted sum
 * c_0 x_0 + c_1 x_1 + ... + c_{k-1} x_{k-1} of its window (c_j = 1 / (j +
 * 1), added left to right).  Rounds time, one after another so that all
 * meet the same load: weft_run of the stencil; a map (2 *) of the same
 * array, what reading and writing it once costs (the floor of a stencil
 * that memory bounds); and, for the clamp boundary, the C reference:
 * OpenMP over rows, each row's window rows clamped once, the columns
 * within the window's radius of the row's ends read through the clamp,
 * the others summed into the output row one window element at a time
 * (an `omp simd` loop over the columns each), the same sum in the same
 * order (so weft's result must equal it exactly: checked).  The medians of the rounds are
 * printed as a Markdown table, with weft's first compile (optimised code
 * waited for).  Built against the public API only, so that the same
 * source times an older library (before and after a change to
 * skeletons-ir/stencil.c: give each run its own WEFT_CACHE_DIR).
 *
 * Usage: stencil_sweep [threads [rounds [case-substring]]]
 * Build: gcc -std=c17 -O3 -march=native -fopenmp -fno-math-errno \
 *            -Iinclude bench/stencil_sweep.c -o stencil_sweep \
 *            -Lbuild -lweft -Wl,-rpath,build -lm
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"
#include "weft.h"

#define MAX_ROUNDS 31

typedef struct scase {
    int rank;
    int win[3];
    weft_boundary_kind bnd;
    int64_t shape[3];
} scase;

static const scase cases[] = {
    {1, {3}, WEFT_BOUNDARY_CLAMP, {1 << 24}},
    {1, {9}, WEFT_BOUNDARY_CLAMP, {1 << 24}},
    {1, {3}, WEFT_BOUNDARY_WRAP, {1 << 24}},
    {2, {3, 3}, WEFT_BOUNDARY_CLAMP, {4096, 4096}},
    {2, {3, 3}, WEFT_BOUNDARY_MIRROR, {4096, 4096}},
    {2, {3, 3}, WEFT_BOUNDARY_CONSTANT, {4096, 4096}},
    {2, {5, 5}, WEFT_BOUNDARY_CLAMP, {4096, 4096}},
    {2, {7, 7}, WEFT_BOUNDARY_CLAMP, {4096, 4096}},
    {2, {9, 9}, WEFT_BOUNDARY_CLAMP, {4096, 4096}},
    {2, {3, 3}, WEFT_BOUNDARY_CLAMP, {2, 1 << 23}},
    {2, {3, 3}, WEFT_BOUNDARY_CONSTANT, {1, 1 << 24}},
    {2, {3, 3}, WEFT_BOUNDARY_CLAMP, {1 << 21, 8}},
    {3, {3, 3, 3}, WEFT_BOUNDARY_CLAMP, {256, 256, 256}},
    {3, {3, 3, 3}, WEFT_BOUNDARY_WRAP, {256, 256, 256}},
    {3, {3, 3, 3}, WEFT_BOUNDARY_CONSTANT, {256, 256, 256}},
    {3, {5, 5, 5}, WEFT_BOUNDARY_CLAMP, {160, 160, 160}},
    {3, {5, 5, 5}, WEFT_BOUNDARY_MIRROR, {160, 160, 160}},
    {3, {5, 5, 5}, WEFT_BOUNDARY_CONSTANT, {160, 160, 160}},
    {3, {7, 7, 3}, WEFT_BOUNDARY_CLAMP, {160, 160, 160}},
    {3, {7, 7, 7}, WEFT_BOUNDARY_CLAMP, {96, 96, 96}},
    {3, {9, 9, 9}, WEFT_BOUNDARY_CLAMP, {64, 64, 64}},
};

static const char *const bnd_name[] = {"clamp", "mirror", "wrap", "constant"};

static int64_t clampi(int64_t i, int64_t n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* The C reference (clamp): the array as n[0] x n[1] x n[2] (rank 3; lower
 * ranks with leading extents of 1), window w, weights c. */
static void ref_stencil(const float *restrict u, float *restrict o,
                        const int64_t *n, const int *w, const float *c)
{
    int h0 = w[0] / 2, h1 = w[1] / 2, h2 = w[2] / 2, k = w[0] * w[1] * w[2];
    int64_t n0 = n[0], n1 = n[1], n2 = n[2];
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t z = 0; z < n0; z++) {
        for (int64_t y = 0; y < n1; y++) {
            const float *r[81];
            for (int a = 0; a < w[0]; a++) {
                for (int b = 0; b < w[1]; b++) {
                    r[a * w[1] + b] = u + (clampi(z + a - h0, n0) * n1 +
                                           clampi(y + b - h1, n1)) *
                                              n2;
                }
            }
            float *op = o + (z * n1 + y) * n2;
            for (int64_t x = 0; x < n2; x++) {
                if (x == h2 && n2 - h2 > h2) {
                    x = n2 - h2; /* the interior is below */
                }
                float acc = 0;
                for (int j = 0; j < k; j++) {
                    float v = r[j / w[2]][clampi(x + j % w[2] - h2, n2)];
                    acc = j ? acc + c[j] * v : c[j] * v;
                }
                op[x] = acc;
            }
            /* the interior: one window element at a time over the row */
            int64_t lo = h2, hi = n2 - h2;
            float c0 = c[0];
            const float *r0 = r[0] - h2;
#pragma omp simd
            for (int64_t x = lo; x < hi; x++) {
                op[x] = c0 * r0[x];
            }
            for (int j = 1; j < k; j++) {
                float cj = c[j];
                const float *rj = r[j / w[2]] + j % w[2] - h2;
#pragma omp simd
                for (int64_t x = lo; x < hi; x++) {
                    op[x] = op[x] + cj * rj[x];
                }
            }
        }
    }
}

typedef struct timed {
    double weft, map, ref, compile;
    double err; /* largest |weft - C|, or NAN without C */
} timed;

static int run_case(const scase *sc, int threads, int rounds, timed *out)
{
    int rank = sc->rank, k = 1;
    int64_t n = 1;
    int64_t n3[3] = {1, 1, 1};
    int w3[3] = {1, 1, 1};
    for (int d = 0; d < rank; d++) {
        k *= sc->win[d];
        n *= sc->shape[d];
        n3[3 - rank + d] = sc->shape[d];
        w3[3 - rank + d] = sc->win[d];
    }
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = threads;
    weft_context *ctx;
    if (weft_context_create(&cfg, &ctx) != WEFT_OK) {
        return 1;
    }
    weft_program *p;
    weft_program_create(ctx, &p);
    weft_acc *u = weft_param(p, WEFT_F32, rank);
    weft_type *ts = malloc(sizeof *ts * (size_t)k);
    float *c = malloc(sizeof *c * (size_t)k);
    for (int j = 0; j < k; j++) {
        ts[j] = WEFT_F32;
        c[j] = 1.0f / (float)(j + 1);
    }
    weft_fun *f = weft_fun_create(p, k, ts);
    weft_exp *acc = weft_mul(weft_f32(p, c[0]), weft_arg(f, 0));
    for (int j = 1; j < k; j++) {
        acc = weft_add(acc, weft_mul(weft_f32(p, c[j]), weft_arg(f, j)));
    }
    weft_fun_return(f, acc);
    weft_boundary b = {
        sc->bnd, sc->bnd == WEFT_BOUNDARY_CONSTANT ? weft_f32(p, 0.5f) : NULL};
    weft_acc *st = weft_stencil(f, sc->win, b, u);
    weft_fun *g = weft_fun_create(p, 1, ts);
    weft_fun_return(g, weft_mul(weft_f32(p, 2.0f), weft_arg(g, 0)));
    weft_acc *m = weft_map(g, u);
    weft_executable *es = NULL, *em = NULL;
    double t0 = timing_now_ms();
    weft_status s = weft_compile(p, &st, 1, &es);
    if (s == WEFT_OK) {
        s = weft_context_wait_optimised(ctx);
    }
    out->compile = timing_now_ms() - t0;
    if (s == WEFT_OK) {
        s = weft_compile(p, &m, 1, &em);
    }
    if (s == WEFT_OK) {
        s = weft_context_wait_optimised(ctx);
    }
    float *h = malloc(sizeof *h * (size_t)n);
    float *ref = malloc(sizeof *ref * (size_t)n);
    uint64_t seed = 12345;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = (float)(seed >> 40) / (float)(1 << 24);
        ref[i] = 0;
    }
    weft_array *in = NULL;
    if (s == WEFT_OK) {
        s = weft_array_from_host(ctx, WEFT_F32, rank, sc->shape,
                                 (const void *const[]){h}, &in);
    }
    bool has_ref = sc->bnd == WEFT_BOUNDARY_CLAMP;
    double tw[MAX_ROUNDS], tm[MAX_ROUNDS], tr[MAX_ROUNDS];
    out->err = NAN;
    for (int r = 0; s == WEFT_OK && r <= rounds; r++) {
        weft_array *o = NULL;
        double a = timing_now_ms();
        s = weft_run(es, &in, 1, &o, 1);
        double bt = timing_now_ms();
        if (s == WEFT_OK && r == 0 && has_ref) {
            ref_stencil(h, ref, n3, w3, c);
            const float *wd = weft_array_data(o, 0);
            double e = 0;
            for (int64_t i = 0; i < n; i++) {
                double d = fabs((double)wd[i] - (double)ref[i]);
                e = d > e ? d : e;
            }
            out->err = e;
        }
        weft_array_release(o);
        if (s == WEFT_OK) {
            s = weft_run(em, &in, 1, &o, 1);
            weft_array_release(o);
        }
        double ct = timing_now_ms();
        if (has_ref) {
            ref_stencil(h, ref, n3, w3, c);
        }
        double dt = timing_now_ms();
        if (r > 0) { /* the first round warms up */
            tw[r - 1] = bt - a;
            tm[r - 1] = ct - bt;
            tr[r - 1] = dt - ct;
        }
    }
    if (s == WEFT_OK) {
        out->weft = timing_median(tw, rounds);
        out->map = timing_median(tm, rounds);
        out->ref = has_ref ? timing_median(tr, rounds) : NAN;
    } else {
        fprintf(stderr, "stencil_sweep: %s\n", weft_status_name(s));
    }
    weft_array_release(in);
    weft_executable_free(es);
    weft_executable_free(em);
    weft_program_free(p);
    weft_context_free(ctx);
    free(ts);
    free(c);
    free(h);
    free(ref);
    return s != WEFT_OK;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    const char *only = argc > 3 ? argv[3] : NULL;
    if (threads <= 0) {
        threads = omp_get_num_procs();
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "stencil_sweep: rounds from 1 to %d\n", MAX_ROUNDS);
        return 2;
    }
    omp_set_num_threads(threads);
    printf("stencil_sweep: %d threads, median of %d rounds, f32\n\n", threads,
           rounds);
    printf("| stencil | shape | weft ms | C ms | weft / C | map ms | "
           "weft / map | compile ms | max \\|weft - C\\| |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const scase *sc = &cases[i];
        char name[64], shape[64];
        int a = 0, b = 0;
        for (int d = 0; d < sc->rank; d++) {
            a += snprintf(name + a, sizeof name - (size_t)a, "%s%d",
                          d ? "x" : "", sc->win[d]);
            b += snprintf(shape + b, sizeof shape - (size_t)b, "%s%lld",
                          d ? "x" : "", (long long)sc->shape[d]);
        }
        snprintf(name + a, sizeof name - (size_t)a, " %s", bnd_name[sc->bnd]);
        char full[160];
        snprintf(full, sizeof full, "%s %s", name, shape);
        if (only && !strstr(full, only)) {
            continue;
        }
        timed t = {0, 0, 0, 0, 0};
        if (run_case(sc, threads, rounds, &t)) {
            printf("| %s | %s | failed | | | | | | |\n", name, shape);
            failed = 1;
            continue;
        }
        char cms[32] = "-", ratio[32] = "-", err[32] = "-";
        if (!isnan(t.ref)) {
            snprintf(cms, sizeof cms, "%.2f", t.ref);
            snprintf(ratio, sizeof ratio, "%.2f", t.weft / t.ref);
            snprintf(err, sizeof err, "%.1e", t.err);
        }
        printf("| %s | %s | %.2f | %s | %s | %.2f | %.1f | %.0f | %s |\n", name,
               shape, t.weft, cms, ratio, t.map, t.weft / t.map, t.compile,
               err);
        fflush(stdout);
    }
    return failed;
}
