/*
 * tests/test_ops_reduce.c: reductions (fold, fold1, fold_all, fold1_all,
 * fold_seg, fold1_seg), scans (scanl, scanl1, scanl_, scanr, scanr1,
 * scanr_), permute and stencils (stencil, stencil2) on the reference
 * interpreter against hand-computed values.
 *
 * The orientation of the combining function is checked with projections,
 * which are associative but not commutative: with f(a, b) = b a fold gives
 * the last element of each row (the seed for an empty row) and scanl gives
 * the seed followed by the elements; with f(a, b) = a a fold gives the seed
 * and scanr gives the elements followed by the seed.
 *
 * Stencil expectations follow DESIGN.md's boundaries (mirror: i < 0 reads
 * -i, i >= n reads n - (i - n + 2); wrap modulo n; clamp the edge; constant
 * the value given).  The stencil function weights every window position
 * differently (powers of ten for rank 1, 1 .. k for larger windows), so a
 * value read from the wrong place changes the result.  Rank 1 values were
 * worked out by hand; those of ranks 2 and 3 by a small independent script
 * implementing the same boundary rules.
 * All values are integers or small dyadic floats: comparisons are exact.
 */
#include "tu.h"

#define I(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})

/* (a, b) -> b  and  (a, b) -> a on type t. */
static weft_fun *fun_right(weft_program *p, weft_type t)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_arg(f, 1));
    return f;
}

static weft_fun *fun_left(weft_program *p, weft_type t)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_arg(f, 0));
    return f;
}

static weft_array *iota(weft_context *ctx, weft_type t, int rank,
                        const int64_t *shape, int64_t from)
{
    int64_t n = tu_shape_size(rank, shape);
    int64_t *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = from + i;
    }
    weft_array *a = tu_arr_i(ctx, t, rank, shape, v);
    free(v);
    return a;
}

/* ------------------------------------------------------------------------
 * fold, fold1, fold_all, fold1_all
 * ---------------------------------------------------------------------- */

START_TEST(test_fold)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    /* the seed (10, not an identity) enters once per row */
    weft_acc *res[4] = {
        weft_fold(add, weft_i32(p, 10), m),
        weft_fold(add, weft_i32(p, 10), v), /* vector -> rank 0 */
        weft_fold(fun_right(p, WEFT_I32), weft_i32(p, -1), m),
        weft_fold(fun_left(p, WEFT_I32), weft_i32(p, -1), m)};
    ck_assert_int_eq(weft_acc_rank(res[0]), 1);
    ck_assert_int_eq(weft_acc_rank(res[1]), 0);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 4, &exe));
    weft_array *in[2] = {iota(t.ctx, WEFT_I32, 2, TU_SH(2, 3), 1),
                         iota(t.ctx, WEFT_I32, 1, TU_SH(4), 1)};
    weft_array *out[4] = {NULL};
    TU_OK(weft_run(exe, in, 2, out, 4));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(2), I(16, 25));
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(20));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(2), I(3, 6));
    TU_CHECK_I(t.ctx, out[3], 0, 1, TU_SH(2), I(-1, -1));
    tu_release_all(out, 4);
    tu_release_all(in, 2);

    /* empty rows give the seed; no rows give an empty result */
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(3, 0), NULL);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(0), NULL);
    TU_OK(weft_run(exe, in, 2, out, 4));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(10, 10, 10));
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(10));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(3), I(-1, -1, -1));
    tu_release_all(out, 4);
    weft_array_release(in[0]);
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(0, 5), NULL);
    TU_OK(weft_run(exe, in, 2, out, 4));
    TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
    tu_release_all(out, 4);
    tu_release_all(in, 2);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

START_TEST(test_fold_rank3_float)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *c = weft_param(p, WEFT_I64, 3);
    weft_acc *x = weft_param(p, WEFT_F64, 1);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64);
    weft_fun *mul = tu_fun_op2(p, WEFT_OP_MUL, WEFT_F64);
    weft_acc *res[2] = {weft_fold(add, weft_i64(p, 0), c),
                        weft_fold(mul, weft_f64(p, 2), x)};
    weft_array *in[2] = {
        iota(t.ctx, WEFT_I64, 3, TU_SH(2, 3, 4), 0),
        tu_arr_f(t.ctx, WEFT_F64, 1, TU_SH(3), F(0.5, -3, 1.25))};
    weft_array *out[2] = {NULL};
    TU_OK(weft_run1(p, res, 2, in, 2, out, 2));
    /* row r holds 4r .. 4r+3: sum 16r + 6 */
    TU_CHECK_I(t.ctx, out[0], 0, 2, TU_SH(2, 3), I(6, 22, 38, 54, 70, 86));
    TU_CHECK_F(t.ctx, out[1], 0, 0, NULL, F(-3.75), 0);
    tu_release_all(out, 2);
    tu_release_all(in, 2);
    tu_close(&t);
}
END_TEST

/* fold over pairs: (sum, count) of each row, seed (0, 0). */
START_TEST(test_fold_pairs)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_type pc[2] = {WEFT_F64, WEFT_I32};
    weft_type pair = weft_type_tuple(t.ctx, 2, pc);
    weft_fun *f = weft_fun2(p, pair, pair);
    weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1);
    weft_exp *sum[2] = {weft_add(weft_get(a, 0), weft_get(b, 0)),
                        weft_add(weft_get(a, 1), weft_get(b, 1))};
    weft_fun_return(f, weft_tuple(p, 2, sum));
    weft_exp *zc[2] = {weft_f64(p, 0), weft_i32(p, 0)};
    weft_exp *z = weft_tuple(p, 2, zc);
    weft_fun *one = weft_fun1(p, WEFT_F64);
    weft_exp *oc[2] = {weft_arg(one, 0), weft_i32(p, 1)};
    weft_fun_return(one, weft_tuple(p, 2, oc));
    weft_acc *xs = weft_param(p, WEFT_F64, 2);
    weft_acc *pairs = weft_map(one, xs);
    weft_acc *res[2] = {weft_fold(f, z, pairs), weft_fold_all(f, z, pairs)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 2, &exe));
    weft_array *in = tu_arr_f(t.ctx, WEFT_F64, 2, TU_SH(2, 3),
                              F(1.5, 2.5, 4, -1, 0.25, 0.75));
    weft_array *out[2] = {NULL};
    TU_OK(weft_run(exe, &in, 1, out, 2));
    TU_CHECK_F(t.ctx, out[0], 0, 1, TU_SH(2), F(8, 0), 0);
    TU_CHECK_I(t.ctx, out[0], 1, 1, TU_SH(2), I(3, 3));
    TU_CHECK_F(t.ctx, out[1], 0, 0, NULL, F(8), 0);
    TU_CHECK_I(t.ctx, out[1], 1, 0, NULL, I(6));
    tu_release_all(out, 2);
    weft_array_release(in);
    /* empty: the seed pair */
    in = tu_arr_f(t.ctx, WEFT_F64, 2, TU_SH(1, 0), NULL);
    TU_OK(weft_run(exe, &in, 1, out, 2));
    TU_CHECK_F(t.ctx, out[0], 0, 1, TU_SH(1), F(0), 0);
    TU_CHECK_I(t.ctx, out[0], 1, 1, TU_SH(1), I(0));
    TU_CHECK_I(t.ctx, out[1], 1, 0, NULL, I(0));
    tu_release_all(out, 2);
    weft_array_release(in);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

START_TEST(test_fold1)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *m = weft_param(p, WEFT_I16, 2);
    weft_acc *res[3] = {weft_fold1(tu_fun_op2(p, WEFT_OP_MAX, WEFT_I16), m),
                        weft_fold1(fun_left(p, WEFT_I16), m),
                        weft_fold1(fun_right(p, WEFT_I16), m)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 3, &exe));
    weft_array *in =
        tu_arr_i(t.ctx, WEFT_I16, 2, TU_SH(2, 3), I(3, 1, 2, -5, -7, -6));
    weft_array *out[3] = {NULL};
    TU_OK(weft_run(exe, &in, 1, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(2), I(3, -5));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(2), I(3, -5));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(2), I(2, -6));
    tu_release_all(out, 3);
    weft_array_release(in);
    /* one element per row */
    in = tu_arr_i(t.ctx, WEFT_I16, 2, TU_SH(3, 1), I(7, 8, 9));
    TU_OK(weft_run(exe, &in, 1, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(7, 8, 9));
    tu_release_all(out, 3);
    weft_array_release(in);
    /* no rows: fine, an empty result */
    in = tu_arr_i(t.ctx, WEFT_I16, 2, TU_SH(0, 4), NULL);
    TU_OK(weft_run(exe, &in, 1, out, 3));
    TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
    tu_release_all(out, 3);
    weft_array_release(in);
    /* empty rows: an error */
    in = tu_arr_i(t.ctx, WEFT_I16, 2, TU_SH(2, 0), NULL);
    TU_STATUS(WEFT_ERR_EMPTY_ARRAY, weft_run(exe, &in, 1, out, 3));
    ck_assert_ptr_null(out[0]);
    weft_array_release(in);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

START_TEST(test_fold_all)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *c = weft_param(p, WEFT_I32, 3);
    weft_acc *s = weft_param(p, WEFT_I32, 0);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_fun *mx = tu_fun_op2(p, WEFT_OP_MAX, WEFT_I32);
    weft_acc *res[4] = {
        weft_fold_all(add, weft_i32(p, 1000), c), weft_fold1_all(mx, c),
        weft_fold_all(add, weft_i32(p, 1000), s), weft_fold1_all(mx, s)};
    ck_assert_int_eq(weft_acc_rank(res[0]), 0);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 4, &exe));
    weft_array *in[2] = {iota(t.ctx, WEFT_I32, 3, TU_SH(2, 3, 4), 0),
                         tu_arr_i(t.ctx, WEFT_I32, 0, NULL, I(5))};
    weft_array *out[4] = {NULL};
    TU_OK(weft_run(exe, in, 2, out, 4));
    TU_CHECK_I(t.ctx, out[0], 0, 0, NULL, I(1276)); /* 1000 + 0+..+23 */
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(23));
    TU_CHECK_I(t.ctx, out[2], 0, 0, NULL, I(1005));
    TU_CHECK_I(t.ctx, out[3], 0, 0, NULL, I(5));
    tu_release_all(out, 4);
    weft_array_release(in[0]);
    /* empty: fold_all gives the seed, fold1_all is an error */
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 3, TU_SH(2, 0, 3), NULL);
    TU_STATUS(WEFT_ERR_EMPTY_ARRAY, weft_run(exe, in, 2, out, 4));
    weft_executable_free(exe);
    TU_OK(weft_compile(p, res, 1, &exe));
    TU_OK(weft_run(exe, in, 2, out, 1));
    TU_CHECK_I(t.ctx, out[0], 0, 0, NULL, I(1000));
    tu_release_all(out, 1);
    tu_release_all(in, 2);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * fold_seg, fold1_seg
 * ---------------------------------------------------------------------- */

START_TEST(test_fold_seg)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_acc *seg = weft_param(p, WEFT_I32, 1);
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_acc *seg64 = weft_param(p, WEFT_I64, 1);
    weft_acc *res[3] = {weft_fold_seg(add, weft_i32(p, 100), v, seg),
                        weft_fold_seg(add, weft_i32(p, 0), m, seg64),
                        weft_fold1_seg(add, m, seg64)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 3, &exe));
    /* 1..10 in segments 2, 3, 0, 4 (the 10 is past the last segment) */
    weft_array *in[4] = {iota(t.ctx, WEFT_I32, 1, TU_SH(10), 1),
                         tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(4), I(2, 3, 0, 4)),
                         iota(t.ctx, WEFT_I32, 2, TU_SH(2, 5), 1),
                         tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(2), I(2, 3))};
    weft_array *out[3] = {NULL};
    TU_OK(weft_run(exe, in, 4, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(4), I(103, 112, 100, 130));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(2, 2), I(3, 12, 13, 27));
    TU_CHECK_I(t.ctx, out[2], 0, 2, TU_SH(2, 2), I(3, 12, 13, 27));
    tu_release_all(out, 3);

    /* no segments: innermost extent 0 */
    weft_array_release(in[1]);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(0), NULL);
    weft_array_release(in[3]);
    in[3] = tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(0), NULL);
    TU_OK(weft_run(exe, in, 4, out, 3));
    TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
    TU_CHECK_SHAPE(out[1], 2, TU_SH(2, 0));
    tu_release_all(out, 3);

    /* lengths past the extent, or negative: an error */
    weft_array_release(in[1]);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(2), I(6, 5));
    TU_STATUS(WEFT_ERR_SEGMENTS, weft_run(exe, in, 4, out, 3));
    ck_assert_ptr_null(out[0]);
    weft_array_release(in[1]);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(2), I(3, -1));
    TU_STATUS(WEFT_ERR_SEGMENTS, weft_run(exe, in, 4, out, 3));
    /* fold1_seg of an empty segment: an error (fold_seg gives z) */
    weft_array_release(in[1]);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(1), I(1));
    weft_array_release(in[3]);
    in[3] = tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(2), I(0, 5));
    TU_STATUS(WEFT_ERR_EMPTY_ARRAY, weft_run(exe, in, 4, out, 3));
    weft_executable_free(exe);
    TU_OK(weft_compile(p, res, 2, &exe));
    TU_OK(weft_run(exe, in, 4, out, 2));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(2, 2), I(0, 15, 0, 40));
    tu_release_all(out, 2);
    tu_release_all(in, 4);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

/* fold_seg_offsets, fold1_seg_offsets: segments as CSR's row pointers,
 * from any start, elements outside them ignored */
START_TEST(test_fold_seg_offsets)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_acc *off = weft_param(p, WEFT_I32, 1);
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_acc *off64 = weft_param(p, WEFT_U64, 1);
    weft_acc *res[3] = {weft_fold_seg_offsets(add, weft_i32(p, 100), v, off),
                        weft_fold_seg_offsets(add, weft_i32(p, 0), m, off64),
                        weft_fold1_seg_offsets(add, m, off64)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 3, &exe));
    /* 1..10: offsets 1, 3, 6, 6, 9 are the segments [2, 3], [4, 5, 6],
     * none, [7, 8, 9] (1 and 10 in none); rows of 1..5 and 6..10 cut at
     * 0, 2, 4 */
    weft_array *in[4] = {
        iota(t.ctx, WEFT_I32, 1, TU_SH(10), 1),
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(5), I(1, 3, 6, 6, 9)),
        iota(t.ctx, WEFT_I32, 2, TU_SH(2, 5), 1),
        tu_arr_i(t.ctx, WEFT_U64, 1, TU_SH(3), I(0, 2, 4))};
    weft_array *out[3] = {NULL};
    TU_OK(weft_run(exe, in, 4, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(4), I(105, 115, 100, 124));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(2, 2), I(3, 7, 13, 17));
    TU_CHECK_I(t.ctx, out[2], 0, 2, TU_SH(2, 2), I(3, 7, 13, 17));
    tu_release_all(out, 3);

    /* no segments: no offsets, or one */
    for (int64_t n = 0; n < 2; n++) {
        weft_array_release(in[1]);
        in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(n), I(4));
        weft_array_release(in[3]);
        in[3] = tu_arr_i(t.ctx, WEFT_U64, 1, TU_SH(n), I(5));
        TU_OK(weft_run(exe, in, 4, out, 3));
        TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
        TU_CHECK_SHAPE(out[1], 2, TU_SH(2, 0));
        tu_release_all(out, 3);
    }

    /* below 0, a decrease, past the extent (at the end, and a u64 past
     * INT64_MAX): an error naming the first bad segment */
    static const struct {
        int64_t off[3];
        const char *says;
    } bad[] = {{{-1, 2, 3}, "segment 0 starts at offset -1, below 0"},
               {{0, 5, 4}, "segment 1 ends at offset 4, before its start 5"},
               {{0, 4, 11}, "segment 1 ends past the innermost extent 10"},
               {{0, 11, 3}, "segment 0 ends past the innermost extent 10"}};
    for (int b = 0; b < 4; b++) {
        weft_array_release(in[1]);
        in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), bad[b].off);
        TU_STATUS(WEFT_ERR_SEGMENTS, weft_run(exe, in, 4, out, 3));
        ck_assert_ptr_null(out[0]);
        ck_assert_msg(strstr(weft_last_error(), bad[b].says),
                      "\"%s\" does not say \"%s\"", weft_last_error(),
                      bad[b].says);
    }
    weft_array_release(in[1]);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(2), I(0, 1));
    uint64_t huge = (uint64_t)INT64_MAX + 2;
    weft_array_release(in[3]);
    in[3] = tu_arr_i(t.ctx, WEFT_U64, 1, TU_SH(3), I(0, 1, (int64_t)huge));
    TU_STATUS(WEFT_ERR_SEGMENTS, weft_run(exe, in, 4, out, 3));
    ck_assert_msg(
        strstr(weft_last_error(), "segment 1 ends past the innermost extent 5"),
        "%s", weft_last_error());

    /* fold1 of an empty segment: an error (fold_seg gives z) */
    weft_array_release(in[3]);
    in[3] = tu_arr_i(t.ctx, WEFT_U64, 1, TU_SH(3), I(1, 1, 5));
    TU_STATUS(WEFT_ERR_EMPTY_ARRAY, weft_run(exe, in, 4, out, 3));
    weft_executable_free(exe);
    TU_OK(weft_compile(p, res, 2, &exe));
    TU_OK(weft_run(exe, in, 4, out, 2));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(2, 2), I(0, 14, 0, 34));
    tu_release_all(out, 2);
    tu_release_all(in, 4);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * scans
 * ---------------------------------------------------------------------- */

START_TEST(test_scanl)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_acc *c = weft_param(p, WEFT_I32, 3);
    weft_acc *res[6] = {weft_scanl(add, weft_i32(p, 10), v),
                        weft_scanl1(add, v),
                        weft_scanl(add, weft_i32(p, 10), m),
                        weft_scanl(add, weft_i32(p, 0), c),
                        weft_scanl(fun_right(p, WEFT_I32), weft_i32(p, -1), v),
                        weft_scanl1(fun_left(p, WEFT_I32), v)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 6, &exe));
    weft_array *in[3] = {iota(t.ctx, WEFT_I32, 1, TU_SH(4), 1),
                         iota(t.ctx, WEFT_I32, 2, TU_SH(2, 3), 1),
                         iota(t.ctx, WEFT_I32, 3, TU_SH(2, 2, 3), 0)};
    weft_array *out[6] = {NULL};
    TU_OK(weft_run(exe, in, 3, out, 6));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(5), I(10, 11, 13, 16, 20));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(4), I(1, 3, 6, 10));
    TU_CHECK_I(t.ctx, out[2], 0, 2, TU_SH(2, 4),
               I(10, 11, 13, 16, 10, 14, 19, 25));
    TU_CHECK_I(t.ctx, out[3], 0, 3, TU_SH(2, 2, 4),
               I(0, 0, 1, 3, 0, 3, 7, 12, 0, 6, 13, 21, 0, 9, 19, 30));
    TU_CHECK_I(t.ctx, out[4], 0, 1, TU_SH(5), I(-1, 1, 2, 3, 4));
    TU_CHECK_I(t.ctx, out[5], 0, 1, TU_SH(4), I(1, 1, 1, 1));
    tu_release_all(out, 6);
    tu_release_all(in, 3);
    weft_executable_free(exe);

    /* empty: scanl gives [z] (per row); scanl1 gives an empty array */
    weft_executable *exe1 = NULL;
    TU_OK(weft_compile(p, res + 1, 1, &exe1));
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(0), NULL);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 0), NULL);
    in[2] = tu_arr_i(t.ctx, WEFT_I32, 3, TU_SH(0, 0, 0), NULL);
    TU_OK(weft_run(exe1, in, 3, out, 1));
    TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
    tu_release_all(out, 1);
    tu_release_all(in, 3);
    weft_executable_free(exe1);

    TU_OK(weft_compile(p, res, 1, &exe));
    weft_executable *exe2 = NULL;
    TU_OK(weft_compile(p, res + 2, 1, &exe2));
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(0), NULL);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 0), NULL);
    in[2] = tu_arr_i(t.ctx, WEFT_I32, 3, TU_SH(0, 0, 0), NULL);
    TU_OK(weft_run(exe, in, 3, out, 1));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(1), I(10));
    tu_release_all(out, 1);
    TU_OK(weft_run(exe2, in, 3, out, 1));
    TU_CHECK_I(t.ctx, out[0], 0, 2, TU_SH(2, 1), I(10, 10));
    tu_release_all(out, 1);
    tu_release_all(in, 3);
    weft_executable_free(exe);
    weft_executable_free(exe2);
    tu_close(&t);
}
END_TEST

START_TEST(test_scanr)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_acc *c = weft_param(p, WEFT_I32, 3);
    weft_acc *res[6] = {weft_scanr(add, weft_i32(p, 10), v),
                        weft_scanr1(add, v),
                        weft_scanr(add, weft_i32(p, 10), m),
                        weft_scanr1(add, c),
                        weft_scanr(fun_left(p, WEFT_I32), weft_i32(p, -1), v),
                        weft_scanr1(fun_right(p, WEFT_I32), v)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 6, &exe));
    weft_array *in[3] = {iota(t.ctx, WEFT_I32, 1, TU_SH(4), 1),
                         iota(t.ctx, WEFT_I32, 2, TU_SH(2, 3), 1),
                         iota(t.ctx, WEFT_I32, 3, TU_SH(2, 2, 3), 0)};
    weft_array *out[6] = {NULL};
    TU_OK(weft_run(exe, in, 3, out, 6));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(5), I(20, 19, 17, 14, 10));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(4), I(10, 9, 7, 4));
    TU_CHECK_I(t.ctx, out[2], 0, 2, TU_SH(2, 4),
               I(16, 15, 13, 10, 25, 21, 16, 10));
    /* rows (0 1 2) (3 4 5) (6 7 8) (9 10 11) */
    TU_CHECK_I(t.ctx, out[3], 0, 3, TU_SH(2, 2, 3),
               I(3, 3, 2, 12, 9, 5, 21, 15, 8, 30, 21, 11));
    TU_CHECK_I(t.ctx, out[4], 0, 1, TU_SH(5), I(1, 2, 3, 4, -1));
    TU_CHECK_I(t.ctx, out[5], 0, 1, TU_SH(4), I(4, 4, 4, 4));
    tu_release_all(out, 6);
    tu_release_all(in, 3);
    weft_executable_free(exe);

    /* empty: scanr gives [z], scanr1 an empty array */
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(0), NULL);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(3, 0), NULL);
    in[2] = tu_arr_i(t.ctx, WEFT_I32, 3, TU_SH(1, 1, 1), I(5));
    weft_acc *r2[4] = {res[0], res[2], res[3], res[1]};
    TU_OK(weft_run1(p, r2, 4, in, 3, out, 4));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(1), I(10));
    TU_CHECK_I(t.ctx, out[1], 0, 2, TU_SH(3, 1), I(10, 10, 10));
    TU_CHECK_I(t.ctx, out[2], 0, 3, TU_SH(1, 1, 1), I(5));
    TU_CHECK_SHAPE(out[3], 1, TU_SH(0));
    tu_release_all(out, 4);
    tu_release_all(in, 3);
    tu_close(&t);
}
END_TEST

/* scanl' and scanr': two arrays each (the scan and the totals). */
START_TEST(test_scan_prime)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64);
    weft_acc *v = weft_param(p, WEFT_I64, 1);
    weft_acc *m = weft_param(p, WEFT_I64, 2);
    weft_acc *sl = weft_scanl_(add, weft_i64(p, 10), v);
    ck_assert_int_eq(weft_acc_arity(sl), 2);
    ck_assert_int_eq(weft_acc_rank(weft_aget(sl, 1)), 0);
    weft_acc *res[4] = {sl, weft_scanr_(add, weft_i64(p, 10), v),
                        weft_scanl_(add, weft_i64(p, 10), m),
                        weft_scanr_(add, weft_i64(p, 10), m)};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 4, &exe));
    ck_assert_int_eq(weft_executable_outputs(exe), 8);
    weft_array *in[2] = {iota(t.ctx, WEFT_I64, 1, TU_SH(4), 1),
                         iota(t.ctx, WEFT_I64, 2, TU_SH(2, 3), 1)};
    weft_array *out[8] = {NULL};
    TU_OK(weft_run(exe, in, 2, out, 8));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(4), I(10, 11, 13, 16));
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(20));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(4), I(19, 17, 14, 10));
    TU_CHECK_I(t.ctx, out[3], 0, 0, NULL, I(20));
    TU_CHECK_I(t.ctx, out[4], 0, 2, TU_SH(2, 3), I(10, 11, 13, 10, 14, 19));
    TU_CHECK_I(t.ctx, out[5], 0, 1, TU_SH(2), I(16, 25));
    TU_CHECK_I(t.ctx, out[6], 0, 2, TU_SH(2, 3), I(15, 13, 10, 21, 16, 10));
    TU_CHECK_I(t.ctx, out[7], 0, 1, TU_SH(2), I(16, 25));
    tu_release_all(out, 8);
    tu_release_all(in, 2);
    /* empty: an empty scan and the seed as total */
    in[0] = tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(0), NULL);
    in[1] = tu_arr_i(t.ctx, WEFT_I64, 2, TU_SH(2, 0), NULL);
    TU_OK(weft_run(exe, in, 2, out, 8));
    TU_CHECK_SHAPE(out[0], 1, TU_SH(0));
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(10));
    TU_CHECK_SHAPE(out[2], 1, TU_SH(0));
    TU_CHECK_I(t.ctx, out[3], 0, 0, NULL, I(10));
    TU_CHECK_SHAPE(out[4], 2, TU_SH(2, 0));
    TU_CHECK_I(t.ctx, out[5], 0, 1, TU_SH(2), I(10, 10));
    TU_CHECK_I(t.ctx, out[7], 0, 1, TU_SH(2), I(10, 10));
    tu_release_all(out, 8);
    tu_release_all(in, 2);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

/* A scan over pairs: running (max, sum). */
START_TEST(test_scan_pairs)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_type pc[2] = {WEFT_I32, WEFT_F32};
    weft_type pair = weft_type_tuple(t.ctx, 2, pc);
    weft_fun *f = weft_fun2(p, pair, pair);
    weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1);
    weft_exp *r[2] = {weft_max(weft_get(a, 0), weft_get(b, 0)),
                      weft_add(weft_get(a, 1), weft_get(b, 1))};
    weft_fun_return(f, weft_tuple(p, 2, r));
    int32_t l0[4] = {3, 1, 4, 1};
    float l1[4] = {0.5f, 0.25f, 1.0f, 2.0f};
    const void *leaves[2] = {l0, l1};
    weft_array *src = tu_arr_host(t.ctx, pair, 1, TU_SH(4), leaves);
    weft_acc *res = weft_scanl1(f, weft_use(p, src));
    weft_array_release(src);
    weft_array *out = NULL;
    TU_OK(weft_run1(p, &res, 1, NULL, 0, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(4), I(3, 3, 4, 4));
    TU_CHECK_F(t.ctx, out, 1, 1, TU_SH(4), F(0.5, 0.75, 1.75, 3.75), 0);
    weft_array_release(out);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * permute
 * ---------------------------------------------------------------------- */

/* Histogram of values into 5 bins starting from 100 per bin; values
 * outside [0, 5) are ignored. */
START_TEST(test_permute_histogram)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *vals = weft_param(p, WEFT_I32, 1);
    weft_fun *hundred = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(hundred, weft_i32(p, 100));
    weft_acc *def = weft_generate(weft_index1(weft_i64(p, 5)), hundred);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *x = weft_at(vals, weft_arg(ix, 0));
    weft_exp *inside =
        weft_and(weft_ge(x, weft_i32(p, 0)), weft_lt(x, weft_i32(p, 5)));
    weft_fun_return(ix,
                    weft_cond(inside, weft_index1(weft_convert(x, WEFT_I64)),
                              weft_ignore(p, 1)));
    weft_fun *one = weft_fun1(p, WEFT_I32);
    weft_fun_return(one, weft_i32(p, 1));
    weft_acc *r = weft_permute(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32), def, ix,
                               weft_map(one, vals));
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_array *in =
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(8), I(1, 3, 1, 4, 1, 0, -1, 7));
    weft_array *out = NULL;
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(5), I(101, 103, 100, 101, 101));
    weft_array_release(out);
    weft_array_release(in);
    /* no values: the default comes back */
    in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(0), NULL);
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(5), I(100, 100, 100, 100, 100));
    weft_array_release(out);
    weft_array_release(in);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

START_TEST(test_permute)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *def = weft_param(p, WEFT_I32, 1);
    weft_acc *src = weft_param(p, WEFT_I32, 1);
    /* reversal with f(new, old) = new - old */
    weft_fun *rev = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(
        rev, weft_index1(weft_sub(weft_sub(weft_size(src), weft_i64(p, 1)),
                                  weft_get(weft_arg(rev, 0), 0))));
    weft_fun *sub = tu_fun_op2(p, WEFT_OP_SUB, WEFT_I32);
    weft_acc *r1 = weft_permute(sub, def, rev, src);
    /* rank 2 -> rank 1: row sums into zeros */
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_fun *row = weft_fun1(p, WEFT_DIM(2));
    weft_fun_return(row, weft_index1(weft_get(weft_arg(row, 0), 0)));
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_i32(p, 0));
    weft_acc *zeros2 =
        weft_generate(weft_index1(weft_get(weft_shape(m), 0)), zero);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_acc *r2 = weft_permute(add, zeros2, row, m);
    /* rank 3 -> rank 1: by the innermost index */
    weft_acc *c = weft_param(p, WEFT_I32, 3);
    weft_fun *inner = weft_fun1(p, WEFT_DIM(3));
    weft_fun_return(inner, weft_index1(weft_get(weft_arg(inner, 0), 2)));
    weft_acc *zeros4 = weft_generate(weft_index1(weft_i64(p, 4)), zero);
    weft_acc *r3 = weft_permute(add, zeros4, inner, c);
    /* rank 1 -> rank 2: scatter i to (i mod 2, i div 2) over -1s */
    weft_fun *neg1 = weft_fun1(p, WEFT_DIM(2));
    weft_fun_return(neg1, weft_i32(p, -1));
    weft_acc *d2 =
        weft_generate(weft_index2(weft_i64(p, 2), weft_i64(p, 3)), neg1);
    weft_fun *sc = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(sc, 0), 0);
    weft_fun_return(sc, weft_index2(weft_rem(i, weft_i64(p, 2)),
                                    weft_quot(i, weft_i64(p, 2))));
    weft_acc *r4 = weft_permute(add, d2, sc, src);
    weft_acc *res[4] = {r1, r2, r3, r4};
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, 4, &exe));
    weft_array *in[4] = {
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(1000, 2000, 3000)),
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(1, 2, 3)),
        iota(t.ctx, WEFT_I32, 2, TU_SH(2, 3), 1),
        iota(t.ctx, WEFT_I32, 3, TU_SH(2, 3, 4), 0)};
    weft_array *out[4] = {NULL};
    TU_OK(weft_run(exe, in, 4, out, 4));
    /* r[2 - i] = src[i] - def[2 - i] */
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(-997, -1998, -2999));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(2), I(6, 15));
    /* sum over i, j of 12 i + 4 j + k = 60 + 6 k */
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(4), I(60, 66, 72, 78));
    /* 1 -> (0,0), 2 -> (1,0), 3 -> (0,1); each adds to -1 */
    TU_CHECK_I(t.ctx, out[3], 0, 2, TU_SH(2, 3), I(0, 2, -1, 1, -1, -1));
    tu_release_all(out, 4);
    /* a source larger than the default: the reversal reaches index 3 of a
     * 3-element default, out of bounds */
    weft_array_release(in[1]);
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(4), I(1, 2, 3, 4));
    TU_STATUS(WEFT_ERR_OUT_OF_BOUNDS, weft_run(exe, in, 4, out, 4));
    ck_assert_ptr_null(out[0]);
    tu_release_all(in, 4);
    weft_executable_free(exe);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * stencil, stencil2
 * ---------------------------------------------------------------------- */

/* A function of n i64 arguments: sum of w[k] * arg k. */
static weft_fun *weighted(weft_program *p, int n, const int64_t *w)
{
    weft_type types[64];
    ck_assert_int_le(n, 64);
    for (int k = 0; k < n; k++) {
        types[k] = WEFT_I64;
    }
    weft_fun *f = weft_fun_create(p, n, types);
    weft_exp *s = weft_mul(weft_arg(f, 0), weft_i64(p, w[0]));
    for (int k = 1; k < n; k++) {
        s = weft_add(s, weft_mul(weft_arg(f, k), weft_i64(p, w[k])));
    }
    weft_fun_return(f, s);
    return f;
}

static const weft_boundary_kind kinds[4] = {
    WEFT_BOUNDARY_CLAMP, WEFT_BOUNDARY_MIRROR, WEFT_BOUNDARY_WRAP,
    WEFT_BOUNDARY_CONSTANT};
static const char *const kind_names[4] = {"clamp", "mirror", "wrap",
                                          "constant"};

/* Run the stencil of window win (weights w, or 1 .. k when w is NULL) over
 * the input `vals` of the given shape, for the four boundaries (constant
 * cval), against want[kind]. */
static void check_stencil(int line, int rank, const int64_t *shape,
                          const int64_t *vals, const int *win, const int64_t *w,
                          int64_t cval, int nkinds, const int64_t *const *want)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    int n = 1;
    for (int d = 0; d < rank; d++) {
        n *= win[d];
    }
    int64_t wdef[64];
    for (int k = 0; k < 64; k++) {
        wdef[k] = k + 1;
    }
    weft_fun *f = weighted(p, n, w != NULL ? w : wdef);
    weft_acc *a = weft_param(p, WEFT_I64, rank);
    weft_acc *res[4];
    for (int k = 0; k < nkinds; k++) {
        weft_boundary b = {kinds[k], NULL};
        if (kinds[k] == WEFT_BOUNDARY_CONSTANT) {
            b.value = weft_i64(p, cval);
        }
        res[k] = weft_stencil(f, win, b, a);
    }
    ck_assert_msg(weft_program_status(p) == WEFT_OK, "line %d: %s", line,
                  weft_program_error(p));
    weft_array *in = tu_arr_i(t.ctx, WEFT_I64, rank, shape, vals);
    weft_array *out[4] = {NULL};
    weft_status s = tu_run(p, res, nkinds, &in, 1, out, nkinds);
    ck_assert_msg(s == WEFT_OK, "line %d: %s", line, weft_last_error());
    for (int k = 0; k < nkinds; k++) {
        char msg[256];
        ck_assert_msg(
            tu_match_i(t.ctx, out[k], 0, rank, shape, want[k], msg, sizeof msg),
            "line %d, %s: %s", line, kind_names[k], msg);
    }
    tu_release_all(out, 4);
    weft_array_release(in);
    tu_close(&t);
}

START_TEST(test_stencil_rank1)
{
    /* window 3 over 1..5: a[i-1] + 10 a[i] + 100 a[i+1], constant 7 */
    const int64_t *w3[4] = {
        I(211, 321, 432, 543, 554), I(212, 321, 432, 543, 454),
        I(215, 321, 432, 543, 154), I(217, 321, 432, 543, 754)};
    check_stencil(__LINE__, 1, TU_SH(5), I(1, 2, 3, 4, 5), (const int[]){3},
                  I(1, 10, 100), 7, 4, w3);
    /* window 5 over 1..3 (wider than the array): weights 1 .. 10^4 */
    const int64_t *w5[4] = {I(32111, 33211, 33321), I(32123, 23212, 12321),
                            I(32132, 13213, 21321), I(32177, 73217, 77321)};
    check_stencil(__LINE__, 1, TU_SH(3), I(1, 2, 3), (const int[]){5},
                  I(1, 10, 100, 1000, 10000), 7, 4, w5);
}
END_TEST

START_TEST(test_stencil_rank2)
{
    int64_t v[12];
    for (int i = 0; i < 12; i++) {
        v[i] = i;
    }
    /* 3x4 of 0..11, window 3x3 weighted 1..9, constant -1 */
    const int64_t *w33[4] = {
        I(114, 147, 192, 219, 270, 303, 348, 375, 354, 387, 432, 459),
        I(150, 171, 216, 225, 282, 303, 348, 357, 270, 291, 336, 345),
        I(198, 195, 240, 213, 306, 303, 348, 321, 198, 195, 240, 213),
        I(66, 133, 172, 100, 186, 303, 348, 207, 88, 145, 166, 82)};
    check_stencil(__LINE__, 2, TU_SH(3, 4), v, (const int[]){3, 3}, NULL, -1, 4,
                  w33);
    /* window 5x3 weighted 1..15 */
    const int64_t *w53[4] = {
        I(513, 598, 718, 793, 741, 826, 946, 1021, 897, 982, 1102, 1177),
        I(656, 706, 826, 856, 632, 682, 802, 832, 464, 514, 634, 664),
        I(762, 742, 862, 802, 558, 538, 658, 598, 570, 550, 670, 610),
        I(309, 552, 651, 402, 210, 390, 462, 267, 111, 228, 273, 132)};
    check_stencil(__LINE__, 2, TU_SH(3, 4), v, (const int[]){5, 3}, NULL, -1, 4,
                  w53);
    /* a simple check by hand: 3x3 of ones, clamp, all weights 1: 9 each */
    const int64_t *ones[1] = {I(9, 9, 9, 9, 9, 9, 9, 9, 9)};
    check_stencil(__LINE__, 2, TU_SH(3, 3), I(1, 1, 1, 1, 1, 1, 1, 1, 1),
                  (const int[]){3, 3}, I(1, 1, 1, 1, 1, 1, 1, 1, 1), 0, 1,
                  ones);
}
END_TEST

START_TEST(test_stencil_rank3)
{
    int64_t v[24];
    for (int i = 0; i < 24; i++) {
        v[i] = i;
    }
    /* 2x3x4 of 0..23, window 3x3x3 weighted 1..27, constant 100 */
    const int64_t *w333[4] = {I(3231, 3492, 3870, 4113, 4347, 4608, 4986, 5229,
                                5247, 5508, 5886, 6129, 4743, 5004, 5382, 5625,
                                5859, 6120, 6498, 6741, 6759, 7020, 7398, 7641),
                              I(4284, 4428, 4806, 4914, 5004, 5148, 5526, 5634,
                                5292, 5436, 5814, 5922, 2772, 2916, 3294, 3402,
                                3492, 3636, 4014, 4122, 3780, 3924, 4302, 4410),
                              I(4914, 4824, 5202, 5040, 5238, 5148, 5526, 5364,
                                4914, 4824, 5202, 5040, 3402, 3312, 3690, 3528,
                                3726, 3636, 4014, 3852, 3402, 3312, 3690, 3528),
                              I(23036, 16328, 16568, 24080, 17817, 8805, 9138,
                                19323, 25792, 20420, 20624, 26756, 29624, 26156,
                                26288, 30524, 27483, 23223, 23394, 28773, 32092,
                                29816, 29912, 32912)};
    check_stencil(__LINE__, 3, TU_SH(2, 3, 4), v, (const int[]){3, 3, 3}, NULL,
                  100, 4, w333);
    /* window 3x3x5 weighted 1..45, clamp and mirror */
    const int64_t *w335[2] = {
        I(9186, 9834, 10455, 11049, 12246, 12894, 13515, 14109, 14706, 15354,
          15975, 16569, 13326, 13974, 14595, 15189, 16386, 17034, 17655, 18249,
          18846, 19494, 20115, 20709),
        I(12282, 12543, 12750, 12903, 14262, 14523, 14730, 14883, 15042, 15303,
          15510, 15663, 8142, 8403, 8610, 8763, 10122, 10383, 10590, 10743,
          10902, 11163, 11370, 11523)};
    check_stencil(__LINE__, 3, TU_SH(2, 3, 4), v, (const int[]){3, 3, 5}, NULL,
                  100, 2, w335);
}
END_TEST

START_TEST(test_stencil_float_and_errors)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    /* a 3-point average on f32 with a constant 0 boundary */
    weft_fun *avg = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(
        avg, weft_fdiv(weft_add(weft_add(weft_arg(avg, 0), weft_arg(avg, 1)),
                                weft_arg(avg, 2)),
                       weft_f32(p, 4)));
    weft_acc *a = weft_param(p, WEFT_F32, 1);
    weft_boundary b = {WEFT_BOUNDARY_CONSTANT, weft_f32(p, 0)};
    weft_acc *r = weft_stencil(avg, (const int[]){3}, b, a);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_array *in = tu_arr_f(t.ctx, WEFT_F32, 1, TU_SH(4), F(4, 8, 12, 16));
    weft_array *out = NULL;
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_F(t.ctx, out, 0, 1, TU_SH(4), F(3, 6, 9, 7), 0);
    weft_array_release(out);
    weft_array_release(in);
    /* empty input: empty output */
    in = tu_arr_f(t.ctx, WEFT_F32, 1, TU_SH(0), NULL);
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_CHECK_SHAPE(out, 1, TU_SH(0));
    weft_array_release(out);
    weft_array_release(in);
    weft_executable_free(exe);

    /* an even window is refused when building */
    weft_fun *two = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(two, weft_arg(two, 0));
    weft_acc *bad = weft_stencil(two, (const int[]){2}, b, a);
    ck_assert_ptr_null(bad);
    ck_assert_int_eq(weft_program_status(p), WEFT_ERR_STENCIL_WINDOW);
    tu_close(&t);
}
END_TEST

START_TEST(test_stencil2)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_type ty[6] = {WEFT_I32, WEFT_I32, WEFT_I32,
                       WEFT_I32, WEFT_I32, WEFT_I32};
    weft_fun *f = weft_fun_create(p, 6, ty);
    static const int32_t w[6] = {1, 10, 100, 1000, 10000, 100000};
    weft_exp *s = weft_arg(f, 0);
    for (int k = 1; k < 6; k++) {
        s = weft_add(s, weft_mul(weft_arg(f, k), weft_i32(p, w[k])));
    }
    weft_fun_return(f, s);
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *b = weft_param(p, WEFT_I32, 1);
    weft_boundary ba = {WEFT_BOUNDARY_CLAMP, NULL};
    weft_boundary bb = {WEFT_BOUNDARY_CONSTANT, weft_i32(p, 0)};
    weft_acc *r =
        weft_stencil2(f, (const int[]){3}, ba, a, (const int[]){3}, bb, b);
    /* extents 5 and 4: the result has 4; each array's boundary is taken at
     * its own extent (a[4] = 5 is inside a) */
    weft_array *in[2] = {
        iota(t.ctx, WEFT_I32, 1, TU_SH(5), 1),
        tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(4), I(10, 20, 30, 40))};
    weft_array *out = NULL;
    TU_OK(weft_run1(p, &r, 1, in, 2, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(4),
               I(2100211, 3210321, 4320432, 430543));
    weft_array_release(out);
    tu_release_all(in, 2);

    /* rank 2: the sum of two 3x3 windows (clamp on both) of 2x2 arrays */
    tu_reset(&t);
    p = t.p;
    weft_type ty18[18];
    for (int k = 0; k < 18; k++) {
        ty18[k] = WEFT_I32;
    }
    weft_fun *g = weft_fun_create(p, 18, ty18);
    weft_exp *sum = weft_arg(g, 0);
    for (int k = 1; k < 18; k++) {
        sum = weft_add(sum, weft_arg(g, k));
    }
    weft_fun_return(g, sum);
    weft_acc *x = weft_param(p, WEFT_I32, 2);
    weft_acc *y = weft_param(p, WEFT_I32, 2);
    weft_boundary cl = {WEFT_BOUNDARY_CLAMP, NULL};
    r = weft_stencil2(g, (const int[]){3, 3}, cl, x, (const int[]){3, 3}, cl,
                      y);
    in[0] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 2), I(1, 1, 1, 1));
    in[1] = tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 2), I(0, 0, 0, 100));
    TU_OK(weft_run1(p, &r, 1, in, 2, &out, 1));
    /* clamp on 2x2: corner (i, j) reads its own value 4 times, the two
     * edge neighbours twice each, the opposite corner once; y's 100 is at
     * (1,1): seen 1, 2, 2, 4 times from (0,0), (0,1), (1,0), (1,1) */
    TU_CHECK_I(t.ctx, out, 0, 2, TU_SH(2, 2), I(109, 209, 209, 409));
    weft_array_release(out);
    tu_release_all(in, 2);
    tu_close(&t);
}
END_TEST

static Suite *reduce_suite(void)
{
    Suite *s = suite_create("ops_reduce");
    TCase *tf = tcase_create("fold");
    tcase_set_timeout(tf, 60);
    tcase_add_test(tf, test_fold);
    tcase_add_test(tf, test_fold_rank3_float);
    tcase_add_test(tf, test_fold_pairs);
    tcase_add_test(tf, test_fold1);
    tcase_add_test(tf, test_fold_all);
    tcase_add_test(tf, test_fold_seg);
    tcase_add_test(tf, test_fold_seg_offsets);
    suite_add_tcase(s, tf);
    TCase *ts = tcase_create("scan");
    tcase_set_timeout(ts, 60);
    tcase_add_test(ts, test_scanl);
    tcase_add_test(ts, test_scanr);
    tcase_add_test(ts, test_scan_prime);
    tcase_add_test(ts, test_scan_pairs);
    suite_add_tcase(s, ts);
    TCase *tp = tcase_create("permute");
    tcase_set_timeout(tp, 60);
    tcase_add_test(tp, test_permute_histogram);
    tcase_add_test(tp, test_permute);
    suite_add_tcase(s, tp);
    TCase *tt = tcase_create("stencil");
    tcase_set_timeout(tt, 60);
    tcase_add_test(tt, test_stencil_rank1);
    tcase_add_test(tt, test_stencil_rank2);
    tcase_add_test(tt, test_stencil_rank3);
    tcase_add_test(tt, test_stencil_float_and_errors);
    tcase_add_test(tt, test_stencil2);
    suite_add_tcase(s, tt);
    return s;
}

TU_MAIN(reduce_suite)
