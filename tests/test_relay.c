/*
 * tests/test_relay.c: runtime-gpu/relay.c, the thread that runs a function
 * each time it is asked (a split launch's queueing thread per other
 * device, multi.c "Queueing"), without a GPU: relay.c calls no driver.
 *
 * Three relays are driven as multi.c drives them: write each one's job,
 * post all, work meanwhile, wait for all, check what each run wrote.  The
 * cases: many hand-offs back to back (the threads polling), hand-offs
 * spaced past the poll (the threads asleep, woken by the post), a relay
 * stopped while asleep and one stopped right after a wait, and stop of
 * NULL.  Under ThreadSanitizer (tools/tsan.sh) these are the hand-off's
 * race checks.
 */
#ifdef WEFT_HAVE_LLVM
#include <check.h>
#include <time.h>

#include "gpu.h"
#include "tu.h"

#define RELAYS 3

/* A job: the run reads `in`, writes `out` and counts itself. */
typedef struct job {
    int64_t in, out;
    int runs;
} job;

static void run(void *arg)
{
    job *j = arg;
    j->out = 3 * j->in + 1;
    j->runs++;
}

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* `rounds` hand-offs to RELAYS relays, a pause of nap us (0: none) after
 * every `every`-th post. */
static void drive(int rounds, int every, long nap)
{
    job jobs[RELAYS] = {{0}};
    gpu_relay *r[RELAYS];
    for (int i = 0; i < RELAYS; i++) {
        r[i] = gpu_relay_start(NULL, run, &jobs[i]);
        ck_assert_ptr_nonnull(r[i]);
    }
    for (int k = 0; k < rounds; k++) {
        for (int i = 0; i < RELAYS; i++) {
            jobs[i].in = (int64_t)k * RELAYS + i;
            gpu_relay_post(r[i]);
        }
        if (nap > 0 && k % every == 0) {
            nap_us(nap);
        }
        for (int i = 0; i < RELAYS; i++) {
            gpu_relay_wait(r[i]);
            ck_assert_int_eq(jobs[i].out, 3 * ((int64_t)k * RELAYS + i) + 1);
            ck_assert_int_eq(jobs[i].runs, k + 1);
        }
    }
    for (int i = 0; i < RELAYS; i++) {
        gpu_relay_stop(r[i]);
        ck_assert_int_eq(jobs[i].runs, rounds); /* no run after the stop */
    }
}

START_TEST(back_to_back)
{
    drive(2000, 1, 0);
}
END_TEST

START_TEST(asleep_and_woken)
{
    /* 0.3 ms naps: past the 0.2 ms poll, so most posts find the thread
     * asleep (or falling asleep: the race the hand-off must survive) */
    drive(100, 1, 300);
}
END_TEST

START_TEST(mixed)
{
    drive(500, 7, 250);
}
END_TEST

START_TEST(stops)
{
    job j = {0};
    gpu_relay *r = gpu_relay_start(NULL, run, &j);
    ck_assert_ptr_nonnull(r);
    nap_us(1000); /* asleep */
    gpu_relay_stop(r);
    ck_assert_int_eq(j.runs, 0);
    r = gpu_relay_start(NULL, run, &j);
    ck_assert_ptr_nonnull(r);
    j.in = 5;
    gpu_relay_post(r);
    gpu_relay_wait(r);
    gpu_relay_stop(r); /* while it polls */
    ck_assert_int_eq(j.out, 16);
    ck_assert_int_eq(j.runs, 1);
    gpu_relay_stop(NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("relay");
    TCase *tc = tcase_create("hand-off");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, back_to_back);
    tcase_add_test(tc, asleep_and_woken);
    tcase_add_test(tc, mixed);
    tcase_add_test(tc, stops);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)
#else
int main(void)
{
    return 77; /* runtime-gpu is built only with LLVM */
}
#endif
