/*
 * bench/gpu/smvm_env.c: weft's smvm and the hand-written CUDA kernel, run
 * exactly as bench/gpu/run.py runs them (bench_weft_gpu.so's wg_open and
 * wg_run, bench_ref_gpu.so's rf_open and rf_run, CUDA events on each
 * one's stream), under several conditions between the timed runs, to find
 * out why run.py's weft times stay 30-40 us above smvm_probe's (issue 22;
 * bench/results/gpu.md, "smvm at session 31's code"):
 *
 *   alone   each implementation back to back (smvm_probe's way)
 *   alt     the two in turn (run.py's rounds, without the Python peers)
 *   flush   before each run, 256 MiB of device memory set (cuMemsetD32:
 *           the other's data in L2, nothing else)
 *   host    before each run, every cache line of 256 MiB of host memory
 *           written (the host's caches cold, as after the Python peers)
 *   both    flush and host
 *   sleep   1 ms of sleep before each run (the CPU idle)
 *
 * Session 32's round 2 (bench/results/gpu.md, "smvm: run.py against
 * smvm_probe"): not L2 (flush: +1 us), the host's caches (host: +74 us
 * for weft, +35 for the hand kernel).
 *
 * Each line: the matrix, the condition, the implementation, the median of
 * `runs` runs by the host clock and by the events (ms), then weft over the
 * hand kernel.  The two results are checked against each other once.
 *
 * Build and run (from the unpacked bundle, after bench/gpu/run.sh has
 * built bench_weft_gpu.so and bench_ref_gpu.so there):
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/smvm_env.c -o smvm_env -ldl -lm
 *   ./smvm_env [conditions, comma-separated: all] [runs: 21] [banded|power]
 * (a third argument: that matrix only).
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpubench.h"

#define MAX_RUNS 64
#define SCRATCH ((size_t)256 << 20)

/* bench_weft_gpu.so */
static int (*wg_smvm_make)(int, int64_t, int64_t *);
static void (*wg_smvm_copy)(float *, int32_t *, int32_t *, int32_t *);
static void (*wg_fill_f32)(float *, int64_t, float, float, uint64_t);
static void (*wg_configure)(int, const char *);
static void (*wg_set_events)(int (*)(int, void *), double (*)(void));
static int (*wg_open)(int, const gb_shape *, const void *const *);
static double (*wg_run)(int, double *);
static int (*wg_result)(int, void *const *, const int64_t *);
static void (*wg_close)(int);
static const char *(*wg_error)(void);
static int64_t (*wg_compare_f32)(const float *, const float *, int64_t, double,
                                 double, double *);
/* bench_ref_gpu.so */
static int (*rf_init)(int);
static int (*rf_open)(int, const gb_shape *, const void *const *);
static double (*rf_run)(int, double *);
static int (*rf_result)(int, void *const *, const int64_t *);
static void (*rf_close)(int);
static const char *(*rf_error)(void);
static int (*rf_event_record)(int, void *);
static double (*rf_event_finish)(void);
/* libcuda.so.1 */
static int (*cu_mem_alloc)(unsigned long long *, size_t);
static int (*cu_memset_d32)(unsigned long long, unsigned, size_t);
static int (*cu_ctx_synchronize)(void);

static unsigned long long scratch_dev;
static unsigned char *scratch_host;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "smvm_env: %s: %s\n", what, why ? why : "");
    exit(1);
}

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        die("dlsym", name);
    }
    return p;
}

#define SYM(lib, var, name) (*(void **)&(var) = sym(lib, name))

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void load(void)
{
    void *wg = dlopen("./bench_weft_gpu.so", RTLD_NOW);
    void *rf = dlopen("./bench_ref_gpu.so", RTLD_NOW);
    void *cu = dlopen("libcuda.so.1", RTLD_NOW);
    if (!wg || !rf || !cu) {
        die("dlopen", dlerror());
    }
    SYM(wg, wg_smvm_make, "wg_smvm_make");
    SYM(wg, wg_smvm_copy, "wg_smvm_copy");
    SYM(wg, wg_fill_f32, "wg_fill_f32");
    SYM(wg, wg_configure, "wg_configure");
    SYM(wg, wg_set_events, "wg_set_events");
    SYM(wg, wg_open, "wg_open");
    SYM(wg, wg_run, "wg_run");
    SYM(wg, wg_result, "wg_result");
    SYM(wg, wg_close, "wg_close");
    SYM(wg, wg_error, "wg_error");
    SYM(wg, wg_compare_f32, "wg_compare_f32");
    SYM(rf, rf_init, "rf_init");
    SYM(rf, rf_open, "rf_open");
    SYM(rf, rf_run, "rf_run");
    SYM(rf, rf_result, "rf_result");
    SYM(rf, rf_close, "rf_close");
    SYM(rf, rf_error, "rf_error");
    SYM(rf, rf_event_record, "rf_event_record");
    SYM(rf, rf_event_finish, "rf_event_finish");
    SYM(cu, cu_mem_alloc, "cuMemAlloc_v2");
    SYM(cu, cu_memset_d32, "cuMemsetD32_v2");
    SYM(cu, cu_ctx_synchronize, "cuCtxSynchronize");
}

/* What happens before each timed run, by condition. */
enum { C_ALONE, C_ALT, C_FLUSH, C_HOST, C_BOTH, C_SLEEP, C_N };
static const char *const cond_names[C_N] = {"alone", "alt",  "flush",
                                            "host",  "both", "sleep"};

static void before(int c)
{
    static unsigned v;
    if (c == C_FLUSH || c == C_BOTH) {
        if (cu_memset_d32(scratch_dev, ++v, SCRATCH / 4) ||
            cu_ctx_synchronize()) {
            die("cuMemsetD32", "failed");
        }
    }
    if (c == C_HOST || c == C_BOTH) {
        for (size_t i = 0; i < SCRATCH; i += 64) {
            scratch_host[i] += 1;
        }
    }
    if (c == C_SLEEP) {
        usleep(1000);
    }
}

/* One timed run of implementation impl (0 weft, 1 the hand kernel): host
 * ms, *ev the events'. */
static double run_one(int impl, int prog, double *ev)
{
    double host;
    if (impl == 0) {
        host = wg_run(prog, ev);
        if (host < 0) {
            die("wg_run", wg_error());
        }
    } else {
        *ev = rf_run(prog, &host);
        if (*ev < 0) {
            die("rf_run", rf_error());
        }
    }
    return host;
}

static void matrix(int prog, int runs, const int *conds, int nconds)
{
    int64_t dims[3];
    if (wg_smvm_make(prog == GB_SMVM_POWER, (int64_t)1 << 20, dims)) {
        die("wg_smvm_make", wg_error());
    }
    int64_t rows = dims[0], nnz = dims[1], cols = dims[2];
    float *vals = malloc(sizeof *vals * (size_t)nnz);
    int32_t *cidx = malloc(sizeof *cidx * (size_t)nnz);
    int32_t *rowlen = malloc(sizeof *rowlen * (size_t)rows);
    int32_t *rowptr = malloc(sizeof *rowptr * (size_t)(rows + 1));
    float *x = malloc(sizeof *x * (size_t)cols);
    float *y[2] = {malloc(sizeof(float) * (size_t)rows),
                   malloc(sizeof(float) * (size_t)rows)};
    if (!vals || !cidx || !rowlen || !rowptr || !x || !y[0] || !y[1]) {
        die("malloc", "out of memory");
    }
    wg_smvm_copy(vals, cidx, rowlen, rowptr);
    wg_fill_f32(x, cols, -1, 1, 1000 * (uint64_t)prog + 4); /* run.py's */
    gb_shape s;
    memset(&s, 0, sizeof s);
    s.n = rows;
    s.h = nnz;
    s.bins = (int32_t)cols;
    const void *in[5] = {vals, cidx, rowptr, x, rowptr};
    if (rf_open(prog, &s, in)) {
        die("rf_open", rf_error());
    }
    if (wg_open(prog, &s, in)) {
        die("wg_open", wg_error());
    }
    int64_t bytes = 4 * rows;
    void *o0[1] = {y[0]}, *o1[1] = {y[1]};
    if (wg_result(prog, o0, &bytes) || rf_result(prog, o1, &bytes)) {
        die("result", wg_error());
    }
    double err = 0;
    int64_t bad = wg_compare_f32(y[0], y[1], rows, 1.0, 5e-4, &err);
    const char *name = prog == GB_SMVM_POWER ? "power-law" : "banded";
    printf("smvm %s: %lld rows, %lld nonzeros; weft against the hand kernel: "
           "max err. %.1e %s\n",
           name, (long long)rows, (long long)nnz, err, bad ? "FAIL" : "ok");
    double ev;
    run_one(0, prog, &ev); /* warm-up, as run.py */
    run_one(1, prog, &ev);
    for (int k = 0; k < nconds; k++) {
        int c = conds[k];
        double h[2][MAX_RUNS], e[2][MAX_RUNS];
        if (c == C_ALT) {
            for (int r = 0; r < runs; r++) {
                for (int i = 1; i >= 0; i--) { /* run.py: the hand first */
                    h[i][r] = run_one(i, prog, &e[i][r]);
                }
            }
        } else {
            for (int i = 0; i < 2; i++) {
                for (int r = 0; r < runs; r++) {
                    before(c);
                    h[i][r] = run_one(i, prog, &e[i][r]);
                }
            }
        }
        double mh[2], me[2];
        for (int i = 0; i < 2; i++) {
            mh[i] = median(h[i], runs);
            me[i] = median(e[i], runs);
        }
        printf("  %-9s %-5s weft %.4f / %.4f  hand %.4f / %.4f  "
               "weft/hand %.2f / %.2f\n",
               name, cond_names[c], mh[0], me[0], mh[1], me[1], mh[0] / mh[1],
               me[0] / me[1]);
        fflush(stdout);
    }
    wg_close(prog);
    rf_close(prog);
    free(vals);
    free(cidx);
    free(rowlen);
    free(rowptr);
    free(x);
    free(y[0]);
    free(y[1]);
}

int main(int argc, char **argv)
{
    const char *list = argc > 1 ? argv[1] : "all";
    int runs = argc > 2 ? atoi(argv[2]) : 21;
    runs = runs < 1 ? 1 : runs > MAX_RUNS ? MAX_RUNS : runs;
    int conds[C_N], nconds = 0;
    for (int c = 0; c < C_N; c++) {
        const char *at = strstr(list, cond_names[c]);
        size_t len = strlen(cond_names[c]);
        if (strcmp(list, "all") == 0 || (at && (at == list || at[-1] == ',') &&
                                         (at[len] == 0 || at[len] == ','))) {
            conds[nconds++] = c;
        }
    }
    if (nconds == 0) {
        die("no condition in", list);
    }
    load();
    if (rf_init(0)) {
        die("rf_init", rf_error());
    }
    wg_set_events(rf_event_record, rf_event_finish);
    char dir[] = "/tmp/smvm_env.XXXXXX";
    if (!mkdtemp(dir)) {
        die("mkdtemp", "failed");
    }
    wg_configure(2, dir); /* ptx, a fresh disk cache as run.py's */
    scratch_host = calloc(SCRATCH, 1);
    if (!scratch_host || cu_mem_alloc(&scratch_dev, SCRATCH)) {
        die("scratch", "out of memory");
    }
    printf("smvm_env: median of %d runs, host clock / CUDA events, ms\n", runs);
    const char *only = argc > 3 ? argv[3] : "";
    if (strcmp(only, "power") != 0) {
        matrix(GB_SMVM_BANDED, runs, conds, nconds);
    }
    if (strcmp(only, "banded") != 0) {
        matrix(GB_SMVM_POWER, runs, conds, nconds);
    }
    return 0;
}
