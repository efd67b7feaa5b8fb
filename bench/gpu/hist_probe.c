/*
 * bench/gpu/hist_probe.c: the histogram (bench/gpu's `histogram`: permute
 * (+) of ones into 256 zeros at keys ! i) at several sizes on the devices
 * of $WEFT_DEVICES (one GPU without it), for issue 20's scaling: for
 * each size the median of `runs` runs (after two warm-ups, keys resident)
 * by the host clock (weft_run to the result complete) and by CUDA events
 * on weft's stream (device 0's, which waits for the other devices), the
 * kernels split and the bytes handed between the devices per run, and a
 * check of the last run's bins against a count on the host.
 *
 * With $HIST_VARS each size runs once per setting of the list (e.g.
 * "- WEFT_PTX_PERMUTE_CLAIM=1": the default and the claimed chunks of
 * skeletons-ir/ptx/permute.c), over the same keys.
 *
 * With WEFT_TRACE=t.json each split part's kernel time lands in the
 * trace ("kernel.split" spans: bench/gpu/trace_kernels.py t.json), and
 * one GPU's kernels in "kernel.device" spans; a traced run waits for the
 * parts' events, so its host times are inflated.  The runtime's tuning
 * knobs of the split permute (runtime-gpu/backend.c launch_permute:
 * $WEFT_PTX_PERMUTE_CHUNKS, $WEFT_PTX_REPLICAS) reach it through the
 * environment, to compare variants in one round (bench/gpu/hist_probe.sh
 * runs the lot).
 *
 * On the GPU machine, from the unpacked bundle:
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/hist_probe.c -o hist_probe -L. \
 *       -lweft -ldl -Wl,-rpath,'$ORIGIN' && \
 *   WEFT_DEVICES=0,1,2,3 ./hist_probe [runs] [n ...]
 * (default 20 runs of 2^26, 2^28 and 2^30 keys).  Events come from
 * libcuda.so.1 by dlopen, as weft loads it: no CUDA headers needed.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#define PROBE_NAME "hist_probe"
#include "probe.h"

enum { BINS = 256 };

/* The driver calls that time a run by events on weft's stream (NULL
 * where libcuda or one of them is missing: no event times then). */
static struct {
    int (*stream_ctx)(void *stream, void **ctx);
    int (*push)(void *ctx);
    int (*create)(void **ev, unsigned flags);
    int (*record)(void *ev, void *stream);
    int (*sync)(void *ev);
    int (*elapsed)(float *ms, void *a, void *b);
} cu;

static int cuda_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        return -1;
    }
    static const struct {
        size_t off;
        const char *name;
    } syms[] = {
        {offsetof(__typeof__(cu), stream_ctx), "cuStreamGetCtx"},
        {offsetof(__typeof__(cu), push), "cuCtxPushCurrent_v2"},
        {offsetof(__typeof__(cu), create), "cuEventCreate"},
        {offsetof(__typeof__(cu), record), "cuEventRecord"},
        {offsetof(__typeof__(cu), sync), "cuEventSynchronize"},
        {offsetof(__typeof__(cu), elapsed), "cuEventElapsedTime"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            return -1;
        }
        memcpy((char *)&cu + syms[i].off, &p, sizeof p);
    }
    return 0;
}

/* The histogram of keys into BINS zeros (bench/gpu/weft_gpu.c's). */
static weft_acc *build_hist(weft_program *p, weft_acc *keys)
{
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_i32(p, 0));
    weft_fun *one = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(one, weft_i32(p, 1));
    weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(
        add, weft_prim2(WEFT_OP_ADD, weft_arg(add, 0), weft_arg(add, 1)));
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(weft_at(keys, weft_arg(ix, 0)),
                                                 WEFT_I64)));
    return weft_permute(add,
                        weft_generate(weft_index1(weft_i64(p, BINS)), zero), ix,
                        weft_generate(weft_shape(keys), one));
}

/* n keys of the probe (xorshift, the same each time) into *in, their
 * counts into want. */
static void make_keys(weft_context *ctx, int64_t n, int64_t *want,
                      weft_array **in)
{
    int32_t *keys = malloc(sizeof *keys * (size_t)n);
    if (!keys) {
        fprintf(stderr, "hist_probe: no memory for %lld keys\n", (long long)n);
        exit(1);
    }
    memset(want, 0, sizeof *want * BINS);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        keys[i] = (int32_t)(x >> 56);
        want[keys[i]]++;
    }
    if (weft_array_from_host(ctx, WEFT_I32, 1, &n, (const void *const[]){keys},
                             in)) {
        die("weft_array_from_host");
    }
    free(keys);
}

/* n keys `in` (counted in want): runs of the histogram, one line
 * (labelled `label` when not NULL). */
static int probe(weft_context *ctx, void *stream, weft_array *in,
                 const int64_t *want, int64_t n, int runs, const char *label)
{
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *r = build_hist(p, weft_param(p, WEFT_I32, 1));
    if (weft_compile(p, &r, 1, &exe)) {
        die("weft_compile");
    }
    double *host = calloc((size_t)runs, sizeof *host);
    double *dev = calloc((size_t)runs, sizeof *dev);
    void *ev[2] = {NULL, NULL};
    bool events = stream && cu.create && cu.create(&ev[0], 0) == 0 &&
                  cu.create(&ev[1], 0) == 0;
    weft_stats s0, s1;
    int32_t got[BINS];
    for (int i = -2; i < runs; i++) {
        if (i == 0) {
            weft_context_stats(ctx, &s0);
        }
        weft_array *out = NULL;
        double t0 = now_ms();
        if (events) {
            cu.record(ev[0], stream);
        }
        if (weft_run(exe, &in, 1, &out, 1)) {
            die("weft_run");
        }
        if (events) {
            cu.record(ev[1], stream);
        }
        if (weft_array_wait(out)) {
            die("weft_array_wait");
        }
        double t1 = now_ms();
        float ms = -1;
        if (events && (cu.sync(ev[1]) || cu.elapsed(&ms, ev[0], ev[1]))) {
            ms = -1;
        }
        if (i >= 0) {
            host[i] = t1 - t0;
            dev[i] = ms;
        }
        if (i == runs - 1 && weft_array_read(out, 0, got, sizeof got)) {
            die("weft_array_read");
        }
        weft_array_release(out);
    }
    weft_context_stats(ctx, &s1);
    int64_t wrong = 0;
    for (int b = 0; b < BINS; b++) {
        wrong += got[b] != want[b];
    }
    qsort(host, (size_t)runs, sizeof *host, cmp_d);
    qsort(dev, (size_t)runs, sizeof *dev, cmp_d);
    if (label) {
        printf("[%s] ", label);
    }
    printf("hist n=%lld devices=%d host %.4f ms (min %.4f) events %.4f ms "
           "(min %.4f) %.2f GB/s split/run %.1f moved/run %.0f B "
           "driver calls/run %.1f wrong bins %lld\n",
           (long long)n, s1.devices, host[runs / 2], host[0], dev[runs / 2],
           dev[0],
           (double)n * 4 /
               (dev[runs / 2] > 0 ? dev[runs / 2] : host[runs / 2]) * 1e-6,
           (double)(s1.kernels_split - s0.kernels_split) / runs,
           (double)(s1.device_bytes_moved - s0.device_bytes_moved) / runs,
           (double)(s1.driver_calls - s0.driver_calls) / runs,
           (long long)wrong);
    fflush(stdout);
    free(host);
    free(dev);
    weft_executable_free(exe);
    weft_program_free(p);
    return wrong != 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 20;
    runs = runs > 0 ? runs : 20;
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    /* the optimised code from the first run (not the quick tier's,
     * replaced in the background during the first size's runs) */
    cfg.flags |= WEFT_FLAG_NO_TIERING;
    weft_context *ctx = NULL;
    if (weft_context_create(&cfg, &ctx)) {
        die("weft_context_create");
    }
    void *stream = NULL, *cuctx = NULL;
    if (weft_context_stream(ctx, &stream) || cuda_load() ||
        cu.stream_ctx(stream, &cuctx) || cu.push(cuctx)) {
        fprintf(stderr, "hist_probe: no CUDA events (host clock only)\n");
        stream = NULL;
    }
    /* $HIST_VARS: variants of each size, the keys made once: a list of
     * settings of the environment that weft_compile reads (e.g.
     * WEFT_PTX_PERMUTE_CLAIM=1; "-" none), each set alone */
    const char *vars = getenv("HIST_VARS");
    int64_t sizes[16];
    int ns = 0;
    for (int a = 2; a < argc && ns < 16; a++) {
        sizes[ns++] = strtoll(argv[a], NULL, 0);
    }
    if (ns == 0) { /* 2^26, 2^28 and 2^30 */
        for (int e = 26; e <= 30; e += 2) {
            sizes[ns++] = (int64_t)1 << e;
        }
    }
    int rc = 0;
    int64_t want[BINS];
    for (int i = 0; i < ns; i++) {
        weft_array *in = NULL;
        make_keys(ctx, sizes[i], want, &in);
        if (!vars) {
            rc |= probe(ctx, stream, in, want, sizes[i], runs, NULL);
            weft_array_release(in);
            continue;
        }
        char list[512], set[512];
        snprintf(list, sizeof list, "%s", vars);
        char *save = NULL;
        for (char *v = strtok_r(list, " ", &save); v;
             v = strtok_r(NULL, " ", &save)) {
            /* every name of the list unset, then v's set */
            snprintf(set, sizeof set, "%s", vars);
            char *s2 = NULL;
            for (char *u = strtok_r(set, " ", &s2); u;
                 u = strtok_r(NULL, " ", &s2)) {
                char *eq = strchr(u, '=');
                if (eq) {
                    *eq = 0;
                    unsetenv(u);
                }
            }
            snprintf(set, sizeof set, "%s", v);
            char *eq = strchr(set, '=');
            if (eq) {
                *eq = 0;
                setenv(set, eq + 1, 1);
            }
            rc |= probe(ctx, stream, in, want, sizes[i], runs, v);
        }
        weft_array_release(in);
    }
    weft_context_free(ctx);
    return rc;
}
