/*
 * bench/gpu/loop_probe.c: what one run of an awhile costs the host and
 * the device on ptx: Jacobi (bench/programs.h, 100 steps of 8192^2 f32)
 * and k-means (2^22 points, k = 16, up to 50 iterations; fold and while
 * forms), each run `runs` times after a warm-up: the median host ms to a
 * synchronised result, and per run the driver calls and bytes downloaded
 * (weft_stats), which show the waits that awhile's speculation, permute's
 * held reports and the loop kernels' deferred waits removed (lib/interp.c
 * "Speculation", runtime-gpu/backend.c "Held reports", runtime-gpu/cuda.c
 * "Loops").  WEFT_TRACE=t.json adds a trace (bench/gpu/trace_kernels.py);
 * LOOP_PROBE_ONLY=name runs that program alone (jacobi, kmeans or
 * kmeans-while: for ncu, whose launch counts then start at its kernels).
 *
 * On the GPU machine, from the unpacked bundle:
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/loop_probe.c -o loop_probe -L. \
 *       -lweft -Wl,-rpath,'$ORIGIN' -lm && ./loop_probe [runs]
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#include "../programs.h"
#define PROBE_NAME "loop_probe"
#include "probe.h"

/* A new f32 array of n (rank 1) or n x n (rank 2) from host data. */
static weft_array *f32_array(weft_context *ctx, int rank, int64_t n,
                             const float *v)
{
    int64_t shape[2] = {n, n};
    weft_array *a = NULL;
    if (weft_array_from_host(ctx, WEFT_F32, rank, shape,
                             (const void *const[]){v}, &a)) {
        die("weft_array_from_host");
    }
    return a;
}

/* Time `runs` runs of exe on in (after one warm-up), print a line. */
static void probe(weft_context *ctx, const char *name, weft_executable *exe,
                  weft_array **in, int nin, int nout, int runs)
{
    weft_array *out[4] = {NULL};
    double *ms = calloc((size_t)runs, sizeof *ms);
    weft_stats s0, s1;
    for (int r = -1; r < runs; r++) {
        if (r == 0) {
            weft_context_stats(ctx, &s0);
        }
        double t0 = now_ms();
        if (weft_run(exe, in, nin, out, nout) || weft_array_wait(out[0])) {
            die(name);
        }
        if (r >= 0) {
            ms[r] = now_ms() - t0;
        }
        if (r == runs - 1 && nout == 3) {
            /* k-means: the iterations it ran */
            int32_t it = -1;
            weft_array_read(out[2], 0, &it, sizeof it);
            printf("%s: %d iterations\n", name, it);
        }
        for (int o = 0; o < nout; o++) {
            weft_array_release(out[o]);
        }
    }
    weft_context_stats(ctx, &s1);
    qsort(ms, (size_t)runs, sizeof *ms, cmp_d);
    printf("%-14s %9.3f ms  %7.1f driver calls/run  %9.1f bytes down/run\n",
           name, ms[runs / 2],
           (double)(s1.driver_calls - s0.driver_calls) / runs,
           (double)(s1.bytes_downloaded - s0.bytes_downloaded) / runs);
    free(ms);
}

/* Whether program `name` is to run (LOOP_PROBE_ONLY). */
static int wanted(const char *name)
{
    const char *only = getenv("LOOP_PROBE_ONLY");
    return !only || !*only || strcmp(only, name) == 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 7;
    runs = runs > 0 ? runs : 7;
    weft_config cfg = weft_config_default();
    cfg.backend = argc > 2 && strcmp(argv[2], "cpu") == 0 ? WEFT_BACKEND_CPU
                                                          : WEFT_BACKEND_PTX;
    weft_context *ctx = NULL;
    if (weft_context_create(&cfg, &ctx)) {
        die("weft_context_create");
    }
    /* Jacobi */
    int64_t g = 8192;
    float *u = malloc(sizeof *u * (size_t)(g * g));
    uint64_t seed = 42;
    for (int64_t i = 0; i < g * g; i++) {
        u[i] = bp_unit(&seed);
    }
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *r = bp_jacobi(p, weft_param(p, WEFT_F32, 2), 100);
    if (weft_compile(p, &r, 1, &exe)) {
        die("weft_compile (jacobi)");
    }
    weft_array *grid = f32_array(ctx, 2, g, u);
    if (wanted("jacobi")) {
        probe(ctx, "jacobi", exe, &grid, 1, 1, runs);
    }
    weft_array_release(grid);
    weft_executable_free(exe);
    weft_program_free(p);
    free(u);
    /* k-means, both forms */
    int64_t n = (int64_t)1 << 22;
    int k = 16;
    float *px = malloc(sizeof *px * (size_t)n);
    float *py = malloc(sizeof *py * (size_t)n);
    bp_kmeans_points(px, py, n, k, 2.5f, 0x5eed);
    weft_array *in[4] = {f32_array(ctx, 1, n, px), f32_array(ctx, 1, n, py),
                         f32_array(ctx, 1, k, px), f32_array(ctx, 1, k, py)};
    for (int w = 0; w < 2; w++) {
        if (!wanted(w ? "kmeans-while" : "kmeans")) {
            continue;
        }
        if (weft_program_create(ctx, &p)) {
            die("weft_program_create");
        }
        weft_acc *x[4]; /* in order: parameters are numbered as made */
        for (int i = 0; i < 4; i++) {
            x[i] = weft_param(p, WEFT_F32, 1);
        }
        weft_acc *km = bp_kmeans(ctx, p, x[0], x[1], x[2], x[3], 50, w);
        weft_acc *res[3] = {weft_aget(km, 0), weft_aget(km, 1),
                            weft_aget(km, 2)};
        if (weft_compile(p, res, 3, &exe)) {
            die("weft_compile (kmeans)");
        }
        probe(ctx, w ? "kmeans-while" : "kmeans", exe, in, 4, 3, runs);
        weft_executable_free(exe);
        weft_program_free(p);
    }
    for (int i = 0; i < 4; i++) {
        weft_array_release(in[i]);
    }
    free(px);
    free(py);
    weft_context_free(ctx);
    return 0;
}
