/*
 * bench/gpu/overhead.c: weft's cost per call on the GPU against CUDA's own
 * floor, on the host clock.
 *
 * For each case it times N calls one by one and prints the median and the
 * 90th percentile in microseconds, and, for weft, the CUDA driver calls
 * each run makes (weft_stats.driver_calls, divided by N):
 *
 *   map 1000         weft_run of map (\x -> 2x + 1) over 1,000 f32, then
 *                    weft_array_wait on the result
 *   dotp 1000        weft_run of fold (+) 0 (zipWith (*) x y) over 1,000
 *                    f32, then weft_array_data of the scalar (which reads
 *                    it back to the host)
 *   map, dotp 2^20   the same over 1,048,576 elements
 *   histogram 1000   weft_run of a 256-bin histogram (permute (+) of ones
 *                    into generated zeros) of 1,000 i32 keys, then
 *                    weft_array_data of the bins (a kernel that may fail:
 *                    the run reads its error word)
 *   cuda launch+sync         the floor, through the driver API on a
 *                            non-blocking stream: cuLaunchKernel of an
 *                            empty kernel and cuStreamSynchronize
 *   cuda launch+read pinned  the same with a 4-byte cuMemcpyDtoHAsync into
 *                            pinned host memory before the wait
 *   cuda launch+read pageable  ... into ordinary (pageable) memory
 *   cuda launch+memset+sync  a cuMemsetD32Async of one word before the
 *                            launch (what zeroing an auxiliary word costs)
 *   cuda push+pop            cuCtxPushCurrent + cuCtxPopCurrent
 *
 * Only weft's public API is used; the driver is opened with
 * dlopen("libcuda.so.1") (no CUDA headers needed), and its empty kernel
 * is PTX text loaded with cuModuleLoadData.  The weft programs use the
 * primary context of device 0, as weft does.
 *
 * Build and run next to libweft.so (the GPU bundle; tools/gpu-round.sh
 * overhead does this):
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/overhead.c -o overhead \
 *       -L. -lweft -Wl,-rpath,'$ORIGIN' -ldl -lm && ./overhead [N]
 * N: calls per case (default 20000).  Exits 77 when there is no GPU.
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
#define PROBE_NAME "overhead"
#include "probe.h"

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Print the median and p90 of t[0..n) (sorted here) for case `name`;
 * calls: driver calls per call, < 0 for none to show. */
static void report(const char *name, double *t, int n, double calls)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    printf("| %-28s | %8.2f | %8.2f |", name, t[n / 2], t[(n * 9) / 10]);
    if (calls >= 0) {
        printf(" %6.1f |\n", calls);
    } else {
        printf("      - |\n");
    }
}

/* ---- weft ----------------------------------------------------------------- */

static weft_fun *binop(weft_program *p, weft_op op)
{
    weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_prim2(op, weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* Time n runs of exe on in[0..nin); scalar: read the result with
 * weft_array_data, else wait for it with weft_array_wait. */
static void time_weft(weft_context *ctx, const char *name, weft_executable *exe,
                      weft_array *const *in, int nin, bool scalar, double *t,
                      int n)
{
    weft_stats s0, s1;
    for (int i = -n / 10 - 1; i < n; i++) { /* a tenth to warm up */
        if (i == 0) {
            weft_context_stats(ctx, &s0);
        }
        double a = now_us();
        weft_array *out = NULL;
        if (weft_run(exe, in, nin, &out, 1)) {
            die("weft_run");
        }
        if (scalar) {
            if (!weft_array_data(out, 0)) {
                die("weft_array_data");
            }
        } else if (weft_array_wait(out)) {
            die("weft_array_wait");
        }
        double b = now_us();
        weft_array_release(out);
        if (i >= 0) {
            t[i] = b - a;
        }
    }
    weft_context_stats(ctx, &s1);
    report(name, t, n, (double)(s1.driver_calls - s0.driver_calls) / n);
}

/* A function of a rank-1 index that returns the constant c. */
static weft_fun *const_fun(weft_program *p, weft_exp *c)
{
    weft_fun *f = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(f, c);
    return f;
}

/* The histogram of 1,000 keys into 256 bins (bench/gpu/weft_gpu.c's). */
static void hist_case(weft_context *ctx, double *t, int n)
{
    weft_program *p;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *keys = weft_param(p, WEFT_I32, 1);
    weft_acc *zeros = weft_generate(weft_index1(weft_i64(p, 256)),
                                    const_fun(p, weft_i32(p, 0)));
    weft_acc *ones =
        weft_generate(weft_shape(keys), const_fun(p, weft_i32(p, 1)));
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(weft_at(keys, weft_arg(ix, 0)),
                                                 WEFT_I64)));
    weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *r = weft_permute(add, zeros, ix, ones);
    weft_executable *exe;
    if (weft_compile(p, &r, 1, &exe) || weft_context_wait_optimised(ctx)) {
        die("weft_compile");
    }
    int64_t m = 1000;
    int32_t h[1000];
    for (int64_t i = 0; i < m; i++) {
        h[i] = (int32_t)((i * 37) % 256);
    }
    weft_array *in;
    const void *data[1] = {h};
    if (weft_array_from_host(ctx, WEFT_I32, 1, &m, data, &in)) {
        die("weft_array_from_host");
    }
    time_weft(ctx, "weft histogram 1000 + read", exe, &in, 1, true, t, n);
    weft_array_release(in);
    weft_executable_free(exe);
    weft_program_free(p);
}

static void weft_cases(double *t, int n)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    weft_context *ctx;
    weft_status st = weft_context_create(&cfg, &ctx);
    if (st) {
        fprintf(stderr, "overhead: %s\n", weft_last_error());
        exit(st == WEFT_ERR_BACKEND_UNAVAILABLE ? 77 : 1);
    }
    weft_program *p;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *x = weft_param(p, WEFT_F32, 1), *y = weft_param(p, WEFT_F32, 1);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(
        f, weft_add(weft_mul(weft_f32(p, 2), weft_arg(f, 0)), weft_f32(p, 1)));
    weft_acc *map = weft_map(f, x);
    weft_acc *dotp = weft_fold(binop(p, WEFT_OP_ADD), weft_f32(p, 0),
                               weft_zipwith(binop(p, WEFT_OP_MUL), x, y));
    weft_executable *emap, *edotp;
    /* the optimised code (tiered compilation) before timing */
    if (weft_compile(p, &map, 1, &emap) || weft_compile(p, &dotp, 1, &edotp) ||
        weft_context_wait_optimised(ctx)) {
        die("weft_compile");
    }
    static const int64_t sizes[2] = {1000, 1 << 20};
    for (int s = 0; s < 2; s++) {
        int64_t m = sizes[s];
        float *h = malloc(sizeof *h * (size_t)m);
        for (int64_t i = 0; i < m; i++) {
            h[i] = (float)(i % 16) * 0.0625f;
        }
        weft_array *in[2];
        for (int k = 0; k < 2; k++) {
            const void *data[1] = {h};
            if (weft_array_from_host(ctx, WEFT_F32, 1, &m, data, &in[k])) {
                die("weft_array_from_host");
            }
        }
        free(h);
        char name[64];
        snprintf(name, sizeof name, "weft map %lld + wait", (long long)m);
        /* both programs take x and y (one weft_program): map ignores y */
        time_weft(ctx, name, emap, in, 2, false, t, n);
        snprintf(name, sizeof name, "weft dotp %lld + read", (long long)m);
        time_weft(ctx, name, edotp, in, 2, true, t, n);
        weft_array_release(in[0]);
        weft_array_release(in[1]);
    }
    weft_executable_free(emap);
    weft_executable_free(edotp);
    weft_program_free(p);
    hist_case(ctx, t, n);
    weft_context_free(ctx);
}

/* ---- the CUDA floor, through the driver API -------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*release)(CUdevice);
    CUresult (*push)(CUcontext);
    CUresult (*pop)(CUcontext *);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_sync)(CUstream);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*unload)(CUmodule);
    CUresult (*get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                       unsigned, unsigned, unsigned, CUstream, void **,
                       void **);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*host_alloc)(void **, size_t, unsigned);
    CUresult (*host_free)(void *);
    CUresult (*dtoh_async)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*memset_async)(CUdeviceptr, unsigned, size_t, CUstream);
} cu;

static void check(CUresult r, const char *what)
{
    if (r != 0) {
        fprintf(stderr, "overhead: %s failed (CUresult %d)\n", what, r);
        exit(1);
    }
}

static const char empty_ptx[] = ".version 7.0\n"
                                ".target sm_50\n"
                                ".address_size 64\n"
                                ".visible .entry empty()\n"
                                "{\n"
                                "\tret;\n"
                                "}\n";

/* What one floor case does in a call. */
enum floor { LAUNCH_SYNC, READ_PINNED, READ_PAGEABLE, MEMSET, PUSH_POP };

static void cuda_cases(double *t, int n)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "overhead: %s\n", dlerror());
        return;
    }
    static const struct {
        size_t off;
        const char *name;
    } syms[] = {
#define S(f, n) {offsetof(__typeof__(cu), f), n}
        S(init, "cuInit"),
        S(device_get, "cuDeviceGet"),
        S(retain, "cuDevicePrimaryCtxRetain"),
        S(release, "cuDevicePrimaryCtxRelease_v2"),
        S(push, "cuCtxPushCurrent_v2"),
        S(pop, "cuCtxPopCurrent_v2"),
        S(stream_create, "cuStreamCreate"),
        S(stream_destroy, "cuStreamDestroy_v2"),
        S(stream_sync, "cuStreamSynchronize"),
        S(load, "cuModuleLoadData"),
        S(unload, "cuModuleUnload"),
        S(get_function, "cuModuleGetFunction"),
        S(launch, "cuLaunchKernel"),
        S(mem_alloc, "cuMemAlloc_v2"),
        S(mem_free, "cuMemFree_v2"),
        S(host_alloc, "cuMemHostAlloc"),
        S(host_free, "cuMemFreeHost"),
        S(dtoh_async, "cuMemcpyDtoHAsync_v2"),
        S(memset_async, "cuMemsetD32Async"),
#undef S
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            fprintf(stderr, "overhead: libcuda.so.1 has no %s\n", syms[i].name);
            return;
        }
        memcpy((char *)&cu + syms[i].off, &p, sizeof p);
    }
    CUdevice dev;
    CUcontext ctx, popped;
    CUmodule mod;
    CUfunction fn;
    CUstream st;
    CUdeviceptr dp;
    void *pinned;
    check(cu.init(0), "cuInit");
    check(cu.device_get(&dev, 0), "cuDeviceGet");
    check(cu.retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cu.push(ctx), "cuCtxPushCurrent");
    check(cu.load(&mod, empty_ptx), "cuModuleLoadData");
    check(cu.get_function(&fn, mod, "empty"), "cuModuleGetFunction");
    check(cu.stream_create(&st, 1 /* CU_STREAM_NON_BLOCKING */),
          "cuStreamCreate");
    check(cu.mem_alloc(&dp, 256), "cuMemAlloc");
    check(cu.host_alloc(&pinned, 256, 0), "cuMemHostAlloc");
    check(cu.memset_async(dp, 0, 64, st), "cuMemsetD32Async");
    check(cu.stream_sync(st), "cuStreamSynchronize");
    static const struct {
        enum floor what;
        const char *name;
    } cases[] = {
        {LAUNCH_SYNC, "cuda launch + sync"},
        {READ_PINNED, "cuda launch + read pinned"},
        {READ_PAGEABLE, "cuda launch + read pageable"},
        {MEMSET, "cuda memset + launch + sync"},
        {PUSH_POP, "cuda push + pop"},
    };
    float pageable[64];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int i = -n / 10 - 1; i < n; i++) {
            double a = now_us();
            switch (cases[c].what) {
            case MEMSET:
                check(cu.memset_async(dp, 0, 1, st), "cuMemsetD32Async");
                /* fall through */
            case LAUNCH_SYNC:
            case READ_PINNED:
            case READ_PAGEABLE:
                check(cu.launch(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL),
                      "cuLaunchKernel");
                if (cases[c].what == READ_PINNED) {
                    check(cu.dtoh_async(pinned, dp, 4, st),
                          "cuMemcpyDtoHAsync");
                } else if (cases[c].what == READ_PAGEABLE) {
                    check(cu.dtoh_async(pageable, dp, 4, st),
                          "cuMemcpyDtoHAsync");
                }
                check(cu.stream_sync(st), "cuStreamSynchronize");
                break;
            case PUSH_POP:
                check(cu.push(ctx), "cuCtxPushCurrent");
                check(cu.pop(&popped), "cuCtxPopCurrent");
                break;
            }
            double b = now_us();
            if (i >= 0) {
                t[i] = b - a;
            }
        }
        report(cases[c].name, t, n, -1);
    }
    cu.host_free(pinned);
    cu.mem_free(dp);
    cu.stream_destroy(st);
    cu.unload(mod);
    cu.pop(&popped);
    cu.release(dev);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    if (n < 10) {
        n = 10;
    }
    double *t = malloc(sizeof *t * (size_t)n);
    printf("Per call, microseconds on the host clock (%d calls each)\n\n"
           "| case                         |   median |      p90 | driver "
           "calls |\n|---|---:|---:|---:|\n",
           n);
    weft_cases(t, n);
    cuda_cases(t, n);
    free(t);
    return 0;
}
