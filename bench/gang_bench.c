/*
 * bench/gang_bench.c: what the CPU gang costs, and what it buys.
 *
 * Not a test (nothing is asserted but the results' sums); prints
 *   1. an empty job that runs on the caller (n <= grain): the floor of
 *      every small kernel launch;
 *   2. a job of empty chunks that wakes every worker, back to back (the
 *      workers are still spinning) and after a pause (they sleep);
 *   3. a memory-bound loop (the STREAM triad a = b + s * c) on a gang of
 *      one and on the whole gang: time, bandwidth and speedup.
 *
 * Build (from the repository root, no CMake needed):
 *   gcc -O2 -std=c17 -D_GNU_SOURCE -Iinclude -Ilib -Iruntime-cpu \
 *       bench/gang_bench.c runtime-cpu/gang.c lib/error.c lib/alloc.c \
 *       lib/cancel.c -o gang_bench -lpthread -lm
 * Run: ./gang_bench [threads (0: one per core)] [triad elements]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cpu.h"
#include "timing.h"

static void k_empty(int64_t start, int64_t end, const void *args)
{
    (void)start;
    (void)end;
    (void)args;
}

typedef struct triad {
    double *a;
    const double *b, *c;
    double s;
} triad;

static void k_triad(int64_t start, int64_t end, const void *args)
{
    const triad *t = args;
    double *restrict a = t->a;
    const double *restrict b = t->b;
    const double *restrict c = t->c;
    for (int64_t i = start; i < end; i++) {
        a[i] = b[i] + t->s * c[i];
    }
}

static void k_init(int64_t start, int64_t end, const void *args)
{
    const triad *t = args;
    for (int64_t i = start; i < end; i++) {
        t->a[i] = 0.0;
        ((double *)t->b)[i] = 1.0;
        ((double *)t->c)[i] = (double)(i & 7);
    }
}

static void check(weft_status s)
{
    if (s != WEFT_OK) {
        fprintf(stderr, "gang_bench: %s\n", weft_last_error());
        exit(1);
    }
}

/* Best time of `reps` triads on g, in seconds. */
static double time_triad(cpu_gang *g, triad *t, int64_t n, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = timing_now_s();
        check(cpu_gang_run(g, k_triad, t, n, 1 << 16));
        double dt = timing_now_s() - t0;
        best = dt < best ? dt : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    int64_t n = argc > 2 ? atoll(argv[2]) : (int64_t)1 << 25;
    cpu_gang *g = NULL;
    check(cpu_gang_create(NULL, threads, &g));
    int size = cpu_gang_size(g);
    printf("gang of %d workers (the caller included)\n", size);

    /* 1. empty job on the caller */
    int reps = 1000000;
    double t0 = timing_now_s();
    for (int r = 0; r < reps; r++) {
        check(cpu_gang_run(g, k_empty, NULL, 100, 1000));
    }
    printf("empty job on the caller:          %8.1f ns\n",
           (timing_now_s() - t0) / reps * 1e9);

    /* 2. a job that wakes every worker */
    reps = 20000;
    t0 = timing_now_s();
    for (int r = 0; r < reps; r++) {
        check(cpu_gang_run(g, k_empty, NULL, (int64_t)size * 4, 1));
    }
    printf("all workers, back to back:        %8.2f us\n",
           (timing_now_s() - t0) / reps * 1e6);
    reps = 200;
    double total = 0;
    for (int r = 0; r < reps; r++) {
        struct timespec pause = {0, 2000000}; /* 2 ms: workers sleep */
        nanosleep(&pause, NULL);
        t0 = timing_now_s();
        check(cpu_gang_run(g, k_empty, NULL, (int64_t)size * 4, 1));
        total += timing_now_s() - t0;
    }
    printf("all workers, woken from sleep:    %8.2f us\n", total / reps * 1e6);

    /* 3. memory-bound triad */
    triad t = {.s = 3.0};
    t.a = malloc((size_t)n * sizeof(double));
    double *b = malloc((size_t)n * sizeof(double));
    double *c = malloc((size_t)n * sizeof(double));
    if (t.a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "gang_bench: out of memory\n");
        return 1;
    }
    t.b = b;
    t.c = c;
    /* First touch on the gang, so pages spread over the workers' nodes. */
    check(cpu_gang_run(g, k_init, &t, n, 1 << 16));
    cpu_gang *one = NULL;
    check(cpu_gang_create(NULL, 1, &one));
    double t1 = time_triad(one, &t, n, 5);
    double tp = time_triad(g, &t, n, 10);
    double bytes = 3.0 * 8.0 * (double)n;
    printf("triad, %lld doubles: 1 worker %.2f ms (%.1f GB/s), "
           "%d workers %.2f ms (%.1f GB/s), speedup %.2fx\n",
           (long long)n, t1 * 1e3, bytes / t1 * 1e-9, size, tp * 1e3,
           bytes / tp * 1e-9, t1 / tp);
    double sum = 0;
    for (int64_t i = 0; i < n; i += 4097) {
        sum += t.a[i];
    }
    printf("(checksum %.0f)\n", sum);
    free(t.a);
    free(b);
    free(c);
    cpu_gang_free(one);
    cpu_gang_free(g);
    return 0;
}
