/*
 * codegen/target_cpu.c: the target interface for the host CPU, and host
 * target machines.
 *
 * A target is a const table of functions (cg_target) that skeletons call
 * for what differs between machines.  On the CPU, exp, log, sin, cos and
 * pow (f32 and f64) are weft's own code (vmath.c), computed in double
 * (pow of f64 partly in double-double) and rounded once for f32, within 1
 * ulp of glibc, so that loops calling them vectorise; sin and cos beyond
 * 2^19 pi/2 (and of infinities and NaN) are the C library's, behind a
 * branch taken only when a lane needs it.  Scalar code and SPMD code
 * (cpu_vmath) emit the same operations, so every lane has the scalar
 * code's bits.  sqrt becomes LLVM's intrinsic, which the optimiser
 * understands and lowers to the instruction; the other floating functions
 * are plain calls of libm's float or double function (tanf / tan, ...),
 * resolved by the JIT in the process.  With fast math f32 exp and log
 * stay in float (cg_vm_expf, cg_vm_logf: within 2 ulp, twice the lanes),
 * vmath.c's polynomials and the calls carry the context's fast-math flags
 * (afn: LLVM may use approximations).  A CPU kernel is given its range
 * [start, end) by the gang, so the GPU entries (thread indices, barriers,
 * shared memory) are NULL.
 * Atomics are LLVM's atomicrmw / cmpxchg, sequentially consistent.
 */
#include <stdio.h>
#include <string.h>

#include "cg.h"

/* The intrinsic or libm base name of a floating function, and whether it
 * is an intrinsic (lib/fe_ops.h: lower LLVM is llvm.<libm>, CALL the C
 * library's libm function); NULL for the others. */
static const char *math_name(weft_op op, bool *intrinsic)
{
    fe_lower how = fe_prims[op].lower;
    *intrinsic = how == FE_LOWER_LLVM;
    return how == FE_LOWER_LLVM || how == FE_LOWER_CALL ? fe_prims[op].libm
                                                        : NULL;
}

/* Whether op on float or double operands is vmath.c's code. */
static bool is_vmath(weft_op op)
{
    return fe_prims[op].lower == FE_LOWER_VMATH;
}

/* op on args (n of them) of float or double, scalar or vector, by vmath.c:
 * f32 widened to double and the result rounded once, or with fast math
 * exp and log of f32 in float. */
static LLVMValueRef cpu_vm(cg_fn *fn, weft_op op, LLVMValueRef *args, int n)
{
    LLVMTypeRef ty = LLVMTypeOf(args[0]);
    bool vec = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
    LLVMTypeRef elt = vec ? LLVMGetElementType(ty) : ty;
    bool single = LLVMGetTypeKind(elt) == LLVMFloatTypeKind;
    if (single && cg_fast_math(fn) &&
        (op == WEFT_OP_EXP || op == WEFT_OP_LOG)) {
        return op == WEFT_OP_EXP ? cg_vm_expf(fn, args[0])
                                 : cg_vm_logf(fn, args[0]);
    }
    LLVMTypeRef dty = LLVMDoubleTypeInContext(fn->llctx);
    if (vec) {
        dty = LLVMVectorType(dty, LLVMGetVectorSize(ty));
    }
    LLVMValueRef w[2];
    for (int k = 0; k < n; k++) {
        w[k] = single ? LLVMBuildFPExt(fn->b, args[k], dty, "") : args[k];
    }
    LLVMValueRef r;
    switch (op) {
    case WEFT_OP_EXP: r = cg_vm_exp(fn, w[0], single); break;
    case WEFT_OP_LOG: r = cg_vm_log(fn, w[0], single); break;
    case WEFT_OP_SIN: r = cg_vm_sincos(fn, w[0], single, false); break;
    case WEFT_OP_COS: r = cg_vm_sincos(fn, w[0], single, true); break;
    case WEFT_OP_POW: r = cg_vm_pow(fn, w[0], w[1], single); break;
    default: r = NULL; break; /* reported by cpu_math */
    }
    return single && r ? LLVMBuildFPTrunc(fn->b, r, ty, "") : r;
}

static weft_status cpu_math(cg_fn *fn, weft_op op, LLVMValueRef *args, int n,
                            LLVMValueRef *out)
{
    LLVMTypeRef ty = LLVMTypeOf(args[0]);
    LLVMTypeKind kind = LLVMGetTypeKind(ty);
    bool intrinsic;
    const char *name = math_name(op, &intrinsic);
    *out = NULL;
    LLVMTypeRef elt = kind == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty;
    LLVMTypeKind ek = LLVMGetTypeKind(elt);
    if ((ek == LLVMFloatTypeKind || ek == LLVMDoubleTypeKind) && is_vmath(op)) {
        *out = cpu_vm(fn, op, args, n);
    } else if (name &&
               (kind == LLVMFloatTypeKind || kind == LLVMDoubleTypeKind)) {
        char buf[32];
        if (intrinsic) {
            snprintf(buf, sizeof buf, "llvm.%s", name);
            *out = cg_intrinsic(fn, buf, &ty, 1, args, n);
        } else {
            snprintf(buf, sizeof buf, "%s%s", name,
                     kind == LLVMFloatTypeKind ? "f" : "");
            *out = cg_libcall(fn, buf, ty, args, n);
        }
        LLVMFastMathFlags f = cg_fast_flags(fn);
        if (*out && f && LLVMCanValueUseFastMathFlags(*out)) {
            LLVMSetFastMathFlags(*out, f);
        }
    }
    if (!*out) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: the CPU target has no function for "
                        "%s on this type",
                        weft_op_name(op));
    }
    return WEFT_OK;
}

static weft_status cpu_math1(cg_fn *fn, weft_op op, LLVMValueRef x,
                             LLVMValueRef *out)
{
    return cpu_math(fn, op, &x, 1, out);
}

static weft_status cpu_math2(cg_fn *fn, weft_op op, LLVMValueRef x,
                             LLVMValueRef y, LLVMValueRef *out)
{
    LLVMValueRef a[2] = {x, y};
    return cpu_math(fn, op, a, 2, out);
}

/* cg_target.vmath: exp, log, sin, cos and pow over vectors are the same
 * code as one lane's (vmath.c), so every lane gets math1's / math2's bits;
 * the other functions decline (spmd.c calls them lane by lane). */
static weft_status cpu_vmath(cg_fn *fn, weft_op op, LLVMValueRef x,
                             LLVMValueRef y, LLVMValueRef *out)
{
    *out = NULL;
    if (!is_vmath(op) || (y != NULL) != (fe_prims[op].arity == 2)) {
        return WEFT_OK;
    }
    LLVMValueRef a[2] = {x, y};
    return cpu_math(fn, op, a, y ? 2 : 1, out);
}

static LLVMValueRef cpu_atomic_rmw(cg_fn *fn, LLVMAtomicRMWBinOp op,
                                   LLVMValueRef p, LLVMValueRef x)
{
    return LLVMBuildAtomicRMW(fn->b, op, p, x,
                              LLVMAtomicOrderingSequentiallyConsistent, 0);
}

static LLVMValueRef cpu_atomic_cas(cg_fn *fn, LLVMValueRef p, LLVMValueRef cmp,
                                   LLVMValueRef x)
{
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(
        fn->b, p, cmp, x, LLVMAtomicOrderingSequentiallyConsistent,
        LLVMAtomicOrderingSequentiallyConsistent, 0);
    return LLVMBuildExtractValue(fn->b, pair, 0, "");
}

/* fn->cancel is the address of the run's fe_cancel (lib/fe.h): call its
 * poll function (the word after `hit`), which reads the context's cancel
 * epoch and the clock.  The call is marked as touching only memory the
 * kernel cannot see, so that it does not keep loads of the kernel's own
 * arrays in the loop. */
static LLVMValueRef cpu_cancel_poll(cg_fn *fn)
{
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef i8 = LLVMInt8TypeInContext(c);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0);
    LLVMValueRef off = LLVMConstInt(LLVMInt64TypeInContext(c), 8, 0);
    LLVMValueRef slot = LLVMBuildGEP2(fn->b, i8, fn->cancel, &off, 1, "");
    LLVMValueRef poll = LLVMBuildLoad2(fn->b, ptr, slot, "cancel.poll");
    LLVMTypeRef fty = LLVMFunctionType(i32, &ptr, 1, 0);
    LLVMValueRef arg = fn->cancel;
    LLVMValueRef r = LLVMBuildCall2(fn->b, fty, poll, &arg, 1, "");
    /* memory(inaccessiblemem: readwrite): ModRef (3) for location 1 */
    unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddCallSiteAttribute(r, LLVMAttributeFunctionIndex,
                             LLVMCreateEnumAttribute(c, mem, 3u << 2));
    LLVMAddCallSiteAttribute(r, LLVMAttributeFunctionIndex,
                             LLVMCreateEnumAttribute(c, nounwind, 0));
    return LLVMBuildICmp(fn->b, LLVMIntNE, r, LLVMConstInt(i32, 0, 0), "");
}

const cg_target cg_target_cpu = {
    .name = "cpu",
    .math1 = cpu_math1,
    .math2 = cpu_math2,
    .poll_every = CG_POLL_EVERY,
    .vmath = cpu_vmath,
    /* A CPU kernel works on the range its arguments give: no thread
     * indices, barriers or shared memory. */
    .thread_index = NULL,
    .block_index = NULL,
    .block_size = NULL,
    .grid_size = NULL,
    .lane_index = NULL,
    .barrier = NULL,
    .warp_barrier = NULL,
    .shared_array = NULL,
    .atomic_rmw = cpu_atomic_rmw,
    .atomic_cas = cpu_atomic_cas,
    /* No warps on the CPU. */
    .shuffle_down = NULL,
    .shuffle_up = NULL,
    .shuffle_idx = NULL,
    .fence = NULL,
    .ballot = NULL,
    .cancel_poll = cpu_cancel_poll,
    .cancel_returns = true,
};

/* A target machine for the host or an explicit CPU (see cg.h). */
weft_status cg_cpu_machine(const char *cpu, const char *features,
                           LLVMCodeGenOptLevel level, LLVMTargetMachineRef *out)
{
    *out = NULL;
    weft_status s = cg_init();
    if (s != WEFT_OK) {
        return s;
    }
    char *triple = LLVMGetDefaultTargetTriple();
    char *host_cpu = cpu ? NULL : LLVMGetHostCPUName();
    char *host_features = features || cpu ? NULL : LLVMGetHostCPUFeatures();
    LLVMTargetRef target = NULL;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        s = fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                     "weft: LLVM has no target for %s: %s", triple,
                     err ? err : "?");
    } else {
        *out = LLVMCreateTargetMachine(target, triple, cpu ? cpu : host_cpu,
                                       features        ? features
                                       : host_features ? host_features
                                                       : "",
                                       level, LLVMRelocPIC,
                                       LLVMCodeModelJITDefault);
        if (!*out) {
            s = fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                         "weft: LLVM cannot make a target machine for %s",
                         cpu ? cpu : host_cpu);
        }
    }
    LLVMDisposeMessage(err);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(host_cpu);
    LLVMDisposeMessage(host_features);
    return s;
}
