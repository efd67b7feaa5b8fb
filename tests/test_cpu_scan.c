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

#include "tu.h"

#ifdef WEFT_HAVE_LLVM

#define NKIND 6

/* ------------------------------------------------------------------------
 * Combines and their data
 * ---------------------------------------------------------------------- */

typedef enum combo {
    C_I32_ADD,    /* i32 +, seed 7 */
    C_AFFINE,     /* (i32, i32) composition, seed (3, 5) */
    C_F32_ADD,    /* f32 +, seed 0.5 */
    C_F64_ADD,    /* f64 +, seed -1.25 */
    C_F16_MAX,    /* f16 max, seed -inf */
    C_U8_MAX,     /* u8 max, seed 3 */
    C_BOOL_OR,    /* bool ||, seed false */
    C_I64_FREE,   /* i64 a + b + k, k a free variable; seed 2k */
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
static weft_fun *make_fun(weft_program *p, combo c, weft_type t,
                          weft_exp *k, weft_exp **seed)
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
    default:
        break;
    }
    weft_fun_return(f, body);
    return f;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Random data for leaf `leaf` of combo c: n elements at buf. */
static void fill(combo c, weft_type lt, int leaf, int64_t n, void *buf)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng();
        unsigned char *d = (unsigned char *)buf + (size_t)i * weft_type_size(lt);
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
        case C_BOOL_OR:
            tu_store_i(lt, d, r % 50000 == 0);
            break;
        default:
            tu_store_i(lt, d, (int64_t)r);
            break;
        }
    }
}

/* ------------------------------------------------------------------------
 * Running one program on both backends
 * ---------------------------------------------------------------------- */

typedef struct side {
    weft_context *ctx;
    weft_program *p;
    weft_executable *exe;
} side;

typedef struct pair {
    side s[2]; /* 0: interpreter, 1: CPU */
    int nin, nout;
} pair;

static void open_side(side *s, weft_backend b)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.devices = tu_devices(b);
    cfg.threads = 3;
    cfg.flags = WEFT_FLAG_NO_ENV | tu_tier_flags(0);
    TU_OK(weft_context_create(&cfg, &s->ctx));
    TU_OK(weft_program_create(s->ctx, &s->p));
    s->exe = NULL;
}

static void open_pair(pair *pr)
{
    memset(pr, 0, sizeof *pr);
    open_side(&pr->s[0], WEFT_BACKEND_INTERP);
    open_side(&pr->s[1], DT_BACKEND);
}

static void close_pair(pair *pr)
{
    for (int i = 0; i < 2; i++) {
        weft_executable_free(pr->s[i].exe);
        weft_program_free(pr->s[i].p);
        weft_context_free(pr->s[i].ctx);
    }
}

/* Compile results[0..n-1] on side i; the CPU side must compile kernels
 * (the scans are not left to the interpreter). */
static void compile_side(pair *pr, int i, weft_acc *const *res, int n)
{
    side *s = &pr->s[i];
    TU_PROGRAM_OK(s->p);
    weft_stats before, after;
    TU_OK(weft_context_stats(s->ctx, &before));
    TU_OK(weft_compile(s->p, res, n, &s->exe));
    TU_OK(weft_context_stats(s->ctx, &after));
    if (i == 1) {
        ck_assert_msg(after.kernels_compiled + after.kernels_reused >
                          before.kernels_compiled + before.kernels_reused,
                      "the CPU backend compiled no kernel");
    }
    pr->nin = weft_executable_inputs(s->exe);
    pr->nout = weft_executable_outputs(s->exe);
}

/* Compare output arrays a (interpreter) and b (CPU) leaf by leaf. */
static void compare(weft_context *ca, weft_array *a, weft_context *cb,
                    weft_array *b, double tol, const char *what)
{
    (void)cb;
    ck_assert_int_eq(weft_array_rank(a), weft_array_rank(b));
    for (int d = 0; d < weft_array_rank(a); d++) {
        ck_assert_msg(weft_array_extent(a, d) == weft_array_extent(b, d),
                      "%s: extent %d is %lld on the CPU, %lld interpreted",
                      what, d, (long long)weft_array_extent(b, d),
                      (long long)weft_array_extent(a, d));
    }
    weft_type t = weft_array_type(a);
    int nleaf = weft_type_size(t) ? 1 : weft_type_leaves(ca, t);
    int64_t n = weft_array_size(a);
    for (int l = 0; l < nleaf; l++) {
        weft_type lt = tu_leaf_type(ca, a, l);
        size_t w = weft_type_size(lt);
        const unsigned char *x = weft_array_data(a, l);
        const unsigned char *y = weft_array_data(b, l);
        for (int64_t i = 0; i < n; i++) {
            const void *px = x + (size_t)i * w, *py = y + (size_t)i * w;
            if (tu_is_float(lt)) {
                double want = tu_load_f(lt, px), got = tu_load_f(lt, py);
                bool ok = isnan(want) ? isnan(got)
                        : isinf(want) ? got == want
                        : fabs(got - want) <=
                              tol * (fabs(want) > 1 ? fabs(want) : 1);
                if (!ok) {
                    ck_abort_msg("%s: leaf %d element %lld is %.17g on the "
                                 "CPU, %.17g interpreted", what, l,
                                 (long long)i, got, want);
                }
            } else {
                if (memcmp(px, py, w) != 0) {
                    ck_abort_msg("%s: leaf %d element %lld is %lld on the "
                                 "CPU, %lld interpreted", what, l,
                                 (long long)i, (long long)tu_load_i(lt, py),
                                 (long long)tu_load_i(lt, px));
                }
            }
        }
    }
}

/* A random array of type t and the given shape in both contexts. */
static void make_input(pair *pr, combo c, weft_type t, int rank,
                       const int64_t *shape, weft_array **in)
{
    int64_t n = tu_shape_size(rank, shape);
    int nleaf = weft_type_size(t) ? 1 : weft_type_leaves(pr->s[0].ctx, t);
    void *buf[8];
    for (int l = 0; l < nleaf; l++) {
        weft_type lt = weft_type_size(t) ? t : weft_type_leaf(pr->s[0].ctx, t, l);
        buf[l] = malloc((size_t)(n > 0 ? n : 1) * weft_type_size(lt));
        ck_assert_ptr_nonnull(buf[l]);
        fill(c, lt, l, n, buf[l]);
    }
    for (int i = 0; i < 2; i++) {
        weft_type ti = weft_type_size(t) ? t : elem_type(pr->s[i].ctx, c);
        in[i] = tu_arr_host(pr->s[i].ctx, ti, rank, shape,
                            (const void *const *)buf);
    }
    for (int l = 0; l < nleaf; l++) {
        free(buf[l]);
    }
}

/* Run both sides on inputs in[side][0..nin-1]; both must agree on the
 * status, and on success on every output.  Returns the status. */
static weft_status run_both(pair *pr, weft_array *in[2][4], double tol,
                            const char *what)
{
    weft_array *out[2][16] = {{NULL}};
    ck_assert_int_le(pr->nout, 16);
    weft_status s0 = weft_run(pr->s[0].exe, in[0], pr->nin, out[0], pr->nout);
    char msg0[512];
    snprintf(msg0, sizeof msg0, "%s", weft_last_error());
    weft_status s1 = weft_run(pr->s[1].exe, in[1], pr->nin, out[1], pr->nout);
    ck_assert_msg(s0 == s1, "%s: the interpreter says %s (%s), the CPU %s (%s)",
                  what, weft_status_name(s0), msg0, weft_status_name(s1),
                  weft_last_error());
    if (s0 == WEFT_OK) {
        for (int o = 0; o < pr->nout; o++) {
            char w[256];
            snprintf(w, sizeof w, "%s, output %d", what, o);
            compare(pr->s[0].ctx, out[0][o], pr->s[1].ctx, out[1][o], tol, w);
        }
    }
    tu_release_all(out[0], pr->nout);
    tu_release_all(out[1], pr->nout);
    return s0;
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
static const int64_t shapes1[][1] = {
    {0}, {1}, {2}, {7}, {13}, {4096}, {8191}, {8192}, {8193}, {24593},
    {65537}, {100003}, {-1}};
static const int64_t shapes2[][2] = {
    {0, 5}, {5, 0}, {1, 1}, {3, 7}, {1, 65539}, {2, 12289}, {3, 30011},
    {7, 12289}, {13, 9001}, {1000, 17}, {17, 1000}, {-1, 0}};
static const int64_t shapes3[][3] = {
    {0, 3, 4}, {2, 0, 3}, {2, 3, 0}, {2, 3, 5}, {1, 2, 20011}, {3, 1, 16411},
    {4, 5, 6}, {-1, 0, 0}};

static const int64_t *shape_at(int rank, int i)
{
    const int64_t *sh = rank == 1 ? shapes1[i] : rank == 2 ? shapes2[i]
                                                            : shapes3[i];
    return sh[0] < 0 ? NULL : sh;
}

/* The six scans of combo c over a parameter of every rank and shape.  With
 * `big`, also a row of three million elements (rank 1). */
static void check_combo(combo c, bool big)
{
    for (int rank = 1; rank <= 3; rank++) {
        pair pr;
        open_pair(&pr);
        for (int i = 0; i < 2; i++) {
            weft_program *p = pr.s[i].p;
            weft_type t = elem_type(pr.s[i].ctx, c);
            weft_acc *xs = weft_param(p, t, rank);
            weft_exp *k = NULL;
            if (c == C_I64_FREE) {
                /* k = (the kp) * 3 - 1, computed on the host, used inside */
                weft_acc *kp = weft_param(p, WEFT_I64, 0);
                k = weft_prim2(WEFT_OP_SUB,
                               weft_prim2(WEFT_OP_MUL, weft_the(kp),
                                          weft_i64(p, 3)),
                               weft_i64(p, 1));
            }
            weft_exp *z;
            weft_fun *f = make_fun(p, c, t, k, &z);
            weft_acc *res[NKIND];
            six_scans(f, z, xs, res);
            compile_side(&pr, i, res, NKIND);
        }
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
            weft_array *in[2][4] = {{NULL}};
            weft_type t = elem_type(pr.s[0].ctx, c);
            weft_array *both[2];
            make_input(&pr, c, t, rank, sh, both);
            in[0][0] = both[0];
            in[1][0] = both[1];
            if (c == C_I64_FREE) {
                int64_t kv = (int64_t)(rng() % 1000);
                for (int i = 0; i < 2; i++) {
                    in[i][1] = tu_arr_i(pr.s[i].ctx, WEFT_I64, 0, NULL,
                                        TU_I(kv));
                }
            }
            char what[128];
            snprintf(what, sizeof what, "combo %d, rank %d, shape %lld..%lld",
                     (int)c, rank, (long long)sh[0], (long long)sh[rank - 1]);
            TU_OK(run_both(&pr, in, tolerance(c), what));
            for (int i = 0; i < 2; i++) {
                weft_array_release(in[i][0]);
                weft_array_release(in[i][1]);
            }
        }
        close_pair(&pr);
    }
}

START_TEST(test_scan_i32_add)
{
    rng_state = 0x1234567;
    check_combo(C_I32_ADD, true);
}
END_TEST

START_TEST(test_scan_tuple_affine)
{
    rng_state = 0x2345678;
    check_combo(C_AFFINE, false);
}
END_TEST

START_TEST(test_scan_f32_add)
{
    rng_state = 0x3456789;
    check_combo(C_F32_ADD, true);
}
END_TEST

START_TEST(test_scan_f64_add)
{
    rng_state = 0x456789a;
    check_combo(C_F64_ADD, false);
}
END_TEST

START_TEST(test_scan_max_or)
{
    rng_state = 0x56789ab;
    check_combo(C_F16_MAX, false);
    check_combo(C_U8_MAX, false);
    check_combo(C_BOOL_OR, false);
}
END_TEST

START_TEST(test_scan_free_variable)
{
    rng_state = 0x6789abc;
    check_combo(C_I64_FREE, false);
}
END_TEST

/* ------------------------------------------------------------------------
 * Fused inputs
 * ---------------------------------------------------------------------- */

/* Which producer feeds the scan. */
typedef enum feed {
    F_MAP,        /* map (\x -> 3x + 1) xs */
    F_ZIPWITH,    /* zipWith (-) xs ys, shapes differ */
    F_REVERSE,    /* backpermute (shape xs) (\ix -> reversed row) xs */
    F_SHIFT       /* backpermute (shape xs) (\ix -> ix + 1) xs: out of bounds */
} feed;

static weft_acc *make_feed(weft_program *p, feed fd, weft_acc *xs,
                           weft_acc *ys)
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
        weft_fun_return(g, weft_prim2(WEFT_OP_SUB, weft_arg(g, 0),
                                      weft_arg(g, 1)));
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

static void check_feed(feed fd)
{
    static const int64_t sx[][2] = {
        {0, 3}, {3, 0}, {1, 1}, {2, 9}, {1, 100003}, {3, 20011}, {40, 1001},
        {-1, 0}};
    for (int kind = 0; kind < NKIND; kind++) {
        pair pr;
        open_pair(&pr);
        for (int i = 0; i < 2; i++) {
            weft_program *p = pr.s[i].p;
            weft_acc *xs = weft_param(p, WEFT_I32, 2);
            weft_acc *ys = weft_param(p, WEFT_I32, 2);
            weft_acc *a = make_feed(p, fd, xs, ys);
            weft_exp *z;
            weft_fun *f = make_fun(p, C_I32_ADD, WEFT_I32, NULL, &z);
            weft_acc *res[NKIND];
            six_scans(f, z, a, res);
            compile_side(&pr, i, &res[kind], 1);
        }
        for (int si = 0; sx[si][0] >= 0; si++) {
            /* ys: one row fewer and a few more columns, so the zipWith
             * result is the intersection and the kernel's general
             * variant runs */
            int64_t sy[2] = {sx[si][0] > 0 ? sx[si][0] - 1 : 0, sx[si][1] + 3};
            if (fd != F_ZIPWITH) {
                sy[0] = 1;
                sy[1] = 1;
            }
            weft_array *in[2][4] = {{NULL}}, *both[2];
            make_input(&pr, C_I32_ADD, WEFT_I32, 2, sx[si], both);
            in[0][0] = both[0];
            in[1][0] = both[1];
            make_input(&pr, C_I32_ADD, WEFT_I32, 2, sy, both);
            in[0][1] = both[0];
            in[1][1] = both[1];
            char what[128];
            snprintf(what, sizeof what, "feed %d, scan %d, shape %lldx%lld",
                     (int)fd, kind, (long long)sx[si][0],
                     (long long)sx[si][1]);
            weft_status s = run_both(&pr, in, 0.0, what);
            bool empty = sx[si][0] * sx[si][1] == 0;
            if (fd == F_SHIFT && !empty) {
                ck_assert_msg(s == WEFT_ERR_OUT_OF_BOUNDS, "%s: %s", what,
                              weft_status_name(s));
                ck_assert_msg(strstr(weft_last_error(), "weft_run") != NULL,
                              "%s: message %s", what, weft_last_error());
            } else {
                ck_assert_msg(s == WEFT_OK, "%s: %s", what, weft_last_error());
            }
            for (int i = 0; i < 2; i++) {
                weft_array_release(in[i][0]);
                weft_array_release(in[i][1]);
            }
        }
        close_pair(&pr);
    }
}

START_TEST(test_scan_fused_map)
{
    rng_state = 0x789abcd;
    check_feed(F_MAP);
}
END_TEST

START_TEST(test_scan_fused_zipwith)
{
    rng_state = 0x89abcde;
    check_feed(F_ZIPWITH);
}
END_TEST

START_TEST(test_scan_fused_gather)
{
    rng_state = 0x9abcdef;
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
    rng_state = 0xabcdef1;
    pair pr;
    open_pair(&pr);
    for (int i = 0; i < 2; i++) {
        weft_program *p = pr.s[i].p;
        weft_acc *xs = weft_param(p, WEFT_I32, 1);
        weft_exp *z;
        weft_fun *f = make_fun(p, C_I32_ADD, WEFT_I32, NULL, &z);
        weft_acc *res[NKIND];
        six_scans(f, z, xs, res);
        compile_side(&pr, i, res, NKIND);
    }
    weft_array *both[2];
    make_input(&pr, C_I32_ADD, WEFT_I32, 1, TU_SH(200003), both);
    weft_array *want[8] = {NULL};
    TU_OK(weft_run(pr.s[0].exe, &both[0], 1, want, 8));
    pthread_t th[4];
    par_arg args[4];
    for (int i = 0; i < 4; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].exe = pr.s[1].exe;
        args[i].in = both[1];
        ck_assert_int_eq(pthread_create(&th[i], NULL, par_run, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(args[i].s == WEFT_OK, "thread %d: %s", i,
                      weft_status_name(args[i].s));
        for (int o = 0; o < 8; o++) {
            compare(pr.s[0].ctx, want[o], pr.s[1].ctx, args[i].out[o], 0.0,
                    "threads");
        }
        tu_release_all(args[i].out, 8);
    }
    tu_release_all(want, 8);
    weft_array_release(both[0]);
    weft_array_release(both[1]);
    close_pair(&pr);
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

int main(void)
{
    if (!tu_backend_here()) {
        return 77;
    }
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#else /* no LLVM: no CPU backend to test */

int main(void)
{
    printf("test_cpu_scan: built without LLVM, nothing to test\n");
    return 0;
}

#endif
