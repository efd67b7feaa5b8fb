/*
 * tests/test_scalar.c: every scalar primitive of weft_ops.h, and the other
 * scalar terms (constants, cond, let, tuples, shapes and indices, indexing,
 * the, while), on the reference interpreter against hand-computed values.
 *
 * Each primitive case runs twice:
 *   - on arrays: the operands are parameters (weft_param) and the operation
 *     is the function of a map or zipwith, so the interpreter computes it;
 *   - on constants: weft_unit of the operation applied to weft_const terms,
 *     one rank-0 result per case, all from one program, so the simplifier's
 *     constant folding (if any) must agree with the interpreter.
 * Integral results are exact.  Floating tolerances (relative to the
 * expected value when its magnitude exceeds 1, absolute otherwise):
 *   f64 1e-12: libm's double functions are within a few ulp (2.2e-16);
 *   f32 1e-6:  float functions within 1-2 ulp (1.2e-7 each), whether
 *              computed in float or in double and rounded;
 *   f16 1e-3:  a half has an 11-bit significand (ulp 9.8e-4 relative near
 *              1), and a result may be computed in float then rounded.
 * Exactly rounded operations (+ - * / sqrt of representable values) are
 * given their exact expected values, which the tolerance then admits.
 */
#include "tu.h"

#define TOL64 1e-12
#define TOL32 1e-6
#define TOL16 1e-3

#define PI 3.14159265358979323846
#define E1 2.71828182845904523536

#define NARR(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define I(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})

typedef weft_exp *(*typed_fn)(weft_exp *, weft_type);

/* One table entry: an operation applied to n pairs of operands. */
typedef struct spec {
    int line;               /* where the case is written */
    const char *name;       /* the operation and type, for messages */
    weft_op op;             /* the primitive (when tf is NULL) */
    typed_fn tf;            /* a typed builder (floor, convert, ...) or NULL */
    weft_type to;           /* tf's result type */
    int arity;              /* 1 or 2 */
    weft_type t0, t1;       /* operand types */
    int n;                  /* number of cases */
    const int64_t *ai, *bi; /* integral operands (t0, t1 integral) */
    const double *af, *bf;  /* floating operands */
    const int64_t *wi;      /* expected integral or bool results, or */
    const double *wf;       /* expected floating results */
    double tol;
} spec;

static weft_exp *apply_spec(const spec *s, weft_exp *x, weft_exp *y)
{
    if (s->tf != NULL) {
        return s->tf(x, s->to);
    }
    return s->arity == 1 ? weft_prim1(s->op, x) : weft_prim2(s->op, x, y);
}

static weft_array *operand_array(weft_context *ctx, weft_type t, int n,
                                 const int64_t *vi, const double *vf)
{
    if (tu_is_float(t)) {
        return tu_arr_f(ctx, t, 1, TU_SH(n), vf);
    }
    return tu_arr_i(ctx, t, 1, TU_SH(n), vi);
}

static weft_exp *operand_const(weft_program *p, weft_type t, int i,
                               const int64_t *vi, const double *vf)
{
    unsigned char buf[8];
    if (tu_is_float(t)) {
        tu_store_f(t, buf, vf[i]);
    } else {
        tu_store_i(t, buf, vi[i]);
    }
    return weft_const(p, t, buf);
}

static bool match_result(weft_context *ctx, const spec *s, weft_array *a,
                         int rank, const int64_t *shape, int first, char *msg,
                         size_t m)
{
    if (s->wi != NULL) {
        return tu_match_i(ctx, a, 0, rank, shape, s->wi + first, msg, m);
    }
    return tu_match_f(ctx, a, 0, rank, shape, s->wf + first, s->tol, msg, m);
}

/* Run the cases of s on arrays and on constants; fail with the case's
 * line on any difference. */
static void run_spec(const spec *s)
{
    char msg[256];
    tu t;

    /* On arrays. */
    tu_open(&t);
    weft_acc *xs = weft_param(t.p, s->t0, 1);
    weft_acc *ys = s->arity == 2 ? weft_param(t.p, s->t1, 1) : NULL;
    weft_fun *f =
        s->arity == 1 ? weft_fun1(t.p, s->t0) : weft_fun2(t.p, s->t0, s->t1);
    weft_fun_return(f, apply_spec(s, weft_arg(f, 0),
                                  s->arity == 2 ? weft_arg(f, 1) : NULL));
    weft_acc *r = s->arity == 1 ? weft_map(f, xs) : weft_zipwith(f, xs, ys);
    ck_assert_msg(r != NULL, "line %d %s: build: %s", s->line, s->name,
                  weft_program_error(t.p));
    weft_array *in[2] = {operand_array(t.ctx, s->t0, s->n, s->ai, s->af), NULL};
    if (s->arity == 2) {
        in[1] = operand_array(t.ctx, s->t1, s->n, s->bi, s->bf);
    }
    weft_array *out = NULL;
    weft_status st = tu_run(t.p, &r, 1, in, s->arity, &out, 1);
    ck_assert_msg(st == WEFT_OK, "line %d %s (arrays): %s", s->line, s->name,
                  weft_last_error());
    ck_assert_msg(
        match_result(t.ctx, s, out, 1, TU_SH(s->n), 0, msg, sizeof msg),
        "line %d %s (arrays): %s", s->line, s->name, msg);
    weft_array_release(out);
    tu_release_all(in, 2);
    tu_close(&t);

    /* On constants. */
    tu_open(&t);
    weft_acc *units[16];
    weft_array *outs[16] = {NULL};
    ck_assert_int_le(s->n, 16);
    for (int i = 0; i < s->n; i++) {
        weft_exp *x = operand_const(t.p, s->t0, i, s->ai, s->af);
        weft_exp *y =
            s->arity == 2 ? operand_const(t.p, s->t1, i, s->bi, s->bf) : NULL;
        units[i] = weft_unit(apply_spec(s, x, y));
    }
    ck_assert_msg(weft_program_status(t.p) == WEFT_OK,
                  "line %d %s (constants): build: %s", s->line, s->name,
                  weft_program_error(t.p));
    st = weft_run1(t.p, units, s->n, NULL, 0, outs, s->n);
    ck_assert_msg(st == WEFT_OK, "line %d %s (constants): %s", s->line, s->name,
                  weft_last_error());
    for (int i = 0; i < s->n; i++) {
        ck_assert_msg(
            match_result(t.ctx, s, outs[i], 0, NULL, i, msg, sizeof msg),
            "line %d %s (constants) case %d: %s", s->line, s->name, i, msg);
    }
    tu_release_all(outs, s->n);
    tu_close(&t);
}

/* Integral operands, integral (or bool) results. */
#define I2(o_, t, a, b, w)                                                     \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #o_ " " #t,                                       \
                     .op = o_,                                                 \
                     .arity = 2,                                               \
                     .t0 = t,                                                  \
                     .t1 = t,                                                  \
                     .n = NARR(a),                                             \
                     .ai = a,                                                  \
                     .bi = b,                                                  \
                     .wi = w})
#define I2S(o_, t, t1_, a, b, w)                                               \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #o_ " " #t " " #t1_,                              \
                     .op = o_,                                                 \
                     .arity = 2,                                               \
                     .t0 = t,                                                  \
                     .t1 = t1_,                                                \
                     .n = NARR(a),                                             \
                     .ai = a,                                                  \
                     .bi = b,                                                  \
                     .wi = w})
#define I1(o_, t, a, w)                                                        \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #o_ " " #t,                                       \
                     .op = o_,                                                 \
                     .arity = 1,                                               \
                     .t0 = t,                                                  \
                     .n = NARR(a),                                             \
                     .ai = a,                                                  \
                     .wi = w})
/* Floating operands, floating results. */
#define F2(o_, t, a, b, w, tol_)                                               \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #o_ " " #t,                                       \
                     .op = o_,                                                 \
                     .arity = 2,                                               \
                     .t0 = t,                                                  \
                     .t1 = t,                                                  \
                     .n = NARR(a),                                             \
                     .af = a,                                                  \
                     .bf = b,                                                  \
                     .wf = w,                                                  \
                     .tol = tol_})
#define F1(o_, t, a, w, tol_)                                                  \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #o_ " " #t,                                       \
                     .op = o_,                                                 \
                     .arity = 1,                                               \
                     .t0 = t,                                                  \
                     .n = NARR(a),                                             \
                     .af = a,                                                  \
                     .wf = w,                                                  \
                     .tol = tol_})
/* Floating operands, bool results. */
#define F2B(o_, t, a, b, w)                                                    \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #o_ " " #t,                                       \
                     .op = o_,                                                 \
                     .arity = 2,                                               \
                     .t0 = t,                                                  \
                     .t1 = t,                                                  \
                     .n = NARR(a),                                             \
                     .af = a,                                                  \
                     .bf = b,                                                  \
                     .wi = w})
#define F1B(o_, t, a, w)                                                       \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #o_ " " #t,                                       \
                     .op = o_,                                                 \
                     .arity = 1,                                               \
                     .t0 = t,                                                  \
                     .n = NARR(a),                                             \
                     .af = a,                                                  \
                     .wi = w})
/* Typed operations: from -> to; operands and results integral (I) or
 * floating (F). */
#define TII(fn, from, to_, a, w)                                               \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #fn " " #from " " #to_,                           \
                     .tf = fn,                                                 \
                     .to = to_,                                                \
                     .arity = 1,                                               \
                     .t0 = from,                                               \
                     .n = NARR(a),                                             \
                     .ai = a,                                                  \
                     .wi = w})
#define TIF(fn, from, to_, a, w, tol_)                                         \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #fn " " #from " " #to_,                           \
                     .tf = fn,                                                 \
                     .to = to_,                                                \
                     .arity = 1,                                               \
                     .t0 = from,                                               \
                     .n = NARR(a),                                             \
                     .ai = a,                                                  \
                     .wf = w,                                                  \
                     .tol = tol_})
#define TFI(fn, from, to_, a, w)                                               \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #fn " " #from " " #to_,                           \
                     .tf = fn,                                                 \
                     .to = to_,                                                \
                     .arity = 1,                                               \
                     .t0 = from,                                               \
                     .n = NARR(a),                                             \
                     .af = a,                                                  \
                     .wi = w})
#define TFF(fn, from, to_, a, w, tol_)                                         \
    run_spec(&(spec){.line = __LINE__,                                         \
                     .name = #fn " " #from " " #to_,                           \
                     .tf = fn,                                                 \
                     .to = to_,                                                \
                     .arity = 1,                                               \
                     .t0 = from,                                               \
                     .n = NARR(a),                                             \
                     .af = a,                                                  \
                     .wf = w,                                                  \
                     .tol = tol_})

/* Expect status `want` from one operation on one pair of operands, both on
 * arrays and on constants (whichever stage reports it: compile or run). */
static void run_err(int line, const spec *s, weft_status want)
{
    tu t;
    tu_open(&t);
    weft_acc *xs = weft_param(t.p, s->t0, 1);
    weft_acc *ys = s->arity == 2 ? weft_param(t.p, s->t1, 1) : NULL;
    weft_fun *f =
        s->arity == 1 ? weft_fun1(t.p, s->t0) : weft_fun2(t.p, s->t0, s->t1);
    weft_fun_return(f, apply_spec(s, weft_arg(f, 0),
                                  s->arity == 2 ? weft_arg(f, 1) : NULL));
    weft_acc *r = s->arity == 1 ? weft_map(f, xs) : weft_zipwith(f, xs, ys);
    ck_assert_msg(r != NULL, "line %d: build: %s", line,
                  weft_program_error(t.p));
    weft_array *in[2] = {operand_array(t.ctx, s->t0, 1, s->ai, s->af), NULL};
    if (s->arity == 2) {
        in[1] = operand_array(t.ctx, s->t1, 1, s->bi, s->bf);
    }
    weft_array *out = NULL;
    weft_status st = tu_run(t.p, &r, 1, in, s->arity, &out, 1);
    ck_assert_msg(st == want, "line %d (arrays): %s (%s), expected %s", line,
                  weft_status_name(st), weft_last_error(),
                  weft_status_name(want));
    ck_assert_ptr_null(out);
    ck_assert_str_ne(weft_last_error(), "");
    tu_release_all(in, 2);
    tu_close(&t);

    tu_open(&t);
    weft_exp *x = operand_const(t.p, s->t0, 0, s->ai, s->af);
    weft_exp *y =
        s->arity == 2 ? operand_const(t.p, s->t1, 0, s->bi, s->bf) : NULL;
    weft_acc *u = weft_unit(apply_spec(s, x, y));
    st = weft_run1(t.p, &u, 1, NULL, 0, &out, 1);
    ck_assert_msg(st == want, "line %d (constants): %s (%s), expected %s", line,
                  weft_status_name(st), weft_last_error(),
                  weft_status_name(want));
    ck_assert_ptr_null(out);
    tu_close(&t);
}

#define ERR_I2(o_, t, a, b, want)                                              \
    run_err(                                                                   \
        __LINE__,                                                              \
        &(spec){                                                               \
            .op = o_, .arity = 2, .t0 = t, .t1 = t, .ai = I(a), .bi = I(b)},   \
        want)
#define ERR_TF(fn, from, to_, a, want)                                         \
    run_err(__LINE__,                                                          \
            &(spec){.tf = fn, .to = to_, .arity = 1, .t0 = from, .af = F(a)},  \
            want)

#define I8MIN (-128)
#define I16MIN (-32768)
#define I32MAX INT64_C(2147483647)
#define I32MIN (-INT64_C(2147483647) - 1)
#define I64MAX INT64_MAX
#define I64MIN INT64_MIN
#define U32MAX INT64_C(4294967295)
#define U64MAX ((int64_t)-1) /* the bits of UINT64_MAX */

/* ------------------------------------------------------------------------
 * Arithmetic: add sub mul neg abs signum min max
 * ---------------------------------------------------------------------- */

START_TEST(test_add)
{
    I2(WEFT_OP_ADD, WEFT_I32, I(1, -5, I32MAX), I(2, 3, 1), I(3, -2, I32MIN));
    I2(WEFT_OP_ADD, WEFT_I8, I(127, -128, 5), I(1, -1, 6), I(-128, 127, 11));
    I2(WEFT_OP_ADD, WEFT_I16, I(32767, 100), I(1, -200), I(I16MIN, -100));
    I2(WEFT_OP_ADD, WEFT_I64, I(I64MAX, 40), I(1, 2), I(I64MIN, 42));
    I2(WEFT_OP_ADD, WEFT_U8, I(200, 255, 1), I(100, 1, 2), I(44, 0, 3));
    I2(WEFT_OP_ADD, WEFT_U16, I(65535, 7), I(2, 8), I(1, 15));
    I2(WEFT_OP_ADD, WEFT_U32, I(U32MAX, 10), I(1, 20), I(0, 30));
    I2(WEFT_OP_ADD, WEFT_U64, I(U64MAX, 5), I(2, 6), I(1, 11));
    F2(WEFT_OP_ADD, WEFT_F32, F(1.5, -0.5), F(2.25, 0.25), F(3.75, -0.25), 0);
    F2(WEFT_OP_ADD, WEFT_F64, F(0.1, 1e308), F(0.2, 1e308),
       F(0.30000000000000004, INFINITY), 0);
    F2(WEFT_OP_ADD, WEFT_F16, F(1, 0.5, 65504), F(2, 0.25, 65504),
       F(3, 0.75, INFINITY), 0);
    /* f16 results are rounded to half, ties to even: 2048 + 1 = 2048;
     * 0.1 + 0.2 (as halves) = 0.2999267578125 exactly, a tie between
     * 0.2998046875 and 0.30004882812 (spacing 2^-12), giving the even. */
    F2(WEFT_OP_ADD, WEFT_F16, F(2048, 0.1), F(1, 0.2), F(2048, 0.2998046875),
       0);
}
END_TEST

START_TEST(test_sub)
{
    I2(WEFT_OP_SUB, WEFT_I32, I(3, I32MIN), I(5, 1), I(-2, I32MAX));
    I2(WEFT_OP_SUB, WEFT_I64, I(I64MIN, 10), I(1, 52), I(I64MAX, -42));
    I2(WEFT_OP_SUB, WEFT_U8, I(3, 10), I(5, 3), I(254, 7));
    I2(WEFT_OP_SUB, WEFT_U16, I(0), I(1), I(65535));
    I2(WEFT_OP_SUB, WEFT_I8, I(-128), I(1), I(127));
    F2(WEFT_OP_SUB, WEFT_F64, F(1.5, 1), F(2.5, INFINITY), F(-1, -INFINITY), 0);
    F2(WEFT_OP_SUB, WEFT_F32, F(0.75), F(1), F(-0.25), 0);
    F2(WEFT_OP_SUB, WEFT_F16, F(1), F(0.125), F(0.875), 0);
}
END_TEST

START_TEST(test_mul)
{
    I2(WEFT_OP_MUL, WEFT_I32, I(-3, 65536), I(4, 65536), I(-12, 0));
    I2(WEFT_OP_MUL, WEFT_U8, I(16, 15), I(16, 17), I(0, 255));
    I2(WEFT_OP_MUL, WEFT_I16, I(300), I(300), I(24464)); /* 90000-65536 */
    I2(WEFT_OP_MUL, WEFT_I8, I(-128, 64), I(-1, 2), I(-128, -128));
    I2(WEFT_OP_MUL, WEFT_U32, I(65536, 65535), I(65536, 65537), I(0, U32MAX));
    I2(WEFT_OP_MUL, WEFT_I64, I(INT64_C(1) << 32), I(INT64_C(1) << 31),
       I(I64MIN));
    I2(WEFT_OP_MUL, WEFT_U64, I(U64MAX), I(U64MAX), I(1));
    F2(WEFT_OP_MUL, WEFT_F32, F(1.5, 1e30), F(-2, 1e30), F(-3, INFINITY), 0);
    F2(WEFT_OP_MUL, WEFT_F64, F(0.5, 3), F(0.25, -7), F(0.125, -21), 0);
    F2(WEFT_OP_MUL, WEFT_F16, F(0.5, 256), F(3, 256), F(1.5, INFINITY), 0);
}
END_TEST

START_TEST(test_neg_abs_signum)
{
    I1(WEFT_OP_NEG, WEFT_I32, I(5, -7, 0, I32MIN), I(-5, 7, 0, I32MIN));
    I1(WEFT_OP_NEG, WEFT_I8, I(-128, 1), I(-128, -1));
    I1(WEFT_OP_NEG, WEFT_U8, I(1, 0), I(255, 0));
    I1(WEFT_OP_NEG, WEFT_U64, I(1), I(U64MAX));
    F1(WEFT_OP_NEG, WEFT_F64, F(2.5, -INFINITY), F(-2.5, INFINITY), 0);
    F1(WEFT_OP_NEG, WEFT_F32, F(1.25), F(-1.25), 0);
    F1(WEFT_OP_NEG, WEFT_F16, F(1), F(-1), 0);

    I1(WEFT_OP_ABS, WEFT_I32, I(-5, 5, 0, I32MIN), I(5, 5, 0, I32MIN));
    I1(WEFT_OP_ABS, WEFT_I8, I(-128, -3), I(-128, 3));
    I1(WEFT_OP_ABS, WEFT_I64, I(-(INT64_C(1) << 40)), I(INT64_C(1) << 40));
    I1(WEFT_OP_ABS, WEFT_U8, I(200), I(200));
    F1(WEFT_OP_ABS, WEFT_F64, F(-2.5, 3), F(2.5, 3), 0);
    F1(WEFT_OP_ABS, WEFT_F32, F(-INFINITY, -0.5), F(INFINITY, 0.5), 0);
    F1(WEFT_OP_ABS, WEFT_F16, F(-3), F(3), 0);

    I1(WEFT_OP_SIGNUM, WEFT_I32, I(-5, 0, 7), I(-1, 0, 1));
    I1(WEFT_OP_SIGNUM, WEFT_I8, I(-128, 127), I(-1, 1));
    I1(WEFT_OP_SIGNUM, WEFT_I64, I(I64MIN, 0), I(-1, 0));
    I1(WEFT_OP_SIGNUM, WEFT_U8, I(0, 200), I(0, 1));
    I1(WEFT_OP_SIGNUM, WEFT_U64, I(U64MAX), I(1));
    F1(WEFT_OP_SIGNUM, WEFT_F64, F(-2.5, 0, 3, -INFINITY), F(-1, 0, 1, -1), 0);
    F1(WEFT_OP_SIGNUM, WEFT_F32, F(-0.1, 100), F(-1, 1), 0);
    F1(WEFT_OP_SIGNUM, WEFT_F16, F(-3, 0.5), F(-1, 1), 0);
}
END_TEST

START_TEST(test_min_max)
{
    I2(WEFT_OP_MIN, WEFT_I32, I(3, -4), I(-4, 3), I(-4, -4));
    I2(WEFT_OP_MAX, WEFT_I32, I(3, -4), I(-4, 3), I(3, 3));
    I2(WEFT_OP_MIN, WEFT_U8, I(200, 100), I(100, 200), I(100, 100));
    I2(WEFT_OP_MAX, WEFT_U8, I(200, 100), I(100, 200), I(200, 200));
    I2(WEFT_OP_MIN, WEFT_I8, I(-128), I(127), I(-128));
    I2(WEFT_OP_MAX, WEFT_I16, I(-1), I(I16MIN), I(-1));
    /* u64: UINT64_MAX is the largest, not -1. */
    I2(WEFT_OP_MIN, WEFT_U64, I(U64MAX), I(1), I(1));
    I2(WEFT_OP_MAX, WEFT_U64, I(U64MAX), I(1), I(U64MAX));
    I2(WEFT_OP_MAX, WEFT_I64, I(I64MIN), I(I64MAX), I(I64MAX));
    /* NaN: max x y = x <= y ? y : x, min x y = x <= y ? x : y, so
     * max(NaN, 1) = NaN, max(1, NaN) = 1, min(NaN, 1) = 1,
     * min(1, NaN) = NaN. */
    F2(WEFT_OP_MAX, WEFT_F64, F(1.5, NAN, 1, -INFINITY), F(-2, 1, NAN, 0),
       F(1.5, NAN, 1, 0), 0);
    F2(WEFT_OP_MIN, WEFT_F64, F(1.5, NAN, 1, -INFINITY), F(-2, 1, NAN, 0),
       F(-2, 1, NAN, -INFINITY), 0);
    F2(WEFT_OP_MAX, WEFT_F32, F(NAN, 2), F(2, NAN), F(NAN, 2), 0);
    F2(WEFT_OP_MIN, WEFT_F32, F(NAN, 2), F(2, NAN), F(2, NAN), 0);
    F2(WEFT_OP_MIN, WEFT_F16, F(0.5, NAN), F(0.25, 3), F(0.25, 3), 0);
    F2(WEFT_OP_MAX, WEFT_F16, F(0.5, NAN), F(0.25, 3), F(0.5, NAN), 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Integral: quot rem idiv mod, bits, shifts, rotations, counts
 * ---------------------------------------------------------------------- */

START_TEST(test_quot_rem_div_mod)
{
    I2(WEFT_OP_QUOT, WEFT_I32, I(-7, 7, 7, -7, 6), I(2, 2, -2, -2, 3),
       I(-3, 3, -3, 3, 2));
    I2(WEFT_OP_REM, WEFT_I32, I(-7, 7, 7, -7, 6), I(2, 2, -2, -2, 3),
       I(-1, 1, 1, -1, 0));
    I2(WEFT_OP_IDIV, WEFT_I32, I(-7, 7, 7, -7, -6), I(2, 2, -2, -2, 2),
       I(-4, 3, -4, 3, -3));
    I2(WEFT_OP_MOD, WEFT_I32, I(-7, 7, 7, -7, -6), I(2, 2, -2, -2, 2),
       I(1, 1, -1, -1, 0));
    /* -128 = -42 * 3 - 2 = -43 * 3 + 1 */
    I2(WEFT_OP_QUOT, WEFT_I8, I(-128), I(3), I(-42));
    I2(WEFT_OP_REM, WEFT_I8, I(-128), I(3), I(-2));
    I2(WEFT_OP_IDIV, WEFT_I8, I(-128), I(3), I(-43));
    I2(WEFT_OP_MOD, WEFT_I8, I(-128), I(3), I(1));
    I2(WEFT_OP_QUOT, WEFT_I16, I(-1000), I(7), I(-142));
    I2(WEFT_OP_MOD, WEFT_I16, I(1000), I(-7), I(-1)); /* -143*-7 = 1001 */
    I2(WEFT_OP_IDIV, WEFT_I64, I(-INT64_C(10000000000)), I(3),
       I(-INT64_C(3333333334)));
    I2(WEFT_OP_REM, WEFT_I64, I(I64MIN), I(10), I(-8));
    I2(WEFT_OP_QUOT, WEFT_U8, I(200), I(7), I(28));
    I2(WEFT_OP_REM, WEFT_U8, I(200), I(7), I(4));
    I2(WEFT_OP_IDIV, WEFT_U16, I(65535), I(256), I(255));
    I2(WEFT_OP_MOD, WEFT_U16, I(65535), I(256), I(255));
    I2(WEFT_OP_QUOT, WEFT_U32, I(U32MAX), I(2), I(2147483647));
    /* u64: the dividend is 2^64 - 1, not -1. */
    I2(WEFT_OP_QUOT, WEFT_U64, I(U64MAX), I(2), I(I64MAX));
    I2(WEFT_OP_REM, WEFT_U64, I(U64MAX), I(10), I(5));
    I2(WEFT_OP_IDIV, WEFT_U64, I(U64MAX), I(U64MAX), I(1));
    I2(WEFT_OP_MOD, WEFT_U64, I(U64MAX), I(16), I(15));
    /* rem and mod of the minimum by -1 are 0 (only quot and div of it
     * overflow); C's % would trap here */
    I2(WEFT_OP_REM, WEFT_I32, I(I32MIN), I(-1), I(0));
    I2(WEFT_OP_MOD, WEFT_I32, I(I32MIN), I(-1), I(0));
    I2(WEFT_OP_REM, WEFT_I64, I(I64MIN), I(-1), I(0));
    I2(WEFT_OP_MOD, WEFT_I8, I(-128), I(-1), I(0));
}
END_TEST

START_TEST(test_division_errors)
{
    ERR_I2(WEFT_OP_QUOT, WEFT_I32, 1, 0, WEFT_ERR_DIVIDE_BY_ZERO);
    ERR_I2(WEFT_OP_REM, WEFT_I32, 1, 0, WEFT_ERR_DIVIDE_BY_ZERO);
    ERR_I2(WEFT_OP_IDIV, WEFT_U8, 1, 0, WEFT_ERR_DIVIDE_BY_ZERO);
    ERR_I2(WEFT_OP_MOD, WEFT_I64, 1, 0, WEFT_ERR_DIVIDE_BY_ZERO);
    ERR_I2(WEFT_OP_QUOT, WEFT_I32, I32MIN, -1, WEFT_ERR_UNDEFINED);
    ERR_I2(WEFT_OP_IDIV, WEFT_I8, -128, -1, WEFT_ERR_UNDEFINED);
}
END_TEST

START_TEST(test_bitwise)
{
    I2(WEFT_OP_BAND, WEFT_I32, I(0xF0F0, -1), I(0x0FF0, 0x1234),
       I(0x00F0, 0x1234));
    I2(WEFT_OP_BAND, WEFT_U8, I(0xAA), I(0x0F), I(0x0A));
    I2(WEFT_OP_BAND, WEFT_U64, I(U64MAX), I(I64MIN), I(I64MIN));
    I2(WEFT_OP_BOR, WEFT_U8, I(0xA0), I(0x0A), I(0xAA));
    I2(WEFT_OP_BOR, WEFT_I16, I(I16MIN), I(1), I(-32767));
    I2(WEFT_OP_BOR, WEFT_I64, I(INT64_C(1) << 40), I(1),
       I((INT64_C(1) << 40) | 1));
    I2(WEFT_OP_BXOR, WEFT_U32, I(U32MAX), I(0x0F0F0F0F), I(0xF0F0F0F0));
    I2(WEFT_OP_BXOR, WEFT_I8, I(-1), I(0x0F), I(-16));
    I2(WEFT_OP_BXOR, WEFT_U16, I(0x1234), I(0x1234), I(0));
    I1(WEFT_OP_BNOT, WEFT_U8, I(0, 0x0F), I(255, 0xF0));
    I1(WEFT_OP_BNOT, WEFT_I32, I(0, -1), I(-1, 0));
    I1(WEFT_OP_BNOT, WEFT_I64, I(5), I(-6));
    I1(WEFT_OP_BNOT, WEFT_U16, I(0x00FF), I(0xFF00));
    I1(WEFT_OP_BNOT, WEFT_I8, I(0x7F), I(-128));
    I1(WEFT_OP_BNOT, WEFT_U32, I(0), I(U32MAX));
    I1(WEFT_OP_BNOT, WEFT_U64, I(0), I(U64MAX));
    I1(WEFT_OP_BNOT, WEFT_I16, I(0), I(-1));
}
END_TEST

START_TEST(test_shifts)
{
    I2(WEFT_OP_SHL, WEFT_I32, I(1, 1, -1), I(4, 31, 1), I(16, I32MIN, -2));
    I2(WEFT_OP_SHL, WEFT_U8, I(0x81, 1), I(1, 7), I(0x02, 0x80));
    I2(WEFT_OP_SHL, WEFT_I8, I(64), I(1), I(-128));
    I2(WEFT_OP_SHL, WEFT_U64, I(1), I(63), I(I64MIN));
    I2(WEFT_OP_SHL, WEFT_I16, I(3), I(14), I(I16MIN + 16384));
    /* shr: arithmetic for signed types, logical for unsigned ones. */
    I2(WEFT_OP_SHR, WEFT_I8, I(-128, 127), I(1, 3), I(-64, 15));
    I2(WEFT_OP_SHR, WEFT_U8, I(128, 255), I(1, 7), I(64, 1));
    I2(WEFT_OP_SHR, WEFT_I32, I(-1, I32MIN), I(31, 4), I(-1, -134217728));
    I2(WEFT_OP_SHR, WEFT_U32, I(0x80000000), I(31), I(1));
    I2(WEFT_OP_SHR, WEFT_I64, I(-16, I64MIN), I(2, 63), I(-4, -1));
    I2(WEFT_OP_SHR, WEFT_U64, I(U64MAX), I(60), I(15));
    I2(WEFT_OP_SHR, WEFT_U16, I(0xFFFF), I(15), I(1));
    /* The amount may have another integral type. */
    I2S(WEFT_OP_SHL, WEFT_U8, WEFT_I32, I(3), I(2), I(12));
    I2S(WEFT_OP_SHR, WEFT_I64, WEFT_U8, I(-256), I(4), I(-16));
    /* Shifting by the width or more is undefined and reported. */
    ERR_I2(WEFT_OP_SHL, WEFT_I32, 1, 32, WEFT_ERR_UNDEFINED);
    ERR_I2(WEFT_OP_SHR, WEFT_U8, 1, 8, WEFT_ERR_UNDEFINED);
}
END_TEST

START_TEST(test_rotations)
{
    /* Modulo the width: by 9 on u8 is by 1; by 16 on u16 is by 0. */
    I2(WEFT_OP_ROTL, WEFT_U8, I(0x81, 0x81, 0x0F), I(1, 9, 4),
       I(0x03, 0x03, 0xF0));
    I2(WEFT_OP_ROTL, WEFT_I8, I(-127), I(1), I(3)); /* 0x81 */
    I2(WEFT_OP_ROTL, WEFT_U16, I(0x1234, 0x1234), I(16, 4), I(0x1234, 0x2341));
    I2(WEFT_OP_ROTL, WEFT_U32, I(0x80000001), I(4), I(0x18));
    I2(WEFT_OP_ROTL, WEFT_U64, I(I64MIN), I(1), I(1));
    I2(WEFT_OP_ROTL, WEFT_I32, I(-1), I(13), I(-1));
    I2(WEFT_OP_ROTR, WEFT_U8, I(0x81, 0x03), I(1, 9), I(0xC0, 0x81));
    I2(WEFT_OP_ROTR, WEFT_U32, I(1), I(1), I(0x80000000));
    I2(WEFT_OP_ROTR, WEFT_I16, I(1), I(1), I(I16MIN));
    I2(WEFT_OP_ROTR, WEFT_I64, I(1), I(64), I(1));
    I2(WEFT_OP_ROTR, WEFT_U64, I(0x10), I(4 + 64), I(1));
    I2S(WEFT_OP_ROTL, WEFT_U8, WEFT_I32, I(0x81), I(1), I(0x03));
}
END_TEST

START_TEST(test_counts)
{
    /* popcount, clz and ctz give i32; of 0, clz and ctz give the width. */
    I1(WEFT_OP_POPCOUNT, WEFT_U8, I(0xFF, 0, 0x81), I(8, 0, 2));
    I1(WEFT_OP_POPCOUNT, WEFT_I8, I(-128, -1), I(1, 8));
    I1(WEFT_OP_POPCOUNT, WEFT_U16, I(0x0F0F), I(8));
    I1(WEFT_OP_POPCOUNT, WEFT_I32, I(-1, 7), I(32, 3));
    I1(WEFT_OP_POPCOUNT, WEFT_U32, I(0), I(0));
    I1(WEFT_OP_POPCOUNT, WEFT_I64, I(-1, I64MIN), I(64, 1));
    I1(WEFT_OP_POPCOUNT, WEFT_U64, I(U64MAX), I(64));

    I1(WEFT_OP_CLZ, WEFT_U32, I(1, 0, 0x80000000), I(31, 32, 0));
    I1(WEFT_OP_CLZ, WEFT_U8, I(1, 0), I(7, 8));
    I1(WEFT_OP_CLZ, WEFT_I8, I(-1, 1), I(0, 7));
    I1(WEFT_OP_CLZ, WEFT_U16, I(0x0100), I(7));
    I1(WEFT_OP_CLZ, WEFT_I16, I(0), I(16));
    I1(WEFT_OP_CLZ, WEFT_I32, I(-1, 0x10000), I(0, 15));
    I1(WEFT_OP_CLZ, WEFT_I64, I(1), I(63));
    I1(WEFT_OP_CLZ, WEFT_U64, I(0, 0xFFFFFFFF), I(64, 32));

    I1(WEFT_OP_CTZ, WEFT_U32, I(8, 0, 0x80000000), I(3, 32, 31));
    I1(WEFT_OP_CTZ, WEFT_U8, I(0x80, 0), I(7, 8));
    I1(WEFT_OP_CTZ, WEFT_I8, I(-128, 1), I(7, 0));
    I1(WEFT_OP_CTZ, WEFT_I16, I(0, 12), I(16, 2));
    I1(WEFT_OP_CTZ, WEFT_U16, I(0x8000), I(15));
    I1(WEFT_OP_CTZ, WEFT_I32, I(I32MIN), I(31));
    I1(WEFT_OP_CTZ, WEFT_I64, I(I64MIN, 0), I(63, 64));
    I1(WEFT_OP_CTZ, WEFT_U64, I(0, INT64_C(1) << 40), I(64, 40));
}
END_TEST

/* ------------------------------------------------------------------------
 * Floating: fdiv pow atan2 and the functions
 * ---------------------------------------------------------------------- */

START_TEST(test_fdiv)
{
    F2(WEFT_OP_FDIV, WEFT_F32, F(1, 1, -1, 0, 7), F(4, 0, 0, 0, 2),
       F(0.25, INFINITY, -INFINITY, NAN, 3.5), 0);
    F2(WEFT_OP_FDIV, WEFT_F64, F(1, -9), F(3, 4), F(1.0 / 3.0, -2.25), 0);
    /* f16 1/3 rounds to 0x3555 = 0.333251953125 exactly. */
    F2(WEFT_OP_FDIV, WEFT_F16, F(1, 3, 1), F(3, 4, 0),
       F(0.333251953125, 0.75, INFINITY), 0);
}
END_TEST

START_TEST(test_pow_atan2)
{
    F2(WEFT_OP_POW, WEFT_F64, F(2, 2, 9, 10, 0), F(10, 0.5, 0.5, -2, 0),
       F(1024, 1.4142135623730951, 3, 0.01, 1), TOL64);
    F2(WEFT_OP_POW, WEFT_F32, F(2, 3), F(-1, 3), F(0.5, 27), TOL32);
    F2(WEFT_OP_POW, WEFT_F16, F(2, 4), F(3, 0.5), F(8, 2), TOL16);
    F2(WEFT_OP_ATAN2, WEFT_F64, F(1, 1, -1, 0, 0), F(1, -1, -1, -1, 1),
       F(PI / 4, 3 * PI / 4, -3 * PI / 4, PI, 0), TOL64);
    F2(WEFT_OP_ATAN2, WEFT_F32, F(1, 0), F(0, 1), F(PI / 2, 0), TOL32);
    F2(WEFT_OP_ATAN2, WEFT_F16, F(1), F(1), F(PI / 4), TOL16);
}
END_TEST

START_TEST(test_exp_log_sqrt)
{
    F1(WEFT_OP_EXP, WEFT_F64, F(0, 1, -1, -INFINITY), F(1, E1, 1 / E1, 0),
       TOL64);
    F1(WEFT_OP_EXP, WEFT_F32, F(1, 2), F(E1, E1 * E1), TOL32);
    F1(WEFT_OP_EXP, WEFT_F16, F(0, 1), F(1, E1), TOL16);
    F1(WEFT_OP_LOG, WEFT_F64, F(1, E1, 0, -1, 1024),
       F(0, 1, -INFINITY, NAN, 6.931471805599453), TOL64);
    F1(WEFT_OP_LOG, WEFT_F32, F(E1 * E1), F(2), TOL32);
    F1(WEFT_OP_LOG, WEFT_F16, F(4), F(1.3862943611198906), TOL16);
    F1(WEFT_OP_SQRT, WEFT_F64, F(4, 2, -1, INFINITY),
       F(2, 1.4142135623730951, NAN, INFINITY), TOL64);
    F1(WEFT_OP_SQRT, WEFT_F32, F(0.25, 2), F(0.5, 1.4142135623730951), TOL32);
    F1(WEFT_OP_SQRT, WEFT_F16, F(9, 2), F(3, 1.4142135623730951), TOL16);
}
END_TEST

START_TEST(test_trig)
{
    F1(WEFT_OP_SIN, WEFT_F64, F(0, PI / 2, PI / 6, -PI / 2), F(0, 1, 0.5, -1),
       TOL64);
    F1(WEFT_OP_SIN, WEFT_F32, F(PI / 6), F(0.5), TOL32);
    F1(WEFT_OP_SIN, WEFT_F16, F(PI / 2), F(1), TOL16);
    F1(WEFT_OP_COS, WEFT_F64, F(0, PI, PI / 3), F(1, -1, 0.5), TOL64);
    F1(WEFT_OP_COS, WEFT_F32, F(PI), F(-1), TOL32);
    F1(WEFT_OP_COS, WEFT_F16, F(0), F(1), TOL16);
    F1(WEFT_OP_TAN, WEFT_F64, F(0, PI / 4, -PI / 4), F(0, 1, -1), TOL64);
    F1(WEFT_OP_TAN, WEFT_F32, F(PI / 4), F(1), TOL32);
    F1(WEFT_OP_TAN, WEFT_F16, F(PI / 4), F(1), TOL16);
    F1(WEFT_OP_ASIN, WEFT_F64, F(1, 0.5, 0, 2), F(PI / 2, PI / 6, 0, NAN),
       TOL64);
    F1(WEFT_OP_ASIN, WEFT_F32, F(-1), F(-PI / 2), TOL32);
    F1(WEFT_OP_ASIN, WEFT_F16, F(0.5), F(PI / 6), TOL16);
    F1(WEFT_OP_ACOS, WEFT_F64, F(1, 0, -1, 0.5), F(0, PI / 2, PI, PI / 3),
       TOL64);
    F1(WEFT_OP_ACOS, WEFT_F32, F(0), F(PI / 2), TOL32);
    F1(WEFT_OP_ACOS, WEFT_F16, F(-1), F(PI), TOL16);
    F1(WEFT_OP_ATAN, WEFT_F64, F(1, 0, INFINITY, -1),
       F(PI / 4, 0, PI / 2, -PI / 4), TOL64);
    F1(WEFT_OP_ATAN, WEFT_F32, F(1), F(PI / 4), TOL32);
    F1(WEFT_OP_ATAN, WEFT_F16, F(1), F(PI / 4), TOL16);
}
END_TEST

START_TEST(test_hyperbolic)
{
    F1(WEFT_OP_SINH, WEFT_F64, F(0, 1, -1),
       F(0, 1.1752011936438014, -1.1752011936438014), TOL64);
    F1(WEFT_OP_SINH, WEFT_F32, F(1), F(1.1752011936438014), TOL32);
    F1(WEFT_OP_SINH, WEFT_F16, F(1), F(1.1752011936438014), TOL16);
    F1(WEFT_OP_COSH, WEFT_F64, F(0, 1), F(1, 1.5430806348152437), TOL64);
    F1(WEFT_OP_COSH, WEFT_F32, F(-1), F(1.5430806348152437), TOL32);
    F1(WEFT_OP_COSH, WEFT_F16, F(1), F(1.5430806348152437), TOL16);
    F1(WEFT_OP_TANH, WEFT_F64, F(0, 1, INFINITY), F(0, 0.7615941559557649, 1),
       TOL64);
    F1(WEFT_OP_TANH, WEFT_F32, F(-1), F(-0.7615941559557649), TOL32);
    F1(WEFT_OP_TANH, WEFT_F16, F(1), F(0.7615941559557649), TOL16);
    F1(WEFT_OP_ASINH, WEFT_F64, F(0, 1), F(0, 0.881373587019543), TOL64);
    F1(WEFT_OP_ASINH, WEFT_F32, F(-1), F(-0.881373587019543), TOL32);
    F1(WEFT_OP_ASINH, WEFT_F16, F(1), F(0.881373587019543), TOL16);
    F1(WEFT_OP_ACOSH, WEFT_F64, F(1, 2, 0.5), F(0, 1.3169578969248166, NAN),
       TOL64);
    F1(WEFT_OP_ACOSH, WEFT_F32, F(2), F(1.3169578969248166), TOL32);
    F1(WEFT_OP_ACOSH, WEFT_F16, F(2), F(1.3169578969248166), TOL16);
    F1(WEFT_OP_ATANH, WEFT_F64, F(0, 0.5, 1, 2),
       F(0, 0.5493061443340549, INFINITY, NAN), TOL64);
    F1(WEFT_OP_ATANH, WEFT_F32, F(-0.5), F(-0.5493061443340549), TOL32);
    F1(WEFT_OP_ATANH, WEFT_F16, F(0.5), F(0.5493061443340549), TOL16);
    /* expm1 and log1p near 0, where exp x - 1 and log (1 + x) lose the
     * digits: the expected values are the nearest doubles of the Taylor
     * series; tolerances of two ulps there (f64 at 1e-10: ulp 2^-86 =
     * 1.3e-26; f32 at 1e-5, the float 9.99999975e-6: ulp 2^-40 = 9.1e-13),
     * where exp x - 1 would be off by 8e-18 (f64) and 4e-8 (f32) */
    F1(WEFT_OP_EXPM1, WEFT_F64, F(1e-10), F(1.00000000005e-10), 2.6e-26);
    F1(WEFT_OP_EXPM1, WEFT_F32, F(1e-5), F(1.0000049747542893e-05), 1.9e-12);
    F1(WEFT_OP_LOG1P, WEFT_F64, F(1e-10), F(9.999999999500001e-11), 2.6e-26);
    F1(WEFT_OP_LOG1P, WEFT_F32, F(1e-5), F(9.999949747714609e-06), 1.9e-12);
    F1(WEFT_OP_EXPM1, WEFT_F64, F(0, 1, -INFINITY, INFINITY),
       F(0, 1.718281828459045, -1, INFINITY), TOL64);
    F1(WEFT_OP_EXPM1, WEFT_F32, F(-1), F(-0.6321205588285577), TOL32);
    F1(WEFT_OP_EXPM1, WEFT_F16, F(1), F(1.718281828459045), TOL16);
    F1(WEFT_OP_LOG1P, WEFT_F64, F(0, 1.718281828459045, -1, -2),
       F(0, 1, -INFINITY, NAN), TOL64);
    F1(WEFT_OP_LOG1P, WEFT_F32, F(1), F(0.6931471805599453), TOL32);
    F1(WEFT_OP_LOG1P, WEFT_F16, F(3), F(1.3862943611198906), TOL16);
}
END_TEST

START_TEST(test_isnan_isinf)
{
    F1B(WEFT_OP_ISNAN, WEFT_F64, F(NAN, 1, INFINITY, -NAN), I(1, 0, 0, 1));
    F1B(WEFT_OP_ISNAN, WEFT_F32, F(NAN, -INFINITY), I(1, 0));
    F1B(WEFT_OP_ISNAN, WEFT_F16, F(NAN, 65504), I(1, 0));
    F1B(WEFT_OP_ISINF, WEFT_F64, F(INFINITY, -INFINITY, NAN, 1e308),
        I(1, 1, 0, 0));
    F1B(WEFT_OP_ISINF, WEFT_F32, F(INFINITY, 3.4e38), I(1, 0));
    F1B(WEFT_OP_ISINF, WEFT_F16, F(-INFINITY, 65504, NAN), I(1, 0, 0));
}
END_TEST

/* ------------------------------------------------------------------------
 * Comparisons and logic
 * ---------------------------------------------------------------------- */

START_TEST(test_comparisons)
{
    /* pairs: (1,2) (2,2) (2,1) (-1,1) */
#define CMP_I(t)                                                               \
    I2(WEFT_OP_LT, t, I(1, 2, 2, -1), I(2, 2, 1, 1), I(1, 0, 0, 1));           \
    I2(WEFT_OP_LE, t, I(1, 2, 2, -1), I(2, 2, 1, 1), I(1, 1, 0, 1));           \
    I2(WEFT_OP_GT, t, I(1, 2, 2, -1), I(2, 2, 1, 1), I(0, 0, 1, 0));           \
    I2(WEFT_OP_GE, t, I(1, 2, 2, -1), I(2, 2, 1, 1), I(0, 1, 1, 0));           \
    I2(WEFT_OP_EQ, t, I(1, 2, 2, -1), I(2, 2, 1, 1), I(0, 1, 0, 0));           \
    I2(WEFT_OP_NE, t, I(1, 2, 2, -1), I(2, 2, 1, 1), I(1, 0, 1, 1))
    CMP_I(WEFT_I8);
    CMP_I(WEFT_I16);
    CMP_I(WEFT_I32);
    CMP_I(WEFT_I64);
#undef CMP_I
    /* unsigned: -1 is the largest value */
#define CMP_U(t)                                                               \
    I2(WEFT_OP_LT, t, I(1, 2, -1), I(2, 2, 1), I(1, 0, 0));                    \
    I2(WEFT_OP_LE, t, I(1, 2, -1), I(2, 2, 1), I(1, 1, 0));                    \
    I2(WEFT_OP_GT, t, I(1, 2, -1), I(2, 2, 1), I(0, 0, 1));                    \
    I2(WEFT_OP_GE, t, I(1, 2, -1), I(2, 2, 1), I(0, 1, 1));                    \
    I2(WEFT_OP_EQ, t, I(1, 2, -1), I(2, 2, 1), I(0, 1, 0));                    \
    I2(WEFT_OP_NE, t, I(1, 2, -1), I(2, 2, 1), I(1, 0, 1))
    CMP_U(WEFT_U8);
    CMP_U(WEFT_U16);
    CMP_U(WEFT_U32);
    CMP_U(WEFT_U64);
#undef CMP_U
    /* floats: NaN is unordered (only ne holds); -0 == 0 */
#define CMP_F(t)                                                               \
    F2B(WEFT_OP_LT, t, F(1, 2, NAN, -0.0), F(2, 2, 1, 0), I(1, 0, 0, 0));      \
    F2B(WEFT_OP_LE, t, F(1, 2, NAN, -0.0), F(2, 2, 1, 0), I(1, 1, 0, 1));      \
    F2B(WEFT_OP_GT, t, F(1, 2, NAN, -0.0), F(2, 2, 1, 0), I(0, 0, 0, 0));      \
    F2B(WEFT_OP_GE, t, F(1, 2, NAN, -0.0), F(2, 2, 1, 0), I(0, 1, 0, 1));      \
    F2B(WEFT_OP_EQ, t, F(1, 2, NAN, -0.0), F(2, 2, 1, 0), I(0, 1, 0, 1));      \
    F2B(WEFT_OP_NE, t, F(1, 2, NAN, -0.0), F(2, 2, 1, 0), I(1, 0, 1, 0))
    CMP_F(WEFT_F16);
    CMP_F(WEFT_F32);
    CMP_F(WEFT_F64);
#undef CMP_F
    F2B(WEFT_OP_EQ, WEFT_F64, F(NAN), F(NAN), I(0));
    /* bool: False < True */
    I2(WEFT_OP_LT, WEFT_BOOL, I(0, 1, 0, 1), I(1, 0, 0, 1), I(1, 0, 0, 0));
    I2(WEFT_OP_GE, WEFT_BOOL, I(0, 1, 0, 1), I(1, 0, 0, 1), I(0, 1, 1, 1));
    I2(WEFT_OP_EQ, WEFT_BOOL, I(0, 1, 0, 1), I(1, 0, 0, 1), I(0, 0, 1, 1));
    I2(WEFT_OP_NE, WEFT_BOOL, I(0, 1, 0, 1), I(1, 0, 0, 1), I(1, 1, 0, 0));
}
END_TEST

START_TEST(test_logic)
{
    I2(WEFT_OP_AND, WEFT_BOOL, I(0, 0, 1, 1), I(0, 1, 0, 1), I(0, 0, 0, 1));
    I2(WEFT_OP_OR, WEFT_BOOL, I(0, 0, 1, 1), I(0, 1, 0, 1), I(0, 1, 1, 1));
    I1(WEFT_OP_NOT, WEFT_BOOL, I(0, 1), I(1, 0));
}
END_TEST

/* and / or evaluate their second operand only when needed: over x in
 * [0, 5, 20], x != 0 && 10 / x > 1 and x == 0 || 10 / x > 1 never divide
 * by zero. */
START_TEST(test_logic_short_circuit)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *fa = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(fa, 0);
    weft_fun_return(
        fa, weft_and(weft_ne(x, weft_i32(p, 0)),
                     weft_gt(weft_quot(weft_i32(p, 10), x), weft_i32(p, 1))));
    weft_fun *fo = weft_fun1(p, WEFT_I32);
    weft_exp *y = weft_arg(fo, 0);
    weft_fun_return(
        fo, weft_or(weft_eq(y, weft_i32(p, 0)),
                    weft_gt(weft_quot(weft_i32(p, 10), y), weft_i32(p, 1))));
    weft_acc *res[2] = {weft_map(fa, xs), weft_map(fo, xs)};
    TU_PROGRAM_OK(p);
    weft_array *in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(0, 5, 20));
    weft_array *out[2] = {NULL, NULL};
    TU_OK(tu_run(p, res, 2, &in, 1, out, 2));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(0, 1, 0));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(3), I(1, 1, 0));
    tu_release_all(out, 2);
    weft_array_release(in);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * floor ceiling round truncate convert bitcast
 * ---------------------------------------------------------------------- */

START_TEST(test_rounding)
{
    static const double x[] = {2.5, -2.5, 3.5, 0.5, 1.5, -0.4, 2.6, -2.7, 7};
    TFI(weft_floor, WEFT_F64, WEFT_I32, x, I(2, -3, 3, 0, 1, -1, 2, -3, 7));
    TFI(weft_ceiling, WEFT_F64, WEFT_I32, x, I(3, -2, 4, 1, 2, 0, 3, -2, 7));
    /* half to even */
    TFI(weft_round, WEFT_F64, WEFT_I32, x, I(2, -2, 4, 0, 2, 0, 3, -3, 7));
    TFI(weft_truncate, WEFT_F64, WEFT_I32, x, I(2, -2, 3, 0, 1, 0, 2, -2, 7));
    TFI(weft_floor, WEFT_F32, WEFT_I64, F(-0.5, 1e10), I(-1, 10000000000));
    TFI(weft_ceiling, WEFT_F32, WEFT_I8, F(-0.5, 126.2), I(0, 127));
    TFI(weft_round, WEFT_F32, WEFT_I64, F(-3.5, 4.5, 4.50001), I(-4, 4, 5));
    TFI(weft_truncate, WEFT_F32, WEFT_U32, F(4000000000.0, 0.99),
        I(4000000000, 0));
    TFI(weft_floor, WEFT_F16, WEFT_I16, F(-1.5, 1000.5), I(-2, 1000));
    TFI(weft_round, WEFT_F16, WEFT_I16, F(-2.5, 5.5), I(-2, 6));
    TFI(weft_ceiling, WEFT_F16, WEFT_U8, F(0.25), I(1));
    TFI(weft_floor, WEFT_F64, WEFT_U8, F(200.7), I(200));
    TFI(weft_round, WEFT_F64, WEFT_U64, F(1e19),
        I((int64_t)UINT64_C(10000000000000000000)));
    TFI(weft_truncate, WEFT_F64, WEFT_I16, F(-32768.9), I(I16MIN));
    /* round is not floor(x + 0.5): the largest double and float below 0.5
     * round to 0; ties far from zero go to the even neighbour */
    TFI(weft_round, WEFT_F64, WEFT_I64,
        F(0.49999999999999994, -0.5, 1e15 + 0.5, 1e15 + 1.5),
        I(0, 0, INT64_C(1000000000000000), INT64_C(1000000000000002)));
    TFI(weft_round, WEFT_F32, WEFT_I32, F(0.49999997019767761), I(0));
    /* out of range after rounding is reported */
    ERR_TF(weft_truncate, WEFT_F64, WEFT_I8, 300.0, WEFT_ERR_UNDEFINED);
    ERR_TF(weft_floor, WEFT_F32, WEFT_U16, -1.0, WEFT_ERR_UNDEFINED);
}
END_TEST

START_TEST(test_convert)
{
    /* integer to integer wraps, sign- or zero-extends by the source */
    TII(weft_convert, WEFT_I32, WEFT_U8, I(300, -1, 255), I(44, 255, 255));
    TII(weft_convert, WEFT_U8, WEFT_I8, I(255, 128), I(-1, -128));
    TII(weft_convert, WEFT_I8, WEFT_U32, I(-1), I(U32MAX));
    TII(weft_convert, WEFT_I8, WEFT_I64, I(-1, 127), I(-1, 127));
    TII(weft_convert, WEFT_U32, WEFT_I64, I(U32MAX), I(U32MAX));
    TII(weft_convert, WEFT_I64, WEFT_I16, I(INT64_C(0x123456789)), I(0x6789));
    TII(weft_convert, WEFT_U64, WEFT_I32, I(U64MAX), I(-1));
    TII(weft_convert, WEFT_I16, WEFT_U16, I(-2), I(65534));
    /* bool to number is 0 or 1; number to bool is x != 0 */
    TII(weft_convert, WEFT_BOOL, WEFT_I32, I(1, 0), I(1, 0));
    TII(weft_convert, WEFT_BOOL, WEFT_U64, I(1), I(1));
    TII(weft_convert, WEFT_I32, WEFT_BOOL, I(5, 0, -1), I(1, 0, 1));
    TII(weft_convert, WEFT_U8, WEFT_BOOL, I(0, 128), I(0, 1));
    TFI(weft_convert, WEFT_F64, WEFT_BOOL, F(0.5, 0, -0.0), I(1, 0, 0));
    TIF(weft_convert, WEFT_BOOL, WEFT_F32, I(1, 0), F(1, 0), 0);
    /* integer to float rounds to nearest */
    TIF(weft_convert, WEFT_I32, WEFT_F32, I(16777217, -3), F(16777216, -3), 0);
    TIF(weft_convert, WEFT_U64, WEFT_F64, I(U64MAX), F(18446744073709551616.0),
        0);
    TIF(weft_convert, WEFT_I64, WEFT_F64, I(I64MIN), F(-9223372036854775808.0),
        0);
    TIF(weft_convert, WEFT_U8, WEFT_F16, I(255), F(255), 0);
    TIF(weft_convert, WEFT_I32, WEFT_F16, I(2049, 70000), F(2048, INFINITY), 0);
    /* float to integer truncates toward zero */
    TFI(weft_convert, WEFT_F64, WEFT_I32, F(2.9, -2.9, 0), I(2, -2, 0));
    TFI(weft_convert, WEFT_F32, WEFT_U8, F(255.5), I(255));
    TFI(weft_convert, WEFT_F16, WEFT_I64, F(-1000.5), I(-1000));
    /* -0.5 truncates to 0, which an unsigned type holds */
    TFI(weft_convert, WEFT_F64, WEFT_U32, F(-0.5, -0.99), I(0, 0));
    TFI(weft_convert, WEFT_F64, WEFT_U64, F(1e19),
        I((int64_t)UINT64_C(10000000000000000000)));
    /* float to float: f64 1/3 to f16 is 0x3555 = 0.333251953125 */
    TFF(weft_convert, WEFT_F64, WEFT_F16, F(1.0 / 3.0, 1e6),
        F(0.333251953125, INFINITY), 0);
    TFF(weft_convert, WEFT_F16, WEFT_F64, F(0.333251953125), F(0.333251953125),
        0);
    TFF(weft_convert, WEFT_F64, WEFT_F32, F(0.1, 1e300),
        F((double)0.1f, INFINITY), 0);
    TFF(weft_convert, WEFT_F32, WEFT_F64, F(0.1), F((double)0.1f), 0);
    TFF(weft_convert, WEFT_F32, WEFT_F16, F(65519, 65520), F(65504, INFINITY),
        0);
    /* out of range is reported */
    ERR_TF(weft_convert, WEFT_F64, WEFT_U8, 300.0, WEFT_ERR_UNDEFINED);
    ERR_TF(weft_convert, WEFT_F64, WEFT_U32, -1.0, WEFT_ERR_UNDEFINED);
    ERR_TF(weft_convert, WEFT_F32, WEFT_I32, NAN, WEFT_ERR_UNDEFINED);
}
END_TEST

START_TEST(test_bitcast)
{
    TFI(weft_bitcast, WEFT_F32, WEFT_U32, F(1.0, -2.0),
        I(0x3F800000, 0xC0000000));
    TFI(weft_bitcast, WEFT_F64, WEFT_I64, F(1.0), I(0x3FF0000000000000));
    TFI(weft_bitcast, WEFT_F16, WEFT_U16, F(1.0, 0.333251953125, -INFINITY),
        I(0x3C00, 0x3555, 0xFC00));
    TFI(weft_bitcast, WEFT_F16, WEFT_I16, F(-2.0), I(-16384)); /* 0xC000 */
    TII(weft_bitcast, WEFT_I32, WEFT_U32, I(-1), I(U32MAX));
    TII(weft_bitcast, WEFT_I8, WEFT_U8, I(-1, -128), I(255, 128));
    TII(weft_bitcast, WEFT_U64, WEFT_I64, I(U64MAX), I(-1));
    TIF(weft_bitcast, WEFT_U16, WEFT_F16, I(0x3C00, 0x7BFF), F(1, 65504), 0);
    TIF(weft_bitcast, WEFT_U32, WEFT_F32, I(0x40490FDB), F((double)3.14159274f),
        0);
    TIF(weft_bitcast, WEFT_I64, WEFT_F64, I(0x4000000000000000), F(2.0), 0);
    TIF(weft_bitcast, WEFT_U64, WEFT_F64, I(0x7FF0000000000000), F(INFINITY),
        0);
}
END_TEST

/* f16 division result as bits: 1/3 is 0x3555. */
START_TEST(test_f16_bits)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_exp *q = weft_fdiv(weft_f16(p, 1.0f), weft_f16(p, 3.0f));
    ck_assert_int_eq(tu_eval_i(p, weft_bitcast(q, WEFT_U16)), 0x3555);
    ck_assert_int_eq(
        tu_eval_i(p, weft_bitcast(weft_f16(p, 1.0f / 3.0f), WEFT_U16)), 0x3555);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Constants
 * ---------------------------------------------------------------------- */

START_TEST(test_constants)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    /* the typed constructors: value and type */
    struct {
        weft_exp *e;
        weft_type ty;
        int64_t v;
    } ic[] = {
        {weft_bool(p, 1), WEFT_BOOL, 1},
        {weft_bool(p, 0), WEFT_BOOL, 0},
        {weft_i8(p, -128), WEFT_I8, -128},
        {weft_i16(p, -30000), WEFT_I16, -30000},
        {weft_i32(p, INT32_MIN), WEFT_I32, INT32_MIN},
        {weft_i64(p, INT64_MAX), WEFT_I64, INT64_MAX},
        {weft_u8(p, 255), WEFT_U8, 255},
        {weft_u16(p, 65535), WEFT_U16, 65535},
        {weft_u32(p, UINT32_MAX), WEFT_U32, U32MAX},
        {weft_u64(p, UINT64_MAX), WEFT_U64, U64MAX},
        {weft_f16_bits(p, 0x3555), WEFT_F16, 0},
        {weft_f16(p, 1.0f / 3.0f), WEFT_F16, 0},
    };
    for (size_t i = 0; i < sizeof ic / sizeof ic[0]; i++) {
        ck_assert_msg(weft_exp_type(ic[i].e) == ic[i].ty, "constant %zu", i);
        if (ic[i].ty != WEFT_F16) {
            ck_assert_msg(tu_eval_i(p, ic[i].e) == ic[i].v, "constant %zu", i);
        } else {
            ck_assert_msg(tu_eval_i(p, weft_bitcast(ic[i].e, WEFT_U16)) ==
                              0x3555,
                          "constant %zu", i);
        }
    }
    weft_exp *f1 = weft_f32(p, 0.1f), *f2 = weft_f64(p, 0.1);
    ck_assert_int_eq(weft_exp_type(f1), WEFT_F32);
    ck_assert_int_eq(weft_exp_type(f2), WEFT_F64);
    ck_assert(tu_eval_f(p, f1) == (double)0.1f);
    ck_assert(tu_eval_f(p, f2) == 0.1);
    ck_assert(isinf(tu_eval_f(p, weft_f64(p, -INFINITY))));
    ck_assert(isnan(tu_eval_f(p, weft_f32(p, NAN))));
    ck_assert(tu_eval_f(p, weft_f16(p, 65504.0f)) == 65504.0);
    /* weft_f16 rounds to the nearest half */
    ck_assert(tu_eval_f(p, weft_f16(p, 2049.0f)) == 2048.0);

    /* weft_const of every scalar type, from its stored form */
    weft_type all[] = {WEFT_BOOL, WEFT_I8,  WEFT_I16, WEFT_I32,
                       WEFT_I64,  WEFT_U8,  WEFT_U16, WEFT_U32,
                       WEFT_U64,  WEFT_F16, WEFT_F32, WEFT_F64};
    int64_t ivals[] = {1,
                       -5,
                       -300,
                       -70000,
                       -INT64_C(5000000000),
                       250,
                       60000,
                       4000000000,
                       (int64_t)UINT64_C(0xFFFFFFFFFFFFFFF0)};
    for (int i = 0; i < 12; i++) {
        unsigned char buf[8];
        weft_type ty = all[i];
        if (tu_is_float(ty)) {
            tu_store_f(ty, buf, -1.75);
        } else {
            tu_store_i(ty, buf, ivals[i]);
        }
        weft_exp *c = weft_const(p, ty, buf);
        ck_assert_msg(weft_exp_type(c) == ty, "weft_const type %d", ty);
        if (tu_is_float(ty)) {
            ck_assert_msg(tu_eval_f(p, c) == -1.75, "weft_const %d", ty);
        } else {
            unsigned char w[8];
            tu_store_i(ty, w, ivals[i]);
            ck_assert_msg(tu_eval_i(p, c) == tu_load_i(ty, w), "weft_const %d",
                          ty);
        }
    }
    TU_PROGRAM_OK(p);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * cond, let, sharing, tuples
 * ---------------------------------------------------------------------- */

START_TEST(test_cond)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    /* |x| by cond */
    weft_fun *fa = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(fa, 0);
    weft_fun_return(fa, weft_cond(weft_lt(x, weft_i32(p, 0)), weft_neg(x), x));
    /* only the chosen branch is evaluated: x == 0 ? 0 : 10 / x */
    weft_fun *fd = weft_fun1(p, WEFT_I32);
    weft_exp *y = weft_arg(fd, 0);
    weft_fun_return(fd, weft_cond(weft_eq(y, weft_i32(p, 0)), weft_i32(p, 0),
                                  weft_quot(weft_i32(p, 10), y)));
    /* and the else branch: x != 0 ? 10 / x : -1 */
    weft_fun *fe = weft_fun1(p, WEFT_I32);
    weft_exp *z = weft_arg(fe, 0);
    weft_fun_return(fe,
                    weft_cond(weft_ne(z, weft_i32(p, 0)),
                              weft_quot(weft_i32(p, 10), z), weft_i32(p, -1)));
    weft_acc *res[3] = {weft_map(fa, xs), weft_map(fd, xs), weft_map(fe, xs)};
    TU_PROGRAM_OK(p);
    weft_array *in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(4), I(-3, 0, 2, 5));
    weft_array *out[3] = {NULL};
    TU_OK(tu_run(p, res, 3, &in, 1, out, 3));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(4), I(3, 0, 2, 5));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(4), I(-3, 0, 5, 2));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(4), I(-3, -1, 5, 2));
    tu_release_all(out, 3);
    weft_array_release(in);

    /* on constants (a program without parameters): the untaken branch
     * divides by zero */
    tu_reset(&t);
    p = t.p;
    ck_assert_int_eq(
        tu_eval_i(p, weft_cond(weft_bool(p, 1), weft_i32(p, 7),
                               weft_quot(weft_i32(p, 1), weft_i32(p, 0)))),
        7);
    ck_assert_int_eq(
        tu_eval_i(p, weft_cond(weft_bool(p, 0),
                               weft_quot(weft_i32(p, 1), weft_i32(p, 0)),
                               weft_i32(p, 8))),
        8);
    /* cond on floats and on tuples */
    ck_assert(tu_eval_f(p, weft_cond(weft_gt(weft_f64(p, 1), weft_f64(p, 2)),
                                     weft_f64(p, 1.5), weft_f64(p, 2.5))) ==
              2.5);
    weft_exp *pa[2] = {weft_i32(p, 1), weft_f32(p, 2)};
    weft_exp *pb[2] = {weft_i32(p, 3), weft_f32(p, 4)};
    weft_exp *c =
        weft_cond(weft_bool(p, 0), weft_tuple(p, 2, pa), weft_tuple(p, 2, pb));
    ck_assert_int_eq(tu_eval_i(p, weft_get(c, 0)), 3);
    ck_assert(tu_eval_f(p, weft_get(c, 1)) == 4.0);
    tu_close(&t);
}
END_TEST

START_TEST(test_let_and_sharing)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);

    /* let via apply: sq(x + 1) with sq a = a * a */
    weft_fun *sq = weft_fun1(p, WEFT_I32);
    weft_fun_return(sq, weft_mul(weft_arg(sq, 0), weft_arg(sq, 0)));
    weft_fun *f1 = weft_fun1(p, WEFT_I32);
    weft_exp *a1[1] = {weft_add(weft_arg(f1, 0), weft_i32(p, 1))};
    weft_fun_return(f1, weft_apply(sq, a1));

    /* sharing: e = x * 3 used twice, (e + e) - e */
    weft_fun *f2 = weft_fun1(p, WEFT_I32);
    weft_exp *e = weft_mul(weft_arg(f2, 0), weft_i32(p, 3));
    weft_fun_return(f2, weft_sub(weft_add(e, e), e));

    /* a term built outside the function (a free variable), shared:
     * k = the(unit(4)) + 1; x * k + k */
    weft_exp *k = weft_add(weft_the(weft_unit(weft_i32(p, 4))), weft_i32(p, 1));
    weft_fun *f3 = weft_fun1(p, WEFT_I32);
    weft_fun_return(f3, weft_add(weft_mul(weft_arg(f3, 0), k), k));

    /* apply of a two-argument function, and nested apply */
    weft_fun *sub = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(sub, weft_sub(weft_arg(sub, 0), weft_arg(sub, 1)));
    weft_fun *f4 = weft_fun1(p, WEFT_I32);
    weft_exp *inner[1] = {weft_arg(f4, 0)};
    weft_exp *a4[2] = {weft_i32(p, 100), weft_apply(sq, inner)};
    weft_fun_return(f4, weft_apply(sub, a4));

    weft_acc *res[4] = {weft_map(f1, xs), weft_map(f2, xs), weft_map(f3, xs),
                        weft_map(f4, xs)};
    TU_PROGRAM_OK(p);
    weft_array *in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(3), I(-2, 0, 3));
    weft_array *out[4] = {NULL};
    TU_OK(tu_run(p, res, 4, &in, 1, out, 4));
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(3), I(1, 1, 16));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(3), I(-6, 0, 9));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(3), I(-5, 5, 20));
    TU_CHECK_I(t.ctx, out[3], 0, 1, TU_SH(3), I(96, 100, 91));
    tu_release_all(out, 4);
    weft_array_release(in);

    /* apply on constants */
    tu_reset(&t);
    p = t.p;
    sq = weft_fun1(p, WEFT_I32);
    weft_fun_return(sq, weft_mul(weft_arg(sq, 0), weft_arg(sq, 0)));
    weft_exp *a5[1] = {weft_i32(p, 12)};
    ck_assert_int_eq(tu_eval_i(p, weft_apply(sq, a5)), 144);
    tu_close(&t);
}
END_TEST

START_TEST(test_tuples)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_exp *c3[3] = {weft_i8(p, -1), weft_f64(p, 2.5), weft_bool(p, 1)};
    weft_exp *tup = weft_tuple(p, 3, c3);
    ck_assert_int_eq(tu_eval_i(p, weft_get(tup, 0)), -1);
    ck_assert(tu_eval_f(p, weft_get(tup, 1)) == 2.5);
    ck_assert_int_eq(tu_eval_i(p, weft_get(tup, 2)), 1);
    ck_assert_int_eq(weft_exp_type(weft_get(tup, 1)), WEFT_F64);
    weft_type ty = weft_exp_type(tup);
    ck_assert_int_eq(weft_type_arity(t.ctx, ty), 3);
    ck_assert_int_eq(weft_type_component(t.ctx, ty, 2), WEFT_BOOL);

    /* nested: ((1, 2), 3) */
    weft_exp *in2[2] = {weft_i32(p, 1), weft_i32(p, 2)};
    weft_exp *out2[2] = {weft_tuple(p, 2, in2), weft_i32(p, 3)};
    weft_exp *nest = weft_tuple(p, 2, out2);
    ck_assert_int_eq(tu_eval_i(p, weft_get(weft_get(nest, 0), 1)), 2);
    ck_assert_int_eq(tu_eval_i(p, weft_get(nest, 1)), 3);
    ck_assert_int_eq(weft_type_leaves(t.ctx, weft_exp_type(nest)), 3);

    /* a tuple through a function: swap (a, b) = (b, a), on arrays */
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *pr[2] = {x, weft_mul(x, weft_i32(p, 10))};
    weft_exp *pair = weft_tuple(p, 2, pr);
    weft_exp *sw[2] = {weft_get(pair, 1), weft_get(pair, 0)};
    weft_fun_return(f, weft_sub(weft_get(weft_tuple(p, 2, sw), 0),
                                weft_get(weft_tuple(p, 2, sw), 1)));
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    weft_array *in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(2), I(1, -2));
    weft_array *out = NULL;
    TU_OK(tu_run(p, &r, 1, &in, 1, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(2), I(9, -18));
    weft_array_release(out);
    weft_array_release(in);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * Shapes, indices, indexing
 * ---------------------------------------------------------------------- */

START_TEST(test_index_generate)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    /* rank 2: 10 * i + j over 2x3 */
    weft_fun *g2 = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g2, 0);
    weft_fun_return(g2, weft_add(weft_mul(weft_get(ix, 0), weft_i64(p, 10)),
                                 weft_get(ix, 1)));
    weft_acc *a2 =
        weft_generate(weft_index2(weft_i64(p, 2), weft_i64(p, 3)), g2);
    /* rank 3 from weft_index: 100 i + 10 j + k over 2x2x2 */
    weft_exp *sh3c[3] = {weft_i64(p, 2), weft_i64(p, 2), weft_i64(p, 2)};
    weft_fun *g3 = weft_fun1(p, WEFT_DIM(3));
    weft_exp *i3 = weft_arg(g3, 0);
    weft_fun_return(
        g3, weft_add(weft_add(weft_mul(weft_get(i3, 0), weft_i64(p, 100)),
                              weft_mul(weft_get(i3, 1), weft_i64(p, 10))),
                     weft_get(i3, 2)));
    weft_acc *a3 = weft_generate(weft_index(p, 3, sh3c), g3);
    /* rank 1 from index1 */
    weft_fun *g1 = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(g1, weft_convert(weft_get(weft_arg(g1, 0), 0), WEFT_I32));
    weft_acc *a1 = weft_generate(weft_index1(weft_i64(p, 4)), g1);
    /* rank 0 from the index Z */
    weft_fun *g0 = weft_fun1(p, WEFT_DIM(0));
    weft_fun_return(g0, weft_f32(p, 1.5f));
    weft_acc *a0 = weft_generate(weft_index(p, 0, NULL), g0);
    weft_acc *res[4] = {a2, a3, a1, a0};
    TU_PROGRAM_OK(p);
    weft_array *out[4] = {NULL};
    TU_OK(weft_run1(p, res, 4, NULL, 0, out, 4));
    TU_CHECK_I(t.ctx, out[0], 0, 2, TU_SH(2, 3), I(0, 1, 2, 10, 11, 12));
    TU_CHECK_I(t.ctx, out[1], 0, 3, TU_SH(2, 2, 2),
               I(0, 1, 10, 11, 100, 101, 110, 111));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(4), I(0, 1, 2, 3));
    ck_assert_int_eq(weft_array_type(out[2]), WEFT_I32);
    TU_CHECK_F(t.ctx, out[3], 0, 0, NULL, F(1.5), 0);
    tu_release_all(out, 4);
    tu_close(&t);
}
END_TEST

START_TEST(test_shape_size)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *xs = weft_param(p, WEFT_F32, 2);
    weft_exp *sh = weft_shape(xs);
    weft_acc *res[5] = {
        weft_unit(weft_size(xs)),
        weft_unit(weft_get(sh, 0)),
        weft_unit(weft_get(sh, 1)),
        weft_unit(weft_shape_size(sh)),
        /* generate over the shape of a parameter: i * j */
        NULL,
    };
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_fun_return(
        g, weft_mul(weft_get(weft_arg(g, 0), 0), weft_get(weft_arg(g, 0), 1)));
    res[4] = weft_generate(sh, g);
    TU_PROGRAM_OK(p);
    weft_array *in =
        tu_arr_f(t.ctx, WEFT_F32, 2, TU_SH(2, 3), F(0, 0, 0, 0, 0, 0));
    weft_array *out[5] = {NULL};
    TU_OK(tu_run(p, res, 5, &in, 1, out, 5));
    TU_CHECK_I(t.ctx, out[0], 0, 0, NULL, I(6));
    ck_assert_int_eq(weft_array_type(out[0]), WEFT_I64);
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(2));
    TU_CHECK_I(t.ctx, out[2], 0, 0, NULL, I(3));
    TU_CHECK_I(t.ctx, out[3], 0, 0, NULL, I(6));
    TU_CHECK_I(t.ctx, out[4], 0, 2, TU_SH(2, 3), I(0, 0, 0, 0, 1, 2));
    tu_release_all(out, 5);
    weft_array_release(in);

    /* an empty parameter: size 0 */
    in = tu_arr_f(t.ctx, WEFT_F32, 2, TU_SH(4, 0), NULL);
    TU_OK(tu_run(p, res, 5, &in, 1, out, 5));
    TU_CHECK_I(t.ctx, out[0], 0, 0, NULL, I(0));
    TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, I(4));
    TU_CHECK_I(t.ctx, out[3], 0, 0, NULL, I(0));
    TU_CHECK_SHAPE(out[4], 2, TU_SH(4, 0));
    tu_release_all(out, 5);
    weft_array_release(in);

    /* shape_size of a constant shape and of the rank-0 shape */
    tu_reset(&t);
    p = t.p;
    ck_assert_int_eq(tu_eval_i(p, weft_shape_size(weft_index2(weft_i64(p, 7),
                                                              weft_i64(p, 5)))),
                     35);
    ck_assert_int_eq(tu_eval_i(p, weft_shape_size(weft_index(p, 0, NULL))), 1);
    tu_close(&t);
}
END_TEST

START_TEST(test_to_from_index)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_exp *sh = weft_index2(weft_i64(p, 2), weft_i64(p, 3));
    ck_assert_int_eq(
        tu_eval_i(
            p, weft_to_index(sh, weft_index2(weft_i64(p, 1), weft_i64(p, 2)))),
        5);
    ck_assert_int_eq(
        tu_eval_i(
            p, weft_to_index(sh, weft_index2(weft_i64(p, 0), weft_i64(p, 0)))),
        0);
    weft_exp *ix = weft_from_index(sh, weft_i64(p, 5));
    ck_assert_int_eq(weft_exp_type(ix), WEFT_DIM(2));
    ck_assert_int_eq(tu_eval_i(p, weft_get(ix, 0)), 1);
    ck_assert_int_eq(tu_eval_i(p, weft_get(ix, 1)), 2);
    /* the outermost component is not reduced: 7 in 2x3 is (2, 1) */
    weft_exp *ix7 = weft_from_index(sh, weft_i64(p, 7));
    ck_assert_int_eq(tu_eval_i(p, weft_get(ix7, 0)), 2);
    ck_assert_int_eq(tu_eval_i(p, weft_get(ix7, 1)), 1);
    /* rank 3: (1, 2, 3) in 2x3x4 is 1*12 + 2*4 + 3 = 23, and back */
    weft_exp *s3c[3] = {weft_i64(p, 2), weft_i64(p, 3), weft_i64(p, 4)};
    weft_exp *sh3 = weft_index(p, 3, s3c);
    weft_exp *i3c[3] = {weft_i64(p, 1), weft_i64(p, 2), weft_i64(p, 3)};
    ck_assert_int_eq(tu_eval_i(p, weft_to_index(sh3, weft_index(p, 3, i3c))),
                     23);
    weft_exp *back = weft_from_index(sh3, weft_i64(p, 23));
    ck_assert_int_eq(tu_eval_i(p, weft_get(back, 0)), 1);
    ck_assert_int_eq(tu_eval_i(p, weft_get(back, 1)), 2);
    ck_assert_int_eq(tu_eval_i(p, weft_get(back, 2)), 3);
    /* rank 0: the only index is 0 */
    ck_assert_int_eq(tu_eval_i(p, weft_to_index(weft_index(p, 0, NULL),
                                                weft_index(p, 0, NULL))),
                     0);

    /* on arrays: round trip to_index(sh, from_index(sh, i)) == i */
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *sh43 = weft_index2(weft_i64(p, 4), weft_i64(p, 3));
    weft_exp *fi = weft_from_index(sh43, weft_arg(f, 0));
    weft_fun_return(f, weft_add(weft_mul(weft_get(fi, 0), weft_i64(p, 100)),
                                weft_to_index(sh43, fi)));
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    weft_array *in = tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(4), I(0, 4, 11, 13));
    weft_array *out = NULL;
    TU_OK(tu_run(p, &r, 1, &in, 1, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(4), I(0, 104, 311, 413));
    weft_array_release(out);
    weft_array_release(in);
    tu_close(&t);
}
END_TEST

START_TEST(test_indexing)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *table = weft_param(p, WEFT_I32, 2); /* 2x3 */
    weft_acc *idx = weft_param(p, WEFT_I64, 1);
    /* at: table ! (i % 2, i % 3) */
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *i = weft_arg(f, 0);
    weft_fun_return(f,
                    weft_at(table, weft_index2(weft_mod(i, weft_i64(p, 2)),
                                               weft_mod(i, weft_i64(p, 3)))));
    /* at_linear: table !! (5 - i) */
    weft_fun *g = weft_fun1(p, WEFT_I64);
    weft_fun_return(
        g, weft_at_linear(table, weft_sub(weft_i64(p, 5), weft_arg(g, 0))));
    /* indexing an array term computed in the program (a map) */
    weft_fun *dbl = weft_fun1(p, WEFT_I32);
    weft_fun_return(dbl, weft_mul(weft_arg(dbl, 0), weft_i32(p, 2)));
    weft_acc *twice = weft_map(dbl, table);
    weft_fun *h = weft_fun1(p, WEFT_I64);
    weft_fun_return(h, weft_at_linear(twice, weft_arg(h, 0)));
    weft_acc *res[3] = {weft_map(f, idx), weft_map(g, idx), weft_map(h, idx)};
    TU_PROGRAM_OK(p);
    weft_array *in[2] = {
        tu_arr_i(t.ctx, WEFT_I32, 2, TU_SH(2, 3), I(1, 2, 3, 4, 5, 6)),
        tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(4), I(0, 1, 4, 5)),
    };
    weft_array *out[3] = {NULL};
    TU_OK(tu_run(p, res, 3, in, 2, out, 3));
    /* i=0 (0,0)=1; i=1 (1,1)=5; i=4 (0,1)=2; i=5 (1,2)=6 */
    TU_CHECK_I(t.ctx, out[0], 0, 1, TU_SH(4), I(1, 5, 2, 6));
    TU_CHECK_I(t.ctx, out[1], 0, 1, TU_SH(4), I(6, 5, 2, 1));
    TU_CHECK_I(t.ctx, out[2], 0, 1, TU_SH(4), I(2, 4, 10, 12));
    tu_release_all(out, 3);
    weft_array_release(in[1]);

    /* out of bounds: index 6 */
    in[1] = tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(2), I(0, 6));
    TU_STATUS(WEFT_ERR_OUT_OF_BOUNDS, tu_run(p, res, 3, in, 2, out, 3));
    ck_assert_ptr_null(out[0]);
    tu_release_all(in, 2);
    tu_close(&t);
}
END_TEST

START_TEST(test_the)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_acc *xs = weft_param(p, WEFT_F64, 0);
    weft_acc *ys = weft_param(p, WEFT_F64, 1);
    /* the of a parameter, used inside a map: y * the(xs) */
    weft_exp *s = weft_the(xs);
    weft_fun *f = weft_fun1(p, WEFT_F64);
    weft_fun_return(f, weft_mul(weft_arg(f, 0), s));
    /* the of a reduction */
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_F64);
    weft_exp *total = weft_the(weft_fold_all(add, weft_f64(p, 0), ys));
    weft_acc *res[3] = {weft_map(f, ys), weft_unit(total),
                        weft_unit(weft_add(s, weft_f64(p, 1)))};
    TU_PROGRAM_OK(p);
    weft_array *in[2] = {tu_arr_f(t.ctx, WEFT_F64, 0, NULL, F(2.5)),
                         tu_arr_f(t.ctx, WEFT_F64, 1, TU_SH(3), F(1, 2, 4))};
    weft_array *out[3] = {NULL};
    TU_OK(tu_run(p, res, 3, in, 2, out, 3));
    TU_CHECK_F(t.ctx, out[0], 0, 1, TU_SH(3), F(2.5, 5, 10), 0);
    TU_CHECK_F(t.ctx, out[1], 0, 0, NULL, F(7), 0);
    TU_CHECK_F(t.ctx, out[2], 0, 0, NULL, F(3.5), 0);
    tu_release_all(out, 3);
    tu_release_all(in, 2);
    /* the of a unit on constants */
    tu_reset(&t);
    p = t.p;
    ck_assert_int_eq(tu_eval_i(p, weft_the(weft_unit(weft_u16(p, 9)))), 9);
    tu_close(&t);
}
END_TEST

/* Collatz: steps for n to reach 1, with a while loop over (n, steps). */
START_TEST(test_while)
{
    tu t;
    tu_open(&t);
    weft_program *p = t.p;
    weft_type st[2] = {WEFT_I64, WEFT_I64};
    weft_type pair = weft_type_tuple(t.ctx, 2, st);
    ck_assert_int_ne(pair, 0);
    weft_fun *cond = weft_fun1(p, pair);
    weft_fun_return(cond,
                    weft_ne(weft_get(weft_arg(cond, 0), 0), weft_i64(p, 1)));
    weft_fun *body = weft_fun1(p, pair);
    weft_exp *n = weft_get(weft_arg(body, 0), 0);
    weft_exp *k = weft_get(weft_arg(body, 0), 1);
    weft_exp *next[2] = {
        weft_cond(weft_eq(weft_rem(n, weft_i64(p, 2)), weft_i64(p, 0)),
                  weft_quot(n, weft_i64(p, 2)),
                  weft_add(weft_mul(n, weft_i64(p, 3)), weft_i64(p, 1))),
        weft_add(k, weft_i64(p, 1))};
    weft_fun_return(body, weft_tuple(p, 2, next));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *init[2] = {weft_arg(f, 0), weft_i64(p, 0)};
    weft_fun_return(
        f, weft_get(weft_while(cond, body, weft_tuple(p, 2, init)), 1));
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    weft_array *in =
        tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(6), I(1, 2, 3, 6, 7, 27));
    weft_array *out = NULL;
    TU_OK(tu_run(p, &r, 1, &in, 1, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(6), I(0, 1, 7, 8, 16, 111));
    weft_array_release(out);
    weft_array_release(in);

    /* a scalar while on constants: doubling 1 until >= 1000 gives 1024 */
    tu_reset(&t);
    p = t.p;
    weft_fun *c2 = weft_fun1(p, WEFT_I32);
    weft_fun_return(c2, weft_lt(weft_arg(c2, 0), weft_i32(p, 1000)));
    weft_fun *b2 = weft_fun1(p, WEFT_I32);
    weft_fun_return(b2, weft_mul(weft_arg(b2, 0), weft_i32(p, 2)));
    ck_assert_int_eq(tu_eval_i(p, weft_while(c2, b2, weft_i32(p, 1))), 1024);
    /* a loop whose condition is false at once */
    ck_assert_int_eq(tu_eval_i(p, weft_while(c2, b2, weft_i32(p, 5000))), 5000);
    tu_close(&t);
}
END_TEST

static Suite *scalar_suite(void)
{
    Suite *s = suite_create("scalar");
    TCase *tc = tcase_create("prims");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_add);
    tcase_add_test(tc, test_sub);
    tcase_add_test(tc, test_mul);
    tcase_add_test(tc, test_neg_abs_signum);
    tcase_add_test(tc, test_min_max);
    tcase_add_test(tc, test_quot_rem_div_mod);
    tcase_add_test(tc, test_division_errors);
    tcase_add_test(tc, test_bitwise);
    tcase_add_test(tc, test_shifts);
    tcase_add_test(tc, test_rotations);
    tcase_add_test(tc, test_counts);
    tcase_add_test(tc, test_fdiv);
    tcase_add_test(tc, test_pow_atan2);
    tcase_add_test(tc, test_exp_log_sqrt);
    tcase_add_test(tc, test_trig);
    tcase_add_test(tc, test_hyperbolic);
    tcase_add_test(tc, test_isnan_isinf);
    tcase_add_test(tc, test_comparisons);
    tcase_add_test(tc, test_logic);
    tcase_add_test(tc, test_logic_short_circuit);
    tcase_add_test(tc, test_rounding);
    tcase_add_test(tc, test_convert);
    tcase_add_test(tc, test_bitcast);
    tcase_add_test(tc, test_f16_bits);
    suite_add_tcase(s, tc);

    TCase *te = tcase_create("terms");
    tcase_set_timeout(te, 60);
    tcase_add_test(te, test_constants);
    tcase_add_test(te, test_cond);
    tcase_add_test(te, test_let_and_sharing);
    tcase_add_test(te, test_tuples);
    tcase_add_test(te, test_index_generate);
    tcase_add_test(te, test_shape_size);
    tcase_add_test(te, test_to_from_index);
    tcase_add_test(te, test_indexing);
    tcase_add_test(te, test_the);
    tcase_add_test(te, test_while);
    suite_add_tcase(s, te);
    return s;
}

TU_MAIN(scalar_suite)
