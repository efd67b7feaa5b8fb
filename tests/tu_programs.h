/*
 * tests/tu_programs.h: the end-to-end programs, written once in weft.
 *
 * test_programs.c checks each against a reference computed in C on the
 * interpreter; test_cpu.c runs the same programs on the interpreter and
 * the compiled backend and compares the two (tu_cmp.h).  Each function
 * builds one program's result from parameters the caller made, so that
 * the caller chooses the inputs and how it checks them:
 *
 *   tu_prog_dotp           fold (+) 0 (zipWith (*) xs ys), f32 or f64
 *   tu_prog_saxpy          zipWith (\x y -> a x + y) xs ys, a = the alpha
 *   tu_prog_black_scholes  zipWith3 (\price strike years -> (call, put)),
 *                          f32, the cumulative normal by the usual
 *                          five-term polynomial
 *   tu_prog_smvm           foldSeg (+) 0 (zipWith (*) vals (backpermute
 *                          (shape vals) (\i -> cols ! i) x)) segd, f64
 *   tu_prog_histogram      permute (+) (10 zeros) (\i -> v / 10 when v in
 *                          [0, 100), else ignored) (map (\_ -> 1) vs)
 *   tu_prog_filter         filter (\x -> x mod 3 == 0) xs, by a scan of
 *                          the flags and a permute whose extent is the
 *                          scan's total (read with weft_the)
 *   tu_prog_jacobi         `iters` 3x3 stencils (clamp) of the 5-point
 *                          average 0.25 ((n + w) + (e + s)), f64
 *   tu_prog_newton         awhile: x = 0.5 (x + a / x) from max a 1 until
 *                          every |x^2 - a| <= 1e-12 a
 *   tu_prog_collatz        generate n (\i -> the steps of Collatz's
 *                          sequence from i + 1 to 1, a while loop), i32
 *
 * The constants are the programs': BS_RISKFREE, BS_VOLATILITY and
 * tu_bs_coeff serve the C references too.
 */
#ifndef WEFT_TESTS_TU_PROGRAMS_H
#define WEFT_TESTS_TU_PROGRAMS_H

#include "tu.h"

#define BS_RISKFREE 0.02
#define BS_VOLATILITY 0.30
#define BS_RSQRT2PI 0.39894228040143267793994605993438

/* The cumulative normal's polynomial (Abramowitz and Stegun 26.2.17). */
static const double tu_bs_coeff[5] = {0.31938153, -0.356563782, 1.781477937,
                                      -1.821255978, 1.330274429};

static inline weft_acc *tu_prog_dotp(weft_program *p, weft_type t, weft_acc *xs,
                                     weft_acc *ys)
{
    weft_exp *zero = t == WEFT_F32 ? weft_f32(p, 0) : weft_f64(p, 0);
    return weft_fold(tu_fun_op2(p, WEFT_OP_ADD, t), zero,
                     weft_zipwith(tu_fun_op2(p, WEFT_OP_MUL, t), xs, ys));
}

static inline weft_acc *tu_prog_saxpy(weft_program *p, weft_acc *alpha,
                                      weft_acc *xs, weft_acc *ys)
{
    weft_exp *a = weft_the(alpha); /* captured by the function below */
    weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_add(weft_mul(a, weft_arg(f, 0)), weft_arg(f, 1)));
    return weft_zipwith(f, xs, ys);
}

/* The cumulative normal of d, in f32. */
static inline weft_exp *tu_prog_cnd(weft_program *p, weft_exp *d)
{
    weft_exp *k =
        weft_fdiv(weft_f32(p, 1),
                  weft_add(weft_f32(p, 1),
                           weft_mul(weft_f32(p, 0.2316419f), weft_abs(d))));
    weft_exp *poly = weft_f32(p, (float)tu_bs_coeff[4]);
    for (int i = 3; i >= 0; i--) {
        poly = weft_add(weft_f32(p, (float)tu_bs_coeff[i]), weft_mul(k, poly));
    }
    poly = weft_mul(k, poly);
    weft_exp *c = weft_mul(
        weft_mul(weft_f32(p, (float)BS_RSQRT2PI),
                 weft_fexp(weft_mul(weft_f32(p, -0.5f), weft_mul(d, d)))),
        poly);
    return weft_cond(weft_gt(d, weft_f32(p, 0)), weft_sub(weft_f32(p, 1), c),
                     c);
}

static inline weft_acc *tu_prog_black_scholes(weft_program *p, weft_acc *price,
                                              weft_acc *strike, weft_acc *years)
{
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_exp *s = weft_arg(f, 0), *x = weft_arg(f, 1), *t = weft_arg(f, 2);
    weft_exp *r = weft_f32(p, (float)BS_RISKFREE);
    weft_exp *v = weft_f32(p, (float)BS_VOLATILITY);
    weft_exp *v_sqrtt = weft_mul(v, weft_sqrt(t));
    weft_exp *d1 = weft_fdiv(
        weft_add(
            weft_log(weft_fdiv(s, x)),
            weft_mul(weft_add(r, weft_mul(weft_f32(p, 0.5f), weft_mul(v, v))),
                     t)),
        v_sqrtt);
    weft_exp *d2 = weft_sub(d1, v_sqrtt);
    weft_exp *c1 = tu_prog_cnd(p, d1), *c2 = tu_prog_cnd(p, d2);
    weft_exp *x_exprt = weft_mul(x, weft_fexp(weft_mul(weft_neg(r), t)));
    weft_exp *pair[2] = {
        weft_sub(weft_mul(s, c1), weft_mul(x_exprt, c2)),
        weft_sub(weft_mul(x_exprt, weft_sub(weft_f32(p, 1), c2)),
                 weft_mul(s, weft_sub(weft_f32(p, 1), c1)))};
    weft_fun_return(f, weft_tuple(p, 2, pair));
    return weft_zipwith3(f, price, strike, years);
}

/* segd: the row lengths (i32), or with offsets its row pointers (nrows +
 * 1, weft_fold_seg_offsets); cols: the column of each value (i32). */
static inline weft_acc *tu_prog_smvm_by(weft_program *p, weft_acc *segd,
                                        weft_acc *cols, weft_acc *vals,
                                        weft_acc *xv, bool offsets)
{
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(weft_at(cols, weft_arg(ix, 0)),
                                                 WEFT_I64)));
    weft_acc *gathered = weft_backpermute(weft_shape(vals), ix, xv);
    weft_acc *prods =
        weft_zipwith(tu_fun_op2(p, WEFT_OP_MUL, WEFT_F64), vals, gathered);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_F64);
    return offsets ? weft_fold_seg_offsets(add, weft_f64(p, 0), prods, segd)
                   : weft_fold_seg(add, weft_f64(p, 0), prods, segd);
}

static inline weft_acc *tu_prog_smvm(weft_program *p, weft_acc *segd,
                                     weft_acc *cols, weft_acc *vals,
                                     weft_acc *xv)
{
    return tu_prog_smvm_by(p, segd, cols, vals, xv, false);
}

/* vs: i32 values; ten buckets. */
static inline weft_acc *tu_prog_histogram(weft_program *p, weft_acc *vs)
{
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_i32(p, 0));
    weft_acc *zeros = weft_generate(weft_index1(weft_i64(p, 10)), zero);
    weft_fun *one = weft_fun1(p, WEFT_I32);
    weft_fun_return(one, weft_i32(p, 1));
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *v = weft_at(vs, weft_arg(ix, 0));
    weft_exp *in_range =
        weft_and(weft_ge(v, weft_i32(p, 0)), weft_lt(v, weft_i32(p, 100)));
    weft_fun_return(ix, weft_cond(in_range,
                                  weft_index1(weft_convert(
                                      weft_quot(v, weft_i32(p, 10)), WEFT_I64)),
                                  weft_ignore(p, 1)));
    return weft_permute(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32), zeros, ix,
                        weft_map(one, vs));
}

/* a: i32. */
static inline weft_acc *tu_prog_filter(weft_program *p, weft_acc *a)
{
    weft_fun *pred = weft_fun1(p, WEFT_I32);
    weft_fun_return(
        pred, weft_cond(weft_eq(weft_mod(weft_arg(pred, 0), weft_i32(p, 3)),
                                weft_i32(p, 0)),
                        weft_i64(p, 1), weft_i64(p, 0)));
    weft_acc *keep = weft_map(pred, a);
    weft_acc *sc =
        weft_scanl_(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64), weft_i64(p, 0), keep);
    weft_acc *offs = weft_aget(sc, 0), *total = weft_aget(sc, 1);
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_i32(p, 0));
    weft_acc *dflt = weft_generate(weft_index1(weft_the(total)), zero);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_arg(ix, 0);
    weft_fun_return(ix, weft_cond(weft_eq(weft_at(keep, i), weft_i64(p, 1)),
                                  weft_index1(weft_at(offs, i)),
                                  weft_ignore(p, 1)));
    weft_fun *first = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(first, weft_arg(first, 0));
    return weft_permute(first, dflt, ix, a);
}

/* g: f64, rank 2. */
static inline weft_acc *tu_prog_jacobi(weft_program *p, weft_acc *g, int iters)
{
    /* The window's elements in row-major order: 1 north, 3 west, 5 east,
     * 7 south. */
    weft_type ts[9];
    for (int i = 0; i < 9; i++) {
        ts[i] = WEFT_F64;
    }
    weft_fun *f = weft_fun_create(p, 9, ts);
    weft_fun_return(
        f, weft_mul(weft_f64(p, 0.25),
                    weft_add(weft_add(weft_arg(f, 1), weft_arg(f, 3)),
                             weft_add(weft_arg(f, 5), weft_arg(f, 7)))));
    static const int window[2] = {3, 3};
    weft_boundary clamp = {WEFT_BOUNDARY_CLAMP, NULL};
    weft_acc *r = g;
    for (int k = 0; k < iters; k++) {
        r = weft_stencil(f, window, clamp, r);
    }
    return r;
}

/* as: f64, every a > 0. */
static inline weft_acc *tu_prog_newton(weft_program *p, weft_acc *as)
{
    /* x0 = max a 1 */
    weft_fun *start = weft_fun1(p, WEFT_F64);
    weft_fun_return(start, weft_max(weft_arg(start, 0), weft_f64(p, 1)));
    weft_acc *x0 = weft_map(start, as);
    /* cond xs = fold_all (||) False (zipWith (\x a -> |x*x - a| > tol*a)) */
    weft_afun *cond = weft_afun_like(x0);
    weft_fun *far = weft_fun2(p, WEFT_F64, WEFT_F64);
    weft_exp *x = weft_arg(far, 0), *a = weft_arg(far, 1);
    weft_fun_return(far, weft_gt(weft_abs(weft_sub(weft_mul(x, x), a)),
                                 weft_mul(weft_f64(p, 1e-12), a)));
    weft_afun_return(cond,
                     weft_fold_all(tu_fun_op2(p, WEFT_OP_OR, WEFT_BOOL),
                                   weft_bool(p, 0),
                                   weft_zipwith(far, weft_afun_arg(cond), as)));
    /* body xs = zipWith (\x a -> 0.5 * (x + a / x)) xs as */
    weft_afun *body = weft_afun_like(x0);
    weft_fun *step = weft_fun2(p, WEFT_F64, WEFT_F64);
    x = weft_arg(step, 0);
    a = weft_arg(step, 1);
    weft_fun_return(step,
                    weft_mul(weft_f64(p, 0.5), weft_add(x, weft_fdiv(a, x))));
    weft_afun_return(body, weft_zipwith(step, weft_afun_arg(body), as));
    return weft_awhile(cond, body, x0);
}

/* n: the extent (i64), a term of p. */
static inline weft_acc *tu_prog_collatz(weft_program *p, weft_context *ctx,
                                        weft_exp *n)
{
    weft_type st = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I64, WEFT_I32});
    ck_assert_int_ne(st, 0);
    weft_fun *cond = weft_fun1(p, st);
    weft_fun_return(cond,
                    weft_ne(weft_get(weft_arg(cond, 0), 0), weft_i64(p, 1)));
    weft_fun *body = weft_fun1(p, st);
    weft_exp *m = weft_get(weft_arg(body, 0), 0);
    weft_exp *c = weft_get(weft_arg(body, 0), 1);
    weft_exp *next[2] = {
        weft_cond(weft_eq(weft_rem(m, weft_i64(p, 2)), weft_i64(p, 0)),
                  weft_quot(m, weft_i64(p, 2)),
                  weft_add(weft_mul(m, weft_i64(p, 3)), weft_i64(p, 1))),
        weft_add(c, weft_i32(p, 1))};
    weft_fun_return(body, weft_tuple(p, 2, next));
    /* generate (Z :. n) (\ix -> snd (while cond body (ix + 1, 0))) */
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *init[2] = {weft_add(weft_get(weft_arg(g, 0), 0), weft_i64(p, 1)),
                         weft_i32(p, 0)};
    weft_fun_return(
        g, weft_get(weft_while(cond, body, weft_tuple(p, 2, init)), 1));
    return weft_generate(weft_index1(n), g);
}

#endif /* WEFT_TESTS_TU_PROGRAMS_H */
