/*
 * tests/tu.h: small helpers shared by weft's Check tests.
 *
 * Every test makes its own context and program (tu_open / tu_close), so the
 * tests run the same with or without Check's fork isolation (CK_FORK=no)
 * and leave nothing allocated behind them when they pass.  The context runs
 * the reference interpreter and ignores the WEFT_* environment, unless a
 * test asks for another backend with tu_open_backend.
 *
 * Values cross the boundary as int64_t (every integral type and bool; u64
 * as its bits) or double (f16, f32, f64), so one table of expectations can
 * serve every element type:
 *   tu_arr_i / tu_arr_f     an array of one scalar type from int64 / double
 *   TU_CHECK_I / TU_CHECK_F a result's rank, shape and values (floats with
 *                           a relative-or-absolute tolerance, NaN equal to
 *                           NaN)
 *   TU_OK(call)             the call returned WEFT_OK, else fail with
 *                           weft_last_error()
 *   tu_eval_i / tu_eval_f   run one scalar term through weft_unit and
 *                           weft_run1 and read it back
 *   tu_remove_dir           remove a test's directory (a disk cache) and
 *                           everything below it
 *   tu_env_aside / tu_env_restore
 *                           unset WEFT_* variables for a test that reads
 *                           the environment, and put them back
 *   tu_slurp / tu_slurp_dir a file, or a directory's dumps of one kind, as
 *                           a string
 *   tu_program_text / tu_plan_text
 *                           a program's dump, an executable's plan, as a
 *                           string; tu_count_word counts a word in one
 *   tu_dot_map              a small compiled program of two kernels (three)
 *   tu_rng                  the tests' one random generator (splitmix64,
 *                           seeded): tu_rng_u64, tu_rng_int, tu_rng_real,
 *                           tu_rng_fill for arrays
 * Half floats are converted here by hand (tu_half_to_double,
 * tu_double_to_half, round to nearest even) so that expectations do not
 * depend on the library's own conversion.
 *
 * Everything is static inline: include this header from any test file.
 * The helpers report failures with ck_assert, so call them only from
 * inside a Check test (START_TEST ... END_TEST).
 */
#ifndef WEFT_TESTS_TU_H
#define WEFT_TESTS_TU_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weft.h"

/* A shape or index literal: TU_SH(2, 3) is a const int64_t[2]. */
#define TU_SH(...) ((const int64_t[]){__VA_ARGS__})
/* An int64_t / double literal list. */
#define TU_I(...) ((const int64_t[]){__VA_ARGS__})
#define TU_F(...) ((const double[]){__VA_ARGS__})

/* Fail the current test unless `call` returns WEFT_OK. */
#define TU_OK(call)                                                            \
    do {                                                                       \
        weft_status tu_s_ = (call);                                            \
        ck_assert_msg(tu_s_ == WEFT_OK, "%s -> %s: %s", #call,                 \
                      weft_status_name(tu_s_), weft_last_error());             \
    } while (0)

/* Fail the current test unless `call` returns status `want`. */
#define TU_STATUS(want, call)                                                  \
    do {                                                                       \
        weft_status tu_s_ = (call);                                            \
        ck_assert_msg(tu_s_ == (want), "%s -> %s (%s), expected %s", #call,    \
                      weft_status_name(tu_s_), weft_last_error(),              \
                      weft_status_name(want));                                 \
    } while (0)

/* ------------------------------------------------------------------------
 * Files and the environment
 * ---------------------------------------------------------------------- */

static inline int tu_remove_entry_(const char *path, const struct stat *sb,
                                   int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(path);
}

/* Remove dir, which must exist, and everything below it (a disk cache
 * may hold directories). */
static inline void tu_remove_dir(const char *dir)
{
    ck_assert_msg(nftw(dir, tu_remove_entry_, 8, FTW_DEPTH | FTW_PHYS) == 0,
                  "removing %s: %s", dir, strerror(errno));
}

/* Unset the n environment variables names[i], keeping their values in
 * saved[i] (malloc'd, or NULL where unset) for tu_env_restore: for tests
 * whose contexts read the environment (the GPU machine runs the suite
 * with WEFT_BACKEND=ptx). */
static inline void tu_env_aside(const char *const *names, int n, char **saved)
{
    for (int i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(names[i]);
    }
}

/* Put back what tu_env_aside set aside (unsetting the others), freeing
 * saved. */
static inline void tu_env_restore(const char *const *names, int n, char **saved)
{
    for (int i = 0; i < n; i++) {
        if (saved[i]) {
            setenv(names[i], saved[i], 1);
            free(saved[i]);
        } else {
            unsetenv(names[i]);
        }
    }
}

/* What f holds, from its start, as a malloc'd string (the caller frees
 * it); closes f. */
static inline char *tu_file_text(FILE *f)
{
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert(n >= 0);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* The whole file at path as a malloc'd string (the caller frees it). */
static inline char *tu_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    return tu_file_text(f);
}

/* Every file of dir whose name ends in suffix (a dump's kind: ".s",
 * ".vec.txt"), concatenated into a malloc'd string (the caller frees it);
 * *count, unless NULL, gets how many. */
static inline char *tu_slurp_dir(const char *dir, const char *suffix,
                                 int *count)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    char *all = calloc(1, 1);
    ck_assert_ptr_nonnull(all);
    size_t len = 0;
    int k = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name), ls = strlen(suffix);
        if (l < ls || strcmp(e->d_name + l - ls, suffix) != 0) {
            continue;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *s = tu_slurp(path);
        size_t n = strlen(s);
        all = realloc(all, len + n + 1);
        ck_assert_ptr_nonnull(all);
        memcpy(all + len, s, n + 1);
        len += n;
        free(s);
        k++;
    }
    closedir(d);
    if (count) {
        *count = k;
    }
    return all;
}

/* The dump of results[0..n-1] of p (weft_program_dump) as a malloc'd
 * string (the caller frees it). */
static inline char *tu_program_text(weft_program *p, weft_acc *const *results,
                                    int n)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    weft_status s = weft_program_dump(p, results, n, f);
    ck_assert_msg(s == WEFT_OK, "weft_program_dump: %s", weft_last_error());
    return tu_file_text(f);
}

/* The plan of exe (weft_executable_dump) as a malloc'd string (the caller
 * frees it). */
static inline char *tu_plan_text(const weft_executable *exe)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    weft_status s = weft_executable_dump(exe, f);
    ck_assert_msg(s == WEFT_OK, "weft_executable_dump: %s", weft_last_error());
    return tu_file_text(f);
}

static inline bool tu_is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* Occurrences of word w in s, not part of a longer identifier. */
static inline int tu_count_word(const char *s, const char *w)
{
    int n = 0;
    size_t len = strlen(w);
    for (const char *q = strstr(s, w); q; q = strstr(q + 1, w)) {
        bool left = q == s || !tu_is_word_char(q[-1]);
        bool right = !tu_is_word_char(q[len]);
        n += left && right;
    }
    return n;
}

/* ------------------------------------------------------------------------
 * Context and program
 * ---------------------------------------------------------------------- */

typedef struct tu {
    weft_context *ctx;
    weft_program *p;
} tu;

/* Which CPU code the tests that compare results check (tu_open_backend,
 * test_cpu's differential contexts): the optimised code, compiled before
 * weft_compile returns (WEFT_FLAG_NO_TIERING), so that every run of a test
 * runs the same code whatever the timing; built with -DDT_QUICK
 * (test_cpu_quick), the quick code of tiered compilation
 * (WEFT_FLAG_QUICK_CODE).  Tests that make their own contexts get the
 * default, both tiers. */
#ifdef DT_QUICK
#define DT_TIER WEFT_FLAG_QUICK_CODE
#else
#define DT_TIER WEFT_FLAG_NO_TIERING
#endif

/* The tier flags `dflt`, unless $WEFT_TEST_TIER names others: "none"
 * (WEFT_FLAG_NO_TIERING), "quick" (WEFT_FLAG_QUICK_CODE) or "up" (both
 * tiers): a test that checks one tier by default can be run on another
 * by hand, e.g. on the GPU machine. */
static inline unsigned tu_tier_flags(unsigned dflt)
{
    const char *t = getenv("WEFT_TEST_TIER");
    if (!t) {
        return dflt;
    }
    return strcmp(t, "none") == 0    ? WEFT_FLAG_NO_TIERING
           : strcmp(t, "quick") == 0 ? WEFT_FLAG_QUICK_CODE
           : strcmp(t, "up") == 0    ? 0u
                                     : dflt;
}

/* The devices of the ptx contexts the tests make ($WEFT_TEST_DEVICES, as
 * weft_config.devices, since those contexts ignore the environment):
 * "0,0" runs the differential tests over two blocks of one GPU, "all" over
 * every GPU (docs/distributed.md, "Testing").  NULL for other backends. */
static inline const char *tu_devices(weft_backend b)
{
    return b == WEFT_BACKEND_PTX ? getenv("WEFT_TEST_DEVICES") : NULL;
}

/* The backends that run on every machine, for tests that loop over them:
 * static const weft_backend backends[] = TU_BACKENDS; the interpreter,
 * and the CPU where weft is built with LLVM. */
#ifdef WEFT_HAVE_LLVM
#define TU_BACKENDS {WEFT_BACKEND_INTERP, WEFT_BACKEND_CPU}
#else
#define TU_BACKENDS {WEFT_BACKEND_INTERP}
#endif

/* A backend's name, for messages. */
static inline const char *tu_backend_name(weft_backend b)
{
    return b == WEFT_BACKEND_CPU   ? "cpu"
           : b == WEFT_BACKEND_PTX ? "ptx"
                                   : "interp";
}

/* Make a context on backend b (environment ignored) and a program in it. */
static inline void tu_open_backend(tu *t, weft_backend b)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.devices = tu_devices(b);
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV | DT_TIER;
    t->ctx = NULL;
    t->p = NULL;
    weft_status s = weft_context_create(&cfg, &t->ctx);
    ck_assert_msg(s == WEFT_OK, "weft_context_create: %s", weft_last_error());
    s = weft_program_create(t->ctx, &t->p);
    ck_assert_msg(s == WEFT_OK, "weft_program_create: %s", weft_last_error());
}

/* Interpreter context and a program. */
static inline void tu_open(tu *t)
{
    tu_open_backend(t, WEFT_BACKEND_INTERP);
}

/* Free the program (if any) and the context. */
static inline void tu_close(tu *t)
{
    weft_program_free(t->p);
    weft_context_free(t->ctx);
    t->p = NULL;
    t->ctx = NULL;
}

/* Replace t's program by a fresh, empty one (its parameters gone). */
static inline void tu_reset(tu *t)
{
    weft_program_free(t->p);
    t->p = NULL;
    weft_status s = weft_program_create(t->ctx, &t->p);
    ck_assert_msg(s == WEFT_OK, "weft_program_create: %s", weft_last_error());
}

/* Fail unless the program has no sticky builder error. */
#define TU_PROGRAM_OK(p)                                                       \
    ck_assert_msg(weft_program_status(p) == WEFT_OK, "program in error: %s",   \
                  weft_program_error(p))

/* ------------------------------------------------------------------------
 * Half floats (IEEE binary16), by hand
 * ---------------------------------------------------------------------- */

static inline double tu_half_to_double(uint16_t h)
{
    int sign = (h >> 15) & 1;
    int exp = (h >> 10) & 0x1f;
    int man = h & 0x3ff;
    double v;
    if (exp == 0) {
        v = ldexp((double)man, -24);
    } else if (exp == 31) {
        v = man ? NAN : INFINITY;
    } else {
        v = ldexp((double)(man | 0x400), exp - 25);
    }
    return sign ? -v : v;
}

/* Round d to the nearest half (ties to even); overflow gives infinity. */
static inline uint16_t tu_double_to_half(double d)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double a = fabs(d);
    if (isnan(d)) {
        return (uint16_t)(sign | 0x7e00);
    }
    if (isinf(a)) {
        return (uint16_t)(sign | 0x7c00);
    }
    int e;
    frexp(a, &e);   /* a = f * 2^e, f in [0.5, 1) */
    int ue = e - 1; /* a = m * 2^ue with m in [1, 2) */
    if (ue < -14) {
        ue = -14; /* subnormal range: spacing 2^-24 */
    }
    double q = ldexp(a, 10 - ue); /* in units of the last place */
    double r = nearbyint(q);      /* default rounding: ties to even */
    if (r >= 2048.0) {
        ue += 1;
        r = nearbyint(ldexp(a, 10 - ue));
    }
    if (ue > 15) {
        return (uint16_t)(sign | 0x7c00);
    }
    uint16_t bits;
    if (r < 1024.0) {
        bits = (uint16_t)r; /* subnormal (ue == -14) or zero */
    } else {
        bits = (uint16_t)(((ue + 15) << 10) | ((int)r - 1024));
    }
    return (uint16_t)(sign | bits);
}

/* ------------------------------------------------------------------------
 * Scalar values to and from memory
 * ---------------------------------------------------------------------- */

static inline bool tu_is_float(weft_type t)
{
    return t == WEFT_F16 || t == WEFT_F32 || t == WEFT_F64;
}

/* Store v (wrapped to the type; bool: v != 0) at dst, of scalar type t. */
static inline void tu_store_i(weft_type t, void *dst, int64_t v)
{
    switch (t) {
    case WEFT_BOOL: {
        uint8_t x = v != 0;
        memcpy(dst, &x, 1);
        break;
    }
    case WEFT_I8: {
        int8_t x = (int8_t)v;
        memcpy(dst, &x, 1);
        break;
    }
    case WEFT_U8: {
        uint8_t x = (uint8_t)v;
        memcpy(dst, &x, 1);
        break;
    }
    case WEFT_I16: {
        int16_t x = (int16_t)v;
        memcpy(dst, &x, 2);
        break;
    }
    case WEFT_U16: {
        uint16_t x = (uint16_t)v;
        memcpy(dst, &x, 2);
        break;
    }
    case WEFT_I32: {
        int32_t x = (int32_t)v;
        memcpy(dst, &x, 4);
        break;
    }
    case WEFT_U32: {
        uint32_t x = (uint32_t)v;
        memcpy(dst, &x, 4);
        break;
    }
    case WEFT_I64:
    case WEFT_U64: memcpy(dst, &v, 8); break;
    case WEFT_F16: {
        uint16_t x = tu_double_to_half((double)v);
        memcpy(dst, &x, 2);
        break;
    }
    case WEFT_F32: {
        float x = (float)v;
        memcpy(dst, &x, 4);
        break;
    }
    case WEFT_F64: {
        double x = (double)v;
        memcpy(dst, &x, 8);
        break;
    }
    default: ck_abort_msg("tu_store_i: type %d is not scalar", (int)t);
    }
}

/* Store d at dst, of scalar type t (integral types: truncated). */
static inline void tu_store_f(weft_type t, void *dst, double d)
{
    switch (t) {
    case WEFT_F16: {
        uint16_t x = tu_double_to_half(d);
        memcpy(dst, &x, 2);
        break;
    }
    case WEFT_F32: {
        float x = (float)d;
        memcpy(dst, &x, 4);
        break;
    }
    case WEFT_F64: memcpy(dst, &d, 8); break;
    default: tu_store_i(t, dst, (int64_t)d); break;
    }
}

/* The value at src of scalar type t as int64 (u64: its bits; floats:
 * truncated). */
static inline int64_t tu_load_i(weft_type t, const void *src)
{
    switch (t) {
    case WEFT_BOOL: {
        uint8_t x;
        memcpy(&x, src, 1);
        return x;
    }
    case WEFT_I8: {
        int8_t x;
        memcpy(&x, src, 1);
        return x;
    }
    case WEFT_U8: {
        uint8_t x;
        memcpy(&x, src, 1);
        return x;
    }
    case WEFT_I16: {
        int16_t x;
        memcpy(&x, src, 2);
        return x;
    }
    case WEFT_U16: {
        uint16_t x;
        memcpy(&x, src, 2);
        return x;
    }
    case WEFT_I32: {
        int32_t x;
        memcpy(&x, src, 4);
        return x;
    }
    case WEFT_U32: {
        uint32_t x;
        memcpy(&x, src, 4);
        return x;
    }
    case WEFT_I64:
    case WEFT_U64: {
        int64_t x;
        memcpy(&x, src, 8);
        return x;
    }
    case WEFT_F16: {
        uint16_t x;
        memcpy(&x, src, 2);
        return (int64_t)tu_half_to_double(x);
    }
    case WEFT_F32: {
        float x;
        memcpy(&x, src, 4);
        return (int64_t)x;
    }
    case WEFT_F64: {
        double x;
        memcpy(&x, src, 8);
        return (int64_t)x;
    }
    default: ck_abort_msg("tu_load_i: type %d is not scalar", (int)t);
    }
    return 0;
}

/* The value at src of scalar type t as double. */
static inline double tu_load_f(weft_type t, const void *src)
{
    switch (t) {
    case WEFT_F16: {
        uint16_t x;
        memcpy(&x, src, 2);
        return tu_half_to_double(x);
    }
    case WEFT_F32: {
        float x;
        memcpy(&x, src, 4);
        return x;
    }
    case WEFT_F64: {
        double x;
        memcpy(&x, src, 8);
        return x;
    }
    case WEFT_U64: {
        uint64_t x;
        memcpy(&x, src, 8);
        return (double)x;
    }
    default: return (double)tu_load_i(t, src);
    }
}

/* ------------------------------------------------------------------------
 * Random data
 *
 * One generator for every test: splitmix64 (Steele, Lea and Flood, "Fast
 * splittable pseudorandom number generators", 2014), a 64-bit counter
 * stepped by the golden-ratio constant and mixed by two multiply-xorshift
 * rounds.  Every seed, 0 included, gives a full-period stream that passes
 * BigCrush; that is far more than test data needs, and the point is one
 * fixed, seeded algorithm, so that a failing case can be replayed from its
 * seed and the streams of two tests never hide a bias of one copy.
 * ---------------------------------------------------------------------- */

typedef struct tu_rng {
    uint64_t s; /* the counter */
} tu_rng;

/* A generator whose stream is fixed by seed. */
static inline tu_rng tu_rng_seed(uint64_t seed)
{
    return (tu_rng){.s = seed};
}

/* The next 64 random bits. */
static inline uint64_t tu_rng_u64(tu_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (lo <= hi; the whole int64 range is fine).  The
 * remainder's bias, at most span / 2^64, is far below what a test sees. */
static inline int64_t tu_rng_int(tu_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    uint64_t x = tu_rng_u64(r);
    return (int64_t)((uint64_t)lo + (span ? x % span : x));
}

/* Uniform in [0, 1), on the 2^-53 grid. */
static inline double tu_rng_unit(tu_rng *r)
{
    return (double)(tu_rng_u64(r) >> 11) / 9007199254740992.0;
}

/* Uniform in [lo, hi). */
static inline double tu_rng_real(tu_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * tu_rng_unit(r);
}

/* n random elements of scalar type t at buf: bool 0 or 1; integral types
 * uniform in [lo, hi] (truncated to integers), or every bit random when
 * lo > hi; floating types uniform in [lo, hi) (in [-1, 1) when lo > hi),
 * rounded to the type. */
static inline void tu_rng_fill(tu_rng *r, weft_type t, void *buf, int64_t n,
                               double lo, double hi)
{
    size_t w = weft_type_size(t);
    unsigned char *p = buf;
    for (int64_t i = 0; i < n; i++, p += w) {
        if (t == WEFT_BOOL) {
            tu_store_i(t, p, (int64_t)(tu_rng_u64(r) >> 63));
        } else if (tu_is_float(t)) {
            tu_store_f(t, p,
                       lo > hi ? tu_rng_real(r, -1.0, 1.0)
                               : tu_rng_real(r, lo, hi));
        } else if (lo > hi) {
            uint64_t v = tu_rng_u64(r);
            memcpy(p, &v, w); /* little-endian: the low bytes */
        } else {
            tu_store_i(t, p, tu_rng_int(r, (int64_t)lo, (int64_t)hi));
        }
    }
}

/* A malloc'd buffer of n random elements of t (tu_rng_fill's rule), never
 * NULL (one element's room when n is 0); the caller frees it. */
static inline void *tu_rng_buffer(tu_rng *r, weft_type t, int64_t n, double lo,
                                  double hi)
{
    void *b = malloc((size_t)(n > 0 ? n : 1) * weft_type_size(t));
    ck_assert_ptr_nonnull(b);
    tu_rng_fill(r, t, b, n, lo, hi);
    return b;
}

/* ------------------------------------------------------------------------
 * Arrays
 * ---------------------------------------------------------------------- */

static inline int64_t tu_shape_size(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        n *= shape[d];
    }
    return n;
}

/* An array of scalar type t with the given shape holding vals[0..size-1]
 * (vals may be NULL for an empty array).  Fails the test on error. */
static inline weft_array *tu_arr_i(weft_context *ctx, weft_type t, int rank,
                                   const int64_t *shape, const int64_t *vals)
{
    int64_t n = tu_shape_size(rank, shape);
    size_t w = weft_type_size(t);
    ck_assert_msg(w > 0, "tu_arr_i: type %d is not scalar", (int)t);
    unsigned char *buf = malloc((size_t)(n > 0 ? n : 1) * w);
    ck_assert_ptr_nonnull(buf);
    for (int64_t i = 0; i < n; i++) {
        tu_store_i(t, buf + (size_t)i * w, vals[i]);
    }
    weft_array *a = NULL;
    const void *data[1] = {buf};
    weft_status s = weft_array_from_host(ctx, t, rank, shape, data, &a);
    free(buf);
    ck_assert_msg(s == WEFT_OK, "weft_array_from_host: %s", weft_last_error());
    return a;
}

/* As tu_arr_i, from doubles. */
static inline weft_array *tu_arr_f(weft_context *ctx, weft_type t, int rank,
                                   const int64_t *shape, const double *vals)
{
    int64_t n = tu_shape_size(rank, shape);
    size_t w = weft_type_size(t);
    ck_assert_msg(w > 0, "tu_arr_f: type %d is not scalar", (int)t);
    unsigned char *buf = malloc((size_t)(n > 0 ? n : 1) * w);
    ck_assert_ptr_nonnull(buf);
    for (int64_t i = 0; i < n; i++) {
        tu_store_f(t, buf + (size_t)i * w, vals[i]);
    }
    weft_array *a = NULL;
    const void *data[1] = {buf};
    weft_status s = weft_array_from_host(ctx, t, rank, shape, data, &a);
    free(buf);
    ck_assert_msg(s == WEFT_OK, "weft_array_from_host: %s", weft_last_error());
    return a;
}

/* An array of any type (tuples included) from one host buffer per leaf. */
static inline weft_array *tu_arr_host(weft_context *ctx, weft_type t, int rank,
                                      const int64_t *shape,
                                      const void *const *leaves)
{
    weft_array *a = NULL;
    weft_status s = weft_array_from_host(ctx, t, rank, shape, leaves, &a);
    ck_assert_msg(s == WEFT_OK, "weft_array_from_host: %s", weft_last_error());
    return a;
}

/* Compare a's rank and shape; on mismatch write why into msg. */
static inline bool tu_match_shape(const weft_array *a, int rank,
                                  const int64_t *shape, char *msg, size_t m)
{
    if (a == NULL) {
        snprintf(msg, m, "array is NULL");
        return false;
    }
    if (weft_array_rank(a) != rank) {
        snprintf(msg, m, "rank %d, expected %d", weft_array_rank(a), rank);
        return false;
    }
    for (int d = 0; d < rank; d++) {
        if (weft_array_extent(a, d) != shape[d]) {
            snprintf(msg, m, "extent %d is %lld, expected %lld", d,
                     (long long)weft_array_extent(a, d), (long long)shape[d]);
            return false;
        }
    }
    return true;
}

/* Scalar type of leaf `leaf` of a's element type. */
static inline weft_type tu_leaf_type(weft_context *ctx, weft_array *a, int leaf)
{
    weft_type t = weft_array_type(a);
    if (weft_type_size(t) > 0) {
        return t;
    }
    return weft_type_leaf(ctx, t, leaf);
}

/* Exact comparison of leaf `leaf` of a with vals (integral or bool leaves;
 * for u64 compare bits). */
static inline bool tu_match_i(weft_context *ctx, weft_array *a, int leaf,
                              int rank, const int64_t *shape,
                              const int64_t *vals, char *msg, size_t m)
{
    if (!tu_match_shape(a, rank, shape, msg, m)) {
        return false;
    }
    weft_type t = tu_leaf_type(ctx, a, leaf);
    size_t w = weft_type_size(t);
    const unsigned char *d = weft_array_data(a, leaf);
    int64_t n = tu_shape_size(rank, shape);
    if (n > 0 && d == NULL) {
        snprintf(msg, m, "no data for leaf %d", leaf);
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t got = tu_load_i(t, d + (size_t)i * w);
        int64_t want = vals[i];
        /* compare after wrapping the expectation to the type */
        unsigned char tmp[8];
        tu_store_i(t, tmp, want);
        want = tu_load_i(t, tmp);
        if (got != want) {
            snprintf(msg, m, "leaf %d element %lld is %lld, expected %lld",
                     leaf, (long long)i, (long long)got, (long long)want);
            return false;
        }
    }
    return true;
}

/* Comparison of leaf `leaf` of a with vals within tol, relative to the
 * expected magnitude when it exceeds 1, absolute otherwise.  NaN matches
 * NaN; infinities must match exactly. */
static inline bool tu_match_f(weft_context *ctx, weft_array *a, int leaf,
                              int rank, const int64_t *shape,
                              const double *vals, double tol, char *msg,
                              size_t m)
{
    if (!tu_match_shape(a, rank, shape, msg, m)) {
        return false;
    }
    weft_type t = tu_leaf_type(ctx, a, leaf);
    size_t w = weft_type_size(t);
    const unsigned char *d = weft_array_data(a, leaf);
    int64_t n = tu_shape_size(rank, shape);
    if (n > 0 && d == NULL) {
        snprintf(msg, m, "no data for leaf %d", leaf);
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        double got = tu_load_f(t, d + (size_t)i * w);
        double want = vals[i];
        bool ok;
        if (isnan(want)) {
            ok = isnan(got);
        } else if (isinf(want)) {
            ok = got == want;
        } else {
            double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
            ok = fabs(got - want) <= tol * scale;
        }
        if (!ok) {
            snprintf(msg, m, "leaf %d element %lld is %.17g, expected %.17g",
                     leaf, (long long)i, got, want);
            return false;
        }
    }
    return true;
}

/* Check array a (leaf) against rank, shape and integer values. */
#define TU_CHECK_I(ctx, a, leaf, rank, shape, vals)                            \
    do {                                                                       \
        char tu_m_[256];                                                       \
        ck_assert_msg(tu_match_i((ctx), (a), (leaf), (rank), (shape), (vals),  \
                                 tu_m_, sizeof tu_m_),                         \
                      "%s: %s", #a, tu_m_);                                    \
    } while (0)

/* Check array a (leaf) against rank, shape and floating values. */
#define TU_CHECK_F(ctx, a, leaf, rank, shape, vals, tol)                       \
    do {                                                                       \
        char tu_m_[256];                                                       \
        ck_assert_msg(tu_match_f((ctx), (a), (leaf), (rank), (shape), (vals),  \
                                 (tol), tu_m_, sizeof tu_m_),                  \
                      "%s: %s", #a, tu_m_);                                    \
    } while (0)

/* Check only rank and shape. */
#define TU_CHECK_SHAPE(a, rank, shape)                                         \
    do {                                                                       \
        char tu_m_[256];                                                       \
        ck_assert_msg(                                                         \
            tu_match_shape((a), (rank), (shape), tu_m_, sizeof tu_m_),         \
            "%s: %s", #a, tu_m_);                                              \
    } while (0)

/* Release out[0..n-1] (NULL entries are fine). */
static inline void tu_release_all(weft_array **out, int n)
{
    for (int i = 0; i < n; i++) {
        weft_array_release(out[i]);
        out[i] = NULL;
    }
}

/* ------------------------------------------------------------------------
 * Running
 * ---------------------------------------------------------------------- */

/* Compile results[0..n-1] of p, run on in[0..n_in-1], store n_out outputs.
 * Returns the status of the first failing step. */
static inline weft_status tu_run(weft_program *p, weft_acc *const *results,
                                 int n, weft_array *const *in, int n_in,
                                 weft_array **out, int n_out)
{
    weft_executable *exe = NULL;
    weft_status s = weft_compile(p, results, n, &exe);
    if (s != WEFT_OK) {
        return s;
    }
    s = weft_run(exe, in, n_in, out, n_out);
    weft_executable_free(exe);
    return s;
}

/* Evaluate the scalar term e of p (weft_unit, weft_run1) into a new rank-0
 * array; returns the status and leaves *out NULL on failure. */
static inline weft_status tu_eval(weft_program *p, weft_exp *e,
                                  weft_array **out)
{
    *out = NULL;
    weft_acc *u = weft_unit(e);
    if (u == NULL) {
        return weft_program_status(p) != WEFT_OK ? weft_program_status(p)
                                                 : WEFT_ERR_NULL_ARGUMENT;
    }
    return weft_run1(p, &u, 1, NULL, 0, out, 1);
}

/* Evaluate e (of scalar type) and return it as int64 / double; fails the
 * test when the evaluation fails. */
#define tu_eval_i(p, e) tu_eval_i_((p), (e), #e)
#define tu_eval_f(p, e) tu_eval_f_((p), (e), #e)

static inline int64_t tu_eval_i_(weft_program *p, weft_exp *e, const char *what)
{
    weft_array *r = NULL;
    weft_status s = tu_eval(p, e, &r);
    ck_assert_msg(s == WEFT_OK, "evaluating %s: %s", what, weft_last_error());
    int64_t v = tu_load_i(weft_array_type(r), weft_array_data(r, 0));
    weft_array_release(r);
    return v;
}

static inline double tu_eval_f_(weft_program *p, weft_exp *e, const char *what)
{
    weft_array *r = NULL;
    weft_status s = tu_eval(p, e, &r);
    ck_assert_msg(s == WEFT_OK, "evaluating %s: %s", what, weft_last_error());
    double v = tu_load_f(weft_array_type(r), weft_array_data(r, 0));
    weft_array_release(r);
    return v;
}

/* ------------------------------------------------------------------------
 * Functions: one-line builders for the common shapes
 * ---------------------------------------------------------------------- */

/* (a, b) -> op(a, b) on type t. */
static inline weft_fun *tu_fun_op2(weft_program *p, weft_op op, weft_type t)
{
    weft_fun *f = weft_fun2(p, t, t);
    weft_fun_return(f, weft_prim2(op, weft_arg(f, 0), weft_arg(f, 1)));
    return f;
}

/* k-means' nearer of two (distance, j) pairs of type dj (f32, i32): the
 * lower distance, the lower j on ties (associative and commutative; bor
 * and band evaluate both sides: no branch). */
static inline weft_fun *tu_fun_nearer(weft_program *p, weft_type dj)
{
    weft_fun *f = weft_fun2(p, dj, dj);
    weft_exp *a = weft_arg(f, 0), *b = weft_arg(f, 1);
    weft_exp *b_wins =
        weft_bor(weft_lt(weft_get(b, 0), weft_get(a, 0)),
                 weft_band(weft_eq(weft_get(b, 0), weft_get(a, 0)),
                           weft_lt(weft_get(b, 1), weft_get(a, 1))));
    weft_fun_return(f, weft_cond(b_wins, b, a));
    return f;
}

/* a -> op(a) on type t. */
static inline weft_fun *tu_fun_op1(weft_program *p, weft_op op, weft_type t)
{
    weft_fun *f = weft_fun1(p, t);
    weft_fun_return(f, weft_prim1(op, weft_arg(f, 0)));
    return f;
}

/* A program of ctx compiled: over two i64 rank-1 parameters x and y,
 * fold_all (+) 0 (zipWith (*) x y) and map (\v -> 3 v + 1) x (two
 * kernels), and with scan also scanl1 (+) y (three).  The caller frees
 * the executable. */
static inline weft_executable *tu_dot_map(weft_context *ctx, bool scan)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *x = weft_param(p, WEFT_I64, 1);
    weft_acc *y = weft_param(p, WEFT_I64, 1);
    weft_fun *mul = tu_fun_op2(p, WEFT_OP_MUL, WEFT_I64);
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, WEFT_I64);
    weft_fun *f = weft_fun1(p, WEFT_I64);
    weft_fun_return(
        f, weft_add(weft_mul(weft_arg(f, 0), weft_i64(p, 3)), weft_i64(p, 1)));
    weft_acc *r[3] = {
        weft_fold_all(add, weft_i64(p, 0), weft_zipwith(mul, x, y)),
        weft_map(f, x), scan ? weft_scanl1(add, y) : NULL};
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, r, scan ? 3 : 2, &exe));
    weft_program_free(p);
    return exe;
}

/* ------------------------------------------------------------------------
 * main
 * ---------------------------------------------------------------------- */

/* The compiled backend that the differential tests (test_cpu*.c) compare
 * with the interpreter: the CPU by default; CMake builds the same sources
 * again as test_ptx*.c with -DDT_BACKEND=WEFT_BACKEND_PTX. */
#ifndef DT_BACKEND
#define DT_BACKEND WEFT_BACKEND_CPU
#endif
#define DT_NAME (DT_BACKEND == WEFT_BACKEND_PTX ? "ptx" : "cpu")

/* Whether DT_BACKEND can run here: for ptx, false (after a line on stdout
 * saying why) when its context cannot be made, e.g. no GPU driver; main
 * then returns 77, which CTest reports as a skip. */
static inline bool tu_backend_here(void)
{
    if (DT_BACKEND != WEFT_BACKEND_PTX) {
        return true; /* the CPU tests guard themselves (WEFT_HAVE_LLVM) */
    }
    weft_config cfg = weft_config_default();
    cfg.backend = DT_BACKEND;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    weft_context *ctx = NULL;
    weft_status s = weft_context_create(&cfg, &ctx);
    weft_context_free(ctx);
    if (s == WEFT_ERR_BACKEND_UNAVAILABLE) {
        printf("skipped: the %s backend cannot run here: %s\n", DT_NAME,
               weft_last_error());
        return false;
    }
    return true;
}

/* A main() that runs the suite made by make_suite and returns nonzero on
 * any failure (77, a skip, when DT_BACKEND cannot run here). */
#define TU_MAIN(make_suite)                                                    \
    int main(void)                                                             \
    {                                                                          \
        if (!tu_backend_here()) {                                              \
            return 77;                                                         \
        }                                                                      \
        SRunner *sr = srunner_create(make_suite());                            \
        srunner_run_all(sr, CK_NORMAL);                                        \
        int failed = srunner_ntests_failed(sr);                                \
        srunner_free(sr);                                                      \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                      \
    }

#endif /* WEFT_TESTS_TU_H */
