/*
 * tests/test_large.c: large programs and the findings of the misuse probes
 * (issue 21).
 *
 *   - wide_and_nested_tuples: a tuple of 100,000 components summed by
 *     projections, and 100,000 nested 1-tuples unwrapped again (the
 *     tuple types are interned through a hash table, and a projection of
 *     a bound tuple copies one component): values on interp, and on cpu
 *     at 300 (one element function that size is LLVM's worst case);
 *   - shared_chain: 100,000 links e' = e * 3 xor e >> 1 whose every link
 *     also uses one shared term (note_hoists' chain of bound terms):
 *     values on the interpreter, against the same recurrence in C;
 *   - unit_while: a while loop whose state is the unit type, inside a map
 *     that the CPU compiles as SPMD (the uniformity analysis once passed
 *     NULL to memcpy for it: run this under UBSan);
 *   - unit_generate_huge: a generate over 2^40 units gives its shape and
 *     computes nothing, on every backend;
 *   - interp_error_element: the interpreter's run-time errors name the
 *     element, as checked compiled kernels do;
 *   - concurrent_compiles: 8 threads compile and run programs at once on
 *     one CPU context (LLVM's pass instrumentation made a ThreadSanitizer
 *     report here: tools/tsan.sh runs this test); concurrent_batches: the
 *     same with 40 kernels each, compiled in batches that overlap;
 *   - free_during_tier_up: weft_context_free returns while the background
 *     optimisation is inside a tier-up, which then finishes alone
 *     (runtime-cpu/jit.c, "Freeing");
 *   - exit_during_tier_up: a process that exits right after its first
 *     compile, with the tier-up still running (after freeing the context,
 *     and without), exits cleanly (LLVM's statics are made before the
 *     exit handler that waits for the tier-up: codegen/init.c);
 *   - deep_conditionals: chains of conditionals deeper than the depth
 *     where the code generators stop branching (codegen/exp.c, "Deep
 *     conditionals"): values on every backend, checked mode included,
 *     with a while loop that must not run on the side not taken;
 *   - huge_constants: a chain of 30,000 f64 additions of distinct
 *     constants, one huge kernel whose constants go into a table
 *     (runtime-cpu/jit.c, "Constants of huge kernels");
 *   - many_kernels: 300 kernels compiled in batches (runtime-cpu/jit.c,
 *     "Many kernels"): their quick code, their optimised code, a second
 *     program sharing half of them, and a fresh context that loads the
 *     batches from the disk cache (each kernel a different structure,
 *     x * c by Horner's rule on c's bits, so that no two share code);
 *   - kernel_families: kernels that differ only in constants share one
 *     compiled kernel (runtime/families.c): three families (one with
 *     producers fused in, one of f64) and a group too small to be one;
 *     values, and the JIT's count of kernels found in its table.
 */
#include <dirent.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>

#include "tu.h"
#include "../bench/gen_large.h"
#ifdef WEFT_HAVE_LLVM
#include "cpu.h"
#endif

static const weft_backend backends[] = TU_BACKENDS;
enum { NBACKEND = sizeof backends / sizeof backends[0] };

/* Run r (one result) of u's program on in[0..nin-1] into *out. */
static void run1(tu *u, weft_acc *r, weft_array **in, int nin, weft_array **out)
{
    TU_PROGRAM_OK(u->p);
    TU_OK(tu_run(u->p, &r, 1, in, nin, out, 1));
}

START_TEST(wide_and_nested_tuples)
{
    for (int k = 0; k < NBACKEND; k++) {
        /* LLVM's passes take time superlinear in one huge element
         * function: the CPU gets a smaller program */
        const int N = backends[k] == WEFT_BACKEND_INTERP ? 100000 : 300;
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        /* map (\x -> sum_i get(t, i)), t = (x + 0, ..., x + N-1) */
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_exp *x = weft_arg(f, 0);
        weft_exp *e = gl_wide_sum(p, x, N);
        ck_assert_ptr_nonnull(e);
        weft_fun_return(f, e);
        weft_acc *xs = weft_param(p, WEFT_I64, 1);
        weft_array *in[1] = {
            tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(2), TU_I(0, 1))};
        weft_array *out[1] = {NULL};
        run1(&u, weft_map(f, xs), in, 1, out);
        /* sum over i of (x + i) = N x + N (N - 1) / 2 */
        int64_t base = (int64_t)N * (N - 1) / 2;
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(2), TU_I(base, base + N));
        weft_array_release(out[0]);
        /* N nested 1-tuples of x * 2, then N projections */
        tu_reset(&u);
        p = u.p;
        f = weft_fun1(p, WEFT_I64);
        weft_fun_return(
            f, gl_nested(p, weft_mul(weft_arg(f, 0), weft_i64(p, 2)), N));
        run1(&u, weft_map(f, weft_param(p, WEFT_I64, 1)), in, 1, out);
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(2), TU_I(0, 2));
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(shared_chain)
{
    enum { N = 100000 };
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    /* e' = (e * 3 xor e >> 1) + s, s = the a, shared by every link */
    weft_acc *a = weft_param(p, WEFT_I64, 0);
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, gl_chain(p, weft_arg(f, 0), N, weft_the(a)));
    weft_array *in[2] = {
        tu_arr_i(u.ctx, WEFT_I64, 0, NULL, TU_I(7)),
        tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(3), TU_I(1, -2, 12345))};
    weft_array *out[1] = {NULL};
    run1(&u, weft_map(f, weft_param(p, WEFT_I64, 1)), in, 2, out);
    int64_t want[3] = {1, -2, 12345};
    for (int j = 0; j < 3; j++) {
        uint64_t v = (uint64_t)want[j];
        for (int i = 0; i < N; i++) {
            /* i64 arithmetic that wraps, and an arithmetic shift */
            uint64_t sh = (uint64_t)((int64_t)v >> 1);
            v = ((v * 3u) ^ sh) + 7u;
        }
        want[j] = (int64_t)v;
    }
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(3), want);
    weft_array_release(out[0]);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    tu_close(&u);
}
END_TEST

START_TEST(unit_while)
{
    for (int k = 0; k < NBACKEND; k++) {
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        weft_type unit = weft_type_tuple(u.ctx, 0, NULL);
        weft_type pair_t =
            weft_type_tuple(u.ctx, 2, (weft_type[]){WEFT_I64, unit});
        ck_assert_int_ne(unit, 0);
        ck_assert_int_ne(pair_t, 0);
        /* map (\x -> (x + 1, while (\() -> x > 100) (\() -> ()) ())) */
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_exp *x = weft_arg(f, 0);
        weft_fun *cond = weft_fun1(p, unit), *body = weft_fun1(p, unit);
        weft_fun_return(cond, weft_gt(x, weft_i64(p, 100)));
        weft_fun_return(body, weft_arg(body, 0));
        weft_exp *w = weft_while(cond, body, weft_tuple(p, 0, NULL));
        weft_exp *pair[2] = {weft_add(x, weft_i64(p, 1)), w};
        weft_fun_return(f, weft_tuple(p, 2, pair));
        weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(20),
                                      TU_I(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                           12, 13, 14, 15, 16, 17, 18, 19))};
        weft_array *out[1] = {NULL};
        run1(&u, weft_map(f, weft_param(p, WEFT_I64, 1)), in, 1, out);
        ck_assert_int_eq(weft_array_type(out[0]), pair_t);
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(20),
                   TU_I(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                        17, 18, 19, 20));
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(unit_generate_huge)
{
    const int64_t n = (int64_t)1 << 40;
    for (int k = 0; k < NBACKEND; k++) {
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        /* generate (Z :. 2^40) (\ix -> ()): a shape, no data */
        weft_fun *f = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(f, weft_tuple(p, 0, NULL));
        weft_acc *g = weft_generate(weft_index1(weft_i64(p, n)), f);
        weft_array *out[1] = {NULL};
        run1(&u, g, NULL, 0, out);
        ck_assert_int_eq(weft_array_rank(out[0]), 1);
        ck_assert_int_eq(weft_array_size(out[0]), n);
        ck_assert_int_eq(weft_type_leaves(u.ctx, weft_array_type(out[0])), 0);
        weft_array_release(out[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(interp_error_element)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    /* map (\x -> 10 quot x) over [1, 2, 0, 4]: element 2 divides by 0 */
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_quot(weft_i32(p, 10), weft_arg(f, 0)));
    weft_acc *m = weft_map(f, weft_param(p, WEFT_I32, 1));
    weft_array *in[1] = {
        tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(4), TU_I(1, 2, 0, 4))};
    weft_array *out[1] = {NULL};
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, tu_run(p, &m, 1, in, 1, out, 1));
    ck_assert_msg(strstr(weft_last_error(), "division by zero") &&
                      strstr(weft_last_error(), " at element 2"),
                  "message: %s", weft_last_error());
    /* a fold: the input position, once only */
    tu_reset(&u);
    p = u.p;
    weft_fun *g = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(g, weft_add(weft_arg(g, 0),
                                weft_quot(weft_i32(p, 10), weft_arg(g, 1))));
    weft_acc *r = weft_fold_all(g, weft_i32(p, 0), weft_param(p, WEFT_I32, 1));
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, tu_run(p, &r, 1, in, 1, out, 1));
    const char *msg = weft_last_error();
    const char *at = strstr(msg, " at element 2");
    ck_assert_msg(at && !strstr(at + 1, " at element "), "message: %s", msg);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

/* A context on backend b with flags added to the tests' usual ones. */
static void open_flags(tu *u, weft_backend b, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV | DT_TIER | flags;
    u->ctx = NULL;
    u->p = NULL;
    TU_OK(weft_context_create(&cfg, &u->ctx));
    TU_OK(weft_program_create(u->ctx, &u->p));
}

enum { NDEEP = 3000, NSHORT = 24, NX = 19 };

/* The inputs of deep_conditionals: 19 of them, so that the CPU's SPMD
 * loop (8 lanes) and its scalar remainder both run. */
static const int64_t deep_x[NX] = {-5000, -3000, -2999, -1500, -24, -23, -12,
                                   -9,    -8,    -3,    -1,    0,   1,   2,
                                   5,     7,     100,   2999,  5000};

START_TEST(deep_conditionals)
{
    const struct {
        weft_backend b;
        unsigned flags;
    } modes[] = {
        {WEFT_BACKEND_INTERP, 0},
#ifdef WEFT_HAVE_LLVM
        {WEFT_BACKEND_CPU, 0},
        {WEFT_BACKEND_CPU, WEFT_FLAG_NO_SPMD},
        {WEFT_BACKEND_CPU, WEFT_FLAG_CHECKED},
#endif
    };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        tu u;
        open_flags(&u, modes[m].b, modes[m].flags);
        weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(NX), deep_x)};
        weft_array *out[1] = {NULL};
        int64_t want[NX];
        /* e_i = cond (x > -i) (e_{i-1} + 1) x, e_0 = x: the chain */
        weft_program *p = u.p;
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_exp *x = weft_arg(f, 0), *e = x;
        for (int i = 1; i <= NDEEP; i++) {
            e = weft_cond(weft_gt(x, weft_i64(p, -i)),
                          weft_add(e, weft_i64(p, 1)), x);
        }
        weft_fun_return(f, e);
        run1(&u, weft_map(f, weft_param(p, WEFT_I64, 1)), in, 1, out);
        for (int k = 0; k < NX; k++) {
            int64_t v = deep_x[k];
            for (int i = 1; i <= NDEEP; i++) {
                v = deep_x[k] > -i ? v + 1 : deep_x[k];
            }
            want[k] = v;
        }
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(NX), want);
        weft_array_release(out[0]);
        /* innermost, NSHORT conditionals deep: cond (x >= 0) (count x
         * down to 0 by a while, + 5) (1 quot (x - x)), which loops 2^63
         * times for a negative x and divides by zero for every x (zero in
         * unchecked code, a report in checked code), so neither side may
         * run where it is not taken; around it, e_i = cond (x > -i)
         * (e_{i-1} + 1) (x - 1) */
        tu_reset(&u);
        p = u.p;
        f = weft_fun1(p, WEFT_I64);
        x = weft_arg(f, 0);
        weft_fun *wc = weft_fun1(p, WEFT_I64), *wb = weft_fun1(p, WEFT_I64);
        weft_fun_return(wc, weft_ne(weft_arg(wc, 0), weft_i64(p, 0)));
        weft_fun_return(wb, weft_sub(weft_arg(wb, 0), weft_i64(p, 1)));
        e = weft_cond(weft_ge(x, weft_i64(p, 0)),
                      weft_add(weft_while(wc, wb, x), weft_i64(p, 5)),
                      weft_quot(weft_i64(p, 1), weft_sub(x, x)));
        for (int i = 1; i <= NSHORT; i++) {
            e = weft_cond(weft_gt(x, weft_i64(p, -i)),
                          weft_add(e, weft_i64(p, 1)),
                          weft_sub(x, weft_i64(p, 1)));
        }
        weft_fun_return(f, e);
        run1(&u, weft_map(f, weft_param(p, WEFT_I64, 1)), in, 1, out);
        for (int k = 0; k < NX; k++) {
            int64_t xk = deep_x[k];
            /* the innermost side x < 0 is reached for x in (-1, 0): none */
            int64_t v = xk >= 0 ? 5 : 0;
            for (int i = 1; i <= NSHORT; i++) {
                v = xk > -i ? v + 1 : xk - 1;
            }
            want[k] = v;
        }
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(NX), want);
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

#ifdef WEFT_HAVE_LLVM
START_TEST(huge_constants)
{
    enum { N = 30000 };
    tu u;
    tu_open_backend(&u, WEFT_BACKEND_CPU);
    weft_program *p = u.p;
    /* map (\x -> ((x + 1.5) + 2.5) + ... + (N + 0.5)): every partial sum
     * is a multiple of 0.5 below 2^30, so f64 computes it exactly */
    weft_fun *f = weft_fun1(p, WEFT_F64);
    weft_exp *e = weft_arg(f, 0);
    for (int i = 1; i <= N; i++) {
        e = weft_add(e, weft_f64(p, i + 0.5));
    }
    weft_fun_return(f, e);
    weft_array *in[1] = {tu_arr_f(u.ctx, WEFT_F64, 1, TU_SH(11),
                                  TU_F(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -0.5))};
    weft_array *out[1] = {NULL};
    run1(&u, weft_map(f, weft_param(p, WEFT_F64, 1)), in, 1, out);
    double s = (double)N * (N + 1) / 2 + 0.5 * N, want[11];
    for (int i = 0; i < 10; i++) {
        want[i] = s + i;
    }
    want[10] = s - 0.5;
    TU_CHECK_F(u.ctx, out[0], 0, 1, TU_SH(11), want, 0); /* exact */
    weft_array_release(out[0]);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

enum { NMANY = 300 };

/* Program: results i = map (\y -> y * (i + first + 1)) xs, i < n; run on
 * [1, 2, 3] and checked. */
static void many_run(weft_context *ctx, int first, int n)
{
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_acc *r[NMANY];
    weft_array *out[NMANY] = {NULL};
    for (int i = 0; i < n; i++) {
        r[i] = weft_map(gl_times(p, i + first + 1), xs);
    }
    weft_array *in[1] = {tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(1, 2, 3))};
    TU_OK(tu_run(p, r, n, in, 1, out, n));
    for (int i = 0; i < n; i++) {
        int64_t c = i + first + 1;
        TU_CHECK_I(ctx, out[i], 0, 1, TU_SH(3), TU_I(c, 2 * c, 3 * c));
        weft_array_release(out[i]);
    }
    weft_array_release(in[0]);
    weft_program_free(p);
}

/* A CPU context's configuration, tiered (the default), with its disk
 * cache in dir. */
static weft_config tiered_cpu(const char *dir)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    cfg.cache_dir = dir;
    return cfg;
}

enum { NFAM = 40, NSMALL = 10 };

/* Three families of maps that differ only in constants, and a group of
 * NSMALL, fewer than a family needs: 3 * NFAM + NSMALL kernels, one
 * batch, 3 + NSMALL different ones. */
START_TEST(kernel_families)
{
    char dir[] = "/tmp/weft-large-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = tiered_cpu(dir);
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_acc *fs = weft_param(p, WEFT_F64, 1);
    enum { N = 3 * NFAM + NSMALL };
    weft_acc *r[N];
    weft_array *out[N] = {NULL};
    /* constants c = i + 2: no identity (x * 1, x - 0) folds one member
     * into another shape */
    for (int i = 0; i < NFAM; i++) {
        int c = i + 2;
        /* y * c + 7 */
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_fun_return(f, weft_add(weft_mul(weft_arg(f, 0), weft_i64(p, c)),
                                    weft_i64(p, 7)));
        r[i] = weft_map(f, xs);
        /* y * (c + 0.25) */
        weft_fun *g = weft_fun1(p, WEFT_F64);
        weft_fun_return(g, weft_mul(weft_arg(g, 0), weft_f64(p, c + 0.25)));
        r[NFAM + i] = weft_map(g, fs);
        /* map (\y -> y * c) (map (\y -> y * 3 + c) xs): fused */
        weft_fun *h = weft_fun1(p, WEFT_I64);
        weft_fun_return(h, weft_add(weft_mul(weft_arg(h, 0), weft_i64(p, 3)),
                                    weft_i64(p, c)));
        weft_fun *k = weft_fun1(p, WEFT_I64);
        weft_fun_return(k, weft_mul(weft_arg(k, 0), weft_i64(p, c)));
        r[2 * NFAM + i] = weft_map(k, weft_map(h, xs));
    }
    for (int i = 0; i < NSMALL; i++) {
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_fun_return(f, weft_sub(weft_arg(f, 0), weft_i64(p, i + 2)));
        r[3 * NFAM + i] = weft_map(f, xs);
    }
    weft_array *in[2] = {tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(1, 2, -3)),
                         tu_arr_f(ctx, WEFT_F64, 1, TU_SH(2), TU_F(1.5, -4))};
    TU_OK(tu_run(p, r, N, in, 2, out, N));
    for (int i = 0; i < NFAM; i++) {
        int64_t c = i + 2;
        TU_CHECK_I(ctx, out[i], 0, 1, TU_SH(3),
                   TU_I(c + 7, 2 * c + 7, -3 * c + 7));
        double d = c + 0.25; /* exact: products of small dyadic numbers */
        TU_CHECK_F(ctx, out[NFAM + i], 0, 1, TU_SH(2), TU_F(1.5 * d, -4 * d),
                   0);
        TU_CHECK_I(ctx, out[2 * NFAM + i], 0, 1, TU_SH(3),
                   TU_I((3 + c) * c, (6 + c) * c, (-9 + c) * c));
    }
    for (int i = 0; i < NSMALL; i++) {
        TU_CHECK_I(ctx, out[3 * NFAM + i], 0, 1, TU_SH(3),
                   TU_I(1 - (i + 2), 2 - (i + 2), -3 - (i + 2)));
    }
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    ck_assert_uint_eq(st.kernels_reused, N - (3 + NSMALL));
    for (int i = 0; i < N; i++) {
        weft_array_release(out[i]);
    }
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    weft_program_free(p);
    weft_context_free(ctx);
    tu_remove_dir(dir);
}
END_TEST

START_TEST(many_kernels)
{
    char dir[] = "/tmp/weft-large-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = tiered_cpu(dir);
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    many_run(ctx, 0, NMANY); /* quick code, 3 batches */
    TU_OK(weft_context_wait_optimised(ctx));
    many_run(ctx, 0, NMANY);         /* optimised code */
    many_run(ctx, NMANY / 2, NMANY); /* half of them again */
    TU_OK(weft_context_wait_optimised(ctx));
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    /* tier-ups are per batch: 128, 128 and 44 kernels, then 128 and 22 */
    ck_assert_uint_eq(st.kernels_optimised, 3 + 2);
    weft_context_free(ctx);
    TU_OK(weft_context_create(&cfg, &ctx));
    many_run(ctx, 0, NMANY); /* from the disk cache */
    TU_OK(weft_context_stats(ctx, &st));
    ck_assert_uint_eq(st.kernels_loaded, 3);
    ck_assert_uint_eq(st.kernels_compiled, 0);
    weft_context_free(ctx);
    tu_remove_dir(dir);
}
END_TEST

enum { NTHREAD = 8 };

enum { NBATCHED = 40 };

typedef struct compile_job {
    weft_context *ctx;
    int k;  /* this thread's first constant */
    int n;  /* results: 1, or NBATCHED (compiled in batches) */
    int ok; /* 1 when the result was right */
    char msg[256];
} compile_job;

/* Compile and run the maps (\x -> x * c), c = k .. k + n - 1 (times:
 * kernels of different code), on ctx; job->ok on success. */
static void *compile_one(void *arg)
{
    compile_job *j = arg;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    weft_array *in = NULL, *out[NBATCHED] = {NULL};
    weft_acc *r[NBATCHED];
    int64_t xs[4] = {1, 2, 3, 4}, got[4] = {0};
    const void *data[1] = {xs};
    if (weft_program_create(j->ctx, &p) != WEFT_OK) {
        goto done;
    }
    weft_acc *x = weft_param(p, WEFT_I64, 1);
    for (int i = 0; i < j->n; i++) {
        r[i] = weft_map(gl_times(p, j->k + i), x);
    }
    if (weft_compile(p, r, j->n, &exe) != WEFT_OK ||
        weft_array_from_host(j->ctx, WEFT_I64, 1, TU_SH(4), data, &in) !=
            WEFT_OK ||
        weft_run(exe, &in, 1, out, j->n) != WEFT_OK) {
        goto done;
    }
    j->ok = 1;
    for (int i = 0; i < j->n && j->ok; i++) {
        int64_t c = j->k + i;
        j->ok = weft_array_read(out[i], 0, got, sizeof got) == WEFT_OK;
        for (int e = 0; e < 4; e++) {
            j->ok &= got[e] == xs[e] * c;
        }
    }
done:
    if (!j->ok) {
        snprintf(j->msg, sizeof j->msg, "%s", weft_last_error());
    }
    weft_array_release(in);
    for (int i = 0; i < j->n; i++) {
        weft_array_release(out[i]);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    return NULL;
}

/* NTHREAD threads compile and run on one CPU context: one kernel each
 * (step 1), or NBATCHED each in batches (step 10: each thread's kernels
 * overlap the next one's, so batches claim and wait for each other's). */
static void compile_together(int n, int step)
{
    char dir[] = "/tmp/weft-large-XXXXXX"; /* compiled here, not loaded */
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = tiered_cpu(dir);
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    compile_job jobs[NTHREAD];
    pthread_t th[NTHREAD];
    for (int i = 0; i < NTHREAD; i++) {
        jobs[i] = (compile_job){ctx, 3 + i * step, n, 0, ""};
        ck_assert_int_eq(pthread_create(&th[i], NULL, compile_one, &jobs[i]),
                         0);
    }
    for (int i = 0; i < NTHREAD; i++) {
        pthread_join(th[i], NULL);
    }
    for (int i = 0; i < NTHREAD; i++) {
        ck_assert_msg(jobs[i].ok, "thread %d: %s", i, jobs[i].msg);
    }
    TU_OK(weft_context_wait_optimised(ctx));
    weft_context_free(ctx);
    tu_remove_dir(dir);
}

START_TEST(concurrent_compiles)
{
    compile_together(1, 1);
}
END_TEST

START_TEST(concurrent_batches)
{
    compile_together(NBATCHED, 10);
}
END_TEST

/* The tier-up hook of free_during_tier_up: tells that a tier-up began,
 * then holds it until the test lets it go. */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hook_cond = PTHREAD_COND_INITIALIZER;
static int hook_entered, hook_released;

static void hold_tier_up(void)
{
    pthread_mutex_lock(&hook_lock);
    hook_entered++;
    pthread_cond_broadcast(&hook_cond);
    while (!hook_released) {
        pthread_cond_wait(&hook_cond, &hook_lock);
    }
    pthread_mutex_unlock(&hook_lock);
}

/* weft_context_free returns while the background thread is inside a
 * tier-up (held there by the hook, so it cannot have finished: a free
 * that waited for it would never return and the test would time out);
 * the thread then finishes alone and frees the JIT, and the optimised
 * kernel still reaches the disk cache. */
START_TEST(free_during_tier_up)
{
    char dir[] = "/tmp/weft-large-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = tiered_cpu(dir);
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    hook_entered = hook_released = 0;
    cpu_jit_tier_hook = hold_tier_up;
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, weft_mul(weft_arg(f, 0), weft_i64(p, 5)));
    weft_acc *r = weft_map(f, weft_param(p, WEFT_I64, 1));
    weft_array *in[1] = {tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(1, 2, 3))};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 1, out, 1)); /* the quick code */
    TU_CHECK_I(ctx, out[0], 0, 1, TU_SH(3), TU_I(5, 10, 15));
    weft_array_release(out[0]);
    weft_array_release(in[0]);
    weft_program_free(p);
    pthread_mutex_lock(&hook_lock);
    while (hook_entered == 0) {
        pthread_cond_wait(&hook_cond, &hook_lock);
    }
    pthread_mutex_unlock(&hook_lock);
    int before = atomic_load(&rt_tier_orphaned);
    weft_context_free(ctx); /* returns with the tier-up held */
    ck_assert_int_eq(atomic_load(&rt_tier_orphaned), before + 1);
    pthread_mutex_lock(&hook_lock);
    ck_assert_int_eq(hook_released, 0);
    hook_released = 1;
    pthread_cond_broadcast(&hook_cond);
    pthread_mutex_unlock(&hook_lock);
    rt_tier_wait_orphans();
    cpu_jit_tier_hook = NULL;
    /* the optimised object was written by the orphaned thread */
    int objects = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        objects += n > 2 && strcmp(e->d_name + n - 2, ".o") == 0;
    }
    closedir(d);
    ck_assert_int_eq(objects, 1);
    tu_remove_dir(dir);
}
END_TEST

/* The tier-up hook of exit_child: says that the tier-up began, and holds
 * it long enough for the process to be inside exit() when it goes on into
 * LLVM's code generator. */
static atomic_int child_tiering;

static void delay_tier_up(void)
{
    atomic_store(&child_tiering, 1);
    nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
}

/* The child of exit_during_tier_up (a fresh process: this binary again,
 * with $WEFT_LARGE_EXIT_CHILD set to "free" or "keep"): compile its
 * first kernel, run its quick code, free the context (or not) and exit
 * at once, the tier-up running. */
static void exit_child(const char *mode)
{
    cpu_jit_tier_hook = delay_tier_up;
    weft_config cfg = tiered_cpu(getenv("WEFT_LARGE_EXIT_CACHE"));
    weft_context *ctx = NULL;
    weft_program *p = NULL;
    if (weft_context_create(&cfg, &ctx) != WEFT_OK ||
        weft_program_create(ctx, &p) != WEFT_OK) {
        _exit(3);
    }
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *e = weft_arg(f, 0);
    for (int i = 0; i < 20; i++) {
        e = weft_bxor(weft_mul(e, weft_i64(p, 3)), weft_shr(e, weft_i64(p, 1)));
    }
    weft_fun_return(f, e);
    weft_acc *r = weft_map(f, weft_param(p, WEFT_I64, 1));
    weft_executable *exe = NULL;
    weft_array *in = NULL, *out = NULL;
    int64_t xs[2] = {1, 2};
    const void *data[1] = {xs};
    if (weft_compile(p, &r, 1, &exe) != WEFT_OK ||
        weft_array_from_host(ctx, WEFT_I64, 1, TU_SH(2), data, &in) !=
            WEFT_OK ||
        weft_run(exe, &in, 1, &out, 1) != WEFT_OK) {
        _exit(4);
    }
    for (int ms = 0; !atomic_load(&child_tiering); ms++) {
        if (ms == 60000) {
            _exit(5); /* no tier-up (the kernel came from a disk cache?) */
        }
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
    if (strcmp(mode, "free") == 0) {
        weft_array_release(in);
        weft_array_release(out);
        weft_executable_free(exe);
        weft_program_free(p);
        weft_context_free(ctx);
    }
    exit(0);
}

__attribute__((constructor)) static void maybe_exit_child(void)
{
    const char *mode = getenv("WEFT_LARGE_EXIT_CHILD");
    if (mode) {
        exit_child(mode);
    }
}

extern char **environ;

START_TEST(exit_during_tier_up)
{
    char dir[] = "/tmp/weft-large-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *modes[2] = {"free", "keep"};
    for (int m = 0; m < 2; m++) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        ck_assert_int_gt(n, 0);
        self[n] = '\0';
        /* the environment, with the child's variables added */
        size_t ne = 0;
        while (environ[ne]) {
            ne++;
        }
        char **env = calloc(ne + 3, sizeof *env);
        ck_assert_ptr_nonnull(env);
        memcpy(env, environ, ne * sizeof *env);
        char mode[64], cache[128];
        snprintf(mode, sizeof mode, "WEFT_LARGE_EXIT_CHILD=%s", modes[m]);
        /* a cache of its own: not the other child's kernel */
        snprintf(cache, sizeof cache, "WEFT_LARGE_EXIT_CACHE=%s/%s", dir,
                 modes[m]);
        env[ne] = mode;
        env[ne + 1] = cache;
        char *argv[2] = {self, NULL};
        pid_t pid;
        ck_assert_int_eq(posix_spawn(&pid, self, NULL, NULL, argv, env), 0);
        free(env);
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "mode %s: the child ended with status 0x%x", modes[m],
                      status);
    }
    tu_remove_dir(dir);
}
END_TEST
#endif

static Suite *large_suite(void)
{
    const struct {
        const char *name;
        const TTest *test;
    } tests[] = {
        {"wide_and_nested_tuples", wide_and_nested_tuples},
        {"shared_chain", shared_chain},
        {"unit_while", unit_while},
        {"unit_generate_huge", unit_generate_huge},
        {"interp_error_element", interp_error_element},
#ifdef WEFT_HAVE_LLVM
        {"concurrent_compiles", concurrent_compiles},
        {"concurrent_batches", concurrent_batches},
        {"free_during_tier_up", free_during_tier_up},
        {"exit_during_tier_up", exit_during_tier_up},
        {"huge_constants", huge_constants},
        {"many_kernels", many_kernels},
        {"kernel_families", kernel_families},
#endif
        {"deep_conditionals", deep_conditionals},
    };
    Suite *s = suite_create("large");
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        TCase *t = tcase_create(tests[i].name);
        tcase_add_test(t, tests[i].test);
        tcase_set_timeout(t, 280);
        suite_add_tcase(s, t);
    }
    return s;
}

TU_MAIN(large_suite)
