/*
 * tests/test_fuzz_found.c: regressions for what the differential fuzzer
 * (tests/fuzz/, docs/fuzzing.md) found, each reduced by its shrinker and
 * then by hand.  Every case runs on the interpreter and, where LLVM is
 * built, on the CPU backend, and names the fuzzer seed that found it.
 */
#include "tu.h"

static const weft_backend backends[] = TU_BACKENDS;
enum { NBACKEND = sizeof backends / sizeof backends[0] };

/* Seed 50194 (and 2237, 2404, 2511): a scalar term shared by an array
 * operation and a scalar term under `unit`,
 *     let sh = index1 n in unit (generate sh (\_ -> 7) ! sh)
 * was bound at the meet of its uses (inside unit's expression) while the
 * generate, an array used by a scalar term, was hoisted above it to array
 * level: weft_compile said "a shared term is used outside its let
 * (internal error)".  The let now goes at or above the hoisted term. */
static void shared_shape_and_index(weft_backend b, bool in_bounds)
{
    tu u;
    tu_open_backend(&u, b);
    weft_program *p = u.p;
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(g, weft_i8(p, 7));
    weft_exp *sh = weft_index1(weft_i64(p, 1));
    weft_acc *a = weft_generate(sh, g);
    /* in bounds: a !! (size sh - 1); out of bounds: a ! sh */
    weft_exp *e =
        in_bounds
            ? weft_at_linear(a, weft_sub(weft_shape_size(sh), weft_i64(p, 1)))
            : weft_at(a, sh);
    weft_acc *r = weft_unit(e);
    TU_PROGRAM_OK(p);
    weft_array *out[1] = {NULL};
    weft_status s = tu_run(p, &r, 1, NULL, 0, out, 1);
    if (in_bounds) {
        ck_assert_msg(s == WEFT_OK, "backend %d: %s: %s", (int)b,
                      weft_status_name(s), weft_last_error());
        TU_CHECK_I(u.ctx, out[0], 0, 0, TU_SH(0), TU_I(7));
    } else if (b == WEFT_BACKEND_INTERP) {
        ck_assert_msg(s == WEFT_ERR_OUT_OF_BOUNDS, "%s: %s",
                      weft_status_name(s), weft_last_error());
    } else {
        /* unchecked kernels need not report the index */
        ck_assert_msg(s != WEFT_ERR_INTERNAL, "%s", weft_last_error());
    }
    tu_release_all(out, 1);
    tu_close(&u);
}

START_TEST(shape_shared_with_an_index_under_unit)
{
    for (int i = 0; i < NBACKEND; i++) {
        shared_shape_and_index(backends[i], true);
        shared_shape_and_index(backends[i], false);
    }
}
END_TEST

/* Seed 1006: a term that may fail (k, a conversion from a float) shared by
 * a scan's seed and an index inside a map's function.  The scan, an array
 * used by a scalar term, is hoisted out of the function; k, which may
 * fail, is copied into both uses; the while below k, which cannot fail,
 * was bound inside the function, out of sight of the hoisted copy:
 * "a shared term is used outside its let".  Such a use now computes the
 * term again where it is. */
static void failing_term_shared_by_hoisted_scan(weft_backend b)
{
    tu u;
    tu_open_backend(&u, b);
    weft_program *p = u.p;
    weft_type st = weft_type_tuple(u.ctx, 2, (weft_type[]){WEFT_I32, WEFT_F32});
    weft_fun *c = weft_fun1(p, st);
    weft_fun_return(c, weft_lt(weft_get(weft_arg(c, 0), 0), weft_i32(p, 1)));
    weft_fun *body = weft_fun1(p, st);
    weft_exp *bx = weft_arg(body, 0);
    weft_fun_return(body, weft_tuple(p, 2,
                                     (weft_exp *[]){weft_add(weft_get(bx, 0),
                                                             weft_i32(p, 1)),
                                                    weft_get(bx, 1)}));
    weft_exp *x =
        weft_get(weft_while(c, body,
                            weft_tuple(p, 2,
                                       (weft_exp *[]){weft_i32(p, 0),
                                                      weft_f32(p, 3.0f)})),
                 1);
    weft_exp *hi = weft_lt(x, weft_f32(p, 100.0f));
    weft_exp *ok = weft_and(weft_ge(x, weft_f32(p, -100.0f)), hi);
    weft_exp *k = weft_cond(ok, weft_convert(x, WEFT_I64), weft_i64(p, -2));
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64);
    weft_array *xs =
        tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(5), TU_I(1, 2, 3, 4, 5));
    weft_acc *totals = weft_aget(weft_scanl_(add, k, weft_use(p, xs)), 1);
    weft_array_release(xs);
    weft_fun *f = weft_fun1(p, WEFT_BOOL);
    weft_exp *at = weft_at_linear(weft_unit(weft_the(totals)),
                                  weft_sub(k, weft_i64(p, 3)));
    weft_fun_return(f,
                    weft_cond(weft_arg(f, 0), weft_ne(at, weft_i64(p, 0)), hi));
    weft_array *flags = tu_arr_i(u.ctx, WEFT_BOOL, 1, TU_SH(2), TU_I(1, 0));
    weft_acc *r = weft_map(f, weft_use(p, flags));
    weft_array_release(flags);
    TU_PROGRAM_OK(p);
    weft_array *out[1] = {NULL};
    weft_status s = tu_run(p, &r, 1, NULL, 0, out, 1);
    ck_assert_msg(s == WEFT_OK, "backend %d: %s: %s", (int)b,
                  weft_status_name(s), weft_last_error());
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(2), TU_I(1, 1));
    tu_release_all(out, 1);
    tu_close(&u);
}

START_TEST(failing_term_shared_with_a_hoisted_scan)
{
    for (int i = 0; i < NBACKEND; i++) {
        failing_term_shared_by_hoisted_scan(backends[i]);
    }
}
END_TEST

/* "Different run-time errors" (seeds 200000 to 255000, checked mode): a
 * program that fails in two places reported one error in the oracle (the
 * interpreter without fusion) and another with fusion, and never another
 * without it.  The shape of the case helper smvm6 met: foldSeg' whose
 * input is a gather that reads outside its source (always checked) and
 * whose offsets end past the innermost extent.  The interpreter, and
 * every backend with WEFT_FLAG_NO_FUSION, computes the input first and
 * reports the gather; a fused compiled run checks the descriptor on the
 * host before its kernel computes the gather inside the fold, and reports
 * the segments (docs/language.md, checked mode, "Fusion").  The
 * interpreter with fusion still computes the input first. */
static weft_status gather_and_bad_offsets(weft_backend b, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV | WEFT_FLAG_CHECKED | DT_TIER | flags;
    weft_context *ctx = NULL;
    weft_status s = weft_context_create(&cfg, &ctx);
    ck_assert_msg(s == WEFT_OK, "weft_context_create: %s", weft_last_error());
    weft_program *p = NULL;
    s = weft_program_create(ctx, &p);
    ck_assert_msg(s == WEFT_OK, "weft_program_create: %s", weft_last_error());
    weft_array *xs = tu_arr_i(ctx, WEFT_I64, 1, TU_SH(4), TU_I(1, 2, 3, 4));
    weft_array *off = tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(0, 2, 9));
    /* element 3 reads xs[4] */
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_add(weft_get(weft_arg(ix, 0), 0),
                                             weft_i64(p, 1))));
    weft_acc *g =
        weft_backpermute(weft_shape(weft_use(p, xs)), ix, weft_use(p, xs));
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64);
    weft_acc *r =
        weft_fold_seg_offsets(add, weft_i64(p, 0), g, weft_use(p, off));
    weft_array_release(xs);
    weft_array_release(off);
    TU_PROGRAM_OK(p);
    weft_array *out[1] = {NULL};
    s = tu_run(p, &r, 1, NULL, 0, out, 1);
    ck_assert_msg(s != WEFT_OK && out[0] == NULL, "%s: a result",
                  tu_backend_name(b));
    weft_program_free(p);
    weft_context_free(ctx);
    return s;
}

START_TEST(two_errors_without_fusion_as_the_interpreter)
{
    for (int i = 0; i < NBACKEND; i++) {
        weft_backend b = backends[i];
        weft_status s = gather_and_bad_offsets(b, WEFT_FLAG_NO_FUSION);
        ck_assert_msg(s == WEFT_ERR_OUT_OF_BOUNDS, "%s, no fusion: %s: %s",
                      tu_backend_name(b), weft_status_name(s),
                      weft_last_error());
        s = gather_and_bad_offsets(b, 0);
        weft_status want = b == WEFT_BACKEND_INTERP ? WEFT_ERR_OUT_OF_BOUNDS
                                                    : WEFT_ERR_SEGMENTS;
        ck_assert_msg(s == want, "%s, fusion: %s: %s", tu_backend_name(b),
                      weft_status_name(s), weft_last_error());
    }
}
END_TEST

static Suite *fuzz_found_suite(void)
{
    Suite *s = suite_create("fuzz_found");
    TCase *t = tcase_create("fuzz_found");
    tcase_add_test(t, shape_shared_with_an_index_under_unit);
    tcase_add_test(t, failing_term_shared_with_a_hoisted_scan);
    tcase_add_test(t, two_errors_without_fusion_as_the_interpreter);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(fuzz_found_suite)
