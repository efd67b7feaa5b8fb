/*
 * tests/test_ptx_multi.c: one context over several GPUs (issue 20, phase
 * 1; runtime-gpu/multi.c, docs/distributed.md).
 *
 * Every program runs on three ptx contexts: one GPU (no devices setting),
 * device 0 twice (devices "0,0": two streams and a split of every large
 * array over two blocks of one GPU, the partition logic where the machine
 * has one GPU), and every GPU the machine has ("all"; the same as one GPU
 * where there is one).  The results must be equal bit for bit: the
 * element-wise kernels that are split compute each element as on one
 * device, folds of rows split by rows each row as on one device, and the
 * families not split run on device 0 over the same memory; but for f32
 * folds of one row or of few long rows, whose parts on the devices
 * combine in another order than one GPU's pieces, and the f32 scan,
 * whose look-back makes its last bits depend on timing even on one GPU
 * (both compared within a tolerance, in compare).  The
 * contexts compile without tiering (tu.h's DT_TIER): one tier's code.
 * Shapes: sizes not divisible by the device count, smaller than it,
 * empty, large enough to be split (1 MiB and more: 3 million f32), ranks
 * 0 to 3, tuples, fused (a map of a generate) and unfused
 * (WEFT_FLAG_NO_FUSION), a backpermute that reads across the blocks,
 * folds, scans, a stencil and a permute over split inputs.  weft_stats
 * must show the devices, a split kernel, partials handed between the
 * devices, and bytes on every device of the list.
 * Configuration errors (a malformed list, an ordinal past the devices)
 * are WEFT_ERR_INVALID_ARGUMENT naming the ordinal.
 *
 * Runs only where a CUDA driver and a GPU are present; elsewhere main
 * returns 77 (a CTest skip).  The parsing of the list is unit-tested
 * without a GPU in tests/test_devices.c.
 */
#define DT_BACKEND WEFT_BACKEND_PTX
#include "tu.h"

/* Not one of the NPROG programs compare runs: a generate over x's shape
 * (any rank) with a while loop whose trip count varies (x ! i halved
 * while above 1, counted), as a pair (the count, i32; what is left,
 * f32): an uneven kernel, whose chunks the devices take in pieces round
 * robin (multi.c, "Pieces"), each writing into the others' blocks
 * (uneven_pieces). */
enum { UNEVEN = 100 };

static weft_context *open_devices(const char *devices, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= WEFT_FLAG_NO_ENV | DT_TIER | flags; /* one tier's code */
    cfg.devices = devices;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

/* The same over `devices` with relays, the queueing threads of a split
 * launch's other devices (multi.c, "Queueing"), which only
 * $WEFT_PTX_RELAYS=1 turns on: this context reads the environment, the
 * others do not. */
static weft_context *open_relays(const char *devices, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= DT_TIER | flags;
    cfg.devices = devices;
    ck_assert_int_eq(setenv("WEFT_PTX_RELAYS", "1", 1), 0);
    weft_context *ctx = NULL;
    weft_status s = weft_context_create(&cfg, &ctx);
    unsetenv("WEFT_PTX_RELAYS");
    TU_OK(s);
    return ctx;
}

/* An f32 array of the shape, element i = (i * 7919 mod 1000) / 8. */
static weft_array *pattern(weft_context *ctx, int rank, const int64_t *shape)
{
    weft_array *a = NULL;
    TU_OK(weft_array_create(ctx, WEFT_F32, rank, shape, &a));
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        n *= shape[d];
    }
    float *x = weft_array_data(a, 0);
    for (int64_t i = 0; n > 0 && i < n; i++) {
        x[i] = (float)((i * 7919) % 1000) / 8.0f;
    }
    return a;
}

/* permute (+) of f32 src (rank 1) into `bins` zeros by index mod bins. */
static weft_acc *f32_bins(weft_program *p, int64_t bins, weft_acc *src)
{
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_f32(p, 0.0f));
    weft_acc *def = weft_generate(weft_index1(weft_i64(p, bins)), zero);
    weft_fun *bin = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(bin, weft_index1(weft_rem(weft_get(weft_arg(bin, 0), 0),
                                              weft_i64(p, bins))));
    weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    return weft_permute(add, def, bin, src);
}

/* The index function \i -> `ignore` where i mod every is skip, else i
 * mod bins (rank 1). */
static weft_fun *ignoring(weft_program *p, int64_t every, int64_t skip,
                          int64_t bins)
{
    weft_fun *bin = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(bin, 0), 0);
    weft_fun_return(
        bin,
        weft_cond(weft_eq(weft_rem(i, weft_i64(p, every)), weft_i64(p, skip)),
                  weft_ignore(p, 1),
                  weft_index1(weft_rem(i, weft_i64(p, bins)))));
    return bin;
}

/* Permutes split over the devices (skeletons-ir/ptx/permute.c, "Several
 * devices"), programs of their own test (split_permutes), rank 1:
 *   PERMUTES      a histogram: permute (+) of i32 of x * 8 into 256 bins
 *                 by that value mod 256 (a fused default of zeros)
 *   PERMUTES + 1  permute of triples (max, min, +) of (i32 of x * 8, the
 *                 same, f64 of x) into 61 bins by index mod 61, every
 *                 third index `ignore`d, from a default of (-1, 100000,
 *                 0.5): leaves of 4 and 8 bytes, each its own reduction;
 *                 the f64 sums are exact (at most 3 million multiples of
 *                 1/8 below 125)
 *   PERMUTES + 2  permute (+) of x into 1000 bins by index mod 1000: f32
 *                 sums, whose order of additions varies with timing */
enum { PERMUTES = 200, NPERMUTES = 3 };

/* The programs, built on p with one input `x` of rank `rank`:
 *   0  map (x * 3 + 1), then a map of it (fused unless NO_FUSION)
 *   1  zipWith (+) of x and a generate of the index (rank 1 only: size)
 *   2  backpermute reversing x (reads of the other block)
 *   3  a pair (x + 1, x * 2) as a tuple array, then its second component
 *   4  fold_all (+) of a map of x
 *   5  scanl1 (+) of x (rank 1)
 *   6  permute (+) of ones into 17 bins by index mod 17 (rank 1)
 *   7  a pair (f64 of x, i32 of x * 8) as the result: a tuple array of
 *      two leaves of different element sizes, split each by its bytes
 *   8  fold (+) of a map of x along the inner dimension (rows split over
 *      the devices, or chunks of few long rows)
 *   9  fold_all of pairs (i32 of x * 8, x) by (a + b, the right one's x):
 *      a tuple fold, exact, and not commutative (the parts' folds must be
 *      combined in the devices' order); z = (0, -1)
 *  10  scanl (+) 7 of i32 of x (exclusive, seeded, a row longer by one:
 *      one long row is scanned in parts, one per device: the parts'
 *      totals first, then each part's scan from the seed and the totals
 *      before it)
 *  11  scanr (+) 5 of i32 of x (right to left: part r on the last device
 *      but r)
 *  12  the exclusive scan of scanr' (+) 0 of i32 of x
 *  13  the totals of scanl' (+) 0 of i32 of x
 *  14  a stencil of x (ranks 1 to 3: 3, 3 x 3, 3 x 3 x 3 windows, the
 *      sum of the window weighted by position; wrap boundary): the split
 *      rows read their neighbours' rows over peer access
 *  15  x ! i + t ! ((31 i) mod 4099), t a used table of 4099 f32 (16 KiB,
 *      on device 0): the other devices read it from replicas (multi.c,
 *      "Replicas")
 *  16  permute (+) of ones into 17 bins by index mod 17, odd indices
 *      `ignore`d (split over the devices from 2^20 sources, on device 0
 *      below)
 *  17  fold_seg (+) 0 of i32 of x in segments of 7 (device 0 too)
 *  18  scanl1 of affine maps (a, b) of x, composed (a1 a2, b1 a2 + b2):
 *      a tuple scan (two leaves, the status not packed), exact (i32
 *      wraps), and not commutative (the parts' totals must be combined
 *      in order)
 *  19  scanr1 (+) of i32 of x
 *  20  the exclusive scan of scanl' (+) 3 of i32 of x
 *  21  the totals of scanr' (+) 2 of i32 of x
 *  22  scanl (+) 0.5 of x (f32, seeded) */
enum { NPROG = 23, SCAN_F32 = 5, SCAN_F32_SEEDED = 22 };

/* Program k's result is an f32 fold over several devices, whose parts
 * are combined in another order than on one GPU (compare). */
static bool float_fold(int k)
{
    return k == 4 || k == 8;
}

static weft_acc *program(weft_context *ctx, weft_program *p, int k, int rank)
{
    weft_acc *x = weft_param(p, WEFT_F32, rank);
    weft_fun *f = weft_fun1(p, WEFT_F32);
    weft_fun_return(f, weft_add(weft_mul(weft_arg(f, 0), weft_f32(p, 3.0f)),
                                weft_f32(p, 1.0f)));
    weft_acc *m = weft_map(f, x);
    switch (k) {
    case 0: {
        weft_fun *g = weft_fun1(p, WEFT_F32);
        weft_fun_return(g, weft_sub(weft_arg(g, 0), weft_f32(p, 0.5f)));
        return weft_map(g, m);
    }
    case 1: {
        weft_fun *gen = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(gen,
                        weft_convert(weft_get(weft_arg(gen, 0), 0), WEFT_F32));
        weft_acc *ix = weft_generate(weft_shape(x), gen);
        weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_zipwith(add, m, ix);
    }
    case 2: {
        weft_fun *rev = weft_fun1(p, WEFT_DIM(1));
        weft_exp *n = weft_size(x);
        weft_fun_return(rev,
                        weft_index1(weft_sub(weft_sub(n, weft_i64(p, 1)),
                                             weft_get(weft_arg(rev, 0), 0))));
        return weft_backpermute(weft_shape(x), rev, m);
    }
    case 3: {
        weft_fun *pair = weft_fun1(p, WEFT_F32);
        weft_exp *a = weft_arg(pair, 0);
        weft_fun_return(
            pair, weft_tuple(p, 2,
                             (weft_exp *[]){weft_add(a, weft_f32(p, 1.0f)),
                                            weft_mul(a, weft_f32(p, 2.0f))}));
        weft_acc *t = weft_map(pair, m);
        weft_fun *snd = weft_fun1(p, weft_acc_type(t));
        weft_fun_return(snd, weft_get(weft_arg(snd, 0), 1));
        return weft_map(snd, t);
    }
    case 4: {
        weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_fold_all(add, weft_f32(p, 0.0f), m);
    }
    case 5: {
        weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_scanl1(add, m);
    }
    case 7: {
        weft_fun *pair = weft_fun1(p, WEFT_F32);
        weft_exp *a = weft_arg(pair, 0);
        weft_fun_return(
            pair, weft_tuple(p, 2,
                             (weft_exp *[]){
                                 weft_convert(a, WEFT_F64),
                                 weft_convert(weft_mul(a, weft_f32(p, 8.0f)),
                                              WEFT_I32)}));
        return weft_map(pair, x);
    }
    case 8: {
        weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_fold(add, weft_f32(p, 0.0f), m);
    }
    case 9: {
        weft_fun *pair = weft_fun1(p, WEFT_F32);
        weft_exp *a = weft_arg(pair, 0);
        weft_fun_return(
            pair, weft_tuple(p, 2,
                             (weft_exp *[]){
                                 weft_convert(weft_mul(a, weft_f32(p, 8.0f)),
                                              WEFT_I32),
                                 a}));
        weft_acc *t = weft_map(pair, x);
        weft_type tt = weft_acc_type(t);
        weft_fun *c = weft_fun2(p, tt, tt);
        weft_exp *l = weft_arg(c, 0), *r = weft_arg(c, 1);
        weft_fun_return(c, weft_tuple(p, 2,
                                      (weft_exp *[]){weft_add(weft_get(l, 0),
                                                              weft_get(r, 0)),
                                                     weft_get(r, 1)}));
        return weft_fold_all(
            c,
            weft_tuple(p, 2,
                       (weft_exp *[]){weft_i32(p, 0), weft_f32(p, -1.0f)}),
            t);
    }
    case 10:
    case 11:
    case 12:
    case 13:
    case 19:
    case 20:
    case 21: {
        weft_fun *cv = weft_fun1(p, WEFT_F32);
        weft_fun_return(cv, weft_convert(weft_arg(cv, 0), WEFT_I32));
        weft_acc *xi = weft_map(cv, x);
        weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        switch (k) {
        case 10: return weft_scanl(add, weft_i32(p, 7), xi);
        case 11: return weft_scanr(add, weft_i32(p, 5), xi);
        case 12: return weft_aget(weft_scanr_(add, weft_i32(p, 0), xi), 0);
        case 13: return weft_aget(weft_scanl_(add, weft_i32(p, 0), xi), 1);
        case 19: return weft_scanr1(add, xi);
        case 20: return weft_aget(weft_scanl_(add, weft_i32(p, 3), xi), 0);
        default: return weft_aget(weft_scanr_(add, weft_i32(p, 2), xi), 1);
        }
    }
    case 18: {
        weft_fun *pair = weft_fun1(p, WEFT_F32);
        weft_exp *a = weft_convert(weft_arg(pair, 0), WEFT_I32);
        weft_fun_return(
            pair,
            weft_tuple(p, 2,
                       (weft_exp *[]){weft_add(weft_rem(a, weft_i32(p, 3)),
                                               weft_i32(p, 1)),
                                      weft_sub(a, weft_i32(p, 60))}));
        weft_acc *t = weft_map(pair, x);
        weft_type tt = weft_acc_type(t);
        weft_fun *c = weft_fun2(p, tt, tt);
        weft_exp *l = weft_arg(c, 0), *r = weft_arg(c, 1);
        weft_fun_return(
            c, weft_tuple(p, 2,
                          (weft_exp *[]){
                              weft_mul(weft_get(l, 0), weft_get(r, 0)),
                              weft_add(weft_mul(weft_get(l, 1), weft_get(r, 0)),
                                       weft_get(r, 1))}));
        return weft_scanl1(c, t);
    }
    case 22: {
        weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_scanl(add, weft_f32(p, 0.5f), m);
    }
    case 14: {
        weft_type ts[27];
        int w = rank == 1 ? 3 : rank == 2 ? 9 : 27;
        for (int i = 0; i < w; i++) {
            ts[i] = WEFT_F32;
        }
        weft_fun *f = weft_fun_create(p, w, ts);
        weft_exp *sum = weft_arg(f, 0);
        for (int i = 1; i < w; i++) {
            sum = weft_add(
                sum, weft_mul(weft_arg(f, i), weft_f32(p, (float)(i + 1))));
        }
        weft_fun_return(f, sum);
        weft_boundary wrap = {WEFT_BOUNDARY_WRAP, NULL};
        return weft_stencil(f, (const int[]){3, 3, 3}, wrap, x);
    }
    case 15: {
        int64_t tn = 4099;
        weft_array *tab = NULL;
        TU_OK(weft_array_create(ctx, WEFT_F32, 1, &tn, &tab));
        float *tv = weft_array_data(tab, 0);
        for (int64_t i = 0; i < tn; i++) {
            tv[i] = (float)i * 0.25f;
        }
        weft_acc *t = weft_use(p, tab);
        weft_array_release(tab); /* the program keeps it */
        weft_fun *g = weft_fun1(p, WEFT_DIM(1));
        weft_exp *ix = weft_arg(g, 0);
        weft_exp *j = weft_rem(weft_mul(weft_get(ix, 0), weft_i64(p, 31)),
                               weft_i64(p, tn));
        weft_fun_return(g,
                        weft_add(weft_at(x, ix), weft_at(t, weft_index1(j))));
        return weft_generate(weft_shape(x), g);
    }
    case 16: {
        weft_fun *one = weft_fun1(p, WEFT_F32);
        weft_fun_return(one, weft_f32(p, 1.0f));
        weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(zero, weft_f32(p, 0.0f));
        weft_acc *bins = weft_generate(weft_index1(weft_i64(p, 17)), zero);
        weft_fun *bin = ignoring(p, 2, 1, 17);
        weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_permute(add, bins, bin, weft_map(one, x));
    }
    case PERMUTES: {
        weft_fun *cv = weft_fun1(p, WEFT_F32);
        weft_fun_return(
            cv, weft_convert(weft_mul(weft_arg(cv, 0), weft_f32(p, 8.0f)),
                             WEFT_I32));
        weft_acc *xi = weft_map(cv, x);
        weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(zero, weft_i32(p, 0));
        weft_acc *bins = weft_generate(weft_index1(weft_i64(p, 256)), zero);
        weft_fun *bin = weft_fun1(p, WEFT_DIM(1));
        weft_exp *v = weft_convert(weft_at(xi, weft_arg(bin, 0)), WEFT_I64);
        weft_fun_return(bin, weft_index1(weft_rem(v, weft_i64(p, 256))));
        weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_permute(add, bins, bin, xi);
    }
    case PERMUTES + 1: {
        weft_fun *tri = weft_fun1(p, WEFT_F32);
        weft_exp *a = weft_arg(tri, 0);
        weft_exp *ai = weft_convert(weft_mul(a, weft_f32(p, 8.0f)), WEFT_I32);
        weft_fun_return(
            tri, weft_tuple(p, 3,
                            (weft_exp *[]){ai, ai, weft_convert(a, WEFT_F64)}));
        weft_acc *src = weft_map(tri, x);
        weft_type tt = weft_acc_type(src);
        weft_fun *dflt = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(dflt, weft_tuple(p, 3,
                                         (weft_exp *[]){weft_i32(p, -1),
                                                        weft_i32(p, 100000),
                                                        weft_f64(p, 0.5)}));
        weft_acc *bins = weft_generate(weft_index1(weft_i64(p, 61)), dflt);
        weft_fun *bin = ignoring(p, 3, 0, 61);
        weft_fun *c = weft_fun2(p, tt, tt);
        weft_exp *l = weft_arg(c, 0), *r = weft_arg(c, 1);
        weft_fun_return(
            c, weft_tuple(
                   p, 3,
                   (weft_exp *[]){
                       weft_prim2(WEFT_OP_MAX, weft_get(l, 0), weft_get(r, 0)),
                       weft_prim2(WEFT_OP_MIN, weft_get(l, 1), weft_get(r, 1)),
                       weft_add(weft_get(l, 2), weft_get(r, 2))}));
        return weft_permute(c, bins, bin, src);
    }
    case PERMUTES + 2: return f32_bins(p, 1000, x);
    case 17: {
        weft_fun *cv = weft_fun1(p, WEFT_F32);
        weft_fun_return(cv, weft_convert(weft_arg(cv, 0), WEFT_I32));
        weft_fun *seven = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(seven, weft_i64(p, 7));
        weft_acc *seg = weft_generate(
            weft_index1(weft_quot(weft_size(x), weft_i64(p, 7))), seven);
        weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        return weft_fold_seg(add, weft_i32(p, 0), weft_map(cv, x), seg);
    }
    case UNEVEN: {
        weft_type st =
            weft_type_tuple(ctx, 2, (weft_type[]){WEFT_F32, WEFT_I32});
        weft_fun *more = weft_fun1(p, st);
        weft_exp *v = weft_arg(more, 0);
        weft_fun_return(more,
                        weft_and(weft_gt(weft_get(v, 0), weft_f32(p, 1)),
                                 weft_lt(weft_get(v, 1), weft_i32(p, 40))));
        weft_fun *halve = weft_fun1(p, st);
        v = weft_arg(halve, 0);
        weft_fun_return(
            halve, weft_tuple(p, 2,
                              (weft_exp *[]){
                                  weft_mul(weft_get(v, 0), weft_f32(p, 0.5f)),
                                  weft_add(weft_get(v, 1), weft_i32(p, 1))}));
        weft_fun *g = weft_fun1(p, WEFT_DIM(rank));
        weft_exp *at = weft_at(x, weft_arg(g, 0));
        weft_exp *r = weft_while(
            more, halve, weft_tuple(p, 2, (weft_exp *[]){at, weft_i32(p, 0)}));
        weft_fun_return(
            g,
            weft_tuple(p, 2, (weft_exp *[]){weft_get(r, 1), weft_get(r, 0)}));
        return weft_generate(weft_shape(x), g);
    }
    default: {
        weft_fun *one = weft_fun1(p, WEFT_F32);
        weft_fun_return(one, weft_f32(p, 1.0f));
        return f32_bins(p, 17, weft_map(one, x));
    }
    }
}

/* Run program k on input of the shape in ctx: the bytes of the result's
 * leaves one after another (a copy; *n bytes). */
static unsigned char *run(weft_context *ctx, int k, int rank,
                          const int64_t *shape, size_t *n)
{
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *r = program(ctx, p, k, rank);
    TU_OK(weft_program_status(p));
    weft_array *in = pattern(ctx, rank, shape), *out = NULL;
    TU_OK(weft_run1(p, &r, 1, &in, 1, &out, 1));
    size_t size = (size_t)weft_array_size(out), bytes = 0;
    weft_type t = weft_array_type(out);
    int leaves = weft_type_leaves(ctx, t);
    for (int l = 0; l < leaves; l++) {
        bytes += size * weft_type_size(weft_type_leaf(ctx, t, l));
    }
    unsigned char *copy = malloc(bytes > 0 ? bytes : 1);
    ck_assert_ptr_nonnull(copy);
    size_t at = 0;
    for (int l = 0; l < leaves && size > 0; l++) {
        size_t b = size * weft_type_size(weft_type_leaf(ctx, t, l));
        const void *y = weft_array_data(out, l);
        ck_assert_ptr_nonnull(y);
        memcpy(copy + at, y, b);
        at += b;
    }
    *n = bytes;
    weft_array_release(in);
    weft_array_release(out);
    weft_program_free(p);
    return copy;
}

/* The shapes: split (large), not divisible, smaller than the devices,
 * empty, ranks 0 to 3. */
static const struct {
    int rank;
    int64_t shape[3];
} shapes[] = {
    {1, {3000001}}, {1, {1}},          {1, {0}},
    {1, {4097}},    {2, {1001, 1023}}, {3, {3, 517, 1031}},
    {0, {0}},       {2, {1, 1 << 20}}, {3, {2, 0, 5}},
};

/* Program k applies to rank `rank` (the generate, reverse, scan and
 * permute programs are written for rank 1). */
static bool applies(int k, int rank)
{
    return rank == 0
               ? k == 0 || k == 3 || k == 7
               : k == 0 || k == 3 || k == 4 || k == 7 || k == 8 || k == 9 ||
                     k == 10 || k == 11 || k == 14 || k >= 18 || rank == 1;
}

/* Whether the n floats fb are within rel (relative, at least absolute)
 * of one GPU's fa: 0, or 1 with the first difference printed. */
static int near(const char *devices, unsigned flags, int k, size_t s,
                const float *fa, const float *fb, size_t n, float rel)
{
    for (size_t i = 0; i < n; i++) {
        float tol = rel * fmaxf(1.0f, fabsf(fa[i]));
        if (!(fabsf(fa[i] - fb[i]) <= tol)) {
            printf("devices %s%s, program %d, shape %zu: element %zu is "
                   "%.9g, one GPU's %.9g\n",
                   devices, flags ? " (no fusion)" : "", k, s, i, (double)fb[i],
                   (double)fa[i]);
            return 1;
        }
    }
    return 0;
}

static void compare(const char *devices, unsigned flags, bool relays)
{
    weft_context *one = open_devices(NULL, flags);
    weft_context *many =
        relays ? open_relays(devices, flags) : open_devices(devices, flags);
    int differ = 0; /* every difference is printed, then the test fails */
    for (int k = 0; k < NPROG; k++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            if (!applies(k, shapes[s].rank)) {
                continue;
            }
            size_t n1 = 0, n2 = 0;
            unsigned char *a =
                run(one, k, shapes[s].rank, shapes[s].shape, &n1);
            unsigned char *b =
                run(many, k, shapes[s].rank, shapes[s].shape, &n2);
            ck_assert_uint_eq(n1, n2);
            if (memcmp(a, b, n1) != 0) {
                /* one GPU again: a result that differs from itself is
                 * not the devices' doing */
                size_t n3 = 0;
                unsigned char *c =
                    run(one, k, shapes[s].rank, shapes[s].shape, &n3);
                if (n3 != n1 || memcmp(a, c, n1) != 0) {
                    printf("program %d, shape %zu: one GPU gives another "
                           "result when run again\n",
                           k, s);
                }
                free(c);
            }
            bool fscan = k == SCAN_F32 || k == SCAN_F32_SEEDED;
            if (float_fold(k) || fscan) {
                /* folds: the parts' folds combine in another order than
                 * one GPU's pieces; each result is the exact sum within
                 * eps = 2^-24 times the longest chain of additions done
                 * one after another (a lane's run, a warp's tiles of a
                 * piece, the pieces), a few hundred here, so 1e-5
                 * relative holds both with room.  The f32 scan: its
                 * look-back combines the predecessors' aggregates or the
                 * first inclusive prefix it finds, as timing has it
                 * (ptx/scan.c), so its last bits vary from run to run on
                 * one GPU too: 2e-4 relative, the drift of one rounding
                 * per tile (at most 733 tiles of 4096 here, each 2^-24)
                 * with room */
                differ += near(devices, flags, k, s, (const float *)a,
                               (const float *)b, n1 / sizeof(float),
                               fscan ? 2e-4f : 1e-5f);
                free(a);
                free(b);
                continue;
            }
            for (size_t i = 0; i < n1; i++) {
                if (a[i] != b[i]) { /* bit for bit (the head comment) */
                    printf("devices %s%s, program %d, shape %zu: byte %zu "
                           "of %zu differs from one GPU's\n",
                           devices, flags ? " (no fusion)" : "", k, s, i, n1);
                    differ++;
                    break;
                }
            }
            free(a);
            free(b);
        }
    }
    weft_stats st;
    TU_OK(weft_context_stats(many, &st));
    printf("devices %s%s: %d devices, %llu kernels split, %llu bytes "
           "handed between them, bytes on each:",
           devices, flags ? " (no fusion)" : "", st.devices,
           (unsigned long long)st.kernels_split,
           (unsigned long long)st.device_bytes_moved);
    for (int i = 0; i < st.devices && i < 8; i++) {
        printf(" %llu", (unsigned long long)st.device_bytes_on[i]);
    }
    printf("\n");
    ck_assert_msg(differ == 0,
                  "devices %s: %d results differ from one "
                  "GPU's (printed above)",
                  devices, differ);
    int count = 0;
    TU_OK(weft_device_count(&count));
    int want = strcmp(devices, "all") == 0 ? (count < 8 ? count : 8) : 2;
    ck_assert_int_eq(st.devices, want);
    if (want > 1) {
        ck_assert_uint_gt(st.kernels_split, 0);
        /* the folds and scans of 3 million elements were spread */
        ck_assert_uint_gt(st.device_bytes_moved, 0);
        for (int i = 0; i < want; i++) {
            ck_assert_msg(st.device_bytes_on[i] > 0,
                          "device %d of %s holds nothing", i, devices);
        }
    }
    weft_context_free(many);
    weft_context_free(one);
}

START_TEST(same_device_twice)
{
    compare("0,0", 0, false);
}
END_TEST

START_TEST(same_device_twice_unfused)
{
    compare("0,0", WEFT_FLAG_NO_FUSION, false);
}
END_TEST

START_TEST(all_devices)
{
    compare("all", 0, false);
}
END_TEST

/* With three devices or more, every other device's part queued by its
 * relay (fewer: as all_devices) */
START_TEST(all_devices_relays)
{
    compare("all", 0, true);
}
END_TEST

START_TEST(one_ordinal_is_one_gpu)
{
    weft_context *ctx = open_devices("0", 0);
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    ck_assert_int_eq(st.devices, 1);
    ck_assert_uint_eq(st.kernels_split, 0);
    weft_context_free(ctx);
}
END_TEST

/* WEFT_DEVICE_MEMORY (weft_config.device_memory) bounds each device:
 * four arrays of 24 MiB (96 MiB, 1.5 times the bound of 64 MiB) live at
 * once on "0,0", each "device" holding half of each (48 MiB), run with
 * no eviction and the right values (on one GPU the same bound could not
 * hold them). */
START_TEST(memory_per_device)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= WEFT_FLAG_NO_ENV | DT_TIER;
    cfg.devices = "0,0";
    cfg.device_memory = (uint64_t)64 << 20;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_F32, 1);
    weft_fun *inc = weft_fun1(p, WEFT_F32);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_f32(p, 1.0f)));
    weft_fun *dbl = weft_fun1(p, WEFT_F32);
    weft_fun_return(dbl, weft_mul(weft_arg(dbl, 0), weft_f32(p, 2.0f)));
    weft_fun *add = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *a = weft_map(inc, x), *b = weft_map(dbl, x);
    weft_acc *r[3] = {a, b, weft_zipwith(add, a, b)};
    TU_OK(weft_program_status(p));
    int64_t n = (int64_t)6 << 20; /* 24 MiB of f32 */
    weft_array *in = pattern(ctx, 1, &n), *out[3] = {NULL, NULL, NULL};
    TU_OK(weft_run1(p, r, 3, &in, 1, out, 3));
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    ck_assert_uint_eq(st.evictions, 0);
    const float *xs = weft_array_data(in, 0);
    const float *c = weft_array_data(out[2], 0);
    ck_assert_ptr_nonnull(c);
    for (int64_t i = 0; i < n; i += 4099) {
        /* x + 1 + 2 x: exact for these x (multiples of 1/8 below 125) */
        ck_assert_float_eq(c[i], xs[i] + 1.0f + 2.0f * xs[i]);
    }
    for (int i = 0; i < 3; i++) {
        weft_array_release(out[i]);
    }
    weft_array_release(in);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* The permutes PERMUTES .. PERMUTES + NPERMUTES - 1 on one GPU, on "0,0"
 * and on every device, fused and unfused (a default array of its own:
 * the kernel without a fused default's accumulators), over compare's
 * shapes of rank 1 (3 million elements split; 4097, 1 and 0 on device 0
 * alone): bit for bit but the f32 sums, whose bins each add their 3000
 * positive values in an order that timing decides (on one GPU too), so
 * that each result is within 3000 2^-24 (1.8e-4) of the exact sum,
 * relative to it, and two results within 4e-4 of each other.  The
 * permutes must have been split. */
START_TEST(split_permutes)
{
    const char *lists[] = {"0,0", "all"};
    int count = 0;
    TU_OK(weft_device_count(&count));
    int differ = 0;
    for (int u = 0; u < 2; u++) {
        unsigned flags = u ? WEFT_FLAG_NO_FUSION : 0;
        weft_context *one = open_devices(NULL, flags);
        for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
            weft_context *many = open_devices(lists[l], flags);
            weft_stats before, after;
            TU_OK(weft_context_stats(many, &before));
            for (int k = PERMUTES; k < PERMUTES + NPERMUTES; k++) {
                for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                    if (shapes[s].rank != 1) {
                        continue;
                    }
                    size_t n1 = 0, n2 = 0;
                    unsigned char *a = run(one, k, 1, shapes[s].shape, &n1);
                    unsigned char *b = run(many, k, 1, shapes[s].shape, &n2);
                    ck_assert_uint_eq(n1, n2);
                    if (k == PERMUTES + 2) {
                        differ +=
                            near(lists[l], flags, k, s, (const float *)a,
                                 (const float *)b, n1 / sizeof(float), 4e-4f);
                    } else if (memcmp(a, b, n1) != 0) {
                        printf("devices %s%s, permute %d, shape %zu: differs "
                               "from one GPU's\n",
                               lists[l], flags ? " (no fusion)" : "", k, s);
                        differ++;
                    }
                    free(a);
                    free(b);
                }
            }
            TU_OK(weft_context_stats(many, &after));
            if (strcmp(lists[l], "0,0") == 0 || count > 1) {
                ck_assert_uint_gt(after.kernels_split, before.kernels_split);
            }
            weft_context_free(many);
        }
        weft_context_free(one);
    }
    ck_assert_msg(differ == 0, "%d permutes differ (printed above)", differ);
}
END_TEST

/* A histogram over "0,0" (permute (+) of ones into 256 bins by key, the
 * keys i * 7919 mod 256 of 2^21 + 3 positions) is one kernel split over
 * the two slots (kernels_split grows), copies between them only the
 * second slot's zero accumulators (1,064 bytes: 256 i32 sums, the ticket,
 * 8 words of bits and a word to make the set's words even; its
 * reductions into the result are peer atomics, uncounted), and counts
 * each key as the host does. */
START_TEST(permute_split)
{
    weft_context *ctx = open_devices("0,0", 0);
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *keys = weft_param(p, WEFT_I32, 1);
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_i32(p, 0));
    weft_acc *bins = weft_generate(weft_index1(weft_i64(p, 256)), zero);
    weft_fun *one = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(one, weft_i32(p, 1));
    weft_acc *ones = weft_generate(weft_shape(keys), one);
    weft_fun *bin = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(bin, weft_index1(weft_convert(
                             weft_at(keys, weft_arg(bin, 0)), WEFT_I64)));
    weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    weft_acc *r = weft_permute(add, bins, bin, ones);
    TU_OK(weft_program_status(p));
    int64_t n = ((int64_t)1 << 21) + 3;
    weft_array *in = NULL, *out = NULL;
    TU_OK(weft_array_create(ctx, WEFT_I32, 1, &n, &in));
    int32_t *k = weft_array_data(in, 0);
    int32_t want[256] = {0};
    for (int64_t i = 0; i < n; i++) {
        k[i] = (int32_t)((i * 7919) % 256);
        want[k[i]]++;
    }
    weft_stats before, after;
    TU_OK(weft_context_stats(ctx, &before));
    TU_OK(weft_run1(p, &r, 1, &in, 1, &out, 1));
    TU_OK(weft_context_stats(ctx, &after));
    ck_assert_uint_gt(after.kernels_split, before.kernels_split);
    ck_assert_uint_eq(after.device_bytes_moved - before.device_bytes_moved,
                      1064);
    ck_assert_int_eq(weft_array_size(out), 256);
    const int32_t *got = weft_array_data(out, 0);
    ck_assert_ptr_nonnull(got);
    for (int b = 0; b < 256; b++) {
        ck_assert_int_eq(got[b], want[b]);
    }
    weft_array_release(in);
    weft_array_release(out);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(bad_lists)
{
    int count = 0;
    TU_OK(weft_device_count(&count));
    char past[32];
    snprintf(past, sizeof past, "0,%d", count);
    const char *bad[] = {"0,", "x", "0;1", past, "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        weft_config cfg = weft_config_default();
        cfg.backend = WEFT_BACKEND_PTX;
        cfg.flags |= WEFT_FLAG_NO_ENV;
        cfg.devices = bad[i];
        weft_context *ctx = NULL;
        TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&cfg, &ctx));
        ck_assert_ptr_null(ctx);
    }
    /* the message names the missing ordinal */
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    cfg.devices = past;
    weft_context *ctx = NULL;
    ck_assert_int_eq(weft_context_create(&cfg, &ctx),
                     WEFT_ERR_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "no CUDA device %d", count);
    ck_assert_msg(strstr(weft_last_error(), want), "%s", weft_last_error());
}
END_TEST

/* The uneven program (UNEVEN) on one GPU, on "0,0" and on every device,
 * over the shapes of compare and more (piece sizes for blocks of 256):
 * 65,536 elements (pieces of 4,096 on two slots), 2 x 3 x 65,537 (pieces
 * of 24,576 on two slots, the last one short), and 64,512 (63 units of
 * GPU_SPLIT_UNIT: not split, on device 0 alone).  Pieces of the most,
 * 65,536 chunks, come with 3 million elements; 1001 x 1023 is cut into
 * pieces of 63,744 on two slots and 31,744 on four.  The results must be
 * one GPU's bit for bit (each element is computed as on one device), and
 * the uneven kernels must have been split. */
START_TEST(uneven_pieces)
{
    static const struct {
        int rank;
        int64_t shape[3];
    } more[] = {{1, {65536}}, {3, {2, 3, 65537}}, {1, {64512}}};
    const char *lists[] = {"0,0", "all"};
    weft_context *one = open_devices(NULL, 0);
    int count = 0;
    TU_OK(weft_device_count(&count));
    size_t ns = sizeof shapes / sizeof shapes[0];
    size_t nm = sizeof more / sizeof more[0];
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        weft_context *many = open_devices(lists[l], 0);
        weft_stats before, after;
        TU_OK(weft_context_stats(many, &before));
        for (size_t s = 0; s < ns + nm; s++) {
            int rank = s < ns ? shapes[s].rank : more[s - ns].rank;
            const int64_t *shape =
                s < ns ? shapes[s].shape : more[s - ns].shape;
            size_t n1 = 0, n2 = 0;
            unsigned char *a = run(one, UNEVEN, rank, shape, &n1);
            unsigned char *b = run(many, UNEVEN, rank, shape, &n2);
            ck_assert_uint_eq(n1, n2);
            ck_assert_msg(memcmp(a, b, n1) == 0,
                          "devices %s, shape %zu: the uneven generate "
                          "differs from one GPU's",
                          lists[l], s);
            free(a);
            free(b);
        }
        TU_OK(weft_context_stats(many, &after));
        if (strcmp(lists[l], "0,0") == 0 || count > 1) {
            ck_assert_uint_gt(after.kernels_split, before.kernels_split);
        }
        weft_context_free(many);
    }
    weft_context_free(one);
}
END_TEST

/* A generate over 70,001 elements whose while loop reads a used table
 * of 2^18 f32 (1 MiB: one granule, on device 0) at its counter, from 0 to
 * 2048 in every element (sk_kernel.even_loops), weighted by x ! i.  On
 * "0,0" the second slot reads a replica of the table (multi.c,
 * "Replicas"), copied before its part: device_bytes_moved grows by the
 * table's bytes at least.  The sums run in one order in every element,
 * so the results are one GPU's bit for bit. */
static float *loop_sums(weft_context *ctx, int64_t n, uint64_t *moved)
{
    int64_t tn = (int64_t)1 << 18;
    weft_array *tab = pattern(ctx, 1, &tn), *x = pattern(ctx, 1, &n);
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_F32, 1);
    weft_acc *t = weft_use(p, tab);
    weft_type st = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I64, WEFT_F32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_fun *more = weft_fun1(p, st);
    weft_fun_return(more,
                    weft_lt(weft_get(weft_arg(more, 0), 0), weft_i64(p, 2048)));
    weft_fun *step = weft_fun1(p, st);
    weft_exp *v = weft_arg(step, 0), *j = weft_get(v, 0);
    weft_exp *w =
        weft_mul(weft_at(t, weft_index1(j)), weft_at(xs, weft_arg(g, 0)));
    weft_fun_return(step,
                    weft_tuple(p, 2,
                               (weft_exp *[]){weft_add(j, weft_i64(p, 1)),
                                              weft_add(weft_get(v, 1), w)}));
    weft_exp *r = weft_while(
        more, step,
        weft_tuple(p, 2, (weft_exp *[]){weft_i64(p, 0), weft_f32(p, 0)}));
    weft_fun_return(g, weft_get(r, 1));
    weft_acc *res = weft_generate(weft_shape(xs), g);
    TU_OK(weft_program_status(p));
    weft_stats before, after;
    TU_OK(weft_context_stats(ctx, &before));
    weft_array *out = NULL;
    TU_OK(weft_run1(p, &res, 1, &x, 1, &out, 1));
    TU_OK(weft_context_stats(ctx, &after));
    *moved = after.device_bytes_moved - before.device_bytes_moved;
    float *copy = malloc(sizeof *copy * (size_t)n);
    ck_assert_ptr_nonnull(copy);
    const float *y = weft_array_data(out, 0);
    ck_assert_ptr_nonnull(y);
    memcpy(copy, y, sizeof *copy * (size_t)n);
    weft_array_release(out);
    weft_array_release(x);
    weft_array_release(tab);
    weft_program_free(p);
    return copy;
}

START_TEST(loop_replicas)
{
    int64_t n = 70001;
    weft_context *one = open_devices(NULL, 0), *two = open_devices("0,0", 0);
    uint64_t moved1 = 0, moved2 = 0;
    float *a = loop_sums(one, n, &moved1), *b = loop_sums(two, n, &moved2);
    ck_assert_uint_eq(moved1, 0);
    ck_assert_uint_ge(moved2, (uint64_t)4 << 18);
    for (int64_t i = 0; i < n; i++) {
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof *a) == 0,
                      "element %lld: %.9g on 0,0, %.9g on one GPU",
                      (long long)i, (double)b[i], (double)a[i]);
    }
    free(a);
    free(b);
    weft_context_free(two);
    weft_context_free(one);
}
END_TEST

/* A scan of one row long enough that each part of it over two or four
 * devices has more tiles than its grid has blocks (3001 tiles of 8192
 * positions and 17 more: 750 to 1501 a part against about 4 blocks an
 * SM), so that the reduce of every part but the last takes runs of
 * several tiles, the last of them shorter (ptx/scan.c, "Several
 * devices": fused, the part's runs before its tiles, each part on a
 * device of its own).  scanl1, scanr1, scanl 7 and scanr' 2 (+) of i32,
 * every position and total against the host's sums (wrapping, so exact),
 * on every device and on "0,0" (the reduce in a phase of its own). */
START_TEST(long_scan_runs)
{
    const char *lists[] = {"all", "0,0"};
    int64_t n = (int64_t)8192 * 3001 + 17;
    int32_t *x = malloc(sizeof *x * (size_t)n);
    uint32_t *want = malloc(sizeof *want * (size_t)n);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(want);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (int32_t)((i * 7919 + 13) % 1000) - 500;
    }
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        weft_context *ctx = open_devices(lists[l], 0);
        weft_program *p = NULL;
        TU_OK(weft_program_create(ctx, &p));
        weft_acc *xs = weft_param(p, WEFT_I32, 1);
        weft_fun *add = weft_fun2(p, WEFT_I32, WEFT_I32);
        weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
        weft_acc *pr = weft_scanr_(add, weft_i32(p, 2), xs);
        weft_acc *r[5] = {weft_scanl1(add, xs), weft_scanr1(add, xs),
                          weft_scanl(add, weft_i32(p, 7), xs), weft_aget(pr, 0),
                          weft_aget(pr, 1)};
        weft_executable *exe = NULL;
        TU_OK(weft_compile(p, r, 5, &exe));
        weft_array *in = NULL, *out[5] = {NULL};
        TU_OK(weft_array_from_host(ctx, WEFT_I32, 1, &n,
                                   (const void *const[]){x}, &in));
        TU_OK(weft_run(exe, &in, 1, out, 5));
        /* 0 scanl1, 1 scanr1, 2 scanl 7 (n + 1), 3 scanr' 2 exclusive,
         * 4 its total */
        for (int k = 0; k < 4; k++) {
            bool right = k == 1 || k == 3, excl = k >= 2;
            uint32_t acc = k == 2 ? 7u : (k == 3 ? 2u : 0u);
            for (int64_t j = 0; j < n; j++) {
                int64_t i = right ? n - 1 - j : j;
                uint32_t before = acc;
                acc += (uint32_t)x[i];
                want[i] = excl ? before : acc;
            }
            const int32_t *got = weft_array_data(out[k], 0);
            ck_assert_ptr_nonnull(got);
            for (int64_t i = 0; i < n; i++) {
                ck_assert_msg((uint32_t)got[i] == want[i],
                              "%s, scan %d, position %lld of %lld: %d, "
                              "expected %d",
                              lists[l], k, (long long)i, (long long)n, got[i],
                              (int)want[i]);
            }
            if (k == 2) {
                ck_assert_int_eq((uint32_t)got[n], acc);
            } else if (k == 3) {
                const int32_t *t = weft_array_data(out[4], 0);
                ck_assert_ptr_nonnull(t);
                ck_assert_int_eq((uint32_t)t[0], acc);
            }
        }
        int count = 0;
        TU_OK(weft_device_count(&count));
        weft_stats st;
        TU_OK(weft_context_stats(ctx, &st));
        if (count > 1 || strcmp(lists[l], "0,0") == 0) {
            ck_assert_uint_gt(st.kernels_split, 0);
        }
        printf("long_scan_runs: devices %s, %lld positions, 4 scans exact\n",
               lists[l], (long long)n);
        fflush(stdout);
        for (int k = 0; k < 5; k++) {
            weft_array_release(out[k]);
        }
        weft_array_release(in);
        weft_executable_free(exe);
        weft_program_free(p);
        weft_context_free(ctx);
    }
    free(want);
    free(x);
}
END_TEST

/* An uneven generate large enough for pieces of one granule (multi.c,
 * "Pieces": 2^24 + 12,345 elements give each of two or four devices 8
 * such pieces and more; eight fall back to smaller pieces), whose result
 * (the halvings of x ! i above 1, i32; what is left, f64: leaves of 4 and
 * 8 bytes, interleaved in runs of one and two granules) is read back on
 * the host, then fed to a map split by ranges (\(k, v) -> k + v), whose
 * every device reads the interleaved leaves wherever they lie.  Values
 * are exact (x a multiple of 1/8 plus 1/4, halved), so both results are
 * compared with the host's for equality at every element, on "0,0" and
 * on every device.  Run again, the generate takes its ranges from the
 * pool: the device memory held does not grow. */
START_TEST(interleaved_output)
{
    const char *lists[] = {"0,0", "all"};
    int64_t n = ((int64_t)1 << 24) + 12345;
    int count = 0;
    TU_OK(weft_device_count(&count));
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        weft_context *ctx = open_devices(lists[l], 0);
        weft_type st =
            weft_type_tuple(ctx, 2, (weft_type[]){WEFT_F64, WEFT_I32});
        weft_type rt =
            weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I32, WEFT_F64});
        weft_program *p = NULL, *q = NULL;
        TU_OK(weft_program_create(ctx, &p));
        weft_acc *x = weft_param(p, WEFT_F64, 1);
        weft_fun *more = weft_fun1(p, st);
        weft_fun_return(
            more, weft_gt(weft_get(weft_arg(more, 0), 0), weft_f64(p, 1)));
        weft_fun *halve = weft_fun1(p, st);
        weft_exp *v = weft_arg(halve, 0);
        weft_fun_return(
            halve, weft_tuple(p, 2,
                              (weft_exp *[]){
                                  weft_mul(weft_get(v, 0), weft_f64(p, 0.5)),
                                  weft_add(weft_get(v, 1), weft_i32(p, 1))}));
        weft_fun *g = weft_fun1(p, WEFT_DIM(1));
        weft_exp *r =
            weft_while(more, halve,
                       weft_tuple(p, 2,
                                  (weft_exp *[]){weft_at(x, weft_arg(g, 0)),
                                                 weft_i32(p, 0)}));
        weft_fun_return(
            g,
            weft_tuple(p, 2, (weft_exp *[]){weft_get(r, 1), weft_get(r, 0)}));
        weft_acc *res = weft_generate(weft_shape(x), g);
        TU_OK(weft_program_status(p));
        TU_OK(weft_program_create(ctx, &q));
        weft_acc *y = weft_param(q, rt, 1);
        weft_fun *sum = weft_fun1(q, rt);
        weft_exp *kv = weft_arg(sum, 0);
        weft_fun_return(sum, weft_add(weft_convert(weft_get(kv, 0), WEFT_F64),
                                      weft_get(kv, 1)));
        weft_acc *sums = weft_map(sum, y);
        TU_OK(weft_program_status(q));
        weft_array *in = NULL, *out = NULL, *out2 = NULL;
        TU_OK(weft_array_create(ctx, WEFT_F64, 1, &n, &in));
        double *xs = weft_array_data(in, 0);
        for (int64_t i = 0; i < n; i++) {
            xs[i] = (double)((i * 7919) % 1000) / 8.0 + 0.25;
        }
        weft_stats before, after;
        TU_OK(weft_context_stats(ctx, &before));
        TU_OK(weft_run1(p, &res, 1, &in, 1, &out, 1));
        TU_OK(weft_run1(q, &sums, 1, &out, 1, &out2, 1));
        TU_OK(weft_context_stats(ctx, &after));
        if (strcmp(lists[l], "0,0") == 0 || count > 1) {
            ck_assert_uint_ge(after.kernels_split, before.kernels_split + 2);
        }
        const double *s2 = weft_array_data(out2, 0);
        const int32_t *k = weft_array_data(out, 0);
        const double *left = weft_array_data(out, 1);
        ck_assert_ptr_nonnull(s2);
        ck_assert_ptr_nonnull(k);
        ck_assert_ptr_nonnull(left);
        int32_t k_last = k[n - 1];
        for (int64_t i = 0; i < n; i++) {
            double w = xs[i];
            int32_t c = 0;
            while (w > 1) {
                w *= 0.5;
                c++;
            }
            ck_assert_msg(k[i] == c && left[i] == w && s2[i] == c + w,
                          "devices %s, element %lld: (%d, %.17g) -> %.17g, "
                          "not (%d, %.17g) -> %.17g",
                          lists[l], (long long)i, k[i], left[i], s2[i], c, w,
                          c + w);
        }
        weft_array_release(out2);
        weft_array_release(out);
        /* run again: the pool hands back the freed interleaved ranges (the
         * layout is part of its key), no new device memory */
        TU_OK(weft_run1(p, &res, 1, &in, 1, &out, 1));
        weft_stats again;
        TU_OK(weft_context_stats(ctx, &again));
        ck_assert_uint_eq(again.device_bytes, after.device_bytes);
        ck_assert_int_eq(((const int32_t *)weft_array_data(out, 0))[n - 1],
                         k_last);
        weft_array_release(out);
        weft_array_release(in);
        weft_program_free(q);
        weft_program_free(p);
        weft_context_free(ctx);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ptx_multi");
    TCase *tc = tcase_create("multi");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, one_ordinal_is_one_gpu);
    tcase_add_test(tc, bad_lists);
    tcase_add_test(tc, memory_per_device);
    tcase_add_test(tc, permute_split);
    tcase_add_test(tc, split_permutes);
    tcase_add_test(tc, same_device_twice);
    tcase_add_test(tc, same_device_twice_unfused);
    tcase_add_test(tc, all_devices);
    tcase_add_test(tc, all_devices_relays);
    tcase_add_test(tc, uneven_pieces);
    tcase_add_test(tc, interleaved_output);
    tcase_add_test(tc, loop_replicas);
    suite_add_tcase(s, tc);
    /* a case of its own: CK_RUN_CASE=long_scan runs it alone */
    TCase *ls = tcase_create("long_scan");
    tcase_set_timeout(ls, 600);
    tcase_add_test(ls, long_scan_runs);
    suite_add_tcase(s, ls);
    return s;
}

TU_MAIN(suite)
