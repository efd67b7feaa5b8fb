/*
 * tests/test_cpu_scan.c: the six scans on the CPU backend against the
 * reference interpreter.
 *
 * Each case builds one program in two contexts (the interpreter, and the
 * CPU backend with three workers so that chunk counts are odd), runs both
 * on the same random input over many shapes, and compares every output
 * leaf: exactly for integers and bool, and for floats within a stated
 * tolerance (the CPU backend reassociates a float sum: it scans long rows
 * in chunks, with vectorised chunk reductions):
 *   f32 sums: |got - want| <= 1e-3 * max(1, |want|)
 *   f64 sums: 1e-9 * max(1, |want|)
 *   min / max of any type: exact.
 * The shapes reach every path of the skeleton: empty rows and empty
 * outer extents, one element, odd and prime lengths, rows shorter than a
 * chunk, and rows of millions that take the three-phase path (chunk
 * reductions, carries, rescans), in ranks 1 to 3.  Combines include a
 * non-commutative associative one on a tuple type (composition of affine
 * maps x -> a x + b, which catches any swapped argument or carry order), a
 * combine with a free variable, seeds that are not identities, and inputs
 * that are fused producers (map, zipWith of different shapes, a gather,
 * including one that reads out of bounds).
 */
#include <pthread.h>

#include "tu_cmp.h"

#ifdef WEFT_HAVE_LLVM

#define NKIND 6

/* ------------------------------------------------------------------------
 * Combines and their data
 * ---------------------------------------------------------------------- */

typedef enum combo {
    C_I32_ADD,  /* i32 +, seed 7 */
    C_AFFINE,   /* (i32, i32) composition, seed (3, 5) */
    C_F32_ADD,  /* f32 +, seed 0.5 */
    C_F64_ADD,  /* f64 +, seed -1.25 */
    C_F16_MAX,  /* f16 max, seed -inf */
    C_U8_MAX,   /* u8 max, seed 3 */
    C_BOOL_OR,  /* bool ||, seed false */
    C_I64_FREE, /* i64 a + b + k, k a free variable; seed 2k */
    C_COUNT_
} combo;

static weft_type elem_type(weft_context *ctx, combo c)
{
    switch (c) {
    case C_I32_ADD: return WEFT_I32;
    case C_AFFINE: {
        weft_type comp[2] = {WEFT_I32, WEFT_I32};
        return weft_type_tuple(ctx, 2, comp);
    }
    case C_F32_ADD: return WEFT_F32;
    case C_F64_ADD: return WEFT_F64;
    case C_F16_MAX: return WEFT_F16;
    case C_U8_MAX: return WEFT_U8;
    case C_BOOL_OR: return WEFT_BOOL;
    case C_I64_FREE: return WEFT_I64;
    default: return 0;
    }
}

static double tolerance(combo c)
{
    return c == C_F32_ADD ? 1e-3 : c == C_F64_ADD ? 1e-9 : 0.0;
}

/* The combine function and the seed of combo c in program p; k is the
 * free variable of C_I64_FREE. */
static weft_fun *make_fun(weft_program *p, combo c, weft_type t, weft_exp *k,
                          weft_exp **seed)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1), *body = NULL;
    switch (c) {
    case C_I32_ADD:
        body = weft_prim2(WEFT_OP_ADD, a, b);
        *seed = weft_i32(p, 7);
        break;
    case C_AFFINE: {
        /* (a1, b1) then (a2, b2): x -> a2 (a1 x + b1) + b2 */
        weft_exp *a1 = weft_get(a, 0), *b1 = weft_get(a, 1);
        weft_exp *a2 = weft_get(b, 0), *b2 = weft_get(b, 1);
        weft_exp *comp[2] = {
            weft_prim2(WEFT_OP_MUL, a1, a2),
            weft_prim2(WEFT_OP_ADD, weft_prim2(WEFT_OP_MUL, b1, a2), b2)};
        body = weft_tuple(p, 2, comp);
        weft_exp *z[2] = {weft_i32(p, 3), weft_i32(p, 5)};
        *seed = weft_tuple(p, 2, z);
        break;
    }
    case C_F32_ADD:
        body = weft_prim2(WEFT_OP_ADD, a, b);
        *seed = weft_f32(p, 0.5f);
        break;
    case C_F64_ADD:
        body = weft_prim2(WEFT_OP_ADD, a, b);
        *seed = weft_f64(p, -1.25);
        break;
    case C_F16_MAX:
        body = weft_prim2(WEFT_OP_MAX, a, b);
        *seed = weft_f16_bits(p, 0xfc00);
        break;
    case C_U8_MAX:
        body = weft_prim2(WEFT_OP_MAX, a, b);
        *seed = weft_u8(p, 3);
        break;
    case C_BOOL_OR:
        body = weft_prim2(WEFT_OP_OR, a, b);
        *seed = weft_bool(p, 0);
        break;
    case C_I64_FREE:
        body = weft_prim2(WEFT_OP_ADD, weft_prim2(WEFT_OP_ADD, a, b), k);
        *seed = weft_prim2(WEFT_OP_MUL, k, weft_i64(p, 2));
        break;
    default: break;
    }
    weft_fun_return(f, body);
    return f;
}

static tu_rng rng; /* each test seeds it */

/* Random data for leaf `leaf` of combo c: n elements at buf. */
static void fill(combo c, weft_type lt, int leaf, int64_t n, void *buf)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = tu_rng_u64(&rng);
        unsigned char *d =
            (unsigned char *)buf + (size_t)i * weft_type_size(lt);
        switch (c) {
        case C_AFFINE:
            /* odd multipliers keep products from collapsing to 0 */
            tu_store_i(lt, d, (int64_t)(leaf == 0 ? (r | 1) : r));
            break;
        case C_F32_ADD:
        case C_F64_ADD:
            tu_store_f(lt, d, (double)(r >> 11) / 9007199254740992.0);
            break;
        case C_F16_MAX:
            tu_store_f(lt, d, ((double)(r % 20001) - 10000.0) / 16.0);
            break;
        case C_BOOL_OR: tu_store_i(lt, d, r % 50000 == 0); break;
        default: tu_store_i(lt, d, (int64_t)r); break;
        }
    }
}

/* The leaf types of combo c's elements (one, or two for the tuple). */
static int leaf_types(combo c, weft_type *leaf)
{
    leaf[0] = leaf[1] = WEFT_I32;
    if (c == C_AFFINE) {
        return 2;
    }
    leaf[0] = elem_type(NULL, c);
    return 1;
}

/* A random input of combo c's type and the given shape. */
static tu_host make_input(combo c, int rank, const int64_t *shape)
{
    weft_type leaf[2];
    int nleaf = leaf_types(c, leaf);
    tu_host h = tu_host_alloc(nleaf, leaf, rank, shape);
    for (int l = 0; l < nleaf; l++) {
        fill(c, leaf[l], l, h.size, h.data[l]);
    }
    return h;
}

/* ------------------------------------------------------------------------
 * Running one program on both backends (tu_cmp.h)
 * ---------------------------------------------------------------------- */

/* The interpreter and DT_BACKEND, three workers each (odd chunk counts),
 * both tiers unless $WEFT_TEST_TIER says otherwise. */
static void open_pair(tu_cmp *c)
{
    weft_config cfg[2] = {
        tu_cmp_config(WEFT_BACKEND_INTERP, 3, tu_tier_flags(0)),
        tu_cmp_config(DT_BACKEND, 3, tu_tier_flags(0))};
    const char *names[2] = {"interp", DT_NAME};
    tu_cmp_open(c, 2, cfg, names);
}

/* Build and compile on both sides; the compiled side must compile kernels
 * (the scans are not left to the interpreter). */
static void build_pair(tu_cmp *c, tu_build_fn build, const void *arg)
{
    weft_stats before, after;
    TU_OK(weft_context_stats(c->ctx[1], &before));
    tu_cmp_build(c, build, arg);
    TU_OK(weft_context_stats(c->ctx[1], &after));
    ck_assert_msg(after.kernels_compiled + after.kernels_reused >
                      before.kernels_compiled + before.kernels_reused,
                  "%s: the %s backend compiled no kernel", c->what, DT_NAME);
}

/* The six scans of f (seed z) over a, as results (scanl' and scanr' are
 * pairs, so there are 8 output arrays). */
static void six_scans(weft_fun *f, weft_exp *z, weft_acc *a, weft_acc **res)
{
    res[0] = weft_scanl(f, z, a);
    res[1] = weft_scanl1(f, a);
    res[2] = weft_scanl_(f, z, a);
    res[3] = weft_scanr(f, z, a);
    res[4] = weft_scanr1(f, a);
    res[5] = weft_scanr_(f, z, a);
}

/* Shapes per rank (-1 ends a list). */
static const int64_t shapes1[][1] = {{0},     {1},      {2},    {7},    {13},
                                     {4096},  {8191},   {8192}, {8193}, {24593},
                                     {65537}, {100003}, {-1}};
static const int64_t shapes2[][2] = {
    {0, 5},     {5, 0},     {1, 1},     {3, 7},     {1, 65539}, {2, 12289},
    {3, 30011}, {7, 12289}, {13, 9001}, {1000, 17}, {17, 1000}, {-1, 0}};
static const int64_t shapes3[][3] = {{0, 3, 4}, {2, 0, 3},     {2, 3, 0},
                                     {2, 3, 5}, {1, 2, 20011}, {3, 1, 16411},
                                     {4, 5, 6}, {-1, 0, 0}};

static const int64_t *shape_at(int rank, int i)
{
    const int64_t *sh = rank == 1   ? shapes1[i]
                        : rank == 2 ? shapes2[i]
                                    : shapes3[i];
    return sh[0] < 0 ? NULL : sh;
}

/* The program of check_combo: the six scans of combo c over a parameter
 * of the given rank. */
typedef struct combo_arg {
    combo c;
    int rank;
} combo_arg;

static int build_combo(weft_program *p, weft_context *ctx, const void *arg,
                       weft_acc **res)
{
    const combo_arg *ca = arg;
    weft_type t = elem_type(ctx, ca->c);
    weft_acc *xs = weft_param(p, t, ca->rank);
    weft_exp *k = NULL;
    if (ca->c == C_I64_FREE) {
        /* k = (the kp) * 3 - 1, computed on the host, used inside */
        weft_acc *kp = weft_param(p, WEFT_I64, 0);
        k = weft_prim2(WEFT_OP_SUB,
                       weft_prim2(WEFT_OP_MUL, weft_the(kp), weft_i64(p, 3)),
                       weft_i64(p, 1));
    }
    weft_exp *z = NULL;
    weft_fun *f = make_fun(p, ca->c, t, k, &z);
    six_scans(f, z, xs, res);
    return NKIND;
}

/* The six scans of combo c over a parameter of every rank and shape.  With
 * `big`, also a row of two million elements (rank 1). */
static void check_combo(combo c, bool big)
{
    for (int rank = 1; rank <= 3; rank++) {
        tu_cmp pr;
        open_pair(&pr);
        combo_arg ca = {c, rank};
        tu_cmp_case(&pr, "combo %d, rank %d", (int)c, rank);
        build_pair(&pr, build_combo, &ca);
        static const int64_t bigshape[1] = {2000003};
        bool done_big = !(big && rank == 1);
        for (int si = 0;; si++) {
            const int64_t *sh = shape_at(rank, si);
            if (!sh) {
                if (done_big) {
                    break;
                }
                sh = bigshape;
                done_big = true;
                si--; /* stay at the end of the list */
            }
            tu_host in[2] = {make_input(c, rank, sh)};
            int nin = 1;
            int64_t kv = 0;
            if (c == C_I64_FREE) {
                kv = (int64_t)(tu_rng_u64(&rng) % 1000);
                in[nin++] = tu_host_of(1, (weft_type[]){WEFT_I64}, 0, NULL,
                                       (void *[]){&kv});
            }
            TU_OK(tu_cmp_run(&pr, in, nin, tu_tol_rel(tolerance(c))));
            tu_host_free(&in[0]);
        }
        tu_cmp_close(&pr);
    }
}

START_TEST(test_scan_i32_add)
{
    rng = tu_rng_seed(0x1234567);
    check_combo(C_I32_ADD, true);
}
END_TEST

START_TEST(test_scan_tuple_affine)
{
    rng = tu_rng_seed(0x2345678);
    check_combo(C_AFFINE, true);
}
END_TEST

START_TEST(test_scan_f32_add)
{
    rng = tu_rng_seed(0x3456789);
    check_combo(C_F32_ADD, true);
}
END_TEST

START_TEST(test_scan_f64_add)
{
    rng = tu_rng_seed(0x456789a);
    check_combo(C_F64_ADD, false);
}
END_TEST

START_TEST(test_scan_max_or)
{
    rng = tu_rng_seed(0x56789ab);
    check_combo(C_F16_MAX, false);
    check_combo(C_U8_MAX, false);
    check_combo(C_BOOL_OR, false);
}
END_TEST

START_TEST(test_scan_free_variable)
{
    rng = tu_rng_seed(0x6789abc);
    check_combo(C_I64_FREE, false);
}
END_TEST

/* ------------------------------------------------------------------------
 * Fused inputs
 * ---------------------------------------------------------------------- */

/* Which producer feeds the scan. */
typedef enum feed {
    F_MAP,     /* map (\x -> 3x + 1) xs */
    F_ZIPWITH, /* zipWith (-) xs ys, shapes differ */
    F_REVERSE, /* backpermute (shape xs) (\ix -> reversed row) xs */
    F_SHIFT    /* backpermute (shape xs) (\ix -> ix + 1) xs: out of bounds */
} feed;

static weft_acc *make_feed(weft_program *p, feed fd, weft_acc *xs, weft_acc *ys)
{
    switch (fd) {
    case F_MAP: {
        weft_fun *g = weft_fun1(p, WEFT_I32);
        weft_fun_return(g, weft_prim2(WEFT_OP_ADD,
                                      weft_prim2(WEFT_OP_MUL, weft_arg(g, 0),
                                                 weft_i32(p, 3)),
                                      weft_i32(p, 1)));
        return weft_map(g, xs);
    }
    case F_ZIPWITH: {
        weft_fun *g = weft_fun2(p, WEFT_I32, WEFT_I32);
        weft_fun_return(
            g, weft_prim2(WEFT_OP_SUB, weft_arg(g, 0), weft_arg(g, 1)));
        return weft_zipwith(g, xs, ys);
    }
    case F_REVERSE:
    case F_SHIFT: {
        weft_fun *g = weft_fun1(p, WEFT_DIM(2));
        weft_exp *ix = weft_arg(g, 0);
        weft_exp *i = weft_get(ix, 0), *j = weft_get(ix, 1);
        weft_exp *nj;
        if (fd == F_REVERSE) {
            weft_exp *m = weft_get(weft_shape(xs), 1);
            nj = weft_prim2(WEFT_OP_SUB, weft_prim2(WEFT_OP_SUB, m, j),
                            weft_i64(p, 1));
        } else {
            nj = weft_prim2(WEFT_OP_ADD, j, weft_i64(p, 1));
        }
        weft_fun_return(g, weft_index2(i, nj));
        return weft_backpermute(weft_shape(xs), g, xs);
    }
    }
    return NULL;
}

/* The program of check_feed: scan number `kind` of the six over the
 * producer fd of two i32 parameters. */
typedef struct feed_arg {
    feed fd;
    int kind;
} feed_arg;

static int build_feed(weft_program *p, weft_context *ctx, const void *arg,
                      weft_acc **res)
{
    (void)ctx;
    const feed_arg *fa = arg;
    weft_acc *xs = weft_param(p, WEFT_I32, 2);
    weft_acc *ys = weft_param(p, WEFT_I32, 2);
    weft_acc *a = make_feed(p, fa->fd, xs, ys);
    weft_exp *z = NULL;
    weft_fun *f = make_fun(p, C_I32_ADD, WEFT_I32, NULL, &z);
    weft_acc *all[NKIND];
    six_scans(f, z, a, all);
    res[0] = all[fa->kind];
    return 1;
}

static void check_feed(feed fd)
{
    static const int64_t sx[][2] = {{0, 3},     {3, 0},      {1, 1},
                                    {2, 9},     {1, 100003}, {3, 20011},
                                    {40, 1001}, {-1, 0}};
    for (int kind = 0; kind < NKIND; kind++) {
        tu_cmp pr;
        open_pair(&pr);
        feed_arg fa = {fd, kind};
        tu_cmp_case(&pr, "feed %d, scan %d", (int)fd, kind);
        build_pair(&pr, build_feed, &fa);
        for (int si = 0; sx[si][0] >= 0; si++) {
            /* ys: one row fewer and a few more columns, so the zipWith
             * result is the intersection and the kernel's general
             * variant runs */
            int64_t sy[2] = {sx[si][0] > 0 ? sx[si][0] - 1 : 0, sx[si][1] + 3};
            if (fd != F_ZIPWITH) {
                sy[0] = 1;
                sy[1] = 1;
            }
            tu_host in[2] = {make_input(C_I32_ADD, 2, sx[si]),
                             make_input(C_I32_ADD, 2, sy)};
            weft_status s = tu_cmp_run(&pr, in, 2, TU_EXACT);
            bool empty = sx[si][0] * sx[si][1] == 0;
            if (fd == F_SHIFT && !empty) {
                ck_assert_msg(s == WEFT_ERR_OUT_OF_BOUNDS, "%s: %s", pr.what,
                              weft_status_name(s));
                ck_assert_msg(strstr(pr.msg[1], "weft_run") != NULL,
                              "%s: message %s", pr.what, pr.msg[1]);
            } else {
                ck_assert_msg(s == WEFT_OK, "%s: %s", pr.what, pr.msg[0]);
            }
            tu_host_free(&in[0]);
            tu_host_free(&in[1]);
        }
        tu_cmp_close(&pr);
    }
}

START_TEST(test_scan_fused_map)
{
    rng = tu_rng_seed(0x789abcd);
    check_feed(F_MAP);
}
END_TEST

START_TEST(test_scan_fused_zipwith)
{
    rng = tu_rng_seed(0x89abcde);
    check_feed(F_ZIPWITH);
}
END_TEST

START_TEST(test_scan_fused_gather)
{
    rng = tu_rng_seed(0x9abcdef);
    check_feed(F_REVERSE);
    check_feed(F_SHIFT);
}
END_TEST

/* One executable run from several host threads at once on one context
 * must give the same answers (the gang serialises the jobs). */
typedef struct par_arg {
    weft_executable *exe;
    weft_array *in;
    weft_array *out[8];
    weft_status s;
} par_arg;

static void *par_run(void *p)
{
    par_arg *a = p;
    a->s = weft_run(a->exe, &a->in, 1, a->out, 8);
    return NULL;
}

START_TEST(test_scan_threads)
{
    rng = tu_rng_seed(0xabcdef1);
    tu_cmp pr;
    open_pair(&pr);
    combo_arg ca = {C_I32_ADD, 1};
    tu_cmp_case(&pr, "threads");
    build_pair(&pr, build_combo, &ca);
    tu_host h = make_input(C_I32_ADD, 1, TU_SH(200003));
    weft_array *both[2] = {tu_host_array(pr.ctx[0], &h),
                           tu_host_array(pr.ctx[1], &h)};
    tu_host_free(&h);
    weft_array *want[8] = {NULL};
    TU_OK(weft_run(pr.exe[0], &both[0], 1, want, 8));
    pthread_t th[4];
    par_arg args[4];
    for (int i = 0; i < 4; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].exe = pr.exe[1];
        args[i].in = both[1];
        ck_assert_int_eq(pthread_create(&th[i], NULL, par_run, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(args[i].s == WEFT_OK, "thread %d: %s", i,
                      weft_status_name(args[i].s));
        for (int o = 0; o < 8; o++) {
            tu_cmp_array("threads", pr.ctx[0], want[o], pr.ctx[1],
                         args[i].out[o], TU_EXACT);
        }
        tu_release_all(args[i].out, 8);
    }
    tu_release_all(want, 8);
    weft_array_release(both[0]);
    weft_array_release(both[1]);
    tu_cmp_close(&pr);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu_scan");
    TCase *tc = tcase_create("scan");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_scan_i32_add);
    tcase_add_test(tc, test_scan_tuple_affine);
    tcase_add_test(tc, test_scan_f32_add);
    tcase_add_test(tc, test_scan_f64_add);
    tcase_add_test(tc, test_scan_max_or);
    tcase_add_test(tc, test_scan_free_variable);
    tcase_add_test(tc, test_scan_fused_map);
    tcase_add_test(tc, test_scan_fused_zipwith);
    tcase_add_test(tc, test_scan_fused_gather);
    tcase_add_test(tc, test_scan_threads);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)

#else /* no LLVM: no CPU backend to test */

int main(void)
{
    printf("test_cpu_scan: built without LLVM, nothing to test\n");
    return 0;
}

#endif
