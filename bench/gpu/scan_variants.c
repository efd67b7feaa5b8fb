/*
 * bench/gpu/scan_variants.c: the device time of weft's scans beyond the
 * benchmark's one (bench/gpu key `scan`: scanl1 (+) over 2^28 i32), so
 * that a change to the PTX scan (skeletons-ir/ptx/scan.c) can be seen on
 * every kind of scan: exclusive and inclusive, left and right, with a
 * second output, 8-byte and tuple elements, rows, small and odd sizes.
 *
 * Each case builds its program on the ptx backend, compiles it (the
 * first compile's wall time is printed), runs it once (the input's
 * upload), then times `runs` runs on the host clock, each up to the
 * moment its first output is computed on the device (weft_array_wait),
 * and prints the median and the best.  The result of the i32 sums is
 * checked against a sequential sum on the host (wrapping, so exact) at
 * every position.
 *
 * Build and run in the GPU bundle (next to libweft.so):
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/scan_variants.c -o scan_variants \
 *       -L. -lweft -Wl,-rpath,'$ORIGIN' -lm && ./scan_variants [runs]
 * (`./scan_variants 3 cpu` runs the same on the CPU backend: a check of
 * this program where no GPU is; `./scan_variants 10 ptx f64,rows` only
 * the cases whose names contain one of the comma-separated parts.)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#include "probe.h"

enum { SUM, AFFINE };
enum { L1, L, LP, R1, R, RP };

typedef struct scase {
    const char *name;
    int kind; /* L1 ... RP */
    int fun;  /* SUM, AFFINE */
    weft_type t;
    int rank;
    int64_t shape[2];
} scase;

static const scase cases[] = {
    {"scanl1 + i32 2^28", L1, SUM, WEFT_I32, 1, {1 << 28}},
    {"scanl  + i32 2^28", L, SUM, WEFT_I32, 1, {1 << 28}},
    {"scanl' + i32 2^28", LP, SUM, WEFT_I32, 1, {1 << 28}},
    {"scanr1 + i32 2^28", R1, SUM, WEFT_I32, 1, {1 << 28}},
    {"scanr  + i32 2^28", R, SUM, WEFT_I32, 1, {1 << 28}},
    {"scanl1 + f32 2^28", L1, SUM, WEFT_F32, 1, {1 << 28}},
    {"scanl1 + f64 2^27", L1, SUM, WEFT_F64, 1, {1 << 27}},
    {"scanl  + i64 2^27", L, SUM, WEFT_I64, 1, {1 << 27}},
    {"scanl1 affine (i32,i32) 2^27", L1, AFFINE, 0, 1, {1 << 27}},
    {"scanl1 + i32 rows 16384 x 16384", L1, SUM, WEFT_I32, 2, {16384, 16384}},
    {"scanl1 + i32 rows 2^20 x 100", L1, SUM, WEFT_I32, 2, {1 << 20, 100}},
    {"scanl1 + i32 1000003", L1, SUM, WEFT_I32, 1, {1000003}},
    {"scanl1 + i32 1000", L1, SUM, WEFT_I32, 1, {1000}},
};

static int fail(const char *what)
{
    fprintf(stderr, "scan_variants: %s: %s\n", what, weft_last_error());
    return 1;
}

/* The scan's function (and seed) of case c over element type t. */
static weft_fun *make_fun(weft_program *p, const scase *c, weft_type t,
                          weft_exp **seed)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1);
    if (c->fun == SUM) {
        weft_fun_return(f, weft_prim2(WEFT_OP_ADD, a, b));
        *seed = t == WEFT_I32   ? weft_i32(p, 3)
                : t == WEFT_I64 ? weft_i64(p, 3)
                : t == WEFT_F32 ? weft_f32(p, 3)
                                : weft_f64(p, 3);
        return f;
    }
    /* (a1, b1) then (a2, b2): x -> a2 (a1 x + b1) + b2 */
    weft_exp *comp[2] = {
        weft_prim2(WEFT_OP_MUL, weft_get(a, 0), weft_get(b, 0)),
        weft_prim2(WEFT_OP_ADD,
                   weft_prim2(WEFT_OP_MUL, weft_get(a, 1), weft_get(b, 0)),
                   weft_get(b, 1))};
    weft_fun_return(f, weft_tuple(p, 2, comp));
    weft_exp *z[2] = {weft_i32(p, 1), weft_i32(p, 0)};
    *seed = weft_tuple(p, 2, z);
    return f;
}

static weft_acc *make_scan(const scase *c, weft_fun *f, weft_exp *z,
                           weft_acc *x)
{
    switch (c->kind) {
    case L1: return weft_scanl1(f, x);
    case L: return weft_scanl(f, z, x);
    case LP: return weft_scanl_(f, z, x);
    case R1: return weft_scanr1(f, x);
    case R: return weft_scanr(f, z, x);
    default: return weft_scanr_(f, z, x);
    }
}

/* Check an i32 (+) scan's first output against the host's sums. */
static int check_i32(const scase *c, const int32_t *in, weft_array *out)
{
    int64_t rows = c->rank == 2 ? c->shape[0] : 1;
    int64_t m = c->shape[c->rank - 1];
    bool grow = c->kind == L || c->kind == R;
    bool excl = c->kind == L || c->kind == LP;
    bool right = c->kind >= R1;
    const int32_t *o = weft_array_data(out, 0);
    if (!o) {
        return fail("read");
    }
    int64_t olen = m + (grow ? 1 : 0);
    for (int64_t r = 0; r < rows; r++) {
        uint32_t acc = c->kind == L1 || c->kind == R1 ? 0u : 3u;
        for (int64_t k = 0; k < m; k++) {
            int64_t j = right ? m - 1 - k : k;
            uint32_t before = acc;
            acc += (uint32_t)in[r * m + j];
            uint32_t want = excl ? before : acc;
            int32_t got = o[r * olen + j];
            if ((uint32_t)got != want) {
                fprintf(stderr,
                        "scan_variants: %s: row %lld position %lld: %d, "
                        "expected %d\n",
                        c->name, (long long)r, (long long)j, got, (int)want);
                return 1;
            }
        }
    }
    return 0;
}

static int run_case(const scase *c, int runs, weft_backend be)
{
    weft_config cfg = weft_config_default();
    cfg.backend = be;
    weft_context *ctx = NULL;
    if (weft_context_create(&cfg, &ctx)) {
        return fail("context");
    }
    weft_type t = c->t;
    if (c->fun == AFFINE) {
        weft_type two[2] = {WEFT_I32, WEFT_I32};
        t = weft_type_tuple(ctx, 2, two);
    }
    weft_program *p = NULL;
    if (weft_program_create(ctx, &p)) {
        return fail("program");
    }
    weft_acc *x = weft_param(p, t, c->rank);
    weft_exp *z = NULL;
    weft_fun *f = make_fun(p, c, t, &z);
    weft_acc *res = make_scan(c, f, z, x);
    weft_executable *exe = NULL;
    double t0 = now_ms();
    if (weft_compile(p, &res, 1, &exe)) {
        return fail("compile");
    }
    double compile_ms = now_ms() - t0;
    int64_t n = c->shape[0] * (c->rank == 2 ? c->shape[1] : 1);
    int nleaf = c->fun == AFFINE ? 2 : 1;
    size_t esize = c->t == WEFT_F64 || c->t == WEFT_I64 ? 8 : 4;
    void *buf[2] = {NULL, NULL};
    for (int l = 0; l < nleaf; l++) {
        buf[l] = malloc((size_t)n * esize);
        if (!buf[l]) {
            return fail("malloc");
        }
        for (int64_t i = 0; i < n; i++) {
            uint32_t h = (uint32_t)(i * 2654435761u + (uint32_t)l * 97u);
            int32_t v = (int32_t)(h >> 24) - 128; /* -128 .. 127 */
            if (c->fun == AFFINE) {
                v = l == 0 ? (v & 1) * 2 - 1 : v; /* a in {-1, 1} */
            }
            if (c->t == WEFT_F32) {
                ((float *)buf[l])[i] = (float)v * 0.25f;
            } else if (c->t == WEFT_F64) {
                ((double *)buf[l])[i] = (double)v * 0.25;
            } else if (c->t == WEFT_I64) {
                ((int64_t *)buf[l])[i] = v;
            } else {
                ((int32_t *)buf[l])[i] = v;
            }
        }
    }
    weft_array *in = NULL;
    if (weft_array_from_host(ctx, t, c->rank, c->shape,
                             (const void *const *)buf, &in)) {
        return fail("input");
    }
    int nout = weft_executable_outputs(exe);
    weft_array *out[2] = {NULL, NULL};
    double *ms = calloc((size_t)runs, sizeof *ms);
    if (!ms) {
        return fail("calloc");
    }
    int bad = 0;
    for (int r = -1; r < runs && !bad; r++) {
        double s = now_ms();
        if (weft_run(exe, &in, 1, out, nout) || weft_array_wait(out[0])) {
            return fail(c->name);
        }
        if (r >= 0) {
            ms[r] = now_ms() - s;
        } else if (c->fun == SUM && c->t == WEFT_I32) {
            bad = check_i32(c, buf[0], out[0]);
        }
        for (int o = 0; o < nout; o++) {
            weft_array_release(out[o]);
        }
    }
    if (!bad) {
        qsort(ms, (size_t)runs, sizeof *ms, cmp_d);
        printf("%-32s median %8.3f ms  best %8.3f ms  (first compile %.0f "
               "ms)%s\n",
               c->name, ms[runs / 2], ms[0], compile_ms,
               c->fun == SUM && c->t == WEFT_I32 ? "  checked" : "");
    }
    free(ms);
    for (int l = 0; l < nleaf; l++) {
        free(buf[l]);
    }
    weft_array_release(in);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    return bad;
}

/* Whether name contains one of the comma-separated parts of list. */
static bool picked(const char *name, const char *list)
{
    char part[64];
    while (*list) {
        size_t n = strcspn(list, ",");
        if (n > 0 && n < sizeof part) {
            memcpy(part, list, n);
            part[n] = '\0';
            if (strstr(name, part)) {
                return true;
            }
        }
        list += n + (list[n] == ',');
    }
    return false;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 20;
    if (runs < 1) {
        runs = 1;
    }
    weft_backend be = argc > 2 && strcmp(argv[2], "cpu") == 0
                          ? WEFT_BACKEND_CPU
                          : WEFT_BACKEND_PTX;
    /* a third argument: a comma-separated list of parts of case names,
     * to run only the cases that contain one of them */
    const char *only = argc > 3 ? argv[3] : NULL;
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (only && !picked(cases[i].name, only)) {
            continue;
        }
        bad |= run_case(&cases[i], runs, be);
    }
    return bad;
}
