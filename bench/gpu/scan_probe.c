/*
 * bench/gpu/scan_probe.c: the scan of one long row over the GPUs of
 * $WEFT_DEVICES (issue 20; skeletons-ir/ptx/scan.c, "Several devices"),
 * with the read-only pass it stands on beside it.
 *
 * Two programs on i32 vectors of n (argv: sizes as powers of two), the
 * input uploaded once and resident: the benchmark's scan (scanl1 (+),
 * bench/gpu key `scan`) and a sum (foldAll (+) 0), which reads the row
 * once and writes nothing: its time per element against the scan's is
 * the c of the scan's bound over D devices, D / (1 + c) (every part but
 * the last reduces its tiles before any part scans).  Each is run `runs`
 * times after three warm-ups; the medians of the host's time to the
 * result (weft_run to weft_array_wait) and of the time between two CUDA
 * events on weft's stream around the run (device 0's, which joins the
 * others) are printed, with the rates they make (the scan moves 8 bytes
 * an element, the sum 4).  The scan's result is checked at every
 * position against the host's (wrapping, so exact) once, after its runs.
 *
 * WEFT_TRACE=t.json adds a trace whose kernel.split spans give each
 * device's kernel time (i32: one kernel a part, the reduce fused into the
 * scan's; elements without a packed status: the reduce's, entry 1, and
 * the scan's): `python3 bench/gpu/trace_kernels.py t.json`, one size a
 * trace (its medians are over every launch).
 *
 * On the GPU machine, from the unpacked bundle:
 *   gcc -std=c17 -O2 -Iinclude bench/gpu/scan_probe.c -o scan_probe -L. \
 *       -lweft -Wl,-rpath,'$ORIGIN' -ldl -lm
 *   for d in 0 0,1 0,1,2,3; do WEFT_DEVICES=$d ./scan_probe 21 28 30; done
 * (`./scan_probe 3 20 cpu` runs the same on the CPU backend: a check of
 * this program where no GPU is.)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_NAME "scan_probe"
#define PROBE_EVENTS
#include "probe.h"

/* scanl1 (+) (scan) or foldAll (+) 0 (sum) of an i32 vector. */
static weft_executable *program(weft_context *ctx, int sum)
{
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    if (weft_program_create(ctx, &p)) {
        die("weft_program_create");
    }
    weft_acc *x = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(f, weft_prim2(WEFT_OP_ADD, weft_arg(f, 0), weft_arg(f, 1)));
    weft_acc *r = sum ? weft_fold_all(f, weft_i32(p, 0), x) : weft_scanl1(f, x);
    if (weft_compile(p, &r, 1, &exe)) {
        die("weft_compile");
    }
    weft_program_free(p);
    return exe;
}

/* The scan's output against the host's running sums; 0 when equal. */
static int check(const int32_t *in, int64_t n, weft_array *out)
{
    const int32_t *o = weft_array_data(out, 0);
    if (!o) {
        die("weft_array_data");
    }
    uint32_t acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += (uint32_t)in[i];
        if ((uint32_t)o[i] != acc) {
            fprintf(stderr,
                    "scan_probe: position %lld of %lld: %d, "
                    "expected %d\n",
                    (long long)i, (long long)n, o[i], (int)acc);
            return 1;
        }
    }
    return 0;
}

/* runs of exe over `in` (n elements): one line; the scan's checked. */
static int probe(const char *name, weft_executable *exe, weft_array *in,
                 const int32_t *host, int64_t n, int lg, int runs,
                 probe_events *ev, double bytes)
{
    double *wall = calloc((size_t)runs * 2, sizeof *wall);
    double *evs = wall + runs;
    if (!wall) {
        fprintf(stderr, "scan_probe: out of memory\n");
        exit(1);
    }
    int rc = 0;
    for (int r = -3; r < runs; r++) {
        weft_array *out = NULL;
        probe_events_mark(ev, 0);
        double t0 = now_ms();
        if (weft_run(exe, &in, 1, &out, 1)) {
            die(name);
        }
        probe_events_mark(ev, 1);
        if (weft_array_wait(out)) {
            die(name);
        }
        double t1 = now_ms();
        if (r >= 0) {
            wall[r] = t1 - t0;
            evs[r] = probe_events_ms(ev);
        }
        if (r == runs - 1 && host) {
            rc = check(host, n, out);
        }
        weft_array_release(out);
    }
    qsort(wall, (size_t)runs, sizeof *wall, cmp_d);
    qsort(evs, (size_t)runs, sizeof *evs, cmp_d);
    double e = evs[runs / 2];
    printf("%-4s 2^%d  host %.4f ms (best %.4f, %.2f TB/s)  events ", name, lg,
           wall[runs / 2], wall[0], bytes / wall[runs / 2] * 1e-9);
    if (e > 0) {
        printf("%.4f ms (%.2f TB/s)", e, bytes / e * 1e-9);
    } else {
        printf("-");
    }
    printf("%s\n", host ? (rc ? "  WRONG" : "  checked") : "");
    fflush(stdout);
    free(wall);
    return rc;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 21;
    runs = runs > 0 ? runs : 21;
    int nsizes = 0, sizes[16];
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX; /* $WEFT_DEVICES picks the GPUs */
    for (int a = 2; a < argc; a++) {
        if (strcmp(argv[a], "cpu") == 0) {
            cfg.backend = WEFT_BACKEND_CPU;
        } else if (nsizes < 16 && atoi(argv[a]) > 0 && atoi(argv[a]) < 40) {
            sizes[nsizes++] = atoi(argv[a]);
        }
    }
    if (nsizes == 0) {
        sizes[nsizes++] = 28;
    }
    /* the optimised code from the first run (not the quick tier's) */
    cfg.flags |= WEFT_FLAG_NO_TIERING;
    weft_context *ctx = NULL;
    if (weft_context_create(&cfg, &ctx)) {
        die("weft_context_create");
    }
    probe_events ev;
    if (probe_events_open(&ev, ctx)) {
        ev.stream = NULL; /* the host clock only */
    }
    const char *devs = getenv("WEFT_DEVICES");
    printf("devices %s, %d runs, events %s\n", devs && *devs ? devs : "(one)",
           runs, ev.stream ? "on weft's stream" : "off");
    weft_executable *scan = program(ctx, 0), *sum = program(ctx, 1);
    int rc = 0;
    for (int s = 0; s < nsizes; s++) {
        int64_t n = (int64_t)1 << sizes[s];
        int32_t *v = malloc(sizeof *v * (size_t)n);
        if (!v) {
            fprintf(stderr, "scan_probe: out of memory\n");
            return 1;
        }
        for (int64_t i = 0; i < n; i++) {
            v[i] = (int32_t)(i % 7) - 3;
        }
        weft_array *in = NULL;
        if (weft_array_from_host(ctx, WEFT_I32, 1, &n, (const void *const[]){v},
                                 &in)) {
            die("weft_array_from_host");
        }
        rc |=
            probe("scan", scan, in, v, n, sizes[s], runs, &ev, 8.0 * (double)n);
        rc |= probe("sum", sum, in, NULL, n, sizes[s], runs, &ev,
                    4.0 * (double)n);
        weft_array_release(in);
        free(v);
    }
    weft_executable_free(scan);
    weft_executable_free(sum);
    weft_context_free(ctx);
    return rc;
}
