/*
 * tests/test_vmath.c: the accuracy of the CPU backend's exp and log
 * (codegen/vmath.c), against the C library the interpreter calls.
 *
 * For f32 and f64, exp and log: a CPU program `map f xs` runs over a sweep
 * of arguments and every result is compared with glibc's expf / logf / exp
 * / log (what lib/interp_scalar.c computes) in ulps, counted on the
 * ordered integer images of the two results.  The sweeps:
 *
 *   f32  every 1021st bit pattern of the 2^32 (positive and negative,
 *        normal, subnormal, NaN, infinite), so about 4.2 million arguments
 *        (a 16th of that in sanitizer builds);
 *   f64  half a million random bit patterns, as many uniform arguments in
 *        the range where the result is finite and not zero (exp: -745 to
 *        710; log: 2^-1074 to 2^1024 spread over the exponents), and
 *        as many around 1 (log) and 0 (exp), and 2000 within ulps of them;
 *   both the special values: +-0, +-inf, NaN, the smallest and largest
 *        subnormals and normals, and the arguments where exp overflows
 *        and underflows.
 *
 * Required: NaN exactly where the library gives NaN, infinities and zeros
 * (with their signs) exactly, everything else within 1 ulp; and with
 * WEFT_FLAG_FAST_MATH, where f32 is computed in float, within 2 ulp.  The test
 * prints the largest error seen and how many results were not the
 * library's bit for bit.  The differential tests (test_cpu.c, prims) run
 * the same functions against the interpreter itself.
 */
#include <float.h>
#include <math.h>

#include "tu.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRIDE32 (1021u * 16u)
#define N64 (1 << 15)
#else
#define STRIDE32 1021u
#define N64 (1 << 19)
#endif

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Ordered integer image of a float / double (adjacent values differ by 1). */
static int64_t ord32(float x)
{
    int32_t i;
    memcpy(&i, &x, 4);
    return i < 0 ? (int64_t)INT32_MIN - i : i;
}

static int64_t ord64(double x)
{
    int64_t i;
    memcpy(&i, &x, 8);
    return i < 0 ? INT64_MIN - i : i;
}

/* Map op over n arguments of type t (floats or doubles at in) on the CPU
 * backend; the results are written to out. */
static unsigned map_flags; /* WEFT_FLAG_FAST_MATH for the fast sweeps */

static void run_map(weft_op op, weft_type t, const void *in, int64_t n,
                    void *out)
{
    tu u;
    weft_config cfg = weft_config_default();
    cfg.threads = 2;
    cfg.flags = WEFT_FLAG_NO_ENV | map_flags;
    TU_OK(weft_context_create(&cfg, &u.ctx));
    TU_OK(weft_program_create(u.ctx, &u.p));
    weft_acc *xs = weft_param(u.p, t, 1);
    weft_acc *r = weft_map(tu_fun_op1(u.p, op, t), xs);
    weft_array *a = NULL, *res = NULL;
    TU_OK(weft_array_from_host(u.ctx, t, 1, &n, &in, &a));
    TU_OK(tu_run(u.p, &r, 1, &a, 1, &res, 1));
    memcpy(out, weft_array_data(res, 0), (size_t)n * weft_type_size(t));
    weft_array_release(a);
    weft_array_release(res);
    tu_close(&u);
}

typedef struct tally {
    int64_t worst;       /* largest ulp error */
    double worst_arg;
    int64_t inexact;     /* results not bit for bit the library's */
    int64_t n;
} tally;

static void check32(weft_op op, const float *x, int64_t n, tally *t)
{
    float *y = malloc((size_t)n * sizeof *y);
    ck_assert_ptr_nonnull(y);
    run_map(op, WEFT_F32, x, n, y);
    for (int64_t i = 0; i < n; i++) {
        float want = op == WEFT_OP_EXP ? expf(x[i]) : logf(x[i]);
        float got = y[i];
        t->n++;
        if (isnan(want) || isnan(got)) {
            ck_assert_msg(isnan(want) && isnan(got),
                          "%s(%a) is %a, libm %a", weft_op_name(op),
                          (double)x[i], (double)got, (double)want);
            /* a NaN the function makes (log of a negative) has the
             * library's bits, which a bitcast can see */
            ck_assert_msg(isnan(x[i]) || memcmp(&want, &got, 4) == 0,
                          "%s(%a): NaN bits %08x, libm %08x",
                          weft_op_name(op), (double)x[i],
                          (unsigned)ord32(got), (unsigned)ord32(want));
            continue;
        }
        if (isinf(want) || want == 0 || isinf(got) || got == 0) {
            ck_assert_msg(memcmp(&want, &got, 4) == 0,
                          "%s(%a) is %a, libm %a", weft_op_name(op),
                          (double)x[i], (double)got, (double)want);
            continue;
        }
        int64_t d = llabs(ord32(got) - ord32(want));
        t->inexact += d != 0;
        if (d > t->worst) {
            t->worst = d;
            t->worst_arg = x[i];
        }
    }
    free(y);
}

static void check64(weft_op op, const double *x, int64_t n, tally *t)
{
    double *y = malloc((size_t)n * sizeof *y);
    ck_assert_ptr_nonnull(y);
    run_map(op, WEFT_F64, x, n, y);
    for (int64_t i = 0; i < n; i++) {
        double want = op == WEFT_OP_EXP ? exp(x[i]) : log(x[i]);
        double got = y[i];
        t->n++;
        if (isnan(want) || isnan(got)) {
            ck_assert_msg(isnan(want) && isnan(got),
                          "%s(%a) is %a, libm %a", weft_op_name(op), x[i],
                          got, want);
            ck_assert_msg(isnan(x[i]) || memcmp(&want, &got, 8) == 0,
                          "%s(%a): NaN bits differ from libm's",
                          weft_op_name(op), x[i]);
            continue;
        }
        if (isinf(want) || want == 0 || isinf(got) || got == 0) {
            ck_assert_msg(memcmp(&want, &got, 8) == 0,
                          "%s(%a) is %a, libm %a", weft_op_name(op), x[i],
                          got, want);
            continue;
        }
        int64_t d = ord64(got) - ord64(want);
        d = d < 0 ? -d : d;
        t->inexact += d != 0;
        if (d > t->worst) {
            t->worst = d;
            t->worst_arg = x[i];
        }
    }
    free(y);
}

static void report(const char *what, const tally *t, int64_t bound)
{
    printf("%s: %lld arguments, max error %lld ulp (at %a), %lld not "
           "bitwise the library's\n",
           what, (long long)t->n, (long long)t->worst, t->worst_arg,
           (long long)t->inexact);
    ck_assert_msg(t->worst <= bound, "%s: %lld ulp at %a", what,
                  (long long)t->worst, t->worst_arg);
}

static const double specials[] = {
    0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1.0, -1.0, 0.5, 2.0,
    DBL_MIN, -DBL_MIN, DBL_MAX, -DBL_MAX, 0x1p-1074, -0x1p-1074,
    0x1.ffffffffffffep-1023, FLT_MIN, FLT_MAX, 0x1p-149, 0x1.fffffcp-127,
    /* exp: overflow and underflow edges of both precisions */
    709.782712893383973, 709.782712893384, 709.79, -745.1332191019411,
    -745.1332191019412, -745.14, -708.39641853226408, -708.4, 88.72283935546875,
    88.7228470, 88.73, -87.33654, -103.972076, -103.98, -104.0,
    /* log: around 1 and sqrt(2) */
    0x1.fffffffffffffp-1, 0x1.0000000000001p+0, 0x1.6a09e667f3bcdp+0,
    0x1.6a09e667f3bccp+0, 0x1.6a09ep+0, 0x1.fffffep-1, 0x1.000002p+0,
    1e-300, 1e300, 3.0, 10.0, 100.0, -50.0, 50.0,
};

/* The f32 sweep, with the context flags `flags`, within `bound` ulp. */
static void sweep32(unsigned flags, int64_t bound)
{
    map_flags = flags;
    for (int o = 0; o < 2; o++) {
        weft_op op = o ? WEFT_OP_LOG : WEFT_OP_EXP;
        int64_t n = (int64_t)(0x100000000ull / STRIDE32) + 1;
        int64_t ns = (int64_t)(sizeof specials / sizeof specials[0]);
        float *x = malloc((size_t)(n + ns) * sizeof *x);
        ck_assert_ptr_nonnull(x);
        uint32_t b = 0;
        for (int64_t i = 0; i < n; i++, b += STRIDE32) {
            memcpy(&x[i], &b, 4);
        }
        for (int64_t i = 0; i < ns; i++) {
            x[n + i] = (float)specials[i];
        }
        tally t = {0};
        check32(op, x, n + ns, &t);
        char what[64];
        snprintf(what, sizeof what, "%s f32%s", o ? "log" : "exp",
                 flags ? " (fast math)" : "");
        report(what, &t, bound);
        free(x);
    }
    map_flags = 0;
}

START_TEST(f32_sweep)
{
    sweep32(0, 1);
}
END_TEST

/* With fast math f32 stays in float (Cephes' expf and logf, FMA): within
 * 2 ulp, and the special values still exact. */
START_TEST(f32_sweep_fast)
{
    sweep32(WEFT_FLAG_FAST_MATH, 2);
}
END_TEST

START_TEST(f64_sweep)
{
    for (int o = 0; o < 2; o++) {
        weft_op op = o ? WEFT_OP_LOG : WEFT_OP_EXP;
        int64_t ns = (int64_t)(sizeof specials / sizeof specials[0]);
        int64_t n = 3 * (int64_t)N64 + 2000 + ns;
        double *x = malloc((size_t)n * sizeof *x);
        ck_assert_ptr_nonnull(x);
        int64_t k = 0;
        for (int64_t i = 0; i < N64; i++) {
            uint64_t r = rnd();
            memcpy(&x[k++], &r, 8);
        }
        for (int64_t i = 0; i < N64; i++) {
            double u = (double)(rnd() >> 11) / 9007199254740992.0;
            x[k++] = o ? ldexp(1.0 + u, (int)(rnd() % 2098) - 1074)
                       : -745.2 + u * (709.8 + 745.2);
        }
        for (int64_t i = 0; i < N64; i++) {
            double u = (double)(rnd() >> 11) / 9007199254740992.0;
            x[k++] = o ? 0.5 + 1.5 * u : -2.0 + 4.0 * u;
        }
        for (int i = -1000; i < 1000; i++) {
            x[k++] = o ? 1.0 + i * 0x1p-52 : i * 0x1p-60;
        }
        for (int64_t i = 0; i < ns; i++) {
            x[k++] = specials[i];
        }
        ck_assert_int_eq(k, n);
        tally t = {0};
        check64(op, x, n, &t);
        report(o ? "log f64" : "exp f64", &t, 1);
        free(x);
    }
}
END_TEST

static Suite *vmath_suite(void)
{
    Suite *s = suite_create("vmath");
    TCase *tc = tcase_create("accuracy");
    tcase_set_timeout(tc, 600);
#ifdef WEFT_HAVE_LLVM
    tcase_add_test(tc, f32_sweep);
    tcase_add_test(tc, f32_sweep_fast);
    tcase_add_test(tc, f64_sweep);
#endif
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(vmath_suite)
