/*
 * bench/ptx_smoke.c: first numbers of the ptx backend, for the record until
 * the GPU benchmark (bench/results/gpu.md) exists.
 *
 * Compiles dotp (fold (+) 0 (zipWith (*) xs ys)) on a fresh cache
 * directory (the first compile: IR, PTX, cubin), again in a new context
 * (from the disk cache) and a third time in the same context (memory);
 * then runs it on n = 2^24 f32 a few times and reports the median time of
 * a run whose inputs are already on the device, and the bandwidth that
 * implies (8 n bytes read).  Prints one line per number.
 *
 * Build (on the GPU machine, next to libweft.so):
 *   gcc -O2 -Iinclude bench/ptx_smoke.c -o ptx_smoke -L. -lweft \
 *       -Wl,-rpath,'$ORIGIN'
 */
#include <stdio.h>
#include <stdlib.h>

#include "timing.h"
#include "weft.h"

static void die(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, weft_last_error());
    exit(1);
}

/* Compile dotp in ctx; returns the executable and the milliseconds. */
static weft_executable *dotp(weft_context *ctx, weft_program **pp, double *ms)
{
    weft_program *p;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *xs = weft_param(p, WEFT_F32, 1), *ys = weft_param(p, WEFT_F32, 1);
    weft_fun *mul = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(mul, weft_mul(weft_arg(mul, 0), weft_arg(mul, 1)));
    weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *d = weft_fold(add, weft_f32(p, 0), weft_zipwith(mul, xs, ys));
    weft_executable *exe;
    double t0 = timing_now_ms();
    if (weft_compile(p, &d, 1, &exe)) {
        die("weft_compile");
    }
    *ms = timing_now_ms() - t0;
    *pp = p;
    return exe;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp/weft-ptx-smoke";
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.cache_dir = dir;
    weft_context *c1, *c2;
    weft_program *p1, *p2, *p3;
    double first, disk, memory;
    if (weft_context_create(&cfg, &c1)) {
        die("weft_context_create");
    }
    weft_executable *e1 = dotp(c1, &p1, &first);
    weft_executable *e3 = dotp(c1, &p3, &memory);
    if (weft_context_create(&cfg, &c2)) {
        die("weft_context_create");
    }
    weft_executable *e2 = dotp(c2, &p2, &disk);
    printf("dotp compile, first (IR, PTX, cubin)  %8.2f ms\n", first);
    printf("dotp compile, from the disk cache     %8.2f ms\n", disk);
    printf("dotp compile, from memory             %8.2f ms\n", memory);

    int64_t n = (int64_t)1 << 24;
    weft_array *in[2], *out;
    for (int k = 0; k < 2; k++) {
        if (weft_array_create(c1, WEFT_F32, 1, &n, &in[k])) {
            die("weft_array_create");
        }
        float *x = weft_array_data(in[k], 0);
        for (int64_t i = 0; i < n; i++) {
            x[i] = (float)((i * (k + 3)) % 17) / 16.0f;
        }
    }
    enum { RUNS = 11 };
    double t[RUNS];
    float r = 0;
    for (int i = 0; i < RUNS; i++) {
        double t0 = timing_now_ms();
        if (weft_run(e1, in, 2, &out, 1)) {
            die("weft_run");
        }
        r = *(float *)weft_array_data(out, 0); /* waits for the result */
        t[i] = timing_now_ms() - t0;
        weft_array_release(out);
    }
    double med = timing_median(t, RUNS); /* sorts t */
    printf("dotp 2^24 f32, run and read back      %8.3f ms (median of %d; "
           "first %.3f)  %.0f GB/s  result %.1f\n",
           med, RUNS, t[RUNS - 1], 8.0 * (double)n / med / 1e6, (double)r);
    weft_stats st;
    weft_context_stats(c1, &st);
    printf("stats: compiled %llu, loaded %llu, reused %llu, compile %.1f ms, "
           "up %llu B, down %llu B, evictions %llu, device %llu B\n",
           (unsigned long long)st.kernels_compiled,
           (unsigned long long)st.kernels_loaded,
           (unsigned long long)st.kernels_reused, st.compile_ms,
           (unsigned long long)st.bytes_uploaded,
           (unsigned long long)st.bytes_downloaded,
           (unsigned long long)st.evictions,
           (unsigned long long)st.device_bytes);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    weft_executable_free(e1);
    weft_executable_free(e2);
    weft_executable_free(e3);
    weft_program_free(p1);
    weft_program_free(p2);
    weft_program_free(p3);
    weft_context_free(c2);
    weft_context_free(c1);
    return 0;
}
