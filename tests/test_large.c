/*
 * tests/test_large.c: large programs and the findings of the misuse probes
 * (issue 21).
 *
 *   - wide_and_nested_tuples: a tuple of 100,000 components summed by
 *     projections, and 100,000 nested 1-tuples unwrapped again (the
 *     tuple types are interned through a hash table, and a projection of
 *     a bound tuple copies one component): values on interp, and on cpu
 *     at 300 (one element function that size is LLVM's worst case);
 *   - shared_chain: 100,000 links e' = e * 3 xor e >> 1 whose every link
 *     also uses one shared term (note_hoists' chain of bound terms):
 *     values on the interpreter, against the same recurrence in C;
 *   - unit_while: a while loop whose state is the unit type, inside a map
 *     that the CPU compiles as SPMD (the uniformity analysis once passed
 *     NULL to memcpy for it: run this under UBSan);
 *   - unit_generate_huge: a generate over 2^40 units gives its shape and
 *     computes nothing, on every backend;
 *   - interp_error_element: the interpreter's run-time errors name the
 *     element, as checked compiled kernels do;
 *   - concurrent_compiles: 8 threads compile and run programs at once on
 *     one CPU context (LLVM's pass instrumentation made a ThreadSanitizer
 *     report here: tools/tsan.sh runs this test);
 *   - free_during_tier_up: weft_context_free returns while the background
 *     optimisation is inside a tier-up, which then finishes alone
 *     (runtime-cpu/jit.c, "Freeing").
 */
#include <dirent.h>
#include <pthread.h>

#include "tu.h"
#ifdef WEFT_HAVE_LLVM
#include "cpu.h"
#endif

static const weft_backend backends[] = {
    WEFT_BACKEND_INTERP,
#ifdef WEFT_HAVE_LLVM
    WEFT_BACKEND_CPU,
#endif
};
enum { NBACKEND = sizeof backends / sizeof backends[0] };

/* Run r (one result) of u's program on in[0..nin-1] into *out. */
static void run1(tu *u, weft_acc *r, weft_array **in, int nin,
                 weft_array **out)
{
    TU_PROGRAM_OK(u->p);
    TU_OK(tu_run(u->p, &r, 1, in, nin, out, 1));
}

START_TEST(wide_and_nested_tuples)
{
    for (int k = 0; k < NBACKEND; k++) {
        /* LLVM's passes take time superlinear in one huge element
         * function: the CPU gets a smaller program */
        const int N = backends[k] == WEFT_BACKEND_INTERP ? 100000 : 300;
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        /* map (\x -> sum_i get(t, i)), t = (x + 0, ..., x + N-1) */
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_exp *x = weft_arg(f, 0);
        weft_exp **c = malloc(sizeof *c * (size_t)N);
        ck_assert_ptr_nonnull(c);
        for (int i = 0; i < N; i++) {
            c[i] = weft_add(x, weft_i64(p, i));
        }
        weft_exp *t = weft_tuple(p, N, c), *e = weft_get(t, 0);
        free(c);
        for (int i = 1; i < N; i++) {
            e = weft_add(e, weft_get(t, i));
        }
        weft_fun_return(f, e);
        weft_acc *xs = weft_param(p, WEFT_I64, 1);
        weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(2),
                                      TU_I(0, 1))};
        weft_array *out[1] = {NULL};
        run1(&u, weft_map(f, xs), in, 1, out);
        /* sum over i of (x + i) = N x + N (N - 1) / 2 */
        int64_t base = (int64_t)N * (N - 1) / 2;
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(2), TU_I(base, base + N));
        weft_array_release(out[0]);
        /* N nested 1-tuples of x * 2, then N projections */
        tu_reset(&u);
        p = u.p;
        f = weft_fun1(p, WEFT_I64);
        e = weft_mul(weft_arg(f, 0), weft_i64(p, 2));
        for (int i = 0; i < N; i++) {
            e = weft_tuple(p, 1, &e);
        }
        for (int i = 0; i < N; i++) {
            e = weft_get(e, 0);
        }
        weft_fun_return(f, e);
        run1(&u, weft_map(f, weft_param(p, WEFT_I64, 1)), in, 1, out);
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(2), TU_I(0, 2));
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(shared_chain)
{
    enum { N = 100000 };
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    /* e' = (e * 3 xor e >> 1) + s, s = the a, shared by every link */
    weft_acc *a = weft_param(p, WEFT_I64, 0);
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *s = weft_the(a), *e = weft_arg(f, 0);
    for (int i = 0; i < N; i++) {
        e = weft_add(weft_bxor(weft_mul(e, weft_i64(p, 3)),
                               weft_shr(e, weft_i64(p, 1))),
                     s);
    }
    weft_fun_return(f, e);
    weft_array *in[2] = {tu_arr_i(u.ctx, WEFT_I64, 0, NULL, TU_I(7)),
                         tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(3),
                                  TU_I(1, -2, 12345))};
    weft_array *out[1] = {NULL};
    run1(&u, weft_map(f, weft_param(p, WEFT_I64, 1)), in, 2, out);
    int64_t want[3] = {1, -2, 12345};
    for (int j = 0; j < 3; j++) {
        uint64_t v = (uint64_t)want[j];
        for (int i = 0; i < N; i++) {
            /* i64 arithmetic that wraps, and an arithmetic shift */
            uint64_t sh = (uint64_t)((int64_t)v >> 1);
            v = ((v * 3u) ^ sh) + 7u;
        }
        want[j] = (int64_t)v;
    }
    TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(3), want);
    weft_array_release(out[0]);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    tu_close(&u);
}
END_TEST

START_TEST(unit_while)
{
    for (int k = 0; k < NBACKEND; k++) {
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        weft_type unit = weft_type_tuple(u.ctx, 0, NULL);
        weft_type pair_t =
            weft_type_tuple(u.ctx, 2, (weft_type[]){WEFT_I64, unit});
        ck_assert_int_ne(unit, 0);
        ck_assert_int_ne(pair_t, 0);
        /* map (\x -> (x + 1, while (\() -> x > 100) (\() -> ()) ())) */
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_exp *x = weft_arg(f, 0);
        weft_fun *cond = weft_fun1(p, unit), *body = weft_fun1(p, unit);
        weft_fun_return(cond, weft_gt(x, weft_i64(p, 100)));
        weft_fun_return(body, weft_arg(body, 0));
        weft_exp *w = weft_while(cond, body, weft_tuple(p, 0, NULL));
        weft_exp *pair[2] = {weft_add(x, weft_i64(p, 1)), w};
        weft_fun_return(f, weft_tuple(p, 2, pair));
        weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I64, 1, TU_SH(20),
                                      TU_I(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                           11, 12, 13, 14, 15, 16, 17, 18,
                                           19))};
        weft_array *out[1] = {NULL};
        run1(&u, weft_map(f, weft_param(p, WEFT_I64, 1)), in, 1, out);
        ck_assert_int_eq(weft_array_type(out[0]), pair_t);
        TU_CHECK_I(u.ctx, out[0], 0, 1, TU_SH(20),
                   TU_I(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                        16, 17, 18, 19, 20));
        weft_array_release(out[0]);
        weft_array_release(in[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(unit_generate_huge)
{
    const int64_t n = (int64_t)1 << 40;
    for (int k = 0; k < NBACKEND; k++) {
        tu u;
        tu_open_backend(&u, backends[k]);
        weft_program *p = u.p;
        /* generate (Z :. 2^40) (\ix -> ()): a shape, no data */
        weft_fun *f = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(f, weft_tuple(p, 0, NULL));
        weft_acc *g = weft_generate(weft_index1(weft_i64(p, n)), f);
        weft_array *out[1] = {NULL};
        run1(&u, g, NULL, 0, out);
        ck_assert_int_eq(weft_array_rank(out[0]), 1);
        ck_assert_int_eq(weft_array_size(out[0]), n);
        ck_assert_int_eq(weft_type_leaves(u.ctx, weft_array_type(out[0])),
                         0);
        weft_array_release(out[0]);
        tu_close(&u);
    }
}
END_TEST

START_TEST(interp_error_element)
{
    tu u;
    tu_open(&u);
    weft_program *p = u.p;
    /* map (\x -> 10 quot x) over [1, 2, 0, 4]: element 2 divides by 0 */
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_quot(weft_i32(p, 10), weft_arg(f, 0)));
    weft_acc *m = weft_map(f, weft_param(p, WEFT_I32, 1));
    weft_array *in[1] = {tu_arr_i(u.ctx, WEFT_I32, 1, TU_SH(4),
                                  TU_I(1, 2, 0, 4))};
    weft_array *out[1] = {NULL};
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, tu_run(p, &m, 1, in, 1, out, 1));
    ck_assert_msg(strstr(weft_last_error(), "division by zero") &&
                      strstr(weft_last_error(), " at element 2"),
                  "message: %s", weft_last_error());
    /* a fold: the input position, once only */
    tu_reset(&u);
    p = u.p;
    weft_fun *g = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(g, weft_add(weft_arg(g, 0),
                                weft_quot(weft_i32(p, 10), weft_arg(g, 1))));
    weft_acc *r = weft_fold_all(g, weft_i32(p, 0), weft_param(p, WEFT_I32, 1));
    TU_STATUS(WEFT_ERR_DIVIDE_BY_ZERO, tu_run(p, &r, 1, in, 1, out, 1));
    const char *msg = weft_last_error();
    const char *at = strstr(msg, " at element 2");
    ck_assert_msg(at && !strstr(at + 1, " at element "), "message: %s",
                  msg);
    weft_array_release(in[0]);
    tu_close(&u);
}
END_TEST

#ifdef WEFT_HAVE_LLVM
enum { NTHREAD = 8 };

typedef struct compile_job {
    weft_context *ctx;
    int k;          /* this thread's constant */
    int ok;         /* 1 when the result was right */
    char msg[256];
} compile_job;

/* Compile and run map (\x -> x * k + k * k) on ctx; job->ok on success. */
static void *compile_one(void *arg)
{
    compile_job *j = arg;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    weft_array *in = NULL, *out = NULL;
    int64_t xs[4] = {1, 2, 3, 4}, got[4] = {0};
    const void *data[1] = {xs};
    if (weft_program_create(j->ctx, &p) != WEFT_OK) {
        goto done;
    }
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, weft_add(weft_mul(weft_arg(f, 0), weft_i64(p, j->k)),
                                weft_i64(p, (int64_t)j->k * j->k)));
    weft_acc *r = weft_map(f, weft_param(p, WEFT_I64, 1));
    if (weft_compile(p, &r, 1, &exe) != WEFT_OK ||
        weft_array_from_host(j->ctx, WEFT_I64, 1, TU_SH(4), data, &in) !=
            WEFT_OK ||
        weft_run(exe, &in, 1, &out, 1) != WEFT_OK ||
        weft_array_read(out, 0, got, sizeof got) != WEFT_OK) {
        goto done;
    }
    j->ok = 1;
    for (int i = 0; i < 4; i++) {
        j->ok &= got[i] == xs[i] * j->k + (int64_t)j->k * j->k;
    }
done:
    if (!j->ok) {
        snprintf(j->msg, sizeof j->msg, "%s", weft_last_error());
    }
    weft_array_release(in);
    weft_array_release(out);
    weft_executable_free(exe);
    weft_program_free(p);
    return NULL;
}

START_TEST(concurrent_compiles)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    compile_job jobs[NTHREAD];
    pthread_t th[NTHREAD];
    for (int i = 0; i < NTHREAD; i++) {
        jobs[i] = (compile_job){ctx, i + 3, 0, ""};
        ck_assert_int_eq(pthread_create(&th[i], NULL, compile_one, &jobs[i]),
                         0);
    }
    for (int i = 0; i < NTHREAD; i++) {
        pthread_join(th[i], NULL);
    }
    for (int i = 0; i < NTHREAD; i++) {
        ck_assert_msg(jobs[i].ok, "thread %d: %s", i, jobs[i].msg);
    }
    TU_OK(weft_context_wait_optimised(ctx));
    weft_context_free(ctx);
}
END_TEST

/* The tier-up hook of free_during_tier_up: tells that a tier-up began,
 * then holds it until the test lets it go. */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hook_cond = PTHREAD_COND_INITIALIZER;
static int hook_entered, hook_released;

static void hold_tier_up(void)
{
    pthread_mutex_lock(&hook_lock);
    hook_entered++;
    pthread_cond_broadcast(&hook_cond);
    while (!hook_released) {
        pthread_cond_wait(&hook_cond, &hook_lock);
    }
    pthread_mutex_unlock(&hook_lock);
}

/* weft_context_free returns while the background thread is inside a
 * tier-up (held there by the hook, so it cannot have finished: a free
 * that waited for it would never return and the test would time out);
 * the thread then finishes alone and frees the JIT, and the optimised
 * kernel still reaches the disk cache. */
START_TEST(free_during_tier_up)
{
    char dir[] = "/tmp/weft-large-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV; /* tiered: the default */
    cfg.cache_dir = dir;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    hook_entered = hook_released = 0;
    cpu_jit_tier_hook = hold_tier_up;
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, weft_mul(weft_arg(f, 0), weft_i64(p, 5)));
    weft_acc *r = weft_map(f, weft_param(p, WEFT_I64, 1));
    weft_array *in[1] = {tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(1, 2, 3))};
    weft_array *out[1] = {NULL};
    TU_OK(tu_run(p, &r, 1, in, 1, out, 1)); /* the quick code */
    TU_CHECK_I(ctx, out[0], 0, 1, TU_SH(3), TU_I(5, 10, 15));
    weft_array_release(out[0]);
    weft_array_release(in[0]);
    weft_program_free(p);
    pthread_mutex_lock(&hook_lock);
    while (hook_entered == 0) {
        pthread_cond_wait(&hook_cond, &hook_lock);
    }
    pthread_mutex_unlock(&hook_lock);
    int before = atomic_load(&cpu_jit_orphaned);
    weft_context_free(ctx); /* returns with the tier-up held */
    ck_assert_int_eq(atomic_load(&cpu_jit_orphaned), before + 1);
    pthread_mutex_lock(&hook_lock);
    ck_assert_int_eq(hook_released, 0);
    hook_released = 1;
    pthread_cond_broadcast(&hook_cond);
    pthread_mutex_unlock(&hook_lock);
    cpu_jit_wait_orphans();
    cpu_jit_tier_hook = NULL;
    /* the optimised object was written by the orphaned thread */
    int objects = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        objects += n > 2 && strcmp(e->d_name + n - 2, ".o") == 0;
    }
    closedir(d);
    ck_assert_int_eq(objects, 1);
    tu_remove_dir(dir);
}
END_TEST
#endif

static Suite *large_suite(void)
{
    const struct {
        const char *name;
        const TTest *test;
    } tests[] = {
        {"wide_and_nested_tuples", wide_and_nested_tuples},
        {"shared_chain", shared_chain},
        {"unit_while", unit_while},
        {"unit_generate_huge", unit_generate_huge},
        {"interp_error_element", interp_error_element},
#ifdef WEFT_HAVE_LLVM
        {"concurrent_compiles", concurrent_compiles},
        {"free_during_tier_up", free_during_tier_up},
#endif
    };
    Suite *s = suite_create("large");
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        TCase *t = tcase_create(tests[i].name);
        tcase_add_test(t, tests[i].test);
        tcase_set_timeout(t, 280);
        suite_add_tcase(s, t);
    }
    return s;
}

TU_MAIN(large_suite)
