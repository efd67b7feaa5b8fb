/*
 * tests/test_vectorise.c: canonical kernels become vector code for explicit
 * x86 CPUs, whatever the host.
 *
 * For each of map (x * 2 + 1), zipWith (+), fold (+) (along the rows of
 * a matrix, and over everything) and a fold (+) of a ! i + b ! i (reads
 * whose bounds checks must leave the vector loop: no masked loads), on
 * f32 and on i32, and for map exp (f32,
 * f64), map sin (f32) and the call price of Black-Scholes (zipWith3 with
 * log, sqrt, exp, division and conditionals; f32), the test makes a CPU
 * context with weft_config.target_cpu set (compile only: weft_run says
 * WEFT_ERR_BACKEND_UNAVAILABLE) and dump = "asm,vec" into a fresh
 * temporary directory, compiles the program, and reads what the JIT wrote
 * there (runtime-cpu/jit.c: <symbol>.s and <symbol>.vec.txt per kernel):
 *
 *   x86-64-v3 (AVX2)       the assembly uses ymm registers and the packed
 *                          instruction of the operation (vaddps / vmulps
 *                          for f32, vpaddd / vpslld for i32);
 *   skylake-avx512         ymm or zmm registers (LLVM prefers 256-bit
 *                          vectors on that CPU unless told otherwise) and
 *                          the same packed instructions;
 *   both                   the .vec.txt report says "vectorised" for some
 *                          function of the kernel (map and zipWith: by the
 *                          loop vectoriser, or emitted over vector lanes,
 *                          "SPMD-vectorised", by skeletons-ir/spmd.c); the exp
 * and Black-Scholes kernels call no function (exp and log are vector code,
 * codegen/vmath.c), the sin kernel none but sinf (for the lanes beyond its
 * vector code's range).
 *
 * Compiling for a named CPU needs only LLVM's X86 target, not such a CPU,
 * so the test runs on any x86-64 host (with or without AVX-512); on other
 * hosts it is skipped, since the names are x86 names.
 */
#include <unistd.h>

#include "tu.h"

typedef enum kind {
    K_MAP,
    K_ZIP,
    K_FOLD,
    K_FOLD_ALL,
    K_AT,
    K_EXP,
    K_BS,
    K_SIN
} kind;
static const char *const kind_names[] = {
    "map",           "zipwith", "fold",          "fold_all",
    "fold of reads", "map exp", "Black-Scholes", "map sin"};

/* N(d), the cumulative normal distribution, as examples/blackscholes.c
 * writes it (f32): a rational approximation with exp and a conditional. */
static weft_exp *cnd(weft_program *p, weft_exp *d)
{
    static const double coeff[5] = {0.31938153, -0.356563782, 1.781477937,
                                    -1.821255978, 1.330274429};
    weft_exp *k =
        weft_fdiv(weft_f32(p, 1),
                  weft_add(weft_f32(p, 1),
                           weft_mul(weft_f32(p, 0.2316419f), weft_abs(d))));
    weft_exp *poly = weft_f32(p, (float)coeff[4]);
    for (int i = 3; i >= 0; i--) {
        poly = weft_add(weft_f32(p, (float)coeff[i]), weft_mul(k, poly));
    }
    weft_exp *c = weft_mul(
        weft_mul(weft_f32(p, 0.39894228f),
                 weft_fexp(weft_mul(weft_f32(p, -0.5f), weft_mul(d, d)))),
        weft_mul(k, poly));
    return weft_cond(weft_gt(d, weft_f32(p, 0)), weft_sub(weft_f32(p, 1), c),
                     c);
}

/* The call price of Black-Scholes (s, x, t): log, sqrt, exp, division and
 * conditionals, f32. */
static weft_acc *black_scholes(weft_program *p, weft_acc *ss, weft_acc *xs,
                               weft_acc *ts)
{
    weft_fun *f = weft_fun3(p, WEFT_F32, WEFT_F32, WEFT_F32);
    weft_exp *s = weft_arg(f, 0), *x = weft_arg(f, 1), *t = weft_arg(f, 2);
    weft_exp *r = weft_f32(p, 0.02f), *v = weft_f32(p, 0.30f);
    weft_exp *v_sqrtt = weft_mul(v, weft_sqrt(t));
    weft_exp *drift = weft_add(r, weft_mul(weft_f32(p, 0.5f), weft_mul(v, v)));
    weft_exp *d1 = weft_fdiv(
        weft_add(weft_log(weft_fdiv(s, x)), weft_mul(drift, t)), v_sqrtt);
    weft_exp *d2 = weft_sub(d1, v_sqrtt);
    weft_exp *x_exprt = weft_mul(x, weft_fexp(weft_mul(weft_neg(r), t)));
    weft_fun_return(
        f, weft_sub(weft_mul(s, cnd(p, d1)), weft_mul(x_exprt, cnd(p, d2))));
    return weft_zipwith3(f, ss, xs, ts);
}

/* Does the text contain any of the words (a NULL-terminated list)? */
static bool has_any(const char *text, const char *const *words)
{
    for (int i = 0; words[i]; i++) {
        if (strstr(text, words[i])) {
            return true;
        }
    }
    return false;
}

/* Whether every call in the assembly text calls fn (NULL: there is no
 * call). */
static bool calls_only(const char *text, const char *fn)
{
    for (const char *q = text; (q = strstr(q, "call")) != NULL; q++) {
        q += strcspn(q, " \t");
        q += strspn(q, " \t");
        if (!fn || strncmp(q, fn, strlen(fn)) != 0 ||
            (q[strlen(fn)] != '@' && q[strlen(fn)] != '\n')) {
            return false;
        }
    }
    return true;
}

/* Build the program of kind k on type t, compile it for cpu with dumps
 * into a fresh directory, and check the assembly and the report. */
static void check_kernel(const char *cpu, kind k, weft_type t)
{
    char dir[] = "/tmp/weft-vec-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.threads = 1;
    cfg.flags = WEFT_FLAG_NO_ENV;
    cfg.target_cpu = cpu;
    cfg.dump = "asm,vec";
    cfg.dump_dir = dir;
    cfg.cache_dir = dir; /* keep cache entries out of the user's cache */
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));

    bool f = t == WEFT_F32;
    weft_acc *a = weft_param(p, t, k == K_FOLD ? 2 : 1);
    weft_acc *b = weft_param(p, t, 1);
    weft_acc *r = NULL;
    weft_fun *add = tu_fun_op2(p, WEFT_OP_ADD, t);
    weft_exp *zero = f ? weft_f32(p, 0) : weft_i32(p, 0);
    switch (k) {
    case K_MAP: {
        weft_fun *g = weft_fun1(p, t);
        weft_exp *two = f ? weft_f32(p, 2) : weft_i32(p, 2);
        weft_exp *one = f ? weft_f32(p, 1) : weft_i32(p, 1);
        weft_fun_return(g, weft_add(weft_mul(weft_arg(g, 0), two), one));
        r = weft_map(g, a);
        break;
    }
    case K_ZIP: r = weft_zipwith(add, a, b); break;
    case K_FOLD: r = weft_fold(add, zero, a); break;
    case K_FOLD_ALL: r = weft_fold_all(add, zero, a); break;
    case K_AT: {
        /* fold (+) 0 (generate (shape a) (\i -> a ! i + b ! i)): reads
         * that check their index against a's and b's extents */
        weft_fun *g = weft_fun1(p, WEFT_DIM(1));
        weft_exp *i = weft_arg(g, 0);
        weft_fun_return(g, weft_add(weft_at(a, i), weft_at(b, i)));
        r = weft_fold(add, zero, weft_generate(weft_shape(a), g));
        break;
    }
    case K_EXP: r = weft_map(tu_fun_op1(p, WEFT_OP_EXP, t), a); break;
    case K_BS: r = black_scholes(p, a, b, weft_param(p, t, 1)); break;
    case K_SIN: r = weft_map(tu_fun_op1(p, WEFT_OP_SIN, t), a); break;
    }
    TU_PROGRAM_OK(p);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));

    /* compile only: running is refused with the named status */
    int64_t sh2[2] = {4, 4};
    weft_array *in[3] = {NULL, NULL, NULL}, *out[1] = {NULL};
    TU_OK(weft_array_create(ctx, t, k == K_FOLD ? 2 : 1, sh2, &in[0]));
    TU_OK(weft_array_create(ctx, t, 1, sh2, &in[1]));
    TU_OK(weft_array_create(ctx, t, 1, sh2, &in[2]));
    TU_STATUS(WEFT_ERR_BACKEND_UNAVAILABLE,
              weft_run(exe, in, k == K_BS ? 3 : 2, out, 1));
    ck_assert_ptr_null(out[0]);
    for (int i = 0; i < 3; i++) {
        weft_array_release(in[i]);
    }

    int nasm = 0, nvec = 0;
    char *text = tu_slurp_dir(dir, ".s", &nasm);
    char *report = tu_slurp_dir(dir, ".vec.txt", &nvec);
    const char *what = kind_names[k];
    const char *tn = f ? "f32" : t == WEFT_F64 ? "f64" : "i32";
    ck_assert_msg(nasm >= 1 && nvec >= 1,
                  "%s %s on %s: %d assembly files, %d reports in %s", what, tn,
                  cpu, nasm, nvec, dir);

    static const char *const ymm[] = {"%ymm", NULL};
    static const char *const ymm_zmm[] = {"%ymm", "%zmm", NULL};
    bool avx512 = strcmp(cpu, "skylake-avx512") == 0;
    ck_assert_msg(has_any(text, avx512 ? ymm_zmm : ymm),
                  "%s %s on %s: no %s register in the assembly", what, tn, cpu,
                  avx512 ? "ymm or zmm" : "ymm");
    /* the packed instruction of the operation: (x * 2 + 1) may become
     * x + x + 1 or a shift; (+) adds */
    static const char *const ps_map[] = {"vaddps", "vmulps", "vfmadd", NULL};
    static const char *const ps_add[] = {"vaddps", NULL};
    static const char *const pd_map[] = {"vpaddd", "vpslld", "vpmulld", NULL};
    static const char *const pd_add[] = {"vpaddd", NULL};
    /* exp, log and sin are computed in double (codegen/vmath.c) */
    static const char *const pd_math[] = {"vmulpd", "vfmadd", NULL};
    const char *const *want = k >= K_EXP ? pd_math
                              : f        ? (k == K_MAP ? ps_map : ps_add)
                                         : (k == K_MAP ? pd_map : pd_add);
    /* no call of libm's exp or log: vector code throughout; sin calls sinf
     * only for the lanes beyond 2^19 pi/2 */
    ck_assert_msg(k < K_EXP || calls_only(text, k == K_SIN ? "sinf" : NULL),
                  "%s %s on %s: the assembly calls a function", what, tn, cpu);
    ck_assert_msg(has_any(text, want),
                  "%s %s on %s: no packed %s in the assembly", what, tn, cpu,
                  want[0]);
    /* the reads' bounds checks leave the vector loop (irce): plain vector
     * loads, no masked ones (vmaskmov with AVX2, a {%k} mask with
     * AVX-512) */
    ck_assert_msg(k != K_AT ||
                      (!strstr(text, "maskmov") && !strstr(text, "{%k")),
                  "%s %s on %s: masked loads in the assembly", what, tn, cpu);
    ck_assert_msg(strstr(report, ": vectorised") != NULL ||
                      strstr(report, ": SLP-vectorised") != NULL ||
                      strstr(report, ": SPMD-vectorised") != NULL,
                  "%s %s on %s: the report says no vectorisation:\n%s", what,
                  tn, cpu, report);
    ck_assert_msg(strstr(report, cpu) != NULL,
                  "%s %s: the report does not name cpu %s:\n%s", what, tn, cpu,
                  report);
    /* the loop vectoriser, not only SLP, for the linear loops */
    ck_assert_msg(strstr(report, ": vectorised, width") != NULL ||
                      strstr(report, ": SPMD-vectorised") != NULL,
                  "%s %s on %s: no vectorised loop in the report:\n%s", what,
                  tn, cpu, report);
    free(text);
    free(report);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    tu_remove_dir(dir);
}

static void check_cpu(const char *cpu)
{
    for (int k = K_MAP; k <= K_AT; k++) {
        check_kernel(cpu, (kind)k, WEFT_F32);
        check_kernel(cpu, (kind)k, WEFT_I32);
    }
    check_kernel(cpu, K_EXP, WEFT_F32);
    check_kernel(cpu, K_EXP, WEFT_F64);
    check_kernel(cpu, K_BS, WEFT_F32);
    check_kernel(cpu, K_SIN, WEFT_F32);
}

START_TEST(x86_64_v3)
{
#if defined(__x86_64__)
    check_cpu("x86-64-v3");
#endif
}
END_TEST

START_TEST(skylake_avx512)
{
#if defined(__x86_64__)
    check_cpu("skylake-avx512");
#endif
}
END_TEST

/* An explicit CPU whose vectors are only 128 bits wide: the same kernels
 * use xmm registers and no ymm, so the checks above do see the target. */
START_TEST(sse_only_target)
{
#if defined(__x86_64__)
    char dir[] = "/tmp/weft-vec-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_CPU;
    cfg.flags = WEFT_FLAG_NO_ENV;
    cfg.target_cpu = "x86-64";
    cfg.dump = "asm";
    cfg.dump_dir = dir;
    cfg.cache_dir = dir;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_program *p = NULL;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *a = weft_param(p, WEFT_F32, 1), *b = weft_param(p, WEFT_F32, 1);
    weft_acc *r = weft_zipwith(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32), a, b);
    weft_executable *exe = NULL;
    TU_OK(weft_compile(p, &r, 1, &exe));
    int n = 0;
    char *text = tu_slurp_dir(dir, ".s", &n);
    ck_assert_int_ge(n, 1);
    ck_assert_msg(strstr(text, "addps") != NULL, "no packed add for x86-64");
    ck_assert_msg(strstr(text, "%ymm") == NULL, "ymm used for x86-64");
    free(text);
    weft_executable_free(exe);
    weft_program_free(p);
    weft_context_free(ctx);
    tu_remove_dir(dir);
#endif
}
END_TEST

static Suite *vectorise_suite(void)
{
    Suite *s = suite_create("vectorise");
    TCase *t = tcase_create("x86");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, x86_64_v3);
    tcase_add_test(t, skylake_avx512);
    tcase_add_test(t, sse_only_target);
    suite_add_tcase(s, t);
    return s;
}

TU_MAIN(vectorise_suite)
