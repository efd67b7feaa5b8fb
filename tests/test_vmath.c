/*
 * tests/test_vmath.c: the accuracy of the CPU backend's exp, log, sin, cos
 * and pow (codegen/vmath.c), against the C library the interpreter calls.
 *
 * A CPU program `map f xs` (pow: `zipWith pow xs ys`) runs over a sweep of
 * arguments and every result is compared with glibc's expf / logf / sinf /
 * cosf / powf / exp / log / sin / cos (what lib/interp_scalar.c computes)
 * in ulps, counted on the ordered integer images of the two results.  The
 * sweeps:
 *
 *   f32  exp, log, sin, cos: every 1021st bit pattern of the 2^32
 *        (positive and negative, normal, subnormal, NaN, infinite), so
 *        about 4.2 million arguments (a 16th of that in sanitizer builds);
 *   f64  exp, log: half a million random bit patterns, as many uniform
 *        arguments in the range where the result is finite and not zero
 *        (exp: -745 to 710; log: 2^-1074 to 2^1024 spread over the
 *        exponents), and as many around 1 (log) and 0 (exp), and 2000
 *        within ulps of them;
 *   f64  sin, cos: random bit patterns, uniform below 10, 1e5 and 2^19 pi/2
 *        (where the branch-free code ends), within 64 ulps of multiples of
 *        pi/2 (the reduction cancels), on both sides of 2^19 pi/2;
 *   pow  f32: x over every 8168th bit pattern, each with four y (an
 *        integer, random bits, uniform in [-4, 4], and one that puts the
 *        result anywhere from overflow to underflow), and every pair of
 *        the specials (0, -0, infinities, NaN, negative x with integer and
 *        other y, 1 with NaN, ...);
 *   pow  f64: N64 pairs each of: x over all exponents with y putting the
 *        result anywhere from overflow to underflow, x in (0, 10] with y in
 *        [-50, 50], |x| within 2^-32 of 1 with y up to 2^61, results within
 *        2^-20 (relative, in the exponent) of overflow, the smallest normal
 *        and the smallest subnormal, negative x with integer y, random bit
 *        patterns (twice); and every pair of the specials and a few more;
 *   all  the special values: +-0, +-inf, NaN, the smallest and largest
 *        subnormals and normals, where exp overflows and underflows,
 *        around multiples of pi/2 and 2^19 pi/2.
 *
 * Required: NaN exactly where the library gives NaN, infinities and zeros
 * (with their signs) exactly, everything else within 1 ulp; and with
 * WEFT_FLAG_FAST_MATH, where f32 exp and log are computed in float, within
 * 2 ulp.  The test prints the largest error seen and how many results were
 * not the library's bit for bit.  spmd_agrees checks that vector (SPMD)
 * and scalar code give the same bits for sin, cos and pow.  The
 * differential tests (test_cpu.c, prims) run the same functions against
 * the interpreter itself.
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

static tu_rng rng = {88172645463325252ull};

static uint64_t rnd(void)
{
    return tu_rng_u64(&rng);
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

/* Map op over n arguments of type t (floats or doubles at in, and for pow
 * the exponents at in2, else NULL) on the CPU backend; the results are
 * written to out. */
static unsigned map_flags; /* WEFT_FLAG_FAST_MATH for the fast sweeps */
/* When set, the function to map instead of op (spmd_control). */
static weft_fun *(*map_fun)(weft_program *p, weft_context *ctx, weft_type t);

static void run_map(weft_op op, weft_type t, const void *in, const void *in2,
                    int64_t n, void *out)
{
    tu u;
    weft_config cfg = weft_config_default();
    cfg.threads = 2;
    /* DT_TIER: the optimised code, whatever the timing.  (The quick code
     * of tiered compilation computes the same values, but may commute the
     * operands of an operation on two NaNs and so give the other NaN's
     * sign or payload, which weft leaves unspecified: on the AVX-512 host
     * pow of f64 (-NaN, -NaN) was +NaN in one of SPMD's and scalar code's
     * quick code and -NaN in the other; spmd_agrees compares bits.) */
    cfg.flags = WEFT_FLAG_NO_ENV | DT_TIER | map_flags;
    TU_OK(weft_context_create(&cfg, &u.ctx));
    TU_OK(weft_program_create(u.ctx, &u.p));
    weft_acc *xs = weft_param(u.p, t, 1);
    weft_acc *r;
    weft_array *a[2] = {NULL, NULL}, *res = NULL;
    TU_OK(weft_array_from_host(u.ctx, t, 1, &n, &in, &a[0]));
    if (in2) {
        weft_acc *ys = weft_param(u.p, t, 1);
        r = weft_zipwith(tu_fun_op2(u.p, op, t), xs, ys);
        TU_OK(weft_array_from_host(u.ctx, t, 1, &n, &in2, &a[1]));
    } else {
        r = weft_map(map_fun ? map_fun(u.p, u.ctx, t) : tu_fun_op1(u.p, op, t),
                     xs);
    }
    TU_OK(tu_run(u.p, &r, 1, a, in2 ? 2 : 1, &res, 1));
    memcpy(out, weft_array_data(res, 0), (size_t)n * weft_type_size(t));
    weft_array_release(a[0]);
    weft_array_release(a[1]);
    weft_array_release(res);
    tu_close(&u);
}

typedef struct tally {
    int64_t worst; /* largest ulp error */
    double worst_arg;
    double worst_arg2; /* pow's exponent there */
    bool binary;       /* pow: worst_arg2 counts */
    int64_t inexact;   /* results not bit for bit the library's */
    int64_t n;
} tally;

/* The float as the interpreter holds it: through a double, which quiets a
 * signalling NaN (as lib/interp_scalar.c's arguments are). */
static float via_double(float x)
{
    volatile double d = x;
    return (float)d;
}

/* What lib/interp_scalar.c computes for op on f32. */
static float ref32(weft_op op, float x, float y)
{
    switch (op) {
    case WEFT_OP_EXP: return expf(x);
    case WEFT_OP_LOG: return logf(x);
    case WEFT_OP_SIN: return sinf(x);
    case WEFT_OP_COS: return cosf(x);
    default: return powf(via_double(x), via_double(y));
    }
}

static double ref64(weft_op op, double x, double y)
{
    switch (op) {
    case WEFT_OP_EXP: return exp(x);
    case WEFT_OP_LOG: return log(x);
    case WEFT_OP_SIN: return sin(x);
    case WEFT_OP_COS: return cos(x);
    default: return pow(x, y);
    }
}

/* Count one result against the library's: NaN exactly where it gives NaN,
 * with its bits where the arguments are not NaN (a NaN the function makes,
 * such as log of a negative, has the library's bits, which a bitcast can
 * see); infinities and zeros bit for bit; else the ulp distance (ord: the
 * ordered integer images). */
static void count(tally *t, weft_op op, bool nan_args, bool nan_got,
                  bool nan_want, bool exact_want, bool same_bits,
                  int64_t ord_got, int64_t ord_want, double x, double y)
{
    t->n++;
    if (nan_want || nan_got) {
        ck_assert_msg(nan_want && nan_got, "%s(%a, %a): NaN in one only",
                      weft_op_name(op), x, y);
        ck_assert_msg(nan_args || same_bits,
                      "%s(%a, %a): NaN bits differ from the library's",
                      weft_op_name(op), x, y);
        return;
    }
    if (exact_want) {
        ck_assert_msg(same_bits, "%s(%a, %a): not the library's %s",
                      weft_op_name(op), x, y, "infinity or zero");
        return;
    }
    int64_t d = ord_got - ord_want;
    d = d < 0 ? -d : d;
    t->inexact += d != 0;
    if (d > t->worst) {
        t->worst = d;
        t->worst_arg = x;
        t->worst_arg2 = y;
    }
}

/* op over x (and pow's y, else NULL), n floats, counted into t. */
static void check32(weft_op op, const float *x, const float *y, int64_t n,
                    tally *t)
{
    float *r = malloc((size_t)n * sizeof *r);
    ck_assert_ptr_nonnull(r);
    t->binary = y != NULL;
    run_map(op, WEFT_F32, x, y, n, r);
    for (int64_t i = 0; i < n; i++) {
        float yi = y ? y[i] : 0;
        float want = ref32(op, x[i], yi);
        float got = r[i];
        count(t, op, isnan(x[i]) || isnan(yi), isnan(got), isnan(want),
              isinf(want) || want == 0 || isinf(got) || got == 0,
              memcmp(&want, &got, 4) == 0, ord32(got), ord32(want), x[i], yi);
    }
    free(r);
}

static void check64(weft_op op, const double *x, const double *y, int64_t n,
                    tally *t)
{
    double *r = malloc((size_t)n * sizeof *r);
    ck_assert_ptr_nonnull(r);
    t->binary = y != NULL;
    run_map(op, WEFT_F64, x, y, n, r);
    for (int64_t i = 0; i < n; i++) {
        double yi = y ? y[i] : 0;
        double want = ref64(op, x[i], yi);
        double got = r[i];
        count(t, op, isnan(x[i]) || isnan(yi), isnan(got), isnan(want),
              isinf(want) || want == 0 || isinf(got) || got == 0,
              memcmp(&want, &got, 8) == 0, ord64(got), ord64(want), x[i], yi);
    }
    free(r);
}

static void report(const char *what, const tally *t, int64_t bound)
{
    char at[64];
    if (t->binary) {
        snprintf(at, sizeof at, "%a, %a", t->worst_arg, t->worst_arg2);
    } else {
        snprintf(at, sizeof at, "%a", t->worst_arg);
    }
    printf("%s: %lld arguments, max error %lld ulp (at %s), %lld not "
           "bitwise the library's\n",
           what, (long long)t->n, (long long)t->worst, at,
           (long long)t->inexact);
    ck_assert_msg(t->worst <= bound, "%s: %lld ulp at %s", what,
                  (long long)t->worst, at);
}

static const double specials[] = {
    0.0,
    -0.0,
    INFINITY,
    -INFINITY,
    NAN,
    -NAN,
    1.0,
    -1.0,
    0.5,
    2.0,
    DBL_MIN,
    -DBL_MIN,
    DBL_MAX,
    -DBL_MAX,
    0x1p-1074,
    -0x1p-1074,
    0x1.ffffffffffffep-1023,
    FLT_MIN,
    FLT_MAX,
    0x1p-149,
    0x1.fffffcp-127,
    /* exp: overflow and underflow edges of both precisions */
    709.782712893383973,
    709.782712893384,
    709.79,
    -745.1332191019411,
    -745.1332191019412,
    -745.14,
    -708.39641853226408,
    -708.4,
    88.72283935546875,
    88.7228470,
    88.73,
    -87.33654,
    -103.972076,
    -103.98,
    -104.0,
    /* log: around 1 and sqrt(2) */
    0x1.fffffffffffffp-1,
    0x1.0000000000001p+0,
    0x1.6a09e667f3bcdp+0,
    0x1.6a09e667f3bccp+0,
    0x1.6a09ep+0,
    0x1.fffffep-1,
    0x1.000002p+0,
    1e-300,
    1e300,
    3.0,
    10.0,
    100.0,
    -50.0,
    50.0,
};

/* sin and cos: around the multiples of pi/2 and the end of the
 * branch-free range, 2^19 pi/2 (0x1.921fb54442d18p+19). */
static const double trig_specials[] = {
    0x1.921fb54442d18p+0,
    0x1.921fb54442d18p+1,
    0x1.2d97c7f3321d2p+2,
    0x1.921fb54442d18p+2,
    -0x1.921fb54442d18p+0,
    0x1.921fb54442d18p+19,
    0x1.921fb54442d19p+19,
    0x1.921fb54442d17p+19,
    -0x1.921fb54442d18p+19,
    -0x1.921fb54442d19p+19,
    0x1.921fbp+19,
    0x1.921fcp+19,
    0x1p20,
    0x1p30,
    0x1p-30,
    0x1p-27,
    0x1.fffffep-28,
    0x1.33333p-2,
    0x1.9p-1,
    0x1.90001p-1,
    0.78539816339744828,
    0.78539819,
    1e22,
    6381956970095103.0 * 0x1p797,
    0x1.6a09ep-512,
    0x1.2d97cp+2,
    0x1.921fb6p+1,
    0x1.921fb6p+0,
    1e5,
    -1e5,
};

static const weft_op ops1[4] = {WEFT_OP_EXP, WEFT_OP_LOG, WEFT_OP_SIN,
                                WEFT_OP_COS};

/* The specials of every list, appended at x + k as type t (f32 or f64);
 * returns how many. */
static int64_t add_specials(weft_type t, void *x, int64_t k)
{
    int64_t n0 = (int64_t)(sizeof specials / sizeof specials[0]);
    int64_t n1 = (int64_t)(sizeof trig_specials / sizeof trig_specials[0]);
    if (!x) {
        return n0 + n1;
    }
    for (int64_t i = 0; i < n0 + n1; i++) {
        double v = i < n0 ? specials[i] : trig_specials[i - n0];
        if (t == WEFT_F32) {
            ((float *)x)[k + i] = (float)v;
        } else {
            ((double *)x)[k + i] = v;
        }
    }
    return n0 + n1;
}

/* The f32 sweep of exp, log, sin and cos, with the context flags `flags`,
 * within `bound` ulp. */
static void sweep32(unsigned flags, int64_t bound)
{
    map_flags = flags;
    for (int o = 0; o < 4; o++) {
        weft_op op = ops1[o];
        int64_t n = (int64_t)(0x100000000ull / STRIDE32) + 1;
        int64_t ns = add_specials(WEFT_F32, NULL, 0);
        float *x = malloc((size_t)(n + ns) * sizeof *x);
        ck_assert_ptr_nonnull(x);
        uint32_t b = 0;
        for (int64_t i = 0; i < n; i++, b += STRIDE32) {
            memcpy(&x[i], &b, 4);
        }
        add_specials(WEFT_F32, x, n);
        tally t = {0};
        check32(op, x, NULL, n + ns, &t);
        char what[64];
        snprintf(what, sizeof what, "%s f32%s", weft_op_name(op),
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

/* With fast math f32 exp and log stay in float (Cephes' expf and logf,
 * FMA): within 2 ulp, and the special values still exact; sin and cos are
 * the double code with contraction. */
START_TEST(f32_sweep_fast)
{
    sweep32(WEFT_FLAG_FAST_MATH, 2);
}
END_TEST

static double uniform(double lo, double hi)
{
    double u = (double)(rnd() >> 11) / 9007199254740992.0;
    return lo + (hi - lo) * u;
}

/* Room for n doubles, the first N64 random bit patterns (*k: how many). */
static double *args64(int64_t n, int64_t *k)
{
    double *x = malloc((size_t)n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (*k = 0; *k < N64; (*k)++) {
        uint64_t r = rnd();
        memcpy(&x[*k], &r, 8);
    }
    return x;
}

START_TEST(f64_sweep)
{
    for (int o = 0; o < 2; o++) {
        weft_op op = ops1[o];
        int64_t ns = add_specials(WEFT_F64, NULL, 0);
        int64_t n = 3 * (int64_t)N64 + 2000 + ns;
        int64_t k = 0;
        double *x = args64(n, &k);
        for (int64_t i = 0; i < N64; i++) {
            double u = uniform(0, 1);
            x[k++] = o ? ldexp(1.0 + u, (int)(rnd() % 2098) - 1074)
                       : -745.2 + u * (709.8 + 745.2);
        }
        for (int64_t i = 0; i < N64; i++) {
            x[k++] = o ? uniform(0.5, 2.0) : uniform(-2.0, 2.0);
        }
        for (int i = -1000; i < 1000; i++) {
            x[k++] = o ? 1.0 + i * 0x1p-52 : i * 0x1p-60;
        }
        k += add_specials(WEFT_F64, x, k);
        ck_assert_int_eq(k, n);
        tally t = {0};
        check64(op, x, NULL, n, &t);
        report(o ? "log f64" : "exp f64", &t, 1);
        free(x);
    }
}
END_TEST

/* sin and cos of f64: random bit patterns (mostly beyond the branch-free
 * range or tiny), uniform arguments below 10, 1e5 and the end of the
 * range 2^19 pi/2, within ulps of multiples of pi/2 (where the reduction
 * cancels), on both sides of the end of the range, and the specials. */
START_TEST(f64_trig)
{
    const double lim = 0x1.921fb54442d18p+19;
    for (int o = 2; o < 4; o++) {
        weft_op op = ops1[o];
        int64_t ns = add_specials(WEFT_F64, NULL, 0);
        int64_t n = 6 * (int64_t)N64 + ns;
        int64_t k = 0;
        double *x = args64(n, &k);
        for (int64_t i = 0; i < N64; i++) {
            x[k++] = uniform(-10, 10);
        }
        for (int64_t i = 0; i < N64; i++) {
            x[k++] = uniform(-1e5, 1e5);
        }
        for (int64_t i = 0; i < N64; i++) {
            x[k++] = uniform(-lim, lim);
        }
        /* k pi/2 rounded, and up to 64 ulps either side */
        for (int64_t i = 0; i < N64; i++) {
            double m = (double)(int64_t)(rnd() % (1u << 19)) + 1;
            double v = m * 1.57079632679489661923;
            int64_t b;
            memcpy(&b, &v, 8);
            b += (int64_t)(rnd() % 129) - 64;
            memcpy(&v, &b, 8);
            x[k++] = rnd() & 1 ? -v : v;
        }
        /* around the end of the range: 2^19 pi/2 (1 +- 2^-20 u) */
        for (int64_t i = 0; i < N64; i++) {
            x[k++] = lim * (1 + uniform(-0x1p-20, 0x1p-20));
        }
        k += add_specials(WEFT_F64, x, k);
        ck_assert_int_eq(k, n);
        tally t = {0};
        check64(op, x, NULL, n, &t);
        report(o == 2 ? "sin f64" : "cos f64", &t, 1);
        free(x);
    }
}
END_TEST

/* pow of f32 (x, y): for x over a sweep of bit patterns (both signs,
 * subnormals, infinities, NaN), y an integer in [-12, 12], random bits,
 * uniform in [-4, 4], and t / log2(x) for t uniform in [-160, 140] (the
 * results then span overflow, the normals, the subnormals and underflow
 * to 0); and every pair of the specials. */
static void sweep_pow(unsigned flags, int64_t bound)
{
    map_flags = flags;
    int64_t nx = (int64_t)(0x100000000ull / (STRIDE32 * 8)) + 1;
    int64_t ns = add_specials(WEFT_F32, NULL, 0);
    int64_t n = 4 * nx + ns * ns;
    float *x = malloc((size_t)n * sizeof *x);
    float *y = malloc((size_t)n * sizeof *y);
    float *sp = malloc((size_t)ns * sizeof *sp);
    ck_assert(x && y && sp);
    int64_t k = 0;
    uint32_t b = 12345;
    for (int64_t i = 0; i < nx; i++, b += STRIDE32 * 8) {
        float xi;
        memcpy(&xi, &b, 4);
        uint32_t r = (uint32_t)rnd();
        float yr;
        memcpy(&yr, &r, 4);
        double l2 = log2(fabs((double)xi));
        float yt = (float)(uniform(-160, 140) / l2);
        float ys[4] = {(float)((int)(rnd() % 25) - 12), yr,
                       (float)uniform(-4, 4), yt};
        for (int j = 0; j < 4; j++) {
            x[k] = xi;
            y[k++] = ys[j];
        }
    }
    add_specials(WEFT_F32, sp, 0);
    for (int64_t i = 0; i < ns; i++) {
        for (int64_t j = 0; j < ns; j++) {
            x[k] = sp[i];
            y[k++] = sp[j];
        }
    }
    ck_assert_int_eq(k, n);
    tally t = {0};
    check32(WEFT_OP_POW, x, y, n, &t);
    report(flags ? "pow f32 (fast math)" : "pow f32", &t, bound);
    free(x);
    free(y);
    free(sp);
    map_flags = 0;
}

START_TEST(f32_pow)
{
    sweep_pow(0, 1);
}
END_TEST

START_TEST(f32_pow_fast)
{
    sweep_pow(WEFT_FLAG_FAST_MATH, 2);
}
END_TEST

/* x with a random sign (when `sign`) and exponent in [elo, ehi]. */
static double rnd_x(int elo, int ehi, bool sign)
{
    int e = elo + (int)(rnd() % (uint64_t)(ehi - elo + 1));
    double x = ldexp(uniform(1, 2), e);
    return sign && rnd() & 1 ? -x : x;
}

/* pow of f64 (x, y), N64 pairs of each kind: y = t / log2|x| with t
 * uniform in [-1100, 1050] (results from overflow through the subnormals
 * to underflow; negative x with such y gives NaN) and x over every
 * exponent; x in (0, 10] and y in [-50, 50]; |x| within 2^-32 of 1 and y
 * = t / log|x| with t in [-750, 712] (y up to 2^61); t within 2^-20 of
 * 1024, -1022 and -1074 (the edges of overflow, the normals and the
 * subnormals); negative x with integer y; random bit patterns; and every
 * pair of the specials and a few more (odd and even integers near 2^53,
 * the thresholds, a signalling NaN: pow(sNaN, 0) is glibc's NaN). */
START_TEST(f64_pow)
{
    static const double more[] = {-3.0,
                                  -2.0,
                                  -0.5,
                                  0.25,
                                  0x1.fffffffffffffp52,
                                  -0x1.fffffffffffffp52,
                                  0x1p53,
                                  0x1p63,
                                  1e308,
                                  -1e308,
                                  1075.0,
                                  -1075.0,
                                  1024.0,
                                  -1022.0,
                                  0x1.0000000000001p0,
                                  -0x1.fffffffffffffp-1,
                                  __builtin_nans("")};
    int64_t nm = (int64_t)(sizeof more / sizeof more[0]);
    int64_t ns = add_specials(WEFT_F64, NULL, 0) + nm;
    int64_t n = 7 * (int64_t)N64 + ns * ns;
    double *x = malloc((size_t)n * sizeof *x);
    double *y = malloc((size_t)n * sizeof *y);
    double *sp = malloc((size_t)ns * sizeof *sp);
    ck_assert(x && y && sp);
    int64_t k = 0;
    for (int64_t i = 0; i < N64; i++, k++) {
        x[k] = rnd_x(-1074, 1023, true);
        y[k] = uniform(-1100, 1050) / log2(fabs(x[k]));
        y[k] = i % 3 ? y[k] : round(y[k]);
    }
    for (int64_t i = 0; i < N64; i++, k++) {
        x[k] = uniform(0, 10);
        y[k] = uniform(-50, 50);
    }
    for (int64_t i = 0; i < N64; i++, k++) {
        x[k] = (rnd() & 1 ? 1 : -1) * (1 + uniform(-0x1p-32, 0x1p-32));
        y[k] = uniform(-750, 712) / log(fabs(x[k]));
        y[k] = i % 4 ? y[k] : round(y[k]);
    }
    for (int64_t i = 0; i < N64; i++, k++) {
        static const double edge[3] = {1024, -1022, -1074};
        x[k] = rnd_x(-1074, 1023, false);
        double l2 = log2(x[k]);
        y[k] = edge[i % 3] * (1 + uniform(-0x1p-20, 0x1p-20)) / l2;
        if (i % 5 == 0 && fabs(y[k]) < 0x1p52) {
            /* an integer y and x with the sign that makes it odd or not */
            y[k] = round(y[k]);
            x[k] = rnd() & 1 ? -x[k] : x[k];
        }
    }
    for (int64_t i = 0; i < N64; i++, k++) {
        x[k] = -uniform(0, 1) * (i % 2 ? 100 : 2);
        y[k] = (double)((int64_t)(rnd() % 2001) - 1000);
    }
    for (int64_t i = 0; i < 2 * (int64_t)N64; i++, k++) {
        uint64_t a = rnd(), b = rnd();
        memcpy(&x[k], &a, 8);
        memcpy(&y[k], &b, 8);
        /* half the exponents small enough for a result not 0 or inf */
        y[k] = i % 2 ? ldexp(y[k], -1000) : y[k];
    }
    add_specials(WEFT_F64, sp, 0);
    memcpy(sp + ns - nm, more, sizeof more);
    for (int64_t i = 0; i < ns; i++) {
        for (int64_t j = 0; j < ns; j++, k++) {
            x[k] = sp[i];
            y[k] = sp[j];
        }
    }
    ck_assert_int_eq(k, n);
    tally t = {0};
    check64(WEFT_OP_POW, x, y, n, &t);
    report("pow f64", &t, 1);
    free(x);
    free(y);
    free(sp);
}
END_TEST

/* SPMD code (spmd.c, the default) and scalar code (WEFT_FLAG_NO_SPMD) give
 * the same bits for sin, cos and pow of f32 and f64: the vector
 * lanes run the scalar code's operations (cpu_vmath), and a lane beyond
 * the branch-free range takes the library's value in both, whatever its
 * neighbours.  The arguments: random bit patterns, uniform below 10 and
 * 1e6 (so vectors that mix both paths), and the specials. */
START_TEST(spmd_agrees)
{
    int64_t n = 3 * 4099 + add_specials(WEFT_F64, NULL, 0);
    for (int o = 0; o < 6; o++) {
        weft_op op = o < 2 ? ops1[2 + o] : o < 4 ? ops1[o] : WEFT_OP_POW;
        weft_type t = o == 2 || o == 3 || o == 5 ? WEFT_F64 : WEFT_F32;
        size_t w = weft_type_size(t);
        double *x = malloc((size_t)n * 8), *y = malloc((size_t)n * 8);
        char *r[2] = {malloc((size_t)n * w), malloc((size_t)n * w)};
        ck_assert(x && y && r[0] && r[1]);
        for (int64_t i = 0; i < 3 * 4099; i++) {
            uint64_t b = rnd();
            double v = i % 3 == 0 ? uniform(-10, 10) : uniform(-1e6, 1e6);
            if (i % 3 == 2) {
                memcpy(&v, &b, 8);
                v = t == WEFT_F32 ? (double)(float)ldexp(v, -900) : v;
            }
            x[i] = op == WEFT_OP_POW && i % 2 ? fabs(v) : v;
            /* f64 pow: also exponents that reach overflow and underflow */
            y[i] = o == 5 && i % 4 == 1 ? uniform(-300, 300) : uniform(-3, 3);
        }
        add_specials(WEFT_F64, x, 3 * 4099);
        add_specials(WEFT_F64, y, 3 * 4099);
        if (t == WEFT_F32) {
            for (int64_t i = 0; i < n; i++) {
                ((float *)x)[i] = (float)x[i];
                ((float *)y)[i] = (float)y[i];
            }
        }
        for (int s = 0; s < 2; s++) {
            map_flags = s ? WEFT_FLAG_NO_SPMD : 0;
            run_map(op, t, x, op == WEFT_OP_POW ? y : NULL, n, r[s]);
        }
        map_flags = 0;
        for (int64_t i = 0; i < n; i++) {
            ck_assert_msg(memcmp(r[0] + i * w, r[1] + i * w, w) == 0,
                          "%s %s, element %lld: SPMD and scalar code differ",
                          weft_op_name(op), t == WEFT_F32 ? "f32" : "f64",
                          (long long)i);
        }
        free(x);
        free(y);
        free(r[0]);
        free(r[1]);
    }
}
END_TEST

/* \x -> (if x > 0 then sin x else cos (2 x)) + v, where v is the state of
 * a loop that runs while v < 1e9 and at most 4 times (a varying trip
 * count) with v' = 20 v + 3 + sin v + pow(v / 1e9, 0.3): sin beyond 2^19
 * pi/2 in some lanes of later iterations only, so its branch is taken
 * inside a masked loop and a varying conditional. */
static weft_fun *control_fun(weft_program *p, weft_context *ctx, weft_type t)
{
    weft_type st = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I32, t});
    weft_fun *cond = weft_fun1(p, st);
    weft_exp *s = weft_arg(cond, 0);
    weft_fun_return(cond, weft_and(weft_lt(weft_get(s, 0), weft_i32(p, 4)),
                                   weft_lt(weft_get(s, 1), weft_f32(p, 1e9f))));
    weft_fun *body = weft_fun1(p, st);
    s = weft_arg(body, 0);
    weft_exp *v = weft_get(s, 1);
    weft_exp *nv =
        weft_add(weft_add(weft_mul(v, weft_f32(p, 20)), weft_f32(p, 3)),
                 weft_add(weft_sin(v), weft_pow(weft_fdiv(v, weft_f32(p, 1e9f)),
                                                weft_f32(p, 0.3f))));
    weft_exp *next[2] = {weft_add(weft_get(s, 0), weft_i32(p, 1)), nv};
    weft_fun_return(body, weft_tuple(p, 2, next));
    weft_fun *f = weft_fun1(p, t);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *init[2] = {weft_i32(p, 0), weft_abs(x)};
    weft_exp *loop =
        weft_get(weft_while(cond, body, weft_tuple(p, 2, init)), 1);
    weft_exp *c = weft_cond(weft_gt(x, weft_f32(p, 0)), weft_sin(x),
                            weft_cos(weft_mul(x, weft_f32(p, 2))));
    weft_fun_return(f, weft_add(c, loop));
    return f;
}

/* The same agreement for control_fun over f32: sin, cos and pow in a
 * varying conditional and a masked loop. */
START_TEST(spmd_control)
{
    int64_t n = 4099;
    float *x = malloc((size_t)n * 4);
    float *r[2] = {malloc((size_t)n * 4), malloc((size_t)n * 4)};
    ck_assert(x && r[0] && r[1]);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)(i % 5 == 0 ? uniform(-1e6, 1e6) : uniform(-1e3, 1e3));
    }
    map_fun = control_fun;
    for (int s = 0; s < 2; s++) {
        map_flags = s ? WEFT_FLAG_NO_SPMD : 0;
        run_map(WEFT_OP_SIN, WEFT_F32, x, NULL, n, r[s]);
    }
    map_fun = NULL;
    map_flags = 0;
    ck_assert_msg(memcmp(r[0], r[1], (size_t)n * 4) == 0,
                  "SPMD and scalar code differ");
    free(x);
    free(r[0]);
    free(r[1]);
}
END_TEST

/* fold (+) 0 (map sin xs) and the same with cos, f32 and f64: the SPMD
 * fold (sin and cos count as costly, skeletons-ir/spmd.c, so their
 * elements are computed over lanes and added in order) gives the scalar
 * loop's bits, huge arguments (the library's lanes) included. */
START_TEST(spmd_fold)
{
    int64_t n = 5 * 4099;
    for (int o = 0; o < 4; o++) {
        weft_op op = o % 2 ? WEFT_OP_COS : WEFT_OP_SIN;
        weft_type t = o < 2 ? WEFT_F32 : WEFT_F64;
        size_t w = weft_type_size(t);
        void *x = malloc((size_t)n * w);
        char r[2][8];
        ck_assert(x);
        for (int64_t i = 0; i < n; i++) {
            double v = i % 97 == 0 ? uniform(-1e9, 1e9) : uniform(-50, 50);
            if (t == WEFT_F32) {
                ((float *)x)[i] = (float)v;
            } else {
                ((double *)x)[i] = v;
            }
        }
        for (int s = 0; s < 2; s++) {
            tu u;
            weft_config cfg = weft_config_default();
            cfg.threads = 2;
            cfg.flags = WEFT_FLAG_NO_ENV | (s ? WEFT_FLAG_NO_SPMD : 0);
            TU_OK(weft_context_create(&cfg, &u.ctx));
            TU_OK(weft_program_create(u.ctx, &u.p));
            weft_acc *xs = weft_param(u.p, t, 1);
            weft_exp *z = t == WEFT_F32 ? weft_f32(u.p, 0) : weft_f64(u.p, 0);
            weft_acc *f = weft_fold(tu_fun_op2(u.p, WEFT_OP_ADD, t), z,
                                    weft_map(tu_fun_op1(u.p, op, t), xs));
            weft_array *a = NULL, *res = NULL;
            const void *in = x;
            TU_OK(weft_array_from_host(u.ctx, t, 1, &n, &in, &a));
            TU_OK(tu_run(u.p, &f, 1, &a, 1, &res, 1));
            memcpy(r[s], weft_array_data(res, 0), w);
            weft_array_release(a);
            weft_array_release(res);
            tu_close(&u);
        }
        ck_assert_msg(memcmp(r[0], r[1], w) == 0,
                      "fold of %s %s: SPMD and scalar code differ",
                      weft_op_name(op), t == WEFT_F32 ? "f32" : "f64");
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
    tcase_add_test(tc, spmd_fold);
    tcase_add_test(tc, f64_trig);
    tcase_add_test(tc, f32_pow);
    tcase_add_test(tc, f32_pow_fast);
    tcase_add_test(tc, f64_pow);
    tcase_add_test(tc, spmd_agrees);
    tcase_add_test(tc, spmd_control);
#endif
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(vmath_suite)
