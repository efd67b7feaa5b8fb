/*
 * tests/test_ptx_large.c: large programs on the ptx backend (issue 21);
 * a skip (77) where no GPU can run them.
 *
 *   - huge_cond, huge_let: a 2,000-deep chain of conditionals and a
 *     1,500-long chain of shared links (e' = e * 3 xor e >> 1), each one
 *     kernel of more than PTX_HUGE_INSTRUCTIONS instructions, which takes
 *     the linear pipeline and the quick PTX emission
 *     (codegen/target_ptx.c): values against the same recurrences in C;
 *   - huge_exp: a huge f32 kernel calling expf 800 times (libdevice
 *     linked, NVVMReflect run by the huge pipeline);
 *   - families: 64 maps that differ only in their constants share one
 *     compiled kernel (runtime/families.c): values, and the count of
 *     kernels reused.
 * Depths stay small because ptxas is far worse than linear in one
 * function's size (a 10,000-deep chain took it minutes).
 */
#define DT_BACKEND WEFT_BACKEND_PTX
#include <math.h>

#include "tu.h"

static const int64_t xs[4] = {-7, -1, 0, 5};

static weft_array *vec(tu *u)
{
    return tu_arr_i(u->ctx, WEFT_I64, 1, TU_SH(4),
                    TU_I(xs[0], xs[1], xs[2], xs[3]));
}

/* Compile and run r on in[0] into *out. */
static void run1(tu *u, weft_acc *r, weft_array **in, weft_array **out)
{
    TU_PROGRAM_OK(u->p);
    TU_OK(tu_run(u->p, &r, 1, in, 1, out, 1));
}

/* Run map f over xs and check the result against want. */
static void map_check(tu *u, weft_fun *f, const int64_t want[4])
{
    weft_array *in[1] = {vec(u)}, *out[1] = {NULL};
    run1(u, weft_map(f, weft_param(u->p, WEFT_I64, 1)), in, out);
    TU_CHECK_I(u->ctx, out[0], 0, 1, TU_SH(4), want);
    weft_array_release(out[0]);
    weft_array_release(in[0]);
}

START_TEST(huge_cond)
{
    enum { N = 2000 };
    tu u;
    tu_open_backend(&u, WEFT_BACKEND_PTX);
    weft_program *p = u.p;
    /* e_i = cond (x > 3 - i) (e_{i-1} + 1) (x * 2) */
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *x = weft_arg(f, 0), *e = x;
    for (int i = 1; i <= N; i++) {
        e = weft_cond(weft_gt(x, weft_i64(p, 3 - i)),
                      weft_add(e, weft_i64(p, 1)), weft_mul(x, weft_i64(p, 2)));
    }
    weft_fun_return(f, e);
    int64_t want[4];
    for (int k = 0; k < 4; k++) {
        int64_t v = xs[k];
        for (int i = 1; i <= N; i++) {
            v = xs[k] > 3 - i ? v + 1 : xs[k] * 2;
        }
        want[k] = v;
    }
    map_check(&u, f, want);
    tu_close(&u);
}
END_TEST

START_TEST(huge_let)
{
    enum { N = 1500 };
    tu u;
    tu_open_backend(&u, WEFT_BACKEND_PTX);
    weft_program *p = u.p;
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *e = weft_arg(f, 0);
    for (int i = 0; i < N; i++) {
        e = weft_bxor(weft_mul(e, weft_i64(p, 3)), weft_shr(e, weft_i64(p, 1)));
    }
    weft_fun_return(f, e);
    int64_t want[4];
    for (int k = 0; k < 4; k++) {
        uint64_t v = (uint64_t)xs[k]; /* wrapping, as i64 arithmetic */
        for (int i = 0; i < N; i++) {
            v = (v * 3) ^ (uint64_t)((int64_t)v >> 1);
        }
        want[k] = (int64_t)v;
    }
    map_check(&u, f, want);
    tu_close(&u);
}
END_TEST

START_TEST(huge_exp)
{
    enum { N = 800 };
    tu u;
    tu_open_backend(&u, WEFT_BACKEND_PTX);
    weft_program *p = u.p;
    /* x + sum_i exp(x / i) */
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_exp *x = weft_arg(f, 0), *e = x;
    for (int i = 1; i <= N; i++) {
        e = weft_add(e, weft_fexp(weft_mul(x, weft_f32(p, 1.0f / (float)i))));
    }
    weft_fun_return(f, e);
    weft_array *in[1] = {
        tu_arr_f(u.ctx, WEFT_F32, 1, TU_SH(3), TU_F(0.5, -1, 0.25))};
    weft_array *out[1] = {NULL};
    run1(&u, weft_map(f, weft_param(p, WEFT_F32, 1)), in, out);
    const double x0[3] = {0.5, -1, 0.25};
    double want[3];
    for (int k = 0; k < 3; k++) {
        double s = x0[k];
        for (int i = 1; i <= N; i++) {
            s += exp(x0[k] * (double)(1.0f / (float)i));
        }
        want[k] = s;
    }
    /* 800 f32 additions of terms near 1 (each rounded by half an ulp of
     * a sum near 800, 3e-5) and expf within 2 ulps: 1e-4 relative is
     * several times the worst case */
    TU_CHECK_F(u.ctx, out[0], 0, 1, TU_SH(3), want, 1e-4);
    weft_array_release(out[0]);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

START_TEST(families)
{
    enum { N = 64 };
    tu u;
    tu_open_backend(&u, WEFT_BACKEND_PTX);
    weft_program *p = u.p;
    weft_acc *a = weft_param(p, WEFT_I64, 1);
    weft_acc *r[N];
    weft_array *out[N] = {NULL};
    for (int i = 0; i < N; i++) {
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_fun_return(f,
                        weft_add(weft_mul(weft_arg(f, 0), weft_i64(p, i + 2)),
                                 weft_i64(p, 7)));
        r[i] = weft_map(f, a);
    }
    weft_array *in[1] = {vec(&u)};
    TU_PROGRAM_OK(p);
    TU_OK(tu_run(p, r, N, in, 1, out, N));
    for (int i = 0; i < N; i++) {
        int64_t c = i + 2;
        TU_CHECK_I(
            u.ctx, out[i], 0, 1, TU_SH(4),
            TU_I(xs[0] * c + 7, xs[1] * c + 7, xs[2] * c + 7, xs[3] * c + 7));
        weft_array_release(out[i]);
    }
    weft_stats st;
    TU_OK(weft_context_stats(u.ctx, &st));
    ck_assert_uint_eq(st.kernels_reused, N - 1);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

static Suite *ptx_large_suite(void)
{
    Suite *s = suite_create("ptx_large");
    TCase *t = tcase_create("ptx_large");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, huge_cond);
    tcase_add_test(t, huge_let);
    tcase_add_test(t, huge_exp);
    tcase_add_test(t, families);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(ptx_large_suite)
