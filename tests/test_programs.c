/*
 * tests/test_programs.c: whole programs from the Accelerate papers, run on
 * the reference interpreter and compared with plain C loops computed here.
 *
 *   dotp (f32, f64)   fold (+) 0 (zipWith (*) xs ys)
 *   saxpy             zipWith (\x y -> a * x + y), a = the (unit a)
 *   Black-Scholes     one zipWith3 giving (call, put) per option, with the
 *                     Abramowitz-Stegun polynomial for the normal CDF
 *   smvm              CSR: gather x by column index (backpermute), multiply
 *                     by the values (zipWith), foldSeg (+) by row lengths,
 *                     and foldSeg' (+) by the row pointers
 *   histogram         permute (+) into zeros, index = bucket of the value
 *   filter            0/1 flags, scanl' for offsets and count, permute into
 *                     an array whose extent comes from the count
 *   Jacobi            repeated 3x3 stencil with a clamped boundary
 *   Newton sqrt       awhile until every element has converged
 *   Collatz           a scalar while loop per element over (n, steps)
 *
 * The programs are tests/tu_programs.h's, which test_cpu.c runs on both
 * backends.  Tolerances are stated where each comparison is made.
 */
#include <math.h>

#include "tu_programs.h"

/* A rank-1 array of type t (f32 or f64) from doubles. */
static weft_array *vec_f(weft_context *ctx, weft_type t, int64_t n,
                         const double *v)
{
    return tu_arr_f(ctx, t, 1, &n, v);
}

/* ---- dotp ---------------------------------------------------------------- */

static void dotp_case(weft_type t, int64_t n, double tol)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, t, 1), *ys = weft_param(p, t, 1);
    weft_acc *dot = tu_prog_dotp(p, t, xs, ys);
    TU_PROGRAM_OK(p);

    double *x = malloc(sizeof(double) * (size_t)(n + 1));
    double *y = malloc(sizeof(double) * (size_t)(n + 1));
    ck_assert(x && y);
    tu_rng s = tu_rng_seed(42);
    double ref = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = tu_rng_unit(&s) * 2 - 1;
        y[i] = tu_rng_unit(&s) * 2 - 1;
        if (t == WEFT_F32) {
            x[i] = (float)x[i];
            y[i] = (float)y[i];
        }
        ref += x[i] * y[i];
        mag += fabs(x[i] * y[i]);
    }
    weft_array *in[2] = {vec_f(u.ctx, t, n, x), vec_f(u.ctx, t, n, y)};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &dot, 1, in, 2, out, 1));
    ck_assert_int_eq(weft_array_rank(out[0]), 0);
    double got = tu_load_f(t, weft_array_data(out[0], 0));
    /* Summation error grows with n * eps * sum |x y| in the worst case. */
    ck_assert_msg(fabs(got - ref) <= tol * mag, "dotp: %.17g vs %.17g", got,
                  ref);
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    free(x);
    free(y);
    tu_close(&u);
}

START_TEST(dotp_f32)
{
    /* f32: sequential or tree order, bounded by 1e-5 of sum |x y|. */
    dotp_case(WEFT_F32, 10007, 1e-5);
    dotp_case(WEFT_F32, 0, 0);
    dotp_case(WEFT_F32, 1, 1e-7);
}
END_TEST

START_TEST(dotp_f64)
{
    dotp_case(WEFT_F64, 10007, 1e-13);
    dotp_case(WEFT_F64, 3, 1e-15);
}
END_TEST

/* ---- saxpy --------------------------------------------------------------- */

START_TEST(saxpy)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *alpha = weft_param(p, WEFT_F32, 0);
    weft_acc *xs = weft_param(p, WEFT_F32, 1), *ys = weft_param(p, WEFT_F32, 1);
    weft_acc *r = tu_prog_saxpy(p, alpha, xs, ys);
    TU_PROGRAM_OK(p);

    enum { N = 1000 };
    double x[N], y[N], want[N];
    float av = 2.5f;
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i * 0.25 - 100);
        y[i] = (float)(i % 17);
        want[i] = (float)((float)(av * (float)x[i]) + (float)y[i]);
    }
    double ad = av;
    weft_array *in[3] = {tu_arr_f(u.ctx, WEFT_F32, 0, TU_SH(1), &ad),
                         vec_f(u.ctx, WEFT_F32, N, x),
                         vec_f(u.ctx, WEFT_F32, N, y)};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 3, out, 1));
    /* One rounding per operation in f32 both ways: equal up to 1 ulp
     * (a fused multiply-add on either side would differ by that). */
    TU_CHECK_F(u.ctx, out[0], 0, 1, TU_SH(N), want, 2e-7);
    tu_release_all(out, 1);
    for (int i = 0; i < 3; i++) {
        weft_array_release(in[i]);
    }
    tu_close(&u);
}
END_TEST

/* ---- Black-Scholes ------------------------------------------------------- */

/* The normal cumulative distribution (Abramowitz and Stegun 26.2.17), in
 * double: the reference. */
static double cnd_ref(double d)
{
    double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
    double poly = k * (tu_bs_coeff[0] +
                       k * (tu_bs_coeff[1] +
                            k * (tu_bs_coeff[2] +
                                 k * (tu_bs_coeff[3] + k * tu_bs_coeff[4]))));
    double c = BS_RSQRT2PI * exp(-0.5 * d * d) * poly;
    return d > 0 ? 1.0 - c : c;
}

static void bs_ref(double price, double strike, double years, double *call,
                   double *put)
{
    double r = BS_RISKFREE, v = BS_VOLATILITY;
    double v_sqrtt = v * sqrt(years);
    double d1 = (log(price / strike) + (r + 0.5 * v * v) * years) / v_sqrtt;
    double d2 = d1 - v_sqrtt;
    double c1 = cnd_ref(d1), c2 = cnd_ref(d2);
    double x_exprt = strike * exp(-r * years);
    *call = price * c1 - x_exprt * c2;
    *put = x_exprt * (1.0 - c2) - price * (1.0 - c1);
}

START_TEST(black_scholes)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *price = weft_param(p, WEFT_F32, 1);
    weft_acc *strike = weft_param(p, WEFT_F32, 1);
    weft_acc *years = weft_param(p, WEFT_F32, 1);
    weft_acc *r = tu_prog_black_scholes(p, price, strike, years);
    TU_PROGRAM_OK(p);
    ck_assert_int_eq(weft_acc_rank(r), 1);

    enum { N = 1000 };
    double s[N], x[N], t[N], call[N], put[N];
    tu_rng seed = tu_rng_seed(7);
    for (int i = 0; i < N; i++) {
        s[i] = (float)(5 + 25 * tu_rng_unit(&seed));
        x[i] = (float)(1 + 99 * tu_rng_unit(&seed));
        t[i] = (float)(0.25 + 9.75 * tu_rng_unit(&seed));
        bs_ref(s[i], x[i], t[i], &call[i], &put[i]);
    }
    weft_array *in[3] = {vec_f(u.ctx, WEFT_F32, N, s),
                         vec_f(u.ctx, WEFT_F32, N, x),
                         vec_f(u.ctx, WEFT_F32, N, t)};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 3, out, 1));
    ck_assert_int_eq(weft_type_leaves(u.ctx, weft_array_type(out[0])), 2);
    /* Tolerance 1e-4, relative above 1 and absolute below: f32 carries
     * about 7 digits, and the prices are differences of products of up to
     * 100 with CDF values (call = S c1 - X e^-rT c2), so a few f32 ulps of
     * 100 (~1e-5 each) survive the cancellation.  The CDF approximation is
     * the same polynomial on both sides, so it adds nothing.  (Observed
     * on the interpreter: about 5e-6.) */
    TU_CHECK_F(u.ctx, out[0], 0, 1, TU_SH(N), call, 1e-4);
    TU_CHECK_F(u.ctx, out[0], 1, 1, TU_SH(N), put, 1e-4);
    tu_release_all(out, 1);
    for (int i = 0; i < 3; i++) {
        weft_array_release(in[i]);
    }
    tu_close(&u);
}
END_TEST

/* ---- smvm ---------------------------------------------------------------- */

static void smvm_case(bool offsets)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *segd = weft_param(p, WEFT_I32, 1); /* lengths or pointers */
    weft_acc *cols = weft_param(p, WEFT_I32, 1); /* column per value */
    weft_acc *vals = weft_param(p, WEFT_F64, 1);
    weft_acc *xv = weft_param(p, WEFT_F64, 1);
    weft_acc *r = tu_prog_smvm_by(p, segd, cols, vals, xv, offsets);
    TU_PROGRAM_OK(p);

    /* A 7 x 9 matrix with an empty row, a full row and random others. */
    enum { ROWS = 7, COLS = 9 };
    int64_t len[ROWS];
    int64_t col[ROWS * COLS];
    double val[ROWS * COLS], x[COLS], want[ROWS];
    tu_rng seed = tu_rng_seed(99);
    int64_t nnz = 0;
    for (int j = 0; j < COLS; j++) {
        x[j] = tu_rng_unit(&seed) * 4 - 2;
    }
    for (int i = 0; i < ROWS; i++) {
        len[i] = 0;
        want[i] = 0;
        for (int j = 0; j < COLS; j++) {
            bool keep = i == 3   ? true
                        : i == 1 ? false
                                 : tu_rng_unit(&seed) < 0.4;
            if (keep) {
                col[nnz] = j;
                val[nnz] = tu_rng_unit(&seed) * 10 - 5;
                want[i] += val[nnz] * x[j];
                nnz++;
                len[i]++;
            }
        }
    }
    int64_t ptr[ROWS + 1] = {0};
    for (int i = 0; i < ROWS; i++) {
        ptr[i + 1] = ptr[i] + len[i];
    }
    weft_array *in[4] = {
        offsets ? tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(ROWS + 1), ptr)
                : tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(ROWS), len),
        tu_arr_i(u.ctx, WEFT_I32, 1, &nnz, col),
        vec_f(u.ctx, WEFT_F64, nnz, val), vec_f(u.ctx, WEFT_F64, COLS, x)};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 4, out, 1));
    /* Sums of at most 9 products, in the same order: 1e-12. */
    TU_CHECK_F(u.ctx, out[0], 0, 1, TU_SH(ROWS), want, 1e-12);
    tu_release_all(out, 1);
    for (int i = 0; i < 4; i++) {
        weft_array_release(in[i]);
    }
    tu_close(&u);
}

START_TEST(smvm)
{
    smvm_case(false);
    smvm_case(true);
}
END_TEST

/* ---- histogram ----------------------------------------------------------- */

START_TEST(histogram)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    enum { BUCKETS = 10, N = 500 };
    weft_acc *vs = weft_param(p, WEFT_I32, 1);
    weft_acc *r = tu_prog_histogram(p, vs); /* BUCKETS buckets */
    TU_PROGRAM_OK(p);

    int64_t vals[N], want[BUCKETS] = {0};
    tu_rng seed = tu_rng_seed(3);
    for (int i = 0; i < N; i++) {
        vals[i] = (int64_t)(tu_rng_unit(&seed) * 120) - 10;
        if (vals[i] >= 0 && vals[i] < 100) {
            want[vals[i] / 10]++;
        }
    }
    weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(N), vals)};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 1, out, 1));
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(BUCKETS), want);
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

/* ---- filter -------------------------------------------------------------- */

/* filter (\x -> x mod 3 == 0) xs: the result's extent comes from the
 * total of the scan, read by weft_the. */
static void filter_case(const int64_t *xs, int64_t n)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *r = tu_prog_filter(p, a);
    TU_PROGRAM_OK(p);

    int64_t *want = malloc(sizeof(int64_t) * (size_t)(n + 1));
    ck_assert_ptr_nonnull(want);
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++) {
        if (((xs[k] % 3) + 3) % 3 == 0) {
            want[m++] = xs[k];
        }
    }
    weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I32, 1, &n, xs)};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 1, out, 1));
    TU_CHECK_I(u.ctx, out[0], 0, 1, &m, want);
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    free(want);
    tu_close(&u);
}

START_TEST(filter)
{
    int64_t xs[200];
    for (int i = 0; i < 200; i++) {
        xs[i] = (i * 37) % 101 - 50;
    }
    filter_case(xs, 200);
    filter_case(xs, 1);     /* -50: dropped, empty result */
    filter_case(xs + 2, 1); /* 24: kept */
    filter_case(xs, 0);
}
END_TEST

/* ---- Jacobi -------------------------------------------------------------- */

START_TEST(jacobi)
{
    enum { H = 13, W = 17, ITERS = 4 };
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *g = weft_param(p, WEFT_F64, 2);
    weft_acc *r = tu_prog_jacobi(p, g, ITERS);
    TU_PROGRAM_OK(p);

    static double a[H][W], b[H][W];
    for (int i = 0; i < H; i++) {
        for (int j = 0; j < W; j++) {
            a[i][j] = (i == 0 ? 100.0 : 0.0) + (double)((i * 7 + j * 3) % 5);
        }
    }
    weft_array *in[1] = {tu_arr_f(u.ctx, WEFT_F64, 2, TU_SH(H, W), &a[0][0])};
    for (int k = 0; k < ITERS; k++) {
        for (int i = 0; i < H; i++) {
            for (int j = 0; j < W; j++) {
                int n = i > 0 ? i - 1 : 0, s = i < H - 1 ? i + 1 : H - 1;
                int w = j > 0 ? j - 1 : 0, e = j < W - 1 ? j + 1 : W - 1;
                b[i][j] = 0.25 * ((a[n][j] + a[i][w]) + (a[i][e] + a[s][j]));
            }
        }
        memcpy(a, b, sizeof a);
    }
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 1, out, 1));
    /* The same operations in the same order in f64: 1e-13. */
    TU_CHECK_F(u.ctx, out[0], 0, 2, TU_SH(H, W), &a[0][0], 1e-13);
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

/* ---- awhile: Newton's method for square roots ---------------------------- */

START_TEST(newton_sqrt_awhile)
{
    enum { N = 50 };
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *as = weft_param(p, WEFT_F64, 1);
    weft_acc *r = tu_prog_newton(p, as); /* to |x^2 - a| <= 1e-12 a */
    TU_PROGRAM_OK(p);

    double av[N], want[N];
    for (int i = 0; i < N; i++) {
        av[i] = 0.5 + i * 7.25;
        want[i] = sqrt(av[i]);
    }
    weft_array *in[1] = {vec_f(u.ctx, WEFT_F64, N, av)};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 1, out, 1));
    /* Converged to |x^2 - a| <= 1e-12 a, so x within ~1e-12 of sqrt a. */
    TU_CHECK_F(u.ctx, out[0], 0, 1, TU_SH(N), want, 1e-11);
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

/* ---- while: Collatz lengths ---------------------------------------------- */

START_TEST(collatz_while)
{
    enum { N = 300 };
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *r = tu_prog_collatz(p, u.ctx, weft_i64(p, N));
    TU_PROGRAM_OK(p);

    int64_t want[N];
    for (int i = 0; i < N; i++) {
        int64_t m = i + 1, steps = 0;
        while (m != 1) {
            m = m % 2 == 0 ? m / 2 : 3 * m + 1;
            steps++;
        }
        want[i] = steps;
    }
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, NULL, 0, out, 1));
    ck_assert_int_eq(weft_array_type(out[0]), WEFT_I32);
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(N), want);
    tu_release_all(out, 1);
    tu_close(&u);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *programs_suite(void)
{
    Suite *s = suite_create("programs");
    TCase *t = tcase_create("interp");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, dotp_f32);
    tcase_add_test(t, dotp_f64);
    tcase_add_test(t, saxpy);
    tcase_add_test(t, black_scholes);
    tcase_add_test(t, smvm);
    tcase_add_test(t, histogram);
    tcase_add_test(t, filter);
    tcase_add_test(t, jacobi);
    tcase_add_test(t, newton_sqrt_awhile);
    tcase_add_test(t, collatz_while);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(programs_suite)
