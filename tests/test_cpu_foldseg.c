/*
 * tests/test_cpu_foldseg.c: foldSeg on the CPU against the interpreter
 * where the CPU takes paths of its own (runtime/exec_foldseg.c,
 * skeletons-ir/foldseg.c):
 *
 *   smvm          a sparse matrix times a vector as bench/programs.h
 *                 writes it (foldSeg of zipWith (*) vals (backpermute
 *                 cols x)), rows of 1 to 300 nonzeros, 100000 of them: on
 *                 4 threads the offsets are scanned on the gang and the
 *                 kernel runs over parts of about equal nonzeros, on 1 in
 *                 the serial loop and over the results; i32 and i64
 *                 lengths;
 *   rows          a rank-2 input of 300 rows cut into 10 segments of 3 (a
 *                 column left over), so that the ranges the gang hands out
 *                 start inside a row (the kernel steps segment and row
 *                 from the range's start); fold1Seg too;
 *   errors        a negative length, lengths that pass the extent, and i64
 *                 lengths whose sum overflows, deep inside 100000
 *                 segments: the same status and message as the
 *                 interpreter's, on 4 threads and on 1;
 *                 where they fit, foldSeg and fold1Seg agree;
 *   powerlaw      lengths from 0 to 10^4 (density ~ l^-2, a fifth of them
 *                 empty, runs of empty ones, segments longer than a GPU
 *                 block's 256 threads and than its tile), folded as an f64
 *                 sum, as an i32 composition of affine maps (a tuple,
 *                 associative, not commutative, exact in wrapping
 *                 arithmetic) and as (f64 sum, i32 last element) (a tuple
 *                 whose second half is the last element: any step out of
 *                 order shows);
 *   edges         the affine composition at the edges of a GPU kernel's
 *                 work (a warp, a block, a tile, a row): every segment
 *                 empty, no elements, no segments, one segment of 2^21 +
 *                 5, lengths about a warp and a block, rank 2 (rows cut
 *                 into 12, no rows, rows of one segment);
 *   short         segments about the CPU's short loop (0, 1, 15, 16, 17,
 *                 31 elements), sums and fold1Seg max of f32, f64, i32;
 *   inside        cols shorter than vals, so that the short loop's copy
 *                 for segments inside cols serves the first rows and the
 *                 checked copy the last ones.
 *
 * Built again as test_ptx_foldseg (-DDT_BACKEND=WEFT_BACKEND_PTX: the GPU's
 * own foldSeg, skeletons-ir/ptx/foldseg.c, which scans the lengths on the
 * device and balances rows by merge path); there the threads do not
 * matter, and an error must give the interpreter's status (its message is
 * the kernel's, naming the segment).
 *
 * The values are chosen so that every sum is exact (multiples of 1/64 far
 * below 2^24 / 64, multiples of 1/8 in f64, small integers, wrapping
 * integer products): results must agree bit for bit, whatever order an
 * associative combine takes.
 */
#include "tu_cmp.h"

static tu_rng rng = {0x2545f4914f6cdd1dull};

static uint64_t rnd(void)
{
    return tu_rng_u64(&rng);
}

/* One array of a case: type, rank, shape and host data (not owned). */
typedef struct input {
    weft_type type;
    int rank;
    int64_t shape[2];
    void *data;
} input;

typedef weft_acc *(*build_fn)(weft_program *p, weft_acc *const *in,
                              const void *user);

/* The context of the program being built (tuple types are a context's). */
static weft_context *build_ctx;

/* A case's program: parameters of the inputs' types, then build's one
 * result. */
typedef struct case_arg {
    build_fn build;
    const void *user;
    const input *in;
    int n;
} case_arg;

static int build_case(weft_program *p, weft_context *ctx, const void *arg,
                      weft_acc **res)
{
    const case_arg *ca = arg;
    weft_acc *param[4];
    for (int i = 0; i < ca->n; i++) {
        param[i] = weft_param(p, ca->in[i].type, ca->in[i].rank);
    }
    build_ctx = ctx;
    res[0] = ca->build(p, param, ca->user);
    return 1;
}

/* The program on the interpreter and on DT_BACKEND (threads, tu_cmp.h):
 * the same status, message (but see below) and (on success) output, bit
 * for bit. */
static void check_both(const char *what, build_fn build, const void *user,
                       const input *in, int n, int threads, weft_status want)
{
    weft_config cfg[2] = {tu_cmp_config(WEFT_BACKEND_INTERP, 1, DT_TIER),
                          tu_cmp_config(DT_BACKEND, threads, DT_TIER)};
    const char *names[2] = {"interp", DT_NAME};
    tu_cmp c;
    tu_cmp_open(&c, 2, cfg, names);
    tu_host host[4];
    for (int i = 0; i < n; i++) {
        host[i] =
            tu_host_of(1, &in[i].type, in[i].rank, in[i].shape, &in[i].data);
    }
    case_arg ca = {build, user, in, n};
    tu_cmp_case(&c, "%s on %d threads", what, threads);
    tu_cmp_build(&c, build_case, &ca);
    weft_status s = tu_cmp_run(&c, host, n, TU_EXACT);
    ck_assert_msg(s == want, "%s: the interpreter gave %s (%s)", what,
                  weft_status_name(s), c.msg[0]);
    /* the GPU's kernel reports bad lengths itself, in words of its own; a
     * gather outside its source is named by the index on the interpreter,
     * by the kernel on the compiled backends */
    ck_assert_msg(DT_BACKEND == WEFT_BACKEND_PTX ||
                      want == WEFT_ERR_OUT_OF_BOUNDS ||
                      strcmp(c.msg[0], c.msg[1]) == 0,
                  "%s: \"%s\" against \"%s\"", what, c.msg[1], c.msg[0]);
    tu_cmp_close(&c);
}

/* ---- the two forms of the descriptor ------------------------------------- */

/* The form the build functions use: lengths (weft_fold_seg) or offsets
 * (weft_fold_seg_offsets, the descriptor converted by offsets_of). */
static bool by_offsets;

static weft_acc *fold_seg(weft_fun *f, weft_exp *z, weft_acc *a, weft_acc *seg)
{
    return by_offsets ? weft_fold_seg_offsets(f, z, a, seg)
                      : weft_fold_seg(f, z, a, seg);
}

static weft_acc *fold1_seg(weft_fun *f, weft_acc *a, weft_acc *seg)
{
    return by_offsets ? weft_fold1_seg_offsets(f, a, seg)
                      : weft_fold1_seg(f, a, seg);
}

/* in (lengths, i32 or i64) as offsets from `first` on (nseg + 1 of
 * them, of in's type; the data malloc'ed, freed by the caller). */
static input offsets_of(input in, int64_t first)
{
    int64_t nseg = in.shape[0];
    bool wide = in.type == WEFT_I64;
    size_t w = wide ? sizeof(int64_t) : sizeof(int32_t);
    void *o = malloc(w * (size_t)(nseg + 1));
    ck_assert(o);
    int64_t acc = first;
    for (int64_t k = 0; k <= nseg; k++) {
        if (wide) {
            ((int64_t *)o)[k] = acc;
        } else {
            ((int32_t *)o)[k] = (int32_t)acc;
        }
        if (k < nseg) {
            acc += wide ? ((const int64_t *)in.data)[k]
                        : ((const int32_t *)in.data)[k];
        }
    }
    in.shape[0] = nseg + 1;
    in.data = o;
    return in;
}

/* check_both in the form by_offsets says: in[seg] converted to offsets
 * from 0 (the lengths must leave no room before them). */
static void check_form(const char *what, build_fn build, const void *user,
                       const input *in, int n, int seg, int threads,
                       weft_status want)
{
    input cp[4];
    memcpy(cp, in, sizeof *in * (size_t)n);
    if (by_offsets) {
        cp[seg] = offsets_of(in[seg], 0);
    }
    char w[160];
    snprintf(w, sizeof w, "%s%s", what, by_offsets ? ", offsets" : "");
    check_both(w, build, user, cp, n, threads, want);
    if (by_offsets) {
        free(cp[seg].data);
    }
}

/* ---- smvm ------------------------------------------------------------------ */

static weft_fun *binop(weft_program *p, weft_type t, weft_op op)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_prim2(op, weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* in: vals (f32), cols (i32), lengths, x (f32) */
static weft_acc *build_smvm(weft_program *p, weft_acc *const *in,
                            const void *user)
{
    (void)user;
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(
                            weft_at(in[1], weft_arg(ix, 0)), WEFT_I64)));
    weft_acc *xs = weft_backpermute(weft_shape(in[0]), ix, in[3]);
    weft_acc *prod = weft_zipwith(binop(p, WEFT_F32, WEFT_OP_MUL), in[0], xs);
    return fold_seg(binop(p, WEFT_F32, WEFT_OP_ADD), weft_f32(p, 0), prod,
                    in[2]);
}

/* SHORT_SEG: the GPU folds a tile of no longer rows from shared memory, by
 * merge path otherwise (skeletons-ir/ptx/foldseg.c) */
enum { NSEG = 100000, NCOL = 5000, SHORT_SEG = 256 };

/* A matrix of NSEG rows of 1 to 300 nonzeros (most short), its lengths as
 * i32 (len32) and i64 (len64); returns the nonzeros. */
static int64_t make_matrix(float **vals, int32_t **cols, int32_t *len32,
                           int64_t *len64, float *x)
{
    int64_t nnz = 0;
    for (int64_t r = 0; r < NSEG; r++) {
        int64_t l = 1 + (int64_t)(rnd() % 8);
        if (rnd() % 64 == 0) {
            l = 1 + (int64_t)(rnd() % 300);
        }
        len32[r] = (int32_t)l;
        len64[r] = l;
        nnz += l;
    }
    *vals = malloc(sizeof **vals * (size_t)nnz);
    *cols = malloc(sizeof **cols * (size_t)nnz);
    ck_assert(*vals && *cols);
    for (int64_t i = 0; i < nnz; i++) {
        (*vals)[i] = (float)((int)(rnd() % 65) - 32) / 8.0f;
        (*cols)[i] = (int32_t)(rnd() % NCOL);
    }
    for (int64_t j = 0; j < NCOL; j++) {
        x[j] = (float)((int)(rnd() % 65) - 32) / 8.0f;
    }
    return nnz;
}

START_TEST(test_smvm)
{
    static int32_t len32[NSEG];
    static int64_t len64[NSEG];
    static float x[NCOL];
    float *vals;
    int32_t *cols;
    int64_t nnz = make_matrix(&vals, &cols, len32, len64, x);
    for (int form = 0; form < 4; form++) {
        bool wide = form % 2;
        by_offsets = form >= 2;
        input in[4] = {{WEFT_F32, 1, {nnz, 0}, vals},
                       {WEFT_I32, 1, {nnz, 0}, cols},
                       {wide ? WEFT_I64 : WEFT_I32,
                        1,
                        {NSEG, 0},
                        wide ? (void *)len64 : (void *)len32},
                       {WEFT_F32, 1, {NCOL, 0}, x}};
        const char *what = wide ? "smvm, i64 descriptor" : "smvm";
        check_form(what, build_smvm, NULL, in, 4, 2, 4, WEFT_OK);
        check_form(what, build_smvm, NULL, in, 4, 2, 1, WEFT_OK);
    }
    by_offsets = false;
    /* a column outside x, in a short row and then in a long one: the
     * gather's error (the GPU's staged reads keep it in a local flag that
     * each thread reports once at its end) */
    input in[4] = {{WEFT_F32, 1, {nnz, 0}, vals},
                   {WEFT_I32, 1, {nnz, 0}, cols},
                   {WEFT_I32, 1, {NSEG, 0}, len32},
                   {WEFT_F32, 1, {NCOL, 0}, x}};
    int64_t at[2] = {nnz / 3, -1};
    for (int64_t r = 0, e = 0; r < NSEG && at[1] < 0; e += len32[r], r++) {
        at[1] = len32[r] > SHORT_SEG ? e + len32[r] / 2 : -1;
    }
    ck_assert(at[1] >= 0);
    for (int k = 0; k < 2; k++) {
        int32_t keep = cols[at[k]];
        cols[at[k]] = k == 0 ? NCOL : -1;
        check_both(k == 0 ? "smvm, a column past x" : "smvm, a negative column",
                   build_smvm, NULL, in, 4, 4, WEFT_ERR_OUT_OF_BOUNDS);
        cols[at[k]] = keep;
    }
    free(vals);
    free(cols);
}
END_TEST

/* smvm by the offset form on a power-law matrix, as the bench's (rows of 1
 * to 4000 nonzeros, density ~ l^-2, a few of the longest), its offsets
 * starting past 0 and ending before the last nonzero (the nonzeros
 * outside them ignored): on 2 and 4 threads the parts, of about equal
 * nonzeros, fold from two offsets each row (mode 1, the long rows in the
 * vectorised loop with the gather), on 1 over the results.  The values
 * are multiples of 1/8 and every partial sum stays below 2^18 in
 * magnitude, so that f32 sums in any order are exact: the results must
 * match the interpreter's bit for bit. */
START_TEST(test_smvm_parts)
{
    enum { ROWS = 30000, MAXLEN = 4000, FIRST = 37, PAST = 11 };
    static int32_t len[ROWS];
    static float x[NCOL];
    int64_t nnz = FIRST + PAST;
    for (int r = 0; r < ROWS; r++) {
        double u = (double)(rnd() >> 11) * 0x1p-53;
        int64_t l = (int64_t)(1.0 / (1.0 - u * (1.0 - 1.0 / (MAXLEN + 1.0))));
        l = l < 1 ? 1 : l > MAXLEN ? MAXLEN : l;
        len[r] = (int32_t)(r % 5000 == 17 ? MAXLEN : l);
        nnz += len[r];
    }
    float *vals = malloc(sizeof *vals * (size_t)nnz);
    int32_t *cols = malloc(sizeof *cols * (size_t)nnz);
    ck_assert(vals && cols);
    for (int64_t i = 0; i < nnz; i++) {
        vals[i] = (float)((int)(rnd() % 33) - 16) / 8.0f;
        cols[i] = (int32_t)(rnd() % NCOL);
    }
    for (int64_t j = 0; j < NCOL; j++) {
        x[j] = (float)((int)(rnd() % 33) - 16) / 8.0f;
    }
    input lens = {WEFT_I32, 1, {ROWS, 0}, len};
    input off = offsets_of(lens, FIRST);
    input in[4] = {{WEFT_F32, 1, {nnz, 0}, vals},
                   {WEFT_I32, 1, {nnz, 0}, cols},
                   off,
                   {WEFT_F32, 1, {NCOL, 0}, x}};
    by_offsets = true;
    for (int threads = 1; threads <= 4; threads *= 2) {
        check_both("smvm, power law, offsets from 37", build_smvm, NULL, in, 4,
                   threads, WEFT_OK);
    }
    by_offsets = false;
    free(off.data);
    free(vals);
    free(cols);
}
END_TEST

/* ---- rank 2: ranges that start inside a row ------------------------------ */

/* user: 0 foldSeg (+) 7, 1 fold1Seg max */
static weft_acc *build_rows(weft_program *p, weft_acc *const *in,
                            const void *user)
{
    int one = *(const int *)user;
    return one ? fold1_seg(binop(p, WEFT_I32, WEFT_OP_MAX), in[0], in[1])
               : fold_seg(binop(p, WEFT_I32, WEFT_OP_ADD), weft_i32(p, 7),
                          in[0], in[1]);
}

START_TEST(test_rows)
{
    enum { ROWS = 300, COLS = 31, SEGS = 10 };
    static int32_t a[ROWS * COLS];
    int32_t len[SEGS];
    for (int i = 0; i < ROWS * COLS; i++) {
        a[i] = (int32_t)(rnd() % 2001) - 1000;
    }
    for (int k = 0; k < SEGS; k++) {
        len[k] = 3; /* 30 of the 31 columns */
    }
    input in[2] = {{WEFT_I32, 2, {ROWS, COLS}, a},
                   {WEFT_I32, 1, {SEGS, 0}, len}};
    for (int one = 0; one < 4; one++) {
        by_offsets = one >= 2;
        for (int threads = 1; threads <= 4; threads += 3) {
            check_form(one % 2 ? "fold1Seg of rows" : "foldSeg of rows",
                       build_rows, (int[]){one % 2}, in, 2, 1, threads,
                       WEFT_OK);
        }
    }
}
END_TEST

/* ---- errors deep inside many segments -------------------------------------- */

/* user: NULL foldSeg (+) 0, else fold1Seg max */
static weft_acc *build_sum(weft_program *p, weft_acc *const *in,
                           const void *user)
{
    return user ? fold1_seg(binop(p, WEFT_I32, WEFT_OP_MAX), in[0], in[1])
                : fold_seg(binop(p, WEFT_I32, WEFT_OP_ADD), weft_i32(p, 0),
                           in[0], in[1]);
}

START_TEST(test_errors)
{
    enum { N = 2 * NSEG };
    static int32_t a[N];
    static int32_t len32[NSEG];
    static int64_t len64[NSEG];
    for (int i = 0; i < N; i++) {
        a[i] = (int32_t)(rnd() % 100);
    }
    by_offsets = false; /* test_offset_errors has the offsets' */
    for (int v = 0; v < 5; v++) {
        for (int k = 0; k < NSEG; k++) {
            len32[k] = v == 3 ? k % 3 : 2; /* 2: exactly the extent */
        }
        const char *what =
            v == 3 ? "lengths short of the extent" : "lengths that fit";
        if (v == 1) {
            len32[70000] = -1;
            what = "a negative length";
        } else if (v == 2) {
            len32[80000] = 40001; /* past the extent there */
            what = "lengths past the extent";
        }
        bool bad = v == 1 || v == 2 || v == 4;
        for (int k = 0; k < NSEG; k++) {
            len64[k] = len32[k];
        }
        if (v == 4) {
            /* i64 lengths whose sum wraps past INT64_MAX within a few
             * segments (a GPU tile's sum, a gang's chunk) */
            for (int k = 60000; k < 60008; k++) {
                len64[k] = INT64_C(1) << 62;
            }
            what = "i64 lengths whose sum overflows";
        }
        for (int wide = v == 4; wide < 2; wide++) {
            input in[2] = {{WEFT_I32, 1, {N, 0}, a},
                           {wide ? WEFT_I64 : WEFT_I32,
                            1,
                            {NSEG, 0},
                            wide ? (void *)len64 : (void *)len32}};
            for (int threads = 1; threads <= 4; threads += 3) {
                check_both(what, build_sum, NULL, in, 2, threads,
                           bad ? WEFT_ERR_SEGMENTS : WEFT_OK);
            }
            if (v == 0) { /* fold1Seg over parts too */
                check_both("fold1Seg", build_sum, "", in, 2, 4, WEFT_OK);
            }
        }
    }
}
END_TEST

/* ---- the offset form's own cases ----------------------------------------- */

/* off (nseg + 1 entries from v) as a descriptor of type t (data
 * malloc'ed, freed by the caller). */
static input offsets_typed(weft_type t, const int64_t *v, int64_t nseg)
{
    size_t w = t == WEFT_I64 || t == WEFT_U64 ? 8 : t == WEFT_I16 ? 2 : 4;
    unsigned char *o = malloc(w * (size_t)(nseg + 1) + 1);
    ck_assert(o);
    for (int64_t k = 0; k <= nseg; k++) {
        int64_t x = v[k];
        if (w == 8) {
            memcpy(o + 8 * k, &x, 8);
        } else if (w == 4) {
            int32_t y = (int32_t)x;
            memcpy(o + 4 * k, &y, 4);
        } else {
            int16_t y = (int16_t)x;
            memcpy(o + 2 * k, &y, 2);
        }
    }
    return (input){t, 1, {nseg + 1, 0}, o};
}

/* Offsets that start past 0 and end short of the extent, with empty
 * segments, of several types, rank 1 and 2, foldSeg and fold1Seg; no
 * offsets and one offset (no segments). */
START_TEST(test_offsets)
{
    enum { COLS = 203, ROWS = 40 };
    static int32_t a[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) {
        a[i] = (int32_t)(rnd() % 2001) - 1000;
    }
    static const int64_t off[] = {3, 5, 5, 9, 40, 41, 100, 100, 100, 199};
    static const int64_t full[] = {3, 5, 6, 9, 40, 41, 100, 101, 102, 199};
    int64_t nseg = sizeof off / sizeof *off - 1;
    static const weft_type types[] = {WEFT_I32, WEFT_I64, WEFT_U32, WEFT_I16,
                                      WEFT_U64};
    static const char *tname[] = {"i32", "i64", "u32", "i16", "u64"};
    by_offsets = true;
    for (int ti = 0; ti < 5; ti++) {
        for (int rank = 1; rank <= 2; rank++) {
            for (int one = 0; one < 2; one++) {
                input d = offsets_typed(types[ti], one ? full : off, nseg);
                input in[2] = {
                    {WEFT_I32, rank, {rank == 2 ? ROWS : COLS, COLS}, a}, d};
                char what[96];
                snprintf(what, sizeof what, "%s offsets of %s, rank %d",
                         one ? "fold1Seg" : "foldSeg", tname[ti], rank);
                for (int threads = 1; threads <= 4; threads += 3) {
                    check_both(what, build_rows, &one, in, 2, threads, WEFT_OK);
                }
                free(d.data);
            }
        }
    }
    /* fold1Seg of an empty segment */
    input d = offsets_typed(WEFT_I32, off, nseg);
    input in[2] = {{WEFT_I32, 1, {COLS, 0}, a}, d};
    check_both("fold1Seg offsets with an empty segment", build_rows, (int[]){1},
               in, 2, 4, WEFT_ERR_EMPTY_ARRAY);
    /* no segments: no offsets, or one */
    for (int64_t n = 0; n < 2; n++) {
        in[1].shape[0] = n;
        for (int one = 0; one < 2; one++) {
            check_both(n ? "one offset" : "no offsets", build_rows, &one, in, 2,
                       4, WEFT_OK);
        }
    }
    free(d.data);
}
END_TEST

/* Bad offsets deep inside many segments: below 0 at the start, a
 * decrease, past the extent (in the middle, at the end), i64 and u64
 * offsets past any extent; the interpreter's status and message. */
START_TEST(test_offset_errors)
{
    enum { N = 2 * NSEG };
    static int32_t a[N];
    static int64_t off[NSEG + 1];
    for (int i = 0; i < N; i++) {
        a[i] = (int32_t)(rnd() % 100);
    }
    by_offsets = true;
    for (int v = 0; v < 7; v++) {
        for (int k = 0; k <= NSEG; k++) {
            off[k] = 2 * k; /* the last: exactly the extent */
        }
        const char *what = "offsets that fit";
        weft_type t = WEFT_I32;
        if (v == 1) {
            off[0] = -1;
            what = "a first offset below 0";
        } else if (v == 2) {
            off[70000] = off[69999] - 1;
            what = "a decrease";
        } else if (v == 3) {
            off[80000] = N + 1;
            what = "an offset past the extent";
        } else if (v == 4) {
            off[NSEG] = N + 1;
            what = "the last offset past the extent";
        } else if (v == 5) {
            off[60000] = INT64_MAX;
            t = WEFT_I64;
            what = "an i64 offset of INT64_MAX";
        } else if (v == 6) {
            off[60000] = -2; /* 2^64 - 2 */
            t = WEFT_U64;
            what = "a u64 offset past INT64_MAX";
        }
        input d = offsets_typed(t, off, NSEG);
        input in[2] = {{WEFT_I32, 1, {N, 0}, a}, d};
        for (int threads = 1; threads <= 4; threads += 3) {
            check_both(what, build_sum, NULL, in, 2, threads,
                       v ? WEFT_ERR_SEGMENTS : WEFT_OK);
        }
        if (v == 0) {
            check_both("fold1Seg offsets", build_sum, "", in, 2, 4, WEFT_OK);
        }
        free(d.data);
    }
}
END_TEST

/* ---- power-law lengths, empty segments, tuples, order -------------------- */

/* user: 0 an f64 sum; 1 affine maps (a, b) composed, x -> a x + b then the
 * next (i32, wrapping); 2 (f64 sum, i32 last element).  in[0] is f64,
 * in[1] i32, in[2] the lengths. */
static weft_acc *build_powerlaw(weft_program *p, weft_acc *const *in,
                                const void *user)
{
    int which = *(const int *)user % 16;
    int rank = *(const int *)user / 16 == 2 ? 2 : 1; /* 16 w: rank 2 */
    weft_context *ctx = build_ctx;
    if (which == 0) {
        return fold_seg(binop(p, WEFT_F64, WEFT_OP_ADD), weft_f64(p, 0.5),
                        in[0], in[2]);
    }
    weft_type pair =
        which == 1 ? weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I32, WEFT_I32})
                   : weft_type_tuple(ctx, 2, (weft_type[]){WEFT_F64, WEFT_I32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(rank));
    weft_exp *i = weft_arg(g, 0);
    weft_exp *v = weft_at(in[1], i);
    weft_exp *e[2];
    if (which == 1) {
        e[0] = weft_add(weft_mul(v, weft_i32(p, 2)), weft_i32(p, 1)); /* odd */
        e[1] = v;
    } else {
        e[0] = weft_at(in[0], i);
        e[1] = weft_convert(weft_get(i, 0), WEFT_I32);
    }
    weft_fun_return(g, weft_tuple(p, 2, e));
    weft_fun *f = weft_fun2(p, pair, pair);
    weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1);
    weft_exp *r[2];
    weft_exp *z[2];
    if (which == 1) {
        /* x -> a2 (a1 x + b1) + b2 */
        r[0] = weft_mul(weft_get(a, 0), weft_get(b, 0));
        r[1] =
            weft_add(weft_mul(weft_get(b, 0), weft_get(a, 1)), weft_get(b, 1));
        z[0] = weft_i32(p, 1);
        z[1] = weft_i32(p, 0);
    } else {
        r[0] = weft_add(weft_get(a, 0), weft_get(b, 0));
        r[1] = weft_get(b, 1);
        z[0] = weft_f64(p, 0);
        z[1] = weft_i32(p, -1);
    }
    weft_fun_return(f, weft_tuple(p, 2, r));
    weft_acc *src = weft_generate(weft_shape(in[0]), g);
    return fold_seg(f, weft_tuple(p, 2, z), src, in[2]);
}

START_TEST(test_powerlaw)
{
    enum { SEGS = 20000, MAXLEN = 10000 };
    static int32_t len[SEGS];
    int64_t n = 0;
    for (int k = 0; k < SEGS; k++) {
        int64_t l = 0;
        if (rnd() % 5 != 0) {
            /* 1 / (1 - u (1 - 1 / (MAXLEN + 1))): density ~ l^-2 */
            double u = (double)(rnd() >> 11) * 0x1p-53;
            l = (int64_t)(1.0 / (1.0 - u * (1.0 - 1.0 / (MAXLEN + 1.0))));
            l = l < 1 ? 1 : l > MAXLEN ? MAXLEN : l;
        }
        if (k >= 5000 && k < 5600) {
            l = 0; /* a run of empty segments longer than a tile */
        }
        if (k == 9000 || k == 9001) {
            l = MAXLEN; /* two long ones side by side */
        }
        len[k] = (int32_t)l;
        n += l;
    }
    n += 3; /* elements past the last segment are ignored */
    double *x = malloc(sizeof *x * (size_t)n);
    int32_t *v = malloc(sizeof *v * (size_t)n);
    ck_assert(x && v);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double)((int)(rnd() % 129) - 64) / 8.0;
        v[i] = (int32_t)(rnd() % 2001) - 1000;
    }
    input in[3] = {{WEFT_F64, 1, {n, 0}, x},
                   {WEFT_I32, 1, {n, 0}, v},
                   {WEFT_I32, 1, {SEGS, 0}, len}};
    static const char *what[3] = {"power-law f64 sum",
                                  "power-law affine composition",
                                  "power-law (sum, last)"};
    for (int which = 0; which < 6; which++) {
        by_offsets = which >= 3;
        check_form(what[which % 3], build_powerlaw, (int[]){which % 3}, in, 3,
                   2, 4, WEFT_OK);
    }
    free(x);
    free(v);
}
END_TEST

/* ---- edges: empty, huge, about a warp and a block, rank 2 ----------------- */

/* One case of test_edges: rows x cols affine maps (build_powerlaw's
 * which = 1, rank 2 where rows > 0) cut by nseg lengths from len(k). */
static void edge_case(const char *what, int64_t rows, int64_t cols,
                      int64_t nseg, int64_t (*len)(int64_t k))
{
    size_t n = (size_t)((rows > 0 ? rows : 1) * cols);
    int32_t *v = malloc(sizeof *v * (n > 0 ? n : 1));
    double *x = malloc(sizeof *x * (n > 0 ? n : 1));
    int32_t *l = malloc(sizeof *l * (size_t)(nseg > 0 ? nseg : 1));
    ck_assert(v && x && l);
    for (size_t i = 0; i < n; i++) {
        v[i] = (int32_t)(rnd() % 2001) - 1000;
        x[i] = 0;
    }
    for (int64_t k = 0; k < nseg; k++) {
        l[k] = (int32_t)len(k);
    }
    int rank = rows >= 0 ? 2 : 1;
    int64_t r = rows >= 0 ? rows : cols;
    input in[3] = {{WEFT_F64, rank, {r, cols}, x},
                   {WEFT_I32, rank, {r, cols}, v},
                   {WEFT_I32, 1, {nseg, 0}, l}};
    int which = rank == 2 ? 16 * 2 + 1 : 1;
    for (int form = 0; form < 2; form++) {
        by_offsets = form;
        check_form(what, build_powerlaw, &which, in, 3, 2, 4, WEFT_OK);
    }
    free(v);
    free(x);
    free(l);
}

static int64_t len_zero(int64_t k)
{
    (void)k;
    return 0;
}

static int64_t len_all(int64_t k)
{
    (void)k;
    return (INT64_C(1) << 21) + 5;
}

/* around a warp, a block, and runs of those */
static int64_t len_around(int64_t k)
{
    static const int64_t l[] = {31, 32, 33, 63, 64, 65, 255, 256, 257, 1000,
                                0,  1,  2,  3,  0,  0,  511, 512, 513, 7};
    return l[k % 20];
}

/* 0 to 40 */
static int64_t len_row(int64_t k)
{
    return (k * 7) % 41;
}

/* about the CPU's bound between its short loop and its vectorised one
 * (skeletons-ir/foldseg.c, SHORT_SEG: 16) */
static int64_t len_short(int64_t k)
{
    static const int64_t l[] = {15, 16, 17, 14, 1, 0, 2, 16, 15, 33};
    return l[k % 10];
}

static int64_t len_37(int64_t k)
{
    (void)k;
    return 37;
}

START_TEST(test_edges)
{
    /* rows < 0: rank 1 of cols elements */
    edge_case("all segments empty", -1, 10, 3000, len_zero);
    edge_case("all empty, no elements", -1, 0, 100, len_zero);
    edge_case("no segments", -1, 5, 0, len_zero);
    edge_case("one segment of 2^21 + 5", -1, (INT64_C(1) << 21) + 5, 1,
              len_all);
    edge_case("lengths about a warp and a block", -1, 200000, 700, len_around);
    edge_case("lengths about the short loop's bound", -1, 20000, 1000,
              len_short);
    edge_case("rank 2, rows cut into 12", 50, 300, 12, len_row);
    edge_case("rank 2, no rows", 0, 300, 12, len_row);
    edge_case("rank 2, rows of one segment", 3000, 40, 1, len_37);
}
END_TEST

/* The offset form run again and again by the same executables: a run
 * with long segments (the GPU lists their tiles), one of no rows (the GPU
 * checks the offsets only), one that stops at a bad offset, one of short
 * segments only, each followed by the first again; every run against the
 * interpreter's.  On the GPU the list's count and its ticket are kept zero
 * between runs, not zeroed before each (skeletons-ir/ptx/foldseg.c): a
 * run that left them set would fold tiles of garbage in the next. */
START_TEST(test_offsets_again)
{
    enum { ROWS = 3, NSEG = 1000 };
    static int32_t len_long[NSEG], len_short[NSEG];
    int64_t cols = 0, cols_short = 0;
    for (int64_t k = 0; k < NSEG; k++) {
        len_long[k] = (int32_t)len_row(k); /* 0 to 40: past two trips */
        len_short[k] = (int32_t)(k % 4);
        cols += len_long[k];
        cols_short += len_short[k];
    }
    ck_assert(cols_short <= cols);
    int32_t *v = malloc(sizeof *v * (size_t)(ROWS * cols));
    double *x = calloc((size_t)(ROWS * cols), sizeof *x);
    ck_assert(v && x);
    for (int64_t i = 0; i < ROWS * cols; i++) {
        v[i] = (int32_t)(rnd() % 2001) - 1000;
    }
    by_offsets = true;
    input lens[2] = {{WEFT_I32, 1, {NSEG, 0}, len_long},
                     {WEFT_I32, 1, {NSEG, 0}, len_short}};
    input off[3] = {offsets_of(lens[0], 0), offsets_of(lens[1], 0),
                    offsets_of(lens[0], 0)};
    ((int32_t *)off[2].data)[NSEG] = (int32_t)cols + 1; /* past the extent */
    weft_config cfg[2] = {tu_cmp_config(WEFT_BACKEND_INTERP, 1, DT_TIER),
                          tu_cmp_config(DT_BACKEND, 4, DT_TIER)};
    const char *names[2] = {"interp", DT_NAME};
    tu_cmp c;
    tu_cmp_open(&c, 2, cfg, names);
    input in[3] = {
        {WEFT_F64, 2, {ROWS, cols}, x}, {WEFT_I32, 2, {ROWS, cols}, v}, off[0]};
    int which = 16 * 2 + 1; /* affine maps, rank 2 */
    case_arg ca = {build_powerlaw, &which, in, 3};
    tu_cmp_case(&c, "offsets again");
    tu_cmp_build(&c, build_case, &ca);
    /* (rows, offsets, status) of each run in turn */
    static const struct {
        int64_t rows;
        int off;
        weft_status want;
    } runs[] = {{ROWS, 0, WEFT_OK}, {0, 0, WEFT_OK},
                {ROWS, 0, WEFT_OK}, {ROWS, 2, WEFT_ERR_SEGMENTS},
                {ROWS, 0, WEFT_OK}, {ROWS, 1, WEFT_OK},
                {ROWS, 0, WEFT_OK}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        in[0].shape[0] = in[1].shape[0] = runs[r].rows;
        in[2] = off[runs[r].off];
        tu_host host[3];
        for (int i = 0; i < 3; i++) {
            host[i] = tu_host_of(1, &in[i].type, in[i].rank, in[i].shape,
                                 &in[i].data);
        }
        weft_status st = tu_cmp_run(&c, host, 3, TU_EXACT);
        ck_assert_msg(st == runs[r].want, "run %zu: the interpreter gave %s", r,
                      weft_status_name(st));
    }
    tu_cmp_close(&c);
    for (int i = 0; i < 3; i++) {
        free(off[i].data);
    }
    free(v);
    free(x);
}
END_TEST

/* ---- short segments ------------------------------------------------------- */

/* Segments shorter than the CPU's short-loop bound (SHORT_SEG, 16) run in
 * a loop of their own, in two copies (skeletons-ir/foldseg.c,
 * fold_short). */

/* user: the short_arg; in: vals (t), cols (i32), lengths (i32), x (t) */
typedef struct short_arg {
    weft_type t;
    weft_op op; /* WEFT_OP_ADD (foldSeg, 0) or WEFT_OP_MAX (fold1Seg) */
} short_arg;

static weft_acc *build_short(weft_program *p, weft_acc *const *in,
                             const void *user)
{
    const short_arg *a = user;
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(ix, weft_index1(weft_convert(
                            weft_at(in[1], weft_arg(ix, 0)), WEFT_I64)));
    weft_acc *xs = weft_backpermute(weft_shape(in[0]), ix, in[3]);
    weft_acc *prod = weft_zipwith(binop(p, a->t, WEFT_OP_MUL), in[0], xs);
    if (a->op == WEFT_OP_MAX) {
        return fold1_seg(binop(p, a->t, a->op), prod, in[2]);
    }
    weft_exp *z = a->t == WEFT_F32   ? weft_f32(p, 0)
                  : a->t == WEFT_F64 ? weft_f64(p, 0)
                                     : weft_i32(p, 0);
    return fold_seg(binop(p, a->t, a->op), z, prod, in[2]);
}

/* v (a multiple of 1/8 in [-4, 4]) stored as element i of t's array d */
static void put_value(weft_type t, void *d, int64_t i, int v)
{
    if (t == WEFT_F32) {
        ((float *)d)[i] = (float)v / 8.0f;
    } else if (t == WEFT_F64) {
        ((double *)d)[i] = (double)v / 8.0;
    } else {
        ((int32_t *)d)[i] = v;
    }
}

/* Lengths 0, 1, 15, 16, 17 and 31 (the short loop's bound, one past it,
 * two vectors of f32 less one) among random ones below 20, on 1 thread
 * (the results in turn) and 4 (parts); f32, f64 and i32 sums, an i32 and
 * an f64 fold1Seg max (no empty segment then); and a column past x in a
 * row of 15 (the gather's error).  The values are multiples of 1/8 in
 * [-4, 4] (integers in i32): every sum of up to 31 products is exact in
 * f32, so the results must match bit for bit in any order. */
START_TEST(test_short)
{
    enum { SEGS = 3000, NCOL = 300 };
    static const int32_t edge[] = {0, 1, 15, 16, 17, 31};
    static const short_arg arg[] = {{WEFT_F32, WEFT_OP_ADD},
                                    {WEFT_F64, WEFT_OP_ADD},
                                    {WEFT_I32, WEFT_OP_ADD},
                                    {WEFT_I32, WEFT_OP_MAX},
                                    {WEFT_F64, WEFT_OP_MAX}};
    static int32_t len[SEGS];
    by_offsets = false;
    for (size_t a = 0; a < sizeof arg / sizeof arg[0]; a++) {
        weft_type t = arg[a].t;
        bool one = arg[a].op == WEFT_OP_MAX;
        int64_t nnz = 0, row15 = -1;
        for (int k = 0; k < SEGS; k++) {
            len[k] = k % 3 == 0 ? edge[(k / 3) % 6] : (int32_t)(rnd() % 20);
            if (one && len[k] == 0) {
                len[k] = 1;
            }
            if (len[k] == 15 && row15 < 0 && k > SEGS / 2) {
                row15 = nnz;
            }
            nnz += len[k];
        }
        size_t w = t == WEFT_F64 ? 8 : 4;
        void *vals = malloc(w * (size_t)nnz), *x = malloc(w * NCOL);
        int32_t *cols = malloc(sizeof *cols * (size_t)nnz);
        ck_assert(vals && x && cols && row15 >= 0);
        for (int64_t i = 0; i < nnz; i++) {
            put_value(t, vals, i, (int)(rnd() % 65) - 32);
            cols[i] = (int32_t)(rnd() % NCOL);
        }
        for (int64_t j = 0; j < NCOL; j++) {
            put_value(t, x, j, (int)(rnd() % 65) - 32);
        }
        input in[4] = {{t, 1, {nnz, 0}, vals},
                       {WEFT_I32, 1, {nnz, 0}, cols},
                       {WEFT_I32, 1, {SEGS, 0}, len},
                       {t, 1, {NCOL, 0}, x}};
        for (int v = 0; v < 2; v++) {
            if (v == 1) {
                cols[row15 + 7] = NCOL; /* past x, in a row of 15 */
            }
            for (int threads = 1; threads <= 4; threads += 3) {
                char what[96];
                snprintf(what, sizeof what, "short segments, %s %s, case %d",
                         t == WEFT_F32   ? "f32"
                         : t == WEFT_F64 ? "f64"
                                         : "i32",
                         one ? "fold1Seg max" : "sum", v);
                check_both(what, build_short, &arg[a], in, 4, threads,
                           v == 1 ? WEFT_ERR_OUT_OF_BOUNDS : WEFT_OK);
            }
        }
        free(vals);
        free(x);
        free(cols);
    }
}
END_TEST

/* build_short, but on the interpreter's side `cols ! i` only inside cols
 * and 0 past it, as compiled code reads it (unchecked: a defined value),
 * where the interpreter would report it. */
static weft_acc *build_inside(weft_program *p, weft_acc *const *in,
                              const void *user)
{
    if (weft_context_backend(build_ctx) != WEFT_BACKEND_INTERP) {
        return build_short(p, in, user);
    }
    const short_arg *a = user;
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_arg(ix, 0);
    weft_exp *col = weft_cond(weft_lt(weft_get(i, 0), weft_size(in[1])),
                              weft_at(in[1], i), weft_i32(p, 0));
    weft_fun_return(ix, weft_index1(weft_convert(col, WEFT_I64)));
    weft_acc *xs = weft_backpermute(weft_shape(in[0]), ix, in[3]);
    weft_acc *prod = weft_zipwith(binop(p, a->t, WEFT_OP_MUL), in[0], xs);
    return fold_seg(binop(p, a->t, a->op), weft_f32(p, 0), prod, in[2]);
}

/* The CPU's short loop comes in two copies (skeletons-ir/foldseg.c,
 * fold_short): one for segments inside cols, whose `cols ! i` goes
 * unchecked, and one that checks.  cols here is shorter than vals by 37,
 * so the last rows run the checked copy, the row across cols' end among
 * them, and the rows before the other; rows of 0 to 19 elements (most
 * below the short loop's 16), an f32 sum exact in any order, on 1 thread
 * and 4, lengths and offsets.  Against the interpreter reading 0 past
 * cols (build_inside), bit for bit. */
START_TEST(test_inside)
{
    enum { SEGS = 3000, NCOL = 300 };
    static const short_arg arg = {WEFT_F32, WEFT_OP_ADD};
    static int32_t len[SEGS];
    int64_t nnz = 0;
    for (int k = 0; k < SEGS; k++) {
        len[k] = (int32_t)(rnd() % 20);
        nnz += len[k];
    }
    float *vals = malloc(sizeof *vals * (size_t)nnz), x[NCOL];
    int32_t *cols = malloc(sizeof *cols * (size_t)nnz);
    ck_assert(vals && cols);
    for (int64_t i = 0; i < nnz; i++) {
        put_value(WEFT_F32, vals, i, (int)(rnd() % 65) - 32);
        cols[i] = (int32_t)(rnd() % NCOL);
    }
    for (int j = 0; j < NCOL; j++) {
        put_value(WEFT_F32, x, j, (int)(rnd() % 65) - 32);
    }
    input in[4] = {{WEFT_F32, 1, {nnz, 0}, vals},
                   {WEFT_I32, 1, {nnz - 37, 0}, cols},
                   {WEFT_I32, 1, {SEGS, 0}, len},
                   {WEFT_F32, 1, {NCOL, 0}, x}};
    for (int form = 0; form < 2; form++) {
        by_offsets = form == 1;
        for (int threads = 1; threads <= 4; threads += 3) {
            check_form("cols short", build_inside, &arg, in, 4, 2, threads,
                       WEFT_OK);
        }
    }
    by_offsets = false;
    free(vals);
    free(cols);
}
END_TEST

static Suite *cpu_foldseg_suite(void)
{
    Suite *s = suite_create("cpu_foldseg");
    TCase *tc = tcase_create("foldseg");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_smvm);
    tcase_add_test(tc, test_smvm_parts);
    tcase_add_test(tc, test_rows);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_offsets);
    tcase_add_test(tc, test_offset_errors);
    tcase_add_test(tc, test_offsets_again);
    tcase_add_test(tc, test_powerlaw);
    tcase_add_test(tc, test_edges);
    tcase_add_test(tc, test_short);
    tcase_add_test(tc, test_inside);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(cpu_foldseg_suite)
