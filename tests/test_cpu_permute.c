/*
 * tests/test_cpu_permute.c: permute, foldSeg and fold1Seg on the CPU
 * backend against the reference interpreter.
 *
 * Each case builds one program twice, in an interpreter context and in a
 * CPU context (environment ignored, several workers), runs both on the
 * same pseudo-random inputs and asks for the same status and, on success,
 * the same result: integers bit for bit; floats within a relative 1e-5
 * (f32) or 1e-12 (f64), although most cases use integer-valued floats
 * whose sums are exact in any order.
 *
 * permute is tried with every way the CPU skeleton makes its update
 * atomic (native atomicrmw: add, min, max, band, bor, bxor on integers and
 * add on f32 / f64, and tuples of those componentwise; the CAS loop: other
 * combines on 32- and 64-bit types; striped locks: 8- and 16-bit types,
 * bool, f16, other tuples), on source and
 * target ranks 0 to 3, with ignored elements, heavy contention (millions
 * of updates on a few targets), a fused source, and out-of-bounds targets.
 * A one-worker context checks that a non-commutative combine gives the
 * interpreter's sequential answer.  foldSeg and fold1Seg are tried on
 * ranks 1 to 3, several segment descriptor types, empty segments, long
 * and tiny segments, tuples, a fused input, and every data error.
 */
#include "tu_cmp.h"

/* ------------------------------------------------------------------------
 * The differential harness
 * ---------------------------------------------------------------------- */

#define MAX_IN 3

/* One input: a parameter of this type and shape.  Values are pseudo-random
 * integers in [lo, hi] (floats: those integers, divided by `scale` when it
 * is not 0), unless `data` gives the host buffer. */
typedef struct in_spec {
    weft_type type;
    int rank;
    int64_t shape[3];
    int64_t lo, hi;
    double scale;
    const void *data;
} in_spec;

/* Builds the program's one result from its parameters in[0..nin-1]. */
typedef weft_acc *(*build_fn)(weft_program *p, weft_acc *const *in,
                              const void *user);

/* The interpreter (side 0) and DT_BACKEND (side 1), tu_cmp.h. */
typedef tu_cmp pair;

/* Floats within a relative 1e-12 (f64), 1e-5 (f32) or 1e-3 (f16), beyond
 * magnitude 1 (tu_tol_rel), although most cases use integer-valued floats
 * whose sums are exact in any order. */
static tu_tol tol_of(weft_type t, tu_tol tol)
{
    (void)tol;
    return tu_tol_rel(t == WEFT_F64 ? 1e-12 : t == WEFT_F32 ? 1e-5 : 1e-3);
}

/* The compiled side has `threads` workers; both tiers. */
static void pair_open(pair *c, int threads)
{
    weft_config cfg[2] = {tu_cmp_config(WEFT_BACKEND_INTERP, 1, 0),
                          tu_cmp_config(DT_BACKEND, threads, 0)};
    const char *names[2] = {"interpreter", DT_NAME};
    tu_cmp_open(c, 2, cfg, names);
    c->leaf_tol = tol_of;
}

static void pair_close(pair *c)
{
    tu_cmp_close(c);
}

static void *make_host(const in_spec *sp, uint64_t seed)
{
    int64_t n = tu_shape_size(sp->rank, sp->shape);
    size_t sz = weft_type_size(sp->type);
    void *h = malloc((size_t)(n > 0 ? n : 1) * sz);
    ck_assert_ptr_nonnull(h);
    if (sp->data) {
        memcpy(h, sp->data, (size_t)n * sz);
        return h;
    }
    tu_rng r = tu_rng_seed(seed);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = tu_rng_int(&r, sp->lo, sp->hi);
        char *dst = (char *)h + (size_t)i * sz;
        if (tu_is_float(sp->type) && sp->scale != 0) {
            tu_store_f(sp->type, dst, (double)v / sp->scale);
        } else {
            tu_store_i(sp->type, dst, v);
        }
    }
    return h;
}

/* Build the program in ctx and compile it (*p and *exe, for the caller to
 * free). */
static void compile_in(weft_context *ctx, build_fn build, const void *user,
                       int nin, const in_spec *spec, weft_program **p,
                       weft_executable **exe)
{
    TU_OK(weft_program_create(ctx, p));
    weft_acc *par[MAX_IN];
    for (int i = 0; i < nin; i++) {
        par[i] = weft_param(*p, spec[i].type, spec[i].rank);
    }
    weft_acc *r = build(*p, par, user);
    TU_PROGRAM_OK(*p);
    TU_OK(weft_compile(*p, &r, 1, exe));
}

/* The plan of exe must show a permute or fold_seg kernel: the backend did
 * not hand the operation to the interpreter. */
static void assert_kernel(const weft_executable *exe, const char *what)
{
    char *plan = tu_plan_text(exe);
    ck_assert_msg(strstr(plan, "permute") || strstr(plan, "fold_seg") ||
                      strstr(plan, "fold1_seg"),
                  "%s: no kernel in the plan:\n%s", what, plan);
    free(plan);
}

/* Compile and run the program in ctx; *out gets the result (or NULL). */
static weft_status run_in(weft_context *ctx, build_fn build, const void *user,
                          int nin, const in_spec *spec, void *const *host,
                          bool want_kernel, weft_array **out)
{
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    compile_in(ctx, build, user, nin, spec, &p, &exe);
    if (want_kernel) {
        assert_kernel(exe, "run_in");
    }
    weft_array *in[MAX_IN] = {NULL};
    for (int i = 0; i < nin; i++) {
        const void *d[1] = {host[i]};
        TU_OK(weft_array_from_host(ctx, spec[i].type, spec[i].rank,
                                   spec[i].shape, d, &in[i]));
    }
    *out = NULL;
    weft_status s = weft_run(exe, in, nin, out, 1);
    for (int i = 0; i < nin; i++) {
        weft_array_release(in[i]);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    return s;
}

/* A case's program: parameters of spec's types, then build's result. */
typedef struct case_arg {
    build_fn build;
    const void *user;
    int nin;
    const in_spec *spec;
} case_arg;

static int build_case(weft_program *p, weft_context *ctx, const void *arg,
                      weft_acc **res)
{
    (void)ctx;
    const case_arg *ca = arg;
    weft_acc *par[MAX_IN];
    for (int i = 0; i < ca->nin; i++) {
        par[i] = weft_param(p, ca->spec[i].type, ca->spec[i].rank);
    }
    res[0] = ca->build(p, par, ca->user);
    return 1;
}

/* Run the case on both backends and compare (tu_cmp_run). */
static void check_case(pair *c, const char *what, build_fn build,
                       const void *user, int nin, const in_spec *spec,
                       uint64_t seed)
{
    tu_host host[MAX_IN];
    for (int i = 0; i < nin; i++) {
        void *h = make_host(&spec[i], seed * 7919 + (uint64_t)i);
        host[i] = tu_host_of(1, &spec[i].type, spec[i].rank, spec[i].shape, &h);
        host[i].owned = true;
    }
    case_arg ca = {build, user, nin, spec};
    tu_cmp_case(c, "%s", what);
    tu_cmp_build(c, build_case, &ca);
    assert_kernel(c->exe[1], what);
    tu_cmp_run(c, host, nin, TU_EXACT);
    for (int i = 0; i < nin; i++) {
        tu_host_free(&host[i]);
    }
}

/* A shape as an expression. */
static weft_exp *shape_exp(weft_program *p, int rank, const int64_t *sh)
{
    weft_exp *c[3];
    for (int d = 0; d < rank; d++) {
        c[d] = weft_i64(p, sh[d]);
    }
    return weft_index(p, rank, c);
}

/* ------------------------------------------------------------------------
 * permute
 * ---------------------------------------------------------------------- */

enum {
    C_ADD,
    C_MIN,
    C_MAX,
    C_BAND,
    C_BOR,
    C_BXOR, /* recognised: atomicrmw */
    C_MUL,
    C_CONDMAX, /* others: CAS or locks */
    C_SUB,     /* not commutative */
    C_OR,      /* bool */
    C_PAIR,    /* (i32, f64): add, max */
    C_SUMS,    /* (f32, i32): add, add (k-means' sums and counts) */
    C_TRIPLE   /* (i64, u32, i32): min, bxor, add */
};

/* The element type of a tuple combine, or t. */
static weft_type elem_type(weft_program *p, int comb, weft_type t)
{
    weft_exp *c[3];
    switch (comb) {
    case C_PAIR:
        c[0] = weft_i32(p, 0);
        c[1] = weft_f64(p, 0);
        return weft_exp_type(weft_tuple(p, 2, c));
    case C_SUMS:
        c[0] = weft_f32(p, 0);
        c[1] = weft_i32(p, 0);
        return weft_exp_type(weft_tuple(p, 2, c));
    case C_TRIPLE:
        c[0] = weft_i64(p, 0);
        c[1] = weft_convert(weft_i32(p, 0), WEFT_U32);
        c[2] = weft_i32(p, 0);
        return weft_exp_type(weft_tuple(p, 3, c));
    default: return t;
    }
}

typedef struct perm_case {
    weft_type t; /* element type (ignored for C_PAIR) */
    int comb;
    int drank;
    int64_t dshape[3];
    bool direct; /* the source is parameter 1, not a map of keys */
    bool flip;   /* the recognised combine with its arguments swapped */
    bool wrap;   /* targets modulo the output size (else a key past
                           the output is out of bounds) */
    bool negdef; /* default element i is conv(i mod 5 - 2) */
} perm_case;

static weft_exp *conv_elem(weft_program *p, const perm_case *pc, weft_type et,
                           weft_exp *k32)
{
    if (pc->comb == C_PAIR) {
        weft_exp *c[2] = {
            k32, weft_fdiv(weft_convert(k32, WEFT_F64), weft_f64(p, 4))};
        return weft_tuple(p, 2, c);
    }
    if (pc->comb == C_SUMS) {
        weft_exp *c[2] = {weft_convert(k32, WEFT_F32), k32};
        return weft_tuple(p, 2, c);
    }
    if (pc->comb == C_TRIPLE) {
        /* min sees both signs; bxor all of a word's bits */
        weft_exp *c[3] = {
            weft_sub(weft_i64(p, 3), weft_convert(k32, WEFT_I64)),
            weft_convert(weft_mul(k32, weft_i32(p, 0x3b9aca07)), WEFT_U32),
            k32};
        return weft_tuple(p, 3, c);
    }
    if (et == WEFT_BOOL) {
        return weft_eq(weft_rem(k32, weft_i32(p, 3)), weft_i32(p, 0));
    }
    return weft_convert(k32, et);
}

static weft_acc *build_permute(weft_program *p, weft_acc *const *in,
                               const void *user)
{
    const perm_case *pc = user;
    weft_acc *keys = in[0];
    int srank = weft_acc_rank(keys);
    weft_type et = elem_type(p, pc->comb, pc->t);
    /* combine */
    weft_fun *f = weft_fun2(p, et, et);
    weft_exp *x = weft_arg(f, pc->flip ? 1 : 0);
    weft_exp *y = weft_arg(f, pc->flip ? 0 : 1);
    weft_exp *body = NULL;
    switch (pc->comb) {
    case C_ADD: body = weft_add(x, y); break;
    case C_MIN: body = weft_min(x, y); break;
    case C_MAX: body = weft_max(x, y); break;
    case C_BAND: body = weft_band(x, y); break;
    case C_BOR: body = weft_bor(x, y); break;
    case C_BXOR: body = weft_bxor(x, y); break;
    case C_MUL: body = weft_mul(x, y); break;
    case C_CONDMAX: body = weft_cond(weft_gt(x, y), x, y); break;
    case C_SUB: body = weft_sub(x, y); break;
    case C_OR: body = weft_or(x, y); break;
    case C_PAIR: {
        weft_exp *c[2] = {weft_add(weft_get(x, 0), weft_get(y, 0)),
                          weft_max(weft_get(x, 1), weft_get(y, 1))};
        body = weft_tuple(p, 2, c);
        break;
    }
    case C_SUMS: {
        weft_exp *c[2] = {weft_add(weft_get(x, 0), weft_get(y, 0)),
                          weft_add(weft_get(y, 1), weft_get(x, 1))};
        body = weft_tuple(p, 2, c);
        break;
    }
    case C_TRIPLE: {
        weft_exp *c[3] = {weft_min(weft_get(x, 0), weft_get(y, 0)),
                          weft_bxor(weft_get(x, 1), weft_get(y, 1)),
                          weft_add(weft_get(x, 2), weft_get(y, 2))};
        body = weft_tuple(p, 3, c);
        break;
    }
    }
    weft_fun_return(f, body);
    /* default: element i is conv(i mod 5) */
    weft_fun *g = weft_fun1(p, WEFT_DIM(pc->drank));
    weft_exp *dsh = shape_exp(p, pc->drank, pc->dshape);
    weft_exp *li = weft_convert(
        weft_rem(weft_to_index(dsh, weft_arg(g, 0)), weft_i64(p, 5)), WEFT_I32);
    if (pc->negdef) {
        li = weft_sub(li, weft_i32(p, 2));
    }
    weft_fun_return(g, conv_elem(p, pc, et, li));
    weft_acc *def = weft_generate(shape_exp(p, pc->drank, pc->dshape), g);
    /* source: conv(key mod 7 + 1), or parameter 1 */
    weft_acc *src;
    if (pc->direct) {
        src = in[1];
    } else {
        weft_fun *m = weft_fun1(p, WEFT_I32);
        weft_exp *k = weft_arg(m, 0);
        weft_exp *v = weft_add(weft_rem(k, weft_i32(p, 7)), weft_i32(p, 1));
        weft_fun_return(m, conv_elem(p, pc, et, v));
        src = weft_map(m, keys);
    }
    /* ix: key < 0 is ignore; else the key's position in the output */
    weft_fun *ix = weft_fun1(p, WEFT_DIM(srank));
    weft_exp *k = weft_convert(weft_at(keys, weft_arg(ix, 0)), WEFT_I64);
    int64_t dsize = tu_shape_size(pc->drank, pc->dshape);
    weft_exp *tgt;
    if (pc->drank == 0) {
        tgt = weft_index(p, 0, NULL);
    } else {
        /* from_index does not reduce the outermost component: without
         * wrap, a key past the output lands past its first dimension */
        weft_exp *lin =
            pc->wrap && dsize > 0 ? weft_rem(k, weft_i64(p, dsize)) : k;
        tgt = weft_from_index(shape_exp(p, pc->drank, pc->dshape), lin);
    }
    weft_fun_return(ix, weft_cond(weft_lt(k, weft_i64(p, 0)),
                                  weft_ignore(p, pc->drank), tgt));
    return weft_permute(f, def, ix, src);
}

static const int64_t src_sizes[] = {0, 1, 7, 97, 1009, 65537};
#define NSIZES ((int)(sizeof src_sizes / sizeof src_sizes[0]))
#define BIG 2000003 /* a few million: long parallel runs, heavy contention */

/* Keys of rank srank and n elements. */
static void keys_spec(in_spec *sp, int srank, int64_t n, int64_t lo, int64_t hi)
{
    memset(sp, 0, sizeof *sp);
    sp->type = WEFT_I32;
    sp->rank = srank;
    sp->lo = lo;
    sp->hi = hi;
    /* spread n over the dimensions: the inner ones small */
    int64_t rest = n;
    for (int d = srank - 1; d >= 1; d--) {
        int64_t e = d == srank - 1 ? 3 : 2;
        if (rest % e != 0) {
            e = 1;
        }
        sp->shape[d] = e;
        rest /= e;
    }
    if (srank >= 1) {
        sp->shape[0] = rest;
    }
}

static void run_perm(pair *c, const perm_case *pc, int srank, int64_t n,
                     int64_t klo, int64_t khi, uint64_t seed)
{
    in_spec sp[2];
    keys_spec(&sp[0], srank, srank == 0 ? 1 : n, klo, khi);
    int nin = 1;
    if (pc->direct) {
        sp[1] = sp[0];
        sp[1].type = pc->t;
        sp[1].lo = -9;
        sp[1].hi = 9;
        nin = 2;
    }
    char what[160];
    snprintf(what, sizeof what,
             "permute type %d comb %d src rank %d n %lld def rank %d%s%s",
             (int)pc->t, pc->comb, srank, (long long)n, pc->drank,
             pc->direct ? " direct" : "", pc->flip ? " flipped" : "");
    check_case(c, what, build_permute, pc, nin, sp, seed);
}

/* Every combine / type pairing, over source sizes, into a 1-D output. */
START_TEST(test_permute_modes)
{
    static const struct {
        weft_type t;
        int comb;
    } modes[] = {
        {WEFT_I32, C_ADD},  {WEFT_I64, C_MIN},  {WEFT_U32, C_MAX},
        {WEFT_I64, C_BAND}, {WEFT_U64, C_BOR},  {WEFT_I32, C_BXOR},
        {WEFT_U8, C_ADD},   {WEFT_I16, C_MAX},  {WEFT_F32, C_ADD},
        {WEFT_F64, C_ADD},  {WEFT_I32, C_MUL},  {WEFT_I64, C_CONDMAX},
        {WEFT_F32, C_MIN},  {WEFT_F64, C_MAX},  {WEFT_U16, C_MUL},
        {WEFT_F16, C_MAX},  {WEFT_BOOL, C_OR},  {WEFT_I32, C_PAIR},
        {WEFT_I8, C_MUL},   {WEFT_I32, C_SUMS}, {WEFT_I32, C_TRIPLE},
    };
    pair c;
    pair_open(&c, 4);
    int nm = (int)(sizeof modes / sizeof modes[0]);
    for (int m = 0; m < nm; m++) {
        for (int s = 0; s < NSIZES; s++) {
            int64_t n = src_sizes[s];
            perm_case pc = {.t = modes[m].t,
                            .comb = modes[m].comb,
                            .drank = 1,
                            .dshape = {1000},
                            .wrap = true};
            run_perm(&c, &pc, 1, n, -3, 1999, (uint64_t)(m * 100 + s));
            /* heavy contention: five targets */
            pc.dshape[0] = 5;
            run_perm(&c, &pc, 1, n, -1, 4, (uint64_t)(m * 100 + s + 50));
        }
        /* a few million updates for one mode of each kind (the
         * interpreter's side is slow) */
        int comb = modes[m].comb;
        if ((comb == C_ADD && modes[m].t == WEFT_I32) ||
            (comb == C_ADD && modes[m].t == WEFT_F32) ||
            (comb == C_MUL && modes[m].t != WEFT_I8) || comb == C_PAIR ||
            comb == C_SUMS || comb == C_TRIPLE) {
            perm_case pc = {.t = modes[m].t,
                            .comb = comb,
                            .drank = 1,
                            .dshape = {5},
                            .wrap = true};
            run_perm(&c, &pc, 1, BIG, -1, 4, (uint64_t)m);
        }
    }
    pair_close(&c);
}
END_TEST

/* Outputs whose size decides how many copies of them the GPU's blocks
 * keep in shared memory (skeletons-ir/ptx/permute.c: as many as fit in 32
 * KiB, a multiple of 32 from 32 on, at most one a thread): 40 bins of i32
 * (204 fit: 192 copies, or one a thread), 200 (40 fit: 32 copies), 3000
 * (2), 8192 (1) and 8193 (none: global atomics), for one leaf of 4 and 8
 * bytes and tuples of two and three, with ignored targets. */
START_TEST(test_permute_copies)
{
    static const struct {
        weft_type t;
        int comb;
    } modes[] = {
        {WEFT_I32, C_ADD}, {WEFT_F32, C_ADD},  {WEFT_F64, C_ADD},
        {WEFT_I32, C_MAX}, {WEFT_I32, C_SUMS}, {WEFT_I32, C_TRIPLE},
    };
    static const int64_t bins[] = {40, 200, 3000, 8192, 8193};
    pair c;
    pair_open(&c, 4);
    int nm = (int)(sizeof modes / sizeof modes[0]);
    for (int m = 0; m < nm; m++) {
        for (int b = 0; b < 5; b++) {
            perm_case pc = {.t = modes[m].t,
                            .comb = modes[m].comb,
                            .drank = 1,
                            .dshape = {bins[b]},
                            .wrap = true};
            run_perm(&c, &pc, 1, 300007, -2, bins[b] - 1,
                     (uint64_t)(m * 10 + b));
        }
    }
    pair_close(&c);
}
END_TEST

/* Recognised combines with their arguments swapped, and a manifest
 * source. */
START_TEST(test_permute_flip_direct)
{
    pair c;
    pair_open(&c, 4);
    static const struct {
        weft_type t;
        int comb;
    } modes[] = {
        {WEFT_I32, C_ADD}, {WEFT_I64, C_MAX}, {WEFT_U16, C_BXOR},
        {WEFT_F64, C_ADD}, {WEFT_I32, C_MUL}, {WEFT_I8, C_MIN},
    };
    for (int m = 0; m < 6; m++) {
        for (int s = 0; s < NSIZES; s++) {
            perm_case pc = {.t = modes[m].t,
                            .comb = modes[m].comb,
                            .drank = 1,
                            .dshape = {37},
                            .wrap = true,
                            .flip = true,
                            .direct = s % 2 == 0};
            run_perm(&c, &pc, 1, src_sizes[s], -5, 1000, (uint64_t)(m + s));
        }
    }
    pair_close(&c);
}
END_TEST

/* Every native atomic combine on signed and unsigned types with values
 * of both signs in the source and the default (the PTX target's entry 2
 * keeps them in words whose zero is the combine's identity), into few
 * and many bins. */
START_TEST(test_permute_signs)
{
    pair c;
    pair_open(&c, 4);
    static const weft_type types[] = {WEFT_I32, WEFT_I64, WEFT_U32, WEFT_U64};
    static const int combs[] = {C_ADD, C_MIN, C_MAX, C_BAND, C_BOR, C_BXOR};
    static const int64_t sizes[] = {7, 4099, 300007};
    uint64_t seed = 7;
    for (int t = 0; t < 4; t++) {
        for (int m = 0; m < 6; m++) {
            for (int s = 0; s < 3; s++) {
                perm_case pc = {.t = types[t],
                                .comb = combs[m],
                                .drank = 1,
                                .dshape = {s == 1 ? 3 : 700},
                                .wrap = true,
                                .direct = true,
                                .negdef = true};
                run_perm(&c, &pc, 1, sizes[s], -3, 2000, seed++);
            }
        }
    }
    /* f32 and f64 add with negative values */
    for (int t = 0; t < 2; t++) {
        perm_case pc = {.t = t ? WEFT_F64 : WEFT_F32,
                        .comb = C_ADD,
                        .drank = 1,
                        .dshape = {300},
                        .wrap = true,
                        .direct = true,
                        .negdef = true};
        run_perm(&c, &pc, 1, 300007, -3, 2000, seed++);
    }
    pair_close(&c);
}
END_TEST

/* fadd's signed zeros, bit for bit: into a default of -0.0, bin 0 gets
 * as many 1.0 as -1.0 (+0.0 in any order), bin 1 only -0.0 (-0.0), bin 2
 * nothing (-0.0, the default); enough sources for every parallel path.
 * On PTX bin 1 is only asked to be a zero: the source's -0.0 is
 * `cond(.., -1.0, -0.0)`, whose correct `selp.f32 .., 0fBF800000,
 * 0f80000000` ptxas (13.0 here; the H200 gave the same in device rounds
 * 2 and 3) turns into an integer select of -1 or 0 and an I2FP conversion,
 * which gives +0.0: the contributions arrive as +0.0, and so does bin 1.
 * Not permute's doing (bin 0 and the default's bin 2 keep their signs). */
static weft_acc *build_zeros(weft_program *p, weft_acc *const *in,
                             const void *user)
{
    weft_type t = *(const weft_type *)user;
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(g, weft_convert(weft_f64(p, -0.0), t));
    weft_acc *def = weft_generate(weft_index1(weft_i64(p, 3)), g);
    weft_fun *v = weft_fun1(p, WEFT_I32);
    weft_exp *k = weft_arg(v, 0);
    weft_exp *r = weft_rem(k, weft_i32(p, 4));
    /* k mod 4: 0 -> 1.0, 1 -> -1.0 (bin 0); 2, 3 -> -0.0 (bin 1) */
    weft_exp *rest = weft_cond(weft_eq(r, weft_i32(p, 1)), weft_f64(p, -1),
                               weft_f64(p, -0.0));
    weft_fun_return(
        v, weft_convert(
               weft_cond(weft_eq(r, weft_i32(p, 0)), weft_f64(p, 1), rest), t));
    weft_acc *src = weft_map(v, in[0]);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *kr = weft_rem(weft_at(in[0], weft_arg(ix, 0)), weft_i32(p, 4));
    weft_fun_return(
        ix, weft_index1(weft_convert(weft_quot(kr, weft_i32(p, 2)), WEFT_I64)));
    return weft_permute(tu_fun_op2(p, WEFT_OP_ADD, t), def, ix, src);
}

START_TEST(test_permute_signed_zeros)
{
    pair c;
    pair_open(&c, 4);
    for (int t = 0; t < 2; t++) {
        weft_type ty = t ? WEFT_F64 : WEFT_F32;
        for (int64_t n = 4; n <= 400000; n *= 100) {
            /* keys 0, 1, 2, 3, 0, 1, ...: as many of each */
            int32_t *keys = malloc((size_t)n * sizeof *keys);
            ck_assert_ptr_nonnull(keys);
            for (int64_t i = 0; i < n; i++) {
                keys[i] = (int32_t)(i % 4);
            }
            in_spec sp = {
                .type = WEFT_I32, .rank = 1, .shape = {n}, .data = keys};
            void *host[1] = {keys};
            weft_array *got = NULL;
            TU_OK(run_in(c.ctx[1], build_zeros, &ty, 1, &sp, host, true, &got));
            double want[3] = {0.0, -0.0, -0.0};
            for (int b = 0; b < 3; b++) {
                double x = tu_load_f(ty, (const char *)weft_array_data(got, 0) +
                                             (size_t)b * weft_type_size(ty));
                bool sign = DT_BACKEND != WEFT_BACKEND_PTX || b != 1;
                ck_assert_msg(x == 0 &&
                                  (!sign || !signbit(x) == !signbit(want[b])),
                              "type %d n %lld bin %d: %g, want %s0.0", (int)ty,
                              (long long)n, b, x, signbit(want[b]) ? "-" : "+");
            }
            weft_array_release(got);
            free(keys);
        }
    }
    pair_close(&c);
}
END_TEST

/* k-means' sums with few bins: permute of (1, x, y) from keys, xs and ys
 * (parameters 0 to 2) by the combine \a b -> (b.0 + a.0, a.1 + b.1, b.2 +
 * a.2) (associative; its arguments in both orders), into FEW_BINS bins
 * whose default is (3 b - 7, b / 4, -0.0): on the GPU, entry 2 of
 * skeletons-ir/ptx/permute.c with its interleaved copies (128 of 20 bins
 * of 12 bytes) and a fused default. */
enum { FEW_BINS = 20 };

static weft_acc *build_few_bins(weft_program *p, weft_acc *const *in,
                                const void *user)
{
    (void)user;
    weft_exp *z[3] = {weft_i32(p, 0), weft_f32(p, 0), weft_f32(p, 0)};
    weft_type et = weft_exp_type(weft_tuple(p, 3, z));
    weft_fun *f = weft_fun2(p, et, et);
    weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1);
    weft_exp *c[3] = {weft_add(weft_get(b, 0), weft_get(a, 0)),
                      weft_add(weft_get(a, 1), weft_get(b, 1)),
                      weft_add(weft_get(b, 2), weft_get(a, 2))};
    weft_fun_return(f, weft_tuple(p, 3, c));
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *bi = weft_convert(weft_get(weft_arg(g, 0), 0), WEFT_I32);
    weft_exp *d[3] = {weft_sub(weft_mul(bi, weft_i32(p, 3)), weft_i32(p, 7)),
                      weft_fdiv(weft_convert(bi, WEFT_F32), weft_f32(p, 4)),
                      weft_f32(p, -0.0f)};
    weft_fun_return(g, weft_tuple(p, 3, d));
    weft_acc *def = weft_generate(weft_index1(weft_i64(p, FEW_BINS)), g);
    weft_fun *v = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_exp *e[3] = {weft_i32(p, 1), weft_arg(v, 0), weft_arg(v, 1)};
    weft_fun_return(v, weft_tuple(p, 3, e));
    weft_acc *src = weft_zipwith(v, in[1], in[2]);
    /* a negative key is ignored */
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *k = weft_convert(weft_at(in[0], weft_arg(ix, 0)), WEFT_I64);
    weft_fun_return(ix, weft_cond(weft_lt(k, weft_i64(p, 0)), weft_ignore(p, 1),
                                  weft_index1(k)));
    return weft_permute(f, def, ix, src);
}

/* build_few_bins on n keys in [-1, 15] (-1 ignored; bins 16 to 19 hit by
 * none and keep their default), xs and ys quarters in [-9/4, 9/4] (their
 * sums exact in any order, so that the tolerance of 1e-5 of the harness
 * covers nothing but exact results), except that every y of key 5 is
 * -0.0 (bin 5's y stays the default's -0.0: checked bit for bit, as the
 * harness takes -0 for +0 under its tolerance) and the first y of key 3
 * is a NaN (bin 3's y a NaN on both sides); with `bad`, one key is 20,
 * outside the result: WEFT_ERR_OUT_OF_BOUNDS on both sides. */
static void run_few_bins(pair *c, int64_t n, bool bad, uint64_t seed)
{
    int32_t *keys = malloc((size_t)n * sizeof *keys);
    float *xs = malloc((size_t)n * sizeof *xs);
    float *ys = malloc((size_t)n * sizeof *ys);
    ck_assert(keys && xs && ys);
    tu_rng r = tu_rng_seed(seed);
    bool nan = false;
    for (int64_t i = 0; i < n; i++) {
        keys[i] = (int32_t)tu_rng_int(&r, -1, 15);
        xs[i] = (float)tu_rng_int(&r, -9, 9) / 4;
        ys[i] = keys[i] == 5 ? -0.0f : (float)tu_rng_int(&r, -9, 9) / 4;
        if (keys[i] == 3 && !nan) {
            ys[i] = NAN;
            nan = true;
        }
    }
    if (bad) {
        keys[n / 2] = FEW_BINS;
    }
    in_spec sp[3] = {{.type = WEFT_I32, .rank = 1, .shape = {n}, .data = keys},
                     {.type = WEFT_F32, .rank = 1, .shape = {n}, .data = xs},
                     {.type = WEFT_F32, .rank = 1, .shape = {n}, .data = ys}};
    char what[80];
    snprintf(what, sizeof what, "few bins n %lld%s", (long long)n,
             bad ? " (a key outside)" : "");
    check_case(c, what, build_few_bins, NULL, 3, sp, seed);
    if (!bad) {
        void *host[3] = {keys, xs, ys};
        weft_array *got = NULL;
        TU_OK(run_in(c->ctx[1], build_few_bins, NULL, 3, sp, host, true, &got));
        const float *y = weft_array_data(got, 2);
        for (int b = 5; b < FEW_BINS; b += 12) {
            ck_assert_msg(y[b] == 0 && signbit(y[b]),
                          "%s: bin %d's y is %g, want -0.0", what, b,
                          (double)y[b]);
        }
        weft_array_release(got);
    }
    free(keys);
    free(xs);
    free(ys);
}

START_TEST(test_permute_few_bins)
{
    pair c;
    pair_open(&c, 4);
    static const int64_t sizes[] = {7, 4099, 300007};
    for (int s = 0; s < 3; s++) {
        run_few_bins(&c, sizes[s], false, (uint64_t)s + 1);
    }
    run_few_bins(&c, 300007, true, 9);
    pair_close(&c);
}
END_TEST

/* Source ranks 0 to 3 into output ranks 0 to 3. */
START_TEST(test_permute_ranks)
{
    pair c;
    pair_open(&c, 4);
    static const int64_t dshapes[4][3] = {{0}, {11}, {3, 7}, {2, 3, 5}};
    static const int64_t sizes[] = {0, 1, 6, 30, 210, 300000};
    uint64_t seed = 1;
    for (int dr = 0; dr <= 3; dr++) {
        for (int sr = 0; sr <= 3; sr++) {
            for (int s = 0; s < 6; s++) {
                if (sr == 0 && s > 1) {
                    continue;
                }
                int comb = (int)(seed % 3) == 0   ? C_ADD
                           : (int)(seed % 3) == 1 ? C_MUL
                                                  : C_PAIR;
                perm_case pc = {
                    .t = WEFT_I64, .comb = comb, .drank = dr, .wrap = true};
                memcpy(pc.dshape, dshapes[dr], sizeof pc.dshape);
                run_perm(&c, &pc, sr, sizes[s], -2, 500, seed++);
            }
        }
    }
    pair_close(&c);
}
END_TEST

/* Targets outside the output: WEFT_ERR_OUT_OF_BOUNDS on both backends,
 * whatever the mode; and an empty output with every element ignored. */
START_TEST(test_permute_errors)
{
    pair c;
    pair_open(&c, 4);
    static const struct {
        weft_type t;
        int comb;
    } modes[] = {
        {WEFT_I32, C_ADD},
        {WEFT_I32, C_MUL},
        {WEFT_I16, C_MUL},
        {WEFT_I32, C_PAIR},
    };
    for (int m = 0; m < 4; m++) {
        for (int dr = 1; dr <= 3; dr++) {
            perm_case pc = {.t = modes[m].t,
                            .comb = modes[m].comb,
                            .drank = dr,
                            .dshape = {4, 2, 2}};
            /* keys up to 40 reach past every output here */
            run_perm(&c, &pc, 1, 1000, -3, 40, (uint64_t)(m * 10 + dr));
            run_perm(&c, &pc, 2, 100000, -3, 16, (uint64_t)(m * 10 + dr));
            /* all keys in range */
            run_perm(&c, &pc, 1, 1000, -3, 3, (uint64_t)(m * 10 + dr));
        }
        /* an empty output: only ignored elements are fine */
        perm_case pe = {
            .t = modes[m].t, .comb = modes[m].comb, .drank = 1, .dshape = {0}};
        run_perm(&c, &pe, 1, 5000, -3, -1, (uint64_t)m);
        run_perm(&c, &pe, 1, 5000, -3, 0, (uint64_t)m);
    }
    pair_close(&c);
}
END_TEST

/* One worker: the sequential entry, so even a combine that is not
 * commutative gives the interpreter's answer exactly. */
START_TEST(test_permute_one_worker)
{
    pair c;
    pair_open(&c, 1);
    for (int s = 0; s < NSIZES; s++) {
        perm_case pc = {.t = WEFT_I32,
                        .comb = C_SUB,
                        .drank = 1,
                        .dshape = {13},
                        .wrap = true};
        run_perm(&c, &pc, 1, src_sizes[s], -2, 100, (uint64_t)s);
        pc.t = WEFT_F64;
        run_perm(&c, &pc, 1, src_sizes[s], -2, 100, (uint64_t)s);
    }
    pair_close(&c);
}
END_TEST

/* The CPU's private copies per chunk of sources (cpu/permute.c): only for
 * the combines that are one native atomic a leaf (commutative and
 * associative: integer add, min, max, and, or, xor; float add; tuples of
 * them componentwise), whose kernels have the two more phases; the others
 * (mul, a conditional max, sub, which is not commutative, a float min, a
 * pair with a float max) keep the atomic loop. */
START_TEST(test_permute_parts_which)
{
    if (DT_BACKEND != WEFT_BACKEND_CPU) {
        return;
    }
    pair c;
    pair_open(&c, 4);
    static const struct {
        weft_type t;
        int comb;
        bool parts;
    } modes[] = {
        {WEFT_I32, C_ADD, true},  {WEFT_I64, C_MIN, true},
        {WEFT_U32, C_MAX, true},  {WEFT_U64, C_BAND, true},
        {WEFT_I32, C_BOR, true},  {WEFT_U16, C_BXOR, true},
        {WEFT_F32, C_ADD, true},  {WEFT_F64, C_ADD, true},
        {WEFT_I32, C_MUL, false}, {WEFT_I64, C_CONDMAX, false},
        {WEFT_I32, C_SUB, false}, {WEFT_F32, C_MIN, false},
        {WEFT_BOOL, C_OR, false}, {WEFT_I32, C_PAIR, false},
        {WEFT_I32, C_SUMS, true}, {WEFT_I32, C_TRIPLE, true},
    };
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        perm_case pc = {.t = modes[m].t,
                        .comb = modes[m].comb,
                        .drank = 1,
                        .dshape = {16},
                        .wrap = true};
        in_spec sp;
        keys_spec(&sp, 1, 100, 0, 15);
        weft_program *p = NULL;
        weft_executable *exe = NULL;
        compile_in(c.ctx[1], build_permute, &pc, 1, &sp, &p, &exe);
        char *buf = tu_plan_text(exe);
        weft_executable_free(exe);
        weft_program_free(p);
        /* entries 0 and 1, 2 and 3 with the copies, the fused default's */
        bool parts = strstr(buf, "(5 phases") != NULL;
        ck_assert_msg(
            parts == modes[m].parts && (parts || strstr(buf, "(3 phases")),
            "type %d comb %d: %s", (int)modes[m].t, modes[m].comb, buf);
        free(buf);
    }
    pair_close(&c);
}
END_TEST

/* permute (+) of f32 values in [-1, 1) (not integers: the order of the
 * additions shows in the bits) from a million sources into 16 and 1000
 * bins: the copies' order is fixed by the sizes alone, so 2, 3 and 5
 * workers give the same bits; and each bin lies within the bound of any
 * order of recursive summation of its k values and its default d,
 * |sum - exact| <= k 2^-24 (|d| + sum |x|), of the exact sum (f64 of f32
 * values: exact for a million of them). */
static weft_acc *build_fsum(weft_program *p, weft_acc *const *in,
                            const void *user)
{
    int64_t bins = *(const int64_t *)user;
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(g, weft_f32(p, 0.5f));
    weft_acc *def = weft_generate(weft_index1(weft_i64(p, bins)), g);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(
                            weft_at(in[0], weft_arg(ix, 0)), WEFT_I64)));
    return weft_permute(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32), def, ix, in[1]);
}

START_TEST(test_permute_parts_order)
{
    if (DT_BACKEND != WEFT_BACKEND_CPU) {
        return;
    }
    const int64_t n = 1000003;
    int32_t *keys = malloc((size_t)n * sizeof *keys);
    float *vals = malloc((size_t)n * sizeof *vals);
    ck_assert(keys && vals);
    static const int64_t nbins[] = {16, 1000};
    static const int workers[] = {2, 3, 5};
    for (int b = 0; b < 2; b++) {
        int64_t bins = nbins[b];
        tu_rng s = tu_rng_seed(99 + (uint64_t)b);
        double *exact = calloc((size_t)bins, sizeof *exact);
        double *mag = calloc((size_t)bins, sizeof *mag);
        int64_t *cnt = calloc((size_t)bins, sizeof *cnt);
        ck_assert(exact && mag && cnt);
        for (int64_t i = 0; i < n; i++) {
            keys[i] = (int32_t)(tu_rng_u64(&s) % (uint64_t)bins);
            vals[i] = (float)((double)(tu_rng_u64(&s) >> 40) * 0x1p-23 - 1.0);
            exact[keys[i]] += vals[i];
            mag[keys[i]] += fabs(vals[i]);
            cnt[keys[i]]++;
        }
        in_spec sp[2] = {
            {.type = WEFT_I32, .rank = 1, .shape = {n}, .data = keys},
            {.type = WEFT_F32, .rank = 1, .shape = {n}, .data = vals}};
        void *host[2] = {keys, vals};
        float *first = NULL;
        for (int w = 0; w < 3; w++) {
            pair c;
            pair_open(&c, workers[w]);
            weft_array *got = NULL;
            TU_OK(run_in(c.ctx[1], build_fsum, &bins, 2, sp, host, true, &got));
            const float *y = weft_array_data(got, 0);
            for (int64_t k = 0; k < bins; k++) {
                double want = exact[k] + 0.5;
                double bound = (double)cnt[k] * 0x1p-24 * (mag[k] + 0.5);
                ck_assert_msg(fabs(y[k] - want) <= bound,
                              "%lld bins, %d workers, bin %lld: %.9g, exact "
                              "%.9g, bound %g",
                              (long long)bins, workers[w], (long long)k, y[k],
                              want, bound);
            }
            if (!first) {
                first = malloc((size_t)bins * sizeof *first);
                ck_assert_ptr_nonnull(first);
                memcpy(first, y, (size_t)bins * sizeof *first);
            } else {
                ck_assert_msg(memcmp(first, y, (size_t)bins * sizeof *y) == 0,
                              "%lld bins: %d workers differ from 2",
                              (long long)bins, workers[w]);
            }
            weft_array_release(got);
            pair_close(&c);
        }
        free(first);
        free(exact);
        free(mag);
        free(cnt);
    }
    free(keys);
    free(vals);
}
END_TEST

/* A source that is a zipWith of arrays of different shapes (fused: the
 * general variant of the kernel) and a backpermute whose gather may fall
 * outside its source. */
typedef struct zip_case {
    bool gather;
} zip_case;

static weft_acc *build_perm_zip(weft_program *p, weft_acc *const *in,
                                const void *user)
{
    const zip_case *zc = user;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32);
    weft_acc *src;
    if (zc->gather) {
        /* src[i] = b[2 i] : outside b when b is shorter than 2 n */
        weft_fun *g = weft_fun1(p, WEFT_DIM(1));
        weft_exp *i = weft_get(weft_arg(g, 0), 0);
        weft_fun_return(g, weft_index1(weft_mul(i, weft_i64(p, 2))));
        src = weft_backpermute(weft_shape(in[0]), g, in[1]);
    } else {
        src = weft_zipwith(tu_fun_op2(p, WEFT_OP_MUL, WEFT_I32), in[0], in[1]);
    }
    weft_fun *z = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(z, weft_i32(p, 0));
    weft_acc *def = weft_generate(weft_index1(weft_i64(p, 17)), z);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *v = weft_at(in[0], weft_arg(ix, 0));
    weft_fun_return(ix, weft_index1(weft_convert(
                            weft_rem(weft_abs(v), weft_i32(p, 17)), WEFT_I64)));
    return weft_permute(add, def, ix, src);
}

/* Sibling permutes (lib/fuse.c): k-means' sums of x and y and counts and
 * a maximum, four permutes into 16 bins over one index function with
 * sources of unequal lengths, consumed by zipWiths.  The backend runs them
 * as one permute of a tuple where the lengths agree (else as written:
 * fuse.c's acond); the reference is the interpreter without
 * fusion, which runs the four as written.  Integer-valued f32 sources in
 * [-9, 9] and counts below 2^24: every sum is exact in any order, so the
 * results must be equal.  (Its own contexts and comparison: the pair's
 * reference is an interpreter with fusion.) */
static weft_acc *build_siblings(weft_program *p, weft_acc *const *in,
                                const void *user)
{
    (void)user;
    weft_exp *k[1] = {weft_i64(p, 16)};
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_f32(p, 0));
    weft_fun *zero_i = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero_i, weft_i32(p, 0));
    weft_fun *low = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(low, weft_i32(p, -5000));
    weft_fun *one = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(one, weft_i32(p, 1));
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(
                            weft_rem(weft_abs(weft_at(in[0], weft_arg(ix, 0))),
                                     weft_i32(p, 16)),
                            WEFT_I64)));
    weft_acc *sx =
        weft_permute(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32),
                     weft_generate(weft_index(p, 1, k), zero), ix, in[1]);
    weft_acc *sy =
        weft_permute(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32),
                     weft_generate(weft_index(p, 1, k), zero), ix, in[2]);
    weft_acc *cnt = weft_permute(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32),
                                 weft_generate(weft_index(p, 1, k), zero_i), ix,
                                 weft_generate(weft_shape(in[1]), one));
    weft_acc *mx =
        weft_permute(tu_fun_op2(p, WEFT_OP_MAX, WEFT_I32),
                     weft_generate(weft_index(p, 1, k), low), ix, in[0]);
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_I32, WEFT_I32);
    weft_fun_return(
        f,
        weft_add(weft_arg(f, 0),
                 weft_convert(weft_add(weft_mul(weft_arg(f, 1), weft_i32(p, 7)),
                                       weft_arg(f, 2)),
                              WEFT_F32)));
    weft_acc *a = weft_zipwith3(f, sx, cnt, mx);
    return weft_zipwith(tu_fun_op2(p, WEFT_OP_MUL, WEFT_F32), a, sy);
}

/* Runs build_siblings in ctx on the host inputs: its 16 results into
 * r[16]; with plan, whether the plan holds the permute of a tuple. */
static void run_siblings(weft_context *ctx, const in_spec *sp,
                         void *const *host, float *r, bool *plan)
{
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    compile_in(ctx, build_siblings, NULL, 3, sp, &p, &exe);
    if (plan) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        ck_assert_ptr_nonnull(f);
        TU_OK(weft_executable_dump(exe, f));
        fclose(f);
        /* a zipWith of the three array sources fused into it (beside the
         * four as written, for sources of unequal lengths) */
        *plan = strstr(text, ": permute, fused: generate, zipwith") != NULL;
        free(text);
    }
    weft_array *in[3] = {NULL}, *out = NULL;
    for (int i = 0; i < 3; i++) {
        const void *d[1] = {host[i]};
        TU_OK(weft_array_from_host(ctx, sp[i].type, 1, sp[i].shape, d, &in[i]));
    }
    TU_OK(weft_run(exe, in, 3, &out, 1));
    ck_assert_int_eq(weft_array_size(out), 16);
    memcpy(r, weft_array_data(out, 0), 16 * sizeof *r);
    weft_array_release(out);
    for (int i = 0; i < 3; i++) {
        weft_array_release(in[i]);
    }
    weft_executable_free(exe);
    weft_program_free(p);
}

START_TEST(test_permute_siblings)
{
    weft_config cfg = weft_config_default();
    cfg.flags |= WEFT_FLAG_NO_ENV | WEFT_FLAG_NO_FUSION;
    cfg.backend = WEFT_BACKEND_INTERP;
    weft_context *ref, *ctx;
    TU_OK(weft_context_create(&cfg, &ref));
    cfg.flags &= ~(unsigned)WEFT_FLAG_NO_FUSION;
    cfg.backend = DT_BACKEND;
    cfg.threads = 4;
    TU_OK(weft_context_create(&cfg, &ctx));
    static const int64_t na[] = {0, 1, 100, 5000, 300007};
    for (int s = 0; s < 5; s++) {
        for (int d = 0; d < 3; d++) {
            /* y shorter, as long, longer; the keys the longest */
            int64_t n = na[s], ny = d == 0 ? n / 2 : d == 1 ? n : n + 3;
            int64_t nk = ny > n ? ny : n;
            in_spec sp[3] = {
                {.type = WEFT_I32,
                 .rank = 1,
                 .shape = {nk},
                 .lo = -100,
                 .hi = 100},
                {.type = WEFT_F32, .rank = 1, .shape = {n}, .lo = -9, .hi = 9},
                {.type = WEFT_F32,
                 .rank = 1,
                 .shape = {ny},
                 .lo = -9,
                 .hi = 9}};
            void *host[3];
            for (int i = 0; i < 3; i++) {
                host[i] = make_host(&sp[i], (uint64_t)(s * 30 + d * 3 + i));
            }
            float want[16], got[16];
            bool plan = false;
            run_siblings(ref, sp, host, want, NULL);
            run_siblings(ctx, sp, host, got, &plan);
            ck_assert_msg(plan, "no permute of a tuple in the plan");
            for (int b = 0; b < 16; b++) {
                /* integer-valued sums below 2^24: exact in any order */
                ck_assert_msg(want[b] == got[b],
                              "sibling permutes %lld/%lld/%lld bin %d: "
                              "want %g, got %g",
                              (long long)nk, (long long)n, (long long)ny, b,
                              (double)want[b], (double)got[b]);
            }
            for (int i = 0; i < 3; i++) {
                free(host[i]);
            }
        }
    }
    weft_context_free(ref);
    weft_context_free(ctx);
}
END_TEST

START_TEST(test_permute_fused)
{
    pair c;
    pair_open(&c, 4);
    static const int64_t na[] = {0, 1, 100, 5000, 300007};
    for (int g = 0; g < 2; g++) {
        for (int s = 0; s < 5; s++) {
            for (int d = 0; d < 3; d++) {
                /* b: shorter, equal, longer (x2) than a */
                int64_t nb = d == 0 ? na[s] / 2 : d == 1 ? na[s] : 2 * na[s];
                in_spec sp[2] = {{.type = WEFT_I32,
                                  .rank = 1,
                                  .shape = {na[s]},
                                  .lo = -50,
                                  .hi = 50},
                                 {.type = WEFT_I32,
                                  .rank = 1,
                                  .shape = {nb},
                                  .lo = -9,
                                  .hi = 9}};
                zip_case zc = {.gather = g == 1};
                char what[96];
                snprintf(what, sizeof what, "permute of a fused %s, %lld/%lld",
                         g ? "backpermute" : "zipWith", (long long)na[s],
                         (long long)nb);
                check_case(&c, what, build_perm_zip, &zc, 2, sp,
                           (uint64_t)(s * 3 + d));
            }
        }
    }
    pair_close(&c);
}
END_TEST

/* ------------------------------------------------------------------------
 * foldSeg, fold1Seg
 * ---------------------------------------------------------------------- */

/* S_FUSED: the input is a map, fused into the kernel; S_ZIP: a zipWith
 * of the input with a larger generated array (fused, extents that differ:
 * the kernel's general variant) */
enum { S_ADD, S_MAX, S_MIN, S_PAIR, S_FUSED, S_ZIP };

typedef struct seg_case {
    bool seeded;
    int comb;
    weft_type t;
} seg_case;

static weft_acc *build_fold_seg(weft_program *p, weft_acc *const *in,
                                const void *user)
{
    const seg_case *sc = user;
    weft_acc *a = in[0];
    weft_type et = sc->t;
    weft_exp *z = NULL;
    if (sc->comb == S_PAIR || sc->comb == S_FUSED) {
        /* a -> (a, a * 3) (fused into the fold for S_FUSED, a tuple for
         * S_PAIR) */
        weft_fun *m = weft_fun1(p, et);
        weft_exp *x = weft_arg(m, 0);
        weft_exp *three = weft_convert(weft_i32(p, 3), et);
        if (sc->comb == S_PAIR) {
            weft_exp *c[2] = {x, weft_mul(x, three)};
            weft_fun_return(m, weft_tuple(p, 2, c));
        } else {
            weft_fun_return(m, weft_add(weft_mul(x, three), x));
        }
        a = weft_map(m, a);
    }
    if (sc->comb == S_ZIP) {
        int rank = weft_acc_rank(a);
        weft_exp *ext[3];
        for (int d = 0; d < rank; d++) {
            ext[d] = weft_add(weft_get(weft_shape(a), d), weft_i64(p, 2));
        }
        weft_fun *g = weft_fun1(p, WEFT_DIM(rank));
        weft_exp *gi = weft_to_index(weft_index(p, rank, ext), weft_arg(g, 0));
        weft_fun_return(g, weft_convert(weft_rem(gi, weft_i64(p, 11)), et));
        weft_acc *b = weft_generate(weft_index(p, rank, ext), g);
        a = weft_zipwith(tu_fun_op2(p, WEFT_OP_ADD, et), a, b);
    }
    weft_type at = weft_acc_type(a);
    weft_fun *f = weft_fun2(p, at, at);
    weft_exp *x = weft_arg(f, 0), *y = weft_arg(f, 1);
    switch (sc->comb) {
    case S_ADD:
    case S_FUSED:
    case S_ZIP:
        weft_fun_return(f, weft_add(x, y));
        z = weft_convert(weft_i32(p, 3), et);
        break;
    case S_MAX:
        weft_fun_return(f, weft_max(x, y));
        z = weft_convert(weft_i32(p, -100), et);
        break;
    case S_MIN:
        weft_fun_return(f, weft_min(x, y));
        z = weft_convert(weft_i32(p, 100), et);
        break;
    case S_PAIR: {
        weft_exp *c[2] = {weft_add(weft_get(x, 0), weft_get(y, 0)),
                          weft_max(weft_get(x, 1), weft_get(y, 1))};
        weft_fun_return(f, weft_tuple(p, 2, c));
        weft_exp *zc[2] = {weft_convert(weft_i32(p, 1), et),
                           weft_convert(weft_i32(p, -100), et)};
        z = weft_tuple(p, 2, zc);
        break;
    }
    }
    return sc->seeded ? weft_fold_seg(f, z, a, in[1])
                      : weft_fold1_seg(f, a, in[1]);
}

/* Segment lengths: nseg of them, random in [lo, hi], as type st. */
static void *seg_lengths(weft_type st, int64_t nseg, const int64_t *len)
{
    size_t sz = weft_type_size(st);
    char *h = malloc((size_t)(nseg > 0 ? nseg : 1) * sz);
    ck_assert_ptr_nonnull(h);
    for (int64_t k = 0; k < nseg; k++) {
        tu_store_i(st, h + (size_t)k * sz, len[k]);
    }
    return h;
}

static void run_seg(pair *c, const seg_case *sc, int rank, const int64_t *shape,
                    weft_type st, int64_t nseg, const int64_t *len,
                    uint64_t seed)
{
    void *segs = seg_lengths(st, nseg, len);
    in_spec sp[2] = {{.type = sc->t, .rank = rank, .lo = -20, .hi = 20},
                     {.type = st, .rank = 1, .shape = {nseg}, .data = segs}};
    memcpy(sp[0].shape, shape, sizeof(int64_t) * (size_t)rank);
    char what[160];
    snprintf(what, sizeof what,
             "%s comb %d type %d rank %d inner %lld nseg %lld seg type %d",
             sc->seeded ? "fold_seg" : "fold1_seg", sc->comb, (int)sc->t, rank,
             (long long)shape[rank - 1], (long long)nseg, (int)st);
    check_case(c, what, build_fold_seg, sc, 2, sp, seed);
    free(segs);
}

/* Random lengths filling `inner` (some empty when allow_empty), at most
 * nseg of them; returns how many. */
static int64_t random_segments(tu_rng *s, int64_t inner, int64_t *len,
                               int64_t max_seg, int64_t avg, bool allow_empty)
{
    int64_t n = 0, left = inner;
    while (n < max_seg && left > 0) {
        int64_t l = (int64_t)(tu_rng_u64(s) % (uint64_t)(2 * avg + 1));
        if (!allow_empty && l == 0) {
            l = 1;
        }
        if (l > left) {
            l = left;
        }
        len[n++] = l;
        left -= l;
    }
    return n;
}

START_TEST(test_fold_seg_shapes)
{
    pair c;
    pair_open(&c, 4);
    static const weft_type seg_types[] = {WEFT_I32, WEFT_I64, WEFT_U8, WEFT_U64,
                                          WEFT_I16};
    static const struct {
        weft_type t;
        int comb;
    } kinds[] = {
        {WEFT_I32, S_ADD},   {WEFT_F64, S_ADD}, {WEFT_F32, S_ADD},
        {WEFT_I64, S_MAX},   {WEFT_I8, S_MIN},  {WEFT_I32, S_PAIR},
        {WEFT_F32, S_FUSED}, {WEFT_U16, S_ADD}, {WEFT_F16, S_MAX},
        {WEFT_I64, S_ZIP},
    };
    static const int64_t inners[] = {0, 1, 2, 7, 97, 1009, 20011};
    int64_t *len = malloc(sizeof *len * 30000);
    ck_assert_ptr_nonnull(len);
    tu_rng s = tu_rng_seed(42);
    for (int kk = 0; kk < 10; kk++) {
        for (int seeded = 0; seeded < 2; seeded++) {
            seg_case sc = {
                .seeded = seeded, .comb = kinds[kk].comb, .t = kinds[kk].t};
            for (int ii = 0; ii < 7; ii++) {
                for (int rank = 1; rank <= 3; rank++) {
                    int64_t inner = inners[ii];
                    int64_t shape[3] = {3, 2, 0};
                    shape[rank - 1] = inner;
                    if (rank == 3) {
                        shape[0] = 2;
                        shape[1] = 3;
                    } else if (rank == 2) {
                        shape[0] = 5;
                    }
                    int64_t avg = 1 + (int64_t)(tu_rng_u64(&s) % 9);
                    int64_t nseg =
                        random_segments(&s, inner, len, 29000, avg, seeded);
                    /* sometimes stop short of the innermost extent, or add
                     * empty segments at the end (fold only) */
                    if (nseg > 1 && tu_rng_u64(&s) % 3 == 0) {
                        nseg--;
                    }
                    if (seeded && tu_rng_u64(&s) % 3 == 0) {
                        len[nseg++] = 0;
                    }
                    run_seg(&c, &sc, rank, shape,
                            seg_types[(kk + ii + rank) % 5], nseg, len, s.s);
                }
            }
        }
    }
    free(len);
    pair_close(&c);
}
END_TEST

/* A few million elements: long segments, and many tiny ones. */
START_TEST(test_fold_seg_big)
{
    pair c;
    pair_open(&c, 4);
    int64_t n = 3000017;
    int64_t *len = malloc(sizeof *len * (size_t)n);
    ck_assert_ptr_nonnull(len);
    tu_rng s = tu_rng_seed(7);
    static const int64_t avgs[] = {1000000, 5000, 3};
    for (int a = 0; a < 3; a++) {
        for (int seeded = 0; seeded < 2; seeded++) {
            int64_t nseg = random_segments(&s, n, len, n, avgs[a], seeded);
            seg_case sc = {.seeded = seeded,
                           .comb = a == 1 ? S_FUSED : S_ADD,
                           .t = a == 2 ? WEFT_I64 : WEFT_F64};
            run_seg(&c, &sc, 1, (int64_t[]){n}, WEFT_I32, nseg, len, s.s);
        }
    }
    /* rank 2: 3 rows of a million */
    int64_t m = 1000003;
    int64_t nseg = random_segments(&s, m, len, m, 300, false);
    seg_case sc = {.seeded = false, .comb = S_MAX, .t = WEFT_F32};
    run_seg(&c, &sc, 2, (int64_t[]){3, m}, WEFT_I64, nseg, len, s.s);
    free(len);
    pair_close(&c);
}
END_TEST

/* Data errors: negative lengths, lengths past the extent, empty segments
 * of fold1Seg (an error only when there are rows). */
START_TEST(test_fold_seg_errors)
{
    pair c;
    pair_open(&c, 4);
    seg_case add = {.seeded = true, .comb = S_ADD, .t = WEFT_I32};
    seg_case add1 = {.seeded = false, .comb = S_ADD, .t = WEFT_I32};
    int64_t sh[1] = {10};
    run_seg(&c, &add, 1, sh, WEFT_I32, 3, (int64_t[]){3, -1, 2}, 1);
    run_seg(&c, &add1, 1, sh, WEFT_I64, 3, (int64_t[]){3, -1, 2}, 1);
    run_seg(&c, &add, 1, sh, WEFT_I32, 3, (int64_t[]){3, 4, 4}, 2);
    run_seg(&c, &add, 1, sh, WEFT_U64, 2, (int64_t[]){3, -5}, 2); /* huge */
    run_seg(&c, &add1, 1, sh, WEFT_U8, 3, (int64_t[]){3, 4, 3}, 3);
    run_seg(&c, &add1, 1, sh, WEFT_U8, 3, (int64_t[]){3, 0, 3}, 3);
    run_seg(&c, &add, 1, sh, WEFT_U8, 3, (int64_t[]){3, 0, 3}, 3);
    /* no rows: fold1Seg of empty segments is fine */
    run_seg(&c, &add1, 2, (int64_t[]){0, 10}, WEFT_I32, 3, (int64_t[]){3, 0, 3},
            4);
    /* no segments at all */
    run_seg(&c, &add1, 2, (int64_t[]){4, 10}, WEFT_I32, 0, NULL, 5);
    run_seg(&c, &add, 3, (int64_t[]){2, 2, 0}, WEFT_I32, 2, (int64_t[]){0, 0},
            6);
    pair_close(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu_permute");
    TCase *tp = tcase_create("permute");
    tcase_set_timeout(tp, 600);
    tcase_add_test(tp, test_permute_modes);
    tcase_add_test(tp, test_permute_flip_direct);
    tcase_add_test(tp, test_permute_copies);
    tcase_add_test(tp, test_permute_ranks);
    tcase_add_test(tp, test_permute_errors);
    if (DT_BACKEND == WEFT_BACKEND_CPU) {
        /* a CPU option: the GPU has no sequential permute, and the order
         * in which sources meet a target is unspecified (DESIGN.md) */
        tcase_add_test(tp, test_permute_one_worker);
    }
    tcase_add_test(tp, test_permute_fused);
    tcase_add_test(tp, test_permute_siblings);
    tcase_add_test(tp, test_permute_signs);
    tcase_add_test(tp, test_permute_signed_zeros);
    tcase_add_test(tp, test_permute_few_bins);
    tcase_add_test(tp, test_permute_parts_which);
    tcase_add_test(tp, test_permute_parts_order);
    suite_add_tcase(s, tp);
    TCase *tf = tcase_create("fold_seg");
    tcase_set_timeout(tf, 600);
    tcase_add_test(tf, test_fold_seg_shapes);
    tcase_add_test(tf, test_fold_seg_big);
    tcase_add_test(tf, test_fold_seg_errors);
    suite_add_tcase(s, tf);
    return s;
}

TU_MAIN(suite)
