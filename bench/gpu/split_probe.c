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
 * SPLIT_STAMPS=1 (temporary, session 31) adds each run's timeline on the
 * devices: a buffer of host memory mapped for every device, named to weft
 * by $WEFT_PTX_STAMPS (runtime-gpu/multi.c, "Timeline"), into which each
 * split launch writes %globaltimer at its points, and this probe before
 * and after weft_run on weft's stream.  Per size it prints the medians of
 * each point in us after the run's first stamp: `ready` (device 0 before
 * its ready event), device 0's part (begin-end), `joined` (device 0
 * after its waits for the others), `end` (after the run's last kernel),
 * and every device's part's length, then three runs as they were.  The
 * devices' clocks are not one (hundreds of us apart on four H200), so
 * only a device's own stamps are compared.
 *
 * On the GPU machine, from the unpacked bundle:
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/split_probe.c -o split_probe -L. \
 *       -lweft -Wl,-rpath,'$ORIGIN' -ldl -lm
 *   for d in 0 0,1 0,1,2,3; do WEFT_DEVICES=$d ./split_probe 21; done
 * Arguments: runs (21), the largest exponent (28), the smallest (16);
 * SPLIT_ONLY=sum (or saxpy) runs one program.
 */
#define _POSIX_C_SOURCE 200112L
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
typedef int (*cu_host_alloc_t)(void **, size_t, unsigned);
typedef int (*cu_host_devptr_t)(unsigned long long *, void *, unsigned);
typedef int (*cu_module_load_t)(void **, const void *);
typedef int (*cu_module_fn_t)(void **, void *, const char *);
typedef int (*cu_launch_t)(void *, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, void *, void **,
                           void **);

static cu_event_record_t ev_record;
static cu_event_sync_t ev_sync;
static cu_event_elapsed_t ev_elapsed;
static void *ev[2];

/* The timeline (SPLIT_STAMPS=1): the buffer, 16-byte slots {ns, tag};
 * slots [0, 8 * 64) are weft's (multi.c "Timeline"), the probe's two after
 * them; tag: launch << 16 | point << 8 | device. */
enum {
    STAMP_DEVS = 8,
    STAMP_SLOTS = 64,
    PROBE_SLOT = STAMP_DEVS * STAMP_SLOTS
};
enum { PT_READY = 1, PT_BEGIN, PT_END, PT_JOINED, PT_START = 8, PT_STOP };
static volatile unsigned long long *stamps;
static unsigned long long stamps_dev;
static void *stamp_fn;
static cu_launch_t launch;
static const char stamp_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry weft_stamp(.param .u64 at, .param .u64 tag)\n{\n"
    "  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [at];\n"
    "  ld.param.u64 %rd2, [tag];\n"
    "  mov.u64 %rd3, %globaltimer;\n"
    "  st.global.u64 [%rd1], %rd3;\n"
    "  st.global.u64 [%rd1+8], %rd2;\n"
    "  ret;\n}\n";

/* The buffer and the probe's stamp kernel (events_open's context current),
 * and $WEFT_PTX_STAMPS; 0 when made. */
static int stamps_open(void *h)
{
    cu_host_alloc_t alloc = (cu_host_alloc_t)dlsym(h, "cuMemHostAlloc");
    cu_host_devptr_t devptr =
        (cu_host_devptr_t)dlsym(h, "cuMemHostGetDevicePointer_v2");
    cu_module_load_t load = (cu_module_load_t)dlsym(h, "cuModuleLoadData");
    cu_module_fn_t get = (cu_module_fn_t)dlsym(h, "cuModuleGetFunction");
    launch = (cu_launch_t)dlsym(h, "cuLaunchKernel");
    void *p = NULL, *mod = NULL;
    size_t bytes = 16 * (PROBE_SLOT + 2);
    if (!alloc || !devptr || !load || !get || !launch ||
        alloc(&p, bytes, 0x01 | 0x02 /* portable, device-mapped */) ||
        devptr(&stamps_dev, p, 0) || load(&mod, stamp_ptx) ||
        get(&stamp_fn, mod, "weft_stamp")) {
        return -1;
    }
    memset(p, 0, bytes);
    stamps = p;
    char at[32];
    snprintf(at, sizeof at, "0x%llx", stamps_dev);
    setenv("WEFT_PTX_STAMPS", at, 1);
    return 0;
}

/* The probe's stamp `point` on stream s. */
static void probe_stamp(void *s, int point)
{
    unsigned long long at = stamps_dev + 16 * (PROBE_SLOT + point - PT_START);
    unsigned long long tag = (unsigned long long)point << 8;
    void *params[2] = {&at, &tag};
    launch(stamp_fn, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

/* One run's points (us after its first stamp; -1: none) from the buffer,
 * which is then cleared: t[0] ready, t[1], t[2] device 0's part, t[2 +
 * 2 i] device i's part's length (i > 0; t[1 + 2 i] -1), t[17] joined,
 * t[18] end. */
enum { TL_JOINED = 1 + 2 * STAMP_DEVS, TL_END, TL_N };
static void timeline_take(double *t)
{
    unsigned long long t0 = stamps[2 * PROBE_SLOT];
    int have[TL_N] = {0};
    for (int k = 0; k < TL_N; k++) {
        t[k] = -1;
    }
    for (int s = 0; s < PROBE_SLOT + 2; s++) {
        unsigned long long ns = stamps[2 * s], tag = stamps[2 * s + 1];
        int point = (int)(tag >> 8 & 0xff), dev = (int)(tag & 0xff);
        if (!tag || dev >= STAMP_DEVS) {
            continue;
        }
        double us = (double)(long long)(ns - t0) * 1e-3;
        int k = point == PT_READY    ? 0
                : point == PT_BEGIN  ? 1 + 2 * dev
                : point == PT_END    ? 2 + 2 * dev
                : point == PT_JOINED ? TL_JOINED
                : point == PT_STOP   ? TL_END
                                     : -1;
        /* the first begin, the last end, of several launches */
        if (k >= 0 && (!have[k] ||
                       (point == PT_BEGIN || point == PT_READY ? us < t[k]
                                                               : us > t[k]))) {
            t[k] = us;
            have[k] = 1;
        }
    }
    /* another device's: its part's length only (its own clock) */
    for (int i = 1; i < STAMP_DEVS; i++) {
        int ok = have[1 + 2 * i] && have[2 + 2 * i];
        t[2 + 2 * i] = ok ? t[2 + 2 * i] - t[1 + 2 * i] : -1;
        t[1 + 2 * i] = -1;
    }
    for (int s = 0; s < PROBE_SLOT + 2; s++) {
        stamps[2 * s] = 0;
        stamps[2 * s + 1] = 0;
    }
}

static void timeline_print(const double *t, const char *lead)
{
    printf("%s ready %6.1f | d0 %6.1f-%6.1f | joined %6.1f | end %6.1f | "
           "parts",
           lead, t[0], t[1], t[2], t[TL_JOINED], t[TL_END]);
    for (int i = 0; i < STAMP_DEVS; i++) {
        double len = i == 0 ? t[2] - t[1] : t[2 + 2 * i];
        if (len >= 0 && (i > 0 || t[1] >= 0)) {
            printf(" %5.1f", len);
        }
    }
    printf("\n");
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The events on device `ordinal`'s primary context; 0 when made. */
static void *cuda; /* libcuda, once events_open has opened it */
static int events_open(int ordinal)
{
    void *h = cuda = dlopen("libcuda.so.1", RTLD_NOW);
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
    for (int64_t i = 0; i < n; i++) {
        v[i] = scale * (float)(i % 1000) * 1e-3f;
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
 * 1) and vector(n, 0.5), is right: the sum within 1e-4 of the exact one
 * (f32 terms of 0 .. 1 summed in a tree: far closer), the saxpy's every
 * 4099th element within 1e-6 (one rounding). */
static int check(weft_array *out, int saxpy, int64_t n)
{
    if (!saxpy) {
        float got = 0;
        int64_t q = n / 1000, rem = n % 1000;
        double want =
            1e-3 * ((double)q * 499500.0 + (double)(rem * (rem - 1) / 2));
        return weft_array_read(out, 0, &got, sizeof got) == WEFT_OK &&
               (double)got > want * (1 - 1e-4) &&
               (double)got < want * (1 + 1e-4);
    }
    float *v = weft_array_data(out, 0);
    for (int64_t i = 0; v && i < n; i += 4099) {
        float x = (float)(i % 1000) * 1e-3f, y = 0.5f * x;
        float want = 2.0f * x + y, d = v[i] - want;
        if (d > 1e-6f || d < -1e-6f) {
            return 0;
        }
    }
    return v != NULL;
}

/* Time `runs` runs of exe on in[0..nin) after three warm-ups and print
 * one line (its last result checked). */
static void probe(weft_context *ctx, void *stream, const char *name, int lg,
                  weft_executable *exe, weft_array **in, int nin, int runs)
{
    double *run = calloc((size_t)runs * (3 + TL_N), sizeof *run);
    double *all = run + runs, *evs = run + 2 * runs, *tl = run + 3 * runs;
    weft_stats s0, s1;
    for (int r = -3; r < runs; r++) {
        if (r == 0) {
            weft_context_stats(ctx, &s0);
        }
        weft_array *out = NULL;
        int events = stream && ev_record(ev[0], stream) == 0;
        if (stamps) {
            probe_stamp(stream, PT_START);
        }
        double t0 = now_us();
        if (weft_run(exe, in, nin, &out, 1)) {
            die(name);
        }
        double t1 = now_us();
        if (stamps) {
            probe_stamp(stream, PT_STOP);
        }
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
        if (stamps && r >= 0) {
            timeline_take(tl + (size_t)r * TL_N);
        } else if (stamps) {
            double skip[TL_N];
            timeline_take(skip);
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
    if (stamps) {
        /* the medians of each point over the runs that have it */
        double med[TL_N], *col = calloc((size_t)runs, sizeof *col);
        for (int k = 0; k < TL_N; k++) {
            int n = 0;
            for (int r = 0; r < runs; r++) {
                if (tl[(size_t)r * TL_N + k] >= 0) {
                    col[n++] = tl[(size_t)r * TL_N + k];
                }
            }
            qsort(col, (size_t)n, sizeof *col, cmp_d);
            med[k] = n > 0 ? col[n / 2] : -1;
        }
        free(col);
        timeline_print(med, "  medians:");
        for (int r = 0; r < runs && r < 3; r++) {
            timeline_print(tl + (size_t)r * TL_N, "  a run:  ");
        }
    }
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
    const char *devs = getenv("WEFT_DEVICES");
    const char *mode = getenv("WEFT_PTX_SPLIT_MODE");
    const char *want = getenv("SPLIT_STAMPS");
    /* the events' context first: the stamps' buffer is named to weft by
     * the environment, before its context is made */
    int events = events_open(devs && *devs ? atoi(devs) : cfg.device);
    if (events == 0 && want && strcmp(want, "1") == 0 && stamps_open(cuda)) {
        fprintf(stderr, "split_probe: no timeline (the stamps' buffer)\n");
    }
    weft_context *ctx = NULL;
    if (weft_context_create(&cfg, &ctx)) {
        die("weft_context_create");
    }
    void *stream = NULL;
    if (weft_context_stream(ctx, &stream) || events) {
        stream = NULL; /* the host clock only */
        stamps = NULL;
    }
    printf("devices %s, split mode %s, %d runs, events %s, timeline %s\n",
           devs ? devs : "(one)", mode ? mode : "0", runs,
           stream ? "on weft's stream" : "off", stamps ? "on" : "off");
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
