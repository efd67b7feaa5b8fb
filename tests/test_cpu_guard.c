/*
 * tests/test_cpu_guard.c: guarded allocation (WEFT_GUARD_ALLOC, lib/alloc.c,
 * "Guarded data blocks") does what the tests that run under it rely on.
 *
 * The mode is read once per process, so each case runs in a child of its
 * own (fork) with the variable set before weft allocates anything: an
 * array's last element is readable and writable, the byte after it and
 * the byte before its first page fault (SIGSEGV, seen by the parent),
 * "front" puts the first byte right after a guard page, a block is
 * aligned to its element size, and a program runs on the CPU backend with
 * guarded buffers and gives the right values.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tu.h"

/* What a child does with an array of n i32 (its data d). */
enum probe { LAST, PAST_END, BEFORE_START, RUN };

/* The child: WEFT_GUARD_ALLOC=mode, then the probe; exits 0 when the
 * probe ran without fault and its checks held, 1 when a check failed. */
static void child(const char *mode, enum probe pr, int64_t n)
{
    setenv("WEFT_GUARD_ALLOC", mode, 1);
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV | WEFT_FLAG_NO_TIERING;
    weft_context *ctx;
    if (weft_context_create(&cfg, &ctx) != WEFT_OK) {
        _exit(1);
    }
    weft_array *a;
    if (weft_array_create(ctx, WEFT_I32, 1, &n, &a) != WEFT_OK) {
        _exit(1);
    }
    volatile int32_t *d = weft_array_data(a, 0);
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t at = (uintptr_t)d;
    /* aligned to the element; the end (or, front, the start) on a page */
    bool placed = strcmp(mode, "front") == 0
                      ? at % (uintptr_t)page == 0
                      : (at + (uintptr_t)n * 4) % (uintptr_t)page == 0;
    if (at % 4 != 0 || !placed) {
        _exit(1);
    }
    switch (pr) {
    case LAST: {
        bool zero = d[0] == 0; /* weft_array_create zeroes */
        d[n - 1] = 7;
        _exit(zero && d[n - 1] == 7 ? 0 : 1);
    }
    case PAST_END: (void)d[n]; _exit(0);
    case BEFORE_START:
        /* the page before the first page of the block */
        (void)*(volatile char *)((at / (uintptr_t)page) * (uintptr_t)page - 1);
        _exit(0);
    case RUN: {
        weft_program *p;
        weft_program_create(ctx, &p);
        weft_acc *xs = weft_param(p, WEFT_I32, 1);
        weft_acc *r =
            weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32), weft_i32(p, 0), xs);
        weft_executable *exe;
        if (weft_compile(p, &r, 1, &exe) != WEFT_OK) {
            _exit(1);
        }
        for (int64_t i = 0; i < n; i++) {
            d[i] = (int32_t)i;
        }
        weft_array *out = NULL;
        if (weft_run(exe, &a, 1, &out, 1) != WEFT_OK) {
            _exit(1);
        }
        const int32_t *s = weft_array_data(out, 0);
        _exit(*s == (int32_t)(n * (n - 1) / 2) ? 0 : 1);
    }
    }
    _exit(1);
}

/* Run the probe in a child; its wait status. */
static int probe(const char *mode, enum probe pr, int64_t n)
{
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        child(mode, pr, n);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

static void expect_ok(const char *mode, enum probe pr, int64_t n)
{
    int st = probe(mode, pr, n);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "mode %s probe %d n %lld: status %#x", mode, (int)pr,
                  (long long)n, st);
}

static void expect_fault(const char *mode, enum probe pr, int64_t n)
{
    int st = probe(mode, pr, n);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
                  "mode %s probe %d n %lld: no fault (status %#x)", mode,
                  (int)pr, (long long)n, st);
}

START_TEST(test_guard_end)
{
    static const int64_t sizes[] = {1, 3, 1000, 1024, 100003};
    for (int i = 0; i < 5; i++) {
        expect_ok("1", LAST, sizes[i]);
        expect_fault("1", PAST_END, sizes[i]);
        expect_fault("1", BEFORE_START, sizes[i]);
        expect_ok("1", RUN, sizes[i]);
    }
}
END_TEST

START_TEST(test_guard_front)
{
    expect_ok("front", LAST, 1000);
    expect_fault("front", BEFORE_START, 1000);
    expect_ok("front", RUN, 1000);
    /* a size of whole pages ends at the trailing guard page too */
    expect_fault("front", PAST_END, 1024);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu_guard");
    TCase *tc = tcase_create("guard");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_guard_end);
    tcase_add_test(tc, test_guard_front);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)
