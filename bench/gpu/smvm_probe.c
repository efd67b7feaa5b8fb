/*
 * bench/gpu/smvm_probe.c: weft's smvm (banded and power-law CSR) and
 * k-means (fold and while forms) of bench/programs.h on a backend (ptx by
 * default), timed by the host clock (weft_run to weft_array_wait on the
 * result, inputs on the device after a first run), and checked against a
 * sequential C reference: a quick look at one program without the whole
 * GPU benchmark (bench/gpu/run.py runs them against their peers).
 *
 * Build and run (from the unpacked bundle, next to libweft.so):
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/smvm_probe.c -o smvm_probe \
 *       -L. -lweft -Wl,-rpath,'$ORIGIN' -lm && ./smvm_probe [ptx|cpu] [runs]
 * (a third argument `smvm`: the two matrices only; a fourth `offsets`:
 * their offset form only).  smvm runs twice:
 * foldSeg' of the row pointers (bench/programs.h's, the offset form) and
 * foldSeg of the row lengths, the same sums.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../programs.h"
#define PROBE_NAME "smvm_probe"
#include "probe.h"

/* The median ms of `runs` runs of exe on in (nin arrays), the result of
 * the last in *out (nout outputs). */
static double time_runs(weft_executable *exe, weft_array **in, int nin,
                        int nout, weft_array **out, int runs)
{
    double t[64];
    runs = runs > 64 ? 64 : runs;
    for (int r = -1; r < runs; r++) {
        for (int o = 0; o < nout; o++) {
            weft_array_release(out[o]);
            out[o] = NULL;
        }
        double t0 = now_ms();
        if (weft_run(exe, in, nin, out, nout)) {
            die("weft_run");
        }
        for (int o = 0; o < nout; o++) {
            if (weft_array_wait(out[o])) {
                die("weft_array_wait");
            }
        }
        if (r >= 0) {
            t[r] = now_ms() - t0;
        }
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_d);
    return t[runs / 2];
}

static weft_array *wrap(weft_context *ctx, weft_type t, int64_t n, void *p)
{
    weft_array *a;
    void *data[1] = {p};
    if (weft_array_wrap(ctx, t, 1, &n, data, NULL, NULL, &a)) {
        die("weft_array_wrap");
    }
    return a;
}

static void smvm(weft_context *ctx, int powerlaw, int runs, int forms)
{
    bp_csr m;
    int64_t n = 1048576;
    if (!(powerlaw ? bp_csr_powerlaw(&m, n * 10, n, 10000, 0x5eed)
                   : bp_csr_banded(&m, n, 10, 0x5eed))) {
        die("out of memory");
    }
    float *x = malloc(sizeof *x * (size_t)m.ncols);
    float *y = malloc(sizeof *y * (size_t)m.nrows);
    uint64_t seed = 7;
    for (int64_t i = 0; i < m.ncols; i++) {
        x[i] = 2.0f * bp_unit(&seed) - 1.0f;
    }
    for (int64_t r = 0; r < m.nrows; r++) {
        float acc = 0;
        for (int32_t k = m.rowptr[r]; k < m.rowptr[r + 1]; k++) {
            acc += m.vals[k] * x[m.cols[k]];
        }
        y[r] = acc;
    }
    for (int form = 0; form < forms; form++) {
        weft_program *p;
        if (weft_program_create(ctx, &p)) {
            die("weft_program_create");
        }
        weft_acc *pa[4] = {
            weft_param(p, WEFT_F32, 1), weft_param(p, WEFT_I32, 1),
            weft_param(p, WEFT_I32, 1), weft_param(p, WEFT_F32, 1)};
        weft_acc *r = bp_smvm(p, pa[0], pa[1], pa[2], pa[3]);
        if (form == 1) {
            /* foldSeg of the lengths: bp_smvm's product again */
            weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
            weft_fun_return(
                ix, weft_index1(weft_convert(weft_at(pa[1], weft_arg(ix, 0)),
                                             WEFT_I64)));
            weft_acc *prod =
                weft_zipwith(bp_binop(p, WEFT_F32, WEFT_OP_MUL), pa[0],
                             weft_backpermute(weft_shape(pa[0]), ix, pa[3]));
            r = weft_fold_seg(bp_binop(p, WEFT_F32, WEFT_OP_ADD),
                              weft_f32(p, 0), prod, pa[2]);
        }
        weft_executable *exe;
        if (weft_compile(p, &r, 1, &exe)) {
            die("weft_compile");
        }
        weft_array *in[4] = {wrap(ctx, WEFT_F32, m.nnz, m.vals),
                             wrap(ctx, WEFT_I32, m.nnz, m.cols),
                             form ? wrap(ctx, WEFT_I32, m.nrows, m.rowlen)
                                  : wrap(ctx, WEFT_I32, m.nrows + 1, m.rowptr),
                             wrap(ctx, WEFT_F32, m.ncols, x)};
        weft_array *out[1] = {NULL};
        double ms = time_runs(exe, in, 4, 1, out, runs);
        const float *w = weft_array_data(out[0], 0);
        double err = 0;
        for (int64_t i = 0; w && i < m.nrows; i++) {
            double e = fabs((double)w[i] - (double)y[i]) /
                       (fabs((double)y[i]) > 1 ? fabs((double)y[i]) : 1);
            err = e > err ? e : err;
        }
        /* values and columns once, the descriptor, x, y */
        double bytes =
            8.0 * (double)m.nnz + 8.0 * (double)m.nrows + 4.0 * (double)m.ncols;
        printf("smvm %-9s %-7s %lld rows %lld nnz: %.4f ms (median of %d, "
               "host clock), %.0f GB/s; max rel. err. %.1e %s\n",
               powerlaw ? "power-law" : "banded", form ? "lengths" : "offsets",
               (long long)m.nrows, (long long)m.nnz, ms, runs,
               bytes / (ms * 1e6), err, w && err <= 5e-4 ? "ok" : "FAIL");
        for (int k = 0; k < 4; k++) {
            weft_array_release(in[k]);
        }
        weft_array_release(out[0]);
        weft_executable_free(exe);
        weft_program_free(p);
    }
    free(x);
    free(y);
    bp_csr_free(&m);
}

static void kmeans(weft_context *ctx, int by_while, int runs)
{
    int64_t n = 4194304;
    int k = 16;
    float *px = malloc(sizeof *px * (size_t)n);
    float *py = malloc(sizeof *py * (size_t)n);
    float cx[16], cy[16];
    bp_kmeans_points(px, py, n, k, 2.5f, 0x5eed);
    memcpy(cx, px, sizeof cx);
    memcpy(cy, py, sizeof cy);
    weft_program *p;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *pa[4] = {weft_param(p, WEFT_F32, 1), weft_param(p, WEFT_F32, 1),
                       weft_param(p, WEFT_F32, 1), weft_param(p, WEFT_F32, 1)};
    weft_acc *r = bp_kmeans(ctx, p, pa[0], pa[1], pa[2], pa[3], 50, by_while);
    weft_executable *exe;
    if (weft_compile(p, &r, 1, &exe)) {
        die("weft_compile");
    }
    weft_array *in[4] = {wrap(ctx, WEFT_F32, n, px), wrap(ctx, WEFT_F32, n, py),
                         wrap(ctx, WEFT_F32, k, cx),
                         wrap(ctx, WEFT_F32, k, cy)};
    weft_array *out[3] = {NULL, NULL, NULL};
    double ms = time_runs(exe, in, 4, 3, out, runs);
    const int32_t *it = weft_array_data(out[2], 0);
    printf("k-means %-6s %lld points k = %d: %.3f ms (median of %d, host "
           "clock), %d iterations, %.3f ms per iteration\n",
           by_while ? "while" : "fold", (long long)n, k, ms, runs,
           it ? it[0] : -1, it && it[0] > 0 ? ms / it[0] : 0.0);
    for (int i = 0; i < 4; i++) {
        weft_array_release(in[i]);
    }
    for (int o = 0; o < 3; o++) {
        weft_array_release(out[o]);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    free(px);
    free(py);
}

int main(int argc, char **argv)
{
    weft_config cfg = weft_config_default();
    cfg.backend = argc > 1 && strcmp(argv[1], "cpu") == 0 ? WEFT_BACKEND_CPU
                                                          : WEFT_BACKEND_PTX;
    int runs = argc > 2 ? atoi(argv[2]) : 21;
    runs = runs < 1 ? 1 : runs;
    weft_context *ctx;
    if (weft_context_create(&cfg, &ctx)) {
        die("weft_context_create");
    }
    /* a fourth argument `offsets`: the offset form only */
    int forms = argc > 4 && strcmp(argv[4], "offsets") == 0 ? 1 : 2;
    smvm(ctx, 0, runs, forms);
    smvm(ctx, 1, runs, forms);
    if (argc <= 3 || strcmp(argv[3], "smvm") != 0) {
        kmeans(ctx, 0, runs > 5 ? 5 : runs);
        kmeans(ctx, 1, runs > 5 ? 5 : runs);
    }
    weft_context_free(ctx);
    return 0;
}
