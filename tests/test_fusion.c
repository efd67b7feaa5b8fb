/*
 * tests/test_fusion.c: the plan tests of fusion (issue 4, item 4).
 *
 * Each case builds one program three times, in three contexts that ignore
 * the environment: the reference interpreter, the CPU backend, and the CPU
 * backend with WEFT_FLAG_NO_FUSION.  For both CPU executables the test reads
 * the plan that weft_executable_dump prints and counts its kernels (the
 * lines that start with "kernel "); the count must be the one the case
 * states.  Then all three run on the same random inputs, over several
 * sizes (empty, one element, odd and prime sizes, and a few hundred
 * thousand elements, so that with the 4 workers asked for the reductions
 * take their chunked two-phase path: a row of 8192 elements or more when
 * there are few rows), and the
 * CPU results must equal the interpreter's: exactly for integers and
 * within each case's stated tolerance for floats.
 *
 * The cases are the list of issue 4:
 *   dotp                         fold (+) 0 (zipWith (*) xs ys): 1 kernel
 *                                (2 without fusion)
 *   map of map                   1 kernel
 *   map of fold                  the fold applies the map as it stores
 *                                (lib/fuse.c, the store rule): 1 kernel
 *                                (3 without fusion)
 *   fold of map of backpermute   1 kernel (a transposing gather)
 *   a producer used twice        computed once: its own kernel, read by
 *                                its consumers (a `let`, not `fused`)
 *   reverseMap (seed 001)        map f (backpermute (shape a) rev a) with
 *                                a = map g ys: the let that sharing
 *                                recovery inserts for a (data once, shape
 *                                once) is inlined: 1 kernel
 *   Black-Scholes                one zipWith3 to (call, put): 1 kernel
 *   generate/zipWith/map/fold    a mixed chain whose zipWith operands have
 *                                different extents (intersection): 1
 *   a fused gather out of bounds WEFT_ERR_OUT_OF_BOUNDS, no output
 *   a histogram                  permute with a generated default and
 *                                source: 1 kernel (3 without fusion); a
 *                                map as the default: 1; a gather as the
 *                                default stays an array: 2
 *   k-means' step                two permutes with one generated default
 *                                (copied into both) and an awhile whose
 *                                fold reads a zipWith of its state's
 *                                components: 6 kernels (9 without fusion)
 *   sibling permutes             four permutes over one index function
 *                                (k-means' sums and counts, a maximum),
 *                                sources of unequal lengths: one permute
 *                                of a tuple or, where the lengths differ,
 *                                the four as written: 9 kernels in the
 *                                plan (12 without fusion); of one length
 *                                by construction: 2 (6)
 *
 * Tolerances, relative where the expected value exceeds 1 in magnitude
 * and absolute below, are stated at each case.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include <math.h>

#include "tu_cmp.h"

#define MAX_IN 4
#define MAX_OUT 4

/* One parameter of a case: its type and rank, and the range of its random
 * values (integers: lo..hi inclusive; floats: [lo, hi)). */
typedef struct in_spec {
    weft_type type;
    int rank;
    double lo, hi;
} in_spec;

/* A case: its parameters, a builder that makes the program's results from
 * those parameters (in order), the shapes to run on, the kernel counts
 * expected with and without fusion, and the float tolerance. */
typedef struct fcase {
    const char *name;
    int nin;
    in_spec in[MAX_IN];
    /* build the results of p from params[0..nin-1]; returns their number */
    int (*build)(weft_program *p, weft_acc *const *params, weft_acc **res);
    /* shape of parameter k for size number s; false when s is past the
     * last size */
    bool (*shape)(int s, int k, int64_t *sh);
    int kernels;         /* with fusion */
    int kernels_unfused; /* with WEFT_FLAG_NO_FUSION */
    double tol;          /* for float leaves */
    const char *kernel;  /* a kernel line the fused plan must hold (the
                            operation and what is fused into it), or NULL */
} fcase;

/* The common sizes of rank-1 cases: empty, one, small odd and prime, a
 * power of two plus one, and 300007 (the interpreter, the reference, is
 * slow under the sanitizers; this is large enough for every chunked
 * path). */
static const int64_t sizes1[] = {0, 1, 2, 7, 31, 1000, 4099, 65537, 300007};
#define NSIZES1 ((int)(sizeof sizes1 / sizeof sizes1[0]))

/* Every parameter rank 1 with the same extent. */
static bool shape_same1(int s, int k, int64_t *sh)
{
    (void)k;
    if (s >= NSIZES1) {
        return false;
    }
    sh[0] = sizes1[s];
    return true;
}

/* Rank-2 shapes (rows, columns), with empty, single and long rows. */
static const int64_t sizes2[][2] = {{0, 0},      {0, 5},    {5, 0},
                                    {1, 1},      {3, 7},    {17, 31},
                                    {1, 100003}, {1009, 3}, {211, 1601}};
#define NSIZES2 ((int)(sizeof sizes2 / sizeof sizes2[0]))

static bool shape_same2(int s, int k, int64_t *sh)
{
    (void)k;
    if (s >= NSIZES2) {
        return false;
    }
    sh[0] = sizes2[s][0];
    sh[1] = sizes2[s][1];
    return true;
}

/* ---- plans --------------------------------------------------------------- */

/* The number of lines of plan that start with "kernel ". */
static int count_kernels(const char *plan)
{
    int n = 0;
    for (const char *l = plan; l && *l;) {
        if (strncmp(l, "kernel ", 7) == 0) {
            n++;
        }
        l = strchr(l, '\n');
        l = l ? l + 1 : NULL;
    }
    return n;
}

/* One configuration of a case: a context, its program and executable. */
typedef struct side {
    const char *what;
    weft_context *ctx;
    weft_program *p;
    weft_executable *exe;
    char *plan; /* CPU sides */
    int nout;
} side;

static void side_open(side *sd, const char *what, weft_backend b,
                      unsigned flags, const fcase *c)
{
    memset(sd, 0, sizeof *sd);
    sd->what = what;
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.threads = 4; /* more workers than this machine may have: splits */
    cfg.flags = WEFT_FLAG_NO_ENV | flags;
    TU_OK(weft_context_create(&cfg, &sd->ctx));
    TU_OK(weft_program_create(sd->ctx, &sd->p));
    weft_acc *params[MAX_IN];
    for (int k = 0; k < c->nin; k++) {
        params[k] = weft_param(sd->p, c->in[k].type, c->in[k].rank);
    }
    weft_acc *res[MAX_OUT];
    int nres = c->build(sd->p, params, res);
    ck_assert_msg(weft_program_status(sd->p) == WEFT_OK, "%s: program: %s",
                  c->name, weft_program_error(sd->p));
    TU_OK(weft_compile(sd->p, res, nres, &sd->exe));
    sd->nout = weft_executable_outputs(sd->exe);
    ck_assert_int_le(sd->nout, MAX_OUT);
    if (b != WEFT_BACKEND_INTERP) {
        sd->plan = tu_plan_text(sd->exe);
    }
}

static void side_close(side *sd)
{
    free(sd->plan);
    weft_executable_free(sd->exe);
    weft_program_free(sd->p);
    weft_context_free(sd->ctx);
}

/* Assert the number of kernels in sd's plan, printing the plan if not. */
static void check_kernels(const fcase *c, const side *sd, int want)
{
    int got = count_kernels(sd->plan);
    ck_assert_msg(got == want, "%s (%s): %d kernels, expected %d; plan:\n%s",
                  c->name, sd->what, got, want, sd->plan);
}

/* Assert that sd's plan has c's expected kernel line. */
static void check_kernel_line(const fcase *c, const side *sd)
{
    if (!c->kernel) {
        return;
    }
    size_t n = strlen(c->kernel);
    const char *hit = strstr(sd->plan, c->kernel);
    /* the whole line up to its phase count: "kernel 0: map" must not
     * match "kernel 0: map, fused: map" */
    ck_assert_msg(hit && strncmp(hit + n, " (", 2) == 0,
                  "%s (%s): no line \"%s (...)\" in the plan:\n%s", c->name,
                  sd->what, c->kernel, sd->plan);
}

/* Inputs of size number s for every side (same values). */
static void make_inputs(const fcase *c, int s, side *sides, int nsides,
                        weft_array *in[][MAX_IN])
{
    tu_rng rng = tu_rng_seed(0x9e3779b97f4a7c15ull ^ (uint64_t)(s + 1) * 7919u);
    for (int k = 0; k < c->nin; k++) {
        int64_t sh[WEFT_MAX_RANK];
        ck_assert(c->shape(s, k, sh));
        int64_t n = tu_shape_size(c->in[k].rank, sh);
        void *buf =
            tu_rng_buffer(&rng, c->in[k].type, n, c->in[k].lo, c->in[k].hi);
        const void *data[1] = {buf};
        for (int j = 0; j < nsides; j++) {
            in[j][k] = tu_arr_host(sides[j].ctx, c->in[k].type, c->in[k].rank,
                                   sh, data);
        }
        free(buf);
    }
}

/* Build, plan-check and run case c on every size, comparing the two CPU
 * executables with the interpreter. */
static void run_case(const fcase *c)
{
    side sd[3];
    side_open(&sd[0], "interpreter", WEFT_BACKEND_INTERP, 0, c);
    side_open(&sd[1], "cpu", WEFT_BACKEND_CPU, 0, c);
    side_open(&sd[2], "cpu, no fusion", WEFT_BACKEND_CPU, WEFT_FLAG_NO_FUSION,
              c);
    check_kernels(c, &sd[1], c->kernels);
    check_kernels(c, &sd[2], c->kernels_unfused);
    check_kernel_line(c, &sd[1]);
    for (int s = 0;; s++) {
        int64_t probe[WEFT_MAX_RANK];
        if (!c->shape(s, 0, probe)) {
            break;
        }
        weft_array *in[3][MAX_IN] = {{NULL}};
        weft_array *out[3][MAX_OUT] = {{NULL}};
        make_inputs(c, s, sd, 3, in);
        for (int j = 0; j < 3; j++) {
            weft_status st =
                weft_run(sd[j].exe, in[j], c->nin, out[j], sd[j].nout);
            ck_assert_msg(st == WEFT_OK, "%s (%s) size #%d: %s: %s", c->name,
                          sd[j].what, s, weft_status_name(st),
                          weft_last_error());
        }
        for (int j = 1; j < 3; j++) {
            for (int o = 0; o < sd[0].nout; o++) {
                char what[200];
                snprintf(what, sizeof what, "%s (%s) size #%d output %d",
                         c->name, sd[j].what, s, o);
                tu_cmp_array(what, sd[0].ctx, out[0][o], sd[j].ctx, out[j][o],
                             tu_tol_rel(c->tol));
            }
        }
        for (int j = 0; j < 3; j++) {
            tu_release_all(out[j], sd[j].nout);
            tu_release_all(in[j], c->nin);
        }
    }
    for (int j = 0; j < 3; j++) {
        side_close(&sd[j]);
    }
}

/* ---- scalar function helpers --------------------------------------------- */

static weft_fun *fun_add(weft_program *p, weft_type t)
{
    return tu_fun_op2(p, WEFT_OP_ADD, t);
}

static weft_fun *fun_mul(weft_program *p, weft_type t)
{
    return tu_fun_op2(p, WEFT_OP_MUL, t);
}

static weft_exp *zero_of(weft_program *p, weft_type t)
{
    static const unsigned char zeros[8] = {0};
    return weft_const(p, t, zeros);
}

/* ---- dotp ---------------------------------------------------------------- */

static weft_type dotp_type;

static int build_dotp(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_type t = dotp_type;
    res[0] = weft_fold(fun_add(p, t), zero_of(p, t),
                       weft_zipwith(fun_mul(p, t), x[0], x[1]));
    return 1;
}

static void dotp_case(weft_type t, double lo, double hi, double tol)
{
    dotp_type = t;
    fcase c = {.name = "dotp",
               .nin = 2,
               .in = {{t, 1, lo, hi}, {t, 1, lo, hi}},
               .build = build_dotp,
               .shape = shape_same1,
               .kernels = 1,
               .kernels_unfused = 2,
               .tol = tol,
               .kernel = "kernel 0: fold, fused: zipwith"};
    run_case(&c);
}

START_TEST(dotp_int)
{
    /* integers: exact (wrap-around addition is associative) */
    dotp_case(WEFT_I32, -1000, 1000, 0);
    dotp_case(WEFT_I64, -1e6, 1e6, 0);
}
END_TEST

START_TEST(dotp_float)
{
    /* Positive terms, so no cancellation: the sum in any order is within
     * about n * eps of the exact one, relative.  f32 over 1e6 terms:
     * n * eps = 0.06 in the worst case, but rounding errors of a random
     * walk give ~ sqrt(n) * eps = 2e-5 at n = 3e5; 1e-3 leaves a wide
     * margin and still catches a lost or doubled element at the sizes up
     * to a few hundred (at the largest size one element is ~3e-6 of the
     * sum: that is what the f64 run at 1e-9 checks). */
    dotp_case(WEFT_F32, 0, 1, 1e-3);
    dotp_case(WEFT_F64, 0, 1, 1e-9);
}
END_TEST

/* ---- map of map ---------------------------------------------------------- */

static int build_map_map(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_fun *g = weft_fun1(p, WEFT_I32);
    weft_fun_return(
        g, weft_add(weft_mul(weft_arg(g, 0), weft_i32(p, 3)), weft_i32(p, 1)));
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_exp *a = weft_arg(f, 0);
    weft_fun_return(f, weft_sub(weft_bxor(a, weft_i32(p, 0x55)),
                                weft_shr(a, weft_i32(p, 2))));
    res[0] = weft_map(f, weft_map(g, x[0]));
    return 1;
}

START_TEST(map_map)
{
    fcase c = {.name = "map f (map g xs)",
               .nin = 1,
               .in = {{WEFT_I32, 1, -1e9, 1e9}},
               .build = build_map_map,
               .shape = shape_same1,
               .kernels = 1,
               .kernels_unfused = 2,
               .kernel = "kernel 0: map, fused: map"};
    run_case(&c);
    c.name = "map f (map g xs), rank 2";
    c.in[0].rank = 2;
    c.shape = shape_same2;
    run_case(&c);
}
END_TEST

/* ---- map of fold ------------------------------------------------------------ */

/* map (\s -> s * 3 - 1) (fold (+) 0 (map (\x -> x * x) xs)), xs of rank 2:
 * the fold takes in the map after it and applies it as it stores each
 * row's sum (lib/fuse.c, the store rule), one kernel; the map before it
 * fuses into its input as usual. */
static int build_map_fold(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_fun *sq = weft_fun1(p, WEFT_I64);
    weft_fun_return(sq, weft_mul(weft_arg(sq, 0), weft_arg(sq, 0)));
    weft_fun *g = weft_fun1(p, WEFT_I64);
    weft_fun_return(
        g, weft_sub(weft_mul(weft_arg(g, 0), weft_i64(p, 3)), weft_i64(p, 1)));
    res[0] = weft_map(
        g, weft_fold(fun_add(p, WEFT_I64), weft_i64(p, 0), weft_map(sq, x[0])));
    return 1;
}

START_TEST(map_fold)
{
    fcase c = {.name = "map g (fold (+) 0 (map f xs))",
               .nin = 1,
               .in = {{WEFT_I64, 2, -1e4, 1e4}},
               .build = build_map_fold,
               .shape = shape_same2,
               .kernels = 1,
               .kernels_unfused = 3,
               .kernel = "kernel 0: fold, fused: map; map at its store"};
    run_case(&c);
}
END_TEST

/* ---- fold of map of backpermute ------------------------------------------ */

/* fold (+) 0 (map (\x -> x * x - 3) (backpermute (c, r) transpose xs)),
 * xs of shape (r, c): sums the columns of xs. */
static int build_fold_map_bp(weft_program *p, weft_acc *const *x,
                             weft_acc **res)
{
    weft_exp *sh = weft_shape(x[0]);
    weft_exp *tsh = weft_index2(weft_get(sh, 1), weft_get(sh, 0));
    weft_fun *ix = weft_fun1(p, WEFT_DIM(2));
    weft_exp *i = weft_arg(ix, 0);
    weft_fun_return(ix, weft_index2(weft_get(i, 1), weft_get(i, 0)));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *a = weft_arg(f, 0);
    weft_fun_return(f, weft_sub(weft_mul(a, a), weft_i64(p, 3)));
    res[0] = weft_fold(fun_add(p, WEFT_I64), weft_i64(p, 0),
                       weft_map(f, weft_backpermute(tsh, ix, x[0])));
    return 1;
}

START_TEST(fold_map_backpermute)
{
    fcase c = {.name = "fold (+) 0 (map f (backpermute sh ix xs))",
               .nin = 1,
               .in = {{WEFT_I64, 2, -100000, 100000}},
               .build = build_fold_map_bp,
               .shape = shape_same2,
               .kernels = 1,
               .kernels_unfused = 3,
               .kernel = "kernel 0: fold, fused: map, backpermute"};
    run_case(&c);
}
END_TEST

/* ---- a producer used twice ----------------------------------------------- */

/* ys = map (\x -> 2x + 1) xs; zipWith (+) ys (map (\y -> y * y) ys) */
static int build_twice_zip(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_fun *g = weft_fun1(p, WEFT_I32);
    weft_fun_return(
        g, weft_add(weft_mul(weft_arg(g, 0), weft_i32(p, 2)), weft_i32(p, 1)));
    weft_acc *ys = weft_map(g, x[0]);
    weft_fun *sq = weft_fun1(p, WEFT_I32);
    weft_fun_return(sq, weft_mul(weft_arg(sq, 0), weft_arg(sq, 0)));
    res[0] = weft_zipwith(fun_add(p, WEFT_I32), ys, weft_map(sq, ys));
    return 1;
}

/* ys = map (\x -> x - 7) xs; results ys and fold (+) 0 ys */
static int build_twice_fold(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_fun *g = weft_fun1(p, WEFT_I32);
    weft_fun_return(g, weft_sub(weft_arg(g, 0), weft_i32(p, 7)));
    weft_acc *ys = weft_map(g, x[0]);
    res[0] = ys;
    res[1] = weft_fold(fun_add(p, WEFT_I32), weft_i32(p, 0), ys);
    return 2;
}

/* The plan binds a map by a let, manifest (no `fused` on its right-hand
 * side), and nothing fused is a map computed from that variable's
 * definition twice: there is exactly one `map` kernel for it. */
static void check_let_manifest(const char *name, const char *plan)
{
    const char *l = plan;
    bool found = false;
    while (l && *l) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        /* skip indentation */
        const char *q = l;
        while (q < l + len && *q == ' ') {
            q++;
        }
        if (strncmp(q, "let ", 4) == 0) {
            const char *eq = strstr(q, " = ");
            if (eq && eq < l + len) {
                const char *rhs = eq + 3;
                if (strncmp(rhs, "map", 3) == 0) {
                    found = true;
                }
                ck_assert_msg(strncmp(rhs, "fused", 5) != 0,
                              "%s: a let-bound producer is fused; plan:\n%s",
                              name, plan);
            }
        }
        l = end ? end + 1 : NULL;
    }
    ck_assert_msg(found, "%s: no `let ... = map` in the plan:\n%s", name, plan);
}

START_TEST(used_twice)
{
    /* zipWith (+) ys (map sq ys): a kernel for ys, and a zipWith kernel
     * that computes map sq inline and reads ys twice from memory. */
    fcase c = {.name = "ys used twice by a zipWith",
               .nin = 1,
               .in = {{WEFT_I32, 1, -30000, 30000}},
               .build = build_twice_zip,
               .shape = shape_same1,
               .kernels = 2,
               .kernels_unfused = 3,
               .kernel = ": zipwith, fused: map"};
    run_case(&c);
    side sd;
    side_open(&sd, "cpu", WEFT_BACKEND_CPU, 0, &c);
    check_let_manifest(c.name, sd.plan);
    ck_assert_msg(strstr(sd.plan, ": map (") != NULL,
                  "%s: no kernel of its own for ys; plan:\n%s", c.name,
                  sd.plan);
    ck_assert_msg(strstr(sd.plan, "fused map") != NULL,
                  "%s: map sq is not fused into the zipWith; plan:\n%s", c.name,
                  sd.plan);
    side_close(&sd);

    /* ys returned and folded: a kernel for ys and one for the fold. */
    fcase d = {.name = "ys a result and folded",
               .nin = 1,
               .in = {{WEFT_I32, 1, -30000, 30000}},
               .build = build_twice_fold,
               .shape = shape_same1,
               .kernels = 2,
               .kernels_unfused = 2,
               .kernel = ": fold"};
    run_case(&d);
    side_open(&sd, "cpu", WEFT_BACKEND_CPU, 0, &d);
    check_let_manifest(d.name, sd.plan);
    ck_assert_msg(strstr(sd.plan, ": map (") != NULL,
                  "%s: no kernel of its own for ys; plan:\n%s", d.name,
                  sd.plan);
    ck_assert_msg(strstr(sd.plan, "fused") == NULL,
                  "%s: something is fused (ys would be computed twice); "
                  "plan:\n%s",
                  d.name, sd.plan);
    side_close(&sd);
}
END_TEST

/* ---- reverseMap (seed 001) ----------------------------------------------- */

/* a = map g ys; rev = backpermute (shape a) (\i -> n - 1 - i) a, n from
 * shape a; result = map f rev.  `a` is used for its data once and for its
 * shape (twice: the extent and inside the index function). */
static int build_reverse_map(weft_program *p, weft_acc *const *x,
                             weft_acc **res)
{
    weft_fun *g = weft_fun1(p, WEFT_F64);
    weft_fun_return(g, weft_mul(weft_arg(g, 0), weft_f64(p, 1.5)));
    weft_acc *a = weft_map(g, x[0]);
    weft_exp *n = weft_get(weft_shape(a), 0);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(ix, 0), 0);
    weft_fun_return(ix, weft_index1(weft_sub(weft_sub(n, weft_i64(p, 1)), i)));
    weft_acc *rev = weft_backpermute(weft_shape(a), ix, a);
    weft_fun *f = weft_fun1(p, WEFT_F64);
    weft_fun_return(f, weft_sub(weft_arg(f, 0), weft_f64(p, 0.25)));
    res[0] = weft_map(f, rev);
    return 1;
}

START_TEST(reverse_map)
{
    /* Each element is x * 1.5 - 0.25 both ways, one rounding per
     * operation: equal, but allow a contraction to fma (1e-15). */
    fcase c = {.name = "reverseMap",
               .nin = 1,
               .in = {{WEFT_F64, 1, -100, 100}},
               .build = build_reverse_map,
               .shape = shape_same1,
               .kernels = 1,
               .kernels_unfused = 3,
               .tol = 1e-15,
               .kernel = "kernel 0: map, fused: backpermute, map"};
    run_case(&c);
}
END_TEST

/* ---- Black-Scholes ------------------------------------------------------- */

#define BS_RISKFREE 0.02f
#define BS_VOLATILITY 0.30f

/* The normal cumulative distribution (Abramowitz and Stegun 26.2.17). */
static weft_exp *bs_cnd(weft_program *p, weft_exp *d)
{
    static const float coeff[5] = {0.31938153f, -0.356563782f, 1.781477937f,
                                   -1.821255978f, 1.330274429f};
    weft_exp *k =
        weft_fdiv(weft_f32(p, 1),
                  weft_add(weft_f32(p, 1),
                           weft_mul(weft_f32(p, 0.2316419f), weft_abs(d))));
    weft_exp *poly = weft_f32(p, coeff[4]);
    for (int i = 3; i >= 0; i--) {
        poly = weft_add(weft_f32(p, coeff[i]), weft_mul(k, poly));
    }
    poly = weft_mul(k, poly);
    weft_exp *c = weft_mul(
        weft_mul(weft_f32(p, 0.39894228f),
                 weft_fexp(weft_mul(weft_f32(p, -0.5f), weft_mul(d, d)))),
        poly);
    return weft_cond(weft_gt(d, weft_f32(p, 0)), weft_sub(weft_f32(p, 1), c),
                     c);
}

/* zipWith3 (\price strike years -> (call, put)). */
static int build_black_scholes(weft_program *p, weft_acc *const *x,
                               weft_acc **res)
{
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_exp *s = weft_arg(f, 0), *k = weft_arg(f, 1), *t = weft_arg(f, 2);
    weft_exp *r = weft_f32(p, BS_RISKFREE), *v = weft_f32(p, BS_VOLATILITY);
    weft_exp *v_sqrtt = weft_mul(v, weft_sqrt(t));
    weft_exp *d1 = weft_fdiv(
        weft_add(
            weft_log(weft_fdiv(s, k)),
            weft_mul(weft_add(r, weft_mul(weft_f32(p, 0.5f), weft_mul(v, v))),
                     t)),
        v_sqrtt);
    weft_exp *d2 = weft_sub(d1, v_sqrtt);
    weft_exp *c1 = bs_cnd(p, d1), *c2 = bs_cnd(p, d2);
    weft_exp *k_exprt = weft_mul(k, weft_fexp(weft_mul(weft_neg(r), t)));
    weft_exp *call = weft_sub(weft_mul(s, c1), weft_mul(k_exprt, c2));
    weft_exp *put = weft_sub(weft_mul(k_exprt, weft_sub(weft_f32(p, 1), c2)),
                             weft_mul(s, weft_sub(weft_f32(p, 1), c1)));
    weft_exp *pair[2] = {call, put};
    weft_fun_return(f, weft_tuple(p, 2, pair));
    res[0] = weft_zipwith3(f, x[0], x[1], x[2]);
    return 1;
}

/* The interpreter is slow on this one (~10 us an option): sizes up to
 * 100003. */
static bool shape_bs(int s, int k, int64_t *sh)
{
    static const int64_t n[] = {0, 1, 7, 31, 1000, 4099, 100003};
    (void)k;
    if (s >= (int)(sizeof n / sizeof n[0])) {
        return false;
    }
    sh[0] = n[s];
    return true;
}

START_TEST(black_scholes)
{
    /* The same f32 formula on both sides; the compiled kernel may use other
     * exp/log implementations or contract to fma.  Prices reach ~100 and
     * are differences of products (call = S c1 - X e^-rT c2), so a few f32
     * ulps of 100 (~1e-5 each) can survive: 1e-4, relative above 1 and
     * absolute below, as in tests/test_programs.c. */
    fcase c = {.name = "Black-Scholes",
               .nin = 3,
               .in = {{WEFT_F32, 1, 5, 30},
                      {WEFT_F32, 1, 1, 100},
                      {WEFT_F32, 1, 0.25, 10}},
               .build = build_black_scholes,
               .shape = shape_bs,
               .kernels = 1,
               .kernels_unfused = 1,
               .tol = 1e-4,
               .kernel = "kernel 0: zipwith"};
    run_case(&c);
}
END_TEST

/* ---- generate -> zipWith -> map -> fold, different extents --------------- */

/* gen = generate (shape zs) (\(i, j) -> (7i + 3j) mod 11 - 5), zs used
 * only for its shape; prod = zipWith (*) gen xs, extents intersected;
 * fold (+) 0 (map (\v -> v + 1) prod). */
static int build_chain(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_fun *gf = weft_fun1(p, WEFT_DIM(2));
    weft_exp *i = weft_get(weft_arg(gf, 0), 0);
    weft_exp *j = weft_get(weft_arg(gf, 0), 1);
    weft_exp *v = weft_sub(weft_mod(weft_add(weft_mul(i, weft_i64(p, 7)),
                                             weft_mul(j, weft_i64(p, 3))),
                                    weft_i64(p, 11)),
                           weft_i64(p, 5));
    weft_fun_return(gf, weft_convert(v, WEFT_I32));
    weft_acc *gen = weft_generate(weft_shape(x[0]), gf);
    weft_acc *prod = weft_zipwith(fun_mul(p, WEFT_I32), gen, x[1]);
    weft_fun *inc = weft_fun1(p, WEFT_I32);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i32(p, 1)));
    res[0] =
        weft_fold(fun_add(p, WEFT_I32), weft_i32(p, 0), weft_map(inc, prod));
    return 1;
}

/* (zs, xs) shapes: each pair differs in both dimensions or in one. */
static const int64_t chain_shapes[][2][2] = {
    {{0, 0}, {3, 4}},          {{3, 4}, {0, 0}},
    {{1, 1}, {1, 1}},          {{5, 9}, {7, 3}},
    {{7, 3}, {5, 9}},          {{13, 17}, {13, 17}},
    {{2, 100003}, {3, 99991}}, {{1031, 977}, {1024, 1009}},
    {{150, 3000}, {151, 2999}}};

static bool shape_chain(int s, int k, int64_t *sh)
{
    if (s >= (int)(sizeof chain_shapes / sizeof chain_shapes[0])) {
        return false;
    }
    sh[0] = chain_shapes[s][k][0];
    sh[1] = chain_shapes[s][k][1];
    return true;
}

START_TEST(mixed_chain)
{
    fcase c = {.name = "generate -> zipWith -> map -> fold",
               .nin = 2,
               .in = {{WEFT_I32, 2, 0, 1}, {WEFT_I32, 2, -1000, 1000}},
               .build = build_chain,
               .shape = shape_chain,
               .kernels = 1,
               .kernels_unfused = 4,
               .kernel = "kernel 0: fold, fused: map, zipwith, generate"};
    run_case(&c);
}
END_TEST

/* ---- a fused gather out of bounds ---------------------------------------- */

/* fold (+) 0 (map (* 2) (backpermute (shape xs) (\i -> i + off) xs)) */
static int64_t oob_offset;

static int build_oob_fold(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_add(weft_get(weft_arg(ix, 0), 0),
                                             weft_i64(p, oob_offset))));
    weft_acc *g = weft_backpermute(weft_shape(x[0]), ix, x[0]);
    weft_fun *dbl = weft_fun1(p, WEFT_I32);
    weft_fun_return(dbl, weft_mul(weft_arg(dbl, 0), weft_i32(p, 2)));
    res[0] = weft_fold(fun_add(p, WEFT_I32), weft_i32(p, 0), weft_map(dbl, g));
    return 1;
}

/* map (* 2) (backpermute (shape xs) (\i -> i + off) xs) */
static int build_oob_map(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_add(weft_get(weft_arg(ix, 0), 0),
                                             weft_i64(p, oob_offset))));
    weft_acc *g = weft_backpermute(weft_shape(x[0]), ix, x[0]);
    weft_fun *dbl = weft_fun1(p, WEFT_I32);
    weft_fun_return(dbl, weft_mul(weft_arg(dbl, 0), weft_i32(p, 2)));
    res[0] = weft_map(dbl, g);
    return 1;
}

/* Run c's three sides on rank-1 inputs of extent n; each must return want
 * and, on failure, store no output. */
static void expect_status(const fcase *c, int64_t n, weft_status want)
{
    side sd[3];
    side_open(&sd[0], "interpreter", WEFT_BACKEND_INTERP, 0, c);
    side_open(&sd[1], "cpu", WEFT_BACKEND_CPU, 0, c);
    side_open(&sd[2], "cpu, no fusion", WEFT_BACKEND_CPU, WEFT_FLAG_NO_FUSION,
              c);
    check_kernels(c, &sd[1], c->kernels);
    check_kernels(c, &sd[2], c->kernels_unfused);
    check_kernel_line(c, &sd[1]);
    tu_rng rng = tu_rng_seed(5);
    void *buf = tu_rng_buffer(&rng, WEFT_I32, n, -9, 9);
    const void *data[1] = {buf};
    for (int j = 0; j < 3; j++) {
        weft_array *in = tu_arr_host(sd[j].ctx, WEFT_I32, 1, &n, data);
        /* not NULL, to see that a failed run clears it */
        weft_array *out[MAX_OUT] = {(weft_array *)1};
        weft_status st = weft_run(sd[j].exe, &in, 1, out, sd[j].nout);
        ck_assert_msg(st == want, "%s (%s) n=%lld: %s (%s), expected %s",
                      c->name, sd[j].what, (long long)n, weft_status_name(st),
                      weft_last_error(), weft_status_name(want));
        if (st != WEFT_OK) {
            ck_assert_msg(out[0] == NULL, "%s (%s): an output after failure",
                          c->name, sd[j].what);
            ck_assert_msg(strncmp(weft_last_error(), "weft_run: ", 10) == 0,
                          "%s (%s): message %s", c->name, sd[j].what,
                          weft_last_error());
        } else {
            tu_release_all(out, sd[j].nout);
        }
        weft_array_release(in);
    }
    free(buf);
    for (int j = 0; j < 3; j++) {
        side_close(&sd[j]);
    }
}

START_TEST(fused_gather_out_of_bounds)
{
    fcase c = {.name = "fold of a fused out-of-bounds gather",
               .nin = 1,
               .in = {{WEFT_I32, 1, -9, 9}},
               .build = build_oob_fold,
               .shape = shape_same1,
               .kernels = 1,
               .kernels_unfused = 3,
               .kernel = "kernel 0: fold, fused: map, backpermute"};
    /* one past the end (the last element only), and far off */
    oob_offset = 1;
    expect_status(&c, 1, WEFT_ERR_OUT_OF_BOUNDS);
    expect_status(&c, 300007, WEFT_ERR_OUT_OF_BOUNDS);
    oob_offset = -1;
    expect_status(&c, 4099, WEFT_ERR_OUT_OF_BOUNDS);
    oob_offset = 1;
    expect_status(&c, 0, WEFT_OK); /* nothing is read */
    oob_offset = 0;
    expect_status(&c, 65537, WEFT_OK);

    fcase d = c;
    d.name = "map of a fused out-of-bounds gather";
    d.build = build_oob_map;
    d.kernels = 1;
    d.kernels_unfused = 2;
    d.kernel = "kernel 0: map, fused: backpermute";
    oob_offset = 1;
    expect_status(&d, 7, WEFT_ERR_OUT_OF_BOUNDS);
    oob_offset = 200000;
    expect_status(&d, 300007, WEFT_ERR_OUT_OF_BOUNDS);
    oob_offset = 0;
    expect_status(&d, 31, WEFT_OK);
}
END_TEST

/* ---- a histogram: permute with its default and source fused -------------- */

/* permute (+) (generate 256 (\_ -> 3)) (\i -> index1 (keys ! i)) (generate
 * (shape keys) (\_ -> 1)), keys in [0, 255]: one kernel that writes the
 * default itself; with `map (* 2) ds` as the default (ds of 256 elements)
 * still one; with a backpermute as the default (a gather, which may fail:
 * runtime/plan.c keeps it an array of its own) two. */
static int hist_default; /* 0: generate, 1: map, 2: backpermute */

static int build_hist(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_exp *nb[1] = {weft_i64(p, 256)};
    weft_acc *def;
    if (hist_default == 0) {
        weft_fun *three = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(three, weft_i32(p, 3));
        def = weft_generate(weft_index(p, 1, nb), three);
    } else {
        /* ds: the first 256 elements of x[1] */
        weft_acc *ds = x[1];
        weft_fun *twice = weft_fun1(p, WEFT_I32);
        weft_fun_return(twice, weft_mul(weft_arg(twice, 0), weft_i32(p, 2)));
        if (hist_default == 1) {
            def = weft_map(twice, x[1]);
        } else {
            weft_fun *rev = weft_fun1(p, WEFT_DIM(1));
            weft_exp *i = weft_get(weft_arg(rev, 0), 0);
            weft_fun_return(rev, weft_index1(weft_sub(weft_i64(p, 255), i)));
            def = weft_backpermute(weft_index(p, 1, nb), rev,
                                   weft_map(twice, ds));
        }
    }
    weft_fun *one = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(one, weft_i32(p, 1));
    weft_acc *ones = weft_generate(weft_shape(x[0]), one);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(weft_at(x[0], weft_arg(ix, 0)),
                                                 WEFT_I64)));
    res[0] = weft_permute(fun_add(p, WEFT_I32), def, ix, ones);
    return 1;
}

/* keys of every size; ds of 256 elements */
static bool shape_hist(int s, int k, int64_t *sh)
{
    if (s >= NSIZES1) {
        return false;
    }
    sh[0] = k == 0 ? sizes1[s] : 256;
    return true;
}

START_TEST(histogram)
{
    fcase c = {.name = "permute (+) (generate ..) ix (generate ..)",
               .nin = 2,
               .in = {{WEFT_I32, 1, 0, 255}, {WEFT_I32, 1, -1000, 1000}},
               .build = build_hist,
               .shape = shape_hist,
               .kernels = 1,
               .kernels_unfused = 3,
               .kernel = "kernel 0: permute, fused: generate, generate"};
    hist_default = 0;
    run_case(&c);
    c.name = "permute (+) (map f ds) ix (generate ..)";
    c.kernels_unfused = 3;
    c.kernel = "kernel 0: permute, fused: map, generate";
    hist_default = 1;
    run_case(&c);
    c.name = "permute (+) (backpermute ..) ix (generate ..)";
    c.kernels = 2;
    c.kernels_unfused = 4;
    c.kernel = "permute, fused: generate";
    hist_default = 2;
    run_case(&c);
}
END_TEST

/* ---- k-means' step: shared zeros, a fold over the state ------------------ */

/* bench/programs.h's k-means body without the assignment: the sums of
 * px and py per cluster a!i, two permutes with one default `generate 16
 * (\_ -> 0)` (a let: two data uses), and, inside an awhile over (a, old,
 * iterations, moved), the count of a!i /= old!i, a fold of a zipWith of
 * the state's components (old read once: an `aget`, not a let).  The zeros cost nothing and are copied into
 * both permutes (fuse.c, the let rule), and the zipWith of `aget`s fuses
 * into the fold: the body is one fold kernel and the unit. */
static int build_kmeans_step(weft_program *p, weft_acc *const *x,
                             weft_acc **res)
{
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_f32(p, 0));
    weft_exp *k[1] = {weft_i64(p, 16)};
    weft_acc *zeros = weft_generate(weft_index(p, 1, k), zero);
    weft_fun *to = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(to, weft_index1(weft_convert(weft_at(x[2], weft_arg(to, 0)),
                                                 WEFT_I64)));
    res[0] = weft_permute(fun_add(p, WEFT_F32), zeros, to, x[0]);
    res[1] = weft_permute(fun_add(p, WEFT_F32), zeros, to, x[1]);
    weft_acc *init[4] = {x[2], x[3], weft_unit(weft_i32(p, 0)),
                         weft_unit(weft_i32(p, 0))};
    weft_acc *s0 = weft_atuple(p, 4, init);
    weft_afun *cond = weft_afun_like(s0);
    weft_afun_return(
        cond, weft_unit(weft_lt(weft_the(weft_aget(weft_afun_arg(cond), 2)),
                                weft_i32(p, 1))));
    weft_afun *body = weft_afun_like(s0);
    weft_acc *st = weft_afun_arg(body);
    weft_fun *differ = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(
        differ, weft_convert(weft_ne(weft_arg(differ, 0), weft_arg(differ, 1)),
                             WEFT_I32));
    weft_acc *next[4] = {
        weft_aget(st, 0), weft_aget(st, 0),
        weft_unit(weft_add(weft_the(weft_aget(st, 2)), weft_i32(p, 1))),
        weft_fold_all(
            fun_add(p, WEFT_I32), weft_i32(p, 0),
            weft_zipwith(differ, weft_aget(st, 0), weft_aget(st, 1)))};
    weft_afun_return(body, weft_atuple(p, 4, next));
    res[2] = weft_aget(weft_awhile(cond, body, s0), 3);
    return 3;
}

START_TEST(kmeans_step)
{
    /* Sums of about n / 16 terms in [0, 1) (no cancellation) in any
     * order: within n / 16 * eps relative, 1.1e-3 at n = 300007 in the
     * worst case (a random walk of errors gives ~1e-5); 2e-3 still
     * catches a lost or doubled element up to a few thousand points. */
    fcase c = {.name = "k-means step",
               .nin = 4,
               .in = {{WEFT_F32, 1, 0, 1},
                      {WEFT_F32, 1, 0, 1},
                      {WEFT_I32, 1, 0, 15},
                      {WEFT_I32, 1, 0, 15}},
               .build = build_kmeans_step,
               .shape = shape_same1,
               .kernels = 6,
               .kernels_unfused = 9,
               .tol = 2e-3,
               .kernel = "fold, fused: reshape, zipwith"};
    run_case(&c);
}
END_TEST

/* ---- sibling permutes: one permute of a tuple --------------------------- */

/* k-means' sums and counts and a maximum: four permutes into 16 bins over
 * one index function (a!i), with sources px, py (f32), `generate (shape
 * px) 1` and b (i32) whose lengths differ in some sizes (shape_siblings),
 * each consumed by a zipWith.  They become one permute of an (f32, f32,
 * i32, i32) tuple (fuse.c, the sibling rule) where the sources' lengths
 * agree, and the four as written otherwise: `acond (lengths agree) (the
 * permute of the tuple) (the four, joined by a generate)`, whose branches
 * are all in the plan (9 kernels; a run with one length runs 4); the
 * zipWiths read its leaves.  siblings_one: the sums of px and the counts
 * over `generate (shape px) 1`, sources of one shape by construction: no
 * acond, one permute. */
/* permute (op on type t) (generate 16 (\_ -> init)) (\i -> a!i) src */
static weft_acc *perm16(weft_program *p, int op, weft_type t, weft_exp *init,
                        weft_acc *a, weft_acc *src)
{
    weft_exp *k[1] = {weft_i64(p, 16)};
    weft_fun *def = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(def, init);
    weft_fun *to = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(
        to, weft_index1(weft_convert(weft_at(a, weft_arg(to, 0)), WEFT_I64)));
    return weft_permute(tu_fun_op2(p, op, t),
                        weft_generate(weft_index(p, 1, k), def), to, src);
}

/* `generate (shape a) (\_ -> 1)`, i32. */
static weft_acc *ones_like(weft_program *p, weft_acc *a)
{
    weft_fun *one = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(one, weft_i32(p, 1));
    return weft_generate(weft_shape(a), one);
}

/* \s c -> s + convert c */
static weft_fun *fun_plus_count(weft_program *p)
{
    weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_I32);
    weft_fun_return(
        f, weft_add(weft_arg(f, 0), weft_convert(weft_arg(f, 1), WEFT_F32)));
    return f;
}

static int build_siblings(weft_program *p, weft_acc *const *x, weft_acc **res)
{
    weft_acc *sx = perm16(p, WEFT_OP_ADD, WEFT_F32, weft_f32(p, 0), x[2], x[0]);
    weft_acc *sy = perm16(p, WEFT_OP_ADD, WEFT_F32, weft_f32(p, 0), x[2], x[1]);
    weft_acc *cnt = perm16(p, WEFT_OP_ADD, WEFT_I32, weft_i32(p, 0), x[2],
                           ones_like(p, x[0]));
    weft_acc *mx =
        perm16(p, WEFT_OP_MAX, WEFT_I32, weft_i32(p, -5000), x[2], x[3]);
    weft_fun *g = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(
        g, weft_add(weft_mul(weft_arg(g, 0), weft_i32(p, 3)), weft_arg(g, 1)));
    res[0] = weft_zipwith(fun_plus_count(p), sx, cnt);
    res[1] = weft_zipwith(fun_plus_count(p), sy, mx);
    res[2] = weft_zipwith(g, cnt, mx);
    return 3;
}

static int build_siblings_one(weft_program *p, weft_acc *const *x,
                              weft_acc **res)
{
    weft_acc *sx = perm16(p, WEFT_OP_ADD, WEFT_F32, weft_f32(p, 0), x[1], x[0]);
    weft_acc *cnt = perm16(p, WEFT_OP_ADD, WEFT_I32, weft_i32(p, 0), x[1],
                           ones_like(p, x[0]));
    res[0] = weft_zipwith(fun_plus_count(p), sx, cnt);
    return 1;
}

/* The sources' lengths: px n, py n, n / 2 or n + 5, b n or n / 3, and
 * the keys a as long as the longest (a read outside a is an error). */
static bool shape_siblings(int s, int k, int64_t *sh)
{
    if (s >= NSIZES1) {
        return false;
    }
    int64_t n = sizes1[s];
    int64_t ny = s % 3 == 0 ? n : s % 3 == 1 ? n / 2 : n + 5;
    sh[0] = k == 1   ? ny
            : k == 2 ? (ny > n ? ny : n)
            : k == 3 ? (s % 2 == 0 ? n : n / 3)
                     : n;
    return true;
}

START_TEST(sibling_permutes)
{
    /* res[2] is integers: exact.  res[0], res[1]: sums of about n / 16
     * terms in [0, 1) in any order plus an exact integer, as kmeans_step:
     * 2e-3 relative (the worst case at n = 300007 is 1.1e-3). */
    fcase c = {.name = "sibling permutes",
               .nin = 4,
               .in = {{WEFT_F32, 1, 0, 1},
                      {WEFT_F32, 1, 0, 1},
                      {WEFT_I32, 1, 0, 15},
                      {WEFT_I32, 1, -1000, 1000}},
               .build = build_siblings,
               .shape = shape_siblings,
               .kernels = 9,
               .kernels_unfused = 12,
               .tol = 2e-3,
               .kernel = "kernel 0: permute, fused: generate, zipwith"};
    run_case(&c);
    fcase one = {.name = "sibling permutes, one shape",
                 .nin = 2,
                 .in = {{WEFT_F32, 1, 0, 1}, {WEFT_I32, 1, 0, 15}},
                 .build = build_siblings_one,
                 .shape = shape_same1,
                 .kernels = 2,
                 .kernels_unfused = 6,
                 .tol = 2e-3,
                 .kernel = "kernel 0: permute, fused: generate, map"};
    run_case(&one);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *fusion_suite(void)
{
    Suite *s = suite_create("fusion");
    TCase *t = tcase_create("plans");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, dotp_int);
    tcase_add_test(t, dotp_float);
    tcase_add_test(t, map_map);
    tcase_add_test(t, map_fold);
    tcase_add_test(t, fold_map_backpermute);
    tcase_add_test(t, used_twice);
    tcase_add_test(t, reverse_map);
    tcase_add_test(t, black_scholes);
    tcase_add_test(t, mixed_chain);
    tcase_add_test(t, fused_gather_out_of_bounds);
    tcase_add_test(t, histogram);
    tcase_add_test(t, kmeans_step);
    tcase_add_test(t, sibling_permutes);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(fusion_suite)
