/*
 * tests/test_cpu_exit.c: at exit, weft's handler runs before the
 * destructors of every LLVM static a compile has made (runtime/tier.c,
 * "Exit").
 *
 * A tier-up thread still inside LLVM when the process exits (an orphan:
 * its context freed, or a context never freed) must be waited for before
 * LLVM's statics are destroyed.  atexit runs handlers in the reverse
 * order of their making, and LLVM makes some statics on first use (the
 * first -O3 code generation builds an X86 table), after weft's handler was
 * first registered: their destructors ran first, and an orphan crashed in
 * LLVM's code generator about once in ten exits (test_cpu_permute,
 * 2026-11-27).  This test interposes __cxa_atexit, through which atexit
 * and every C++ static's destructor are registered, and checks that after
 * compiles on the caller and on the tier-up thread, no static's destructor
 * (a registration with an object) was registered after weft's handler (one
 * with none, in weft's image).  Under ASan or TSan, whose runtimes
 * intercept __cxa_atexit themselves, it is skipped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <pthread.h>

#include "tu.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EXIT_INTERPOSE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EXIT_INTERPOSE 0
#endif
#endif
#ifndef EXIT_INTERPOSE
#define EXIT_INTERPOSE 1
#endif

#if EXIT_INTERPOSE && defined(WEFT_HAVE_LLVM)

/* One registration seen while recording. */
typedef struct reg {
    void (*f)(void *);
    void *arg;
} reg;

enum { REGS_MAX = 1 << 16 };

static pthread_mutex_t regs_lock = PTHREAD_MUTEX_INITIALIZER;
static reg regs[REGS_MAX];
static int nregs;
static bool recording;

int __cxa_atexit(void (*f)(void *), void *arg, void *dso);

/* The C library's __cxa_atexit, after noting the registration. */
int __cxa_atexit(void (*f)(void *), void *arg, void *dso)
{
    static int (*real)(void (*)(void *), void *, void *);
    pthread_mutex_lock(&regs_lock);
    if (!real) {
        void *p = dlsym(RTLD_NEXT, "__cxa_atexit");
        memcpy(&real, &p, sizeof p);
    }
    if (recording && nregs < REGS_MAX) {
        regs[nregs].f = f;
        regs[nregs].arg = arg;
        nregs++;
    }
    int (*call)(void (*)(void *), void *, void *) = real;
    pthread_mutex_unlock(&regs_lock);
    return call ? call(f, arg, dso) : -1;
}

/* Whether function f lies in the image (executable or library) that
 * holds weft. */
static bool in_weft(void (*f)(void *))
{
    Dl_info wi, fi;
    void *w, *p;
    weft_status (*create)(const weft_config *, weft_context **) =
        weft_context_create;
    memcpy(&w, &create, sizeof w);
    memcpy(&p, &f, sizeof p);
    return dladdr(w, &wi) && dladdr(p, &fi) && wi.dli_fbase == fi.dli_fbase;
}

/* Fail unless weft's handler was registered while recording and no
 * static's destructor after its last registration. */
static void check_order(const char *when)
{
    pthread_mutex_lock(&regs_lock);
    int last_weft = -1, last_static = -1;
    for (int i = 0; i < nregs; i++) {
        if (!regs[i].arg && in_weft(regs[i].f)) {
            last_weft = i;
        } else if (regs[i].arg) {
            last_static = i;
        }
    }
    int n = nregs;
    pthread_mutex_unlock(&regs_lock);
    ck_assert_msg(n < REGS_MAX, "%s: too many registrations to tell", when);
    ck_assert_msg(last_weft >= 0,
                  "%s: weft's exit handler was not registered (no tier-up "
                  "thread started?)",
                  when);
    ck_assert_msg(last_static < last_weft,
                  "%s: a static's destructor (registration %d) comes after "
                  "weft's exit handler (%d): it would run first at exit",
                  when, last_static, last_weft);
}

/* sum (map (\x -> x * 3 + 1) xs) over f64 and a segmented sum of i32:
 * kernels whose -O3 code the tier-up thread emits. */
static void compile_and_run(weft_context *ctx)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_F64, 1);
    weft_acc *ys = weft_param(p, WEFT_I32, 1);
    weft_acc *ls = weft_param(p, WEFT_I32, 1);
    weft_fun *m = weft_fun1(p, WEFT_F64);
    weft_fun_return(
        m, weft_add(weft_mul(weft_arg(m, 0), weft_f64(p, 3)), weft_f64(p, 1)));
    weft_acc *r[2] = {weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F64),
                                weft_f64(p, 0), weft_map(m, xs)),
                      weft_fold_seg(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32),
                                    weft_i32(p, 0), ys, ls)};
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, r, 2, &exe));
    double x[1000];
    int64_t y[1000], l[10];
    for (int i = 0; i < 1000; i++) {
        x[i] = i;
        y[i] = i;
    }
    for (int k = 0; k < 10; k++) {
        l[k] = 100;
    }
    weft_array *in[3] = {tu_arr_f(ctx, WEFT_F64, 1, TU_SH(1000), x),
                         tu_arr_i(ctx, WEFT_I32, 1, TU_SH(1000), y),
                         tu_arr_i(ctx, WEFT_I32, 1, TU_SH(10), l)};
    weft_array *out[2] = {NULL, NULL};
    TU_OK(weft_run(exe, in, 3, out, 2));
    /* sum of 3i + 1 over 0..999 (integers: exact in any order); segment
     * k: the sum of 100k .. 100k + 99 */
    TU_CHECK_F(ctx, out[0], 0, 0, NULL, TU_F(1499500.0), 0.0);
    TU_CHECK_I(ctx, out[1], 0, 1, TU_SH(10),
               TU_I(4950, 14950, 24950, 34950, 44950, 54950, 64950, 74950,
                    84950, 94950));
    tu_release_all(out, 2);
    tu_release_all(in, 3);
    weft_executable_free(exe);
    weft_program_free(p);
}

START_TEST(test_exit_handler_last)
{
    char dir[] = "/tmp/weft-exit-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV; /* both tiers: the default */
    cfg.cache_dir = dir;           /* empty: every kernel is compiled */
    weft_context *ctx;
    TU_OK(weft_context_create(&cfg, &ctx));
    pthread_mutex_lock(&regs_lock);
    recording = true;
    pthread_mutex_unlock(&regs_lock);
    compile_and_run(ctx);
    TU_OK(weft_context_wait_optimised(ctx));
    check_order("after the tier-up");
    weft_context_free(ctx);
    check_order("after the free");
    tu_remove_dir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu_exit");
    TCase *tc = tcase_create("exit");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_exit_handler_last);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)

#else

int main(void)
{
    return 77; /* a sanitizer's __cxa_atexit, or no CPU backend */
}

#endif
