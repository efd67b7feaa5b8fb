/*
 * tests/test_sharing.c: sharing recovery and CSE as weft_program_dump shows
 * them, and the dumped programs' results.
 *
 * The dump writes a shared array term as `let aN = ...` and a shared scalar
 * term as `let eN = ...`; function parameters are xN and program parameters
 * pK.  The tests assert on features that do not depend on layout: how many
 * lets there are, of which kind, and how often each bound variable is
 * referenced (as a whole word).
 *   - a term used twice appears once, bound by a let, and referenced twice;
 *   - two weft_use of one array are merged into one (CSE);
 *   - a scalar term built outside a function and used in it is bound at
 *     array level, before the function that uses it;
 *   - a program without sharing has no let.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif

#include "tu.h"

/* Number of `let ` (as a word) in s. */
static int count_lets(const char *s)
{
    return tu_count_word(s, "let");
}

/* The name bound by the k-th let in s (into name), or false. */
static bool let_name(const char *s, int k, char *name, size_t cap)
{
    const char *q = s;
    for (;;) {
        q = strstr(q, "let ");
        if (!q) {
            return false;
        }
        if ((q == s || !tu_is_word_char(q[-1])) && k-- == 0) {
            break;
        }
        q++;
    }
    q += 4;
    while (*q == ' ') {
        q++;
    }
    size_t n = 0;
    while (tu_is_word_char(q[n]) && n + 1 < cap) {
        name[n] = q[n];
        n++;
    }
    name[n] = '\0';
    return n > 0;
}

static weft_fun *op2(weft_program *p, weft_type t,
                     weft_exp *(*op)(weft_exp *, weft_exp *))
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, op(weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* x -> x + c on f32. */
static weft_fun *plus(weft_program *p, float c)
{
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_f32(p, c)));
    return f;
}

/* Run results[0] with inputs and check a rank-1 f32 result. */
static void check_result(tu *u, weft_acc *r, weft_array *const *in, int n_in,
                         int64_t n, const double *want)
{
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(u->p, &r, 1, in, n_in, out, 1));
    TU_CHECK_F(u->ctx, out[0], 0, 1, &n, want, 1e-6);
    tu_release_all(out, 1);
}

START_TEST(shared_term_bound_once)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_acc *m = weft_map(plus(p, 1), xs); /* used twice */
    weft_acc *r = weft_zipwith(op2(p, WEFT_F32, weft_mul), m, m);
    TU_PROGRAM_OK(p);
    char *d = tu_program_text(p, &r, 1);
    ck_assert_msg(count_lets(d) == 1, "expected one let:\n%s", d);
    char name[32];
    ck_assert(let_name(d, 0, name, sizeof name));
    ck_assert_msg(name[0] == 'a', "an array let expected:\n%s", d);
    /* bound once, referenced twice */
    ck_assert_msg(tu_count_word(d, name) == 3, "%s should occur 3 times:\n%s",
                  name, d);
    /* the map appears once */
    ck_assert_msg(tu_count_word(d, "map") == 1, "one map expected:\n%s", d);
    free(d);

    double x[4] = {0, 1, 2, -3}, want[4];
    for (int i = 0; i < 4; i++) {
        want[i] = (x[i] + 1) * (x[i] + 1);
    }
    weft_array *in[1] = {tu_arr_f(u.ctx, WEFT_F32, 1, TU_SH(4), x)};
    check_result(&u, r, in, 1, 4, want);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

START_TEST(shared_scalar_bound_once)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    /* Inside one function: y = x * x used twice. */
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_exp *y = weft_mul(weft_arg(f, 0), weft_arg(f, 0));
    weft_fun_return(f, weft_add(y, weft_sqrt(y)));
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    char *d = tu_program_text(p, &r, 1);
    ck_assert_msg(count_lets(d) == 1, "expected one let:\n%s", d);
    char name[32];
    ck_assert(let_name(d, 0, name, sizeof name));
    ck_assert_msg(name[0] == 'e', "a scalar let expected:\n%s", d);
    ck_assert_msg(tu_count_word(d, name) == 3, "%s should occur 3 times:\n%s",
                  name, d);
    free(d);

    double x[3] = {0, 2, 3}, want[3];
    for (int i = 0; i < 3; i++) {
        want[i] = (float)(x[i] * x[i]) + sqrtf((float)(x[i] * x[i]));
    }
    weft_array *in[1] = {tu_arr_f(u.ctx, WEFT_F32, 1, TU_SH(3), x)};
    check_result(&u, r, in, 1, 3, want);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

START_TEST(two_uses_merged)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    double x[5] = {1, 2, 3, 4, 5}, want[5];
    weft_array *arr = tu_arr_f(u.ctx, WEFT_F32, 1, TU_SH(5), x);
    weft_acc *u1 = weft_use(p, arr), *u2 = weft_use(p, arr);
    ck_assert_ptr_ne(u1, u2);
    weft_acc *r = weft_zipwith(op2(p, WEFT_F32, weft_add), u1, u2);
    TU_PROGRAM_OK(p);
    char *d = tu_program_text(p, &r, 1);
    ck_assert_msg(count_lets(d) == 1, "expected one let:\n%s", d);
    char name[32];
    ck_assert(let_name(d, 0, name, sizeof name));
    ck_assert_msg(name[0] == 'a', "an array let expected:\n%s", d);
    ck_assert_msg(tu_count_word(d, name) == 3, "%s should occur 3 times:\n%s",
                  name, d);
    ck_assert_msg(tu_count_word(d, "use") == 1, "one use expected:\n%s", d);
    free(d);

    for (int i = 0; i < 5; i++) {
        want[i] = 2 * x[i];
    }
    check_result(&u, r, NULL, 0, 5, want);
    weft_array_release(arr);
    tu_close(&u);
}
END_TEST

START_TEST(captured_scalar_at_array_level)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_acc *tot =
        weft_fold_all(op2(p, WEFT_F32, weft_add), weft_f32(p, 0), xs);
    weft_exp *s = weft_the(tot); /* built outside the function */
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_fdiv(weft_arg(f, 0), s));
    weft_acc *r = weft_map(f, xs); /* normalise: x / sum xs */
    TU_PROGRAM_OK(p);
    char *d = tu_program_text(p, &r, 1);
    /* xs is used twice (an array let); s is bound by a scalar let at array
     * level, i.e. before the function that captures it. */
    int lets = count_lets(d);
    ck_assert_msg(lets >= 1, "expected lets:\n%s", d);
    const char *elet = NULL;
    for (const char *q = strstr(d, "let e"); q; q = strstr(q + 1, "let e")) {
        if (q == d || !tu_is_word_char(q[-1])) {
            elet = q;
            break;
        }
    }
    ck_assert_msg(elet != NULL, "no scalar let:\n%s", d);
    /* The function (its parameter x0 or similar) comes after the let. */
    const char *map = strstr(d, "map");
    ck_assert_msg(map != NULL, "no map:\n%s", d);
    ck_assert_msg(elet < map, "the scalar let is not outside the map:\n%s", d);
    char name[32];
    int k = 0;
    while (let_name(d, k, name, sizeof name) && name[0] != 'e') {
        k++;
    }
    ck_assert_msg(name[0] == 'e', "no scalar let:\n%s", d);
    /* The let's variable is used inside the map's function. */
    ck_assert_msg(strstr(map, name) != NULL, "%s not used in the map:\n%s",
                  name, d);
    ck_assert_msg(tu_count_word(d, name) == 2, "%s should occur twice:\n%s",
                  name, d);
    free(d);

    double x[4] = {1, 2, 3, 4}, want[4];
    for (int i = 0; i < 4; i++) {
        want[i] = x[i] / 10.0;
    }
    weft_array *in[1] = {tu_arr_f(u.ctx, WEFT_F32, 1, TU_SH(4), x)};
    check_result(&u, r, in, 1, 4, want);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

START_TEST(no_sharing_no_let)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_F32, 1), *ys = weft_param(p, WEFT_F32, 1);
    weft_acc *r =
        weft_map(plus(p, 2), weft_zipwith(op2(p, WEFT_F32, weft_sub), xs, ys));
    TU_PROGRAM_OK(p);
    char *d = tu_program_text(p, &r, 1);
    ck_assert_msg(count_lets(d) == 0, "expected no let:\n%s", d);
    /* Both parameters are mentioned. */
    ck_assert_msg(tu_count_word(d, "p0") >= 1 && tu_count_word(d, "p1") >= 1,
                  "parameters p0 and p1 expected:\n%s", d);
    free(d);

    double x[3] = {5, 6, 7}, y[3] = {1, 1, 10}, want[3];
    for (int i = 0; i < 3; i++) {
        want[i] = x[i] - y[i] + 2;
    }
    weft_array *in[2] = {tu_arr_f(u.ctx, WEFT_F32, 1, TU_SH(3), x),
                         tu_arr_f(u.ctx, WEFT_F32, 1, TU_SH(3), y)};
    check_result(&u, r, in, 2, 3, want);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    tu_close(&u);
}
END_TEST

START_TEST(dump_of_several_results)
{
    /* Two results sharing one intermediate: bound once, used by both. */
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_acc *m = weft_map(plus(p, 1), xs);
    weft_acc *rs[2] = {
        weft_fold_all(op2(p, WEFT_F32, weft_add), weft_f32(p, 0), m),
        weft_fold_all(op2(p, WEFT_F32, weft_max), weft_f32(p, -1000), m)};
    TU_PROGRAM_OK(p);
    char *d = tu_program_text(p, rs, 2);
    ck_assert_msg(tu_count_word(d, "map") == 1, "one map expected:\n%s", d);
    char name[32];
    bool found = false;
    for (int k = 0; let_name(d, k, name, sizeof name); k++) {
        if (name[0] == 'a' && tu_count_word(d, name) == 3) {
            found = true;
        }
    }
    ck_assert_msg(found, "no array let used twice:\n%s", d);
    free(d);

    double x[4] = {1, 5, 2, 0};
    weft_array *in[1] = {tu_arr_f(u.ctx, WEFT_F32, 1, TU_SH(4), x)};
    weft_array *out[2] = {NULL, NULL};
    TU_OK(tu_run(p, rs, 2, in, 1, out, 2));
    TU_CHECK_F(u.ctx, out[0], 0, 0, NULL, TU_F(12), 1e-6);
    TU_CHECK_F(u.ctx, out[1], 0, 0, NULL, TU_F(6), 1e-6);
    tu_release_all(out, 2);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

static Suite *sharing_suite(void)
{
    Suite *s = suite_create("sharing");
    TCase *t = tcase_create("dump");
    tcase_add_test(t, shared_term_bound_once);
    tcase_add_test(t, shared_scalar_bound_once);
    tcase_add_test(t, two_uses_merged);
    tcase_add_test(t, captured_scalar_at_array_level);
    tcase_add_test(t, no_sharing_no_let);
    tcase_add_test(t, dump_of_several_results);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(sharing_suite)
