/*
 * bench/trace_overhead.c: what WEFT_TRACE's sites cost per weft_run.
 *
 * Not a test.  Times weft_run of two small programs on the CPU backend,
 * where a run is mostly fixed cost (the walk of the program, the
 * argument block, a gang job) and a per-site cost would show: map (+1)
 * over 1,000 f32 and the dot product of two such vectors.  Each is
 * compiled once, its optimised code waited for, then run in rounds of
 * RUNS calls; the best round's mean is reported in nanoseconds per call
 * (the best, because a shared machine only ever adds time).  Built
 * against the public API only, so that the same source measures a
 * library without the trace code (main) and one with it: build both and
 * compare their lines "map" and "dotp" with tracing off (the default);
 * with a path argument the context traces to it (through $WEFT_TRACE, so
 * that an older library builds it too), for the cost when on.  The
 * difference between two processes' instruction counts (perf stat -e
 * instructions:u) at two numbers of runs is the instructions of a run,
 * which a shared machine does not blur as it blurs time.
 *
 * Usage: trace_overhead [threads [runs per round [trace.json]]]
 * Build: gcc -std=c17 -O2 -Iinclude bench/trace_overhead.c -o to \
 *            -Lbuild -lweft -Wl,-rpath,build
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>

#include "timing.h"
#include "weft.h"

enum { N = 1000, ROUNDS = 7 };
static int runs = 20000; /* calls per round */

static void check(weft_status s, const char *what)
{
    if (s != WEFT_OK) {
        fprintf(stderr, "trace_overhead: %s: %s\n", what, weft_last_error());
        exit(1);
    }
}

/* Best-of-ROUNDS mean ns per weft_run of exe on in[0..nin-1]. */
static double time_runs(weft_executable *exe, weft_array **in, int nin)
{
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = timing_now_ms();
        for (int i = 0; i < runs; i++) {
            weft_array *out;
            check(weft_run(exe, in, nin, &out, 1), "weft_run");
            weft_array_release(out);
        }
        double per = (timing_now_ms() - t0) * 1e6 / runs;
        best = per < best ? per : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2 && atoi(argv[2]) > 0) {
        runs = atoi(argv[2]);
    }
    if (argc > 3) {
        setenv("WEFT_TRACE", argv[3], 1);
    } else {
        unsetenv("WEFT_TRACE");
    }
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = threads;
    weft_context *ctx;
    check(weft_context_create(&cfg, &ctx), "weft_context_create");
    weft_program *p;
    check(weft_program_create(ctx, &p), "weft_program_create");
    weft_fun *inc = weft_fun1(p, WEFT_F32);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_f32(p, 1)));
    weft_acc *map = weft_map(inc, weft_param(p, WEFT_F32, 1));
    weft_executable *em, *ed;
    check(weft_compile(p, &map, 1, &em), "weft_compile map");
    weft_program *p2;
    check(weft_program_create(ctx, &p2), "weft_program_create");
    weft_acc *x = weft_param(p2, WEFT_F32, 1), *y = weft_param(p2, WEFT_F32, 1);
    weft_fun *mul = weft_fun2(p2, WEFT_F32, WEFT_F32);
    weft_fun_return(mul, weft_mul(weft_arg(mul, 0), weft_arg(mul, 1)));
    weft_fun *add = weft_fun2(p2, WEFT_F32, WEFT_F32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *dotp = weft_fold(add, weft_f32(p2, 0), weft_zipwith(mul, x, y));
    check(weft_compile(p2, &dotp, 1, &ed), "weft_compile dotp");
    check(weft_context_wait_optimised(ctx), "weft_context_wait_optimised");
    float data[N];
    for (int i = 0; i < N; i++) {
        data[i] = (float)(i % 7);
    }
    int64_t n = N;
    const void *d[1] = {data};
    weft_array *in[2];
    check(weft_array_from_host(ctx, WEFT_F32, 1, &n, d, &in[0]), "array");
    check(weft_array_from_host(ctx, WEFT_F32, 1, &n, d, &in[1]), "array");
    double tm = time_runs(em, in, 1);
    double td = time_runs(ed, in, 2);
    printf("threads %d, %d elements, tracing %s\n", threads, N,
           argc > 3 ? "on" : "off");
    printf("map   %8.0f ns per weft_run\n", tm);
    printf("dotp  %8.0f ns per weft_run\n", td);
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    weft_executable_free(em);
    weft_executable_free(ed);
    weft_program_free(p);
    weft_program_free(p2);
    weft_context_free(ctx);
    return 0;
}
