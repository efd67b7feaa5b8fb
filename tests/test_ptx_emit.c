/*
 * tests/test_ptx_emit.c: the PTX target emits PTX that ptxas accepts.
 *
 * Each case builds small kernels with codegen's own API (cg_fn_begin and
 * the entries of cg_target_ptx, no skeletons), finishes them with
 * cg_ptx_finish for an SM and checks the PTX text: the kernel is an
 * .entry, the instructions the target promises are there (sqrt.rn, native
 * atom.* for the common atomics, bar.sync, shfl.sync, vote.sync.ballot,
 * shared memory), and libdevice is linked and resolved (no .extern .func
 * __nv_*, no __nvvm_reflect).  Where ptxas is installed (on $PATH, else
 * /usr/local/cuda/bin/ptxas) every PTX text is also assembled with
 * `ptxas -arch=sm_90`; without it that check is skipped with a note.
 * Nothing here needs a GPU.
 *
 * The kernels:
 *   k_math_T    y[i] = exp(x[i]) + sqrt(x[i]) in a grid-stride loop;
 *   k_all_T     every floating function of the language, y[k] = f(x[k]);
 *   k_atomics   atomic add of i32, i64, f32, f64, CAS of i64, and the
 *               other integer operations; k_narrow the i8 / i16 / half ones;
 *   k_sum_T     a block sum: shuffle_down within warps, shared memory and
 *               a barrier across them, one atomic add per block;
 *   k_vote      ballot, shuffle_idx and shuffle_down of every scalar type,
 *               and the fence.
 * The test also times cg_ptx_finish and prints the times.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Core.h>

#include "cg.h"
#include "fe.h"
#include "tu_ptx.h"

/* ---- harness ---- */

typedef struct kmod {
    weft_context *ctx;
    LLVMContextRef c;
    LLVMModuleRef mod;
    fe_arena ar;
    LLVMTypeRef ptr, i32, i64;
} kmod;

static void km_open(kmod *k)
{
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    ck_assert_msg(weft_context_create(&cfg, &k->ctx) == WEFT_OK, "%s",
                  weft_last_error());
    ck_assert_msg(cg_init() == WEFT_OK, "%s", weft_last_error());
    k->c = LLVMContextCreate();
    k->mod = LLVMModuleCreateWithNameInContext("ptx_test", k->c);
    fe_arena_init(&k->ar, k->ctx);
    k->ptr = LLVMPointerTypeInContext(k->c, 0);
    k->i32 = LLVMInt32TypeInContext(k->c);
    k->i64 = LLVMInt64TypeInContext(k->c);
}

static void km_close(kmod *k)
{
    fe_arena_release(&k->ar);
    LLVMDisposeModule(k->mod);
    LLVMContextDispose(k->c);
    weft_context_free(k->ctx);
}

/* Start kernel `name` taking nptr pointers and an i64 n. */
static void km_begin(kmod *k, cg_fn *fn, const char *name, int nptr)
{
    LLVMTypeRef params[8];
    ck_assert(nptr < 8);
    for (int j = 0; j < nptr; j++) {
        params[j] = k->ptr;
    }
    params[nptr] = k->i64;
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(k->c), params,
                                       (unsigned)nptr + 1, 0);
    ck_assert_msg(cg_fn_begin(fn, k->ctx, &cg_target_ptx, &k->ar, k->mod, name,
                              fty, 0) == WEFT_OK,
                  "%s", weft_last_error());
}

static void km_end(cg_fn *fn)
{
    LLVMBuildRetVoid(fn->b);
    cg_fn_end(fn);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Finish k's module for sm with the given kernels; returns the PTX text
 * (free) and its time in *ms when ms is not NULL. */
static char *km_ptx(kmod *k, int sm, const char *const *names, int n,
                    double *ms)
{
    LLVMTargetMachineRef tm;
    ck_assert_msg(cg_ptx_machine(sm, &tm) == WEFT_OK, "%s", weft_last_error());
    LLVMMemoryBufferRef buf;
    double t0 = now_ms();
    weft_status s = cg_ptx_finish(k->mod, tm, names, n, NULL, NULL, &buf);
    if (ms) {
        *ms = now_ms() - t0;
    }
    ck_assert_msg(s == WEFT_OK, "cg_ptx_finish: %s", weft_last_error());
    size_t len = LLVMGetBufferSize(buf);
    const char *start = LLVMGetBufferStart(buf);
    ck_assert_msg(start[len] == '\0', "PTX text not NUL-terminated");
    char *text = strdup(start);
    LLVMDisposeMemoryBuffer(buf);
    LLVMDisposeTargetMachine(tm);
    return text;
}

#define ASSERT_HAS(text, s)                                                    \
    ck_assert_msg(strstr((text), (s)) != NULL, "PTX lacks \"%s\"", (s))
#define ASSERT_LACKS(text, s)                                                  \
    ck_assert_msg(strstr((text), (s)) == NULL, "PTX has \"%s\"", (s))

/* libdevice linked, resolved and reflected away. */
static void assert_libdevice_done(const char *text)
{
    ASSERT_LACKS(text, ".extern .func __nv_");
    ASSERT_LACKS(text, "__nvvm_reflect");
}

/* ---- a grid-stride loop: for (i = global id; i < n; i += threads) ---- */

typedef struct gs_loop {
    LLVMBasicBlockRef head, exit;
    LLVMValueRef i, stride;
} gs_loop;

static LLVMValueRef zext64(cg_fn *fn, LLVMValueRef x)
{
    return LLVMBuildZExt(fn->b, x, LLVMInt64TypeInContext(fn->llctx), "");
}

static LLVMValueRef gs_begin(cg_fn *fn, gs_loop *l, LLVMValueRef n)
{
    const cg_target *t = fn->target;
    LLVMBuilderRef B = fn->b;
    LLVMValueRef bs = zext64(fn, t->block_size(fn, 0));
    LLVMValueRef start = LLVMBuildAdd(
        B, LLVMBuildMul(B, zext64(fn, t->block_index(fn, 0)), bs, ""),
        zext64(fn, t->thread_index(fn, 0)), "");
    l->stride = LLVMBuildMul(B, bs, zext64(fn, t->grid_size(fn, 0)), "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    l->head = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "gs.head");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "gs.body");
    l->exit = LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "gs.exit");
    LLVMBuildBr(B, l->head);
    LLVMPositionBuilderAtEnd(B, l->head);
    l->i = LLVMBuildPhi(B, LLVMTypeOf(start), "i");
    LLVMAddIncoming(l->i, &start, &pre, 1);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, l->i, n, ""), body,
                    l->exit);
    LLVMPositionBuilderAtEnd(B, body);
    return l->i;
}

static void gs_end(cg_fn *fn, gs_loop *l)
{
    LLVMValueRef next = LLVMBuildAdd(fn->b, l->i, l->stride, "");
    LLVMBasicBlockRef from = LLVMGetInsertBlock(fn->b);
    LLVMAddIncoming(l->i, &next, &from, 1);
    LLVMBuildBr(fn->b, l->head);
    LLVMPositionBuilderAtEnd(fn->b, l->exit);
}

/* ---- kernels ---- */

/* k_math_T: y[i] = exp(x[i]) + sqrt(x[i]). */
static void build_math(kmod *k, const char *name, weft_type t)
{
    cg_fn fn;
    km_begin(k, &fn, name, 2);
    gs_loop l;
    LLVMValueRef i = gs_begin(&fn, &l, LLVMGetParam(fn.fn, 2));
    LLVMValueRef x = cg_load(&fn, t, LLVMGetParam(fn.fn, 0), i), e, r;
    ck_assert(fn.target->math1(&fn, WEFT_OP_EXP, x, &e) == WEFT_OK);
    ck_assert(fn.target->math1(&fn, WEFT_OP_SQRT, x, &r) == WEFT_OK);
    cg_store(&fn, t, LLVMGetParam(fn.fn, 1), i, LLVMBuildFAdd(fn.b, e, r, ""));
    gs_end(&fn, &l);
    km_end(&fn);
}

/* k_all_T: y[k] = f(x[k]) (or f(x[k], x[k + 1])) for every function of a
 * target (lib/fe_ops.h: lower other than inline), k counting them. */
static void build_all_math(kmod *k, const char *name, weft_type t)
{
    cg_fn fn;
    km_begin(k, &fn, name, 2);
    LLVMValueRef x = LLVMGetParam(fn.fn, 0), y = LLVMGetParam(fn.fn, 1);
    int j = 0;
    for (int op = 0; op < WEFT_OP_COUNT_; op++) {
        if (fe_prims[op].lower == FE_LOWER_INLINE) {
            continue;
        }
        LLVMValueRef a = cg_load(&fn, t, x, cg_i64(&fn, j)), r;
        if (fe_prims[op].arity == 1) {
            ck_assert_msg(fn.target->math1(&fn, op, a, &r) == WEFT_OK, "%s",
                          weft_last_error());
        } else {
            LLVMValueRef b = cg_load(&fn, t, x, cg_i64(&fn, j + 1));
            ck_assert_msg(fn.target->math2(&fn, op, a, b, &r) == WEFT_OK, "%s",
                          weft_last_error());
        }
        cg_store(&fn, t, y, cg_i64(&fn, j), r);
        j++;
    }
    km_end(&fn);
}

/* k_atomics(i32 *a, i64 *b, float *c, double *d, i64 *e, n). */
static void build_atomics(kmod *k, const char *name)
{
    cg_fn fn;
    km_begin(k, &fn, name, 5);
    const cg_target *t = fn.target;
    LLVMContextRef c = k->c;
    LLVMValueRef a = LLVMGetParam(fn.fn, 0), b = LLVMGetParam(fn.fn, 1);
    LLVMValueRef n = LLVMGetParam(fn.fn, 5);
    LLVMValueRef x32 = LLVMBuildTrunc(fn.b, n, k->i32, "");
    t->atomic_rmw(&fn, LLVMAtomicRMWBinOpAdd, a, x32);
    t->atomic_rmw(&fn, LLVMAtomicRMWBinOpAdd, b, n);
    t->atomic_rmw(&fn, LLVMAtomicRMWBinOpFAdd, LLVMGetParam(fn.fn, 2),
                  LLVMConstReal(LLVMFloatTypeInContext(c), 1.5));
    t->atomic_rmw(&fn, LLVMAtomicRMWBinOpFAdd, LLVMGetParam(fn.fn, 3),
                  LLVMConstReal(LLVMDoubleTypeInContext(c), 2.5));
    LLVMValueRef old =
        t->atomic_cas(&fn, LLVMGetParam(fn.fn, 4), cg_i64(&fn, 0), n);
    /* the CAS result is used, so that it stays a CAS */
    cg_store(&fn, WEFT_I64, b, cg_i64(&fn, 1), old);
    static const LLVMAtomicRMWBinOp ops[] = {
        LLVMAtomicRMWBinOpMin,  LLVMAtomicRMWBinOpMax,  LLVMAtomicRMWBinOpUMin,
        LLVMAtomicRMWBinOpUMax, LLVMAtomicRMWBinOpAnd,  LLVMAtomicRMWBinOpOr,
        LLVMAtomicRMWBinOpXor,  LLVMAtomicRMWBinOpXchg,
    };
    for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++) {
        t->atomic_rmw(&fn, ops[j], a, x32);
        t->atomic_rmw(&fn, ops[j], b, n);
    }
    old = t->atomic_cas(&fn, a, LLVMConstInt(k->i32, 0, 0), x32);
    cg_store(&fn, WEFT_I32, a, cg_i64(&fn, 1), old);
    km_end(&fn);
}

/* k_narrow(i8 *a, i16 *b, half *c, n): what AtomicExpand widens. */
static void build_narrow(kmod *k, const char *name)
{
    cg_fn fn;
    km_begin(k, &fn, name, 3);
    const cg_target *t = fn.target;
    LLVMTypeRef i8 = LLVMInt8TypeInContext(k->c);
    LLVMTypeRef i16 = LLVMInt16TypeInContext(k->c);
    LLVMValueRef a = LLVMGetParam(fn.fn, 0), b = LLVMGetParam(fn.fn, 1);
    t->atomic_rmw(&fn, LLVMAtomicRMWBinOpAdd, a, LLVMConstInt(i8, 3, 0));
    t->atomic_rmw(&fn, LLVMAtomicRMWBinOpUMax, b, LLVMConstInt(i16, 3, 0));
    t->atomic_rmw(&fn, LLVMAtomicRMWBinOpXchg, a, LLVMConstInt(i8, 5, 0));
    t->atomic_rmw(&fn, LLVMAtomicRMWBinOpFAdd, LLVMGetParam(fn.fn, 2),
                  LLVMConstReal(LLVMHalfTypeInContext(k->c), 1.0));
    LLVMValueRef old =
        t->atomic_cas(&fn, b, LLVMConstInt(i16, 0, 0), LLVMConstInt(i16, 9, 0));
    cg_store(&fn, WEFT_I16, b, cg_i64(&fn, 1), old);
    km_end(&fn);
}

/* x + y of weft type t. */
static LLVMValueRef add_of(cg_fn *fn, weft_type t, LLVMValueRef x,
                           LLVMValueRef y)
{
    return fe_is_float(t) ? LLVMBuildFAdd(fn->b, x, y, "")
                          : LLVMBuildAdd(fn->b, x, y, "");
}

/* The sum of v over the warp, in lane 0. */
static LLVMValueRef warp_sum(cg_fn *fn, weft_type t, LLVMValueRef v)
{
    for (int d = 16; d >= 1; d /= 2) {
        LLVMValueRef o = fn->target->shuffle_down(
            fn, v, LLVMConstInt(LLVMInt32TypeInContext(fn->llctx), d, 0));
        v = add_of(fn, t, v, o);
    }
    return v;
}

/* k_sum_T(T *x, T *out, n): *out += sum of x, one atomic per block. */
static void build_block_sum(kmod *k, const char *name, weft_type t)
{
    cg_fn fn;
    km_begin(k, &fn, name, 2);
    const cg_target *tg = fn.target;
    LLVMBuilderRef B = fn.b;
    LLVMTypeRef ty = cg_type(k->c, t);
    LLVMValueRef zero = LLVMConstNull(ty);
    cg_mut acc;
    ck_assert(cg_mut_new(&fn, t, &acc) == WEFT_OK);
    cg_val z = {1, &zero};
    cg_mut_set(&fn, &acc, &z);
    gs_loop l;
    LLVMValueRef i = gs_begin(&fn, &l, LLVMGetParam(fn.fn, 2));
    cg_val cur;
    ck_assert(cg_mut_get(&fn, &acc, &cur) == WEFT_OK);
    LLVMValueRef s =
        add_of(&fn, t, cur.v[0], cg_load(&fn, t, LLVMGetParam(fn.fn, 0), i));
    cg_val sv = {1, &s};
    cg_mut_set(&fn, &acc, &sv);
    gs_end(&fn, &l);
    B = fn.b;
    ck_assert(cg_mut_get(&fn, &acc, &cur) == WEFT_OK);
    LLVMValueRef v = warp_sum(&fn, t, cur.v[0]);
    LLVMValueRef lane = tg->lane_index(&fn);
    LLVMValueRef tid = tg->thread_index(&fn, 0);
    LLVMValueRef warp = LLVMBuildLShr(B, tid, LLVMConstInt(k->i32, 5, 0), "");
    LLVMValueRef shared = tg->shared_array(&fn, ty, 32);
    LLVMValueRef lane0 =
        LLVMBuildICmp(B, LLVMIntEQ, lane, LLVMConstInt(k->i32, 0, 0), "");
    cg_if f;
    cg_if_begin(&fn, &f, lane0);
    cg_store(&fn, t, shared, zext64(&fn, warp), v);
    cg_if_end(&fn, &f);
    tg->barrier(&fn);
    B = fn.b;
    LLVMValueRef nwarps = LLVMBuildLShr(B, tg->block_size(&fn, 0),
                                        LLVMConstInt(k->i32, 5, 0), "");
    LLVMValueRef w0 =
        LLVMBuildICmp(B, LLVMIntEQ, warp, LLVMConstInt(k->i32, 0, 0), "");
    cg_if_begin(&fn, &f, w0);
    B = fn.b;
    LLVMValueRef have = LLVMBuildICmp(B, LLVMIntULT, lane, nwarps, "");
    LLVMValueRef part = cg_load(&fn, t, shared, zext64(&fn, lane));
    LLVMValueRef w = warp_sum(&fn, t, LLVMBuildSelect(B, have, part, zero, ""));
    cg_if g;
    cg_if_begin(&fn, &g, lane0);
    tg->atomic_rmw(
        &fn, fe_is_float(t) ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd,
        LLVMGetParam(fn.fn, 1), w);
    cg_if_end(&fn, &g);
    cg_if_end(&fn, &f);
    km_end(&fn);
}

/* k_vote(void *in, void *out, n): ballot, shuffles of every type, fence. */
static void build_vote(kmod *k, const char *name)
{
    static const weft_type types[] = {WEFT_BOOL, WEFT_I8,  WEFT_I16, WEFT_I32,
                                      WEFT_I64,  WEFT_F16, WEFT_F32, WEFT_F64};
    cg_fn fn;
    km_begin(k, &fn, name, 2);
    const cg_target *tg = fn.target;
    LLVMValueRef in = LLVMGetParam(fn.fn, 0), out = LLVMGetParam(fn.fn, 1);
    LLVMValueRef tid = zext64(&fn, tg->thread_index(&fn, 0));
    LLVMValueRef x = cg_load(&fn, WEFT_F64, in, tid);
    LLVMValueRef pos = LLVMBuildFCmp(fn.b, LLVMRealOGT, x,
                                     LLVMConstReal(LLVMTypeOf(x), 0.0), "");
    cg_store(&fn, WEFT_I32, out, tid, tg->ballot(&fn, pos));
    LLVMValueRef three = LLVMConstInt(k->i32, 3, 0);
    for (size_t j = 0; j < sizeof types / sizeof types[0]; j++) {
        LLVMValueRef v = cg_load(&fn, types[j], in, tid);
        v = tg->shuffle_idx(&fn, v, three);
        v = tg->shuffle_down(&fn, v, cg_i64(&fn, 1)); /* an i64 delta */
        cg_store(&fn, types[j], out,
                 LLVMBuildAdd(fn.b, tid, cg_i64(&fn, 64 * (int64_t)j + 64), ""),
                 v);
    }
    /* a pointer moves too */
    LLVMValueRef p = tg->shuffle_idx(&fn, in, tg->lane_index(&fn));
    tg->fence(&fn);
    cg_store(&fn, WEFT_I32, p, tid, LLVMConstInt(k->i32, 1, 0));
    km_end(&fn);
}

/* ---- tests ---- */

/* Without libdevice, a module that needs it is refused by name; this runs
 * first, before a success caches libdevice for the process. */
START_TEST(libdevice_missing)
{
    char buf[4096];
    setenv("WEFT_LIBDEVICE", "/nonexistent/libdevice.10.bc", 1);
    ck_assert_int_eq(cg_ptx_libdevice_path(buf, sizeof buf),
                     WEFT_ERR_BACKEND_UNAVAILABLE);
    ck_assert_msg(strstr(weft_last_error(), "/nonexistent/libdevice.10.bc"),
                  "%s", weft_last_error());
    kmod k;
    km_open(&k);
    build_math(&k, "k_math_f32", WEFT_F32);
    LLVMTargetMachineRef tm;
    ck_assert(cg_ptx_machine(90, &tm) == WEFT_OK);
    LLVMMemoryBufferRef ptx;
    const char *names[] = {"k_math_f32"};
    ck_assert_int_eq(cg_ptx_finish(k.mod, tm, names, 1, NULL, NULL, &ptx),
                     WEFT_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_null(ptx);
    LLVMDisposeTargetMachine(tm);
    km_close(&k);
    unsetenv("WEFT_LIBDEVICE");

    /* A bad $CUDA_HOME falls back to the other places; if none has
     * libdevice, the message names every path tried. */
    char *old_home = getenv("CUDA_HOME") ? strdup(getenv("CUDA_HOME")) : NULL;
    setenv("CUDA_HOME", "/nonexistent-cuda", 1);
    weft_status s = cg_ptx_libdevice_path(buf, sizeof buf);
    if (s == WEFT_OK) {
        ck_assert_msg(access(buf, R_OK) == 0, "%s", buf);
        ck_assert(strstr(buf, "/nonexistent-cuda") == NULL);
    } else {
        ck_assert_int_eq(s, WEFT_ERR_BACKEND_UNAVAILABLE);
        const char *m = weft_last_error();
        ck_assert(strstr(m, "/nonexistent-cuda/nvvm/libdevice/"));
        ck_assert(strstr(m, "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"));
        ck_assert(strstr(m, "/usr/lib/nvidia-cuda-toolkit/libdevice/"));
        ck_assert(strstr(m, "/usr/lib/cuda/nvvm/libdevice/"));
    }
    if (old_home) {
        setenv("CUDA_HOME", old_home, 1);
        free(old_home);
    } else {
        unsetenv("CUDA_HOME");
    }
    /* A good $WEFT_LIBDEVICE is taken as is. */
    if (cg_ptx_libdevice_path(buf, sizeof buf) == WEFT_OK) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", buf);
        setenv("WEFT_LIBDEVICE", copy, 1);
        ck_assert(cg_ptx_libdevice_path(buf, sizeof buf) == WEFT_OK);
        ck_assert_str_eq(buf, copy);
        unsetenv("WEFT_LIBDEVICE");
    }
}
END_TEST

/* Whether libdevice is here (else the math tests are skipped). */
static bool have_libdevice(void)
{
    char buf[4096];
    if (cg_ptx_libdevice_path(buf, sizeof buf) != WEFT_OK) {
        printf("note: %s: libdevice tests skipped\n", weft_last_error());
        return false;
    }
    return true;
}

START_TEST(machines)
{
    LLVMTargetMachineRef tm;
    ck_assert_int_eq(cg_ptx_machine(40, &tm), WEFT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(tm);
    ck_assert(strstr(weft_last_error(), "4.0"));
    static const struct {
        int sm;
        const char *cpu;
    } cases[] = {{50, "sm_50"}, {70, "sm_70"},  {75, "sm_75"},
                 {80, "sm_80"}, {88, "sm_87"},  {89, "sm_89"},
                 {90, "sm_90"}, {100, "sm_90"}, {120, "sm_90"}};
    for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++) {
        ck_assert_msg(cg_ptx_machine(cases[j].sm, &tm) == WEFT_OK, "%s",
                      weft_last_error());
        char *cpu = LLVMGetTargetMachineCPU(tm);
        char *triple = LLVMGetTargetMachineTriple(tm);
        ck_assert_str_eq(cpu, cases[j].cpu);
        ck_assert_str_eq(triple, "nvptx64-nvidia-cuda");
        LLVMDisposeMessage(cpu);
        LLVMDisposeMessage(triple);
        LLVMDisposeTargetMachine(tm);
    }
}
END_TEST

START_TEST(math)
{
    if (!have_libdevice()) {
        return;
    }
    static const int sms[] = {90, 70, 120};
    for (size_t j = 0; j < sizeof sms / sizeof sms[0]; j++) {
        kmod k;
        km_open(&k);
        build_math(&k, "k_math_f32", WEFT_F32);
        build_math(&k, "k_math_f64", WEFT_F64);
        const char *names[] = {"k_math_f32", "k_math_f64"};
        char *ptx = km_ptx(&k, sms[j], names, 2, NULL);
        ASSERT_HAS(ptx, sms[j] == 70 ? ".target sm_70" : ".target sm_90");
        ASSERT_HAS(ptx, ".entry k_math_f32");
        ASSERT_HAS(ptx, ".entry k_math_f64");
        ASSERT_HAS(ptx, "sqrt.rn.f32");
        ASSERT_HAS(ptx, "sqrt.rn.f64");
        ASSERT_HAS(ptx, "ex2.approx"); /* __nv_expf, inlined */
        ASSERT_HAS(ptx, "%ctaid.x");
        ASSERT_HAS(ptx, "%nctaid.x");
        assert_libdevice_done(ptx);
        ASSERT_LACKS(ptx, "__nv_"); /* all inlined and dropped */
        tu_assert_assembles(ptx, names[0]);
        free(ptx);
        km_close(&k);
    }
}
END_TEST

/* Fast math: a context with WEFT_FLAG_FAST_MATH gets the approximate
 * instructions for f32 exp, log, sqrt, division and 1 / sqrt. */
START_TEST(fast_math)
{
    kmod k;
    km_open(&k);
    weft_context_free(k.ctx);
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV | WEFT_FLAG_FAST_MATH;
    ck_assert_msg(weft_context_create(&cfg, &k.ctx) == WEFT_OK, "%s",
                  weft_last_error());
    cg_fn fn;
    km_begin(&k, &fn, "k_fast", 2);
    gs_loop l;
    LLVMValueRef i = gs_begin(&fn, &l, LLVMGetParam(fn.fn, 2));
    LLVMValueRef x = cg_load(&fn, WEFT_F32, LLVMGetParam(fn.fn, 0), i);
    LLVMValueRef e, g, r, q, inv, sum;
    ck_assert(fn.target->math1(&fn, WEFT_OP_EXP, x, &e) == WEFT_OK);
    ck_assert(fn.target->math1(&fn, WEFT_OP_LOG, x, &g) == WEFT_OK);
    ck_assert(fn.target->math1(&fn, WEFT_OP_SQRT, x, &r) == WEFT_OK);
    LLVMValueRef a[2] = {e, x};
    ck_assert(cg_prim(&fn, WEFT_OP_FDIV, WEFT_F32, WEFT_F32, WEFT_F32, a, &q) ==
              WEFT_OK);
    a[0] = LLVMConstReal(LLVMFloatTypeInContext(k.c), 1.0);
    a[1] = r;
    ck_assert(cg_prim(&fn, WEFT_OP_FDIV, WEFT_F32, WEFT_F32, WEFT_F32, a,
                      &inv) == WEFT_OK);
    a[0] = q;
    a[1] = inv;
    ck_assert(cg_prim(&fn, WEFT_OP_ADD, WEFT_F32, WEFT_F32, WEFT_F32, a,
                      &sum) == WEFT_OK);
    cg_store(&fn, WEFT_F32, LLVMGetParam(fn.fn, 1), i,
             LLVMBuildFAdd(fn.b, sum, g, ""));
    gs_end(&fn, &l);
    km_end(&fn);
    const char *names[] = {"k_fast"};
    char *ptx = km_ptx(&k, 90, names, 1, NULL);
    ASSERT_HAS(ptx, "ex2.approx");
    ASSERT_HAS(ptx, "lg2.approx");
    ASSERT_HAS(ptx, "div.approx.f32");
    ASSERT_HAS(ptx, "rsqrt.approx.f32");
    ASSERT_LACKS(ptx, "div.rn.f32");
    ASSERT_LACKS(ptx, "__nv_");
    tu_assert_assembles(ptx, "k_fast");
    free(ptx);
    km_close(&k);
}
END_TEST

START_TEST(all_math)
{
    if (!have_libdevice()) {
        return;
    }
    kmod k;
    km_open(&k);
    build_all_math(&k, "k_all_f32", WEFT_F32);
    build_all_math(&k, "k_all_f64", WEFT_F64);
    const char *names[] = {"k_all_f32", "k_all_f64"};
    char *ptx = km_ptx(&k, 90, names, 2, NULL);
    ASSERT_HAS(ptx, ".entry k_all_f32");
    ASSERT_HAS(ptx, ".entry k_all_f64");
    assert_libdevice_done(ptx);
    tu_assert_assembles(ptx, "k_all");
    free(ptx);
    km_close(&k);
}
END_TEST

START_TEST(atomics)
{
    static const int sms[] = {90, 70};
    for (size_t j = 0; j < sizeof sms / sizeof sms[0]; j++) {
        kmod k;
        km_open(&k);
        build_atomics(&k, "k_atomics");
        build_narrow(&k, "k_narrow");
        const char *names[] = {"k_atomics", "k_narrow"};
        char *ptx = km_ptx(&k, sms[j], names, 2, NULL);
        ASSERT_HAS(ptx, ".entry k_atomics");
        ASSERT_HAS(ptx, ".entry k_narrow");
        static const char *const native[] = {
            "atom.global.add.u32",       "atom.global.add.u64",
            "atom.global.add.f32",       "atom.global.add.f64",
            "atom.global.cas.b64",       "atom.global.cas.b32",
            "atom.global.min.s32",       "atom.global.min.s64",
            "atom.global.max.s32",       "atom.global.max.s64",
            "atom.global.min.u32",       "atom.global.min.u64",
            "atom.global.max.u32",       "atom.global.max.u64",
            "atom.global.and.b32",       "atom.global.and.b64",
            "atom.global.or.b32",        "atom.global.or.b64",
            "atom.global.xor.b32",       "atom.global.xor.b64",
            "atom.global.exch.b32",      "atom.global.exch.b64",
            "atom.global.add.noftz.f16", /* PTX 6.3 on sm_70 */
        };
        for (size_t m = 0; m < sizeof native / sizeof native[0]; m++) {
            ASSERT_HAS(ptx, native[m]);
        }
        ASSERT_LACKS(ptx, "__nv_");
        tu_assert_assembles(ptx, "k_atomics");
        free(ptx);
        km_close(&k);
    }
}
END_TEST

START_TEST(block_sum)
{
    kmod k;
    km_open(&k);
    build_block_sum(&k, "k_sum_f32", WEFT_F32);
    build_block_sum(&k, "k_sum_i64", WEFT_I64);
    build_block_sum(&k, "k_sum_f64", WEFT_F64);
    const char *names[] = {"k_sum_f32", "k_sum_i64", "k_sum_f64"};
    char *ptx = km_ptx(&k, 90, names, 3, NULL);
    for (int j = 0; j < 3; j++) {
        char entry[64];
        snprintf(entry, sizeof entry, ".entry %s", names[j]);
        ASSERT_HAS(ptx, entry);
    }
    ASSERT_HAS(ptx, "bar.sync");
    ASSERT_HAS(ptx, "shfl.sync.down.b32");
    ASSERT_HAS(ptx, ".shared .align 16 .b8 weft");
    ASSERT_HAS(ptx, "st.shared.f32");
    ASSERT_HAS(ptx, "ld.shared.f64");
    ASSERT_HAS(ptx, "%laneid");
    ASSERT_HAS(ptx, "atom.global.add.f32");
    ASSERT_HAS(ptx, "atom.global.add.u64");
    ASSERT_HAS(ptx, "atom.global.add.f64");
    ASSERT_LACKS(ptx, ".visible .shared"); /* internal */
    tu_assert_assembles(ptx, "k_sum");
    free(ptx);
    km_close(&k);
}
END_TEST

START_TEST(vote)
{
    kmod k;
    km_open(&k);
    build_vote(&k, "k_vote");
    const char *names[] = {"k_vote"};
    char *ptx = km_ptx(&k, 90, names, 1, NULL);
    ASSERT_HAS(ptx, ".entry k_vote");
    ASSERT_HAS(ptx, "vote.sync.ballot.b32");
    ASSERT_HAS(ptx, "shfl.sync.idx.b32");
    ASSERT_HAS(ptx, "shfl.sync.down.b32");
    ASSERT_HAS(ptx, "membar.gl");
    tu_assert_assembles(ptx, "k_vote");
    free(ptx);
    km_close(&k);
}
END_TEST

/* Errors, the dump file, and the time cg_ptx_finish takes. */
START_TEST(finish_misc)
{
    kmod k;
    km_open(&k);
    build_vote(&k, "k_vote");
    LLVMTargetMachineRef tm;
    ck_assert(cg_ptx_machine(90, &tm) == WEFT_OK);
    LLVMMemoryBufferRef ptx;
    const char *bad[] = {"k_missing"};
    ck_assert_int_eq(cg_ptx_finish(k.mod, tm, bad, 1, NULL, NULL, &ptx),
                     WEFT_ERR_INTERNAL);
    ck_assert(strstr(weft_last_error(), "k_missing"));
    ck_assert_ptr_null(ptx);
    LLVMDisposeTargetMachine(tm);
    km_close(&k);

    /* WEFT_DUMP=ptx: <prefix>.ptx holds the text. */
    char dir[] = "/tmp/weft_ptx_dump_XXXXXX";
    ck_assert(mkdtemp(dir));
    char prefix[64], path[80];
    snprintf(prefix, sizeof prefix, "%s/k_vote", dir);
    snprintf(path, sizeof path, "%s.ptx", prefix);
    km_open(&k);
    build_vote(&k, "k_vote");
    ck_assert(cg_ptx_machine(90, &tm) == WEFT_OK);
    const char *names[] = {"k_vote"};
    ck_assert(cg_ptx_finish(k.mod, tm, names, 1, prefix, NULL, &ptx) ==
              WEFT_OK);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f, "no dump %s", path);
    size_t len = LLVMGetBufferSize(ptx);
    char *back = malloc(len + 1);
    ck_assert_uint_eq(fread(back, 1, len + 1, f), len);
    fclose(f);
    ck_assert(memcmp(back, LLVMGetBufferStart(ptx), len) == 0);
    free(back);
    unlink(path);
    rmdir(dir);
    LLVMDisposeMemoryBuffer(ptx);
    LLVMDisposeTargetMachine(tm);
    km_close(&k);

    /* Times: a small kernel without and with a libdevice call. */
    bool ld = have_libdevice();
    for (int with = 0; with <= (ld ? 1 : 0); with++) {
        double best = 1e9, first = 0;
        for (int rep = 0; rep < 5; rep++) {
            km_open(&k);
            if (with) {
                build_math(&k, "k_math_f32", WEFT_F32);
            } else {
                build_atomics(&k, "k_math_f32");
            }
            double ms;
            const char *n1[] = {"k_math_f32"};
            free(km_ptx(&k, 90, n1, 1, &ms));
            km_close(&k);
            first = rep == 0 ? ms : first;
            best = ms < best ? ms : best;
        }
        printf("note: cg_ptx_finish %s libdevice: first %.2f ms, best of 5 "
               "%.2f ms\n",
               with ? "with" : "without", first, best);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ptx_emit");
    TCase *tc = tcase_create("ptx_emit");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, libdevice_missing);
    tcase_add_test(tc, machines);
    tcase_add_test(tc, math);
    tcase_add_test(tc, all_math);
    tcase_add_test(tc, fast_math);
    tcase_add_test(tc, atomics);
    tcase_add_test(tc, block_sum);
    tcase_add_test(tc, vote);
    tcase_add_test(tc, finish_misc);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
