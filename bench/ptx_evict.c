/*
 * bench/ptx_evict.c: a working set larger than the whole GPU, on the ptx
 * backend, with no memory cap: the real driver runs out of memory and weft
 * must evict (or report WEFT_ERR_OUT_OF_MEMORY), never crash.
 *
 * One program with K outputs, output k = generate (n) (\i -> i + k) of
 * n = 2^30 f32 (4 GiB each); K is chosen so that the outputs add up to
 * `factor` times the device's memory (default 1.25: twice would not fit
 * in the host memory of the test machine, which holds the evicted
 * copies).  Every output stays alive until the end, so the device must
 * move the oldest to the host.  Then every `stride`-th output and the last
 * are read back (each read downloads the array if its newest copy is on
 * the device) and checked at a few positions.  Prints the counters and
 * "ok" or the first error.
 *
 * Usage: ptx_evict [factor] [stride]
 * Build: gcc -O2 -Iinclude bench/ptx_evict.c -o ptx_evict -L. -lweft \
 *            -Wl,-rpath,'$ORIGIN'
 */
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

int main(int argc, char **argv)
{
    double factor = argc > 1 ? atof(argv[1]) : 1.25;
    int stride = argc > 2 ? atoi(argv[2]) : 6;
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    weft_context *ctx;
    if (weft_context_create(&cfg, &ctx)) {
        printf("no ptx context: %s\n", weft_last_error());
        return 77;
    }
    const int64_t n = (int64_t)1 << 30;
    const double bytes = 4.0 * (double)n;
    /* the device's memory: what a probe run reports as held is not it, so
     * take the size from the first OOM-free guess: 80 GB class by default,
     * or $PTX_EVICT_DEVICE_GB */
    const char *gb = getenv("PTX_EVICT_DEVICE_GB");
    double dev = (gb ? atof(gb) : 80.0) * 1e9;
    int K = (int)(factor * dev / bytes + 0.999);
    if (K > 64) {
        K = 64;
    }
    weft_program *p;
    weft_program_create(ctx, &p);
    weft_acc *res[64];
    for (int k = 0; k < K; k++) {
        weft_fun *f = weft_fun1(p, WEFT_DIM(1));
        weft_exp *i = weft_convert(weft_get(weft_arg(f, 0), 0), WEFT_F32);
        weft_fun_return(f, weft_add(i, weft_f32(p, (float)k)));
        weft_exp *sh[1] = {weft_i64(p, n)};
        res[k] = weft_generate(weft_index(p, 1, sh), f);
    }
    weft_array *out[64] = {0};
    weft_status s = weft_run1(p, res, K, NULL, 0, out, K);
    weft_stats st;
    weft_context_stats(ctx, &st);
    printf("%d outputs of %.1f GiB (%.0f GB, %.2f x %.0f GB): %s\n", K,
           bytes / (1 << 30), K * bytes / 1e9, factor, dev / 1e9,
           weft_status_name(s));
    if (s) {
        printf("  %s\n", weft_last_error());
    }
    printf("  evictions %llu, downloaded %.1f GB, device held %.1f GB\n",
           (unsigned long long)st.evictions, st.bytes_downloaded / 1e9,
           st.device_bytes / 1e9);
    int bad = 0;
    for (int k = 0; s == WEFT_OK && k < K; k++) {
        if (k % stride != 0 && k != K - 1) {
            continue;
        }
        const float *y = weft_array_data(out[k], 0);
        if (!y) {
            printf("  output %d: %s\n", k, weft_last_error());
            bad++;
            continue;
        }
        int64_t at[3] = {0, 12345, (int64_t)1 << 23};
        for (int j = 0; j < 3; j++) {
            float want = (float)at[j] + (float)k;
            if (y[at[j]] != want) {
                printf("  output %d [%lld] = %g, expected %g\n", k,
                       (long long)at[j], (double)y[at[j]], (double)want);
                bad++;
            }
        }
    }
    weft_context_stats(ctx, &st);
    printf("  after reading: evictions %llu, downloaded %.1f GB\n",
           (unsigned long long)st.evictions, st.bytes_downloaded / 1e9);
    for (int k = 0; k < K; k++) {
        weft_array_release(out[k]);
    }
    weft_program_free(p);
    weft_context_free(ctx);
    printf("%s\n", (s == WEFT_OK || s == WEFT_ERR_OUT_OF_MEMORY) && !bad
                       ? "ok"
                       : "FAILED");
    return bad ? 1 : 0;
}
