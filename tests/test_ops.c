/*
 * tests/test_ops.c: the element-wise and structural array operations (use,
 * param, unit, the, generate, map, zipwith, zipwith3, reshape, replicate,
 * slice, backpermute, transform), acond, awhile and tuples of arrays, on
 * the reference interpreter against hand-computed values.
 *
 * Reductions, scans, permute and stencils are in test_ops_reduce.c.
 * Each test checks the result's shape as well as its values, and covers,
 * where the operation allows, rank 0, empty arrays, rank 3 and tuples.
 * Inputs come mostly from weft_param with weft_compile / weft_run (one
 * executable run on several inputs), some from weft_use and weft_run1.
 * Integer results are exact; the few floating results are sums and
 * products of small dyadic values, also exact (tolerance 0).
 */
#include "tu.h"

#define I(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})

/* x -> x + c on i32. */
static weft_fun *fun_add_i32(weft_program *p, int32_t c)
{
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_i32(p, c)));
    return f;
}

/* x -> x * c on i32. */
static weft_fun *fun_mul_i32(weft_program *p, int32_t c)
{
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_mul(weft_arg(f, 0), weft_i32(p, c)));
    return f;
}

/* The 2x3x4 array 0 .. 23 (i32). */
static weft_array *iota_234(weft_context *ctx)
{
    int64_t v[24];
    for (int i = 0; i < 24; i++) {
        v[i] = i;
    }
    return tu_arr_i(ctx, WEFT_I32, 3, TU_SH(2, 3, 4), v);
}

/* ------------------------------------------------------------------------
 * use, param, unit, the
 * ---------------------------------------------------------------------- */

START_TEST(test_use)
{
    tu t;
    tu_open(&t);
    weft_array *a = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(1, 2, 3));
    weft_acc *u = weft_use(t.p, a);
    /* the program keeps its own reference: release ours now */
    weft_array_release(a);
    ck_assert_int_eq(weft_acc_rank(u), 1);
    ck_assert_int_eq(weft_acc_type(u), WEFT_I32);
    weft_acc *res[2] = {weft_map(fun_add_i32(t.p, 1), u), u};
    weft_array *out[2] = {NULL};
    TU_OK(weft_run1(t.p, res, 2, NULL, 0, out, 2));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(2, 3, 4));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(3), I(1, 2, 3));
    tu_release_all(out, 2);

    /* use of a rank-0 and of an empty array; the same array used twice */
    tu_reset(&t);
    weft_array *s = tu_arr_f(t.ctx, WEFT_F64, 0, NULL, F(2.5));
    weft_array *e = tu_arr_f(t.ctx, WEFT_F32, 2, TU_SH(0, 3), NULL);
    weft_fun *sq = weft_fun2(t.p, WEFT_F64, WEFT_F64);
    weft_fun_return(sq, weft_mul(weft_arg(sq, 0), weft_arg(sq, 1)));
    weft_acc *r2[2] = {weft_zipwith(sq, weft_use(t.p, s), weft_use(t.p, s)),
                       weft_use(t.p, e)};
    TU_OK(weft_run1(t.p, r2, 2, NULL, 0, out, 2));
    TU_CHECK_F(t.ctx, out[0], 0, 0, NULL, F(6.25), 0);
    TU_CHECK_SHAPE(out[1], 2, TU_SH(0, 3));
    tu_release_all(out, 2);
    weft_array_release(s);
    weft_array_release(e);
    tu_close(&t);
}
END_TEST

START_TEST(test_param_run_many)
{
    tu t;
    tu_open(&t);
    weft_acc *xs = weft_param(t.p, WEFT_I32, 1);
    weft_acc *ys = weft_param(t.p, WEFT_I32, 2);
    weft_acc *res[2] = {weft_map(fun_mul_i32(t.p, 2), xs),
                        weft_map(fun_add_i32(t.p, -1), ys)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(t.p, res, 2, &exe));
    ck_assert_int_eq(weft_executable_inputs(exe), 2);
    ck_assert_int_eq(weft_executable_outputs(exe), 2);
    /* the executable outlives its program */
    weft_program_free(t.p);
    t.p = NULL;

    weft_array *in[2] = {
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(1, 2, 3)),
        tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 2), I(1, 2, 3, 4))};
    weft_array *out[2] = {NULL};
    TU_OK(weft_run(exe, in, 2, out, 2));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(2, 4, 6));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(2, 2), I(0, 1, 2, 3));
    tu_release_all(out, 2);
    tu_release_all(in, 2);

    /* again, other shapes, empty ones included */
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(0), NULL);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(1, 3), I(10, 20, 30));
    TU_OK(weft_run(exe, in, 2, out, 2));
    TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(1, 3), I(9, 19, 29));
    tu_release_all(out, 2);
    tu_release_all(in, 2);

    /* bad inputs are refused with the named error, and no output */
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(1), I(1));
    in[1] = tu_arr_i(t.ctx, WEFT_I64, 2, TU_SH(1, 1), I(1));
    TU_STATUS(WEFT_ERR_ARGUMENT_COUNT, weft_run(exe, in, 1, out, 2));
    TU_STATUS(WEFT_ERR_TYPE_MISMATCH, weft_run(exe, in, 2, out, 2));
    ck_assert_ptr_null(out[0]);
    ck_assert_ptr_null(out[1]);
    weft_array_release(in[1]);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(1), I(1));
    TU_STATUS(WEFT_ERR_RANK_MISMATCH, weft_run(exe, in, 2, out, 2));
    tu_release_all(in, 2);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

START_TEST(test_unit_the)
{
    tu t;
    tu_open(&t);
    weft_acc *x = weft_param(t.p, WEFT_I64, 0);
    /* unit(the(x) * 3), and a map over a rank-0 array */
    weft_acc *u = weft_unit(weft_mul(weft_the(x), weft_i64(t.p, 3)));
    weft_fun *neg = weft_fun1(t.p, WEFT_I64);
    weft_fun_return(neg, weft_neg(weft_arg(neg, 0)));
    weft_acc *m = weft_map(neg, x);
    ck_assert_int_eq(weft_acc_rank(u), 0);
    ck_assert_int_eq(weft_acc_rank(m), 0);
    /* unit of a tuple: a rank-0 array with two leaves */
    weft_exp *pc[2] = {weft_the(x), weft_f32(t.p, 0.5f)};
    weft_acc *ut = weft_unit(weft_tuple(t.p, 2, pc));
    weft_acc *res[3] = {u, m, ut};
    weft_array *in = tu_arr_i(t.ctx, WEFT_I64, 0, NULL, I(-7));
    weft_array *out[3] = {NULL};
    TU_OK(tu_run(t.p, res, 3, &in, 1, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 0, NULL, I(-21));
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(7));
    TU_CHECK_I(t.ctx, out[2], 0, 0, NULL, I(-7));
    TU_CHECK_F(t.ctx, out[2], 1, 0, NULL, F(0.5), 0);
    ck_assert_int_eq(weft_type_leaves(t.ctx, weft_array_type(out[2])), 2);
    tu_release_all(out, 3);
    weft_array_release(in);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * generate, map, zipwith, zipwith3
 * ---------------------------------------------------------------------- */

START_TEST(test_generate)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *n = weft_param(p, WEFT_I64, 0);
    /* rank 1 of a run-time extent: i * i */
    weft_fun *g1 = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g1, 0), 0);
    weft_fun_return(g1, weft_mul(i, i));
    weft_acc *a1 = weft_generate(weft_index1(weft_the(n)), g1);
    /* rank 3: 2 x n x 2, value linear position */
    weft_exp *shc[3] = {weft_i64(p, 2), weft_the(n), weft_i64(p, 2)};
    weft_exp *sh = weft_index(p, 3, shc);
    weft_fun *g3 = weft_fun1(p, WEFT_DIM(3));
    weft_fun_return(g3, weft_to_index(sh, weft_arg(g3, 0)));
    weft_acc *a3 = weft_generate(sh, g3);
    weft_acc *res[2] = {a1, a3};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 2, &exe));
    weft_array *in = tu_arr_i(t.ctx, WEFT_I64, 0, NULL, I(3));
    weft_array *out[2] = {NULL};
    TU_OK(weft_run(exe, &in, 1, out, 2));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(0, 1, 4));
    TU_CHECK_I(t.ctx, out[1], 0, 3, TU_SH(2, 3, 2),
               I(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
    tu_release_all(out, 2);
    weft_array_release(in);
    /* an empty extent */
    in = tu_arr_i(t.ctx, WEFT_I64, 0, NULL, I(0));
    TU_OK(weft_run(exe, &in, 1, out, 2));
    TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
    TU_CHECK_SHAPE(out[1], 3, TU_SH(2, 0, 2));
    tu_release_all(out, 2);
    weft_array_release(in);
    /* a negative extent */
    in = tu_arr_i(t.ctx, WEFT_I64, 0, NULL, I(-1));
    TU_STATUS(WEFT_ERR_BAD_SHAPE, weft_run(exe, &in, 1, out, 2));
    ck_assert_ptr_null(out[0]);
    weft_array_release(in);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

START_TEST(test_map)
{
    tu t;
    tu_open(&t);
    weft_acc *xs = weft_param(t.p, WEFT_I32, 3);
    weft_fun *f = weft_fun1(t.p, WEFT_I32);
    weft_fun_return(f, weft_sub(weft_mul(weft_arg(f, 0), weft_arg(f, 0)),
                                weft_i32(t.p, 1)));
    weft_acc *r = weft_map(f, xs);
    ck_assert_int_eq(weft_acc_rank(r), 3);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(t.p, &r, 1, &exe));

    /* rank 3: 2x3x4 */
    weft_array *in = iota_234(t.ctx);
    weft_array *out = NULL;
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    int64_t want[24];
    for (int i = 0; i < 24; i++) {
        want[i] = i * i - 1;
    }
    TU_CHECK_I(t.ctx, out, 0, 3, TU_SH(2, 3, 4), want);
    weft_array_release(out);
    weft_array_release(in);

    /* empty: 2x0x4 */
    in = tu_arr_i(t.ctx, WEFT_I32, 3, TU_SH(2, 0, 4), NULL);
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_SHAPE(out, 3, TU_SH(2, 0, 4));
    weft_array_release(out);
    weft_array_release(in);
    weft_executable_free(exe);

    /* a map changing the element type: i32 -> f64 */
    tu_reset(&t);
    weft_acc *ys = weft_param(t.p, WEFT_I32, 1);
    weft_fun *h = weft_fun1(t.p, WEFT_I32);
    weft_fun_return(
        h, weft_fdiv(weft_convert(weft_arg(h, 0), WEFT_F64), weft_f64(t.p, 4)));
    r = weft_map(h, ys);
    ck_assert_int_eq(weft_acc_type(r), WEFT_F64);
    in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(1, -2, 10));
    TU_OK(weft_run1(t.p, &r, 1, &in, 1, &out, 1));
    ck_assert_int_eq(weft_array_type(out), WEFT_F64);
    TU_CHECK_F(t.ctx, out, 0, 1, TU_SH(3), F(0.25, -0.5, 2.5), 0);
    weft_array_release(out);
    weft_array_release(in);
    tu_close(&t);
}
END_TEST

/* map producing a tuple element type; map over an array of tuples given
 * with one host buffer per leaf. */
START_TEST(test_map_tuples)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    /* x -> (x, x * x as f64) */
    weft_acc *xs = weft_param(p, WEFT_I32, 2);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *pc[2] = {x, weft_convert(weft_mul(x, x), WEFT_F64)};
    weft_fun_return(f, weft_tuple(p, 2, pc));
    weft_acc *r1 = weft_map(f, xs);
    weft_type pair = weft_acc_type(r1);
    ck_assert_int_eq(weft_type_leaves(t.ctx, pair), 2);
    ck_assert_int_eq(weft_type_leaf(t.ctx, pair, 1), WEFT_F64);

    /* (a: i16, (b: f32, c: u8)) -> a * b + c as f32, over a tuple param */
    weft_type inner_c[2] = {WEFT_F32, WEFT_U8};
    weft_type inner = weft_type_tuple(t.ctx, 2, inner_c);
    weft_type outer_c[2] = {WEFT_I16, inner};
    weft_type outer = weft_type_tuple(t.ctx, 2, outer_c);
    ck_assert_int_eq(weft_type_leaves(t.ctx, outer), 3);
    weft_acc *ts = weft_param(p, outer, 1);
    weft_fun *g = weft_fun1(p, outer);
    weft_exp *a = weft_convert(weft_get(weft_arg(g, 0), 0), WEFT_F32);
    weft_exp *bc = weft_get(weft_arg(g, 0), 1);
    weft_fun_return(g, weft_add(weft_mul(a, weft_get(bc, 0)),
                                weft_convert(weft_get(bc, 1), WEFT_F32)));
    weft_acc *r2 = weft_map(g, ts);
    /* and the identity on the tuple array: it comes back leaf by leaf */
    weft_fun *id = weft_fun1(p, outer);
    weft_fun_return(id, weft_arg(id, 0));
    weft_acc *r3 = weft_map(id, ts);
    weft_acc *res[3] = {r1, r2, r3};
    TU_PROGRAM_OK(p);

    int16_t la[3] = {2, -3, 4};
    float lb[3] = {0.5f, 2.0f, -1.0f};
    uint8_t lc[3] = {1, 200, 0};
    const void *leaves[3] = {la, lb, lc};
    weft_array *in[2] = {
        tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 2), I(1, 2, -3, 4)),
        tu_arr_host(t.ctx, outer, 1, TU_SH(3), leaves)};
    ck_assert_int_eq(weft_array_type(in[1]), outer);
    weft_array *out[3] = {NULL};
    TU_OK(tu_run(p, res, 3, in, 2, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 2, TU_SH(2, 2), I(1, 2, -3, 4));
    TU_CHECK_F(t.ctx, out[0], 1, 2, TU_SH(2, 2), F(1, 4, 9, 16), 0);
    TU_CHECK_F(t.ctx, out[1], 0, 1, TU_SH(3), F(2, 194, -4), 0);
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(3), I(2, -3, 4));
    TU_CHECK_F(t.ctx, out[2], 1, 1, TU_SH(3), F(0.5, 2, -1), 0);
    TU_CHECK_I(t.ctx, out[2], 2, 1, TU_SH(3), I(1, 200, 0));
    tu_release_all(out, 3);
    tu_release_all(in, 2);
    tu_close(&t);
}
END_TEST

START_TEST(test_zipwith)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_acc *a1 = weft_param(p, WEFT_I32, 1);
    weft_acc *b1 = weft_param(p, WEFT_I32, 1);
    weft_acc *a2 = weft_param(p, WEFT_I32, 2);
    weft_acc *b2 = weft_param(p, WEFT_I32, 2);
    /* a function of two different types: x * 10 + y as i64 */
    weft_fun *mix = weft_fun2(p, WEFT_I32, WEFT_I64);
    weft_fun_return(mix,
                    weft_add(weft_mul(weft_convert(weft_arg(mix, 0), WEFT_I64),
                                      weft_i64(p, 10)),
                             weft_arg(mix, 1)));
    weft_acc *c = weft_param(p, WEFT_I64, 1);
    weft_acc *res[3] = {weft_zipwith(add, a1, b1), weft_zipwith(add, a2, b2),
                        weft_zipwith(mix, a1, c)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 3, &exe));
    /* [1,2,3,4] + [10,20,30] -> 3 elements; 2x3 + 3x2 -> 2x2 */
    weft_array *in[5] = {
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(4), I(1, 2, 3, 4)),
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(10, 20, 30)),
        tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 3), I(1, 2, 3, 4, 5, 6)),
        tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(3, 2), I(10, 20, 30, 40, 50, 60)),
        tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(5), I(1, 2, 3, 4, 5))};
    weft_array *out[3] = {NULL};
    TU_OK(weft_run(exe, in, 5, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(11, 22, 33));
    /* a2[i][j] + b2[i][j] for i < 2, j < 2: a2 rows (1 2 3) (4 5 6),
     * b2 rows (10 20) (30 40) (50 60) */
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(2, 2), I(11, 22, 34, 45));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(4), I(11, 22, 33, 44));
    ck_assert_int_eq(weft_array_type(out[2]), WEFT_I64);
    tu_release_all(out, 3);
    /* one side empty */
    weft_array_release(in[1]);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(0), NULL);
    weft_array_release(in[3]);
    in[3] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(5, 0), NULL);
    TU_OK(weft_run(exe, in, 5, out, 3));
    TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
    TU_CHECK_SHAPE(out[1], 2, TU_SH(2, 0));
    tu_release_all(out, 3);
    tu_release_all(in, 5);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

START_TEST(test_zipwith3)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(
        f, weft_add(weft_mul(weft_arg(f, 0), weft_arg(f, 1)), weft_arg(f, 2)));
    weft_acc *a = weft_param(p, WEFT_F32, 3);
    weft_acc *b = weft_param(p, WEFT_F32, 3);
    weft_acc *c = weft_param(p, WEFT_F32, 3);
    weft_acc *r = weft_zipwith3(f, a, b, c);
    /* 1x2x2, 2x2x3, 1x1x2 -> 1x1x2 */
    weft_array *in[3] = {
        tu_arr_f(t.ctx, WEFT_F32, 3, TU_SH(1, 2, 2), F(1, 2, 3, 4)),
        tu_arr_f(t.ctx, WEFT_F32, 3, TU_SH(2, 2, 3),
                 F(0.5, 1.5, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9)),
        tu_arr_f(t.ctx, WEFT_F32, 3, TU_SH(1, 1, 2), F(100, 200))};
    weft_array *out = NULL;
    TU_OK(weft_run1(p, &r, 1, in, 3, &out, 1));
    TU_CHECK_F(t.ctx, out, 0, 3, TU_SH(1, 1, 2), F(100.5, 203), 0);
    weft_array_release(out);
    tu_release_all(in, 3);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * reshape, replicate, slice
 * ---------------------------------------------------------------------- */

START_TEST(test_reshape)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 2);
    weft_acc *r1 =
        weft_reshape(weft_index2(weft_i64(p, 3), weft_i64(p, 2)), xs);
    weft_acc *r2 = weft_reshape(weft_index1(weft_size(xs)), xs);
    weft_exp *c3[3] = {weft_i64(p, 1), weft_i64(p, 6), weft_i64(p, 1)};
    weft_acc *r3 =
        weft_reshape(weft_index(p, 3, c3), weft_map(fun_add_i32(p, 1), xs));
    weft_acc *res[3] = {r1, r2, r3};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 3, &exe));
    weft_array *in =
        tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 3), I(1, 2, 3, 4, 5, 6));
    weft_array *out[3] = {NULL};
    TU_OK(weft_run(exe, &in, 1, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 2, TU_SH(3, 2), I(1, 2, 3, 4, 5, 6));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(6), I(1, 2, 3, 4, 5, 6));
    TU_CHECK_I(t.ctx, out[2], 0, 3, TU_SH(1, 6, 1), I(2, 3, 4, 5, 6, 7));
    tu_release_all(out, 3);
    weft_array_release(in);
    /* a size that does not match: 2x2 cannot become 3x2 */
    in = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 2), I(1, 2, 3, 4));
    TU_STATUS(WEFT_ERR_RESHAPE_SIZE, weft_run(exe, &in, 1, out, 3));
    ck_assert_ptr_null(out[0]);
    weft_array_release(in);
    weft_executable_free(exe);

    /* rank 0 to rank 2 (1x1) and back; empty to another empty shape */
    tu_reset(&t);
    p = t.p;
    weft_acc *s = weft_param(p, WEFT_U8, 0);
    weft_acc *s2 = weft_reshape(weft_index2(weft_i64(p, 1), weft_i64(p, 1)), s);
    weft_acc *e = weft_param(p, WEFT_U8, 1);
    weft_acc *e2 = weft_reshape(weft_index2(weft_i64(p, 4), weft_i64(p, 0)), e);
    weft_acc *res2[3] = {s2, weft_reshape(weft_index(p, 0, NULL), s2), e2};
    weft_array *in2[2] = {tu_arr_i(t.ctx, WEFT_U8, 0, NULL, I(9)),
                          tu_arr_i(t.ctx, WEFT_U8, 1, TU_SH(0), NULL)};
    TU_OK(weft_run1(p, res2, 3, in2, 2, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 2, TU_SH(1, 1), I(9));
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(9));
    TU_CHECK_SHAPE(out[2], 2, TU_SH(4, 0));
    tu_release_all(out, 3);
    tu_release_all(in2, 2);
    tu_close(&t);
}
END_TEST

START_TEST(test_replicate)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_acc *z = weft_param(p, WEFT_I32, 0);
    weft_exp *all = weft_all(p);
    /* [all, 3] on a vector: each element repeated along a new inner dim */
    weft_exp *s1[2] = {all, weft_i64(p, 3)};
    /* [3, all]: the vector repeated as rows */
    weft_exp *s2[2] = {weft_i64(p, 3), weft_all(p)};
    /* [2, all, all] on a matrix */
    weft_exp *s3[3] = {weft_i64(p, 2), weft_all(p), weft_all(p)};
    /* [all, 2, all] on a matrix */
    weft_exp *s4[3] = {weft_all(p), weft_i64(p, 2), weft_all(p)};
    /* [4] on a rank-0 array */
    weft_exp *s5[1] = {weft_i64(p, 4)};
    /* [all, 0]: an empty result */
    weft_exp *s6[2] = {weft_all(p), weft_i64(p, 0)};
    weft_acc *res[6] = {weft_replicate(2, s1, v), weft_replicate(2, s2, v),
                        weft_replicate(3, s3, m), weft_replicate(3, s4, m),
                        weft_replicate(1, s5, z), weft_replicate(2, s6, v)};
    TU_PROGRAM_OK(p);
    ck_assert_int_eq(weft_acc_rank(res[2]), 3);
    weft_array *in[3] = {
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(2), I(1, 2)),
        tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 2), I(1, 2, 3, 4)),
        tu_arr_i(t.ctx, WEFT_I32, 0, NULL, I(7))};
    weft_array *out[6] = {NULL};
    TU_OK(tu_run(p, res, 6, in, 3, out, 6));
    TU_CHECK_I(t.ctx, out[0], 0, 2, TU_SH(2, 3), I(1, 1, 1, 2, 2, 2));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(3, 2), I(1, 2, 1, 2, 1, 2));
    TU_CHECK_I(t.ctx, out[2], 0, 3, TU_SH(2, 2, 2), I(1, 2, 3, 4, 1, 2, 3, 4));
    TU_CHECK_I(t.ctx, out[3], 0, 3, TU_SH(2, 2, 2), I(1, 2, 1, 2, 3, 4, 3, 4));
    TU_CHECK_I(t.ctx, out[4], 0, 1, TU_SH(4), I(7, 7, 7, 7));
    TU_CHECK_SHAPE(out[5], 2, TU_SH(2, 0));
    tu_release_all(out, 6);
    tu_release_all(in, 3);
    tu_close(&t);
}
END_TEST

START_TEST(test_slice)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *a = weft_param(p, WEFT_I32, 3); /* 2x3x4 */
    weft_acc *k = weft_param(p, WEFT_I64, 0); /* a run-time index */
    weft_exp *s1[3] = {weft_all(p), weft_i64(p, 1), weft_all(p)};
    weft_exp *s2[3] = {weft_i64(p, 1), weft_all(p), weft_all(p)};
    weft_exp *s3[3] = {weft_all(p), weft_all(p), weft_the(k)};
    weft_exp *s4[3] = {weft_i64(p, 1), weft_i64(p, 2), weft_i64(p, 3)};
    weft_exp *s5[3] = {weft_all(p), weft_all(p), weft_all(p)};
    weft_acc *res[5] = {weft_slice(a, 3, s1), weft_slice(a, 3, s2),
                        weft_slice(a, 3, s3), weft_slice(a, 3, s4),
                        weft_slice(a, 3, s5)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 5, &exe));
    weft_array *in[2] = {iota_234(t.ctx),
                         tu_arr_i(t.ctx, WEFT_I64, 0, NULL, I(2))};
    weft_array *out[5] = {NULL};
    TU_OK(weft_run(exe, in, 2, out, 5));
    /* a[i][j][k] = 12 i + 4 j + k */
    TU_CHECK_I(t.ctx, out[0], 0, 2, TU_SH(2, 4), I(4, 5, 6, 7, 16, 17, 18, 19));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(3, 4),
               I(12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23));
    TU_CHECK_I(t.ctx, out[2], 0, 2, TU_SH(2, 3), I(2, 6, 10, 14, 18, 22));
    TU_CHECK_I(t.ctx, out[3], 0, 0, NULL, I(23));
    TU_CHECK_SHAPE(out[4], 3, TU_SH(2, 3, 4));
    tu_release_all(out, 5);
    weft_array_release(in[1]);
    /* an index outside its dimension */
    in[1] = tu_arr_i(t.ctx, WEFT_I64, 0, NULL, I(4));
    TU_STATUS(WEFT_ERR_SLICE_INDEX, weft_run(exe, in, 2, out, 5));
    ck_assert_ptr_null(out[0]);
    tu_release_all(in, 2);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * backpermute, transform
 * ---------------------------------------------------------------------- */

START_TEST(test_backpermute)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_acc *c = weft_param(p, WEFT_I32, 3);
    /* reverse: r[i] = v[n-1-i] */
    weft_fun *rev = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(rev,
                    weft_index1(weft_sub(weft_sub(weft_size(v), weft_i64(p, 1)),
                                         weft_get(weft_arg(rev, 0), 0))));
    weft_acc *r1 = weft_backpermute(weft_shape(v), rev, v);
    /* transpose 2x3 -> 3x2 */
    weft_fun *tr = weft_fun1(p, WEFT_DIM(2));
    weft_fun_return(tr, weft_index2(weft_get(weft_arg(tr, 0), 1),
                                    weft_get(weft_arg(tr, 0), 0)));
    weft_acc *r2 = weft_backpermute(
        weft_index2(weft_get(weft_shape(m), 1), weft_get(weft_shape(m), 0)), tr,
        m);
    /* rank 3: r[i][j][k] = c[k][j][i], shape 4x3x2 */
    weft_fun *t3 = weft_fun1(p, WEFT_DIM(3));
    weft_exp *ix = weft_arg(t3, 0);
    weft_exp *rc[3] = {weft_get(ix, 2), weft_get(ix, 1), weft_get(ix, 0)};
    weft_fun_return(t3, weft_index(p, 3, rc));
    weft_exp *sc[3] = {weft_i64(p, 4), weft_i64(p, 3), weft_i64(p, 2)};
    weft_acc *r3 = weft_backpermute(weft_index(p, 3, sc), t3, c);
    /* rank change: the diagonal of a matrix, rank 2 -> 1 */
    weft_fun *dg = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(dg, weft_index2(weft_get(weft_arg(dg, 0), 0),
                                    weft_get(weft_arg(dg, 0), 0)));
    weft_acc *r4 = weft_backpermute(weft_index1(weft_i64(p, 2)), dg, m);
    /* rank 0 from a vector: its element 1 */
    weft_fun *one = weft_fun1(p, WEFT_DIM(0));
    weft_fun_return(one, weft_index1(weft_i64(p, 1)));
    weft_acc *r5 = weft_backpermute(weft_index(p, 0, NULL), one, v);
    weft_acc *res[5] = {r1, r2, r3, r4, r5};
    TU_PROGRAM_OK(p);
    weft_array *in[3] = {
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(4), I(1, 2, 3, 4)),
        tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 3), I(1, 2, 3, 4, 5, 6)),
        iota_234(t.ctx)};
    weft_array *out[5] = {NULL};
    TU_OK(tu_run(p, res, 5, in, 3, out, 5));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(4), I(4, 3, 2, 1));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(3, 2), I(1, 4, 2, 5, 3, 6));
    int64_t want[24];
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 3; j++) {
            for (int k = 0; k < 2; k++) {
                want[(i * 3 + j) * 2 + k] = 12 * k + 4 * j + i;
            }
        }
    }
    TU_CHECK_I(t.ctx, out[2], 0, 3, TU_SH(4, 3, 2), want);
    TU_CHECK_I(t.ctx, out[3], 0, 1, TU_SH(2), I(1, 5));
    TU_CHECK_I(t.ctx, out[4], 0, 0, NULL, I(2));
    tu_release_all(out, 5);
    tu_release_all(in, 3);

    /* an index outside the source */
    tu_reset(&t);
    p = t.p;
    v = weft_param(p, WEFT_I32, 1);
    weft_fun *off = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(off, weft_index1(weft_add(weft_get(weft_arg(off, 0), 0),
                                              weft_i64(p, 1))));
    r1 = weft_backpermute(weft_shape(v), off, v);
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(2), I(1, 2));
    TU_STATUS(WEFT_ERR_OUT_OF_BOUNDS, weft_run1(p, &r1, 1, in, 1, out, 1));
    ck_assert_ptr_null(out[0]);
    weft_array_release(in[0]);
    tu_close(&t);
}
END_TEST

START_TEST(test_transform)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *m = weft_param(p, WEFT_I16, 2);
    /* transpose and convert to f64 halved */
    weft_fun *tr = weft_fun1(p, WEFT_DIM(2));
    weft_fun_return(tr, weft_index2(weft_get(weft_arg(tr, 0), 1),
                                    weft_get(weft_arg(tr, 0), 0)));
    weft_fun *half = weft_fun1(p, WEFT_I16);
    weft_fun_return(half, weft_fdiv(weft_convert(weft_arg(half, 0), WEFT_F64),
                                    weft_f64(p, 2)));
    weft_acc *r = weft_transform(
        weft_index2(weft_get(weft_shape(m), 1), weft_get(weft_shape(m), 0)), tr,
        half, m);
    ck_assert_int_eq(weft_acc_type(r), WEFT_F64);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_array *in =
        tu_arr_i(t.ctx, WEFT_I16, 2, TU_SH(2, 3), I(1, 2, 3, 4, 5, 6));
    weft_array *out = NULL;
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_F(t.ctx, out, 0, 2, TU_SH(3, 2), F(0.5, 2, 1, 2.5, 1.5, 3), 0);
    weft_array_release(out);
    weft_array_release(in);
    /* empty */
    in = tu_arr_i(t.ctx, WEFT_I16, 2, TU_SH(0, 3), NULL);
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_SHAPE(out, 2, TU_SH(3, 0));
    weft_array_release(out);
    weft_array_release(in);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * acond, awhile, tuples of arrays
 * ---------------------------------------------------------------------- */

START_TEST(test_acond)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *c = weft_param(p, WEFT_BOOL, 0);
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_acc *r = weft_acond(weft_the(c), weft_map(fun_add_i32(p, 1), xs),
                             weft_map(fun_mul_i32(p, 2), xs));
    /* a branch that would fail (index out of bounds) is not evaluated */
    weft_fun *bad = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(bad, weft_index1(weft_i64(p, 1000)));
    weft_acc *r2 =
        weft_acond(weft_the(c), xs, weft_backpermute(weft_shape(xs), bad, xs));
    weft_acc *res[2] = {r, r2};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 2, &exe));
    weft_array *in[2] = {tu_arr_i(t.ctx, WEFT_BOOL, 0, NULL, I(1)),
                         tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(1, 2, 3))};
    weft_array *out[2] = {NULL};
    TU_OK(weft_run(exe, in, 2, out, 2));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(2, 3, 4));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(3), I(1, 2, 3));
    tu_release_all(out, 2);
    weft_array_release(in[0]);
    in[0] = tu_arr_i(t.ctx, WEFT_BOOL, 0, NULL, I(0));
    weft_executable_free(exe);
    /* the else branch: compile only the first result */
    TU_OK(weft_compile(p, res, 1, &exe));
    TU_OK(weft_run(exe, in, 2, out, 1));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(2, 4, 6));
    tu_release_all(out, 1);
    weft_executable_free(exe);

    /* acond on tuples of arrays: (xs, xs+1) or (xs*2, xs) */
    weft_acc *ta[2] = {xs, weft_map(fun_add_i32(p, 1), xs)};
    weft_acc *tb[2] = {weft_map(fun_mul_i32(p, 2), xs), xs};
    weft_acc *rt =
        weft_acond(weft_the(c), weft_atuple(p, 2, ta), weft_atuple(p, 2, tb));
    ck_assert_int_eq(weft_acc_arity(rt), 2);
    TU_OK(weft_run1(p, &rt, 1, in, 2, out, 2));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(2, 4, 6));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(3), I(1, 2, 3));
    tu_release_all(out, 2);
    tu_release_all(in, 2);
    tu_close(&t);
}
END_TEST

START_TEST(test_awhile)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    /* double every element while the maximum is at most 100 */
    weft_afun *cond = weft_afun_create(p, WEFT_I32, 1);
    weft_fun *mx = tu_fun_op2(p, WEFT_OP_MAX, WEFT_I32);
    weft_afun_return(
        cond,
        weft_unit(weft_le(weft_the(weft_fold1_all(mx, weft_afun_arg(cond))),
                          weft_i32(p, 100))));
    weft_afun *body = weft_afun_create(p, WEFT_I32, 1);
    weft_afun_return(body, weft_map(fun_mul_i32(p, 2), weft_afun_arg(body)));
    weft_acc *r = weft_awhile(cond, body, xs);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_array *in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(1, 3, 7));
    weft_array *out = NULL;
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(3), I(16, 48, 112));
    weft_array_release(out);
    weft_array_release(in);
    /* condition false at once: the input comes back */
    in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(2), I(500, 1));
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(2), I(500, 1));
    weft_array_release(out);
    weft_array_release(in);
    weft_executable_free(exe);

    /* over a tuple of arrays: (v, n) with n a rank-0 counter; grow v by
     * one element per step (shape changes) until n reaches 3 */
    tu_reset(&t);
    p = t.p;
    weft_acc *v0 = weft_param(p, WEFT_I64, 1);
    weft_acc *init_c[2] = {v0, weft_unit(weft_i32(p, 0))};
    weft_acc *init = weft_atuple(p, 2, init_c);
    weft_afun *c2 = weft_afun_like(init);
    weft_afun_return(
        c2, weft_unit(weft_lt(weft_the(weft_aget(weft_afun_arg(c2), 1)),
                              weft_i32(p, 3))));
    weft_afun *b2 = weft_afun_like(init);
    weft_acc *st = weft_afun_arg(b2);
    weft_acc *v = weft_aget(st, 0);
    /* v' = generate (n+1) (i -> i < n ? v[i] : 10 * n) */
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_exp *n = weft_size(v);
    weft_fun_return(g, weft_cond(weft_lt(i, n), weft_at(v, weft_index1(i)),
                                 weft_mul(n, weft_i64(p, 10))));
    weft_fun *inc = weft_fun1(p, WEFT_I32);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i32(p, 1)));
    weft_acc *next_c[2] = {
        weft_generate(weft_index1(weft_add(n, weft_i64(p, 1))), g),
        weft_map(inc, weft_aget(st, 1))};
    weft_afun_return(b2, weft_atuple(p, 2, next_c));
    weft_acc *r2 = weft_awhile(c2, b2, init);
    ck_assert_int_eq(weft_acc_arity(r2), 2);
    in = tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(1), I(5));
    weft_array *out2[2] = {NULL};
    TU_OK(weft_run1(p, &r2, 1, &in, 1, out2, 2));
    TU_CHECK_I(t.ctx, out2[0], 0, 1, TU_SH(4), I(5, 10, 20, 30));
    TU_CHECK_I(t.ctx, out2[1], 0, 0, NULL, I(3));
    tu_release_all(out2, 2);
    weft_array_release(in);
    tu_close(&t);
}
END_TEST

START_TEST(test_atuple_aget)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_acc *ys = weft_param(p, WEFT_F32, 2);
    weft_acc *c3[3] = {weft_map(fun_add_i32(p, 1), xs), ys, xs};
    weft_acc *tup = weft_atuple(p, 3, c3);
    ck_assert_int_eq(weft_acc_arity(tup), 3);
    ck_assert_int_eq(weft_acc_type(tup), 0);
    weft_acc *second = weft_aget(tup, 1);
    ck_assert_int_eq(weft_acc_type(second), WEFT_F32);
    ck_assert_int_eq(weft_acc_rank(second), 2);
    /* a nested tuple, and results mixing tuples and single arrays:
     * outputs are all their arrays in order */
    weft_acc *c2[2] = {tup, weft_aget(tup, 0)};
    weft_acc *nest = weft_atuple(p, 2, c2);
    weft_acc *res[3] = {weft_map(fun_mul_i32(p, 3), weft_aget(tup, 2)), nest,
                        second};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 3, &exe));
    ck_assert_int_eq(weft_executable_outputs(exe), 1 + 4 + 1);
    weft_array *in[2] = {
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(2), I(5, 6)),
        tu_arr_f(t.ctx, WEFT_F32, 2, TU_SH(1, 2), F(0.5, 1.5))};
    weft_array *out[6] = {NULL};
    TU_OK(weft_run(exe, in, 2, out, 6));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(2), I(15, 18));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(2), I(6, 7));
    TU_CHECK_F(t.ctx, out[2], 0, 2, TU_SH(1, 2), F(0.5, 1.5), 0);
    TU_CHECK_I(t.ctx, out[3], 0, 1, TU_SH(2), I(5, 6));
    TU_CHECK_I(t.ctx, out[4], 0, 1, TU_SH(2), I(6, 7));
    TU_CHECK_F(t.ctx, out[5], 0, 2, TU_SH(1, 2), F(0.5, 1.5), 0);
    tu_release_all(out, 6);
    tu_release_all(in, 2);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

static Suite *ops_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("structural");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_use);
    tcase_add_test(tc, test_param_run_many);
    tcase_add_test(tc, test_unit_the);
    tcase_add_test(tc, test_generate);
    tcase_add_test(tc, test_map);
    tcase_add_test(tc, test_map_tuples);
    tcase_add_test(tc, test_zipwith);
    tcase_add_test(tc, test_zipwith3);
    tcase_add_test(tc, test_reshape);
    tcase_add_test(tc, test_replicate);
    tcase_add_test(tc, test_slice);
    tcase_add_test(tc, test_backpermute);
    tcase_add_test(tc, test_transform);
    suite_add_tcase(s, tc);
    TCase *tk = tcase_create("control");
    tcase_set_timeout(tk, 60);
    tcase_add_test(tk, test_acond);
    tcase_add_test(tk, test_awhile);
    tcase_add_test(tk, test_atuple_aget);
    suite_add_tcase(s, tk);
    return s;
}

TU_MAIN(ops_suite)
