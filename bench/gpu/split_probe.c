/*
 * bench/gpu/split_probe.c: the fixed cost of a kernel split over the GPUs
 * of $WEFT_DEVICES (issue 20; runtime-gpu/multi.c, "Queueing").
 *
 * Two programs, a sum (foldAll (+) 0 of f32) and a saxpy (zipWith
 * (\x y -> 2 x + y) of f32), at sizes 2^16 .. 2^28 (argv[2] the largest
 * exponent), inputs uploaded once and resident, each run `runs` times
 * after three warm-ups.  Per size it prints the median of: the host's time
 * in weft_run (it returns once the kernels are queued), the host's time to
 * a finished result (weft_run and weft_array_wait), and the time between
 * two CUDA events recorded on weft's stream around the run (the device's
 * view: from the first event to the last kernel's end), with the driver
 * calls per run.  2^16 is below the size from which a kernel is split (it
 * runs on the first device alone); 2^18 is about the smallest that is,
 * whose kernels are a few microseconds: its time less one GPU's is the
 * split's fixed cost.  WEFT_TRACE=t.json adds a trace, whose kernel.split
 * spans give the host's time by step (bench/gpu/trace_kernels.py).
 *
 * The events are made on the first device's primary context (weft's
 * context is that one) through libcuda, opened here with dlopen.
 *
 * On the GPU machine, from the unpacked bundle:
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/split_probe.c -o split_probe -L. \
 *       -lweft -Wl,-rpath,'$ORIGIN' -ldl -lm
 *   for d in 0 0,1 0,1,2,3; do WEFT_DEVICES=$d ./split_probe 21; done
 * Arguments: runs (21), the largest exponent (28), the smallest (16);
 * SPLIT_ONLY=sum (or saxpy) runs one program.  The last run's result is
 * checked (a wrong one is printed).  bench/gpu/split_probe.sh runs it on
 * one GPU, on 0,1 and on 0,1,2,3.
 */
#define _POSIX_C_SOURCE 199309L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#define PROBE_NAME "split_probe"
#include "probe.h"

/* The few driver entries the events need (cuda.h's types as void *). */
typedef int (*cu_init_t)(unsigned);
typedef int (*cu_device_get_t)(int *, int);
typedef int (*cu_retain_t)(void **, int);
typedef int (*cu_set_t)(void *);
typedef int (*cu_event_create_t)(void **, unsigned);
typedef int (*cu_event_record_t)(void *, void *);
typedef int (*cu_event_sync_t)(void *);
typedef int (*cu_event_elapsed_t)(float *, void *, void *);

static cu_event_record_t ev_record;
static cu_event_sync_t ev_sync;
static cu_event_elapsed_t ev_elapsed;
static void *ev[2];

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The events on device `ordinal`'s primary context; 0 when made. */
static int events_open(int ordinal)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        return -1;
    }
    cu_init_t init = (cu_init_t)dlsym(h, "cuInit");
    cu_device_get_t get = (cu_device_get_t)dlsym(h, "cuDeviceGet");
    cu_retain_t retain = (cu_retain_t)dlsym(h, "cuDevicePrimaryCtxRetain");
    cu_set_t set = (cu_set_t)dlsym(h, "cuCtxSetCurrent");
    cu_event_create_t create = (cu_event_create_t)dlsym(h, "cuEventCreate");
    ev_record = (cu_event_record_t)dlsym(h, "cuEventRecord");
    ev_sync = (cu_event_sync_t)dlsym(h, "cuEventSynchronize");
    ev_elapsed = (cu_event_elapsed_t)dlsym(h, "cuEventElapsedTime");
    int dev = 0;
    void *ctx = NULL;
    if (!init || !get || !retain || !set || !create || !ev_record || !ev_sync ||
        !ev_elapsed || init(0) || get(&dev, ordinal) || retain(&ctx, dev) ||
        set(ctx) || create(&ev[0], 0) || create(&ev[1], 0)) {
        return -1;
    }
    return 0;
}

/* An f32 vector of n, resident on the device. */
static weft_array *vector(weft_context *ctx, int64_t n, float scale)
{
    float *v = malloc(sizeof *v * (size_t)n);
    if (!v) {
        fprintf(stderr, "split_probe: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0, k = 0; i < n; i++, k = k == 999 ? 0 : k + 1) {
        v[i] = scale * (float)k * 1e-3f; /* k = i mod 1000 */
    }
    weft_array *a = NULL;
    if (weft_array_from_host(ctx, WEFT_F32, 1, &n, (const void *const[]){v},
                             &a)) {
        die("weft_array_from_host");
    }
    free(v);
    return a;
}

/* Whether out, the result of the sum (saxpy 0) or the saxpy of vector(n,
 * 1) and vector(n, 0.5), is right: the sum within 1e-4 relative of the
 * exact sum of its f32 terms (which a tree of f32 additions keeps far
 * closer: its error grows with the tree's depth, about 2^-24 a level),
 * the saxpy's every 4099th element within 1e-6 (2 x + y of values below
 * 1.5 rounds once, an error under 2^-23). */
static int check(weft_array *out, int saxpy, int64_t n)
{
    if (!saxpy) {
        float got = 0;
        double want = 0;
        for (int64_t k = 0; k < 1000 && k < n; k++) {
            want +=
                (double)((float)k * 1e-3f) * (double)((n - 1 - k) / 1000 + 1);
        }
        return weft_array_read(out, 0, &got, sizeof got) == WEFT_OK &&
               (double)got > want * (1 - 1e-4) &&
               (double)got < want * (1 + 1e-4);
    }
    float *v = weft_array_data(out, 0);
    for (int64_t i = 0; v && i < n; i += 4099) {
        float x = (float)(i % 1000) * 1e-3f, y = 0.5f * x;
        float d = v[i] - (2.0f * x + y);
        if (d > 1e-6f || d < -1e-6f) {
            return 0;
        }
    }
    return v != NULL;
}

/* Time `runs` runs of exe on in[0..nin) after three warm-ups and print
 * one line (the last run's result checked). */
static void probe(weft_context *ctx, void *stream, const char *name, int lg,
                  weft_executable *exe, weft_array **in, int nin, int runs)
{
    double *run = calloc((size_t)runs * 3, sizeof *run);
    double *all = run + runs, *evs = run + 2 * runs;
    weft_stats s0, s1;
    for (int r = -3; r < runs; r++) {
        if (r == 0) {
            weft_context_stats(ctx, &s0);
        }
        weft_array *out = NULL;
        int events = stream && ev_record(ev[0], stream) == 0;
        double t0 = now_us();
        if (weft_run(exe, in, nin, &out, 1)) {
            die(name);
        }
        double t1 = now_us();
        events = events && ev_record(ev[1], stream) == 0;
        if (weft_array_wait(out)) {
            die(name);
        }
        double t2 = now_us();
        float ms = -1;
        if (events && (ev_sync(ev[1]) || ev_elapsed(&ms, ev[0], ev[1]))) {
            ms = -1;
        }
        if (r >= 0) {
            run[r] = t1 - t0;
            all[r] = t2 - t0;
            evs[r] = ms * 1e3;
        }
        if (r == runs - 1 && !check(out, nin == 2, weft_array_size(in[0]))) {
            printf("%s 2^%d: WRONG result\n", name, lg);
        }
        weft_array_release(out);
    }
    weft_context_stats(ctx, &s1);
    qsort(run, (size_t)runs, sizeof *run, cmp_d);
    qsort(all, (size_t)runs, sizeof *all, cmp_d);
    qsort(evs, (size_t)runs, sizeof *evs, cmp_d);
    char ev_us[32] = "       -";
    if (evs[runs / 2] >= 0) {
        snprintf(ev_us, sizeof ev_us, "%8.1f", evs[runs / 2]);
    }
    printf("%-6s 2^%-2d  weft_run %8.1f us  to result %8.1f us  events "
           "%s us  %6.1f driver calls/run\n",
           name, lg, run[runs / 2], all[runs / 2], ev_us,
           (double)(s1.driver_calls - s0.driver_calls) / runs);
    fflush(stdout);
    free(run);
}

/* exe of the sum (foldAll (+) 0) or of the saxpy (2 x + y). */
static weft_executable *program(weft_context *ctx, int saxpy)
{
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *x = weft_param(p, WEFT_F32, 1), *r;
    weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1);
    if (saxpy) {
        weft_acc *y = weft_param(p, WEFT_F32, 1);
        weft_fun_return(f, weft_add(weft_mul(weft_f32(p, 2.0f), a), b));
        r = weft_zipwith(f, x, y);
    } else {
        weft_fun_return(f, weft_add(a, b));
        r = weft_fold_all(f, weft_f32(p, 0.0f), x);
    }
    if (weft_compile(p, &r, 1, &exe)) {
        die("weft_compile");
    }
    weft_program_free(p);
    return exe;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 21;
    int top = argc > 2 ? atoi(argv[2]) : 28;
    int low = argc > 3 ? atoi(argv[3]) : 16;
    runs = runs > 0 ? runs : 21;
    low = low >= 16 && low <= top ? low : 16;
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX; /* $WEFT_DEVICES picks the GPUs */
    weft_context *ctx = NULL;
    if (weft_context_create(&cfg, &ctx)) {
        die("weft_context_create");
    }
    const char *devs = getenv("WEFT_DEVICES");
    void *stream = NULL;
    if (weft_context_stream(ctx, &stream) ||
        events_open(devs && *devs ? atoi(devs) : cfg.device)) {
        stream = NULL; /* the host clock only */
    }
    printf("devices %s, %d runs, events %s\n", devs ? devs : "(one)", runs,
           stream ? "on weft's stream" : "off");
    const char *only = getenv("SPLIT_ONLY"); /* "sum" or "saxpy": one */
    for (int saxpy = 0; saxpy < 2; saxpy++) {
        if (only && strcmp(only, saxpy ? "saxpy" : "sum") != 0) {
            continue;
        }
        weft_executable *exe = program(ctx, saxpy);
        for (int lg = low; lg <= top; lg += 2) {
            int64_t n = (int64_t)1 << lg;
            weft_array *in[2] = {vector(ctx, n, 1.0f), NULL};
            if (saxpy) {
                in[1] = vector(ctx, n, 0.5f);
            }
            probe(ctx, stream, saxpy ? "saxpy" : "sum", lg, exe, in, 1 + saxpy,
                  runs);
            weft_array_release(in[0]);
            weft_array_release(in[1]);
        }
        weft_executable_free(exe);
    }
    weft_context_free(ctx);
    return 0;
}
