/*
 * bench/checked_bench.c: what checked mode (WEFT_FLAG_CHECKED) costs on
 * the CPU backend, and what the bounds test of `!` costs without it.
 *
 * Not a test; prints the best of several runs of each program, unchecked
 * and checked, on the same context configuration:
 *   quot    map (\x -> 1000003 quot x) over n i32 (x never 0)
 *   shift   map (\x -> x shl (x and 15)) over n i32
 *   gather  map (\x -> ys ! (x and 1023)) over n i32, ys of 1024 f32
 *   sum     fold (+) 0 (map (\x -> 7 quot x)) over n i32
 *   pairs   the rows of generate (m, m) (\(i, j) -> d / sqrt (d * d + 0.01))
 *           summed by fold, d = ys ! j - ys ! i, m = sqrt n (the shape
 *           of the n-body benchmark: `!` in a vectorised inner loop)
 *
 * Build (from the repository root, after a Release build in build/):
 *   gcc -O2 -std=c17 -Iinclude bench/checked_bench.c -o checked_bench \
 *       -Lbuild -lweft -Wl,-rpath,$PWD/build
 * Run: ./checked_bench [log2 n (24)] [threads (0: one per core)]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"
#include "weft.h"

static void die(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, weft_last_error());
    exit(1);
}

enum { QUOT, SHIFT, GATHER, SUM, PAIRS, NPROG };
static const char *const names[NPROG] = {"quot", "shift", "gather", "sum",
                                         "pairs"};

static weft_acc *build(weft_program *p, int which, weft_array *ys, int64_t n)
{
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    if (which == PAIRS) {
        int64_t m = 1;
        while ((m + 1) * (m + 1) <= n) {
            m++;
        }
        weft_acc *y = weft_use(p, ys);
        weft_fun *g = weft_fun1(p, WEFT_DIM(2));
        weft_exp *ix = weft_arg(g, 0);
        weft_exp *j = weft_rem(weft_get(ix, 1), weft_i64(p, 1024));
        weft_exp *i = weft_rem(weft_get(ix, 0), weft_i64(p, 1024));
        weft_exp *d =
            weft_sub(weft_at(y, weft_index1(j)), weft_at(y, weft_index1(i)));
        weft_fun_return(
            g, weft_fdiv(
                   d, weft_sqrt(weft_add(weft_mul(d, d), weft_f32(p, 0.01f)))));
        weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        (void)xs; /* the program still takes xs, unused */
        return weft_fold(
            add, weft_f32(p, 0),
            weft_generate(weft_index2(weft_i64(p, m), weft_i64(p, m)), g));
    }
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    switch (which) {
    case QUOT:
        weft_fun_return(f, weft_quot(weft_i32(p, 1000003), x));
        return weft_map(f, xs);
    case SHIFT:
        weft_fun_return(f, weft_shl(x, weft_band(x, weft_i32(p, 15))));
        return weft_map(f, xs);
    case GATHER:
        weft_fun_return(
            f, weft_at(weft_use(p, ys),
                       weft_index1(weft_convert(weft_band(x, weft_i32(p, 1023)),
                                                WEFT_I64))));
        return weft_map(f, xs);
    default: {
        weft_fun_return(f, weft_quot(weft_i32(p, 7), x));
        weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_fold(add, weft_i32(p, 0), weft_map(f, xs));
    }
    }
}

/* Best time in ms of `reps` runs of program `which` on a context. */
static double best_ms(int which, bool checked, int threads, int64_t n, int reps)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = threads;
    cfg.flags = WEFT_FLAG_NO_ENV | (checked ? WEFT_FLAG_CHECKED : 0);
    weft_context *ctx;
    if (weft_context_create(&cfg, &ctx)) {
        die("weft_context_create");
    }
    int32_t *h = malloc(sizeof *h * (size_t)n);
    float yv[1024];
    for (int64_t i = 0; i < n; i++) {
        h[i] = (int32_t)(1 + (i * 7919) % 100000);
    }
    for (int i = 0; i < 1024; i++) {
        yv[i] = (float)i * 0.5f;
    }
    const void *d[1] = {h}, *dy[1] = {yv};
    weft_array *xs = NULL, *ys = NULL;
    int64_t ny = 1024;
    if (weft_array_from_host(ctx, WEFT_I32, 1, &n, d, &xs) ||
        weft_array_from_host(ctx, WEFT_F32, 1, &ny, dy, &ys)) {
        die("weft_array_from_host");
    }
    weft_program *p;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *r = build(p, which, ys, n);
    weft_executable *exe;
    if (weft_compile(p, &r, 1, &exe)) {
        die("weft_compile");
    }
    double best = 1e30;
    for (int k = 0; k < reps; k++) {
        weft_array *out;
        double t0 = timing_now_ms();
        if (weft_run(exe, &xs, 1, &out, 1)) {
            die("weft_run");
        }
        double t = timing_now_ms() - t0;
        best = t < best ? t : best;
        weft_array_release(out);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    weft_array_release(xs);
    weft_array_release(ys);
    weft_context_free(ctx);
    free(h);
    return best;
}

int main(int argc, char **argv)
{
    int lg = argc > 1 ? atoi(argv[1]) : 24;
    int threads = argc > 2 ? atoi(argv[2]) : 0;
    int64_t n = (int64_t)1 << lg;
    printf("n = 2^%d, threads %d (0: one per core), best of 15 runs\n", lg,
           threads);
    printf("%-8s %12s %12s %8s\n", "program", "unchecked ms", "checked ms",
           "ratio");
    for (int w = 0; w < NPROG; w++) {
        double u = best_ms(w, false, threads, n, 15);
        double c = best_ms(w, true, threads, n, 15);
        printf("%-8s %12.2f %12.2f %8.2f\n", names[w], u, c, c / u);
    }
    return 0;
}
