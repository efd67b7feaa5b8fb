/*
 * tests/test_spmd.c: element functions over vector lanes (codegen/spmd.c,
 * skeletons-ir/spmd.c).
 *
 * Differential: each program is built in an interpreter context and a CPU
 * context (SPMD on, the default), run on the same random inputs over many
 * shapes, and every output must be equal bit for bit (NaN equal to NaN):
 *
 *   mandel     generate (h, w) with a while loop whose trip count differs
 *              per lane (escape, and a per-element limit read from an
 *              array), f32 and f64: the masked loop, rank 2 by rows;
 *   mandel_fold  fold, foldAll and fold1 of those counts: the element
 *              function over lanes inside fold.c's loops;
 *   nbody      the n-body `while` formulation: a loop with a uniform
 *              counter and varying accumulators, body j read as scalars
 *              and broadcast;
 *   partial    conditionals whose masked-off lanes would divide by zero or
 *              index far outside an array (a fault if read), a uniform read
 *              that no lane needs (out of bounds: it must not happen),
 *              nested conditionals with math functions, shifts by a uniform
 *              amount;
 *   collatz    a while loop with divergent trip counts, integer division
 *              and a gather inside its body;
 *   tuple3     generate of rank 3 returning a tuple of i64, f64, bool, i8
 *              and f16;
 *   uniform    a conditional and a loop on uniform values inside a
 *              zipWith3;
 *   nested     a varying loop inside a uniform one, a masked loop inside
 *              a varying conditional, a uniform loop inside a masked one;
 *   indices    from_index, to_index and shape_size of shapes that vary
 *              per lane;
 *   gathers    backpermute, transform, and maps of slice and replicate
 *              (fused) over lanes, with indices outside the source in some
 *              lanes (the same error status as the interpreter);
 *   nearest    k-means' assignment: fold (nearer) of generate (n, k) of
 *              (distance, j), a tuple whose combine breaks ties by j, over
 *              rows of k = 1 to 40 in groups of SK_FOLD_ROW_GROUPS vectors
 *              and a remainder (skeletons-ir/spmd.c), the centroids in
 *              pairs (ties in every row); one variant reads y under a
 *              varying condition (a partly masked load of the rows);
 * with shapes that are empty, one element, not multiples of the lane count,
 * and of ranks 1 to 3.  (test_cpu.c's prims case runs every primitive
 * through the vector path of zipWith on every type.)
 *
 * Compile-only, for x86-64-v3 and skylake-avx512 on any x86 host: the
 * Mandelbrot-like generate becomes an SPMD function (the vectorisation
 * report says so, with 8 and 16 lanes) whose IR holds the masked loop
 * (spmd.mwhile, llvm.vector.reduce.or of the active lanes) and whose
 * assembly uses ymm / zmm registers; the n-body while kernel has no masked
 * loop and no gather, and broadcasts body j (vbroadcastss).
 */
#include <unistd.h>

#include "tu_cmp.h"

enum { MAX_IN = 4, MAX_OUT = 4 };

static tu_rng rng = {7};

typedef int (*build_fn)(weft_program *p, weft_context *ctx, int variant,
                        weft_acc **res);

/* SPMD kernels a case must have (0: one per output). */
static int want_spmd = 0;

/* One input: element type, value range (lo > hi: all bits random for
 * integers). */
typedef struct in_spec {
    weft_type t;
    double lo, hi;
} in_spec;

/* A run: the shape of each input. */
typedef struct shapes {
    int rank[MAX_IN];
    int64_t sh[MAX_IN][3];
} shapes;

/* An i32 output leaf holding the bits of a float that exp or log gave, or
 * -1: weft's exp and log (codegen/vmath.c) are within 1 ulp of the C
 * library's, which the interpreter calls, not bit for bit, so such a leaf
 * may differ by one unit in its last place (bit patterns of one sign are
 * ordered like the floats). */
static int g_ulp_leaf = -1;

static bool within_ulp(const void *a, const void *b)
{
    int32_t x, y;
    memcpy(&x, a, 4);
    memcpy(&y, b, 4);
    return (x < 0) == (y < 0) && (x > y ? x - y : y - x) <= 1;
}

/* tu_cmp's accept: the ulp leaf may be an ulp off. */
static bool ulp_leaf_ok(int o, int l, weft_type t, const void *want,
                        const void *got)
{
    (void)o;
    return l == g_ulp_leaf && t == WEFT_I32 && within_ulp(want, got);
}

typedef struct case_arg {
    build_fn f;
    int variant;
} case_arg;

static int build_case(weft_program *p, weft_context *ctx, const void *arg,
                      weft_acc **res)
{
    const case_arg *ca = arg;
    return ca->f(p, ctx, ca->variant, res);
}

/* Build f's program in an interpreter and a CPU context, and compare them
 * on every run (tu_cmp.h: the same status, and bitwise equal outputs but
 * the ulp leaf's). */
static void diff(const char *name, build_fn f, int variant, int nin,
                 const in_spec *in, int nrun, const shapes *runs)
{
    char dir[] = "/tmp/weft-spmd-diff-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg[2] = {tu_cmp_config(WEFT_BACKEND_INTERP, 2, 0),
                          tu_cmp_config(WEFT_BACKEND_CPU, 2, 0)};
    /* the report tells whether the kernel went the SPMD way */
    cfg[1].dump = "vec";
    cfg[1].dump_dir = dir;
    cfg[1].cache_dir = dir;
    const char *names[2] = {"interp", "cpu"};
    tu_cmp c;
    tu_cmp_open(&c, 2, cfg, names);
    c.accept = g_ulp_leaf >= 0 ? ulp_leaf_ok : NULL;
    tu_cmp_case(&c, "%s variant %d", name, variant);
    case_arg ca = {f, variant};
    tu_cmp_build(&c, build_case, &ca);
    int nout = weft_executable_outputs(c.exe[0]);
    /* each output is one kernel here, each an SPMD function (but those of
     * other skeletons, want_spmd) */
    int want = want_spmd ? want_spmd : nout;
    char *report = tu_slurp_dir(dir, ".vec.txt", NULL);
    int nspmd = 0;
    for (const char *q = report; (q = strstr(q, "SPMD-vectorised")); q++) {
        nspmd++;
    }
    ck_assert_msg(nspmd >= want,
                  "%s variant %d: %d of %d kernels vectorised over lanes:\n%s",
                  name, variant, nspmd, want, report);
    free(report);
    for (int r = 0; r < nrun; r++) {
        tu_host host[MAX_IN];
        for (int i = 0; i < nin; i++) {
            host[i] = tu_host_random(&rng, 1, &in[i].t, runs[r].rank[i],
                                     runs[r].sh[i], in[i].lo, in[i].hi);
        }
        tu_cmp_case(&c, "%s variant %d run %d", name, variant, r);
        tu_cmp_run(&c, host, nin, TU_EXACT);
        for (int i = 0; i < nin; i++) {
            tu_host_free(&host[i]);
        }
    }
    tu_cmp_close(&c);
    tu_remove_dir(dir);
}

/* ------------------------------------------------------------------------
 * Programs
 * ---------------------------------------------------------------------- */

static weft_exp *fc(weft_program *p, weft_type t, double v)
{
    return t == WEFT_F64 ? weft_f64(p, v) : weft_f32(p, (float)v);
}

static weft_acc *mandel_of(weft_program *p, weft_context *ctx, weft_type ft,
                           weft_acc *lim, bool count_only);

/* generate (shape lim) (\ix -> iterations of z = z^2 + c(ix) while
 * it < lim ! ix and |z|^2 <= 4); variant 0 f32, 1 f64; input 0 the i32
 * limits. */
static int build_mandel(weft_program *p, weft_context *ctx, int variant,
                        weft_acc **res)
{
    weft_type ft = variant ? WEFT_F64 : WEFT_F32;
    res[0] = mandel_of(p, ctx, ft, weft_param(p, WEFT_I32, 2), false);
    return 1;
}

/* Folds of the Mandelbrot counts (fold.c's SPMD hook): variant 0 fold (+)
 * along rows, 1 foldAll (+) (chunked rows), 2 fold1 max. */
static int build_mandel_fold(weft_program *p, weft_context *ctx, int variant,
                             weft_acc **res)
{
    weft_acc *m = mandel_of(p, ctx, WEFT_F32, weft_param(p, WEFT_I32, 2), true);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_fun *max = tu_fun_op2(p, WEFT_OP_MAX, WEFT_I32);
    res[0] = variant == 0   ? weft_fold(add, weft_i32(p, 7), m)
             : variant == 1 ? weft_fold_all(add, weft_i32(p, 0), m)
                            : weft_fold1(max, m);
    return 1;
}

static weft_acc *mandel_of(weft_program *p, weft_context *ctx, weft_type ft,
                           weft_acc *lim, bool count_only)
{
    weft_type st = weft_type_tuple(ctx, 3, (weft_type[]){ft, ft, WEFT_I32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *ci =
        weft_add(fc(p, ft, -1.25),
                 weft_mul(fc(p, ft, 0.07), weft_convert(weft_get(ix, 0), ft)));
    weft_exp *cr =
        weft_add(fc(p, ft, -2.0),
                 weft_mul(fc(p, ft, 0.045), weft_convert(weft_get(ix, 1), ft)));
    weft_exp *limit = weft_at(lim, ix);
    weft_fun *cond = weft_fun1(p, st);
    weft_exp *s = weft_arg(cond, 0);
    weft_exp *zr = weft_get(s, 0), *zi = weft_get(s, 1), *it = weft_get(s, 2);
    weft_fun_return(
        cond, weft_and(weft_lt(it, limit),
                       weft_le(weft_add(weft_mul(zr, zr), weft_mul(zi, zi)),
                               fc(p, ft, 4))));
    weft_fun *body = weft_fun1(p, st);
    s = weft_arg(body, 0);
    zr = weft_get(s, 0);
    zi = weft_get(s, 1);
    it = weft_get(s, 2);
    weft_exp *next[3] = {
        weft_add(weft_sub(weft_mul(zr, zr), weft_mul(zi, zi)), cr),
        weft_add(weft_mul(weft_mul(fc(p, ft, 2), zr), zi), ci),
        weft_add(it, weft_i32(p, 1))};
    weft_fun_return(body, weft_tuple(p, 3, next));
    weft_exp *init[3] = {fc(p, ft, 0), fc(p, ft, 0), weft_i32(p, 0)};
    weft_exp *r = weft_while(cond, body, weft_tuple(p, 3, init));
    weft_exp *out[2] = {weft_get(r, 2), weft_get(r, 0)};
    weft_fun_return(g, count_only ? out[0] : weft_tuple(p, 2, out));
    return weft_generate(weft_shape(lim), g);
}

/* generate n (\i -> while j < n: acc + interaction i j) over four f32
 * arrays (x, y, z, mass). */
static int build_nbody(weft_program *p, weft_context *ctx, int variant,
                       weft_acc **res)
{
    (void)variant;
    weft_acc *in[4];
    for (int k = 0; k < 4; k++) {
        in[k] = weft_param(p, WEFT_F32, 1);
    }
    weft_type st = weft_type_tuple(
        ctx, 4, (weft_type[]){WEFT_I64, WEFT_F32, WEFT_F32, WEFT_F32});
    weft_exp *n = weft_size(in[0]);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_fun *cond = weft_fun1(p, st);
    weft_fun_return(cond, weft_lt(weft_get(weft_arg(cond, 0), 0), n));
    weft_fun *body = weft_fun1(p, st);
    weft_exp *s = weft_arg(body, 0);
    weft_exp *j = weft_get(s, 0);
    weft_exp *ii = weft_index1(i), *jj = weft_index1(j), *d[3];
    for (int k = 0; k < 3; k++) {
        d[k] = weft_sub(weft_at(in[k], jj), weft_at(in[k], ii));
    }
    weft_exp *r2 =
        weft_add(weft_add(weft_add(weft_mul(d[0], d[0]), weft_mul(d[1], d[1])),
                          weft_mul(d[2], d[2])),
                 weft_f32(p, 0.01f));
    weft_exp *inv = weft_fdiv(weft_f32(p, 1), weft_sqrt(r2));
    weft_exp *m =
        weft_mul(weft_at(in[3], jj), weft_mul(weft_mul(inv, inv), inv));
    weft_exp *next[4] = {weft_add(j, weft_i64(p, 1)),
                         weft_add(weft_get(s, 1), weft_mul(d[0], m)),
                         weft_add(weft_get(s, 2), weft_mul(d[1], m)),
                         weft_add(weft_get(s, 3), weft_mul(d[2], m))};
    weft_fun_return(body, weft_tuple(p, 4, next));
    weft_exp *init[4] = {weft_i64(p, 0), weft_f32(p, 0), weft_f32(p, 0),
                         weft_f32(p, 0)};
    weft_exp *r = weft_while(cond, body, weft_tuple(p, 4, init));
    weft_exp *acc[3] = {weft_get(r, 1), weft_get(r, 2), weft_get(r, 3)};
    weft_fun_return(g, weft_tuple(p, 3, acc));
    res[0] = weft_generate(weft_index1(n), g);
    return 1;
}

/* map over i32 x (all bits random; variant 1: in [0, 100]) with partial
 * operations in masked-off lanes; input 1 a rank-0 i32 shift amount. */
static int build_partial(weft_program *p, weft_context *ctx, int variant,
                         weft_acc **res)
{
    (void)ctx;
    weft_acc *xs = weft_param(p, WEFT_I32, variant == 2 ? 2 : 1);
    weft_acc *ka = weft_param(p, WEFT_I32, 0);
    weft_exp *k = weft_the(ka);
    weft_exp *n = weft_size(xs);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *m7 = weft_mod(x, weft_i32(p, 7));
    weft_exp *c[8];
    /* a divisor that is zero exactly in the masked-off lanes */
    c[0] = weft_cond(weft_ne(m7, weft_i32(p, 0)),
                     weft_quot(weft_i32(p, 1000), m7), weft_i32(p, -1));
    /* a gather whose masked-off lanes point anywhere */
    weft_exp *j = weft_convert(weft_mul(x, weft_i32(p, 977)), WEFT_I64);
    c[1] = weft_cond(weft_and(weft_ge(j, weft_i64(p, 0)), weft_lt(j, n)),
                     weft_at_linear(xs, j), weft_i32(p, -7));
    /* nested conditionals with math functions */
    weft_exp *fx = weft_convert(x, WEFT_F32);
    weft_exp *even = weft_eq(weft_band(x, weft_i32(p, 1)), weft_i32(p, 0));
    c[2] = weft_bitcast(
        weft_cond(
            even, weft_sqrt(weft_abs(fx)),
            weft_cond(weft_gt(x, weft_i32(p, 100)), weft_log(fx),
                      weft_neg(weft_fexp(weft_mul(fx, weft_f32(p, 1e-9f)))))),
        WEFT_I32);
    /* shifts by a uniform amount, with varying and uniform operands */
    c[3] = weft_bxor(weft_shl(x, weft_band(k, weft_i32(p, 31))),
                     weft_shr(weft_mul(k, weft_i32(p, 12345)),
                              weft_band(x, weft_i32(p, 15))));
    /* a uniform read that no lane needs (x < 2^31 - 1 always but one in
     * 2^32): the scalar code never makes it, neither must the vector */
    c[4] = weft_cond(weft_eq(x, weft_i32(p, INT32_MAX)),
                     weft_at_linear(xs, weft_add(n, weft_i64(p, 1))),
                     weft_add(x, k));
    /* or with a side that reads */
    c[5] = weft_convert(weft_or(weft_lt(x, weft_i32(p, 0)),
                                weft_gt(weft_at_linear(xs, weft_i64(p, 0)), x)),
                        WEFT_I32);
    /* min, max, abs, signum and integer division by a varying divisor */
    c[6] = weft_add(weft_max(weft_min(x, k), weft_abs(m7)),
                    weft_idiv(x, weft_add(weft_abs(m7), weft_i32(p, 1))));
    c[7] = weft_signum(weft_sub(x, k));
    if (variant == 1) {
        c[4] =
            weft_cond(weft_gt(x, weft_i32(p, 1000000)),
                      weft_at_linear(xs, weft_add(n, weft_i64(p, 100000000))),
                      weft_add(x, k));
    }
    weft_fun_return(f, weft_tuple(p, 8, c));
    res[0] = weft_map(f, xs);
    return 1;
}

/* map over i64 x in [1, 10^6]: the Collatz walk while x != 1 and k < 300,
 * summing tbl !! (x mod size tbl) on the way (f32 input 1). */
static int build_collatz(weft_program *p, weft_context *ctx, int variant,
                         weft_acc **res)
{
    (void)variant;
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_acc *tbl = weft_param(p, WEFT_F32, 1);
    weft_type st =
        weft_type_tuple(ctx, 3, (weft_type[]){WEFT_I64, WEFT_I32, WEFT_F32});
    weft_fun *cond = weft_fun1(p, st);
    weft_exp *s = weft_arg(cond, 0);
    weft_fun_return(cond, weft_and(weft_ne(weft_get(s, 0), weft_i64(p, 1)),
                                   weft_lt(weft_get(s, 1), weft_i32(p, 300))));
    weft_fun *body = weft_fun1(p, st);
    s = weft_arg(body, 0);
    weft_exp *x = weft_get(s, 0);
    weft_exp *nx =
        weft_cond(weft_eq(weft_rem(x, weft_i64(p, 2)), weft_i64(p, 0)),
                  weft_quot(x, weft_i64(p, 2)),
                  weft_add(weft_mul(x, weft_i64(p, 3)), weft_i64(p, 1)));
    weft_exp *g = weft_at_linear(tbl, weft_mod(x, weft_size(tbl)));
    weft_exp *next[3] = {nx, weft_add(weft_get(s, 1), weft_i32(p, 1)),
                         weft_add(weft_get(s, 2), g)};
    weft_fun_return(body, weft_tuple(p, 3, next));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *init[3] = {weft_arg(f, 0), weft_i32(p, 0), weft_f32(p, 0)};
    weft_fun_return(f, weft_while(cond, body, weft_tuple(p, 3, init)));
    res[0] = weft_map(f, xs);
    return 1;
}

/* generate (shape a) over a rank-3 array a of f32: a tuple of i64, f64,
 * bool, i8 and f16, reading a at the element's own index and at a
 * neighbour. */
static int build_tuple3(weft_program *p, weft_context *ctx, int variant,
                        weft_acc **res)
{
    (void)ctx;
    (void)variant;
    weft_acc *a = weft_param(p, WEFT_F32, 3);
    weft_fun *g = weft_fun1(p, WEFT_DIM(3));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *i = weft_get(ix, 0), *j = weft_get(ix, 1), *k = weft_get(ix, 2);
    weft_exp *x = weft_at(a, ix);
    weft_exp *sh = weft_shape(a);
    weft_exp *k1 = weft_mod(weft_add(k, weft_i64(p, 1)), weft_get(sh, 2));
    weft_exp *nb = weft_at(a, weft_index(p, 3, (weft_exp *[]){i, j, k1}));
    weft_exp *c[5] = {
        weft_add(weft_mul(i, j), k),
        weft_fdiv(weft_convert(weft_add(x, nb), WEFT_F64),
                  weft_convert(weft_add(j, weft_i64(p, 1)), WEFT_F64)),
        weft_lt(x, nb), weft_convert(weft_mul(k, weft_i64(p, 37)), WEFT_I8),
        weft_add(weft_convert(x, WEFT_F16), weft_f16(p, 0.5f))};
    weft_fun_return(g, weft_tuple(p, 5, c));
    res[0] = weft_generate(sh, g);
    return 1;
}

/* zipWith3 over f64 with a conditional on a uniform value and a loop of
 * uniform trip count whose state is varying; input 3 a rank-0 i64 m. */
static int build_uniform(weft_program *p, weft_context *ctx, int variant,
                         weft_acc **res)
{
    (void)variant;
    weft_acc *a = weft_param(p, WEFT_F64, 1), *b = weft_param(p, WEFT_F64, 1);
    weft_acc *c = weft_param(p, WEFT_F64, 1), *ma = weft_param(p, WEFT_I64, 0);
    weft_exp *m = weft_the(ma);
    weft_fun *f = weft_fun3(p, WEFT_F64, WEFT_F64, WEFT_F64);
    weft_exp *x = weft_arg(f, 0), *y = weft_arg(f, 1), *z = weft_arg(f, 2);
    weft_type st = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I64, WEFT_F64});
    weft_fun *cond = weft_fun1(p, st);
    weft_fun_return(cond, weft_lt(weft_get(weft_arg(cond, 0), 0), m));
    weft_fun *body = weft_fun1(p, st);
    weft_exp *s = weft_arg(body, 0);
    weft_exp *next[2] = {weft_add(weft_get(s, 0), weft_i64(p, 1)),
                         weft_add(weft_mul(weft_get(s, 1), y),
                                  weft_convert(weft_get(s, 0), WEFT_F64))};
    weft_fun_return(body, weft_tuple(p, 2, next));
    weft_exp *init[2] = {weft_i64(p, 0), x};
    weft_exp *loop =
        weft_get(weft_while(cond, body, weft_tuple(p, 2, init)), 1);
    weft_exp *u = weft_cond(weft_gt(m, weft_i64(p, 3)), weft_add(loop, z),
                            weft_sub(z, loop));
    weft_exp *out[2] = {u, weft_max(x, weft_convert(m, WEFT_F64))};
    weft_fun_return(f, weft_tuple(p, 2, out));
    res[0] = weft_zipwith3(f, a, b, c);
    return 1;
}

/* generate (2 k + 1) over f32 cx, cy of k and a rank-0 i32 it:
 * i < k ? cx ! min i (k - 1) : i < 2 k ? cy ! clamp (i - k) : convert (the
 * it).  A uniform value (the conversion, computed once before the loops)
 * on a side of a varying conditional is broadcast there; the broadcast once
 * reached the value the scalar tail loop reads (a vector in a scalar phi,
 * which LLVM refused). */
static int build_scalar_side(weft_program *p, weft_context *ctx, int variant,
                             weft_acc **res)
{
    (void)ctx;
    (void)variant;
    weft_acc *cx = weft_param(p, WEFT_F32, 1), *cy = weft_param(p, WEFT_F32, 1);
    weft_acc *it = weft_param(p, WEFT_I32, 0);
    weft_exp *k = weft_size(cx);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_exp *last = weft_sub(k, weft_i64(p, 1));
    weft_exp *ix = weft_min(i, last);
    weft_exp *iy = weft_max(weft_i64(p, 0), weft_min(weft_sub(i, k), last));
    weft_exp *v = weft_cond(weft_lt(i, k), weft_at(cx, weft_index1(ix)),
                            weft_cond(weft_lt(i, weft_add(k, k)),
                                      weft_at(cy, weft_index1(iy)),
                                      weft_convert(weft_the(it), WEFT_F32)));
    weft_fun_return(g, v);
    res[0] =
        weft_generate(weft_index1(weft_add(weft_add(k, k), weft_i64(p, 1))), g);
    return 1;
}

/* while v > 0 and k < 100: v = v quot 2 + (v rem 3), k + 1; gives k. */
static weft_exp *halvings(weft_program *p, weft_context *ctx, weft_exp *v0)
{
    weft_type st = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I32, WEFT_I32});
    weft_fun *c = weft_fun1(p, st);
    weft_exp *s = weft_arg(c, 0);
    weft_fun_return(c, weft_and(weft_gt(weft_get(s, 0), weft_i32(p, 0)),
                                weft_lt(weft_get(s, 1), weft_i32(p, 100))));
    weft_fun *b = weft_fun1(p, st);
    s = weft_arg(b, 0);
    weft_exp *v = weft_get(s, 0);
    weft_exp *n[2] = {
        weft_add(weft_quot(v, weft_i32(p, 2)), weft_rem(v, weft_i32(p, 3))),
        weft_add(weft_get(s, 1), weft_i32(p, 1))};
    weft_fun_return(b, weft_tuple(p, 2, n));
    weft_exp *init[2] = {v0, weft_i32(p, 0)};
    return weft_get(weft_while(c, b, weft_tuple(p, 2, init)), 1);
}

/* map over i32 x in [0, 50]: loops in loops and in conditionals:
 * a varying loop inside a uniform one, a masked loop inside a varying
 * conditional, a uniform loop inside a masked one. */
static int build_nested(weft_program *p, weft_context *ctx, int variant,
                        weft_acc **res)
{
    (void)variant;
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *x = weft_arg(f, 0);
    weft_type st = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I32, WEFT_I32});
    /* for j < 5 (uniform): acc += halvings(x + j) (varying) */
    weft_fun *c1 = weft_fun1(p, st);
    weft_fun_return(c1, weft_lt(weft_get(weft_arg(c1, 0), 0), weft_i32(p, 5)));
    weft_fun *b1 = weft_fun1(p, st);
    weft_exp *s = weft_arg(b1, 0);
    weft_exp *n1[2] = {weft_add(weft_get(s, 0), weft_i32(p, 1)),
                       weft_add(weft_get(s, 1),
                                halvings(p, ctx, weft_add(x, weft_get(s, 0))))};
    weft_fun_return(b1, weft_tuple(p, 2, n1));
    weft_exp *z2[2] = {weft_i32(p, 0), weft_i32(p, 0)};
    weft_exp *o1 = weft_get(weft_while(c1, b1, weft_tuple(p, 2, z2)), 1);
    /* x > 25 ? halvings(x * 7) : -1 */
    weft_exp *o2 = weft_cond(weft_gt(x, weft_i32(p, 25)),
                             halvings(p, ctx, weft_mul(x, weft_i32(p, 7))),
                             weft_i32(p, -1));
    /* for i < x (varying): t += i * (sum of l for l < 3, uniform) */
    weft_fun *c3 = weft_fun1(p, st);
    weft_fun_return(c3, weft_lt(weft_get(weft_arg(c3, 0), 0), x));
    weft_fun *b3 = weft_fun1(p, st);
    s = weft_arg(b3, 0);
    weft_fun *c4 = weft_fun1(p, st);
    weft_fun_return(c4, weft_lt(weft_get(weft_arg(c4, 0), 0), weft_i32(p, 3)));
    weft_fun *b4 = weft_fun1(p, st);
    weft_exp *u = weft_arg(b4, 0);
    weft_exp *n4[2] = {weft_add(weft_get(u, 0), weft_i32(p, 1)),
                       weft_add(weft_get(u, 1), weft_get(u, 0))};
    weft_fun_return(b4, weft_tuple(p, 2, n4));
    weft_exp *inner = weft_get(weft_while(c4, b4, weft_tuple(p, 2, z2)), 1);
    weft_exp *n3[2] = {
        weft_add(weft_get(s, 0), weft_i32(p, 1)),
        weft_add(weft_get(s, 1), weft_mul(weft_get(s, 0), inner))};
    weft_fun_return(b3, weft_tuple(p, 2, n3));
    weft_exp *o3 = weft_get(weft_while(c3, b3, weft_tuple(p, 2, z2)), 1);
    weft_exp *o[3] = {o1, o2, o3};
    weft_fun_return(f, weft_tuple(p, 3, o));
    res[0] = weft_map(f, xs);
    return 1;
}

/* map over i64 x in [-3, 50]: index arithmetic on shapes that vary per
 * lane (from_index, to_index, shape_size) and on uniform ones. */
static int build_indices(weft_program *p, weft_context *ctx, int variant,
                         weft_acc **res)
{
    (void)ctx;
    (void)variant;
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *sh = weft_index2(x, weft_i64(p, 3));
    weft_exp *fi = weft_from_index(
        weft_index2(weft_i64(p, 3), weft_add(x, weft_i64(p, 4))),
        weft_i64(p, 17));
    weft_exp *gi = weft_from_index(weft_index2(weft_i64(p, 4), weft_i64(p, 5)),
                                   weft_add(x, weft_i64(p, 100)));
    weft_exp *c[6] = {
        weft_get(fi, 0),
        weft_get(fi, 1),
        weft_to_index(sh, weft_index2(weft_i64(p, 2), weft_i64(p, 1))),
        weft_shape_size(weft_index2(x, x)),
        weft_get(gi, 0),
        weft_get(gi, 1)};
    weft_fun_return(f, weft_tuple(p, 6, c));
    res[0] = weft_map(f, xs);
    return 1;
}

/* Over a of f32 of rank 1 (variant 0) or 2 (variant 1) and a rank-0 i64
 * k: backpermute shifting the innermost index by k (outside the source in
 * the last k lanes of each row when k > 0: the error word), a transform,
 * a slice at k of a replicate of a (outside when k > 2), and a replicate
 * whose innermost index is not the source's (both negated by a map, so
 * that they are read inside its kernel). */
static int build_gathers(weft_program *p, weft_context *ctx, int variant,
                         weft_acc **res)
{
    (void)ctx;
    int rank = variant + 1;
    weft_acc *a = weft_param(p, WEFT_F32, rank);
    weft_exp *k = weft_the(weft_param(p, WEFT_I64, 0));
    weft_fun *pf = weft_fun1(p, WEFT_DIM(rank));
    weft_exp *ix = weft_arg(pf, 0), *c[2];
    for (int d = 0; d < rank; d++) {
        c[d] = weft_get(ix, d);
    }
    c[rank - 1] = weft_add(c[rank - 1], k);
    weft_fun_return(pf, weft_index(p, rank, c));
    res[0] = weft_backpermute(weft_shape(a), pf, a);
    /* transform: twice as long rows, each element twice, negated */
    weft_fun *tf = weft_fun1(p, WEFT_DIM(rank));
    ix = weft_arg(tf, 0);
    for (int d = 0; d < rank; d++) {
        c[d] = weft_get(ix, d);
    }
    c[rank - 1] = weft_quot(c[rank - 1], weft_i64(p, 2));
    weft_fun_return(tf, weft_index(p, rank, c));
    weft_fun *neg = weft_fun1(p, WEFT_F32);
    weft_fun_return(neg, weft_neg(weft_arg(neg, 0)));
    weft_exp *sh = weft_shape(a), *tsh[2];
    for (int d = 0; d < rank; d++) {
        tsh[d] = weft_get(sh, d);
    }
    tsh[rank - 1] = weft_mul(tsh[rank - 1], weft_i64(p, 2));
    res[1] = weft_transform(weft_index(p, rank, tsh), tf, neg, a);
    /* slice k of replicate (3 copies as the outermost dimension) */
    weft_exp *rs[3] = {weft_i64(p, 3), weft_all(p), weft_all(p)};
    weft_acc *rep = weft_replicate(rank + 1, rs, a);
    weft_exp *ss[3] = {k, weft_all(p), weft_all(p)};
    res[2] = weft_map(neg, weft_slice(rep, rank + 1, ss));
    /* replicate with a new innermost dimension of 5 */
    weft_exp *ri[3] = {weft_all(p), weft_all(p), weft_all(p)};
    ri[rank] = weft_i64(p, 5);
    res[3] = weft_map(neg, weft_replicate(rank + 1, ri, a));
    return 4;
}

/* The nearest of k centroids (cx, cy at j / 2: each twice, so that every
 * row has ties) to each point (px, py): fold of generate (n, k) (\(i, j)
 * -> (d, j)) by the nearer, the lower j on ties (associative and
 * commutative).  Variant 1 reads py only where px is positive (0
 * elsewhere): a load of the rows under a mask that is partial where the
 * signs are mixed. */
static int build_nearest(weft_program *p, weft_context *ctx, int variant,
                         weft_acc **res)
{
    weft_acc *px = weft_param(p, WEFT_F32, 1), *py = weft_param(p, WEFT_F32, 1);
    weft_acc *cx = weft_param(p, WEFT_F32, 1), *cy = weft_param(p, WEFT_F32, 1);
    weft_type dj = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_F32, WEFT_I32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *i = weft_index1(weft_get(ix, 0));
    weft_exp *j = weft_get(ix, 1);
    weft_exp *c = weft_index1(weft_quot(j, weft_i64(p, 2)));
    weft_exp *x = weft_at(px, i);
    weft_exp *y = variant ? weft_cond(weft_gt(x, weft_f32(p, 0)),
                                      weft_at(py, i), weft_f32(p, 0))
                          : weft_at(py, i);
    weft_exp *dx = weft_sub(x, weft_at(cx, c));
    weft_exp *dy = weft_sub(y, weft_at(cy, c));
    weft_exp *e[2] = {weft_add(weft_mul(dx, dx), weft_mul(dy, dy)),
                      weft_convert(j, WEFT_I32)};
    weft_fun_return(g, weft_tuple(p, 2, e));
    weft_fun *near = tu_fun_nearer(p, dj);
    weft_exp *none[2] = {weft_f32(p, INFINITY), weft_i32(p, 0)};
    weft_exp *k = weft_mul(weft_size(cx), weft_i64(p, 2));
    res[0] = weft_fold(near, weft_tuple(p, 2, none),
                       weft_generate(weft_index2(weft_size(px), k), g));
    return 1;
}

/* ------------------------------------------------------------------------
 * Differential cases
 * ---------------------------------------------------------------------- */

#define S1(n)                                                                  \
    {                                                                          \
        .rank = {1}, .sh = { {n} }                                             \
    }

START_TEST(mandel)
{
    static const shapes runs[] = {
        {.rank = {2}, .sh = {{0, 5}}},   {.rank = {2}, .sh = {{5, 0}}},
        {.rank = {2}, .sh = {{1, 1}}},   {.rank = {2}, .sh = {{3, 7}}},
        {.rank = {2}, .sh = {{17, 13}}}, {.rank = {2}, .sh = {{2, 1031}}},
        {.rank = {2}, .sh = {{33, 64}}}, {.rank = {2}, .sh = {{40, 17}}},
    };
    in_spec in[1] = {{WEFT_I32, 0, 300}};
    for (int v = 0; v < 2; v++) {
        diff("mandel", build_mandel, v, 1, in, 8, runs);
    }
}
END_TEST

START_TEST(mandel_fold)
{
    static const shapes runs[] = {
        {.rank = {2}, .sh = {{0, 5}}},     {.rank = {2}, .sh = {{5, 0}}},
        {.rank = {2}, .sh = {{1, 1}}},     {.rank = {2}, .sh = {{3, 7}}},
        {.rank = {2}, .sh = {{17, 13}}},   {.rank = {2}, .sh = {{2, 1031}}},
        {.rank = {2}, .sh = {{3, 20000}}},
    };
    in_spec in[1] = {{WEFT_I32, 0, 300}};
    diff("mandel_fold", build_mandel_fold, 0, 1, in, 7, runs);
    diff("mandel_fold", build_mandel_fold, 1, 1, in, 7, runs);
    /* fold1 of empty rows is an error: rows of at least one */
    diff("mandel_fold", build_mandel_fold, 2, 1, in, 5, runs + 2);
}
END_TEST

START_TEST(nbody)
{
    static const shapes runs[] = {
        {.rank = {1, 1, 1, 1}, .sh = {{0}, {0}, {0}, {0}}},
        {.rank = {1, 1, 1, 1}, .sh = {{1}, {1}, {1}, {1}}},
        {.rank = {1, 1, 1, 1}, .sh = {{7}, {7}, {7}, {7}}},
        {.rank = {1, 1, 1, 1}, .sh = {{31}, {31}, {31}, {31}}},
        {.rank = {1, 1, 1, 1}, .sh = {{100}, {100}, {100}, {100}}},
    };
    in_spec in[4] = {{WEFT_F32, -1, 1},
                     {WEFT_F32, -1, 1},
                     {WEFT_F32, -1, 1},
                     {WEFT_F32, 0.5, 1.5}};
    diff("nbody", build_nbody, 0, 4, in, 5, runs);
}
END_TEST

START_TEST(partial)
{
    g_ulp_leaf = 2; /* c[2]: bits of a float that log or exp computed */
    static const shapes runs[] = {
        {.rank = {1, 0}, .sh = {{0}}},    {.rank = {1, 0}, .sh = {{1}}},
        {.rank = {1, 0}, .sh = {{2}}},    {.rank = {1, 0}, .sh = {{15}}},
        {.rank = {1, 0}, .sh = {{16}}},   {.rank = {1, 0}, .sh = {{17}}},
        {.rank = {1, 0}, .sh = {{1000}}}, {.rank = {1, 0}, .sh = {{4099}}},
    };
    static const shapes runs2[] = {
        {.rank = {2, 0}, .sh = {{3, 7}}},
        {.rank = {2, 0}, .sh = {{0, 9}}},
        {.rank = {2, 0}, .sh = {{33, 5}}},
    };
    in_spec all[2] = {{WEFT_I32, 1, 0}, {WEFT_I32, -40, 40}};
    in_spec small[2] = {{WEFT_I32, 0, 100}, {WEFT_I32, -40, 40}};
    diff("partial", build_partial, 0, 2, all, 8, runs);
    diff("partial", build_partial, 1, 2, small, 8, runs);
    g_ulp_leaf = -1;
    diff("partial", build_partial, 2, 2, all, 3, runs2);
}
END_TEST

START_TEST(collatz)
{
    static const shapes runs[] = {
        {.rank = {1, 1}, .sh = {{0}, {5}}},
        {.rank = {1, 1}, .sh = {{1}, {5}}},
        {.rank = {1, 1}, .sh = {{9}, {3}}},
        {.rank = {1, 1}, .sh = {{64}, {17}}},
        {.rank = {1, 1}, .sh = {{777}, {101}}},
    };
    in_spec in[2] = {{WEFT_I64, 1, 1000000}, {WEFT_F32, -1, 1}};
    diff("collatz", build_collatz, 0, 2, in, 5, runs);
}
END_TEST

START_TEST(tuple3)
{
    static const shapes runs[] = {
        {.rank = {3}, .sh = {{0, 2, 3}}},  {.rank = {3}, .sh = {{2, 3, 0}}},
        {.rank = {3}, .sh = {{1, 1, 1}}},  {.rank = {3}, .sh = {{3, 5, 7}}},
        {.rank = {3}, .sh = {{4, 9, 11}}}, {.rank = {3}, .sh = {{2, 1, 257}}},
        {.rank = {3}, .sh = {{2, 3, 32}}},
    };
    in_spec in[1] = {{WEFT_F32, -4, 4}};
    diff("tuple3", build_tuple3, 0, 1, in, 7, runs);
}
END_TEST

START_TEST(uniform)
{
    static const shapes runs[] = {
        {.rank = {1, 1, 1, 0}, .sh = {{0}, {0}, {0}}},
        {.rank = {1, 1, 1, 0}, .sh = {{1}, {1}, {1}}},
        {.rank = {1, 1, 1, 0}, .sh = {{13}, {13}, {12}}},
        {.rank = {1, 1, 1, 0}, .sh = {{100}, {101}, {100}}},
    };
    in_spec lo[4] = {{WEFT_F64, -1, 1},
                     {WEFT_F64, -1, 1},
                     {WEFT_F64, -1, 1},
                     {WEFT_I64, 0, 3}};
    in_spec hi[4] = {{WEFT_F64, -1, 1},
                     {WEFT_F64, -1, 1},
                     {WEFT_F64, -1, 1},
                     {WEFT_I64, 4, 9}};
    diff("uniform", build_uniform, 0, 4, lo, 4, runs);
    diff("uniform", build_uniform, 1, 4, hi, 4, runs);
}
END_TEST

/* ------------------------------------------------------------------------
 * Compile-only: the vector loop for explicit x86 CPUs
 * ---------------------------------------------------------------------- */

/* Compile f's program for cpu with dumps (context flags `flags` too);
 * return the IR before optimisation, the assembly and the report
 * (malloc'd). */
static void compile_for(const char *cpu, unsigned flags, build_fn f, char **ir,
                        char **text, char **report)
{
    char dir[] = "/tmp/weft-spmd-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 1;
    cfg.flags = WEFT_FLAG_NO_ENV | flags;
    cfg.target_cpu = cpu;
    cfg.dump = "ir,asm,vec";
    cfg.dump_dir = dir;
    cfg.cache_dir = dir;
    weft_context *ctx = NULL;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *res[MAX_OUT];
    int n = f(p, ctx, 0, res);
    TU_PROGRAM_OK(p);
    TU_OK(weft_compile(p, res, n, &exe));
    *ir = tu_slurp_dir(dir, ".ll", NULL);
    *text = tu_slurp_dir(dir, ".s", NULL);
    *report = tu_slurp_dir(dir, ".vec.txt", NULL);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    tu_remove_dir(dir);
}

static void check_cpu(const char *cpu, const char *lanes, const char *reg)
{
    char *ir, *text, *report;
    /* Mandelbrot-like: the masked loop */
    compile_for(cpu, 0, build_mandel, &ir, &text, &report);
    ck_assert_msg(strstr(report, lanes) != NULL,
                  "mandel on %s: the report does not say '%s':\n%s", cpu, lanes,
                  report);
    ck_assert_msg(strstr(ir, "spmd.mwhile") &&
                      strstr(ir, "llvm.vector.reduce.or") &&
                      strstr(ir, "%active"),
                  "mandel on %s: no masked loop in the IR", cpu);
    ck_assert_msg(strstr(text, reg) || strstr(text, "%zmm"),
                  "mandel on %s: no %s register", cpu, reg);
    free(ir);
    free(text);
    free(report);
    /* n-body while: a uniform loop, body j broadcast, no gather */
    compile_for(cpu, 0, build_nbody, &ir, &text, &report);
    ck_assert_msg(strstr(report, lanes) != NULL,
                  "nbody on %s: the report does not say '%s':\n%s", cpu, lanes,
                  report);
    ck_assert_msg(strstr(ir, "spmd.mwhile") == NULL &&
                      strstr(ir, "masked.gather") == NULL,
                  "nbody on %s: a masked loop or a gather in the IR", cpu);
    ck_assert_msg(
        strstr(text, "vbroadcastss") != NULL && strstr(text, "vgather") == NULL,
        "nbody on %s: no broadcast, or a gather, in the assembly", cpu);
    ck_assert_msg(strstr(text, reg) || strstr(text, "%zmm"),
                  "nbody on %s: no %s register", cpu, reg);
    /* strict: 1 / sqrt r2 is a packed square root and a division */
    ck_assert_msg(strstr(text, "vsqrtps") && strstr(text, "vdivps") &&
                      !strstr(text, "vrsqrt"),
                  "nbody on %s: strict code without vsqrtps and vdivps", cpu);
    free(ir);
    free(text);
    free(report);
    /* with fast math the vector code carries the flags too: the packed
     * reciprocal square root estimate (and a Newton step) instead of the
     * square root and the division, and contracted multiply-adds */
    compile_for(cpu, WEFT_FLAG_FAST_MATH, build_nbody, &ir, &text, &report);
    ck_assert_msg(strstr(report, lanes) != NULL,
                  "fast nbody on %s: the report does not say '%s':\n%s", cpu,
                  lanes, report);
    ck_assert_msg(strstr(text, "vrsqrt") && strstr(text, "vfmadd") &&
                      !strstr(text, "vsqrtps") && !strstr(text, "vdivps"),
                  "fast nbody on %s: no vrsqrt and vfmadd, or a packed "
                  "square root or division",
                  cpu);
    free(ir);
    free(text);
    free(report);
}

START_TEST(x86_64_v3)
{
#if defined(__x86_64__)
    check_cpu("x86-64-v3", "SPMD-vectorised, 8 lanes", "%ymm");
#endif
}
END_TEST

START_TEST(skylake_avx512)
{
#if defined(__x86_64__)
    check_cpu("skylake-avx512", "SPMD-vectorised, 16 lanes", "%ymm");
#endif
}
END_TEST

START_TEST(scalar_side)
{
    static const shapes runs[] = {
        {.rank = {1, 1, 0}, .sh = {{1}, {1}}},
        {.rank = {1, 1, 0}, .sh = {{7}, {7}}},
        {.rank = {1, 1, 0}, .sh = {{40}, {40}}},
        {.rank = {1, 1, 0}, .sh = {{129}, {129}}},
    };
    in_spec in[3] = {{WEFT_F32, -4, 4}, {WEFT_F32, -4, 4}, {WEFT_I32, 0, 100}};
    diff("scalar side", build_scalar_side, 0, 3, in, 4, runs);
}
END_TEST

START_TEST(nested)
{
    static const shapes runs[] = {
        {.rank = {1}, .sh = {{0}}},   {.rank = {1}, .sh = {{1}}},
        {.rank = {1}, .sh = {{9}}},   {.rank = {1}, .sh = {{33}}},
        {.rank = {1}, .sh = {{500}}},
    };
    in_spec in[1] = {{WEFT_I32, 0, 50}};
    diff("nested", build_nested, 0, 1, in, 5, runs);
}
END_TEST

START_TEST(indices)
{
    static const shapes runs[] = {
        {.rank = {1}, .sh = {{0}}},
        {.rank = {1}, .sh = {{3}}},
        {.rank = {1}, .sh = {{100}}},
    };
    in_spec in[1] = {{WEFT_I64, -3, 50}};
    diff("indices", build_indices, 0, 1, in, 3, runs);
}
END_TEST

START_TEST(gathers)
{
    static const shapes runs1[] = {
        {.rank = {1, 0}, .sh = {{0}}},    {.rank = {1, 0}, .sh = {{1}}},
        {.rank = {1, 0}, .sh = {{17}}},   {.rank = {1, 0}, .sh = {{64}}},
        {.rank = {1, 0}, .sh = {{1031}}},
    };
    static const shapes runs2[] = {
        {.rank = {2, 0}, .sh = {{0, 5}}},
        {.rank = {2, 0}, .sh = {{3, 7}}},
        {.rank = {2, 0}, .sh = {{5, 33}}},
        {.rank = {2, 0}, .sh = {{2, 64}}},
    };
    in_spec zero[2] = {{WEFT_F32, -1, 1}, {WEFT_I64, 0, 0}};
    in_spec some[2] = {{WEFT_F32, -1, 1}, {WEFT_I64, 1, 2}};
    in_spec far[2] = {{WEFT_F32, -1, 1}, {WEFT_I64, 3, 100}};
    diff("gathers", build_gathers, 0, 2, zero, 5, runs1);
    diff("gathers", build_gathers, 0, 2, some, 5, runs1);
    diff("gathers", build_gathers, 0, 2, far, 5, runs1);
    diff("gathers", build_gathers, 1, 2, zero, 4, runs2);
    diff("gathers", build_gathers, 1, 2, some, 4, runs2);
}
END_TEST

START_TEST(nearest)
{
    /* n points (both arrays) and k / 2 centroids: rows of k = 2 to 40 */
#define NEAREST(n, h)                                                          \
    {                                                                          \
        .rank = {1, 1, 1, 1}, .sh = { {n}, {n}, {h}, {h} }                     \
    }
    static const shapes runs[] = {
        NEAREST(0, 8),   NEAREST(1, 8),    NEAREST(15, 1),  NEAREST(63, 8),
        NEAREST(64, 8),  NEAREST(65, 3),   NEAREST(130, 8), NEAREST(200, 20),
        NEAREST(257, 8), NEAREST(1000, 5),
    };
#undef NEAREST
    /* the centroids' pairs tie in every row; the signs of px mixed */
    in_spec in[4] = {{WEFT_F32, -3, 3},
                     {WEFT_F32, -3, 3},
                     {WEFT_F32, -3, 3},
                     {WEFT_F32, -3, 3}};
    diff("nearest", build_nearest, 0, 4, in, 10, runs);
    diff("nearest", build_nearest, 1, 4, in, 10, runs);
}
END_TEST

static Suite *spmd_suite(void)
{
    Suite *s = suite_create("spmd");
    TCase *t = tcase_create("spmd");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, mandel);
    tcase_add_test(t, mandel_fold);
    tcase_add_test(t, nbody);
    tcase_add_test(t, partial);
    tcase_add_test(t, collatz);
    tcase_add_test(t, tuple3);
    tcase_add_test(t, uniform);
    tcase_add_test(t, gathers);
    tcase_add_test(t, nearest);
    tcase_add_test(t, indices);
    tcase_add_test(t, nested);
    tcase_add_test(t, scalar_side);
    tcase_add_test(t, x86_64_v3);
    tcase_add_test(t, skylake_avx512);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(spmd_suite)
