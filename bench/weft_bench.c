/*
 * bench/weft_bench.c: weft's CPU backend against hand-written C/OpenMP.
 *
 * Not a test: a program that times dotp, saxpy, sum, prefix sum,
 * Black-Scholes, Mandelbrot and n-body (two formulations) on the CPU
 * backend and, in the same process, the references of bench/ref.c on the
 * same number of threads, strict (ref_*) and built with -ffast-math
 * (reff_*), and prints the tables (and writes them as markdown with the
 * machine it ran on, -o).  weft runs with the default flags and with
 * WEFT_FLAG_FAST_MATH; numba (bench/numba_ref.py, run as a child process)
 * where python3 can import it; the compute-bound programs also on one
 * thread (thread scaling).
 *
 * For each program:
 *   1. compile it in a context whose disk cache is a fresh, empty
 *      directory (wall time of weft_compile, LLVM's share from
 *      weft_context_stats, kernels compiled), then again in a new context
 *      on the same directory (wall time; every kernel should be loaded,
 *      none compiled), and once more with WEFT_FLAG_NO_FUSION (every
 *      operation its own array: the fused/unfused comparison of the fusion
 *      issue);
 *   2. time in rounds: each round runs weft fused, weft unfused, the
 *      reference into freshly allocated buffers and the reference into its
 *      buffers, once each, so that all four meet the same load on a shared
 *      machine; round 0 warms up, and each gets the median of `runs`
 *      rounds.  weft's time is weft_run's wall time, which includes
 *      getting the result arrays (weft_run returns new arrays by contract;
 *      the context reuses the buffers of released ones); the "fresh"
 *      reference shows what a fresh allocation per run would cost;
 *   3. check weft's results (fused and unfused, last round) against the
 *      reference's, within a tolerance stated per program: ok or FAIL.
 * Around each timed run, outside the wall clock's reads, the CPU clocks of
 * all the process's threads are read too (bench/timing.h): the CPU time
 * over the wall time of a run (its median over the rounds) is how many
 * CPUs the run kept busy, the "CPU use" table (numba and the other peers
 * measure theirs in bench/numba_ref.py).  A run on more than one thread
 * whose cpu/wall is below (threads + 1) / 2 gets a warning: a 2-thread run
 * whose process had one CPU (1.0 at most) is not a 2-thread time.
 * Throughput is GB/s (the bytes a program must move at least: each input
 * read once, each output written once) for memory-bound programs and
 * GFLOP/s (operations counted as stated in the notes) for compute-bound
 * ones.  The floor is those bytes over the bandwidth of a plain OpenMP copy
 * loop measured at the start.
 *
 * If the plan of a program has no kernel (its operation still runs on the
 * interpreter fallback), the program is run at 1/32 of its size so that
 * the run stays short, and the table says so.
 *
 * Usage: weft_bench [-t threads] [-r runs] [-q] [-o file.md] [-d dir]
 *   -t  threads for weft (cfg.threads) and OpenMP (default: online CPUs)
 *   -r  timed runs per measurement (default 7, at least 5 recommended)
 *   -q  quick: every size divided by 16 (a smoke run; do not publish)
 *   -o  write the markdown report to this file, and its tables as JSON
 *       beside it (x.md: x.json) for scripts that compare runs
 *   -d  write each kernel's plan, optimised IR, assembly and
 *       vectorisation report to this directory (WEFT_DUMP's kinds; the
 *       dumps need the IR, so the "from disk cache" compile compiles too)
 * Exits 0 when every check passed, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "programs.h"
#include "ref.h"
#include "timing.h"
#include "weft.h"

#ifndef WEFT_BENCH_LLVM
#define WEFT_BENCH_LLVM "19"
#endif
#ifndef WEFT_BENCH_COMMIT
#define WEFT_BENCH_COMMIT "unknown"
#endif

/* ---- options and small helpers ----------------------------------------- */

typedef struct options {
    int threads;
    int runs;
    int quick;
    const char *out_path;
    const char *dump_dir;
    const char *only; /* -p: run only the programs whose name has this */
    unsigned flags;   /* -n: WEFT_FLAG_NO_TIERING on every context */
} options;

static options opt = {0, 7, 0, NULL, NULL, NULL, 0};

/* Which references the programs' ref callbacks run: 0 the strict ones
 * (ref_*), 1 the fast-math ones (reff_*: bench/ref.c built with
 * -ffast-math). */
static int use_fast;
/* Set while a result of weft with WEFT_FLAG_FAST_MATH is checked: the
 * checks whose result is a count of discrete outcomes allow more (see
 * mandel_check). */
static int checking_fast;
#define REFN(x) (use_fast ? reff_##x : ref_##x)

/* Threads of the contexts made from now on (opt.threads, or 1 for the
 * scaling runs). */
static int cur_threads;

/* The CPU time of the last session_open's weft_compile (the calling
 * thread's: weft_compile compiles on it). */
static double last_compile_cpu_ms;

/* A deterministic pseudo-random stream (64-bit LCG, top bits). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd_u32(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 32);
}

/* Uniform in [lo, hi). */
static float rnd_f32(float lo, float hi)
{
    return lo + (hi - lo) * (float)(rnd_u32() >> 8) * (1.0f / 16777216.0f);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "weft_bench: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* ---- programs ----------------------------------------------------------- */

#define MAX_IN 4
#define MAX_REF 3
#define MAX_OUT 4 /* outputs of a program (the arrays of its tuple) */

typedef struct input {
    weft_type type;
    int rank;
    int64_t shape[2];
    void *data;
} input;

typedef struct bench bench;

/* The implementations a program times in its rounds and in Python, for
 * their CPU time over wall time (row.cpu_wall, the "CPU use" table): weft
 * fused, unfused and with fast math, the strict and the fast-math C, the
 * strict C into fresh buffers, numba and the other peer. */
enum {
    IMPL_WEFT,
    IMPL_UNFUSED,
    IMPL_FAST,
    IMPL_REF,
    IMPL_REF_FAST,
    IMPL_REF_FRESH,
    IMPL_NUMBA,
    IMPL_PEER,
    NIMPL
};

/* What one program measured; negative times were not measured. */
typedef struct row {
    double weft_ms, unfused_ms, ref_ms, ref_fresh_ms;
    double fast_ms;     /* weft with WEFT_FLAG_FAST_MATH */
    double ref_fast_ms; /* the fast-math C reference */
    double numba_ms;    /* numba (parallel, fastmath), -1 when absent */
    double peer_ms;     /* the other peer (scipy, scikit-learn), or -1 */
    double weft1_ms, ref_fast1_ms; /* one thread (compute-bound programs) */
    /* the CPU time of the process's threads over the wall time of each
     * implementation's timed runs (IMPL_*), the median of the rounds'; -1
     * when not measured */
    double cpu_wall[NIMPL];
    int fast_ok;
    double fast_err;
    double compile_ms, llvm_ms, cached_ms;
    double compile_cpu_ms;   /* CPU time of the calling thread in the first
                              compile (robust to other load) */
    double optimised_ms;     /* from the first compile's start until
                              weft_context_wait_optimised returned */
    double optimise_llvm_ms; /* weft_stats.optimise_ms then */
    double quick_ms;         /* median run time on the quick code
                              (WEFT_FLAG_QUICK_CODE) */
    int quick_ok;
    uint64_t compiled, loaded, cached_compiled;
    int kernels, unfused_kernels;
    char plan[256];
    int ok;
    double err, unfused_err;
    char note[256];
    char error[256]; /* a weft failure, or "" */
} row;

struct bench {
    const char *name;
    int skipped;           /* left out by -p */
    const char *what;      /* the weft formulation, for the notes */
    const char *tolerance; /* how the check compares, for the notes */
    const char *flop_rule; /* how flops are counted, or NULL */
    /* Choose sizes for scale (1 = the published size), allocate and fill
     * the inputs and the reference's outputs. */
    void (*setup)(bench *b, double scale);
    weft_acc *(*build)(weft_context *ctx, weft_program *p,
                       weft_acc *const *param, const bench *b);
    void (*ref)(bench *b);
    /* Compare a weft result with the reference's: 1 if within tolerance;
     * *err gets the measure. */
    int (*check)(bench *b, weft_array *const *outs, double *err);
    char size[64];
    int nin;
    input in[MAX_IN];
    void *ref_out[MAX_REF];
    size_t ref_bytes[MAX_REF]; /* the size of each ref_out buffer */
    float ref_scalar;
    double bytes, flops;
    /* parameters */
    int64_t n, w, h;
    int32_t max_iter;
    float a, x0, y0, dx, dy, eps2;
    /* smvm, Jacobi, k-means */
    int powerlaw;          /* smvm: the power-law matrix, else the banded */
    int k;                 /* k-means: clusters */
    int32_t iters;         /* Jacobi: steps; k-means: the most */
    int32_t ref_iters;     /* k-means: the iterations the reference ran */
    const float *ref_grid; /* Jacobi: the reference's result buffer */
    const char *peer;      /* the other peer's name, or NULL */
    const char *peer_prog; /* ... its program in bench/numba_ref.py */
    int peer_serial;       /* the peer runs on one thread (scipy.sparse) */
    int share_inputs;      /* the Python programs read the inputs from
                              files (write_inputs) */
    row r;
};

static void bench_release(bench *b)
{
    for (int i = 0; i < MAX_IN; i++) {
        free(b->in[i].data);
        b->in[i].data = NULL;
    }
    for (int i = 0; i < MAX_REF; i++) {
        free(b->ref_out[i]);
        b->ref_out[i] = NULL;
        b->ref_bytes[i] = 0;
    }
    b->nin = 0;
}

static void set_input(bench *b, int i, weft_type t, int rank, int64_t n,
                      size_t elt)
{
    b->in[i].type = t;
    b->in[i].rank = rank;
    b->in[i].shape[0] = n;
    b->in[i].data = xmalloc((size_t)n * elt);
    if (i + 1 > b->nin) {
        b->nin = i + 1;
    }
}

/* Reference output buffer k of the given size, touched once. */
static void set_ref_out(bench *b, int k, size_t bytes)
{
    b->ref_out[k] = xmalloc(bytes);
    b->ref_bytes[k] = bytes;
    ref_zero(b->ref_out[k], (int64_t)(bytes / sizeof(float)));
}

static int64_t scaled(double base, double scale)
{
    int64_t n = (int64_t)(base * scale);
    return n < 1 ? 1 : n;
}

/* A function (a, b) -> op(a, b) on type t. */
static weft_fun *binop(weft_program *p, weft_type t, weft_op op)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_prim2(op, weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* Largest |w - r| / max(1, |r|) over n floats. */
static double max_err_f32(const float *w, const float *r, int64_t n)
{
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)w[i] - r[i]) / fmax(1.0, fabs(r[i]));
        if (!(d <= e)) {
            e = d; /* NaN too */
        }
    }
    return e;
}

static double rel_err(double w, double r)
{
    return fabs(w - r) / fmax(1e-30, fabs(r));
}

/* -- dotp: fold (+) 0 (zipWith (*) xs ys) -- */

static void dotp_setup(bench *b, double scale)
{
    b->n = scaled(67108864.0, scale);
    snprintf(b->size, sizeof b->size, "%lld f32", (long long)b->n);
    for (int k = 0; k < 2; k++) {
        set_input(b, k, WEFT_F32, 1, b->n, sizeof(float));
        float *x = b->in[k].data;
        for (int64_t i = 0; i < b->n; i++) {
            x[i] = (float)(rnd_u32() >> 28) * 0.0625f; /* k/16 in [0, 1) */
        }
    }
    b->bytes = 8.0 * (double)b->n;
    b->flops = 0;
}

static weft_acc *dotp_build(weft_context *ctx, weft_program *p,
                            weft_acc *const *x, const bench *b)
{
    (void)ctx;
    (void)b;
    return weft_fold(binop(p, WEFT_F32, WEFT_OP_ADD), weft_f32(p, 0),
                     weft_zipwith(binop(p, WEFT_F32, WEFT_OP_MUL), x[0], x[1]));
}

static void dotp_ref(bench *b)
{
    b->ref_scalar = REFN(dotp)(b->in[0].data, b->in[1].data, b->n);
}

static int scalar_check(bench *b, weft_array *const *outs, double *err)
{
    weft_array *out = outs[0];
    const float *w = weft_array_data(out, 0);
    *err = w ? rel_err(*w, b->ref_scalar) : INFINITY;
    return *err <= 1e-4;
}

/* -- saxpy: zipWith (\x y -> a * x + y) xs ys -- */

static void saxpy_setup(bench *b, double scale)
{
    b->n = scaled(67108864.0, scale);
    b->a = 2.5f;
    snprintf(b->size, sizeof b->size, "%lld f32", (long long)b->n);
    for (int k = 0; k < 2; k++) {
        set_input(b, k, WEFT_F32, 1, b->n, sizeof(float));
        float *x = b->in[k].data;
        for (int64_t i = 0; i < b->n; i++) {
            x[i] = rnd_f32(-1, 1);
        }
    }
    set_ref_out(b, 0, (size_t)b->n * sizeof(float));
    b->bytes = 12.0 * (double)b->n;
    b->flops = 0;
}

static weft_acc *saxpy_build(weft_context *ctx, weft_program *p,
                             weft_acc *const *x, const bench *b)
{
    (void)ctx;
    weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_add(weft_mul(weft_f32(p, b->a), weft_arg(f, 0)),
                                weft_arg(f, 1)));
    return weft_zipwith(f, x[0], x[1]);
}

static void saxpy_ref(bench *b)
{
    REFN(saxpy)(b->a, b->in[0].data, b->in[1].data, b->ref_out[0], b->n);
}

static int saxpy_check(bench *b, weft_array *const *outs, double *err)
{
    weft_array *out = outs[0];
    const float *w = weft_array_data(out, 0);
    *err = w && weft_array_size(out) == b->n
               ? max_err_f32(w, b->ref_out[0], b->n)
               : INFINITY;
    return *err <= 1e-6;
}

/* -- sum: fold (+) 0 xs -- */

static void sum_setup(bench *b, double scale)
{
    b->n = scaled(67108864.0, scale);
    snprintf(b->size, sizeof b->size, "%lld f32", (long long)b->n);
    set_input(b, 0, WEFT_F32, 1, b->n, sizeof(float));
    float *x = b->in[0].data;
    for (int64_t i = 0; i < b->n; i++) {
        x[i] = (float)(rnd_u32() >> 28) * 0.0625f;
    }
    b->bytes = 4.0 * (double)b->n;
    b->flops = 0;
}

static weft_acc *sum_build(weft_context *ctx, weft_program *p,
                           weft_acc *const *x, const bench *b)
{
    (void)ctx;
    (void)b;
    return weft_fold(binop(p, WEFT_F32, WEFT_OP_ADD), weft_f32(p, 0), x[0]);
}

static void sum_ref(bench *b)
{
    b->ref_scalar = REFN(sum)(b->in[0].data, b->n);
}

/* -- prefix sum: scanl1 (+) xs on i32 -- */

static void scan_setup(bench *b, double scale)
{
    b->n = scaled(67108864.0, scale);
    snprintf(b->size, sizeof b->size, "%lld i32", (long long)b->n);
    set_input(b, 0, WEFT_I32, 1, b->n, sizeof(int32_t));
    int32_t *x = b->in[0].data;
    for (int64_t i = 0; i < b->n; i++) {
        x[i] = (int32_t)(rnd_u32() >> 28); /* 0 .. 15: no overflow */
    }
    set_ref_out(b, 0, (size_t)b->n * sizeof(int32_t));
    b->bytes = 8.0 * (double)b->n;
    b->flops = 0;
}

static weft_acc *scan_build(weft_context *ctx, weft_program *p,
                            weft_acc *const *x, const bench *b)
{
    (void)ctx;
    (void)b;
    return weft_scanl1(binop(p, WEFT_I32, WEFT_OP_ADD), x[0]);
}

static void scan_ref(bench *b)
{
    REFN(prefix_sum)(b->in[0].data, b->ref_out[0], b->n);
}

static int scan_check(bench *b, weft_array *const *outs, double *err)
{
    weft_array *out = outs[0];
    const int32_t *w = weft_array_data(out, 0);
    const int32_t *r = b->ref_out[0];
    if (!w || weft_array_size(out) != b->n) {
        *err = INFINITY;
        return 0;
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < b->n; i++) {
        bad += w[i] != r[i];
    }
    *err = (double)bad;
    return bad == 0;
}

/* -- Black-Scholes: zipWith3 to (call, put) -- */

#define BS_RISKFREE 0.02f
#define BS_VOLATILITY 0.30f
#define BS_RSQRT2PI 0.39894228040143267793994605993438f

static void bs_setup(bench *b, double scale)
{
    b->n = scaled(4194304.0, scale);
    snprintf(b->size, sizeof b->size, "%lld options", (long long)b->n);
    for (int k = 0; k < 3; k++) {
        set_input(b, k, WEFT_F32, 1, b->n, sizeof(float));
    }
    float *s = b->in[0].data, *x = b->in[1].data, *t = b->in[2].data;
    for (int64_t i = 0; i < b->n; i++) {
        s[i] = rnd_f32(5, 30);
        x[i] = rnd_f32(1, 100);
        t[i] = rnd_f32(0.25f, 10);
    }
    for (int k = 0; k < 2; k++) {
        set_ref_out(b, k, (size_t)b->n * sizeof(float));
    }
    b->bytes = 20.0 * (double)b->n;
    b->flops = 59.0 * (double)b->n;
}

/* N(d), the polynomial approximation (Abramowitz and Stegun 26.2.17). */
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
        weft_mul(weft_f32(p, BS_RSQRT2PI),
                 weft_fexp(weft_mul(weft_f32(p, -0.5f), weft_mul(d, d)))),
        weft_mul(k, poly));
    return weft_cond(weft_gt(d, weft_f32(p, 0)), weft_sub(weft_f32(p, 1), r),
                     r);
}

static weft_acc *bs_build(weft_context *ctx, weft_program *p,
                          weft_acc *const *in, const bench *b)
{
    (void)ctx;
    (void)b;
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_exp *s = weft_arg(f, 0), *x = weft_arg(f, 1), *t = weft_arg(f, 2);
    weft_exp *r = weft_f32(p, BS_RISKFREE);
    weft_exp *v = weft_f32(p, BS_VOLATILITY);
    weft_exp *v_sqrtt = weft_mul(v, weft_sqrt(t));
    weft_exp *drift =
        weft_f32(p, BS_RISKFREE + 0.5f * (BS_VOLATILITY * BS_VOLATILITY));
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

static void bs_ref(bench *b)
{
    REFN(black_scholes)(b->in[0].data, b->in[1].data, b->in[2].data,
                        b->ref_out[0], b->ref_out[1], b->n, BS_RISKFREE,
                        BS_VOLATILITY);
}

static int bs_check(bench *b, weft_array *const *outs, double *err)
{
    weft_array *out = outs[0];
    const float *call = weft_array_data(out, 0);
    const float *put = weft_array_data(out, 1);
    if (!call || !put || weft_array_size(out) != b->n) {
        *err = INFINITY;
        return 0;
    }
    *err = fmax(max_err_f32(call, b->ref_out[0], b->n),
                max_err_f32(put, b->ref_out[1], b->n));
    return *err <= 1e-4;
}

/* -- Mandelbrot: generate (h, w) with a while loop per point -- */

static void mandel_setup(bench *b, double scale)
{
    b->w = b->h = scaled(2048.0, sqrt(scale));
    b->max_iter = 256;
    b->x0 = -2.0f;
    b->y0 = -1.25f;
    b->dx = 2.5f / (float)b->w;
    b->dy = 2.5f / (float)b->h;
    snprintf(b->size, sizeof b->size, "%lldx%lld, %d iterations",
             (long long)b->w, (long long)b->h, (int)b->max_iter);
    b->nin = 0;
    set_ref_out(b, 0, (size_t)(b->w * b->h) * sizeof(int32_t));
    b->bytes = 4.0 * (double)(b->w * b->h);
    /* Counted from the reference's iteration counts after its first run. */
    b->flops = 0;
}

static weft_acc *mandel_build(weft_context *ctx, weft_program *p,
                              weft_acc *const *in, const bench *b)
{
    (void)in;
    weft_type st =
        weft_type_tuple(ctx, 3, (weft_type[]){WEFT_F32, WEFT_F32, WEFT_I32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *ci = weft_add(
        weft_f32(p, b->y0),
        weft_mul(weft_f32(p, b->dy), weft_convert(weft_get(ix, 0), WEFT_F32)));
    weft_exp *cr = weft_add(
        weft_f32(p, b->x0),
        weft_mul(weft_f32(p, b->dx), weft_convert(weft_get(ix, 1), WEFT_F32)));

    weft_fun *cond = weft_fun1(p, st);
    weft_exp *s = weft_arg(cond, 0);
    weft_exp *zr = weft_get(s, 0), *zi = weft_get(s, 1), *it = weft_get(s, 2);
    weft_fun_return(
        cond, weft_and(weft_lt(it, weft_i32(p, b->max_iter)),
                       weft_le(weft_add(weft_mul(zr, zr), weft_mul(zi, zi)),
                               weft_f32(p, 4))));

    weft_fun *body = weft_fun1(p, st);
    s = weft_arg(body, 0);
    zr = weft_get(s, 0);
    zi = weft_get(s, 1);
    it = weft_get(s, 2);
    weft_exp *next[3] = {
        weft_add(weft_sub(weft_mul(zr, zr), weft_mul(zi, zi)), cr),
        weft_add(weft_mul(weft_mul(weft_f32(p, 2), zr), zi), ci),
        weft_add(it, weft_i32(p, 1))};
    weft_fun_return(body, weft_tuple(p, 3, next));

    weft_exp *init[3] = {weft_f32(p, 0), weft_f32(p, 0), weft_i32(p, 0)};
    weft_fun_return(
        g, weft_get(weft_while(cond, body, weft_tuple(p, 3, init)), 2));
    return weft_generate(weft_index2(weft_i64(p, b->h), weft_i64(p, b->w)), g);
}

static void mandel_ref(bench *b)
{
    REFN(mandelbrot)(b->w, b->h, b->max_iter, b->x0, b->y0, b->dx, b->dy,
                     b->ref_out[0]);
    if (b->flops == 0) {
        const int32_t *r = b->ref_out[0];
        double iters = 0;
        for (int64_t i = 0; i < b->w * b->h; i++) {
            iters += r[i];
        }
        b->flops = 9.0 * iters;
    }
}

static int mandel_check(bench *b, weft_array *const *outs, double *err)
{
    weft_array *out = outs[0];
    const int32_t *w = weft_array_data(out, 0);
    const int32_t *r = b->ref_out[0];
    int64_t n = b->w * b->h;
    if (!w || weft_array_size(out) != n) {
        *err = INFINITY;
        return 0;
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bad += w[i] != r[i];
    }
    *err = (double)bad / (double)n;
    /* fast math (contraction) moves the escape iteration of points near
     * the set's boundary: 1% of the points may differ there */
    return *err <= (checking_fast ? 1e-2 : 1e-3);
}

/* -- n-body: accelerations of all bodies, O(n^2) -- */

static void nbody_setup(bench *b, double scale)
{
    b->n = scaled(8192.0, sqrt(scale));
    b->eps2 = 0.01f;
    snprintf(b->size, sizeof b->size, "%lld bodies", (long long)b->n);
    for (int k = 0; k < 4; k++) {
        set_input(b, k, WEFT_F32, 1, b->n, sizeof(float));
    }
    for (int64_t i = 0; i < b->n; i++) {
        for (int k = 0; k < 3; k++) {
            ((float *)b->in[k].data)[i] = rnd_f32(-1, 1);
        }
        ((float *)b->in[3].data)[i] = rnd_f32(0.5f, 1.5f);
    }
    for (int k = 0; k < 3; k++) {
        set_ref_out(b, k, (size_t)b->n * sizeof(float));
    }
    b->bytes = 28.0 * (double)b->n;
    b->flops = 20.0 * (double)b->n * (double)b->n;
}

/* The contribution of body j to body i's acceleration, as a 3-tuple. */
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

static weft_type vec3_type(weft_context *ctx)
{
    return weft_type_tuple(ctx, 3, (weft_type[]){WEFT_F32, WEFT_F32, WEFT_F32});
}

/* (a0 + b0, a1 + b1, a2 + b2), componentwise over 3-tuples. */
static weft_exp *add3(weft_program *p, weft_exp *a, weft_exp *b)
{
    weft_exp *c[3];
    for (int k = 0; k < 3; k++) {
        c[k] = weft_add(weft_get(a, k), weft_get(b, k));
    }
    return weft_tuple(p, 3, c);
}

static weft_exp *zero3(weft_program *p)
{
    weft_exp *z[3] = {weft_f32(p, 0), weft_f32(p, 0), weft_f32(p, 0)};
    return weft_tuple(p, 3, z);
}

/* fold (+3) (0,0,0) (generate (n, n) (\(i, j) -> interaction i j)) */
static weft_acc *nbody_build(weft_context *ctx, weft_program *p,
                             weft_acc *const *in, const bench *b)
{
    weft_type v3 = vec3_type(ctx);
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_fun_return(
        g, interaction(p, in, weft_get(ix, 0), weft_get(ix, 1), b->eps2));
    weft_exp *n = weft_size(in[0]);
    weft_acc *all = weft_generate(weft_index2(n, n), g);
    weft_fun *plus = weft_fun2(p, v3, v3);
    weft_fun_return(plus, add3(p, weft_arg(plus, 0), weft_arg(plus, 1)));
    return weft_fold(plus, zero3(p), all);
}

/* generate n (\i -> while over j: acc + interaction i j) */
static weft_acc *nbody_while_build(weft_context *ctx, weft_program *p,
                                   weft_acc *const *in, const bench *b)
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
    weft_exp *c = interaction(p, in, i, j, b->eps2);
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

static void nbody_ref(bench *b)
{
    REFN(nbody)(b->in[0].data, b->in[1].data, b->in[2].data, b->in[3].data,
                b->ref_out[0], b->ref_out[1], b->ref_out[2], b->n, b->eps2);
}

static int nbody_check(bench *b, weft_array *const *outs, double *err)
{
    weft_array *out = outs[0];
    if (weft_array_size(out) != b->n) {
        *err = INFINITY;
        return 0;
    }
    double scale = 0, e = 0;
    for (int k = 0; k < 3; k++) {
        const float *r = b->ref_out[k];
        for (int64_t i = 0; i < b->n; i++) {
            scale = fmax(scale, fabs(r[i]));
        }
    }
    for (int k = 0; k < 3; k++) {
        const float *w = weft_array_data(out, k);
        const float *r = b->ref_out[k];
        if (!w) {
            *err = INFINITY;
            return 0;
        }
        for (int64_t i = 0; i < b->n; i++) {
            double d = fabs((double)w[i] - r[i]);
            if (!(d <= e)) {
                e = d;
            }
        }
    }
    *err = e / fmax(scale, 1e-30);
    return *err <= 1e-3;
}

/* -- smvm: foldSeg' (+) 0 (zipWith (*) vals (backpermute cols x)) rowptr -- */

#define SMVM_BAND 10
#define SMVM_MAXLEN 10000

/* Inputs 0..3: vals, cols, rowptr, x; bench/programs.h makes the matrix. */
static void smvm_setup(bench *b, double scale)
{
    int64_t n = scaled(1048576.0, scale);
    bp_csr m;
    int ok = b->powerlaw
                 ? bp_csr_powerlaw(&m, n * SMVM_BAND, n, SMVM_MAXLEN, 0x5eed)
                 : bp_csr_banded(&m, n, SMVM_BAND, 0x5eed);
    if (!ok) {
        fprintf(stderr, "weft_bench: out of memory (a sparse matrix)\n");
        exit(2);
    }
    b->n = m.nrows;
    b->w = m.nnz;
    snprintf(b->size, sizeof b->size, "%lld rows, %lld nonzeros",
             (long long)m.nrows, (long long)m.nnz);
    void *data[4] = {m.vals, m.cols, m.rowptr, NULL};
    weft_type types[4] = {WEFT_F32, WEFT_I32, WEFT_I32, WEFT_F32};
    int64_t len[4] = {m.nnz, m.nnz, m.nrows + 1, m.ncols};
    for (int k = 0; k < 4; k++) {
        b->in[k] = (input){
            .type = types[k], .rank = 1, .shape = {len[k]}, .data = data[k]};
    }
    b->nin = 4;
    set_input(b, 3, WEFT_F32, 1, m.ncols, sizeof(float));
    float *x = b->in[3].data;
    for (int64_t i = 0; i < m.ncols; i++) {
        x[i] = rnd_f32(-1, 1);
    }
    free(m.rowlen); /* the row pointers (input 2) are every side's */
    set_ref_out(b, 0, (size_t)m.nrows * sizeof(float));
    /* values and columns once, the row lengths (pointers), x once, y */
    b->bytes =
        8.0 * (double)m.nnz + 8.0 * (double)m.nrows + 4.0 * (double)m.ncols;
    b->flops = 0;
}

static void smvm_banded_setup(bench *b, double scale)
{
    b->powerlaw = 0;
    smvm_setup(b, scale);
}

static void smvm_powerlaw_setup(bench *b, double scale)
{
    b->powerlaw = 1;
    smvm_setup(b, scale);
}

static weft_acc *smvm_build(weft_context *ctx, weft_program *p,
                            weft_acc *const *in, const bench *b)
{
    (void)ctx;
    (void)b;
    return bp_smvm(p, in[0], in[1], in[2], in[3]);
}

static void smvm_ref(bench *b)
{
    REFN(smvm)(b->in[2].data, b->in[1].data, b->in[0].data, b->in[3].data,
               b->ref_out[0], b->n);
}

static int smvm_check(bench *b, weft_array *const *outs, double *err)
{
    const float *w = weft_array_data(outs[0], 0);
    *err = w && weft_array_size(outs[0]) == b->n
               ? max_err_f32(w, b->ref_out[0], b->n)
               : INFINITY;
    return *err <= 5e-4;
}

/* -- Jacobi: awhile over (u, count) of a 3x3 clamped stencil -- */

static void jacobi_setup(bench *b, double scale)
{
    b->h = b->w = scaled(4096.0, sqrt(scale));
    b->iters = 100;
    snprintf(b->size, sizeof b->size, "%lldx%lld, %d steps", (long long)b->h,
             (long long)b->w, (int)b->iters);
    set_input(b, 0, WEFT_F32, 2, b->h * b->w, sizeof(float));
    b->in[0].shape[0] = b->h;
    b->in[0].shape[1] = b->w;
    float *u = b->in[0].data;
    for (int64_t i = 0; i < b->h * b->w; i++) {
        u[i] = rnd_f32(0, 1);
    }
    for (int k = 0; k < 2; k++) {
        set_ref_out(b, k, (size_t)(b->h * b->w) * sizeof(float));
    }
    b->bytes = 8.0 * (double)(b->h * b->w) * b->iters;
    b->flops = 0;
}

static weft_acc *jacobi_build(weft_context *ctx, weft_program *p,
                              weft_acc *const *in, const bench *b)
{
    (void)ctx;
    return bp_jacobi(p, in[0], b->iters);
}

static void jacobi_ref(bench *b)
{
    b->ref_grid = REFN(jacobi)(b->in[0].data, b->ref_out[0], b->ref_out[1],
                               b->h, b->w, b->iters);
}

static int jacobi_check(bench *b, weft_array *const *outs, double *err)
{
    const float *w = weft_array_data(outs[0], 0);
    *err = w && weft_array_size(outs[0]) == b->h * b->w
               ? max_err_f32(w, b->ref_grid, b->h * b->w)
               : INFINITY;
    return *err <= 1e-5;
}

/* -- k-means: Lloyd's iterations in an awhile -- */

#define KMEANS_K 16
#define KMEANS_SPREAD 2.5f

/* Inputs: px, py, and the initial centroids cx, cy (the first k points);
 * the reference's outputs: cx, cy, the assignment. */
static void kmeans_setup(bench *b, double scale)
{
    b->n = scaled(4194304.0, scale);
    b->k = KMEANS_K;
    b->iters = 50;
    for (int c = 0; c < 2; c++) {
        set_input(b, c, WEFT_F32, 1, b->n, sizeof(float));
        set_input(b, c + 2, WEFT_F32, 1, b->k, sizeof(float));
    }
    bp_kmeans_points(b->in[0].data, b->in[1].data, b->n, b->k, KMEANS_SPREAD,
                     0x5eed);
    for (int c = 0; c < 2; c++) {
        memcpy(b->in[c + 2].data, b->in[c].data, sizeof(float) * (size_t)b->k);
        set_ref_out(b, c, sizeof(float) * (size_t)b->k);
    }
    set_ref_out(b, 2, sizeof(int32_t) * (size_t)b->n);
    /* the reference's first run tells the iterations (kmeans_ref) */
    b->ref_iters = 0;
    snprintf(b->size, sizeof b->size, "%lld points, k = %d", (long long)b->n,
             b->k);
    b->bytes = 0;
    b->flops = 0;
}

static weft_acc *kmeans_build(weft_context *ctx, weft_program *p,
                              weft_acc *const *in, const bench *b)
{
    return bp_kmeans(ctx, p, in[0], in[1], in[2], in[3], b->iters, 0);
}

static weft_acc *kmeans_while_build(weft_context *ctx, weft_program *p,
                                    weft_acc *const *in, const bench *b)
{
    return bp_kmeans(ctx, p, in[0], in[1], in[2], in[3], b->iters, 1);
}

static void kmeans_ref(bench *b)
{
    for (int c = 0; c < 2; c++) {
        memcpy(b->ref_out[c], b->in[c + 2].data, sizeof(float) * (size_t)b->k);
    }
    int32_t it =
        REFN(kmeans)(b->in[0].data, b->in[1].data, b->n, b->k, b->ref_out[0],
                     b->ref_out[1], b->ref_out[2], b->iters);
    if (!use_fast) {
        b->ref_iters = it;
    }
    if (b->bytes == 0) {
        /* per iteration: the points, and each point's cluster read and
         * written */
        b->bytes = 16.0 * (double)b->n * it;
        size_t len = strlen(b->size);
        snprintf(b->size + len, sizeof b->size - len, ", %d iterations",
                 (int)it);
    }
}

/* The centroids within 1e-2 (max |w - r| / max(1, |r|): each is the f32
 * sum of some 2^18 points added in another order, weft's permute in
 * whatever order the updates land; the blobs are 10 apart) and the
 * iterations within 2 of the reference's. */
static int kmeans_check(bench *b, weft_array *const *outs, double *err)
{
    const float *cx = weft_array_data(outs[0], 0);
    const float *cy = weft_array_data(outs[1], 0);
    const int32_t *it = weft_array_data(outs[2], 0);
    if (!cx || !cy || !it || weft_array_size(outs[0]) != b->k) {
        *err = INFINITY;
        return 0;
    }
    *err = fmax(max_err_f32(cx, b->ref_out[0], b->k),
                max_err_f32(cy, b->ref_out[1], b->k));
    return *err <= 1e-2 && abs(*it - b->ref_iters) <= 2;
}

static bench benches[] = {
    {.name = "dotp",
     .what = "`fold (+) 0 (zipWith (*) xs ys)`",
     .tolerance = "relative error 1e-4 (a reassociated f32 sum; inputs are "
                  "multiples of 1/16)",
     .setup = dotp_setup,
     .build = dotp_build,
     .ref = dotp_ref,
     .check = scalar_check},
    {.name = "saxpy",
     .what = "`zipWith (\\x y -> 2.5 * x + y) xs ys`",
     .tolerance = "max |w - r| / max(1, |r|) <= 1e-6",
     .setup = saxpy_setup,
     .build = saxpy_build,
     .ref = saxpy_ref,
     .check = saxpy_check},
    {.name = "sum",
     .what = "`fold (+) 0 xs`",
     .tolerance = "relative error 1e-4 (a reassociated f32 sum)",
     .setup = sum_setup,
     .build = sum_build,
     .ref = sum_ref,
     .check = scalar_check},
    {.name = "prefix sum",
     .what = "`scanl1 (+) xs` on i32",
     .tolerance = "exact (the error column counts differing elements)",
     .setup = scan_setup,
     .build = scan_build,
     .ref = scan_ref,
     .check = scan_check},
    {.name = "Black-Scholes",
     .what = "`zipWith3` of the formulas to (call, put) pairs, f32 "
             "(as `examples/blackscholes.c`)",
     .tolerance = "max |w - r| / max(1, |r|) <= 1e-4 over calls and puts",
     .flop_rule = "59 per option: each +, -, *, /, abs, comparison, sqrt, "
                  "log and exp counted as one",
     .setup = bs_setup,
     .build = bs_build,
     .ref = bs_ref,
     .check = bs_check},
    {.name = "Mandelbrot",
     .what = "`generate (h, w)` whose function runs a `weft_while` over "
             "(zr, zi, i) and returns i",
     .tolerance = "at most 0.1% of the points' counts differ (the error "
                  "column is that fraction; with fast math 1%: contraction "
                  "moves the escape iteration of points near the boundary)",
     .flop_rule = "9 per iteration actually done: zr^2, zi^2, their sum and "
                  "the test; zr^2 - zi^2 + cr and 2 zr zi + ci",
     .setup = mandel_setup,
     .build = mandel_build,
     .ref = mandel_ref,
     .check = mandel_check},
    {.name = "n-body",
     .what = "`fold (+) (0,0,0) (generate (n, n) pull)`, pull (i, j) the "
             "pull of body j on body i, read with `weft_at` from the x, y, "
             "z, m arrays; the generate is fused into the fold",
     .tolerance = "max error / max |a| <= 1e-3 (reassociated sums)",
     .flop_rule = "20 per interaction (the customary count: sqrt and / "
                  "as one each)",
     .setup = nbody_setup,
     .build = nbody_build,
     .ref = nbody_ref,
     .check = nbody_check},
    {.name = "n-body (while)",
     .what = "`generate n` whose function runs a `weft_while` over j "
             "that adds up the pull of body j on body i",
     .tolerance = "max error / max |a| <= 1e-3",
     .flop_rule = "20 per interaction",
     .setup = nbody_setup,
     .build = nbody_while_build,
     .ref = nbody_ref,
     .check = nbody_check},
    {.name = "smvm (banded)",
     .what = "`foldSeg (+) 0 (zipWith (*) vals (backpermute nnz (\\i -> "
             "cols ! i) x)) rowptr`, CSR in f32 (`bench/programs.h`); "
             "every row 10 consecutive columns around the diagonal",
     .tolerance = "max |w - r| / max(1, |r|) <= 5e-4 (f32 sums of 10 to "
                  "10^4 products of magnitude below 1 in another order: weft "
                  "along the row, the C reference in vector lanes; 4e-5 "
                  "seen on the power-law matrix)",
     .setup = smvm_banded_setup,
     .build = smvm_build,
     .ref = smvm_ref,
     .check = smvm_check,
     .share_inputs = 1,
     .peer = "scipy.sparse",
     .peer_prog = "smvm_scipy",
     .peer_serial = 1},
    {.name = "smvm (power law)",
     .what = "the same program on a matrix of as many nonzeros in rows of "
             "1 to 10^4 (length l with density ~ l^-2), columns uniform",
     .tolerance = "as smvm (banded)",
     .setup = smvm_powerlaw_setup,
     .build = smvm_build,
     .ref = smvm_ref,
     .check = smvm_check,
     .share_inputs = 1,
     .peer = "scipy.sparse",
     .peer_prog = "smvm_scipy",
     .peer_serial = 1},
    {.name = "Jacobi",
     .what = "`awhile` over (u, unit count) of `stencil` 3x3 (clamp) of the "
             "5-point average 0.25 * (((n + s) + w) + e), f32; fused and "
             "unfused run the same kernels (a stencil takes its array "
             "manifest, so fusion changes nothing here): their columns "
             "differ by noise alone",
     .tolerance = "max |w - r| / max(1, |r|) <= 1e-5 (the strict programs "
                  "agree exactly; fast math contracts and reassociates)",
     .setup = jacobi_setup,
     .build = jacobi_build,
     .ref = jacobi_ref,
     .check = jacobi_check,
     .share_inputs = 1},
    {.name = "k-means",
     .what = "Lloyd's iterations in one `awhile` until no point changes "
             "cluster or 50 iterations: `fold` (nearest) of `generate` "
             "(n, k) distances, `permute (+)` of x, y and 1 to the "
             "clusters, a `fold` counting the points that moved; points in "
             "16 Gaussian blobs (sigma 2.5, 10 apart), the first 16 the "
             "initial centroids",
     .tolerance = "max |w - r| / max(1, |r|) <= 1e-2 over the centroids "
                  "(each the f32 sum of some 2^18 points, added in another "
                  "order: weft's permute in whatever order the updates "
                  "land, the reference per thread; the blobs are 10 "
                  "apart), iterations within 2 of the reference's",
     .setup = kmeans_setup,
     .build = kmeans_build,
     .ref = kmeans_ref,
     .check = kmeans_check,
     .share_inputs = 1,
     .peer = "scikit-learn",
     .peer_prog = "kmeans_sklearn"},
    {.name = "k-means (while)",
     .what = "the same with the nearest centroid found by `generate n` of a "
             "`weft_while` over the centroids (as n-body (while))",
     .tolerance = "as k-means",
     .setup = kmeans_setup,
     .build = kmeans_while_build,
     .ref = kmeans_ref,
     .check = kmeans_check,
     .share_inputs = 1},
};

#define NBENCH ((int)(sizeof benches / sizeof benches[0]))

/* ---- running weft ------------------------------------------------------- */

static void record_error(row *r, const char *what)
{
    if (!r->error[0]) {
        snprintf(r->error, sizeof r->error, "%s: %s", what, weft_last_error());
    }
}

static weft_status make_context(unsigned flags, const char *dir,
                                weft_context **ctx)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = cur_threads ? cur_threads : opt.threads;
    cfg.flags = WEFT_FLAG_NO_ENV | opt.flags | flags; /* QUICK_CODE wins
                                                         over -n's flag */
    cfg.cache_dir = dir;
    if (opt.dump_dir) {
        cfg.dump = "plan,opt-ir,asm,vec";
        cfg.dump_dir = opt.dump_dir;
    }
    return weft_context_create(&cfg, ctx);
}

/* A compiled program and the arrays that feed it, in one context. */
typedef struct session {
    weft_context *ctx;
    weft_program *p;
    weft_executable *exe;
    weft_array *in[MAX_IN];
    int nin;
} session;

static void session_close(session *s)
{
    for (int i = 0; i < MAX_IN; i++) {
        weft_array_release(s->in[i]);
    }
    weft_executable_free(s->exe);
    weft_program_free(s->p);
    weft_context_free(s->ctx);
    memset(s, 0, sizeof *s);
}

/* Open a context (flags, cache dir), build b's program, compile it
 * (*compile_ms: the wall time of weft_compile) and wrap b's inputs. */
static weft_status session_open(session *s, bench *b, unsigned flags,
                                const char *dir, double *compile_ms)
{
    memset(s, 0, sizeof *s);
    weft_status st = make_context(flags, dir, &s->ctx);
    if (st == WEFT_OK) {
        st = weft_program_create(s->ctx, &s->p);
    }
    if (st) {
        return st;
    }
    weft_acc *param[MAX_IN];
    for (int i = 0; i < b->nin; i++) {
        param[i] = weft_param(s->p, b->in[i].type, b->in[i].rank);
    }
    weft_acc *res = b->build(s->ctx, s->p, param, b);
    double c0 = timing_thread_cpu_ms();
    double t0 = timing_now_ms();
    st = weft_compile(s->p, &res, 1, &s->exe);
    *compile_ms = timing_now_ms() - t0;
    last_compile_cpu_ms = timing_thread_cpu_ms() - c0;
    for (int i = 0; st == WEFT_OK && i < b->nin; i++) {
        void *data[1] = {b->in[i].data};
        st = weft_array_wrap(s->ctx, b->in[i].type, b->in[i].rank,
                             b->in[i].shape, data, NULL, NULL, &s->in[i]);
        s->nin = i + 1;
    }
    return st;
}

/* The kernels of s's plan: their number, and their lines joined by "; ". */
static int plan_kernels(const session *s, char *buf, size_t cap)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    buf[0] = 0;
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
            int w = snprintf(buf + used, cap - used, "%s%s", n ? "; " : "", c);
            if (w > 0 && (size_t)w < cap - used) {
                used += (size_t)w;
            }
            n++;
        }
        line = end ? end + 1 : NULL;
    }
    free(text);
    return n;
}

/* One weft_run of s, timed (*ms, wall; *cpu, the process's CPU time
 * around it, when cpu is not NULL: read outside the wall clock's reads, so
 * that they do not change *ms); when check is set, b->check compares the
 * result with the reference's (*ok, *err).  The result is released. */
static weft_status run_once(session *s, bench *b, int check, double *ms,
                            double *cpu, int *ok, double *err)
{
    weft_array *out[MAX_OUT] = {NULL};
    int nout = weft_executable_outputs(s->exe);
    nout = nout < 1 ? 1 : nout > MAX_OUT ? MAX_OUT : nout;
    timing_cpu c0 = {.n = 0};
    if (cpu) {
        timing_cpu_start(&c0);
    }
    double t0 = timing_now_ms();
    weft_status st = weft_run(s->exe, s->in, s->nin, out, nout);
    *ms = timing_now_ms() - t0;
    if (cpu) {
        *cpu = timing_cpu_since(&c0);
    }
    if (st == WEFT_OK && check) {
        *ok = b->check(b, out, err);
    }
    for (int i = 0; i < nout; i++) {
        weft_array_release(out[i]);
    }
    return st;
}

/* One run of b's reference (strict or fast, as use_fast says): its wall
 * ms; *cpu the process's CPU ms around it (as run_once). */
static double ref_once(bench *b, double *cpu)
{
    timing_cpu c0;
    timing_cpu_start(&c0);
    double t0 = timing_now_ms();
    b->ref(b);
    double ms = timing_now_ms() - t0;
    *cpu = timing_cpu_since(&c0);
    return ms;
}

/* One run of the reference into output buffers malloc'ed inside the timed
 * region (freed outside it), as weft_run's results are; as ref_once. */
static double ref_fresh_once(bench *b, double *cpu)
{
    void *keep[MAX_REF];
    memcpy(keep, b->ref_out, sizeof keep);
    timing_cpu c0;
    timing_cpu_start(&c0);
    double t0 = timing_now_ms();
    for (int k = 0; k < MAX_REF && keep[k]; k++) {
        b->ref_out[k] = xmalloc(b->ref_bytes[k]);
    }
    b->ref(b);
    double ms = timing_now_ms() - t0;
    *cpu = timing_cpu_since(&c0);
    for (int k = 0; k < MAX_REF && keep[k]; k++) {
        free(b->ref_out[k]);
    }
    memcpy(b->ref_out, keep, sizeof keep);
    return ms;
}

/* Time weft fused (s), weft unfused (u, when open), weft with fast math
 * (f, when open), the strict reference into fresh buffers (when its
 * results are arrays), the strict reference and the fast-math reference,
 * in rounds that run each once, so that all meet the same load on a
 * shared machine: round 0 warms up, then the median of opt.runs rounds.
 * The last round's weft results are checked against the strict
 * reference's (the fast-math reference runs last in a round and writes
 * the same buffers, so the strict one runs once more before the check). */
static void time_rounds(bench *b, session *s, session *u, session *f)
{
    row *r = &b->r;
    double t[IMPL_REF_FRESH + 1][64], c[IMPL_REF_FRESH + 1][64];
    int fresh = b->ref_out[0] != NULL;
    r->ok = 1;
    r->fast_ok = f->exe != NULL;
    for (int k = 0; k <= opt.runs; k++) {
        int last = k == opt.runs;
        double ms, cpu;
        int ok = 1;
        if (last) {
            use_fast = 0;
            b->ref(b); /* the strict results, for the checks */
        }
        if (r->weft_ms > -2) {
            if (run_once(s, b, last, &ms, &cpu, &ok, &r->err)) {
                record_error(r, "run");
                r->weft_ms = -2;
                ok = 0;
            }
            t[IMPL_WEFT][k] = ms;
            c[IMPL_WEFT][k] = cpu;
            r->ok &= ok;
        }
        if (u->exe && r->unfused_ms > -2) {
            if (run_once(u, b, last, &ms, &cpu, &ok, &r->unfused_err)) {
                record_error(r, "run without fusion");
                r->unfused_ms = -2;
                ok = 0;
            }
            t[IMPL_UNFUSED][k] = ms;
            c[IMPL_UNFUSED][k] = cpu;
            r->ok &= ok;
        }
        if (f->exe && r->fast_ms > -2) {
            ok = 1;
            checking_fast = 1;
            weft_status fst =
                run_once(f, b, last, &ms, &cpu, &ok, &r->fast_err);
            checking_fast = 0;
            if (fst) {
                record_error(r, "run with fast math");
                r->fast_ms = -2;
                ok = 0;
            }
            t[IMPL_FAST][k] = ms;
            c[IMPL_FAST][k] = cpu;
            r->fast_ok &= ok;
        }
        use_fast = 0;
        if (fresh) {
            t[IMPL_REF_FRESH][k] = ref_fresh_once(b, &c[IMPL_REF_FRESH][k]);
        }
        t[IMPL_REF][k] = ref_once(b, &c[IMPL_REF][k]);
        use_fast = 1;
        t[IMPL_REF_FAST][k] = ref_once(b, &c[IMPL_REF_FAST][k]);
        use_fast = 0;
    }
    /* (index 0 is the warm-up) */
    int timed[IMPL_REF_FRESH + 1] = {
        [IMPL_WEFT] = r->weft_ms > -2,
        [IMPL_UNFUSED] = u->exe && r->unfused_ms > -2,
        [IMPL_FAST] = f->exe && r->fast_ms > -2,
        [IMPL_REF] = 1,
        [IMPL_REF_FAST] = 1,
        [IMPL_REF_FRESH] = fresh,
    };
    double *ms_of[IMPL_REF_FRESH + 1] = {
        [IMPL_WEFT] = &r->weft_ms,         [IMPL_UNFUSED] = &r->unfused_ms,
        [IMPL_FAST] = &r->fast_ms,         [IMPL_REF] = &r->ref_ms,
        [IMPL_REF_FAST] = &r->ref_fast_ms, [IMPL_REF_FRESH] = &r->ref_fresh_ms,
    };
    for (int i = 0; i <= IMPL_REF_FRESH; i++) {
        /* each round's cpu/wall (-1: not measured), then their median */
        int measured = timed[i];
        for (int k = 1; timed[i] && k <= opt.runs; k++) {
            measured &= c[i][k] >= 0 && t[i][k] > 0;
            c[i][k] = measured ? c[i][k] / t[i][k] : -1;
        }
        r->cpu_wall[i] = measured ? timing_median(c[i] + 1, opt.runs) : -1;
        *ms_of[i] = timed[i] ? timing_median(t[i] + 1, opt.runs) : -1;
    }
    if (!u->exe) {
        r->ok = 0;
    }
}

/* Thread scaling of a compute-bound program: weft (default flags) and the
 * fast-math reference on one thread, median of SCALING_RUNS rounds after
 * a warm-up (the all-threads times are those of time_rounds). */
#define SCALING_RUNS 3
static void time_one_thread(bench *b, const char *dir)
{
    row *r = &b->r;
    session s;
    double ignored, t[2][SCALING_RUNS + 1];
    cur_threads = 1;
    ref_set_threads(1);
    if (session_open(&s, b, 0, dir, &ignored) == WEFT_OK) {
        int ok = 1;
        for (int k = 0; k <= SCALING_RUNS; k++) {
            if (run_once(&s, b, 0, &t[0][k], NULL, &ok, &ignored)) {
                record_error(r, "run on one thread");
                break;
            }
            use_fast = 1;
            double t0 = timing_now_ms();
            b->ref(b);
            t[1][k] = timing_now_ms() - t0;
            use_fast = 0;
            if (k == SCALING_RUNS) {
                r->weft1_ms = timing_median(t[0] + 1, SCALING_RUNS);
                r->ref_fast1_ms = timing_median(t[1] + 1, SCALING_RUNS);
            }
        }
    } else {
        record_error(r, "compile for one thread");
    }
    session_close(&s);
    cur_threads = 0;
    ref_set_threads(opt.threads);
}

/* The run time of b on the quick code (WEFT_FLAG_QUICK_CODE): the median
 * of SCALING_RUNS runs after a first one, checked against the strict
 * reference, on all threads; for a program whose optimised run takes more
 * than QUICK_ONE_MS, the first run alone (the quick code may be many
 * times slower). */
#define QUICK_ONE_MS 1000.0
static void quick_time(bench *b, const char *dir)
{
    row *r = &b->r;
    session s;
    double ignored, t[SCALING_RUNS + 1];
    int last = r->weft_ms > QUICK_ONE_MS ? 0 : SCALING_RUNS;
    if (session_open(&s, b, WEFT_FLAG_QUICK_CODE, dir, &ignored) == WEFT_OK) {
        b->ref(b); /* the strict results again: the fast ones ran last */
        for (int k = 0; k <= last; k++) {
            double err = 0;
            if (run_once(&s, b, k == 0, &t[k], NULL, &r->quick_ok, &err)) {
                record_error(r, "run on the quick code");
                break;
            }
            if (k == last) {
                r->quick_ms = last ? timing_median(t + 1, last) : t[0];
            }
        }
    } else {
        record_error(r, "compile the quick code");
    }
    session_close(&s);
}

/* Write b's inputs to dir/in0.bin, in1.bin, ... (raw, as in memory), for
 * bench/numba_ref.py's programs that read the bench's own inputs; 0 on
 * failure. */
static int write_inputs(const bench *b, const char *dir)
{
    for (int i = 0; i < b->nin; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/in%d.bin", dir, i);
        FILE *f = fopen(path, "wb");
        int64_t n =
            b->in[i].shape[0] * (b->in[i].rank > 1 ? b->in[i].shape[1] : 1);
        size_t elt =
            b->in[i].type == WEFT_F32 || b->in[i].type == WEFT_I32 ? 4 : 8;
        int ok = f && fwrite(b->in[i].data, elt, (size_t)n, f) == (size_t)n;
        if (f && fclose(f) != 0) {
            ok = 0;
        }
        if (!ok) {
            return 0;
        }
    }
    return 1;
}

/* The time of b in bench/numba_ref.py's program prog (median of opt.runs
 * runs after a warm-up), or -1 where python3 cannot import what it needs
 * (numba, scipy, scikit-learn) or the script is missing; *cpu_wall the
 * Python process's CPU time over wall time in those runs, as the script
 * measures it (-1 when absent).  The programs of bench/programs.h read b's
 * inputs from files in dir. */
static double py_time(const bench *b, const char *prog, const char *dir,
                      double *cpu_wall)
{
    *cpu_wall = -1;
    if (!prog || access("bench/numba_ref.py", R_OK) != 0) {
        return -1;
    }
    char cmd[4096 + 512];
    snprintf(cmd, sizeof cmd,
             "python3 bench/numba_ref.py %s %d %d %lld %lld %lld %d %.9g "
             "%.9g %.9g %.9g %.9g %.9g %s 2>/dev/null",
             prog, opt.threads, opt.runs, (long long)b->n, (long long)b->w,
             (long long)b->h, (int)(b->iters ? b->iters : b->max_iter),
             (double)b->x0, (double)b->y0, (double)b->dx, (double)b->dy,
             (double)b->eps2, (double)b->a, dir);
    FILE *p = popen(cmd, "r");
    if (!p) {
        return -1;
    }
    char line[256];
    double ms = -1, cw = -1;
    while (fgets(line, sizeof line, p)) {
        double v;
        if (sscanf(line, "ms %lf", &v) == 1) {
            ms = v;
        } else if (sscanf(line, "cpu_wall %lf", &v) == 1) {
            cw = v;
        }
    }
    if (pclose(p) != 0) {
        return -1;
    }
    *cpu_wall = ms >= 0 ? cw : -1;
    return ms;
}

/* The numba program of b, or NULL. */
static const char *numba_prog(const bench *b)
{
    static const struct {
        const char *bench, *prog;
    } names[] = {
        {"dotp", "dotp"},
        {"saxpy", "saxpy"},
        {"sum", "sum"},
        {"prefix sum", "prefix_sum"},
        {"Black-Scholes", "black_scholes"},
        {"Mandelbrot", "mandelbrot"},
        {"n-body", "nbody"},
        {"n-body (while)", "nbody"},
        {"smvm (banded)", "smvm"},
        {"smvm (power law)", "smvm"},
        {"Jacobi", "jacobi"},
        {"k-means", "kmeans"},
        {"k-means (while)", "kmeans"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(b->name, names[i].bench) == 0) {
            return names[i].prog;
        }
    }
    return NULL;
}

/* Remove the files of a flat directory, then the directory. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4096];
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Everything for one program; fills b->r. */
static void run_bench(bench *b)
{
    row *r = &b->r;
    memset(r, 0, sizeof *r);
    r->weft_ms = r->unfused_ms = r->ref_ms = r->ref_fresh_ms = -1;
    r->fast_ms = r->ref_fast_ms = r->numba_ms = r->peer_ms = -1;
    r->weft1_ms = r->ref_fast1_ms = -1;
    for (int i = 0; i < NIMPL; i++) {
        r->cpu_wall[i] = -1;
    }
    r->kernels = r->unfused_kernels = -1;
    double scale = opt.quick ? 1.0 / 16 : 1.0;
    char dir[] = "/tmp/weft-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(r->error, sizeof r->error, "mkdtemp: %s", strerror(errno));
        return;
    }
    b->setup(b, scale);
    session s;
    weft_stats st;

    /* 1. compile on an empty cache, then on the warm one */
    if (session_open(&s, b, 0, dir, &r->compile_ms)) {
        record_error(r, "compile");
        session_close(&s);
        goto done;
    }
    weft_context_stats(s.ctx, &st);
    r->compile_cpu_ms = last_compile_cpu_ms;
    r->llvm_ms = st.compile_ms;
    r->compiled = st.kernels_compiled;
    /* the optimised code, made in the background since weft_compile
     * returned (tiered compilation), before anything is timed */
    double w0 = timing_now_ms();
    if (weft_context_wait_optimised(s.ctx) != WEFT_OK) {
        record_error(r, "optimise");
    }
    r->optimised_ms = r->compile_ms + (timing_now_ms() - w0);
    weft_context_stats(s.ctx, &st);
    r->optimise_llvm_ms = st.optimise_ms;
    r->kernels = plan_kernels(&s, r->plan, sizeof r->plan);
    if (r->kernels == 0) {
        /* The operation runs on the interpreter fallback: shrink. */
        session_close(&s);
        bench_release(b);
        scale /= 32;
        b->setup(b, scale);
        snprintf(r->note, sizeof r->note,
                 "no kernel: the interpreter runs it (size cut by 32)");
        if (session_open(&s, b, 0, dir, &r->compile_ms)) {
            record_error(r, "compile");
            session_close(&s);
            goto done;
        }
    }
    session cached;
    if (session_open(&cached, b, 0, dir, &r->cached_ms) == WEFT_OK) {
        weft_context_stats(cached.ctx, &st);
        r->loaded = st.kernels_loaded;
        r->cached_compiled = st.kernels_compiled;
    } else {
        record_error(r, "compile from the disk cache");
    }
    session_close(&cached);

    /* 2. the unfused program beside it */
    session u;
    double ignored;
    if (session_open(&u, b, WEFT_FLAG_NO_FUSION, dir, &ignored) == WEFT_OK &&
        weft_context_wait_optimised(u.ctx) == WEFT_OK) {
        char plan[256];
        r->unfused_kernels = plan_kernels(&u, plan, sizeof plan);
    } else {
        record_error(r, "compile without fusion");
    }

    /* 3. weft with fast math */
    session fs;
    if (session_open(&fs, b, WEFT_FLAG_FAST_MATH, dir, &ignored) != WEFT_OK ||
        weft_context_wait_optimised(fs.ctx) != WEFT_OK) {
        record_error(r, "compile with fast math");
    }

    /* 4. interleaved timing, and the checks */
    time_rounds(b, &s, &u, &fs);
    /* the quick code of tiered compilation, what runs until the optimised
     * code is ready (checked against the strict reference's results,
     * which the last round left) */
    quick_time(b, dir);
    session_close(&fs);
    session_close(&u);
    session_close(&s);

    /* 5. one thread, for the compute-bound programs; numba */
    if (b->flops > 0 && opt.threads > 1) {
        time_one_thread(b, dir);
    }
    if (!b->share_inputs || write_inputs(b, dir)) {
        r->numba_ms = py_time(b, numba_prog(b), dir, &r->cpu_wall[IMPL_NUMBA]);
        r->peer_ms = py_time(b, b->peer_prog, dir, &r->cpu_wall[IMPL_PEER]);
    }

done:
    bench_release(b);
    remove_dir(dir);
}

/* ---- the machine and the report ----------------------------------------- */

typedef struct machine {
    char model[256];
    char memory[64];
    char llc[64];
    char os[256];
    int cpus;
    int virtual_machine;
    char date[64];
    char load_start[64], load_end[64]; /* /proc/loadavg's first three */
} machine;

/* The 1, 5 and 15 minute load averages, as /proc/loadavg gives them. */
static void read_load(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    double a, b, c;
    if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) {
        snprintf(buf, n, "%.2f %.2f %.2f", a, b, c);
    }
    if (f) {
        fclose(f);
    }
}

static void read_machine(machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->model, sizeof m->model, "unknown");
    m->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char line[4096];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0 &&
            strcmp(m->model, "unknown") == 0) {
            const char *c = strchr(line, ':');
            if (c) {
                snprintf(m->model, sizeof m->model, "%s", c + 2);
                m->model[strcspn(m->model, "\n")] = 0;
            }
        }
        if (strncmp(line, "flags", 5) == 0 && strstr(line, " hypervisor")) {
            m->virtual_machine = 1;
        }
    }
    if (f) {
        fclose(f);
    }
    f = fopen("/proc/meminfo", "r");
    long long kb = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    snprintf(m->memory, sizeof m->memory, "%.1f GiB",
             (double)kb / (1024.0 * 1024.0));
    snprintf(m->llc, sizeof m->llc, "unknown");
    for (int i = 3; i >= 0; i--) {
        char path[128];
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (f) {
            long long kib = 0;
            if (fscanf(f, "%lldK", &kib) == 1) {
                snprintf(m->llc, sizeof m->llc, "%.1f MiB (L%d)",
                         (double)kib / 1024.0, i >= 2 ? i : 1);
            }
            fclose(f);
            break;
        }
    }
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(m->os, sizeof m->os, "%s %s %s", u.sysname, u.release,
                 u.machine);
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M UTC", &tm);
    read_load(m->load_start, sizeof m->load_start);
}

static void fmt_ms(char *buf, size_t n, double ms)
{
    if (ms < 0) {
        snprintf(buf, n, "-");
    } else if (ms < 10) {
        snprintf(buf, n, "%.2f", ms);
    } else if (ms < 100) {
        snprintf(buf, n, "%.1f", ms);
    } else {
        snprintf(buf, n, "%.0f", ms);
    }
}

/* Throughput of b at ms: GFLOP/s when it counts flops, else GB/s. */
static void fmt_rate(char *buf, size_t n, const bench *b, double ms)
{
    if (ms <= 0) {
        snprintf(buf, n, "-");
    } else if (b->flops > 0) {
        snprintf(buf, n, "%.2f GFLOP/s", b->flops / (ms * 1e6));
    } else {
        snprintf(buf, n, "%.2f GB/s", b->bytes / (ms * 1e6));
    }
}

static void fmt_err(char *buf, size_t n, const row *r)
{
    double e = fmax(fmax(r->err, r->unfused_err), r->fast_err);
    if (e == 0) {
        snprintf(buf, n, "0");
    } else {
        snprintf(buf, n, "%.1e", e);
    }
}

/* a / b as a ratio, or "-". */
static void fmt_ratio(char *buf, size_t n, double a, double b)
{
    if (a > 0 && b > 0) {
        snprintf(buf, n, "%.2f", a / b);
    } else {
        snprintf(buf, n, "-");
    }
}

/* One row of a table: md (markdown) or plain columns of the given
 * widths. */
static void print_cells(FILE *f, int md, int n, char (*c)[64], const int *width)
{
    for (int i = 0; i < n; i++) {
        if (md) {
            fprintf(f, "| %s ", c[i]);
        } else {
            fprintf(f, "%-*s ", width[i], c[i]);
        }
    }
    fprintf(f, md ? "|\n" : "\n");
}

static void print_header(FILE *f, int md, int n, const char *const *hdr,
                         const int *width, int first_num, int last_num)
{
    char c[24][64];
    for (int i = 0; i < n; i++) {
        snprintf(c[i], 64, "%s", hdr[i]);
    }
    print_cells(f, md, n, c, width);
    if (md) {
        for (int i = 0; i < n; i++) {
            fprintf(f, i >= first_num && i <= last_num ? "|---:" : "|---");
        }
        fprintf(f, "|\n");
    }
}

/* The table of run times, as markdown (md) or plain columns. */
static void print_runs(FILE *f, int md, double copy_gbs)
{
    static const char *const hdr[] = {"program",      "size",
                                      "weft ms",      "unfused ms",
                                      "C ms",         "weft / C",
                                      "C fast ms",    "weft / C fast",
                                      "weft fast ms", "weft fast / C fast",
                                      "numba ms",     "weft fast / numba",
                                      "ref+alloc ms", "weft",
                                      "floor ms",     "check",
                                      "error"};
    static const int width[] = {15, 25, 8,  10, 8,  8, 9, 13, 12,
                                18, 9,  17, 12, 15, 8, 9, 8};
    const int nh = (int)(sizeof hdr / sizeof hdr[0]);
    print_header(f, md, nh, hdr, width, 2, 14);
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped) {
            continue;
        }
        const row *r = &b->r;
        char c[17][64];
        snprintf(c[0], 64, "%s%s", b->name, r->note[0] ? " *" : "");
        snprintf(c[1], 64, "%s", b->size);
        fmt_ms(c[2], 64, r->weft_ms);
        fmt_ms(c[3], 64, r->unfused_ms);
        fmt_ms(c[4], 64, r->ref_ms);
        fmt_ratio(c[5], 64, r->weft_ms, r->ref_ms);
        fmt_ms(c[6], 64, r->ref_fast_ms);
        fmt_ratio(c[7], 64, r->weft_ms, r->ref_fast_ms);
        fmt_ms(c[8], 64, r->fast_ms);
        fmt_ratio(c[9], 64, r->fast_ms, r->ref_fast_ms);
        fmt_ms(c[10], 64, r->numba_ms);
        fmt_ratio(c[11], 64, r->fast_ms, r->numba_ms);
        fmt_ms(c[12], 64, r->ref_fresh_ms);
        fmt_rate(c[13], 64, b, r->weft_ms);
        fmt_ms(c[14], 64, copy_gbs > 0 ? b->bytes / (copy_gbs * 1e6) : -1);
        snprintf(c[15], 64, "%s / %s",
                 r->error[0] ? "ERROR"
                 : r->ok     ? "ok"
                             : "FAIL",
                 r->fast_ok ? "ok" : "FAIL");
        fmt_err(c[16], 64, r);
        print_cells(f, md, nh, c, width);
    }
}

/* ---- CPU use: CPU time over wall time ----------------------------------- */

/* The names of the implementations (IMPL_*), as the JSON rows have them
 * (IMPL_PEER: the bench's peer). */
static const char *const impl_name[NIMPL] = {
    "weft",   "weft unfused", "weft fast", "C",
    "C fast", "C + alloc",    "numba",     "peer"};

/* The cpu/wall below which a parallel run is reported: half the threads
 * and half a CPU more, (threads + 1) / 2.  A run whose process had one
 * CPU shows at most 1 however many threads it ran (with 2 threads the
 * bare half, 1, would sit right at that); a run on all of them, as many as
 * its busy threads. */
static double cpu_wall_floor(void)
{
    return 0.5 * (opt.threads + 1);
}

/* Whether implementation i of b ran on opt.threads > 1 threads and kept
 * fewer CPUs busy than cpu_wall_floor says: its time may not be one of
 * that many threads (other work had the CPUs, or the program has serial
 * parts). */
static int cpu_wall_low(const bench *b, int i)
{
    double cw = b->r.cpu_wall[i];
    if (opt.threads < 2 || cw < 0 || (i == IMPL_PEER && b->peer_serial)) {
        return 0;
    }
    return cw < cpu_wall_floor();
}

static const char *impl_label(const bench *b, int i)
{
    return i == IMPL_PEER && b->peer ? b->peer : impl_name[i];
}

/* b's warning line, when any of its implementations is low (prefix
 * before it; md: bold); returns 1 if it printed one. */
static int print_cpu_warnings(FILE *f, int md, const char *prefix,
                              const bench *b)
{
    int n = 0;
    for (int i = 0; i < NIMPL; i++) {
        if (!cpu_wall_low(b, i)) {
            continue;
        }
        if (n++ == 0) {
            fprintf(f, "%s%s %s: cpu/wall below %.1f on %d threads:", prefix,
                    md ? "**warning**:" : "warning:", b->name, cpu_wall_floor(),
                    opt.threads);
        }
        fprintf(f, "%s %s %.2f", n > 1 ? "," : "", impl_label(b, i),
                b->r.cpu_wall[i]);
    }
    if (n > 0) {
        fprintf(f,
                "; may not be %d-thread times (other work had the CPUs, or "
                "serial parts)\n",
                opt.threads);
    }
    return n > 0;
}

/* The table of CPU time over wall time ("!": below the rule). */
static void print_cpu_use(FILE *f, int md)
{
    static const char *const hdr[] = {"program",   "weft",  "unfused",
                                      "weft fast", "C",     "C fast",
                                      "ref+alloc", "numba", "other peer"};
    static const int width[] = {17, 6, 7, 9, 6, 6, 9, 6, 19};
    static const int col[] = {IMPL_WEFT,  IMPL_UNFUSED,  IMPL_FAST,
                              IMPL_REF,   IMPL_REF_FAST, IMPL_REF_FRESH,
                              IMPL_NUMBA, IMPL_PEER};
    const int nh = (int)(sizeof hdr / sizeof hdr[0]);
    print_header(f, md, nh, hdr, width, 1, 7);
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped) {
            continue;
        }
        char c[9][64];
        snprintf(c[0], 64, "%s", b->name);
        for (int j = 0; j < nh - 1; j++) {
            int i = col[j];
            double cw = b->r.cpu_wall[i];
            int peer = i == IMPL_PEER && b->peer;
            if (cw < 0) {
                snprintf(c[j + 1], 64, "-");
            } else {
                snprintf(c[j + 1], 64, "%s%s%.2f%s", peer ? b->peer : "",
                         peer ? " " : "", cw, cpu_wall_low(b, i) ? " !" : "");
            }
        }
        print_cells(f, md, nh, c, width);
    }
}

/* The warnings of every program run (md: a list); returns how many. */
static int print_all_cpu_warnings(FILE *f, int md)
{
    int n = 0;
    for (int k = 0; k < NBENCH; k++) {
        if (!benches[k].skipped) {
            n += print_cpu_warnings(f, md, md ? "- " : "", &benches[k]);
        }
    }
    return n;
}

/* The thread scaling of the compute-bound programs. */
static void print_scaling(FILE *f, int md)
{
    static const char *const hdr[] = {
        "program",        "weft 1 thread ms",   "weft all ms",
        "weft speed-up",  "C fast 1 thread ms", "C fast all ms",
        "C fast speed-up"};
    static const int width[] = {15, 16, 11, 13, 18, 13, 15};
    const int nh = (int)(sizeof hdr / sizeof hdr[0]);
    print_header(f, md, nh, hdr, width, 1, 6);
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped) {
            continue;
        }
        const row *r = &b->r;
        if (r->weft1_ms < 0) {
            continue;
        }
        char c[7][64];
        snprintf(c[0], 64, "%s", b->name);
        fmt_ms(c[1], 64, r->weft1_ms);
        fmt_ms(c[2], 64, r->weft_ms);
        fmt_ratio(c[3], 64, r->weft1_ms, r->weft_ms);
        fmt_ms(c[4], 64, r->ref_fast1_ms);
        fmt_ms(c[5], 64, r->ref_fast_ms);
        fmt_ratio(c[6], 64, r->ref_fast1_ms, r->ref_fast_ms);
        print_cells(f, md, nh, c, width);
    }
}

/* The other peers (scipy.sparse, scikit-learn): the programs that have
 * one; returns how many rows it printed. */
static int print_peers(FILE *f, int md, double copy_gbs)
{
    static const char *const hdr[] = {
        "program",          "peer",    "peer ms", "weft ms", "weft / peer",
        "weft fast / peer", "floor ms"};
    static const int width[] = {17, 13, 8, 8, 11, 16, 8};
    const int nh = (int)(sizeof hdr / sizeof hdr[0]);
    int rows = 0;
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped || !b->peer) {
            continue;
        }
        if (rows++ == 0) {
            print_header(f, md, nh, hdr, width, 2, 6);
        }
        const row *r = &b->r;
        char c[7][64];
        snprintf(c[0], 64, "%s", b->name);
        snprintf(c[1], 64, "%s", b->peer);
        fmt_ms(c[2], 64, r->peer_ms);
        fmt_ms(c[3], 64, r->weft_ms);
        fmt_ratio(c[4], 64, r->weft_ms, r->peer_ms);
        fmt_ratio(c[5], 64, r->fast_ms, r->peer_ms);
        fmt_ms(c[6], 64, copy_gbs > 0 ? b->bytes / (copy_gbs * 1e6) : -1);
        print_cells(f, md, nh, c, width);
    }
    return rows;
}

/* The table of compile times. */
static void print_compiles(FILE *f, int md)
{
    if (md) {
        fprintf(f, "| program | kernels (fused plan) | unfused kernels | "
                   "first compile ms | CPU ms | of which LLVM ms | compiled | "
                   "optimised after ms | background LLVM ms | "
                   "quick code run ms | optimised run ms | "
                   "from disk cache ms | loaded | compiled |\n"
                   "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                   "---:|---:|---:|\n");
    } else {
        fprintf(f,
                "%-15s %7s %8s %10s %7s %9s %9s %10s %9s %9s %10s %7s "
                "%9s  %s\n",
                "program", "kernels", "unfused", "compile ms", "CPU ms",
                "LLVM ms", "compiled", "optimised", "quick run", "opt run",
                "cached ms", "loaded", "compiled", "plan");
    }
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped) {
            continue;
        }
        const row *r = &b->r;
        if (md) {
            fprintf(f,
                    "| %s | %d: %s | %d | %.1f | %.1f | %.1f | %llu | %.1f | "
                    "%.1f | %.3g%s | %.3g | %.2f | %llu | %llu |\n",
                    b->name, r->kernels, r->plan[0] ? r->plan : "none",
                    r->unfused_kernels, r->compile_ms, r->compile_cpu_ms,
                    r->llvm_ms, (unsigned long long)r->compiled,
                    r->optimised_ms, r->optimise_llvm_ms, r->quick_ms,
                    r->quick_ok ? "" : " (WRONG)", r->weft_ms, r->cached_ms,
                    (unsigned long long)r->loaded,
                    (unsigned long long)r->cached_compiled);
        } else {
            fprintf(f,
                    "%-15s %7d %8d %10.1f %7.1f %9.1f %9llu %10.1f %9.3g "
                    "%9.3g %10.2f %7llu %9llu  %s%s\n",
                    b->name, r->kernels, r->unfused_kernels, r->compile_ms,
                    r->compile_cpu_ms, r->llvm_ms,
                    (unsigned long long)r->compiled, r->optimised_ms,
                    r->quick_ms, r->weft_ms, r->cached_ms,
                    (unsigned long long)r->loaded,
                    (unsigned long long)r->cached_compiled, r->plan,
                    r->quick_ok ? "" : "  quick code WRONG");
        }
    }
}

static void write_report(const char *path, const machine *m, double copy_gbs,
                         int64_t copy_n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "weft_bench: cannot write %s: %s\n", path,
                strerror(errno));
        return;
    }
    fprintf(f, "# weft on the CPU: benchmark\n\n");
    fprintf(f, "Written by `bench/run.sh` (which builds `bench/weft_bench.c` "
               "and `bench/ref.c` against a Release build of libweft and "
               "runs it); rerun that one command to reproduce.  Numbers are "
               "as measured in this run.\n\n");
    fprintf(f, "## Machine\n\n");
    fprintf(f, "- CPU: %s, %d logical CPUs online%s\n", m->model, m->cpus,
            m->virtual_machine ? " (a virtual machine: the hypervisor flag "
                                 "is set)"
                               : "");
    fprintf(f, "- last-level cache: %s; memory: %s\n", m->llc, m->memory);
    fprintf(f, "- OS: %s\n", m->os);
    fprintf(f,
            "- compilers: weft's kernels by LLVM %s (ORC JIT, weft's "
            "function pipeline with the loop and SLP vectorisers, host CPU); "
            "references by GCC %s with "
            "`-std=c17 -O3 -march=native -fopenmp -fno-math-errno` (%s; ISO C "
            "mode, so no FMA contraction, as in weft's kernels), and once "
            "more with `-ffast-math` too (the C fast columns: contraction, "
            "reassociation, glibc's libmvec for expf and logf)\n",
            WEFT_BENCH_LLVM, __VERSION__, ref_openmp());
    fprintf(f,
            "- weft: commit %s (`git describe --always --dirty` of "
            "the library's tree)\n",
            WEFT_BENCH_COMMIT);
    fprintf(f, "- date: %s\n", m->date);
    fprintf(f,
            "- threads: **%d** for both (weft `cfg.threads`, "
            "`omp_set_num_threads`); %s\n",
            opt.threads,
            m->cpus <= 2 ? "this machine has only "
                           "2 CPUs, so these are 2-thread "
                           "numbers"
                         : "one per CPU");
    fprintf(f,
            "- timing: rounds that run weft fused, weft unfused, weft "
            "with fast math, the reference into fresh buffers, the "
            "reference and the fast-math reference once each "
            "(interleaved, so that all meet the same load); one warm-up "
            "round, then the median of %d rounds; "
            "OMP_WAIT_POLICY=%s%s\n",
            opt.runs,
            getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "(unset)",
            opt.quick ? "; QUICK MODE (sizes / 16): not for publication" : "");
    fprintf(f,
            "- load average (1, 5, 15 min) at the start: %s; at the "
            "end: %s (other work on the machine makes numbers noisy)\n",
            m->load_start, m->load_end);
    fprintf(f, "- memory-bound programs use %s\n",
            opt.quick ? "2^22 elements (16 MiB per f32 array; quick mode: "
                        "these may fit in the cache)"
                      : "2^26 elements (256 MiB per f32 array), well beyond "
                        "the last-level cache");
    fprintf(f,
            "- copy bandwidth: **%.2f GB/s** (an OpenMP copy loop over "
            "%lld f32, %.0f MiB each way, the best of %d copies before "
            "and %d after the programs; bytes read plus bytes written "
            "over time)\n\n",
            copy_gbs, (long long)copy_n, (double)copy_n * 4 / 1048576.0,
            opt.runs, opt.runs);

    fprintf(f, "## Run time\n\n");
    print_runs(f, 1, copy_gbs);
    fprintf(f, "\n- **weft ms**: median wall time of `weft_run` (fused, the "
               "default); it includes getting the result arrays, which "
               "weft_run returns new each time (the context reuses the "
               "buffers of released arrays), while a reference writes "
               "into a buffer allocated once.\n"
               "- **unfused ms**: the same program in a context with "
               "`WEFT_FLAG_NO_FUSION` (every operation its own array).\n"
               "- **C ms**, **weft / C**: the strict C reference "
               "(`bench/ref.c`) and weft ms over it (below 1: weft is "
               "faster).\n"
               "- **C fast ms**, **weft / C fast**: the same C built with "
               "`-ffast-math`, and weft (strict, the default) over it.\n"
               "- **weft fast ms**, **weft fast / C fast**: weft in a "
               "context with `WEFT_FLAG_FAST_MATH`, and its ratio to the "
               "fast-math C.\n"
               "- **numba ms**, **weft fast / numba**: "
               "`bench/numba_ref.py`, the same program in numba "
               "(`parallel=True, fastmath=True`, on as many threads; "
               "compilation and one warm-up run excluded, median of as many "
               "runs), where numba can be imported (`-` elsewhere).\n"
               "- **ref+alloc ms**: the reference writing into output "
               "buffers malloc'ed in the timed region at each run (fresh "
               "pages are faulted in on first write): what a fresh "
               "allocation per run costs.\n"
               "- **weft**: throughput; GB/s is the bytes the "
               "program must move (inputs read once, outputs written once) "
               "over time, GFLOP/s counts operations as in the notes.\n"
               "- **floor ms**: those bytes over the copy bandwidth, about "
               "the best a memory-bound program can do here (a program that "
               "only reads, as dotp and sum, can beat it: a copy also pays "
               "for reading each written line before writing it).\n"
               "- **check**: weft's results, fused and unfused / with fast "
               "math, against the strict reference's (tolerances below); "
               "**error** is the largest of the three measures.\n\n");
    fprintf(f, "## Other peers\n\n");
    if (print_peers(f, 1, copy_gbs) > 0) {
        fprintf(f, "\n- **peer ms**: `bench/numba_ref.py` runs the peer on "
                   "the bench's own inputs (median of as many runs after a "
                   "warm-up; `-` where python3 cannot import it): "
                   "scipy.sparse's CSR matrix times a vector (`A @ x`, one "
                   "thread: scipy does not parallelise it), scikit-learn's "
                   "`KMeans` (`algorithm=\"lloyd\"`, the bench's initial "
                   "centroids, `n_init=1`, `tol=0`: it stops when no point "
                   "changes cluster, or after 50 iterations; on as many "
                   "OpenMP threads through threadpoolctl; its time includes "
                   "its input checks and the final labels).\n\n");
    } else {
        fprintf(f, "(none of the programs run has another peer)\n\n");
    }
    fprintf(f, "## CPU use\n\n");
    print_cpu_use(f, 1);
    fprintf(f,
            "\n- **cpu/wall**: the CPU time of all the process's threads "
            "(each thread's own clock, read before and after each run: "
            "`bench/timing.h`; the Python process's threads alike in "
            "`bench/numba_ref.py`) over the wall time of a timed run, the "
            "median of an implementation's runs (the warm-up left out; the "
            "CPU clock is read outside the wall clock's reads, so the times "
            "above are unchanged): how many CPUs the run kept busy, at "
            "most as many as its threads (%d) or the CPUs.  Threads that "
            "wait asleep (OMP_WAIT_POLICY=PASSIVE, the gang's workers "
            "between jobs after a short spin) count nothing; serial parts "
            "(a scan's middle phase, k-means' small steps) lower it.\n"
            "- **!**, and a warning below the table: a run on more than one "
            "thread (all but scipy.sparse, which runs on one) whose "
            "cpu/wall is below (threads + 1) / 2 = %.1f: half the threads "
            "and half a CPU more.  A run whose process had one CPU shows at "
            "most 1.0 however many threads it ran, so with 2 threads it "
            "falls below 1.5; its time is then not a %d-thread time.  "
            "Rerun such a row (`build-bench/weft_bench -p NAME`) on a "
            "quieter machine before reading its ratios.\n\n",
            opt.threads, cpu_wall_floor(), opt.threads);
    if (opt.threads > 1 && print_all_cpu_warnings(f, 1) == 0) {
        fprintf(f, "No run was below the rule.\n");
    }
    fprintf(f, "\n");
    fprintf(f, "## Thread scaling\n\n");
    print_scaling(f, 1);
    fprintf(f,
            "\n- The compute-bound programs on one thread (weft "
            "`cfg.threads = 1`, `omp_set_num_threads(1)`) against all "
            "%d threads (the times of the table above); median of %d "
            "rounds after a warm-up.%s\n\n",
            opt.threads, SCALING_RUNS,
            opt.threads <= 2 ? "  With only 2 CPUs the best speed-up is 2."
                             : "");

    fprintf(f, "## Compile time\n\n");
    print_compiles(f, 1);
    fprintf(f, "\n- **first compile**: wall time of `weft_compile` in a "
               "new context whose disk cache is an empty directory; **CPU "
               "ms** the CPU time of the thread that called it (weft "
               "compiles on that thread, so this is the wall time the "
               "compile takes on an idle machine, whatever else runs here); "
               "**LLVM ms** is `weft_context_stats().compile_ms` (optimising "
               "the IR and emitting the quick code, wall); **compiled** the "
               "kernels LLVM built.  **optimised after**: from the start of "
               "that compile until `weft_context_wait_optimised` returned, "
               "called right after it (the background thread emitting the "
               "optimised code: tiered compilation, `WEFT_FLAG_NO_TIERING`); "
               "**background LLVM ms** its time emitting.  **quick code "
               "run ms**: the program on the quick code "
               "(`WEFT_FLAG_QUICK_CODE`, median of 3 runs after a checked "
               "one; the checked one alone for a program whose optimised "
               "run takes more than a second), what runs until the "
               "optimised code is ready, beside "
               "**optimised run ms**, the weft ms of the first table.  "
               "The general variant of a fused zipWith (operands of "
               "different shapes) is compiled at its first use, not here.\n"
               "- **from disk cache**: the same program compiled in a second "
               "new context on that directory: **loaded** kernels came from "
               "the disk cache, **compiled** should be 0.\n\n");

    fprintf(f, "## Programs\n\n");
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped) {
            continue;
        }
        fprintf(f, "- **%s** (%s): %s. Check: %s.", b->name, b->size, b->what,
                b->tolerance);
        if (b->flop_rule) {
            fprintf(f, " Flops: %s.", b->flop_rule);
        }
        if (b->r.note[0]) {
            fprintf(f, " **\\* %s.**", b->r.note);
        }
        if (b->r.error[0]) {
            fprintf(f, " **Error: %s.**", b->r.error);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\nThe references (`bench/ref.c`) are one OpenMP loop each "
               "(`omp simd` reductions for the sums, so that GCC may "
               "vectorise them as weft's reassociating fold does, but plain "
               "loops for smvm's row sums, where GCC's `omp simd` code was "
               "3x slower with fast math on rows of 10; the prefix "
               "sum in three phases; Mandelbrot rows scheduled dynamically), "
               "with the weft programs' formulas in the same order of "
               "operations.\n");
    fclose(f);
    printf("wrote %s\n", path);
}

/* ---- the same tables as JSON (-o x.md also writes x.json) ------------------ */

/* s as a JSON string (null for NULL). */
static void json_str(FILE *f, const char *s)
{
    if (!s) {
        fprintf(f, "null");
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* Members of an object after its first: `, "key": value`.  A number is
 * null where the tables say "-" (negative: absent). */
static void json_s(FILE *f, const char *key, const char *s)
{
    fprintf(f, ", \"%s\": ", key);
    json_str(f, s);
}

static void json_n(FILE *f, const char *key, double v)
{
    if (v >= 0 && isfinite(v)) {
        fprintf(f, ", \"%s\": %.6g", key, v);
    } else {
        fprintf(f, ", \"%s\": null", key);
    }
}

/* Open the next object of an array: `{"program": name` (after a comma
 * unless it is the first). */
static void json_row(FILE *f, int *first, const char *program)
{
    fprintf(f, "%s\n    {\"program\": ", *first ? "" : ",");
    *first = 0;
    json_str(f, program);
}

/* One row of the run-time table per (program, implementation i, IMPL_*):
 * median ms and its ratio to the C reference of the same kind, ratio_to
 * (strict C for weft and weft unfused, fast-math C for weft fast; NULL
 * for the references and numba); its cpu/wall, and whether that is below
 * the warning's rule. */
static void json_run_row(FILE *f, int *first, const bench *b, int i, double ms,
                         const char *ratio_to, double ref_ms, const char *check)
{
    json_row(f, first, b->name);
    json_s(f, "size", b->size);
    json_s(f, "implementation", impl_label(b, i));
    json_n(f, "median_ms", ms);
    json_n(f, "ratio", ratio_to && ms > 0 && ref_ms > 0 ? ms / ref_ms : -1);
    json_s(f, "ratio_to", ratio_to);
    json_s(f, "check", check);
    json_n(f, "cpu_wall", b->r.cpu_wall[i]);
    fprintf(f, ", \"cpu_wall_low\": %s", cpu_wall_low(b, i) ? "true" : "false");
    fprintf(f, "}");
}

/* The report's numbers for scripts that compare runs: one object, the
 * machine and run (with "cpu_wall_floor", the warning's rule), then "rows"
 * (the run-time table, one object per program and implementation, with
 * its "cpu_wall" and "cpu_wall_low"), "compile" and "scaling" arrays of
 * flat objects; times in ms, null where the Markdown says "-". */
static void write_json(const char *md_path, const machine *m, double copy_gbs)
{
    char path[4096];
    size_t n = strlen(md_path);
    if (n > 3 && strcmp(md_path + n - 3, ".md") == 0) {
        snprintf(path, sizeof path, "%.*s.json", (int)(n - 3), md_path);
    } else {
        snprintf(path, sizeof path, "%s.json", md_path);
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "weft_bench: cannot write %s: %s\n", path,
                strerror(errno));
        return;
    }
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    fprintf(f, "{\"bench\": \"cpu\", \"format\": 1");
    json_s(f, "commit", WEFT_BENCH_COMMIT);
    json_s(f, "date", m->date);
    fprintf(f, ",\n  \"host\": {\"name\": ");
    json_str(f, host);
    json_s(f, "cpu", m->model);
    fprintf(f, ", \"cpus\": %d", m->cpus);
    json_s(f, "memory", m->memory);
    json_s(f, "llc", m->llc);
    json_s(f, "os", m->os);
    fprintf(f, ", \"virtual_machine\": %s}",
            m->virtual_machine ? "true" : "false");
    json_s(f, "llvm", WEFT_BENCH_LLVM);
    fprintf(f, ", \"threads\": %d, \"rounds\": %d, \"quick\": %s", opt.threads,
            opt.runs, opt.quick ? "true" : "false");
    json_n(f, "copy_gbs", copy_gbs);
    json_n(f, "cpu_wall_floor", opt.threads > 1 ? cpu_wall_floor() : -1);
    json_s(f, "load_start", m->load_start);
    json_s(f, "load_end", m->load_end);
    fprintf(f, ",\n  \"rows\": [");
    int first = 1;
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped) {
            continue;
        }
        const row *r = &b->r;
        const char *ok = r->error[0] ? "ERROR" : r->ok ? "ok" : "FAIL";
        json_run_row(f, &first, b, IMPL_WEFT, r->weft_ms, "C", r->ref_ms, ok);
        json_run_row(f, &first, b, IMPL_UNFUSED, r->unfused_ms, "C", r->ref_ms,
                     ok);
        json_run_row(f, &first, b, IMPL_FAST, r->fast_ms, "C fast",
                     r->ref_fast_ms, r->fast_ok ? "ok" : "FAIL");
        json_run_row(f, &first, b, IMPL_REF, r->ref_ms, NULL, 0, NULL);
        json_run_row(f, &first, b, IMPL_REF_FAST, r->ref_fast_ms, NULL, 0,
                     NULL);
        json_run_row(f, &first, b, IMPL_REF_FRESH, r->ref_fresh_ms, NULL, 0,
                     NULL);
        json_run_row(f, &first, b, IMPL_NUMBA, r->numba_ms, NULL, 0, NULL);
        if (b->peer) {
            json_run_row(f, &first, b, IMPL_PEER, r->peer_ms, NULL, 0, NULL);
        }
    }
    fprintf(f, "\n  ],\n  \"compile\": [");
    first = 1;
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped) {
            continue;
        }
        const row *r = &b->r;
        json_row(f, &first, b->name);
        json_n(f, "kernels", r->kernels);
        json_n(f, "unfused_kernels", r->unfused_kernels);
        json_n(f, "first_compile_ms", r->compile_ms);
        json_n(f, "cpu_ms", r->compile_cpu_ms);
        json_n(f, "llvm_ms", r->llvm_ms);
        json_n(f, "compiled", (double)r->compiled);
        json_n(f, "optimised_after_ms", r->optimised_ms);
        json_n(f, "background_llvm_ms", r->optimise_llvm_ms);
        json_n(f, "quick_code_run_ms", r->quick_ms);
        fprintf(f, ", \"quick_code_ok\": %s", r->quick_ok ? "true" : "false");
        json_n(f, "from_disk_ms", r->cached_ms);
        json_n(f, "loaded", (double)r->loaded);
        json_n(f, "from_disk_compiled", (double)r->cached_compiled);
        json_s(f, "plan", r->plan);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ],\n  \"scaling\": [");
    first = 1;
    for (int k = 0; k < NBENCH; k++) {
        const bench *b = &benches[k];
        if (b->skipped || b->r.weft1_ms < 0) {
            continue;
        }
        json_row(f, &first, b->name);
        json_n(f, "weft_1_thread_ms", b->r.weft1_ms);
        json_n(f, "weft_all_ms", b->r.weft_ms);
        json_n(f, "c_fast_1_thread_ms", b->r.ref_fast1_ms);
        json_n(f, "c_fast_all_ms", b->r.ref_fast_ms);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "weft_bench: cannot write %s: %s\n", path,
                strerror(errno));
        return;
    }
    printf("wrote %s\n", path);
}

/* The best bandwidth of opt.runs OpenMP copies of n floats (after one to
 * warm up), in GB/s counting bytes read and bytes written. */
static double copy_bandwidth(int64_t n)
{
    float *src = xmalloc((size_t)n * sizeof(float));
    float *dst = xmalloc((size_t)n * sizeof(float));
    ref_zero(src, n);
    ref_zero(dst, n);
    ref_copy(dst, src, n);
    double best = INFINITY;
    for (int r = 0; r < opt.runs; r++) {
        double t0 = timing_now_ms();
        ref_copy(dst, src, n);
        best = fmin(best, timing_now_ms() - t0);
    }
    free(src);
    free(dst);
    return 8.0 * (double)n / (best * 1e6);
}

/* ---- main ---------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: weft_bench [-t threads] [-r runs] [-q] [-o report.md] "
            "[-d dump-dir] [-p name-part] [-n]\n"
            "  -n: compile without tiers (WEFT_FLAG_NO_TIERING): the "
            "first compile emits the optimised code itself\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
            opt.threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            opt.runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "-q") == 0) {
            opt.quick = 1;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            opt.out_path = argv[++i];
        } else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
            opt.dump_dir = argv[++i];
        } else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc) {
            opt.only = argv[++i];
        } else if (strcmp(argv[i], "-n") == 0) {
            opt.flags |= WEFT_FLAG_NO_TIERING;
        } else {
            usage();
        }
    }
    const char *wait = getenv("OMP_WAIT_POLICY");
    if (!wait || strcasecmp(wait, "passive") != 0) {
        fprintf(stderr,
                "weft_bench: OMP_WAIT_POLICY is not PASSIVE: OpenMP's "
                "threads spin after each reference and slow the weft run "
                "that follows (bench/run.sh sets it)\n");
    }
    if (access("bench/numba_ref.py", R_OK) != 0) {
        fprintf(stderr,
                "weft_bench: no bench/numba_ref.py under the working "
                "directory: the numba, scipy.sparse and scikit-learn columns "
                "stay empty (run from the source tree or the GPU bundle)\n");
    }
    machine m;
    read_machine(&m);
    if (opt.threads <= 0) {
        opt.threads = m.cpus > 0 ? m.cpus : 1;
    }
    if (opt.runs < 1 || opt.runs > 63) {
        usage();
    }
    ref_set_threads(opt.threads);
    printf("weft_bench: %s, %d CPUs, %d threads, median of %d runs%s\n",
           m.model, m.cpus, opt.threads, opt.runs,
           opt.quick ? " (quick sizes)" : "");

    /* The copy bandwidth, before and after the programs. */
    int64_t copy_n = opt.quick ? (1 << 22) : (1 << 26);
    double copy_gbs = copy_bandwidth(copy_n);
    printf("copy bandwidth: %.2f GB/s (best of %d copies of %lld f32)\n\n",
           copy_gbs, opt.runs, (long long)copy_n);

    for (int k = 0; k < NBENCH; k++) {
        benches[k].skipped = opt.only && !strstr(benches[k].name, opt.only);
    }
    int failed = 0;
    for (int k = 0; k < NBENCH; k++) {
        bench *b = &benches[k];
        if (b->skipped) {
            continue;
        }
        printf("%s ...\n", b->name);
        fflush(stdout);
        run_bench(b);
        if (b->r.error[0]) {
            printf("  error: %s\n", b->r.error);
        }
        if (b->r.note[0]) {
            printf("  note: %s\n", b->r.note);
        }
        print_cpu_warnings(stdout, 0, "  ", b);
        failed |= !b->r.ok || b->r.error[0];
    }
    printf("\n");
    print_runs(stdout, 0, copy_gbs);
    printf("\n");
    if (print_peers(stdout, 0, copy_gbs) > 0) {
        printf("\n");
    }
    printf("CPU time over wall time (cpu/wall) in the timed runs:\n");
    print_cpu_use(stdout, 0);
    printf("\n");
    if (print_all_cpu_warnings(stdout, 0) > 0) {
        printf("\n");
    }
    print_scaling(stdout, 0);
    printf("\n");
    print_compiles(stdout, 0);
    double again = copy_bandwidth(copy_n);
    printf("\ncopy bandwidth again: %.2f GB/s\n", again);
    copy_gbs = fmax(copy_gbs, again);
    read_load(m.load_end, sizeof m.load_end);
    printf("\nload average: %s at the start, %s at the end\n", m.load_start,
           m.load_end);
    if (opt.out_path) {
        write_report(opt.out_path, &m, copy_gbs, copy_n);
        write_json(opt.out_path, &m, copy_gbs);
    }
    return failed ? 1 : 0;
}
