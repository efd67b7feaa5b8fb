/*
 * tests/test_fuzz_found.c: regressions for what the differential fuzzer
 * (tests/fuzz/, docs/fuzzing.md) found, each reduced by its shrinker and
 * then by hand.  Every case runs on the interpreter and, where LLVM is
 * built, on the CPU backend, and names the fuzzer seed that found it.
 */
#include "tu.h"

static const weft_backend backends[] = {
    WEFT_BACKEND_INTERP,
#ifdef WEFT_HAVE_LLVM
    WEFT_BACKEND_CPU,
#endif
};
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
    weft_exp *e = in_bounds
                      ? weft_at_linear(a, weft_sub(weft_shape_size(sh),
                                                   weft_i64(p, 1)))
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

static Suite *fuzz_found_suite(void)
{
    Suite *s = suite_create("fuzz_found");
    TCase *t = tcase_create("fuzz_found");
    tcase_add_test(t, shape_shared_with_an_index_under_unit);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(fuzz_found_suite)
