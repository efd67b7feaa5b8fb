/*
 * bench/gpu/multi_big.c: arrays larger than one GPU on several (issue 20:
 * "a program whose arrays total 1.5x one GPU's memory runs on 4 GPUs
 * without eviction").
 *
 * One program, three results kept on the device, a, b and c of n f32
 * each (a[i] = i mod 1024, b = 2 a, c = a + b), whose bytes total
 * FRACTION times the memory of the context's first GPU, and a fourth
 * result, the number of i where c[i] != 3 (i mod 1024), computed on the
 * device (a fold over c: nothing is downloaded but that count).  Prints
 * the count (0 when right), the evictions (0 when the arrays fit the
 * devices together), the bytes each device holds and the time of the run.
 * Exits 0 when the count is 0 (and, with --no-evict, no eviction), else
 * 1; 2 for a usage or weft error.
 *
 * Build (next to libweft.so, in the unpacked bundle):
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/multi_big.c -o multi_big \
 *       -L. -lweft -Wl,-rpath,'$ORIGIN' -lm
 * Run: WEFT_DEVICES=0,1 ./multi_big 1.5 --no-evict    (two 80 GB GPUs)
 *      WEFT_DEVICES=0,0 ./multi_big 0.3               (one GPU)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#include "probe.h"

static int fail(const char *what)
{
    fprintf(stderr, "multi_big: %s: %s\n", what, weft_last_error());
    return 2;
}

int main(int argc, char **argv)
{
    double fraction = argc > 1 ? atof(argv[1]) : 0.0;
    int no_evict = argc > 2 && strcmp(argv[2], "--no-evict") == 0;
    if (!(fraction > 0.0 && fraction < 64.0)) {
        fprintf(stderr, "usage: multi_big FRACTION [--no-evict]\n");
        return 2;
    }
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX; /* $WEFT_DEVICES picks the GPUs */
    weft_context *ctx = NULL;
    if (weft_context_create(&cfg, &ctx)) {
        return fail("weft_context_create");
    }
    weft_device_info info;
    if (weft_device_info_get(cfg.device, &info)) {
        return fail("weft_device_info");
    }
    int64_t n = (int64_t)(fraction * (double)info.memory_bytes / 12.0);
    weft_program *p = NULL;
    if (weft_program_create(ctx, &p)) {
        return fail("weft_program_create");
    }
    weft_exp *sh = weft_index1(weft_i64(p, n));
    weft_fun *gen = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(gen, weft_convert(weft_rem(weft_get(weft_arg(gen, 0), 0),
                                               weft_i64(p, 1024)),
                                      WEFT_F32));
    weft_acc *a = weft_generate(sh, gen);
    weft_fun *twice = weft_fun1(p, WEFT_F32);
    weft_fun_return(twice, weft_mul(weft_arg(twice, 0), weft_f32(p, 2.0f)));
    weft_acc *b = weft_map(twice, a);
    weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *c = weft_zipwith(add, a, b);
    weft_fun *bad = weft_fun1(p, WEFT_DIM(1));
    weft_exp *ix = weft_arg(bad, 0);
    weft_exp *want = weft_mul(
        weft_convert(weft_rem(weft_get(ix, 0), weft_i64(p, 1024)), WEFT_F32),
        weft_f32(p, 3.0f));
    weft_fun_return(bad, weft_cond(weft_ne(weft_at(c, ix), want),
                                   weft_i64(p, 1), weft_i64(p, 0)));
    weft_fun *sum = weft_fun2(p, WEFT_I64, WEFT_I64);
    weft_fun_return(sum, weft_add(weft_arg(sum, 0), weft_arg(sum, 1)));
    weft_acc *count =
        weft_fold_all(sum, weft_i64(p, 0), weft_generate(sh, bad));
    weft_acc *res[4] = {count, a, b, c};
    weft_executable *exe = NULL;
    if (weft_compile(p, res, 4, &exe)) {
        return fail("weft_compile");
    }
    weft_array *out[4] = {NULL, NULL, NULL, NULL};
    double t0 = now_ms();
    if (weft_run(exe, NULL, 0, out, 4)) {
        return fail("weft_run");
    }
    int64_t wrong = -1;
    if (weft_array_read(out[0], 0, &wrong, sizeof wrong)) {
        return fail("weft_array_read");
    }
    double ms = now_ms() - t0;
    weft_stats st;
    weft_context_stats(ctx, &st);
    printf("multi_big: %s, %d device(s), n = %lld f32 (3 arrays: %.1f GB, "
           "%.2fx one GPU's %.1f GB)\n",
           info.name, st.devices, (long long)n, 12.0 * (double)n / 1e9,
           fraction, (double)info.memory_bytes / 1e9);
    printf("multi_big: wrong elements %lld, evictions %llu, run %.1f ms, "
           "held on each device (GB):",
           (long long)wrong, (unsigned long long)st.evictions, ms);
    for (int i = 0; i < st.devices && i < 8; i++) {
        printf(" %.1f", (double)st.device_bytes_on[i] / 1e9);
    }
    printf(", kernels split %llu\n", (unsigned long long)st.kernels_split);
    for (int i = 0; i < 4; i++) {
        weft_array_release(out[i]);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    return wrong == 0 && (!no_evict || st.evictions == 0) ? 0 : 1;
}
