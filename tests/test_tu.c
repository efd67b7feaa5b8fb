/*
 * tests/test_tu.c: the test helpers that other tests trust, tested.
 *
 * The differential tests pass when tu_cmp.h finds no difference, so the
 * harness must be shown to find one: tu_float_same's rule at each of its
 * edges (NaN, signed zero, infinities, the absolute, relative and ulp
 * bounds on f16, f32 and f64), tu_cmp_match on arrays that differ in one
 * element, in shape, in leaf type and in a tuple's second leaf (with the
 * message naming the element, its index and both values), and tu_cmp_run
 * on two contexts that agree, including on an error.  tu_rng is splitmix64:
 * its first outputs from seed 0 are the published ones, a seed replays its
 * stream, and the range helpers stay in their ranges and reach both ends.
 */
#include "tu_cmp.h"

/* ------------------------------------------------------------------------
 * tu_rng
 * ---------------------------------------------------------------------- */

START_TEST(rng_splitmix64)
{
    /* splitmix64 from state 0 (Vigna's reference splitmix64.c) */
    tu_rng r = tu_rng_seed(0);
    ck_assert_uint_eq(tu_rng_u64(&r), 0xe220a8397b1dcdafull);
    ck_assert_uint_eq(tu_rng_u64(&r), 0x6e789e6aa1b965f4ull);
    ck_assert_uint_eq(tu_rng_u64(&r), 0x06c45d188009454full);
    tu_rng a = tu_rng_seed(12345), b = tu_rng_seed(12345);
    tu_rng c = tu_rng_seed(12346);
    int same_c = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = tu_rng_u64(&a);
        ck_assert_uint_eq(x, tu_rng_u64(&b));
        same_c += x == tu_rng_u64(&c);
    }
    ck_assert_int_eq(same_c, 0);
}
END_TEST

START_TEST(rng_ranges)
{
    tu_rng r = tu_rng_seed(7);
    bool lo_seen = false, hi_seen = false;
    for (int i = 0; i < 1000; i++) {
        int64_t v = tu_rng_int(&r, -3, 4);
        ck_assert(v >= -3 && v <= 4);
        lo_seen |= v == -3;
        hi_seen |= v == 4;
        double u = tu_rng_unit(&r);
        ck_assert(u >= 0.0 && u < 1.0);
        double x = tu_rng_real(&r, 2.0, 2.5);
        ck_assert(x >= 2.0 && x < 2.5);
    }
    ck_assert(lo_seen && hi_seen);
    /* the whole int64 range: no overflow in the span */
    int64_t e = tu_rng_int(&r, INT64_MIN, INT64_MAX);
    (void)e;
    ck_assert_int_eq(tu_rng_int(&r, 5, 5), 5);
}
END_TEST

START_TEST(rng_fill)
{
    tu_rng r = tu_rng_seed(3);
    enum { N = 4000 };
    int8_t i8[N];
    tu_rng_fill(&r, WEFT_I8, i8, N, -2, 2);
    uint8_t b[N];
    tu_rng_fill(&r, WEFT_BOOL, b, N, 0, 0);
    float f[N];
    tu_rng_fill(&r, WEFT_F32, f, N, -0.5, 0.25);
    double d[N];
    tu_rng_fill(&r, WEFT_F64, d, N, 1, 0); /* lo > hi: [-1, 1) */
    uint16_t u16[N];
    tu_rng_fill(&r, WEFT_U16, u16, N, 1, 0); /* lo > hi: every bit */
    int ones = 0, high = 0;
    for (int i = 0; i < N; i++) {
        ck_assert(i8[i] >= -2 && i8[i] <= 2);
        ck_assert(b[i] <= 1);
        ones += b[i];
        ck_assert(f[i] >= -0.5f && f[i] <= 0.25f);
        ck_assert(d[i] >= -1.0 && d[i] < 1.0);
        high += u16[i] >= 0x8000;
    }
    /* fair coins: 4000 flips land within 6 sigma (sigma ~ 32) of half */
    ck_assert(ones > N / 2 - 200 && ones < N / 2 + 200);
    ck_assert(high > N / 2 - 200 && high < N / 2 + 200);
    /* one stream: the same seed fills the same bytes */
    tu_rng r1 = tu_rng_seed(9), r2 = tu_rng_seed(9);
    void *x = tu_rng_buffer(&r1, WEFT_F16, 100, -4, 4);
    void *y = tu_rng_buffer(&r2, WEFT_F16, 100, -4, 4);
    ck_assert(memcmp(x, y, 200) == 0);
    free(x);
    free(y);
}
END_TEST

/* ------------------------------------------------------------------------
 * tu_float_same
 * ---------------------------------------------------------------------- */

static bool same_f64(double want, double got, tu_tol tol)
{
    return tu_float_same(WEFT_F64, &want, &got, tol);
}

static bool same_f32(float want, float got, tu_tol tol)
{
    return tu_float_same(WEFT_F32, &want, &got, tol);
}

static bool same_f16(uint16_t want, uint16_t got, tu_tol tol)
{
    return tu_float_same(WEFT_F16, &want, &got, tol);
}

START_TEST(float_rule)
{
    tu_tol big = {1e9, 1e9, 1000};
    /* NaN: equal to any NaN, to nothing else, whatever the tolerance */
    ck_assert(same_f64(NAN, -NAN, TU_EXACT));
    ck_assert(!same_f64(NAN, 1.0, big));
    ck_assert(!same_f64(1.0, NAN, big));
    /* exact: the bits; signed zeros differ, but not under a tolerance */
    ck_assert(same_f64(1.5, 1.5, TU_EXACT));
    ck_assert(!same_f64(0.0, -0.0, TU_EXACT));
    ck_assert(same_f64(0.0, -0.0, tu_tol_rel(1e-12)));
    ck_assert(!same_f64(1.0, nextafter(1.0, 2.0), TU_EXACT));
    /* infinities only equal to themselves */
    ck_assert(same_f64(INFINITY, INFINITY, big));
    ck_assert(!same_f64(INFINITY, -INFINITY, big));
    ck_assert(!same_f64(INFINITY, 1e300, big));
    ck_assert(!same_f64(1e300, INFINITY, big));
    /* absolute below magnitude 1, relative above (tu_tol_rel) */
    ck_assert(same_f64(0.5, 0.5 + 0.9e-3, tu_tol_rel(1e-3)));
    ck_assert(!same_f64(0.5, 0.5 + 1.1e-3, tu_tol_rel(1e-3)));
    ck_assert(same_f64(1000.0, 1000.9, tu_tol_rel(1e-3)));
    ck_assert(!same_f64(1000.0, 1001.1, tu_tol_rel(1e-3)));
    /* the larger of the two bounds, not their sum */
    ck_assert(!same_f64(1.0, 1.0 + 1.5e-3, (tu_tol){1e-3, 1e-3, 0}));
    /* ulps on the type's own grid, across zero too */
    float one = 1.0f;
    float up1 = nextafterf(one, 2.0f), up2 = nextafterf(up1, 2.0f);
    ck_assert(same_f32(one, up1, tu_tol_ulps(1)));
    ck_assert(!same_f32(one, up2, tu_tol_ulps(1)));
    ck_assert(same_f32(one, up2, tu_tol_ulps(2)));
    float tiny = nextafterf(0.0f, 1.0f);
    ck_assert(same_f32(tiny, -tiny, tu_tol_ulps(3)));
    ck_assert(!same_f32(tiny, -tiny, tu_tol_ulps(2)));
    ck_assert(same_f16(0x3c00, 0x3c01, tu_tol_ulps(1))); /* 1 and 1 + 2^-10 */
    ck_assert(!same_f16(0x3c00, 0x3c02, tu_tol_ulps(1)));
    ck_assert(same_f16(0x7e00, 0xfe01, TU_EXACT)); /* two NaNs */
}
END_TEST

/* ------------------------------------------------------------------------
 * tu_cmp_match and tu_cmp_run
 * ---------------------------------------------------------------------- */

START_TEST(match_arrays)
{
    tu u;
    tu_open(&u);
    weft_context *c = u.ctx;
    char msg[512];
    tu_rule exact = {.tol = TU_EXACT};
    weft_array *a =
        tu_arr_i(c, WEFT_I32, 2, TU_SH(2, 3), TU_I(1, 2, 3, 4, 5, 6));
    weft_array *b =
        tu_arr_i(c, WEFT_I32, 2, TU_SH(2, 3), TU_I(1, 2, 3, 4, 5, 6));
    ck_assert(tu_cmp_match(c, a, c, b, &exact, msg, sizeof msg));
    weft_array_release(b);
    /* one element off: its index, both values, the count */
    b = tu_arr_i(c, WEFT_I32, 2, TU_SH(2, 3), TU_I(1, 2, 3, 4, -5, 6));
    ck_assert(!tu_cmp_match(c, a, c, b, &exact, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "element 4 [1 1] is -5, expected 5 (1 of 6"),
                  "%s", msg);
    weft_array_release(b);
    /* the shape */
    b = tu_arr_i(c, WEFT_I32, 2, TU_SH(3, 2), TU_I(1, 2, 3, 4, 5, 6));
    ck_assert(!tu_cmp_match(c, a, c, b, &exact, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "extent 0 is 3, expected 2"), "%s", msg);
    weft_array_release(b);
    b = tu_arr_i(c, WEFT_I32, 1, TU_SH(6), TU_I(1, 2, 3, 4, 5, 6));
    ck_assert(!tu_cmp_match(c, a, c, b, &exact, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "rank 1, expected 2"), "%s", msg);
    weft_array_release(b);
    /* the element type, even with equal bytes' values */
    b = tu_arr_i(c, WEFT_U32, 2, TU_SH(2, 3), TU_I(1, 2, 3, 4, 5, 6));
    ck_assert(!tu_cmp_match(c, a, c, b, &exact, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "leaf 0 has type"), "%s", msg);
    weft_array_release(b);
    ck_assert(!tu_cmp_match(c, a, c, NULL, &exact, msg, sizeof msg));
    weft_array_release(a);
    /* floats under a tolerance; empty arrays match */
    a = tu_arr_f(c, WEFT_F32, 1, TU_SH(3), TU_F(1.0, 2.0, 3.0));
    b = tu_arr_f(c, WEFT_F32, 1, TU_SH(3), TU_F(1.0, 2.001, 3.0));
    ck_assert(!tu_cmp_match(c, a, c, b, &exact, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "element 1 [1] is 2.00"), "%s", msg);
    tu_rule loose = {.tol = tu_tol_rel(1e-3)};
    ck_assert(tu_cmp_match(c, a, c, b, &loose, msg, sizeof msg));
    weft_array_release(a);
    weft_array_release(b);
    a = tu_arr_f(c, WEFT_F64, 2, TU_SH(0, 4), NULL);
    b = tu_arr_f(c, WEFT_F64, 2, TU_SH(0, 4), NULL);
    ck_assert(tu_cmp_match(c, a, c, b, &exact, msg, sizeof msg));
    weft_array_release(a);
    weft_array_release(b);
    tu_close(&u);
}
END_TEST

/* A tuple's second leaf differs: found, and named by its leaf; accept may
 * let it pass. */
static bool accept_leaf1(int o, int l, weft_type t, const void *want,
                         const void *got)
{
    (void)o;
    (void)want;
    (void)got;
    return l == 1 && t == WEFT_F64;
}

START_TEST(match_tuples)
{
    tu u;
    tu_open(&u);
    weft_context *c = u.ctx;
    int32_t xs[2] = {7, 8};
    double ys[2] = {0.5, 0.25}, zs[2] = {0.5, 0.75};
    weft_type ts[2] = {WEFT_I32, WEFT_F64};
    tu_host h1 = tu_host_of(2, ts, 1, TU_SH(2), (void *[]){xs, ys});
    tu_host h2 = tu_host_of(2, ts, 1, TU_SH(2), (void *[]){xs, zs});
    weft_array *a = tu_host_array(c, &h1), *b = tu_host_array(c, &h2);
    char msg[512];
    tu_rule rule = {.tol = TU_EXACT};
    ck_assert(!tu_cmp_match(c, a, c, b, &rule, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "leaf 1 element 1 [1] is 0.75, expected 0.25"),
                  "%s", msg);
    rule.accept = accept_leaf1;
    ck_assert(tu_cmp_match(c, a, c, b, &rule, msg, sizeof msg));
    weft_array_release(a);
    weft_array_release(b);
    tu_close(&u);
}
END_TEST

/* xs ! k for a scalar parameter k: out of bounds past the end. */
static int build_index(weft_program *p, weft_context *ctx, const void *arg,
                       weft_acc **res)
{
    (void)ctx;
    (void)arg;
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_acc *k = weft_param(p, WEFT_I64, 0);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_mul(weft_arg(f, 0), weft_f32(p, 3.0f)));
    res[0] = weft_map(f, xs);
    res[1] = weft_unit(weft_at_linear(xs, weft_the(k)));
    return 2;
}

START_TEST(run_sides)
{
    /* two interpreter contexts: they must agree, on values and on an
     * error */
    weft_config cfg[2] = {tu_cmp_config(WEFT_BACKEND_INTERP, 1, 0),
                          tu_cmp_config(WEFT_BACKEND_INTERP, 2, 0)};
    const char *names[2] = {"one", "two"};
    tu_cmp c;
    tu_cmp_open(&c, 2, cfg, names);
    tu_cmp_case(&c, "index");
    tu_cmp_build(&c, build_index, NULL);
    tu_rng r = tu_rng_seed(1);
    tu_host in[2] = {
        tu_host_random(&r, 1, (weft_type[]){WEFT_F32}, 1, TU_SH(100), -1, 1),
        tu_host_alloc(1, (weft_type[]){WEFT_I64}, 0, NULL)};
    int64_t *k = in[1].data[0];
    *k = 99;
    ck_assert_int_eq(tu_cmp_run(&c, in, 2, TU_EXACT), WEFT_OK);
    ck_assert_str_eq(c.msg[0], "");
    *k = 100;
    ck_assert_int_eq(tu_cmp_run(&c, in, 2, TU_EXACT), WEFT_ERR_OUT_OF_BOUNDS);
    ck_assert_int_eq(c.status[1], WEFT_ERR_OUT_OF_BOUNDS);
    ck_assert(c.msg[0][0] != '\0' && c.msg[1][0] != '\0');
    tu_host_free(&in[0]);
    tu_host_free(&in[1]);
    tu_cmp_close(&c);
}
END_TEST

static Suite *tu_suite(void)
{
    Suite *s = suite_create("tu");
    TCase *tc = tcase_create("tu");
    tcase_add_test(tc, rng_splitmix64);
    tcase_add_test(tc, rng_ranges);
    tcase_add_test(tc, rng_fill);
    tcase_add_test(tc, float_rule);
    tcase_add_test(tc, match_arrays);
    tcase_add_test(tc, match_tuples);
    tcase_add_test(tc, run_sides);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(tu_suite)
