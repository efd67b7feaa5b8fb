/*
 * tests/test_ptx_memory.c: the PTX backend's device memory under pressure.
 *
 * A context limited to a small device budget (weft_config.device_memory,
 * the same mechanism as $WEFT_DEVICE_MEMORY) runs programs whose arrays
 * add up to several times that budget:
 *
 *   - eviction: eight independent maps, each of whose input and output fit
 *     the budget, while all sixteen arrays together are four times it.
 *     Every result must be right (checked element by element against the
 *     formula, exact: x + k for small integers in f32), and the counters
 *     must show evictions and downloads;
 *   - out of memory: one kernel whose own input and output exceed the
 *     budget fails with WEFT_ERR_OUT_OF_MEMORY, and the context still runs
 *     a small program afterwards;
 *   - mirroring: an input used by two runs is uploaded once; writing it
 *     through weft_array_data makes the next run upload it again.
 *
 * Runs only where a CUDA driver and a GPU are present; elsewhere main
 * returns 77 (a CTest skip) after saying why.
 */
#define DT_BACKEND WEFT_BACKEND_PTX
#include "tu.h"

enum { N = 4 << 20 }; /* elements of one array: 16 MiB of f32 */

static weft_context *open_ptx(uint64_t budget)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    cfg.device_memory = budget;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

static weft_array *iota_f32(weft_context *ctx, int64_t n, float base)
{
    weft_array *a = NULL;
    TU_OK(weft_array_create(ctx, WEFT_F32, 1, (const int64_t[]){n}, &a));
    float *x = weft_array_data(a, 0);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < n; i++) {
        x[i] = base + (float)(i % 1000);
    }
    return a;
}

/* map (+ k) over a param of n f32. */
static weft_acc *add_k(weft_program *p, float k)
{
    weft_acc *x = weft_param(p, WEFT_F32, 1);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_f32(p, k)));
    return weft_map(f, x);
}

START_TEST(eviction)
{
    /* 48 MiB: one map (16 in, 16 out) fits, the 16 arrays (256 MiB) not */
    weft_context *ctx = open_ptx(48u << 20);
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    enum { K = 8 };
    weft_acc *res[K];
    weft_array *in[K], *out[K];
    for (int k = 0; k < K; k++) {
        res[k] = add_k(p, (float)(k + 1));
        in[k] = iota_f32(ctx, N, (float)(1000 * k));
    }
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, res, K, &exe));
    TU_OK(weft_run(exe, in, K, out, K));
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    ck_assert_msg(st.evictions > 0, "no eviction with 256 MiB in 48 MiB");
    ck_assert_uint_le(st.device_bytes, 48u << 20);
    for (int k = 0; k < K; k++) {
        const float *y = weft_array_data(out[k], 0);
        ck_assert_ptr_nonnull(y);
        for (int64_t i = 0; i < N; i++) {
            float want = (float)(1000 * k) + (float)(i % 1000) + (float)(k + 1);
            if (y[i] != want) {
                ck_abort_msg("output %d [%lld] = %g, expected %g", k,
                             (long long)i, (double)y[i], (double)want);
            }
        }
    }
    TU_OK(weft_context_stats(ctx, &st));
    ck_assert_uint_ge(st.bytes_downloaded, (uint64_t)K * N * 4 / 2);
    for (int k = 0; k < K; k++) {
        weft_array_release(in[k]);
        weft_array_release(out[k]);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(out_of_memory)
{
    /* 24 MiB: a map of 16 MiB to 16 MiB cannot run */
    weft_context *ctx = open_ptx(24u << 20);
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *r = add_k(p, 1.0f);
    weft_array *in = iota_f32(ctx, N, 0.0f), *out = NULL;
    TU_STATUS(WEFT_ERR_OUT_OF_MEMORY, weft_run1(p, &r, 1, &in, 1, &out, 1));
    ck_assert_ptr_null(out);
    weft_array_release(in);
    /* the context goes on: a small map runs */
    weft_array *small = iota_f32(ctx, 1000, 5.0f);
    TU_OK(weft_run1(p, &r, 1, &small, 1, &out, 1));
    const float *y = weft_array_data(out, 0);
    ck_assert_ptr_nonnull(y);
    for (int i = 0; i < 1000; i++) {
        ck_assert_float_eq(y[i], 5.0f + (float)i + 1.0f);
    }
    weft_array_release(small);
    weft_array_release(out);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(mirroring)
{
    weft_context *ctx = open_ptx(0);
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *r = add_k(p, 2.0f);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_array *in = iota_f32(ctx, N, 0.0f), *out = NULL;
    weft_stats s0, s1, s2;
    TU_OK(weft_context_stats(ctx, &s0));
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    weft_array_release(out);
    TU_OK(weft_context_stats(ctx, &s1));
    ck_assert_uint_ge(s1.bytes_uploaded - s0.bytes_uploaded, (uint64_t)N * 4);
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    TU_OK(weft_context_stats(ctx, &s2));
    /* the input is on the device already: at most the error word moves */
    ck_assert_uint_lt(s2.bytes_uploaded - s1.bytes_uploaded, 4096);
    weft_array_release(out);
    float *x = weft_array_data(in, 0); /* may write: device copy stale */
    x[7] = 100.0f;
    TU_OK(weft_run(exe, &in, 1, &out, 1));
    const float *y = weft_array_data(out, 0);
    ck_assert_float_eq(y[7], 102.0f);
    ck_assert_float_eq(y[8], 10.0f);
    weft_array_release(out);
    weft_array_release(in);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ptx_memory");
    TCase *tc = tcase_create("memory");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, mirroring);
    tcase_add_test(tc, eviction);
    tcase_add_test(tc, out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)
