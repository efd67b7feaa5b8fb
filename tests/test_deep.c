/*
 * tests/test_deep.c: programs 50,000 terms deep compile and run (issue 10).
 *
 * The passes over a program recurse over its terms (sharing recovery's
 * emitter, the simplifier, fusion, the dump, the interpreter, the code
 * generator), so their stack follows the program's depth.  weft runs them
 * on a stack sized for the depth, and a program too deep for any stack it
 * can get fails with a status and a message, never a crash.  Each case
 * runs on the interpreter and on the CPU backend and checks the values:
 *   - a chain of 50,000 additions, inside a map's function (compiled into
 *     the kernel) and at host level (unit of a scalar);
 *   - 50,000 conds nested in their else branches (a switch on x);
 *   - 50,000 shared terms, each bound by a let (e' = e * 3 xor e >> 1);
 *   - a chain of 50,000 maps (fused into one kernel on the CPU).
 * On the CPU backend the cond and let chains are 1,000 deep (CPU_DEPTH):
 * they compile to one kernel of 50,000 branches or 150,000 instructions in
 * one block, and LLVM's own passes (SimplifyCFG, the machine scheduler)
 * take time quadratic in that (minutes at 20,000); the add chain folds and
 * the map chain fuses, so they run 50,000 deep there too.
 * The depth can be changed with DEEP_DEPTH in the environment; each case
 * is a Check case of its own (CK_RUN_CASE=cond_chain runs one).
 */
#include "tu.h"

static int depth(void)
{
    const char *e = getenv("DEEP_DEPTH");
    int d = e ? atoi(e) : 0;
    return d > 0 ? d : 50000;
}

enum { CPU_DEPTH = 1000 };

/* The depth of a case whose kernel LLVM compiles in quadratic time. */
static int heavy_depth(weft_backend b)
{
    int n = depth();
    return b == WEFT_BACKEND_CPU && n > CPU_DEPTH ? CPU_DEPTH : n;
}

static const weft_backend backends[] = TU_BACKENDS;
enum { NBACKEND = sizeof backends / sizeof backends[0] };

/* Compile and run r (one result) on in[0..nin-1] into *out, expecting OK;
 * the dump of the program must work too. */
static void run_one(tu *u, weft_backend b, weft_acc *r, weft_array **in,
                    int nin, weft_array **out)
{
    TU_PROGRAM_OK(u->p);
    FILE *null = fopen("/dev/null", "w");
    ck_assert_ptr_nonnull(null);
    weft_status s = weft_program_dump(u->p, &r, 1, null);
    fclose(null);
    ck_assert_msg(s == WEFT_OK, "%s: dump: %s", tu_backend_name(b),
                  weft_last_error());
    weft_executable *exe = NULL;
    s = weft_compile(u->p, &r, 1, &exe);
    ck_assert_msg(s == WEFT_OK, "%s: compile: %s", tu_backend_name(b),
                  weft_last_error());
    for (int k = 0; k < 2; k++) {
        s = weft_run(exe, in, nin, out, 1);
        ck_assert_msg(s == WEFT_OK, "%s: run: %s", tu_backend_name(b),
                      weft_last_error());
        if (k == 0) {
            weft_array_release(out[0]);
        }
    }
    weft_executable_free(exe);
}

static weft_array *vec(tu *u, weft_type t)
{
    return tu_arr_i(u->ctx, t, 1, TU_SH(3), TU_I(1, 2, -7));
}

START_TEST(add_chain)
{
    int n = depth();
    for (int k = 0; k < NBACKEND; k++) {
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        /* in a function: map (\x -> x + 1 + ... + 1) */
        weft_acc *xs = weft_param(p, WEFT_I64, 1);
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_exp *e = weft_arg(f, 0);
        for (int i = 0; i < n; i++) {
            e = weft_add(e, weft_i64(p, 1));
        }
        weft_fun_return(f, e);
        weft_array *in[1] = {vec(&u, WEFT_I64)}, *out[1] = {NULL};
        run_one(&u, backends[k], weft_map(f, xs), in, 1, out);
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(3), TU_I(1 + n, 2 + n, -7 + n));
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        /* at host level: unit (the a + 2 + ... + 2) */
        tu_reset(&u);
        p = u.p;
        weft_acc *a = weft_param(p, WEFT_I64, 0);
        e = weft_the(a);
        for (int i = 0; i < n; i++) {
            e = weft_add(e, weft_i64(p, 2));
        }
        in[0] = tu_arr_i(u.ctx, WEFT_I64, 0, NULL, TU_I(5));
        run_one(&u, backends[k], weft_unit(e), in, 1, out);
        TU_CHECK_I(u.ctx, out[0], 0, 0, NULL, TU_I(5 + 2 * (int64_t)n));
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(cond_chain)
{
    for (int k = 0; k < NBACKEND; k++) {
        int n = heavy_depth(backends[k]);
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        /* map (\x -> if x == 0 then 0 else if x == 1 then 3 else ...
         *            else -1) */
        weft_acc *xs = weft_param(p, WEFT_I32, 1);
        weft_fun *f = weft_fun1(p, WEFT_I32);
        weft_exp *x = weft_arg(f, 0);
        weft_exp *e = weft_i32(p, -1);
        for (int i = n - 1; i >= 0; i--) {
            e = weft_cond(weft_eq(x, weft_i32(p, i)), weft_i32(p, 3 * i), e);
        }
        weft_fun_return(f, e);
        weft_array *in[1] = {
            tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(4), TU_I(0, 7, n - 1, n))};
        weft_array *out[1] = {NULL};
        run_one(&u, backends[k], weft_map(f, xs), in, 1, out);
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(4), TU_I(0, 21, 3 * (n - 1), -1));
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(let_chain)
{
    for (int k = 0; k < NBACKEND; k++) {
        int n = heavy_depth(backends[k]);
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        /* map (\x -> e_n) with e_0 = x, e_{i+1} = e_i * 3 xor e_i >> 1:
         * every e_i is used twice, so each is bound by a let */
        weft_acc *xs = weft_param(p, WEFT_U32, 1);
        weft_fun *f = weft_fun1(p, WEFT_U32);
        weft_exp *e = weft_arg(f, 0);
        for (int i = 0; i < n; i++) {
            e = weft_bxor(weft_mul(e, weft_u32(p, 3)),
                          weft_shr(e, weft_u32(p, 1)));
        }
        weft_fun_return(f, e);
        weft_array *in[1] = {vec(&u, WEFT_U32)}, *out[1] = {NULL};
        run_one(&u, backends[k], weft_map(f, xs), in, 1, out);
        int64_t want[3];
        const uint32_t x0[3] = {1, 2, (uint32_t)-7};
        for (int j = 0; j < 3; j++) {
            uint32_t v = x0[j];
            for (int i = 0; i < n; i++) {
                v = (v * 3u) ^ (v >> 1);
            }
            want[j] = v;
        }
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(3), want);
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(map_chain)
{
    int n = depth();
    for (int k = 0; k < NBACKEND; k++) {
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        /* map (+1) (map (+1) ... xs), the function shared */
        weft_acc *a = weft_param(p, WEFT_I64, 1);
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_fun_return(f, weft_add(weft_arg(f, 0), weft_i64(p, 1)));
        for (int i = 0; i < n; i++) {
            a = weft_map(f, a);
        }
        weft_array *in[1] = {vec(&u, WEFT_I64)}, *out[1] = {NULL};
        run_one(&u, backends[k], a, in, 1, out);
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(3), TU_I(1 + n, 2 + n, -7 + n));
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

static Suite *deep_suite(void)
{
    const struct {
        const char *name;
        const TTest *test;
    } tests[] = {
        {"add_chain", add_chain},
        {"cond_chain", cond_chain},
        {"let_chain", let_chain},
        {"map_chain", map_chain},
    };
    Suite *s = suite_create("deep");
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        TCase *t = tcase_create(tests[i].name);
        tcase_add_test(t, tests[i].test);
        tcase_set_timeout(t, 280);
        suite_add_tcase(s, t);
    }
    return s;
}

TU_MAIN(deep_suite)
