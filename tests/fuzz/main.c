/*
 * tests/fuzz/main.c: weft_fuzz, the differential fuzzer's driver.
 *
 *   weft_fuzz [--seed S] [--count N] [--jobs J] [--backends LIST]
 *             [--size N] [--without FEATURES] [--timeout SEC]
 *             [--time-limit SEC] [--threads T] [--shrink-tests N]
 *             [--max-shrink N] [--no-shrink] [--print] [--verbose]
 *
 * Program i of a run is generated from seed S + i, so any program is
 * reproduced alone with `--seed S+i --count 1`.  The seeds are split into J
 * contiguous ranges, one per worker process.  Workers never share a
 * context with the parent: the parent creates no context at all, so that
 * it can fork freely (CUDA does not survive a fork).  A worker that dies
 * (a crash in a compiled kernel, or SIGALRM after --timeout seconds on
 * one program) is reported as a mismatch of the seed it was running, and
 * a new worker goes on from the next seed.
 *
 * After the run, each mismatching seed (up to --max-shrink of them) is
 * shrunk: every candidate program is tested in a fresh child process on
 * the oracle and the configuration that disagreed, and the smallest
 * program that still fails is printed as C builder calls and as weft's own
 * dump.
 *
 * Exit status: 0 when every program agreed (or was skipped), 1 when any
 * mismatch was found, 2 on a usage error.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#ifndef WEFT_FUZZ_QUICK_COUNT
#define WEFT_FUZZ_QUICK_COUNT 2000
#endif

static const char *feature_names[] = {
#define FZ_FEATURE_NAME(name, str) str,
    FZ_FEATURES(FZ_FEATURE_NAME)
#undef FZ_FEATURE_NAME
};

typedef struct opts {
    uint64_t seed;
    long count;
    int jobs;
    bool want[3];        /* interp (always), cpu, ptx */
    bool ptx_required;   /* --backends named ptx explicitly */
    const char *configs; /* --configs: only these besides the oracle */
    int size;
    unsigned features;
    int timeout;
    double time_limit;
    int threads;
    int shrink_tests;
    int max_shrink;
    bool print;
    bool verbose;
} opts;

/* Per-worker counters, in memory shared with the parent. */
typedef struct slot {
    volatile uint64_t cur; /* the seed being run */
    volatile long ran, same, skipped, failed, other, fused_ok;
    volatile long per_op[FZ_NOPS];
    volatile int ptx_missing;
    volatile long status[32]; /* the oracle's statuses */
    char running[32];         /* the configuration being run */
    volatile uint64_t next;   /* the first seed not yet finished */
} slot;

/* ------------------------------------------------------------------------
 * Configurations
 * ---------------------------------------------------------------------- */

static unsigned base_flags(void)
{
    unsigned f = WEFT_FLAG_NO_ENV;
#ifdef WEFT_FLAG_CHECKED
    f |= WEFT_FLAG_CHECKED;
#endif
    return f;
}

/* Whether name is one of the comma-separated list. */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) {
            return true;
        }
        p += len + (e != NULL);
    }
    return false;
}

/* Make the configurations: [0] the oracle (interp, no fusion), then
 * interp, cpu, cpu-nofuse, cpu-quick, ptx, ptx-nofuse as available and
 * wanted (cpu and cpu-nofuse run the optimised code, cpu-quick the quick
 * code of tiered compilation).
 * only >= 0: just the oracle and configuration named only. */
static int make_configs(const opts *o, fz_config *cf, const char *only,
                        int *ptx_missing)
{
    static const struct {
        const char *name;
        weft_backend b;
        unsigned flags;
        int want;
    } all[FZ_MAX_CONFIGS] = {
        {"interp-nofuse", WEFT_BACKEND_INTERP, WEFT_FLAG_NO_FUSION, 0},
        {"interp", WEFT_BACKEND_INTERP, 0, 0},
        {"cpu", WEFT_BACKEND_CPU, WEFT_FLAG_NO_TIERING, 1},
        {"cpu-nofuse", WEFT_BACKEND_CPU,
         WEFT_FLAG_NO_FUSION | WEFT_FLAG_NO_TIERING, 1},
        {"cpu-quick", WEFT_BACKEND_CPU, WEFT_FLAG_QUICK_CODE, 1},
        {"ptx", WEFT_BACKEND_PTX, 0, 2},
        {"ptx-nofuse", WEFT_BACKEND_PTX, WEFT_FLAG_NO_FUSION, 2},
    };
    int n = 0;
    for (int i = 0; i < FZ_MAX_CONFIGS; i++) {
        if (!o->want[all[i].want]) {
            continue;
        }
        if (only && i > 0 && strcmp(only, all[i].name) != 0) {
            continue;
        }
        if (!only && i > 0 && o->configs && !in_list(o->configs, all[i].name)) {
            continue;
        }
        weft_config c = weft_config_default();
        c.backend = all[i].b;
        c.threads = o->threads;
        c.flags = base_flags() | all[i].flags;
        c.cache_dir = NULL; /* with NO_ENV: no disk cache */
        weft_context *ctx;
        weft_status s = weft_context_create(&c, &ctx);
        if (s) {
            if (all[i].b == WEFT_BACKEND_PTX) {
                *ptx_missing = 1;
                continue;
            }
            fprintf(stderr, "weft_fuzz: %s: %s\n", all[i].name,
                    weft_last_error());
            continue;
        }
        cf[n].name = all[i].name;
        cf[n].backend = all[i].b;
        cf[n].flags = c.flags;
        cf[n].ctx = ctx;
        n++;
    }
    return n;
}

static void free_configs(fz_config *cf, int n)
{
    for (int i = 0; i < n; i++) {
        weft_context_free(cf[i].ctx);
    }
}

static const char *verdict_name(int v)
{
    static const char *names[] = {
        "same",           "skip",           "build-error", "status-mismatch",
        "shape-mismatch", "value-mismatch", "crash",       "internal-error",
        "other-error",    "fused-ok"};
    return v >= 0 && v <= FZ_FUSED_OK ? names[v] : "?";
}

/* ------------------------------------------------------------------------
 * Workers
 * ---------------------------------------------------------------------- */

static void count_ops(const fz_prog *p, slot *s)
{
    bool *live = malloc((size_t)p->n + 1);
    fz_mark_live(p, live);
    bool seen[FZ_NOPS] = {false};
    for (int i = 0; i < p->n; i++) {
        if (live[i]) {
            seen[p->node[i].op] = true;
        }
    }
    for (int k = 0; k < FZ_NOPS; k++) {
        s->per_op[k] += seen[k];
    }
    free(live);
}

static void worker(const opts *o, uint64_t from, uint64_t to, slot *s, int fd,
                   double deadline)
{
    fz_config cf[FZ_MAX_CONFIGS];
    int ptx_missing = 0;
    int n = make_configs(o, cf, NULL, &ptx_missing);
    s->ptx_missing = ptx_missing;
    fz_running_name = s->running;
    if (ptx_missing && o->ptx_required) {
        fprintf(stderr, "weft_fuzz: ptx: no GPU here: %s\n", weft_last_error());
        _exit(3);
    }
    for (uint64_t seed = from; seed < to; seed++) {
        if (deadline > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            if (ts.tv_sec + ts.tv_nsec * 1e-9 > deadline) {
                break;
            }
        }
        s->cur = seed;
        s->running[0] = 0;
        fz_prog *p = fz_generate(seed, o->features, o->size);
        count_ops(p, s);
        alarm((unsigned)o->timeout);
        const char *self = getenv("WEFT_FUZZ_SELFTEST");
        if (self && strcmp(self, "crash") == 0 && seed == from + 1) {
            raise(SIGSEGV); /* shows that a dead worker is reported */
        }
        char why[512];
        int bad;
        int v = fz_check(p, cf, n, &bad, why, sizeof why);
        alarm(0);
        for (int k = 0; k < 32; k++) {
            s->status[k] = fz_oracle_status[k];
        }
        s->ran++;
        if (v == FZ_SAME) {
            s->same++;
        } else if (v == FZ_FUSED_OK) {
            s->same++;
            s->fused_ok++;
        } else if (v == FZ_OTHER_ERROR && !fz_strict_status) {
            s->same++;
            s->other++;
            if (o->verbose) {
                fprintf(stderr,
                        "seed %llu: different run-time errors on %s: "
                        "%s\n",
                        (unsigned long long)seed, cf[bad].name, why);
            }
        } else if (v == FZ_SKIP) {
            s->skipped++;
        } else {
            s->failed++;
            char line[1024];
            int len = snprintf(line, sizeof line, "M %llu %d %s %s\n",
                               (unsigned long long)seed, v, cf[bad].name, why);
            if (len > (int)sizeof line - 1) {
                len = (int)sizeof line - 1;
                line[len - 1] = '\n';
            }
            if (write(fd, line, (size_t)len) < 0) {
                /* the parent went away: nothing to report to */
            }
            if (o->verbose) {
                fprintf(stderr, "seed %llu: %s on %s: %s\n",
                        (unsigned long long)seed, verdict_name(v), cf[bad].name,
                        why);
            }
        }
        fz_prog_free(p);
        s->next = seed + 1;
    }
    free_configs(cf, n);
    _exit(0);
}

/* ------------------------------------------------------------------------
 * Shrinking in child processes
 * ---------------------------------------------------------------------- */

typedef struct shrink_ctx {
    const opts *o;
    const char *config; /* the configuration that disagreed */
    int verdict;
} shrink_ctx;

/* Run prog on the oracle and sc->config in a child; its verdict. */
static int check_in_child(const fz_prog *prog, const opts *o,
                          const char *config, char *why, size_t n)
{
    int pfd[2];
    if (pipe(pfd) != 0) {
        return FZ_SAME;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        fz_config cf[FZ_MAX_CONFIGS];
        int ptx_missing = 0;
        int nc = make_configs(o, cf, config, &ptx_missing);
        alarm((unsigned)o->timeout);
        char w[512];
        int bad;
        int v = nc >= 1 ? fz_check(prog, cf, nc, &bad, w, sizeof w) : FZ_SKIP;
        alarm(0);
        if (write(pfd[1], w, strlen(w) + 1) < 0) {
            v = FZ_SKIP;
        }
        _exit(v);
    }
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        return FZ_SAME;
    }
    ssize_t got = read(pfd[0], why, n - 1);
    why[got > 0 ? got : 0] = 0;
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st)) {
        snprintf(why, n, "the process died of signal %d%s", WTERMSIG(st),
                 WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
        return FZ_CRASH;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : FZ_CRASH;
}

static bool still_fails(const fz_prog *prog, void *user)
{
    shrink_ctx *sc = user;
    char why[512];
    int v = check_in_child(prog, sc->o, sc->config, why, sizeof why);
    return v == sc->verdict;
}

static void dump_program(const fz_prog *prog, FILE *out)
{
    weft_config c = weft_config_default();
    c.backend = WEFT_BACKEND_INTERP;
    c.flags = WEFT_FLAG_NO_ENV;
    weft_context *ctx;
    if (weft_context_create(&c, &ctx)) {
        return;
    }
    fz_built b;
    if (fz_build(ctx, prog, &b) == WEFT_OK) {
        weft_program_dump(b.p, b.results, b.nresults, out);
    } else {
        fprintf(out, "(does not build: %s)\n",
                b.p ? weft_program_error(b.p) : weft_last_error());
    }
    fz_built_free(&b);
    weft_context_free(ctx);
}

typedef struct mismatch {
    uint64_t seed;
    int verdict;
    char config[32];
    char why[512];
} mismatch;

static void report(const opts *o, const mismatch *m, bool shrink)
{
    printf("\n== MISMATCH seed %llu: %s on %s\n   %s\n",
           (unsigned long long)m->seed, verdict_name(m->verdict), m->config,
           m->why);
    fz_prog *p = fz_generate(m->seed, o->features, o->size);
    fz_prog *small = p;
    if (shrink && m->verdict != FZ_BUILD) {
        shrink_ctx sc = {o, m->config, m->verdict};
        fflush(stdout);
        if (still_fails(p, &sc)) {
            small = fz_shrink(p, still_fails, &sc, o->shrink_tests, o->verbose);
            char why[512];
            check_in_child(small, o, m->config, why, sizeof why);
            printf("   shrunk from %d to %d nodes; now: %s\n", fz_count_live(p),
                   fz_count_live(small), why);
        } else {
            printf("   (does not reproduce alone in a fresh process)\n");
        }
    }
    printf("   reproduce: weft_fuzz --seed %llu --count 1",
           (unsigned long long)m->seed);
    if (o->features != FZ_F_ALL) {
        printf(" --without ...(as this run)");
    }
    printf("\n-- C builder calls (minimal program) --\n");
    fz_print_c(small, stdout);
    printf("-- weft_program_dump --\n");
    fflush(stdout);
    dump_program(small, stdout);
    fflush(stdout);
    if (small != p) {
        fz_prog_free(small);
    }
    fz_prog_free(p);
}

/* ------------------------------------------------------------------------
 * Main
 * ---------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: weft_fuzz [--seed S] [--count N] [--jobs J]\n"
            "         [--backends interp,cpu,ptx] [--configs interp,cpu,...]\n"
            "         [--size N] [--without F,...]\n"
            "         [--timeout SEC] [--time-limit SEC] [--threads T]\n"
            "         [--shrink-tests N] [--max-shrink N] [--no-shrink]\n"
            "         [--strict-status] [--print] [--verbose]\n"
            "features for --without:");
    for (int i = 0; i < FZ_NFEATURES; i++) {
        fprintf(stderr, " %s", feature_names[i]);
    }
    fprintf(stderr, "\n");
}

static bool parse_features(const char *list, unsigned *out)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int i;
        for (i = 0; i < FZ_NFEATURES; i++) {
            if (strcmp(t, feature_names[i]) == 0) {
                *out &= ~(1u << i);
                break;
            }
        }
        if (i == FZ_NFEATURES) {
            fprintf(stderr, "weft_fuzz: unknown feature '%s'\n", t);
            return false;
        }
    }
    return true;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    opts o = {.seed = 1,
              .count = WEFT_FUZZ_QUICK_COUNT,
              .jobs = ncpu < 1   ? 1
                      : ncpu > 4 ? 4
                                 : (int)ncpu,
              .want = {true, true, true},
              .size = 40,
              .features = FZ_F_ALL,
              .timeout = 120,
              .threads = 2,
              .shrink_tests = 400,
              .max_shrink = 5};
    const char *env = getenv("WEFT_FUZZ_COUNT");
    if (env && *env) {
        o.count = atol(env);
    }
    bool shrink = true, count_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && (i++, true))
        if (ARG("--seed")) {
            o.seed = strtoull(v, NULL, 0);
        } else if (ARG("--count")) {
            o.count = atol(v);
            count_given = true;
        } else if (ARG("--jobs")) {
            o.jobs = atoi(v);
        } else if (ARG("--size")) {
            o.size = atoi(v);
        } else if (ARG("--timeout")) {
            o.timeout = atoi(v);
        } else if (ARG("--time-limit")) {
            o.time_limit = atof(v);
        } else if (ARG("--threads")) {
            o.threads = atoi(v);
        } else if (ARG("--shrink-tests")) {
            o.shrink_tests = atoi(v);
        } else if (ARG("--max-shrink")) {
            o.max_shrink = atoi(v);
        } else if (ARG("--without")) {
            if (!parse_features(v, &o.features)) {
                return 2;
            }
        } else if (ARG("--configs")) {
            o.configs = v;
        } else if (ARG("--backends")) {
            o.want[1] = strstr(v, "cpu") != NULL;
            o.want[2] = strstr(v, "ptx") != NULL;
            o.ptx_required = o.want[2];
        } else if (strcmp(a, "--strict-status") == 0) {
            fz_strict_status = true;
        } else if (strcmp(a, "--no-shrink") == 0) {
            shrink = false;
        } else if (strcmp(a, "--print") == 0) {
            o.print = true;
        } else if (strcmp(a, "--verbose") == 0) {
            o.verbose = true;
        } else {
            usage();
            return 2;
        }
#undef ARG
    }
    if (!count_given && o.time_limit == 0) {
        /* the quick run stays quick wherever it runs (run-tests.sh allows
         * a binary 600 s): what a slow machine does not reach is listed */
        o.time_limit = 400;
    }
    if (o.jobs < 1 || o.count < 0 || o.size < 1) {
        usage();
        return 2;
    }
    if (o.print) {
        /* print the programs instead of running them */
        for (long i = 0; i < o.count; i++) {
            fz_prog *p = fz_generate(o.seed + (uint64_t)i, o.features, o.size);
            printf("/* seed %llu: %d nodes */\n",
                   (unsigned long long)(o.seed + (uint64_t)i),
                   fz_count_live(p));
            fz_print_c(p, stdout);
            fz_prog_free(p);
        }
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    double t0 = now();
    double deadline = o.time_limit > 0 ? t0 + o.time_limit : 0;
    slot *slots =
        mmap(NULL, sizeof(slot) * (size_t)o.jobs, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slots == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    memset(slots, 0, sizeof(slot) * (size_t)o.jobs);
    int pfd[2];
    if (pipe(pfd) != 0) {
        perror("pipe");
        return 2;
    }
    pid_t *pids = calloc((size_t)o.jobs, sizeof *pids);
    uint64_t *ends = calloc((size_t)o.jobs, sizeof *ends);
    int running = 0;
    for (int j = 0; j < o.jobs; j++) {
        uint64_t from = o.seed + (uint64_t)(o.count * j / o.jobs);
        uint64_t to = o.seed + (uint64_t)(o.count * (j + 1) / o.jobs);
        ends[j] = to;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            close(pfd[0]);
            worker(&o, from, to, &slots[j], pfd[1], deadline);
        }
        pids[j] = pid;
        slots[j].next = from;
        running++;
    }
    mismatch *ms = NULL;
    int nms = 0, cap = 0;
    char buf[8192];
    size_t have = 0;
    int exit3 = 0;
    for (;;) {
        struct pollfd pf = {pfd[0], POLLIN, 0};
        if (poll(&pf, 1, 200) > 0) {
            ssize_t got = read(pfd[0], buf + have, sizeof buf - 1 - have);
            if (got > 0) {
                have += (size_t)got;
            }
        }
        /* complete lines */
        char *nl;
        while ((nl = memchr(buf, '\n', have)) != NULL) {
            *nl = 0;
            if (nms == cap) {
                cap = cap ? cap * 2 : 16;
                ms = realloc(ms, sizeof *ms * (size_t)cap);
            }
            mismatch *m = &ms[nms++];
            unsigned long long seed;
            int off = 0;
            if (sscanf(buf, "M %llu %d %31s %n", &seed, &m->verdict, m->config,
                       &off) >= 3) {
                m->seed = seed;
                snprintf(m->why, sizeof m->why, "%s", buf + off);
            } else {
                nms--;
            }
            size_t used = (size_t)(nl - buf) + 1;
            memmove(buf, buf + used, have - used);
            have -= used;
        }
        if (have == sizeof buf - 1) {
            have = 0; /* an over-long line: drop it */
        }
        int st;
        pid_t pid;
        while (running > 0 && (pid = waitpid(-1, &st, WNOHANG)) > 0) {
            int j;
            for (j = 0; j < o.jobs && pids[j] != pid; j++) {
            }
            if (j == o.jobs) {
                continue;
            }
            running--;
            pids[j] = 0;
            if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
                exit3 = 1;
            } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                /* the worker died on slots[j].cur: report, go on after it */
                if (nms == cap) {
                    cap = cap ? cap * 2 : 16;
                    ms = realloc(ms, sizeof *ms * (size_t)cap);
                }
                mismatch *m = &ms[nms++];
                m->seed = slots[j].cur;
                m->verdict = FZ_CRASH;
                snprintf(m->config, sizeof m->config, "%s",
                         slots[j].running[0] ? slots[j].running : "?");
                if (WIFSIGNALED(st)) {
                    snprintf(m->why, sizeof m->why,
                             "worker died of signal %d%s", WTERMSIG(st),
                             WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
                } else {
                    snprintf(m->why, sizeof m->why, "worker exited %d",
                             WEXITSTATUS(st));
                }
                slots[j].ran++;
                slots[j].failed++;
                uint64_t next = slots[j].cur + 1;
                slots[j].next = next;
                if (next < ends[j]) {
                    fflush(NULL);
                    pid_t np = fork();
                    if (np == 0) {
                        close(pfd[0]);
                        worker(&o, next, ends[j], &slots[j], pfd[1], deadline);
                    }
                    pids[j] = np;
                    running++;
                }
            }
        }
        if (running == 0) {
            /* drain what is left in the pipe */
            struct pollfd pf2 = {pfd[0], POLLIN, 0};
            if (poll(&pf2, 1, 0) > 0) {
                continue;
            }
            break;
        }
    }
    close(pfd[1]);
    close(pfd[0]);
    double secs = now() - t0;
    long ran = 0, same = 0, skipped = 0, failed = 0, other = 0, fused_ok = 0;
    long per_op[FZ_NOPS] = {0}, status[32] = {0};
    int ptx_missing = 0;
    for (int j = 0; j < o.jobs; j++) {
        ran += slots[j].ran;
        same += slots[j].same;
        skipped += slots[j].skipped;
        failed += slots[j].failed;
        other += slots[j].other;
        fused_ok += slots[j].fused_ok;
        ptx_missing |= slots[j].ptx_missing;
        for (int k = 0; k < FZ_NOPS; k++) {
            per_op[k] += slots[j].per_op[k];
        }
        for (int k = 0; k < 32; k++) {
            status[k] += slots[j].status[k];
        }
    }
    if (exit3) {
        return 2;
    }
    printf("weft_fuzz: seeds %llu..%llu, %d job%s, backends interp%s%s%s, "
           "checked mode %s\n",
           (unsigned long long)o.seed,
           (unsigned long long)(o.seed + (uint64_t)o.count - 1), o.jobs,
           o.jobs == 1 ? "" : "s", o.want[1] ? ",cpu" : "",
           o.want[2] && !ptx_missing && (!o.configs || strstr(o.configs, "ptx"))
               ? ",ptx"
               : "",
           o.want[2] && ptx_missing ? " (ptx: no GPU, skipped)" : "",
           fz_checked() ? "on" : "off (kernel errors of the oracle skip)");
    if (o.verbose || o.count >= 1000) {
        printf("programs using each operation:");
        for (int k = 0; k < FZ_NOPS; k++) {
            printf("%s %s %ld", k % 8 ? "," : "\n  ", fz_op_name(k), per_op[k]);
        }
        printf("\noracle statuses:");
        for (int k = 0; k < 32; k++) {
            if (status[k]) {
                printf(" %s %ld", weft_status_name((weft_status)k), status[k]);
            }
        }
        printf("\n");
    }
    if (ran < o.count) {
        /* --time-limit: what is left, to run later */
        printf("not run (time limit):");
        for (int j = 0; j < o.jobs; j++) {
            if (slots[j].next < ends[j]) {
                printf(" --seed %llu --count %llu;",
                       (unsigned long long)slots[j].next,
                       (unsigned long long)(ends[j] - slots[j].next));
            }
        }
        printf("\n");
    }
    int shown = 0;
    for (int i = 0; i < nms; i++) {
        if (shown < o.max_shrink || !shrink) {
            report(&o, &ms[i], shrink && shown < o.max_shrink);
            shown++;
        } else {
            printf("== MISMATCH seed %llu: %s on %s: %s\n",
                   (unsigned long long)ms[i].seed, verdict_name(ms[i].verdict),
                   ms[i].config, ms[i].why);
        }
    }
    printf("weft_fuzz: %ld programs in %.1f s (%.1f/s): %ld agreed (%ld of "
           "them failing with different run-time errors, %ld failing in the "
           "oracle only where fusion skips the failing element), %ld "
           "skipped (oracle reported a kernel error), %ld mismatched\n",
           ran, secs, secs > 0 ? ran / secs : 0.0, same, other, fused_ok,
           skipped, failed);
    free(ms);
    free(pids);
    free(ends);
    munmap(slots, sizeof(slot) * (size_t)o.jobs);
    return failed ? 1 : 0;
}
