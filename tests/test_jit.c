/*
 * tests/test_jit.c: the CPU backend's JIT and kernel caches (runtime-cpu/
 * jit.c, over runtime/kcache.c and runtime/disk.c), white-box.
 *
 * Kernels here are built by hand with the LLVM C API in the CPU ABI,
 * void k(int64_t start, int64_t end, const void *args), with args pointing
 * at {const float *a, const float *b, float *out}: out[i] = a[i] + b[i]
 * (or expf(a[i]) + b[i], to see a C library call linked).  Each test works
 * in its own temporary cache directory and removes it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tu.h"

#ifdef WEFT_HAVE_LLVM
#include <llvm-c/TargetMachine.h>

#include "cpu.h"

typedef struct kargs {
    const float *a, *b;
    float *out;
} kargs;

typedef struct builder {
    atomic_int builds;
    bool call_exp;        /* out = expf(a) + b */
    const char *ext_name; /* with call_exp: call this instead of expf */
    bool fail;            /* return an error instead of a module */
    bool wrong_name;      /* define a function of another name */
    int delay_ms;         /* sleep while building (to overlap requests) */
    char name[CPU_SYMBOL_MAX];
} builder;

static weft_status build_add(void *user, LLVMContextRef c, LLVMModuleRef *out)
{
    builder *bd = user;
    atomic_fetch_add(&bd->builds, 1);
    if (bd->delay_ms) {
        usleep((useconds_t)bd->delay_ms * 1000);
    }
    if (bd->fail) {
        return fe_error(WEFT_ERR_UNDEFINED, "build_add: asked to fail");
    }
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("add", c);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(c);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0);
    LLVMTypeRef params[3] = {i64, i64, ptr};
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 3, 0);
    LLVMValueRef f =
        LLVMAddFunction(m, bd->wrong_name ? "other" : bd->name, fty);
    LLVMTypeRef ety = LLVMFunctionType(f32, &f32, 1, 0);
    LLVMValueRef expf_fn =
        bd->call_exp
            ? LLVMAddFunction(m, bd->ext_name ? bd->ext_name : "expf", ety)
            : NULL;
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, f, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c, f, "loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, f, "done");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef start = LLVMGetParam(f, 0), end = LLVMGetParam(f, 1);
    LLVMValueRef args = LLVMGetParam(f, 2);
    LLVMValueRef base[3];
    for (int k = 0; k < 3; k++) {
        LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)k, 0);
        LLVMValueRef p = LLVMBuildGEP2(b, ptr, args, &idx, 1, "");
        base[k] = LLVMBuildLoad2(b, ptr, p, "");
    }
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, start, end, ""), loop,
                    done);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
    LLVMValueRef x =
        LLVMBuildLoad2(b, f32, LLVMBuildGEP2(b, f32, base[0], &i, 1, ""), "");
    LLVMValueRef y =
        LLVMBuildLoad2(b, f32, LLVMBuildGEP2(b, f32, base[1], &i, 1, ""), "");
    if (expf_fn) {
        x = LLVMBuildCall2(b, ety, expf_fn, &x, 1, "");
    }
    LLVMBuildStore(b, LLVMBuildFAdd(b, x, y, ""),
                   LLVMBuildGEP2(b, f32, base[2], &i, 1, ""));
    LLVMValueRef next = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, 0), "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, end, ""), loop, done);
    LLVMValueRef in_v[2] = {start, next};
    LLVMBasicBlockRef in_b[2] = {entry, loop};
    LLVMAddIncoming(i, in_v, in_b, 2);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    *out = m;
    return WEFT_OK;
}

/* The key of the test kernel "what" for j, and its symbol name. */
static void kernel_key(cpu_jit *j, const char *what, uint8_t key[32],
                       builder *bd)
{
    rt_key k;
    cpu_key_begin(j, &k);
    rt_key_add_str(&k, what);
    rt_key_finish(&k, key);
    cpu_jit_symbol(key, 0, bd->name);
}

/* Run the kernel at addr on n elements and check out = f(a) + b. */
static void check_kernel(void *addr, int n, bool exp_first)
{
    ck_assert_ptr_nonnull(addr);
    float *a = malloc(sizeof(float) * (size_t)n);
    float *b = malloc(sizeof(float) * (size_t)n);
    float *o = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i % 64) * 0.25f;
        b[i] = 1000.0f - (float)i;
        o[i] = -1.0f;
    }
    kargs args = {a, b, o};
    cpu_kernel_fn k = (cpu_kernel_fn)(uintptr_t)addr;
    k(0, n / 2, &args); /* two ranges, as a gang would split them */
    k(n / 2, n, &args);
    for (int i = 0; i < n; i++) {
        float want = (exp_first ? expf(a[i]) : a[i]) + b[i];
        ck_assert_msg(fabsf(o[i] - want) <= 1e-5f * fabsf(want),
                      "out[%d] = %g, want %g", i, (double)o[i], (double)want);
    }
    free(a);
    free(b);
    free(o);
}

static char *make_tmpdir(void)
{
    char *t = strdup("/tmp/weft-jit-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t));
    return t;
}

static void remove_tmpdir(char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                unlinkat(dirfd(d), de->d_name, 0);
            }
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

static int count_files(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        n += de->d_name[0] != '.';
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static char *entry_path(cpu_jit *j, const uint8_t key[32], const char *dir)
{
    (void)j;
    char *p = malloc(strlen(dir) + 80);
    char *q = p + sprintf(p, "%s/", dir);
    for (int i = 0; i < 32; i++) {
        q += sprintf(q, "%02x", key[i]);
    }
    strcpy(q, ".o");
    return p;
}

static cpu_jit *open_jit(const char *dir)
{
    cpu_jit_options o = {0};
    o.cache_dir = dir;
    cpu_jit *j = NULL;
    TU_OK(cpu_jit_create(NULL, &o, &j));
    return j;
}

enum { N = 1003 };

START_TEST(compile_memory_disk)
{
    char *dir = make_tmpdir();
    builder bd = {0};
    uint8_t key[32];
    void *addr = NULL;
    const char *sym[1] = {bd.name};
    cpu_jit_stats st;

    cpu_jit *j = open_jit(dir);
    ck_assert(cpu_jit_runnable(j));
    kernel_key(j, "add f32", key, &bd);
    TU_OK(cpu_jit_get(j, key, build_add, &bd, sym, 1, &addr));
    check_kernel(addr, N, false);
    void *again = NULL;
    TU_OK(cpu_jit_get(j, key, build_add, &bd, sym, 1, &again));
    ck_assert_ptr_eq(addr, again);
    ck_assert_int_eq(atomic_load(&bd.builds), 1);
    cpu_jit_stats_get(j, &st);
    ck_assert_msg(st.disk_enabled, "%s", st.disk_note);
    ck_assert_int_eq(st.compiled, 1);
    ck_assert_int_eq(st.memory_hits, 1);
    ck_assert_int_eq(st.disk_loads, 0);
    ck_assert(st.disk_bytes_written > 0);
    ck_assert(st.compile_ms > 0);
    cpu_jit_free(j);

    /* A new JIT on the same directory loads the object and builds nothing. */
    j = open_jit(dir);
    kernel_key(j, "add f32", key, &bd);
    addr = NULL;
    TU_OK(cpu_jit_get(j, key, build_add, &bd, sym, 1, &addr));
    ck_assert_int_eq(atomic_load(&bd.builds), 1);
    cpu_jit_stats_get(j, &st);
    ck_assert_int_eq(st.compiled, 0);
    ck_assert_int_eq(st.disk_loads, 1);
    check_kernel(addr, N, false);
    cpu_jit_free(j);
    remove_tmpdir(dir);
}
END_TEST

/* Damage the disk entry of key in dir: flip a payload byte, or cut it. */
static void damage(const char *path, bool truncate_it)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    if (truncate_it) {
        ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
        return;
    }
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    off_t at = st.st_size - 7;
    unsigned char c;
    ck_assert_int_eq(pread(fd, &c, 1, at), 1);
    c ^= 0x40;
    ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

static void corrupt_case(bool truncate_it)
{
    char *dir = make_tmpdir();
    builder bd = {.call_exp = true};
    uint8_t key[32];
    void *addr = NULL;
    const char *sym[1] = {bd.name};
    cpu_jit_stats st;

    cpu_jit *j = open_jit(dir);
    kernel_key(j, "exp add f32", key, &bd);
    TU_OK(cpu_jit_get(j, key, build_add, &bd, sym, 1, &addr));
    check_kernel(addr, N, true);
    char *path = entry_path(j, key, dir);
    cpu_jit_free(j);

    damage(path, truncate_it);
    j = open_jit(dir);
    TU_OK(cpu_jit_get(j, key, build_add, &bd, sym, 1, &addr));
    cpu_jit_stats_get(j, &st);
    ck_assert_int_eq(atomic_load(&bd.builds), 2); /* recompiled */
    ck_assert_int_eq(st.compiled, 1);
    ck_assert_int_eq(st.disk_loads, 0);
    ck_assert_int_eq(st.disk_rejects, 1);
    check_kernel(addr, N, true);
    cpu_jit_free(j);

    /* ... and rewritten: the next JIT loads it. */
    j = open_jit(dir);
    TU_OK(cpu_jit_get(j, key, build_add, &bd, sym, 1, &addr));
    cpu_jit_stats_get(j, &st);
    ck_assert_int_eq(st.disk_loads, 1);
    ck_assert_int_eq(atomic_load(&bd.builds), 2);
    check_kernel(addr, N, true);
    cpu_jit_free(j);
    free(path);
    remove_tmpdir(dir);
}

START_TEST(corrupt_entry_recompiled)
{
    corrupt_case(false);
}
END_TEST

START_TEST(truncated_entry_recompiled)
{
    corrupt_case(true);
}
END_TEST

typedef struct racer {
    cpu_jit *j;
    const uint8_t *key;
    builder *bd;
    pthread_barrier_t *go;
    void *addr;
    weft_status s;
} racer;

static void *race(void *p)
{
    racer *r = p;
    const char *sym[1] = {r->bd->name};
    pthread_barrier_wait(r->go);
    r->s = cpu_jit_get(r->j, r->key, build_add, r->bd, sym, 1, &r->addr);
    return NULL;
}

START_TEST(concurrent_requests_compile_once)
{
    builder bd = {.delay_ms = 100};
    uint8_t key[32];
    cpu_jit_options o = {.no_disk_cache = true};
    cpu_jit *j = NULL;
    TU_OK(cpu_jit_create(NULL, &o, &j));
    kernel_key(j, "add f32, raced", key, &bd);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 4);
    racer r[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (racer){j, key, &bd, &go, NULL, WEFT_ERR_INTERNAL};
        ck_assert_int_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(r[i].s, WEFT_OK);
        ck_assert_ptr_eq(r[i].addr, r[0].addr);
    }
    pthread_barrier_destroy(&go);
    ck_assert_int_eq(atomic_load(&bd.builds), 1);
    cpu_jit_stats st;
    cpu_jit_stats_get(j, &st);
    ck_assert_int_eq(st.compiled, 1);
    ck_assert_int_eq(st.memory_hits, 3);
    ck_assert(!st.disk_enabled);
    check_kernel(r[0].addr, N, false);
    cpu_jit_free(j);
}
END_TEST

/* Compile the add kernel for cpu (compile-only) and return its assembly
 * and vectorisation report (malloc'd). */
static void compile_for(const char *cpu, int width, char **asm_text,
                        char **vec_text)
{
    char *dir = make_tmpdir();
    cpu_jit_options o = {.cpu = cpu,
                         .prefer_vector_width = width,
                         .dump = CPU_DUMP_ASM | CPU_DUMP_VEC | CPU_DUMP_IR |
                                 CPU_DUMP_OPT_IR,
                         .dump_dir = dir};
    cpu_jit *j = NULL;
    TU_OK(cpu_jit_create(NULL, &o, &j));
    ck_assert(!cpu_jit_runnable(j));
    builder bd = {0};
    uint8_t key[32];
    kernel_key(j, "add f32", key, &bd);
    const char *sym[1] = {bd.name};
    void *addr = (void *)1;
    TU_OK(cpu_jit_get(j, key, build_add, &bd, sym, 1, &addr));
    ck_assert_ptr_null(addr);
    cpu_jit_free(j);
    ck_assert_int_eq(count_files(dir), 4); /* .ll .opt.ll .s .vec.txt */
    char *texts[2] = {NULL, NULL};
    const char *suffix[2] = {".s", ".vec.txt"};
    for (int k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s%s", dir, bd.name, suffix[k]);
        FILE *f = fopen(path, "r");
        ck_assert_msg(f != NULL, "no %s", path);
        texts[k] = calloc(1, 1 << 20);
        fread(texts[k], 1, (1 << 20) - 1, f);
        fclose(f);
    }
    *asm_text = texts[0];
    *vec_text = texts[1];
    remove_tmpdir(dir);
}

START_TEST(vector_code_for_explicit_cpus)
{
    char *t = LLVMGetDefaultTargetTriple();
    bool x86 = strncmp(t, "x86_64", 6) == 0;
    LLVMDisposeMessage(t);
    if (!x86) {
        return; /* the CPU names below are x86's */
    }
    char *as, *vec;
    compile_for("skylake-avx512", 512, &as, &vec);
    ck_assert_msg(strstr(as, "zmm") != NULL, "no zmm in:\n%.2000s", as);
    ck_assert_msg(strstr(vec, "vectorised, width 16") != NULL, "%s", vec);
    free(as);
    free(vec);

    compile_for("skylake-avx512", 0, &as, &vec); /* LLVM prefers 256 here */
    ck_assert_msg(strstr(as, "ymm") != NULL, "no ymm in:\n%.2000s", as);
    free(as);
    free(vec);

    compile_for("x86-64-v3", 0, &as, &vec);
    ck_assert_msg(strstr(as, "ymm") != NULL, "no ymm in:\n%.2000s", as);
    ck_assert_msg(strstr(as, "zmm") == NULL, "zmm for x86-64-v3");
    ck_assert_msg(strstr(vec, "vectorised, width 8") != NULL, "%s", vec);
    free(as);
    free(vec);

    compile_for("x86-64", 0, &as, &vec); /* SSE2 only: xmm */
    ck_assert_msg(strstr(as, "ymm") == NULL, "ymm for x86-64");
    free(as);
    free(vec);
}
END_TEST

START_TEST(errors)
{
    cpu_jit *j = NULL;
    cpu_jit_options o = {.cpu = "no-such-cpu"};
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, cpu_jit_create(NULL, &o, &j));
    ck_assert_ptr_null(j);
    ck_assert(strstr(weft_last_error(), "no-such-cpu") != NULL);
    o = (cpu_jit_options){.dump = CPU_DUMP_ASM};
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, cpu_jit_create(NULL, &o, &j));
    o = (cpu_jit_options){.prefer_vector_width = 300};
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT, cpu_jit_create(NULL, &o, &j));
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT, cpu_jit_create(NULL, NULL, NULL));
    cpu_jit_free(NULL);

    o = (cpu_jit_options){.no_disk_cache = true};
    TU_OK(cpu_jit_create(NULL, &o, &j));
    uint8_t key[32];
    void *addr[2];

    /* The builder's own failure comes back, and a second try runs it again. */
    builder bad = {.fail = true};
    kernel_key(j, "failing", key, &bad);
    const char *sym[2] = {bad.name, "x"};
    TU_STATUS(WEFT_ERR_UNDEFINED,
              cpu_jit_get(j, key, build_add, &bad, sym, 1, addr));
    ck_assert_str_eq(weft_last_error(), "build_add: asked to fail");
    TU_STATUS(WEFT_ERR_UNDEFINED,
              cpu_jit_get(j, key, build_add, &bad, sym, 1, addr));
    ck_assert_int_eq(atomic_load(&bad.builds), 2);
    /* ... and when the builder is fixed, it compiles. */
    bad.fail = false;
    TU_OK(cpu_jit_get(j, key, build_add, &bad, sym, 1, addr));
    check_kernel(addr[0], 17, false);
    /* The same key with another symbol count. */
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
              cpu_jit_get(j, key, build_add, &bad, sym, 2, addr));
    TU_STATUS(WEFT_ERR_INVALID_ARGUMENT,
              cpu_jit_get(j, key, build_add, &bad, sym, 0, addr));
    TU_STATUS(WEFT_ERR_NULL_ARGUMENT,
              cpu_jit_get(j, key, NULL, &bad, sym, 1, addr));

    /* A module without the asked-for function. */
    builder wrong = {.wrong_name = true};
    kernel_key(j, "wrong name", key, &wrong);
    sym[0] = wrong.name;
    TU_STATUS(WEFT_ERR_INTERNAL,
              cpu_jit_get(j, key, build_add, &wrong, sym, 1, addr));
    ck_assert(strstr(weft_last_error(), "defines no function") != NULL);

    /* An undefined external symbol fails at link time, with a message. */
    builder ext = {.call_exp = true};
    kernel_key(j, "unresolved", key, &ext);
    sym[0] = ext.name;
    ext.ext_name = "weft_test_no_such_function";
    TU_STATUS(WEFT_ERR_INTERNAL,
              cpu_jit_get(j, key, build_add, &ext, sym, 1, addr));
    ck_assert_msg(strstr(weft_last_error(), "weft_test_no_such_function") !=
                      NULL,
                  "%s", weft_last_error());
    /* The failed kernel left nothing behind: fixed, it links. */
    ext.ext_name = NULL;
    TU_OK(cpu_jit_get(j, key, build_add, &ext, sym, 1, addr));
    check_kernel(addr[0], 40, true);
    cpu_jit_free(j);
}
END_TEST

START_TEST(compile_given_module)
{
    cpu_jit_options o = {.no_disk_cache = true};
    cpu_jit *j = NULL;
    TU_OK(cpu_jit_create(NULL, &o, &j));
    builder bd = {0};
    uint8_t key[32];
    kernel_key(j, "given", key, &bd);
    const char *sym[1] = {bd.name};
    LLVMContextRef c = LLVMContextCreate();
    for (int round = 0; round < 2; round++) {
        LLVMModuleRef m = NULL;
        TU_OK(build_add(&bd, c, &m));
        void *addr = NULL;
        TU_OK(cpu_jit_compile(j, m, key, sym, 1, &addr));
        check_kernel(addr, 64, false);
    }
    LLVMContextDispose(c);
    cpu_jit_stats st;
    cpu_jit_stats_get(j, &st);
    ck_assert_int_eq(st.compiled, 1);
    ck_assert_int_eq(st.memory_hits, 1);
    cpu_jit_free(j);
}
END_TEST

START_TEST(unusable_cache_dir)
{
    cpu_jit_options o = {.cache_dir = "/proc/weft-cannot-be-here"};
    cpu_jit *j = NULL;
    TU_OK(cpu_jit_create(NULL, &o, &j));
    cpu_jit_stats st;
    cpu_jit_stats_get(j, &st);
    ck_assert(!st.disk_enabled);
    ck_assert_msg(strstr(st.disk_note, "disk cache off") != NULL, "%s",
                  st.disk_note);
    builder bd = {0};
    uint8_t key[32];
    kernel_key(j, "add f32", key, &bd);
    const char *sym[1] = {bd.name};
    void *addr = NULL;
    TU_OK(cpu_jit_get(j, key, build_add, &bd, sym, 1, &addr));
    check_kernel(addr, 100, false);
    cpu_jit_free(j);
}
END_TEST

START_TEST(cache_bounded_oldest_first)
{
    char *dir = make_tmpdir();
    builder a = {0}, b = {0};
    uint8_t ka[32], kb[32];
    void *addr;
    cpu_jit *j = open_jit(dir);
    kernel_key(j, "kernel a", ka, &a);
    kernel_key(j, "kernel b", kb, &b);
    const char *sa[1] = {a.name}, *sb[1] = {b.name};
    TU_OK(cpu_jit_get(j, ka, build_add, &a, sa, 1, &addr));
    cpu_jit_free(j);
    char *pa = entry_path(NULL, ka, dir), *pb = entry_path(NULL, kb, dir);
    struct stat st;
    ck_assert_int_eq(stat(pa, &st), 0);
    usleep(20000); /* distinct modification times */

    cpu_jit_options o = {.cache_dir = dir,
                         .cache_max_bytes = (uint64_t)st.st_size * 3 / 2};
    TU_OK(cpu_jit_create(NULL, &o, &j));
    TU_OK(cpu_jit_get(j, kb, build_add, &b, sb, 1, &addr));
    cpu_jit_free(j);
    ck_assert_int_ne(access(pa, F_OK), 0); /* the older one went */
    ck_assert_int_eq(access(pb, F_OK), 0);
    ck_assert_int_eq(count_files(dir), 1);
    free(pa);
    free(pb);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(cache_dir_from_environment)
{
    char *dir = make_tmpdir();
    char sub[512];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    const char *old_w = getenv("WEFT_CACHE_DIR");
    const char *old_x = getenv("XDG_CACHE_HOME");
    char *saved_w = old_w ? strdup(old_w) : NULL;
    char *saved_x = old_x ? strdup(old_x) : NULL;
    cpu_jit *j = NULL;
    cpu_jit_stats st;

    setenv("WEFT_CACHE_DIR", sub, 1); /* created with mkdir -p */
    TU_OK(cpu_jit_create(NULL, NULL, &j));
    cpu_jit_stats_get(j, &st);
    ck_assert(st.disk_enabled);
    ck_assert_str_eq(st.disk_note, sub);
    cpu_jit_free(j);

    unsetenv("WEFT_CACHE_DIR");
    setenv("XDG_CACHE_HOME", dir, 1);
    TU_OK(cpu_jit_create(NULL, NULL, &j));
    cpu_jit_stats_get(j, &st);
    snprintf(sub, sizeof sub, "%s/weft", dir);
    ck_assert_str_eq(st.disk_note, sub);
    cpu_jit_free(j);

    if (saved_w) {
        setenv("WEFT_CACHE_DIR", saved_w, 1);
    }
    if (saved_x) {
        setenv("XDG_CACHE_HOME", saved_x, 1);
    } else {
        unsetenv("XDG_CACHE_HOME");
    }
    free(saved_w);
    free(saved_x);
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/a", dir);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/weft", dir);
    rmdir(sub);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(keys_and_flags)
{
    cpu_jit_options o = {.no_disk_cache = true};
    cpu_jit *host = NULL, *v3 = NULL;
    TU_OK(cpu_jit_create(NULL, &o, &host));
    o.cpu = "x86-64-v3";
    char *t = LLVMGetDefaultTargetTriple();
    bool x86 = strncmp(t, "x86_64", 6) == 0;
    LLVMDisposeMessage(t);
    builder bd = {0};
    uint8_t k1[32], k2[32], k3[32];
    kernel_key(host, "same", k1, &bd);
    kernel_key(host, "same", k2, &bd);
    ck_assert_mem_eq(k1, k2, 32);
    kernel_key(host, "other", k3, &bd);
    ck_assert(memcmp(k1, k3, 32) != 0);
    if (x86) {
        TU_OK(cpu_jit_create(NULL, &o, &v3));
        kernel_key(v3, "same", k3, &bd); /* the target is in the key */
        ck_assert(memcmp(k1, k3, 32) != 0);
        cpu_jit_free(v3);
    }
    char name[CPU_SYMBOL_MAX];
    cpu_jit_symbol(k1, 12, name);
    ck_assert_int_eq(strlen(name), 3 + 64 + 3);
    ck_assert(strncmp(name, "wk_", 3) == 0);
    ck_assert_str_eq(name + 67, "_12");
    ck_assert_uint_eq(cpu_dump_flags("ir,asm vec"),
                      CPU_DUMP_IR | CPU_DUMP_ASM | CPU_DUMP_VEC);
    ck_assert_uint_eq(cpu_dump_flags("plan,opt-ir"), CPU_DUMP_OPT_IR);
    ck_assert_uint_eq(cpu_dump_flags(NULL), 0);
    cpu_jit_free(host);
}
END_TEST

static Suite *jit_suite(void)
{
    Suite *s = suite_create("jit");
    TCase *tc = tcase_create("jit");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, compile_memory_disk);
    tcase_add_test(tc, corrupt_entry_recompiled);
    tcase_add_test(tc, truncated_entry_recompiled);
    tcase_add_test(tc, concurrent_requests_compile_once);
    tcase_add_test(tc, vector_code_for_explicit_cpus);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, compile_given_module);
    tcase_add_test(tc, unusable_cache_dir);
    tcase_add_test(tc, cache_bounded_oldest_first);
    tcase_add_test(tc, cache_dir_from_environment);
    tcase_add_test(tc, keys_and_flags);
    suite_add_tcase(s, tc);
    return s;
}

TU_MAIN(jit_suite)

#else /* no LLVM: nothing to test */

int main(void)
{
    return 0;
}

#endif
