/*
 * bench/compile_scaling.c: how build, compile and first-run time grow with
 * the size of a program (issue 21).
 *
 *   weft_compile_scaling [-s shape,...] [-n size,...] [-b backend,...]
 *                        [-t seconds] [-T seconds] [-m target]
 *
 * Programs that reach weft from another runtime are generated (a traced
 * loop, a code generator), so they are large and deep.  Each shape below
 * is built at each size n (the number of loop steps, each a few terms):
 *   add      map (\x -> ((x + 1) + 2) + ... + n) over f64 (no folding:
 *            floating addition does not reassociate)
 *   cond     map (\x -> e_n), e_i = cond (x > -i) (e_{i-1} + 1) x, i64
 *   let      map (\x -> e_n), e_i = e_{i-1} * 3 xor e_{i-1} >> 1: every
 *            e_i is used twice, so each is bound by a let
 *   tuple    map (\x -> get(...get(t_n, 0)..., 0)), t_i = (t_{i-1}): n
 *            nested 1-tuples and n projections
 *   wide     map (\x -> sum_i get(t, i)), t = (x + 0, ..., x + n-1)
 *   maps     a_i = map (\y -> y + i) a_{i-1}: n maps, each with its own
 *            function (fusion makes one kernel)
 *   acond    a_i = acond (the s > i) (map inc a_{i-1}) a_{i-1}
 *   zipwith  a_i = zipWith (+) a_{i-1} xs
 *   kernels  n results, result i = map (\y -> y * i) xs: n kernels that
 *            differ only in a constant (one compiled kernel: a family,
 *            runtime/families.c)
 *   distinct n results, result i = map (\y -> y * (i + 1)) xs, the
 *            product by Horner's rule on the bits of i + 1 (additions
 *            only): n kernels of different code, each compiled
 * and timed in a child process of its own (so that one case cannot slow
 * the next, and a case that passes the time limit is killed and reported
 * as "over" instead of hanging): build (the builder calls), compile
 * (weft_compile), run (the first weft_run, on 16 elements) and free
 * (weft_executable_free, weft_program_free and weft_context_free: on the
 * CPU backend the context's free waits for nothing, see runtime-cpu/jit.c
 * "Tiers").  A shape that passes the limit at one size is not tried at
 * larger ones.  The growth exponent of a column is the slope of the least
 * squares line through (log n, log t) over the sizes that finished (sizes
 * whose time is under 1 ms are left out: they measure fixed costs).
 *
 * Defaults: every shape, sizes 1000,10000,100000,1000000, backends interp
 * and cpu, 100 s a case (-t), no limit on the whole run.  With -T, the
 * whole run's limit: a case gets at most what is left of it, and once it
 * is spent the remaining cases are reported "not tried" (for machines
 * that lend a command a fixed time, such as the GPU machine; the GPU
 * bundle builds this file there, tools/gpu-bundle.sh).  With -m, the
 * contexts' target_cpu (an SM such as sm_90 for ptx, a CPU name for cpu):
 * code is compiled for it but not run (the run column is 0), which times
 * the ptx backend's compile on a machine without a GPU.  Results:
 * bench/results/compile-scaling.md.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen_large.h"
#include "timing.h"
#include "weft.h"

enum { NELEM = 16, MAX_SIZES = 16, NPHASE = 4 };

static const char *const phase_name[NPHASE] = {"build", "compile", "run",
                                               "free"};

/* ---- the shapes ---------------------------------------------------------- */

/* A shape builds its results into r (at most *nr; sets *nr) and says the
 * element type of the parameters (two vectors of NELEM, and a scalar s). */
typedef struct shape {
    const char *name;
    weft_type elt;
    int (*build)(weft_program *p, long n, weft_acc **r);
} shape;

/* map f xs where xs is parameter 0 */
static int one_map(weft_program *p, weft_type t, weft_fun *f, weft_exp *body,
                   weft_acc **r)
{
    weft_fun_return(f, body);
    r[0] = weft_map(f, weft_param(p, t, 1));
    return 1;
}

static int build_add(weft_program *p, long n, weft_acc **r)
{
    weft_fun *f = weft_fun1(p, WEFT_F64);
    weft_exp *e = weft_arg(f, 0);
    for (long i = 1; i <= n; i++) {
        e = weft_add(e, weft_f64(p, (double)i));
    }
    return one_map(p, WEFT_F64, f, e, r);
}

static int build_cond(weft_program *p, long n, weft_acc **r)
{
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *x = weft_arg(f, 0), *e = x;
    for (long i = 1; i <= n; i++) {
        e = weft_cond(weft_gt(x, weft_i64(p, -i)), weft_add(e, weft_i64(p, 1)),
                      x);
    }
    return one_map(p, WEFT_I64, f, e, r);
}

static int build_let(weft_program *p, long n, weft_acc **r)
{
    weft_fun *f = weft_fun1(p, WEFT_I64);
    return one_map(p, WEFT_I64, f, gl_chain(p, weft_arg(f, 0), n, NULL), r);
}

static int build_tuple(weft_program *p, long n, weft_acc **r)
{
    weft_fun *f = weft_fun1(p, WEFT_I64);
    return one_map(p, WEFT_I64, f, gl_nested(p, weft_arg(f, 0), n), r);
}

static int build_wide(weft_program *p, long n, weft_acc **r)
{
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *e = gl_wide_sum(p, weft_arg(f, 0), (int)n);
    return e ? one_map(p, WEFT_I64, f, e, r) : 0;
}

static int build_maps(weft_program *p, long n, weft_acc **r)
{
    weft_acc *a = weft_param(p, WEFT_I64, 1);
    for (long i = 1; i <= n; i++) {
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_fun_return(f, weft_add(weft_arg(f, 0), weft_i64(p, i)));
        a = weft_map(f, a);
    }
    r[0] = a;
    return 1;
}

static int build_acond(weft_program *p, long n, weft_acc **r)
{
    weft_acc *a = weft_param(p, WEFT_I64, 1);
    weft_acc *s = weft_param(p, WEFT_I64, 0);
    weft_fun *inc = weft_fun1(p, WEFT_I64);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i64(p, 1)));
    for (long i = 1; i <= n; i++) {
        a = weft_acond(weft_gt(weft_the(s), weft_i64(p, i)), weft_map(inc, a),
                       a);
    }
    r[0] = a;
    return 1;
}

static int build_zipwith(weft_program *p, long n, weft_acc **r)
{
    weft_acc *xs = weft_param(p, WEFT_I64, 1), *a = xs;
    weft_fun *add = weft_fun2(p, WEFT_I64, WEFT_I64);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    for (long i = 1; i <= n; i++) {
        a = weft_zipwith(add, a, xs);
    }
    r[0] = a;
    return 1;
}

static int build_kernels(weft_program *p, long n, weft_acc **r)
{
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    for (long i = 0; i < n; i++) {
        weft_fun *f = weft_fun1(p, WEFT_I64);
        weft_fun_return(f, weft_mul(weft_arg(f, 0), weft_i64(p, i)));
        r[i] = weft_map(f, xs);
    }
    return (int)n;
}

static int build_distinct(weft_program *p, long n, weft_acc **r)
{
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    for (long i = 0; i < n; i++) {
        r[i] = weft_map(gl_times(p, i + 1), xs);
    }
    return (int)n;
}

static const shape shapes[] = {
    {"add", WEFT_F64, build_add},
    {"cond", WEFT_I64, build_cond},
    {"let", WEFT_I64, build_let},
    {"tuple", WEFT_I64, build_tuple},
    {"wide", WEFT_I64, build_wide},
    {"maps", WEFT_I64, build_maps},
    {"acond", WEFT_I64, build_acond},
    {"zipwith", WEFT_I64, build_zipwith},
    {"kernels", WEFT_I64, build_kernels},
    {"distinct", WEFT_I64, build_distinct},
};
enum { NSHAPE = sizeof shapes / sizeof shapes[0] };

/* ---- one case, in a child process ------------------------------------- */

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(path);
}

/* Remove dir and what is in it (errors ignored). */
static void remove_dir(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Build, compile, run and free shape sh at size n on backend b, writing
 * the NPHASE times (or a negative first time on failure, with the message
 * on stderr) to fd. */
/* -m: compile for this target, run nothing (NULL: the host's, run) */
static const char *target;

static void run_case(const shape *sh, long n, weft_backend b, int fd)
{
    double t[NPHASE] = {-1, 0, 0, 0};
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.target_cpu = target;
    /* a disk cache of its own, so that nothing is loaded from earlier
     * runs (left behind in /tmp: a case may be killed) */
    char cache[] = "/tmp/weft-compile-scaling-XXXXXX";
    if (mkdtemp(cache)) {
        cfg.cache_dir = cache;
    }
    weft_context *ctx = NULL;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    weft_array *in[3] = {NULL, NULL, NULL};
    int nin = 0;
    int nr =
        sh->build == build_kernels || sh->build == build_distinct ? (int)n : 1;
    weft_acc **r = calloc((size_t)nr, sizeof *r);
    weft_array **out = calloc((size_t)nr, sizeof *out);
    if (!r || !out || weft_context_create(&cfg, &ctx) != WEFT_OK ||
        weft_program_create(ctx, &p) != WEFT_OK) {
        goto fail;
    }
    double t0 = timing_now_s();
    nr = sh->build(p, n, r);
    double t1 = timing_now_s();
    if (nr < 1 || weft_program_status(p) != WEFT_OK) {
        goto fail;
    }
    if (weft_compile(p, r, nr, &exe) != WEFT_OK) {
        goto fail;
    }
    double t2 = timing_now_s();
    if (!target) { /* -m: compiled for another machine, not run */
        int64_t ne = NELEM;
        int64_t xs[NELEM];
        double xf[NELEM];
        for (int i = 0; i < NELEM; i++) {
            xs[i] = i - 5;
            xf[i] = 0.5 * i;
        }
        nin = weft_executable_inputs(exe);
        for (int i = 0; i < nin; i++) {
            int rank = i < 1 || sh->build == build_zipwith ? 1 : 0;
            const void *data[1] = {sh->elt == WEFT_F64 ? (void *)xf
                                                       : (void *)xs};
            if (weft_array_from_host(ctx, sh->elt, rank, &ne, data, &in[i]) !=
                WEFT_OK) {
                goto fail;
            }
        }
        if (weft_run(exe, in, nin, out, nr) != WEFT_OK) {
            goto fail;
        }
    }
    double t3 = timing_now_s();
    for (int i = 0; i < nr; i++) {
        weft_array_release(out[i]);
    }
    for (int i = 0; i < nin; i++) {
        weft_array_release(in[i]);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    double t4 = timing_now_s();
    remove_dir(cache);
    t[0] = t1 - t0;
    t[1] = t2 - t1;
    t[2] = t3 - t2;
    t[3] = t4 - t3;
    if (write(fd, t, sizeof t) != (ssize_t)sizeof t) {
        _exit(1);
    }
    _exit(0);
fail:
    fprintf(stderr, "compile_scaling: %s n=%ld: %s\n", sh->name, n,
            weft_last_error());
    if (write(fd, t, sizeof t) != (ssize_t)sizeof t) {
        _exit(1);
    }
    _exit(1);
}

enum { CASE_OK, CASE_FAILED, CASE_OVER };

/* Run one case in a child, waiting at most limit seconds. */
static int time_case(const shape *sh, long n, weft_backend b, double limit,
                     double *t)
{
    int fds[2];
    if (pipe(fds) != 0) {
        return CASE_FAILED;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return CASE_FAILED;
    }
    if (pid == 0) {
        close(fds[0]);
        run_case(sh, n, b, fds[1]);
    }
    close(fds[1]);
    double start = timing_now_s();
    char buf[NPHASE * sizeof(double)];
    size_t got = 0;
    int result = CASE_FAILED;
    for (;;) {
        double left = limit - (timing_now_s() - start);
        if (left <= 0) {
            result = CASE_OVER;
            break;
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r == 0) {
            result = CASE_OVER;
            break;
        }
        ssize_t k = read(fds[0], buf + got, sizeof buf - got);
        if (k <= 0) {
            break;
        }
        got += (size_t)k;
        if (got == sizeof buf) {
            memcpy(t, buf, sizeof buf);
            result = t[0] < 0 ? CASE_FAILED : CASE_OK;
            break;
        }
    }
    if (result == CASE_OVER) {
        kill(pid, SIGKILL);
    }
    int status;
    waitpid(pid, &status, 0);
    close(fds[0]);
    if (result == CASE_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        result = CASE_FAILED;
    }
    return result;
}

/* ---- the table ------------------------------------------------------------ */

/* Slope of the least squares line through (log n[i], log t[i]) for the
 * points with t >= 1 ms; NAN with fewer than two. */
static double exponent(const long *n, const double *t, int k)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0;
    for (int i = 0; i < k; i++) {
        if (t[i] < 1e-3) {
            continue;
        }
        double x = log((double)n[i]), y = log(t[i]);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        m++;
    }
    if (m < 2) {
        return NAN;
    }
    double d = m * sxx - sx * sx;
    return d == 0 ? NAN : (m * sxy - sx * sy) / d;
}

static void print_time(double t)
{
    if (t < 1e-3) {
        printf(" %6.0f us |", t * 1e6);
    } else if (t < 1) {
        printf(" %6.1f ms |", t * 1e3);
    } else {
        printf(" %7.2f s |", t);
    }
}

static int split(char *s, char **out, int max)
{
    int k = 0;
    for (char *tok = strtok(s, ","); tok && k < max; tok = strtok(NULL, ",")) {
        out[k++] = tok;
    }
    return k;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: weft_compile_scaling [-s shape,...] [-n size,...] "
            "[-b interp,cpu,ptx] [-t seconds] [-T seconds] [-m target]\n"
            "shapes:");
    for (int i = 0; i < NSHAPE; i++) {
        fprintf(stderr, " %s", shapes[i].name);
    }
    fprintf(stderr, "\n");
    exit(2);
}

int main(int argc, char **argv)
{
    char shape_arg[1024] = "", size_arg[1024] = "1000,10000,100000,1000000",
         be_arg[256] = "interp,cpu";
    double limit = 100, budget = 0;
    int opt;
    while ((opt = getopt(argc, argv, "s:n:b:t:T:m:h")) != -1) {
        switch (opt) {
        case 's': snprintf(shape_arg, sizeof shape_arg, "%s", optarg); break;
        case 'n': snprintf(size_arg, sizeof size_arg, "%s", optarg); break;
        case 'b': snprintf(be_arg, sizeof be_arg, "%s", optarg); break;
        case 't': limit = atof(optarg); break;
        case 'T': budget = atof(optarg); break;
        case 'm': target = optarg; break;
        default: usage();
        }
    }
    bool want[NSHAPE];
    if (shape_arg[0]) {
        char *names[NSHAPE * 2];
        int k = split(shape_arg, names, NSHAPE * 2);
        memset(want, 0, sizeof want);
        for (int i = 0; i < k; i++) {
            int j = 0;
            while (j < NSHAPE && strcmp(names[i], shapes[j].name) != 0) {
                j++;
            }
            if (j == NSHAPE) {
                usage();
            }
            want[j] = true;
        }
    } else {
        for (int j = 0; j < NSHAPE; j++) {
            want[j] = true;
        }
    }
    char *sz[MAX_SIZES];
    int nsize = split(size_arg, sz, MAX_SIZES);
    long sizes[MAX_SIZES];
    for (int i = 0; i < nsize; i++) {
        sizes[i] = (long)atof(sz[i]);
        if (sizes[i] < 1) {
            usage();
        }
    }
    char *bn[4];
    int nbe = split(be_arg, bn, 4);
    double start = timing_now_s();
    printf("| shape | backend | n | build | compile | run | free | total |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|\n");
    char summary[8192] = "";
    size_t used = 0;
    for (int bi = 0; bi < nbe; bi++) {
        weft_backend b;
        if (weft_backend_from_name(bn[bi], &b) != WEFT_OK) {
            fprintf(stderr, "compile_scaling: %s\n", weft_last_error());
            return 2;
        }
        for (int s = 0; s < NSHAPE; s++) {
            if (!want[s]) {
                continue;
            }
            long done_n[MAX_SIZES];
            double done_t[NPHASE + 1][MAX_SIZES];
            int k = 0;
            bool stop = false;
            for (int i = 0; i < nsize; i++) {
                printf("| %s | %s | %ld |", shapes[s].name, bn[bi], sizes[i]);
                double left =
                    budget > 0 ? budget - (timing_now_s() - start) : limit;
                if (stop || left < 1) {
                    printf(" - | - | - | - | not tried |\n");
                    continue;
                }
                double t[NPHASE];
                int r = time_case(&shapes[s], sizes[i], b,
                                  left < limit ? left : limit, t);
                if (r != CASE_OK) {
                    printf(" | | | | %s |\n", r != CASE_OVER ? "failed"
                                              : left < limit
                                                  ? "over the run's limit"
                                                  : "over limit");
                    stop = true;
                    fflush(stdout);
                    continue;
                }
                double total = 0;
                for (int ph = 0; ph < NPHASE; ph++) {
                    print_time(t[ph]);
                    done_t[ph][k] = t[ph];
                    total += t[ph];
                }
                done_t[NPHASE][k] = total;
                done_n[k++] = sizes[i];
                print_time(total);
                printf("\n");
                fflush(stdout);
            }
            used += (size_t)snprintf(summary + used, sizeof summary - used,
                                     "| %s | %s |", shapes[s].name, bn[bi]);
            for (int ph = 0; ph <= NPHASE; ph++) {
                double e = exponent(done_n, done_t[ph], k);
                used += (size_t)snprintf(summary + used, sizeof summary - used,
                                         isnan(e) ? " - |" : " %.2f |", e);
            }
            used +=
                (size_t)snprintf(summary + used, sizeof summary - used, "\n");
            if (used >= sizeof summary - 256) {
                used = sizeof summary - 256;
            }
        }
    }
    printf("\nGrowth exponents (least squares of log t on log n, times >= 1 "
           "ms):\n\n| shape | backend |");
    for (int ph = 0; ph < NPHASE; ph++) {
        printf(" %s |", phase_name[ph]);
    }
    printf(" total |\n|---|---|---:|---:|---:|---:|---:|\n%s", summary);
    return 0;
}
