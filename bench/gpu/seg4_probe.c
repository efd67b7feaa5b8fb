/*
 * bench/gpu/seg4_probe.c: TEMPORARY (helper seg4, issue 22; removed before
 * the branch is final).  foldSeg (+) 0 of f32 on shapes other than smvm's,
 * to choose between the one-pass kernel and the two passes
 * (skeletons-ir/ptx/foldseg.c): many tiny segments, short ones, rank-2
 * rows, one huge segment.  Host clock, median of `runs`, inputs on the
 * device after a first run; results checked exactly (small integers).
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/seg4_probe.c -o seg4_probe \
 *       -L. -lweft -Wl,-rpath,'$ORIGIN' -lm && ./seg4_probe [runs [cpu]]
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what)
{
    fprintf(stderr, "seg4_probe: %s: %s\n", what, weft_last_error());
    exit(1);
}

/* rows x cols of f32 cut by nseg lengths from len(k, seed). */
static void one(weft_context *ctx, const char *name, int64_t rows, int64_t cols,
                int64_t nseg, int kind, int runs)
{
    int rank = rows > 0 ? 2 : 1;
    int64_t nr = rows > 0 ? rows : 1;
    int32_t *len = malloc(sizeof *len * (size_t)nseg);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int64_t sum = 0;
    for (int64_t k = 0; k < nseg; k++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int32_t l =
            kind == 0 ? (int32_t)((seed >> 33) % 3) : (int32_t)(cols / nseg);
        len[k] = l;
        sum += l;
    }
    if (sum > cols) {
        die("lengths past the extent");
    }
    float *x = malloc(sizeof *x * (size_t)(nr * cols));
    for (int64_t i = 0; i < nr * cols; i++) {
        x[i] = (float)(i % 7) - 3.0f;
    }
    weft_program *p;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *a = weft_param(p, WEFT_F32, rank);
    weft_acc *l = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_arg(f, 1)));
    weft_acc *r = weft_fold_seg(f, weft_f32(p, 0), a, l);
    weft_executable *exe;
    if (weft_compile(p, &r, 1, &exe)) {
        die("weft_compile");
    }
    int64_t sh[2] = {rows, cols};
    int64_t *shape = rows > 0 ? sh : sh + 1;
    weft_array *in[2];
    void *d0[1] = {x}, *d1[1] = {len};
    if (weft_array_wrap(ctx, WEFT_F32, rank, shape, d0, NULL, NULL, &in[0]) ||
        weft_array_wrap(ctx, WEFT_I32, 1, &nseg, d1, NULL, NULL, &in[1])) {
        die("weft_array_wrap");
    }
    double t[64];
    runs = runs > 64 ? 64 : runs;
    weft_array *out = NULL;
    for (int k = -1; k < runs; k++) {
        weft_array_release(out);
        out = NULL;
        double t0 = now_ms();
        if (weft_run(exe, in, 2, &out, 1) || weft_array_wait(out)) {
            die("weft_run");
        }
        if (k >= 0) {
            t[k] = now_ms() - t0;
        }
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_d);
    const float *y = weft_array_data(out, 0);
    int64_t bad = 0;
    for (int64_t row = 0; row < nr; row++) {
        int64_t e = row * cols;
        for (int64_t k = 0; k < nseg; k++) {
            float acc = 0;
            for (int32_t j = 0; j < len[k]; j++) {
                acc += x[e++];
            }
            bad += y[row * nseg + k] != acc;
        }
    }
    printf("%-28s %9.4f ms  %s\n", name, t[runs / 2], bad ? "WRONG" : "ok");
    weft_array_release(out);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    weft_executable_free(exe);
    weft_program_free(p);
    free(x);
    free(len);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 21;
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.backend = argc > 2 && strcmp(argv[2], "cpu") == 0 ? WEFT_BACKEND_CPU
                                                          : WEFT_BACKEND_PTX;
    weft_context *ctx;
    if (weft_context_create(&cfg, &ctx)) {
        die("weft_context_create");
    }
    one(ctx, "4M segments of 0-2", 0, 5 << 20, 4 << 20, 0, runs);
    one(ctx, "2M segments of 4", 0, 8 << 20, 2 << 20, 1, runs);
    one(ctx, "2048 rows, 512 segs of 8", 2048, 4096, 512, 1, runs);
    one(ctx, "64 rows, 4 segs of 32768", 64, 131072, 4, 1, runs);
    one(ctx, "one segment of 16M", 0, 16 << 20, 1, 1, runs);
    weft_context_free(ctx);
    return 0;
}
