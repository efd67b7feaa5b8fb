/*
 * tests/test_unit.c: the unit element type (the empty tuple,
 * weft_type_tuple(ctx, 0, NULL)) on the interpreter and the CPU.
 *
 *   unit_type        interned once, no components, no leaves, named "()";
 *                    arrays of unit have a shape and no buffer
 *   unit_producers   generate, map to unit, unit / the, a unit parameter,
 *                    map from unit, zipWith with a unit side (the extent is
 *                    still the intersection), backpermute, reshape,
 *                    replicate, slice of unit arrays
 *   unit_in_tuples   tuples with unit components (of values and of
 *                    arrays): only the other components have buffers
 *   unit_reductions  fold, fold_all, scans and permute of unit, and a
 *                    fold whose seed and result are pairs with a unit side
 *   unit_control     a scalar while loop and an awhile over unit state,
 *                    acond of unit arrays
 *   unit_more        foldSeg and a stencil (constant boundary) of unit,
 *                    zipWith3 with a unit operand, the dump of a program
 *                    with unit types
 */
#include "tu.h"

static const weft_backend backends[] = TU_BACKENDS;
enum { NBACKENDS = (int)(sizeof backends / sizeof *backends) };

static weft_type unit_t(weft_context *ctx)
{
    weft_type u = weft_type_tuple(ctx, 0, NULL);
    ck_assert_msg(u != 0, "%s", weft_last_error());
    return u;
}

static weft_exp *unit_v(weft_program *p)
{
    return weft_tuple(p, 0, NULL);
}

/* Check an array's type, rank and shape. */
static void check_shape(weft_array *a, weft_type t, int rank,
                        const int64_t *shape)
{
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(weft_array_type(a), t);
    ck_assert_int_eq(weft_array_rank(a), rank);
    for (int d = 0; d < rank; d++) {
        ck_assert_int_eq(weft_array_extent(a, d), shape[d]);
    }
}

/* Run results r[0..n-1] of t->p on in[0..nin-1] into out (released by
 * the caller). */
static void run(tu *t, weft_acc **r, int n, weft_array **in, int nin,
                weft_array **out, int nout)
{
    TU_PROGRAM_OK(t->p);
    TU_OK(weft_run1(t->p, r, n, in, nin, out, nout));
}

START_TEST(unit_type)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        tu t;
        tu_open_backend(&t, backends[bi]);
        weft_type u = unit_t(t.ctx);
        ck_assert_int_eq(weft_type_tuple(t.ctx, 0, NULL), u);
        ck_assert_int_eq(weft_type_arity(t.ctx, u), 0);
        ck_assert_int_eq(weft_type_leaves(t.ctx, u), 0);
        ck_assert_int_eq(weft_type_tuple(t.ctx, -1, NULL), 0);
        weft_type pair[2] = {WEFT_I32, u};
        weft_type pu = weft_type_tuple(t.ctx, 2, pair);
        ck_assert_int_ne(pu, 0);
        ck_assert_int_eq(weft_type_arity(t.ctx, pu), 2);
        ck_assert_int_eq(weft_type_leaves(t.ctx, pu), 1);
        ck_assert_int_eq(weft_type_component(t.ctx, pu, 1), u);
        weft_array *a;
        TU_OK(weft_array_create(t.ctx, u, 2, TU_SH(3, 4), &a));
        check_shape(a, u, 2, TU_SH(3, 4));
        ck_assert_int_eq(weft_array_size(a), 12);
        ck_assert_ptr_null(weft_array_data(a, 0));
        weft_array_release(a);
        TU_OK(weft_array_from_host(t.ctx, u, 1, TU_SH(5), NULL, &a));
        ck_assert_int_eq(weft_array_size(a), 5);
        weft_array_release(a);
        TU_OK(weft_array_wrap(t.ctx, u, 1, TU_SH(2), NULL, NULL, NULL, &a));
        weft_array_release(a);
        /* the unit value's type */
        weft_exp *e = unit_v(t.p);
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(weft_exp_type(e), u);
        tu_close(&t);
    }
}
END_TEST

START_TEST(unit_producers)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        tu t;
        tu_open_backend(&t, backends[bi]);
        weft_program *p = t.p;
        weft_type u = unit_t(t.ctx);
        weft_array *xs =
            tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(5), TU_I(1, 2, 3, 4, 5));
        weft_acc *x = weft_param(p, WEFT_I32, 1);
        weft_acc *us = weft_param(p, u, 1);
        /* generate of unit */
        weft_fun *g = weft_fun1(p, WEFT_DIM(2));
        weft_fun_return(g, unit_v(p));
        weft_exp *sh[2] = {weft_i64(p, 3), weft_i64(p, 4)};
        weft_acc *gen = weft_generate(weft_index(p, 2, sh), g);
        /* map to unit, then back to a number */
        weft_fun *to_u = weft_fun1(p, WEFT_I32);
        weft_fun_return(to_u, unit_v(p));
        weft_acc *mu = weft_map(to_u, x);
        weft_fun *from_u = weft_fun1(p, u);
        weft_fun_return(from_u, weft_i32(p, 7));
        weft_acc *seven = weft_map(from_u, mu);
        /* zipWith with a unit side: the extent is the intersection */
        weft_fun *z = weft_fun2(p, u, WEFT_I32);
        weft_fun_return(z, weft_mul(weft_arg(z, 1), weft_i32(p, 2)));
        weft_acc *zw = weft_zipwith(z, us, x);
        /* unit / the */
        weft_acc *u0 = weft_unit(unit_v(p));
        weft_fun *th = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(th, weft_the(u0));
        weft_acc *gthe = weft_generate(weft_index1(weft_i64(p, 2)), th);
        /* backpermute, reshape, replicate, slice of unit arrays */
        weft_fun *rev = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(rev,
                        weft_index1(weft_sub(weft_i64(p, 1),
                                             weft_get(weft_arg(rev, 0), 0))));
        weft_acc *bp = weft_backpermute(weft_index1(weft_i64(p, 2)), rev, us);
        weft_exp *sh2[2] = {weft_i64(p, 4), weft_i64(p, 3)};
        weft_acc *rs = weft_reshape(weft_index(p, 2, sh2), gen);
        weft_exp *spec[2] = {weft_i64(p, 2), weft_all(p)};
        weft_acc *rep = weft_replicate(2, spec, us);
        weft_exp *sl[2] = {weft_i64(p, 1), weft_all(p)};
        weft_acc *sli = weft_slice(gen, 2, sl);
        weft_acc *r[9] = {gen, mu, seven, zw, u0, gthe, bp, rs, rep};
        weft_array *ua;
        TU_OK(weft_array_create(t.ctx, u, 1, TU_SH(3), &ua));
        weft_array *in[2] = {xs, ua};
        weft_array *out[10] = {NULL};
        weft_acc *r10[10];
        memcpy(r10, r, sizeof r);
        r10[9] = sli;
        run(&t, r10, 10, in, 2, out, 10);
        check_shape(out[0], u, 2, TU_SH(3, 4));
        check_shape(out[1], u, 1, TU_SH(5));
        TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(5), TU_I(7, 7, 7, 7, 7));
        TU_CHECK_I(t.ctx, out[3], 0, 1, TU_SH(3), TU_I(2, 4, 6));
        check_shape(out[4], u, 0, NULL);
        check_shape(out[5], u, 1, TU_SH(2));
        check_shape(out[6], u, 1, TU_SH(2));
        check_shape(out[7], u, 2, TU_SH(4, 3));
        check_shape(out[8], u, 2, TU_SH(2, 3));
        check_shape(out[9], u, 1, TU_SH(4));
        tu_release_all(out, 10);
        weft_array_release(ua);
        weft_array_release(xs);
        tu_close(&t);
    }
}
END_TEST

START_TEST(unit_in_tuples)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        tu t;
        tu_open_backend(&t, backends[bi]);
        weft_program *p = t.p;
        weft_type u = unit_t(t.ctx);
        weft_array *xs =
            tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(4), TU_I(10, 20, 30, 40));
        weft_acc *x = weft_param(p, WEFT_I32, 1);
        /* map x -> (x, (), x + 1) and back: (a, _, b) -> a + b */
        weft_fun *f = weft_fun1(p, WEFT_I32);
        weft_exp *c3[3] = {weft_arg(f, 0), unit_v(p),
                           weft_add(weft_arg(f, 0), weft_i32(p, 1))};
        weft_fun_return(f, weft_tuple(p, 3, c3));
        weft_acc *trip = weft_map(f, x);
        weft_type tt = weft_acc_type(trip);
        ck_assert_int_eq(weft_type_leaves(t.ctx, tt), 2);
        ck_assert_int_eq(weft_type_component(t.ctx, tt, 1), u);
        weft_fun *back = weft_fun1(p, tt);
        weft_fun_return(back, weft_add(weft_get(weft_arg(back, 0), 0),
                                       weft_get(weft_arg(back, 0), 2)));
        weft_acc *sum = weft_map(back, trip);
        /* a nested unit: ((), ((), x)) */
        weft_fun *nest = weft_fun1(p, WEFT_I32);
        weft_exp *inner[2] = {unit_v(p), weft_arg(nest, 0)};
        weft_exp *outer[2] = {unit_v(p), weft_tuple(p, 2, inner)};
        weft_fun_return(nest, weft_tuple(p, 2, outer));
        weft_acc *nested = weft_map(nest, x);
        /* a tuple of arrays with a unit array */
        weft_fun *g = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(g, unit_v(p));
        weft_acc *gu = weft_generate(weft_index1(weft_i64(p, 3)), g);
        weft_acc *parts[2] = {gu, x};
        weft_acc *at = weft_atuple(p, 2, parts);
        weft_acc *r[4] = {trip, sum, nested, at};
        weft_array *out[5] = {NULL};
        run(&t, r, 4, &xs, 1, out, 5);
        check_shape(out[0], tt, 1, TU_SH(4));
        TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(4), TU_I(10, 20, 30, 40));
        TU_CHECK_I(t.ctx, out[0], 1, 1, TU_SH(4), TU_I(11, 21, 31, 41));
        TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(4), TU_I(21, 41, 61, 81));
        ck_assert_int_eq(weft_type_leaves(t.ctx, weft_array_type(out[2])), 1);
        TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(4), TU_I(10, 20, 30, 40));
        check_shape(out[3], u, 1, TU_SH(3));
        TU_CHECK_I(t.ctx, out[4], 0, 1, TU_SH(4), TU_I(10, 20, 30, 40));
        tu_release_all(out, 5);
        weft_array_release(xs);
        tu_close(&t);
    }
}
END_TEST

START_TEST(unit_reductions)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        tu t;
        tu_open_backend(&t, backends[bi]);
        weft_program *p = t.p;
        weft_type u = unit_t(t.ctx);
        weft_acc *us = weft_param(p, u, 2);
        weft_fun *k = weft_fun2(p, u, u);
        weft_fun_return(k, unit_v(p));
        weft_acc *fo = weft_fold(k, unit_v(p), us);
        weft_acc *f1 = weft_fold1(k, us);
        weft_acc *fa = weft_fold_all(k, unit_v(p), us);
        weft_acc *sc = weft_scanl(k, unit_v(p), us);
        weft_acc *s1 = weft_scanr1(k, us);
        weft_acc *s_ = weft_scanl_(k, unit_v(p), us);
        /* permute of unit: into a unit vector of 2 */
        weft_fun *g = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(g, unit_v(p));
        weft_acc *def = weft_generate(weft_index1(weft_i64(p, 2)), g);
        weft_fun *ix = weft_fun1(p, WEFT_DIM(2));
        weft_fun_return(ix, weft_index1(weft_rem(weft_get(weft_arg(ix, 0), 1),
                                                 weft_i64(p, 2))));
        weft_acc *pe = weft_permute(k, def, ix, us);
        /* a fold of pairs (count, ()): the unit side rides along */
        weft_type pair_c[2] = {WEFT_I64, u};
        weft_type pt = weft_type_tuple(t.ctx, 2, pair_c);
        weft_fun *mk = weft_fun1(p, u);
        weft_exp *one[2] = {weft_i64(p, 1), weft_arg(mk, 0)};
        weft_fun_return(mk, weft_tuple(p, 2, one));
        weft_fun *add = weft_fun2(p, pt, pt);
        weft_exp *sum[2] = {weft_add(weft_get(weft_arg(add, 0), 0),
                                     weft_get(weft_arg(add, 1), 0)),
                            unit_v(p)};
        weft_fun_return(add, weft_tuple(p, 2, sum));
        weft_exp *z[2] = {weft_i64(p, 0), unit_v(p)};
        weft_acc *cnt = weft_fold(add, weft_tuple(p, 2, z), weft_map(mk, us));
        weft_acc *r[8] = {fo, f1, fa, sc, s1, s_, pe, cnt};
        weft_array *ua;
        TU_OK(weft_array_create(t.ctx, u, 2, TU_SH(3, 5), &ua));
        weft_array *out[9] = {NULL};
        run(&t, r, 8, &ua, 1, out, 9);
        check_shape(out[0], u, 1, TU_SH(3));
        check_shape(out[1], u, 1, TU_SH(3));
        check_shape(out[2], u, 0, NULL);
        check_shape(out[3], u, 2, TU_SH(3, 6));
        check_shape(out[4], u, 2, TU_SH(3, 5));
        check_shape(out[5], u, 2, TU_SH(3, 5));
        check_shape(out[6], u, 1, TU_SH(3));
        check_shape(out[7], u, 1, TU_SH(2));
        check_shape(out[8], pt, 1, TU_SH(3));
        TU_CHECK_I(t.ctx, out[8], 0, 1, TU_SH(3), TU_I(5, 5, 5));
        tu_release_all(out, 9);
        weft_array_release(ua);
        tu_close(&t);
    }
}
END_TEST

START_TEST(unit_control)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        tu t;
        tu_open_backend(&t, backends[bi]);
        weft_program *p = t.p;
        weft_type u = unit_t(t.ctx);
        weft_acc *x = weft_param(p, WEFT_I32, 1);
        /* while over ((), i): count to 10 */
        weft_type st_c[2] = {u, WEFT_I32};
        weft_type st = weft_type_tuple(t.ctx, 2, st_c);
        weft_fun *c = weft_fun1(p, st);
        weft_fun_return(c,
                        weft_lt(weft_get(weft_arg(c, 0), 1), weft_i32(p, 10)));
        weft_fun *b = weft_fun1(p, st);
        weft_exp *nx[2] = {
            weft_get(weft_arg(b, 0), 0),
            weft_add(weft_get(weft_arg(b, 0), 1), weft_i32(p, 1))};
        weft_fun_return(b, weft_tuple(p, 2, nx));
        weft_fun *f = weft_fun1(p, WEFT_I32);
        weft_exp *init[2] = {unit_v(p), weft_arg(f, 0)};
        weft_fun_return(f,
                        weft_get(weft_while(c, b, weft_tuple(p, 2, init)), 1));
        weft_acc *w = weft_map(f, x);
        /* awhile over a unit vector: append one element until 4 long */
        weft_fun *g = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(g, unit_v(p));
        weft_acc *init_a = weft_generate(weft_index1(weft_i64(p, 1)), g);
        weft_afun *ac = weft_afun_like(init_a);
        weft_afun_return(ac, weft_unit(weft_lt(weft_size(weft_afun_arg(ac)),
                                               weft_i64(p, 4))));
        weft_afun *ab = weft_afun_like(init_a);
        weft_fun *g2 = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(g2, unit_v(p));
        weft_afun_return(
            ab, weft_generate(weft_index1(weft_add(weft_size(weft_afun_arg(ab)),
                                                   weft_i64(p, 1))),
                              g2));
        weft_acc *aw = weft_awhile(ac, ab, init_a);
        weft_acc *ac2 = weft_acond(weft_bool(p, 0), init_a, aw);
        weft_acc *r[3] = {w, aw, ac2};
        weft_array *xs = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), TU_I(1, 5, 12));
        weft_array *out[3] = {NULL};
        run(&t, r, 3, &xs, 1, out, 3);
        TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), TU_I(10, 10, 12));
        check_shape(out[1], u, 1, TU_SH(4));
        check_shape(out[2], u, 1, TU_SH(4));
        tu_release_all(out, 3);
        weft_array_release(xs);
        tu_close(&t);
    }
}
END_TEST

START_TEST(unit_more)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        tu t;
        tu_open_backend(&t, backends[bi]);
        weft_program *p = t.p;
        weft_type u = unit_t(t.ctx);
        weft_acc *us = weft_param(p, u, 1);
        weft_acc *seg = weft_param(p, WEFT_I32, 1);
        weft_acc *x = weft_param(p, WEFT_I32, 1);
        /* foldSeg of unit */
        weft_fun *k = weft_fun2(p, u, u);
        weft_fun_return(k, unit_v(p));
        weft_acc *fs = weft_fold_seg(k, unit_v(p), us, seg);
        /* a 3-point stencil over unit: counts the window */
        weft_fun *st = weft_fun_create(p, 3, (weft_type[]){u, u, u});
        weft_fun_return(st, weft_i32(p, 3));
        int w = 3;
        weft_acc *sten = weft_stencil(
            st, &w, (weft_boundary){WEFT_BOUNDARY_CONSTANT, unit_v(p)}, us);
        /* zipWith3 with a unit in the middle */
        weft_fun *z3 =
            weft_fun_create(p, 3, (weft_type[]){WEFT_I32, u, WEFT_I32});
        weft_fun_return(z3, weft_sub(weft_arg(z3, 0), weft_arg(z3, 2)));
        weft_acc *zw3 = weft_zipwith3(z3, x, us, x);
        weft_acc *r[3] = {fs, sten, zw3};
        TU_PROGRAM_OK(p);
        FILE *f = tmpfile();
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(weft_program_dump(p, r, 3, f), WEFT_OK);
        char text[1024] = "";
        rewind(f);
        size_t got = fread(text, 1, sizeof text - 1, f);
        text[got] = '\0';
        fclose(f);
        ck_assert_msg(strstr(text, "x0 : ()") != NULL, "dump: %s", text);
        weft_array *ua;
        TU_OK(weft_array_create(t.ctx, u, 1, TU_SH(6), &ua));
        weft_array *sa = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), TU_I(2, 0, 4));
        weft_array *xa =
            tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(4), TU_I(1, 2, 3, 4));
        weft_array *in[3] = {ua, sa, xa};
        weft_array *out[3] = {NULL};
        run(&t, r, 3, in, 3, out, 3);
        check_shape(out[0], u, 1, TU_SH(3));
        TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(6), TU_I(3, 3, 3, 3, 3, 3));
        TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(4), TU_I(0, 0, 0, 0));
        tu_release_all(out, 3);
        weft_array_release(ua);
        weft_array_release(sa);
        weft_array_release(xa);
        tu_close(&t);
    }
}
END_TEST

static Suite *unit_suite(void)
{
    Suite *s = suite_create("unit");
    TCase *t = tcase_create("unit");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, unit_type);
    tcase_add_test(t, unit_producers);
    tcase_add_test(t, unit_in_tuples);
    tcase_add_test(t, unit_reductions);
    tcase_add_test(t, unit_control);
    tcase_add_test(t, unit_more);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(unit_suite)
