/*
 * tests/test_cancel.c: stopping a running program (weft_cancel, and the
 * deadline weft_config.timeout_ms), on the interpreter and the CPU; CMake
 * builds it again as test_cancel_ptx (-DDT_BACKEND=WEFT_BACKEND_PTX),
 * which runs the same cases on a GPU and is skipped where there is none.
 *
 *   endless_awhile      an awhile whose condition is always true
 *   endless_while       a map whose element function is an endless scalar
 *                       while loop (the kernel polls its cancel word)
 *   long_fold           a fold of many elements (the CPU's workers look
 *                       between chunks; the interpreter between terms; on
 *                       a GPU, whose kernels run to their end, each element
 *                       is a long while loop)
 *   long_staged_while   a generate whose elements are long while loops
 *                       over an array read at the counter (on a GPU
 *                       staged in shared-memory tiles: the blocks poll
 *                       between tiles and leave together)
 * each stopped by weft_cancel from another thread after about 50 ms, and
 * by a deadline of 300 ms: the status is WEFT_ERR_CANCELLED, the run ends
 * soon after, and the next run on the same context gives correct values.
 *
 *   cancel_semantics    a cancel made before a run does not affect it;
 *                       weft_cancel(NULL) does nothing; timeout_ms and
 *                       $WEFT_TIMEOUT_MS are checked at
 *                       weft_context_create, and the variable sets a
 *                       deadline
 */
#include <pthread.h>
#include <time.h>

#ifdef DT_BACKEND /* set by CMake for test_cancel_ptx only */
#define CANCEL_PTX 1
#endif

#include "tu.h"

#ifdef CANCEL_PTX
static const weft_backend backends[] = {WEFT_BACKEND_PTX};
#else
static const weft_backend backends[] = TU_BACKENDS;
#endif
enum { NBACKENDS = (int)(sizeof backends / sizeof *backends) };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A context on backend b with an optional deadline. */
static weft_context *open_ctx(weft_backend b, double timeout_ms)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    cfg.timeout_ms = timeout_ms;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

/* ---- the programs -------------------------------------------------------- */

/* awhile (\x -> unit (x !! 0 < limit)) (map (+1)) over an i64 vector. */
static weft_executable *awhile_exe(weft_context *ctx, int64_t limit)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_afun *cond = weft_afun_like(xs);
    weft_acc *cx = weft_afun_arg(cond);
    weft_afun_return(cond, weft_unit(weft_lt(weft_at_linear(cx, weft_i64(p, 0)),
                                             weft_i64(p, limit))));
    weft_afun *body = weft_afun_like(xs);
    weft_fun *inc = weft_fun1(p, WEFT_I64);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i64(p, 1)));
    weft_afun_return(body, weft_map(inc, weft_afun_arg(body)));
    weft_acc *r = weft_awhile(cond, body, xs);
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_program_free(p);
    return exe;
}

/* map (\x -> while (\s -> s /= stop) (\s -> s + step) x): with stop -1 and
 * step 2 over even x it never ends; with stop 100 and step 1 over x <= 100
 * it gives 100. */
static weft_executable *while_exe(weft_context *ctx, int64_t stop, int64_t step)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_fun *c = weft_fun1(p, WEFT_I64);
    weft_fun_return(c, weft_ne(weft_arg(c, 0), weft_i64(p, stop)));
    weft_fun *b = weft_fun1(p, WEFT_I64);
    weft_fun_return(b, weft_add(weft_arg(b, 0), weft_i64(p, step)));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, weft_while(c, b, weft_arg(f, 0)));
    weft_acc *r = weft_map(f, xs);
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_program_free(p);
    return exe;
}

/* stencil 3x3 (clamp) of (\w -> while (\s -> s /= -1) (\s -> s + 2)
 * centre) over a rank-2 array of even numbers: it never ends.  On the GPU
 * it runs in shared-memory tiles with barriers (ptx/stencil.c): a thread
 * that leaves its loop on cancellation must still meet the others. */
static weft_executable *stencil_while_exe(weft_context *ctx)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I64, 2);
    weft_fun *c = weft_fun1(p, WEFT_I64);
    weft_fun_return(c, weft_ne(weft_arg(c, 0), weft_i64(p, -1)));
    weft_fun *b = weft_fun1(p, WEFT_I64);
    weft_fun_return(b, weft_add(weft_arg(b, 0), weft_i64(p, 2)));
    weft_type t9[9];
    for (int i = 0; i < 9; i++) {
        t9[i] = WEFT_I64;
    }
    weft_fun *f = weft_fun_create(p, 9, t9);
    weft_fun_return(f, weft_while(c, b, weft_arg(f, 4)));
    weft_boundary clamp = {WEFT_BOUNDARY_CLAMP, NULL};
    weft_acc *r = weft_stencil(f, (const int[]){3, 3}, clamp, xs);
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_program_free(p);
    return exe;
}

/* foldAll (+) 0 (generate n (\i -> g i)), g i = (v -> v * 3 ^ i) applied
 * 8 times to i: as a chain of 8 terms (inner 0), or as a while loop of
 * `inner` iterations.  With n large the chain runs for seconds in kernels
 * that have no loop to poll (the CPU's workers look between chunks); on a
 * GPU, whose kernels run to their end, the long case is a while loop of
 * many iterations instead.  The sum is checked for a small n. */
static weft_executable *fold_exe(weft_context *ctx, int64_t n, int64_t inner)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_exp *v = i;
    if (inner == 0) {
        for (int k = 0; k < 8; k++) {
            v = weft_bxor(weft_mul(v, weft_i64(p, 3)), i);
        }
    } else {
        weft_type kv_c[2] = {WEFT_I64, WEFT_I64};
        weft_type kv = weft_type_tuple(ctx, 2, kv_c);
        weft_fun *c = weft_fun1(p, kv);
        weft_fun_return(
            c, weft_lt(weft_get(weft_arg(c, 0), 0), weft_i64(p, inner)));
        weft_fun *b = weft_fun1(p, kv);
        weft_exp *s = weft_arg(b, 0);
        weft_exp *nx[2] = {
            weft_add(weft_get(s, 0), weft_i64(p, 1)),
            weft_bxor(weft_mul(weft_get(s, 1), weft_i64(p, 3)), i)};
        weft_fun_return(b, weft_tuple(p, 2, nx));
        weft_exp *init[2] = {weft_i64(p, 0), i};
        v = weft_get(weft_while(c, b, weft_tuple(p, 2, init)), 1);
    }
    weft_fun_return(g, v);
    weft_fun *add = weft_fun2(p, WEFT_I64, WEFT_I64);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *r = weft_fold_all(add, weft_i64(p, 0),
                                weft_generate(weft_index1(weft_i64(p, n)), g));
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_program_free(p);
    return exe;
}

/* generate (n) (\i -> while (j < size a) (j + 1, s + a!j * i) (0, 0)):
 * the staged loop of the GPU (codegen/stage.c: every block polls the
 * cancel word between tiles and leaves together), long when n and a are
 * large. */
static weft_executable *staged_exe(weft_context *ctx, int64_t n)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_type kv_c[2] = {WEFT_I64, WEFT_I64};
    weft_type kv = weft_type_tuple(ctx, 2, kv_c);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_fun *c = weft_fun1(p, kv);
    weft_fun_return(c, weft_lt(weft_get(weft_arg(c, 0), 0), weft_size(a)));
    weft_fun *b = weft_fun1(p, kv);
    weft_exp *s = weft_arg(b, 0), *j = weft_get(s, 0);
    weft_exp *nx[2] = {
        weft_add(j, weft_i64(p, 1)),
        weft_add(
            weft_get(s, 1),
            weft_mul(weft_convert(weft_at(a, weft_index1(j)), WEFT_I64), i))};
    weft_fun_return(b, weft_tuple(p, 2, nx));
    weft_exp *init[2] = {weft_i64(p, 0), weft_i64(p, 0)};
    weft_fun_return(g, weft_get(weft_while(c, b, weft_tuple(p, 2, init)), 1));
    weft_acc *r = weft_generate(weft_index1(weft_i64(p, n)), g);
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_program_free(p);
    return exe;
}

static int64_t fold_expect(int64_t n)
{
    uint64_t sum = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)i;
        for (int k = 0; k < 8; k++) {
            v = (v * 3) ^ (uint64_t)i;
        }
        sum += v;
    }
    return (int64_t)sum;
}

/* ---- cancelling from another thread ------------------------------------- */

typedef struct canceller {
    weft_context *ctx;
    double after_ms;
    double at_ms; /* when it cancelled */
} canceller;

static void *cancel_main(void *arg)
{
    canceller *c = arg;
    struct timespec ts = {0, (long)(c->after_ms * 1e6)};
    nanosleep(&ts, NULL);
    c->at_ms = now_ms();
    weft_cancel(c->ctx);
    return NULL;
}

/* The deadline of the deadline cases: long enough that the finite runs of
 * expect_usable end well before it, even in a sanitizer build on a busy
 * machine. */
#define DEADLINE_MS 300.0

/* How long a cancelled run may go on after the cancel: generous, the test
 * machine may be busy. */
#define LATENCY_MS 5000.0

/* Run exe on in (one input), cancelled from another thread after 50 ms
 * (deadline 0) or by the context's deadline: expect WEFT_ERR_CANCELLED, no
 * output, and an end soon after. */
static void expect_cancelled(weft_backend b, weft_context *ctx,
                             weft_executable *exe, weft_array *in,
                             bool by_deadline, const char *what)
{
    canceller c = {ctx, 50.0, 0};
    pthread_t th;
    double t0 = now_ms();
    if (!by_deadline) {
        ck_assert_int_eq(pthread_create(&th, NULL, cancel_main, &c), 0);
    }
    weft_array *out = (weft_array *)1;
    weft_status s = weft_run(exe, &in, in ? 1 : 0, &out, 1);
    double t1 = now_ms();
    if (!by_deadline) {
        pthread_join(th, NULL);
    }
    ck_assert_msg(s == WEFT_ERR_CANCELLED, "%s %s (%s): %s: %s",
                  tu_backend_name(b), what,
                  by_deadline ? "deadline" : "weft_cancel", weft_status_name(s),
                  weft_last_error());
    ck_assert_ptr_null(out);
    ck_assert_msg(strstr(weft_last_error(),
                         by_deadline ? "deadline" : "weft_cancel") != NULL,
                  "message: %s", weft_last_error());
    double from = by_deadline ? t0 + DEADLINE_MS : c.at_ms;
    ck_assert_msg(t1 - from < LATENCY_MS, "%s %s: stopped %.0f ms late",
                  tu_backend_name(b), what, t1 - from);
}

/* The finite programs on ctx give the right values (after a cancel). */
static void expect_usable(weft_context *ctx)
{
    weft_array *xs = tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(2, 5, 7));
    weft_array *xs32 = tu_arr_i(ctx, WEFT_I32, 1, TU_SH(3), TU_I(2, 5, 7));
    weft_array *out = NULL;
    weft_executable *e = awhile_exe(ctx, 10);
    TU_OK(weft_run(e, &xs, 1, &out, 1));
    TU_CHECK_I(ctx, out, 0, 1, TU_SH(3), TU_I(10, 13, 15));
    weft_array_release(out);
    weft_executable_free(e);
    e = while_exe(ctx, 100, 1);
    TU_OK(weft_run(e, &xs, 1, &out, 1));
    TU_CHECK_I(ctx, out, 0, 1, TU_SH(3), TU_I(100, 100, 100));
    weft_array_release(out);
    weft_executable_free(e);
    /* the staged loop: element i is i (2 + 5 + 7) */
    e = staged_exe(ctx, 4);
    TU_OK(weft_run(e, &xs32, 1, &out, 1));
    TU_CHECK_I(ctx, out, 0, 1, TU_SH(4), TU_I(0, 14, 28, 42));
    weft_array_release(out);
    weft_executable_free(e);
    weft_array_release(xs32);
    for (int64_t inner = 0; inner <= 8; inner += 8) {
        e = fold_exe(ctx, 1000, inner);
        TU_OK(weft_run(e, NULL, 0, &out, 1));
        TU_CHECK_I(ctx, out, 0, 0, NULL, TU_I(fold_expect(1000)));
        weft_array_release(out);
        weft_executable_free(e);
    }
    weft_array_release(xs);
}

/* Elements of the endless maps (even, so never -1) and of the long fold
 * (the interpreter keeps its generate in memory: fewer). */
static weft_array *evens(weft_context *ctx)
{
    int64_t n = 1000;
    weft_array *a;
    TU_OK(weft_array_create(ctx, WEFT_I64, 1, &n, &a));
    int64_t *d = weft_array_data(a, 0);
    for (int64_t i = 0; i < n; i++) {
        d[i] = 2 * i;
    }
    return a;
}

/* The evens of evens() as a 40 x 25 grid. */
static weft_array *evens_grid(weft_context *ctx)
{
    int64_t sh[2] = {40, 25};
    weft_array *a;
    TU_OK(weft_array_create(ctx, WEFT_I64, 2, sh, &a));
    int64_t *d = weft_array_data(a, 0);
    for (int64_t i = 0; i < sh[0] * sh[1]; i++) {
        d[i] = 2 * i;
    }
    return a;
}

/* The array of the long staged loop: 2^22 i32 (zero). */
static weft_array *long_a(weft_context *ctx)
{
    int64_t n = (int64_t)1 << 22;
    weft_array *a;
    TU_OK(weft_array_create(ctx, WEFT_I32, 1, &n, &a));
    return a;
}

static int64_t long_n(weft_backend b)
{
    return b == WEFT_BACKEND_INTERP ? (int64_t)4 << 20
           : b == WEFT_BACKEND_PTX  ? (int64_t)1 << 24
                                    : (int64_t)1 << 40;
}

static void run_case(int which, bool by_deadline)
{
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_backend b = backends[bi];
        weft_context *ctx = open_ctx(b, by_deadline ? DEADLINE_MS : 0);
        weft_array *xs = which == 3 ? evens_grid(ctx) : evens(ctx);
        weft_executable *exe;
        const char *what;
        if (which == 3) {
            exe = stencil_while_exe(ctx);
            what = "endless stencil";
        } else if (which == 0) {
            exe = awhile_exe(ctx, INT64_MAX);
            what = "endless awhile";
        } else if (which == 1) {
            exe = while_exe(ctx, -1, 2);
            what = "endless while";
        } else if (which == 2) {
            exe = fold_exe(ctx, long_n(b),
                           b == WEFT_BACKEND_PTX ? (int64_t)1 << 30 : 0);
            what = "long fold";
        } else {
            /* 4: 2^20 elements of 2^22 trips each */
            exe = staged_exe(ctx, (int64_t)1 << 20);
            what = "long staged while";
            weft_array_release(xs);
            xs = long_a(ctx);
        }
        expect_cancelled(b, ctx, exe, which == 2 ? NULL : xs, by_deadline,
                         what);
        /* the same executable stops again on the next run */
        expect_cancelled(b, ctx, exe, which == 2 ? NULL : xs, by_deadline,
                         what);
        weft_executable_free(exe);
        if (!by_deadline) {
            expect_usable(ctx);
        } else {
            /* finite runs well inside the deadline still work */
            expect_usable(ctx);
        }
        weft_array_release(xs);
        weft_context_free(ctx);
    }
}

START_TEST(endless_awhile)
{
    run_case(0, false);
    run_case(0, true);
}
END_TEST

START_TEST(endless_while)
{
    run_case(1, false);
    run_case(1, true);
}
END_TEST

START_TEST(endless_stencil)
{
    run_case(3, false);
    run_case(3, true);
}
END_TEST

START_TEST(long_fold)
{
    run_case(2, false);
    run_case(2, true);
}
END_TEST

START_TEST(long_staged_while)
{
    run_case(4, false);
    run_case(4, true);
}
END_TEST

START_TEST(cancel_semantics)
{
    weft_cancel(NULL);
    for (int bi = 0; bi < NBACKENDS; bi++) {
        weft_context *ctx = open_ctx(backends[bi], 0);
        /* a cancel affects runs in progress, not later ones */
        weft_cancel(ctx);
        weft_cancel(ctx);
        expect_usable(ctx);
        weft_context_free(ctx);
    }
    weft_config cfg = weft_config_default();
    cfg.flags |= WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    cfg.timeout_ms = -1;
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&cfg, &ctx));
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(weft_last_error(), "timeout_ms") != NULL, "%s",
                  weft_last_error());
    cfg.timeout_ms = NAN;
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&cfg, &ctx));
    /* $WEFT_TIMEOUT_MS: checked, and a deadline for every run */
    cfg = weft_config_default();
    cfg.backend = backends[0];
    setenv("WEFT_TIMEOUT_MS", "soon", 1);
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&cfg, &ctx));
    ck_assert_msg(strstr(weft_last_error(), "WEFT_TIMEOUT_MS") != NULL, "%s",
                  weft_last_error());
    setenv("WEFT_TIMEOUT_MS", "300", 1);
    TU_OK(weft_context_create(&cfg, &ctx));
    unsetenv("WEFT_TIMEOUT_MS");
    weft_executable *exe = awhile_exe(ctx, INT64_MAX);
    weft_array *xs = evens(ctx);
    expect_cancelled(backends[0], ctx, exe, xs, true, "endless awhile");
    weft_array_release(xs);
    weft_executable_free(exe);
    weft_context_free(ctx);
    ck_assert_str_eq(weft_status_name(WEFT_ERR_CANCELLED),
                     "WEFT_ERR_CANCELLED");
}
END_TEST

static Suite *cancel_suite(void)
{
    Suite *s = suite_create("cancel");
    TCase *t = tcase_create("cancel");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, endless_awhile);
    tcase_add_test(t, endless_while);
    tcase_add_test(t, endless_stencil);
    tcase_add_test(t, long_fold);
    tcase_add_test(t, long_staged_while);
    tcase_add_test(t, cancel_semantics);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(cancel_suite)
