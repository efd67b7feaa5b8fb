/*
 * tests/test_cpu.c: the CPU backend computes what the interpreter computes.
 *
 * Every case is a differential test.  A builder makes the same program in
 * two contexts, one on the reference interpreter and one on the CPU backend
 * (both ignore the environment); each is compiled once, then run on many
 * inputs made from one host copy of random data (fixed seeds), so both see
 * the same bytes.  The two runs must agree on the status, and when it is
 * WEFT_OK on every output's type, rank, shape and values:
 *
 *   - integral and bool leaves exactly;
 *   - floating leaves bitwise (NaN equal to NaN) unless the case states a
 *     tolerance.  Tolerances appear only where the CPU backend may combine
 *     in another order than the interpreter: fold, scan, foldSeg and
 *     permute with (+) on floats (and libm functions, see prims).  For the
 *     sums the inputs lie in [-1, 1] and the bound is TOL_F32 (or TOL_F64)
 *     times the number of values that enter one result, i.e. relative to
 *     the largest possible sum of absolute values: two summation orders of
 *     n terms differ by at most about 2 n eps sum|x| in the worst case and
 *     by about sqrt(n) eps sum|x| in practice, so 1e-5 for f32 (eps 6e-8)
 *     never flakes.  A lost or doubled element is caught by the same
 *     operations on integers, which are compared exactly at every size.
 *
 * Shapes cover empty arrays (empty in each dimension), one element, odd and
 * prime extents, ranks 0 to 3, tuple element types, and a few sizes of
 * about three million elements so that every phase of the multi-phase
 * skeletons (chunked fold_all, three-phase scans, permute on many threads)
 * runs.  The end-to-end programs of test_programs.c run here on both
 * backends, and so do the errors a compiled kernel can meet (indices out
 * of bounds, fold1 of empty rows, reshape sizes, slice indices, bad
 * segments).  Division by zero inside a kernel is not checked in compiled
 * code, so it is not tested here.
 *
 * The CPU context uses three workers on whatever cores the host has, so
 * that ranges split unevenly and stealing happens; concurrent_runs runs one
 * executable from four host threads at once.  Each Check case holds one
 * test, so CK_RUN_CASE=<name> runs one; DT_STATS=1 prints each case's
 * kernel counters to stderr.  Built again as test_cpu_fast (-DDT_FAST_MATH)
 * it runs the floating-point cases with WEFT_FLAG_FAST_MATH (see DT_FAST),
 * and as test_cpu_quick (-DDT_QUICK) on the quick code of tiered
 * compilation (WEFT_FLAG_QUICK_CODE: the same optimised IR through LLVM's
 * quick code generator, which must give the same results).
 */
#include <math.h>
#include <pthread.h>

#include "tu_cmp.h"
#include "tu_programs.h"

#define TOL_F32 1e-5 /* per value entering a reassociated f32 sum */
#define TOL_F64 1e-13

/* Fast math (test_cpu_fast: this file built with -DDT_FAST_MATH).  The
 * compiled side runs with WEFT_FLAG_FAST_MATH and only the cases whose
 * results are floating point run (the `fast` column of the suite); every
 * floating leaf then matches within fast_tol(t) absolute plus fast_tol(t)
 * relative (or the case's own tolerance where it is looser), NaN where
 * NaN, infinities exactly, as the flag promises.  Why those bounds:
 * contraction into FMA and reassociation change each operation they touch
 * by at most about an ulp of its largest operand, and the cases' formulas
 * are a few operations deep on inputs of magnitude at most about 1
 * (harr_new), so the absolute difference stays within some tens of ulps
 * of 1: 2^-23 * 10^2 ~ 1.2e-5 for f32, so 1e-4 (f16: 1e-2; f64: 1e-12);
 * the relative part covers larger values (sums of many elements, exp).
 * Integer and bool results are still compared exactly.  Without the
 * tolerances the fast run differs from the interpreter in fold_float,
 * fold_large, fold_seg, scan_float, stencil, stencil2, prims and programs
 * (the flag is at work there). */
#ifdef DT_FAST_MATH
#define DT_FLAGS WEFT_FLAG_FAST_MATH
#define DT_FAST 1
#else
#define DT_FLAGS 0u
#define DT_FAST 0
#endif

static double fast_tol(weft_type t)
{
    return t == WEFT_F64 ? 1e-12 : t == WEFT_F16 ? 1e-2 : 1e-4;
}

enum { MAX_LEAF = TU_HOST_LEAVES, MAX_RES = 8, MAX_IN = 6 };

/* Sanitizer builds run the interpreter ten to fifty times slower: there
 * the first multi-million case of each kind keeps its size and the others
 * shrink to a tenth (still past every phase threshold). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* n, or a tenth of it in a sanitizer build unless keep. */
static int64_t big(int64_t n, bool keep)
{
    return SANITIZED && !keep ? n / 10 + 1 : n;
}

/* ------------------------------------------------------------------------
 * Random host arrays
 * ---------------------------------------------------------------------- */

/* The case's generator, reseeded by each case. */
static tu_rng rng;

static void seed(uint64_t s)
{
    rng = tu_rng_seed(s);
}

/* A random host array of one scalar leaf: integers uniform in [lo, hi]
 * (all bits random when lo > hi), floats in [lo, hi] (in [-1, 1] when
 * lo > hi), bool 0 or 1 (tu_rng_fill). */
static tu_host harr1(weft_type t, int rank, const int64_t *shape, int64_t lo,
                     int64_t hi)
{
    return tu_host_random(&rng, 1, &t, rank, shape, (double)lo, (double)hi);
}

static tu_host harr_vec(weft_type t, int64_t n, int64_t lo, int64_t hi)
{
    return harr1(t, 1, &n, lo, hi);
}

static void harr_set_i(tu_host *h, int leaf, int64_t i, int64_t v)
{
    tu_store_i(h->leaf[leaf],
               (unsigned char *)h->data[leaf] +
                   (size_t)i * weft_type_size(h->leaf[leaf]),
               v);
}

/* ------------------------------------------------------------------------
 * The differential harness (tu_cmp.h): the interpreter against DT_BACKEND
 * ---------------------------------------------------------------------- */

/* What a builder gets: the program (one of the two), its context, and the
 * case's parameters. */
typedef struct bld {
    weft_program *p;
    weft_context *ctx;
    weft_type t;        /* the case's element type */
    int rank;           /* the case's rank */
    int variant;        /* which variant of the case */
    const tu_host *use; /* host arrays to fix into the program with weft_use */
} bld;

/* Build the program's results into res; return how many. */
typedef int (*build_fn)(bld *b, weft_acc **res);

typedef tu_cmp diff;

/* Fast math widens every floating leaf's tolerance to fast_tol. */
static tu_tol fast_leaf_tol(weft_type t, tu_tol tol)
{
    return (tu_tol){fmax(tol.abs, fast_tol(t)), fmax(tol.rel, fast_tol(t)),
                    tol.ulps};
}

/* The interpreter and DT_BACKEND on three workers, with cpu_flags. */
static void diff_open_flags(diff *d, unsigned cpu_flags)
{
    tu_cmp_open2(d, 3, cpu_flags | DT_FLAGS);
    d->leaf_tol = DT_FAST ? fast_leaf_tol : NULL;
}

static void diff_open(diff *d)
{
    diff_open_flags(d, 0);
}

static void diff_close(diff *d)
{
    if (getenv("DT_STATS")) {
        weft_stats st;
        weft_context_stats(d->ctx[1], &st);
        fprintf(stderr, "compiled %llu loaded %llu reused %llu, %.0f ms\n",
                (unsigned long long)st.kernels_compiled,
                (unsigned long long)st.kernels_loaded,
                (unsigned long long)st.kernels_reused, st.compile_ms);
    }
    tu_cmp_close(d);
}

typedef struct bld_arg {
    build_fn f;
    const bld *proto;
} bld_arg;

static int build_side(weft_program *p, weft_context *ctx, const void *arg,
                      weft_acc **res)
{
    const bld_arg *ba = arg;
    bld b = *ba->proto;
    b.p = p;
    b.ctx = ctx;
    return ba->f(&b, res);
}

/* Build the program in both contexts and compile it. */
static void diff_build(diff *d, const char *name, build_fn f, const bld *proto)
{
    tu_cmp_case(d, "%s (type %d, rank %d, variant %d)", name, (int)proto->t,
                proto->rank, proto->variant);
    bld_arg ba = {f, proto};
    tu_cmp_build(d, build_side, &ba);
}

/* Run both executables on in[0..nin-1] and compare: the statuses must be
 * equal, a failure reported by weft_run; on success every output must
 * match (floats within max(atol, rtol |want|), bitwise when both are 0).
 * Returns the status. */
static weft_status diff_run_tol(diff *d, const tu_host *in, int nin,
                                double atol, double rtol)
{
    weft_status s = tu_cmp_run(d, in, nin, (tu_tol){atol, rtol, 0});
    tu_cmp_check_run_msg(d);
    return s;
}

/* Bitwise comparison. */
static weft_status diff_run(diff *d, const tu_host *in, int nin)
{
    return diff_run_tol(d, in, nin, 0, 0);
}

/* Run and expect the status `want` from both backends. */
static void diff_expect(diff *d, const tu_host *in, int nin, weft_status want)
{
    weft_status s = diff_run(d, in, nin);
    ck_assert_msg(s == want, "%s: status %s, expected %s", d->what,
                  weft_status_name(s), weft_status_name(want));
}

/* ------------------------------------------------------------------------
 * Shapes and small builders
 * ---------------------------------------------------------------------- */

typedef struct shp {
    int rank;
    int64_t e[3];
} shp;

/* Empty in every position, one element, odd and prime extents. */
static const shp shapes[] = {
    {0, {0}},        {1, {0}},         {1, {1}},       {1, {2}},
    {1, {7}},        {1, {31}},        {1, {1009}},    {1, {65537}},
    {2, {0, 5}},     {2, {5, 0}},      {2, {1, 1}},    {2, {3, 7}},
    {2, {17, 13}},   {2, {2, 1031}},   {2, {1031, 3}}, {2, {1, 4099}},
    {3, {0, 2, 3}},  {3, {2, 3, 0}},   {3, {1, 1, 1}}, {3, {3, 5, 7}},
    {3, {4, 9, 11}}, {3, {2, 1, 257}},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* Elements of one row (the innermost extent), 1 for rank 0. */
static int64_t row_len(const shp *s)
{
    return s->rank == 0 ? 1 : s->e[s->rank - 1];
}

static int64_t shp_size(const shp *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++) {
        n *= s->e[d];
    }
    return n;
}

static bool is_int(weft_type t)
{
    return t != WEFT_BOOL && !tu_is_float(t) && weft_type_size(t) > 0;
}

/* A constant of scalar type t from an integer. */
static weft_exp *cst(weft_program *p, weft_type t, int64_t v)
{
    unsigned char buf[8];
    tu_store_i(t, buf, v);
    return weft_const(p, t, buf);
}

/* A constant of floating type t. */
static weft_exp *cstf(weft_program *p, weft_type t, double v)
{
    unsigned char buf[8];
    tu_store_f(t, buf, v);
    return weft_const(p, t, buf);
}

static weft_fun *op2(weft_program *p, weft_type t,
                     weft_exp *(*op)(weft_exp *, weft_exp *))
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, op(weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* (a, b) -> b: associative, not commutative. */
static weft_fun *fun_last(weft_program *p, weft_type t)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_arg(f, 1));
    return f;
}

/* The affine maps x -> a x + b on i32 pairs (a, b), composed left to right:
 * (a1, b1) then (a2, b2) is (a1 a2, b1 a2 + b2).  Associative (with wrap
 * around), not commutative, a tuple. */
static weft_type pair_type(weft_context *ctx, weft_type a, weft_type b)
{
    weft_type ts[2] = {a, b};
    weft_type t = weft_type_tuple(ctx, 2, ts);
    ck_assert_int_ne(t, 0);
    return t;
}

static weft_fun *fun_affine(weft_program *p, weft_context *ctx)
{
    weft_type t = pair_type(ctx, WEFT_I32, WEFT_I32);
    weft_fun *f = weft_fun2(p, t, t);
    weft_exp *x = weft_arg(f, 0), *y = weft_arg(f, 1);
    weft_exp *c[2] = {
        weft_mul(weft_get(x, 0), weft_get(y, 0)),
        weft_add(weft_mul(weft_get(x, 1), weft_get(y, 0)), weft_get(y, 1))};
    weft_fun_return(f, weft_tuple(p, 2, c));
    return f;
}

/* ------------------------------------------------------------------------
 * Producers: generate, map, zipWith, zipWith3
 * ---------------------------------------------------------------------- */

/* generate (shape a) (\ix -> (sum_k (ix_k + 1) * (k + 3) as i32 xor 0x55,
 *                              to_index sh ix as f64 / 3)) */
static int build_generate(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_U8, b->rank);
    weft_exp *sh = weft_shape(a);
    weft_fun *f = weft_fun1(p, WEFT_DIM(b->rank));
    weft_exp *ix = weft_arg(f, 0);
    weft_exp *s = weft_i64(p, 0);
    for (int k = 0; k < b->rank; k++) {
        s = weft_add(s, weft_mul(weft_add(weft_get(ix, k), weft_i64(p, 1)),
                                 weft_i64(p, k + 3)));
    }
    weft_exp *c[2] = {weft_bxor(weft_convert(s, WEFT_I32), weft_i32(p, 0x55)),
                      weft_fdiv(weft_convert(weft_to_index(sh, ix), WEFT_F64),
                                weft_f64(p, 3))};
    weft_fun_return(f, b->variant ? weft_tuple(p, 2, c) : c[0]);
    res[0] = weft_generate(sh, f);
    return 1;
}

START_TEST(generate)
{
    diff d;
    diff_open(&d);
    seed(1);
    for (int variant = 0; variant < 2; variant++) {
        for (int r = 0; r <= 3; r++) {
            bld b = {.rank = r, .variant = variant};
            diff_build(&d, "generate", build_generate, &b);
            for (int i = 0; i < NSHAPES; i++) {
                if (shapes[i].rank == r) {
                    tu_host h = harr1(WEFT_U8, r, shapes[i].e, 0, 9);
                    diff_run(&d, &h, 1);
                    tu_host_free(&h);
                }
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* map over type t: integral x * 3 + 1 xor (x >> 2) (shr by a constant
 * below the width); floating x * x - 0.5 / (x + 3); bool: not. */
static weft_exp *map_body(weft_program *p, weft_type t, weft_exp *x)
{
    if (t == WEFT_BOOL) {
        return weft_not(x);
    }
    if (tu_is_float(t)) {
        return weft_sub(weft_mul(x, x),
                        weft_fdiv(cstf(p, t, 0.5), weft_add(x, cstf(p, t, 3))));
    }
    return weft_bxor(weft_add(weft_mul(x, cst(p, t, 3)), cst(p, t, 1)),
                     weft_shr(x, cst(p, t, 2)));
}

static int build_map(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, b->t, b->rank);
    weft_fun *f = weft_fun1(p, b->t);
    weft_fun_return(f, map_body(p, b->t, weft_arg(f, 0)));
    res[0] = weft_map(f, a);
    return 1;
}

/* map over (i32, f64) -> (f64 of the i32 times the f64, i32 + 1, bool). */
static int build_map_tuple(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type in = pair_type(b->ctx, WEFT_I32, WEFT_F64);
    weft_acc *a = weft_param(p, in, b->rank);
    weft_fun *f = weft_fun1(p, in);
    weft_exp *x = weft_get(weft_arg(f, 0), 0), *y = weft_get(weft_arg(f, 0), 1);
    weft_exp *c[3] = {weft_mul(weft_convert(x, WEFT_F64), y),
                      weft_add(x, weft_i32(p, 1)), weft_lt(y, weft_f64(p, 0))};
    weft_fun_return(f, weft_tuple(p, 3, c));
    res[0] = weft_map(f, a);
    return 1;
}

START_TEST(map)
{
    static const weft_type types[] = {WEFT_BOOL, WEFT_I8,  WEFT_I16, WEFT_I32,
                                      WEFT_I64,  WEFT_U8,  WEFT_U16, WEFT_U32,
                                      WEFT_U64,  WEFT_F16, WEFT_F32, WEFT_F64};
    diff d;
    diff_open(&d);
    seed(2);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        weft_type t = types[ti];
        bool all_ranks = t == WEFT_I32 || t == WEFT_F32 || t == WEFT_F16;
        for (int r = all_ranks ? 0 : 1; r <= (all_ranks ? 3 : 1); r++) {
            bld b = {.t = t, .rank = r};
            diff_build(&d, "map", build_map, &b);
            for (int i = 0; i < NSHAPES; i++) {
                if (shapes[i].rank == r) {
                    tu_host h = harr1(t, r, shapes[i].e, 1, 0);
                    diff_run(&d, &h, 1);
                    tu_host_free(&h);
                }
            }
        }
    }
    for (int r = 0; r <= 3; r++) {
        bld b = {.rank = r};
        diff_build(&d, "map tuple", build_map_tuple, &b);
        static const weft_type leaves[2] = {WEFT_I32, WEFT_F64};
        for (int i = 0; i < NSHAPES; i++) {
            if (shapes[i].rank == r) {
                tu_host h =
                    tu_host_random(&rng, 2, leaves, r, shapes[i].e, 1, 0);
                diff_run(&d, &h, 1);
                tu_host_free(&h);
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* zipWith (\x y -> x * 2 - y) a b, and zipWith3 (\x y z -> (x + y * z,
 * max x z)) a b c; variant 1 maps over the zip again (fused chain). */
static int build_zip(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type t = b->t;
    weft_acc *x = weft_param(p, t, b->rank), *y = weft_param(p, t, b->rank);
    weft_acc *z = weft_param(p, t, b->rank);
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(
        f, weft_sub(weft_mul(weft_arg(f, 0), cst(p, t, 2)), weft_arg(f, 1)));
    weft_fun *g = weft_fun3(p, t, t, t);
    weft_exp *c[2] = {
        weft_add(weft_arg(g, 0), weft_mul(weft_arg(g, 1), weft_arg(g, 2))),
        weft_max(weft_arg(g, 0), weft_arg(g, 2))};
    weft_fun_return(g, weft_tuple(p, 2, c));
    res[0] = weft_zipwith(f, x, y);
    res[1] = weft_zipwith3(g, x, y, z);
    if (b->variant) {
        weft_fun *h = weft_fun1(p, t);
        weft_fun_return(h, weft_add(weft_arg(h, 0), cst(p, t, 1)));
        res[0] = weft_map(h, weft_zipwith(f, res[0], z));
    }
    return 2;
}

START_TEST(zipwith)
{
    static const weft_type types[] = {WEFT_I32, WEFT_U16, WEFT_F32, WEFT_F64};
    diff d;
    diff_open(&d);
    seed(3);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        bool main_type = types[ti] == WEFT_I32 || types[ti] == WEFT_F32;
        for (int variant = 0; variant < (main_type ? 2 : 1); variant++) {
            for (int r = main_type ? 0 : 1; r <= (main_type ? 3 : 2); r++) {
                bld b = {.t = types[ti], .rank = r, .variant = variant};
                diff_build(&d, "zipwith", build_zip, &b);
                for (int i = 0; i < NSHAPES; i++) {
                    if (shapes[i].rank != r) {
                        continue;
                    }
                    /* three extents that differ: the result is their
                     * intersection */
                    int64_t e2[3], e3[3];
                    for (int k = 0; k < r; k++) {
                        e2[k] = shapes[i].e[k] + (k == 0 ? 2 : 0);
                        e3[k] = shapes[i].e[k] > 1 ? shapes[i].e[k] - 1
                                                   : shapes[i].e[k];
                    }
                    tu_host h[3] = {harr1(types[ti], r, shapes[i].e, 1, 0),
                                    harr1(types[ti], r, e2, 1, 0),
                                    harr1(types[ti], r, e3, 1, 0)};
                    diff_run(&d, h, 3);
                    for (int k = 0; k < 3; k++) {
                        tu_host_free(&h[k]);
                    }
                }
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * use, unit, the, reshape, replicate, slice, backpermute, transform
 * ---------------------------------------------------------------------- */

/* unit (the s + fold_all (+) 0 (use u)) and map over the used array. */
static int build_use_unit(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *s = weft_param(p, WEFT_I64, 0);
    weft_array *ua = tu_host_array(b->ctx, b->use);
    weft_acc *u = weft_use(p, ua);
    weft_array_release(ua);
    weft_acc *sum =
        weft_fold_all(op2(p, WEFT_I64, weft_add), weft_i64(p, 0), u);
    res[0] = weft_unit(weft_add(weft_the(s), weft_the(sum)));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, weft_mul(weft_arg(f, 0), weft_the(s)));
    res[1] = weft_map(f, u);
    return 2;
}

START_TEST(use_unit_the)
{
    diff d;
    diff_open(&d);
    seed(4);
    int64_t n = 1001;
    tu_host u = harr_vec(WEFT_I64, n, 1, 0);
    bld b = {.use = &u};
    diff_build(&d, "use/unit/the", build_use_unit, &b);
    for (int k = 0; k < 3; k++) {
        tu_host s = harr1(WEFT_I64, 0, NULL, -1000, 1000);
        diff_run(&d, &s, 1);
        tu_host_free(&s);
    }
    tu_host_free(&u);
    diff_close(&d);
}
END_TEST

/* Variant 0: reshape a to (size a) and to (1, size a, 1), then map.
 * Variant 1: reshape to (size a + 1): always WEFT_ERR_RESHAPE_SIZE. */
static int build_reshape(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, b->rank);
    weft_exp *n = weft_size(a);
    if (b->variant) {
        res[0] = weft_reshape(weft_index1(weft_add(n, weft_i64(p, 1))), a);
        return 1;
    }
    weft_exp *sh3[3] = {weft_i64(p, 1), n, weft_i64(p, 1)};
    res[0] = weft_reshape(weft_index1(n), a);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_i32(p, 5)));
    res[1] = weft_map(f, weft_reshape(weft_index(p, 3, sh3), a));
    /* the reshape of a producer (fused or not) */
    res[2] = weft_reshape(weft_index1(n), weft_map(f, a));
    return 3;
}

START_TEST(reshape)
{
    diff d;
    diff_open(&d);
    seed(5);
    for (int variant = 0; variant < 2; variant++) {
        for (int r = 0; r <= 3; r++) {
            bld b = {.rank = r, .variant = variant};
            diff_build(&d, "reshape", build_reshape, &b);
            for (int i = 0; i < NSHAPES; i++) {
                if (shapes[i].rank == r) {
                    tu_host h = harr1(WEFT_I32, r, shapes[i].e, 1, 0);
                    diff_expect(&d, &h, 1,
                                variant ? WEFT_ERR_RESHAPE_SIZE : WEFT_OK);
                    tu_host_free(&h);
                }
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* Replicate and slice with the specifications of test_ops.c, on a rank-1
 * (variant 0) or rank-2 (variant 1) parameter, plus a run-time count and
 * index. */
static int build_replicate(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type t = b->t;
    weft_acc *k = weft_param(p, WEFT_I64, 0);
    weft_exp *cnt = weft_the(k);
    if (b->variant == 0) {
        weft_acc *v = weft_param(p, t, 1);
        weft_exp *s1[2] = {weft_all(p), weft_i64(p, 3)};
        weft_exp *s2[2] = {cnt, weft_all(p)};
        weft_exp *s3[3] = {weft_i64(p, 2), weft_all(p), cnt};
        res[0] = weft_replicate(2, s1, v);
        res[1] = weft_replicate(2, s2, v);
        res[2] = weft_replicate(3, s3, v);
        weft_fun *f = weft_fun1(p, t);
        weft_fun_return(f, weft_mul(weft_arg(f, 0), cst(p, t, 3)));
        res[3] = weft_map(f, weft_replicate(2, s1, v));
        return 4;
    }
    weft_acc *m = weft_param(p, t, 2);
    weft_exp *s1[3] = {cnt, weft_all(p), weft_all(p)};
    weft_exp *s2[3] = {weft_all(p), cnt, weft_all(p)};
    weft_exp *s3[3] = {weft_all(p), weft_all(p), weft_i64(p, 2)};
    res[0] = weft_replicate(3, s1, m);
    res[1] = weft_replicate(3, s2, m);
    res[2] = weft_replicate(3, s3, m);
    return 3;
}

START_TEST(replicate)
{
    static const weft_type types[] = {WEFT_I32, WEFT_F64, WEFT_U8};
    diff d;
    diff_open(&d);
    seed(6);
    for (size_t ti = 0; ti < 3; ti++) {
        for (int variant = 0; variant < 2; variant++) {
            bld b = {.t = types[ti], .variant = variant};
            diff_build(&d, "replicate", build_replicate, &b);
            for (int i = 0; i < NSHAPES; i++) {
                if (shapes[i].rank != variant + 1 ||
                    shp_size(&shapes[i]) > 5000) {
                    continue;
                }
                tu_host h[2] = {
                    harr1(WEFT_I64, 0, NULL, 0, 4),
                    harr1(types[ti], shapes[i].rank, shapes[i].e, 1, 0)};
                diff_run(&d, h, 2);
                tu_host_free(&h[0]);
                tu_host_free(&h[1]);
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* slice on a rank-3 parameter with fixed and run-time indices. */
static int build_slice(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, b->t, 3);
    weft_acc *k = weft_param(p, WEFT_I64, 0);
    weft_exp *i = weft_the(k);
    weft_exp *s1[3] = {weft_all(p), i, weft_all(p)};
    weft_exp *s2[3] = {i, weft_all(p), weft_all(p)};
    weft_exp *s3[3] = {weft_all(p), weft_all(p), i};
    weft_exp *s4[3] = {i, i, i};
    weft_exp *s5[3] = {weft_all(p), weft_all(p), weft_all(p)};
    res[0] = weft_slice(a, 3, s1);
    res[1] = weft_slice(a, 3, s2);
    res[2] = weft_slice(a, 3, s3);
    res[3] = weft_slice(a, 3, s4);
    res[4] = weft_slice(a, 3, s5);
    weft_fun *f = weft_fun1(p, b->t);
    weft_fun_return(f, weft_add(weft_arg(f, 0), weft_arg(f, 0)));
    res[5] = weft_map(f, weft_slice(a, 3, s1));
    return 6;
}

START_TEST(slice)
{
    static const weft_type types[] = {WEFT_I16, WEFT_F32};
    diff d;
    diff_open(&d);
    seed(7);
    for (size_t ti = 0; ti < 2; ti++) {
        bld b = {.t = types[ti]};
        diff_build(&d, "slice", build_slice, &b);
        static const int64_t sh[][3] = {{3, 5, 7}, {4, 4, 4}, {2, 9, 3}};
        for (int i = 0; i < 3; i++) {
            for (int64_t idx = -1; idx <= 4; idx++) {
                tu_host h[2] = {harr1(types[ti], 3, sh[i], 1, 0),
                                harr1(WEFT_I64, 0, NULL, idx, idx)};
                bool inside = idx >= 0 && idx < sh[i][0] && idx < sh[i][1] &&
                              idx < sh[i][2];
                diff_expect(&d, h, 2, inside ? WEFT_OK : WEFT_ERR_SLICE_INDEX);
                tu_host_free(&h[0]);
                tu_host_free(&h[1]);
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* Variant 0: backpermute the transpose of a rank-2 array, the reverse of
 * a rank-1 one, transform (reverse, x * 2) and a gather by an index
 * array (which may be out of bounds: variant 1 adds 1 to every index). */
static int build_backpermute(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type t = b->t;
    weft_acc *m = weft_param(p, t, 2);
    weft_acc *v = weft_param(p, t, 1);
    weft_acc *ix = weft_param(p, WEFT_I32, 1);
    weft_exp *msh = weft_shape(m);
    weft_fun *tr = weft_fun1(p, WEFT_DIM(2));
    weft_fun_return(tr, weft_index2(weft_get(weft_arg(tr, 0), 1),
                                    weft_get(weft_arg(tr, 0), 0)));
    res[0] = weft_backpermute(weft_index2(weft_get(msh, 1), weft_get(msh, 0)),
                              tr, m);
    weft_fun *rev = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(rev,
                    weft_index1(weft_sub(weft_sub(weft_size(v), weft_i64(p, 1)),
                                         weft_get(weft_arg(rev, 0), 0))));
    res[1] = weft_backpermute(weft_shape(v), rev, v);
    weft_fun *dbl = weft_fun1(p, t);
    weft_fun_return(dbl, weft_add(weft_arg(dbl, 0), weft_arg(dbl, 0)));
    res[2] = weft_transform(weft_shape(v), rev, dbl, v);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *j = weft_convert(weft_at(ix, weft_arg(g, 0)), WEFT_I64);
    if (b->variant) {
        j = weft_add(j, weft_i64(p, 1));
    }
    weft_fun_return(g, weft_index1(j));
    res[3] = weft_backpermute(weft_shape(ix), g, v);
    /* the gather fused into a map */
    res[4] = weft_map(dbl, weft_backpermute(weft_shape(ix), g, v));
    return 5;
}

START_TEST(backpermute)
{
    static const weft_type types[] = {WEFT_I32, WEFT_F64, WEFT_I8};
    diff d;
    diff_open(&d);
    seed(8);
    for (size_t ti = 0; ti < 3; ti++) {
        for (int variant = 0; variant < 2; variant++) {
            bld b = {.t = types[ti], .variant = variant};
            diff_build(&d, "backpermute", build_backpermute, &b);
            for (int i = 0; i < NSHAPES; i++) {
                if (shapes[i].rank != 2) {
                    continue;
                }
                int64_t n = shapes[i].e[0] * 3 + 1, m = shapes[i].e[1];
                tu_host h[3] = {harr1(types[ti], 2, shapes[i].e, 1, 0),
                                harr_vec(types[ti], n, 1, 0),
                                harr_vec(WEFT_I32, m, 0, n - 1)};
                /* variant 1 reads index n whenever n - 1 was drawn; make
                 * sure it is drawn */
                if (variant && m > 0) {
                    harr_set_i(&h[2], 0, m / 2, n - 1);
                }
                diff_expect(&d, h, 3,
                            variant && m > 0 ? WEFT_ERR_OUT_OF_BOUNDS
                                             : WEFT_OK);
                for (int k = 0; k < 3; k++) {
                    tu_host_free(&h[k]);
                }
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * Reductions: fold, fold1, fold_all, fold1_all
 * ---------------------------------------------------------------------- */

enum combine { C_ADD, C_MUL, C_MAX, C_LAST, C_AFFINE, C_MINMAX };

/* The combine function of a case and its element type in ctx. */
static weft_fun *combine_fun(bld *b, enum combine c, weft_type *elt)
{
    weft_program *p = b->p;
    *elt = b->t;
    switch (c) {
    case C_ADD: return op2(p, b->t, weft_add);
    case C_MUL: return op2(p, b->t, weft_mul);
    case C_MAX: return op2(p, b->t, weft_max);
    case C_LAST: return fun_last(p, b->t);
    case C_AFFINE:
        *elt = pair_type(b->ctx, WEFT_I32, WEFT_I32);
        return fun_affine(p, b->ctx);
    case C_MINMAX: {
        /* (min, max) of f64 pairs: commutative and exact */
        weft_type t = pair_type(b->ctx, WEFT_F64, WEFT_F64);
        *elt = t;
        weft_fun *f = weft_fun2(p, t, t);
        weft_exp *x = weft_arg(f, 0), *y = weft_arg(f, 1);
        weft_exp *cs[2] = {weft_min(weft_get(x, 0), weft_get(y, 0)),
                           weft_max(weft_get(x, 1), weft_get(y, 1))};
        weft_fun_return(f, weft_tuple(p, 2, cs));
        return f;
    }
    }
    return NULL;
}

/* A seed for combine c that is not its identity (so that a seed entering
 * twice, or not at all, shows). */
static weft_exp *combine_seed(bld *b, enum combine c)
{
    weft_program *p = b->p;
    switch (c) {
    case C_AFFINE: {
        weft_exp *cs[2] = {weft_i32(p, 3), weft_i32(p, -7)};
        return weft_tuple(p, 2, cs);
    }
    case C_MINMAX: {
        weft_exp *cs[2] = {weft_f64(p, 0.25), weft_f64(p, -0.25)};
        return weft_tuple(p, 2, cs);
    }
    default: return tu_is_float(b->t) ? cstf(p, b->t, 0.5) : cst(p, b->t, 7);
    }
}

/* The host leaves of an input for combine c. */
static int combine_leaves(const bld *b, enum combine c, weft_type *leaves)
{
    if (c == C_AFFINE) {
        leaves[0] = leaves[1] = WEFT_I32;
        return 2;
    }
    if (c == C_MINMAX) {
        leaves[0] = leaves[1] = WEFT_F64;
        return 2;
    }
    leaves[0] = b->t;
    return 1;
}

/* variant bits: 1 = fold1 (no seed), 2 = over all elements. The input is
 * mapped first (x -> x) when bit 4 is set, so that a fused producer feeds
 * the reduction. */
static int build_fold(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    enum combine c = (enum combine)(b->variant >> 4);
    weft_type elt;
    weft_fun *f = combine_fun(b, c, &elt);
    weft_acc *a = weft_param(p, elt, b->rank);
    if (b->variant & 4) {
        weft_fun *id = weft_fun1(p, elt);
        weft_fun_return(id, weft_arg(id, 0));
        a = weft_map(id, a);
    }
    bool one = b->variant & 1, all = b->variant & 2;
    if (all) {
        res[0] = one ? weft_fold1_all(f, a)
                     : weft_fold_all(f, combine_seed(b, c), a);
    } else {
        res[0] = one ? weft_fold1(f, a) : weft_fold(f, combine_seed(b, c), a);
    }
    return 1;
}

/* Tolerance for reassociated sums of values in [-1, 1] of type t, n of
 * them per result. */
static double sum_tol(weft_type t, enum combine c, int64_t n)
{
    if (!tu_is_float(t) || c != C_ADD) {
        return 0;
    }
    return (t == WEFT_F32 ? TOL_F32 : TOL_F64) * (double)(n + 1);
}

/* Run fold cases of combine c on type t over the shape table: the modes
 * in the bit mask `modes` (bit m: variant mode m of build_fold), ranks up
 * to max_rank.  Every kernel costs a compilation, so only the main cases
 * run every mode and rank. */
static void fold_cases(diff *d, weft_type t, enum combine c, unsigned modes,
                       int max_rank)
{
    for (int mode = 0; mode < 8; mode++) {
        bool one = mode & 1, all = mode & 2;
        if (!(modes & 1u << mode)) {
            continue;
        }
        for (int r = all ? 0 : 1; r <= max_rank; r++) {
            bld b = {.t = t, .rank = r, .variant = mode | (int)c << 4};
            diff_build(d,
                       one ? (all ? "fold1_all" : "fold1")
                           : (all ? "fold_all" : "fold"),
                       build_fold, &b);
            for (int i = 0; i < NSHAPES; i++) {
                const shp *s = &shapes[i];
                if (s->rank != r) {
                    continue;
                }
                weft_type leaves[2];
                int nl = combine_leaves(&b, c, leaves);
                tu_host h =
                    tu_host_random(&rng, nl, leaves, r, s->e,
                                   c == C_MUL ? -3 : 1, c == C_MUL ? 3 : 0);
                int64_t per = all ? shp_size(s) : row_len(s);
                double tol = sum_tol(t, c, per);
                weft_status st = diff_run_tol(d, &h, 1, tol, tol ? 1e-6 : 0);
                /* fold1 of empty rows is an error on both sides; nothing
                 * else may fail */
                if (st != WEFT_OK) {
                    ck_assert_msg(one && st == WEFT_ERR_EMPTY_ARRAY,
                                  "%s: unexpected %s", d->what,
                                  weft_status_name(st));
                }
                tu_host_free(&h);
            }
        }
    }
}

START_TEST(fold_int)
{
    diff d;
    diff_open(&d);
    seed(9);
    fold_cases(&d, WEFT_I32, C_ADD, 0xff, 3);
    fold_cases(&d, WEFT_I64, C_MUL, 0x0f, 2);
    fold_cases(&d, WEFT_U8, C_ADD, 0x05, 2);
    fold_cases(&d, WEFT_I16, C_MAX, 0x0a, 2);
    fold_cases(&d, WEFT_I32, C_LAST, 0x0f, 2);
    diff_close(&d);
}
END_TEST

START_TEST(fold_float)
{
    diff d;
    diff_open(&d);
    seed(10);
    fold_cases(&d, WEFT_F32, C_ADD, 0xff, 3);
    fold_cases(&d, WEFT_F64, C_ADD, 0x0f, 2);
    fold_cases(&d, WEFT_F32, C_MAX, 0x03, 2);
    fold_cases(&d, WEFT_F16, C_MAX, 0x0f, 1);
    diff_close(&d);
}
END_TEST

START_TEST(fold_tuple)
{
    diff d;
    diff_open(&d);
    seed(11);
    fold_cases(&d, WEFT_I32, C_AFFINE, 0x3f, 2);
    fold_cases(&d, WEFT_F64, C_MINMAX, 0x05, 2);
    diff_close(&d);
}
END_TEST

/* A few millions of elements: every phase of the chunked reductions. */
START_TEST(fold_large)
{
    diff d;
    diff_open(&d);
    seed(12);
    const int64_t n = 3000017;
    struct {
        weft_type t;
        enum combine c;
        int mode;
        int rank;
        int64_t e[2];
    } cases[] = {
        {WEFT_I32, C_ADD, 2, 1, {n}},          /* fold_all */
        {WEFT_F32, C_ADD, 2, 1, {n}},          /* fold_all, reassociated */
        {WEFT_I32, C_AFFINE, 3, 1, {n}},       /* fold1_all, ordered tuple */
        {WEFT_F64, C_ADD, 0, 2, {2, 1500007}}, /* fold of two long rows */
        {WEFT_I64, C_ADD, 1, 2, {1000003, 3}}, /* fold1 of many short rows */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bld b = {.t = cases[k].t,
                 .rank = cases[k].rank,
                 .variant = cases[k].mode | (int)cases[k].c << 4};
        diff_build(&d, "fold large", build_fold, &b);
        weft_type leaves[2];
        int nl = combine_leaves(&b, cases[k].c, leaves);
        int64_t e[2] = {cases[k].e[0], cases[k].e[1]};
        e[cases[k].rank == 1 || e[0] > e[1] ? 0 : 1] =
            big(e[cases[k].rank == 1 || e[0] > e[1] ? 0 : 1], k < 2);
        tu_host h = tu_host_random(&rng, nl, leaves, cases[k].rank, e, 1, 0);
        int64_t per = cases[k].mode & 2
                          ? shp_size(&(shp){cases[k].rank, {e[0], e[1]}})
                          : e[cases[k].rank - 1];
        double tol = sum_tol(cases[k].t, cases[k].c, per);
        diff_run_tol(&d, &h, 1, tol, 0);
        tu_host_free(&h);
    }
    diff_close(&d);
}
END_TEST

/* fold (variant 0) or fold1 (variant 1) of affine-map composition over
 * elements that are computed, not streamed: generate (shape a) (\ix ->
 * (a ! ix).0 | 1, (a ! ix).1 + the innermost index), so that the ptx fold
 * takes its paths for computed elements (teams of lanes per row, each
 * lane a contiguous run).  The multipliers are odd, so that no product
 * vanishes and every element's place in the order shows. */
static int build_fold_computed(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type pt = pair_type(b->ctx, WEFT_I32, WEFT_I32);
    weft_acc *a = weft_param(p, pt, b->rank);
    weft_fun *g = weft_fun1(p, WEFT_DIM(b->rank));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *v = weft_at(a, ix);
    weft_exp *j = weft_get(ix, b->rank - 1);
    weft_exp *c[2] = {weft_bor(weft_get(v, 0), weft_i32(p, 1)),
                      weft_add(weft_get(v, 1), weft_convert(j, WEFT_I32))};
    weft_fun_return(g, weft_tuple(p, 2, c));
    weft_acc *src = weft_generate(weft_shape(a), g);
    weft_fun *f = fun_affine(p, b->ctx);
    res[0] = b->variant ? weft_fold1(f, src)
                        : weft_fold(f, combine_seed(b, C_AFFINE), src);
    return 1;
}

/* Rows of every kind of length over computed elements: empty, one row,
 * few long rows (cut into chunks), many short ones (a thread or a few per
 * row on the GPU), rank 3. */
START_TEST(fold_computed)
{
    diff d;
    diff_open(&d);
    seed(13);
    static const struct {
        int rank;
        int64_t e[3];
    } shapes_c[] = {
        {1, {0}},         {1, {1}},         {1, {100}},        {1, {1000003}},
        {2, {0, 5}},      {2, {5, 0}},      {2, {1, 1}},       {2, {3, 7}},
        {2, {1000, 3}},   {2, {300001, 5}}, {2, {100003, 41}}, {2, {3001, 700}},
        {2, {37, 70001}}, {2, {2, 300007}}, {3, {4, 5, 6}},    {3, {0, 3, 4}},
    };
    for (int variant = 0; variant < 2; variant++) {
        for (int rank = 1; rank <= 3; rank++) {
            bld b = {.t = WEFT_I32, .rank = rank, .variant = variant};
            diff_build(&d, "fold computed", build_fold_computed, &b);
            for (size_t i = 0; i < sizeof shapes_c / sizeof *shapes_c; i++) {
                if (shapes_c[i].rank != rank) {
                    continue;
                }
                weft_type leaves[2] = {WEFT_I32, WEFT_I32};
                tu_host h =
                    tu_host_random(&rng, 2, leaves, rank, shapes_c[i].e, 1, 0);
                weft_status st = diff_run_tol(&d, &h, 1, 0, 0);
                /* fold1 of empty rows is an error on both sides */
                if (st != WEFT_OK) {
                    ck_assert_msg(variant == 1 && st == WEFT_ERR_EMPTY_ARRAY,
                                  "%s: unexpected %s", d.what,
                                  weft_status_name(st));
                }
                tu_host_free(&h);
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* fold (+) 0 over the rows of a gather: element (r, j) is a ! (r, k ! (r,
 * j)) (i32 a and k of one shape), outside a's row where k's value is
 * negative or the row's length or more. */
static int build_fold_gather(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, 2);
    weft_acc *k = weft_param(p, WEFT_I32, 2);
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *c[2] = {weft_get(ix, 0), weft_convert(weft_at(k, ix), WEFT_I64)};
    weft_fun_return(g, weft_index(p, 2, c));
    weft_acc *src = weft_backpermute(weft_shape(a), g, a);
    res[0] = weft_fold(op2(p, WEFT_I32, weft_add), weft_i32(p, 7), src);
    return 1;
}

/* Many short rows of every length from 1 to 70: the CPU folds rows of up
 * to 63 elements W rows at a time (one row a lane, SPMD), longer ones row
 * by row.  fold and fold1 of streamed and fused (mapped) inputs on
 * integers, floats, tuples and the ordered combines (last, affine
 * composition: not commutative), 67 rows (W-row groups and a remainder)
 * and 5 (fewer than W), ranks 2 and 3.  On the CPU a row's elements go
 * through the combine in the interpreter's order, so every result is
 * compared bit for bit, f32 sums included, except the sums of rows of 64
 * or more, which the row loop reassociates (sum_tol); other backends (the
 * same test as test_ptx_diff) may reassociate every float sum. */
START_TEST(fold_short_rows)
{
    diff d;
    diff_open(&d);
    seed(17);
    static const struct {
        weft_type t;
        enum combine c;
        unsigned modes; /* build_fold's variant modes (bit m: mode m) */
    } cases[] = {
        {WEFT_I32, C_ADD, 0x33},    {WEFT_F32, C_ADD, 0x33},
        {WEFT_F64, C_MAX, 0x03},    {WEFT_I64, C_MUL, 0x03},
        {WEFT_U8, C_ADD, 0x01},     {WEFT_I32, C_LAST, 0x03},
        {WEFT_I32, C_AFFINE, 0x33}, {WEFT_F64, C_MINMAX, 0x01},
    };
    static const int64_t rows[] = {67, 5};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        for (int mode = 0; mode < 8; mode++) {
            if (!(cases[k].modes & 1u << mode)) {
                continue;
            }
            for (int rank = 2; rank <= (k < 2 ? 3 : 2); rank++) {
                bld b = {.t = cases[k].t,
                         .rank = rank,
                         .variant = mode | (int)cases[k].c << 4};
                diff_build(&d,
                           mode & 1 ? "fold1 short rows" : "fold short rows",
                           build_fold, &b);
                for (int64_t m = 1; m <= 70; m++) {
                    for (int r = 0; r < 2; r++) {
                        int64_t e[3] = {rows[r], m};
                        if (rank == 3) {
                            e[0] = 3;
                            e[1] = rows[r];
                            e[2] = m;
                        }
                        weft_type leaves[2];
                        int nl = combine_leaves(&b, cases[k].c, leaves);
                        bool mul = cases[k].c == C_MUL;
                        tu_host h = tu_host_random(&rng, nl, leaves, rank, e,
                                                   mul ? -3 : 1, mul ? 3 : 0);
                        /* the CPU's order, or a reassociated sum */
                        bool exact = DT_BACKEND == WEFT_BACKEND_CPU && m < 64;
                        double tol = exact ? 0 : sum_tol(b.t, cases[k].c, m);
                        TU_OK(diff_run_tol(&d, &h, 1, tol, tol ? 1e-6 : 0));
                        tu_host_free(&h);
                    }
                }
            }
        }
    }
    /* a gather in the rows: inside, then one element outside (the error
     * the vector rows report once, at the end of their range) */
    bld bg = {.t = WEFT_I32, .rank = 2};
    diff_build(&d, "fold of a gather, short rows", build_fold_gather, &bg);
    for (int64_t m = 1; m <= 70; m += 3) {
        int64_t e[2] = {67, m};
        tu_host h[2] = {harr1(WEFT_I32, 2, e, -9, 9),
                        harr1(WEFT_I32, 2, e, 0, m - 1)};
        diff_expect(&d, h, 2, WEFT_OK);
        harr_set_i(&h[1], 0, 40 * m + m / 2, m % 2 ? m : -1);
        diff_expect(&d, h, 2, WEFT_ERR_OUT_OF_BOUNDS);
        tu_host_free(&h[0]);
        tu_host_free(&h[1]);
    }
    /* computed elements (a generate fused into the fold) */
    for (int variant = 0; variant < 2; variant++) {
        bld b = {.t = WEFT_I32, .rank = 2, .variant = variant};
        diff_build(&d, "fold computed short rows", build_fold_computed, &b);
        for (int64_t m = 1; m <= 70; m++) {
            weft_type leaves[2] = {WEFT_I32, WEFT_I32};
            tu_host h =
                tu_host_random(&rng, 2, leaves, 2, (int64_t[]){67, m}, 1, 0);
            TU_OK(diff_run_tol(&d, &h, 1, 0, 0));
            tu_host_free(&h);
        }
    }
    diff_close(&d);
}
END_TEST

/* fold (affine) of generate (size c, size a) (\(i, j) -> (a!j | 1,
 * b!j + c!i + j)): on PTX its rows go by teams whose lanes read the
 * arrays at j from shared-memory tiles (ptx/fold.c, staged columns) and
 * c!i once per row; the combine is associative, not commutative, so the
 * order of every element shows. */
static int build_fold_staged(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *bb = weft_param(p, WEFT_I16, 1);
    weft_acc *c = weft_param(p, WEFT_I32, 1);
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *i = weft_index1(weft_get(ix, 0));
    weft_exp *j = weft_index1(weft_get(ix, 1));
    weft_exp *e[2] = {weft_bor(weft_at(a, j), weft_i32(p, 1)),
                      weft_add(weft_add(weft_convert(weft_at(bb, j), WEFT_I32),
                                        weft_at(c, i)),
                               weft_convert(weft_get(ix, 1), WEFT_I32))};
    weft_fun_return(g, weft_tuple(p, 2, e));
    weft_acc *src = weft_generate(weft_index2(weft_size(c), weft_size(a)), g);
    weft_fun *f = fun_affine(p, b->ctx);
    res[0] = b->variant ? weft_fold1(f, src)
                        : weft_fold(f, combine_seed(b, C_AFFINE), src);
    return 1;
}

/* Staged columns on rows of every kind: none, empty, one column, fewer
 * than a tile, a tile and one more, many rows (a thread each) and few
 * long ones (teams of up to 32 lanes, 8 columns a lane per tile). */
START_TEST(fold_staged)
{
    diff d;
    diff_open(&d);
    seed(17);
    static const int64_t sizes[][3] = {
        {0, 0, 5},           {5, 5, 0},        {1, 1, 1},
        {7, 9, 3},           {255, 255, 40},   {257, 300, 600},
        {3, 3, 100003},      {1000, 1000, 3},  {70001, 70001, 37},
        {300007, 300007, 2}, {513, 513, 4097},
    };
    for (int variant = 0; variant < 2; variant++) {
        bld b = {.t = WEFT_I32, .variant = variant};
        diff_build(&d, "fold staged", build_fold_staged, &b);
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            tu_host h[3] = {harr_vec(WEFT_I32, sizes[k][0], -1000, 1000),
                            harr_vec(WEFT_I16, sizes[k][1], -1000, 1000),
                            harr_vec(WEFT_I32, sizes[k][2], -1000, 1000)};
            weft_status st = diff_run_tol(&d, h, 3, 0, 0);
            /* fold1 of empty rows is an error on both sides */
            if (st != WEFT_OK) {
                ck_assert_msg(variant == 1 && st == WEFT_ERR_EMPTY_ARRAY,
                              "%s: unexpected %s", d.what,
                              weft_status_name(st));
            }
            for (int m = 0; m < 3; m++) {
                tu_host_free(&h[m]);
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* A map after a fold, which the fold takes in and applies as it stores
 * each result (lib/fuse.c, the store rule): map (\x -> get x 1 * 2 + the
 * w) (fold affine z a) (variant 0) or over fold1 (variant 1), a of rank
 * b->rank (rows of (i32, i32) pairs: the affine combine is not
 * commutative, so every element's place shows) and the map reading
 * another array (w, a unit); variant 2 also returns the fold itself, whose
 * two consumers keep it an array (the map then a kernel of its own). */
static int build_fold_store(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type t = pair_type(b->ctx, WEFT_I32, WEFT_I32);
    weft_acc *a = weft_param(p, t, b->rank);
    weft_acc *w = weft_param(p, WEFT_I32, 0);
    weft_fun *f = fun_affine(p, b->ctx);
    weft_acc *r = b->variant == 1 ? weft_fold1(f, a)
                                  : weft_fold(f, combine_seed(b, C_AFFINE), a);
    weft_fun *g = weft_fun1(p, t);
    weft_fun_return(
        g, weft_add(weft_mul(weft_get(weft_arg(g, 0), 1), weft_i32(p, 2)),
                    weft_the(w)));
    res[0] = weft_map(g, r);
    if (b->variant == 2) {
        res[1] = r;
        return 2;
    }
    return 1;
}

/* k-means' assignment in its fold form (bench/programs.h): map (\(d, j)
 * -> j) (fold nearer (inf, 0) (generate (size x, size c) (\(i, j) -> ((x!i
 * - c!j)^2, j)))), the lower j on ties; on PTX the generate's reads at j
 * are staged (ptx/fold.c) and a row of a thread starts from the seed. */
static int build_fold_store_nearest(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *x = weft_param(p, WEFT_F32, 1);
    weft_acc *c = weft_param(p, WEFT_F32, 1);
    weft_type dj = pair_type(b->ctx, WEFT_F32, WEFT_I32);
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *d = weft_sub(weft_at(x, weft_index1(weft_get(ix, 0))),
                           weft_at(c, weft_index1(weft_get(ix, 1))));
    weft_exp *e[2] = {weft_mul(d, d), weft_convert(weft_get(ix, 1), WEFT_I32)};
    weft_fun_return(g, weft_tuple(p, 2, e));
    weft_fun *near = tu_fun_nearer(p, dj);
    weft_exp *none[2] = {weft_f32(p, INFINITY), weft_i32(p, 0)};
    weft_acc *best =
        weft_fold(near, weft_tuple(p, 2, none),
                  weft_generate(weft_index2(weft_size(x), weft_size(c)), g));
    weft_fun *second = weft_fun1(p, dj);
    weft_fun_return(second, weft_get(weft_arg(second, 0), 1));
    res[0] = weft_map(second, best);
    return 1;
}

/* Whether the compiled side's plan stores a fold through a map. */
static bool plan_stores(const diff *d)
{
    char *plan = tu_plan_text(d->exe[1]);
    bool yes = plan && strstr(plan, "; map at its store") != NULL;
    free(plan);
    return yes;
}

/* The store rule against the interpreter without fusion (the fold and
 * the map as written): results of rank 0 (not taken in: the plan keeps
 * the map) to 3, rows empty (fold: z through the map; fold1: an error on
 * both sides), of one element, short (a thread a row on PTX) and long
 * (chunked rows), a fold with a second consumer (kept), and k-means'
 * nearest centre, with ties (centres repeated; small integral values, so
 * the distances are exact). */
START_TEST(fold_store)
{
    diff d;
    weft_config cfg[2] = {
        tu_cmp_config(WEFT_BACKEND_INTERP, 1, WEFT_FLAG_NO_FUSION),
        tu_cmp_config(DT_BACKEND, 3, DT_FLAGS | DT_TIER)};
    const char *names[2] = {"interp, no fusion", DT_NAME};
    tu_cmp_open(&d, 2, cfg, names);
    d.leaf_tol = DT_FAST ? fast_leaf_tol : NULL;
    seed(23);
    static const int64_t shapes[][5] = {
        /* rank, extents */
        {1, 0},          {1, 1},           {1, 100003},    {2, 0, 0},
        {2, 0, 5},       {2, 5, 0},        {2, 1, 1},      {2, 7, 3},
        {2, 1009, 16},   {2, 3, 100003},   {2, 70001, 37}, {3, 0, 2, 3},
        {3, 2, 3, 0},    {3, 5, 7, 1000},  {3, 301, 7, 9}, {4, 2, 3, 1, 5},
        {4, 3, 2, 0, 4}, {4, 4, 5, 6, 40},
    };
    for (int rank = 1; rank <= 4; rank++) {
        for (int variant = 0; variant < 3; variant++) {
            bld b = {.t = WEFT_I32, .rank = rank, .variant = variant};
            diff_build(&d, "fold store", build_fold_store, &b);
            /* taken in where the result has a rank and one consumer */
            bool stores = plan_stores(&d);
            ck_assert_msg(stores == (rank >= 2 && variant != 2),
                          "%s: the plan %s the map at the fold's store", d.what,
                          stores ? "has" : "lacks");
            for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
                const int64_t *sh = &shapes[k][1];
                if (shapes[k][0] != rank) {
                    continue;
                }
                weft_type pl[2] = {WEFT_I32, WEFT_I32};
                tu_host h[2] = {
                    tu_host_random(&rng, 2, pl, rank, sh, -1000, 1000),
                    harr1(WEFT_I32, 0, NULL, -50, 50)};
                weft_status st = diff_run(&d, h, 2);
                /* fold1 of empty rows is an error on both sides */
                int64_t n = tu_shape_size(rank, sh);
                ck_assert_msg(st == WEFT_OK || (variant == 1 && n == 0 &&
                                                st == WEFT_ERR_EMPTY_ARRAY),
                              "%s: unexpected %s", d.what,
                              weft_status_name(st));
                tu_host_free(&h[0]);
                tu_host_free(&h[1]);
            }
        }
    }
    bld b = {0};
    diff_build(&d, "fold store nearest", build_fold_store_nearest, &b);
    ck_assert_msg(plan_stores(&d), "%s: the map is not at the fold's store",
                  d.what);
    static const int64_t sizes[][2] = {{0, 16},  {5, 0},      {1, 1},
                                       {33, 16}, {70001, 16}, {1000, 300}};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        tu_host h[2] = {harr_vec(WEFT_F32, sizes[k][0], -20, 20),
                        harr_vec(WEFT_F32, sizes[k][1], -20, 20)};
        /* integral values, each centre twice: exact distances, and ties */
        float *c = h[1].data[0];
        for (int64_t i = 0; i < sizes[k][1]; i++) {
            c[i] = (float)(int)(c[i / 2 * 2]);
        }
        float *x = h[0].data[0];
        for (int64_t i = 0; i < sizes[k][0]; i++) {
            x[i] = (float)(int)x[i];
        }
        diff_run(&d, h, 2);
        tu_host_free(&h[0]);
        tu_host_free(&h[1]);
    }
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * foldSeg, fold1Seg
 * ---------------------------------------------------------------------- */

/* fold_seg / fold1_seg (variant bit 1) of combine (variant >> 4) over a
 * rank-b->rank array by an i32 (or i64: bit 2) segment vector. */
static int build_fold_seg(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    enum combine c = (enum combine)(b->variant >> 4);
    weft_type elt;
    weft_fun *f = combine_fun(b, c, &elt);
    weft_acc *a = weft_param(p, elt, b->rank);
    weft_acc *seg = weft_param(p, b->variant & 2 ? WEFT_I64 : WEFT_I32, 1);
    res[0] = b->variant & 1 ? weft_fold1_seg(f, a, seg)
                            : weft_fold_seg(f, combine_seed(b, c), a, seg);
    return 1;
}

/* Segment lengths for an innermost extent n: random lengths in [0, maxlen]
 * (in [1, maxlen] when nonempty) while they fit, so they may stop short of
 * n. */
static tu_host make_segments(weft_type t, int64_t n, int64_t maxlen,
                             bool nonempty)
{
    int64_t cap = n + 2;
    int64_t *len = malloc(sizeof *len * (size_t)cap);
    ck_assert_ptr_nonnull(len);
    int64_t m = 0, used = 0;
    while (m < cap) {
        int64_t l = tu_rng_int(&rng, nonempty ? 1 : 0, maxlen);
        if (used + l > n) {
            break;
        }
        len[m++] = l;
        used += l;
    }
    tu_host h = harr_vec(t, m, 0, 0);
    for (int64_t i = 0; i < m; i++) {
        harr_set_i(&h, 0, i, len[i]);
    }
    free(len);
    return h;
}

static void fold_seg_cases(diff *d, weft_type t, enum combine c, bool one)
{
    for (int r = 1; r <= 3; r++) {
        for (int wide = 0; wide < 2; wide++) {
            bld b = {.t = t,
                     .rank = r,
                     .variant = (one ? 1 : 0) | (wide ? 2 : 0) | (int)c << 4};
            diff_build(d, one ? "fold1_seg" : "fold_seg", build_fold_seg, &b);
            for (int i = 0; i < NSHAPES; i++) {
                const shp *s = &shapes[i];
                if (s->rank != r || (wide && s->e[r - 1] < 100)) {
                    continue;
                }
                weft_type leaves[2];
                int nl = combine_leaves(&b, c, leaves);
                int64_t maxlen = wide ? 40 : 4;
                tu_host h[2] = {tu_host_random(&rng, nl, leaves, r, s->e, 1, 0),
                                make_segments(wide ? WEFT_I64 : WEFT_I32,
                                              s->e[r - 1], maxlen, one)};
                double tol = sum_tol(t, c, maxlen);
                weft_status st = diff_run_tol(d, h, 2, tol, 0);
                ck_assert_msg(st == WEFT_OK, "%s: %s", d->what,
                              weft_status_name(st));
                tu_host_free(&h[0]);
                tu_host_free(&h[1]);
            }
        }
    }
}

START_TEST(fold_seg)
{
    diff d;
    diff_open(&d);
    seed(13);
    fold_seg_cases(&d, WEFT_I32, C_ADD, false);
    fold_seg_cases(&d, WEFT_F64, C_ADD, false);
    fold_seg_cases(&d, WEFT_F32, C_ADD, false);
    fold_seg_cases(&d, WEFT_I32, C_AFFINE, false);
    fold_seg_cases(&d, WEFT_I32, C_MAX, true);
    fold_seg_cases(&d, WEFT_I32, C_LAST, true);
    fold_seg_cases(&d, WEFT_F64, C_MINMAX, true);

    /* many segments over a long vector */
    bld b = {.t = WEFT_I64, .rank = 1, .variant = (int)C_ADD << 4};
    diff_build(&d, "fold_seg large", build_fold_seg, &b);
    int64_t m = big(1000003, true);
    tu_host h[2] = {harr_vec(WEFT_I64, m, 1, 0),
                    make_segments(WEFT_I32, m, 20, false)};
    ck_assert_int_eq(diff_run(&d, h, 2), WEFT_OK);
    tu_host_free(&h[0]);
    tu_host_free(&h[1]);
    /* one long segment */
    m = big(1000003, false);
    h[0] = harr_vec(WEFT_I64, m, 1, 0);
    h[1] = harr_vec(WEFT_I32, 1, m, m);
    ck_assert_int_eq(diff_run(&d, h, 2), WEFT_OK);
    tu_host_free(&h[0]);
    tu_host_free(&h[1]);
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * Scans
 * ---------------------------------------------------------------------- */

enum scan_kind { SCANL, SCANL1, SCANL_, SCANR, SCANR1, SCANR_ };
static const char *const scan_names[] = {"scanl", "scanl1", "scanl'",
                                         "scanr", "scanr1", "scanr'"};

/* variant: scan kind | combine << 4; bit 8: the input is a fused map. */
static int build_scan(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    enum combine c = (enum combine)((b->variant >> 4) & 15);
    weft_type elt;
    weft_fun *f = combine_fun(b, c, &elt);
    weft_acc *a = weft_param(p, elt, b->rank);
    if (b->variant & 256) {
        weft_fun *id = weft_fun1(p, elt);
        weft_fun_return(id, weft_arg(id, 0));
        a = weft_map(id, a);
    }
    weft_exp *z = combine_seed(b, c);
    switch ((enum scan_kind)(b->variant & 15)) {
    case SCANL: res[0] = weft_scanl(f, z, a); return 1;
    case SCANL1: res[0] = weft_scanl1(f, a); return 1;
    case SCANL_: res[0] = weft_scanl_(f, z, a); return 1;
    case SCANR: res[0] = weft_scanr(f, z, a); return 1;
    case SCANR1: res[0] = weft_scanr1(f, a); return 1;
    case SCANR_: res[0] = weft_scanr_(f, z, a); return 1;
    }
    return 0;
}

static void scan_cases(diff *d, weft_type t, enum combine c, int max_rank)
{
    for (int k = SCANL; k <= SCANR_; k++) {
        for (int r = 1; r <= max_rank; r++) {
            bld b = {.t = t,
                     .rank = r,
                     .variant = k | (int)c << 4 | (r == 2 ? 256 : 0)};
            diff_build(d, scan_names[k], build_scan, &b);
            for (int i = 0; i < NSHAPES; i++) {
                const shp *s = &shapes[i];
                if (s->rank != r) {
                    continue;
                }
                weft_type leaves[2];
                int nl = combine_leaves(&b, c, leaves);
                tu_host h = tu_host_random(&rng, nl, leaves, r, s->e, 1, 0);
                double tol = sum_tol(t, c, row_len(s));
                weft_status st = diff_run_tol(d, &h, 1, tol, 0);
                ck_assert_msg(st == WEFT_OK, "%s: %s", d->what,
                              weft_status_name(st));
                tu_host_free(&h);
            }
        }
    }
}

START_TEST(scan_int)
{
    diff d;
    diff_open(&d);
    seed(14);
    scan_cases(&d, WEFT_I32, C_ADD, 3);
    scan_cases(&d, WEFT_I64, C_MAX, 2);
    scan_cases(&d, WEFT_U8, C_LAST, 1);
    diff_close(&d);
}
END_TEST

START_TEST(scan_float)
{
    diff d;
    diff_open(&d);
    seed(15);
    scan_cases(&d, WEFT_F32, C_ADD, 3);
    scan_cases(&d, WEFT_F64, C_ADD, 1);
    scan_cases(&d, WEFT_F16, C_MAX, 1);
    diff_close(&d);
}
END_TEST

START_TEST(scan_tuple)
{
    diff d;
    diff_open(&d);
    seed(16);
    scan_cases(&d, WEFT_I32, C_AFFINE, 2);
    scan_cases(&d, WEFT_F64, C_MINMAX, 1);
    diff_close(&d);
}
END_TEST

START_TEST(scan_large)
{
    diff d;
    diff_open(&d);
    seed(17);
    const int64_t n = 3000017;
    struct {
        weft_type t;
        enum combine c;
        enum scan_kind k;
        int rank;
        int64_t e[2];
    } cases[] = {
        {WEFT_I32, C_ADD, SCANL1, 1, {n}},
        {WEFT_F32, C_ADD, SCANL_, 1, {n}},
        {WEFT_I32, C_AFFINE, SCANR, 1, {n}},
        {WEFT_I64, C_ADD, SCANR_, 2, {3, 1000003}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bld b = {.t = cases[k].t,
                 .rank = cases[k].rank,
                 .variant = (int)cases[k].k | (int)cases[k].c << 4};
        diff_build(&d, "scan large", build_scan, &b);
        weft_type leaves[2];
        int nl = combine_leaves(&b, cases[k].c, leaves);
        int64_t e[2] = {cases[k].e[0], cases[k].e[1]};
        e[cases[k].rank - 1] = big(e[cases[k].rank - 1], k == 0);
        tu_host h = tu_host_random(&rng, nl, leaves, cases[k].rank, e, 1, 0);
        double tol = sum_tol(cases[k].t, cases[k].c, e[cases[k].rank - 1]);
        ck_assert_int_eq(diff_run_tol(&d, &h, 1, tol, 0), WEFT_OK);
        tu_host_free(&h);
    }
    diff_close(&d);
}
END_TEST

/* 2^24 + 3 elements (a tenth in sanitizer builds): past 2^24, where an
 * index held in a float or a 32-bit grid computation would go wrong, and
 * an odd size that leaves a partial last chunk, warp and block: a map, a
 * fold_all, a fold1_all of a non-commutative tuple function, a scanl1. */
START_TEST(huge)
{
    diff d;
    diff_open(&d);
    seed(23);
    const int64_t n = big(((int64_t)1 << 24) + 3, false);
    bld bm = {.t = WEFT_I32, .rank = 1};
    diff_build(&d, "map huge", build_map, &bm);
    tu_host h = harr1(WEFT_I32, 1, (int64_t[]){n}, 1, 0);
    ck_assert_int_eq(diff_run_tol(&d, &h, 1, 0, 0), WEFT_OK);
    tu_host_free(&h);
    struct {
        weft_type t;
        enum combine c;
        int mode;
    } folds[] = {
        {WEFT_I64, C_ADD, 2}, {WEFT_F32, C_ADD, 2}, {WEFT_I32, C_AFFINE, 3}};
    for (size_t k = 0; k < sizeof folds / sizeof folds[0]; k++) {
        bld b = {.t = folds[k].t,
                 .rank = 1,
                 .variant = folds[k].mode | (int)folds[k].c << 4};
        diff_build(&d, "fold huge", build_fold, &b);
        weft_type leaves[2];
        int nl = combine_leaves(&b, folds[k].c, leaves);
        h = tu_host_random(&rng, nl, leaves, 1, (int64_t[]){n}, 1, 0);
        ck_assert_int_eq(
            diff_run_tol(&d, &h, 1, sum_tol(folds[k].t, folds[k].c, n), 0),
            WEFT_OK);
        tu_host_free(&h);
    }
    bld bs = {
        .t = WEFT_I32, .rank = 1, .variant = (int)SCANL1 | (int)C_ADD << 4};
    diff_build(&d, "scan huge", build_scan, &bs);
    h = harr1(WEFT_I32, 1, (int64_t[]){n}, 1, 0);
    ck_assert_int_eq(diff_run_tol(&d, &h, 1, 0, 0), WEFT_OK);
    tu_host_free(&h);
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * permute
 * ---------------------------------------------------------------------- */

enum pcombine {
    P_ADD,
    P_MIN,
    P_MAX,
    P_AND,
    P_OR,
    P_XOR,
    P_MUL,
    P_FIRST,
    P_SUB_ABS,
    P_PAIR
};

/* permute f (def) (\i -> bucket i or ignore) src, where the bucket is
 * idx ! i (an index array: negative means ignore); def of rank 1 (variant
 * bit 0 clear) or rank 2 (bucket split as (b / w, b % w)). */
static int build_permute(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type t = b->t;
    enum pcombine c = (enum pcombine)(b->variant >> 4);
    bool rank2 = b->variant & 1;
    weft_type elt = t;
    if (c == P_PAIR) {
        elt = pair_type(b->ctx, WEFT_I32, WEFT_F64);
    }
    weft_acc *def = weft_param(p, elt, rank2 ? 2 : 1);
    weft_acc *src = weft_param(p, elt, 1);
    weft_acc *idx = weft_param(p, WEFT_I64, 1);
    weft_fun *f = weft_fun2(p, elt, elt);
    weft_exp *x = weft_arg(f, 0), *y = weft_arg(f, 1);
    weft_exp *body = NULL;
    switch (c) {
    case P_ADD: body = weft_add(x, y); break;
    case P_MIN: body = weft_min(x, y); break;
    case P_MAX: body = weft_max(x, y); break;
    case P_AND: body = weft_band(x, y); break;
    case P_OR: body = weft_bor(x, y); break;
    case P_XOR: body = weft_bxor(x, y); break;
    case P_MUL: body = weft_mul(x, y); break;
    case P_FIRST: body = x; break;
    case P_SUB_ABS: body = weft_abs(weft_sub(x, y)); break;
    case P_PAIR: {
        weft_exp *cs[2] = {weft_add(weft_get(x, 0), weft_get(y, 0)),
                           weft_max(weft_get(x, 1), weft_get(y, 1))};
        body = weft_tuple(p, 2, cs);
        break;
    }
    }
    weft_fun_return(f, body);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *k = weft_at(idx, weft_arg(ix, 0));
    weft_exp *target;
    if (rank2) {
        weft_exp *w = weft_get(weft_shape(def), 1);
        target = weft_index2(weft_quot(k, w), weft_rem(k, w));
    } else {
        target = weft_index1(k);
    }
    weft_fun_return(ix, weft_cond(weft_lt(k, weft_i64(p, 0)),
                                  weft_ignore(p, rank2 ? 2 : 1), target));
    res[0] = weft_permute(f, def, ix, src);
    return 1;
}

/* One permute run: nsrc sources into a default of shape dsh (rank 1 or
 * 2); indices random in [-(nign), size - 1 + over]; unique targets when
 * `perm`. */
static weft_status permute_run(diff *d, weft_type t, bool pair, int rank,
                               const int64_t *dsh, int64_t nsrc, bool perm,
                               int64_t over, double tol)
{
    static const weft_type pl[2] = {WEFT_I32, WEFT_F64};
    int64_t size = rank == 1 ? dsh[0] : dsh[0] * dsh[1];
    tu_host h[3];
    if (pair) {
        h[0] = tu_host_random(&rng, 2, pl, rank, dsh, 1, 0);
        h[1] = tu_host_random(&rng, 2, pl, 1, &nsrc, 1, 0);
    } else if (t == WEFT_F32 || t == WEFT_F64) {
        h[0] = harr1(t, rank, dsh, 1, 0);
        h[1] = harr1(t, 1, &nsrc, 1, 0);
    } else {
        h[0] = harr1(t, rank, dsh, -40, 40);
        h[1] = harr1(t, 1, &nsrc, -40, 40);
        if (t == WEFT_U8 || t == WEFT_U16 || t == WEFT_U32 || t == WEFT_U64) {
            tu_host_free(&h[0]);
            tu_host_free(&h[1]);
            h[0] = harr1(t, rank, dsh, 1, 0);
            h[1] = harr1(t, 1, &nsrc, 1, 0);
        }
    }
    h[2] = harr_vec(WEFT_I64, nsrc, 0, 0);
    for (int64_t i = 0; i < nsrc; i++) {
        int64_t v;
        if (perm) {
            v = i < size ? size - 1 - i : -1;
        } else if (size == 0) {
            v = -1 - tu_rng_int(&rng, 0, 2);
        } else {
            v = tu_rng_int(&rng, -3, size - 1 + over);
        }
        harr_set_i(&h[2], 0, i, v);
    }
    weft_status s = diff_run_tol(d, h, 3, tol, 0);
    for (int k = 0; k < 3; k++) {
        tu_host_free(&h[k]);
    }
    return s;
}

START_TEST(permute)
{
    struct {
        weft_type t;
        enum pcombine c;
    } cases[] = {
        {WEFT_I32, P_ADD},
        {WEFT_I64, P_ADD},
        {WEFT_U8, P_ADD},
        {WEFT_F32, P_ADD},
        {WEFT_F64, P_ADD},
        {WEFT_I32, P_MIN},
        {WEFT_U32, P_MAX},
        {WEFT_F64, P_MAX},
        {WEFT_F32, P_MIN},
        {WEFT_I32, P_AND},
        {WEFT_I16, P_OR},
        {WEFT_I64, P_XOR},
        {WEFT_I32, P_MUL},
        {WEFT_I8, P_SUB_ABS},
        {WEFT_I32, P_PAIR},
        /* sub-word and 64-bit atomics, unsigned min (not signed), half
         * floats (no native atomic: a compare-and-swap loop) */
        {WEFT_U64, P_MIN},
        {WEFT_I8, P_MAX},
        {WEFT_I16, P_ADD},
        {WEFT_U16, P_MAX},
        {WEFT_F16, P_MAX},
    };
    static const int64_t sizes1[][2] = {{0}, {1}, {7}, {1000}};
    static const int64_t sizes2[][2] = {{0, 3}, {3, 5}, {31, 37}};
    static const int64_t nsrcs[] = {0, 1, 13, 997, 200003};
    diff d;
    diff_open(&d);
    seed(18);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        weft_type t = cases[k].t;
        bool pair = cases[k].c == P_PAIR;
        /* P_SUB_ABS is not associative: its result depends on the order
         * in which sources arrive, so it runs only with unique targets */
        bool unique = cases[k].c == P_SUB_ABS;
        for (int rank = 1; rank <= 2; rank++) {
            bld b = {.t = t, .variant = (rank == 2) | (int)cases[k].c << 4};
            diff_build(&d, "permute", build_permute, &b);
            int nsz = rank == 1 ? 4 : 3;
            for (int si = 0; si < nsz; si++) {
                const int64_t *dsh = rank == 1 ? sizes1[si] : sizes2[si];
                for (size_t ni = 0; ni < sizeof nsrcs / sizeof nsrcs[0]; ni++) {
                    int64_t nsrc = big(nsrcs[ni], k == 0);
                    /* many sources (contention, every worker) for the
                     * first cases of each kind of combine only */
                    if (nsrc > 1000 &&
                        !(k < 2 || cases[k].c == P_PAIR || t == WEFT_F32 ||
                          k == 7 || cases[k].c == P_MUL)) {
                        continue;
                    }
                    if (nsrc > 1000 && si != nsz - 1) {
                        continue;
                    }
                    /* f32 and f64 (+) arrive in any order: each target
                     * sums at most nsrc values of [-1, 1] */
                    double tol = tu_is_float(t) && cases[k].c == P_ADD
                                     ? (t == WEFT_F32 ? TOL_F32 : TOL_F64) *
                                           (double)(nsrc + 1)
                                     : 0;
                    if (pair) {
                        tol = 0; /* max on f64 is exact; add on i32 */
                    }
                    weft_status s = permute_run(&d, t, pair, rank, dsh, nsrc,
                                                unique, 0, tol);
                    ck_assert_msg(s == WEFT_OK, "%s: %s", d.what,
                                  weft_status_name(s));
                }
            }
            /* a permutation (every target once): any combine is exact */
            const int64_t *dsh = rank == 1 ? sizes1[3] : sizes2[2];
            int64_t size = rank == 1 ? dsh[0] : dsh[0] * dsh[1];
            ck_assert_int_eq(
                permute_run(&d, t, pair, rank, dsh, size, true, 0, 0), WEFT_OK);
            /* an index past the end: out of bounds on both */
            if (!unique) {
                ck_assert_int_eq(
                    permute_run(&d, t, pair, rank, dsh, 5000, false, 3, 0),
                    WEFT_ERR_OUT_OF_BOUNDS);
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * Stencils
 * ---------------------------------------------------------------------- */

/* A stencil function of n elements of type t: sum_k x_k * w_k with small
 * weights, in a fixed order (bitwise equal on both backends). */
static weft_fun *stencil_fun(weft_program *p, weft_type t, int n, int offset)
{
    weft_type ts[2 * 81] = {0};
    for (int k = 0; k < n; k++) {
        ts[k] = t;
    }
    weft_fun *f = weft_fun_create(p, n, ts);
    weft_exp *s = NULL;
    for (int k = 0; k < n; k++) {
        int w = (k * 7 + offset) % 11 - 5;
        weft_exp *term =
            weft_mul(weft_arg(f, k),
                     tu_is_float(t) ? cstf(p, t, w * 0.125) : cst(p, t, w));
        s = s ? weft_add(s, term) : term;
    }
    weft_fun_return(f, s);
    return f;
}

typedef struct stencil_case {
    int rank;
    int window[3];
    weft_boundary_kind kind;
    weft_type t;
} stencil_case;

static int build_stencil(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    const stencil_case *c = (const stencil_case *)(const void *)b->use;
    int n = 1;
    for (int d = 0; d < c->rank; d++) {
        n *= c->window[d];
    }
    weft_acc *a = weft_param(p, c->t, c->rank);
    weft_boundary bd = {c->kind, NULL};
    if (c->kind == WEFT_BOUNDARY_CONSTANT) {
        bd.value = tu_is_float(c->t) ? cstf(p, c->t, 0.75) : cst(p, c->t, 9);
    }
    if (b->variant == 0) {
        res[0] = weft_stencil(stencil_fun(p, c->t, n, 0), c->window, bd, a);
        return 1;
    }
    /* stencil2 with the first boundary on a and clamp on b */
    weft_acc *a2 = weft_param(p, c->t, c->rank);
    weft_boundary b2 = {WEFT_BOUNDARY_CLAMP, NULL};
    res[0] = weft_stencil2(stencil_fun(p, c->t, 2 * n, 3), c->window, bd, a,
                           c->window, b2, a2);
    return 1;
}

static void stencil_runs(diff *d, const stencil_case *c, bool two)
{
    static const int64_t ext1[] = {1, 2, 3, 4, 9, 10, 37, 1031};
    static const int64_t ext2[][2] = {{1, 1}, {2, 3},   {4, 4},
                                      {5, 9}, {13, 17}, {64, 67}};
    static const int64_t ext3[][3] = {
        {1, 1, 1}, {2, 3, 4}, {4, 5, 6}, {9, 10, 11}};
    int count = c->rank == 1 ? 8 : c->rank == 2 ? 6 : 4;
    for (int i = 0; i < count; i++) {
        const int64_t *e = c->rank == 1   ? &ext1[i]
                           : c->rank == 2 ? ext2[i]
                                          : ext3[i];
        /* extents below half the window are included: every boundary
         * must still read inside the array (mirror reflects again) */
        tu_host h[2];
        h[0] = harr1(c->t, c->rank, e, -20, 20);
        int64_t e2[3];
        for (int k = 0; k < c->rank; k++) {
            e2[k] = e[k] + (k == 0 ? 1 : 0);
        }
        h[1] = harr1(c->t, c->rank, e2, -20, 20);
        weft_status s = diff_run(d, h, two ? 2 : 1);
        ck_assert_msg(s == WEFT_OK, "%s: %s", d->what, weft_status_name(s));
        tu_host_free(&h[0]);
        tu_host_free(&h[1]);
    }
}

START_TEST(stencil)
{
    diff d;
    diff_open(&d);
    seed(19);
    for (int kind = 0; kind < 4; kind++) {
        for (int w = 3; w <= 9; w += 2) {
            stencil_case c = {1, {w}, (weft_boundary_kind)kind, WEFT_I32};
            bld b = {.use = (const tu_host *)(const void *)&c, .rank = 1};
            diff_build(&d, "stencil rank 1", build_stencil, &b);
            stencil_runs(&d, &c, false);
        }
        static const int win2[][2] = {{3, 3}, {5, 3}, {3, 7}};
        for (int k = 0; k < 3; k++) {
            stencil_case c = {2,
                              {win2[k][0], win2[k][1]},
                              (weft_boundary_kind)kind,
                              k == 1 ? WEFT_F32 : WEFT_I32};
            bld b = {.use = (const tu_host *)(const void *)&c,
                     .rank = 2,
                     .variant = 0};
            diff_build(&d, "stencil rank 2", build_stencil, &b);
            stencil_runs(&d, &c, false);
        }
        stencil_case c3 = {3, {3, 3, 3}, (weft_boundary_kind)kind, WEFT_F64};
        bld b3 = {.use = (const tu_host *)(const void *)&c3, .rank = 3};
        diff_build(&d, "stencil rank 3", build_stencil, &b3);
        stencil_runs(&d, &c3, false);
    }
    diff_close(&d);
}
END_TEST

/* A stencil over (i32, f32) pairs: 3x3 window, the first component summed
 * with weights, the second the maximum; every boundary (the constant is a
 * pair). */
static int build_stencil_tuple(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type t = pair_type(b->ctx, WEFT_I32, WEFT_F32);
    weft_type ts[9];
    for (int k = 0; k < 9; k++) {
        ts[k] = t;
    }
    weft_fun *f = weft_fun_create(p, 9, ts);
    weft_exp *s = weft_get(weft_arg(f, 0), 0), *m = weft_get(weft_arg(f, 0), 1);
    for (int k = 1; k < 9; k++) {
        s = weft_add(s,
                     weft_mul(weft_get(weft_arg(f, k), 0), weft_i32(p, k - 4)));
        m = weft_max(m, weft_get(weft_arg(f, k), 1));
    }
    weft_exp *c[2] = {s, m};
    weft_fun_return(f, weft_tuple(p, 2, c));
    weft_acc *a = weft_param(p, t, 2);
    weft_exp *cv[2] = {weft_i32(p, 100), weft_f32(p, 0.5f)};
    weft_boundary bd = {
        (weft_boundary_kind)b->variant,
        b->variant == WEFT_BOUNDARY_CONSTANT ? weft_tuple(p, 2, cv) : NULL};
    res[0] = weft_stencil(f, (const int[]){3, 3}, bd, a);
    return 1;
}

START_TEST(stencil_tuple)
{
    static const weft_type leaves[2] = {WEFT_I32, WEFT_F32};
    static const int64_t ext[][2] = {{1, 1}, {2, 5}, {7, 3}, {33, 65}};
    diff d;
    diff_open(&d);
    seed(26);
    for (int kind = 0; kind < 4; kind++) {
        bld b = {.rank = 2, .variant = kind};
        diff_build(&d, "stencil tuple", build_stencil_tuple, &b);
        for (int i = 0; i < 4; i++) {
            tu_host h = tu_host_random(&rng, 2, leaves, 2, ext[i], -20, 20);
            ck_assert_int_eq(diff_run(&d, &h, 1), WEFT_OK);
            tu_host_free(&h);
        }
    }
    diff_close(&d);
}
END_TEST

START_TEST(stencil2)
{
    diff d;
    diff_open(&d);
    seed(20);
    for (int kind = 0; kind < 4; kind++) {
        stencil_case c1 = {1, {5}, (weft_boundary_kind)kind, WEFT_I32};
        bld b = {
            .use = (const tu_host *)(const void *)&c1, .rank = 1, .variant = 1};
        diff_build(&d, "stencil2 rank 1", build_stencil, &b);
        stencil_runs(&d, &c1, true);
        stencil_case c2 = {2, {3, 3}, (weft_boundary_kind)kind, WEFT_F32};
        b.use = (const tu_host *)(const void *)&c2;
        b.rank = 2;
        diff_build(&d, "stencil2 rank 2", build_stencil, &b);
        stencil_runs(&d, &c2, true);
    }
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * acond, awhile, tuples of arrays
 * ---------------------------------------------------------------------- */

/* acond (the c) (map (+1) a) (scanl1 (+) a), and a tuple of arrays
 * (scan, map) returned whole and taken apart. */
static int build_acond(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *c = weft_param(p, WEFT_BOOL, 0);
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_fun *inc = weft_fun1(p, WEFT_I32);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i32(p, 1)));
    weft_acc *sc = weft_scanl1(op2(p, WEFT_I32, weft_add), a);
    res[0] = weft_acond(weft_the(c), weft_map(inc, a), sc);
    weft_acc *tup[2] = {sc, weft_map(inc, a)};
    weft_acc *t = weft_atuple(p, 2, tup);
    res[1] = weft_aget(t, 1);
    res[2] = t;
    return 3;
}

START_TEST(acond_atuple)
{
    diff d;
    diff_open(&d);
    seed(21);
    bld b = {0};
    diff_build(&d, "acond", build_acond, &b);
    for (int c = 0; c < 2; c++) {
        for (int64_t n = 0; n < 40; n += 13) {
            tu_host h[2] = {harr1(WEFT_BOOL, 0, NULL, c, c),
                            harr_vec(WEFT_I32, n, 1, 0)};
            harr_set_i(&h[0], 0, 0, c);
            diff_run(&d, h, 2);
            tu_host_free(&h[0]);
            tu_host_free(&h[1]);
        }
    }
    diff_close(&d);
}
END_TEST

/* awhile over a tuple of arrays (a, n): replace a by map (2x + 1) a and n
 * by n + 1 while n < 20 and the sum of a (fold_all, seed 1) is below a
 * limit given at run time. */
static int build_awhile(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I64, b->rank);
    weft_acc *lim = weft_param(p, WEFT_I64, 0);
    weft_acc *init[2] = {a, weft_unit(weft_i32(p, 0))};
    weft_acc *state = weft_atuple(p, 2, init);
    weft_afun *cond = weft_afun_like(state);
    weft_acc *cx = weft_afun_arg(cond);
    weft_acc *sum = weft_fold_all(op2(p, WEFT_I64, weft_add), weft_i64(p, 1),
                                  weft_aget(cx, 0));
    weft_afun_return(
        cond,
        weft_unit(weft_and(weft_lt(weft_the(weft_aget(cx, 1)), weft_i32(p, 20)),
                           weft_lt(weft_the(sum), weft_the(lim)))));
    weft_afun *body = weft_afun_like(state);
    weft_acc *bx = weft_afun_arg(body);
    weft_fun *step = weft_fun1(p, WEFT_I64);
    weft_fun_return(step, weft_add(weft_mul(weft_arg(step, 0), weft_i64(p, 2)),
                                   weft_i64(p, 1)));
    weft_acc *next[2] = {
        weft_map(step, weft_aget(bx, 0)),
        weft_unit(weft_add(weft_the(weft_aget(bx, 1)), weft_i32(p, 1)))};
    weft_afun_return(body, weft_atuple(p, 2, next));
    res[0] = weft_awhile(cond, body, state);
    return 1;
}

START_TEST(awhile)
{
    diff d;
    diff_open(&d);
    seed(22);
    for (int r = 0; r <= 3; r++) {
        bld b = {.rank = r};
        diff_build(&d, "awhile", build_awhile, &b);
        for (int i = 0; i < NSHAPES; i++) {
            if (shapes[i].rank != r || shp_size(&shapes[i]) > 5000) {
                continue;
            }
            tu_host h[2] = {harr1(WEFT_I64, r, shapes[i].e, 0, 5),
                            harr1(WEFT_I64, 0, NULL, 100000, 100000)};
            diff_run(&d, h, 2);
            tu_host_free(&h[0]);
            tu_host_free(&h[1]);
        }
    }
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * Scalar primitives inside kernels
 * ---------------------------------------------------------------------- */

/* One map per group of primitives on type t, over two arguments x and y
 * drawn from a safe domain (no division by zero, shifts below the width,
 * conversions in range). variant selects the group. */
static int build_prims(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_type t = b->t;
    weft_acc *xa = weft_param(p, t, 1), *ya = weft_param(p, t, 1);
    weft_fun *f = weft_fun2(p, t, t);
    weft_exp *x = weft_arg(f, 0), *y = weft_arg(f, 1);
    int n = 0;
    weft_exp *c[18];
    if (is_int(t)) {
        int width = (int)weft_type_size(t) * 8;
        weft_exp *nz = weft_cond(weft_eq(y, cst(p, t, 0)), cst(p, t, 1), y);
        weft_exp *sh = weft_band(y, cst(p, t, width - 1));
        switch (b->variant) {
        case 0:
            c[n++] = weft_quot(x, nz);
            c[n++] = weft_rem(x, nz);
            c[n++] = weft_idiv(x, nz);
            c[n++] = weft_mod(x, nz);
            c[n++] = weft_abs(x);
            c[n++] = weft_signum(x);
            c[n++] = weft_neg(x);
            c[n++] = weft_min(x, y);
            break;
        case 1:
            c[n++] = weft_shl(x, sh);
            c[n++] = weft_shr(x, sh);
            c[n++] = weft_rotl(x, y);
            c[n++] = weft_rotr(x, y);
            c[n++] = weft_bnot(x);
            c[n++] = weft_convert(weft_popcount(x), t);
            c[n++] = weft_convert(weft_clz(x), t);
            c[n++] = weft_convert(weft_ctz(x), t);
            break;
        default:
            c[n++] = weft_convert(weft_convert(x, WEFT_F64), t);
            c[n++] = weft_convert(weft_convert(x, WEFT_I8), t);
            c[n++] = weft_convert(weft_convert(x, WEFT_U64), t);
            c[n++] = weft_convert(weft_lt(x, y), t);
            c[n++] = weft_convert(weft_ge(x, y), t);
            c[n++] = weft_convert(
                weft_and(weft_ne(x, y), weft_le(x, cst(p, t, 0))), t);
            c[n++] = weft_convert(weft_convert(x, WEFT_F32), t);
            c[n++] = weft_convert(weft_convert(x, WEFT_BOOL), t);
            break;
        }
    } else {
        switch (b->variant) {
        case 0:
            c[n++] = weft_fdiv(x, y);
            c[n++] = weft_abs(x);
            c[n++] = weft_signum(x);
            c[n++] = weft_sqrt(weft_abs(x));
            c[n++] = weft_min(x, y);
            c[n++] = weft_max(x, y);
            c[n++] = weft_convert(
                weft_floor(weft_mul(x, cstf(p, t, 100)), WEFT_I32), t);
            c[n++] = weft_convert(
                weft_ceiling(weft_mul(x, cstf(p, t, 100)), WEFT_I64), t);
            c[n++] = weft_convert(
                weft_round(weft_mul(x, cstf(p, t, 2)), WEFT_I16), t);
            c[n++] = weft_convert(
                weft_truncate(weft_mul(x, cstf(p, t, 100)), WEFT_I32), t);
            c[n++] = weft_convert(weft_isnan(weft_fdiv(x, x)), t);
            c[n++] = weft_convert(weft_isinf(weft_fdiv(y, cstf(p, t, 0))), t);
            break;
        default:
            /* libm through intrinsics or calls: see the tolerance */
            c[n++] = weft_fexp(x);
            c[n++] = weft_log(weft_abs(x));
            c[n++] = weft_sin(x);
            c[n++] = weft_cos(x);
            c[n++] = weft_tan(x);
            c[n++] = weft_asin(x);
            c[n++] = weft_acos(x);
            c[n++] = weft_atan(x);
            c[n++] = weft_tanh(x);
            c[n++] = weft_atan2(x, y);
            c[n++] = weft_pow(weft_abs(x), y);
            c[n++] = weft_asinh(x);
            c[n++] = weft_sinh(x);
            c[n++] = weft_cosh(x);
            c[n++] = weft_atanh(weft_mul(x, cstf(p, t, 0.5)));
            c[n++] = weft_acosh(weft_add(weft_abs(x), cstf(p, t, 1)));
            c[n++] = weft_expm1(x);
            c[n++] = weft_log1p(weft_abs(x));
            break;
        }
    }
    weft_fun_return(f, weft_tuple(p, n, c));
    res[0] = weft_zipwith(f, xa, ya);
    return 1;
}

START_TEST(prims)
{
    static const weft_type types[] = {WEFT_I8,  WEFT_I16, WEFT_I32, WEFT_I64,
                                      WEFT_U8,  WEFT_U16, WEFT_U32, WEFT_U64,
                                      WEFT_F32, WEFT_F64};
    diff d;
    diff_open(&d);
    seed(23);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        weft_type t = types[ti];
        int groups = tu_is_float(t) ? 2 : 3;
        for (int g = 0; g < groups; g++) {
            bld b = {.t = t, .variant = g};
            diff_build(&d, "prims", build_prims, &b);
            for (int64_t n = 1; n <= 1001; n += 500) {
                tu_host h[2] = {harr_vec(t, n, 1, 0), harr_vec(t, n, 1, 0)};
                /* the transcendental functions may reach libm by another
                 * path in compiled code (an intrinsic, a vector call):
                 * a few ulps, as in test_codegen.c */
                bool trans = tu_is_float(t) && g == 1;
                double rtol = !trans ? 0 : t == WEFT_F32 ? 4e-7 : 1e-15;
                diff_run_tol(&d, h, 2, rtol, rtol);
                tu_host_free(&h[0]);
                tu_host_free(&h[1]);
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * The programs of test_programs.c
 * ---------------------------------------------------------------------- */

static int build_dotp(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *xs = weft_param(p, b->t, 1), *ys = weft_param(p, b->t, 1);
    res[0] = tu_prog_dotp(p, b->t, xs, ys);
    return 1;
}

static int build_saxpy(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *alpha = weft_param(p, WEFT_F32, 0);
    weft_acc *xs = weft_param(p, WEFT_F32, 1), *ys = weft_param(p, WEFT_F32, 1);
    res[0] = tu_prog_saxpy(p, alpha, xs, ys);
    return 1;
}

static int build_black_scholes(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *price = weft_param(p, WEFT_F32, 1);
    weft_acc *strike = weft_param(p, WEFT_F32, 1);
    weft_acc *years = weft_param(p, WEFT_F32, 1);
    res[0] = tu_prog_black_scholes(p, price, strike, years);
    return 1;
}

static int build_smvm(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *segd = weft_param(p, WEFT_I32, 1);
    weft_acc *cols = weft_param(p, WEFT_I32, 1);
    weft_acc *vals = weft_param(p, WEFT_F64, 1);
    weft_acc *xv = weft_param(p, WEFT_F64, 1);
    res[0] = tu_prog_smvm(p, segd, cols, vals, xv);
    return 1;
}

static int build_histogram(bld *b, weft_acc **res)
{
    res[0] = tu_prog_histogram(b->p, weft_param(b->p, WEFT_I32, 1));
    return 1;
}

static int build_filter(bld *b, weft_acc **res)
{
    res[0] = tu_prog_filter(b->p, weft_param(b->p, WEFT_I32, 1));
    return 1;
}

static int build_jacobi(bld *b, weft_acc **res)
{
    res[0] = tu_prog_jacobi(b->p, weft_param(b->p, WEFT_F64, 2), 4);
    return 1;
}

static int build_newton(bld *b, weft_acc **res)
{
    res[0] = tu_prog_newton(b->p, weft_param(b->p, WEFT_F64, 1));
    return 1;
}

static int build_collatz(bld *b, weft_acc **res)
{
    weft_acc *na = weft_param(b->p, WEFT_I64, 0);
    res[0] = tu_prog_collatz(b->p, b->ctx, weft_the(na));
    return 1;
}

/* generate (size v) (\i -> while (j < size a) (j + 1, s + a!j * v!i +
 * v!(size v - 1 - i) - j) (0, 0)): the reads of v do not change from
 * trip to trip (codegen takes them out of the loop), and an empty a runs
 * no trip.  (Reads outside an array are errors for the interpreter.) */
static int build_while_reads(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I64, 1), *v = weft_param(p, WEFT_I64, 1);
    weft_type st = pair_type(b->ctx, WEFT_I64, WEFT_I64);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_exp *one = weft_i64(p, 1);
    weft_fun *cond = weft_fun1(p, st);
    weft_fun_return(cond,
                    weft_lt(weft_get(weft_arg(cond, 0), 0), weft_size(a)));
    weft_fun *body = weft_fun1(p, st);
    weft_exp *j = weft_get(weft_arg(body, 0), 0);
    weft_exp *mirror = weft_sub(weft_sub(weft_size(v), one), i);
    weft_exp *term = weft_sub(weft_add(weft_mul(weft_at(a, weft_index1(j)),
                                                weft_at(v, weft_index1(i))),
                                       weft_at(v, weft_index1(mirror))),
                              j);
    weft_exp *next[2] = {weft_add(j, one),
                         weft_add(weft_get(weft_arg(body, 0), 1), term)};
    weft_fun_return(body, weft_tuple(p, 2, next));
    weft_exp *init[2] = {weft_i64(p, 0), weft_i64(p, 0)};
    weft_fun_return(
        g, weft_get(weft_while(cond, body, weft_tuple(p, 2, init)), 1));
    res[0] = weft_generate(weft_shape(v), g);
    return 1;
}

/* generate (shape c) (\i -> while (j < size a) (j + 1,
 *     s * 3 + a!j + snd (b!j) - 2 snd (b!!j) + c!i,
 *     t + fst (b!j) * (i + 1) - j) (j0, 0, 0)), j0 = 0 or size a / 3:
 * the loop that codegen/stage.c stages on PTX (tiles of the reads at j of
 * a and of the pair array b, its leaves of 8, 4 and 2 bytes, one of them
 * read twice, once linearly), with integer arithmetic that depends on
 * the order of the trips, so that results must be equal.  b is as long
 * as a or longer (reads outside are errors for the interpreter). */
static int build_while_staged(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *pb = weft_param(p, pair_type(b->ctx, WEFT_I64, WEFT_I16), 1);
    weft_acc *c = weft_param(p, WEFT_I32, 1);
    weft_type st =
        weft_type_tuple(b->ctx, 3, (weft_type[]){WEFT_I64, WEFT_I32, WEFT_I64});
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_fun *cond = weft_fun1(p, st);
    weft_fun_return(cond,
                    weft_lt(weft_get(weft_arg(cond, 0), 0), weft_size(a)));
    weft_fun *body = weft_fun1(p, st);
    weft_exp *s = weft_arg(body, 0);
    weft_exp *j = weft_get(s, 0);
    weft_exp *bj = weft_at(pb, weft_index1(j));
    weft_exp *lin = weft_at_linear(pb, j);
    weft_exp *s1 = weft_add(
        weft_add(weft_add(weft_mul(weft_get(s, 1), weft_i32(p, 3)),
                          weft_at(a, weft_index1(j))),
                 weft_sub(weft_convert(weft_get(bj, 1), WEFT_I32),
                          weft_mul(weft_convert(weft_get(lin, 1), WEFT_I32),
                                   weft_i32(p, 2)))),
        weft_at(c, weft_index1(i)));
    weft_exp *s2 = weft_sub(
        weft_add(weft_get(s, 2),
                 weft_mul(weft_get(bj, 0), weft_add(i, weft_i64(p, 1)))),
        j);
    weft_exp *next[3] = {weft_add(j, weft_i64(p, 1)), s1, s2};
    weft_fun_return(body, weft_tuple(p, 3, next));
    weft_exp *j0 =
        b->variant ? weft_quot(weft_size(a), weft_i64(p, 3)) : weft_i64(p, 0);
    weft_exp *init[3] = {j0, weft_i32(p, 0), weft_i64(p, 0)};
    weft_exp *r = weft_while(cond, body, weft_tuple(p, 3, init));
    weft_exp *out[2] = {weft_get(r, 1), weft_get(r, 2)};
    weft_fun_return(g, weft_tuple(p, 2, out));
    res[0] = weft_generate(weft_shape(c), g);
    return 1;
}

/* awhile over (a, n), a an i32 vector of m elements and n from 0: while
 * n < lim, a = map (+1) (op a) and n = n + 1, where op touches element n
 * of a: variant & 1, a permute (+) of one 1 into a at n; else a
 * backpermute reading a ! n everywhere.  The body fails
 * (WEFT_ERR_OUT_OF_BOUNDS) when n reaches m: in a real iteration when
 * lim > m, only in the one after the last when lim == m (the interpreter
 * never runs it; on a device the walker queues it before it knows the
 * condition, and what it reports must not count: lib/interp.c,
 * "Speculation").  variant & 2: the condition is a kernel (map over n),
 * else a host term (unit (the n < the lim)): the two orders of
 * speculation.  variant & 4 (with a permute): 520 permutes in a row,
 * more than the GPU holds reports of at once (runtime-gpu/backend.c,
 * HELD_MAX 512), so that it reads them inside a speculative body. */
static int build_awhile_fail(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *lim = weft_param(p, WEFT_I32, 0);
    weft_acc *init[2] = {a, weft_unit(weft_i32(p, 0))};
    weft_acc *state = weft_atuple(p, 2, init);
    weft_afun *cond = weft_afun_like(state);
    weft_acc *cx = weft_afun_arg(cond);
    if (b->variant & 2) {
        weft_fun *below = weft_fun1(p, WEFT_I32);
        weft_fun_return(below, weft_lt(weft_arg(below, 0), weft_the(lim)));
        weft_afun_return(cond, weft_map(below, weft_aget(cx, 1)));
    } else {
        weft_afun_return(cond, weft_unit(weft_lt(weft_the(weft_aget(cx, 1)),
                                                 weft_the(lim))));
    }
    weft_afun *body = weft_afun_like(state);
    weft_acc *bx = weft_afun_arg(body);
    weft_acc *ba = weft_aget(bx, 0);
    weft_exp *n = weft_the(weft_aget(bx, 1));
    weft_fun *at_n = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(at_n, weft_index1(weft_convert(n, WEFT_I64)));
    weft_acc *op;
    if (b->variant & 1) {
        weft_fun *one = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(one, weft_i32(p, 1));
        op = ba;
        for (int i = 0; i < (b->variant & 4 ? 520 : 1); i++) {
            op = weft_permute(op2(p, WEFT_I32, weft_add), op, at_n,
                              weft_generate(weft_index1(weft_i64(p, 1)), one));
        }
    } else {
        op = weft_backpermute(weft_shape(ba), at_n, ba);
    }
    weft_fun *inc = weft_fun1(p, WEFT_I32);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i32(p, 1)));
    weft_acc *next[2] = {weft_map(inc, op),
                         weft_unit(weft_add(n, weft_i32(p, 1)))};
    weft_afun_return(body, weft_atuple(p, 2, next));
    weft_acc *r = weft_awhile(cond, body, state);
    res[0] = weft_aget(r, 0);
    res[1] = weft_aget(r, 1);
    return 2;
}

/* Run d's case on a (m random elements) and lim; expect `want`. */
static void awhile_fail_run(diff *d, int64_t m, int64_t lim, weft_status want)
{
    tu_host h[2] = {harr_vec(WEFT_I32, m, -50, 50),
                    harr1(WEFT_I32, 0, NULL, lim, lim)};
    diff_expect(d, h, 2, want);
    tu_host_free(&h[0]);
    tu_host_free(&h[1]);
}

START_TEST(awhile_fail)
{
    diff d;
    diff_open(&d);
    seed(26);
    static const int64_t ms[] = {0, 1, 5, 33};
    for (int v = 0; v < 4; v++) {
        bld b = {.variant = v};
        diff_build(&d, "awhile fail", build_awhile_fail, &b);
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            int64_t m = ms[i];
            /* 0, 1 and many iterations; the body of the iteration after
             * the last fails when lim == m (a backpermute of nothing
             * reads nothing: m == 0 never fails without a permute) */
            int64_t lims[] = {0, 1, m - 1, m, m + 1, m + 4};
            for (size_t k = 0; k < sizeof lims / sizeof *lims; k++) {
                int64_t lim = lims[k];
                if (lim < 0) {
                    continue;
                }
                bool fails = lim > m && (m > 0 || (v & 1));
                awhile_fail_run(&d, m, lim,
                                fails ? WEFT_ERR_OUT_OF_BOUNDS : WEFT_OK);
            }
        }
        if (v & 1) {
            /* more permutes than the GPU holds reports of at once
             * (runtime-gpu/backend.c, HELD_MAX 512) */
            awhile_fail_run(&d, 700, 700, WEFT_OK);
            awhile_fail_run(&d, 700, 703, WEFT_ERR_OUT_OF_BOUNDS);
        }
    }
    for (int v = 5; v <= 7; v += 2) {
        bld b = {.variant = v};
        diff_build(&d, "awhile fail", build_awhile_fail, &b);
        awhile_fail_run(&d, 3, 3, WEFT_OK);
        awhile_fail_run(&d, 3, 4, WEFT_ERR_OUT_OF_BOUNDS);
    }
    diff_close(&d);
}
END_TEST

/* awhile over (a, n[, s]) from (a, 0[, 0]) while n < lim: a[i] += K
 * where K = lim - 1 - n is counted by a scalar while loop (k from 0
 * while k != K), n += 1.  On the state after the last iteration K is -1
 * and the loop never ends: the interpreter never runs that body; on a
 * device it is queued before its flag is known and must be stopped, not
 * waited for (runtime-gpu/cuda.c, "Speculation").  variant 1 adds s =
 * the (fold_all (+) 0 a) + 1, read on the host inside the body, after
 * the loop kernel: a wait that spoils the speculation (the body, if it
 * counts, runs again). */
static int build_awhile_loop(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *lim = weft_param(p, WEFT_I32, 0);
    int ns = b->variant ? 3 : 2;
    weft_acc *init[3] = {a, weft_unit(weft_i32(p, 0)),
                         weft_unit(weft_i32(p, 0))};
    weft_acc *state = weft_atuple(p, ns, init);
    weft_afun *cond = weft_afun_like(state);
    weft_afun_return(
        cond, weft_unit(weft_lt(weft_the(weft_aget(weft_afun_arg(cond), 1)),
                                weft_the(lim))));
    weft_afun *body = weft_afun_like(state);
    weft_acc *bx = weft_afun_arg(body);
    weft_acc *ba = weft_aget(bx, 0);
    weft_exp *n = weft_the(weft_aget(bx, 1));
    weft_exp *K = weft_convert(
        weft_sub(weft_sub(weft_the(lim), n), weft_i32(p, 1)), WEFT_I64);
    weft_fun *wc = weft_fun1(p, WEFT_I64);
    weft_fun_return(wc, weft_ne(weft_arg(wc, 0), K));
    weft_fun *wb = weft_fun1(p, WEFT_I64);
    weft_fun_return(wb, weft_add(weft_arg(wb, 0), weft_i64(p, 1)));
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(g, weft_add(weft_at(ba, weft_arg(g, 0)),
                                weft_convert(weft_while(wc, wb, weft_i64(p, 0)),
                                             WEFT_I32)));
    weft_acc *na = weft_generate(weft_shape(ba), g);
    weft_acc *next[3] = {
        na, weft_unit(weft_add(n, weft_i32(p, 1))),
        weft_unit(weft_add(weft_the(weft_fold_all(op2(p, WEFT_I32, weft_add),
                                                  weft_i32(p, 0), na)),
                           weft_i32(p, 1)))};
    weft_afun_return(body, weft_atuple(p, ns, next));
    weft_acc *r = weft_awhile(cond, body, state);
    for (int i = 0; i < ns; i++) {
        res[i] = weft_aget(r, i);
    }
    return ns;
}

START_TEST(awhile_loop)
{
    diff d;
    diff_open(&d);
    seed(28);
    for (int v = 0; v < 2; v++) {
        bld b = {.variant = v};
        diff_build(&d, "awhile loop", build_awhile_loop, &b);
        static const int64_t ms[] = {0, 1, 100};
        static const int64_t lims[] = {0, 1, 4};
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            for (size_t k = 0; k < sizeof lims / sizeof *lims; k++) {
                awhile_fail_run(&d, ms[i], lims[k], WEFT_OK);
            }
        }
    }
    diff_close(&d);
}
END_TEST

/* reshape (index1 len) (permute (+) a (\_ -> index1 t) [1]): the permute
 * fails when t is outside a, the reshape when len is not a's size; the
 * permute's report wins, as it comes first (the GPU reads it at the end
 * of the run: runtime-gpu/backend.c, "Held reports"). */
static int build_permute_first(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *t = weft_param(p, WEFT_I64, 0);
    weft_acc *len = weft_param(p, WEFT_I64, 0);
    weft_fun *to = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(to, weft_index1(weft_the(t)));
    weft_fun *one = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(one, weft_i32(p, 1));
    weft_acc *perm =
        weft_permute(op2(p, WEFT_I32, weft_add), a, to,
                     weft_generate(weft_index1(weft_i64(p, 1)), one));
    res[0] = weft_reshape(weft_index1(weft_the(len)), perm);
    return 1;
}

START_TEST(permute_report_first)
{
    diff d;
    diff_open(&d);
    seed(27);
    bld b = {0};
    diff_build(&d, "permute first", build_permute_first, &b);
    static const struct {
        int64_t t, len;
        weft_status want;
    } runs[] = {
        {3, 10, WEFT_OK},
        {10, 10, WEFT_ERR_OUT_OF_BOUNDS},
        {3, 7, WEFT_ERR_RESHAPE_SIZE},
        {-1, 7, WEFT_ERR_OUT_OF_BOUNDS},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        tu_host h[3] = {harr_vec(WEFT_I32, 10, -5, 5),
                        harr1(WEFT_I64, 0, NULL, runs[i].t, runs[i].t),
                        harr1(WEFT_I64, 0, NULL, runs[i].len, runs[i].len)};
        diff_expect(&d, h, 3, runs[i].want);
        if (runs[i].want == WEFT_ERR_OUT_OF_BOUNDS) {
            /* the report names the permute, as rt_exec words it */
            weft_array *a[3], *out[1] = {NULL};
            for (int k = 0; k < 3; k++) {
                a[k] = tu_host_array(d.ctx[1], &h[k]);
            }
            ck_assert_int_eq(weft_run(d.exe[1], a, 3, out, 1),
                             WEFT_ERR_OUT_OF_BOUNDS);
            ck_assert_msg(strstr(weft_last_error(),
                                 "permute writes outside its result "
                                 "(kernel") != NULL,
                          "%s", weft_last_error());
            ck_assert_ptr_null(out[0]);
            tu_release_all(a, 3);
        }
        for (int k = 0; k < 3; k++) {
            tu_host_free(&h[k]);
        }
    }
    diff_close(&d);
}
END_TEST

/* Two rounds of an awhile over (x, rounds): x' = zipWith (+) (generate
 * (shape x) (\i -> while (j < size x) (j + 1, s * 3 + x!j + i) (0, 0)))
 * (fold (+) 0 (generate (size x, size x) (\(i, j) -> x!j * (i + 1)))):
 * both staged forms (a while loop, a fold of a generate) reading at j an
 * array that is a variable of the kernel, the awhile's state (k-means'
 * centroids). */
static int build_awhile_staged(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *init[2] = {a, weft_unit(weft_i32(p, 0))};
    weft_acc *s0 = weft_atuple(p, 2, init);
    weft_afun *cond = weft_afun_like(s0);
    weft_afun_return(
        cond, weft_unit(weft_lt(weft_the(weft_aget(weft_afun_arg(cond), 1)),
                                weft_i32(p, 2))));
    weft_afun *body = weft_afun_like(s0);
    weft_acc *s = weft_afun_arg(body), *x = weft_aget(s, 0);
    weft_type st = pair_type(b->ctx, WEFT_I64, WEFT_I32);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_fun *wc = weft_fun1(p, st);
    weft_fun_return(wc, weft_lt(weft_get(weft_arg(wc, 0), 0), weft_size(x)));
    weft_fun *wb = weft_fun1(p, st);
    weft_exp *j = weft_get(weft_arg(wb, 0), 0);
    weft_exp *next[2] = {
        weft_add(j, weft_i64(p, 1)),
        weft_add(
            weft_add(weft_mul(weft_get(weft_arg(wb, 0), 1), weft_i32(p, 3)),
                     weft_at(x, weft_index1(j))),
            weft_convert(i, WEFT_I32))};
    weft_fun_return(wb, weft_tuple(p, 2, next));
    weft_exp *w0[2] = {weft_i64(p, 0), weft_i32(p, 0)};
    weft_fun_return(g, weft_get(weft_while(wc, wb, weft_tuple(p, 2, w0)), 1));
    weft_acc *x1 = weft_generate(weft_shape(x), g);
    weft_fun *h = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(h, 0);
    weft_fun_return(
        h, weft_mul(weft_at(x, weft_index1(weft_get(ix, 1))),
                    weft_convert(weft_add(weft_get(ix, 0), weft_i64(p, 1)),
                                 WEFT_I32)));
    weft_acc *x2 =
        weft_fold(op2(p, WEFT_I32, weft_add), weft_i32(p, 0),
                  weft_generate(weft_index2(weft_size(x), weft_size(x)), h));
    weft_acc *out[2] = {
        weft_zipwith(op2(p, WEFT_I32, weft_add), x1, x2),
        weft_unit(weft_add(weft_the(weft_aget(s, 1)), weft_i32(p, 1)))};
    weft_afun_return(body, weft_atuple(p, 2, out));
    res[0] = weft_aget(weft_awhile(cond, body, s0), 0);
    return 1;
}

/* The staged loop (build_while_staged) on loops of no trip, fewer than a
 * tile (256 on PTX), a tile and one more, two tiles (from size a / 3, a
 * tile and a partial one), several tiles and a partial one, from 0 and
 * from size a / 3; results of no element, of fewer than
 * a block, and of more elements than the grid has threads (the blocks
 * run the chunk loop together, past the end too). */
START_TEST(while_staged)
{
    diff d;
    diff_open(&d);
    seed(31);
    static const int64_t lens[][3] = {
        {0, 0, 5},         {5, 5, 0},       {1, 4, 3},        {100, 100, 70},
        {255, 300, 1},     {256, 256, 256}, {257, 257, 1000}, {512, 512, 300},
        {1000, 1003, 999}, {7, 7, 600001},
    };
    for (int v = 0; v < 2; v++) {
        bld b = {.variant = v};
        diff_build(&d, "while staged", build_while_staged, &b);
        for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
            weft_type pl[2] = {WEFT_I64, WEFT_I16};
            tu_host h[3] = {
                harr_vec(WEFT_I32, lens[k][0], -1000, 1000),
                tu_host_random(&rng, 2, pl, 1, &lens[k][1], -1000, 1000),
                harr_vec(WEFT_I32, lens[k][2], -1000, 1000)};
            diff_run(&d, h, 3);
            for (int m = 0; m < 3; m++) {
                tu_host_free(&h[m]);
            }
        }
    }
    bld b = {0};
    diff_build(&d, "awhile staged", build_awhile_staged, &b);
    static const int64_t sizes[] = {0, 1, 300, 1001};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        tu_host h = harr_vec(WEFT_I32, sizes[k], -1000, 1000);
        diff_run(&d, &h, 1);
        tu_host_free(&h);
    }
    diff_close(&d);
}
END_TEST

/* generate (n / 3) (\k -> from_index (|x!3k+1| >> 20 + 1, |x!3k+2| >> 40 +
 * 1, 7) (x!3k)) folded to one i64: indices of every sign and size (on
 * PTX, cg_from_index divides in 32 bits where it can and otherwise by a
 * loop: both paths). */
static int build_from_index_wide(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *x = weft_param(p, WEFT_I64, 1);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *k3 = weft_mul(weft_get(weft_arg(g, 0), 0), weft_i64(p, 3));
    weft_exp *at[3];
    for (int j = 0; j < 3; j++) {
        at[j] = weft_at(x, weft_index1(weft_add(k3, weft_i64(p, j))));
    }
    weft_exp *sh[3] = {
        weft_add(weft_prim2(WEFT_OP_SHR, weft_abs(at[1]), weft_i64(p, 20)),
                 weft_i64(p, 1)),
        weft_add(weft_prim2(WEFT_OP_SHR, weft_abs(at[2]), weft_i64(p, 40)),
                 weft_i64(p, 1)),
        weft_i64(p, 7)};
    weft_exp *ix = weft_from_index(weft_index(p, 3, sh), at[0]);
    weft_exp *r =
        weft_add(weft_add(weft_mul(weft_get(ix, 0), weft_i64(p, 1000003)),
                          weft_mul(weft_get(ix, 1), weft_i64(p, 1009))),
                 weft_get(ix, 2));
    weft_fun_return(g, r);
    res[0] =
        weft_generate(weft_index1(weft_quot(weft_size(x), weft_i64(p, 3))), g);
    return 1;
}

/* The programs, each on a few sizes; fusion on (flags 0) and off. */
static void programs_with(unsigned flags)
{
    diff d;
    diff_open_flags(&d, flags);
    seed(24);
    static const int64_t sizes[] = {0, 1, 1000, 100003};
    for (int t = 0; t < 2; t++) {
        bld b = {.t = t ? WEFT_F64 : WEFT_F32};
        diff_build(&d, "dotp", build_dotp, &b);
        for (int k = 0; k < 4; k++) {
            tu_host h[2] = {harr_vec(b.t, sizes[k], 1, 0),
                            harr_vec(b.t, sizes[k], 1, 0)};
            double tol = (t ? TOL_F64 : TOL_F32) * (double)(sizes[k] + 1);
            diff_run_tol(&d, h, 2, tol, 0);
            tu_host_free(&h[0]);
            tu_host_free(&h[1]);
        }
    }
    bld b = {0};
    diff_build(&d, "saxpy", build_saxpy, &b);
    for (int k = 0; k < 4; k++) {
        tu_host h[3] = {harr1(WEFT_F32, 0, NULL, 1, 0),
                        harr_vec(WEFT_F32, sizes[k], 1, 0),
                        harr_vec(WEFT_F32, sizes[k] + 3, 1, 0)};
        diff_run(&d, h, 3);
        for (int i = 0; i < 3; i++) {
            tu_host_free(&h[i]);
        }
    }
    diff_build(&d, "black-scholes", build_black_scholes, &b);
    for (int k = 0; k < 4; k++) {
        tu_host h[3] = {harr_vec(WEFT_F32, sizes[k], 5, 30),
                        harr_vec(WEFT_F32, sizes[k], 1, 100),
                        harr_vec(WEFT_F32, sizes[k], 1, 10)};
        /* exp and log may take another path to libm in compiled code */
        diff_run_tol(&d, h, 3, 1e-5, 1e-5);
        for (int i = 0; i < 3; i++) {
            tu_host_free(&h[i]);
        }
    }
    diff_build(&d, "smvm", build_smvm, &b);
    for (int64_t rows = 0; rows <= 2000; rows += rows ? 1999 : 7) {
        int64_t cols = rows / 3 + 1;
        tu_host seg = harr_vec(WEFT_I32, rows, 0, 9);
        int64_t nnz = 0;
        for (int64_t i = 0; i < rows; i++) {
            nnz += tu_load_i(WEFT_I32, (int32_t *)seg.data[0] + i);
        }
        tu_host h[4] = {seg, harr_vec(WEFT_I32, nnz, 0, cols - 1),
                        harr_vec(WEFT_F64, nnz, 1, 0),
                        harr_vec(WEFT_F64, cols, 1, 0)};
        diff_run_tol(&d, h, 4, TOL_F64 * 10, 0);
        for (int i = 0; i < 4; i++) {
            tu_host_free(&h[i]);
        }
    }
    diff_build(&d, "histogram", build_histogram, &b);
    for (int k = 0; k < 4; k++) {
        tu_host h = harr_vec(WEFT_I32, sizes[k], -10, 110);
        diff_run(&d, &h, 1);
        tu_host_free(&h);
    }
    diff_build(&d, "filter", build_filter, &b);
    for (int k = 0; k < 4; k++) {
        tu_host h = harr_vec(WEFT_I32, sizes[k], -1000, 1000);
        diff_run(&d, &h, 1);
        tu_host_free(&h);
    }
    diff_build(&d, "jacobi", build_jacobi, &b);
    static const int64_t grids[][2] = {{1, 1}, {13, 17}, {129, 131}};
    for (int k = 0; k < 3; k++) {
        tu_host h = harr1(WEFT_F64, 2, grids[k], 0, 100);
        diff_run(&d, &h, 1);
        tu_host_free(&h);
    }
    diff_build(&d, "newton awhile", build_newton, &b);
    for (int k = 0; k < 3; k++) {
        tu_host h = harr_vec(WEFT_F64, sizes[k], 0, 1000);
        diff_run(&d, &h, 1);
        tu_host_free(&h);
    }
    diff_build(&d, "while reads", build_while_reads, &b);
    static const int64_t lens[][2] = {{0, 5}, {1, 1}, {300, 7}, {50, 2000}};
    for (int k = 0; k < 4; k++) {
        tu_host h[2] = {harr_vec(WEFT_I64, lens[k][0], -50, 50),
                        harr_vec(WEFT_I64, lens[k][1], -50, 50)};
        diff_run(&d, h, 2);
        tu_host_free(&h[0]);
        tu_host_free(&h[1]);
    }
    diff_build(&d, "from_index wide", build_from_index_wide, &b);
    for (int k = 0; k < 2; k++) {
        /* raw 64-bit words (lo > hi), and small ones */
        tu_host h = k ? harr_vec(WEFT_I64, 3000, -70000, 70000)
                      : harr_vec(WEFT_I64, 30000, 1, 0);
        diff_run(&d, &h, 1);
        tu_host_free(&h);
    }
    diff_build(&d, "collatz while", build_collatz, &b);
    for (int64_t n = 0; n <= 3000; n += 1500) {
        tu_host h = harr1(WEFT_I64, 0, NULL, n, n);
        diff_run(&d, &h, 1);
        tu_host_free(&h);
    }
    diff_close(&d);
}

START_TEST(programs)
{
    programs_with(0);
}
END_TEST

START_TEST(programs_no_fusion)
{
    programs_with(WEFT_FLAG_NO_FUSION);
}
END_TEST

/* ------------------------------------------------------------------------
 * One executable run from several host threads at once
 * ---------------------------------------------------------------------- */

/* scanl1 (+), fold (+) and a histogram permute of one i32 vector. */
static int build_concurrent(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_fun *add = op2(p, WEFT_I32, weft_add);
    res[0] = weft_scanl1(add, v);
    res[1] = weft_fold(add, weft_i32(p, 0), v);
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_i32(p, 0));
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *k = weft_band(weft_at(v, weft_arg(ix, 0)), weft_i32(p, 63));
    weft_fun_return(ix, weft_index1(weft_convert(k, WEFT_I64)));
    res[2] = weft_permute(
        add, weft_generate(weft_index1(weft_i64(p, 64)), zero), ix, v);
    return 3;
}

enum { CONC_THREADS = 4, CONC_RUNS = 6 };

typedef struct conc {
    diff *d;
    const tu_host *in; /* this thread's inputs, one per run */
    weft_array **want; /* interpreter results: CONC_RUNS x 3 */
    int bad;           /* runs that failed or differed */
} conc;

static bool same_i32(weft_array *a, weft_array *b)
{
    int64_t n = weft_array_size(a);
    return n == weft_array_size(b) &&
           weft_array_rank(a) == weft_array_rank(b) &&
           (n == 0 || memcmp(weft_array_data(a, 0), weft_array_data(b, 0),
                             (size_t)n * 4) == 0);
}

static void *conc_main(void *arg)
{
    conc *c = arg;
    for (int r = 0; r < CONC_RUNS; r++) {
        weft_array *in = NULL, *out[3] = {NULL};
        const tu_host *h = &c->in[r];
        if (weft_array_from_host(c->d->ctx[1], WEFT_I32, 1, h->shape,
                                 (const void *const *)h->data,
                                 &in) != WEFT_OK ||
            weft_run(c->d->exe[1], &in, 1, out, 3) != WEFT_OK) {
            c->bad++;
        } else {
            for (int o = 0; o < 3; o++) {
                c->bad += !same_i32(out[o], c->want[r * 3 + o]);
            }
        }
        weft_array_release(in);
        tu_release_all(out, 3);
    }
    return NULL;
}

START_TEST(concurrent_runs)
{
    diff d;
    diff_open(&d);
    seed(27);
    bld b = {0};
    diff_build(&d, "concurrent", build_concurrent, &b);
    static tu_host in[CONC_THREADS][CONC_RUNS];
    static weft_array *want[CONC_THREADS][CONC_RUNS * 3];
    static const int64_t sizes[] = {0, 1, 1000, 65537, 200003, 31};
    for (int t = 0; t < CONC_THREADS; t++) {
        for (int r = 0; r < CONC_RUNS; r++) {
            in[t][r] = harr_vec(WEFT_I32, sizes[(t + r) % CONC_RUNS], 1, 0);
            weft_array *a = tu_host_array(d.ctx[0], &in[t][r]);
            TU_OK(weft_run(d.exe[0], &a, 1, &want[t][r * 3], 3));
            weft_array_release(a);
        }
    }
    pthread_t th[CONC_THREADS];
    conc c[CONC_THREADS];
    for (int t = 0; t < CONC_THREADS; t++) {
        c[t] = (conc){&d, in[t], want[t], 0};
        ck_assert_int_eq(pthread_create(&th[t], NULL, conc_main, &c[t]), 0);
    }
    for (int t = 0; t < CONC_THREADS; t++) {
        pthread_join(th[t], NULL);
    }
    for (int t = 0; t < CONC_THREADS; t++) {
        ck_assert_msg(c[t].bad == 0, "thread %d: %d runs failed or differed", t,
                      c[t].bad);
        for (int r = 0; r < CONC_RUNS; r++) {
            tu_host_free(&in[t][r]);
        }
        tu_release_all(want[t], CONC_RUNS * 3);
    }
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * Errors a compiled program can meet
 * ---------------------------------------------------------------------- */

static int build_err_fold1(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, b->rank);
    weft_fun *f = op2(p, WEFT_I32, weft_add);
    res[0] = b->variant ? weft_fold1_all(f, a) : weft_fold1(f, a);
    return 1;
}

static int build_err_seg(bld *b, weft_acc **res)
{
    weft_program *p = b->p;
    weft_acc *a = weft_param(p, WEFT_I32, 1);
    weft_acc *s = weft_param(p, WEFT_I32, 1);
    weft_fun *f = op2(p, WEFT_I32, weft_add);
    res[0] = b->variant ? weft_fold1_seg(f, a, s)
                        : weft_fold_seg(f, weft_i32(p, 0), a, s);
    return 1;
}

START_TEST(errors)
{
    diff d;
    diff_open(&d);
    seed(25);
    /* fold1 of empty rows, fold1_all of nothing */
    for (int r = 1; r <= 2; r++) {
        bld b = {.rank = r};
        diff_build(&d, "fold1 empty", build_err_fold1, &b);
        int64_t e[2] = {r == 1 ? 0 : 3, 0};
        tu_host h = harr1(WEFT_I32, r, e, 1, 0);
        diff_expect(&d, &h, 1, WEFT_ERR_EMPTY_ARRAY);
        tu_host_free(&h);
        b.variant = 1;
        diff_build(&d, "fold1_all empty", build_err_fold1, &b);
        h = harr1(WEFT_I32, r, e, 1, 0);
        diff_expect(&d, &h, 1, WEFT_ERR_EMPTY_ARRAY);
        tu_host_free(&h);
    }
    /* bad segments: negative, past the extent, empty for fold1_seg */
    for (int v = 0; v < 2; v++) {
        bld b = {.variant = v};
        diff_build(&d, "segments", build_err_seg, &b);
        tu_host h[2] = {harr_vec(WEFT_I32, 10, 1, 0),
                        harr_vec(WEFT_I32, 3, 0, 0)};
        harr_set_i(&h[1], 0, 0, 2);
        harr_set_i(&h[1], 0, 1, -1);
        harr_set_i(&h[1], 0, 2, 2);
        diff_expect(&d, h, 2, WEFT_ERR_SEGMENTS);
        harr_set_i(&h[1], 0, 1, 8);
        diff_expect(&d, h, 2, WEFT_ERR_SEGMENTS);
        harr_set_i(&h[1], 0, 1, 0);
        diff_expect(&d, h, 2, v ? WEFT_ERR_EMPTY_ARRAY : WEFT_OK);
        tu_host_free(&h[0]);
        tu_host_free(&h[1]);
    }
    /* reshape, slice, backpermute and permute errors are in their own
     * tests above.  An index outside an array read by a ! ix or a !! i
     * inside a scalar function, like a division by zero, is reported by
     * compiled code only in checked mode (test_checked.c). */
    diff_close(&d);
}
END_TEST

/* ------------------------------------------------------------------------
 * Suite
 * ---------------------------------------------------------------------- */

/* One case per test, so that CK_RUN_CASE=name runs one of them. */
static Suite *cpu_suite(void)
{
    const struct {
        const char *name;
        const TTest *test;
        bool fast; /* runs in test_cpu_fast: floating-point results */
    } tests[] = {
        {"generate", generate, true},
        {"map", map, true},
        {"zipwith", zipwith, true},
        {"use_unit_the", use_unit_the, false},
        {"reshape", reshape, false},
        {"replicate", replicate, false},
        {"slice", slice, false},
        {"backpermute", backpermute, false},
        {"fold_int", fold_int, false},
        {"fold_float", fold_float, true},
        {"fold_tuple", fold_tuple, true},
        {"fold_large", fold_large, true},
        {"fold_computed", fold_computed, false},
        {"fold_short_rows", fold_short_rows, true},
        {"while_staged", while_staged, false},
        {"fold_staged", fold_staged, false},
        {"fold_store", fold_store, false},
        {"fold_seg", fold_seg, true},
        {"scan_int", scan_int, false},
        {"scan_float", scan_float, true},
        {"scan_tuple", scan_tuple, true},
        {"scan_large", scan_large, false},
        {"huge", huge, false},
        {"permute", permute, false},
        {"stencil", stencil, true},
        {"stencil_tuple", stencil_tuple, false},
        {"stencil2", stencil2, true},
        {"acond_atuple", acond_atuple, false},
        {"awhile", awhile, false},
        {"awhile_fail", awhile_fail, false},
        {"permute_report_first", permute_report_first, false},
        {"awhile_loop", awhile_loop, false},
        {"prims", prims, true},
        {"programs", programs, true},
        {"programs_no_fusion", programs_no_fusion, false},
        {"concurrent_runs", concurrent_runs, false},
        {"errors", errors, false},
    };
    Suite *s = suite_create("cpu");
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (DT_FAST && !tests[i].fast) {
            continue;
        }
        TCase *t = tcase_create(tests[i].name);
        tcase_set_timeout(t, 600);
        tcase_add_test(t, tests[i].test);
        suite_add_tcase(s, t);
    }
    return s;
}

TU_MAIN(cpu_suite)
