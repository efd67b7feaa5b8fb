/*
 * bench/gpu/link_probe.c: where the CUDA driver's time goes when weft turns
 * a kernel's PTX into a cubin (the "driver link" phase of weft_stats).
 *
 * A program with no weft in it: the driver is opened with
 * dlopen("libcuda.so.1"), as weft does, so it needs no CUDA headers.  For
 * each PTX file named on the command line (weft's own kernels, dumped with
 * WEFT_DUMP=ptx from a context made with target_cpu "sm_90": the files
 * bench/gpu/ptx/ beside this one, *.ptx) it prints the median wall time
 * over REPS tries of:
 *
 *   link        cuLinkCreate + cuLinkAddData + cuLinkComplete, with the
 *               error log buffer (relocatable code, like ptxas -c: what
 *               weft did before it loaded PTX whole), then
 *               cuModuleLoadData of the cubin
 *   link-split  with CU_JIT_SPLIT_COMPILE 0 (the compiler's threads)
 *   link-O1     with CU_JIT_OPTIMIZATION_LEVEL 1 (4 is the default)
 *   load        cuModuleLoadData of the PTX itself (a whole program)
 *   loadex      cuModuleLoadDataEx of the PTX, no options
 *   loadex-weft with the error log and CU_JIT_SPLIT_COMPILE 0: what weft
 *               does (runtime-gpu/cuda.c)
 *   loadex-O0..3  the same with CU_JIT_OPTIMIZATION_LEVEL n
 *   loadex-nosplit  the error log, no split
 *   cubin       cuModuleLoadData of the cubin link made
 *
 * and the driver's own measure of the compile (CU_JIT_WALL_TIME, ms), then
 * the registers per thread of each entry, linked against loaded whole.
 * Before all that it times the very first link of the process (the driver
 * loads its PTX compiler then), split into its three calls.  Last, the
 * parallel test: every file linked once in each of T threads at the same
 * time (the way weft loads PTX), against the same work done one after
 * another, to see whether the driver's JIT runs concurrently.
 *
 * Build and run (on the GPU machine):
 *   gcc -O2 -std=c17 bench/gpu/link_probe.c -o link_probe -ldl -lpthread
 *   ./link_probe bench/gpu/ptx/[a-z]*.ptx
 * Built with -DLP_WEFT -Iinclude ... -L. -lweft, it first makes a weft ptx
 * context (is a link in a weft process dearer?); LP_WARM=1 in the
 * environment first links text that is not PTX (does a failed link load
 * the driver's compiler, so that a warm-up could be done off the critical
 * path without filling the driver's cache?); LP_SAVE=DIR writes each
 * file's cubin, linked without and with CU_JIT_SPLIT_COMPILE, into DIR
 * (FILE.cubin, FILE.split.cubin: compare them with cuobjdump -sass).
 * The driver also keeps a cache of PTX it compiled for cuModuleLoadData
 * (~/.nv/ComputeCache; CUDA_CACHE_DISABLE=1 turns it off,
 * CUDA_CACHE_PATH moves it): run once with a fresh CUDA_CACHE_PATH and
 * once again to see what a second process gets from it.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef LP_WEFT
#include "weft.h"
#endif

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUfunc_st *CUfunction;

enum {
    CU_JIT_WALL_TIME = 2,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    CU_JIT_OPTIMIZATION_LEVEL = 7,
    CU_JIT_TARGET_FROM_CUCONTEXT = 8,
    CU_JIT_SPLIT_COMPILE = 34,
    CU_JIT_INPUT_PTX = 1,
};

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*link_create)(unsigned, int *, void **, CUlinkState *);
    CUresult (*link_add)(CUlinkState, int, void *, size_t, const char *,
                         unsigned, int *, void **);
    CUresult (*link_complete)(CUlinkState, void **, size_t *);
    CUresult (*link_destroy)(CUlinkState);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*load_ex)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*unload)(CUmodule);
    CUresult (*get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*func_attribute)(int *, int, CUfunction);
    CUresult (*error_name)(CUresult, const char **);
} cu;

static CUcontext context;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void check(CUresult r, const char *what)
{
    if (r != 0) {
        const char *n = "?";
        if (cu.error_name) {
            cu.error_name(r, &n);
        }
        fprintf(stderr, "link_probe: %s: %s (%d)\n", what, n, r);
        exit(1);
    }
}

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "link_probe: libcuda.so.1 has no %s\n", name);
        exit(1);
    }
    return p;
}

static void open_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "link_probe: %s\n", dlerror());
        exit(77);
    }
    *(void **)&cu.init = sym(h, "cuInit");
    *(void **)&cu.device_get = sym(h, "cuDeviceGet");
    *(void **)&cu.retain = sym(h, "cuDevicePrimaryCtxRetain");
    *(void **)&cu.set_current = sym(h, "cuCtxSetCurrent");
    *(void **)&cu.link_create = sym(h, "cuLinkCreate_v2");
    *(void **)&cu.link_add = sym(h, "cuLinkAddData_v2");
    *(void **)&cu.link_complete = sym(h, "cuLinkComplete");
    *(void **)&cu.link_destroy = sym(h, "cuLinkDestroy");
    *(void **)&cu.load = sym(h, "cuModuleLoadData");
    *(void **)&cu.load_ex = sym(h, "cuModuleLoadDataEx");
    *(void **)&cu.unload = sym(h, "cuModuleUnload");
    *(void **)&cu.get_function = sym(h, "cuModuleGetFunction");
    *(void **)&cu.func_attribute = sym(h, "cuFuncGetAttribute");
    *(void **)&cu.error_name = sym(h, "cuGetErrorName");
    CUdevice dev;
    check(cu.init(0), "cuInit");
    check(cu.device_get(&dev, 0), "cuDeviceGet");
    check(cu.retain(&context, dev), "cuDevicePrimaryCtxRetain");
    check(cu.set_current(context), "cuCtxSetCurrent");
}

#define MAX_ENTRIES 8

typedef struct ptx {
    const char *path;
    char *text;
    size_t n; /* with the NUL */
    int nentry;
    char entry[MAX_ENTRIES][96]; /* the .entry names */
} ptx;

static void read_ptx(const char *path, ptx *p)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    p->text = malloc((size_t)n + 1);
    if (!p->text || fread(p->text, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "link_probe: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    p->text[n] = '\0';
    p->n = (size_t)n + 1;
    p->path = path;
    p->nentry = 0;
    for (const char *q = p->text;
         (q = strstr(q, ".entry ")) != NULL && p->nentry < MAX_ENTRIES;) {
        q += 7;
        size_t len = strcspn(q, "( \n");
        if (len < sizeof p->entry[0]) {
            memcpy(p->entry[p->nentry], q, len);
            p->entry[p->nentry++][len] = '\0';
        }
    }
}

/* The registers per thread of each entry of p in module m (regs[i]). */
static void entry_regs(const ptx *p, CUmodule m, int *regs)
{
    for (int i = 0; i < p->nentry; i++) {
        CUfunction f;
        regs[i] = -1;
        if (cu.get_function(&f, m, p->entry[i]) == 0) {
            cu.func_attribute(&regs[i], 4 /* CU_FUNC_ATTRIBUTE_NUM_REGS */, f);
        }
    }
}

/* One way to turn PTX into a loaded module. */
enum mode { LINK, LOAD, LOADEX };
typedef struct how {
    const char *name;
    enum mode mode;
    bool log;      /* an error log buffer (as weft) */
    int opt_level; /* CU_JIT_OPTIMIZATION_LEVEL, -1: not given */
    bool from_ctx; /* CU_JIT_TARGET_FROM_CUCONTEXT */
    bool split;    /* CU_JIT_SPLIT_COMPILE 0 */
} how;

static const how hows[] = {
    {"link", LINK, true, -1, false, false},
    {"link-split", LINK, true, -1, false, true},
    {"link-O1", LINK, false, 1, false, false},
    {"load", LOAD, false, -1, false, false},
    {"loadex", LOADEX, false, -1, false, false},
    {"loadex-weft", LOADEX, true, -1, false, true},
    {"loadex-O0", LOADEX, true, 0, false, true},
    {"loadex-O1", LOADEX, true, 1, false, true},
    {"loadex-O2", LOADEX, true, 2, false, true},
    {"loadex-O3", LOADEX, true, 3, false, true},
    {"loadex-nosplit", LOADEX, true, -1, false, false},
};
#define NHOW (int)(sizeof hows / sizeof hows[0])

/* Options of h into opt/val (n of them), with CU_JIT_WALL_TIME first
 * (*wall gets the driver's compile time). */
static unsigned options(const how *h, int *opt, void **val, char *log,
                        size_t logn, float *wall)
{
    unsigned n = 0;
    (void)wall;
    opt[n] = CU_JIT_WALL_TIME; /* an output: the driver writes a float into
                                  the value's own slot, val[0] */
    val[n++] = NULL;
    if (h->log) {
        opt[n] = CU_JIT_ERROR_LOG_BUFFER;
        val[n++] = log;
        opt[n] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
        val[n++] = (void *)(uintptr_t)logn;
    }
    if (h->opt_level >= 0) {
        opt[n] = CU_JIT_OPTIMIZATION_LEVEL;
        val[n++] = (void *)(uintptr_t)h->opt_level;
    }
    if (h->from_ctx) {
        opt[n] = CU_JIT_TARGET_FROM_CUCONTEXT;
        val[n++] = NULL;
    }
    if (h->split) {
        opt[n] = CU_JIT_SPLIT_COMPILE;
        val[n++] = (void *)(uintptr_t)0;
    }
    return n;
}

/* Turn p into a module the way h says; ms[0..2]: the three link calls (or
 * the load in ms[0]), ms[3] the load of the cubin, *wall the driver's own
 * compile time.  *cubin (if not NULL) gets a copy of the cubin. */
static void make(const ptx *p, const how *h, double *ms, float *wall,
                 void **cubin, size_t *cubin_n, int *regs)
{
    int opt[8];
    void *val[8];
    char log[4096] = "";
    *wall = 0;
    float w = 0;
    unsigned n = options(h, opt, val, log, sizeof log, &w);
    CUmodule m;
    memset(ms, 0, 4 * sizeof *ms);
    if (h->mode == LINK) {
        CUlinkState st;
        double t0 = now_ms();
        check(cu.link_create(n, opt, val, &st), "cuLinkCreate");
        double t1 = now_ms();
        CUresult r = cu.link_add(st, CU_JIT_INPUT_PTX, p->text, p->n,
                                 "weft.ptx", 0, NULL, NULL);
        if (r) {
            fprintf(stderr, "%s\n", log);
        }
        check(r, "cuLinkAddData");
        double t2 = now_ms();
        void *bin;
        size_t bin_n;
        check(cu.link_complete(st, &bin, &bin_n), "cuLinkComplete");
        double t3 = now_ms();
        check(cu.load(&m, bin), "cuModuleLoadData (cubin)");
        double t4 = now_ms();
        if (cubin) {
            *cubin = malloc(bin_n);
            memcpy(*cubin, bin, bin_n);
            *cubin_n = bin_n;
        }
        cu.link_destroy(st);
        ms[0] = t1 - t0;
        ms[1] = t2 - t1;
        ms[2] = t3 - t2;
        ms[3] = t4 - t3;
    } else {
        double t0 = now_ms();
        if (h->mode == LOAD) {
            check(cu.load(&m, p->text), "cuModuleLoadData (ptx)");
        } else {
            check(cu.load_ex(&m, p->text, n, opt, val), "cuModuleLoadDataEx");
        }
        ms[0] = now_ms() - t0;
    }
    memcpy(&w, &val[0], sizeof w);
    *wall = w;
    if (regs) {
        entry_regs(p, m, regs);
    }
    check(cu.unload(m), "cuModuleUnload");
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define REPS 5
#define PARALLEL_HOW 5 /* loadex-weft: what weft does */

/* The parallel test: each thread turns every file (p, np) into a module
 * once, the way hows[how] says. */
typedef struct job {
    const ptx *p;
    int np;
    int how;
} job;

static void *link_all(void *arg)
{
    const job *j = arg;
    check(cu.set_current(context), "cuCtxSetCurrent");
    for (int i = 0; i < j->np; i++) {
        double ms[4];
        float wall;
        make(&j->p[i], &hows[j->how], ms, &wall, NULL, NULL, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: link_probe FILE.ptx...\n");
        return 2;
    }
    int np = argc - 1;
    ptx *p = calloc((size_t)np, sizeof *p);
    for (int i = 0; i < np; i++) {
        read_ptx(argv[i + 1], &p[i]);
    }
    double t0 = now_ms();
#ifdef LP_WEFT
    /* a weft context (ptx) first, as in a weft program */
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    weft_context *wctx;
    if (weft_context_create(&cfg, &wctx)) {
        fprintf(stderr, "link_probe: %s\n", weft_last_error());
        return 77;
    }
    printf("weft_context_create (ptx): %.1f ms\n", now_ms() - t0);
    t0 = now_ms();
#endif
    open_driver();
    printf("driver open + cuInit + primary context: %.1f ms\n", now_ms() - t0);
    double ms[4];
    float wall;
    if (getenv("LP_WARM")) {
        /* a link of text that is no PTX: does it load the compiler? */
        static char junk[] = ".version 7.8\n.target sm_90\nnot ptx\n";
        CUlinkState st;
        t0 = now_ms();
        check(cu.link_create(0, NULL, NULL, &st), "cuLinkCreate");
        CUresult r = cu.link_add(st, CU_JIT_INPUT_PTX, junk, sizeof junk,
                                 "junk.ptx", 0, NULL, NULL);
        cu.link_destroy(st);
        printf("warm-up: a link of bad PTX failed (%d) in %.1f ms\n", r,
               now_ms() - t0);
    }
    /* Each file's first link in this process, in the order given. */
    for (int i = 0; i < np; i++) {
        make(&p[i], &hows[0], ms, &wall, NULL, NULL, NULL);
        printf("first link of %s: create %.2f, add %.2f, complete %.2f, "
               "load %.2f ms (driver's compile time %.2f ms)\n",
               p[i].path, ms[0], ms[1], ms[2], ms[3], wall);
    }
    printf("\n");

    bool same_split = true;
    printf("later links, median of %d, ms: total (driver's compile time)\n",
           REPS);
    printf("%-40s %9s", "file (bytes)", "cubin");
    for (int h = 0; h < NHOW; h++) {
        printf(" %16s", hows[h].name);
    }
    printf("\n");
    for (int i = 0; i < np; i++) {
        const char *base = strrchr(p[i].path, '/');
        base = base ? base + 1 : p[i].path;
        char label[64];
        snprintf(label, sizeof label, "%.30s (%zu)", base, p[i].n - 1);
        void *bin = NULL;
        size_t bin_n = 0;
        make(&p[i], &hows[0], ms, &wall, &bin, &bin_n, NULL);
        double c[REPS];
        for (int r = 0; r < REPS; r++) {
            CUmodule m;
            double a = now_ms();
            check(cu.load(&m, bin), "cuModuleLoadData (cubin)");
            c[r] = now_ms() - a;
            cu.unload(m);
        }
        printf("%-40s %9.3f", label, median(c, REPS));
        void *bin2 = NULL;
        size_t bin2_n = 0;
        make(&p[i], &hows[1], ms, &wall, &bin2, &bin2_n, NULL); /* link-split */
        same_split &= bin2_n == bin_n && memcmp(bin, bin2, bin_n) == 0;
        const char *save = getenv("LP_SAVE");
        for (int k = 0; save && k < 2; k++) { /* for cuobjdump -sass */
            char path[1024];
            snprintf(path, sizeof path, "%s/%s%s.cubin", save, base,
                     k ? ".split" : "");
            FILE *f = fopen(path, "wb");
            if (f) {
                fwrite(k ? bin2 : bin, 1, k ? bin2_n : bin_n, f);
                fclose(f);
            }
        }
        free(bin2);
        free(bin);
        for (int h = 0; h < NHOW; h++) {
            double t[REPS], wl[REPS];
            for (int r = 0; r < REPS; r++) {
                make(&p[i], &hows[h], ms, &wall, NULL, NULL, NULL);
                t[r] = ms[0] + ms[1] + ms[2] + ms[3];
                wl[r] = wall;
            }
            printf(" %8.2f (%5.1f)", median(t, REPS), median(wl, REPS));
        }
        printf("\n");
    }

    printf("\nthe cubins of link-split are %s those of link\n",
           same_split ? "byte for byte" : "NOT the same as");

    /* Registers per entry: relocatable (link) against whole program. */
    printf("\nregisters per thread by entry: link (relocatable, ptxas -c) "
           "against loadex-weft (whole program)\n");
    for (int i = 0; i < np; i++) {
        int rl[MAX_ENTRIES], rw[MAX_ENTRIES];
        make(&p[i], &hows[0], ms, &wall, NULL, NULL, rl);
        make(&p[i], &hows[PARALLEL_HOW], ms, &wall, NULL, NULL, rw);
        printf("  %-24s", p[i].path);
        for (int e = 0; e < p[i].nentry; e++) {
            const char *tail = strrchr(p[i].entry[e], '_');
            printf("  %s: %d -> %d", tail ? tail + 1 : p[i].entry[e], rl[e],
                   rw[e]);
        }
        printf("\n");
    }

    /* Concurrency: T threads each compile every file once, by the JIT
     * linker, by weft's load, and by a load without the split. */
    static const int par[] = {0, PARALLEL_HOW, NHOW - 1};
    for (size_t w = 0; w < sizeof par / sizeof par[0]; w++) {
        printf("\nparallel compiles (%s of all %d files per thread):\n",
               hows[par[w]].name, np);
        for (int T = 1; T <= 8; T *= 2) {
            pthread_t th[8];
            job j = {p, np, par[w]};
            double a = now_ms();
            for (int t = 0; t < T; t++) {
                pthread_create(&th[t], NULL, link_all, &j);
            }
            for (int t = 0; t < T; t++) {
                pthread_join(th[t], NULL);
            }
            double wall_ms = now_ms() - a;
            printf("  %d thread(s): %.1f ms wall for %d compiles (%.1f ms per "
                   "compile; 1 thread would take %d x the 1-thread time)\n",
                   T, wall_ms, T * np, wall_ms / (T * np), T);
        }
    }
    return 0;
}
