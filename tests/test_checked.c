/*
 * tests/test_checked.c: checked mode (WEFT_FLAG_CHECKED, $WEFT_CHECK) and
 * the documented values of undefined operations without it (issue 10).
 *
 * Every undefined operation that the interpreter reports (`!` and `!!`
 * out of bounds, quot/rem/div/mod by zero, quot/div of the minimum by -1,
 * shifts by a negative amount or the width or more, float to integer of
 * NaN or out of range, from_index in a shape with an inner extent 0 or
 * negative) is a case: a scalar function f, the input that makes it
 * undefined, and the value the documentation gives for any input (`ref`,
 * docs/language.md "Undefined operations").  Each case runs directly in a
 * map and fused into a fold, a scan, a permute's source and a stencil's
 * function, on a small array and on one large enough to reach every phase
 * of the multi-phase skeletons, with one bad element:
 *
 *   interpreter               the case's status; good input gives ref
 *   compiled, checked         the same status, a message naming the kernel
 *                             and the bad element; then, on the same
 *                             executable, good input gives ref (the
 *                             context stays usable)
 *   compiled, unchecked       WEFT_OK and ref everywhere, the bad element
 *                             included
 *
 * Then: with several bad elements the lowest one's error is reported,
 * every time, as the interpreter does for a map; gathers (backpermute) are
 * checked in both modes, and checked mode names the element; checked and
 * unchecked kernels never share a disk-cache entry; $WEFT_CHECK.
 *
 * The compiled backend is DT_BACKEND (tu.h): the CPU here, PTX in
 * test_ptx_checked (a skip without a GPU).
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "tu.h"

enum { N_SMALL = 9, N_LARGE = 100003 };

/* ------------------------------------------------------------------------
 * The cases
 * ---------------------------------------------------------------------- */

typedef struct ub {
    const char *name;
    weft_type in, out;         /* f : in -> out */
    weft_status status;        /* the interpreter's, for `bad` */
    double bad;                /* the input that makes f undefined */
    double (*good)(int64_t i); /* input i of a run with no bad element */
    int64_t (*ref)(double x);  /* f(x) documented for every x (unchecked) */
    weft_exp *(*f)(weft_program *p, weft_exp *x, weft_acc *ys);
} ub;

/* ys = [10 .. 17] (i32), which `!` and `!!` read. */
enum { YS = 8 };

static double g_index(int64_t i)
{
    return (double)(i % YS);
}
static double g_nonzero(int64_t i)
{
    return (double)(1 + i % 7) * (i % 2 ? -1 : 1);
}
static double g_small(int64_t i)
{
    return (double)(i % 1000 - 500);
}
static double g_shift(int64_t i)
{
    return (double)(i % 31);
}
static double g_float(int64_t i)
{
    return (double)(i % 200) * 0.75 - 70.0;
}
static double g_extent(int64_t i)
{
    return (double)(1 + i % 5);
}

static int64_t r_at(double x)
{
    return x >= 0 && x < YS ? 10 + (int64_t)x : 0;
}

static weft_exp *f_at(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)p;
    return weft_at(ys, weft_index1(x));
}

static weft_exp *f_at_linear(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)p;
    return weft_at_linear(ys, x);
}

/* 100 quot x, 100 rem x, -100 div x, -100 mod x (i32); by zero: x quot 0
 * = x div 0 = x, x rem 0 = x mod 0 = 0. */
static int64_t r_quot(double x)
{
    int64_t d = (int64_t)x;
    return d ? 100 / d : 100;
}
static int64_t r_rem(double x)
{
    int64_t d = (int64_t)x;
    return d ? 100 % d : 0;
}
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b, m = a % b;
    return (m != 0 && ((m < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t r_div(double x)
{
    int64_t d = (int64_t)x;
    return d ? floor_div(-100, d) : -100;
}
static int64_t r_mod(double x)
{
    int64_t d = (int64_t)x;
    return d ? -100 - floor_div(-100, d) * d : 0;
}
static weft_exp *f_quot(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_quot(weft_i32(p, 100), x);
}
static weft_exp *f_rem(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_rem(weft_i32(p, 100), x);
}
static weft_exp *f_div(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_idiv(weft_i32(p, -100), x);
}
static weft_exp *f_mod(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_mod(weft_i32(p, -100), x);
}
/* 100 quot x on u32 */
static int64_t r_uquot(double x)
{
    uint32_t d = (uint32_t)(int64_t)x;
    return d ? 100 / d : 100;
}
static weft_exp *f_uquot(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_quot(weft_u32(p, 100), x);
}

/* x quot -1 and x div -1 (i32): minBound quot -1 = minBound (it wraps) */
static int64_t r_neg(double x)
{
    return -(int64_t)x;
}
static weft_exp *f_quot_m1(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_quot(x, weft_i32(p, -1));
}
static weft_exp *f_div_m1(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_idiv(x, weft_i32(p, -1));
}

/* 1 shl x, -256 shr x (i32), 3 shl x (i64): the amount modulo the width */
static int64_t r_shl(double x)
{
    return (int64_t)(int32_t)((uint32_t)1 << ((int64_t)x & 31));
}
static int64_t r_shr(double x)
{
    return (int64_t)(-256 >> ((int64_t)x & 31));
}
static int64_t r_shl64(double x)
{
    return (int64_t)((uint64_t)3 << ((int64_t)x & 63));
}
static weft_exp *f_shl(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_shl(weft_i32(p, 1), x);
}
static weft_exp *f_shr(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_shr(weft_i32(p, -256), x);
}
static weft_exp *f_shl64(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_shl(weft_i64(p, 3), x);
}

/* float to integer: saturating, NaN gives 0 */
static int64_t sat(double v, double lo, double hi)
{
    if (isnan(v)) {
        return 0;
    }
    return v <= lo ? (int64_t)lo : v >= hi ? (int64_t)hi : (int64_t)v;
}
static double round_even(double x)
{
    double f = floor(x), d = x - f;
    return d > 0.5 ? f + 1 : d < 0.5 ? f : fmod(f, 2.0) == 0.0 ? f : f + 1;
}
static int64_t r_trunc_i32(double x)
{
    return sat(trunc((float)x), -2147483648.0, 2147483647.0);
}
static int64_t r_round_i8(double x)
{
    return sat(round_even(x), -128, 127);
}
static int64_t r_floor_u16(double x)
{
    return sat(floor((float)x), 0, 65535);
}
static int64_t r_convert_i16(double x)
{
    return sat(trunc(x), -32768, 32767);
}
static int64_t r_ceiling_i64(double x)
{
    double v = ceil((float)x);
    if (isnan(v)) {
        return 0;
    }
    return v >= 9223372036854775807.0   ? INT64_MAX
           : v < -9223372036854775807.0 ? INT64_MIN
                                        : (int64_t)v;
}
static weft_exp *f_trunc_i32(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)p;
    (void)ys;
    return weft_truncate(x, WEFT_I32);
}
static weft_exp *f_round_i8(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)p;
    (void)ys;
    return weft_round(x, WEFT_I8);
}
static weft_exp *f_floor_u16(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)p;
    (void)ys;
    return weft_floor(x, WEFT_U16);
}
static weft_exp *f_convert_i16(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)p;
    (void)ys;
    return weft_convert(x, WEFT_I16);
}
static weft_exp *f_ceiling_i64(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)p;
    (void)ys;
    return weft_ceiling(x, WEFT_I64);
}

/* component 0 of from_index (3, x) 7: an inner extent 0 divides by 1 */
static int64_t r_from(double x)
{
    int64_t d = (int64_t)x;
    return d ? 7 / d : 7;
}
static weft_exp *f_from(weft_program *p, weft_exp *x, weft_acc *ys)
{
    (void)ys;
    return weft_get(
        weft_from_index(weft_index2(weft_i64(p, 3), x), weft_i64(p, 7)), 0);
}

static const ub cases[] = {
    {"at", WEFT_I64, WEFT_I32, WEFT_ERR_OUT_OF_BOUNDS, YS, g_index, r_at, f_at},
    {"at_neg", WEFT_I64, WEFT_I32, WEFT_ERR_OUT_OF_BOUNDS, -1, g_index, r_at,
     f_at},
    {"at_linear", WEFT_I64, WEFT_I32, WEFT_ERR_OUT_OF_BOUNDS, -3, g_index, r_at,
     f_at_linear},
    {"quot", WEFT_I32, WEFT_I32, WEFT_ERR_DIVIDE_BY_ZERO, 0, g_nonzero, r_quot,
     f_quot},
    {"rem", WEFT_I32, WEFT_I32, WEFT_ERR_DIVIDE_BY_ZERO, 0, g_nonzero, r_rem,
     f_rem},
    {"div", WEFT_I32, WEFT_I32, WEFT_ERR_DIVIDE_BY_ZERO, 0, g_nonzero, r_div,
     f_div},
    {"mod", WEFT_I32, WEFT_I32, WEFT_ERR_DIVIDE_BY_ZERO, 0, g_nonzero, r_mod,
     f_mod},
    {"uquot", WEFT_U32, WEFT_U32, WEFT_ERR_DIVIDE_BY_ZERO, 0, g_extent, r_uquot,
     f_uquot},
    {"quot_min", WEFT_I32, WEFT_I32, WEFT_ERR_UNDEFINED, -2147483648.0, g_small,
     r_neg, f_quot_m1},
    {"div_min", WEFT_I32, WEFT_I32, WEFT_ERR_UNDEFINED, -2147483648.0, g_small,
     r_neg, f_div_m1},
    {"shl_width", WEFT_I32, WEFT_I32, WEFT_ERR_UNDEFINED, 32, g_shift, r_shl,
     f_shl},
    {"shl_neg", WEFT_I32, WEFT_I32, WEFT_ERR_UNDEFINED, -1, g_shift, r_shl,
     f_shl},
    {"shr_wide", WEFT_I32, WEFT_I32, WEFT_ERR_UNDEFINED, 40, g_shift, r_shr,
     f_shr},
    {"shl64", WEFT_I64, WEFT_I64, WEFT_ERR_UNDEFINED, 64, g_shift, r_shl64,
     f_shl64},
    {"truncate_big", WEFT_F32, WEFT_I32, WEFT_ERR_UNDEFINED, 3e9, g_float,
     r_trunc_i32, f_trunc_i32},
    {"truncate_nan", WEFT_F32, WEFT_I32, WEFT_ERR_UNDEFINED, NAN, g_float,
     r_trunc_i32, f_trunc_i32},
    {"round_i8", WEFT_F64, WEFT_I8, WEFT_ERR_UNDEFINED, 300.5, g_float,
     r_round_i8, f_round_i8},
    {"floor_u16", WEFT_F32, WEFT_U16, WEFT_ERR_UNDEFINED, -1.5, g_extent,
     r_floor_u16, f_floor_u16},
    {"convert_i16", WEFT_F64, WEFT_I16, WEFT_ERR_UNDEFINED, -40000.25, g_float,
     r_convert_i16, f_convert_i16},
    {"ceiling_i64", WEFT_F32, WEFT_I64, WEFT_ERR_UNDEFINED, 1e19, g_float,
     r_ceiling_i64, f_ceiling_i64},
    {"from_zero", WEFT_I64, WEFT_I64, WEFT_ERR_DIVIDE_BY_ZERO, 0, g_extent,
     r_from, f_from},
    {"from_neg", WEFT_I64, WEFT_I64, WEFT_ERR_BAD_SHAPE, -2, g_extent, r_from,
     f_from},
};
enum { NCASES = (int)(sizeof cases / sizeof cases[0]) };

/* ------------------------------------------------------------------------
 * Programs: f in a map, or fused into a consumer
 * ---------------------------------------------------------------------- */

typedef enum consumer {
    C_MAP,
    C_FOLD,
    C_SCAN,
    C_PERMUTE,
    C_STENCIL,
    NCONSUMERS
} consumer;
static const char *const consumer_names[] = {"map", "fold", "scan", "permute",
                                             "stencil"};

static weft_exp *zero(weft_program *p, weft_type t)
{
    static const uint64_t z = 0;
    return weft_const(p, t, &z);
}

/* The program of case u under consumer c over xs (a parameter). */
static weft_acc *build(weft_program *p, const ub *u, consumer c,
                       weft_array *ys_arr)
{
    weft_acc *xs = weft_param(p, u->in, 1);
    weft_acc *ys = weft_use(p, ys_arr);
    if (c == C_STENCIL) {
        weft_fun *g = weft_fun3(p, u->in, u->in, u->in);
        weft_fun_return(g, u->f(p, weft_arg(g, 1), ys));
        weft_boundary b = {WEFT_BOUNDARY_CLAMP, NULL};
        return weft_stencil(g, (const int[]){3}, b, xs);
    }
    weft_fun *f = weft_fun1(p, u->in);
    weft_fun_return(f, u->f(p, weft_arg(f, 0), ys));
    weft_acc *m = weft_map(f, xs);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, u->out);
    switch (c) {
    case C_FOLD: return weft_fold(add, zero(p, u->out), m);
    case C_SCAN: return weft_scanl(add, zero(p, u->out), m);
    case C_PERMUTE: {
        weft_fun *id = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(id, weft_arg(id, 0));
        weft_fun *z = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(z, zero(p, u->out));
        return weft_permute(add, weft_generate(weft_shape(xs), z), id, m);
    }
    default: return m;
    }
}

/* What consumer c gives for f values v[0..n-1]: rank, extent, values
 * (into want, n + 1 room). */
static int expected(consumer c, const int64_t *v, int64_t n, int64_t *ext,
                    int64_t *want)
{
    int64_t sum = 0;
    switch (c) {
    case C_FOLD:
        for (int64_t i = 0; i < n; i++) {
            sum = (int64_t)((uint64_t)sum + (uint64_t)v[i]);
        }
        want[0] = sum;
        return 0;
    case C_SCAN:
        for (int64_t i = 0; i < n; i++) {
            want[i] = sum;
            sum = (int64_t)((uint64_t)sum + (uint64_t)v[i]);
        }
        want[n] = sum;
        *ext = n + 1;
        return 1;
    default:
        memcpy(want, v, sizeof *v * (size_t)n);
        *ext = n;
        return 1;
    }
}

/* Input of n elements of type t, all good but element `at` (-1: none),
 * which is `bad`; its f values by the documentation into v. */
static weft_array *input(weft_context *ctx, const ub *u, int64_t n, int64_t at,
                         int64_t *v)
{
    double *x = malloc(sizeof *x * (size_t)n);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < n; i++) {
        x[i] = i == at ? u->bad : u->good(i);
        /* what f sees: the value as stored in the element type */
        unsigned char tmp[8];
        tu_store_f(u->in, tmp, x[i]);
        v[i] = u->ref(u->in == WEFT_F32 || u->in == WEFT_F64
                          ? tu_load_f(u->in, tmp)
                          : (double)tu_load_i(u->in, tmp));
    }
    weft_array *a = tu_arr_f(ctx, u->in, 1, TU_SH(n), x);
    free(x);
    return a;
}

static weft_context *open_ctx(weft_backend b, bool checked)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.threads = 2;
    cfg.flags = WEFT_FLAG_NO_ENV | (checked ? WEFT_FLAG_CHECKED : 0);
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

/* One case under one consumer on one context: a run with the bad element
 * at `at`, then one without (the context stays usable).  `fails`: the
 * first run must give u->status (and, when `named`, a message naming the
 * kernel and element `at`); else both give the documented values. */
static void run_case(weft_context *ctx, const ub *u, consumer c, int64_t n,
                     int64_t at, bool fails, bool named, const char *who)
{
    int64_t *v = malloc(sizeof *v * (size_t)(n + 1));
    int64_t *want = malloc(sizeof *want * (size_t)(n + 1));
    ck_assert(v && want);
    const int64_t ysv[YS] = {10, 11, 12, 13, 14, 15, 16, 17};
    weft_array *ys = tu_arr_i(ctx, WEFT_I32, 1, TU_SH(YS), ysv);
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *r = build(p, u, c, ys);
    TU_PROGRAM_OK(p);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));
    for (int pass = 0; pass < 2; pass++) {
        bool bad = pass == 0;
        weft_array *xs = input(ctx, u, n, bad ? at : -1, v);
        weft_array *out = NULL;
        weft_status s = weft_run(exe, &xs, 1, &out, 1);
        weft_array_release(xs);
        if (bad && fails) {
            ck_assert_msg(s == u->status,
                          "%s: %s in %s, n %lld: %s (%s), "
                          "expected %s",
                          who, u->name, consumer_names[c], (long long)n,
                          weft_status_name(s), weft_last_error(),
                          weft_status_name(u->status));
            if (named) {
                char el[64];
                snprintf(el, sizeof el, "at element %lld", (long long)at);
                ck_assert_msg(strstr(weft_last_error(), "kernel ") &&
                                  strstr(weft_last_error(), el),
                              "%s: %s in %s: \"%s\" does not name the kernel "
                              "and %s",
                              who, u->name, consumer_names[c],
                              weft_last_error(), el);
            }
            ck_assert_ptr_null(out);
            continue;
        }
        ck_assert_msg(s == WEFT_OK, "%s: %s in %s, n %lld, %s input: %s", who,
                      u->name, consumer_names[c], (long long)n,
                      bad ? "bad" : "good", weft_last_error());
        int64_t ext = 0;
        int rank = expected(c, v, n, &ext, want);
        char m[256];
        ck_assert_msg(tu_match_i(ctx, out, 0, rank, &ext, want, m, sizeof m),
                      "%s: %s in %s, n %lld, %s input: %s", who, u->name,
                      consumer_names[c], (long long)n, bad ? "bad" : "good", m);
        weft_array_release(out);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    weft_array_release(ys);
    free(v);
    free(want);
}

/* Every case under consumer c, small and large, on the interpreter, the
 * compiled backend checked and unchecked. */
static void run_consumer(consumer c)
{
    weft_context *in = open_ctx(WEFT_BACKEND_INTERP, false);
    weft_context *chk = open_ctx(DT_BACKEND, true);
    weft_context *unc = open_ctx(DT_BACKEND, false);
    for (int k = 0; k < NCASES; k++) {
        const ub *u = &cases[k];
        for (int big = 0; big < 2; big++) {
            int64_t n = big ? N_LARGE : N_SMALL;
            int64_t at = big ? 77777 : 5;
            /* the interpreter at the small size only: it is the slow one */
            if (!big) {
                run_case(in, u, c, n, at, true, false, "interp");
            }
            run_case(chk, u, c, n, at, true, true,
                     DT_BACKEND == WEFT_BACKEND_PTX ? "ptx checked"
                                                    : "cpu checked");
            run_case(unc, u, c, n, at, false, false,
                     DT_BACKEND == WEFT_BACKEND_PTX ? "ptx unchecked"
                                                    : "cpu unchecked");
        }
    }
    weft_context_free(in);
    weft_context_free(chk);
    weft_context_free(unc);
}

START_TEST(in_map)
{
    run_consumer(C_MAP);
}
END_TEST
START_TEST(in_fold)
{
    run_consumer(C_FOLD);
}
END_TEST
START_TEST(in_scan)
{
    run_consumer(C_SCAN);
}
END_TEST
START_TEST(in_permute)
{
    run_consumer(C_PERMUTE);
}
END_TEST
START_TEST(in_stencil)
{
    run_consumer(C_STENCIL);
}
END_TEST

/* ------------------------------------------------------------------------
 * Several bad elements: the lowest one's error, every time
 * ---------------------------------------------------------------------- */

/* map (\x -> if x > 1000 then 1 shl x else 100 quot x) over n elements,
 * x = 5000 at `shift` (undefined shift), 0 at `zero` (division by zero). */
static weft_status two_errors(weft_context *ctx, int64_t n, int64_t shift,
                              int64_t zero_at)
{
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_fun_return(f, weft_cond(weft_gt(x, weft_i32(p, 1000)),
                                 weft_shl(weft_i32(p, 1), x),
                                 weft_quot(weft_i32(p, 100), x)));
    weft_acc *r = weft_map(f, xs);
    int64_t *v = malloc(sizeof *v * (size_t)n);
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = i == shift ? 5000 : i == zero_at ? 0 : 1 + i % 13;
    }
    weft_array *in = tu_arr_i(ctx, WEFT_I32, 1, TU_SH(n), v);
    free(v);
    weft_array *out = NULL;
    weft_status s = weft_run1(p, &r, 1, &in, 1, &out, 1);
    weft_array_release(in);
    weft_array_release(out);
    weft_program_free(p);
    return s;
}

START_TEST(lowest_element_wins)
{
    weft_context *in = open_ctx(WEFT_BACKEND_INTERP, false);
    weft_context *chk = open_ctx(DT_BACKEND, true);
    const int64_t n = 200000;
    for (int order = 0; order < 2; order++) {
        int64_t shift = order ? 150000 : 20000, zat = order ? 30000 : 160000;
        weft_status want = order ? WEFT_ERR_DIVIDE_BY_ZERO : WEFT_ERR_UNDEFINED;
        TU_STATUS(want, two_errors(in, n, shift, zat));
        char el[64];
        snprintf(el, sizeof el, "at element %lld",
                 (long long)(order ? zat : shift));
        for (int rep = 0; rep < 5; rep++) {
            TU_STATUS(want, two_errors(chk, n, shift, zat));
            ck_assert_msg(strstr(weft_last_error(), el), "\"%s\" lacks \"%s\"",
                          weft_last_error(), el);
        }
    }
    weft_context_free(in);
    weft_context_free(chk);
}
END_TEST

/* stencil 3x3 (clamp) of (\w -> 100 quot centre) over an h x w grid of
 * ones with zeros at the linear positions zeros[0 .. nz-1]: in checked
 * mode the lowest zero's division is reported.  Of rank 2, so that on
 * the GPU it runs in tiles (ptx/stencil.c), whose interior and border
 * tiles, and tiles cut by the result's edge, apply f each their own
 * way; on success every element is 100. */
static weft_status stencil_zeros(weft_context *ctx, int64_t h, int64_t w,
                                 const int64_t *zeros, int nz)
{
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I32, 2);
    weft_type t9[9];
    for (int i = 0; i < 9; i++) {
        t9[i] = WEFT_I32;
    }
    weft_fun *f = weft_fun_create(p, 9, t9);
    weft_fun_return(f, weft_quot(weft_i32(p, 100), weft_arg(f, 4)));
    weft_boundary clamp = {WEFT_BOUNDARY_CLAMP, NULL};
    weft_acc *r = weft_stencil(f, (const int[]){3, 3}, clamp, xs);
    int64_t n = h * w;
    int64_t *v = malloc(sizeof *v * (size_t)n);
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = 1;
    }
    for (int k = 0; k < nz; k++) {
        v[zeros[k]] = 0;
    }
    weft_array *in = tu_arr_i(ctx, WEFT_I32, 2, TU_SH(h, w), v);
    weft_array *out = NULL;
    weft_status s = weft_run1(p, &r, 1, &in, 1, &out, 1);
    if (s == WEFT_OK) {
        for (int64_t i = 0; i < n; i++) {
            v[i] = 100;
        }
        TU_CHECK_I(ctx, out, 0, 2, TU_SH(h, w), v);
    }
    free(v);
    weft_array_release(in);
    weft_array_release(out);
    weft_program_free(p);
    return s;
}

START_TEST(stencil_lowest_element)
{
    weft_context *in = open_ctx(WEFT_BACKEND_INTERP, false);
    weft_context *chk = open_ctx(DT_BACKEND, true);
    const int64_t h = 97, w = 300;
    /* (60, 250): a tile inside the grid and its halo; (70, 3): a tile at
     * the left edge; (96, 299): the last row and column, a tile the
     * result cuts */
    const int64_t z[3] = {70 * w + 3, 60 * w + 250, 96 * w + 299};
    const struct {
        int first, nz;
        int64_t want;
    } cases[] = {{0, 3, 60 * w + 250},
                 {0, 1, 70 * w + 3},
                 {2, 1, 96 * w + 299},
                 {0, 0, -1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        weft_status want = cases[c].nz ? WEFT_ERR_DIVIDE_BY_ZERO : WEFT_OK;
        const int64_t *zs = z + cases[c].first;
        TU_STATUS(want, stencil_zeros(in, h, w, zs, cases[c].nz));
        TU_STATUS(want, stencil_zeros(chk, h, w, zs, cases[c].nz));
        if (cases[c].nz) {
            char el[64];
            snprintf(el, sizeof el, "at element %lld",
                     (long long)cases[c].want);
            ck_assert_msg(strstr(weft_last_error(), el),
                          "case %zu: \"%s\" lacks \"%s\"", c, weft_last_error(),
                          el);
        }
    }
    weft_context_free(in);
    weft_context_free(chk);
}
END_TEST

/* ------------------------------------------------------------------------
 * Gathers are checked in both modes; checked mode names the element
 * ---------------------------------------------------------------------- */

/* fold (+) 0 (backpermute (n) (\i -> i + shift) xs) over n = 50000 i32 */
static weft_status gather_sum(weft_context *ctx, int64_t shift)
{
    const int64_t n = 50000;
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_add(weft_get(weft_arg(ix, 0), 0),
                                             weft_i64(p, shift))));
    weft_acc *bp = weft_backpermute(weft_index1(weft_i64(p, n)), ix, xs);
    weft_acc *r =
        weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32), weft_i32(p, 0), bp);
    int64_t *v = malloc(sizeof *v * (size_t)(n + 10));
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n + 10; i++) {
        v[i] = 1;
    }
    weft_array *in = tu_arr_i(ctx, WEFT_I32, 1, TU_SH(n + 10), v);
    free(v);
    weft_array *out = NULL;
    weft_status s = weft_run1(p, &r, 1, &in, 1, &out, 1);
    if (s == WEFT_OK) {
        TU_CHECK_I(ctx, out, 0, 0, NULL, TU_I(n));
    }
    weft_array_release(in);
    weft_array_release(out);
    weft_program_free(p);
    return s;
}

START_TEST(gathers)
{
    weft_context *ctx[3] = {open_ctx(WEFT_BACKEND_INTERP, false),
                            open_ctx(DT_BACKEND, false),
                            open_ctx(DT_BACKEND, true)};
    for (int c = 0; c < 3; c++) {
        TU_OK(gather_sum(ctx[c], 10));
        /* reads n + 10 .. n + 10 + 19: elements 49990 .. 49999 fail */
        TU_STATUS(WEFT_ERR_OUT_OF_BOUNDS, gather_sum(ctx[c], 20));
        if (c == 2) {
            ck_assert_msg(strstr(weft_last_error(), "at element 49990"), "%s",
                          weft_last_error());
        }
        TU_OK(gather_sum(ctx[c], 0)); /* still usable */
        weft_context_free(ctx[c]);
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * The disk cache keeps checked and unchecked kernels apart
 * ---------------------------------------------------------------------- */

/* 100 quot x over [1, 0, 4] on a new context caching in dir: its status,
 * and the kernels it loaded from disk. */
static weft_status cached_quot(const char *dir, bool checked, uint64_t *loaded,
                               int64_t *mid)
{
    weft_config cfg = weft_config_default();
    cfg.backend = DT_BACKEND;
    cfg.threads = 2;
    cfg.cache_dir = dir;
    cfg.flags = WEFT_FLAG_NO_ENV | (checked ? WEFT_FLAG_CHECKED : 0);
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_quot(weft_i32(p, 100), weft_arg(f, 0)));
    weft_acc *r = weft_map(f, weft_param(p, WEFT_I32, 1));
    weft_array *in = tu_arr_i(ctx, WEFT_I32, 1, TU_SH(3), TU_I(1, 0, 4));
    weft_array *out = NULL;
    weft_status s = weft_run1(p, &r, 1, &in, 1, &out, 1);
    if (s == WEFT_OK) {
        *mid = tu_load_i(WEFT_I32, (const char *)weft_array_data(out, 0) + 4);
    }
    weft_stats st;
    TU_OK(weft_context_wait_optimised(ctx)); /* the kernel on disk */
    TU_OK(weft_context_stats(ctx, &st));
    *loaded = st.kernels_loaded;
    weft_array_release(in);
    weft_array_release(out);
    weft_program_free(p);
    weft_context_free(ctx);
    return s;
}

START_TEST(cache_keys)
{
    char dir[] = "/tmp/weft-checked-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    uint64_t loaded = 0;
    int64_t mid = -1;
    /* unchecked first: its kernel goes to disk */
    TU_OK(cached_quot(dir, false, &loaded, &mid));
    ck_assert_int_eq(mid, 100);
    /* checked: not the unchecked entry, its own */
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, cached_quot(dir, true, &loaded, &mid));
    ck_assert_msg(loaded == 0, "a checked context loaded %llu kernels",
                  (unsigned long long)loaded);
    /* each again: both from disk now, each with its own meaning */
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, cached_quot(dir, true, &loaded, &mid));
    ck_assert_uint_ge(loaded, 1);
    mid = -1;
    TU_OK(cached_quot(dir, false, &loaded, &mid));
    ck_assert_uint_ge(loaded, 1);
    ck_assert_int_eq(mid, 100);
    tu_remove_dir(dir);
}
END_TEST

/* ------------------------------------------------------------------------
 * $WEFT_CHECK
 * ---------------------------------------------------------------------- */

static weft_status env_quot(unsigned flags, weft_status *create)
{
    weft_config cfg = weft_config_default();
    cfg.backend = DT_BACKEND;
    cfg.threads = 2;
    cfg.flags = flags;
    weft_context *ctx = NULL;
    *create = weft_context_create(&cfg, &ctx);
    if (*create != WEFT_OK) {
        return *create;
    }
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_rem(weft_i32(p, 100), weft_arg(f, 0)));
    weft_acc *r = weft_map(f, weft_param(p, WEFT_I32, 1));
    weft_array *in = tu_arr_i(ctx, WEFT_I32, 1, TU_SH(2), TU_I(3, 0));
    weft_array *out = NULL;
    weft_status s = weft_run1(p, &r, 1, &in, 1, &out, 1);
    weft_array_release(in);
    weft_array_release(out);
    weft_program_free(p);
    weft_context_free(ctx);
    return s;
}

START_TEST(environment)
{
    /* WEFT_BACKEND of the caller's environment must not interfere */
    const char *saved = getenv("WEFT_BACKEND");
    char *keep = saved ? strdup(saved) : NULL;
    unsetenv("WEFT_BACKEND");
    weft_status c;
    setenv("WEFT_CHECK", "1", 1);
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, env_quot(0, &c));
    TU_OK(env_quot(WEFT_FLAG_NO_ENV, &c)); /* the environment ignored */
    setenv("WEFT_CHECK", "0", 1);
    TU_OK(env_quot(WEFT_FLAG_CHECKED, &c)); /* turned off */
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO,
              env_quot(WEFT_FLAG_CHECKED | WEFT_FLAG_NO_ENV, &c));
    setenv("WEFT_CHECK", "yes", 1);
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, env_quot(0, &c));
    ck_assert_msg(strstr(weft_last_error(), "WEFT_CHECK"), "%s",
                  weft_last_error());
    unsetenv("WEFT_CHECK");
    TU_OK(env_quot(0, &c));
    if (keep) {
        setenv("WEFT_BACKEND", keep, 1);
        free(keep);
    }
}
END_TEST

static Suite *checked_suite(void)
{
    const struct {
        const char *name;
        const TTest *test;
    } tests[] = {
        {"in_map", in_map},
        {"in_fold", in_fold},
        {"in_scan", in_scan},
        {"in_permute", in_permute},
        {"in_stencil", in_stencil},
        {"lowest_element_wins", lowest_element_wins},
        {"stencil_lowest_element", stencil_lowest_element},
        {"gathers", gathers},
        {"cache_keys", cache_keys},
        {"environment", environment},
    };
    Suite *s = suite_create("checked");
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        TCase *t = tcase_create(tests[i].name);
        tcase_set_timeout(t, 600);
        tcase_add_test(t, tests[i].test);
        suite_add_tcase(s, t);
    }
    return s;
}

TU_MAIN(checked_suite)
