/*
 * tests/test_ptx_load.c: how the PTX backend loads its kernels and what
 * it keeps on the device between runs.
 *
 *   disk_round_trip   a program compiled in one context leaves its
 *                     kernels' PTX in the disk cache (<key>.ptx files
 *                     holding .entry points, no cubins: the driver
 *                     compiles PTX as a whole program, runtime-gpu/cuda.c
 *                     "Modules"); a second context on the same cache
 *                     compiles nothing, loads every kernel from disk, and
 *                     gives the same results.
 *   fold_ticket       folds of one row (the last block finishes them and
 *                     puts their ticket word back to zero, so no run
 *                     zeroes it) run many times in a row, two different
 *                     kernels in turn and at sizes that give different
 *                     grids: every sum is exact.
 *   error_word        a read out of bounds in checked mode fails with
 *                     WEFT_ERR_OUT_OF_BOUNDS, and the next run of the same
 *                     kernel in bounds succeeds (the error word is put back
 *                     to zero after a failure), several times over; its
 *                     small result comes to the host with the error word,
 *                     so reading it downloads nothing more.
 *   repeat_after_jits a kernel met again after JITS_MAX (4) other
 *                     kernels of the same compile, when the thread that
 *                     built its first copy is done (k-means' third unit
 *                     kernel): it takes that copy's functions, and runs
 *                     (it was left with no entry points and the run
 *                     crashed in rt_run on a NULL function).
 *
 * Integer sums are compared exactly (modulo 2^64, as i64 addition wraps).  Runs only where a CUDA driver and a
 * GPU are present; elsewhere main returns 77 (a CTest skip).
 */
#define DT_BACKEND WEFT_BACKEND_PTX
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "tu.h"

static weft_context *open_ptx_flags(const char *cache_dir, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_PTX;
    cfg.flags |= WEFT_FLAG_NO_ENV | flags;
    cfg.cache_dir = cache_dir;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

static weft_context *open_ptx(const char *cache_dir)
{
    return open_ptx_flags(cache_dir, 0);
}

static void temp_dir(char *dir, size_t n)
{
    snprintf(dir, n, "/tmp/weft-ptx-load-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* i64 vector 0, 1, ..., n - 1 (times k). */
static weft_array *iota_i64(weft_context *ctx, int64_t n, int64_t k)
{
    weft_array *a = NULL;
    TU_OK(weft_array_create(ctx, WEFT_I64, 1, &n, &a));
    int64_t *x = weft_array_data(a, 0);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < n; i++) {
        x[i] = i * k;
    }
    return a;
}

/* Run tu_dot_map(ctx, false) on x = 0..n-1, y = 2 x and check both
 * results. */
static void run_dot_and_map(weft_context *ctx, weft_executable *exe, int64_t n)
{
    weft_array *in[2] = {iota_i64(ctx, n, 1), iota_i64(ctx, n, 2)};
    weft_array *out[2] = {NULL, NULL};
    TU_OK(weft_run(exe, in, 2, out, 2));
    int64_t want = 0;
    for (int64_t i = 0; i < n; i++) {
        want += 2 * i * i;
    }
    const int64_t *s = weft_array_data(out[0], 0);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s[0], want);
    const int64_t *m = weft_array_data(out[1], 0);
    ck_assert_ptr_nonnull(m);
    for (int64_t i = 0; i < n; i++) {
        if (m[i] != 3 * i + 1) {
            ck_abort_msg("map: element %lld is %lld", (long long)i,
                         (long long)m[i]);
        }
    }
    tu_release_all(out, 2);
    tu_release_all(in, 2);
}

/* The names in dir ending in ext; *entry (if not NULL) set when every
 * such file holds the text ".entry". */
static int count_ext(const char *dir, const char *ext, bool *entry)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    size_t el = strlen(ext);
    if (entry) {
        *entry = true;
    }
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= el || strcmp(e->d_name + len - el, ext) != 0) {
            continue;
        }
        n++;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        static char buf[1 << 20];
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        bool has = false;
        for (size_t i = 0; i + 6 <= got && !has; i++) {
            has = memcmp(buf + i, ".entry", 6) == 0;
        }
        if (entry) {
            *entry &= has;
        }
    }
    closedir(d);
    return n;
}

START_TEST(disk_round_trip)
{
    char dir[64];
    temp_dir(dir, sizeof dir);
    weft_context *a = open_ptx(dir);
    weft_executable *ea = tu_dot_map(a, false);
    run_dot_and_map(a, ea, 100000);
    TU_OK(weft_context_wait_optimised(a)); /* tier-ups write the cache */
    weft_stats sa;
    weft_context_stats(a, &sa);
    ck_assert_uint_eq(sa.kernels_compiled, 2);
    ck_assert_uint_eq(sa.kernels_loaded, 0);
    ck_assert(sa.driver_link_ms > 0);
    bool entry = false;
    ck_assert_int_eq(count_ext(dir, ".ptx", &entry), 2);
    ck_assert(entry);
    ck_assert_int_eq(count_ext(dir, ".cubin", NULL), 0);

    weft_context *b = open_ptx(dir);
    weft_executable *eb = tu_dot_map(b, false);
    weft_stats sb;
    weft_context_stats(b, &sb);
    ck_assert_uint_eq(sb.kernels_compiled, 0);
    ck_assert_uint_eq(sb.kernels_loaded, 2);
    ck_assert(sb.ptx_ms == 0);        /* no PTX emitted */
    ck_assert(sb.driver_link_ms > 0); /* the driver loaded it */
    run_dot_and_map(b, eb, 100000);
    run_dot_and_map(b, eb, 777);
    weft_executable_free(eb);
    weft_context_free(b);
    weft_executable_free(ea);
    weft_context_free(a);
    tu_remove_dir(dir);
}
END_TEST

/* fold_all (+) 0 over an i64 param, or of its squares. */
static weft_executable *sum_exe(weft_context *ctx, bool squares)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_I64, 1);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64);
    if (squares) {
        weft_fun *sq = weft_fun1(p, WEFT_I64);
        weft_fun_return(sq, weft_mul(weft_arg(sq, 0), weft_arg(sq, 0)));
        x = weft_map(sq, x);
    }
    weft_acc *r = weft_fold_all(add, weft_i64(p, 0), x);
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_program_free(p);
    return exe;
}

START_TEST(fold_ticket)
{
    weft_context *ctx = open_ptx(NULL);
    weft_executable *e[2] = {sum_exe(ctx, false), sum_exe(ctx, true)};
    /* sizes from one block's worth to many blocks with several pieces */
    static const int64_t sizes[] = {1,       1000,  33000, 1 << 20,
                                    5000003, 65536, 2,     3000000};
    for (int round = 0; round < 3; round++) {
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            int64_t n = sizes[si];
            weft_array *x = iota_i64(ctx, n, 1);
            for (int k = 0; k < 2; k++) {
                weft_array *out = NULL;
                TU_OK(weft_run(e[k], &x, 1, &out, 1));
                /* i64 addition wraps modulo 2^64 in any order */
                uint64_t want = 0;
                for (int64_t i = 0; i < n; i++) {
                    want += k ? (uint64_t)i * (uint64_t)i : (uint64_t)i;
                }
                const int64_t *s = weft_array_data(out, 0);
                ck_assert_ptr_nonnull(s);
                ck_assert_msg((uint64_t)s[0] == want,
                              "round %d, n %lld, %s: %lld, want %lld", round,
                              (long long)n, k ? "squares" : "sum",
                              (long long)s[0], (long long)want);
                weft_array_release(out);
            }
            weft_array_release(x);
        }
    }
    weft_executable_free(e[0]);
    weft_executable_free(e[1]);
    weft_context_free(ctx);
}
END_TEST

START_TEST(error_word)
{
    /* checked mode: a !! i out of bounds is an error (else it reads 0) */
    weft_context *ctx = open_ptx_flags(NULL, WEFT_FLAG_CHECKED);
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *is = weft_param(p, WEFT_I64, 1);
    weft_acc *ys = weft_param(p, WEFT_I64, 1);
    weft_fun *g = weft_fun1(p, WEFT_I64);
    weft_fun_return(g, weft_at_linear(ys, weft_arg(g, 0)));
    weft_acc *r = weft_map(g, is);
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, &r, 1, &exe));
    weft_program_free(p);
    weft_array *y = iota_i64(ctx, 3, 10);
    for (int round = 0; round < 4; round++) {
        weft_array *bad = tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(0, 1, 5));
        weft_array *good = tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(2, 0, 1));
        weft_array *in[2] = {bad, y};
        weft_array *out = NULL;
        TU_STATUS(WEFT_ERR_OUT_OF_BOUNDS, weft_run(exe, in, 2, &out, 1));
        ck_assert_ptr_null(out);
        in[0] = good;
        TU_OK(weft_run(exe, in, 2, &out, 1));
        /* the small result came with the error word: reading it moves
         * nothing more */
        weft_stats s0, s1;
        weft_context_stats(ctx, &s0);
        TU_CHECK_I(ctx, out, 0, 1, TU_SH(3), TU_I(20, 0, 10));
        weft_context_stats(ctx, &s1);
        ck_assert_uint_eq(s1.bytes_downloaded, s0.bytes_downloaded);
        weft_array_release(out);
        TU_OK(weft_run(exe, in, 2, &out, 1)); /* clean twice over */
        TU_CHECK_I(ctx, out, 0, 1, TU_SH(3), TU_I(20, 0, 10));
        weft_array_release(out);
        weft_array_release(good);
        weft_array_release(bad);
    }
    weft_array_release(y);
    weft_executable_free(exe);
    weft_context_free(ctx);
}
END_TEST

/* The map \x -> x + 1 on x and on y, five kernels of other code
 * between them (in the plan's order either way round). */
START_TEST(repeat_after_jits)
{
    char dir[256];
    temp_dir(dir, sizeof dir); /* an empty cache: every kernel built */
    weft_context *ctx = open_ptx(dir);
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_I64, 1);
    weft_acc *y = weft_param(p, WEFT_I64, 1);
    weft_fun *f[7];
    for (int i = 0; i < 7; i++) {
        f[i] = weft_fun1(p, WEFT_I64);
    }
    weft_exp *a[7];
    for (int i = 0; i < 7; i++) {
        a[i] = weft_arg(f[i], 0);
    }
    weft_fun_return(f[0], weft_add(a[0], weft_i64(p, 1)));
    weft_fun_return(f[1], weft_mul(a[1], a[1]));
    weft_fun_return(f[2], weft_mul(weft_mul(a[2], a[2]), a[2]));
    weft_fun_return(f[3], weft_sub(weft_mul(a[3], a[3]), a[3]));
    weft_fun_return(f[4], weft_mul(weft_mul(a[4], a[4]), weft_mul(a[4], a[4])));
    weft_fun_return(f[5], weft_mul(weft_add(a[5], a[5]), a[5]));
    weft_fun_return(f[6], weft_add(a[6], weft_i64(p, 1)));
    weft_acc *r[7];
    for (int i = 0; i < 7; i++) {
        r[i] = weft_map(f[i], i < 6 ? x : y);
    }
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, r, 7, &exe));
    weft_program_free(p);
    weft_array *in[2] = {
        tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(1, 2, 3)),
        tu_arr_i(ctx, WEFT_I64, 1, TU_SH(3), TU_I(10, 20, 30))};
    for (int round = 0; round < 2; round++) {
        weft_array *out[7] = {NULL};
        TU_OK(weft_run(exe, in, 2, out, 7));
        TU_CHECK_I(ctx, out[0], 0, 1, TU_SH(3), TU_I(2, 3, 4));
        TU_CHECK_I(ctx, out[1], 0, 1, TU_SH(3), TU_I(1, 4, 9));
        TU_CHECK_I(ctx, out[2], 0, 1, TU_SH(3), TU_I(1, 8, 27));
        TU_CHECK_I(ctx, out[3], 0, 1, TU_SH(3), TU_I(0, 2, 6));
        TU_CHECK_I(ctx, out[4], 0, 1, TU_SH(3), TU_I(1, 16, 81));
        TU_CHECK_I(ctx, out[5], 0, 1, TU_SH(3), TU_I(2, 8, 18));
        TU_CHECK_I(ctx, out[6], 0, 1, TU_SH(3), TU_I(11, 21, 31));
        for (int i = 0; i < 7; i++) {
            weft_array_release(out[i]);
        }
    }
    weft_array_release(in[0]);
    weft_array_release(in[1]);
    weft_executable_free(exe);
    weft_context_free(ctx);
    tu_remove_dir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ptx_load");
    TCase *tc = tcase_create("load");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, disk_round_trip);
    tcase_add_test(tc, fold_ticket);
    tcase_add_test(tc, error_word);
    tcase_add_test(tc, repeat_after_jits);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(suite)
