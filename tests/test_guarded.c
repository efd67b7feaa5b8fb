/*
 * tests/test_guarded.c: a term that may fail and that only a branch uses is
 * evaluated only when that branch runs (issue 10).
 *
 * Sharing recovery binds a term used twice once, at the lowest point that
 * encloses its uses.  For a term that may fail (integer division, `!`, `!!`,
 * a conversion out of range) that point must not lie outside a conditional
 * context that guards it: the branches of cond, the right side of && and
 * ||, the functions of while, and the scalar functions of array
 * operations (which may run for no element at all); and fusion does not
 * float a let out of a branch of acond.  Each case is a
 * program whose guards keep every failing evaluation from running; it must
 * give the expected values on the interpreter and on the CPU backend.
 * Terms that cannot fail are still shared (dump counts), and a failing term
 * that every path evaluates is still bound once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif

#include "tu.h"

/* The backends each case runs on. */
static const weft_backend backends[] = TU_BACKENDS;
enum { NBACKEND = sizeof backends / sizeof backends[0] };

/* Run results[0..n-1] of u's program on in, expecting OK. */
#define RUN(u, b, rs, n, in, nin, out)                                         \
    do {                                                                       \
        weft_status s_ = tu_run((u)->p, (rs), (n), (in), (nin), (out), (n));   \
        ck_assert_msg(s_ == WEFT_OK, "%s: %s: %s", tu_backend_name(b),         \
                      weft_status_name(s_), weft_last_error());                \
    } while (0)

/* map (\x -> (if x == 0 then 0 else 100 quot x)
 *          + (if x /= 0 then 100 quot x else 1)) [0, 5, -7]
 * with the division built once (shared pointer) or twice (merged by CSE). */
static void quot_in_two_conds(weft_backend b, bool built_twice)
{
    tu u;
    tu_open_backend(&u, b);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *q1 = weft_quot(weft_i32(p, 100), x);
    weft_exp *q2 = built_twice ? weft_quot(weft_i32(p, 100), x) : q1;
    weft_exp *a = weft_cond(weft_eq(x, weft_i32(p, 0)), weft_i32(p, 0), q1);
    weft_exp *c = weft_cond(weft_ne(x, weft_i32(p, 0)), q2, weft_i32(p, 1));
    weft_fun_return(f, weft_add(a, c));
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    weft_array *in[1] = {
        tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(3), TU_I(0, 5, -7))};
    weft_array *out[1] = {NULL};
    RUN(&u, b, &r, 1, in, 1, out);
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(3), TU_I(1, 40, -28));
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    tu_close(&u);
}

START_TEST(quot_shared_by_two_conds)
{
    for (int i = 0; i < NBACKEND; i++) {
        quot_in_two_conds(backends[i], false);
        quot_in_two_conds(backends[i], true);
    }
}
END_TEST

/* Two generates, each computing  1 == v!!0 || v!!(-1) == k  (k = 7, and k
 * = the index): v!!(-1) is out of bounds but never evaluated, since
 * v!!0 == 1. */
static void index_right_of_or(weft_backend b)
{
    tu u;
    tu_open_backend(&u, b);
    weft_program *p = u.p;
    weft_acc *v = weft_param(p, WEFT_I64, 1);
    weft_acc *rs[2];
    for (int k = 0; k < 2; k++) {
        weft_fun *f = weft_fun1(p, WEFT_DIM(1));
        weft_exp *i = weft_get(weft_arg(f, 0), 0);
        weft_exp *rhs = k == 0 ? weft_i64(p, 7) : i;
        weft_exp *e =
            weft_or(weft_eq(weft_i64(p, 1), weft_at_linear(v, weft_i64(p, 0))),
                    weft_eq(weft_at_linear(v, weft_i64(p, -1)), rhs));
        weft_fun_return(f, e);
        rs[k] = weft_generate(weft_index1(weft_i64(p, 4)), f);
    }
    TU_PROGRAM_OK(p);
    weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(3), TU_I(1, 2, 3))};
    weft_array *out[2] = {NULL, NULL};
    RUN(&u, b, rs, 2, in, 1, out);
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(4), TU_I(1, 1, 1, 1));
    TU_CHECK_I(u.ctx, out[1], 0, 1, TU_SH(4), TU_I(1, 1, 1, 1));
    tu_release_all(out, 2);
    weft_array_release(in[0]);
    tu_close(&u);
}

START_TEST(index_guarded_by_or_in_two_generates)
{
    for (int i = 0; i < NBACKEND; i++) {
        index_right_of_or(backends[i]);
    }
}
END_TEST

/* map (\x -> (x /= 0 && 100 quot x > 10) || (x /= 0 && 100 quot x < -10))
 * [0, 5, -7, 50]: the division only on the right of &&. */
static void quot_right_of_and(weft_backend b)
{
    tu u;
    tu_open_backend(&u, b);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *nz = weft_ne(x, weft_i32(p, 0));
    weft_exp *q = weft_quot(weft_i32(p, 100), x);
    weft_exp *e = weft_or(weft_and(nz, weft_gt(q, weft_i32(p, 10))),
                          weft_and(nz, weft_lt(q, weft_i32(p, -10))));
    weft_fun_return(f, e);
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    weft_array *in[1] = {
        tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(4), TU_I(0, 5, -7, 50))};
    weft_array *out[1] = {NULL};
    RUN(&u, b, &r, 1, in, 1, out);
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(4), TU_I(0, 1, 1, 0));
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    tu_close(&u);
}

START_TEST(quot_guarded_by_and)
{
    for (int i = 0; i < NBACKEND; i++) {
        quot_right_of_and(backends[i]);
    }
}
END_TEST

/* map (\x -> (if x == 0 then 0 else 100 quot x)
 *          + while (\y -> x /= 0 && y < 100 quot x) (\y -> y + 1) 0)
 * [0, 5, -7, 50]: the division inside a while's condition and a branch. */
static void quot_in_while_and_cond(weft_backend b)
{
    tu u;
    tu_open_backend(&u, b);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *q = weft_quot(weft_i32(p, 100), x);
    weft_fun *c = weft_fun1(p, WEFT_I32);
    weft_fun_return(
        c, weft_and(weft_ne(x, weft_i32(p, 0)), weft_lt(weft_arg(c, 0), q)));
    weft_fun *body = weft_fun1(p, WEFT_I32);
    weft_fun_return(body, weft_add(weft_arg(body, 0), weft_i32(p, 1)));
    weft_exp *a = weft_cond(weft_eq(x, weft_i32(p, 0)), weft_i32(p, 0), q);
    weft_fun_return(f, weft_add(a, weft_while(c, body, weft_i32(p, 0))));
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    weft_array *in[1] = {
        tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(4), TU_I(0, 5, -7, 50))};
    weft_array *out[1] = {NULL};
    RUN(&u, b, &r, 1, in, 1, out);
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(4), TU_I(0, 40, -14, 4));
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    tu_close(&u);
}

START_TEST(quot_guarded_in_while)
{
    for (int i = 0; i < NBACKEND; i++) {
        quot_in_while_and_cond(backends[i]);
    }
}
END_TEST

/* A closed term that may fail, 100 quot (the d), used by two scalar
 * functions: map (\x -> if x > 0 then t else 0) and map (\x -> if x < 0
 * then t + x else 1), with d = 0 and no element taking the branch; then
 * both maps over empty arrays. */
static void quot_in_two_functions(weft_backend b, int64_t n)
{
    tu u;
    tu_open_backend(&u, b);
    weft_program *p = u.p;
    weft_acc *d = weft_param(p, WEFT_I64, 0);
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_exp *t = weft_quot(weft_i64(p, 100), weft_the(d));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *x = weft_arg(f, 0);
    weft_fun_return(f,
                    weft_cond(weft_gt(x, weft_i64(p, 0)), t, weft_i64(p, 0)));
    weft_fun *g = weft_fun1(p, WEFT_I64);
    weft_exp *y = weft_arg(g, 0);
    weft_fun_return(g, weft_cond(weft_lt(y, weft_i64(p, 0)), weft_add(t, y),
                                 weft_i64(p, 1)));
    weft_acc *rs[2] = {weft_map(f, xs), weft_map(g, xs)};
    TU_PROGRAM_OK(p);
    weft_array *in[2] = {tu_arr_i(u.ctx, WEFT_I64, 0, NULL, TU_I(0)),
                         tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(n), TU_I(0, 0))};
    weft_array *out[2] = {NULL, NULL};
    RUN(&u, b, rs, 2, in, 2, out);
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(n), TU_I(0, 0));
    TU_CHECK_I(u.ctx, out[1], 0, 1, TU_SH(n), TU_I(1, 1));
    tu_release_all(out, 2);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    tu_close(&u);
}

START_TEST(quot_shared_by_two_functions)
{
    for (int i = 0; i < NBACKEND; i++) {
        quot_in_two_functions(backends[i], 2);
        quot_in_two_functions(backends[i], 0);
    }
}
END_TEST

/* acond (the d /= 0) (map (\x -> x + e) (unit e)) (unit 7), e = 100 quot
 * (the d): e is bound inside the branch, and fusion must not float that
 * let out of the acond. */
static void quot_in_acond_branch(weft_backend b, int64_t dv, int64_t want)
{
    tu u;
    tu_open_backend(&u, b);
    weft_program *p = u.p;
    weft_acc *d = weft_param(p, WEFT_I64, 0);
    weft_exp *e = weft_quot(weft_i64(p, 100), weft_the(d));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, weft_add(weft_arg(f, 0), e));
    weft_acc *r =
        weft_acond(weft_ne(weft_the(d), weft_i64(p, 0)),
                   weft_map(f, weft_unit(e)), weft_unit(weft_i64(p, 7)));
    TU_PROGRAM_OK(p);
    weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I64, 0, NULL, &dv)};
    weft_array *out[1] = {NULL};
    RUN(&u, b, &r, 1, in, 1, out);
    TU_CHECK_I(u.ctx, out[0], 0, 0, NULL, &want);
    tu_release_all(out, 1);
    weft_array_release(in[0]);
    tu_close(&u);
}

START_TEST(quot_guarded_by_acond)
{
    for (int i = 0; i < NBACKEND; i++) {
        quot_in_acond_branch(backends[i], 0, 7);
        quot_in_acond_branch(backends[i], 5, 40);
    }
}
END_TEST

/* ---- what is still shared ------------------------------------------------ */

/* map (\x -> (if x > 0 then e else 0) + (if x < 5 then e else 1)) for e
 * built once: a total e (x * x + 3) is bound once; a division is not bound
 * (a copy in each branch); a division in both branches of one cond, or
 * beside the conds, is bound once. */
static char *two_conds(tu *u, int which)
{
    tu_reset(u);
    weft_program *p = u->p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *e = which == 0 ? weft_add(weft_mul(x, x), weft_i32(p, 3))
                             : weft_quot(weft_i32(p, 100), x);
    weft_exp *body;
    if (which == 2) {
        body = weft_cond(weft_gt(x, weft_i32(p, 0)), weft_add(e, x),
                         weft_mul(e, x));
    } else {
        weft_exp *a = weft_cond(weft_gt(x, weft_i32(p, 0)), e, weft_i32(p, 0));
        weft_exp *c = weft_cond(weft_lt(x, weft_i32(p, 5)), e, weft_i32(p, 1));
        body = weft_add(a, c);
        if (which == 3) {
            body = weft_add(body, e);
        }
    }
    weft_fun_return(f, body);
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    return tu_program_text(p, &r, 1);
}

START_TEST(total_terms_still_shared)
{
    tu u;
    tu_open(&u);
    char *d = two_conds(&u, 0);
    ck_assert_msg(tu_count_word(d, "let") == 1, "one let expected:\n%s", d);
    ck_assert_msg(tu_count_word(d, "mul") == 1, "one mul expected:\n%s", d);
    free(d);
    d = two_conds(&u, 1);
    ck_assert_msg(tu_count_word(d, "let") == 0, "no let expected:\n%s", d);
    ck_assert_msg(tu_count_word(d, "quot") == 2, "two quot expected:\n%s", d);
    free(d);
    d = two_conds(&u, 2);
    ck_assert_msg(tu_count_word(d, "let") == 1, "one let expected:\n%s", d);
    ck_assert_msg(tu_count_word(d, "quot") == 1, "one quot expected:\n%s", d);
    free(d);
    d = two_conds(&u, 3);
    ck_assert_msg(tu_count_word(d, "let") == 1, "one let expected:\n%s", d);
    ck_assert_msg(tu_count_word(d, "quot") == 1, "one quot expected:\n%s", d);
    free(d);
    tu_close(&u);
}
END_TEST

static Suite *guarded_suite(void)
{
    Suite *s = suite_create("guarded");
    TCase *t = tcase_create("guarded");
    tcase_add_test(t, quot_shared_by_two_conds);
    tcase_add_test(t, index_guarded_by_or_in_two_generates);
    tcase_add_test(t, quot_guarded_by_and);
    tcase_add_test(t, quot_guarded_in_while);
    tcase_add_test(t, quot_shared_by_two_functions);
    tcase_add_test(t, quot_guarded_by_acond);
    tcase_add_test(t, total_terms_still_shared);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(guarded_suite)
