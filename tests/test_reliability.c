/*
 * tests/test_reliability.c: regression tests for the smaller reliability
 * items of issue 10, each on the interpreter and, where it concerns
 * compiled code, on the CPU backend too (same values expected).
 *
 *   permute_ignore_rank0   permute into a rank-0 target whose index
 *                          function picks `ignore` by a condition that does
 *                          not depend on the index (constant or from a
 *                          parameter: sharing recovery binds it outside the
 *                          function), by one bound by a let used twice
 *                          inside the function, and by one bound by a let
 *                          at host level (used by two functions)
 *   fifo_cache_entry       a disk-cache entry that is a FIFO (or a link to
 *                          one) is rejected without blocking and rewritten;
 *                          an alarm turns a hang into a failure
 *   program_mismatch       every builder that takes handles of two programs
 *                          records WEFT_ERR_PROGRAM_MISMATCH in both,
 *                          naming the builder and the argument
 *   threads_checked        weft_context_create refuses threads outside
 *                          0..4096 for every backend, naming the field
 *   null_program_getters   weft_program_status / weft_program_error of NULL
 *                          leave a message
 *   bool_bits_and_order    band, bor, bxor, min and max on bool (and, or,
 *                          xor, and, or), computed and constant-folded
 */
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tu.h"

/* The backends that run compiled code here, after the interpreter. */
static const weft_backend backends[] = TU_BACKENDS;
enum { NBACKENDS = (int)(sizeof backends / sizeof *backends) };

/* The message contains `want`. */
#define HAS(msg, want)                                                         \
    ck_assert_msg(strstr((msg), (want)) != NULL, "\"%s\" lacks \"%s\"", (msg), \
                  (want))

/* A rank-0 bool array holding v. */
static weft_array *bool0(weft_context *ctx, bool v)
{
    return tu_arr_i(ctx, WEFT_BOOL, 0, NULL, TU_I(v));
}

/* ------------------------------------------------------------------------
 * 1. permute's `ignore` of a rank-0 target
 * ---------------------------------------------------------------------- */

/* (x, y) -> x + y on i64. */
static weft_fun *add64(weft_program *p)
{
    return tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64);
}

/* permute (+) (unit 1) ix (unit 5), run with in[0..n_in-1]; the one
 * element of the result. */
static int64_t permute_unit(tu *t, weft_fun *ix, weft_array *const *in,
                            int n_in)
{
    weft_program *p = t->p;
    weft_acc *r = weft_permute(add64(p), weft_unit(weft_i64(p, 1)), ix,
                               weft_unit(weft_i64(p, 5)));
    TU_PROGRAM_OK(p);
    weft_array *out = NULL;
    TU_OK(weft_run1(p, &r, 1, in, n_in, &out, 1));
    int64_t v = tu_load_i(WEFT_I64, weft_array_data(out, 0));
    weft_array_release(out);
    return v;
}

START_TEST(permute_ignore_rank0)
{
    for (int b = 0; b < NBACKENDS; b++) {
        tu t;
        tu_open_backend(&t, backends[b]);
        /* \ix -> if c then index () else ignore, c constant */
        for (int c = 0; c < 2; c++) {
            tu_reset(&t);
            weft_program *p = t.p;
            weft_fun *ix = weft_fun1(p, WEFT_DIM(0));
            weft_fun_return(ix,
                            weft_cond(weft_bool(p, c), weft_index(p, 0, NULL),
                                      weft_ignore(p, 0)));
            ck_assert_msg(permute_unit(&t, ix, NULL, 0) == (c ? 6 : 1),
                          "%s, constant %d", tu_backend_name(backends[b]), c);
        }
        /* the same with the condition from a parameter (the ! p0), and
         * with the index argument in the then branch */
        for (int c = 0; c < 4; c++) {
            tu_reset(&t);
            weft_program *p = t.p;
            weft_exp *cond = weft_the(weft_param(p, WEFT_BOOL, 0));
            weft_fun *ix = weft_fun1(p, WEFT_DIM(0));
            weft_exp *then = c < 2 ? weft_index(p, 0, NULL) : weft_arg(ix, 0);
            weft_fun_return(ix, weft_cond(cond, then, weft_ignore(p, 0)));
            weft_array *in = bool0(t.ctx, c & 1);
            int64_t got = permute_unit(&t, ix, &in, 1);
            weft_array_release(in);
            ck_assert_msg(got == ((c & 1) ? 6 : 1),
                          "%s, parameter case %d: %lld",
                          tu_backend_name(backends[b]), c, (long long)got);
        }
        /* e = if c && s + 0 == 1 && ... && s + 19 == 20 then index ()
         * else ignore, s = size z (= 1): it depends on the argument z, so
         * it stays in the function, and it is too big for the simplifier
         * to copy to its two uses, so a let binds it there:
         *   \z -> if d then e else if f then e else index () */
        for (int c = 0; c < 8; c++) {
            tu_reset(&t);
            weft_program *p = t.p;
            weft_exp *pc = weft_the(weft_param(p, WEFT_BOOL, 0));
            weft_exp *pd = weft_the(weft_param(p, WEFT_BOOL, 0));
            weft_exp *pf = weft_the(weft_param(p, WEFT_BOOL, 0));
            weft_fun *ix = weft_fun1(p, WEFT_DIM(0));
            weft_exp *k = pc;
            for (int i = 0; i < 20; i++) {
                weft_exp *s =
                    weft_add(weft_shape_size(weft_arg(ix, 0)), weft_i64(p, i));
                k = weft_band(k, weft_eq(s, weft_i64(p, i + 1)));
            }
            weft_exp *e =
                weft_cond(k, weft_index(p, 0, NULL), weft_ignore(p, 0));
            weft_fun_return(
                ix, weft_cond(pd, e, weft_cond(pf, e, weft_index(p, 0, NULL))));
            bool vc = c & 1, vd = c & 2, vf = c & 4;
            weft_array *in[3] = {bool0(t.ctx, vc), bool0(t.ctx, vd),
                                 bool0(t.ctx, vf)};
            int64_t got = permute_unit(&t, ix, in, 3);
            tu_release_all(in, 3);
            bool ignored = (vd || vf) && !vc;
            ck_assert_msg(
                got == (ignored ? 1 : 6), "%s, let case c=%d d=%d f=%d: %lld",
                tu_backend_name(backends[b]), vc, vd, vf, (long long)got);
        }
        /* the same e with s = size of a parameter (= 1), used by the
         * index functions of two permutes: e depends on no argument and
         * has two uses at host level, so sharing recovery binds it there
         * by a let, a free variable of both functions (a rank-0 index:
         * no leaves to carry `ignore` into the kernels) */
        for (int c = 0; c < 8; c++) {
            tu_reset(&t);
            weft_program *p = t.p;
            weft_exp *pc = weft_the(weft_param(p, WEFT_BOOL, 0));
            weft_exp *pd = weft_the(weft_param(p, WEFT_BOOL, 0));
            weft_exp *pf = weft_the(weft_param(p, WEFT_BOOL, 0));
            weft_exp *sz = weft_size(weft_param(p, WEFT_I64, 1));
            weft_exp *k = pc;
            for (int i = 0; i < 20; i++) {
                weft_exp *s = weft_add(sz, weft_i64(p, i));
                k = weft_band(k, weft_eq(s, weft_i64(p, i + 1)));
            }
            weft_exp *e =
                weft_cond(k, weft_index(p, 0, NULL), weft_ignore(p, 0));
            weft_fun *ix1 = weft_fun1(p, WEFT_DIM(0));
            weft_fun_return(ix1, weft_cond(pd, e, weft_index(p, 0, NULL)));
            weft_fun *ix2 = weft_fun1(p, WEFT_DIM(0));
            weft_fun_return(ix2, weft_cond(pf, e, weft_index(p, 0, NULL)));
            weft_acc *r[2] = {
                weft_permute(add64(p), weft_unit(weft_i64(p, 1)), ix1,
                             weft_unit(weft_i64(p, 5))),
                weft_permute(add64(p), weft_unit(weft_i64(p, 1)), ix2,
                             weft_unit(weft_i64(p, 5))),
            };
            TU_PROGRAM_OK(p);
            bool vc = c & 1, vd = c & 2, vf = c & 4;
            weft_array *in[4] = {
                bool0(t.ctx, vc), bool0(t.ctx, vd), bool0(t.ctx, vf),
                tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(1), TU_I(7))};
            weft_array *out[2] = {NULL, NULL};
            TU_OK(weft_run1(p, r, 2, in, 4, out, 2));
            tu_release_all(in, 4);
            TU_CHECK_I(t.ctx, out[0], 0, 0, NULL, TU_I(vd && !vc ? 1 : 6));
            TU_CHECK_I(t.ctx, out[1], 0, 0, NULL, TU_I(vf && !vc ? 1 : 6));
            tu_release_all(out, 2);
        }
        /* a rank-1 source into a rank-0 target, ignore by element index:
         * even positions of [1..5] kept, 1 + 1 + 3 + 5 */
        tu_reset(&t);
        weft_program *p = t.p;
        weft_fun *ix = weft_fun1(p, WEFT_DIM(1));
        weft_exp *i = weft_get(weft_arg(ix, 0), 0);
        weft_fun_return(
            ix, weft_cond(weft_eq(weft_rem(i, weft_i64(p, 2)), weft_i64(p, 0)),
                          weft_index(p, 0, NULL), weft_ignore(p, 0)));
        weft_array *src =
            tu_arr_i(t.ctx, WEFT_I64, 1, TU_SH(5), TU_I(1, 2, 3, 4, 5));
        weft_acc *r = weft_permute(add64(p), weft_unit(weft_i64(p, 1)), ix,
                                   weft_use(p, src));
        weft_array_release(src);
        weft_array *out = NULL;
        TU_OK(weft_run1(p, &r, 1, NULL, 0, &out, 1));
        TU_CHECK_I(t.ctx, out, 0, 0, NULL, TU_I(10));
        weft_array_release(out);
        tu_close(&t);
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * 2. a disk-cache entry that is a FIFO
 * ---------------------------------------------------------------------- */

#ifdef WEFT_HAVE_LLVM
/* Run map (x * 3 - 1) over [0..99] (i32) on a new CPU context caching in
 * dir; checks the result. */
static void run_cached(const char *dir, weft_stats *st)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 2;
    cfg.flags = WEFT_FLAG_NO_ENV;
    cfg.cache_dir = dir;
    tu t = {NULL, NULL};
    TU_OK(weft_context_create(&cfg, &t.ctx));
    TU_OK(weft_program_create(t.ctx, &t.p));
    weft_program *p = t.p;
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(
        f, weft_sub(weft_mul(weft_arg(f, 0), weft_i32(p, 3)), weft_i32(p, 1)));
    weft_acc *r = weft_map(f, weft_param(p, WEFT_I32, 1));
    int64_t v[100], want[100];
    for (int i = 0; i < 100; i++) {
        v[i] = i;
        want[i] = 3 * i - 1;
    }
    weft_array *in = tu_arr_i(t.ctx, WEFT_I32, 1, TU_SH(100), v);
    weft_array *out = NULL;
    TU_OK(weft_run1(p, &r, 1, &in, 1, &out, 1));
    TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(100), want);
    TU_OK(weft_context_wait_optimised(t.ctx)); /* the entry on disk */
    TU_OK(weft_context_stats(t.ctx, st));
    weft_array_release(in);
    weft_array_release(out);
    tu_close(&t);
}

/* Replace every entry of dir by a FIFO (link = false) or by a symbolic
 * link to a FIFO (link = true); returns how many. */
static int poison_entries(const char *dir, bool link)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    if (link) {
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    }
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 3 || strcmp(de->d_name + len - 2, ".o") != 0) {
            continue;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        ck_assert_int_eq(unlink(path), 0);
        if (link) {
            ck_assert_int_eq(symlink(fifo, path), 0);
        } else {
            ck_assert_int_eq(mkfifo(path, 0600), 0);
        }
        n++;
    }
    closedir(d);
    return n;
}

/* Every entry of dir is a regular file again (the FIFO itself aside). */
static void entries_regular(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 3 || strcmp(de->d_name + len - 2, ".o") != 0) {
            continue;
        }
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert_msg(S_ISREG(st.st_mode), "%s is not a regular file", path);
    }
    closedir(d);
}
#endif

START_TEST(fifo_cache_entry)
{
#ifdef WEFT_HAVE_LLVM
    char dir[] = "/tmp/weft-reliability-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_stats st;
    run_cached(dir, &st); /* fills the cache */
    ck_assert_uint_gt(st.kernels_compiled, 0);
    for (int link = 0; link < 2; link++) {
        ck_assert_int_gt(poison_entries(dir, link), 0);
        /* opening a FIFO for reading waits for a writer: a regression
         * hangs here, and the alarm ends the test as a failure */
        alarm(60);
        run_cached(dir, &st);
        alarm(0);
        ck_assert_uint_gt(st.kernels_compiled, 0);
        ck_assert_uint_eq(st.kernels_loaded, 0);
        entries_regular(dir);
        /* and the rewritten entries load again */
        run_cached(dir, &st);
        ck_assert_uint_eq(st.kernels_compiled, 0);
        ck_assert_uint_gt(st.kernels_loaded, 0);
    }
    tu_remove_dir(dir);
#endif
}
END_TEST

/* ------------------------------------------------------------------------
 * 3. handles of two programs
 * ---------------------------------------------------------------------- */

/* One builder call mixing programs a and b (case k); its name in *who and
 * the argument of b it names in *arg.  Returns the call's result. */
static void *mix_call(int k, weft_program *a, weft_program *b, const char **who,
                      const char **arg)
{
    weft_fun *fa = tu_fun_op1(a, WEFT_OP_NEG, WEFT_I32);
    weft_fun *fb = tu_fun_op1(b, WEFT_OP_NEG, WEFT_I32);
    weft_fun *ga = tu_fun_op2(a, WEFT_OP_ADD, WEFT_I32);
    weft_fun *gb = tu_fun_op2(b, WEFT_OP_ADD, WEFT_I32);
    weft_acc *xa = weft_param(a, WEFT_I32, 1);
    weft_acc *xb = weft_param(b, WEFT_I32, 1);
    weft_acc *za = weft_param(a, WEFT_I32, 0);
    weft_exp *ea = weft_i32(a, 0), *eb = weft_i32(b, 0);
    weft_fun *ida = weft_fun1(a, WEFT_DIM(1));
    weft_fun_return(ida, weft_arg(ida, 0));
    weft_fun *idb = weft_fun1(b, WEFT_DIM(1));
    weft_fun_return(idb, weft_arg(idb, 0));
    weft_fun *gen = weft_fun1(b, WEFT_DIM(1));
    weft_fun_return(gen, weft_i32(b, 7));
    *arg = "argument 2";
    switch (k) {
    case 0: *who = "weft_map"; return weft_map(fb, xa);
    case 1:
        *who = "weft_map"; /* a's function, b's array */
        return weft_map(fa, xb);
    case 2:
        *who = "weft_zipwith";
        *arg = "argument 3";
        return weft_zipwith(ga, xa, xb);
    case 3: *who = "weft_fold"; return weft_fold(ga, eb, xa);
    case 4: *who = "weft_fold1"; return weft_fold1(gb, xa);
    case 5:
        *who = "weft_scanl";
        *arg = "argument 3";
        return weft_scanl(ga, ea, xb);
    case 6: *who = "weft_scanr1"; return weft_scanr1(gb, xa);
    case 7:
        *who = "weft_permute";
        *arg = "argument 3";
        return weft_permute(ga, xa, idb, xa);
    case 8:
        *who = "weft_stencil";
        *arg = "argument 4";
        return weft_stencil(tu_fun_op2(a, WEFT_OP_ADD, WEFT_I32), (int[]){3},
                            (weft_boundary){WEFT_BOUNDARY_CLAMP, NULL}, xb);
    case 9: *who = "weft_generate"; return weft_generate(weft_shape(xa), gen);
    case 10:
        *who = "weft_backpermute";
        return weft_backpermute(weft_shape(xa), idb, xa);
    case 11: *who = "weft_apply"; return weft_apply(fb, (weft_exp *[]){ea});
    case 12: {
        *who = "weft_while";
        weft_fun *c = weft_fun1(b, WEFT_I32);
        weft_fun_return(c, weft_lt(weft_arg(c, 0), weft_i32(b, 3)));
        weft_fun *s = tu_fun_op1(a, WEFT_OP_NEG, WEFT_I32);
        return weft_while(c, s, ea);
    }
    case 13: {
        *who = "weft_awhile";
        weft_afun *c = weft_afun_create(b, WEFT_I32, 0);
        weft_afun_return(
            c, weft_unit(weft_lt(weft_the(weft_afun_arg(c)), weft_i32(b, 3))));
        weft_afun *s = weft_afun_create(a, WEFT_I32, 0);
        weft_afun_return(s, weft_afun_arg(s));
        return weft_awhile(c, s, za);
    }
    case 14: *who = "weft_acond"; return weft_acond(weft_bool(a, 1), xb, xa);
    case 15:
        *who = "weft_atuple";
        *arg = "argument 3, entry 2";
        return weft_atuple(a, 2, (weft_acc *[]){xa, xb});
    case 16:
        *who = "weft_stencil";
        *arg = "argument 3";
        return weft_stencil(tu_fun_op2(a, WEFT_OP_ADD, WEFT_I32), (int[]){3},
                            (weft_boundary){WEFT_BOUNDARY_CONSTANT, eb}, xa);
    case 17:
        *who = "weft_fold_seg";
        *arg = "argument 4";
        return weft_fold_seg(ga, ea, xa, xb);
    case 18:
        *who = "weft_transform";
        *arg = "argument 3";
        return weft_transform(weft_shape(xa), ida, fb, xa);
    case 19:
        *who = "weft_fun_return";
        {
            weft_fun *h = weft_fun1(a, WEFT_I32);
            return weft_fun_return(h, eb) == WEFT_OK ? (void *)h : NULL;
        }
    default: return NULL;
    }
}

enum { NMIX = 20 };

START_TEST(program_mismatch)
{
    tu t;
    tu_open(&t);
    for (int k = 0; k < NMIX; k++) {
        weft_program *a = NULL, *b = NULL;
        TU_OK(weft_program_create(t.ctx, &a));
        TU_OK(weft_program_create(t.ctx, &b));
        const char *who = "?", *arg = "?";
        void *r = mix_call(k, a, b, &who, &arg);
        ck_assert_msg(r == NULL, "case %d (%s) built a term", k, who);
        ck_assert_msg(weft_program_status(a) == WEFT_ERR_PROGRAM_MISMATCH &&
                          weft_program_status(b) == WEFT_ERR_PROGRAM_MISMATCH,
                      "case %d (%s): statuses %s and %s (%s)", k, who,
                      weft_status_name(weft_program_status(a)),
                      weft_status_name(weft_program_status(b)),
                      weft_program_error(a));
        HAS(weft_program_error(a), who);
        HAS(weft_program_error(a), arg);
        HAS(weft_program_error(b), who);
        HAS(weft_last_error(), who);
        /* and compiling either reports it */
        weft_acc *res = weft_param(a, WEFT_I32, 1);
        weft_executable *exe = NULL;
        TU_STATUS(WEFT_ERR_PROGRAM_MISMATCH, weft_compile(a, &res, 1, &exe));
        ck_assert_ptr_null(exe);
        weft_program_free(a);
        weft_program_free(b);
    }
    /* a program already in error keeps its first error; the other one
     * still gets the mismatch */
    weft_program *a = NULL, *b = NULL;
    TU_OK(weft_program_create(t.ctx, &a));
    TU_OK(weft_program_create(t.ctx, &b));
    weft_fun *fb = tu_fun_op1(b, WEFT_OP_NEG, WEFT_I32);
    ck_assert_ptr_null(weft_add(weft_i32(b, 1), weft_f32(b, 1)));
    ck_assert_int_eq(weft_program_status(b), WEFT_ERR_TYPE_MISMATCH);
    ck_assert_ptr_null(weft_map(fb, weft_param(a, WEFT_I32, 1)));
    ck_assert_int_eq(weft_program_status(b), WEFT_ERR_TYPE_MISMATCH);
    ck_assert_int_eq(weft_program_status(a), WEFT_ERR_PROGRAM_MISMATCH);
    HAS(weft_program_error(a), "weft_map: argument 2");
    weft_program_free(a);
    weft_program_free(b);
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * 4. the thread count
 * ---------------------------------------------------------------------- */

START_TEST(threads_checked)
{
    static const weft_backend all[] = {WEFT_BACKEND_INTERP, WEFT_BACKEND_CPU,
                                       WEFT_BACKEND_PTX};
    static const int bad[] = {100000, 4097, -1, INT32_MAX, INT32_MIN};
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
            weft_config cfg = weft_config_default();
            cfg.backend = all[b];
            cfg.flags |= WEFT_FLAG_NO_ENV;
            cfg.threads = bad[i];
            weft_context *ctx = (weft_context *)&cfg; /* must become NULL */
            TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
                      weft_context_create(&cfg, &ctx));
            ck_assert_ptr_null(ctx);
            HAS(weft_last_error(), "weft_context_create");
            HAS(weft_last_error(), "threads");
            HAS(weft_last_error(), "4096");
        }
    }
    /* the limit itself is fine (the interpreter starts no thread) */
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    cfg.threads = 4096;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_context_free(ctx);
}
END_TEST

/* ------------------------------------------------------------------------
 * 5. getters of a NULL program
 * ---------------------------------------------------------------------- */

START_TEST(null_program_getters)
{
    tu t;
    tu_open(&t);
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_program_status(NULL));
    HAS(weft_last_error(), "weft_program_status");
    HAS(weft_last_error(), "NULL");
    const char *m = weft_program_error(NULL);
    ck_assert_ptr_nonnull(m);
    HAS(m, "weft_program_error");
    HAS(weft_last_error(), "weft_program_error");
    /* a program without error: WEFT_OK and "" as before */
    ck_assert_int_eq(weft_program_status(t.p), WEFT_OK);
    ck_assert_str_eq(weft_program_error(t.p), "");
    tu_close(&t);
}
END_TEST

/* ------------------------------------------------------------------------
 * 6. bool under band, bor, bxor, min, max
 * ---------------------------------------------------------------------- */

START_TEST(bool_bits_and_order)
{
    static const weft_op ops[] = {WEFT_OP_BAND, WEFT_OP_BOR, WEFT_OP_BXOR,
                                  WEFT_OP_MIN, WEFT_OP_MAX};
    /* over (x, y) = (F,F), (F,T), (T,F), (T,T) */
    static const int64_t want[5][4] = {
        {0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}, {0, 0, 0, 1}, {0, 1, 1, 1},
    };
    for (int b = 0; b < NBACKENDS; b++) {
        tu t;
        tu_open_backend(&t, backends[b]);
        weft_array *xs =
            tu_arr_i(t.ctx, WEFT_BOOL, 1, TU_SH(4), TU_I(0, 0, 1, 1));
        weft_array *ys =
            tu_arr_i(t.ctx, WEFT_BOOL, 1, TU_SH(4), TU_I(0, 1, 0, 1));
        for (int o = 0; o < 5; o++) {
            /* computed: zipWith op xs ys */
            tu_reset(&t);
            weft_program *p = t.p;
            weft_acc *r = weft_zipwith(tu_fun_op2(p, ops[o], WEFT_BOOL),
                                       weft_param(p, WEFT_BOOL, 1),
                                       weft_param(p, WEFT_BOOL, 1));
            TU_PROGRAM_OK(p);
            ck_assert_int_eq(weft_acc_type(r), WEFT_BOOL);
            weft_array *out = NULL;
            TU_OK(weft_run1(p, &r, 1, (weft_array *[]){xs, ys}, 2, &out, 1));
            TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(4), want[o]);
            weft_array_release(out);
            /* folded: op of two constants, and of a constant and x */
            for (int i = 0; i < 4; i++) {
                tu_reset(&t);
                p = t.p;
                int64_t v =
                    tu_eval_i(p, weft_prim2(ops[o], weft_bool(p, i >> 1),
                                            weft_bool(p, i & 1)));
                ck_assert_msg(v == want[o][i], "%s %s constants %d: %lld",
                              tu_backend_name(backends[b]),
                              weft_op_name(ops[o]), i, (long long)v);
            }
            for (int c = 0; c < 2; c++) {
                tu_reset(&t);
                p = t.p;
                weft_fun *f = weft_fun1(p, WEFT_BOOL);
                weft_fun_return(
                    f, weft_prim2(ops[o], weft_bool(p, c), weft_arg(f, 0)));
                r = weft_map(f, weft_param(p, WEFT_BOOL, 1));
                TU_OK(weft_run1(p, &r, 1, &ys, 1, &out, 1));
                /* x = c for every y: rows 0..1 (c = 0) or 2..3 (c = 1) */
                TU_CHECK_I(t.ctx, out, 0, 1, TU_SH(4),
                           TU_I(want[o][2 * c], want[o][2 * c + 1],
                                want[o][2 * c], want[o][2 * c + 1]));
                weft_array_release(out);
            }
        }
        /* reductions and a permute over bool: all, any, parity, and a
         * per-target or of ys = [F, T, F, T] into [F, F] */
        tu_reset(&t);
        weft_program *p = t.p;
        weft_acc *in = weft_param(p, WEFT_BOOL, 1);
        weft_acc *all, *any, *par;
        weft_fun *half;
        all = weft_fold_all(tu_fun_op2(p, WEFT_OP_MIN, WEFT_BOOL),
                            weft_bool(p, 1), in);
        any = weft_fold_all(tu_fun_op2(p, WEFT_OP_BOR, WEFT_BOOL),
                            weft_bool(p, 0), in);
        par = weft_fold_all(tu_fun_op2(p, WEFT_OP_BXOR, WEFT_BOOL),
                            weft_bool(p, 0), in);
        half = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(half,
                        weft_index1(weft_quot(weft_get(weft_arg(half, 0), 0),
                                              weft_i64(p, 2))));
        weft_fun *fls = weft_fun1(p, WEFT_DIM(1));
        weft_fun_return(fls, weft_bool(p, 0));
        weft_acc *per = weft_permute(
            tu_fun_op2(p, WEFT_OP_MAX, WEFT_BOOL),
            weft_generate(weft_index1(weft_i64(p, 2)), fls), half, in);
        TU_PROGRAM_OK(p);
        weft_acc *res[4] = {all, any, par, per};
        weft_array *outs[4] = {NULL};
        TU_OK(weft_run1(p, res, 4, &ys, 1, outs, 4));
        TU_CHECK_I(t.ctx, outs[0], 0, 0, NULL, TU_I(0));
        TU_CHECK_I(t.ctx, outs[1], 0, 0, NULL, TU_I(1));
        TU_CHECK_I(t.ctx, outs[2], 0, 0, NULL, TU_I(0));
        TU_CHECK_I(t.ctx, outs[3], 0, 1, TU_SH(2), TU_I(1, 1));
        tu_release_all(outs, 4);
        /* still refused: arithmetic on bool */
        tu_reset(&t);
        p = t.p;
        ck_assert_ptr_null(weft_add(weft_bool(p, 1), weft_bool(p, 0)));
        ck_assert_int_eq(weft_program_status(p), WEFT_ERR_TYPE_MISMATCH);
        weft_array_release(xs);
        weft_array_release(ys);
        tu_close(&t);
    }
}
END_TEST

static Suite *reliability_suite(void)
{
    Suite *s = suite_create("reliability");
    TCase *t = tcase_create("reliability");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, permute_ignore_rank0);
    tcase_add_test(t, fifo_cache_entry);
    tcase_add_test(t, program_mismatch);
    tcase_add_test(t, threads_checked);
    tcase_add_test(t, null_program_getters);
    tcase_add_test(t, bool_bits_and_order);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(reliability_suite)
