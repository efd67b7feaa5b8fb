/*
 * tests/test_tier.c: tiered compilation on the CPU backend, seen from
 * outside; built again as test_ptx_tier for the ptx backend.
 *
 * By default weft_compile emits a fresh kernel's optimised IR with LLVM's
 * quick code generator and returns; a background thread of the context
 * emits the same IR at -O3, writes only that to the disk cache and swaps
 * it in.  WEFT_FLAG_NO_TIERING emits -O3 code at once; WEFT_FLAG_QUICK_CODE
 * keeps the quick code and never touches the disk cache.  The tests:
 *
 *   same_results      five programs (an f32 dotp whose products are not
 *                     exact, an f32 inclusive scan, a Mandelbrot escape
 *                     count with a while loop, a map of exp and log, a
 *                     2-D zipWith of two arrays of different shapes, which
 *                     takes the general variant compiled at its first run,
 *                     an i64 sum of a map that truncates x * 1000, exact
 *                     whatever the order)
 *                     give the same bits in a QUICK_CODE context, a
 *                     NO_TIERING one and a default one, before and after
 *                     weft_context_wait_optimised.  No tolerance: the IR
 *                     is the same and only code generation differs, and
 *                     without WEFT_FLAG_FAST_MATH (strict IEEE, the
 *                     default) neither generator may contract or
 *                     approximate; the one reassociation allowed, of a
 *                     fold's or scan's combine, is the vectoriser's, in
 *                     the IR (were a generator to reassociate such a sum
 *                     further, dotp here would show it).  (The comparison can fail: with
 *                     WEFT_FLAG_FAST_MATH added to the quick context the
 *                     Mandelbrot's bits differ.)  The results are also
 *                     checked for plausibility against C, so that the
 *                     same wrong values everywhere would fail too.
 *   tier_up           the counters of one tier-up (compiled 1, then
 *                     optimised 1 with optimise_ms > 0), one entry on disk,
 *                     and a second context loads it and compiles nothing.
 *   free_unwaited     a context freed right after weft_compile leaves the
 *                     optimised kernel on disk; the next context loads it
 *                     and gets the quick code's bits.
 *   quick_no_disk     QUICK_CODE neither writes the cache directory (it
 *                     stays empty) nor reads it (an entry there is
 *                     compiled again), and optimises nothing.
 *   no_tiering        NO_TIERING writes the kernel before weft_compile
 *                     returns, and counts no tier-up.
 *   concurrent_runs   two threads run one executable (every program above)
 *                     fifty times each while its kernels are tiered up and
 *                     the main thread waits for that; every run gives the
 *                     bits of a QUICK_CODE context.  For ThreadSanitizer.
 *   concurrent_compiles  four threads compile the programs that give
 *                     the same bits in both tiers on one context at once
 *                     (runtime/kcache.c: each kernel built once, by one of
 *                     them); each runs its executable and gets the bits of
 *                     a QUICK_CODE context.  On ptx the kernels built and
 *                     loaded add up to those of one compile.
 *   environment       $WEFT_TIERING: 0, 1 and quick override the flags,
 *                     anything else is refused at weft_context_create;
 *                     weft_context_wait_optimised on NULL and on the
 *                     interpreter.
 *
 * On ptx (test_ptx_tier: runtime-gpu/backend.c, "Tiers") the quick tier is
 * LLVM's default<O1> emitted at CodeGenOpt::None and the driver's JIT at
 * a low level; the tier-up makes the optimised PTX and swaps its
 * functions in.  Element-wise programs give the same bits in both tiers
 * there too, but a float fold or scan (dotp, scan) may not: its order of
 * additions follows the block size, which the occupancy API picks from
 * each tier's registers (as it follows the device's SM count).  There
 * those two are compared bit for bit only between contexts that run the
 * same tier, and checked for plausibility otherwise; concurrent_runs
 * leaves them out (the integer sum keeps a fold in it).  A context freed before its tier-ups finish drops
 * them on ptx (nothing reaches the disk cache), which free_unwaited does
 * not depend on (it waits).  A kernel with a scalar while loop (the
 * Mandelbrot's) is not tiered on ptx: compiled optimised at once.
 *
 * Each test uses its own cache directory (mkdtemp), removed at its end,
 * and contexts (CPU: of two workers) that ignore the environment (but for
 * the environment test).  On ptx the suite is skipped (77) where no GPU
 * and driver are.
 */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/stat.h>

#include "tu.h"

#ifdef WEFT_HAVE_LLVM

enum {
    N = 100003,
    A0 = 37,
    A1 = 53,
    B0 = 41,
    B1 = 29,
    MH = 48,
    MW = 64,
    MAXIT = 200
};

/* ------------------------------------------------------------------------
 * Programs and their inputs
 * ---------------------------------------------------------------------- */

typedef enum prog {
    P_DOTP,
    P_SCAN,
    P_MANDEL,
    P_EXPLOG,
    P_ZIP2D,
    P_ISUM,
    P_COUNT,
    P_ALL = P_COUNT,
    P_SAME /* the programs same_across_tiers */
} prog;

/* Kernels that are not tiered up among all the programs: on ptx the
 * Mandelbrot's, a scalar while loop (runtime-gpu/backend.c, kernel_tier). */
#define UNTIERED (DT_BACKEND == WEFT_BACKEND_PTX ? 1u : 0u)

/* Whether program k gives the same bits in both tiers (see the head
 * comment). */
static bool same_across_tiers(prog k)
{
    return DT_BACKEND != WEFT_BACKEND_PTX || (k != P_DOTP && k != P_SCAN);
}
typedef enum host { H_X, H_Y, H_A, H_B } host;

static const struct {
    const char *name;
    int nin;
    host in[2];
} progs[P_COUNT] = {
    [P_DOTP] = {"dotp", 2, {H_X, H_Y}},
    [P_SCAN] = {"scan", 1, {H_X}},
    [P_MANDEL] = {"mandelbrot", 0, {0}},
    [P_EXPLOG] = {"exp-log map", 1, {H_X}},
    [P_ZIP2D] = {"2-D zipWith", 2, {H_A, H_B}},
    [P_ISUM] = {"integer sum", 1, {H_X}},
};

static float g_x[N], g_y[N], g_a[A0 * A1], g_b[B0 * B1];

/* Pseudo-random floats in [-1, 1) with 24 significant bits, so that
 * products and sums round. */
static void fill_inputs(void)
{
    uint32_t s = 12345;
    float *arr[4] = {g_x, g_y, g_a, g_b};
    int len[4] = {N, N, A0 * A1, B0 * B1};
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < len[k]; i++) {
            s = s * 1664525u + 1013904223u;
            arr[k][i] = (float)ldexp((double)(s >> 8), -23) - 1.0f;
        }
    }
}

static weft_array *host_array(weft_context *ctx, host h)
{
    int64_t n = N, a[2] = {A0, A1}, b[2] = {B0, B1};
    const void *x[1] = {h == H_X ? g_x : h == H_Y ? g_y : h == H_A ? g_a : g_b};
    int rank = h == H_X || h == H_Y ? 1 : 2;
    const int64_t *sh = h == H_X || h == H_Y ? &n : h == H_A ? a : b;
    return tu_arr_host(ctx, WEFT_F32, rank, sh, x);
}

static weft_fun *f32_op(weft_program *p, weft_op op)
{
    return tu_fun_op2(p, op, WEFT_F32);
}

/* Mandelbrot over an MH x MW grid: a while loop on the state (cx, cy, zr,
 * zi, k) until |z|^2 > 4 or MAXIT steps; each element is (k, |z|^2). */
static weft_acc *build_mandel(weft_context *ctx, weft_program *p)
{
    weft_type ty[5] = {WEFT_F32, WEFT_F32, WEFT_F32, WEFT_F32, WEFT_I32};
    weft_type st = weft_type_tuple(ctx, 5, ty);
    weft_fun *cond = weft_fun1(p, st);
    weft_exp *s = weft_arg(cond, 0);
    weft_exp *zr = weft_get(s, 2), *zi = weft_get(s, 3);
    weft_fun_return(
        cond, weft_and(weft_lt(weft_get(s, 4), weft_i32(p, MAXIT)),
                       weft_le(weft_add(weft_mul(zr, zr), weft_mul(zi, zi)),
                               weft_f32(p, 4.0f))));
    weft_fun *body = weft_fun1(p, st);
    s = weft_arg(body, 0);
    zr = weft_get(s, 2);
    zi = weft_get(s, 3);
    weft_exp *next[5] = {
        weft_get(s, 0), weft_get(s, 1),
        weft_add(weft_sub(weft_mul(zr, zr), weft_mul(zi, zi)), weft_get(s, 0)),
        weft_add(weft_mul(weft_f32(p, 2.0f), weft_mul(zr, zi)), weft_get(s, 1)),
        weft_add(weft_get(s, 4), weft_i32(p, 1))};
    weft_fun_return(body, weft_tuple(p, 5, next));
    weft_fun *f = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(f, 0);
    weft_exp *cy = weft_add(weft_f32(p, -1.2f),
                            weft_mul(weft_convert(weft_get(ix, 0), WEFT_F32),
                                     weft_f32(p, 2.4f / MH)));
    weft_exp *cx = weft_add(weft_f32(p, -2.2f),
                            weft_mul(weft_convert(weft_get(ix, 1), WEFT_F32),
                                     weft_f32(p, 3.2f / MW)));
    weft_exp *init[5] = {cx, cy, weft_f32(p, 0), weft_f32(p, 0),
                         weft_i32(p, 0)};
    weft_exp *w = weft_while(cond, body, weft_tuple(p, 5, init));
    zr = weft_get(w, 2);
    zi = weft_get(w, 3);
    weft_exp *res[2] = {weft_get(w, 4),
                        weft_add(weft_mul(zr, zr), weft_mul(zi, zi))};
    weft_fun_return(f, weft_tuple(p, 2, res));
    return weft_generate(weft_index2(weft_i64(p, MH), weft_i64(p, MW)), f);
}

/* The result of program `which` (its parameters are made here). */
static weft_acc *build_prog(weft_context *ctx, weft_program *p, prog which)
{
    switch (which) {
    case P_DOTP: {
        weft_acc *xs = weft_param(p, WEFT_F32, 1);
        weft_acc *ys = weft_param(p, WEFT_F32, 1);
        return weft_fold(f32_op(p, WEFT_OP_ADD), weft_f32(p, 0),
                         weft_zipwith(f32_op(p, WEFT_OP_MUL), xs, ys));
    }
    case P_SCAN:
        return weft_scanl1(f32_op(p, WEFT_OP_ADD), weft_param(p, WEFT_F32, 1));
    case P_MANDEL: return build_mandel(ctx, p);
    case P_EXPLOG: {
        /* x -> log(1 + exp(3x)) - exp(-x*x) */
        weft_fun *f = weft_fun1(p, WEFT_F32);
        weft_exp *x = weft_arg(f, 0);
        weft_fun_return(
            f,
            weft_sub(weft_log(weft_add(weft_f32(p, 1),
                                       weft_fexp(weft_mul(weft_f32(p, 3), x)))),
                     weft_fexp(weft_neg(weft_mul(x, x)))));
        return weft_map(f, weft_param(p, WEFT_F32, 1));
    }
    case P_ZIP2D: {
        /* (a, b) -> a * b + a, extent the intersection A0 x B1 */
        weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(f, weft_add(weft_mul(weft_arg(f, 0), weft_arg(f, 1)),
                                    weft_arg(f, 0)));
        weft_acc *a = weft_param(p, WEFT_F32, 2);
        return weft_zipwith(f, a, weft_param(p, WEFT_F32, 2));
    }
    case P_ISUM: {
        /* sum of truncate(x * 1000) as i64 */
        weft_fun *f = weft_fun1(p, WEFT_F32);
        weft_fun_return(
            f, weft_truncate(weft_mul(weft_arg(f, 0), weft_f32(p, 1000.0f)),
                             WEFT_I64));
        return weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64), weft_i64(p, 0),
                         weft_map(f, weft_param(p, WEFT_F32, 1)));
    }
    default: ck_abort_msg("build_prog: program %d", (int)which);
    }
    return NULL;
}

/* One compiled program (P_ALL: all five as one executable) and its
 * inputs, in one context. */
typedef struct work {
    weft_context *ctx;
    weft_executable *exe;
    weft_array *in[2 * P_COUNT];
    int n_in;
} work;

static void work_open(work *w, weft_context *ctx, prog which)
{
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *res[P_COUNT];
    bool many = which == P_ALL || which == P_SAME;
    int lo = many ? 0 : (int)which;
    int hi = many ? P_COUNT : lo + 1, nres = 0;
    for (int k = lo; k < hi; k++) {
        if (which == P_SAME && !same_across_tiers((prog)k)) {
            continue;
        }
        res[nres++] = build_prog(ctx, p, (prog)k);
        for (int i = 0; i < progs[k].nin; i++) {
            w->in[w->n_in++] = host_array(ctx, progs[k].in[i]);
        }
    }
    TU_PROGRAM_OK(p);
    TU_OK(weft_compile(p, res, nres, &w->exe));
    weft_program_free(p);
}

static void work_close(work *w)
{
    tu_release_all(w->in, w->n_in);
    weft_executable_free(w->exe);
    w->exe = NULL;
}

/* ------------------------------------------------------------------------
 * Results as bytes
 * ---------------------------------------------------------------------- */

/* Every output of a run, one after the other: its rank and extents as
 * int64, then each leaf's elements. */
typedef struct blob {
    size_t n;
    unsigned char *b;
} blob;

/* Room for n more bytes at the end of bl; NULL when out of memory. */
static unsigned char *blob_grow(blob *bl, size_t n)
{
    unsigned char *b = realloc(bl->b, bl->n + n + 1);
    if (!b) {
        return NULL;
    }
    bl->b = b;
    bl->n += n;
    return b + bl->n - n;
}

/* Run w once and copy its outputs into *out (malloc'd; free with
 * blob_free).  Uses no Check macro, so any thread may call it. */
static weft_status run_blob(const work *w, blob *out)
{
    memset(out, 0, sizeof *out);
    weft_array *res[P_COUNT] = {NULL};
    int n = weft_executable_outputs(w->exe);
    weft_status s = n > 0 && n <= P_COUNT ? WEFT_OK : WEFT_ERR_INTERNAL;
    if (s == WEFT_OK) {
        s = weft_run(w->exe, w->in, w->n_in, res, n);
    }
    for (int o = 0; o < n && s == WEFT_OK; o++) {
        weft_type t = weft_array_type(res[o]);
        int rank = weft_array_rank(res[o]);
        bool scalar = weft_type_size(t) > 0;
        int leaves = scalar ? 1 : weft_type_leaves(w->ctx, t);
        int64_t *head = (int64_t *)blob_grow(out, 8 * (size_t)(1 + rank));
        if (!head) {
            s = WEFT_ERR_OUT_OF_MEMORY;
            break;
        }
        int64_t hd[1 + WEFT_MAX_RANK] = {rank};
        for (int d = 0; d < rank; d++) {
            hd[1 + d] = weft_array_extent(res[o], d);
        }
        memcpy(head, hd, 8 * (size_t)(1 + rank));
        for (int l = 0; l < leaves && s == WEFT_OK; l++) {
            weft_type lt = scalar ? t : weft_type_leaf(w->ctx, t, l);
            size_t bytes = (size_t)weft_array_size(res[o]) * weft_type_size(lt);
            unsigned char *at = blob_grow(out, bytes);
            s = at ? weft_array_read(res[o], l, at, bytes)
                   : WEFT_ERR_OUT_OF_MEMORY;
        }
    }
    tu_release_all(res, P_COUNT);
    return s;
}

static void blob_free(blob *b)
{
    free(b->b);
    b->b = NULL;
    b->n = 0;
}

/* The first byte where a and b differ; -1 if they are equal. */
static long blob_diff(const blob *a, const blob *b)
{
    size_t m = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < m; i++) {
        if (a->b[i] != b->b[i]) {
            return (long)i;
        }
    }
    return a->n == b->n ? -1 : (long)m;
}

#define CHECK_SAME(a, b, what)                                                 \
    do {                                                                       \
        long tu_d_ = blob_diff((a), (b));                                      \
        ck_assert_msg(tu_d_ < 0, "%s: %s, %s differ at byte %ld (%zu, %zu)",   \
                      (what), #a, #b, tu_d_, (a)->n, (b)->n);                  \
    } while (0)

/* Run w once into *out, failing the test on error. */
static void run_ok(const work *w, blob *out)
{
    weft_status s = run_blob(w, out);
    ck_assert_msg(s == WEFT_OK, "weft_run -> %s: %s", weft_status_name(s),
                  weft_last_error());
}

/* Element i of leaf `leaf` of a blob of one output whose leaves all hold
 * 4-byte elements (every program here), as a float or int32. */
static const unsigned char *blob_elem(const blob *b, int leaf, int64_t i)
{
    int64_t rank, size = 1;
    memcpy(&rank, b->b, sizeof rank);
    for (int d = 0; d < rank; d++) {
        int64_t e;
        memcpy(&e, b->b + 8 * (1 + d), sizeof e);
        size *= e;
    }
    size_t at = 8 * (size_t)(1 + rank) + 4 * (size_t)(leaf * size + i);
    ck_assert_uint_le(at + 4, b->n);
    return b->b + at;
}

static float blob_f(const blob *b, int leaf, int64_t i)
{
    float v;
    memcpy(&v, blob_elem(b, leaf, i), 4);
    return v;
}

static int32_t blob_i(const blob *b, int leaf, int64_t i)
{
    int32_t v;
    memcpy(&v, blob_elem(b, leaf, i), 4);
    return v;
}

static void check_close(double got, double want, double tol, const char *what,
                        int64_t i)
{
    double scale = fabs(want) > 1 ? fabs(want) : 1;
    ck_assert_msg(fabs(got - want) <= tol * scale,
                  "%s element %lld: %.9g, expected about %.9g", what,
                  (long long)i, got, want);
}

/* Fail unless b, program which's result, is about what C computes in
 * double precision (the mandelbrot: exact counts where z stays at 0 or
 * escapes at once). */
static void check_plausible(prog which, const blob *b)
{
    int64_t rank;
    memcpy(&rank, b->b, sizeof rank);
    ck_assert_int_eq(rank, which == P_MANDEL || which == P_ZIP2D ? 2
                           : which == P_DOTP || which == P_ISUM  ? 0
                                                                 : 1);
    switch (which) {
    case P_DOTP: {
        double dot = 0, mag = 0;
        for (int i = 0; i < N; i++) {
            dot += (double)g_x[i] * g_y[i];
            mag += fabs((double)g_x[i] * g_y[i]);
        }
        ck_assert_msg(fabs(blob_f(b, 0, 0) - dot) <= 1e-5 * mag,
                      "dotp %.9g, expected about %.9g", blob_f(b, 0, 0), dot);
        break;
    }
    case P_SCAN: {
        double acc = 0;
        for (int64_t i = 0; i < N; i++) {
            acc += g_x[i];
            if (i % 997 == 0 || i == N - 1) {
                check_close(blob_f(b, 0, i), acc, 1e-2, "scan", i);
            }
        }
        break;
    }
    case P_MANDEL: {
        /* c = -1.2i + ... : row MH/2 is cy = 0; column j has cx = -2.2 +
         * 3.2 j / MW, so j = 22 is cx = -1.1 (inside), j = 0 is cx = -2.2
         * (escapes after two steps: z = -2.2, then 4.84 - 2.2) */
        ck_assert_int_eq(blob_i(b, 0, (int64_t)(MH / 2) * MW + 22), MAXIT);
        ck_assert_int_eq(blob_i(b, 0, (int64_t)(MH / 2) * MW + 0), 1);
        ck_assert_int_eq(blob_i(b, 0, 0), 1); /* c = -2.2 - 1.2i */
        int inside = 0;
        for (int64_t i = 0; i < MH * MW; i++) {
            int32_t k = blob_i(b, 0, i);
            ck_assert_msg(k >= 1 && k <= MAXIT, "count %d at %lld", k,
                          (long long)i);
            inside += k == MAXIT;
            ck_assert_msg(k == MAXIT || blob_f(b, 1, i) > 4.0f,
                          "|z|^2 %g after %d steps at %lld", blob_f(b, 1, i), k,
                          (long long)i);
        }
        ck_assert_msg(inside > MH * MW / 8 && inside < MH * MW / 2,
                      "%d points inside", inside);
        break;
    }
    case P_EXPLOG:
        for (int64_t i = 0; i < N; i += 101) {
            double x = g_x[i];
            check_close(blob_f(b, 0, i), log1p(exp(3 * x)) - exp(-x * x), 1e-5,
                        "exp-log", i);
        }
        break;
    case P_ZIP2D:
        for (int64_t i = 0; i < A0; i++) {
            for (int64_t j = 0; j < B1; j++) {
                double a = g_a[i * A1 + j], bb = g_b[i * B1 + j];
                check_close(blob_f(b, 0, i * B1 + j), a * bb + a, 1e-6,
                            "zipWith", i * B1 + j);
            }
        }
        break;
    case P_ISUM: {
        int64_t want = 0, got;
        for (int i = 0; i < N; i++) {
            want += (int64_t)(g_x[i] * 1000.0f);
        }
        ck_assert_uint_ge(b->n, 16);
        memcpy(&got, b->b + 8, sizeof got); /* after the rank, 0 */
        ck_assert_int_eq(got, want);
        break;
    }
    default: break;
    }
}

/* ------------------------------------------------------------------------
 * Contexts and cache directories
 * ---------------------------------------------------------------------- */

/* A context of DT_BACKEND (CPU: of two workers) with its disk cache in
 * dir and the flags given (WEFT_FLAG_NO_ENV is not added). */
static weft_context *open_cpu(const char *dir, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = DT_BACKEND;
    cfg.threads = 2;
    cfg.flags = flags;
    cfg.cache_dir = dir;
    weft_context *ctx = NULL;
    weft_status s = weft_context_create(&cfg, &ctx);
    ck_assert_msg(s == WEFT_OK, "weft_context_create (flags %#x) -> %s: %s",
                  flags, weft_status_name(s), weft_last_error());
    return ctx;
}

#define DEFAULT WEFT_FLAG_NO_ENV
#define NO_TIERING (WEFT_FLAG_NO_ENV | WEFT_FLAG_NO_TIERING)
#define QUICK (WEFT_FLAG_NO_ENV | WEFT_FLAG_QUICK_CODE)

static weft_stats stats_of(weft_context *ctx)
{
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    return st;
}

#define TMP_TEMPLATE "/tmp/weft-tier-test-XXXXXX"

static void make_dir(char *dir)
{
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static int count_;

static int count_entry(const char *path, const struct stat *sb, int flag,
                       struct FTW *f)
{
    (void)path;
    (void)sb;
    (void)flag;
    count_ += f->level > 0;
    return 0;
}

/* Entries under dir, at any depth, dot files included (0 when dir does
 * not exist). */
static int count_entries(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0 && errno == ENOENT) {
        return 0;
    }
    count_ = 0;
    ck_assert_int_eq(nftw(dir, count_entry, 8, FTW_PHYS), 0);
    return count_;
}

/* ------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------- */

START_TEST(same_results)
{
    char dir[] = TMP_TEMPLATE, sub[2][64];
    make_dir(dir);
    snprintf(sub[0], sizeof sub[0], "%s/no-tiering", dir);
    snprintf(sub[1], sizeof sub[1], "%s/default", dir);
    weft_context *quick = open_cpu(dir, QUICK);
    weft_context *opt = open_cpu(sub[0], NO_TIERING);
    weft_context *tier = open_cpu(sub[1], DEFAULT);
    work wq[P_COUNT], wo[P_COUNT], wt[P_COUNT];
    blob q[P_COUNT], o[P_COUNT], t1[P_COUNT], t2[P_COUNT];
    for (int k = 0; k < P_COUNT; k++) {
        /* a run right after weft_compile most likely finds the quick code
         * still (the background thread emits one kernel at a time, each
         * taking several runs' time) */
        work_open(&wt[k], tier, (prog)k);
        run_ok(&wt[k], &t1[k]);
        work_open(&wq[k], quick, (prog)k);
        run_ok(&wq[k], &q[k]);
        work_open(&wo[k], opt, (prog)k);
        run_ok(&wo[k], &o[k]);
    }
    TU_OK(weft_context_wait_optimised(tier));
    weft_stats st = stats_of(tier);
    ck_assert_uint_ge(st.kernels_compiled, P_COUNT);
    ck_assert_uint_eq(st.kernels_optimised + UNTIERED, st.kernels_compiled);
    ck_assert_uint_eq(st.kernels_loaded, 0);
    for (int k = 0; k < P_COUNT; k++) {
        run_ok(&wt[k], &t2[k]);
        check_plausible((prog)k, &o[k]);
        check_plausible((prog)k, &q[k]);
        check_plausible((prog)k, &t1[k]);
        if (same_across_tiers((prog)k)) {
            CHECK_SAME(&q[k], &o[k], progs[k].name);
            CHECK_SAME(&t1[k], &o[k], progs[k].name);
        }
        CHECK_SAME(&t2[k], &o[k], progs[k].name); /* both optimised */
    }
    weft_stats sq = stats_of(quick), so = stats_of(opt);
    ck_assert_uint_eq(sq.kernels_compiled, st.kernels_compiled);
    ck_assert_uint_eq(so.kernels_compiled, st.kernels_compiled);
    ck_assert_uint_eq(sq.kernels_optimised + so.kernels_optimised, 0);
    for (int k = 0; k < P_COUNT; k++) {
        work_close(&wq[k]);
        work_close(&wo[k]);
        work_close(&wt[k]);
        blob_free(&q[k]);
        blob_free(&o[k]);
        blob_free(&t1[k]);
        blob_free(&t2[k]);
    }
    weft_context_free(quick);
    weft_context_free(opt);
    weft_context_free(tier);
    tu_remove_dir(dir);
}
END_TEST

START_TEST(tier_up)
{
    char dir[] = TMP_TEMPLATE;
    make_dir(dir);
    weft_context *a = open_cpu(dir, DEFAULT);
    work w;
    work_open(&w, a, P_DOTP);
    weft_stats st = stats_of(a);
    ck_assert_uint_eq(st.kernels_compiled, 1);
    ck_assert_uint_eq(st.kernels_loaded, 0);
    blob r1, r2, r3;
    run_ok(&w, &r1);
    TU_OK(weft_context_wait_optimised(a));
    st = stats_of(a);
    ck_assert_uint_eq(st.kernels_optimised, 1);
    ck_assert_msg(st.optimise_ms > 0, "optimise_ms %g", st.optimise_ms);
    ck_assert_uint_eq(st.kernels_compiled, 1);
    ck_assert_int_eq(count_entries(dir), 1);
    run_ok(&w, &r2);
    if (same_across_tiers(P_DOTP)) {
        CHECK_SAME(&r1, &r2, "dotp after the tier-up");
    }
    check_plausible(P_DOTP, &r1);
    check_plausible(P_DOTP, &r2);
    /* nothing pending: the second wait changes nothing */
    TU_OK(weft_context_wait_optimised(a));
    ck_assert_uint_eq(stats_of(a).kernels_optimised, 1);

    /* a second context, the first still open, loads the optimised code */
    weft_context *b = open_cpu(dir, DEFAULT);
    work wb;
    work_open(&wb, b, P_DOTP);
    run_ok(&wb, &r3);
    CHECK_SAME(&r2, &r3, "dotp loaded from disk"); /* both optimised */
    TU_OK(weft_context_wait_optimised(b));
    st = stats_of(b);
    ck_assert_uint_eq(st.kernels_loaded, 1);
    ck_assert_uint_eq(st.kernels_compiled, 0);
    ck_assert_uint_eq(st.kernels_optimised, 0);
    ck_assert_int_eq(count_entries(dir), 1);
    work_close(&wb);
    work_close(&w);
    blob_free(&r1);
    blob_free(&r2);
    blob_free(&r3);
    weft_context_free(b);
    weft_context_free(a);
    tu_remove_dir(dir);
}
END_TEST

START_TEST(free_unwaited)
{
    char dir[] = TMP_TEMPLATE;
    make_dir(dir);
    weft_context *a = open_cpu(dir, DEFAULT);
    work w;
    work_open(&w, a, P_DOTP);
    work_close(&w);
    /* weft_context_free no longer waits for the tier-up (test_large's
     * free_during_tier_up): wait first, to have the entry on disk */
    TU_OK(weft_context_wait_optimised(a));
    weft_context_free(a);
    ck_assert_int_eq(count_entries(dir), 1);

    weft_context *b = open_cpu(dir, DEFAULT);
    weft_context *q = open_cpu(dir, QUICK);
    work wb, wq;
    work_open(&wb, b, P_DOTP);
    work_open(&wq, q, P_DOTP);
    weft_stats st = stats_of(b);
    ck_assert_uint_eq(st.kernels_loaded, 1);
    ck_assert_uint_eq(st.kernels_compiled, 0);
    blob rb, rq;
    run_ok(&wb, &rb);
    run_ok(&wq, &rq);
    if (same_across_tiers(P_DOTP)) {
        CHECK_SAME(&rb, &rq, "dotp");
    }
    check_plausible(P_DOTP, &rb);
    check_plausible(P_DOTP, &rq);
    work_close(&wb);
    work_close(&wq);
    blob_free(&rb);
    blob_free(&rq);
    weft_context_free(q);
    weft_context_free(b);
    tu_remove_dir(dir);
}
END_TEST

START_TEST(quick_no_disk)
{
    char dir[] = TMP_TEMPLATE;
    make_dir(dir);
    weft_context *q = open_cpu(dir, QUICK);
    work w;
    work_open(&w, q, P_ALL);
    blob r;
    run_ok(&w, &r);
    blob_free(&r);
    TU_OK(weft_context_wait_optimised(q));
    weft_stats st = stats_of(q);
    ck_assert_uint_ge(st.kernels_compiled, P_COUNT);
    ck_assert_uint_eq(st.kernels_loaded, 0);
    ck_assert_uint_eq(st.kernels_optimised, 0);
    ck_assert(st.optimise_ms == 0);
    work_close(&w);
    weft_context_free(q);
    ck_assert_int_eq(count_entries(dir), 0);

    /* nor is an entry there read: dotp written by NO_TIERING is compiled
     * again, and nothing is added */
    weft_context *o = open_cpu(dir, NO_TIERING);
    work_open(&w, o, P_DOTP);
    work_close(&w);
    weft_context_free(o);
    ck_assert_int_eq(count_entries(dir), 1);
    q = open_cpu(dir, QUICK);
    work_open(&w, q, P_DOTP);
    run_ok(&w, &r);
    check_plausible(P_DOTP, &r);
    blob_free(&r);
    st = stats_of(q);
    ck_assert_uint_eq(st.kernels_compiled, 1);
    ck_assert_uint_eq(st.kernels_loaded, 0);
    work_close(&w);
    weft_context_free(q);
    ck_assert_int_eq(count_entries(dir), 1);
    tu_remove_dir(dir);
}
END_TEST

START_TEST(no_tiering)
{
    char dir[] = TMP_TEMPLATE;
    make_dir(dir);
    weft_context *a = open_cpu(dir, NO_TIERING);
    work w;
    work_open(&w, a, P_DOTP);
    ck_assert_int_eq(count_entries(dir), 1); /* before any run or wait */
    weft_context *b = open_cpu(dir, DEFAULT);
    work wb;
    work_open(&wb, b, P_DOTP);
    weft_stats st = stats_of(b);
    ck_assert_uint_eq(st.kernels_loaded, 1);
    ck_assert_uint_eq(st.kernels_compiled, 0);
    blob ra, rb;
    run_ok(&w, &ra);
    run_ok(&wb, &rb);
    CHECK_SAME(&ra, &rb, "dotp");
    TU_OK(weft_context_wait_optimised(a));
    st = stats_of(a);
    ck_assert_uint_eq(st.kernels_compiled, 1);
    ck_assert_uint_eq(st.kernels_optimised, 0);
    ck_assert(st.optimise_ms == 0);
    work_close(&w);
    work_close(&wb);
    blob_free(&ra);
    blob_free(&rb);
    weft_context_free(b);
    weft_context_free(a);
    tu_remove_dir(dir);
}
END_TEST

enum { RUNS = 50 };

typedef struct runner {
    const work *w;
    const blob *want;
    int runs, same;
    weft_status status;
    char msg[256];
} runner;

/* A thread of concurrent_compiles: compiles the programs whose bits the
 * tiers share into its own executable (its inputs are made beforehand),
 * then runs it once into got.  No Check macros off the main thread. */
typedef struct compiler {
    work w;
    blob got;
    weft_status status;
    char msg[256];
} compiler;

static void *compiler_main(void *arg)
{
    compiler *c = arg;
    weft_program *p = NULL;
    weft_status s = weft_program_create(c->w.ctx, &p);
    weft_acc *res[P_COUNT];
    int nres = 0;
    for (int k = 0; k < P_COUNT && s == WEFT_OK; k++) {
        if (same_across_tiers((prog)k)) {
            res[nres++] = build_prog(c->w.ctx, p, (prog)k);
        }
    }
    if (s == WEFT_OK) {
        s = weft_compile(p, res, nres, &c->w.exe);
    }
    weft_program_free(p);
    if (s == WEFT_OK) {
        s = run_blob(&c->w, &c->got);
    }
    c->status = s;
    snprintf(c->msg, sizeof c->msg, "%s", s ? weft_last_error() : "");
    return NULL;
}

static void *runner_main(void *arg)
{
    runner *r = arg;
    for (int i = 0; i < RUNS; i++) {
        blob got;
        weft_status s = run_blob(r->w, &got);
        if (s != WEFT_OK) {
            r->status = s;
            snprintf(r->msg, sizeof r->msg, "%s", weft_last_error());
            break;
        }
        r->runs++;
        r->same += blob_diff(&got, r->want) < 0;
        blob_free(&got);
    }
    return NULL;
}

START_TEST(concurrent_runs)
{
    char dir[] = TMP_TEMPLATE;
    make_dir(dir);
    /* the programs whose bits the tiers share (all on the CPU) */
    prog which = DT_BACKEND == WEFT_BACKEND_PTX ? P_SAME : P_ALL;
    weft_context *q = open_cpu(dir, QUICK);
    work wq;
    work_open(&wq, q, which);
    blob want;
    run_ok(&wq, &want);

    weft_context *ctx = open_cpu(dir, DEFAULT);
    work w;
    work_open(&w, ctx, which); /* the general variant waits for a run */
    pthread_t th[2];
    runner r[2];
    for (int t = 0; t < 2; t++) {
        r[t] = (runner){.w = &w, .want = &want};
        ck_assert_int_eq(pthread_create(&th[t], NULL, runner_main, &r[t]), 0);
    }
    TU_OK(weft_context_wait_optimised(ctx));
    for (int t = 0; t < 2; t++) {
        ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    }
    for (int t = 0; t < 2; t++) {
        ck_assert_msg(r[t].status == WEFT_OK, "thread %d: %s: %s", t,
                      weft_status_name(r[t].status), r[t].msg);
        ck_assert_int_eq(r[t].runs, RUNS);
        ck_assert_msg(r[t].same == RUNS, "thread %d: %d of %d runs differ", t,
                      RUNS - r[t].same, RUNS);
    }
    /* the general variant may have been queued after the wait began */
    TU_OK(weft_context_wait_optimised(ctx));
    weft_stats st = stats_of(ctx);
    ck_assert_uint_ge(st.kernels_optimised, 1);
    ck_assert_uint_eq(st.kernels_optimised + UNTIERED, st.kernels_compiled);
    ck_assert_uint_eq(st.kernels_compiled, stats_of(q).kernels_compiled);
    blob after;
    run_ok(&w, &after);
    CHECK_SAME(&after, &want, "all programs, optimised");
    blob_free(&after);
    blob_free(&want);
    work_close(&w);
    work_close(&wq);
    weft_context_free(ctx);
    weft_context_free(q);
    tu_remove_dir(dir);
}
END_TEST

START_TEST(concurrent_compiles)
{
    char dir[] = TMP_TEMPLATE;
    make_dir(dir);
    weft_context *q = open_cpu(dir, QUICK);
    work wq;
    work_open(&wq, q, P_SAME);
    blob want;
    run_ok(&wq, &want);

    /* four threads compile the same kernels on one context at once: each
     * kernel is built by one of them (runtime/kcache.c) while the others
     * wait for it or build other kernels beside it */
    enum { T = 4 };
    weft_context *ctx = open_cpu(dir, DEFAULT);
    compiler c[T];
    pthread_t th[T];
    for (int t = 0; t < T; t++) {
        memset(&c[t], 0, sizeof c[t]);
        c[t].w.ctx = ctx;
        for (int k = 0; k < P_COUNT; k++) {
            for (int i = 0; same_across_tiers((prog)k) && i < progs[k].nin;
                 i++) {
                c[t].w.in[c[t].w.n_in++] = host_array(ctx, progs[k].in[i]);
            }
        }
    }
    for (int t = 0; t < T; t++) {
        ck_assert_int_eq(pthread_create(&th[t], NULL, compiler_main, &c[t]), 0);
    }
    for (int t = 0; t < T; t++) {
        ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    }
    for (int t = 0; t < T; t++) {
        ck_assert_msg(c[t].status == WEFT_OK, "thread %d: %s: %s", t,
                      weft_status_name(c[t].status), c[t].msg);
        CHECK_SAME(&c[t].got, &want, "compiled on four threads");
        blob_free(&c[t].got);
    }
    TU_OK(weft_context_wait_optimised(ctx));
    weft_stats st = stats_of(ctx), sq = stats_of(q);
    if (DT_BACKEND == WEFT_BACKEND_PTX) {
        /* a kernel per compile, none twice (the CPU counts batches, which
         * the threads may split differently) */
        ck_assert_uint_eq(st.kernels_compiled + st.kernels_loaded,
                          sq.kernels_compiled);
    }
    ck_assert_uint_ge(st.kernels_compiled, 1);
    for (int t = 0; t < T; t++) {
        work_close(&c[t].w);
    }
    blob_free(&want);
    work_close(&wq);
    weft_context_free(ctx);
    weft_context_free(q);
    tu_remove_dir(dir);
}
END_TEST

/* Compile dotp in a fresh context with the environment read (flags
 * `flags`, no WEFT_FLAG_NO_ENV) and return its counters after the
 * compile (*now) and after a wait (*waited); *entries: the directory's
 * entries right after the compile. */
static void env_dotp(const char *dir, unsigned flags, weft_stats *now,
                     weft_stats *waited, int *entries)
{
    weft_context *ctx = open_cpu(dir, flags);
    work w;
    work_open(&w, ctx, P_DOTP);
    *entries = count_entries(dir);
    *now = stats_of(ctx);
    TU_OK(weft_context_wait_optimised(ctx));
    *waited = stats_of(ctx);
    work_close(&w);
    weft_context_free(ctx);
}

START_TEST(environment)
{
    char dir[] = TMP_TEMPLATE, sub[3][64];
    make_dir(dir);
    for (int i = 0; i < 3; i++) {
        snprintf(sub[i], sizeof sub[i], "%s/%d", dir, i);
    }
    /* The variables that would change what is tested here: set aside
     * (the GPU machine runs the suite with WEFT_BACKEND=ptx) and put back
     * at the end. */
    static const char *const names[] = {"WEFT_TIERING", "WEFT_BACKEND",
                                        "WEFT_DUMP"};
    enum { NNAMES = sizeof names / sizeof names[0] };
    char *old[NNAMES];
    tu_env_aside(names, NNAMES, old);
    weft_config cfg = weft_config_default();
    cfg.backend = DT_BACKEND;
    cfg.threads = 2;
    cfg.cache_dir = sub[0];
    weft_context *ctx = NULL;
    setenv("WEFT_TIERING", "bogus", 1);
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&cfg, &ctx));
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(weft_last_error(), "WEFT_TIERING") != NULL, "%s",
                  weft_last_error());
    cfg.flags = WEFT_FLAG_NO_ENV; /* ignored then */
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_context_free(ctx);

    weft_stats now, waited;
    int entries;
    /* 0: optimised at once, as NO_TIERING */
    setenv("WEFT_TIERING", "0", 1);
    env_dotp(sub[0], 0, &now, &waited, &entries);
    ck_assert_uint_eq(now.kernels_compiled, 1);
    ck_assert_int_eq(entries, 1);
    ck_assert_uint_eq(waited.kernels_optimised, 0);
    /* quick, over WEFT_FLAG_NO_TIERING: neither reads nor writes */
    setenv("WEFT_TIERING", "quick", 1);
    env_dotp(sub[0], WEFT_FLAG_NO_TIERING, &now, &waited, &entries);
    ck_assert_uint_eq(now.kernels_compiled, 1);
    ck_assert_uint_eq(now.kernels_loaded, 0);
    ck_assert_uint_eq(waited.kernels_optimised, 0);
    env_dotp(sub[1], 0, &now, &waited, &entries);
    ck_assert_int_eq(entries, 0);
    ck_assert_int_eq(count_entries(sub[1]), 0);
    /* 1, over WEFT_FLAG_QUICK_CODE: tiered */
    setenv("WEFT_TIERING", "1", 1);
    env_dotp(sub[2], WEFT_FLAG_QUICK_CODE, &now, &waited, &entries);
    ck_assert_uint_eq(now.kernels_compiled, 1);
    ck_assert_uint_eq(waited.kernels_optimised, 1);
    ck_assert_int_eq(count_entries(sub[2]), 1);

    tu_env_restore(names, NNAMES, old);
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_context_wait_optimised(NULL));
    tu t;
    tu_open(&t);
    TU_OK(weft_context_wait_optimised(t.ctx));
    tu_close(&t);
    tu_remove_dir(dir);
}
END_TEST

static Suite *tier_suite(void)
{
    Suite *s = suite_create("tier");
    TCase *t = tcase_create("tier");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, same_results);
    tcase_add_test(t, tier_up);
    tcase_add_test(t, free_unwaited);
    tcase_add_test(t, quick_no_disk);
    tcase_add_test(t, no_tiering);
    tcase_add_test(t, concurrent_runs);
    tcase_add_test(t, concurrent_compiles);
    tcase_add_test(t, environment);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    if (!tu_backend_here()) {
        return 77;
    }
    fill_inputs();
    SRunner *sr = srunner_create(tier_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#else /* no LLVM: no CPU backend, no tiers */

int main(void)
{
    printf("test_tier: built without LLVM, nothing to test\n");
    return 0;
}

#endif
