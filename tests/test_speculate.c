/*
 * tests/test_speculate.c: awhile's speculation (lib/interp.c,
 * "Speculation"), white-box, on the host.
 *
 * The walker speculates only for a backend whose arrays live on a device
 * (fe_interp_device), and only the ptx backend is one; on a GPU the
 * differential tests (test_ptx_diff: awhile, awhile_fail,
 * permute_report_first; test_cancel_ptx) cover it end to end.  Here the
 * same walker runs with no hook at all, so that the interpreter computes
 * every operation while awhile queues each body before it knows the
 * condition, and every result and status must be the plain
 * interpreter's (fe_interp):
 *
 *   iterations    0, 1 and many iterations, both orders (a condition the
 *                 walker computes on the host, one it would leave to a
 *                 kernel): the same arrays, every body speculated, those
 *                 of the iterations kept and exactly one dropped per
 *                 awhile that ends by its condition (fe_walk_ops.settle),
 *                 also when settle says a body was spoiled (it runs
 *                 again, not speculated);
 *   late_failure  a body that fails only in the iteration after the last
 *                 is not reported; one that fails in a real iteration
 *                 reports the interpreter's status and message;
 *   cancel        weft_cancel during an endless awhile stops it with
 *                 WEFT_ERR_CANCELLED.
 *
 * What only a GPU can check: the prefetch of the state's small arrays
 * (runtime-gpu/mem.c, "Prefetches"), the permute reports the backend
 * holds back and drops (runtime-gpu/backend.c, "Held reports"), and that
 * the device no longer waits at every iteration (bench/gpu, jacobi and
 * kmeans).
 */
#include "tu.h"

#include "fe.h"

/* What the walker reported through fe_walk_ops. */
typedef struct seen {
    int held;      /* held() calls */
    int keeps;     /* settle() calls that keep */
    int drops;     /* settle() calls that drop */
    int cancel_at; /* hook call on which to call weft_cancel (0: never) */
    bool spoil;    /* settle says every third body must run again */
    int calls;     /* hook calls */
    weft_context *ctx;
} seen;

/* Numbers a speculative body's first report would get: here the bodies
 * so far, so that settle's n says which body it settles. */
static int seen_held(void *user)
{
    return ((seen *)user)->held++;
}

static bool seen_settle(void *user, int n, bool keep)
{
    seen *s = user;
    ck_assert_int_eq(n, s->held - 1); /* the last body, once */
    ck_assert_int_eq(s->keeps + s->drops, n);
    if (keep) {
        s->keeps++;
    } else {
        s->drops++;
    }
    /* every third body that counts spoiled: run again */
    return keep && s->spoil && s->keeps % 3 == 0;
}

/* Computes nothing (the interpreter does); cancels the run on call
 * cancel_at. */
static weft_status seen_hook(void *user, fe_ix *ix, const fe_term *t,
                             weft_array **out, bool *handled)
{
    (void)ix;
    (void)t;
    (void)out;
    seen *s = user;
    if (++s->calls == s->cancel_at) {
        weft_cancel(s->ctx);
    }
    *handled = false;
    return WEFT_OK;
}

static const fe_walk_ops ops = {
    .hook = seen_hook, .held = seen_held, .settle = seen_settle};

static weft_context *interp_ctx(void)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags = WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    ck_assert_int_eq(weft_context_create(&cfg, &ctx), WEFT_OK);
    return ctx;
}

/* awhile over (a, n) from (a, 0) while n < lim (kernel_cond: as a map
 * over n, else unit (the n < the lim)): a = map (+1) (backpermute a
 * reading a ! n), n = n + 1.  The body fails when n reaches size a. */
static weft_executable *loop_exe(weft_context *ctx, bool kernel_cond)
{
    weft_program *p = NULL;
    ck_assert_int_eq(weft_program_create(ctx, &p), WEFT_OK);
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *lim = weft_param(p, WEFT_I32, 0);
    weft_acc *init[2] = {a, weft_unit(weft_i32(p, 0))};
    weft_acc *state = weft_atuple(p, 2, init);
    weft_afun *cond = weft_afun_like(state);
    weft_acc *cn = weft_aget(weft_afun_arg(cond), 1);
    if (kernel_cond) {
        weft_fun *below = weft_fun1(p, WEFT_I32);
        weft_fun_return(below, weft_lt(weft_arg(below, 0), weft_the(lim)));
        weft_afun_return(cond, weft_map(below, cn));
    } else {
        weft_afun_return(cond, weft_unit(weft_lt(weft_the(cn), weft_the(lim))));
    }
    weft_afun *body = weft_afun_like(state);
    weft_acc *ba = weft_aget(weft_afun_arg(body), 0);
    weft_exp *n = weft_the(weft_aget(weft_afun_arg(body), 1));
    weft_fun *at_n = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(at_n, weft_index1(weft_convert(n, WEFT_I64)));
    weft_fun *inc = weft_fun1(p, WEFT_I32);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i32(p, 1)));
    weft_acc *next[2] = {
        weft_map(inc, weft_backpermute(weft_shape(ba), at_n, ba)),
        weft_unit(weft_add(n, weft_i32(p, 1)))};
    weft_afun_return(body, weft_atuple(p, 2, next));
    weft_acc *r = weft_awhile(cond, body, state);
    weft_acc *res[2] = {weft_aget(r, 0), weft_aget(r, 1)};
    weft_executable *exe = NULL;
    ck_assert_msg(weft_compile(p, res, 2, &exe) == WEFT_OK, "%s",
                  weft_last_error());
    weft_program_free(p);
    return exe;
}

/* The inputs: a = 0, 10, 20, ... (m elements), lim. */
static void loop_inputs(weft_context *ctx, int64_t m, int32_t lim,
                        weft_array **in)
{
    int32_t *v = calloc((size_t)(m > 0 ? m : 1), sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < m; i++) {
        v[i] = (int32_t)(10 * i);
    }
    ck_assert_int_eq(weft_array_from_host(ctx, WEFT_I32, 1, &m,
                                          (const void *const[]){v}, &in[0]),
                     WEFT_OK);
    ck_assert_int_eq(weft_array_from_host(ctx, WEFT_I32, 0, NULL,
                                          (const void *const[]){&lim}, &in[1]),
                     WEFT_OK);
    free(v);
}

/* Run exe on (m, lim) by the interpreter and by the speculating walker:
 * the same status, message and outputs.  Returns the status; *sp tells
 * what the walker did. */
static weft_status both(weft_context *ctx, weft_executable *exe, int64_t m,
                        int32_t lim, bool spoil, seen *sp)
{
    weft_array *in[2], *want[2] = {NULL}, *got[2] = {NULL};
    loop_inputs(ctx, m, lim, in);
    weft_status sw = fe_interp(ctx, &exe->core, in, want, NULL, NULL);
    char msg[FE_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", weft_last_error());
    *sp = (seen){.ctx = ctx, .spoil = spoil};
    weft_status sg =
        fe_interp_device(ctx, &exe->core, in, got, NULL, NULL, &ops, sp);
    ck_assert_msg(sg == sw, "m %lld lim %d: %s (%s), expected %s (%s)",
                  (long long)m, lim, weft_status_name(sg), weft_last_error(),
                  weft_status_name(sw), msg);
    if (sw != WEFT_OK) {
        ck_assert_str_eq(weft_last_error(), msg);
    }
    for (int o = 0; o < 2; o++) {
        ck_assert(sw != WEFT_OK || (want[o] && got[o]));
        if (sw != WEFT_OK) {
            ck_assert_ptr_null(got[o]);
            continue;
        }
        int64_t n = weft_array_size(want[o]);
        ck_assert_int_eq(weft_array_size(got[o]), n);
        ck_assert_int_eq(memcmp(weft_array_data(want[o], 0),
                                weft_array_data(got[o], 0),
                                (size_t)n * sizeof(int32_t)),
                         0);
    }
    tu_release_all(want, 2);
    tu_release_all(got, 2);
    tu_release_all(in, 2);
    return sw;
}

START_TEST(iterations)
{
    weft_context *ctx = interp_ctx();
    for (int k = 0; k < 2; k++) {
        weft_executable *exe = loop_exe(ctx, k == 1);
        static const int32_t lims[] = {0, 1, 2, 37};
        for (size_t i = 0; i < sizeof lims / sizeof *lims; i++) {
            for (int spoil = 0; spoil < 2; spoil++) {
                /* spoiled bodies run again: the same results */
                seen sp;
                ck_assert_int_eq(both(ctx, exe, 40, lims[i], spoil, &sp),
                                 WEFT_OK);
                ck_assert_int_eq(sp.keeps, lims[i]);
                ck_assert_int_eq(sp.drops, 1); /* the body after the last */
            }
        }
        /* every iteration makes each element a[n] + 1, with a[n] the
         * previous iteration's value (n of them): after 37, all are 37 */
        weft_array *in[2], *out[2] = {NULL};
        loop_inputs(ctx, 40, 37, in);
        seen sp = {.ctx = ctx};
        ck_assert_int_eq(
            fe_interp_device(ctx, &exe->core, in, out, NULL, NULL, &ops, &sp),
            WEFT_OK);
        ck_assert_int_eq(*(const int32_t *)weft_array_data(out[1], 0), 37);
        const int32_t *a = weft_array_data(out[0], 0);
        for (int j = 0; j < 40; j++) {
            ck_assert_int_eq(a[j], 37);
        }
        tu_release_all(out, 2);
        tu_release_all(in, 2);
        weft_executable_free(exe);
    }
    weft_context_free(ctx);
}
END_TEST

START_TEST(late_failure)
{
    weft_context *ctx = interp_ctx();
    for (int k = 0; k < 2; k++) {
        weft_executable *exe = loop_exe(ctx, k == 1);
        seen sp;
        /* the body on n == 5 reads a ! 5 of 5 elements: after the last */
        ck_assert_int_eq(both(ctx, exe, 5, 5, false, &sp), WEFT_OK);
        ck_assert_int_eq(sp.keeps, 5);
        ck_assert_int_eq(sp.drops, 1);
        /* ... and in a real iteration: reported, nothing dropped, also
         * when that body was spoiled and runs again (the sixth) */
        for (int spoil = 0; spoil < 2; spoil++) {
            ck_assert_int_eq(both(ctx, exe, 5, 6, spoil, &sp),
                             WEFT_ERR_OUT_OF_BOUNDS);
            ck_assert_int_eq(sp.keeps, 6);
            ck_assert_int_eq(sp.drops, 0);
        }
        weft_executable_free(exe);
    }
    weft_context_free(ctx);
}
END_TEST

START_TEST(cancel)
{
    weft_context *ctx = interp_ctx();
    for (int k = 0; k < 2; k++) {
        weft_executable *exe = loop_exe(ctx, k == 1);
        weft_array *in[2], *out[2] = {NULL};
        /* would fail at n 1000, long after the cancel */
        loop_inputs(ctx, 1000, INT32_MAX, in);
        for (int at = 1; at <= 50; at += 7) {
            seen sp = {.ctx = ctx, .cancel_at = at};
            fe_cancel c;
            fe_cancel_begin(ctx, &c);
            weft_status s =
                fe_interp_device(ctx, &exe->core, in, out, &c, NULL, &ops, &sp);
            ck_assert_msg(s == WEFT_ERR_CANCELLED, "%s: %s",
                          weft_status_name(s), weft_last_error());
            ck_assert_ptr_null(out[0]);
            ck_assert_int_ge(sp.calls, at);
        }
        tu_release_all(in, 2);
        weft_executable_free(exe);
    }
    weft_context_free(ctx);
}
END_TEST

static Suite *speculate_suite(void)
{
    Suite *s = suite_create("speculate");
    TCase *t = tcase_create("awhile");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, iterations);
    tcase_add_test(t, late_failure);
    tcase_add_test(t, cancel);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(speculate_suite)
