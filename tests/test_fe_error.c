/*
 * tests/test_fe_error.c: lib/error.c's two internal error channels.
 *
 *   oom_message       fe_oom and fe_fail_oom: WEFT_ERR_OUT_OF_MEMORY and
 *                     "<who>: out of memory" as the thread's last error
 *                     (fe_fail_oom also on the program, first error kept).
 *   check_release     FE_CHECK as a release build compiles it (this file
 *                     defines NDEBUG before fe.h in every build type): a
 *                     true condition passes through, a false one returns
 *                     WEFT_ERR_INTERNAL with "file:line: weft: internal
 *                     error: cond", the condition evaluated once.
 *   check_debug       the debug path, fe_internal_abort, in a child
 *                     process: it dies of SIGABRT after writing the same
 *                     file:line message to stderr.
 *   phases_bound      runtime/exec.c's rt_job_phases refuses a run of 0 or
 *                     more than RT_PHASES_MAX phases with WEFT_ERR_INTERNAL
 *                     naming the count (before it looks at the job).
 */
#ifndef NDEBUG
#define NDEBUG 1
#endif

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fe.h"
#include "tu.h"
#ifdef WEFT_HAVE_LLVM
#include "rt.h"
#endif

START_TEST(oom_message)
{
    ck_assert_int_eq(fe_oom("weft_compile"), WEFT_ERR_OUT_OF_MEMORY);
    ck_assert_str_eq(weft_last_error(), "weft_compile: out of memory");

    weft_context *ctx = NULL;
    weft_program *p = NULL;
    TU_OK(weft_context_create(NULL, &ctx));
    TU_OK(weft_program_create(ctx, &p));
    ck_assert_ptr_null(fe_fail_oom(p, "weft_map"));
    ck_assert_str_eq(weft_last_error(), "weft_map: out of memory");
    ck_assert_int_eq(p->status, WEFT_ERR_OUT_OF_MEMORY);
    ck_assert_str_eq(p->msg, "weft_map: out of memory");
    /* a later one is the thread's last error, the program keeps its first */
    ck_assert_ptr_null(fe_fail_oom(p, "weft_fold"));
    ck_assert_str_eq(weft_last_error(), "weft_fold: out of memory");
    ck_assert_str_eq(p->msg, "weft_map: out of memory");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* The line of checked()'s FE_CHECK, for the expected message. */
static int check_line;

/* An FE_CHECK that counts its evaluations, in a function returning a
 * status. */
static weft_status checked(int x, int *calls)
{
    check_line = __LINE__ + 1;
    FE_CHECK((*calls += 1) > 0 && x > 0);
    return WEFT_OK;
}

START_TEST(check_release)
{
    int calls = 0;
    fe_error_clear();
    ck_assert_int_eq(checked(1, &calls), WEFT_OK);
    ck_assert_int_eq(calls, 1);
    ck_assert_str_eq(weft_last_error(), "");

    calls = 0;
    ck_assert_int_eq(checked(0, &calls), WEFT_ERR_INTERNAL);
    ck_assert_int_eq(calls, 1);
    char want[FE_MSG_MAX];
    snprintf(want, sizeof want,
             "%s:%d: weft: internal error: (*calls += 1) > 0 && x > 0",
             __FILE__, check_line);
    ck_assert_str_eq(weft_last_error(), want);
}
END_TEST

START_TEST(check_debug)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        fe_internal_abort("lib/x.c", 42, "n < 4");
    }
    close(fd[1]);
    char buf[256] = {0};
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 &&
           (r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0) {
        got += (size_t)r;
    }
    close(fd[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status));
    ck_assert_int_eq(WTERMSIG(status), SIGABRT);
    /* the message comes first; a sanitizer may add its own lines after */
    const char *want = "lib/x.c:42: weft: internal error: n < 4\n";
    ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "stderr: %s", buf);
}
END_TEST

#ifdef WEFT_HAVE_LLVM
START_TEST(phases_bound)
{
    rt_phase ph[RT_PHASES_MAX + 1] = {{0}};
    ck_assert_int_eq(rt_job_phases(NULL, RT_PHASES_MAX + 1, ph),
                     WEFT_ERR_INTERNAL);
    ck_assert_str_eq(weft_last_error(),
                     "weft_run: 5 phases in one kernel run (1 to 4)");
    ck_assert_int_eq(rt_job_phases(NULL, 0, ph), WEFT_ERR_INTERNAL);
    ck_assert_str_eq(weft_last_error(),
                     "weft_run: 0 phases in one kernel run (1 to 4)");
}
END_TEST
#endif

static Suite *suite(void)
{
    Suite *s = suite_create("fe_error");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, oom_message);
    tcase_add_test(tc, check_release);
    tcase_add_test(tc, check_debug);
#ifdef WEFT_HAVE_LLVM
    tcase_add_test(tc, phases_bound);
#endif
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)
