/*
 * tests/test_gpu_tier.c: the ptx backend's tier-up thread (runtime-gpu/
 * backend.c, "Tiers") where there is no GPU.
 *
 * With the test hook gpu_tier_without_device set, a compile-only ptx
 * context (target "sm_90") tiers as one on a device would, but for the
 * driver: weft_compile emits each new kernel's quick PTX and queues its
 * IR, and the context's thread emits the optimised PTX and counts it.
 * What a device adds (the driver's load and the swap under its lock) is
 * test_ptx_tier's (tests/test_tier.c on ptx).  Run under AddressSanitizer
 * and ThreadSanitizer, these are the checks of the thread's life:
 *
 *   counts            every kernel compiled is optimised once
 *                     (kernels_optimised, optimise_ms > 0) after
 *                     weft_context_wait_optimised, which returns at once
 *                     when called again (a second compile of the same
 *                     program compiles and optimises again: such a
 *                     context keeps no kernels); NO_TIERING and QUICK_CODE
 *                     contexts optimise nothing; without the hook a
 *                     compile-only context does not tier; a kernel with
 *                     a scalar while loop is not tiered (compiled
 *                     optimised at once: a run of it may last long).
 *   free_queued       contexts freed right after weft_compile, with a hook
 *                     that slows every job, so that the free most likely
 *                     finds a job in hand and others queued: it takes the
 *                     queue away and returns; nothing leaks (ASan) or
 *                     races (TSan).  (How many jobs ran depends on timing,
 *                     so it is not asserted.)
 *   free_idle         a context whose thread is idle (all jobs done) and
 *                     one that never started it are freed cleanly.
 *   two_contexts      two contexts compile and tier in two threads at
 *                     once, each counting its own kernels.
 *   compiles_overlap  two threads compile different kernels on one
 *                     context: a hook at the start of each kernel's build
 *                     sees both inside at once (with a lock held across
 *                     builds, as before runtime/kcache.c, the first would
 *                     wait 5 s for the second in vain and the test fails).
 */
#include <pthread.h>
#include <time.h>

#include "tu.h"

#ifdef WEFT_HAVE_LLVM
#include "gpu.h"

/* A compile-only ptx context for sm_90 with the flags given (and
 * WEFT_FLAG_NO_ENV). */
static weft_context *open_sm90(unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.target_cpu = "sm_90";
    cfg.flags |= WEFT_FLAG_NO_ENV | flags;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

/* Compile a fold of a zipWith, a map and an inclusive scan over two i64
 * params: three kernels. */
static void compile_three(weft_context *ctx)
{
    weft_executable_free(tu_dot_map(ctx, true));
}

static weft_stats stats_of(weft_context *ctx)
{
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    return st;
}

START_TEST(counts)
{
    gpu_tier_without_device = true;
    weft_context *ctx = open_sm90(0);
    compile_three(ctx);
    TU_OK(weft_context_wait_optimised(ctx));
    weft_stats st = stats_of(ctx);
    ck_assert_uint_eq(st.kernels_compiled, 3);
    ck_assert_uint_eq(st.kernels_optimised, 3);
    ck_assert_msg(st.optimise_ms > 0, "optimise_ms %g", st.optimise_ms);
    TU_OK(weft_context_wait_optimised(ctx)); /* nothing pending */
    ck_assert_uint_eq(stats_of(ctx).kernels_optimised, 3);
    /* the same kernels again: a compile-only context keeps no table of
     * loaded kernels, so they are compiled and tiered up again */
    compile_three(ctx);
    TU_OK(weft_context_wait_optimised(ctx));
    st = stats_of(ctx);
    ck_assert_uint_eq(st.kernels_compiled, 6);
    ck_assert_uint_eq(st.kernels_optimised, 6);
    weft_context_free(ctx);

    unsigned flags[2] = {WEFT_FLAG_NO_TIERING, WEFT_FLAG_QUICK_CODE};
    for (int i = 0; i < 2; i++) {
        ctx = open_sm90(flags[i]);
        compile_three(ctx);
        TU_OK(weft_context_wait_optimised(ctx));
        st = stats_of(ctx);
        ck_assert_uint_eq(st.kernels_compiled, 3);
        ck_assert_uint_eq(st.kernels_optimised, 0);
        ck_assert(st.optimise_ms == 0);
        weft_context_free(ctx);
    }

    /* a map whose element is a while loop: not tiered */
    ctx = open_sm90(0);
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_fun *c = weft_fun1(p, WEFT_I64);
    weft_fun_return(c, weft_lt(weft_arg(c, 0), weft_i64(p, 100)));
    weft_fun *b = weft_fun1(p, WEFT_I64);
    weft_fun_return(
        b, weft_add(weft_mul(weft_arg(b, 0), weft_i64(p, 2)), weft_i64(p, 1)));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, weft_while(c, b, weft_arg(f, 0)));
    weft_acc *r = weft_map(f, weft_param(p, WEFT_I64, 1));
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    TU_OK(weft_context_wait_optimised(ctx));
    st = stats_of(ctx);
    ck_assert_uint_eq(st.kernels_compiled, 1);
    ck_assert_uint_eq(st.kernels_optimised, 0);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);

    gpu_tier_without_device = false;
    ctx = open_sm90(0);
    compile_three(ctx);
    TU_OK(weft_context_wait_optimised(ctx));
    ck_assert_uint_eq(stats_of(ctx).kernels_optimised, 0);
    weft_context_free(ctx);
}
END_TEST

static int slow_jobs; /* jobs the hook has seen (atomically) */

static void slow_hook(void)
{
    __atomic_fetch_add(&slow_jobs, 1, __ATOMIC_RELAXED);
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

START_TEST(free_queued)
{
    gpu_tier_without_device = true;
    gpu_tier_hook = slow_hook;
    int rounds = 4;
    __atomic_store_n(&slow_jobs, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < rounds; i++) {
        weft_context *ctx = open_sm90(0);
        compile_three(ctx);
        ck_assert_uint_eq(stats_of(ctx).kernels_compiled, 3);
        weft_context_free(ctx);
    }
    int seen = __atomic_load_n(&slow_jobs, __ATOMIC_RELAXED);
    ck_assert_int_le(seen, 3 * rounds); /* never a job twice */
    gpu_tier_hook = NULL;
    gpu_tier_without_device = false;
}
END_TEST

START_TEST(free_idle)
{
    gpu_tier_without_device = true;
    weft_context *ctx = open_sm90(0);
    compile_three(ctx);
    TU_OK(weft_context_wait_optimised(ctx));
    weft_context_free(ctx); /* the thread waits for work: woken, joined */
    ctx = open_sm90(0);     /* never compiles: no thread started */
    TU_OK(weft_context_wait_optimised(ctx));
    ck_assert_uint_eq(stats_of(ctx).kernels_optimised, 0);
    weft_context_free(ctx);
    gpu_tier_without_device = false;
}
END_TEST

static void *compile_main(void *arg)
{
    weft_context *ctx = arg;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    /* no Check macros off the main thread: the status is the result */
    weft_status s = weft_program_create(ctx, &p);
    if (s == WEFT_OK) {
        weft_acc *x = weft_param(p, WEFT_F32, 1);
        weft_fun *f = weft_fun1(p, WEFT_F32);
        weft_fun_return(f, weft_fexp(weft_arg(f, 0)));
        weft_acc *r = weft_map(f, x);
        s = weft_compile(p, &r, 1, &exe);
    }
    if (s == WEFT_OK) {
        s = weft_context_wait_optimised(ctx);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    return (void *)(intptr_t)s;
}

START_TEST(two_contexts)
{
    gpu_tier_without_device = true;
    weft_context *ctx[2] = {open_sm90(0), open_sm90(0)};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_create(&th[i], NULL, compile_main, ctx[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        void *r;
        ck_assert_int_eq(pthread_join(th[i], &r), 0);
        ck_assert_int_eq((int)(intptr_t)r, WEFT_OK);
    }
    for (int i = 0; i < 2; i++) {
        weft_stats st = stats_of(ctx[i]);
        ck_assert_uint_eq(st.kernels_compiled, 1);
        ck_assert_uint_eq(st.kernels_optimised, 1);
        weft_context_free(ctx[i]);
    }
    gpu_tier_without_device = false;
}
END_TEST

/* The overlap hook: how many compiles are inside a kernel's build now,
 * and the most at once (atomics). */
static int building, most_building;

/* Enter a build, then wait (at most 5 s) for another compile to be inside
 * one too: with a lock held across builds it never comes, and the most
 * stays 1. */
static void overlap_hook(void)
{
    int now = __atomic_add_fetch(&building, 1, __ATOMIC_SEQ_CST);
    int most = __atomic_load_n(&most_building, __ATOMIC_SEQ_CST);
    while (now > most &&
           !__atomic_compare_exchange_n(&most_building, &most, now, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    for (int i = 0;
         i < 5000 && __atomic_load_n(&most_building, __ATOMIC_SEQ_CST) < 2;
         i++) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    __atomic_sub_fetch(&building, 1, __ATOMIC_SEQ_CST);
}

typedef struct compile_arg {
    weft_context *ctx;
    int op; /* a unary float primitive */
    weft_status s;
} compile_arg;

static void *compile_op_main(void *arg)
{
    compile_arg *a = arg;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    a->s = weft_program_create(a->ctx, &p);
    if (a->s == WEFT_OK) {
        weft_acc *x = weft_param(p, WEFT_F32, 1);
        weft_fun *f = weft_fun1(p, WEFT_F32);
        weft_exp *e = weft_arg(f, 0);
        weft_fun_return(f, weft_prim(a->op, &e));
        weft_acc *r = weft_map(f, x);
        a->s = weft_compile(p, &r, 1, &exe);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    return NULL;
}

START_TEST(compiles_overlap)
{
    /* two threads compile different kernels on one context: both are
     * inside LLVM at once (no lock held across a build) */
    weft_context *ctx = open_sm90(WEFT_FLAG_NO_TIERING);
    __atomic_store_n(&building, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&most_building, 0, __ATOMIC_SEQ_CST);
    gpu_build_hook = overlap_hook;
    compile_arg a[2] = {{ctx, WEFT_OP_EXP, WEFT_OK},
                        {ctx, WEFT_OP_LOG, WEFT_OK}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_create(&th[i], NULL, compile_op_main, &a[i]),
                         0);
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_int_eq(a[i].s, WEFT_OK);
    }
    gpu_build_hook = NULL;
    ck_assert_int_eq(__atomic_load_n(&most_building, __ATOMIC_SEQ_CST), 2);
    ck_assert_uint_eq(stats_of(ctx).kernels_compiled, 2);
    weft_context_free(ctx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gpu_tier");
    TCase *tc = tcase_create("tier");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, counts);
    tcase_add_test(tc, free_queued);
    tcase_add_test(tc, free_idle);
    tcase_add_test(tc, two_contexts);
    tcase_add_test(tc, compiles_overlap);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)

#else /* no LLVM: no ptx backend */

int main(void)
{
    printf("test_gpu_tier: built without LLVM, nothing to test\n");
    return 0;
}

#endif
