/*
 * tests/test_trace.c: WEFT_TRACE files and the compile time by phase.
 *
 * Each test traces a program (an awhile of maps and a dot product) to a
 * file in a temporary directory, frees its contexts (or, for the exit
 * path, leaves a child process that never frees them), reads the file
 * back with cJSON and checks that it is one JSON object whose traceEvents
 * are well formed (name, category, this process, a track, ts and dur not
 * negative) and that every span kind the backend has is there: the
 * frontend's passes, each kernel's IR, optimisation, code generation (the
 * CPU's quick tier on the calling thread, its optimised tier on the
 * background thread's own track), PTX emission and the driver's link,
 * disk cache stores and loads, kernels, launches (with the GPU's device
 * time on a device track), copies and awhile iterations.  weft_stats'
 * phase split is checked to count what the backend does and nothing
 * else.  Built as test_trace (cpu, and the interpreter) and, with
 * -DDT_BACKEND=WEFT_BACKEND_PTX, as test_ptx_trace (77 without a GPU).
 *
 * With "--exit-child FILE CACHE" the binary is the child of the exit
 * test: it traces a run to FILE and returns from main with its context
 * still open.
 */
#include <cjson/cJSON.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tu.h"

enum { N = 1000, LIMIT = 5 }; /* elements; awhile iterations */

/* ---- the program ---------------------------------------------------------- */

/* A context on backend b tracing to path (NULL: none), disk cache in
 * cache, environment ignored, and flags. */
static weft_context *open_ctx(weft_backend b, const char *path,
                              const char *cache, unsigned flags)
{
    weft_config cfg = weft_config_default();
    cfg.backend = b;
    cfg.threads = 2;
    cfg.flags |= WEFT_FLAG_NO_ENV | flags;
    cfg.cache_dir = cache;
    cfg.trace = path;
    weft_context *ctx = NULL;
    TU_OK(weft_context_create(&cfg, &ctx));
    return ctx;
}

/* Compile and run, in ctx: awhile (\x -> unit (x !! 0 < LIMIT)) (map (+1))
 * over 0 .. N-1, and the dot product of 0 .. N-1 with 2; check both
 * results (read on the host: a download on a GPU). */
static void run_program(weft_context *ctx)
{
    weft_program *p;
    TU_OK(weft_program_create(ctx, &p));
    weft_acc *xs = weft_param(p, WEFT_I64, 1);
    weft_acc *fs = weft_param(p, WEFT_F32, 1);
    weft_afun *cond = weft_afun_like(xs);
    weft_acc *cx = weft_afun_arg(cond);
    weft_afun_return(cond, weft_unit(weft_lt(weft_at_linear(cx, weft_i64(p, 0)),
                                             weft_i64(p, LIMIT))));
    weft_afun *body = weft_afun_like(xs);
    weft_fun *inc = weft_fun1(p, WEFT_I64);
    weft_fun_return(inc, weft_add(weft_arg(inc, 0), weft_i64(p, 1)));
    weft_afun_return(body, weft_map(inc, weft_afun_arg(body)));
    weft_fun *twice = weft_fun1(p, WEFT_F32);
    weft_fun_return(twice, weft_mul(weft_arg(twice, 0), weft_f32(p, 2)));
    weft_acc *r[2] = {
        weft_awhile(cond, body, xs),
        weft_fold(tu_fun_op2(p, WEFT_OP_ADD, WEFT_F32), weft_f32(p, 0),
                  weft_map(twice, fs)),
    };
    TU_PROGRAM_OK(p);
    weft_executable *exe;
    TU_OK(weft_compile(p, r, 2, &exe));
    int64_t xi[N];
    double xf[N];
    for (int i = 0; i < N; i++) {
        xi[i] = i;
        xf[i] = i;
    }
    weft_array *in[2] = {tu_arr_i(ctx, WEFT_I64, 1, TU_SH(N), xi),
                         tu_arr_f(ctx, WEFT_F32, 1, TU_SH(N), xf)};
    weft_array *out[2];
    TU_OK(weft_run(exe, in, 2, out, 2));
    const int64_t *a = weft_array_data(out[0], 0);
    ck_assert_ptr_nonnull(a);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(a[i], i + LIMIT); /* LIMIT iterations of +1 */
    }
    const float *s = weft_array_data(out[1], 0);
    ck_assert_ptr_nonnull(s);
    /* 2 * (0 + ... + 999) = 999000: every partial sum is an integer below
     * 2^24, exact in f32 in any order */
    ck_assert_float_eq(*s, 999000.0f);
    tu_release_all(out, 2);
    tu_release_all(in, 2);
    weft_executable_free(exe);
    weft_program_free(p);
}

/* ---- reading a trace -------------------------------------------------------- */

/* The parsed file at path (freed by the caller with cJSON_Delete): an
 * object whose traceEvents is an array, or the test fails. */
static cJSON *load(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no trace file %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    ck_assert_int_gt(n, 0);
    char *text = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(fread(text, 1, (size_t)n, f), n);
    text[n] = '\0';
    fclose(f);
    cJSON *root = cJSON_Parse(text);
    ck_assert_msg(root != NULL, "%s is not JSON (near \"%.40s\")", path,
                  cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
    free(text);
    ck_assert(
        cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "traceEvents")));
    return root;
}

static cJSON *events(cJSON *root)
{
    return cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "no number %s", key);
    return v->valuedouble;
}

/* Every event well formed, the spans of process pid; returns the spans. */
static int check_events(cJSON *root, int pid)
{
    int spans = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events(root))
    {
        const char *ph = str(e, "ph");
        ck_assert_ptr_nonnull(ph);
        ck_assert_ptr_nonnull(str(e, "name"));
        ck_assert_int_eq((int)num(e, "pid"), pid);
        if (strcmp(ph, "M") == 0) {
            continue; /* process and thread names */
        }
        ck_assert_str_eq(ph, "X");
        ck_assert_ptr_nonnull(str(e, "cat"));
        ck_assert_int_ge((int)num(e, "tid"), 1);
        ck_assert(num(e, "ts") >= 0);
        ck_assert(num(e, "dur") >= 0);
        ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(e, "args")));
        spans++;
    }
    return spans;
}

/* The first span named name whose argument key (if not NULL) is the
 * string want, or NULL. */
static const cJSON *find(cJSON *root, const char *name, const char *key,
                         const char *want)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, events(root))
    {
        const char *n = str(e, "name"), *ph = str(e, "ph");
        if (!n || !ph || strcmp(ph, "X") != 0 || strcmp(n, name) != 0) {
            continue;
        }
        if (!key) {
            return e;
        }
        const char *v = str(cJSON_GetObjectItemCaseSensitive(e, "args"), key);
        if (v && strcmp(v, want) == 0) {
            return e;
        }
    }
    return NULL;
}

static int count(cJSON *root, const char *name)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events(root))
    {
        const char *s = str(e, "name"), *ph = str(e, "ph");
        n += s && ph && strcmp(ph, "X") == 0 && strcmp(s, name) == 0;
    }
    return n;
}

/* The name of track tid (its thread_name event), or NULL. */
static const char *track_name(cJSON *root, int tid)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, events(root))
    {
        const char *n = str(e, "name");
        if (n && strcmp(n, "thread_name") == 0 && (int)num(e, "tid") == tid) {
            return str(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
        }
    }
    return NULL;
}

/* Fail unless every span in names[] is in root. */
static void expect(cJSON *root, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        ck_assert_msg(find(root, names[i], NULL, NULL), "no %s span", names[i]);
    }
}

/* A fresh temporary directory into buf. */
static void temp_dir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/weft-trace-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* ---- tests ------------------------------------------------------------------ */

/* Two contexts on one file and one cache: the first compiles, the second
 * finds the kernels on disk; both run.  Every span kind of the backend is
 * in the file, which holds both contexts' compiles. */
START_TEST(test_spans)
{
    char dir[64], path[96], cache[96];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/trace.json", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    weft_context *c1 = open_ctx(DT_BACKEND, path, cache, 0);
    run_program(c1);
    TU_OK(weft_context_wait_optimised(c1)); /* the CPU's disk stores */
    weft_stats st;
    TU_OK(weft_context_stats(c1, &st));
    weft_context *c2 = open_ctx(DT_BACKEND, path, cache, 0);
    run_program(c2);
    weft_stats st2;
    TU_OK(weft_context_stats(c2, &st2));
    ck_assert_int_gt(st2.kernels_loaded, 0);
    weft_context_free(c1); /* the file stays open for c2 */
    weft_context_free(c2);

    cJSON *root = load(path);
    ck_assert_int_gt(check_events(root, (int)getpid()), 20);
    static const char *const common[] = {
        "sharing",   "simplify", "fuse",     "weft_compile",
        "weft_run",  "ir",       "llvm.opt", "disk.store",
        "disk.load", "kernel",   "launch",   "awhile.iter"};
    expect(root, common, sizeof common / sizeof *common);
    ck_assert_int_eq(count(root, "weft_compile"), 2); /* both contexts */
    ck_assert_int_ge(count(root, "awhile.iter"), 2 * LIMIT);
    ck_assert_ptr_nonnull(find(root, "disk.load", "ext",
                               DT_BACKEND == WEFT_BACKEND_PTX ? ".ptx" : ".o"));
    const cJSON *hit = NULL, *e;
    cJSON_ArrayForEach(e, events(root))
    {
        const char *n = str(e, "name");
        if (n && strcmp(n, "disk.load") == 0 &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(e, "args"), "hit"))) {
            hit = e;
        }
    }
    ck_assert_msg(hit != NULL, "no disk.load that hit");
    ck_assert(st.frontend_ms > 0 && st.ir_ms > 0 && st.llvm_opt_ms > 0);
    ck_assert(st.disk_ms > 0);
    if (DT_BACKEND == WEFT_BACKEND_PTX) {
        static const char *const ptx[] = {"ptx.emit", "cuda.module_load",
                                          "kernel.device", "upload",
                                          "download"};
        expect(root, ptx, sizeof ptx / sizeof *ptx);
        const cJSON *dev = find(root, "kernel.device", NULL, NULL);
        ck_assert_int_ge((int)num(dev, "tid"), 1000); /* the device track */
        ck_assert(num(cJSON_GetObjectItemCaseSensitive(dev, "args"),
                      "device_us") >= 0);
        ck_assert_ptr_nonnull(track_name(root, (int)num(dev, "tid")));
        ck_assert(st.ptx_ms > 0 && st.driver_link_ms > 0);
        ck_assert(st.llvm_codegen_ms == 0 && st.jit_link_ms == 0);
        ck_assert(st2.driver_link_ms > 0); /* PTX from disk loaded */
        ck_assert(st2.ptx_ms == 0);        /* nothing emitted */
    } else {
        /* the quick tier on the calling thread, the optimised code on the
         * background thread's own, named track */
        const cJSON *quick = find(root, "llvm.codegen", "level", "quick");
        const cJSON *o3 = find(root, "llvm.codegen", "thread", "background");
        ck_assert_ptr_nonnull(quick);
        ck_assert_ptr_nonnull(o3);
        ck_assert_str_eq(
            str(cJSON_GetObjectItemCaseSensitive(quick, "args"), "thread"),
            "caller");
        ck_assert_str_eq(
            str(cJSON_GetObjectItemCaseSensitive(o3, "args"), "level"), "O3");
        int qt = (int)num(quick, "tid"), bt = (int)num(o3, "tid");
        ck_assert_int_ne(qt, bt);
        ck_assert_int_eq(
            (int)num(find(root, "weft_compile", NULL, NULL), "tid"), qt);
        ck_assert_str_eq(track_name(root, bt), "weft tier-up");
        expect(root, (const char *const[]){"jit.link"}, 1);
        ck_assert(st.llvm_codegen_ms > 0 && st.jit_link_ms > 0);
        ck_assert(st.ptx_ms == 0 && st.driver_link_ms == 0);
        ck_assert(st2.jit_link_ms > 0);      /* objects loaded */
        ck_assert(st2.llvm_codegen_ms == 0); /* nothing emitted */
    }
    cJSON_Delete(root);
    tu_remove_dir(dir);
}
END_TEST

/* The interpreter traces its passes, compiles, runs and awhile
 * iterations, and no kernel; of the phases it counts the frontend's. */
START_TEST(test_interp)
{
    char dir[64], path[96];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/interp.json", dir);
    weft_context *ctx = open_ctx(WEFT_BACKEND_INTERP, path, NULL, 0);
    run_program(ctx);
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    weft_context_free(ctx);
    cJSON *root = load(path);
    check_events(root, (int)getpid());
    static const char *const spans[] = {"sharing",  "simplify",
                                        "fuse",     "weft_compile",
                                        "weft_run", "awhile.iter"};
    expect(root, spans, sizeof spans / sizeof *spans);
    ck_assert_int_eq(count(root, "awhile.iter"), LIMIT);
    ck_assert_int_eq(count(root, "kernel"), 0);
    ck_assert_int_eq(count(root, "ir"), 0);
    ck_assert(st.frontend_ms > 0);
    ck_assert(st.ir_ms == 0 && st.llvm_opt_ms == 0 && st.llvm_codegen_ms == 0 &&
              st.ptx_ms == 0 && st.driver_link_ms == 0 && st.jit_link_ms == 0 &&
              st.disk_ms == 0);
    cJSON_Delete(root);
    tu_remove_dir(dir);
}
END_TEST

static char self_path[4096];

/* A child process that traces a run and exits with its context open: its
 * file is whole JSON all the same (the atexit handler closes it). */
START_TEST(test_exit_without_free)
{
    char dir[64], path[96], cache[96];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/exit.json", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execl(self_path, self_path, "--exit-child", path, cache, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child failed (status %#x)", status);
    cJSON *root = load(path);
    check_events(root, (int)pid);
    static const char *const spans[] = {
        "weft_compile", "ir", "llvm.opt", "weft_run", "kernel", "awhile.iter"};
    expect(root, spans, sizeof spans / sizeof *spans);
    cJSON_Delete(root);
    tu_remove_dir(dir);
}
END_TEST

/* Without a trace the phases are counted all the same; a file that cannot
 * be written fails the context; $WEFT_TRACE is read unless
 * WEFT_FLAG_NO_ENV, and "%p" in it becomes the process id. */
START_TEST(test_config)
{
    char dir[64], cache[96];
    temp_dir(dir, sizeof dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    weft_context *ctx = open_ctx(DT_BACKEND, NULL, cache, 0);
    run_program(ctx);
    weft_stats st;
    TU_OK(weft_context_stats(ctx, &st));
    ck_assert(st.frontend_ms > 0 && st.ir_ms > 0 && st.llvm_opt_ms > 0);
    /* the CPU's disk stores done, or the tier-up thread, orphaned by the
     * free, may still write into dir while it is removed below */
    TU_OK(weft_context_wait_optimised(ctx));
    weft_context_free(ctx);

    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    char bad[128];
    snprintf(bad, sizeof bad, "%s/no/such/dir/t.json", dir);
    cfg.trace = bad;
    ctx = NULL;
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, weft_context_create(&cfg, &ctx));
    ck_assert_ptr_null(ctx);
    ck_assert_ptr_nonnull(strstr(weft_last_error(), "trace"));

    static const char *const names[] = {"WEFT_TRACE"};
    char *saved[1];
    tu_env_aside(names, 1, saved);
    char env[128], want[128];
    snprintf(env, sizeof env, "%s/env-%%p.json", dir);
    snprintf(want, sizeof want, "%s/env-%d.json", dir, (int)getpid());
    setenv("WEFT_TRACE", env, 1);
    cfg.trace = NULL;
    TU_OK(weft_context_create(&cfg, &ctx)); /* NO_ENV: no file */
    weft_context_free(ctx);
    struct stat sb;
    ck_assert_int_ne(stat(want, &sb), 0);
    cfg.flags &= ~WEFT_FLAG_NO_ENV;
    TU_OK(weft_context_create(&cfg, &ctx));
    weft_context_free(ctx);
    tu_env_restore(names, 1, saved);
    cJSON *root = load(want);
    check_events(root, (int)getpid());
    cJSON_Delete(root);
    tu_remove_dir(dir);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_spans);
    tcase_add_test(tc, test_exit_without_free);
    tcase_add_test(tc, test_config);
    if (DT_BACKEND != WEFT_BACKEND_PTX) {
        tcase_add_test(tc, test_interp);
    }
    suite_add_tcase(s, tc);
    return s;
}

/* The child of test_exit_without_free (in a suite of its own, since
 * Check's asserts report to a runner): trace a run to child_args[0], with
 * its disk cache in child_args[1], and exit with the context open. */
static const char *child_args[2];

START_TEST(exit_child)
{
    /* No tiers: a CPU context that exits while its background thread
     * compiles may crash, as LLVM's statics that the thread made first
     * are destroyed before runtime-cpu/jit.c's atexit handler stops it
     * (a fault of that handler, not of the trace). */
    weft_context *ctx = open_ctx(DT_BACKEND, child_args[0], child_args[1],
                                 WEFT_FLAG_NO_TIERING);
    run_program(ctx);
    exit(0); /* ctx is never freed */
}
END_TEST

static int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--exit-child") == 0) {
        child_args[0] = argv[2];
        child_args[1] = argv[3];
        Suite *s = suite_create("trace exit child");
        TCase *tc = tcase_create("child");
        tcase_add_test(tc, exit_child);
        suite_add_tcase(s, tc);
        return run_suite(s);
    }
    if (!tu_backend_here()) {
        return 77;
    }
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) {
        return EXIT_FAILURE;
    }
    self_path[n] = '\0';
    return run_suite(trace_suite());
}
