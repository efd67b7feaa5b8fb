/*
 * tests/test_simplify.c: the simplifier (lib/simplify.c), white-box.
 *
 * Each test builds a small program, runs sharing recovery and the
 * simplifier on it (fe_share, fe_simplify) and looks at the simplified core
 * as fe_dump prints it: which primitives are left, which constants appear,
 * how many lets there are.  Where the result matters it also runs the
 * program (weft_compile runs the same pass) and checks the values:
 *   - constant folding, with integer wrap-around, conversions, bit-casts,
 *     shape sizes and tuple projections;
 *   - what must not fold: 1/0 stays and fails at run time; x + 0.0 stays
 *     (x = -0.0); transcendental functions stay; x == x stays for floats;
 *   - exact identities (x+0 and x*1 on integers, x*1.0, and/or with a
 *     constant, not(not b), cond with equal branches);
 *   - shrinking: a let used once is inlined, a dead let removed, an array
 *     let used once moved into its consumer; a let used inside a function
 *     is not moved into it;
 *   - CSE of terms made equal by folding;
 *   - termination and results on a chain of 10,000 maps.
 * WEFT_TEST_SHOW=1 prints each simplified core on stderr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include <ctype.h>
#include <math.h>

#include "fe.h"
#include "tu.h"

/* The simplified core of results[0..n-1] of p, printed (malloc'd). */
static char *simplified(weft_program *p, weft_acc *const *results, int n)
{
    TU_PROGRAM_OK(p);
    fe_arena ar;
    fe_core core;
    fe_arena_init(&ar, p->ctx);
    weft_status s =
        fe_share(p, "test", (fe_term *const *)results, n, &ar, &core);
    ck_assert_msg(s == WEFT_OK, "fe_share: %s", weft_last_error());
    s = fe_simplify(&core);
    ck_assert_msg(s == WEFT_OK, "fe_simplify: %s", weft_last_error());
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    s = fe_dump(p->ctx, &core, f);
    fclose(f);
    ck_assert_msg(s == WEFT_OK, "fe_dump: %s", weft_last_error());
    if (getenv("WEFT_TEST_SHOW")) {
        fprintf(stderr, "%s\n", buf);
    }
    fe_core_release_uses(&core);
    fe_arena_release(&ar);
    return buf;
}

static bool is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* Occurrences of w in s as a whole word (a number, a name). */
static int count_word(const char *s, const char *w)
{
    int n = 0;
    size_t len = strlen(w);
    for (const char *q = strstr(s, w); q; q = strstr(q + 1, w)) {
        bool left = q == s || !is_word_char(q[-1]) || !is_word_char(w[0]);
        bool right = !is_word_char(q[len]) || !is_word_char(w[len - 1]);
        n += left && right;
    }
    return n;
}

/* Occurrences of the call `name(` in s. */
static int count_call(const char *s, const char *name)
{
    char w[64];
    snprintf(w, sizeof w, "%s(", name);
    return count_word(s, w);
}

#define HAS(s, w)                                                              \
    ck_assert_msg(count_word((s), (w)) > 0, "no %s in:\n%s", (w), (s))
#define HAS_NO(s, w)                                                           \
    ck_assert_msg(count_word((s), (w)) == 0, "%s in:\n%s", (w), (s))
#define CALLS(s, name, n)                                                      \
    ck_assert_msg(count_call((s), (name)) == (n),                              \
                  "%d calls of %s, not %d, in:\n%s", count_call((s), (name)),  \
                  (name), (n), (s))
#define LETS(s, n)                                                             \
    ck_assert_msg(count_word((s), "let") == (n), "%d lets, not %d, in:\n%s",   \
                  count_word((s), "let"), (n), (s))

/* Run results[0] (one rank-1 output) on in[0..n_in-1]; out[0] is new. */
static weft_array *run1(weft_program *p, weft_acc *r, weft_array *const *in,
                        int n_in)
{
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, n_in, out, 1));
    return out[0];
}

/* ---- constant folding ---------------------------------------------------- */

START_TEST(fold_in_function)
{
    /* map (\x -> (2 + 3) * x) xs  =>  map (\x -> mul(5, x)) xs */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(
        f, weft_mul(weft_add(weft_i32(p, 2), weft_i32(p, 3)), weft_arg(f, 0)));
    weft_acc *r = weft_map(f, xs);
    char *d = simplified(p, &r, 1);
    HAS(d, "5");
    CALLS(d, "add", 0);
    CALLS(d, "mul", 1);
    free(d);
    int64_t n = 4;
    weft_array *a = tu_arr_i(u.ctx, WEFT_I32, 1, &n, (int64_t[]){1, -2, 3, 0});
    weft_array *o = run1(p, r, &a, 1);
    TU_CHECK_I(u.ctx, o, 0, 1, &n, ((int64_t[]){5, -10, 15, 0}));
    weft_array_release(o);
    weft_array_release(a);
    tu_close(&u);
}
END_TEST

START_TEST(fold_wraps_like_the_type)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    /* i8: 100 + 100 = -56; u8: 3 - 5 = 254; i32: 2^30 * 4 = 0 */
    weft_exp *a = weft_add(weft_i8(p, 100), weft_i8(p, 100));
    weft_acc *r = weft_unit(a);
    char *d = simplified(p, &r, 1);
    HAS(d, "-56");
    CALLS(d, "add", 0);
    free(d);
    ck_assert_int_eq(tu_eval_i(p, a), -56);
    ck_assert_int_eq(tu_eval_i(p, weft_sub(weft_u8(p, 3), weft_u8(p, 5))), 254);
    ck_assert_int_eq(
        tu_eval_i(p, weft_mul(weft_i32(p, 1 << 30), weft_i32(p, 4))), 0);
    /* conversions and bit-casts fold as they run */
    weft_exp *c = weft_convert(weft_i32(p, 300), WEFT_I8);
    r = weft_unit(c);
    d = simplified(p, &r, 1);
    HAS(d, "44");
    CALLS(d, "convert<i8>", 0);
    free(d);
    ck_assert_int_eq(tu_eval_i(p, c), 44);
    weft_exp *b = weft_bitcast(weft_f32(p, 1.0f), WEFT_I32);
    r = weft_unit(b);
    d = simplified(p, &r, 1);
    HAS(d, "1065353216");
    free(d);
    ck_assert_int_eq(tu_eval_i(p, b), 0x3f800000);
    tu_close(&u);
}
END_TEST

START_TEST(fold_comparisons_cond_tuples_shapes)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    /* cond(3 < 4, 10, 20) -> 10 */
    weft_exp *c = weft_cond(weft_lt(weft_i32(p, 3), weft_i32(p, 4)),
                            weft_i32(p, 10), weft_i32(p, 20));
    /* get 1 (7, 8) -> 8; shape_size(index(3, 4)) -> 12 */
    weft_exp *g = weft_get(
        weft_tuple(p, 2, (weft_exp *[]){weft_i32(p, 7), weft_i32(p, 8)}), 1);
    weft_exp *sz = weft_shape_size(weft_index2(weft_i64(p, 3), weft_i64(p, 4)));
    weft_exp *sum = weft_add(weft_add(c, g), weft_convert(sz, WEFT_I32));
    weft_acc *r = weft_unit(sum);
    char *d = simplified(p, &r, 1);
    HAS(d, "30");
    CALLS(d, "add", 0);
    HAS_NO(d, "?");
    CALLS(d, "lt", 0);
    free(d);
    ck_assert_int_eq(tu_eval_i(p, sum), 30);
    tu_close(&u);
}
END_TEST

START_TEST(fold_exact_float_only)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    /* sqrt and division of constants are exact: folded */
    weft_exp *q = weft_fdiv(weft_sqrt(weft_f64(p, 2.0)), weft_f64(p, 4.0));
    weft_acc *r = weft_unit(q);
    char *d = simplified(p, &r, 1);
    CALLS(d, "sqrt", 0);
    CALLS(d, "fdiv", 0);
    free(d);
    ck_assert(tu_eval_f(p, q) == sqrt(2.0) / 4.0);
    /* transcendental functions are not */
    weft_exp *e = weft_fexp(weft_f64(p, 1.0));
    r = weft_unit(e);
    d = simplified(p, &r, 1);
    CALLS(d, "exp", 1);
    free(d);
    weft_exp *sn = weft_sin(weft_f32(p, 0.5f));
    r = weft_unit(sn);
    d = simplified(p, &r, 1);
    CALLS(d, "sin", 1);
    free(d);
    weft_exp *pw = weft_pow(weft_f32(p, 2.0f), weft_f32(p, 0.5f));
    r = weft_unit(pw);
    d = simplified(p, &r, 1);
    CALLS(d, "pow", 1);
    free(d);
    tu_close(&u);
}
END_TEST

START_TEST(no_fold_of_errors)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_exp *q = weft_quot(weft_i32(p, 1), weft_i32(p, 0));
    weft_acc *r = weft_unit(q);
    char *d = simplified(p, &r, 1);
    CALLS(d, "quot", 1);
    free(d);
    weft_array *o = NULL;
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, tu_eval(p, q, &o));
    ck_assert_ptr_null(o);
    /* out-of-range conversions and shifts stay too */
    weft_exp *t = weft_truncate(weft_f64(p, 1e30), WEFT_I32);
    TU_STATUS(WEFT_ERR_UNDEFINED, tu_eval(p, t, &o));
    weft_exp *sh = weft_shl(weft_i32(p, 1), weft_i32(p, 40));
    TU_STATUS(WEFT_ERR_UNDEFINED, tu_eval(p, sh, &o));
    /* a dividend that folds does not hide the divisor's error */
    weft_exp *q2 = weft_idiv(weft_add(weft_i32(p, 2), weft_i32(p, 3)),
                             weft_sub(weft_i32(p, 3), weft_i32(p, 3)));
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, tu_eval(p, q2, &o));
    tu_close(&u);
}
END_TEST

/* ---- identities ---------------------------------------------------------- */

START_TEST(float_plus_zero_stays)
{
    /* x + 0.0 is not x for x = -0.0 (the sum is +0.0) */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_f32(p, 0.0f)));
    weft_acc *r = weft_map(f, xs);
    char *d = simplified(p, &r, 1);
    CALLS(d, "add", 1);
    free(d);
    int64_t n = 2;
    weft_array *a = tu_arr_f(u.ctx, WEFT_F32, 1, &n, (double[]){-0.0, 1.5});
    weft_array *o = run1(p, r, &a, 1);
    const float *v = weft_array_data(o, 0);
    ck_assert(v[0] == 0.0f && !signbit(v[0]));
    ck_assert(v[1] == 1.5f);
    weft_array_release(o);
    weft_array_release(a);
    tu_close(&u);
}
END_TEST

START_TEST(exact_identities)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    /* integers: (x + 0) * 1 - 0 -> x;  floats: y * 1.0 -> y */
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_fun_return(
        f, weft_sub(weft_mul(weft_add(x, weft_i32(p, 0)), weft_i32(p, 1)),
                    weft_i32(p, 0)));
    weft_acc *r = weft_map(f, xs);
    char *d = simplified(p, &r, 1);
    CALLS(d, "add", 0);
    CALLS(d, "mul", 0);
    CALLS(d, "sub", 0);
    free(d);
    tu_reset(&u);
    p = u.p;
    weft_acc *ys = weft_param(p, WEFT_F64, 1);
    weft_fun *g = weft_fun1(p, WEFT_F64);
    weft_fun_return(g, weft_mul(weft_arg(g, 0), weft_f64(p, 1.0)));
    r = weft_map(g, ys);
    d = simplified(p, &r, 1);
    CALLS(d, "mul", 0);
    free(d);
    tu_reset(&u);
    p = u.p;
    xs = weft_param(p, WEFT_I32, 1);
    /* and(true, b) -> b, or(false, b) -> b, not(not b) -> b,
     * cond(c, e, e) -> e */
    weft_fun *h = weft_fun1(p, WEFT_I32);
    weft_exp *z = weft_arg(h, 0);
    weft_exp *pos = weft_gt(z, weft_i32(p, 0));
    weft_exp *tp = weft_and(weft_bool(p, true), pos);
    weft_exp *b = weft_not(weft_not(weft_or(weft_bool(p, false), tp)));
    weft_exp *sq = weft_mul(z, z);
    weft_fun_return(
        h,
        weft_cond(b, weft_cond(weft_lt(z, weft_i32(p, 5)), sq, weft_mul(z, z)),
                  weft_i32(p, 0)));
    r = weft_map(h, xs);
    d = simplified(p, &r, 1);
    CALLS(d, "and", 0);
    CALLS(d, "or", 0);
    CALLS(d, "not", 0);
    CALLS(d, "lt", 0);
    CALLS(d, "mul", 1);
    free(d);
    int64_t n = 3;
    weft_array *a = tu_arr_i(u.ctx, WEFT_I32, 1, &n, (int64_t[]){-2, 3, 7});
    weft_array *o = run1(p, r, &a, 1);
    TU_CHECK_I(u.ctx, o, 0, 1, &n, ((int64_t[]){0, 9, 49}));
    weft_array_release(o);
    weft_array_release(a);
    tu_close(&u);
}
END_TEST

START_TEST(float_self_comparison_stays)
{
    /* x == x is false for NaN: not folded for floats, folded for ints */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_eq(weft_arg(f, 0), weft_arg(f, 0)));
    weft_acc *r = weft_map(f, xs);
    char *d = simplified(p, &r, 1);
    CALLS(d, "eq", 1);
    free(d);
    int64_t n = 2;
    weft_array *a = tu_arr_f(u.ctx, WEFT_F32, 1, &n, (double[]){NAN, 1.0});
    weft_array *o = run1(p, r, &a, 1);
    TU_CHECK_I(u.ctx, o, 0, 1, &n, ((int64_t[]){0, 1}));
    weft_array_release(o);
    weft_array_release(a);
    weft_acc *is = weft_param(p, WEFT_I32, 1);
    weft_fun *g = weft_fun1(p, WEFT_I32);
    weft_fun_return(g, weft_eq(weft_arg(g, 0), weft_arg(g, 0)));
    r = weft_map(g, is);
    d = simplified(p, &r, 1);
    CALLS(d, "eq", 0);
    HAS(d, "true");
    free(d);
    tu_close(&u);
}
END_TEST

/* ---- shrinking ----------------------------------------------------------- */

START_TEST(let_used_once_is_inlined)
{
    /* t = x*x is shared (t + t*0); after folding t is used once */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *t = weft_mul(x, weft_add(x, weft_i32(p, 1)));
    weft_fun_return(f, weft_add(t, weft_mul(t, weft_i32(p, 0))));
    weft_acc *r = weft_map(f, xs);
    char *d = simplified(p, &r, 1);
    LETS(d, 0);
    CALLS(d, "mul", 1);
    free(d);
    int64_t n = 3;
    weft_array *a = tu_arr_i(u.ctx, WEFT_I32, 1, &n, (int64_t[]){-2, 3, 7});
    weft_array *o = run1(p, r, &a, 1);
    TU_CHECK_I(u.ctx, o, 0, 1, &n, ((int64_t[]){2, 12, 56}));
    weft_array_release(o);
    weft_array_release(a);
    tu_close(&u);
}
END_TEST

START_TEST(dead_let_is_removed)
{
    /* t is shared in the branch that a constant condition drops */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *t = weft_mul(x, weft_add(x, weft_i32(p, 1)));
    weft_fun_return(f,
                    weft_cond(weft_bool(p, true), weft_neg(x), weft_add(t, t)));
    weft_acc *r = weft_map(f, xs);
    char *d = simplified(p, &r, 1);
    LETS(d, 0);
    CALLS(d, "mul", 0);
    CALLS(d, "neg", 1);
    free(d);
    tu_close(&u);
}
END_TEST

START_TEST(array_let_used_once_moves_to_its_consumer)
{
    /* a = map f xs is used twice, once in the branch a constant acond
     * drops; then it is used once and moves into its consumer */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_acc *a = weft_map(tu_fun_op1(p, WEFT_OP_NEG, WEFT_I32), xs);
    weft_acc *keep = weft_map(tu_fun_op1(p, WEFT_OP_ABS, WEFT_I32), a);
    weft_acc *drop = weft_zipwith(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32), a, a);
    weft_acc *r = weft_acond(weft_bool(p, true), keep, drop);
    char *d = simplified(p, &r, 1);
    LETS(d, 0);
    HAS_NO(d, "zipwith");
    HAS_NO(d, "acond");
    free(d);
    int64_t n = 3;
    weft_array *in = tu_arr_i(u.ctx, WEFT_I32, 1, &n, (int64_t[]){-2, 3, 0});
    weft_array *o = run1(p, r, &in, 1);
    TU_CHECK_I(u.ctx, o, 0, 1, &n, ((int64_t[]){2, 3, 0}));
    weft_array_release(o);
    weft_array_release(in);
    tu_close(&u);
}
END_TEST

START_TEST(no_move_into_a_function)
{
    /* s = the(fold (+) 0 xs) is used once, inside map's function: it
     * stays bound outside (moving it in would compute it per element) */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_exp *s = weft_the(weft_fold_all(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32),
                                         weft_i32(p, 0), xs));
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), s));
    weft_acc *r = weft_map(f, xs);
    char *d = simplified(p, &r, 1);
    ck_assert_msg(count_word(d, "let") >= 1, "%s", d);
    free(d);
    int64_t n = 3;
    weft_array *in = tu_arr_i(u.ctx, WEFT_I32, 1, &n, (int64_t[]){1, 2, 3});
    weft_array *o = run1(p, r, &in, 1);
    TU_CHECK_I(u.ctx, o, 0, 1, &n, ((int64_t[]){7, 8, 9}));
    weft_array_release(o);
    weft_array_release(in);
    tu_close(&u);
}
END_TEST

/* ---- CSE ----------------------------------------------------------------- */

START_TEST(cse_after_folding)
{
    /* x*(2+3) and x*5 become equal after folding: computed once */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *a = weft_mul(x, weft_add(weft_i32(p, 2), weft_i32(p, 3)));
    weft_exp *b = weft_mul(x, weft_i32(p, 5));
    weft_fun_return(f, weft_sub(a, weft_neg(b)));
    weft_acc *r = weft_map(f, xs);
    char *d = simplified(p, &r, 1);
    CALLS(d, "mul", 1);
    LETS(d, 1);
    free(d);
    int64_t n = 3;
    weft_array *in = tu_arr_i(u.ctx, WEFT_I32, 1, &n, (int64_t[]){1, -2, 3});
    weft_array *o = run1(p, r, &in, 1);
    TU_CHECK_I(u.ctx, o, 0, 1, &n, ((int64_t[]){10, -20, 30}));
    weft_array_release(o);
    weft_array_release(in);
    tu_close(&u);
}
END_TEST

/* ---- termination --------------------------------------------------------- */

START_TEST(deep_chain_of_maps)
{
    enum { DEPTH = 10000 };
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_acc *a = xs;
    for (int i = 0; i < DEPTH; i++) {
        weft_fun *f = weft_fun1(p, WEFT_I32);
        weft_fun_return(f, weft_add(weft_arg(f, 0),
                                    weft_sub(weft_i32(p, 2), weft_i32(p, 1))));
        a = weft_map(f, a);
    }
    char *d = simplified(p, &a, 1);
    CALLS(d, "sub", 0);
    free(d);
    int64_t n = 3;
    weft_array *in = tu_arr_i(u.ctx, WEFT_I32, 1, &n, (int64_t[]){1, 2, 3});
    weft_array *o = run1(p, a, &in, 1);
    TU_CHECK_I(u.ctx, o, 0, 1, &n,
               ((int64_t[]){1 + DEPTH, 2 + DEPTH, 3 + DEPTH}));
    weft_array_release(o);
    weft_array_release(in);
    tu_close(&u);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("simplify");
    TCase *tc = tcase_create("simplify");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fold_in_function);
    tcase_add_test(tc, fold_wraps_like_the_type);
    tcase_add_test(tc, fold_comparisons_cond_tuples_shapes);
    tcase_add_test(tc, fold_exact_float_only);
    tcase_add_test(tc, no_fold_of_errors);
    tcase_add_test(tc, float_plus_zero_stays);
    tcase_add_test(tc, exact_identities);
    tcase_add_test(tc, float_self_comparison_stays);
    tcase_add_test(tc, let_used_once_is_inlined);
    tcase_add_test(tc, dead_let_is_removed);
    tcase_add_test(tc, array_let_used_once_moves_to_its_consumer);
    tcase_add_test(tc, no_move_into_a_function);
    tcase_add_test(tc, cse_after_folding);
    tcase_add_test(tc, deep_chain_of_maps);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(make_suite)
