/*
 * tests/test_errors.c: every failure a user can cause, one test each.
 *
 * Each test provokes one error kind through the public API and asserts the
 * exact weft_status and that the message (weft_last_error(), and
 * weft_program_error() for builder errors) names the call that failed.
 * Builder errors are sticky: after the first, later builder calls return
 * NULL and weft_compile returns the first error.  Run-time errors come from
 * weft_run on the interpreter, which must leave no output behind.
 *
 * The allocation-failure test runs a whole dotp (context, arrays, program,
 * compile, run) under a counting allocator that fails the N-th request, for
 * N = 0, 1, 2, ... until the run succeeds.  Every failing step must report
 * WEFT_ERR_OUT_OF_MEMORY, and once everything is freed the allocator must
 * hold no live block: weft leaks nothing on its error paths.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

/* ---- helpers ------------------------------------------------------------- */

/* An interpreter context that ignores the environment. */
static weft_context *make_ctx(void)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    ck_assert_msg(weft_context_create(&cfg, &ctx) == WEFT_OK, "%s",
                  weft_last_error());
    ck_assert_ptr_nonnull(ctx);
    return ctx;
}

static weft_program *make_prog(weft_context *ctx)
{
    weft_program *p = NULL;
    ck_assert_msg(weft_program_create(ctx, &p) == WEFT_OK, "%s",
                  weft_last_error());
    ck_assert_ptr_nonnull(p);
    return p;
}

/* A rank-1 array of n elements of type t copied from data. */
static weft_array *vec(weft_context *ctx, weft_type t, int64_t n,
                       const void *data)
{
    weft_array *a = NULL;
    const void *d[1] = {data};
    ck_assert_msg(weft_array_from_host(ctx, t, 1, &n, d, &a) == WEFT_OK, "%s",
                  weft_last_error());
    return a;
}

/* The binary function (x, y) -> op(x, y) on type t. */
static weft_fun *binop(weft_program *p, weft_type t,
                       weft_exp *(*op)(weft_exp *, weft_exp *))
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, op(weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* Assert that msg mentions name. */
#define ASSERT_NAMES(msg, name)                                                \
    ck_assert_msg(strstr((msg), (name)) != NULL,                               \
                  "message \"%s\" does not name %s", (msg), (name))

/* Assert a builder error: status of p and both messages name `call`. */
static void assert_builder_error(weft_program *p, weft_status s,
                                 const char *call)
{
    ck_assert_msg(weft_program_status(p) == s, "status %s, expected %s (%s)",
                  weft_status_name(weft_program_status(p)), weft_status_name(s),
                  weft_program_error(p));
    ASSERT_NAMES(weft_program_error(p), call);
    ASSERT_NAMES(weft_last_error(), call);
}

/* Compile results[0] of p and run it on in[0..n_in-1] with one output;
 * returns the status of the first failing step.  The output, if any, is
 * released; on failure it must be NULL. */
static weft_status compile_and_run(weft_program *p, weft_acc *r,
                                   weft_array *const *in, int n_in)
{
    weft_executable *exe = NULL;
    weft_status s = weft_compile(p, &r, 1, &exe);
    if (s != WEFT_OK) {
        return s;
    }
    weft_array *out[1] = {(weft_array *)(uintptr_t)1};
    s = weft_run(exe, in, n_in, out, 1);
    if (s != WEFT_OK) {
        ck_assert_msg(out[0] == NULL, "weft_run failed but left an output");
    }
    weft_array_release(out[0]);
    weft_executable_free(exe);
    return s;
}

/* ---- builder errors ------------------------------------------------------ */

START_TEST(null_handle_and_stickiness)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_fun *add = binop(p, WEFT_F32, weft_add);
    weft_acc *good = weft_fold(add, weft_f32(p, 0), xs);
    ck_assert_ptr_nonnull(good);
    ck_assert_int_eq(weft_program_status(p), WEFT_OK);
    ck_assert_str_eq(weft_program_error(p), "");

    weft_fun *neg = weft_fun1(p, WEFT_F32);
    weft_fun_return(neg, weft_neg(weft_arg(neg, 0)));
    ck_assert_ptr_null(weft_map(neg, NULL));
    assert_builder_error(p, WEFT_ERR_NULL_ARGUMENT, "weft_map");
    char first[512];
    snprintf(first, sizeof first, "%s", weft_program_error(p));

    /* Sticky: a later builder call, even a valid one, returns NULL, and a
     * later error does not replace the first. */
    ck_assert_ptr_null(weft_map(neg, xs));
    weft_acc *is = weft_param(p, WEFT_I32, 1);
    ck_assert_ptr_null(is);
    ck_assert_ptr_null(weft_zipwith(add, xs, xs));
    ck_assert_ptr_null(weft_f32(p, 1));
    ck_assert_int_eq(weft_program_status(p), WEFT_ERR_NULL_ARGUMENT);
    ck_assert_str_eq(weft_program_error(p), first);

    /* weft_compile refuses the program with its first error. */
    weft_executable *exe = NULL;
    ck_assert_int_eq(weft_compile(p, &good, 1, &exe), WEFT_ERR_NULL_ARGUMENT);
    ck_assert_ptr_null(exe);
    ASSERT_NAMES(weft_last_error(), "weft_map");
    /* Dumping is refused the same way. */
    FILE *devnull = fopen("/dev/null", "w");
    ck_assert_ptr_nonnull(devnull);
    ck_assert_int_eq(weft_program_dump(p, &good, 1, devnull),
                     WEFT_ERR_NULL_ARGUMENT);
    fclose(devnull);

    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(null_to_api_calls)
{
    weft_context *ctx = make_ctx();
    ck_assert_int_eq(weft_context_create(NULL, NULL), WEFT_ERR_NULL_ARGUMENT);
    ASSERT_NAMES(weft_last_error(), "weft_context_create");
    ck_assert_int_eq(weft_program_create(NULL, NULL), WEFT_ERR_NULL_ARGUMENT);
    ASSERT_NAMES(weft_last_error(), "weft_program_create");
    weft_program *p = NULL;
    ck_assert_int_eq(weft_program_create(NULL, &p), WEFT_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(weft_compile(NULL, NULL, 0, NULL), WEFT_ERR_NULL_ARGUMENT);
    ASSERT_NAMES(weft_last_error(), "weft_compile");
    ck_assert_int_eq(weft_run(NULL, NULL, 0, NULL, 0), WEFT_ERR_NULL_ARGUMENT);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    ck_assert_int_eq(weft_backend_from_name(NULL, NULL),
                     WEFT_ERR_NULL_ARGUMENT);
    /* Builders given NULL and no program: NULL, nothing to record. */
    ck_assert_ptr_null(weft_map(NULL, NULL));
    ck_assert_ptr_null(weft_add(NULL, NULL));
    ck_assert_ptr_null(weft_f32(NULL, 1.0f));
    ck_assert_ptr_null(weft_param(NULL, WEFT_F32, 1));
    weft_context_free(ctx);
}
END_TEST

/* Array constructors given a NULL `out` (or shape) must fail cleanly. */
START_TEST(array_null_arguments)
{
    weft_context *ctx = make_ctx();
    int64_t n = 4;
    ck_assert_int_eq(weft_array_create(ctx, WEFT_F32, 1, &n, NULL),
                     WEFT_ERR_NULL_ARGUMENT);
    ASSERT_NAMES(weft_last_error(), "weft_array_create");
    float buf[4] = {0};
    const void *cdata[1] = {buf};
    void *data[1] = {buf};
    ck_assert_int_eq(weft_array_from_host(ctx, WEFT_F32, 1, &n, cdata, NULL),
                     WEFT_ERR_NULL_ARGUMENT);
    ASSERT_NAMES(weft_last_error(), "weft_array_from_host");
    ck_assert_int_eq(
        weft_array_wrap(ctx, WEFT_F32, 1, &n, data, NULL, NULL, NULL),
        WEFT_ERR_NULL_ARGUMENT);
    ASSERT_NAMES(weft_last_error(), "weft_array_wrap");
    weft_array *a = NULL;
    ck_assert_int_eq(weft_array_create(ctx, WEFT_F32, 1, NULL, &a),
                     WEFT_ERR_NULL_ARGUMENT);
    ck_assert_ptr_null(a);
    weft_context_free(ctx);
}
END_TEST

START_TEST(type_mismatch)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *b = weft_param(p, WEFT_I32, 1);
    weft_fun *add = binop(p, WEFT_F32, weft_add);
    ck_assert_int_eq(weft_program_status(p), WEFT_OK);
    ck_assert_ptr_null(weft_zipwith(add, a, b));
    assert_builder_error(p, WEFT_ERR_TYPE_MISMATCH, "weft_zipwith");
    weft_program_free(p);

    /* Scalar primitives too: adding an i32 and an f32. */
    p = make_prog(ctx);
    ck_assert_ptr_null(weft_add(weft_i32(p, 1), weft_f32(p, 1)));
    assert_builder_error(p, WEFT_ERR_TYPE_MISMATCH, "weft_add");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(rank_mismatch)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *s = weft_param(p, WEFT_F32, 0);
    weft_fun *add = binop(p, WEFT_F32, weft_add);
    ck_assert_ptr_null(weft_fold(add, weft_f32(p, 0), s));
    assert_builder_error(p, WEFT_ERR_RANK_MISMATCH, "weft_fold");
    weft_program_free(p);

    p = make_prog(ctx);
    weft_acc *v = weft_param(p, WEFT_F32, 1);
    weft_acc *m = weft_param(p, WEFT_F32, 2);
    add = binop(p, WEFT_F32, weft_add);
    ck_assert_ptr_null(weft_zipwith(add, v, m));
    assert_builder_error(p, WEFT_ERR_RANK_MISMATCH, "weft_zipwith");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(program_mismatch)
{
    weft_context *ctx = make_ctx();
    weft_program *p1 = make_prog(ctx);
    weft_program *p2 = make_prog(ctx);
    weft_fun *neg = weft_fun1(p1, WEFT_F32);
    weft_fun_return(neg, weft_neg(weft_arg(neg, 0)));
    weft_acc *xs = weft_param(p2, WEFT_F32, 1);
    ck_assert_ptr_null(weft_map(neg, xs));
    ck_assert_int_eq(weft_program_status(p1) == WEFT_ERR_PROGRAM_MISMATCH ||
                         weft_program_status(p2) == WEFT_ERR_PROGRAM_MISMATCH,
                     1);
    ASSERT_NAMES(weft_last_error(), "weft_map");
    weft_program_free(p1);
    weft_program_free(p2);

    /* Scalars of two programs. */
    p1 = make_prog(ctx);
    p2 = make_prog(ctx);
    ck_assert_ptr_null(weft_add(weft_i32(p1, 1), weft_i32(p2, 2)));
    ck_assert_int_eq(weft_program_status(p1) == WEFT_ERR_PROGRAM_MISMATCH ||
                         weft_program_status(p2) == WEFT_ERR_PROGRAM_MISMATCH,
                     1);
    ASSERT_NAMES(weft_last_error(), "weft_add");
    weft_program_free(p1);
    weft_program_free(p2);
    weft_context_free(ctx);
}
END_TEST

START_TEST(wrong_arity)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_fun *add = binop(p, WEFT_F32, weft_add);
    ck_assert_ptr_null(weft_map(add, xs));
    assert_builder_error(p, WEFT_ERR_ARITY, "weft_map");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(stencil_window)
{
    static const int bad[] = {4, 11, 1, 0, -3};
    weft_context *ctx = make_ctx();
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        weft_program *p = make_prog(ctx);
        weft_acc *xs = weft_param(p, WEFT_F32, 1);
        /* A function of the right arity where that is possible, so that
         * only the window is wrong. */
        int arity = bad[k] > 0 ? bad[k] : 3;
        weft_type ts[16];
        for (int i = 0; i < arity; i++) {
            ts[i] = WEFT_F32;
        }
        weft_fun *f = weft_fun_create(p, arity, ts);
        weft_fun_return(f, weft_arg(f, 0));
        weft_boundary b = {WEFT_BOUNDARY_CLAMP, NULL};
        ck_assert_ptr_null(weft_stencil(f, &bad[k], b, xs));
        assert_builder_error(p, WEFT_ERR_STENCIL_WINDOW, "weft_stencil");
        weft_program_free(p);
    }
    weft_context_free(ctx);
}
END_TEST

START_TEST(incomplete_function)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_fun *f = weft_fun1(p, WEFT_F32); /* never returned */
    weft_acc *r = weft_map(f, xs);
    weft_executable *exe = NULL;
    weft_status s = r ? weft_compile(p, &r, 1, &exe) : weft_program_status(p);
    ck_assert_msg(s == WEFT_ERR_INCOMPLETE, "got %s: %s", weft_status_name(s),
                  weft_last_error());
    ck_assert_ptr_null(exe);
    ASSERT_NAMES(weft_last_error(), "weft_");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(argument_out_of_scope)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_neg(weft_arg(f, 0)));
    weft_fun *g = weft_fun1(p, WEFT_F32);
    /* g's body uses f's argument. */
    weft_fun_return(g, weft_add(weft_arg(g, 0), weft_arg(f, 0)));
    weft_acc *r = weft_map(g, weft_map(f, xs));
    weft_executable *exe = NULL;
    weft_status s = r ? weft_compile(p, &r, 1, &exe) : weft_program_status(p);
    ck_assert_msg(s == WEFT_ERR_SCOPE, "got %s: %s", weft_status_name(s),
                  weft_last_error());
    ck_assert_ptr_null(exe);
    ASSERT_NAMES(weft_last_error(), "weft_");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* ---- run-time errors ----------------------------------------------------- */

START_TEST(reshape_size)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_acc *r = weft_reshape(weft_index2(weft_i64(p, 2), weft_i64(p, 3)), xs);
    float d[5] = {1, 2, 3, 4, 5};
    weft_array *in = vec(ctx, WEFT_F32, 5, d);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_ERR_RESHAPE_SIZE);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    weft_array_release(in);

    /* The same executable is fine on 6 elements. */
    float e[6] = {1, 2, 3, 4, 5, 6};
    in = vec(ctx, WEFT_F32, 6, e);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_OK);
    weft_array_release(in);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(slice_index)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *m = weft_param(p, WEFT_I32, 2);
    weft_exp *spec[2] = {weft_i64(p, 3), weft_all(p)};
    weft_acc *r = weft_slice(m, 2, spec);
    ck_assert_int_eq(weft_program_status(p), WEFT_OK);
    int32_t d[6] = {1, 2, 3, 4, 5, 6};
    int64_t sh[2] = {2, 3};
    const void *dp[1] = {d};
    weft_array *in = NULL;
    ck_assert_int_eq(weft_array_from_host(ctx, WEFT_I32, 2, sh, dp, &in),
                     WEFT_OK);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_ERR_SLICE_INDEX);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    weft_array_release(in);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(fold1_empty)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_acc *r = weft_fold1(binop(p, WEFT_I32, weft_add), xs);
    weft_array *in = NULL;
    int64_t n = 0;
    ck_assert_int_eq(weft_array_create(ctx, WEFT_I32, 1, &n, &in), WEFT_OK);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_ERR_EMPTY_ARRAY);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    weft_array_release(in);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(index_out_of_bounds)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(f, 0), 0);
    weft_fun_return(f, weft_at(xs, weft_index1(weft_add(i, weft_i64(p, 10)))));
    weft_acc *r = weft_generate(weft_shape(xs), f);
    int32_t d[3] = {1, 2, 3};
    weft_array *in = vec(ctx, WEFT_I32, 3, d);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_ERR_OUT_OF_BOUNDS);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    weft_array_release(in);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(divide_by_zero)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_quot(weft_i32(p, 10), weft_arg(f, 0)));
    weft_acc *r = weft_map(f, xs);
    int32_t d[4] = {1, 2, 0, 5};
    weft_array *in = vec(ctx, WEFT_I32, 4, d);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_ERR_DIVIDE_BY_ZERO);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    weft_array_release(in);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(segments)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_acc *seg = weft_param(p, WEFT_I32, 1);
    weft_acc *r =
        weft_fold_seg(binop(p, WEFT_I32, weft_add), weft_i32(p, 0), xs, seg);
    int32_t d[4] = {1, 2, 3, 4};
    int32_t past[2] = {3, 2}; /* 5 > 4 elements */
    int32_t neg[2] = {3, -1};
    int32_t ok[2] = {1, 2}; /* the last element is ignored */
    weft_array *in[2] = {vec(ctx, WEFT_I32, 4, d), vec(ctx, WEFT_I32, 2, past)};
    ck_assert_int_eq(compile_and_run(p, r, in, 2), WEFT_ERR_SEGMENTS);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    weft_array_release(in[1]);
    in[1] = vec(ctx, WEFT_I32, 2, neg);
    ck_assert_int_eq(compile_and_run(p, r, in, 2), WEFT_ERR_SEGMENTS);
    weft_array_release(in[1]);
    in[1] = vec(ctx, WEFT_I32, 2, ok);
    ck_assert_int_eq(compile_and_run(p, r, in, 2), WEFT_OK);
    /* the offset form: a decrease, past the extent, below 0 */
    weft_acc *ro = weft_fold_seg_offsets(binop(p, WEFT_I32, weft_add),
                                         weft_i32(p, 0), xs, seg);
    int32_t off[3][2] = {{3, 2}, {0, 5}, {-1, 2}};
    for (int k = 0; k < 3; k++) {
        weft_array_release(in[1]);
        in[1] = vec(ctx, WEFT_I32, 2, off[k]);
        ck_assert_int_eq(compile_and_run(p, ro, in, 2), WEFT_ERR_SEGMENTS);
        ASSERT_NAMES(weft_last_error(), "weft_run");
    }
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(bad_shape)
{
    weft_context *ctx = make_ctx();
    weft_array *a = NULL;
    int64_t neg = -2;
    ck_assert_int_eq(weft_array_create(ctx, WEFT_F32, 1, &neg, &a),
                     WEFT_ERR_BAD_SHAPE);
    ASSERT_NAMES(weft_last_error(), "weft_array_create");
    ck_assert_ptr_null(a);
    int64_t huge[2] = {INT64_MAX / 2, 5};
    ck_assert_int_eq(weft_array_create(ctx, WEFT_F32, 2, huge, &a),
                     WEFT_ERR_BAD_SHAPE);
    ck_assert_ptr_null(a);

    /* At run: generate of a negative extent computed from an input. */
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(f, weft_i32(p, 7));
    weft_acc *r =
        weft_generate(weft_index1(weft_sub(weft_size(xs), weft_i64(p, 10))), f);
    int32_t d[3] = {1, 2, 3};
    weft_array *in = vec(ctx, WEFT_I32, 3, d);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_ERR_BAD_SHAPE);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    weft_array_release(in);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(undefined_operations)
{
    weft_context *ctx = make_ctx();
    /* A shift by the width. */
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_shl(weft_i32(p, 1), weft_arg(f, 0)));
    weft_acc *r = weft_map(f, xs);
    int32_t d[3] = {1, 31, 32};
    weft_array *in = vec(ctx, WEFT_I32, 3, d);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_ERR_UNDEFINED);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    weft_array_release(in);
    weft_program_free(p);

    /* A float to integer conversion out of range. */
    p = make_prog(ctx);
    weft_acc *ys = weft_param(p, WEFT_F64, 1);
    weft_fun *g = weft_fun1(p, WEFT_F64);
    weft_fun_return(g, weft_convert(weft_arg(g, 0), WEFT_I32));
    r = weft_map(g, ys);
    double e[2] = {1.5, 1e20};
    in = vec(ctx, WEFT_F64, 2, e);
    ck_assert_int_eq(compile_and_run(p, r, &in, 1), WEFT_ERR_UNDEFINED);
    weft_array_release(in);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(invalid_argument)
{
    weft_context *ctx = make_ctx();
    weft_array *a = NULL;
    int64_t sh[1] = {3};
    ck_assert_int_eq(
        weft_array_create(ctx, WEFT_F32, WEFT_MAX_RANK + 1, sh, &a),
        WEFT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(weft_array_create(ctx, 9999, 1, sh, &a),
                     WEFT_ERR_INVALID_ARGUMENT);
    ASSERT_NAMES(weft_last_error(), "weft_array_create");
    ck_assert_int_eq(weft_array_create(ctx, WEFT_F32, 1, sh, &a), WEFT_OK);
    char buf[4];
    ck_assert_int_eq(weft_array_read(a, 0, buf, sizeof buf),
                     WEFT_ERR_INVALID_ARGUMENT); /* needs 12 bytes */
    ck_assert_int_eq(weft_array_read(a, 1, buf, sizeof buf),
                     WEFT_ERR_INVALID_ARGUMENT); /* one leaf only */
    ASSERT_NAMES(weft_last_error(), "weft_array_read");
    weft_array_release(a);

    /* Builders: a parameter of a bad rank, a component of a pair that does
     * not exist. */
    weft_program *p = make_prog(ctx);
    ck_assert_ptr_null(weft_param(p, WEFT_F32, -1));
    ck_assert_int_ne(weft_program_status(p), WEFT_OK);
    ASSERT_NAMES(weft_program_error(p), "weft_param");
    weft_program_free(p);
    p = make_prog(ctx);
    weft_exp *pair[2] = {weft_i32(p, 1), weft_i32(p, 2)};
    ck_assert_ptr_null(weft_get(weft_tuple(p, 2, pair), 2));
    ck_assert_int_ne(weft_program_status(p), WEFT_OK);
    ASSERT_NAMES(weft_program_error(p), "weft_get");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(run_argument_errors)
{
    weft_context *ctx = make_ctx();
    weft_program *p = make_prog(ctx);
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_acc *ys = weft_param(p, WEFT_F32, 1);
    weft_acc *r = weft_zipwith(binop(p, WEFT_F32, weft_mul), xs, ys);
    weft_executable *exe = NULL;
    ck_assert_int_eq(weft_compile(p, &r, 1, &exe), WEFT_OK);
    ck_assert_int_eq(weft_executable_inputs(exe), 2);
    ck_assert_int_eq(weft_executable_outputs(exe), 1);

    float f[3] = {1, 2, 3};
    int32_t i[3] = {1, 2, 3};
    weft_array *fa = vec(ctx, WEFT_F32, 3, f);
    weft_array *ia = vec(ctx, WEFT_I32, 3, i);
    weft_array *ma = NULL;
    int64_t sh[2] = {1, 3};
    ck_assert_int_eq(weft_array_create(ctx, WEFT_F32, 2, sh, &ma), WEFT_OK);
    weft_array *out[2] = {NULL, NULL};

    weft_array *one[1] = {fa};
    ck_assert_int_eq(weft_run(exe, one, 1, out, 1), WEFT_ERR_ARGUMENT_COUNT);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    ck_assert_ptr_null(out[0]);
    weft_array *two[2] = {fa, fa};
    ck_assert_int_eq(weft_run(exe, two, 2, out, 2), WEFT_ERR_ARGUMENT_COUNT);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    ck_assert_ptr_null(out[0]);

    weft_array *wrong_type[2] = {fa, ia};
    ck_assert_int_eq(weft_run(exe, wrong_type, 2, out, 1),
                     WEFT_ERR_TYPE_MISMATCH);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    ck_assert_ptr_null(out[0]);
    weft_array *wrong_rank[2] = {ma, fa};
    ck_assert_int_eq(weft_run(exe, wrong_rank, 2, out, 1),
                     WEFT_ERR_RANK_MISMATCH);
    ASSERT_NAMES(weft_last_error(), "weft_run");
    ck_assert_ptr_null(out[0]);
    weft_array *nul[2] = {fa, NULL};
    ck_assert_int_eq(weft_run(exe, nul, 2, out, 1), WEFT_ERR_NULL_ARGUMENT);
    ck_assert_ptr_null(out[0]);

    /* And the executable still works. */
    ck_assert_int_eq(weft_run(exe, two, 2, out, 1), WEFT_OK);
    ck_assert_int_eq(weft_array_size(out[0]), 3);
    const float *o = weft_array_data(out[0], 0);
    ck_assert_float_eq(o[2], 9.0f);
    weft_array_release(out[0]);

    weft_array_release(fa);
    weft_array_release(ia);
    weft_array_release(ma);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* ---- backends ------------------------------------------------------------ */

START_TEST(backend_unknown)
{
    weft_backend b = WEFT_BACKEND_PTX;
    ck_assert_int_eq(weft_backend_from_name("quantum", &b),
                     WEFT_ERR_BACKEND_UNKNOWN);
    ASSERT_NAMES(weft_last_error(), "quantum");
    ck_assert_int_eq(weft_backend_from_name("Interp", &b), WEFT_OK);
    ck_assert_int_eq(b, WEFT_BACKEND_INTERP);
    ck_assert_int_eq(weft_backend_from_name("CPU", &b), WEFT_OK);
    ck_assert_int_eq(b, WEFT_BACKEND_CPU);
    ck_assert_int_eq(weft_backend_from_name("ptx", &b), WEFT_OK);
    ck_assert_int_eq(b, WEFT_BACKEND_PTX);

    ck_assert_int_eq(setenv("WEFT_BACKEND", "quantum", 1), 0);
    weft_config cfg = weft_config_default();
    weft_context *ctx = NULL;
    weft_status s = weft_context_create(&cfg, &ctx);
    unsetenv("WEFT_BACKEND");
    ck_assert_int_eq(s, WEFT_ERR_BACKEND_UNKNOWN);
    ASSERT_NAMES(weft_last_error(), "weft_context_create");
    ASSERT_NAMES(weft_last_error(), "quantum");

    /* WEFT_FLAG_NO_ENV ignores it. */
    ck_assert_int_eq(setenv("WEFT_BACKEND", "quantum", 1), 0);
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    s = weft_context_create(&cfg, &ctx);
    unsetenv("WEFT_BACKEND");
    ck_assert_int_eq(s, WEFT_OK);
    weft_context_free(ctx);
}
END_TEST

START_TEST(backend_unavailable)
{
    static const weft_backend bs[2] = {WEFT_BACKEND_CPU, WEFT_BACKEND_PTX};
    for (int k = 0; k < 2; k++) {
        weft_config cfg = weft_config_default();
        cfg.backend = bs[k];
        cfg.flags |= WEFT_FLAG_NO_ENV;
        weft_context *ctx = NULL;
        weft_status s = weft_context_create(&cfg, &ctx);
        ck_assert_msg(s == WEFT_OK || s == WEFT_ERR_BACKEND_UNAVAILABLE,
                      "backend %d: %s", (int)bs[k], weft_status_name(s));
        if (s == WEFT_OK) {
            ck_assert_int_eq(weft_context_backend(ctx), bs[k]);
            weft_context_free(ctx);
        } else {
            ck_assert_msg(strlen(weft_last_error()) > 0, "no message");
            ASSERT_NAMES(weft_last_error(), "weft_context_create");
        }
    }
}
END_TEST

START_TEST(free_null)
{
    weft_context_free(NULL);
    weft_program_free(NULL);
    weft_executable_free(NULL);
    weft_array_release(NULL);
    ck_assert_ptr_null(weft_acc_program(NULL));
    ck_assert_ptr_null(weft_exp_program(NULL));
    ck_assert_ptr_nonnull(weft_status_name(WEFT_ERR_INTERNAL));
    ck_assert_str_eq(weft_status_name(WEFT_OK), "WEFT_OK");
    ck_assert_str_eq(weft_status_name(WEFT_ERR_TYPE_MISMATCH),
                     "WEFT_ERR_TYPE_MISMATCH");
}
END_TEST

/* ---- allocation failure -------------------------------------------------- */

/* A test allocator: fails every request once `limit` have succeeded (limit
 * < 0: never), and keeps a header before each block holding its size, so
 * that it can count live bytes and check the sizes weft passes back. */
typedef struct counting {
    long limit;  /* successful allocations allowed; < 0: unlimited */
    long count;  /* successful allocations so far */
    long failed; /* requests refused */
    size_t live_bytes;
    long live_blocks;
    long size_errors; /* old_size that disagreed with the block's size */
} counting;

#define HDR 16 /* header: the size, keeping 16-byte alignment */

static void *counting_alloc(void *user, void *ptr, size_t old_size,
                            size_t new_size)
{
    counting *c = user;
    char *base = ptr ? (char *)ptr - HDR : NULL;
    size_t have = 0;
    if (base) {
        memcpy(&have, base, sizeof have);
        if (have != old_size) {
            c->size_errors++;
        }
    }
    if (new_size == 0) {
        if (base) {
            c->live_bytes -= have;
            c->live_blocks--;
            free(base);
        }
        return NULL;
    }
    if (c->limit >= 0 && c->count >= c->limit) {
        c->failed++;
        return NULL;
    }
    char *nb = realloc(base, new_size + HDR);
    if (!nb) {
        c->failed++;
        return NULL;
    }
    c->count++;
    memcpy(nb, &new_size, sizeof new_size);
    c->live_bytes += new_size - have;
    if (!base) {
        c->live_blocks++;
    }
    return nb + HDR;
}

/* A program over two f32 vectors (params 0 and 1) with a rank-0 result;
 * NULL when a builder call failed. */
typedef weft_acc *(*build_fn)(weft_program *p);

static weft_fun *fun_op2(weft_program *p, weft_type t,
                         weft_exp *(*op)(weft_exp *, weft_exp *))
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, op(weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* fold (+) 0 (zipWith (*) a b) */
static weft_acc *build_dotp(weft_program *p)
{
    weft_acc *a = weft_param(p, WEFT_F32, 1);
    weft_acc *b = weft_param(p, WEFT_F32, 1);
    return weft_fold(fun_op2(p, WEFT_F32, weft_add), weft_f32(p, 0),
                     weft_zipwith(fun_op2(p, WEFT_F32, weft_mul), a, b));
}

/* Many kinds of term: filter b by a > 10 (map, scanl', the, generate,
 * permute with ignore), a 3-point stencil, then an awhile doubling the
 * array until its sum reaches 1e6, and the sum of that. */
static weft_acc *build_rich(weft_program *p)
{
    weft_acc *a = weft_param(p, WEFT_F32, 1);
    weft_acc *b = weft_param(p, WEFT_F32, 1);
    weft_fun *pred = weft_fun1(p, WEFT_F32);
    weft_fun_return(pred, weft_cond(weft_gt(weft_arg(pred, 0), weft_f32(p, 10)),
                                    weft_i64(p, 1), weft_i64(p, 0)));
    weft_acc *keep = weft_map(pred, a);
    weft_acc *sc =
        weft_scanl_(fun_op2(p, WEFT_I64, weft_add), weft_i64(p, 0), keep);
    weft_acc *offs = weft_aget(sc, 0);
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_f32(p, 0));
    weft_acc *dflt =
        weft_generate(weft_index1(weft_the(weft_aget(sc, 1))), zero);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_arg(ix, 0);
    weft_fun_return(ix, weft_cond(weft_eq(weft_at(keep, i), weft_i64(p, 1)),
                                  weft_index1(weft_at(offs, i)),
                                  weft_ignore(p, 1)));
    weft_fun *first = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(first, weft_arg(first, 0));
    weft_acc *filtered = weft_permute(first, dflt, ix, b);

    weft_fun *sum3 = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_fun_return(sum3,
                    weft_add(weft_add(weft_arg(sum3, 0), weft_arg(sum3, 1)),
                             weft_arg(sum3, 2)));
    static const int window[1] = {3};
    weft_boundary clamp = {WEFT_BOUNDARY_CLAMP, NULL};
    weft_acc *smooth = weft_stencil(sum3, window, clamp, filtered);

    weft_fun *add = fun_op2(p, WEFT_F32, weft_add);
    weft_afun *cond = weft_afun_like(smooth);
    weft_fun *small = weft_fun1(p, WEFT_F32);
    weft_fun_return(small, weft_lt(weft_arg(small, 0), weft_f32(p, 1e6f)));
    weft_afun_return(cond, weft_map(small, weft_fold_all(add, weft_f32(p, 0),
                                                         weft_afun_arg(cond))));
    weft_afun *body = weft_afun_like(smooth);
    weft_fun *twice = weft_fun1(p, WEFT_F32);
    weft_fun_return(twice, weft_add(weft_arg(twice, 0), weft_arg(twice, 0)));
    weft_afun_return(body, weft_map(twice, weft_afun_arg(body)));
    return weft_fold_all(add, weft_f32(p, 0), weft_awhile(cond, body, smooth));
}

/* One complete program (context, two input arrays, program, compile, run,
 * read the rank-0 f32 result) under allocator c.  Returns the first
 * failing status; everything is freed on every path. */
static weft_status attempt(counting *c, build_fn build, double *result)
{
    enum { N = 100 };
    float xs[N], ys[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)i;
        ys[i] = 0.5f;
    }
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    cfg.alloc = counting_alloc;
    cfg.alloc_user = c;
    weft_context *ctx = NULL;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    weft_array *in[2] = {NULL, NULL}, *out[1] = {NULL};
    int64_t n = N;
    const void *dx[1] = {xs}, *dy[1] = {ys};

    weft_status s = weft_context_create(&cfg, &ctx);
    if (s) {
        goto done;
    }
    if ((s = weft_array_from_host(ctx, WEFT_F32, 1, &n, dx, &in[0])) ||
        (s = weft_array_from_host(ctx, WEFT_F32, 1, &n, dy, &in[1])) ||
        (s = weft_program_create(ctx, &p))) {
        goto done;
    }
    weft_acc *r = build(p);
    if ((s = weft_program_status(p))) {
        ck_assert_ptr_null(r);
        goto done;
    }
    ck_assert_ptr_nonnull(r);
    if ((s = weft_compile(p, &r, 1, &exe))) {
        ck_assert_ptr_null(exe);
        goto done;
    }
    if ((s = weft_run(exe, in, 2, out, 1))) {
        ck_assert_ptr_null(out[0]);
        goto done;
    }
    *result = *(const float *)weft_array_data(out[0], 0);
done:
    if (s != WEFT_OK) {
        ck_assert_msg(strlen(weft_last_error()) > 0, "no message for %s",
                      weft_status_name(s));
    }
    weft_array_release(out[0]);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    weft_context_free(ctx);
    return s;
}

/* Run `build` with no limit, then with the N-th allocation failing for
 * N = 0, 1, 2, ... until it succeeds; `want` is the expected result. */
static void fail_each_allocation(build_fn build, double want)
{
    counting c = {.limit = -1};
    double r = 0;
    ck_assert_msg(attempt(&c, build, &r) == WEFT_OK, "%s", weft_last_error());
    ck_assert_double_eq(r, want);
    ck_assert_int_eq(c.live_blocks, 0);
    ck_assert_uint_eq(c.live_bytes, 0);
    ck_assert_int_eq(c.size_errors, 0);
    long needed = c.count;
    ck_assert_int_gt(needed, 0);

    long n;
    for (n = 0; n < needed + 100; n++) {
        counting k = {.limit = n};
        r = 0;
        weft_status s = attempt(&k, build, &r);
        ck_assert_msg(k.live_blocks == 0 && k.live_bytes == 0,
                      "limit %ld: %ld blocks (%zu bytes) still live", n,
                      k.live_blocks, k.live_bytes);
        ck_assert_msg(k.size_errors == 0, "limit %ld: %ld wrong sizes", n,
                      k.size_errors);
        if (s == WEFT_OK) {
            ck_assert_double_eq(r, want);
            break;
        }
        ck_assert_msg(s == WEFT_ERR_OUT_OF_MEMORY,
                      "limit %ld: %s instead of WEFT_ERR_OUT_OF_MEMORY (%s)", n,
                      weft_status_name(s), weft_last_error());
        ck_assert_int_gt(k.failed, 0);
    }
    ck_assert_msg(n < needed + 100, "never succeeded");
}

START_TEST(allocation_failure)
{
    fail_each_allocation(build_dotp, 0.5 * 99 * 100 / 2);
}
END_TEST

START_TEST(allocation_failure_rich)
{
    /* 89 elements of b kept (a = 11 .. 99), each 0.5; the clamped 3-point
     * sums are all 1.5, total 133.5; doubled 13 times to pass 1e6. */
    fail_each_allocation(build_rich, 133.5 * 8192);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *b = tcase_create("builder");
    tcase_add_test(b, null_handle_and_stickiness);
    tcase_add_test(b, null_to_api_calls);
    tcase_add_test(b, array_null_arguments);
    tcase_add_test(b, type_mismatch);
    tcase_add_test(b, rank_mismatch);
    tcase_add_test(b, program_mismatch);
    tcase_add_test(b, wrong_arity);
    tcase_add_test(b, stencil_window);
    tcase_add_test(b, incomplete_function);
    tcase_add_test(b, argument_out_of_scope);
    suite_add_tcase(s, b);

    TCase *r = tcase_create("run");
    tcase_add_test(r, reshape_size);
    tcase_add_test(r, slice_index);
    tcase_add_test(r, fold1_empty);
    tcase_add_test(r, index_out_of_bounds);
    tcase_add_test(r, divide_by_zero);
    tcase_add_test(r, segments);
    tcase_add_test(r, bad_shape);
    tcase_add_test(r, undefined_operations);
    tcase_add_test(r, invalid_argument);
    tcase_add_test(r, run_argument_errors);
    suite_add_tcase(s, r);

    TCase *m = tcase_create("misc");
    tcase_add_test(m, backend_unknown);
    tcase_add_test(m, backend_unavailable);
    tcase_add_test(m, free_null);
    tcase_add_test(m, allocation_failure);
    tcase_add_test(m, allocation_failure_rich);
    tcase_set_timeout(m, 60);
    suite_add_tcase(s, m);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(errors_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
