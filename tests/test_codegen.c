/*
 * tests/test_codegen.c: the scalar code generator agrees with the
 * interpreter.
 *
 * Each case builds, by hand in an arena, a core term over two variables x
 * and y, and a kernel around it with codegen's own helpers:
 *
 *     void k(const T0 *a, const T1 *b, R *r, int64_t n)
 *         for i in [0, n): x = a[i]; y = b[i]; r[i] = term
 *
 * (cg_loop_begin / cg_exp / cg_store), JIT-compiles it with ORC's LLJIT,
 * at -O0 and after "default<O2>", runs it on edge and random inputs, and
 * compares every element with fe_prim_eval (or a C expectation for the
 * control-flow tests).  Inputs on which the interpreter reports an error
 * (division by zero, shifts past the width, out-of-range conversions) are
 * skipped: generated code only promises not to trap on them.
 *
 * Comparison is exact (bitwise for floats, NaN equal to NaN) except for
 * the transcendental functions and pow, where the JIT may reach libm
 * through an intrinsic: there a difference of TRANS_ULP units in the last
 * place of the result type is allowed (which functions those are is
 * lib/fe_ops.h's lower column; prim_table checks that its columns agree).
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "cg.h"
#include "fe.h"
#include "tu.h"

enum { TRANS_ULP = 4 };

/* ---- a small JIT harness --------------------------------------------- */

typedef struct harness {
    weft_context *ctx;
    LLVMOrcLLJITRef jit;
    LLVMOrcThreadSafeContextRef tsc;
    LLVMTargetMachineRef tm;
    const char *passes;    /* NULL: -O0, no passes */
    int count;             /* kernels made, for unique names */
    bool want_ir;          /* keep the optimised IR of each kernel */
    LLVMFastMathFlags fmf; /* for cg_fn.fmf */
    char *ir;              /* the last kernel's IR (LLVMDisposeMessage) */
} harness;

static void check_err(LLVMErrorRef err, const char *what)
{
    if (err) {
        char *m = LLVMGetErrorMessage(err);
        ck_abort_msg("%s: %s", what, m);
    }
}

static void h_open(harness *h, const char *passes)
{
    memset(h, 0, sizeof *h);
    weft_config cfg = weft_config_default();
    cfg.backend = WEFT_BACKEND_INTERP;
    cfg.flags |= WEFT_FLAG_NO_ENV;
    ck_assert_msg(weft_context_create(&cfg, &h->ctx) == WEFT_OK, "%s",
                  weft_last_error());
    ck_assert_msg(cg_init() == WEFT_OK, "%s", weft_last_error());
    check_err(LLVMOrcCreateLLJIT(&h->jit, LLVMOrcCreateLLJITBuilder()),
              "LLJIT");
    h->tsc = LLVMOrcCreateNewThreadSafeContext();
    ck_assert_msg(cg_cpu_machine(NULL, NULL, LLVMCodeGenLevelDefault, &h->tm) ==
                      WEFT_OK,
                  "%s", weft_last_error());
    h->passes = passes;
}

static void h_close(harness *h)
{
    LLVMDisposeMessage(h->ir);
    LLVMDisposeTargetMachine(h->tm);
    LLVMOrcDisposeThreadSafeContext(h->tsc);
    check_err(LLVMOrcDisposeLLJIT(h->jit), "dispose LLJIT");
    weft_context_free(h->ctx);
}

typedef void (*kernel_fn)(const void *a, const void *b, void *r, int64_t n);

/* Gives the array `arr` of the tests: buffer b as i64[n]. */
static weft_status test_array(cg_fn *fn, const fe_term *acc, cg_array *out)
{
    static const weft_type leaf[1] = {WEFT_I64};
    (void)acc;
    out->rank = 1;
    out->nleaf = 1;
    out->leaf = leaf;
    out->readonly = false;
    out->ptr = fe_arena_alloc(fn->arena, sizeof(LLVMValueRef));
    out->extent = fe_arena_alloc(fn->arena, sizeof(LLVMValueRef));
    out->ptr[0] = LLVMGetParam(fn->fn, 1);
    out->extent[0] = LLVMGetParam(fn->fn, 3);
    return WEFT_OK;
}

/* Begin kernel `name` (room for 32 characters), void (ptr a, ptr b,
 * ptr r, i64 n), in a new module of h's context: *fn over arena *ar,
 * with nvar variables.  The caller ends fn and releases ar. */
static void h_begin(harness *h, char *name, LLVMModuleRef *mod, fe_arena *ar,
                    cg_fn *fn, uint32_t nvar)
{
    snprintf(name, 32, "k%d", h->count++);
    LLVMContextRef c = LLVMOrcThreadSafeContextGetContext(h->tsc);
    *mod = LLVMModuleCreateWithNameInContext(name, c);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    LLVMTypeRef params[4] = {ptr, ptr, ptr, i64};
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 4, 0);
    fe_arena_init(ar, h->ctx);
    ck_assert_msg(cg_fn_begin(fn, h->ctx, &cg_target_cpu, ar, *mod, name, fty,
                              nvar) == WEFT_OK,
                  "%s", weft_last_error());
}

/* Verify mod, optimise it with h's passes (if any), keep its IR when h
 * wants it, and JIT it; returns the address of function `name`. */
static uintptr_t h_finish(harness *h, LLVMModuleRef mod, const char *name)
{
    cg_module_target(mod, h->tm);
    ck_assert_msg(cg_verify(mod, "test") == WEFT_OK, "%s", weft_last_error());
    if (h->passes) {
        ck_assert_msg(cg_optimise(mod, h->tm, h->passes, "test") == WEFT_OK,
                      "%s", weft_last_error());
    }
    if (h->want_ir) {
        LLVMDisposeMessage(h->ir);
        h->ir = LLVMPrintModuleToString(mod);
    }
    LLVMOrcThreadSafeModuleRef tsm =
        LLVMOrcCreateNewThreadSafeModule(mod, h->tsc);
    check_err(LLVMOrcLLJITAddLLVMIRModule(
                  h->jit, LLVMOrcLLJITGetMainJITDylib(h->jit), tsm),
              "add module");
    LLVMOrcExecutorAddress addr = 0;
    check_err(LLVMOrcLLJITLookup(h->jit, &addr, name), "lookup");
    ck_assert(addr != 0);
    return (uintptr_t)addr;
}

/* Compile the kernel r[i] = term(x = a[i] : t0, y = b[i] : t1) of result
 * type rt; nvar is the number of variables the term uses (x is 0, y is
 * 1).  t1 == 0: no y. */
static kernel_fn h_kernel(harness *h, const fe_term *term, weft_type t0,
                          weft_type t1, weft_type rt, uint32_t nvar,
                          const fe_var *x, const fe_var *y)
{
    char name[32];
    LLVMModuleRef mod;
    fe_arena ar;
    cg_fn fn;
    h_begin(h, name, &mod, &ar, &fn, nvar);
    fn.array_of = test_array;
    fn.fmf = h->fmf;
    for (unsigned k = 0; k < 3; k++) {
        cg_noalias(&fn, k);
    }
    LLVMValueRef n = LLVMGetParam(fn.fn, 3), i;
    cg_loop loop;
    cg_loop_begin(&fn, &loop, cg_i64(&fn, 0), n, &i);
    cg_val v;
    LLVMValueRef xa = cg_load(&fn, t0, LLVMGetParam(fn.fn, 0), i);
    ck_assert(cg_val_one(&fn, xa, &v) == WEFT_OK);
    ck_assert(cg_bind(&fn, x, &v) == WEFT_OK);
    if (t1) {
        LLVMValueRef yb = cg_load(&fn, t1, LLVMGetParam(fn.fn, 1), i);
        ck_assert(cg_val_one(&fn, yb, &v) == WEFT_OK);
        ck_assert(cg_bind(&fn, y, &v) == WEFT_OK);
    }
    cg_val out;
    weft_status s = cg_exp(&fn, term, &out);
    ck_assert_msg(s == WEFT_OK, "cg_exp: %s", weft_last_error());
    ck_assert_int_eq(out.n, 1);
    cg_store(&fn, rt, LLVMGetParam(fn.fn, 2), i, out.v[0]);
    cg_loop_end(&fn, &loop);
    LLVMBuildRetVoid(fn.b);
    cg_fn_end(&fn);
    fe_arena_release(&ar);

    kernel_fn f;
    uintptr_t p = h_finish(h, mod, name);
    memcpy(&f, &p, sizeof f);
    return f;
}

/* ---- inputs ------------------------------------------------------------ */

static tu_rng rng = {0x9e3779b97f4a7c15ull};

static uint64_t rnd(void)
{
    return tu_rng_u64(&rng);
}

enum { MAXV = 128 };

/* Interesting values of type t (normalised), edges then random. */
static int values(weft_type t, fe_val *v)
{
    int n = 0;
    if (t == WEFT_BOOL) {
        v[n++].u = 0;
        v[n++].u = 1;
        return n;
    }
    if (fe_is_int(t)) {
        static const int64_t edges[] = {0,
                                        1,
                                        2,
                                        3,
                                        5,
                                        7,
                                        8,
                                        15,
                                        16,
                                        31,
                                        32,
                                        63,
                                        64,
                                        65,
                                        100,
                                        -1,
                                        -2,
                                        -3,
                                        -7,
                                        -8,
                                        -100,
                                        INT64_MAX,
                                        INT64_MIN,
                                        INT64_MAX - 1,
                                        INT64_MIN + 1,
                                        0x7f,
                                        0x80,
                                        0xff,
                                        0x7fff,
                                        0x8000,
                                        0xffff,
                                        0x7fffffff,
                                        0x80000000ll,
                                        0xffffffffll};
        for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++) {
            fe_val x;
            x.i = edges[k];
            v[n++] = fe_norm(t, x);
        }
        int w = fe_type_bits(t);
        fe_val m;
        m.u = (uint64_t)1 << (w - 1); /* the signed minimum's bits */
        v[n++] = fe_norm(t, m);
        m.u = ((uint64_t)1 << (w - 1)) - 1;
        v[n++] = fe_norm(t, m);
        while (n < 56) {
            fe_val x;
            x.u = rnd() >> (rnd() % 64);
            v[n++] = fe_norm(t, x);
        }
        return n;
    }
    static const double edges[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   -0.5,
                                   1.5,
                                   2.5,
                                   -2.5,
                                   3.5,
                                   3.7,
                                   -3.7,
                                   0.25,
                                   0.75,
                                   -0.75,
                                   2.0,
                                   10.0,
                                   100.0,
                                   1e10,
                                   -1e10,
                                   65504.0,
                                   70000.0,
                                   2147483647.0,
                                   2147483648.0,
                                   -2147483648.0,
                                   9.3e18,
                                   1.9e19,
                                   1e300,
                                   -1e300,
                                   1e-40,
                                   5e-324,
                                   3.141592653589793,
                                   0.999,
                                   1.001,
                                   127.5,
                                   255.5,
                                   -128.5,
                                   32767.5,
                                   INFINITY,
                                   -INFINITY,
                                   NAN};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++) {
        fe_val x;
        x.f = edges[k];
        v[n++] = fe_norm(t, x);
    }
    while (n < 64) {
        fe_val x;
        double u = (double)(rnd() >> 11) / 9007199254740992.0; /* [0,1) */
        int e = (int)(rnd() % 24) - 12;
        x.f = (u * 2.0 - 1.0) * ldexp(1.0, e);
        v[n++] = fe_norm(t, x);
    }
    return n;
}

/* ---- comparing results ------------------------------------------------- */

/* Bits of a float value of type t, ordered so that adjacent values differ
 * by 1 (negative numbers mirrored below zero). */
static int64_t ordered(weft_type t, double d)
{
    int64_t b;
    if (t == WEFT_F64) {
        memcpy(&b, &d, sizeof b);
    } else if (t == WEFT_F32) {
        float f = (float)d;
        int32_t b32;
        memcpy(&b32, &f, sizeof b32);
        b = b32;
    } else {
        b = (int16_t)fe_half_from_double(d);
    }
    return b < 0 ? INT64_MIN - b : b;
}

static bool same(weft_type t, fe_val want, fe_val got, int ulp)
{
    if (!fe_is_float(t)) {
        return want.u == got.u;
    }
    if (isnan(want.f) || isnan(got.f)) {
        return isnan(want.f) && isnan(got.f);
    }
    int64_t a = ordered(t, want.f), b = ordered(t, got.f);
    int64_t d = a > b ? a - b : b - a;
    return d <= ulp;
}

/* A function of a library (lib/fe_ops.h: lower CALL or VMATH). */
static bool transcendental(weft_op op)
{
    return fe_prim_in_library(op);
}

/* ---- one primitive ----------------------------------------------------- */

static const char *tn(weft_type t)
{
    static const char *names[] = {"?",   "bool", "i8",  "i16", "i32",
                                  "i64", "u8",   "u16", "u32", "u64",
                                  "f16", "f32",  "f64"};
    return fe_is_scalar(t) ? names[t] : "?";
}

/* Check op : (t0, t1) -> rt on all value pairs; returns elements checked. */
static long check_prim(harness *h, weft_op op, weft_type rt, weft_type t0,
                       weft_type t1)
{
    int arity = fe_prims[op].arity;
    fe_var vx = {.id = 0, .type = t0}, vy = {.id = 1, .type = t1};
    fe_term x = {.kind = FE_VAR, .type = t0, .u.var = &vx};
    fe_term y = {.kind = FE_VAR, .type = t1, .u.var = &vy};
    fe_term *kids[2] = {&x, &y};
    fe_term p = {.kind = FE_PRIM,
                 .op = (uint16_t)op,
                 .type = rt,
                 .nkid = arity,
                 .kid = kids};
    kernel_fn f = h_kernel(h, &p, t0, arity == 2 ? t1 : 0, rt, 2, &vx, &vy);

    fe_val xs[MAXV], ys[MAXV];
    int nx = values(t0, xs);
    int ny = arity == 2 ? values(t1, ys) : 1;
    if (arity == 1) {
        ys[0].u = 0;
    }
    int64_t n = (int64_t)nx * ny;
    void *a = calloc((size_t)n, 8), *b = calloc((size_t)n, 8);
    void *r = calloc((size_t)n, 8);
    ck_assert(a && b && r);
    for (int64_t k = 0; k < n; k++) {
        fe_store(t0, a, k, xs[k / ny]);
        if (arity == 2) {
            fe_store(t1, b, k, ys[k % ny]);
        }
    }
    f(a, b, r, n);
    long checked = 0;
    int ulp = transcendental(op) ? TRANS_ULP : 0;
    for (int64_t k = 0; k < n; k++) {
        fe_val in[2] = {fe_load(t0, a, k),
                        arity == 2 ? fe_load(t1, b, k) : xs[0]};
        fe_val want, got = fe_load(rt, r, k);
        if (fe_prim_eval(op, rt, t0, arity == 2 ? t1 : 0, in, &want) !=
            WEFT_OK) {
            continue;
        }
        want = fe_norm(rt, want);
        checked++;
        if (!same(rt, want, got, ulp)) {
            if (fe_is_float(t0)) {
                ck_abort_msg(
                    "%s %s(%s %.17g, %s %.17g) -> %s: interpreter "
                    "%.17g / %llx, compiled %.17g / %llx (%s)",
                    weft_op_name(op), tn(rt), tn(t0), in[0].f, tn(t1), in[1].f,
                    tn(rt), want.f, (unsigned long long)want.u, got.f,
                    (unsigned long long)got.u, h->passes ? h->passes : "O0");
            }
            ck_abort_msg("%s %s(%s %lld, %s %lld) -> %s: interpreter %lld, "
                         "compiled %lld (%s)",
                         weft_op_name(op), tn(rt), tn(t0), (long long)in[0].i,
                         tn(t1), (long long)in[1].i, tn(rt), (long long)want.i,
                         (long long)got.i, h->passes ? h->passes : "O0");
        }
    }
    free(a);
    free(b);
    free(r);
    return checked;
}

static const weft_type ints[] = {WEFT_I8, WEFT_I16, WEFT_I32, WEFT_I64,
                                 WEFT_U8, WEFT_U16, WEFT_U32, WEFT_U64};
static const weft_type flts[] = {WEFT_F16, WEFT_F32, WEFT_F64};
enum { NINT = 8, NFLT = 3 };

/* Every primitive over the types its rule admits. */
static void check_all_prims(const char *passes)
{
    harness h;
    h_open(&h, passes);
    weft_type all[12];
    int nall = 0;
    all[nall++] = WEFT_BOOL;
    for (int k = 0; k < NINT; k++) {
        all[nall++] = ints[k];
    }
    for (int k = 0; k < NFLT; k++) {
        all[nall++] = flts[k];
    }
    for (int op = 0; op < WEFT_OP_COUNT_; op++) {
        long checked = 0;
        switch (fe_prims[op].rule) {
        case FE_RULE_NUM:
            for (int k = 1; k < nall; k++) {
                checked += check_prim(&h, op, all[k], all[k], all[k]);
            }
            break;
        case FE_RULE_INT:
            for (int k = 0; k < NINT; k++) {
                checked += check_prim(&h, op, ints[k], ints[k], ints[k]);
            }
            break;
        case FE_RULE_ORD: /* numeric types and bool */
            for (int k = 0; k < nall; k++) {
                checked += check_prim(&h, op, all[k], all[k], all[k]);
            }
            break;
        case FE_RULE_LOGIC: /* integral types and bool */
            checked += check_prim(&h, op, WEFT_BOOL, WEFT_BOOL, WEFT_BOOL);
            for (int k = 0; k < NINT; k++) {
                checked += check_prim(&h, op, ints[k], ints[k], ints[k]);
            }
            break;
        case FE_RULE_FLT:
            for (int k = 0; k < NFLT; k++) {
                checked += check_prim(&h, op, flts[k], flts[k], flts[k]);
            }
            break;
        case FE_RULE_SHIFT:
            for (int k = 0; k < NINT; k++) {
                checked += check_prim(&h, op, ints[k], ints[k], ints[k]);
            }
            /* amounts of another type than the value */
            checked += check_prim(&h, op, WEFT_I32, WEFT_I32, WEFT_U8);
            checked += check_prim(&h, op, WEFT_U64, WEFT_U64, WEFT_I8);
            checked += check_prim(&h, op, WEFT_I8, WEFT_I8, WEFT_U64);
            checked += check_prim(&h, op, WEFT_U16, WEFT_U16, WEFT_I64);
            break;
        case FE_RULE_BITS:
            for (int k = 0; k < NINT; k++) {
                checked += check_prim(&h, op, WEFT_I32, ints[k], 0);
            }
            break;
        case FE_RULE_FPRED:
            for (int k = 0; k < NFLT; k++) {
                checked += check_prim(&h, op, WEFT_BOOL, flts[k], 0);
            }
            break;
        case FE_RULE_CMP:
            for (int k = 0; k < nall; k++) {
                checked += check_prim(&h, op, WEFT_BOOL, all[k], all[k]);
            }
            break;
        case FE_RULE_BOOL:
            checked += check_prim(&h, op, WEFT_BOOL, WEFT_BOOL, WEFT_BOOL);
            break;
        case FE_RULE_ROUND:
            for (int k = 0; k < NFLT; k++) {
                for (int j = 0; j < NINT; j++) {
                    checked += check_prim(&h, op, ints[j], flts[k], 0);
                }
            }
            break;
        case FE_RULE_CONV:
            for (int k = 0; k < nall; k++) {
                for (int j = 0; j < nall; j++) {
                    checked += check_prim(&h, op, all[j], all[k], 0);
                }
            }
            break;
        case FE_RULE_CAST:
            for (int k = 0; k < nall; k++) {
                for (int j = 0; j < nall; j++) {
                    if (fe_type_bits(all[k]) == fe_type_bits(all[j])) {
                        checked += check_prim(&h, op, all[j], all[k], 0);
                    }
                }
            }
            break;
        }
        ck_assert_msg(checked > 0, "primitive %s was not checked",
                      weft_op_name(op));
    }
    h_close(&h);
}

/* cg_ceil_div, cg_ceil_udiv and cg_ceil_div_small (types.c) against C's
 * division, in a kernel JIT-compiled for the host (every target runs the
 * same IR; the PTX skeletons use them): r[3 i + k] = helper k of a[i] and
 * b[i].  The small division's 16-bit digits are exercised by dividends
 * whose every digit is non-zero and by divisors up to 2^16. */
typedef void (*div_fn)(const int64_t *a, const int64_t *b, int64_t *r,
                       int64_t n);

static div_fn h_div_kernel(harness *h)
{
    char name[32];
    LLVMModuleRef mod;
    fe_arena ar;
    cg_fn fn;
    h_begin(h, name, &mod, &ar, &fn, 0);
    LLVMValueRef i;
    cg_loop loop;
    cg_loop_begin(&fn, &loop, cg_i64(&fn, 0), LLVMGetParam(fn.fn, 3), &i);
    LLVMValueRef a = cg_load(&fn, WEFT_I64, LLVMGetParam(fn.fn, 0), i);
    LLVMValueRef b = cg_load(&fn, WEFT_I64, LLVMGetParam(fn.fn, 1), i);
    LLVMValueRef q[3] = {cg_ceil_div(&fn, a, b), cg_ceil_udiv(&fn, a, b),
                         cg_ceil_div_small(&fn, a, b)};
    for (int k = 0; k < 3; k++) {
        LLVMValueRef at =
            LLVMBuildAdd(fn.b, LLVMBuildMul(fn.b, i, cg_i64(&fn, 3), ""),
                         cg_i64(&fn, k), "");
        cg_store(&fn, WEFT_I64, LLVMGetParam(fn.fn, 2), at, q[k]);
    }
    cg_loop_end(&fn, &loop);
    LLVMBuildRetVoid(fn.b);
    cg_fn_end(&fn);
    fe_arena_release(&ar);
    div_fn f;
    uintptr_t p = h_finish(h, mod, name);
    memcpy(&f, &p, sizeof f);
    return f;
}

START_TEST(ceil_div_helpers)
{
    enum { N = 4096 };
    static const int64_t dv[] = {1,   2,   3,    7,    31,    32,   33,
                                 255, 256, 1000, 4097, 65535, 65536};
    const int ndv = (int)(sizeof dv / sizeof dv[0]);
    static int64_t a[N], b[N], r[3 * N];
    for (int pass = 0; pass < 2; pass++) {
        harness h;
        h_open(&h, pass ? "default<O2>" : NULL);
        div_fn f = h_div_kernel(&h);
        for (int k = 0; k < N; k++) {
            int64_t n =
                k < 8 * ndv ? dv[k % ndv] : 1 + (int64_t)(rnd() % 65536);
            /* a + n - 1 < 2^63: the helpers' domain, [0, top] */
            int64_t top = INT64_MAX - (n - 1);
            uint64_t span = (uint64_t)top + 1;
            int64_t x;
            switch (k % 8) {
            case 0: x = 0; break;
            case 1: x = n - 1; break;
            case 2: x = n; break;
            case 3: x = n + 1; break;
            case 4: x = top; break;
            case 5: x = (int64_t)(0x7fff7fff7fff7fffull % span); break;
            case 6: x = (int64_t)(0xffffffffull * (uint64_t)n % span); break;
            default: x = (int64_t)(rnd() % span); break;
            }
            a[k] = x;
            b[k] = n;
        }
        f(a, b, r, N);
        for (int k = 0; k < N; k++) {
            int64_t want = a[k] / b[k] + (a[k] % b[k] != 0);
            for (int j = 0; j < 3; j++) {
                ck_assert_msg(r[3 * k + j] == want,
                              "helper %d, ceil(%lld / %lld): %lld, not %lld", j,
                              (long long)a[k], (long long)b[k],
                              (long long)r[3 * k + j], (long long)want);
            }
        }
        h_close(&h);
    }
}
END_TEST

START_TEST(prims_O0)
{
    check_all_prims(NULL);
}
END_TEST

START_TEST(prims_O2)
{
    check_all_prims("default<O2>");
}
END_TEST

/* The columns of lib/fe_ops.h agree with each other and with weft_ops.h:
 * a library function is floating, not folded (the compiled code is not
 * the C library's), dear, computed lane by lane (or by the target's
 * vector math) and has a C library and a libdevice function of its
 * arity; weft's own code has no library function; only binary operations
 * have a divisor or an amount. */
START_TEST(prim_table)
{
    for (int op = 0; op < WEFT_OP_COUNT_; op++) {
        const fe_prim_info *p = &fe_prims[op];
        const char *n = weft_op_name(op);
        ck_assert_msg(p->name && n, "primitive %d has no name", op);
        if (fe_prim_in_library(op)) {
            ck_assert_msg(p->rule == FE_RULE_FLT && !p->fold &&
                              p->cost == FE_COST_DEAR &&
                              p->simd == FE_SIMD_LANES && p->libdevice,
                          "%s: a library function", n);
        }
        if (p->lower == FE_LOWER_INLINE) {
            ck_assert_msg(!p->libm && !p->libdevice, "%s: inline", n);
        } else {
            ck_assert_msg(p->libm != NULL, "%s: no libm stem", n);
        }
        bool one = p->libm && p->arity == 1, two = p->libm && p->arity == 2;
        ck_assert_msg(!p->libm1 == !one && !p->libm1f == !one &&
                          !p->libm2 == !two && !p->libm2f == !two,
                      "%s: libm functions of another arity", n);
        if (p->fail == FE_FAIL_DIVISOR || p->fail == FE_FAIL_SHIFT) {
            ck_assert_msg(p->arity == 2, "%s: fails by its operand", n);
        }
    }
    /* one spot check per column against the documented behaviour */
    ck_assert(fe_prims[WEFT_OP_SQRT].fold &&
              fe_prims[WEFT_OP_SQRT].lower == FE_LOWER_LLVM);
    ck_assert(!fe_prims[WEFT_OP_SIN].fold);
    ck_assert_str_eq(fe_prims[WEFT_OP_TANH].libdevice, "tanh");
    ck_assert(fe_prims[WEFT_OP_EXP].lower == FE_LOWER_VMATH);
    ck_assert(fe_prims[WEFT_OP_QUOT].fail == FE_FAIL_DIVISOR &&
              fe_prims[WEFT_OP_QUOT].simd == FE_SIMD_LANES);
    ck_assert(fe_prims[WEFT_OP_ADD].cost == FE_COST_CHEAP &&
              fe_prims[WEFT_OP_FDIV].cost == FE_COST_DEAR);
    ck_assert(fe_prims[WEFT_OP_POW].libm2(2.0, 10.0) == 1024.0);
}
END_TEST

/* ---- control flow, tuples, arrays -------------------------------------- */

/* Terms made in an arena. */
static fe_term *mk(fe_arena *a, int kind, weft_type type, int nkid, fe_term *k0,
                   fe_term *k1, fe_term *k2)
{
    fe_term *t = fe_arena_alloc(a, sizeof *t);
    ck_assert_ptr_nonnull(t);
    t->kind = (uint8_t)kind;
    t->type = type;
    t->nkid = nkid;
    t->kid = fe_arena_alloc(a, 3 * sizeof *t->kid);
    ck_assert_ptr_nonnull(t->kid);
    t->kid[0] = k0;
    t->kid[1] = k1;
    t->kid[2] = k2;
    return t;
}

static fe_term *mk_var(fe_arena *a, fe_var *v)
{
    fe_term *t = mk(a, FE_VAR, v->type, 0, NULL, NULL, NULL);
    t->u.var = v;
    return t;
}

static fe_term *mk_i64(fe_arena *a, int64_t x)
{
    fe_term *t = mk(a, FE_CONST, WEFT_I64, 0, NULL, NULL, NULL);
    t->u.c.i = x;
    return t;
}

static fe_term *mk_prim(fe_arena *a, weft_op op, weft_type type, fe_term *x,
                        fe_term *y)
{
    fe_term *t = mk(a, FE_PRIM, type, y ? 2 : 1, x, y, NULL);
    t->op = (uint16_t)op;
    return t;
}

static fe_term *mk_get(fe_arena *a, weft_type type, fe_term *x, int i)
{
    fe_term *t = mk(a, FE_GET, type, 1, x, NULL, NULL);
    t->u.index = i;
    return t;
}

static fe_fun *mk_fun(fe_arena *a, fe_var *param, fe_term *body)
{
    fe_fun *f = fe_arena_alloc(a, sizeof *f);
    ck_assert_ptr_nonnull(f);
    f->arity = 1;
    f->param = fe_arena_alloc(a, sizeof *f->param);
    f->param[0] = param;
    f->body = body;
    f->ret = body->type;
    return f;
}

/* Run an i64 -> i64 kernel on xs (y = x + 1) and compare with want(). */
static void check_i64_kernel(harness *h, const fe_term *term, uint32_t nvar,
                             fe_var *x, fe_var *y, int64_t (*want)(int64_t),
                             const int64_t *xs, int64_t n)
{
    kernel_fn f = h_kernel(h, term, WEFT_I64, WEFT_I64, WEFT_I64, nvar, x, y);
    int64_t *b = malloc((size_t)n * 8), *r = malloc((size_t)n * 8);
    ck_assert(b && r);
    for (int64_t k = 0; k < n; k++) {
        b[k] = xs[k] + 1;
    }
    f(xs, b, r, n);
    for (int64_t k = 0; k < n; k++) {
        ck_assert_msg(r[k] == want(xs[k]), "x = %lld: want %lld, got %lld",
                      (long long)xs[k], (long long)want(xs[k]),
                      (long long)r[k]);
    }
    free(b);
    free(r);
}

static int64_t cond_want(int64_t x)
{
    return x > 10 ? x * 3 : (x < 0 ? -x : x / 2);
}

static int64_t collatz_want(int64_t x)
{
    int64_t steps = 0;
    while (x != 1) {
        x = x % 2 == 0 ? x / 2 : 3 * x + 1;
        steps++;
    }
    return steps;
}

static int64_t tuple_want(int64_t x)
{
    return (x + 1) * 7 - x;
}

static void range_test(const char *passes, int which)
{
    harness h;
    h_open(&h, passes);
    fe_arena ar;
    fe_arena_init(&ar, h.ctx);
    const weft_type I = WEFT_I64;
    fe_var vx = {.id = 0, .type = I}, vy = {.id = 1, .type = I};
    int64_t xs[200];
    for (int k = 0; k < 200; k++) {
        xs[k] = k - 20;
    }
    if (which == 0) {
        /* x > 10 ? x * 3 : (x < 0 ? -x : quot x 2) */
        fe_term *x = mk_var(&ar, &vx);
        fe_term *inner =
            mk(&ar, FE_COND, I, 3,
               mk_prim(&ar, WEFT_OP_LT, WEFT_BOOL, x, mk_i64(&ar, 0)),
               mk_prim(&ar, WEFT_OP_NEG, I, x, NULL),
               mk_prim(&ar, WEFT_OP_QUOT, I, x, mk_i64(&ar, 2)));
        fe_term *t = mk(&ar, FE_COND, I, 3,
                        mk_prim(&ar, WEFT_OP_GT, WEFT_BOOL, x, mk_i64(&ar, 10)),
                        mk_prim(&ar, WEFT_OP_MUL, I, x, mk_i64(&ar, 3)), inner);
        check_i64_kernel(&h, t, 2, &vx, &vy, cond_want, xs, 200);
    } else if (which == 1) {
        /* get 1 (while (\s -> get 0 s /= 1)
         *              (\s -> (even n ? n `quot` 2 : 3n+1, get 1 s + 1))
         *              (x, 0)) over x in 1..180 */
        weft_type pair;
        const weft_type comps[2] = {I, I};
        ck_assert(fe_type_tuple(h.ctx, 2, comps, &pair) == WEFT_OK);
        fe_var vs = {.id = 2, .type = pair}, vt = {.id = 3, .type = pair};
        fe_term *s = mk_var(&ar, &vs), *t = mk_var(&ar, &vt);
        fe_term *cond = mk_prim(&ar, WEFT_OP_NE, WEFT_BOOL,
                                mk_get(&ar, I, s, 0), mk_i64(&ar, 1));
        fe_term *n = mk_get(&ar, I, t, 0);
        fe_term *even = mk_prim(&ar, WEFT_OP_EQ, WEFT_BOOL,
                                mk_prim(&ar, WEFT_OP_MOD, I, n, mk_i64(&ar, 2)),
                                mk_i64(&ar, 0));
        fe_term *next =
            mk(&ar, FE_COND, I, 3, even,
               mk_prim(&ar, WEFT_OP_QUOT, I, n, mk_i64(&ar, 2)),
               mk_prim(&ar, WEFT_OP_ADD, I,
                       mk_prim(&ar, WEFT_OP_MUL, I, n, mk_i64(&ar, 3)),
                       mk_i64(&ar, 1)));
        fe_term *body = mk(
            &ar, FE_TUPLE, pair, 2, next,
            mk_prim(&ar, WEFT_OP_ADD, I, mk_get(&ar, I, t, 1), mk_i64(&ar, 1)),
            NULL);
        fe_term *init =
            mk(&ar, FE_TUPLE, pair, 2, mk_var(&ar, &vx), mk_i64(&ar, 0), NULL);
        fe_term *w = mk(&ar, FE_WHILE, pair, 1, init, NULL, NULL);
        w->nfun = 2;
        w->fun = fe_arena_alloc(&ar, 2 * sizeof *w->fun);
        w->fun[0] = mk_fun(&ar, &vs, cond);
        w->fun[1] = mk_fun(&ar, &vt, body);
        for (int k = 0; k < 200; k++) {
            xs[k] = k + 1;
        }
        check_i64_kernel(&h, mk_get(&ar, I, w, 1), 4, &vx, &vy, collatz_want,
                         xs, 200);
    } else {
        /* let p = ((y, 7), x) in get 0 (get 0 p) * get 1 (get 0 p) - get 1 p
         * (a nested tuple through let and projections) */
        weft_type inner, outer;
        const weft_type ci[2] = {I, I};
        ck_assert(fe_type_tuple(h.ctx, 2, ci, &inner) == WEFT_OK);
        const weft_type co[2] = {inner, I};
        ck_assert(fe_type_tuple(h.ctx, 2, co, &outer) == WEFT_OK);
        fe_var vp = {.id = 2, .type = outer};
        fe_term *tup = mk(
            &ar, FE_TUPLE, outer, 2,
            mk(&ar, FE_TUPLE, inner, 2, mk_var(&ar, &vy), mk_i64(&ar, 7), NULL),
            mk_var(&ar, &vx), NULL);
        fe_term *p = mk_var(&ar, &vp);
        fe_term *p0 = mk_get(&ar, inner, p, 0);
        fe_term *body =
            mk_prim(&ar, WEFT_OP_SUB, I,
                    mk_prim(&ar, WEFT_OP_MUL, I, mk_get(&ar, I, p0, 0),
                            mk_get(&ar, I, p0, 1)),
                    mk_get(&ar, I, p, 1));
        fe_term *let = mk(&ar, FE_LET, I, 2, tup, body, NULL);
        let->u.var = &vp;
        check_i64_kernel(&h, let, 3, &vx, &vy, tuple_want, xs, 200);
    }
    fe_arena_release(&ar);
    h_close(&h);
}

START_TEST(cond)
{
    range_test(NULL, 0);
    range_test("default<O2>", 0);
}
END_TEST

START_TEST(while_collatz)
{
    range_test(NULL, 1);
    range_test("default<O2>", 1);
}
END_TEST

START_TEST(tuple_let_get)
{
    range_test(NULL, 2);
    range_test("default<O2>", 2);
}
END_TEST

/* Short-circuit `and` guards an array access (arr = b, extent n):
 * x >= 0 && x < size arr && arr !! x == x + 1 ... where x is mostly far
 * outside the array, so evaluating the right side would fault.  Also
 * FE_SHAPE, FE_SHAPE_SIZE, FE_AT with a DIM1 index, to/from index. */
static int64_t guard_want(int64_t x)
{
    return x >= 0 && x < 64 ? 1 : 0;
}

static int64_t index_want(int64_t x)
{
    /* shape (3, 4, 5): from_index then to_index is the identity, plus the
     * middle component */
    int64_t m = (x / 5) % 4;
    return x + 1000 * m;
}

START_TEST(arrays_and_short_circuit)
{
    harness h;
    h_open(&h, "default<O2>");
    fe_arena ar;
    fe_arena_init(&ar, h.ctx);
    const weft_type I = WEFT_I64;
    fe_var vx = {.id = 0, .type = I}, vy = {.id = 1, .type = I};
    fe_term *arr = mk(&ar, FE_PARAM, I, 0, NULL, NULL, NULL);
    arr->acc = true;
    arr->rank = 1;
    fe_term *x = mk_var(&ar, &vx);
    fe_term *size =
        mk(&ar, FE_SHAPE_SIZE, I, 1,
           mk(&ar, FE_SHAPE, WEFT_DIM(1), 1, arr, NULL, NULL), NULL, NULL);
    fe_term *ix = mk(&ar, FE_TUPLE, WEFT_DIM(1), 1, x, NULL, NULL);
    fe_term *at = mk(&ar, FE_AT, I, 2, arr, ix, NULL);
    /* arr ! (x) == x + 1 is true inside (b[k] = xs[k] + 1 and xs[k] = k
     * there) */
    fe_term *hit = mk_prim(&ar, WEFT_OP_EQ, WEFT_BOOL, at,
                           mk_prim(&ar, WEFT_OP_ADD, I, x, mk_i64(&ar, 1)));
    fe_term *inside =
        mk_prim(&ar, WEFT_OP_AND, WEFT_BOOL,
                mk_prim(&ar, WEFT_OP_GE, WEFT_BOOL, x, mk_i64(&ar, 0)),
                mk_prim(&ar, WEFT_OP_LT, WEFT_BOOL, x, size));
    fe_term *t = mk_prim(&ar, WEFT_OP_AND, WEFT_BOOL, inside, hit);
    fe_term *r = mk_prim(&ar, WEFT_OP_CONVERT, I, t, NULL);
    int64_t xs[64];
    for (int k = 0; k < 64; k++) {
        xs[k] = k % 2 ? k : (k % 4 ? -((int64_t)1 << 40) : (int64_t)1 << 40);
    }
    /* inside entries are x = k for odd k, whose b[k] is k + 1 */
    check_i64_kernel(&h, r, 2, &vx, &vy, guard_want, xs, 64);

    /* to_index sh (from_index sh x) + 1000 * get 1 (from_index sh x) */
    fe_term *sh = mk(&ar, FE_TUPLE, WEFT_DIM(3), 3, mk_i64(&ar, 3),
                     mk_i64(&ar, 4), mk_i64(&ar, 5));
    fe_term *fi = mk(&ar, FE_FROM_INDEX, WEFT_DIM(3), 2, sh, x, NULL);
    fe_term *ti = mk(&ar, FE_TO_INDEX, I, 2, sh, fi, NULL);
    fe_term *e = mk_prim(
        &ar, WEFT_OP_ADD, I, ti,
        mk_prim(&ar, WEFT_OP_MUL, I, mk_i64(&ar, 1000), mk_get(&ar, I, fi, 1)));
    int64_t ys[200];
    for (int k = 0; k < 200; k++) {
        ys[k] = k;
    }
    check_i64_kernel(&h, e, 2, &vx, &vy, index_want, ys, 200);
    fe_arena_release(&ar);
    h_close(&h);
}
END_TEST

/* A function void name(void) of target tg with nvar variables, in a new
 * module *mod of h's context (the caller disposes of it). */
static void bare_fn(harness *h, fe_arena *ar, const cg_target *tg,
                    const char *name, uint32_t nvar, LLVMModuleRef *mod,
                    cg_fn *fn)
{
    LLVMContextRef c = LLVMOrcThreadSafeContextGetContext(h->tsc);
    *mod = LLVMModuleCreateWithNameInContext(name, c);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), NULL, 0, 0);
    ck_assert(cg_fn_begin(fn, h->ctx, tg, ar, *mod, name, fty, nvar) ==
              WEFT_OK);
}

/* A term codegen cannot emit is WEFT_ERR_INTERNAL with a message. */
START_TEST(errors)
{
    harness h;
    h_open(&h, NULL);
    fe_arena ar;
    fe_arena_init(&ar, h.ctx);
    LLVMModuleRef mod;
    cg_fn fn;
    bare_fn(&h, &ar, &cg_target_cpu, "bad", 2, &mod, &fn);
    fe_var v = {.id = 1, .type = WEFT_I32};
    fe_term *x = mk_var(&ar, &v);
    cg_val out;
    ck_assert_int_eq(cg_exp(&fn, x, &out), WEFT_ERR_INTERNAL);
    ck_assert_ptr_nonnull(strstr(weft_last_error(), "unbound"));
    fe_term *all = mk(&ar, FE_ALL, 0, 0, NULL, NULL, NULL);
    ck_assert_int_eq(cg_exp(&fn, all, &out), WEFT_ERR_INTERNAL);
    fe_term *arr = mk(&ar, FE_PARAM, WEFT_I32, 0, NULL, NULL, NULL);
    arr->acc = true;
    fe_term *sh = mk(&ar, FE_SHAPE, WEFT_DIM(1), 1, arr, NULL, NULL);
    ck_assert_int_eq(cg_exp(&fn, sh, &out), WEFT_ERR_INTERNAL);
    LLVMBuildRetVoid(fn.b);
    cg_fn_end(&fn);
    ck_assert(cg_verify(mod, "test") == WEFT_OK);
    LLVMDisposeModule(mod);
    fe_arena_release(&ar);
    h_close(&h);
}
END_TEST

/* A target whose vector math fails: a fault injected into SPMD code
 * generation. */
static weft_status failing_vmath(cg_fn *fn, weft_op op, LLVMValueRef x,
                                 LLVMValueRef y, LLVMValueRef *out)
{
    (void)fn;
    (void)x;
    (void)y;
    *out = NULL;
    return fe_error(WEFT_ERR_INTERNAL,
                    "weft_compile: injected fault in "
                    "the vector math of %s",
                    weft_op_name(op));
}

/* SPMD code generation tells "cannot vectorise this" (cg_spmd.declined:
 * the skeleton emits scalar code) from a fault, which keeps its status and
 * message and is not declined (the skeleton reports it,
 * skeletons-ir/spmd.c): a term it does not vectorise, a lane count it
 * does not take, and a target whose vector math fails. */
START_TEST(spmd_fault)
{
    harness h;
    h_open(&h, NULL);
    fe_arena ar;
    fe_arena_init(&ar, h.ctx);
    cg_target faulty = cg_target_cpu;
    faulty.vmath = failing_vmath;
    LLVMModuleRef mod;
    cg_fn fn;
    bare_fn(&h, &ar, &faulty, "spmd", 1, &mod, &fn);
    cg_spmd s;
    ck_assert_int_eq(cg_spmd_begin(&s, &fn, 3), WEFT_ERR_INTERNAL);
    ck_assert(s.declined);
    ck_assert_int_eq(cg_spmd_begin(&s, &fn, 4), WEFT_OK);
    ck_assert(!s.declined);
    cg_val out;
    fe_term *all = mk(&ar, FE_ALL, 0, 0, NULL, NULL, NULL);
    ck_assert_int_eq(cg_spmd_exp(&s, all, &out), WEFT_ERR_INTERNAL);
    ck_assert(s.declined);
    ck_assert_int_eq(cg_spmd_begin(&s, &fn, 4), WEFT_OK);
    LLVMValueRef x = cg_spmd_broadcast(
                     &s, LLVMConstReal(LLVMDoubleTypeInContext(fn.llctx), 0.5)),
                 r = NULL;
    ck_assert(cg_spmd_is_varying(x));
    /* cos is a library function (lib/fe_ops.h): the target's vmath */
    ck_assert_int_eq(
        cg_spmd_prim(&s, WEFT_OP_COS, WEFT_F64, WEFT_F64, 0, &x, &r),
        WEFT_ERR_INTERNAL);
    ck_assert_ptr_nonnull(strstr(weft_last_error(), "injected fault"));
    ck_assert(!s.declined);
    /* on the real target the same operation is emitted */
    fn.target = &cg_target_cpu;
    ck_assert_int_eq(
        cg_spmd_prim(&s, WEFT_OP_COS, WEFT_F64, WEFT_F64, 0, &x, &r), WEFT_OK);
    ck_assert(r && cg_spmd_is_varying(r));
    LLVMBuildRetVoid(fn.b);
    cg_fn_end(&fn);
    LLVMDisposeModule(mod);
    fe_arena_release(&ar);
    h_close(&h);
}
END_TEST

/* The canonical counted loop vectorises: an f32 add kernel optimised with
 * default<O3> for x86-64-v3 (AVX2) has 8-wide float vectors, whatever the
 * host CPU (skipped on non-x86-64 hosts). */
START_TEST(loop_vectorises)
{
    char *triple = LLVMGetDefaultTargetTriple();
    bool x86 = strncmp(triple, "x86_64", 6) == 0;
    LLVMDisposeMessage(triple);
    if (!x86) {
        return;
    }
    harness h;
    h_open(&h, "default<O3>");
    LLVMDisposeTargetMachine(h.tm);
    ck_assert_msg(cg_cpu_machine("x86-64-v3", NULL, LLVMCodeGenLevelDefault,
                                 &h.tm) == WEFT_OK,
                  "%s", weft_last_error());
    h.want_ir = true;
    ck_assert(check_prim(&h, WEFT_OP_ADD, WEFT_F32, WEFT_F32, WEFT_F32) > 0);
    ck_assert_msg(strstr(h.ir, "<8 x float>") != NULL, "no <8 x float> in:\n%s",
                  h.ir);
    h_close(&h);

    /* fast-math flags reach the floating arithmetic when asked for */
    h_open(&h, NULL);
    h.want_ir = true;
    h.fmf = LLVMFastMathAllowReassoc;
    ck_assert(check_prim(&h, WEFT_OP_MUL, WEFT_F64, WEFT_F64, WEFT_F64) > 0);
    ck_assert_msg(strstr(h.ir, "fmul reassoc double") != NULL, "%s", h.ir);
    ck_assert_msg(strstr(h.ir, "noalias") != NULL, "%s", h.ir);
    h_close(&h);
}
END_TEST

static void *init_thread(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)cg_init();
}

/* cg_init from several threads at once. */
START_TEST(init_threads)
{
    pthread_t th[8];
    for (int k = 0; k < 8; k++) {
        ck_assert_int_eq(pthread_create(&th[k], NULL, init_thread, NULL), 0);
    }
    for (int k = 0; k < 8; k++) {
        void *r;
        pthread_join(th[k], &r);
        ck_assert_int_eq((int)(intptr_t)r, WEFT_OK);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("codegen");
    TCase *tc = tcase_create("codegen");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, init_threads);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, prim_table);
    tcase_add_test(tc, spmd_fault);
    tcase_add_test(tc, cond);
    tcase_add_test(tc, while_collatz);
    tcase_add_test(tc, tuple_let_get);
    tcase_add_test(tc, arrays_and_short_circuit);
    tcase_add_test(tc, loop_vectorises);
    tcase_add_test(tc, ceil_div_helpers);
    tcase_add_test(tc, prims_O0);
    tcase_add_test(tc, prims_O2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
