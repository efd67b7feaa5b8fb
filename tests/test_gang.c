/*
 * tests/test_gang.c: the CPU runtime's work-stealing gang.
 *
 * The gang is internal: this white-box test includes runtime-cpu/cpu.h
 * and links the static library, which carries it.  Every test asserts values, never
 * timings: each element runs exactly once (a per-element atomic count),
 * sums over many tiny jobs, an unbalanced kernel whose result is checked,
 * several host threads sharing one gang, a gang of one, nested runs,
 * phases (a three-phase prefix sum), failures reported by kernels, bad
 * arguments, allocation failure, and create/free in a loop with the
 * process's thread count back where it started.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "weft.h"

static cpu_gang *make_gang(int n)
{
    cpu_gang *g = NULL;
    weft_status s = cpu_gang_create(NULL, n, &g);
    ck_assert_msg(s == WEFT_OK, "cpu_gang_create: %s", weft_last_error());
    ck_assert_ptr_nonnull(g);
    return g;
}

/* Threads of this process, from /proc (-1 if unreadable). */
static int thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "Threads:", 8) == 0) {
            n = atoi(line + 8);
            break;
        }
    }
    fclose(f);
    return n;
}

/* ---- kernels ---------------------------------------------------------- */

/* Adds the sum of its indices to *args (an _Atomic int64_t). */
static void k_sum(int64_t start, int64_t end, const void *args)
{
    _Atomic int64_t *acc = (_Atomic int64_t *)args;
    int64_t s = 0;
    for (int64_t i = start; i < end; i++) {
        s += i;
    }
    atomic_fetch_add_explicit(acc, s, memory_order_relaxed);
}

typedef struct count_args {
    atomic_int *count; /* runs per element */
    int64_t n;
    atomic_int bad; /* calls with a range outside [0, n) */
} count_args;

static void k_count(int64_t start, int64_t end, const void *args)
{
    count_args *a = (count_args *)args;
    if (start < 0 || end > a->n || start >= end) {
        atomic_fetch_add(&a->bad, 1);
        return;
    }
    for (int64_t i = start; i < end; i++) {
        atomic_fetch_add_explicit(&a->count[i], 1, memory_order_relaxed);
    }
}

/* Element i's value: a loop whose length depends on i, 1000 times longer
 * for every 4096th element. */
static uint64_t heavy_value(int64_t i)
{
    int64_t iters = i % 4096 == 17 ? 200000 : 200;
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15u + 1;
    for (int64_t t = 0; t < iters; t++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

typedef struct heavy_args {
    uint64_t *out;
} heavy_args;

static void k_heavy(int64_t start, int64_t end, const void *args)
{
    const heavy_args *a = args;
    for (int64_t i = start; i < end; i++) {
        a->out[i] = heavy_value(i);
    }
}

/* The first element of count[0..n-1] that is not 1, or -1.  (Asserting
 * per element would be slow: every ck_assert marks a point.) */
static int64_t first_not_once(atomic_int *count, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (atomic_load_explicit(&count[i], memory_order_relaxed) != 1) {
            return i;
        }
    }
    return -1;
}

/* ---- tests ------------------------------------------------------------ */

START_TEST(test_every_element_once)
{
    static const int64_t sizes[] = {0, 1, 7, 1000, 1000000};
    static const int64_t grains[] = {1, 3, 7, 99, 1001, 999983, 0, -5};
    static const int gangs[] = {1, 3, 4};
    for (size_t gi = 0; gi < sizeof gangs / sizeof *gangs; gi++) {
        cpu_gang *g = make_gang(gangs[gi]);
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            int64_t n = sizes[si];
            atomic_int *count = calloc((size_t)(n > 0 ? n : 1), sizeof *count);
            ck_assert_ptr_nonnull(count);
            for (size_t ri = 0; ri < sizeof grains / sizeof *grains; ri++) {
                int64_t grain = grains[ri];
                if (n == 1000000 && grain == 1 && gangs[gi] != 4) {
                    continue; /* one slow case is enough */
                }
                count_args a = {.count = count, .n = n};
                atomic_init(&a.bad, 0);
                for (int64_t i = 0; i < n; i++) {
                    atomic_init(&count[i], 0);
                }
                weft_status s = cpu_gang_run(g, k_count, &a, n, grain);
                ck_assert_int_eq(s, WEFT_OK);
                ck_assert_int_eq(atomic_load(&a.bad), 0);
                int64_t wrong = first_not_once(count, n);
                ck_assert_msg(wrong < 0,
                              "gang %d, n %lld, grain %lld: element %lld "
                              "ran %d times",
                              gangs[gi], (long long)n, (long long)grain,
                              (long long)wrong,
                              wrong < 0 ? 1 : atomic_load(&count[wrong]));
            }
            free(count);
        }
        cpu_gang_free(g);
    }
}
END_TEST

START_TEST(test_many_tiny_jobs)
{
    cpu_gang *g = make_gang(4);
    for (int r = 0; r < 100000; r++) {
        int64_t n = 1 + r % 100;
        int64_t grain = 1 + r % 7;
        _Atomic int64_t acc;
        atomic_init(&acc, 0);
        ck_assert_int_eq(cpu_gang_run(g, k_sum, &acc, n, grain), WEFT_OK);
        ck_assert_int_eq(atomic_load(&acc), n * (n - 1) / 2);
    }
    cpu_gang_free(g);
}
END_TEST

START_TEST(test_unbalanced)
{
    cpu_gang *g = make_gang(4);
    int64_t n = 20000;
    uint64_t *out = calloc((size_t)n, sizeof *out);
    ck_assert_ptr_nonnull(out);
    heavy_args a = {.out = out};
    int64_t grains[] = {1, 16, 0};
    for (size_t gi = 0; gi < 3; gi++) {
        memset(out, 0, (size_t)n * sizeof *out);
        ck_assert_int_eq(cpu_gang_run(g, k_heavy, &a, n, grains[gi]), WEFT_OK);
        int64_t wrong = -1;
        for (int64_t i = 0; i < n && wrong < 0; i++) {
            if (out[i] != heavy_value(i)) {
                wrong = i;
            }
        }
        ck_assert_msg(wrong < 0, "grain %lld: element %lld is wrong",
                      (long long)grains[gi], (long long)wrong);
    }
    free(out);
    cpu_gang_free(g);
}
END_TEST

typedef struct host_args {
    cpu_gang *g;
    int seed;
    int failures;
} host_args;

static void *host_main(void *p)
{
    host_args *h = p;
    for (int r = 0; r < 3000; r++) {
        int64_t n = 1 + (r * 37 + h->seed * 11) % 5000;
        int64_t grain = 1 + (r + h->seed) % 50;
        _Atomic int64_t acc;
        atomic_init(&acc, 0);
        if (cpu_gang_run(h->g, k_sum, &acc, n, grain) != WEFT_OK ||
            atomic_load(&acc) != n * (n - 1) / 2) {
            h->failures++;
        }
    }
    return NULL;
}

START_TEST(test_host_threads)
{
    cpu_gang *g = make_gang(4);
    pthread_t t[4];
    host_args h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = (host_args){.g = g, .seed = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, host_main, &h[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(h[i].failures, 0);
    }
    cpu_gang_free(g);
}
END_TEST

/* Per-worker partial sums: each worker adds into its own slot. */
typedef struct partial_args {
    int64_t *partial; /* one per worker */
    int size;
    atomic_int bad_id;
} partial_args;

static void k_partial(int64_t start, int64_t end, const void *args)
{
    partial_args *a = (partial_args *)args;
    int id = cpu_gang_worker_id();
    if (id < 0 || id >= a->size) {
        atomic_fetch_add(&a->bad_id, 1);
        return;
    }
    for (int64_t i = start; i < end; i++) {
        a->partial[id] += i;
    }
}

START_TEST(test_worker_ids)
{
    for (int size = 1; size <= 5; size += 2) {
        cpu_gang *g = make_gang(size);
        ck_assert_int_eq(cpu_gang_size(g), size);
        int64_t partial[8];
        for (int r = 0; r < 200; r++) {
            memset(partial, 0, sizeof partial);
            partial_args a = {.partial = partial, .size = size};
            atomic_init(&a.bad_id, 0);
            int64_t n = 20000 + r;
            ck_assert_int_eq(cpu_gang_run(g, k_partial, &a, n, 1 + r % 9),
                             WEFT_OK);
            ck_assert_int_eq(atomic_load(&a.bad_id), 0);
            int64_t total = 0;
            for (int i = 0; i < size; i++) {
                total += partial[i];
            }
            ck_assert_int_eq(total, n * (n - 1) / 2);
        }
        ck_assert_int_eq(cpu_gang_worker_id(), 0);
        cpu_gang_free(g);
    }
}
END_TEST

START_TEST(test_gang_of_one)
{
    cpu_gang *g = make_gang(1);
    ck_assert_int_eq(cpu_gang_size(g), 1);
    int64_t n = 12345;
    atomic_int *count = calloc((size_t)n, sizeof *count);
    ck_assert_ptr_nonnull(count);
    count_args a = {.count = count, .n = n};
    atomic_init(&a.bad, 0);
    ck_assert_int_eq(cpu_gang_run(g, k_count, &a, n, 1), WEFT_OK);
    ck_assert_int_eq(first_not_once(count, n), -1);
    free(count);
    cpu_gang_free(g);
}
END_TEST

START_TEST(test_create_free_loop)
{
    /* A first gang, so that threads a runtime starts once (ThreadSanitizer
     * has one) are already there when counting. */
    cpu_gang_free(make_gang(2));
    int before = thread_count();
    for (int r = 0; r < 200; r++) {
        cpu_gang *g = make_gang(1 + r % 6);
        if (r % 3 == 0) {
            _Atomic int64_t acc;
            atomic_init(&acc, 0);
            ck_assert_int_eq(cpu_gang_run(g, k_sum, &acc, 5000, 10), WEFT_OK);
            ck_assert_int_eq(atomic_load(&acc), 5000 * 4999 / 2);
        }
        cpu_gang_free(g);
    }
    cpu_gang_free(NULL);
    if (before > 0) {
        ck_assert_int_eq(thread_count(), before);
    }
    /* nthreads 0: one per core. */
    cpu_gang *g = make_gang(0);
    ck_assert_int_ge(cpu_gang_size(g), 1);
    cpu_gang_free(g);
}
END_TEST

/* A three-phase inclusive prefix sum: chunk sums, a scan of the sums on
 * one worker, then each chunk adds its offset. */
typedef struct scan_args {
    const int64_t *in;
    int64_t *out;
    int64_t *sums; /* one per chunk */
    int64_t n, chunk, nchunks;
} scan_args;

static void k_scan1(int64_t start, int64_t end, const void *args)
{
    const scan_args *a = args;
    for (int64_t c = start; c < end; c++) {
        int64_t lo = c * a->chunk;
        int64_t hi = lo + a->chunk < a->n ? lo + a->chunk : a->n;
        int64_t s = 0;
        for (int64_t i = lo; i < hi; i++) {
            s += a->in[i];
            a->out[i] = s;
        }
        a->sums[c] = s;
    }
}

static void k_scan2(int64_t start, int64_t end, const void *args)
{
    const scan_args *a = args;
    (void)start;
    (void)end;
    int64_t s = 0;
    for (int64_t c = 0; c < a->nchunks; c++) {
        int64_t t = a->sums[c];
        a->sums[c] = s;
        s += t;
    }
}

static void k_scan3(int64_t start, int64_t end, const void *args)
{
    const scan_args *a = args;
    for (int64_t c = start; c < end; c++) {
        int64_t lo = c * a->chunk;
        int64_t hi = lo + a->chunk < a->n ? lo + a->chunk : a->n;
        for (int64_t i = lo; i < hi; i++) {
            a->out[i] += a->sums[c];
        }
    }
}

START_TEST(test_phases_scan)
{
    cpu_gang *g = make_gang(4);
    int64_t n = 300001;
    int64_t *in = malloc((size_t)n * sizeof *in);
    int64_t *out = malloc((size_t)n * sizeof *out);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    for (int64_t i = 0; i < n; i++) {
        in[i] = (i * 7919) % 1000 - 500;
    }
    for (int64_t chunk = 1; chunk <= 100000; chunk *= 17) {
        scan_args a = {.in = in, .out = out, .n = n, .chunk = chunk};
        a.nchunks = (n + chunk - 1) / chunk;
        a.sums = malloc((size_t)a.nchunks * sizeof *a.sums);
        ck_assert_ptr_nonnull(a.sums);
        cpu_phase ph[3] = {
            {.kernel = k_scan1, .args = &a, .n = a.nchunks, .grain = 1},
            {.kernel = k_scan2, .args = &a, .n = 1, .grain = 1},
            {.kernel = k_scan3, .args = &a, .n = a.nchunks, .grain = 3},
        };
        ck_assert_int_eq(cpu_gang_run_phases(g, 3, ph), WEFT_OK);
        int64_t s = 0, wrong = -1;
        for (int64_t i = 0; i < n && wrong < 0; i++) {
            s += in[i];
            if (out[i] != s) {
                wrong = i;
            }
        }
        ck_assert_msg(wrong < 0,
                      "chunk %lld: element %lld is %lld, "
                      "expected %lld",
                      (long long)chunk, (long long)wrong,
                      (long long)(wrong < 0 ? 0 : out[wrong]), (long long)s);
        free(a.sums);
    }
    free(in);
    free(out);
    cpu_gang_free(g);
}
END_TEST

/* Phase p checks that every element is p, then makes it p + 1. */
typedef struct step_args {
    int *v;
    int p;
    atomic_int *bad;
} step_args;

static void k_step(int64_t start, int64_t end, const void *args)
{
    const step_args *a = args;
    for (int64_t i = start; i < end; i++) {
        if (a->v[i] != a->p) {
            atomic_fetch_add(a->bad, 1);
        }
        a->v[i] = a->p + 1;
    }
}

START_TEST(test_many_phases)
{
    cpu_gang *g = make_gang(3);
    enum { N = 50000, P = 11 };
    int *v = calloc(N, sizeof *v);
    ck_assert_ptr_nonnull(v);
    atomic_int bad;
    atomic_init(&bad, 0);
    step_args a[P];
    cpu_phase ph[P + 1];
    for (int p = 0; p < P; p++) {
        a[p] = (step_args){.v = v, .p = p, .bad = &bad};
        ph[p] = (cpu_phase){
            .kernel = k_step, .args = &a[p], .n = N, .grain = 1 + p * 13};
    }
    /* An empty phase in the middle does nothing. */
    ph[P] = ph[P - 1];
    ph[P - 1] = (cpu_phase){.kernel = NULL, .args = NULL, .n = 0};
    ck_assert_int_eq(cpu_gang_run_phases(g, P + 1, ph), WEFT_OK);
    ck_assert_int_eq(atomic_load(&bad), 0);
    int wrong = -1;
    for (int i = 0; i < N && wrong < 0; i++) {
        if (v[i] != P) {
            wrong = i;
        }
    }
    ck_assert_int_eq(wrong, -1);
    ck_assert_int_eq(cpu_gang_run_phases(g, 0, NULL), WEFT_OK);
    free(v);
    cpu_gang_free(g);
}
END_TEST

/* Fails at element 5000; counts the elements it ran, and how often
 * cpu_gang_failed did not see the failure just reported. */
static atomic_int fail_unseen;

static void k_fail(int64_t start, int64_t end, const void *args)
{
    _Atomic int64_t *ran = (_Atomic int64_t *)args;
    for (int64_t i = start; i < end; i++) {
        if (i == 5000) {
            cpu_gang_fail(WEFT_ERR_OUT_OF_BOUNDS, "kernel: index %lld",
                          (long long)i);
            if (!cpu_gang_failed()) {
                atomic_fetch_add(&fail_unseen, 1);
            }
            return;
        }
        atomic_fetch_add(ran, 1);
    }
}

START_TEST(test_failure)
{
    for (int size = 1; size <= 4; size += 3) {
        cpu_gang *g = make_gang(size);
        _Atomic int64_t ran;
        atomic_init(&ran, 0);
        _Atomic int64_t after;
        atomic_init(&after, 0);
        cpu_phase ph[2] = {
            {.kernel = k_fail, .args = &ran, .n = 1000000, .grain = 100},
            {.kernel = k_sum, .args = &after, .n = 1000, .grain = 1},
        };
        weft_status s = cpu_gang_run_phases(g, 2, ph);
        ck_assert_int_eq(s, WEFT_ERR_OUT_OF_BOUNDS);
        ck_assert_str_eq(weft_last_error(), "kernel: index 5000");
        ck_assert_int_eq(atomic_load(&after), 0); /* phase 2 skipped */
        ck_assert_int_lt(atomic_load(&ran), 1000000);
        ck_assert_int_eq(atomic_load(&fail_unseen), 0);
        ck_assert(!cpu_gang_failed());
        /* The gang works normally afterwards. */
        _Atomic int64_t acc;
        atomic_init(&acc, 0);
        ck_assert_int_eq(cpu_gang_run(g, k_sum, &acc, 100000, 7), WEFT_OK);
        ck_assert_int_eq(atomic_load(&acc), (int64_t)100000 * 99999 / 2);
        cpu_gang_free(g);
    }
    /* Outside a job cpu_gang_fail only sets the last error. */
    ck_assert_int_eq(cpu_gang_fail(WEFT_ERR_UNDEFINED, "outside"),
                     WEFT_ERR_UNDEFINED);
    ck_assert_str_eq(weft_last_error(), "outside");
}
END_TEST

/* Fails at element `at` with a message naming job `job`. */
typedef struct fail_at_args {
    int64_t at;
    int job;
} fail_at_args;

static void k_fail_at(int64_t start, int64_t end, const void *args)
{
    const fail_at_args *a = args;
    if (a->at >= start && a->at < end) {
        cpu_gang_fail(WEFT_ERR_OUT_OF_BOUNDS, "kernel: job %d", a->job);
    }
}

/* The gang's jobs are used in turn (run_job, JOB_RING of them): jobs
 * that fail between jobs that succeed, many times round, each report
 * their own failure and sum their own elements, whatever a helper left
 * behind in the job it last used. */
START_TEST(test_jobs_in_turn)
{
    cpu_gang *g = make_gang(4);
    for (int r = 0; r < 300; r++) {
        int64_t n = 1000 + r;
        if (r % 3 == 0) {
            fail_at_args a = {.at = (int64_t)r * 37 % n, .job = r};
            cpu_phase ph[2] = {
                {.kernel = k_fail_at, .args = &a, .n = n, .grain = 1 + r % 5},
                {.kernel = k_fail_at, .args = &a, .n = n, .grain = 3},
            };
            ck_assert_int_eq(cpu_gang_run_phases(g, 2, ph),
                             WEFT_ERR_OUT_OF_BOUNDS);
            char want[64];
            snprintf(want, sizeof want, "kernel: job %d", r);
            ck_assert_str_eq(weft_last_error(), want);
        } else {
            _Atomic int64_t acc;
            atomic_init(&acc, 0);
            ck_assert_int_eq(cpu_gang_run(g, k_sum, &acc, n, 1 + r % 7),
                             WEFT_OK);
            ck_assert_int_eq(atomic_load(&acc), n * (n - 1) / 2);
        }
    }
    cpu_gang_free(g);
}
END_TEST

/* A kernel that runs a job on its own gang. */
typedef struct nest_args {
    cpu_gang *g;
    _Atomic int64_t acc;
    atomic_int bad;
} nest_args;

static void k_nest(int64_t start, int64_t end, const void *args)
{
    nest_args *a = (nest_args *)args;
    for (int64_t i = start; i < end; i++) {
        int id = cpu_gang_worker_id();
        if (cpu_gang_run(a->g, k_sum, &a->acc, 100, 1) != WEFT_OK ||
            cpu_gang_worker_id() != id) {
            atomic_fetch_add(&a->bad, 1);
        }
    }
}

START_TEST(test_nested)
{
    cpu_gang *g = make_gang(4);
    nest_args a = {.g = g};
    atomic_init(&a.acc, 0);
    atomic_init(&a.bad, 0);
    ck_assert_int_eq(cpu_gang_run(g, k_nest, &a, 1000, 3), WEFT_OK);
    ck_assert_int_eq(atomic_load(&a.bad), 0);
    ck_assert_int_eq(atomic_load(&a.acc), (int64_t)1000 * (100 * 99 / 2));
    cpu_gang_free(g);
}
END_TEST

START_TEST(test_bad_arguments)
{
    cpu_gang *g = NULL;
    ck_assert_int_eq(cpu_gang_create(NULL, -1, &g), WEFT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(g);
    ck_assert_ptr_nonnull(strstr(weft_last_error(), "cpu_gang_create"));
    ck_assert_int_eq(cpu_gang_create(NULL, CPU_GANG_MAX_THREADS + 1, &g),
                     WEFT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cpu_gang_create(NULL, 2, NULL), WEFT_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(cpu_gang_run(NULL, k_sum, NULL, 10, 1),
                     WEFT_ERR_NULL_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(weft_last_error(), "cpu_gang_run"));
    g = make_gang(2);
    ck_assert_int_eq(cpu_gang_run(g, k_sum, NULL, -1, 1),
                     WEFT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cpu_gang_run(g, NULL, NULL, 10, 1),
                     WEFT_ERR_NULL_ARGUMENT);
    ck_assert_int_eq(cpu_gang_run(g, NULL, NULL, 0, 1), WEFT_OK);
    ck_assert_int_eq(cpu_gang_run_phases(g, -1, NULL),
                     WEFT_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(cpu_gang_run_phases(g, 2, NULL), WEFT_ERR_NULL_ARGUMENT);
    cpu_phase ph[2] = {{.kernel = k_sum, .n = 5}, {.kernel = k_sum, .n = -5}};
    ck_assert_int_eq(cpu_gang_run_phases(g, 2, ph), WEFT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(weft_last_error(), "phase 1"));
    cpu_gang_free(g);
}
END_TEST

/* An allocator that fails from the fail_at-th request on and counts live
 * blocks. */
typedef struct counting {
    int calls, fail_at, live;
} counting;

static void *counting_alloc(void *user, void *p, size_t old_n, size_t new_n)
{
    counting *c = user;
    (void)old_n;
    if (new_n == 0) {
        if (p != NULL) {
            c->live--;
        }
        free(p);
        return NULL;
    }
    if (c->calls++ >= c->fail_at) {
        return NULL;
    }
    void *q = realloc(p, new_n);
    if (q != NULL && p == NULL) {
        c->live++;
    }
    return q;
}

START_TEST(test_out_of_memory)
{
    for (int fail_at = 0;; fail_at++) {
        counting c = {.fail_at = fail_at};
        weft_context ctx;
        memset(&ctx, 0, sizeof ctx);
        ctx.cfg.alloc = counting_alloc;
        ctx.cfg.alloc_user = &c;
        cpu_gang *g = NULL;
        weft_status s = cpu_gang_create(&ctx, 3, &g);
        if (s == WEFT_OK) {
            _Atomic int64_t acc;
            atomic_init(&acc, 0);
            ck_assert_int_eq(cpu_gang_run(g, k_sum, &acc, 1000, 1), WEFT_OK);
            ck_assert_int_eq(atomic_load(&acc), 1000 * 999 / 2);
            cpu_gang_free(g);
            ck_assert_int_eq(c.live, 0);
            ck_assert_int_gt(fail_at, 0);
            break;
        }
        ck_assert_int_eq(s, WEFT_ERR_OUT_OF_MEMORY);
        ck_assert_ptr_null(g);
        ck_assert_ptr_nonnull(strstr(weft_last_error(), "cpu_gang_create"));
        ck_assert_int_eq(c.live, 0);
    }
}
END_TEST

static Suite *gang_suite(void)
{
    Suite *s = suite_create("gang");
    /* One case per test, so that CK_RUN_CASE can pick one. */
#define ADD(t)                                                                 \
    do {                                                                       \
        TCase *tc = tcase_create(#t);                                          \
        tcase_set_timeout(tc, 600);                                            \
        tcase_add_test(tc, t);                                                 \
        suite_add_tcase(s, tc);                                                \
    } while (0)
    ADD(test_every_element_once);
    ADD(test_many_tiny_jobs);
    ADD(test_unbalanced);
    ADD(test_host_threads);
    ADD(test_worker_ids);
    ADD(test_gang_of_one);
    ADD(test_create_free_loop);
    ADD(test_phases_scan);
    ADD(test_many_phases);
    ADD(test_failure);
    ADD(test_jobs_in_turn);
    ADD(test_nested);
    ADD(test_bad_arguments);
    ADD(test_out_of_memory);
#undef ADD
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(gang_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
