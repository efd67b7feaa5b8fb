/*
 * tests/test_cpu_cache.c: the CPU backend's kernel caches, seen from outside.
 *
 * Disk.  A second process running the same program compiles nothing: every
 * kernel comes from the disk cache.  The test makes a private cache
 * directory (mkdtemp) and runs a small program (dotp, an inclusive scan and
 * a map, all on integers so that results are exact) in a child process,
 * /proc/self/exe started again with the argument "child", which writes its
 * context's counters to a file; the parent reads them:
 *
 *   first child, empty directory   compiled K > 0, loaded 0
 *   second child                   compiled 0, loaded K
 *   every entry damaged (some truncated, the others with bytes flipped
 *   inside the object) and a third child:
 *                                  compiled K, loaded 0, results right
 *   fourth child                   compiled 0, loaded K (rewritten)
 *
 * Each child checks its results against plain C loops and exits nonzero if
 * they differ, so a damaged object that was trusted would show either as a
 * wrong result, a crash, or as a load in the counters.
 *
 * Memory.  Compiling the same program twice in one context compiles once:
 * the second compilation finds every kernel in memory (kernels_reused).
 *
 * Fast math.  WEFT_FLAG_FAST_MATH (or $WEFT_FAST_MATH=1) is part of every
 * key: a fast context compiles what a default one cached, and loads what
 * a fast one cached.
 *
 * The directory is removed at the end of each test.
 */
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tu.h"

extern char **environ;

enum { N = 100003 };

/* The program: dotp over i64, scanl1 (+) over i32, map (x * 3 - 1) over
 * i32.  Three results from three kernels (or fewer when fused). */
static void build(weft_program *p, weft_acc **res)
{
    weft_acc *xs = weft_param(p, WEFT_I64, 1), *ys = weft_param(p, WEFT_I64, 1);
    weft_acc *v = weft_param(p, WEFT_I32, 1);
    weft_fun *mul = weft_fun2(p, WEFT_I64, WEFT_I64);
    weft_fun_return(mul, weft_mul(weft_arg(mul, 0), weft_arg(mul, 1)));
    weft_fun *add = weft_fun2(p, WEFT_I64, WEFT_I64);
    weft_fun_return(add, weft_add(weft_arg(add, 0), weft_arg(add, 1)));
    res[0] = weft_fold(add, weft_i64(p, 0), weft_zipwith(mul, xs, ys));
    weft_fun *add32 = weft_fun2(p, WEFT_I32, WEFT_I32);
    weft_fun_return(add32, weft_add(weft_arg(add32, 0), weft_arg(add32, 1)));
    res[1] = weft_scanl1(add32, v);
    weft_fun *f = weft_fun1(p, WEFT_I32);
    weft_fun_return(
        f, weft_sub(weft_mul(weft_arg(f, 0), weft_i32(p, 3)), weft_i32(p, 1)));
    res[2] = weft_map(f, v);
}

static weft_context *open_cpu_flags(const char *cache_dir, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 2;
    cfg.flags = flags;
    cfg.cache_dir = cache_dir;
    weft_context *ctx = NULL;
    if (weft_context_create(&cfg, &ctx) != WEFT_OK) {
        return NULL;
    }
    return ctx;
}

static weft_context *open_cpu(const char *cache_dir)
{
    return open_cpu_flags(cache_dir, WEFT_FLAG_NO_ENV);
}

/* Run the program once in ctx and check its results; returns a message or
 * NULL. */
static const char *run_and_check(weft_context *ctx)
{
    static char msg[256];
    const char *err = NULL;
    weft_program *p = NULL;
    weft_executable *exe = NULL;
    weft_array *in[3] = {NULL}, *out[3] = {NULL};
    int64_t *x = malloc(sizeof *x * N), *y = malloc(sizeof *y * N);
    int32_t *v = malloc(sizeof *v * N);
    if (!x || !y || !v) {
        err = "out of memory";
        goto done;
    }
    int64_t dot = 0;
    for (int64_t i = 0; i < N; i++) {
        x[i] = i % 1000 - 500;
        y[i] = (i * 7) % 13 - 6;
        v[i] = (int32_t)((i * 31) % 201 - 100);
        dot += x[i] * y[i];
    }
    if (weft_program_create(ctx, &p) != WEFT_OK) {
        err = weft_last_error();
        goto done;
    }
    weft_acc *res[3];
    build(p, res);
    int64_t n = N;
    if (weft_compile(p, res, 3, &exe) != WEFT_OK ||
        weft_array_from_host(ctx, WEFT_I64, 1, &n, (const void *[]){x},
                             &in[0]) != WEFT_OK ||
        weft_array_from_host(ctx, WEFT_I64, 1, &n, (const void *[]){y},
                             &in[1]) != WEFT_OK ||
        weft_array_from_host(ctx, WEFT_I32, 1, &n, (const void *[]){v},
                             &in[2]) != WEFT_OK ||
        weft_run(exe, in, 3, out, 3) != WEFT_OK) {
        snprintf(msg, sizeof msg, "%s", weft_last_error());
        err = msg;
        goto done;
    }
    const int64_t *d = weft_array_data(out[0], 0);
    const int32_t *s = weft_array_data(out[1], 0);
    const int32_t *m = weft_array_data(out[2], 0);
    if (!d || *d != dot) {
        err = "dotp differs";
        goto done;
    }
    int32_t acc = 0;
    for (int64_t i = 0; i < N; i++) {
        acc += v[i];
        if (s[i] != acc) {
            snprintf(msg, sizeof msg, "scan element %lld differs",
                     (long long)i);
            err = msg;
            goto done;
        }
        if (m[i] != v[i] * 3 - 1) {
            snprintf(msg, sizeof msg, "map element %lld differs", (long long)i);
            err = msg;
            goto done;
        }
    }
done:
    for (int i = 0; i < 3; i++) {
        weft_array_release(in[i]);
        weft_array_release(out[i]);
    }
    weft_executable_free(exe);
    weft_program_free(p);
    free(x);
    free(y);
    free(v);
    return err;
}

/* The child: run the program with the cache in dir, write "compiled loaded
 * reused" to the file `stats`.  Exit status 0 when all went well. */
static int child_main(const char *dir, const char *stats)
{
    weft_context *ctx = open_cpu(dir);
    if (!ctx) {
        fprintf(stderr, "child: %s\n", weft_last_error());
        return 2;
    }
    const char *err = run_and_check(ctx);
    weft_stats st;
    /* the optimised kernels to the disk cache before the process ends */
    weft_context_wait_optimised(ctx);
    weft_context_stats(ctx, &st);
    weft_context_free(ctx);
    if (err) {
        fprintf(stderr, "child: %s\n", err);
        return 3;
    }
    FILE *f = fopen(stats, "w");
    if (!f) {
        return 4;
    }
    fprintf(f, "%llu %llu %llu\n", (unsigned long long)st.kernels_compiled,
            (unsigned long long)st.kernels_loaded,
            (unsigned long long)st.kernels_reused);
    return fclose(f) == 0 ? 0 : 4;
}

/* ------------------------------------------------------------------------
 * The parent's helpers
 * ---------------------------------------------------------------------- */

typedef struct counts {
    unsigned long long compiled, loaded, reused;
} counts;

/* Run the child on dir; fail the test unless it exits 0; its counters. */
static counts spawn_child(const char *dir)
{
    char stats[4200];
    snprintf(stats, sizeof stats, "%s.stats", dir);
    char *argv[] = {"test_cpu_cache", "child", (char *)dir, stats, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    ck_assert_msg(rc == 0, "posix_spawn: %s", strerror(rc));
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child failed (status %#x)", status);
    counts c = {0};
    FILE *f = fopen(stats, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(
        fscanf(f, "%llu %llu %llu", &c.compiled, &c.loaded, &c.reused), 3);
    fclose(f);
    unlink(stats);
    return c;
}

/* Paths of the regular files in dir ending in `suffix` (NULL: all), at
 * most cap of them, each malloc'd; returns how many. */
static int list_files(const char *dir, const char *suffix, char **out, int cap)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        size_t l = strlen(e->d_name), ls = suffix ? strlen(suffix) : 0;
        if (suffix && (l < ls || strcmp(e->d_name + l - ls, suffix) != 0)) {
            continue;
        }
        if (n < cap) {
            size_t m = strlen(dir) + l + 2;
            out[n] = malloc(m);
            ck_assert_ptr_nonnull(out[n]);
            snprintf(out[n], m, "%s/%s", dir, e->d_name);
        }
        n++;
    }
    closedir(d);
    return n < cap ? n : cap;
}

/* Damage one cache entry: truncate it to half (truncate_it) or flip bytes
 * in the middle of the object and near its end. */
static void damage(const char *path, bool truncate_it)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(st.st_size > 64);
    if (truncate_it) {
        ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
        return;
    }
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    off_t at[3] = {st.st_size / 2, st.st_size - 9, 140};
    for (int k = 0; k < 3; k++) {
        unsigned char c;
        ck_assert_int_eq(pread(fd, &c, 1, at[k]), 1);
        c ^= 0x5a;
        ck_assert_int_eq(pwrite(fd, &c, 1, at[k]), 1);
    }
    close(fd);
}

/* ------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------- */

START_TEST(second_process_compiles_nothing)
{
    char dir[] = "/tmp/weft-cache-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));

    counts a = spawn_child(dir);
    ck_assert_msg(a.compiled > 0 && a.loaded == 0,
                  "first run: compiled %llu loaded %llu", a.compiled, a.loaded);
    char *files[64];
    int n = list_files(dir, ".o", files, 64);
    ck_assert_msg((unsigned long long)n == a.compiled,
                  "%d cache entries for %llu kernels", n, a.compiled);

    counts b = spawn_child(dir);
    ck_assert_msg(b.compiled == 0 && b.loaded == a.compiled,
                  "second run: compiled %llu loaded %llu (first compiled "
                  "%llu)",
                  b.compiled, b.loaded, a.compiled);

    /* damage every entry: the odd ones truncated, the even ones with
     * bytes flipped */
    for (int i = 0; i < n; i++) {
        damage(files[i], i % 2 == 1);
        free(files[i]);
    }
    counts c = spawn_child(dir);
    ck_assert_msg(c.compiled == a.compiled && c.loaded == 0,
                  "after damage: compiled %llu loaded %llu, expected %llu "
                  "and 0",
                  c.compiled, c.loaded, a.compiled);

    /* the recompiled kernels were written back */
    counts e = spawn_child(dir);
    ck_assert_msg(e.compiled == 0 && e.loaded == a.compiled,
                  "after rewrite: compiled %llu loaded %llu", e.compiled,
                  e.loaded);
    tu_remove_dir(dir);
}
END_TEST

START_TEST(one_damaged_entry)
{
    /* only one entry damaged (bytes flipped inside the ELF payload): that
     * kernel alone is compiled again */
    char dir[] = "/tmp/weft-cache-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    counts a = spawn_child(dir);
    char *files[64];
    int n = list_files(dir, ".o", files, 64);
    ck_assert_int_gt(n, 0);
    damage(files[0], false);
    for (int i = 0; i < n; i++) {
        free(files[i]);
    }
    counts b = spawn_child(dir);
    ck_assert_msg(b.compiled == 1 && b.loaded == a.compiled - 1,
                  "compiled %llu loaded %llu of %llu", b.compiled, b.loaded,
                  a.compiled);
    tu_remove_dir(dir);
}
END_TEST

START_TEST(memory_cache_compiles_once)
{
    char dir[] = "/tmp/weft-cache-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_context *ctx = open_cpu(dir);
    ck_assert_msg(ctx != NULL, "%s", weft_last_error());
    const char *err = run_and_check(ctx);
    ck_assert_msg(err == NULL, "%s", err);
    weft_stats s1;
    TU_OK(weft_context_stats(ctx, &s1));
    ck_assert_uint_gt(s1.kernels_compiled, 0);
    ck_assert_uint_eq(s1.kernels_reused, 0);
    /* the same program again, built and compiled anew in this context */
    err = run_and_check(ctx);
    ck_assert_msg(err == NULL, "%s", err);
    weft_stats s2;
    TU_OK(weft_context_stats(ctx, &s2));
    ck_assert_uint_eq(s2.kernels_compiled, s1.kernels_compiled);
    ck_assert_uint_eq(s2.kernels_loaded, 0);
    ck_assert_uint_eq(s2.kernels_reused, s1.kernels_compiled);
    weft_context_free(ctx);
    tu_remove_dir(dir);
}
END_TEST

/* Fast math is part of every kernel's key: a context with
 * WEFT_FLAG_FAST_MATH finds nothing that a default one wrote to the disk
 * cache, and $WEFT_FAST_MATH (1 sets the flag, 0 clears it) selects the
 * entries accordingly; other values are refused. */
static void run_counting(const char *dir, unsigned flags, weft_stats *st)
{
    weft_context *ctx = open_cpu_flags(dir, flags);
    ck_assert_msg(ctx != NULL, "%s", weft_last_error());
    const char *err = run_and_check(ctx);
    ck_assert_msg(err == NULL, "%s", err);
    TU_OK(weft_context_wait_optimised(ctx)); /* all in the disk cache */
    TU_OK(weft_context_stats(ctx, st));
    weft_context_free(ctx);
}

START_TEST(fast_math_keys)
{
    char dir[] = "/tmp/weft-cache-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_stats a, b, c, d;
    run_counting(dir, WEFT_FLAG_NO_ENV, &a);
    ck_assert_uint_gt(a.kernels_compiled, 0);
    run_counting(dir, WEFT_FLAG_NO_ENV | WEFT_FLAG_FAST_MATH, &b);
    ck_assert_uint_eq(b.kernels_compiled, a.kernels_compiled);
    ck_assert_uint_eq(b.kernels_loaded, 0);
    /* the contexts below read the environment (WEFT_BACKEND=ptx, as the
     * GPU machine runs the suite, would make them PTX contexts) */
    static const char *const names[] = {"WEFT_FAST_MATH", "WEFT_BACKEND"};
    char *old[2];
    tu_env_aside(names, 2, old);
    setenv("WEFT_FAST_MATH", "1", 1);
    run_counting(dir, 0, &c);
    ck_assert_uint_eq(c.kernels_compiled, 0);
    ck_assert_uint_eq(c.kernels_loaded, a.kernels_compiled);
    setenv("WEFT_FAST_MATH", "0", 1);
    run_counting(dir, WEFT_FLAG_FAST_MATH, &d);
    ck_assert_uint_eq(d.kernels_compiled, 0);
    ck_assert_uint_eq(d.kernels_loaded, a.kernels_compiled);
    setenv("WEFT_FAST_MATH", "yes", 1);
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    weft_context *ctx = NULL;
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&cfg, &ctx));
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(weft_last_error(), "WEFT_FAST_MATH") != NULL, "%s",
                  weft_last_error());
    tu_env_restore(names, 2, old);
    tu_remove_dir(dir);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("cpu_cache");
    TCase *t = tcase_create("cache");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, second_process_compiles_nothing);
    tcase_add_test(t, one_damaged_entry);
    tcase_add_test(t, memory_cache_compiles_once);
    tcase_add_test(t, fast_math_keys);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "child") == 0) {
        return child_main(argv[2], argv[3]);
    }
    SRunner *sr = srunner_create(cache_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
