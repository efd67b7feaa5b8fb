/*
 * tests/test_info.c: the ABI that bindings rely on, and introspection.
 *
 * ABI (docs/abi.md).  A weft_config carries its size and a magic number:
 *   - a configuration of the first sized layout (a header older than
 *     cache_max) makes a context, and the newer field takes its default
 *     even when the caller's memory past its struct holds garbage;
 *   - a wrong magic (a hand-zeroed struct, garbage) or a size no weft.h
 *     could have is WEFT_ERR_INVALID_ARGUMENT;
 *   - a larger size (a newer header) is accepted when the bytes past this
 *     weft's struct are zero, refused (naming the size) when not;
 *   - weft_context_stats_sized / weft_device_info_sized /
 *     weft_cache_info_sized write min(size, sizeof) bytes and zero the
 *     rest of a larger struct, never a byte past `size`.
 *
 * Introspection.  weft_version agrees with WEFT_VERSION_* and with
 * project(VERSION) in CMakeLists.txt (passed in as WEFT_PROJECT_VERSION);
 * weft_backend_available agrees with weft_context_create on every backend
 * (so the test holds with or without a GPU); the device list is empty with
 * WEFT_ERR_BACKEND_UNAVAILABLE where ptx is unavailable, and plausible
 * where it is; weft_libdevice_path follows $WEFT_LIBDEVICE.
 *
 * The disk cache's bound.  $WEFT_CACHE_MAX is parsed with its suffixes
 * (and refused when malformed) by weft_cache_info and weft_context_create
 * alike; a context whose cache_max is below the size of two entries keeps
 * only the newer one after compiling a second program (the oldest entry
 * goes first), as weft_cache_info then counts.
 */
#include <dirent.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tu.h"

/* The first sized layout of weft_config: every field up to timeout_ms
 * (lib/context.c CONFIG_MIN_SIZE). */
#define OLD_SIZE (offsetof(weft_config, timeout_ms) + sizeof(double))

/* The variables these tests set; set aside around each test that reads
 * the environment. */
static const char *const env_names[] = {"WEFT_CACHE_DIR", "WEFT_CACHE_MAX",
                                        "WEFT_LIBDEVICE", "WEFT_BACKEND"};
enum { NENV = sizeof env_names / sizeof env_names[0] };

static char *make_tmpdir(void)
{
    char *t = strdup("/tmp/weft-info-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t));
    return t;
}

/* ---- the configuration's size and magic ---------------------------------- */

START_TEST(config_default_is_sized)
{
    weft_config c = weft_config_default();
    ck_assert_uint_eq(c.size, sizeof(weft_config));
    ck_assert_uint_eq(c.magic, WEFT_CONFIG_MAGIC);
    ck_assert_uint_eq(c.cache_max, 0);
    ck_assert_int_eq(c.threads, 0);
    ck_assert_ptr_null(c.cache_dir);
    weft_config d;
    memset(&d, 0x5a, sizeof d);
    TU_OK(weft_config_init(&d));
    ck_assert_int_eq(memcmp(&c, &d, sizeof c), 0);
}
END_TEST

START_TEST(config_init_errors)
{
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_config_init(NULL));
    weft_config c;
    memset(&c, 0x5a, sizeof c);
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_config_init_sized(&c, 8));
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
              weft_config_init_sized(&c, OLD_SIZE - 8));
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
              weft_config_init_sized(&c, OLD_SIZE + 1));
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_config_init_sized(&c, 8192));
    ck_assert_msg(strstr(weft_last_error(), "8192") != NULL, "%s",
                  weft_last_error());
    /* Nothing was written. */
    const unsigned char *b = (const unsigned char *)&c;
    for (size_t i = 0; i < sizeof c; i++) {
        ck_assert_uint_eq(b[i], 0x5a);
    }
}
END_TEST

/* A configuration from a header that ended at timeout_ms: its size is
 * the old one, and whatever follows it in the caller's memory is not
 * read (here garbage where cache_max would be). */
START_TEST(config_older_layout)
{
    weft_config c;
    memset(&c, 0xab, sizeof c);
    TU_OK(weft_config_init_sized(&c, OLD_SIZE));
    ck_assert_uint_eq(c.size, OLD_SIZE);
    ck_assert_uint_eq(c.magic, WEFT_CONFIG_MAGIC);
    const unsigned char *b = (const unsigned char *)&c;
    for (size_t i = OLD_SIZE; i < sizeof c; i++) {
        ck_assert_uint_eq(b[i], 0xab); /* past the old struct: untouched */
    }
    c.backend = WEFT_BACKEND_INTERP;
    c.threads = 2;
    c.flags = WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&c, &ctx));
    ck_assert_int_eq(weft_context_backend(ctx), WEFT_BACKEND_INTERP);
    weft_context_free(ctx);
    weft_cache_info ci;
    TU_OK(weft_cache_info_get(&c, &ci));
    ck_assert_uint_eq(ci.max_bytes, (uint64_t)256 << 20); /* the default */
}
END_TEST

START_TEST(config_bad_magic)
{
    weft_context *ctx = (weft_context *)&ctx;
    weft_config c = weft_config_default();
    c.magic = 0x12345678;
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&c, &ctx));
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(weft_last_error(), "weft_config_init") != NULL, "%s",
                  weft_last_error());
    /* A struct zeroed by hand has no magic either. */
    memset(&c, 0, sizeof c);
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&c, &ctx));
    weft_cache_info ci;
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_cache_info_get(&c, &ci));
}
END_TEST

START_TEST(config_bad_size)
{
    weft_context *ctx = NULL;
    const uint32_t sizes[] = {0, 8, (uint32_t)OLD_SIZE - 8,
                              (uint32_t)sizeof(weft_config) + 4, 1u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        weft_config c = weft_config_default();
        c.size = sizes[i];
        TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&c, &ctx));
        ck_assert_ptr_null(ctx);
    }
}
END_TEST

/* A newer header's configuration: this weft's struct and more. */
typedef struct newer_config {
    weft_config c;
    uint64_t extra[4];
} newer_config;

START_TEST(config_newer_layout)
{
    newer_config n;
    memset(&n, 0x77, sizeof n);
    TU_OK(weft_config_init_sized(&n.c, sizeof n));
    ck_assert_uint_eq(n.c.size, sizeof n);
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(n.extra[i], 0); /* newer fields: defaults */
    }
    n.c.backend = WEFT_BACKEND_INTERP;
    n.c.flags = WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&n.c, &ctx));
    weft_context_free(ctx);
    ctx = NULL;

    n.extra[2] = 1; /* a newer field this weft does not know, set */
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&n.c, &ctx));
    ck_assert_ptr_null(ctx);
    char size[32];
    snprintf(size, sizeof size, "%zu", sizeof n);
    ck_assert_msg(strstr(weft_last_error(), size) != NULL, "%s",
                  weft_last_error());
}
END_TEST

/* ---- sized results ---------------------------------------------------- */

START_TEST(stats_sized_writes_only_size)
{
    tu t;
    tu_open(&t);
    /* Up to and including `threads`: the interpreter reports 1. */
    size_t part = offsetof(weft_stats, threads) + sizeof(int);
    weft_stats s;
    memset(&s, 0xcd, sizeof s);
    TU_OK(weft_context_stats_sized(t.ctx, &s, part));
    ck_assert_int_eq(s.threads, 1);
    ck_assert_uint_eq(s.kernels_compiled, 0);
    const unsigned char *b = (const unsigned char *)&s;
    for (size_t i = part; i < sizeof s; i++) {
        ck_assert_uint_eq(b[i], 0xcd);
    }
    /* A larger struct: the tail is zeroed. */
    struct {
        weft_stats s;
        uint64_t more[3];
    } big;
    memset(&big, 0xcd, sizeof big);
    TU_OK(weft_context_stats_sized(t.ctx, &big.s, sizeof big));
    ck_assert_int_eq(big.s.threads, 1);
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(big.more[i], 0);
    }
    /* The macro passes the caller's sizeof. */
    memset(&s, 0xcd, sizeof s);
    TU_OK(weft_context_stats(t.ctx, &s));
    ck_assert_uint_eq(s.evictions, 0);
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_context_stats(NULL, &s));
    tu_close(&t);
}
END_TEST

/* ---- versions ------------------------------------------------------------ */

START_TEST(versions)
{
    int ma = -1, mi = -1, pa = -1;
    weft_version_numbers(&ma, &mi, &pa);
    ck_assert_int_eq(ma, WEFT_VERSION_MAJOR);
    ck_assert_int_eq(mi, WEFT_VERSION_MINOR);
    ck_assert_int_eq(pa, WEFT_VERSION_PATCH);
    weft_version_numbers(NULL, NULL, NULL);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", ma, mi, pa);
    ck_assert_str_eq(weft_version(), want);
#ifdef WEFT_PROJECT_VERSION
    /* project(VERSION) may omit the patch ("0.1" is 0.1.0). */
    int pv[3] = {0, 0, 0};
    ck_assert_int_ge(
        sscanf(WEFT_PROJECT_VERSION, "%d.%d.%d", &pv[0], &pv[1], &pv[2]), 2);
    ck_assert_msg(pv[0] == ma && pv[1] == mi && pv[2] == pa,
                  "CMakeLists.txt project(VERSION %s) but weft.h says %s",
                  WEFT_PROJECT_VERSION, weft_version());
#endif
#ifdef WEFT_HAVE_LLVM
    ck_assert_msg(strncmp(weft_llvm_version(), "19.", 3) == 0, "%s",
                  weft_llvm_version());
#else
    ck_assert_str_eq(weft_llvm_version(), "none");
#endif
}
END_TEST

/* ---- backends and devices ------------------------------------------------ */

START_TEST(backend_available_agrees_with_create)
{
    for (int b = WEFT_BACKEND_INTERP; b <= WEFT_BACKEND_PTX; b++) {
        const char *why = "unset";
        int ok = weft_backend_available((weft_backend)b, &why);
        ck_assert_int_eq(ok, weft_backend_available((weft_backend)b, NULL));
        weft_config c = weft_config_default();
        c.backend = (weft_backend)b;
        c.threads = 2;
        c.flags = WEFT_FLAG_NO_ENV;
        weft_context *ctx = NULL;
        weft_status s = weft_context_create(&c, &ctx);
        weft_context_free(ctx);
        if (ok) {
            ck_assert_ptr_null(why);
            ck_assert_msg(s == WEFT_OK, "backend %d available but: %s", b,
                          weft_last_error());
        } else {
            ck_assert_ptr_nonnull(why);
            ck_assert_msg(strstr(why, "weft_backend_available: ") == why &&
                              strlen(why) > 30,
                          "%s", why);
            ck_assert_int_eq(s, WEFT_ERR_BACKEND_UNAVAILABLE);
        }
    }
    const char *why = NULL;
    ck_assert_int_eq(weft_backend_available(WEFT_BACKEND_INTERP, &why), 1);
    ck_assert_ptr_null(why);
#ifdef WEFT_HAVE_LLVM
    ck_assert_int_eq(weft_backend_available(WEFT_BACKEND_CPU, NULL), 1);
#endif
    ck_assert_int_eq(weft_backend_available((weft_backend)7, &why), 0);
    ck_assert_ptr_nonnull(why);
}
END_TEST

START_TEST(devices)
{
    int n = -1;
    weft_device_info d;
    memset(&d, 0, sizeof d);
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_device_count(NULL));
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_device_info_get(0, NULL));
    if (!weft_backend_available(WEFT_BACKEND_PTX, NULL)) {
        TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE, weft_device_count(&n));
        ck_assert_int_eq(n, 0);
        ck_assert(strlen(weft_last_error()) > 20);
        TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE, weft_device_info_get(0, &d));
        return;
    }
    TU_OK(weft_device_count(&n));
    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n; i++) {
        TU_OK(weft_device_info_get(i, &d));
        ck_assert_int_eq(d.ordinal, i);
        ck_assert_msg(strlen(d.name) > 0 && strlen(d.name) < sizeof d.name,
                      "name");
        ck_assert_int_ge(d.sm_major, 5);
        ck_assert_int_ge(d.sm_minor, 0);
        ck_assert_int_ge(d.multiprocessors, 1);
        ck_assert_uint_ge(d.memory_bytes, (uint64_t)1 << 30);
        ck_assert_int_ge(d.driver_version, 11000); /* CUDA 11 or later */
        printf("note: device %d: %s, sm_%d%d, %d SMs, %.1f GiB, %d kHz, "
               "driver %d\n",
               i, d.name, d.sm_major, d.sm_minor, d.multiprocessors,
               (double)d.memory_bytes / (1 << 30), d.clock_khz,
               d.driver_version);
    }
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_device_info_get(n, &d));
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_device_info_get(-1, &d));
    /* Sized: only the name. */
    weft_device_info part;
    memset(&part, 0xee, sizeof part);
    TU_OK(weft_device_info_sized(0, &part, sizeof part.name));
    ck_assert(memchr(part.name, '\0', sizeof part.name) != NULL);
    const unsigned char *b = (const unsigned char *)&part;
    for (size_t i = sizeof part.name; i < sizeof part; i++) {
        ck_assert_uint_eq(b[i], 0xee);
    }
}
END_TEST

START_TEST(libdevice_path)
{
    char *saved[NENV];
    tu_env_aside(env_names, NENV, saved);
    char buf[4096];
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_libdevice_path(NULL, 10));
#ifdef WEFT_HAVE_LLVM
    char *dir = make_tmpdir();
    char file[512];
    snprintf(file, sizeof file, "%s/libdevice.10.bc", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("BC", f);
    fclose(f);
    setenv("WEFT_LIBDEVICE", file, 1);
    TU_OK(weft_libdevice_path(buf, sizeof buf));
    ck_assert_str_eq(buf, file);
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_libdevice_path(buf, 4));
    tu_remove_dir(dir);
    free(dir);
    TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE,
              weft_libdevice_path(buf, sizeof buf));
    ck_assert_msg(strstr(weft_last_error(), file) != NULL, "%s",
                  weft_last_error());
    /* Without $WEFT_LIBDEVICE: found, or every path tried is named. */
    unsetenv("WEFT_LIBDEVICE");
    weft_status s = weft_libdevice_path(buf, sizeof buf);
    if (s == WEFT_OK) {
        ck_assert_int_eq(access(buf, R_OK), 0);
    } else {
        ck_assert_int_eq(s, WEFT_ERR_BACKEND_UNAVAILABLE);
        ck_assert_msg(strstr(weft_last_error(), "tried") != NULL, "%s",
                      weft_last_error());
    }
#else
    TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE,
              weft_libdevice_path(buf, sizeof buf));
#endif
    tu_env_restore(env_names, NENV, saved);
}
END_TEST

/* ---- the disk cache -------------------------------------------------------- */

START_TEST(cache_max_from_environment)
{
    char *saved[NENV];
    tu_env_aside(env_names, NENV, saved);
    char *dir = make_tmpdir();
    setenv("WEFT_CACHE_DIR", dir, 1);
    static const struct {
        const char *text;
        uint64_t bytes; /* 0: refused */
    } cases[] = {
        {"1000", 1000},
        {"3K", 3 << 10},
        {"3k", 3 << 10},
        {"2M", 2 << 20},
        {"5G", (uint64_t)5 << 30},
        {"17179869183G", (uint64_t)17179869183 << 30}, /* 2^64 - 2^30 */
        {"17179869184G", 0},                           /* 2^64: too big */
        {"18446744073709551616", 0},                   /* 2^64 */
        {"12Q", 0},
        {"K", 0},
        {"-1", 0},
        {"1KB", 0},
        {" 1", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("WEFT_CACHE_MAX", cases[i].text, 1);
        weft_cache_info ci;
        memset(&ci, 0, sizeof ci);
        weft_config c = weft_config_default();
        c.backend = WEFT_BACKEND_INTERP;
        weft_context *ctx = NULL;
        if (cases[i].bytes) {
            TU_OK(weft_cache_info_get(NULL, &ci));
            ck_assert_msg(ci.max_bytes == cases[i].bytes, "%s: %llu",
                          cases[i].text, (unsigned long long)ci.max_bytes);
            TU_OK(weft_context_create(&c, &ctx));
            weft_context_free(ctx);
        } else {
            TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
                      weft_cache_info_get(NULL, &ci));
            ck_assert_msg(strstr(weft_last_error(), "WEFT_CACHE_MAX") != NULL,
                          "%s", weft_last_error());
            TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&c, &ctx));
        }
    }
    /* The configuration's field, and the environment ignored. */
    setenv("WEFT_CACHE_MAX", "7K", 1);
    weft_config c = weft_config_default();
    c.cache_max = 12345;
    c.cache_dir = dir;
    weft_cache_info ci;
    TU_OK(weft_cache_info_get(&c, &ci));
    ck_assert_uint_eq(ci.max_bytes, 7 << 10);
    c.flags = WEFT_FLAG_NO_ENV;
    TU_OK(weft_cache_info_get(&c, &ci));
    ck_assert_uint_eq(ci.max_bytes, 12345);
    tu_remove_dir(dir);
    free(dir);
    tu_env_restore(env_names, NENV, saved);
}
END_TEST

START_TEST(cache_info_directory)
{
    char *dir = make_tmpdir();
    char sub[512];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    weft_config c = weft_config_default();
    c.flags = WEFT_FLAG_NO_ENV;
    c.cache_dir = sub;
    weft_cache_info ci;
    memset(&ci, 0x33, sizeof ci);
    TU_OK(weft_cache_info_get(&c, &ci));
#ifdef WEFT_HAVE_LLVM
    ck_assert_msg(ci.enabled, "%s", ci.why);
    ck_assert_str_eq(ci.dir, sub);
    ck_assert_str_eq(ci.why, "");
    ck_assert_uint_eq(ci.entries, 0);
    ck_assert_uint_eq(ci.bytes, 0);
    struct stat st;
    ck_assert_int_eq(stat(sub, &st), 0); /* created, as a context would */

    /* A file where the directory should be: off, and why. */
    char file[600];
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    c.cache_dir = file;
    TU_OK(weft_cache_info_get(&c, &ci));
    ck_assert_int_eq(ci.enabled, 0);
    ck_assert_msg(strstr(ci.why, "Not a directory") != NULL, "%s", ci.why);
#else
    ck_assert_int_eq(ci.enabled, 0);
    ck_assert(strlen(ci.why) > 0);
#endif
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, weft_cache_info_get(&c, NULL));
    tu_remove_dir(dir);
    free(dir);
}
END_TEST

#ifdef WEFT_HAVE_LLVM
/* Compile a one-kernel program, map (x * k + 1) over i32, in a CPU context
 * with the given cache and bound, optimised code written before
 * weft_compile returns. */
static void compile_map(const char *dir, uint64_t cache_max, int k)
{
    weft_config c = weft_config_default();
    c.backend = WEFT_BACKEND_CPU;
    c.threads = 1;
    c.flags = WEFT_FLAG_NO_ENV | WEFT_FLAG_NO_TIERING;
    c.cache_dir = dir;
    c.cache_max = cache_max;
    tu t = {0};
    TU_OK(weft_context_create(&c, &t.ctx));
    TU_OK(weft_program_create(t.ctx, &t.p));
    weft_acc *v = weft_param(t.p, WEFT_I32, 1);
    weft_fun *f = weft_fun1(t.p, WEFT_I32);
    weft_fun_return(f, weft_add(weft_mul(weft_arg(f, 0), weft_i32(t.p, k)),
                                weft_i32(t.p, 1)));
    weft_acc *r = weft_map(f, v);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(t.p, &r, 1, &exe));
    weft_stats s;
    TU_OK(weft_context_stats(t.ctx, &s));
    ck_assert_uint_eq(s.kernels_compiled, 1);
    weft_executable_free(exe);
    tu_close(&t);
}

/* The names of the entries in dir (at most 8), sorted out by strcmp. */
static int entries_of(const char *dir, char names[8][80])
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] != '.') {
            ck_assert_int_lt(n, 8);
            snprintf(names[n++], 80, "%.79s", de->d_name);
        }
    }
    closedir(d);
    return n;
}
#endif

START_TEST(cache_bound_evicts_oldest)
{
#ifdef WEFT_HAVE_LLVM
    char *dir = make_tmpdir();
    weft_config c = weft_config_default();
    c.flags = WEFT_FLAG_NO_ENV;
    c.cache_dir = dir;
    weft_cache_info ci;

    compile_map(dir, 0, 3);
    TU_OK(weft_cache_info_get(&c, &ci));
    ck_assert_uint_eq(ci.entries, 1);
    uint64_t one = ci.bytes;
    ck_assert_uint_gt(one, 0);
    char first[8][80];
    ck_assert_int_eq(entries_of(dir, first), 1);
    usleep(20000); /* distinct modification times */

    /* A second kernel of about the same size: the two do not fit in one
     * and a half entries, so the older goes. */
    compile_map(dir, one * 3 / 2, 5);
    char now[8][80];
    ck_assert_int_eq(entries_of(dir, now), 1);
    ck_assert_str_ne(now[0], first[0]);
    TU_OK(weft_cache_info_get(&c, &ci));
    ck_assert_uint_eq(ci.entries, 1);

    /* Under the default bound both stay. */
    usleep(20000);
    compile_map(dir, 0, 3);
    TU_OK(weft_cache_info_get(&c, &ci));
    ck_assert_uint_eq(ci.entries, 2);
    tu_remove_dir(dir);
    free(dir);
#endif
}
END_TEST

static Suite *info_suite(void)
{
    Suite *s = suite_create("info");
    TCase *a = tcase_create("abi");
    tcase_add_test(a, config_default_is_sized);
    tcase_add_test(a, config_init_errors);
    tcase_add_test(a, config_older_layout);
    tcase_add_test(a, config_bad_magic);
    tcase_add_test(a, config_bad_size);
    tcase_add_test(a, config_newer_layout);
    tcase_add_test(a, stats_sized_writes_only_size);
    suite_add_tcase(s, a);

    TCase *i = tcase_create("introspection");
    tcase_add_test(i, versions);
    tcase_add_test(i, backend_available_agrees_with_create);
    tcase_add_test(i, devices);
    tcase_add_test(i, libdevice_path);
    suite_add_tcase(s, i);

    TCase *c = tcase_create("cache");
    tcase_add_test(c, cache_max_from_environment);
    tcase_add_test(c, cache_info_directory);
    tcase_add_test(c, cache_bound_evicts_oldest);
    tcase_set_timeout(c, 60);
    suite_add_tcase(s, c);
    return s;
}

TU_MAIN(info_suite)
