/*
 * tests/tu_cmp.h: the differential harness, one program run on several
 * backends and every output compared with the reference's.
 *
 * Most of weft's tests of compiled code are differential: the reference
 * interpreter says what a program computes, and the CPU or PTX backend
 * must compute the same.  This header is the one place that says what
 * "the same" means, and the one place that runs a program on a list of
 * backends:
 *
 *   tu_cmp_match    compare one output with the reference's: the number of
 *                   leaves, each leaf's scalar type, rank, every extent,
 *                   and every value; on a difference say where: the first
 *                   differing element (its flat and its multi-dimensional
 *                   index, both values) and the count of differing
 *                   elements.  tu_cmp_array (tu_cmp_array_ex) fails the
 *                   test with that message.
 *   tu_tol          the rule for floating leaves (below).
 *   tu_host         host data for a program's inputs: leaf types, shape
 *                   and one buffer per leaf, so that every backend gets
 *                   the same bytes (tuple types belong to a context, leaf
 *                   types do not).
 *   tu_cmp          a list of contexts ("sides", the reference first):
 *                   tu_cmp_open / tu_cmp_open2, tu_cmp_build (the same
 *                   builder in every context, then weft_compile),
 *                   tu_cmp_run (every side on the same inputs: equal
 *                   statuses, and on success tu_cmp_array on every
 *                   output), tu_cmp_close.
 *
 * Values.  Integral and bool leaves must be equal bit for bit.  A floating
 * leaf matches when the bits are equal, or both are NaN (any payload: the
 * backends need not agree on which NaN an invalid operation makes), or,
 * under a nonzero tolerance, when neither is NaN and
 *
 *     got == want (infinities: only so), or
 *     |got - want| <= max(abs, rel * |want|), or
 *     got and want are at most `ulps` units in the last place apart.
 *
 * abs rules near zero, rel away from it: tu_tol_rel(x) is x * max(1,
 * |want|), the rule most cases state.  Units in the last place are counted
 * on the type's own grid (f16, f32 or f64), for results of functions that
 * two math libraries round differently (exp, log: within an ulp or a few).
 * TU_EXACT (all zero) asks for the bits, NaN aside: -0 and +0 differ.
 * The tolerance is the case's to state, with its reason next to it (the
 * summation order a skeleton may change, the library function); a side
 * may widen it per leaf type (tu_cmp.leaf_tol: fast math) and accept a
 * difference the rule cannot express (tu_cmp.accept).
 *
 * Skipping.  A test of the ptx backend calls tu_backend_here (tu.h's
 * TU_MAIN does) and returns 77, a CTest skip, where no GPU can run it.
 *
 * Everything is static inline and fails through Check: call it from inside
 * a Check test.
 */
#ifndef WEFT_TESTS_TU_CMP_H
#define WEFT_TESTS_TU_CMP_H

#include <stdarg.h>

#include "tu.h"

/* ------------------------------------------------------------------------
 * Comparing values
 * ---------------------------------------------------------------------- */

/* The rule for floating leaves (see the head comment). */
typedef struct tu_tol {
    double abs;   /* |got - want| <= abs, ... */
    double rel;   /* ... or <= rel * |want| */
    int64_t ulps; /* or this many units in the last place apart */
} tu_tol;

/* Bits equal (NaN equal to NaN). */
#define TU_EXACT ((tu_tol){0, 0, 0})

/* Within x absolute below magnitude 1, x relative above: x * max(1,
 * |want|). */
static inline tu_tol tu_tol_rel(double x)
{
    return (tu_tol){x, x, 0};
}

/* Within n units in the last place. */
static inline tu_tol tu_tol_ulps(int64_t n)
{
    return (tu_tol){0, 0, n};
}

static inline bool tu_tol_exact(tu_tol t)
{
    return t.abs == 0 && t.rel == 0 && t.ulps == 0;
}

/* The bits of a float of type t at p as an integer that orders like the
 * value (negative values below positive ones, -0 and +0 next to each
 * other), so that two such integers differ by their distance in ulps. */
static inline int64_t tu_float_order(weft_type t, const void *p)
{
    int64_t v;
    if (t == WEFT_F16) {
        uint16_t h;
        memcpy(&h, p, 2);
        v = h & 0x7fff;
        return h & 0x8000 ? -v - 1 : v;
    }
    if (t == WEFT_F32) {
        uint32_t u;
        memcpy(&u, p, 4);
        v = u & 0x7fffffff;
        return u & 0x80000000u ? -v - 1 : v;
    }
    uint64_t u;
    memcpy(&u, p, 8);
    v = (int64_t)(u & 0x7fffffffffffffffull);
    return u >> 63 ? -v - 1 : v;
}

/* Whether the float of type t at got matches the one at want under tol. */
static inline bool tu_float_same(weft_type t, const void *want, const void *got,
                                 tu_tol tol)
{
    if (memcmp(want, got, weft_type_size(t)) == 0) {
        return true;
    }
    double w = tu_load_f(t, want), g = tu_load_f(t, got);
    if (isnan(w) || isnan(g)) {
        return isnan(w) && isnan(g);
    }
    if (tu_tol_exact(tol)) {
        return false;
    }
    if (g == w) {
        return true;
    }
    if (isinf(w) || isinf(g)) {
        return false;
    }
    double d = fabs(g - w);
    if (d <= tol.abs || d <= tol.rel * fabs(w)) {
        return true;
    }
    int64_t a = tu_float_order(t, want), b = tu_float_order(t, got);
    return (a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a) <=
           (uint64_t)tol.ulps;
}

/* A difference the tolerance does not cover, which a side may still
 * accept (output o, leaf l of type t): true to let it pass. */
typedef bool (*tu_accept_fn)(int o, int l, weft_type t, const void *want,
                             const void *got);

/* The tolerance for leaves of type t, given the case's (NULL: the case's
 * own). */
typedef tu_tol (*tu_leaf_tol_fn)(weft_type t, tu_tol tol);

/* Element i of a leaf of type t as text, for messages. */
static inline void tu_value_text(weft_type t, const unsigned char *d, int64_t i,
                                 char *buf, size_t n)
{
    const unsigned char *p = d + (size_t)i * weft_type_size(t);
    if (tu_is_float(t)) {
        snprintf(buf, n, "%.17g", tu_load_f(t, p));
    } else if (t == WEFT_U64) {
        uint64_t u;
        memcpy(&u, p, 8);
        snprintf(buf, n, "%llu", (unsigned long long)u);
    } else {
        snprintf(buf, n, "%lld", (long long)tu_load_i(t, p));
    }
}

/* v[0..rank-1] as "[v0 v1 ...]" (a shape, an index). */
static inline void tu_dims_text(int rank, const int64_t *v, char *buf, size_t n)
{
    int k = snprintf(buf, n, "[");
    for (int d = 0; d < rank && k < (int)n; d++) {
        k += snprintf(buf + k, n - (size_t)k, d ? " %lld" : "%lld",
                      (long long)v[d]);
    }
    if (k < (int)n) {
        snprintf(buf + k, n - (size_t)k, "]");
    }
}

/* Flat index i of an array of a's shape as "[i0 i1 ...]". */
static inline void tu_index_text(const weft_array *a, int64_t i, char *buf,
                                 size_t n)
{
    int rank = weft_array_rank(a);
    int64_t ix[WEFT_MAX_RANK] = {0};
    for (int d = rank - 1; d >= 0; d--) {
        int64_t e = weft_array_extent(a, d);
        ix[d] = e ? i % e : 0;
        i = e ? i / e : 0;
    }
    tu_dims_text(rank, ix, buf, n);
}

/* How a comparison goes: what tu_cmp_array_ex takes beyond the arrays. */
typedef struct tu_rule {
    tu_tol tol;              /* for floating leaves */
    tu_leaf_tol_fn leaf_tol; /* NULL: tol for every floating leaf */
    tu_accept_fn accept;     /* NULL: no difference is accepted */
    int out;                 /* the output's number, for accept */
} tu_rule;

/* Whether got (an array of context cg) matches want (the reference's, of
 * context cw) under rule: the same number of leaves, leaf types, rank,
 * extents, and values (integers and bool bitwise, floats as the head
 * comment says).  On a mismatch, msg[m] says where: the first differing
 * element with its flat and multi-dimensional index and both values, and
 * how many differ.  Never fails the test itself. */
static inline bool tu_cmp_match(weft_context *cw, weft_array *want,
                                weft_context *cg, weft_array *got,
                                const tu_rule *rule, char *msg, size_t m)
{
    if (!want || !got) {
        snprintf(msg, m, "output missing%s", want ? "" : " from the reference");
        return false;
    }
    weft_type tw = weft_array_type(want), tg = weft_array_type(got);
    int lw = weft_type_leaves(cw, tw), lg = weft_type_leaves(cg, tg);
    if (lw != lg) {
        snprintf(msg, m, "%d leaves, expected %d", lg, lw);
        return false;
    }
    int rank = weft_array_rank(want);
    if (weft_array_rank(got) != rank) {
        snprintf(msg, m, "rank %d, expected %d", weft_array_rank(got), rank);
        return false;
    }
    for (int d = 0; d < rank; d++) {
        if (weft_array_extent(got, d) != weft_array_extent(want, d)) {
            snprintf(msg, m, "extent %d is %lld, expected %lld", d,
                     (long long)weft_array_extent(got, d),
                     (long long)weft_array_extent(want, d));
            return false;
        }
    }
    int64_t n = weft_array_size(want);
    for (int l = 0; l < lw; l++) {
        weft_type t = weft_type_leaf(cw, tw, l);
        if (weft_type_leaf(cg, tg, l) != t) {
            snprintf(msg, m, "leaf %d has type %d, expected %d", l,
                     (int)weft_type_leaf(cg, tg, l), (int)t);
            return false;
        }
        if (n == 0) {
            continue;
        }
        size_t w = weft_type_size(t);
        const unsigned char *pw = weft_array_data(want, l);
        const unsigned char *pg = weft_array_data(got, l);
        if (!pw || !pg) {
            snprintf(msg, m, "leaf %d has no data", l);
            return false;
        }
        if (memcmp(pw, pg, (size_t)n * w) == 0) {
            continue;
        }
        tu_tol lt = rule->leaf_tol ? rule->leaf_tol(t, rule->tol) : rule->tol;
        int64_t first = -1, count = 0;
        for (int64_t i = 0; i < n; i++) {
            const unsigned char *x = pw + (size_t)i * w,
                                *y = pg + (size_t)i * w;
            bool ok = tu_is_float(t) ? tu_float_same(t, x, y, lt)
                                     : memcmp(x, y, w) == 0;
            if (!ok && !(rule->accept && rule->accept(rule->out, l, t, x, y))) {
                first = first < 0 ? i : first;
                count++;
            }
        }
        if (count > 0) {
            char ix[96], vg[40], vw[40];
            tu_index_text(want, first, ix, sizeof ix);
            tu_value_text(t, pg, first, vg, sizeof vg);
            tu_value_text(t, pw, first, vw, sizeof vw);
            snprintf(msg, m,
                     "leaf %d element %lld %s is %s, expected %s (%lld of "
                     "%lld elements differ; tolerance abs %g, rel %g, ulps "
                     "%lld)",
                     l, (long long)first, ix, vg, vw, (long long)count,
                     (long long)n, lt.abs, lt.rel, (long long)lt.ulps);
            return false;
        }
    }
    return true;
}

/* Fail the test with "what: ..." unless tu_cmp_match(got, want, rule). */
static inline void tu_cmp_array_ex(const char *what, weft_context *cw,
                                   weft_array *want, weft_context *cg,
                                   weft_array *got, const tu_rule *rule)
{
    char msg[512];
    ck_assert_msg(tu_cmp_match(cw, want, cg, got, rule, msg, sizeof msg),
                  "%s: %s", what, msg);
}

/* tu_cmp_array_ex with the tolerance tol alone. */
static inline void tu_cmp_array(const char *what, weft_context *cw,
                                weft_array *want, weft_context *cg,
                                weft_array *got, tu_tol tol)
{
    tu_rule rule = {.tol = tol};
    tu_cmp_array_ex(what, cw, want, cg, got, &rule);
}

/* ------------------------------------------------------------------------
 * Host inputs
 * ---------------------------------------------------------------------- */

enum { TU_HOST_LEAVES = 4 };

/* The bytes of one input, the same for every backend. */
typedef struct tu_host {
    int nleaf;
    weft_type leaf[TU_HOST_LEAVES]; /* scalar types */
    int rank;
    int64_t shape[WEFT_MAX_RANK];
    int64_t size;               /* elements */
    void *data[TU_HOST_LEAVES]; /* one buffer per leaf */
    bool owned;                 /* tu_host_free frees data */
} tu_host;

/* Caller's data (not owned) of leaf types leaf[0..nleaf-1] and shape. */
static inline tu_host tu_host_of(int nleaf, const weft_type *leaf, int rank,
                                 const int64_t *shape, void *const *data)
{
    ck_assert(nleaf >= 1 && nleaf <= TU_HOST_LEAVES);
    ck_assert(rank >= 0 && rank <= WEFT_MAX_RANK);
    tu_host h = {.nleaf = nleaf, .rank = rank};
    h.size = tu_shape_size(rank, shape);
    for (int d = 0; d < rank; d++) {
        h.shape[d] = shape[d];
    }
    for (int l = 0; l < nleaf; l++) {
        h.leaf[l] = leaf[l];
        h.data[l] = data ? data[l] : NULL;
    }
    return h;
}

/* Uninitialised owned buffers of leaf types leaf[0..nleaf-1] and shape. */
static inline tu_host tu_host_alloc(int nleaf, const weft_type *leaf, int rank,
                                    const int64_t *shape)
{
    tu_host h = tu_host_of(nleaf, leaf, rank, shape, NULL);
    h.owned = true;
    for (int l = 0; l < nleaf; l++) {
        h.data[l] =
            malloc((size_t)(h.size > 0 ? h.size : 1) * weft_type_size(leaf[l]));
        ck_assert_ptr_nonnull(h.data[l]);
    }
    return h;
}

/* Random owned data: every leaf filled by tu_rng_fill(r, ..., lo, hi). */
static inline tu_host tu_host_random(tu_rng *r, int nleaf,
                                     const weft_type *leaf, int rank,
                                     const int64_t *shape, double lo, double hi)
{
    tu_host h = tu_host_alloc(nleaf, leaf, rank, shape);
    for (int l = 0; l < nleaf; l++) {
        tu_rng_fill(r, leaf[l], h.data[l], h.size, lo, hi);
    }
    return h;
}

/* Free h's buffers if it owns them. */
static inline void tu_host_free(tu_host *h)
{
    for (int l = 0; h->owned && l < h->nleaf; l++) {
        free(h->data[l]);
        h->data[l] = NULL;
    }
}

/* h's element type in ctx (a tuple type for several leaves). */
static inline weft_type tu_host_type(weft_context *ctx, const tu_host *h)
{
    if (h->nleaf == 1) {
        return h->leaf[0];
    }
    weft_type t = weft_type_tuple(ctx, h->nleaf, h->leaf);
    ck_assert_msg(t != 0, "weft_type_tuple: %s", weft_last_error());
    return t;
}

/* h as a new array of ctx. */
static inline weft_array *tu_host_array(weft_context *ctx, const tu_host *h)
{
    return tu_arr_host(ctx, tu_host_type(ctx, h), h->rank, h->shape,
                       (const void *const *)h->data);
}

/* ------------------------------------------------------------------------
 * Running on several backends
 * ---------------------------------------------------------------------- */

enum { TU_CMP_SIDES = 4, TU_CMP_IN = 8, TU_CMP_OUT = 16 };

/* Builds the results of program p (of context ctx) into res[0..15];
 * returns how many. */
typedef int (*tu_build_fn)(weft_program *p, weft_context *ctx, const void *arg,
                           weft_acc **res);

typedef struct tu_cmp {
    int n; /* sides; 0 is the reference */
    weft_context *ctx[TU_CMP_SIDES];
    weft_program *p[TU_CMP_SIDES]; /* the case's, or NULL */
    weft_executable *exe[TU_CMP_SIDES];
    char side[TU_CMP_SIDES][40];      /* names, for messages */
    char what[200];                   /* the case, for messages */
    tu_leaf_tol_fn leaf_tol;          /* NULL: the case's tolerance */
    tu_accept_fn accept;              /* NULL: none */
    weft_status status[TU_CMP_SIDES]; /* of the last run */
    char msg[TU_CMP_SIDES][512];      /* its messages ("" on success) */
} tu_cmp;

/* The configuration the harness gives a side: backend b (the GPU machine's
 * $WEFT_TEST_DEVICES for ptx), `threads` workers, the environment ignored,
 * and flags. */
static inline weft_config tu_cmp_config(weft_backend b, int threads,
                                        unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.devices = tu_devices(b);
    cfg.threads = threads;
    cfg.flags = WEFT_FLAG_NO_ENV | flags;
    return cfg;
}

/* Open n sides, one context per cfg[i] (cfg[0] the reference), named
 * names[i] in messages. */
static inline void tu_cmp_open(tu_cmp *c, int n, const weft_config *cfg,
                               const char *const *names)
{
    ck_assert(n >= 2 && n <= TU_CMP_SIDES);
    memset(c, 0, sizeof *c);
    c->n = n;
    for (int s = 0; s < n; s++) {
        snprintf(c->side[s], sizeof c->side[s], "%s", names[s]);
        weft_status st = weft_context_create(&cfg[s], &c->ctx[s]);
        ck_assert_msg(st == WEFT_OK, "weft_context_create(%s): %s", c->side[s],
                      weft_last_error());
        ck_assert_int_eq(weft_context_backend(c->ctx[s]), cfg[s].backend);
    }
}

/* The usual pair: the interpreter (one worker) and DT_BACKEND with
 * `threads` workers, DT_TIER's tier and flags. */
static inline void tu_cmp_open2(tu_cmp *c, int threads, unsigned flags)
{
    weft_config cfg[2] = {tu_cmp_config(WEFT_BACKEND_INTERP, 1, 0),
                          tu_cmp_config(DT_BACKEND, threads, flags | DT_TIER)};
    const char *names[2] = {"interp", DT_NAME};
    tu_cmp_open(c, 2, cfg, names);
}

/* Free the case's programs and executables (the contexts stay). */
static inline void tu_cmp_done(tu_cmp *c)
{
    for (int s = 0; s < c->n; s++) {
        weft_executable_free(c->exe[s]);
        weft_program_free(c->p[s]);
        c->exe[s] = NULL;
        c->p[s] = NULL;
    }
}

/* Free everything. */
static inline void tu_cmp_close(tu_cmp *c)
{
    tu_cmp_done(c);
    for (int s = 0; s < c->n; s++) {
        weft_context_free(c->ctx[s]);
        c->ctx[s] = NULL;
    }
}

/* Name the case (or the run) by the printf format: the prefix of the
 * messages that follow. */
static inline void tu_cmp_case(tu_cmp *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void tu_cmp_case(tu_cmp *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what, sizeof c->what, fmt, ap);
    va_end(ap);
}

/* Build the case's program with build(p, ctx, arg, res) in every side and
 * compile it there (the last case's programs freed first); a builder
 * error or a failed compile fails the test. */
static inline void tu_cmp_build(tu_cmp *c, tu_build_fn build, const void *arg)
{
    tu_cmp_done(c);
    for (int s = 0; s < c->n; s++) {
        weft_status st = weft_program_create(c->ctx[s], &c->p[s]);
        ck_assert_msg(st == WEFT_OK, "%s: %s", c->what, weft_last_error());
        weft_acc *res[TU_CMP_OUT] = {NULL};
        int n = build(c->p[s], c->ctx[s], arg, res);
        ck_assert_msg(weft_program_status(c->p[s]) == WEFT_OK,
                      "%s: builder error: %s", c->what,
                      weft_program_error(c->p[s]));
        ck_assert(n >= 1 && n <= TU_CMP_OUT);
        st = weft_compile(c->p[s], res, n, &c->exe[s]);
        ck_assert_msg(st == WEFT_OK, "%s: weft_compile(%s): %s", c->what,
                      c->side[s], weft_last_error());
    }
}

/* Run every side's executable on in[0..nin-1] and compare with side 0:
 * every status must be side 0's, and where that is WEFT_OK every output
 * must match side 0's (tu_cmp_array_ex under tol, c->leaf_tol and
 * c->accept); where it is not, every output must be left NULL.  The
 * statuses and messages stay in c->status and c->msg.  Returns side 0's
 * status. */
static inline weft_status tu_cmp_run(tu_cmp *c, const tu_host *in, int nin,
                                     tu_tol tol)
{
    ck_assert(nin >= 0 && nin <= TU_CMP_IN);
    char where[160] = "";
    int k = 0;
    for (int i = 0; i < nin && k < (int)sizeof where - 40; i++) {
        char sh[64];
        tu_dims_text(in[i].rank, in[i].shape, sh, sizeof sh);
        k += snprintf(where + k, sizeof where - (size_t)k, "%s%s",
                      i ? " " : " on ", sh);
    }
    int nout = weft_executable_outputs(c->exe[0]);
    ck_assert(nout >= 0 && nout <= TU_CMP_OUT);
    weft_array *out[TU_CMP_SIDES][TU_CMP_OUT] = {{NULL}};
    for (int s = 0; s < c->n; s++) {
        ck_assert_int_eq(weft_executable_outputs(c->exe[s]), nout);
        weft_array *a[TU_CMP_IN] = {NULL};
        for (int i = 0; i < nin; i++) {
            a[i] = tu_host_array(c->ctx[s], &in[i]);
        }
        c->status[s] = weft_run(c->exe[s], a, nin, out[s], nout);
        snprintf(c->msg[s], sizeof c->msg[s], "%s",
                 c->status[s] == WEFT_OK ? "" : weft_last_error());
        tu_release_all(a, nin);
    }
    for (int s = 1; s < c->n; s++) {
        ck_assert_msg(c->status[s] == c->status[0],
                      "%s%s: %s returned %s (%s), %s %s (%s)", c->what, where,
                      c->side[s], weft_status_name(c->status[s]), c->msg[s],
                      c->side[0], weft_status_name(c->status[0]), c->msg[0]);
        for (int o = 0; o < nout; o++) {
            if (c->status[0] != WEFT_OK) {
                ck_assert_msg(out[s][o] == NULL,
                              "%s%s: %s failed but set output %d", c->what,
                              where, c->side[s], o);
                continue;
            }
            char what[480];
            snprintf(what, sizeof what, "%s%s: %s output %d", c->what, where,
                     c->side[s], o);
            tu_rule rule = {tol, c->leaf_tol, c->accept, o};
            tu_cmp_array_ex(what, c->ctx[0], out[0][o], c->ctx[s], out[s][o],
                            &rule);
        }
    }
    for (int s = 0; s < c->n; s++) {
        tu_release_all(out[s], nout);
    }
    return c->status[0];
}

/* Where the last run failed, fail unless every compiled side's message
 * names weft_run: an error a kernel meets is reported by the call that
 * waits for it. */
static inline void tu_cmp_check_run_msg(const tu_cmp *c)
{
    for (int s = 1; s < c->n && c->status[0] != WEFT_OK; s++) {
        ck_assert_msg(strncmp(c->msg[s], "weft_run", 8) == 0,
                      "%s: %s's message does not name weft_run: %s", c->what,
                      c->side[s], c->msg[s]);
    }
}

#endif /* WEFT_TESTS_TU_CMP_H */
