/*
 * tests/test_build.c: the builder's type and rank checks, its sticky
 * errors, and the desugared and less common operations run end to end.
 */
#include "tu.h"

#define HAS(msg, frag)                                                         \
    ck_assert_msg(strstr((msg), (frag)) != NULL, "'%s' lacks '%s'", (msg),     \
                  (frag))

/* Expect the program to fail with status s and a message containing frag,
 * then start over with a fresh program. */
#define EXPECT_FAIL(u, s, frag)                                                \
    do {                                                                       \
        ck_assert_msg(weft_program_status((u)->p) == (s),                      \
                      "status %s (%s), expected %s",                           \
                      weft_status_name(weft_program_status((u)->p)),           \
                      weft_program_error((u)->p), weft_status_name(s));        \
        HAS(weft_program_error((u)->p), (frag));                               \
        tu_reset(u);                                                           \
    } while (0)

static weft_fun *add_fun(weft_program *p, weft_type t)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

START_TEST(type_errors)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_arg(f, 1)));
    weft_acc *b = weft_param(p, WEFT_F32, 1);
    ck_assert_ptr_null(weft_zipwith(f, b, a));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH,
                "weft_zipwith: argument 3 has element type i32, the "
                "function takes f32");
    p = u.p;
    ck_assert_ptr_null(weft_add(weft_i32(p, 1), weft_f32(p, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "weft_add: operand 2");
    p = u.p;
    ck_assert_ptr_null(weft_add(weft_bool(p, 1), weft_bool(p, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "numeric");
    p = u.p;
    ck_assert_ptr_null(weft_sqrt(weft_i32(p, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "weft_sqrt");
    p = u.p;
    ck_assert_ptr_nonnull(weft_shl(weft_i64(p, 1), weft_u8(p, 3)));
    ck_assert_int_eq(weft_exp_type(weft_popcount(weft_u64(p, 3))), WEFT_I32);
    ck_assert_int_eq(weft_exp_type(weft_eq(weft_bool(p, 1), weft_bool(p, 0))),
                     WEFT_BOOL);
    ck_assert_ptr_null(weft_prim1(WEFT_OP_FLOOR, weft_f32(p, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_INVALID_ARGUMENT, "weft_floor");
    p = u.p;
    ck_assert_ptr_null(weft_prim1(WEFT_OP_ADD, weft_f32(p, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_ARITY, "weft_prim1");
    p = u.p;
    ck_assert_ptr_null(weft_bitcast(weft_f32(p, 1), WEFT_I64));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "bits");
    p = u.p;
    ck_assert_int_eq(weft_exp_type(weft_bitcast(weft_f32(p, 1), WEFT_U32)),
                     WEFT_U32);
    ck_assert_int_eq(weft_exp_type(weft_floor(weft_f64(p, 1), WEFT_I16)),
                     WEFT_I16);
    ck_assert_ptr_null(weft_floor(weft_f64(p, 1), WEFT_F32));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "integral");
    p = u.p;
    ck_assert_ptr_null(weft_fold(add_fun(p, WEFT_I32), weft_i64(p, 0),
                                 weft_param(p, WEFT_I32, 2)));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "weft_fold: argument 2");
    p = u.p;
    ck_assert_ptr_null(weft_fold_seg(add_fun(p, WEFT_I32), weft_i32(p, 0),
                                     weft_param(p, WEFT_I32, 2),
                                     weft_param(p, WEFT_F32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "argument 4");
    p = u.p;
    ck_assert_ptr_null(weft_fold1_seg_offsets(add_fun(p, WEFT_I32),
                                              weft_param(p, WEFT_I32, 1),
                                              weft_param(p, WEFT_F64, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH,
                "weft_fold1_seg_offsets: argument 3");
    p = u.p;
    ck_assert_ptr_null(weft_fold_seg_offsets(
        add_fun(p, WEFT_I32), weft_i32(p, 0), weft_param(p, WEFT_I32, 1),
        weft_param(p, WEFT_I64, 2)));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH,
                "weft_fold_seg_offsets: argument 4");
    p = u.p;
    ck_assert_ptr_null(weft_const(p, WEFT_DIM(1), "x"));
    EXPECT_FAIL(&u, WEFT_ERR_INVALID_ARGUMENT, "weft_const");
    tu_close(&u);
}
END_TEST

START_TEST(rank_errors)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    ck_assert_ptr_null(weft_fold(add_fun(p, WEFT_I32), weft_i32(p, 0),
                                 weft_param(p, WEFT_I32, 0)));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH, "argument 3 has rank 0");
    p = u.p;
    weft_fun *f = add_fun(p, WEFT_I32);
    ck_assert_ptr_null(weft_zipwith(f, weft_param(p, WEFT_I32, 1),
                                    weft_param(p, WEFT_I32, 2)));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH, "argument 3 has rank 2");
    p = u.p;
    weft_acc *a = weft_param(p, WEFT_I32, 2);
    ck_assert_ptr_null(weft_replicate(1, (weft_exp *[]){weft_all(p)}, a));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH, "weft_replicate");
    p = u.p;
    a = weft_param(p, WEFT_I32, 2);
    ck_assert_ptr_null(weft_slice(a, 1, (weft_exp *[]){weft_all(p)}));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH, "weft_slice");
    p = u.p;
    a = weft_param(p, WEFT_I32, 2);
    ck_assert_ptr_null(
        weft_slice(a, 2, (weft_exp *[]){weft_all(p), weft_i64(p, -1)}));
    EXPECT_FAIL(&u, WEFT_ERR_SLICE_INDEX, "weft_slice");
    p = u.p;
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_arg(ix, 0));
    ck_assert_ptr_null(weft_backpermute(weft_index1(weft_i64(p, 3)), ix,
                                        weft_param(p, WEFT_F32, 2)));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH, "argument 2 returns DIM1");
    p = u.p;
    ck_assert_ptr_null(weft_the(weft_param(p, WEFT_F32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH, "weft_the");
    p = u.p;
    weft_acc *pair = weft_scanl_(add_fun(p, WEFT_I32), weft_i32(p, 0),
                                 weft_param(p, WEFT_I32, 1));
    ck_assert_int_eq(weft_acc_arity(pair), 2);
    ck_assert_int_eq(weft_acc_type(pair), 0);
    ck_assert_ptr_null(weft_size(pair));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH, "tuple");
    p = u.p;
    ck_assert_ptr_null(weft_param(p, WEFT_I32, WEFT_MAX_RANK + 1));
    EXPECT_FAIL(&u, WEFT_ERR_INVALID_ARGUMENT, "weft_param");
    p = u.p;
    ck_assert_ptr_null(weft_acond(weft_bool(p, 1), weft_param(p, WEFT_I32, 1),
                                  weft_param(p, WEFT_I32, 2)));
    EXPECT_FAIL(&u, WEFT_ERR_RANK_MISMATCH, "weft_acond");
    p = u.p;
    ck_assert_ptr_null(weft_acond(weft_bool(p, 1), weft_param(p, WEFT_I32, 1),
                                  weft_param(p, WEFT_F32, 2)));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "weft_acond");
    tu_close(&u);
}
END_TEST

START_TEST(functions_and_scope)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_fun *f = weft_fun1(p, WEFT_I32);
    ck_assert_ptr_null(weft_map(f, weft_param(p, WEFT_I32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_INCOMPLETE, "weft_map: argument 1");
    p = u.p;
    f = weft_fun1(p, WEFT_I32);
    TU_OK(weft_fun_return(f, weft_arg(f, 0)));
    ck_assert_int_eq(weft_fun_return(f, weft_arg(f, 0)),
                     WEFT_ERR_INVALID_ARGUMENT);
    EXPECT_FAIL(&u, WEFT_ERR_INVALID_ARGUMENT, "already");
    p = u.p;
    ck_assert_ptr_null(
        weft_fold(add_fun(p, WEFT_I32) == NULL ? NULL : weft_fun1(p, WEFT_I32),
                  weft_i32(p, 0), weft_param(p, WEFT_I32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_INCOMPLETE, "weft_fold");
    p = u.p;
    f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_arg(f, 0));
    ck_assert_ptr_null(weft_zipwith(f, weft_param(p, WEFT_I32, 1),
                                    weft_param(p, WEFT_I32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_ARITY, "weft_zipwith");
    p = u.p;
    /* generate inside a function, its shape from the argument */
    f = weft_fun1(p, WEFT_I64);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(g, weft_i32(p, 1));
    ck_assert_ptr_null(weft_generate(weft_index1(weft_arg(f, 0)), g));
    EXPECT_FAIL(&u, WEFT_ERR_SCOPE, "nested data parallelism");
    p = u.p;
    f = weft_fun1(p, WEFT_I32);
    ck_assert_ptr_null(weft_unit(weft_arg(f, 0)));
    EXPECT_FAIL(&u, WEFT_ERR_SCOPE, "weft_unit");
    p = u.p;
    /* stencil window and arity */
    f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_arg(f, 1));
    weft_boundary clamp = {WEFT_BOUNDARY_CLAMP, NULL};
    ck_assert_ptr_null(
        weft_stencil(f, (int[]){4}, clamp, weft_param(p, WEFT_F32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_STENCIL_WINDOW, "weft_stencil");
    p = u.p;
    f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_arg(f, 1));
    ck_assert_ptr_null(
        weft_stencil(f, (int[]){5}, clamp, weft_param(p, WEFT_F32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_ARITY, "weft_stencil");
    p = u.p;
    f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_arg(f, 1));
    weft_boundary konst = {WEFT_BOUNDARY_CONSTANT, NULL};
    ck_assert_ptr_null(
        weft_stencil(f, (int[]){3}, konst, weft_param(p, WEFT_F32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_NULL_ARGUMENT, "weft_stencil");
    p = u.p;
    f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_arg(f, 1));
    konst.value = weft_f64(p, 0);
    ck_assert_ptr_null(
        weft_stencil(f, (int[]){3}, konst, weft_param(p, WEFT_F32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_TYPE_MISMATCH, "weft_stencil");
    p = u.p;
    weft_boundary bad = {(weft_boundary_kind)7, NULL};
    f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_arg(f, 1));
    ck_assert_ptr_null(
        weft_stencil(f, (int[]){3}, bad, weft_param(p, WEFT_F32, 1)));
    EXPECT_FAIL(&u, WEFT_ERR_INVALID_ARGUMENT, "boundary");
    tu_close(&u);
}
END_TEST

START_TEST(sticky_and_null)
{
    tu u, v;
    tu_open(&u);
    tu_open(&v);
    weft_program *p = u.p;
    ck_assert_ptr_null(weft_map(NULL, weft_param(p, WEFT_I32, 1)));
    ck_assert_int_eq(weft_program_status(p), WEFT_ERR_NULL_ARGUMENT);
    HAS(weft_program_error(p), "weft_map: argument 1 is NULL");
    /* later errors add nothing */
    ck_assert_ptr_null(weft_add(weft_i32(p, 1), weft_f32(p, 1)));
    HAS(weft_program_error(p), "weft_map: argument 1 is NULL");
    tu_reset(&u);
    p = u.p;
    ck_assert_ptr_null(weft_add(NULL, NULL));
    ck_assert_int_eq(weft_program_status(p), WEFT_OK);
    /* terms of two programs: the error goes to both */
    ck_assert_ptr_null(weft_add(weft_i32(p, 1), weft_i32(v.p, 1)));
    ck_assert_int_eq(weft_program_status(p), WEFT_ERR_PROGRAM_MISMATCH);
    ck_assert_int_eq(weft_program_status(v.p), WEFT_ERR_PROGRAM_MISMATCH);
    tu_close(&v);
    tu_close(&u);
}
END_TEST

/* A rank-1 i32 array from values. */
static weft_array *vec(weft_context *ctx, int64_t n, const int64_t *v)
{
    return tu_arr_i(ctx, WEFT_I32, 1, &n, v);
}

START_TEST(run_ops)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    weft_array *xs = vec(u.ctx, 5, TU_I(1, 2, 3, 4, 5));
    weft_acc *a = weft_use(p, xs);
    weft_fun *add = add_fun(p, WEFT_I32);
    weft_acc *m = weft_reshape(weft_index2(weft_i64(p, 1), weft_i64(p, 5)), a);
    weft_acc *r[8];
    r[0] = weft_fold_all(add, weft_i32(p, 10), m);
    r[1] = weft_unit(weft_the(weft_fold1_all(add, a)));
    r[2] = weft_scanl_(add, weft_i32(p, 0), a);
    r[3] = weft_replicate(2, (weft_exp *[]){weft_i64(p, 2), weft_all(p)}, a);
    r[4] = weft_slice(
        weft_replicate(2, (weft_exp *[]){weft_i64(p, 2), weft_all(p)}, a), 2,
        (weft_exp *[]){weft_i64(p, 1), weft_all(p)});
    weft_fun *st = weft_fun3(p, WEFT_I32, WEFT_I32, WEFT_I32);
    weft_fun_return(st, weft_add(weft_arg(st, 0), weft_arg(st, 2)));
    weft_boundary b = {WEFT_BOUNDARY_CONSTANT, weft_i32(p, 0)};
    r[5] = weft_stencil(st, (int[]){3}, b, a);
    weft_afun *c = weft_afun_like(a);
    weft_afun_return(
        c, weft_unit(weft_lt(
               weft_the(weft_fold_all(add, weft_i32(p, 0), weft_afun_arg(c))),
               weft_i32(p, 100))));
    weft_afun *body = weft_afun_like(a);
    weft_fun *dbl = weft_fun1(p, WEFT_I32);
    weft_fun_return(dbl, weft_mul(weft_arg(dbl, 0), weft_i32(p, 2)));
    weft_afun_return(body, weft_map(dbl, weft_afun_arg(body)));
    r[6] = weft_awhile(c, body, a);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(
        ix, weft_cond(weft_lt(weft_get(weft_arg(ix, 0), 0), weft_i64(p, 4)),
                      weft_index1(weft_rem(weft_get(weft_arg(ix, 0), 0),
                                           weft_i64(p, 2))),
                      weft_ignore(p, 1)));
    weft_fun *gen = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(gen, weft_i32(p, 0));
    r[7] = weft_permute(add, weft_generate(weft_index1(weft_i64(p, 2)), gen),
                        ix, a);
    TU_PROGRAM_OK(p);
    weft_array *out[9] = {0};
    TU_OK(tu_run(p, r, 8, NULL, 0, out, 9));
    TU_CHECK_I(u.ctx, out[0], 0, 0, TU_SH(0), TU_I(25));
    TU_CHECK_I(u.ctx, out[1], 0, 0, TU_SH(0), TU_I(15));
    TU_CHECK_I(u.ctx, out[2], 0, 1, TU_SH(5), TU_I(0, 1, 3, 6, 10));
    TU_CHECK_I(u.ctx, out[3], 0, 0, TU_SH(0), TU_I(15));
    TU_CHECK_I(u.ctx, out[4], 0, 2, TU_SH(2, 5),
               TU_I(1, 2, 3, 4, 5, 1, 2, 3, 4, 5));
    TU_CHECK_I(u.ctx, out[5], 0, 1, TU_SH(5), TU_I(1, 2, 3, 4, 5));
    TU_CHECK_I(u.ctx, out[6], 0, 1, TU_SH(5), TU_I(2, 4, 6, 8, 4));
    TU_CHECK_I(u.ctx, out[7], 0, 1, TU_SH(5), TU_I(8, 16, 24, 32, 40));
    TU_CHECK_I(u.ctx, out[8], 0, 1, TU_SH(2), TU_I(4, 6));
    tu_release_all(out, 9);
    weft_array_release(xs);
    tu_close(&u);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("build");
    TCase *tc = tcase_create("build");
    tcase_add_test(tc, type_errors);
    tcase_add_test(tc, rank_errors);
    tcase_add_test(tc, functions_and_scope);
    tcase_add_test(tc, sticky_and_null);
    tcase_add_test(tc, run_ops);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(make_suite)
