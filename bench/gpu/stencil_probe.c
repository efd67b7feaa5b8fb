/*
 * bench/gpu/stencil_probe.c: time weft's stencils alone, public API only
 * (to look at ptx/stencil.c's kernels without bench/gpu/run.py's peers).
 *
 * Programs (h x w f32, the values of weft_gpu.c's generator):
 *   jacobi-step   one 3x3 clamped 5-point step (bench/programs.h's
 *                 bp_jacobi_step), run `steps` times by weft_run, each
 *                 on the last result (on the device; released once the
 *                 next run is queued): ms per step;
 *   jacobi        bp_jacobi's awhile of `steps` steps: ms per step;
 *   heat3         a 7-point 3x3x3 clamped step of a d x d x d grid
 *                 (d = the cube root of h w, rounded down), as jacobi-step;
 * each the median of `reps` timed runs after a first one, by the host
 * clock up to weft_array_wait on the result, with the bytes a step must
 * move (read once, written once) over the time.  The result of
 * jacobi-step is checked against bp_jacobi's on the same input.
 *
 * Build and run (next to libweft.so):
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/stencil_probe.c -o stencil_probe \
 *       -L. -lweft -Wl,-rpath,'$ORIGIN' -lm
 *   ./stencil_probe [backend [h w steps reps]]    (ptx 8192 8192 100 7)
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#include "../programs.h"
#include "probe.h"

static int fail(const char *what)
{
    fprintf(stderr, "stencil_probe: %s: %s\n", what, weft_last_error());
    return 1;
}

/* 7-point average of a rank-3 grid, clamped (window 3x3x3, row-major:
 * centre 13, z neighbours 4 and 22, y 10 and 16, x 12 and 14). */
static weft_acc *heat3_step(weft_program *p, weft_acc *u)
{
    weft_type t27[27];
    for (int i = 0; i < 27; i++) {
        t27[i] = WEFT_F32;
    }
    weft_fun *f = weft_fun_create(p, 27, t27);
    static const int at[7] = {4, 22, 10, 16, 12, 14, 13};
    weft_exp *s = weft_arg(f, at[0]);
    for (int i = 1; i < 7; i++) {
        s = weft_add(s, weft_arg(f, at[i]));
    }
    weft_fun_return(f, weft_mul(weft_f32(p, 1.0f / 7.0f), s));
    weft_boundary clamp = {WEFT_BOUNDARY_CLAMP, NULL};
    return weft_stencil(f, (const int[]){3, 3, 3}, clamp, u);
}

/* Compile prog (0 jacobi-step, 1 jacobi, 2 heat3) in ctx on a param of
 * the given rank. */
static int compile(weft_context *ctx, int prog, int rank, int32_t steps,
                   weft_program **p, weft_executable **exe)
{
    if (weft_program_create(ctx, p)) {
        return fail("weft_program_create");
    }
    weft_acc *u = weft_param(*p, WEFT_F32, rank);
    weft_acc *r = prog == 0   ? bp_jacobi_step(*p, u)
                  : prog == 1 ? bp_jacobi(*p, u, steps)
                              : heat3_step(*p, u);
    return weft_compile(*p, &r, 1, exe) ? fail("weft_compile") : 0;
}

/* One timed run of prog: `steps` runs of exe, each on the last one's
 * result (prog 0, 2), or one run (prog 1); *out gets the (last) result. */
static int run(weft_executable *exe, int prog, weft_array *in, int32_t steps,
               weft_array **out, double *ms)
{
    double t0 = now_ms();
    weft_array *from = in;
    weft_array_retain(from);
    for (int32_t i = 0; i < (prog == 1 ? 1 : steps); i++) {
        weft_array *to = NULL;
        weft_status st = weft_run(exe, &from, 1, &to, 1);
        weft_array_release(from);
        if (st) {
            return fail("weft_run");
        }
        from = to;
    }
    *out = from;
    if (weft_array_wait(from)) {
        return fail("weft_array_wait");
    }
    *ms = now_ms() - t0;
    return 0;
}

int main(int argc, char **argv)
{
    weft_config cfg = weft_config_default();
    if (argc > 1 && weft_backend_from_name(argv[1], &cfg.backend)) {
        return fail(argv[1]);
    } else if (argc <= 1) {
        cfg.backend = WEFT_BACKEND_PTX;
    }
    int64_t h = argc > 3 ? atoll(argv[2]) : 8192;
    int64_t w = argc > 3 ? atoll(argv[3]) : 8192;
    int32_t steps = argc > 4 ? atoi(argv[4]) : 100;
    int reps = argc > 5 ? atoi(argv[5]) : 7;
    if (h < 1 || w < 1 || steps < 1 || reps < 1 || reps > 99) {
        fprintf(stderr, "usage: stencil_probe [backend [h w steps reps]]\n");
        return 2;
    }
    weft_context *ctx;
    if (weft_context_create(&cfg, &ctx)) {
        return fail("weft_context_create");
    }
    printf("stencil_probe: %s, %lldx%lld, %d steps, median of %d\n",
           argv[1] ? argv[1] : "ptx", (long long)h, (long long)w, steps, reps);
    int64_t d = (int64_t)floor(cbrt((double)(h * w)));
    int64_t n = h * w;
    float *host = malloc(sizeof *host * (size_t)n);
    float *want = malloc(sizeof *want * (size_t)n);
    if (!host || !want) {
        return 2;
    }
    uint64_t seed = 12345;
    for (int64_t i = 0; i < n; i++) {
        host[i] = (float)(bp_next(&seed) >> 40) * (1.0f / 16777216.0f);
    }
    int rc = 0;
    for (int prog = 0; prog < 3 && rc == 0; prog++) {
        static const char *const names[3] = {"jacobi-step", "jacobi (awhile)",
                                             "heat3 (7-point)"};
        int rank = prog == 2 ? 3 : 2;
        int64_t shape[3] = {h, w, 0};
        if (rank == 3) {
            shape[0] = shape[1] = shape[2] = d;
        }
        int64_t size = rank == 3 ? d * d * d : n;
        weft_program *p = NULL;
        weft_executable *exe = NULL;
        weft_array *in = NULL, *out = NULL;
        const void *data[1] = {host};
        double t[100];
        if (compile(ctx, prog, rank, steps, &p, &exe) ||
            weft_array_from_host(ctx, WEFT_F32, rank, shape, data, &in)) {
            rc = rc ? rc : fail("setup");
        }
        for (int r = 0; rc == 0 && r <= reps; r++) {
            weft_array_release(out);
            out = NULL;
            rc = run(exe, prog, in, steps, &out, &t[r > 0 ? r - 1 : 0]);
        }
        if (rc == 0) {
            qsort(t, (size_t)reps, sizeof t[0], cmp_d);
            double ms = t[reps / 2] / steps;
            printf("  %-16s %9.4f ms a step  %7.1f GB/s  (%lld elements)\n",
                   names[prog], ms, 8.0 * (double)size / (ms * 1e6),
                   (long long)size);
        }
        /* jacobi-step's result against the awhile's */
        if (rc == 0 && prog == 0 &&
            weft_array_read(out, 0, want, sizeof *want * (size_t)n)) {
            rc = fail("weft_array_read");
        }
        if (rc == 0 && prog == 1) {
            float *got = malloc(sizeof *got * (size_t)n);
            if (!got || weft_array_read(out, 0, got, sizeof *got * (size_t)n)) {
                rc = fail("weft_array_read");
            } else {
                int64_t bad = 0;
                for (int64_t i = 0; i < n; i++) {
                    bad += got[i] != want[i];
                }
                printf("  host loop and awhile agree: %s (%lld differ)\n",
                       bad ? "NO" : "yes", (long long)bad);
                rc = bad != 0;
            }
            free(got);
        }
        weft_array_release(out);
        weft_array_release(in);
        weft_executable_free(exe);
        weft_program_free(p);
    }
    free(host);
    free(want);
    weft_context_free(ctx);
    return rc;
}
