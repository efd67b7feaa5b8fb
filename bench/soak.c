/*
 * bench/soak.c: a long mixed run on one context, watching memory.
 *
 *   weft_soak [interp|cpu|ptx] [runs]      (default: cpu 10000)
 *
 * Runs `runs` iterations on one context, each one of:
 *   0  compile and run one of a few programs (a fused map-fold, scans, an
 *      awhile, a permute, a stencil, a tuple with a unit side), then free
 *      the program and the executable
 *   1  run executables compiled once at the start, on fresh inputs
 *   2  create, fill, read and release arrays (create, from_host, wrap)
 *   3  errors: a builder type error, a run with the wrong arguments, a
 *      run-time error (a slice index outside its dimension), a program
 *      that is cancelled (its deadline passes inside an endless awhile,
 *      on a second context made and freed each time)
 * and checks every result it reads ($SOAK_ONLY=0..3 runs one kind only).  Every 1,000 iterations it prints the
 * resident set size (from /proc/self/statm) in KiB; after a warm-up (the
 * JIT, the caches and the buffer pool fill during the first thousand) the
 * series must stay flat.  Exit status 1 on any wrong result or unexpected
 * status.
 *
 * Build: the weft_soak target (cmake --build build --target weft_soak);
 * run: build/weft_soak cpu 10000.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft.h"

static int failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "soak: " __VA_ARGS__);                             \
            fprintf(stderr, " (%s)\n", weft_last_error());                     \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) {
            res = 0;
        }
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static weft_array *vec_i64(weft_context *ctx, int64_t n, int64_t mul)
{
    weft_array *a = NULL;
    if (weft_array_create(ctx, WEFT_I64, 1, &n, &a) != WEFT_OK) {
        CHECK(0, "weft_array_create");
        return NULL;
    }
    int64_t *d = weft_array_data(a, 0);
    for (int64_t i = 0; i < n; i++) {
        d[i] = i * mul;
    }
    return a;
}

static int64_t get_i64(weft_array *a, int64_t i)
{
    const int64_t *d = weft_array_data(a, 0);
    return d ? d[i] : INT64_MIN;
}

static weft_fun *add_i64(weft_program *p)
{
    weft_fun *f = weft_fun2(p, WEFT_I64, WEFT_I64);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* Program k of a few: one i64 vector in, results as described. */
static int build(weft_program *p, int k, weft_acc **r)
{
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    switch (k) {
    case 0: { /* fold (+) 0 (map (*2) xs) */
        weft_fun *dbl = weft_fun1(p, WEFT_I64);
        weft_fun_return(dbl, weft_mul(weft_arg(dbl, 0), weft_i64(p, 2)));
        r[0] = weft_fold_all(add_i64(p), weft_i64(p, 0), weft_map(dbl, xs));
        return 1;
    }
    case 1: /* scanl' (+) 0 xs: two arrays */
        r[0] = weft_scanl_(add_i64(p), weft_i64(p, 0), xs);
        return 1;
    case 2: { /* awhile (x!!0 < 20) (map (+1)) xs */
        weft_afun *c = weft_afun_like(xs);
        weft_afun_return(c, weft_unit(weft_lt(weft_at_linear(weft_afun_arg(c),
                                                             weft_i64(p, 0)),
                                              weft_i64(p, 20))));
        weft_afun *b = weft_afun_like(xs);
        weft_fun *inc = weft_fun1(p, WEFT_I64);
        weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i64(p, 1)));
        weft_afun_return(b, weft_map(inc, weft_afun_arg(b)));
        r[0] = weft_awhile(c, b, xs);
        return 1;
    }
    case 3: { /* permute (+) (zeros 4) (\i -> i mod 4) xs */
        weft_fun *z = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(z, weft_i64(p, 0));
        weft_acc *def = weft_generate(weft_index1(weft_i64(p, 4)), z);
        weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(ix, weft_index1(weft_rem(weft_get(weft_arg(ix, 0), 0),
                                                 weft_i64(p, 4))));
        r[0] = weft_permute(add_i64(p), def, ix, xs);
        return 1;
    }
    case 4: { /* stencil (3-point sum, clamp) */
        weft_fun *s =
            weft_fun_create(p, 3, (weft_type[]){WEFT_I64, WEFT_I64, WEFT_I64});
        weft_fun_return(s, weft_add(weft_add(weft_arg(s, 0), weft_arg(s, 1)),
                                    weft_arg(s, 2)));
        int w = 3;
        r[0] =
            weft_stencil(s, &w, (weft_boundary){WEFT_BOUNDARY_CLAMP, NULL}, xs);
        return 1;
    }
    default: { /* map x -> (x, ()) : a tuple with a unit side */
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_exp *c[2] = {weft_arg(f, 0), weft_tuple(p, 0, NULL)};
        weft_fun_return(f, weft_tuple(p, 2, c));
        r[0] = weft_map(f, xs);
        return 1;
    }
    }
}

/* Check the outputs of program k on xs = [0, 1, .., n-1]. */
static void check(int k, int64_t n, weft_array **out)
{
    switch (k) {
    case 0:
        CHECK(get_i64(out[0], 0) == n * (n - 1), "fold gave %lld",
              (long long)get_i64(out[0], 0));
        break;
    case 1:
        CHECK(get_i64(out[1], 0) == n * (n - 1) / 2, "scan total %lld",
              (long long)get_i64(out[1], 0));
        break;
    case 2:
        CHECK(get_i64(out[0], n - 1) == n - 1 + 20, "awhile gave %lld",
              (long long)get_i64(out[0], n - 1));
        break;
    case 3: {
        int64_t s = 0;
        for (int64_t i = 0; i < n; i++) {
            s += (i % 4 == 0) ? i : 0;
        }
        CHECK(get_i64(out[0], 0) == s, "permute gave %lld",
              (long long)get_i64(out[0], 0));
        break;
    }
    case 4:
        CHECK(get_i64(out[0], 1) == 3, "stencil gave %lld",
              (long long)get_i64(out[0], 1));
        break;
    default:
        CHECK(get_i64(out[0], n - 1) == n - 1, "unit pair gave %lld",
              (long long)get_i64(out[0], n - 1));
        break;
    }
}

enum { NPROG = 6 };

static void compile_and_run(weft_context *ctx, int k, int64_t n)
{
    weft_program *p;
    if (weft_program_create(ctx, &p) != WEFT_OK) {
        CHECK(0, "weft_program_create");
        return;
    }
    weft_acc *r[2];
    int nr = build(p, k, r);
    weft_executable *exe;
    if (weft_compile(p, r, nr, &exe) == WEFT_OK) {
        weft_array *xs = vec_i64(ctx, n, 1);
        weft_array *out[2] = {NULL, NULL};
        int nout = weft_executable_outputs(exe);
        if (weft_run(exe, &xs, 1, out, nout) == WEFT_OK) {
            check(k, n, out);
        } else {
            CHECK(0, "run of program %d", k);
        }
        weft_array_release(out[0]);
        weft_array_release(out[1]);
        weft_array_release(xs);
        weft_executable_free(exe);
    } else {
        CHECK(0, "compile of program %d", k);
    }
    weft_program_free(p);
}

static void arrays(weft_context *ctx, int i)
{
    int64_t sh[2] = {1 + i % 7, 100 + i % 300};
    weft_array *a = NULL, *b = NULL, *c = NULL;
    CHECK(weft_array_create(ctx, WEFT_F32, 2, sh, &a) == WEFT_OK, "create");
    static float buf[8 * 400];
    const void *data[1] = {buf};
    CHECK(weft_array_from_host(ctx, WEFT_F32, 2, sh, data, &b) == WEFT_OK,
          "from_host");
    void *wdata[1] = {buf};
    CHECK(weft_array_wrap(ctx, WEFT_F32, 2, sh, wdata, NULL, NULL, &c) ==
              WEFT_OK,
          "wrap");
    weft_type u = weft_type_tuple(ctx, 0, NULL);
    weft_array *d = NULL;
    CHECK(weft_array_create(ctx, u, 2, sh, &d) == WEFT_OK, "unit array");
    if (b) {
        weft_array_retain(b);
        weft_array_release(b);
    }
    weft_array_release(a);
    weft_array_release(b);
    weft_array_release(c);
    weft_array_release(d);
}

static void errors(weft_context *ctx, weft_backend be, weft_executable *exe,
                   weft_executable *slice_exe, int i)
{
    /* a builder error: adding i32 to f32 */
    weft_program *p;
    if (weft_program_create(ctx, &p) == WEFT_OK) {
        weft_exp *e = weft_add(weft_i32(p, 1), weft_f32(p, 2));
        CHECK(e == NULL && weft_program_status(p) == WEFT_ERR_TYPE_MISMATCH,
              "type error expected");
        weft_acc *r = weft_unit(e);
        weft_executable *x = NULL;
        CHECK(weft_compile(p, &r, 1, &x) == WEFT_ERR_TYPE_MISMATCH,
              "compile error expected");
        weft_program_free(p);
    }
    /* the wrong arguments */
    weft_array *out[2] = {NULL, NULL};
    CHECK(weft_run(exe, NULL, 0, out, 1) == WEFT_ERR_ARGUMENT_COUNT,
          "argument count error expected");
    /* a slice index outside its dimension */
    weft_array *xs = vec_i64(ctx, 10, 1);
    CHECK(weft_run(slice_exe, &xs, 1, out, 1) == WEFT_ERR_SLICE_INDEX,
          "slice error expected");
    weft_array_release(xs);
    /* a run cancelled by its deadline, on a context of its own */
    if (i % 50 == 3) {
        weft_config cfg = weft_config_default();
        cfg.backend = be;
        cfg.threads = 2;
        cfg.timeout_ms = 2;
        weft_context *c2;
        if (weft_context_create(&cfg, &c2) == WEFT_OK) {
            weft_program *q;
            weft_program_create(c2, &q);
            weft_acc *x = weft_param(q, WEFT_I64, 1);
            weft_afun *c = weft_afun_like(x);
            weft_afun_return(c, weft_unit(weft_bool(q, 1)));
            weft_afun *b = weft_afun_like(x);
            weft_fun *inc = weft_fun1(q, WEFT_I64);
            weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i64(q, 1)));
            weft_afun_return(b, weft_map(inc, weft_afun_arg(b)));
            weft_acc *r = weft_awhile(c, b, x);
            weft_array *in = vec_i64(c2, 100, 1), *o = NULL;
            CHECK(weft_run1(q, &r, 1, &in, 1, &o, 1) == WEFT_ERR_CANCELLED,
                  "cancel expected");
            weft_array_release(in);
            weft_program_free(q);
            weft_context_free(c2);
        }
    }
}

int main(int argc, char **argv)
{
    weft_backend be = WEFT_BACKEND_CPU;
    if (argc > 1 && weft_backend_from_name(argv[1], &be) != WEFT_OK) {
        fprintf(stderr, "usage: weft_soak [interp|cpu|ptx] [runs]\n");
        return 2;
    }
    long runs = argc > 2 ? atol(argv[2]) : 10000;
    weft_config cfg = weft_config_default();
    cfg.backend = be;
    weft_context *ctx;
    if (weft_context_create(&cfg, &ctx) != WEFT_OK) {
        fprintf(stderr, "soak: %s\n", weft_last_error());
        return 2;
    }
    /* executables compiled once: every program, and a slice that fails */
    weft_executable *exe[NPROG] = {NULL};
    for (int k = 0; k < NPROG; k++) {
        weft_program *p;
        weft_program_create(ctx, &p);
        weft_acc *r[2];
        int nr = build(p, k, r);
        CHECK(weft_compile(p, r, nr, &exe[k]) == WEFT_OK, "compile %d", k);
        weft_program_free(p);
    }
    weft_executable *slice_exe = NULL;
    {
        weft_program *p;
        weft_program_create(ctx, &p);
        weft_acc *xs = weft_param(p, WEFT_I64, 1);
        weft_exp *spec[1] = {weft_i64(p, 99)};
        weft_acc *r = weft_slice(xs, 1, spec);
        CHECK(weft_compile(p, &r, 1, &slice_exe) == WEFT_OK, "compile slice");
        weft_program_free(p);
    }
    if (failures) {
        return 1;
    }
    printf("soak: %s backend, %ld runs\n", argv[1] ? argv[1] : "cpu", runs);
    printf("%8s %10s\n", "runs", "rss_kib");
    printf("%8d %10ld\n", 0, rss_kib());
    const char *only = getenv("SOAK_ONLY"); /* 0..3: one kind of iteration */
    for (long i = 0; i < runs; i++) {
        int k = (int)(i / 4 % NPROG);
        int64_t n = 1000 + (i * 7919) % 50000;
        switch (only && *only ? atoi(only) : i % 4) {
        case 0: compile_and_run(ctx, k, n); break;
        case 1: {
            weft_array *xs = vec_i64(ctx, n, 1);
            weft_array *out[2] = {NULL, NULL};
            if (weft_run(exe[k], &xs, 1, out,
                         weft_executable_outputs(exe[k])) == WEFT_OK) {
                check(k, n, out);
            } else {
                CHECK(0, "run of executable %d", k);
            }
            weft_array_release(out[0]);
            weft_array_release(out[1]);
            weft_array_release(xs);
            break;
        }
        case 2: arrays(ctx, (int)i); break;
        default: errors(ctx, be, exe[0], slice_exe, (int)i); break;
        }
        if ((i + 1) % 1000 == 0) {
            printf("%8ld %10ld\n", i + 1, rss_kib());
            fflush(stdout);
        }
        if (failures > 10) {
            break;
        }
    }
    for (int k = 0; k < NPROG; k++) {
        weft_executable_free(exe[k]);
    }
    weft_executable_free(slice_exe);
    weft_context_free(ctx);
    if (failures) {
        fprintf(stderr, "soak: %d failures\n", failures);
        return 1;
    }
    return 0;
}
