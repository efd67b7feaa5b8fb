/*
 * bench/timing.h: the clocks and the median of the hand-built benchmark
 * programs in bench/ (weft_bench.c, stencil_sweep.c, checked_bench.c,
 * compile_scaling.c, gang_bench.c, trace_overhead.c, ptx_smoke.c), one
 * copy for all of them.
 *
 * Header only (static inline), so that each program still builds from its
 * own one-line command (its head comment), found beside the source by
 * `#include "timing.h"`; the GPU bundle carries it with the benchmark's
 * sources (tools/gpu-bundle.sh).  The file that includes it defines
 * _POSIX_C_SOURCE (200112L or later) or another feature macro that
 * declares clock_gettime and readlink before its first system header.
 *
 * Wall time is CLOCK_MONOTONIC.  CPU time is the calling thread's, or that
 * of every thread of the process over an interval (timing_cpu_start and
 * timing_cpu_since): CPU time over wall time across a timed region is how
 * many CPUs the process kept busy in it, which tells a run that got its
 * CPUs from one that shared them with other work.  Not the process clock
 * (CLOCK_PROCESS_CPUTIME_ID): Linux adds to it the time of a thread that
 * runs on another CPU only at that CPU's timer tick or when the thread
 * stops (4 ms at HZ=250), so a read right after a parallel run misses up to
 * a tick of each worker still spinning, as much as a 5 ms run takes.  Each
 * thread's own clock, read from another thread, is exact (the kernel
 * brings a running thread's time up to date for the read).
 */
#ifndef WEFT_BENCH_TIMING_H
#define WEFT_BENCH_TIMING_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* Clock c now, in milliseconds. */
static inline double timing_clock_ms(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Wall time in milliseconds (and in seconds), from an arbitrary start. */
static inline double timing_now_ms(void)
{
    return timing_clock_ms(CLOCK_MONOTONIC);
}

static inline double timing_now_s(void)
{
    return timing_clock_ms(CLOCK_MONOTONIC) * 1e-3;
}

/* The CPU clocks of the process's threads at one moment (at most
 * TIMING_MAX_THREADS of them: the rest are not counted). */
#define TIMING_MAX_THREADS 1024
typedef struct timing_cpu {
    int n;                         /* the other threads, 0 when unread */
    long tid[TIMING_MAX_THREADS];  /* their ids */
    double ms[TIMING_MAX_THREADS]; /* their CPU times */
    long self;                     /* the calling thread's id, 0: unknown */
    double self_ms;                /* its CPU time (0 when unknown) */
} timing_cpu;

/* Thread tid's CPU time in ms, or -1 when it has exited.  Linux's clock id
 * of a thread's CPU time (CPUCLOCK_PERTHREAD, CPUCLOCK_SCHED: how glibc's
 * pthread_getcpuclockid makes it), for any thread of the process. */
static inline double timing_tid_cpu_ms(long tid)
{
    struct timespec t;
    clockid_t c = (clockid_t)(~(unsigned)tid << 3 | 6u);
    if (clock_gettime(c, &t) != 0) {
        return -1;
    }
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Read the CPU clocks of the process's threads (/proc/self/task) into s:
 * the calling thread's (found by /proc/thread-self) first when self_first
 * is set, else last, so that the time of the reads themselves stays out
 * of an interval from a read with self_first clear to one with it set. */
static inline void timing_cpu_read(timing_cpu *s, int self_first)
{
    char link[64];
    ssize_t len = readlink("/proc/thread-self", link, sizeof link - 1);
    const char *task = NULL;
    if (len > 0) {
        link[len] = 0;
        task = strstr(link, "task/");
    }
    s->self = task ? strtol(task + 5, NULL, 10) : 0;
    s->self_ms = 0;
    if (s->self > 0 && self_first) {
        s->self_ms = timing_clock_ms(CLOCK_THREAD_CPUTIME_ID);
    }
    s->n = 0;
    DIR *d = opendir("/proc/self/task");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) && s->n < TIMING_MAX_THREADS) {
            long tid = strtol(e->d_name, NULL, 10);
            double ms = tid > 0 && tid != s->self ? timing_tid_cpu_ms(tid) : -1;
            if (ms >= 0) {
                s->tid[s->n] = tid;
                s->ms[s->n++] = ms;
            }
        }
        closedir(d);
    }
    if (s->self > 0 && !self_first) {
        s->self_ms = timing_clock_ms(CLOCK_THREAD_CPUTIME_ID);
    }
}

/* Read every thread's CPU clock into s, the start of an interval that
 * timing_cpu_since ends (s->n = 0 and s->self = 0 where /proc cannot be
 * read). */
static inline void timing_cpu_start(timing_cpu *s)
{
    timing_cpu_read(s, 0);
}

/* The CPU time, in ms, that the process's threads used since s was read,
 * on the same thread: each thread's time since then (a thread born since,
 * all its time; one that has exited since counts nothing).  -1 when s has
 * no thread. */
static inline double timing_cpu_since(const timing_cpu *s)
{
    if (s->n == 0 && s->self == 0) {
        return -1;
    }
    timing_cpu now;
    timing_cpu_read(&now, 1);
    double ms = now.self_ms - s->self_ms;
    for (int i = 0; i < now.n; i++) {
        double before = 0;
        for (int j = 0; j < s->n; j++) {
            if (s->tid[j] == now.tid[i]) {
                before = s->ms[j];
                break;
            }
        }
        ms += now.ms[i] - before;
    }
    return ms;
}

/* CPU time of the calling thread, in milliseconds. */
static inline double timing_thread_cpu_ms(void)
{
    return timing_clock_ms(CLOCK_THREAD_CPUTIME_ID);
}

/* qsort's comparison of two doubles, ascending. */
static inline int timing_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n-1], n >= 1 (the mean of the two middle values when
 * n is even); sorts v in place. */
static inline double timing_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], timing_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
