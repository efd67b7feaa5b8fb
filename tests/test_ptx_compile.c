/*
 * tests/test_ptx_compile.c: every operation compiles to PTX that ptxas
 * accepts, on any machine (no GPU, no driver).
 *
 * A ptx context made with target "sm_90" (weft_config.target_cpu) compiles
 * without a device and writes each kernel's PTX to a temporary directory
 * (dump "ptx").  Each case builds one program through the public API and
 * compiles it; the test then checks that a .ptx file appeared for it, that
 * each holds `.entry` points and no unresolved libdevice call, and, where
 * the CUDA toolkit's ptxas is installed, that ptxas assembles it for
 * sm_90 (the assembly is the check that the text is valid PTX; running it
 * is the GPU tests' job).  weft_run on such a context is refused with
 * WEFT_ERR_BACKEND_UNAVAILABLE.
 *
 * The programs cover the skeletons and their variants: element-wise
 * producers with math from libdevice (f16, f32, f64), gathers, tuples,
 * fold / fold1 / fold_all (and a fold over a fused zipWith of two shapes,
 * which has two variants), the six scans, permute with a native atomic, a
 * CAS loop and per-element locks, foldSeg, stencils with each boundary,
 * the reshape family, checked mode (WEFT_FLAG_CHECKED) in each of the
 * skeletons, and scalar while loops that poll the cancel flag.  A few
 * cases also look for what the text should hold: element-wise kernels'
 * launch bounds and 16-byte accesses, fast math's rsqrt, the scan's
 * status word.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tu.h"

static char g_dir[256];

/* A ptx context for sm_90 with flags that writes its PTX into dir. */
static weft_context *open_sm90_flags(const char *dir, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= WEFT_FLAG_NO_ENV | flags;
    cfg.target_cpu = "sm_90";
    cfg.dump = "ptx";
    cfg.dump_dir = dir;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

static weft_context *open_sm90_in(const char *dir)
{
    return open_sm90_flags(dir, 0);
}

static weft_context *open_sm90(void)
{
    return open_sm90_in(g_dir);
}

static int count_ptx(void)
{
    int n = 0;
    DIR *d = opendir(g_dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        n += len > 4 && strcmp(e->d_name + len - 4, ".ptx") == 0;
    }
    closedir(d);
    return n;
}

static weft_fun *add2(weft_program *p, weft_type t)
{
    return tu_fun_op2(p, WEFT_OP_ADD, t);
}

/* Compile results[0..n-1] of p (on the sm_90 context) and check that new
 * PTX files appeared. */
static void compile(weft_program *p, weft_acc **r, int n, const char *what)
{
    int before = count_ptx();
    weft_executable *exe = NULL;
    weft_status s = weft_compile(p, r, n, &exe);
    ck_assert_msg(s == WEFT_OK, "%s: %s", what, weft_last_error());
    ck_assert_msg(count_ptx() > before, "%s: no PTX written", what);
    weft_executable_free(exe);
}

/* The six scans of (+) on elements of type t, rank `rank`, seed z. */
static void six_scans(weft_program *p, weft_type t, int rank, weft_exp *z)
{
    weft_acc *v = weft_param(p, t, rank), *r[4];
    r[0] = weft_scanl(add2(p, t), z, v);
    r[1] = weft_scanl1(add2(p, t), v);
    r[2] = weft_scanr(add2(p, t), z, v);
    r[3] = weft_scanr1(add2(p, t), v);
    compile(p, r, 4, "scanl, scanl1, scanr, scanr1");
    r[0] = weft_scanl_(add2(p, t), z, v);
    r[1] = weft_scanr_(add2(p, t), z, v);
    compile(p, r, 2, "scanl', scanr'");
}

START_TEST(elementwise)
{
    weft_context *ctx = open_sm90();
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_type ts[3] = {WEFT_F32, WEFT_F64, WEFT_F16};
    weft_op ops[6] = {WEFT_OP_EXP,  WEFT_OP_SIN,   WEFT_OP_TANH,
                      WEFT_OP_SQRT, WEFT_OP_ATANH, WEFT_OP_LOG};
    for (int i = 0; i < 3; i++) {
        weft_acc *x = weft_param(p, ts[i], 2), *y = weft_param(p, ts[i], 2);
        weft_fun *f = weft_fun2(p, ts[i], ts[i]);
        weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1);
        weft_exp *e = weft_prim2(WEFT_OP_POW, a, b);
        for (int k = 0; k < 6; k++) {
            e = weft_add(e, weft_prim1(ops[k], b));
        }
        e = weft_add(e, weft_prim2(WEFT_OP_ATAN2, a, b));
        weft_fun_return(f, e);
        weft_acc *r = weft_zipwith(f, x, y);
        compile(p, &r, 1, "zipWith of math");
    }
    /* generate of a tuple from the index, i8 / bool / u64 leaves */
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *i0 = weft_get(ix, 0), *i1 = weft_get(ix, 1);
    weft_exp *parts[3] = {weft_convert(weft_add(i0, i1), WEFT_I8),
                          weft_lt(i0, i1),
                          weft_convert(weft_mul(i0, i1), WEFT_U64)};
    weft_fun_return(g, weft_tuple(p, 3, parts));
    weft_exp *sh[2] = {weft_i64(p, 7), weft_i64(p, 9)};
    weft_acc *r = weft_generate(weft_index(p, 2, sh), g);
    compile(p, &r, 1, "generate of a tuple");
    /* backpermute (a gather: bounds checked) of a fused map */
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_fun *neg = tu_fun_op1(p, WEFT_OP_NEG, WEFT_I32);
    weft_fun *rev = weft_fun1(p, WEFT_DIM(1));
    weft_exp *j = weft_index1(weft_sub(weft_sub(weft_size(v), weft_i64(p, 1)),
                                       weft_get(weft_arg(rev, 0), 0)));
    weft_fun_return(rev, j);
    r = weft_backpermute(weft_shape(v), rev, weft_map(neg, v));
    compile(p, &r, 1, "backpermute of a map");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(reductions)
{
    weft_context *ctx = open_sm90();
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_F32, 2), *y = weft_param(p, WEFT_F32, 2);
    weft_acc *r[4];
    r[0] = weft_fold(add2(p, WEFT_F32), weft_f32(p, 0), x);
    r[1] = weft_fold1_all(add2(p, WEFT_F32), y);
    compile(p, r, 2, "fold, fold1_all");
    weft_fun *mul = tu_fun_op2(p, WEFT_OP_MUL, WEFT_F32);
    r[0] = weft_fold_all(add2(p, WEFT_F32), weft_f32(p, 1),
                         weft_zipwith(mul, x, y));
    compile(p, r, 1, "fold_all of a fused zipWith (two variants)");
    /* the six scans, i64, and of 4-byte elements (the packed tile
     * status), i32 and f32 */
    six_scans(p, WEFT_I64, 2, weft_i64(p, 3));
    six_scans(p, WEFT_I32, 2, weft_i32(p, 0));
    six_scans(p, WEFT_F32, 1, weft_f32(p, 0));
    /* fold_seg of a tuple with a non-commutative function */
    weft_type pair = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I32, WEFT_F64});
    weft_acc *tv = weft_param(p, pair, 1), *seg = weft_param(p, WEFT_I32, 1);
    weft_fun *last = weft_fun2(p, pair, pair);
    weft_fun_return(last, weft_arg(last, 1));
    weft_exp *zs[2] = {weft_i32(p, 0), weft_f64(p, 0)};
    r[0] = weft_fold_seg(last, weft_tuple(p, 2, zs), tv, seg);
    compile(p, r, 1, "fold_seg of a tuple");
    /* scans of a tuple with a non-commutative function (rank 2) */
    weft_acc *tm = weft_param(p, pair, 2);
    r[0] = weft_scanl(last, weft_tuple(p, 2, zs), tm);
    r[1] = weft_scanr1(last, tm);
    compile(p, r, 2, "scanl, scanr1 of a tuple");
    r[0] = weft_scanl_(last, weft_tuple(p, 2, zs), tm);
    compile(p, r, 1, "scanl' of a tuple");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* permute of a into zeros of n elements by index i % n, combine f. */
static weft_acc *hist(weft_program *p, weft_type t, weft_fun *f, weft_exp *z)
{
    weft_acc *a = weft_param(p, t, 1);
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(g, z);
    weft_exp *sh1[1] = {weft_i64(p, 17)};
    weft_acc *def = weft_generate(weft_index(p, 1, sh1), g);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(ix, 0), 0);
    weft_fun_return(ix,
                    weft_index1(weft_prim2(WEFT_OP_REM, i, weft_i64(p, 17))));
    return weft_permute(f, def, ix, a);
}

START_TEST(permutes)
{
    weft_context *ctx = open_sm90();
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *r[3];
    r[0] = hist(p, WEFT_F32, add2(p, WEFT_F32), weft_f32(p, 0));
    r[1] =
        hist(p, WEFT_I64, tu_fun_op2(p, WEFT_OP_MUL, WEFT_I64), weft_i64(p, 1));
    weft_type pair = weft_type_tuple(ctx, 2, (weft_type[]){WEFT_I32, WEFT_F64});
    weft_fun *tadd = weft_fun2(p, pair, pair);
    weft_exp *s[2] = {weft_add(weft_get(weft_arg(tadd, 0), 0),
                               weft_get(weft_arg(tadd, 1), 0)),
                      weft_add(weft_get(weft_arg(tadd, 0), 1),
                               weft_get(weft_arg(tadd, 1), 1))};
    weft_fun_return(tadd, weft_tuple(p, 2, s));
    weft_exp *z[2] = {weft_i32(p, 0), weft_f64(p, 0)};
    r[2] = hist(p, pair, tadd, weft_tuple(p, 2, z));
    compile(p, r, 3, "permute: atomic add, CAS, locks");
    /* histograms (privatised in shared memory, the default fused): i32
     * add of ones into 256 bins, f32 add, i64 max, each by a bin computed
     * from the index; then every other native atomic, whose entry 2 keeps
     * the blocks' sums in words that start at zero */
    weft_type ht[3] = {WEFT_I32, WEFT_F32, WEFT_I64};
    weft_op hop[3] = {WEFT_OP_ADD, WEFT_OP_ADD, WEFT_OP_MAX};
    for (int k = 0; k < 3; k++) {
        weft_fun *one = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(one, weft_convert(weft_i32(p, 1), ht[k]));
        weft_exp *nsh[1] = {weft_i64(p, 1 << 20)};
        weft_acc *ones = weft_generate(weft_index(p, 1, nsh), one);
        weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(zero, weft_convert(weft_i32(p, 0), ht[k]));
        weft_exp *bsh[1] = {weft_i64(p, 256)};
        weft_acc *bins = weft_generate(weft_index(p, 1, bsh), zero);
        weft_fun *bin = weft_fun1(p, WEFT_DIM(1));
        weft_exp *i = weft_get(weft_arg(bin, 0), 0);
        weft_fun_return(bin, weft_index1(weft_prim2(WEFT_OP_REM,
                                                    weft_mul(i, weft_i64(p, 7)),
                                                    weft_i64(p, 256))));
        r[k] = weft_permute(tu_fun_op2(p, hop[k], ht[k]), bins, bin, ones);
    }
    compile(p, r, 3, "permute: histograms of i32 add, f32 add, i64 max");
    weft_type at[9] = {WEFT_I32, WEFT_I32, WEFT_U32, WEFT_U32, WEFT_I64,
                       WEFT_U64, WEFT_I32, WEFT_F64, WEFT_U8};
    weft_op aop[9] = {WEFT_OP_MIN, WEFT_OP_MAX, WEFT_OP_MIN,
                      WEFT_OP_MAX, WEFT_OP_MIN, WEFT_OP_BAND,
                      WEFT_OP_BOR, WEFT_OP_ADD, WEFT_OP_ADD};
    for (int k = 0; k < 9; k++) {
        weft_acc *keys = weft_param(p, WEFT_I32, 1);
        weft_fun *one = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(one, weft_convert(weft_i32(p, 3), at[k]));
        weft_acc *src = weft_generate(weft_shape(keys), one);
        weft_fun *dflt = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(dflt,
                        weft_convert(weft_get(weft_arg(dflt, 0), 0), at[k]));
        weft_exp *bsh[1] = {weft_i64(p, 100)};
        weft_acc *bins = weft_generate(weft_index(p, 1, bsh), dflt);
        weft_fun *bin = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(bin, weft_index1(weft_convert(
                                 weft_at(keys, weft_arg(bin, 0)), WEFT_I64)));
        r[0] = weft_permute(tu_fun_op2(p, aop[k], at[k]), bins, bin, src);
        compile(p, r, 1, "permute: a histogram of each native atomic");
    }
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

START_TEST(stencils_and_shapes)
{
    weft_context *ctx = open_sm90();
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *a = weft_param(p, WEFT_F32, 2);
    weft_boundary_kind kinds[4] = {WEFT_BOUNDARY_CLAMP, WEFT_BOUNDARY_MIRROR,
                                   WEFT_BOUNDARY_WRAP, WEFT_BOUNDARY_CONSTANT};
    weft_acc *r[4];
    for (int k = 0; k < 4; k++) {
        weft_fun *f =
            weft_fun_create(p, 9,
                            (const weft_type[]){WEFT_F32, WEFT_F32, WEFT_F32,
                                                WEFT_F32, WEFT_F32, WEFT_F32,
                                                WEFT_F32, WEFT_F32, WEFT_F32});
        weft_exp *e = weft_arg(f, 0);
        for (int i = 1; i < 9; i++) {
            e = weft_add(e, weft_arg(f, i));
        }
        weft_fun_return(f, e);
        weft_boundary b = {kinds[k], k == 3 ? weft_f32(p, 1.5f) : NULL};
        r[k] = weft_stencil(f, (const int[]){3, 3}, b, a);
    }
    compile(p, r, 4, "stencil 3x3, four boundaries");
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_exp *spec[2] = {weft_i64(p, 4), weft_all(p)};
    r[0] = weft_replicate(2, spec, v);
    weft_exp *sl[2] = {weft_i64(p, 1), weft_all(p)};
    r[1] = weft_slice(a, 2, sl);
    weft_exp *sh[1] = {weft_shape_size(weft_shape(a))};
    r[2] = weft_reshape(weft_index(p, 1, sh), a);
    r[3] = weft_unit(
        weft_the(weft_fold_all(add2(p, WEFT_I32), weft_i32(p, 0), v)));
    compile(p, r, 4, "replicate, slice, reshape, unit");
    /* weft_run is refused on a compile-only context */
    weft_array *in = tu_arr_i(ctx, WEFT_I32, 1, TU_SH(3), TU_I(1, 2, 3));
    weft_array *out = NULL;
    weft_acc *m = weft_map(tu_fun_op1(p, WEFT_OP_NEG, WEFT_I32), v);
    weft_program *q;
    TU_OK(weft_program_create(ctx, &q));
    weft_acc *qv = weft_param(q, WEFT_I32, 1);
    weft_acc *qm = weft_map(tu_fun_op1(q, WEFT_OP_NEG, WEFT_I32), qv);
    TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE,
              weft_run1(q, &qm, 1, &in, 1, &out, 1));
    (void)m;
    weft_array_release(in);
    weft_program_free(q);
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* Checked mode (WEFT_FLAG_CHECKED): every check and the report's
 * compare-and-swap loop, in each of the PTX's own skeletons (fold, scan,
 * permute) and the shared ones (map, stencil, foldSeg). */
START_TEST(checked)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= WEFT_FLAG_NO_ENV | WEFT_FLAG_CHECKED;
    cfg.target_cpu = "sm_90";
    cfg.dump = "ptx";
    cfg.dump_dir = g_dir;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    /* f x = ys ! x + ys !! x + 100 quot x + 1 shl x + truncate (f x)
     *       + from_index (3, x) 7 component 0,  on i64 */
    weft_acc *ys = weft_param(p, WEFT_I64, 1);
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_exp *x = weft_arg(f, 0);
    weft_exp *e = weft_add(weft_at(ys, weft_index1(x)), weft_at_linear(ys, x));
    e = weft_add(e, weft_quot(weft_i64(p, 100), x));
    e = weft_add(e, weft_idiv(x, weft_i64(p, -3)));
    e = weft_add(e, weft_shl(weft_i64(p, 1), x));
    e = weft_add(e, weft_truncate(weft_convert(x, WEFT_F32), WEFT_I64));
    e = weft_add(e, weft_get(weft_from_index(weft_index2(weft_i64(p, 3), x),
                                             weft_i64(p, 7)),
                             0));
    weft_fun_return(f, e);
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_acc *m = weft_map(f, xs);
    compile(p, &m, 1, "checked map");
    weft_acc *r = weft_fold(add2(p, WEFT_I64), weft_i64(p, 0), m);
    compile(p, &r, 1, "checked fold");
    r = weft_scanl(add2(p, WEFT_I64), weft_i64(p, 0), m);
    compile(p, &r, 1, "checked scan");
    weft_fun *id = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(id, weft_arg(id, 0));
    r = weft_permute(add2(p, WEFT_I64), xs, id, m);
    compile(p, &r, 1, "checked permute");
    r = weft_fold_seg(add2(p, WEFT_I64), weft_i64(p, 0), m,
                      weft_param(p, WEFT_I32, 1));
    compile(p, &r, 1, "checked foldSeg");
    weft_fun *g = weft_fun3(p, WEFT_I64, WEFT_I64, WEFT_I64);
    weft_fun_return(g, weft_quot(weft_arg(g, 0), weft_arg(g, 2)));
    weft_boundary b = {WEFT_BOUNDARY_CLAMP, NULL};
    r = weft_stencil(g, (const int[]){3}, b, xs);
    compile(p, &r, 1, "checked stencil");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* Whether some .ptx file holds `text`. */
static bool some_ptx_has(const char *text)
{
    bool found = false;
    DIR *d = opendir(g_dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".ptx") != 0) {
            continue;
        }
        char path[512];
        snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        char line[1024];
        while (!found && fgets(line, sizeof line, f)) {
            found = strstr(line, text) != NULL;
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

/* Scalar while loops poll the cancel flag (a volatile load of mapped host
 * memory, codegen/target_ptx.c): in a map, and in a fold's combine, whose
 * warp shuffles and barriers follow the loop. */
START_TEST(while_cancel)
{
    weft_context *ctx = open_sm90();
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_fun *c = weft_fun1(p, WEFT_I64);
    weft_fun_return(c, weft_lt(weft_arg(c, 0), weft_i64(p, 1000)));
    weft_fun *b = weft_fun1(p, WEFT_I64);
    weft_fun_return(b, weft_add(weft_arg(b, 0), weft_i64(p, 3)));
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(f, weft_while(c, b, weft_arg(f, 0)));
    weft_acc *r = weft_map(f, xs);
    compile(p, &r, 1, "map with a while loop");
    weft_fun *g = weft_fun2(p, WEFT_I64, WEFT_I64);
    weft_fun_return(g,
                    weft_add(weft_while(c, b, weft_arg(g, 0)), weft_arg(g, 1)));
    r = weft_fold(g, weft_i64(p, 0), xs);
    compile(p, &r, 1, "fold with a while loop");
    ck_assert_msg(some_ptx_has("ld.volatile"), "no volatile poll in the PTX");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* The unit element type (no leaves): producers, reductions, scans and a
 * permute of unit arrays, and pairs with a unit side. */
START_TEST(unit_kernels)
{
    weft_context *ctx = open_sm90();
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_type u = weft_type_tuple(ctx, 0, NULL);
    weft_acc *us = weft_param(p, u, 2);
    weft_acc *xs = weft_param(p, WEFT_I32, 1);
    weft_fun *to_u = weft_fun1(p, WEFT_I32);
    weft_fun_return(to_u, weft_tuple(p, 0, NULL));
    weft_acc *r = weft_map(to_u, xs);
    compile(p, &r, 1, "map to unit");
    weft_fun *k = weft_fun2(p, u, u);
    weft_fun_return(k, weft_tuple(p, 0, NULL));
    r = weft_fold(k, weft_tuple(p, 0, NULL), us);
    compile(p, &r, 1, "fold of unit");
    r = weft_fold_all(k, weft_tuple(p, 0, NULL), us);
    compile(p, &r, 1, "fold_all of unit");
    r = weft_scanl(k, weft_tuple(p, 0, NULL), us);
    compile(p, &r, 1, "scanl of unit");
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(g, weft_tuple(p, 0, NULL));
    weft_acc *def = weft_generate(weft_index1(weft_i64(p, 2)), g);
    weft_fun *ix = weft_fun1(p, WEFT_DIM(2));
    weft_fun_return(ix, weft_index1(weft_rem(weft_get(weft_arg(ix, 0), 1),
                                             weft_i64(p, 2))));
    r = weft_permute(k, def, ix, us);
    compile(p, &r, 1, "permute of unit");
    weft_fun *pair = weft_fun1(p, WEFT_I32);
    weft_exp *c2[2] = {weft_arg(pair, 0), weft_tuple(p, 0, NULL)};
    weft_fun_return(pair, weft_tuple(p, 2, c2));
    r = weft_map(pair, xs);
    compile(p, &r, 1, "map to a pair with a unit side");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* A stencil2 of u16 and i64 whose function's signum and compare on u16
 * the IR vectorisers once paired into a v2i16 setcc, which LLVM 19's
 * NVPTX cannot select: it aborted the process (weft_fuzz seed 550081).
 * The GPU pipeline runs without them. */
START_TEST(u16_stencil2)
{
    weft_context *ctx = open_sm90();
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *a = weft_param(p, WEFT_U16, 1);
    weft_acc *b = weft_param(p, WEFT_I64, 1);
    weft_type args[10];
    for (int i = 0; i < 10; i++) {
        args[i] = i < 5 ? WEFT_U16 : WEFT_I64;
    }
    weft_fun *f = weft_fun_create(p, 10, args);
    weft_fun_return(f, weft_sub(weft_u16(p, 0), weft_signum(weft_arg(f, 4))));
    weft_boundary wrap = {WEFT_BOUNDARY_WRAP, NULL};
    weft_acc *r =
        weft_stencil2(f, (const int[]){5}, wrap, a, (const int[]){5}, wrap, b);
    compile(p, &r, 1, "stencil2 of u16 and i64");
    weft_program_free(p);
    weft_context_free(ctx);
}
END_TEST

/* Call fn(path, text, user) for every .ptx file in dir (text in static
 * storage, valid until the next call); returns how many there were. */
static int each_ptx(const char *dir,
                    void (*fn)(const char *, const char *, void *), void *user)
{
    static char text[1 << 22];
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".ptx") != 0) {
            continue;
        }
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        size_t got = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[got] = '\0';
        fn(path, text, user);
        n++;
    }
    closedir(d);
    return n;
}

static void keep_text(const char *path, const char *text, void *user)
{
    (void)path;
    *(const char **)user = text;
}

/* The text of the one PTX file in dir (static storage). */
static const char *only_ptx(const char *dir)
{
    const char *text = NULL;
    ck_assert_int_eq(each_ptx(dir, keep_text, &text), 1);
    return text;
}

/* The single-pass scan's tile status: for elements of one 4-byte leaf,
 * flag and value share a 64-bit word, published and read without a fence,
 * and the kernel carries launch bounds (4 blocks of 256 per SM); other
 * elements (i64 here) keep flags and values apart, with fences, and no
 * bounds.  The scan's entry is the module's first; the second, a part's
 * reduce over several devices (ptx/scan.c, "Several devices"), has
 * fences of its own, so the fences are counted in the first: with the
 * packed word, exactly the two of its fused reduce (run_done: before a
 * run's ticket and in the block with the last one, once a run, never a
 * tile). */
START_TEST(scan_status_word)
{
    const weft_type ts[2] = {WEFT_I32, WEFT_I64};
    for (int i = 0; i < 2; i++) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/status-%d", g_dir, i);
        ck_assert_int_eq(mkdir(dir, 0700), 0);
        weft_context *ctx = open_sm90_in(dir);
        weft_program *p;
        TU_OK(weft_program_create(ctx, &p));
        weft_acc *r = weft_scanl1(add2(p, ts[i]), weft_param(p, ts[i], 1));
        weft_executable *exe = NULL;
        TU_OK(weft_compile(p, &r, 1, &exe));
        const char *text = only_ptx(dir);
        bool packed = ts[i] == WEFT_I32;
        const char *e0 = strstr(text, ".entry");
        ck_assert_ptr_nonnull(e0);
        const char *e1 = strstr(e0 + 1, ".entry");
        ck_assert_ptr_nonnull(e1);
        int fences = 0;
        for (const char *q = strstr(e0, "membar"); q && q < e1;
             q = strstr(q + 1, "membar")) {
            fences++;
        }
        ck_assert_msg(packed ? fences == 2 : fences >= 1,
                      "scan %d: %d fences in the scan's entry, %s expected", i,
                      fences, packed ? "2 (the fused reduce's)" : "some");
        if (packed) {
            ck_assert_msg(strstr(text, "ld.volatile.global.u64") != NULL,
                          "scan %d: no 64-bit status load", i);
        }
        ck_assert_msg((strstr(text, ".maxntid 256, 1, 1") != NULL) == packed &&
                          (strstr(text, ".minnctapersm 4") != NULL) == packed,
                      "scan %d: launch bounds", i);
        weft_executable_free(exe);
        weft_program_free(p);
        weft_context_free(ctx);
    }
}
END_TEST

/* Occurrences of needle in text. */
static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *q = strstr(text, needle); q;
         q = strstr(q + strlen(needle), needle)) {
        n++;
    }
    return n;
}

static weft_context *g_ctx; /* ptx_of_one's, while its builder runs */

/* The PTX of program r (its one kernel) in a fresh directory g_dir/name,
 * compiled by a context with flags. */
static const char *ptx_of_one(const char *name, unsigned flags,
                              weft_acc *(*build)(weft_program *))
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", g_dir, name);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    weft_context *ctx = open_sm90_flags(dir, flags);
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    g_ctx = ctx;
    weft_acc *r = build(p);
    g_ctx = NULL;
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    return only_ptx(dir);
}

/* zipWith3 (\s x t -> (s exp(t) / sqrt x, log(s / x) + t)): heavy (not
 * a light kernel), two result leaves. */
static weft_acc *build_heavy3(weft_program *p)
{
    weft_acc *in[3];
    for (int i = 0; i < 3; i++) {
        in[i] = weft_param(p, WEFT_F32, 1);
    }
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_exp *s = weft_arg(f, 0), *x = weft_arg(f, 1), *t = weft_arg(f, 2);
    weft_exp *r[2] = {weft_fdiv(weft_mul(s, weft_fexp(t)), weft_sqrt(x)),
                      weft_add(weft_log(weft_fdiv(s, x)), t)};
    weft_fun_return(f, weft_tuple(p, 2, r));
    return weft_zipwith3(f, in[0], in[1], in[2]);
}

/* generate n (\i -> while (< i) (+ 1) 0) */
static weft_acc *build_loop(weft_program *p)
{
    weft_fun *g = weft_fun1(p, WEFT_DIM(1));
    weft_exp *i = weft_get(weft_arg(g, 0), 0);
    weft_fun *cond = weft_fun1(p, WEFT_I64);
    weft_fun_return(cond, weft_lt(weft_arg(cond, 0), i));
    weft_fun *body = weft_fun1(p, WEFT_I64);
    weft_fun_return(body, weft_add(weft_arg(body, 0), weft_i64(p, 1)));
    weft_fun_return(g, weft_while(cond, body, weft_i64(p, 0)));
    return weft_generate(weft_index1(weft_i64(p, 1000)), g);
}

/* zipWith (\x y -> x / sqrt y) */
static weft_acc *build_div_sqrt(weft_program *p)
{
    weft_acc *x = weft_param(p, WEFT_F32, 1), *y = weft_param(p, WEFT_F32, 1);
    weft_fun *f = weft_fun2(p, WEFT_F32, WEFT_F32);
    weft_fun_return(f, weft_fdiv(weft_arg(f, 0), weft_sqrt(weft_arg(f, 1))));
    return weft_zipwith(f, x, y);
}

/* permute (op) of keys into `bins` of type t (a fused default of zeros),
 * the source the keys' positions converted to t: the histogram's shape. */
static weft_acc *histogram_of(weft_program *p, weft_op op, weft_type t)
{
    weft_acc *keys = weft_param(p, WEFT_I32, 1);
    weft_fun *val = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(val, weft_convert(weft_get(weft_arg(val, 0), 0), t));
    weft_acc *src = weft_generate(weft_shape(keys), val);
    weft_fun *zero = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(zero, weft_convert(weft_i32(p, 0), t));
    weft_acc *bins = weft_generate(weft_index1(weft_i64(p, 256)), zero);
    weft_fun *bin = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(bin, weft_index1(weft_convert(
                             weft_at(keys, weft_arg(bin, 0)), WEFT_I64)));
    return weft_permute(tu_fun_op2(p, op, t), bins, bin, src);
}

static weft_acc *build_hist_i32(weft_program *p)
{
    return histogram_of(p, WEFT_OP_ADD, WEFT_I32);
}

static weft_acc *build_hist_u64_max(weft_program *p)
{
    return histogram_of(p, WEFT_OP_MAX, WEFT_U64);
}

static weft_acc *build_hist_f64(weft_program *p)
{
    return histogram_of(p, WEFT_OP_ADD, WEFT_F64);
}

static weft_acc *build_hist_u8(weft_program *p)
{
    return histogram_of(p, WEFT_OP_ADD, WEFT_U8);
}

/* The i32 histogram into a default array given (not fused). */
static weft_acc *build_hist_given(weft_program *p)
{
    weft_acc *keys = weft_param(p, WEFT_I32, 1);
    weft_acc *bins = weft_param(p, WEFT_I32, 1);
    weft_fun *one = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(one, weft_i32(p, 1));
    weft_fun *bin = weft_fun1(p, WEFT_DIM(1));
    weft_fun_return(bin, weft_index1(weft_convert(
                             weft_at(keys, weft_arg(bin, 0)), WEFT_I64)));
    return weft_permute(tu_fun_op2(p, WEFT_OP_ADD, WEFT_I32), bins, bin,
                        weft_generate(weft_shape(keys), one));
}

/* A permute split over several devices reduces with reductions of
 * system scope (skeletons-ir/ptx/permute.c, codegen's cg_ptx_red_sys),
 * with the operation and type of the combine, three per leaf: each
 * block's into the output (without replicas) in each of the two flushes
 * (a lane a bin, a warp a bin), and a part's last block's, into the
 * output or, with a fused default, into the parts' set on the first
 * device (f64 add: with a red.sys.or of the bin's bit there), after
 * which the part takes the parts' ticket (one atom.sys, behind one
 * membar.sys, and the last part a second before it reads the set); a
 * leaf of one byte has none (such a permute is not split). */
START_TEST(permute_split_reductions)
{
    const char *text = ptx_of_one("hist-i32", 0, build_hist_i32);
    ck_assert_int_eq(count_of(text, "red.sys.add.u32"), 3);
    ck_assert_int_eq(count_of(text, "atom.sys.add.u32"), 1);
    ck_assert_int_eq(count_of(text, "membar.sys"), 2);
    text = ptx_of_one("hist-given", 0, build_hist_given);
    ck_assert_int_eq(count_of(text, "red.sys.add.u32"), 3);
    ck_assert_int_eq(count_of(text, "atom.sys"), 0);
    ck_assert_int_eq(count_of(text, "membar.sys"), 0);
    text = ptx_of_one("hist-u64-max", 0, build_hist_u64_max);
    ck_assert_int_eq(count_of(text, "red.sys.max.u64"), 3);
    text = ptx_of_one("hist-f64", 0, build_hist_f64);
    ck_assert_int_eq(count_of(text, "red.sys.add.f64"), 3);
    ck_assert_int_eq(count_of(text, "red.sys.or.b32"), 1);
    text = ptx_of_one("hist-u8", 0, build_hist_u8);
    ck_assert_int_eq(count_of(text, "red.sys"), 0);
}
END_TEST

/* With $WEFT_PTX_PERMUTE_CLAIM=1, entry 2 of a permute with a last
 * block (a fused default, a split part's accumulators) claims its chunks
 * in turn (skeletons-ir/ptx/permute.c, "Chunks"): two more global atomic
 * adds than by default, the first claim and the next one (u32, as the
 * ticket), and no more than that. */
START_TEST(permute_claims)
{
    const char *text = ptx_of_one("chunks", 0, build_hist_i32);
    int fixed = count_of(text, "atom.global.add.u32");
    ck_assert_int_eq(setenv("WEFT_PTX_PERMUTE_CLAIM", "1", 1), 0);
    text = ptx_of_one("claims", 0, build_hist_i32);
    int claiming = count_of(text, "atom.global.add.u32");
    ck_assert_int_eq(unsetenv("WEFT_PTX_PERMUTE_CLAIM"), 0);
    ck_assert_int_eq(claiming - fixed, 2);
}
END_TEST

/* Element-wise kernels (skeletons-ir/ptx/target.c, generate.c): blocks of
 * at most 256 threads (.maxntid), four elements per chunk moved 16 bytes
 * at a time for a heavy body without a loop (each of the three operands
 * one vector load, each of the two result leaves one vector store), one
 * element per chunk with a while loop; with fast math x / sqrt y is a
 * multiplication by rsqrt.approx. */
START_TEST(element_kernels)
{
    const char *text = ptx_of_one("heavy3", 0, build_heavy3);
    ck_assert_msg(strstr(text, ".maxntid 256, 1, 1") != NULL,
                  "heavy3: no launch bounds");
    ck_assert_int_eq(count_of(text, "ld.global.nc.v4.f32"), 3);
    ck_assert_int_eq(count_of(text, "st.global.v4.f32"), 2);
    text = ptx_of_one("loop", 0, build_loop);
    ck_assert_msg(strstr(text, ".maxntid 256, 1, 1") != NULL,
                  "loop: no launch bounds");
    ck_assert_int_eq(count_of(text, ".v4."), 0);
    text = ptx_of_one("div_sqrt", WEFT_FLAG_FAST_MATH, build_div_sqrt);
    ck_assert_int_ge(count_of(text, "rsqrt.approx.f32"), 1);
    ck_assert_int_eq(count_of(text, "\tsqrt."), 0);
    ck_assert_int_eq(count_of(text, "\tdiv."), 0);
}
END_TEST

/* n-body's accelerations as a while loop over the bodies j from j0 (0, or
 * the body i itself when from_i), bodies in four f32 vectors. */
static weft_acc *build_nbody_from(weft_program *p, bool from_i)
{
    weft_context *ctx = g_ctx;
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
    weft_exp *s = weft_arg(body, 0), *j = weft_get(s, 0), *d[3];
    for (int k = 0; k < 3; k++) {
        d[k] = weft_sub(weft_at(in[k], weft_index1(j)),
                        weft_at(in[k], weft_index1(i)));
    }
    weft_exp *r2 =
        weft_add(weft_add(weft_add(weft_mul(d[0], d[0]), weft_mul(d[1], d[1])),
                          weft_mul(d[2], d[2])),
                 weft_f32(p, 0.01f));
    weft_exp *inv = weft_fdiv(weft_f32(p, 1), weft_sqrt(r2));
    weft_exp *w = weft_mul(weft_at(in[3], weft_index1(j)),
                           weft_mul(weft_mul(inv, inv), inv));
    weft_exp *next[4] = {weft_add(j, weft_i64(p, 1)),
                         weft_add(weft_get(s, 1), weft_mul(d[0], w)),
                         weft_add(weft_get(s, 2), weft_mul(d[1], w)),
                         weft_add(weft_get(s, 3), weft_mul(d[2], w))};
    weft_fun_return(body, weft_tuple(p, 4, next));
    weft_exp *init[4] = {from_i ? i : weft_i64(p, 0), weft_f32(p, 0),
                         weft_f32(p, 0), weft_f32(p, 0)};
    weft_exp *r = weft_while(cond, body, weft_tuple(p, 4, init));
    weft_exp *acc[3] = {weft_get(r, 1), weft_get(r, 2), weft_get(r, 3)};
    weft_fun_return(g, weft_tuple(p, 3, acc));
    return weft_generate(weft_index1(n), g);
}

static weft_acc *build_nbody_while(weft_program *p)
{
    return build_nbody_from(p, false);
}

static weft_acc *build_nbody_from_i(weft_program *p)
{
    return build_nbody_from(p, true);
}

/* n-body's accelerations as fold (+3) (0, 0, 0) (generate (n, n) (\(i, j)
 * -> pull of j on i)), and a fold of the pairs (a!j, b!j + c!i) with
 * leaves of 4 and 2 bytes. */
static weft_acc *build_nbody_fold(weft_program *p)
{
    weft_context *ctx = g_ctx;
    weft_acc *in[4];
    for (int k = 0; k < 4; k++) {
        in[k] = weft_param(p, WEFT_F32, 1);
    }
    weft_type v3 =
        weft_type_tuple(ctx, 3, (weft_type[]){WEFT_F32, WEFT_F32, WEFT_F32});
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0), *d[3];
    weft_exp *i = weft_index1(weft_get(ix, 0)),
             *j = weft_index1(weft_get(ix, 1));
    for (int k = 0; k < 3; k++) {
        d[k] = weft_sub(weft_at(in[k], j), weft_at(in[k], i));
    }
    weft_exp *r2 =
        weft_add(weft_add(weft_add(weft_mul(d[0], d[0]), weft_mul(d[1], d[1])),
                          weft_mul(d[2], d[2])),
                 weft_f32(p, 0.01f));
    weft_exp *inv = weft_fdiv(weft_f32(p, 1), weft_sqrt(r2));
    weft_exp *w =
        weft_mul(weft_at(in[3], j), weft_mul(weft_mul(inv, inv), inv));
    weft_exp *c[3] = {weft_mul(d[0], w), weft_mul(d[1], w), weft_mul(d[2], w)};
    weft_fun_return(g, weft_tuple(p, 3, c));
    weft_exp *n = weft_size(in[0]);
    weft_acc *all = weft_generate(weft_index2(n, n), g);
    weft_fun *plus = weft_fun2(p, v3, v3);
    weft_exp *a = weft_arg(plus, 0), *b = weft_arg(plus, 1), *s[3], *z[3];
    for (int k = 0; k < 3; k++) {
        s[k] = weft_add(weft_get(a, k), weft_get(b, k));
        z[k] = weft_f32(p, 0);
    }
    weft_fun_return(plus, weft_tuple(p, 3, s));
    return weft_fold(plus, weft_tuple(p, 3, z), all);
}

static weft_acc *build_fold_pairs(weft_program *p)
{
    weft_acc *a = weft_param(p, WEFT_I32, 1), *b = weft_param(p, WEFT_I16, 1);
    weft_acc *c = weft_param(p, WEFT_I32, 1);
    weft_fun *g = weft_fun1(p, WEFT_DIM(2));
    weft_exp *ix = weft_arg(g, 0);
    weft_exp *j = weft_index1(weft_get(ix, 1));
    weft_exp *e =
        weft_add(weft_add(weft_at(a, j), weft_convert(weft_at(b, j), WEFT_I32)),
                 weft_at(c, weft_index1(weft_get(ix, 0))));
    weft_fun_return(g, e);
    weft_acc *all = weft_generate(weft_index2(weft_size(c), weft_size(a)), g);
    return weft_fold(add2(p, WEFT_I32), weft_i32(p, 0), all);
}

/* A while loop whose reads at j are the same in every thread of a block
 * (codegen/stage.c): tiles of records (x, y, z, m) written and read 16
 * bytes at a time in shared memory, staged between two barriers, the
 * cancel flag polled through a barrier that ors it over the block,
 * blocks of at most 128 threads and at least 4 of them an SM (sk.h, SK_PTX_STAGED_BLOCK); not in checked
 * mode, nor where j starts at the element's own index (not the same in
 * every thread).  The fold of a generate read at j: the same tiles. */
START_TEST(staged_while)
{
    const char *text = ptx_of_one("nbody_while", 0, build_nbody_while);
    ck_assert_msg(strstr(text, ".maxntid 128, 1, 1") != NULL &&
                      strstr(text, ".minnctapersm 4") != NULL,
                  "nbody_while: not the staged launch bounds");
    ck_assert_int_ge(count_of(text, "ld.shared.v4.f32"), 1);
    ck_assert_int_ge(count_of(text, "st.shared.v4.f32"), 1);
    ck_assert_int_ge(count_of(text, "bar.red.or.pred"), 1);
    /* a barrier before and after staging a tile (none after its trips),
     * in the loop of full tiles and in the last tile */
    ck_assert_int_eq(count_of(text, "bar.sync"), 4);
    /* a tile's trips: T or the last tile's count, not min(N - t, T) */
    ck_assert_int_eq(count_of(text, "min.u64"), 0);
    text =
        ptx_of_one("nbody_while_checked", WEFT_FLAG_CHECKED, build_nbody_while);
    ck_assert_int_eq(count_of(text, ".shared"), 0);
    text = ptx_of_one("nbody_from_i", 0, build_nbody_from_i);
    ck_assert_int_eq(count_of(text, ".shared"), 0);
    /* the fold's teams read the columns from tiles (ptx/fold.c) */
    text = ptx_of_one("nbody_fold", WEFT_FLAG_FAST_MATH, build_nbody_fold);
    ck_assert_int_ge(count_of(text, "ld.shared.v4.f32"), 1);
    ck_assert_int_ge(count_of(text, "st.shared.v4.f32"), 1);
    text = ptx_of_one("fold_pairs", 0, build_fold_pairs);
    ck_assert_int_ge(count_of(text, "st.shared.u16"), 1);
}
END_TEST

/* One .ptx file: entries, nothing unresolved, and the ptxas that user
 * points to (if not NULL) accepts it. */
static void check_ptx(const char *path, const char *text, void *user)
{
    const char *ptxas = *(const char **)user;
    ck_assert_msg(strstr(text, ".entry") != NULL, "%s: no .entry", path);
    ck_assert_msg(strstr(text, ".extern .func __nv_") == NULL,
                  "%s: an unresolved libdevice call", path);
    if (ptxas) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "%s -arch=sm_90 %s -o /dev/null 2>&1", ptxas,
                 path);
        ck_assert_msg(system(cmd) == 0, "ptxas rejects %s", path);
    }
}

/* Every .ptx file: entries, nothing unresolved, and ptxas accepts it. */
START_TEST(ptxas_accepts)
{
    const char *ptxas =
        access("/usr/local/cuda/bin/ptxas", X_OK) == 0
            ? "/usr/local/cuda/bin/ptxas"
            : (system("command -v ptxas >/dev/null 2>&1") == 0 ? "ptxas"
                                                               : NULL);
    int n = each_ptx(g_dir, check_ptx, &ptxas);
    ck_assert_int_ge(n, 20);
    if (!ptxas) {
        printf("test_ptx_compile: no ptxas here: %d PTX files checked "
               "by text only\n",
               n);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ptx_compile");
    TCase *tc = tcase_create("compile");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, elementwise);
    tcase_add_test(tc, reductions);
    tcase_add_test(tc, permutes);
    tcase_add_test(tc, stencils_and_shapes);
    tcase_add_test(tc, checked);
    tcase_add_test(tc, u16_stencil2);
    tcase_add_test(tc, while_cancel);
    tcase_add_test(tc, unit_kernels);
    tcase_add_test(tc, scan_status_word);
    tcase_add_test(tc, element_kernels);
    tcase_add_test(tc, permute_split_reductions);
    tcase_add_test(tc, permute_claims);
    tcase_add_test(tc, staged_while);
    tcase_add_test(tc, ptxas_accepts); /* last: reads what the others wrote */
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
#ifndef WEFT_HAVE_LLVM
    printf("test_ptx_compile: built without LLVM, nothing to test\n");
    return 0;
#else
    snprintf(g_dir, sizeof g_dir, "/tmp/weft-ptx-compile-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(suite());
    srunner_set_fork_status(sr, CK_NOFORK); /* the tests share g_dir */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_ptx_compile: could not remove %s\n", g_dir);
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
#endif
}
