/*
 * codegen/target_ptx.c: the target interface for NVIDIA GPUs, and the
 * last step from a skeleton's module to PTX text.
 *
 * Target.  Skeletons call cg_target_ptx for what a GPU has and a CPU has
 * not.  Thread, block, grid and lane indices are PTX special registers
 * (llvm.nvvm.read.ptx.sreg.*, i32); the barrier is llvm.nvvm.barrier0
 * (bar.sync 0); the fence is llvm.nvvm.membar.gl (membar.gl, which PTX
 * defines as fence.sc.gpu from sm_70 on).  LLVM 19's NVPTX cannot select a
 * plain `fence seq_cst` at all (it stops the process in instruction
 * selection), so the fence must be the intrinsic.  Shared memory is a
 * module global [n x ty] in address space 3 with an undef initialiser,
 * handed out as a generic pointer; NVPTX's address-space inference turns
 * the loads and stores through it back into ld.shared / st.shared.  Warp
 * shuffles and ballots are the *.sync intrinsics over the full warp
 * (mask 0xffffffff, clamp 31, i.e. width 32); a value that is not i32 or
 * float travels as one or two 32-bit pieces.
 *
 * Atomics are LLVM atomicrmw and cmpxchg, monotonic (PTX .relaxed) at
 * device scope, on generic pointers.  LLVM 19's NVPTX ignores stronger
 * orderings on atomics anyway (a seq_cst atomicrmw becomes the same atom
 * instruction, with no fence), so asking for them would only pretend; a
 * skeleton that publishes data through an atomic (decoupled look-back,
 * locks) puts target->fence before the release and after the acquire.
 * For sm_70 and later, i32 and i64 add, min, max, umin, umax, and, or,
 * xor, xchg and f32 / f64 fadd are single atom.{op} instructions and i32
 * / i64 cmpxchg is atom.cas; f16 fadd is native (atom.add.noftz.f16) from
 * sm_70 with PTX 6.3 on; i8 and i16 operations and other floating
 * operations are widened by LLVM's AtomicExpand into a 32-bit atom.cas
 * loop, which ptxas accepts.  Where atomics must be atomic with respect to
 * other GPUs too (a permute split over several devices, whose blocks on
 * every device reduce into one result), cg_ptx_red_sys emits red.sys (the
 * default scope, .gpu, says nothing about another device's accesses),
 * cg_ptx_atom_sys_add atom.sys.add.u32 and cg_ptx_fence_sys membar.sys
 * (fence.sc.sys: the parts' ticket, which orders their reductions), as
 * inline assembly: LLVM 19's NVPTX has no unsigned min and max of system
 * scope among its intrinsics, and makes no scope from syncscope.
 *
 * Math.  sqrt is llvm.sqrt, which NVPTX lowers to sqrt.rn (correctly
 * rounded, as the CPU's libm).  libdevice's own __nv_sqrtf asks
 * __nvvm_reflect("__CUDA_PREC_SQRT"), which LLVM 19 answers 0, and would
 * give the approximate square root.  Every other function is a call of
 * libdevice's __nv_<name>f (float) or __nv_<name> (double), declared on
 * demand; cg_ptx_finish links libdevice in when such a call exists.  Its
 * accuracy, from the CUDA C Programming Guide (no fast math, no
 * flush-to-zero): float exp, sin, cos, asin, acos, atan, cosh, tanh 2 ulp;
 * log 1; sinh, asinh, atanh, atan2 3; tan, acosh, pow 4 ulp at most;
 * double exp, log, cosh, tanh 1 ulp; sin, cos, tan, asin, acos, atan,
 * sinh, atanh, pow, atan2 2; asinh, acosh 3 ulp at most.  Results may so
 * differ from the CPU's libm in the last bits; sqrt never does.  vmath.c's
 * exp and log (the CPU's) are not used here: computed in double they
 * would give the CPU's bits, but a Black-Scholes kernel (three exp, one
 * log) grows from 552 to 880 SASS instructions, 144 of them FP64, which
 * the H100 runs at half rate, and from 38 to 48 registers (ptxas 13);
 * their float versions (fast math on the CPU, Cephes) take 656 and are
 * less accurate than libdevice's log; libdevice's f32 exp is ex2.approx
 * after an exact reduction, as short as any.
 *
 * Fast math (WEFT_FLAG_FAST_MATH): f32 exp, log, sin, cos and sqrt become
 * the hardware's approximate instructions (ex2.approx after a multiply by
 * log2 e, lg2.approx, sin.approx, cos.approx, sqrt.approx), as CUDA's
 * --use_fast_math makes them; after optimisation every f32 division that
 * carries the arcp flag becomes div.approx.f32, and x / sqrt.approx(y)
 * x * rsqrt.approx.f32(y) (approx_divisions).  Doubles keep libdevice.
 *
 * Launch bounds.  cg_ptx_launch_bounds adds !nvvm.annotations "maxntidx"
 * and "minctasm" beside "kernel" (.maxntid, .minnctapersm in the PTX).
 *
 * Finishing.  cg_ptx_finish sets the module's triple and layout, marks the
 * kernels twice over (the PTX_Kernel calling convention and the
 * !nvvm.annotations "kernel" entry: LLVM 19 honours either), links
 * libdevice when needed, internalises everything but the kernels so that
 * globaldce drops what is not called, optimises (PTX_PIPELINE) and emits
 * PTX.  The pipeline is default<O3> (the NVPTX machine adds NVVMReflect at
 * its start, which answers __nvvm_reflect("__CUDA_FTZ") from the
 * "nvvm-reflect-ftz" module flag, 0 here, and "__CUDA_ARCH" from the
 * machine's SM), then irce, inductive range check elimination, as on the
 * CPU: a loop whose reads test their index against an array's extent gets
 * a main loop without the tests (n-body's while loop, fast math: 61 -> 45
 * SASS instructions a trip), and a cleanup of the loops it splits.
 *
 * libdevice is 460 KB of bitcode.  Its bytes are read once per process
 * (under a mutex); each link then reads it lazily into the module's
 * context, after making its external functions linkonce_odr, so that the
 * linker materialises only the functions the module calls and theirs.
 * For a small kernel calling expf, cg_ptx_finish takes about 4 ms so
 * (44 ms with a full parse of libdevice each time; 1.1 ms for a kernel
 * with no libdevice call).
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>

#include "cg.h"

enum {
    PTX_KERNEL_CC = 71, /* llvm::CallingConv::PTX_Kernel */
    SHARED_SPACE = 3,   /* NVPTX address space of shared memory */
    NEWEST_SM = 90,     /* the newest SM that LLVM 19's NVPTX knows */
};

#define PTX_TRIPLE "nvptx64-nvidia-cuda"

/* default<O3>, then irce (cg.h's CG_CPU_PIPELINE says what it does) and
 * a cleanup of the loops it splits. */
#define PTX_PIPELINE                                                           \
    "default<O3>,function(irce,simplifycfg," CG_IC ",loop-mssa(licm),"         \
    "simplifycfg)"

/* The quick tier (cg_ptx_finish_quick): a few function passes (NVVMReflect
 * first, for libdevice; SROA, early CSE, one instcombine, simplifycfg,
 * dead code; no inlining, no loop passes), emitted by a machine at
 * CodeGenOpt::None (cg_ptx_machine_quick).  The code is slower; it runs
 * only until the background thread's default<O3> code is swapped in
 * (runtime-gpu/backend.c, "Tiers").  Measured on a 2-core EPYC under
 * load, over the first compiles of bench/gpu's 15 programs (sm_90): LLVM
 * about 1,400 ms at default<O3> and full code generation; 1,100 to 1,330
 * ms with default<O1> emitted at None (the emission a fifth of it), 355
 * ms with these passes, 358 ms with SROA, early CSE and dead code only
 * (PTX_HUGE_PIPELINE); ptxas -O0 on the quick PTX (a stand-in for the
 * driver's JIT at level 0) 1,290, 1,170 and 1,410 ms: the passes here
 * keep the PTX as short as default<O1> does (scan 60 ms of ptxas against
 * 158), the bare ones do not.  dotp's fold: LLVM 12 ms here, 23 ms with
 * default<O1>, 31 ms at default<O3>.  PTX_QUICK_O1 and PTX_HUGE_PIPELINE
 * are the other choices (cg_ptx_finish_quick's `pipeline`). */
#define PTX_QUICK_PIPELINE                                                     \
    "globaldce,function(nvvm-reflect,sroa,early-cse<memssa>," CG_IC            \
    ",simplifycfg,adce)"
#define PTX_QUICK_O1 "default<O1>"

/* Huge modules (more than PTX_HUGE_INSTRUCTIONS instructions: a generated
 * program's one element function of 10^4 or more terms) take passes
 * linear in practice, as the CPU's do (runtime-cpu/jit.c, "Huge
 * kernels"): default<O3> took 12 s and the NVPTX emission at -O3 8 s for
 * a 10,000-deep chain of conditionals, growing faster than the size.
 * NVVMReflect runs first (default<O3> adds it itself; libdevice's code
 * branches on it), and the PTX is emitted by a machine at
 * CodeGenOpt::None (ptxas optimises the PTX anyway: register allocation
 * and scheduling are its).  ptxas itself stays superlinear in one
 * function's size (a 2,000-deep chain: 10 s; 10,000: 8 minutes). */
#define PTX_HUGE_INSTRUCTIONS 5000
#define PTX_HUGE_PIPELINE "globaldce,function(nvvm-reflect,sroa,early-cse,adce)"

/* ---- special registers, barrier, fence ---- */

/* A call of the non-overloaded intrinsic `name` on args. */
static LLVMValueRef call0(cg_fn *fn, const char *name, LLVMValueRef *args,
                          int nargs)
{
    LLVMValueRef v = cg_intrinsic(fn, name, NULL, 0, args, nargs);
    assert(v && "an NVVM intrinsic that LLVM 19 does not know");
    return v;
}

/* Special register `reg` ("tid", "ctaid", "ntid", "nctaid") along dim. */
static LLVMValueRef sreg(cg_fn *fn, const char *reg, int dim)
{
    assert(dim >= 0 && dim <= 2);
    char name[48];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", reg,
             "xyz"[dim]);
    return call0(fn, name, NULL, 0);
}

static LLVMValueRef ptx_thread_index(cg_fn *fn, int dim)
{
    return sreg(fn, "tid", dim);
}

static LLVMValueRef ptx_block_index(cg_fn *fn, int dim)
{
    return sreg(fn, "ctaid", dim);
}

static LLVMValueRef ptx_block_size(cg_fn *fn, int dim)
{
    return sreg(fn, "ntid", dim);
}

static LLVMValueRef ptx_grid_size(cg_fn *fn, int dim)
{
    return sreg(fn, "nctaid", dim);
}

static LLVMValueRef ptx_lane_index(cg_fn *fn)
{
    return call0(fn, "llvm.nvvm.read.ptx.sreg.laneid", NULL, 0);
}

static void ptx_barrier(cg_fn *fn)
{
    (void)call0(fn, "llvm.nvvm.barrier0", NULL, 0);
}

static LLVMValueRef ptx_opaque(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMTypeRef ty = LLVMFunctionType(i64, &i64, 1, 0);
    LLVMValueRef mov = LLVMGetInlineAsm(ty, "mov.b64 $0, $1;", 15, "=l,l", 4, 0,
                                        0, LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(fn->b, ty, mov, &x, 1, "");
}

/* bar.red.or.pred (__syncthreads_or): a barrier that ors pred over the
 * block. */
static LLVMValueRef ptx_barrier_or(cg_fn *fn, LLVMValueRef pred)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef x = LLVMBuildZExt(fn->b, pred, i32, "");
    LLVMValueRef r = call0(fn, "llvm.nvvm.barrier0.or", &x, 1);
    return LLVMBuildICmp(fn->b, LLVMIntNE, r, LLVMConstInt(i32, 0, 0), "");
}

static void ptx_warp_barrier(cg_fn *fn)
{
    LLVMValueRef all =
        LLVMConstInt(LLVMInt32TypeInContext(fn->llctx), 0xffffffffu, 0);
    (void)call0(fn, "llvm.nvvm.bar.warp.sync", &all, 1);
}

static void ptx_fence(cg_fn *fn)
{
    (void)call0(fn, "llvm.nvvm.membar.gl", NULL, 0);
}

/* ---- shared memory ---- */

/* A fresh [n x ty] in shared memory, as a generic pointer.  LLVM makes
 * the name unique (weft.shared, weft.shared1, ...). */
static LLVMValueRef ptx_shared_array(cg_fn *fn, LLVMTypeRef ty, int64_t n)
{
    assert(n > 0);
    LLVMTypeRef at = LLVMArrayType2(ty, (uint64_t)n);
    LLVMValueRef g =
        LLVMAddGlobalInAddressSpace(fn->mod, at, "weft.shared", SHARED_SPACE);
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetInitializer(g, LLVMGetUndef(at));
    LLVMSetAlignment(g, 16);
    return LLVMConstAddrSpaceCast(g, LLVMPointerTypeInContext(fn->llctx, 0));
}

/* ---- atomics ---- */

static LLVMValueRef ptx_atomic_rmw(cg_fn *fn, LLVMAtomicRMWBinOp op,
                                   LLVMValueRef p, LLVMValueRef x)
{
    return LLVMBuildAtomicRMW(fn->b, op, p, x, LLVMAtomicOrderingMonotonic, 0);
}

static LLVMValueRef ptx_atomic_cas(cg_fn *fn, LLVMValueRef p, LLVMValueRef cmp,
                                   LLVMValueRef x)
{
    LLVMValueRef pair =
        LLVMBuildAtomicCmpXchg(fn->b, p, cmp, x, LLVMAtomicOrderingMonotonic,
                               LLVMAtomicOrderingMonotonic, 0);
    return LLVMBuildExtractValue(fn->b, pair, 0, "");
}

/* ---- warp operations ---- */

/* One 32-bit shuffle: llvm.nvvm.shfl.sync.<mode>.{i32,f32} of x (i32 or
 * float) with b (i32), over the full warp with clamp 31 (0 for "up": no
 * lane below 0). */
static LLVMValueRef shfl32(cg_fn *fn, const char *mode, LLVMValueRef x,
                           LLVMValueRef b)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    bool flt = LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMFloatTypeKind;
    char name[48];
    snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.%s", mode,
             flt ? "f32" : "i32");
    unsigned clamp = strcmp(mode, "up") == 0 ? 0 : 31;
    LLVMValueRef args[4] = {LLVMConstInt(i32, 0xffffffffu, 0), x, b,
                            LLVMConstInt(i32, clamp, 0)};
    return call0(fn, name, args, 4);
}

/* A shuffle of x of any scalar register type, in 32-bit pieces. */
static LLVMValueRef shuffle(cg_fn *fn, const char *mode, LLVMValueRef x,
                            LLVMValueRef b)
{
    LLVMBuilderRef B = fn->b;
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    LLVMTypeRef ty = LLVMTypeOf(x);
    if (LLVMTypeOf(b) != i32) {
        b = LLVMBuildIntCast2(B, b, i32, 0, "");
    }
    switch (LLVMGetTypeKind(ty)) {
    case LLVMFloatTypeKind: return shfl32(fn, mode, x, b);
    case LLVMHalfTypeKind:
    case LLVMBFloatTypeKind: {
        LLVMTypeRef i16 = LLVMInt16TypeInContext(c);
        LLVMValueRef v = shuffle(fn, mode, LLVMBuildBitCast(B, x, i16, ""), b);
        return LLVMBuildBitCast(B, v, ty, "");
    }
    case LLVMDoubleTypeKind: {
        LLVMValueRef v = shuffle(fn, mode, LLVMBuildBitCast(B, x, i64, ""), b);
        return LLVMBuildBitCast(B, v, ty, "");
    }
    case LLVMPointerTypeKind: {
        LLVMValueRef v = shuffle(fn, mode, LLVMBuildPtrToInt(B, x, i64, ""), b);
        return LLVMBuildIntToPtr(B, v, ty, "");
    }
    case LLVMIntegerTypeKind: break;
    default: assert(!"a shuffle of a type that is not a scalar"); return NULL;
    }
    unsigned w = LLVMGetIntTypeWidth(ty);
    if (w == 32) {
        return shfl32(fn, mode, x, b);
    }
    if (w < 32) {
        LLVMValueRef v = shfl32(fn, mode, LLVMBuildZExt(B, x, i32, ""), b);
        return LLVMBuildTrunc(B, v, ty, "");
    }
    assert(w == 64 && "a shuffle of an integer wider than 64 bits");
    LLVMValueRef k32 = LLVMConstInt(i64, 32, 0);
    LLVMValueRef lo = LLVMBuildTrunc(B, x, i32, "");
    LLVMValueRef hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, x, k32, ""), i32, "");
    lo = LLVMBuildZExt(B, shfl32(fn, mode, lo, b), i64, "");
    hi = LLVMBuildZExt(B, shfl32(fn, mode, hi, b), i64, "");
    return LLVMBuildOr(B, LLVMBuildShl(B, hi, k32, ""), lo, "");
}

static LLVMValueRef ptx_shuffle_down(cg_fn *fn, LLVMValueRef x,
                                     LLVMValueRef delta)
{
    return shuffle(fn, "down", x, delta);
}

/* shuffle_up, in mode "up" as shuffle, but every type moves as integer
 * bits (a float too) and a 64-bit value's halves are split and shuffled
 * one after the other: the PTX scan's own code for its warp scan, kept
 * as it was (shuffle's f32 form and order would give other, equivalent
 * PTX for the scans of f32, f64 and i64, which a GPU should check
 * first). */
static LLVMValueRef ptx_shuffle_up(cg_fn *fn, LLVMValueRef x,
                                   LLVMValueRef delta)
{
    LLVMBuilderRef B = fn->b;
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    switch (LLVMGetTypeKind(ty)) {
    case LLVMIntegerTypeKind: break;
    case LLVMPointerTypeKind:
        return LLVMBuildIntToPtr(
            B, ptx_shuffle_up(fn, LLVMBuildPtrToInt(B, x, i64, ""), delta), ty,
            "");
    default: {
        /* half, bfloat, float, double: their bits */
        LLVMTypeRef bits = LLVMIntTypeInContext(
            fn->llctx, LLVMGetTypeKind(ty) == LLVMDoubleTypeKind  ? 64
                       : LLVMGetTypeKind(ty) == LLVMFloatTypeKind ? 32
                                                                  : 16);
        return LLVMBuildBitCast(
            B, ptx_shuffle_up(fn, LLVMBuildBitCast(B, x, bits, ""), delta), ty,
            "");
    }
    }
    unsigned w = LLVMGetIntTypeWidth(ty);
    if (w <= 32) {
        LLVMValueRef v =
            shfl32(fn, "up", w < 32 ? LLVMBuildZExt(B, x, i32, "") : x, delta);
        return w < 32 ? LLVMBuildTrunc(B, v, ty, "") : v;
    }
    LLVMValueRef k32 = LLVMConstInt(i64, 32, 0);
    LLVMValueRef lo = shfl32(fn, "up", LLVMBuildTrunc(B, x, i32, ""), delta);
    LLVMValueRef hi =
        shfl32(fn, "up",
               LLVMBuildTrunc(B, LLVMBuildLShr(B, x, k32, ""), i32, ""), delta);
    return LLVMBuildOr(B,
                       LLVMBuildShl(B, LLVMBuildZExt(B, hi, i64, ""), k32, ""),
                       LLVMBuildZExt(B, lo, i64, ""), "");
}

static LLVMValueRef ptx_shuffle_idx(cg_fn *fn, LLVMValueRef x,
                                    LLVMValueRef lane)
{
    return shuffle(fn, "idx", x, lane);
}

static LLVMValueRef ptx_ballot(cg_fn *fn, LLVMValueRef pred)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMTypeRef ty = LLVMTypeOf(pred);
    if (LLVMGetTypeKind(ty) != LLVMIntegerTypeKind ||
        LLVMGetIntTypeWidth(ty) != 1) {
        pred = LLVMBuildICmp(fn->b, LLVMIntNE, pred, LLVMConstNull(ty), "");
    }
    LLVMValueRef args[2] = {LLVMConstInt(i32, 0xffffffffu, 0), pred};
    return call0(fn, "llvm.nvvm.vote.ballot.sync", args, 2);
}

/* ---- math ---- */

/* libdevice's base name of floating function op (without __nv_ and the
 * f of float), or NULL: lib/fe_ops.h's libdevice column. */
static const char *libdevice_name(weft_op op)
{
    return fe_prims[op].libdevice;
}

/* A call of a non-overloaded NVVM intrinsic on float arguments. */
static LLVMValueRef nvvm_f32(cg_fn *fn, const char *name, LLVMValueRef *args,
                             int n)
{
    return cg_intrinsic(fn, name, NULL, 0, args, n);
}

/* Fast math, f32: the approximate instructions of the hardware, as CUDA's
 * --use_fast_math gives them (ex2.approx, lg2.approx, sin.approx,
 * cos.approx, sqrt.approx; the CUDA C Programming Guide states their
 * errors: __expf 2 + 1.16 |1.16 x| ulp, __logf 2^-21.41 absolute in
 * [0.5, 2], __sinf / __cosf 2^-21.41 absolute in [-pi, pi] and worse
 * outside).  NULL for the other functions (libdevice as without fast
 * math). */
static LLVMValueRef ptx_fast_f32(cg_fn *fn, weft_op op, LLVMValueRef x)
{
    LLVMTypeRef f32 = LLVMFloatTypeInContext(fn->llctx);
    LLVMValueRef a;
    switch (op) {
    case WEFT_OP_EXP:
        a = LLVMBuildFMul(fn->b, x, LLVMConstReal(f32, 1.4426950408889634), "");
        return nvvm_f32(fn, "llvm.nvvm.ex2.approx.f", &a, 1);
    case WEFT_OP_LOG:
        a = nvvm_f32(fn, "llvm.nvvm.lg2.approx.f", &x, 1);
        return a ? LLVMBuildFMul(fn->b, a,
                                 LLVMConstReal(f32, 0.6931471805599453), "")
                 : NULL;
    case WEFT_OP_SIN: return nvvm_f32(fn, "llvm.nvvm.sin.approx.f", &x, 1);
    case WEFT_OP_COS: return nvvm_f32(fn, "llvm.nvvm.cos.approx.f", &x, 1);
    case WEFT_OP_SQRT: return nvvm_f32(fn, "llvm.nvvm.sqrt.approx.f", &x, 1);
    default: return NULL;
    }
}

static weft_status ptx_math(cg_fn *fn, weft_op op, LLVMValueRef *args, int n,
                            LLVMValueRef *out)
{
    LLVMTypeRef ty = LLVMTypeOf(args[0]);
    LLVMTypeKind kind = LLVMGetTypeKind(ty);
    *out = NULL;
    if (n == 1 && kind == LLVMFloatTypeKind && cg_fast_math(fn)) {
        *out = ptx_fast_f32(fn, op, args[0]);
        if (*out) {
            return WEFT_OK;
        }
    }
    if (kind == LLVMFloatTypeKind || kind == LLVMDoubleTypeKind) {
        const char *name = libdevice_name(op);
        if (op == WEFT_OP_SQRT && n == 1) {
            *out = cg_intrinsic(fn, "llvm.sqrt", &ty, 1, args, 1);
        } else if (name) {
            char buf[32];
            snprintf(buf, sizeof buf, "__nv_%s%s", name,
                     kind == LLVMFloatTypeKind ? "f" : "");
            *out = cg_libcall(fn, buf, ty, args, n);
        }
    }
    if (!*out) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: the PTX target has no function for "
                        "%s on this type",
                        weft_op_name(op));
    }
    return WEFT_OK;
}

static weft_status ptx_math1(cg_fn *fn, weft_op op, LLVMValueRef x,
                             LLVMValueRef *out)
{
    return ptx_math(fn, op, &x, 1, out);
}

static weft_status ptx_math2(cg_fn *fn, weft_op op, LLVMValueRef x,
                             LLVMValueRef y, LLVMValueRef *out)
{
    LLVMValueRef a[2] = {x, y};
    return ptx_math(fn, op, a, 2, out);
}

/* fn->cancel is the device address of the flag (an i32 in mapped host
 * memory, runtime-gpu/backend.c) that the host raises while the kernel
 * runs: a volatile load, so that every poll reads it again. */
static LLVMValueRef ptx_cancel_poll(cg_fn *fn)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef v = LLVMBuildLoad2(fn->b, i32, fn->cancel, "cancel.flag");
    LLVMSetVolatile(v, 1);
    return LLVMBuildICmp(fn->b, LLVMIntNE, v, LLVMConstInt(i32, 0, 0), "");
}

const cg_target cg_target_ptx = {
    .name = "ptx",
    .math1 = ptx_math1,
    .math2 = ptx_math2,
    .thread_index = ptx_thread_index,
    .block_index = ptx_block_index,
    .block_size = ptx_block_size,
    .grid_size = ptx_grid_size,
    .lane_index = ptx_lane_index,
    .barrier = ptx_barrier,
    .opaque = ptx_opaque,
    .warp_barrier = ptx_warp_barrier,
    .scalar_loops = true,
    /* Not yet: measured on an H200, Mandelbrot 2.36 -> 3.20 ms with it
     * (24 registers instead of 35 gave 8 blocks of 256 per SM, a grid of
     * 270,336 threads = 33 rows of 8192, so each thread of the
     * grid-stride loop walked one column of the image, and the columns'
     * work differs by far more than the rows' mixes did): first the grid
     * must stop resonating with the rows (a dynamic or odd stride). */
    .div64_call = false,
    .global_space = 1,
    .poll_every = CG_POLL_EVERY_GPU,
    .shared_array = ptx_shared_array,
    .atomic_rmw = ptx_atomic_rmw,
    .atomic_cas = ptx_atomic_cas,
    .shuffle_down = ptx_shuffle_down,
    .shuffle_up = ptx_shuffle_up,
    .shuffle_idx = ptx_shuffle_idx,
    .fence = ptx_fence,
    .ballot = ptx_ballot,
    .cancel_poll = ptx_cancel_poll,
    .cancel_returns = false,
    .barrier_or = ptx_barrier_or,
};

/* ---- target machines ---- */

/* A target machine for compute capability sm at code generation level
 * `level` (see cg.h). */
static weft_status machine(int sm, LLVMCodeGenOptLevel level,
                           LLVMTargetMachineRef *out)
{
    /* The SMs of LLVM 19's NVPTX from sm_50 on (llc -mcpu=help; sm_90a is
     * left out: its code runs on 9.0 devices only). */
    static const int known[] = {50, 52, 53, 60, 61, 62, 70,
                                72, 75, 80, 86, 87, 89, NEWEST_SM};
    *out = NULL;
    if (sm < 50) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft: compute capability %d.%d is too old for the "
                        "PTX backend (5.0 or newer needed)",
                        sm / 10, sm % 10);
    }
    weft_status s = cg_init();
    if (s != WEFT_OK) {
        return s;
    }
    /* PTX for sm_X runs on every device of compute capability >= X, so
     * round down to the nearest SM that LLVM knows. */
    int pick = known[0];
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        if (known[k] <= sm) {
            pick = known[k];
        }
    }
    char cpu[16];
    snprintf(cpu, sizeof cpu, "sm_%d", pick);
    LLVMTargetRef target = NULL;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(PTX_TRIPLE, &target, &err)) {
        s = fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                     "weft: this LLVM has no NVPTX target: %s",
                     err ? err : "?");
        LLVMDisposeMessage(err);
        return s;
    }
    LLVMDisposeMessage(err);
    /* Each SM brings the oldest PTX ISA that has it (6.0 for sm_70, 7.8
     * for sm_90); +ptx63 raises that to 6.3 at least, which the *.sync
     * warp intrinsics need (6.0; without it LLVM stops the process) and
     * which gives sm_70 native f16 atomic add (6.3). */
    *out = LLVMCreateTargetMachine(target, PTX_TRIPLE, cpu, "+ptx63", level,
                                   LLVMRelocDefault, LLVMCodeModelDefault);
    if (!*out) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft: LLVM cannot make an NVPTX target machine for "
                        "%s",
                        cpu);
    }
    return WEFT_OK;
}

weft_status cg_ptx_machine(int sm, LLVMTargetMachineRef *out)
{
    return machine(sm, LLVMCodeGenLevelAggressive, out);
}

weft_status cg_ptx_machine_quick(int sm, LLVMTargetMachineRef *out)
{
    return machine(sm, LLVMCodeGenLevelNone, out);
}

/* ---- libdevice ---- */

/* Whether path names a readable regular file. */
static bool readable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           access(path, R_OK) == 0;
}

/* Find libdevice (see cg.h). */
weft_status cg_ptx_libdevice_path(char *buf, size_t n)
{
    static const char *const fixed[] = {
        "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc",
        "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc",
        "/usr/lib/cuda/nvvm/libdevice/libdevice.10.bc",
    };
    static const char *const roots[] = {"CUDA_HOME", "CUDA_PATH"};
    char tried[4 * PATH_MAX];
    size_t used = 0;
    tried[0] = '\0';
    const char *env = getenv("WEFT_LIBDEVICE");
    if (env && env[0]) {
        if (readable_file(env)) {
            if (strlen(env) >= n) {
                return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                                "weft: $WEFT_LIBDEVICE is too long a path");
            }
            strcpy(buf, env);
            return WEFT_OK;
        }
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft: $WEFT_LIBDEVICE (%s) is not a readable file",
                        env);
    }
    char cand[PATH_MAX];
    int ncand = 2 + (int)(sizeof fixed / sizeof fixed[0]);
    for (int k = 0; k < ncand; k++) {
        if (k < 2) {
            const char *root = getenv(roots[k]);
            if (!root || !root[0]) {
                continue;
            }
            int m = snprintf(cand, sizeof cand,
                             "%s/nvvm/libdevice/libdevice.10.bc", root);
            if (m < 0 || (size_t)m >= sizeof cand) {
                continue;
            }
        } else {
            snprintf(cand, sizeof cand, "%s", fixed[k - 2]);
        }
        if (readable_file(cand) && strlen(cand) < n) {
            strcpy(buf, cand);
            return WEFT_OK;
        }
        int m = snprintf(tried + used, sizeof tried - used, "%s%s",
                         used ? ", " : "", cand);
        if (m > 0 && (size_t)m < sizeof tried - used) {
            used += (size_t)m;
        }
    }
    return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                    "weft: libdevice.10.bc not found (set $WEFT_LIBDEVICE or "
                    "$CUDA_HOME); tried %s",
                    tried);
}

/* The bytes of libdevice, read once per process (never freed). */
static pthread_mutex_t libdevice_lock = PTHREAD_MUTEX_INITIALIZER;
static char *libdevice_bytes;
static size_t libdevice_size;

/* Read the whole file at path into a fresh malloc'd buffer. */
static weft_status read_file(const char *path, char **out, size_t *size)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft: cannot open libdevice %s: %s", path,
                        strerror(errno));
    }
    weft_status s = WEFT_OK;
    char *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) {
        len = ftell(f);
    }
    if (len <= 0 || fseek(f, 0, SEEK_SET) != 0) {
        s = fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                     "weft: cannot read libdevice %s", path);
    } else if (!(buf = malloc((size_t)len))) {
        s = fe_oom("weft: reading libdevice");
    } else if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
        s = fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                     "weft: cannot read libdevice %s", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *out = buf;
    *size = buf ? (size_t)len : 0;
    return s;
}

/* libdevice's bytes, read on first use; a failure is not remembered (a
 * later call looks again). */
static weft_status libdevice(const char **bytes, size_t *size)
{
    weft_status s = WEFT_OK;
    pthread_mutex_lock(&libdevice_lock);
    if (!libdevice_bytes) {
        char path[PATH_MAX];
        s = cg_ptx_libdevice_path(path, sizeof path);
        if (s == WEFT_OK) {
            s = read_file(path, &libdevice_bytes, &libdevice_size);
        }
    }
    *bytes = libdevice_bytes;
    *size = libdevice_size;
    pthread_mutex_unlock(&libdevice_lock);
    return s;
}

/* ---- launch bounds ---- */

/* One !nvvm.annotations entry {fn, key, val} of mod. */
static void annotate(LLVMModuleRef mod, LLVMValueRef f, const char *key,
                     int val)
{
    LLVMContextRef c = LLVMGetModuleContext(mod);
    LLVMMetadataRef md[3] = {
        LLVMValueAsMetadata(f),
        LLVMMDStringInContext2(c, key, strlen(key)),
        LLVMValueAsMetadata(
            LLVMConstInt(LLVMInt32TypeInContext(c), (unsigned)val, 0)),
    };
    LLVMAddNamedMetadataOperand(
        mod, "nvvm.annotations",
        LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, md, 3)));
}

void cg_ptx_launch_bounds(cg_fn *fn, int max_threads, int min_blocks)
{
    assert(max_threads > 0 && max_threads <= 1024);
    annotate(fn->mod, fn->fn, "maxntidx", max_threads);
    if (min_blocks > 0) {
        annotate(fn->mod, fn->fn, "minctasm", min_blocks);
    }
}

/* The instruction red.sys.<op>.<type> for op on a leaf of type t into
 * buf (and the value's constraint letter into *reg), or false where PTX
 * has none: i32 / i64 add, min, max, umin, umax, and, or, xor; f32 / f64
 * fadd. */
static bool red_sys(LLVMAtomicRMWBinOp op, LLVMTypeRef t, char *buf,
                    size_t size, const char **reg)
{
    LLVMTypeKind tk = LLVMGetTypeKind(t);
    unsigned bits = tk == LLVMFloatTypeKind     ? 32
                    : tk == LLVMDoubleTypeKind  ? 64
                    : tk == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(t)
                                                : 0;
    bool flt = tk != LLVMIntegerTypeKind;
    const char *name = NULL, *kind = flt ? "f" : "u";
    switch (op) {
    case LLVMAtomicRMWBinOpFAdd: name = flt ? "add" : NULL; break;
    case LLVMAtomicRMWBinOpAdd: name = "add"; break;
    case LLVMAtomicRMWBinOpMin: name = "min", kind = "s"; break;
    case LLVMAtomicRMWBinOpMax: name = "max", kind = "s"; break;
    case LLVMAtomicRMWBinOpUMin: name = "min"; break;
    case LLVMAtomicRMWBinOpUMax: name = "max"; break;
    case LLVMAtomicRMWBinOpAnd: name = "and", kind = "b"; break;
    case LLVMAtomicRMWBinOpOr: name = "or", kind = "b"; break;
    case LLVMAtomicRMWBinOpXor: name = "xor", kind = "b"; break;
    default: break;
    }
    if (!name || (bits != 32 && bits != 64) ||
        (flt != (op == LLVMAtomicRMWBinOpFAdd))) {
        return false;
    }
    *reg = tk == LLVMFloatTypeKind    ? "f"
           : tk == LLVMDoubleTypeKind ? "d"
           : bits == 64               ? "l"
                                      : "r";
    snprintf(buf, size, "red.sys.%s.%s%u", name, kind, bits);
    return true;
}

bool cg_ptx_red_sys_ok(LLVMAtomicRMWBinOp op, LLVMTypeRef t)
{
    char buf[32];
    const char *reg;
    return red_sys(op, t, buf, sizeof buf, &reg);
}

void cg_ptx_red_sys(cg_fn *fn, LLVMAtomicRMWBinOp op, LLVMValueRef p,
                    LLVMValueRef x)
{
    char ins[32], text[48], cons[16];
    const char *reg = "r";
    bool ok = red_sys(op, LLVMTypeOf(x), ins, sizeof ins, &reg);
    assert(ok);
    (void)ok;
    int tn = snprintf(text, sizeof text, "%s [$0], $1;", ins);
    int cn = snprintf(cons, sizeof cons, "l,%s,~{memory}", reg);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMTypeRef pt[2] = {i64, LLVMTypeOf(x)};
    LLVMTypeRef ty =
        LLVMFunctionType(LLVMVoidTypeInContext(fn->llctx), pt, 2, 0);
    LLVMValueRef red = LLVMGetInlineAsm(ty, text, (size_t)tn, cons, (size_t)cn,
                                        1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef args[2] = {LLVMBuildPtrToInt(fn->b, p, i64, ""), x};
    LLVMBuildCall2(fn->b, ty, red, args, 2, "");
}

void cg_ptx_fence_sys(cg_fn *fn)
{
    (void)call0(fn, "llvm.nvvm.membar.sys", NULL, 0);
}

LLVMValueRef cg_ptx_atom_sys_add(cg_fn *fn, LLVMValueRef p, LLVMValueRef x)
{
    static const char text[] = "atom.sys.add.u32 $0, [$1], $2;";
    static const char cons[] = "=r,l,r,~{memory}";
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMTypeRef pt[2] = {i64, i32};
    LLVMTypeRef ty = LLVMFunctionType(i32, pt, 2, 0);
    LLVMValueRef atom =
        LLVMGetInlineAsm(ty, text, sizeof text - 1, cons, sizeof cons - 1, 1, 0,
                         LLVMInlineAsmDialectATT, 0);
    LLVMValueRef args[2] = {LLVMBuildPtrToInt(fn->b, p, i64, ""), x};
    return LLVMBuildCall2(fn->b, ty, atom, args, 2, "");
}

/* ---- finishing a module ---- */

/* The first error diagnostic LLVM reports while cg_ptx_finish runs. */
typedef struct diag {
    bool error;
    char msg[FE_MSG_MAX / 2];
} diag;

static void diag_handler(LLVMDiagnosticInfoRef di, void *user)
{
    diag *d = user;
    if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || d->error) {
        return;
    }
    char *m = LLVMGetDiagInfoDescription(di);
    snprintf(d->msg, sizeof d->msg, "%s", m ? m : "?");
    LLVMDisposeMessage(m);
    d->error = true;
}

/* Whether mod declares (and does not define) a libdevice function. */
static bool needs_libdevice(LLVMModuleRef mod)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f;
         f = LLVMGetNextFunction(f)) {
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) && len > 5 && !strncmp(name, "__nv_", 5)) {
            return true;
        }
    }
    return false;
}

/* Link libdevice into mod, keeping only what mod calls; set the
 * "nvvm-reflect-ftz" flag to 0 (IEEE denormals). */
static weft_status link_libdevice(LLVMModuleRef mod, diag *d)
{
    const char *bytes;
    size_t size;
    weft_status s = libdevice(&bytes, &size);
    if (s != WEFT_OK) {
        return s;
    }
    LLVMContextRef c = LLVMGetModuleContext(mod);
    /* The lazy module owns this buffer, which only points at the bytes. */
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(
        bytes, size, "libdevice.10.bc", 0);
    LLVMModuleRef lib = NULL;
    if (LLVMGetBitcodeModuleInContext2(c, buf, &lib) || !lib) {
        return fe_error(WEFT_ERR_INTERNAL, "weft: libdevice does not parse: %s",
                        d->error ? d->msg : "?");
    }
    /* linkonce_odr: linked only when referenced, like LinkOnlyNeeded. */
    for (LLVMValueRef f = LLVMGetFirstFunction(lib); f;
         f = LLVMGetNextFunction(f)) {
        if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage) {
            LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
        }
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(lib); g;
         g = LLVMGetNextGlobal(g)) {
        if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage) {
            LLVMSetLinkage(g, LLVMLinkOnceODRLinkage);
        }
    }
    /* Same triple and layout: no warning about mixing them. */
    LLVMSetTarget(lib, LLVMGetTarget(mod));
    LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
    if (LLVMLinkModules2(mod, lib) || d->error) { /* lib is destroyed */
        return fe_error(WEFT_ERR_INTERNAL, "weft: linking libdevice failed: %s",
                        d->error ? d->msg : "?");
    }
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f;
         f = LLVMGetNextFunction(f)) {
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) && len > 5 && !strncmp(name, "__nv_", 5) &&
            LLVMGetFirstUse(f)) {
            return fe_error(WEFT_ERR_INTERNAL,
                            "weft: libdevice has no function %s", name);
        }
    }
    static const char ftz[] = "nvvm-reflect-ftz";
    size_t ftz_len = sizeof ftz - 1;
    if (!LLVMGetModuleFlag(mod, ftz, ftz_len)) {
        LLVMValueRef zero = LLVMConstInt(LLVMInt32TypeInContext(c), 0, 0);
        LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorOverride, ftz, ftz_len,
                          LLVMValueAsMetadata(zero));
    }
    return WEFT_OK;
}

/* Mark function f a kernel: calling convention and !nvvm.annotations. */
static void mark_kernel(LLVMModuleRef mod, LLVMValueRef f)
{
    LLVMSetFunctionCallConv(f, PTX_KERNEL_CC);
    annotate(mod, f, "kernel", 1);
}

/* Whether f is one of the kernels. */
static bool is_kernel(LLVMValueRef f, const char *const *kernels, int nkernels)
{
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    for (int k = 0; k < nkernels; k++) {
        if (strlen(kernels[k]) == len && !memcmp(kernels[k], name, len)) {
            return true;
        }
    }
    return false;
}

/* Give every definition but the kernels internal linkage. */
static void internalise(LLVMModuleRef mod, const char *const *kernels,
                        int nkernels)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f;
         f = LLVMGetNextFunction(f)) {
        if (!LLVMIsDeclaration(f) && !is_kernel(f, kernels, nkernels)) {
            LLVMSetLinkage(f, LLVMInternalLinkage);
        }
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g;
         g = LLVMGetNextGlobal(g)) {
        size_t len;
        const char *name = LLVMGetValueName2(g, &len);
        /* llvm.used and friends keep their appending linkage */
        if (!LLVMIsDeclaration(g) && !(len > 5 && !strncmp(name, "llvm.", 5))) {
            LLVMSetLinkage(g, LLVMInternalLinkage);
        }
    }
}

/* Write the PTX text to <prefix>.ptx, or skip it. */
static void dump_ptx(const char *prefix, LLVMMemoryBufferRef ptx)
{
    char path[PATH_MAX];
    int m = snprintf(path, sizeof path, "%s.ptx", prefix);
    if (m < 0 || (size_t)m >= sizeof path) {
        return;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        return;
    }
    fwrite(LLVMGetBufferStart(ptx), 1, LLVMGetBufferSize(ptx), f);
    fclose(f);
}

/* Write the optimised module to <prefix>.opt.ll, or skip it. */
static void dump_opt_ir(const char *prefix, LLVMModuleRef mod)
{
    char path[PATH_MAX];
    int m = snprintf(path, sizeof path, "%s.opt.ll", prefix);
    char *err = NULL;
    if (m > 0 && (size_t)m < sizeof path) {
        LLVMPrintModuleToFile(mod, path, &err);
        LLVMDisposeMessage(err);
    }
}

/* Fast math: every f32 fdiv that may use a reciprocal (the arcp flag,
 * which only WEFT_FLAG_FAST_MATH sets) becomes div.approx.f32, and
 * x / sqrt.approx(y) becomes x * rsqrt.approx.f32(y) (1 / sqrt.approx(y)
 * the rsqrt alone), as nvcc's --use_fast_math gives them.  LLVM 19's
 * NVPTX picks the approximate division only for a target machine built
 * with unsafe math, a setting the C API does not reach. */
static void approx_divisions(LLVMModuleRef mod)
{
    LLVMContextRef c = LLVMGetModuleContext(mod);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(c);
    unsigned div_id = LLVMLookupIntrinsicID("llvm.nvvm.div.approx.f", 22);
    unsigned rsq_id = LLVMLookupIntrinsicID("llvm.nvvm.rsqrt.approx.f", 24);
    unsigned sqrt_id = LLVMLookupIntrinsicID("llvm.nvvm.sqrt.approx.f", 23);
    if (!div_id || !rsq_id || !sqrt_id) {
        return;
    }
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f;
         f = LLVMGetNextFunction(f)) {
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb;
             bb = LLVMGetNextBasicBlock(bb)) {
            LLVMValueRef in = LLVMGetFirstInstruction(bb);
            while (in) {
                LLVMValueRef next = LLVMGetNextInstruction(in);
                if (LLVMGetInstructionOpcode(in) == LLVMFDiv &&
                    LLVMTypeOf(in) == f32 &&
                    (LLVMGetFastMathFlags(in) & LLVMFastMathAllowReciprocal)) {
                    LLVMValueRef x = LLVMGetOperand(in, 0);
                    LLVMValueRef y = LLVMGetOperand(in, 1);
                    LLVMBool lossy = 0;
                    LLVMValueRef callee =
                        LLVMIsACallInst(y) ? LLVMGetCalledValue(y) : NULL;
                    bool rsqrt = callee && LLVMIsAFunction(callee) &&
                                 LLVMGetIntrinsicID(callee) == sqrt_id;
                    bool one = LLVMIsAConstantFP(x) &&
                               LLVMConstRealGetDouble(x, &lossy) == 1.0;
                    unsigned id = rsqrt ? rsq_id : div_id;
                    LLVMValueRef decl =
                        LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
                    LLVMTypeRef fty = LLVMIntrinsicGetType(c, id, NULL, 0);
                    LLVMValueRef args[2] = {x, y};
                    if (rsqrt) {
                        args[0] = LLVMGetOperand(y, 0);
                    }
                    LLVMPositionBuilderBefore(b, in);
                    LLVMValueRef r =
                        LLVMBuildCall2(b, fty, decl, args, rsqrt ? 1 : 2, "");
                    if (rsqrt && !one) {
                        r = LLVMBuildFMul(b, x, r, "");
                        LLVMSetFastMathFlags(r, LLVMGetFastMathFlags(in));
                    }
                    LLVMReplaceAllUsesWith(in, r);
                    LLVMInstructionEraseFromParent(in);
                }
                in = next;
            }
        }
    }
    LLVMDisposeBuilder(b);
}

/* The steps of cg_ptx_finish after the diagnostic handler is in place. */
static weft_status finish(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                          const char *const *kernels, int nkernels,
                          const char *dump_prefix, weft_context *ctx, int quick,
                          diag *d, LLVMMemoryBufferRef *ptx)
{
    cg_module_target(mod, tm);
    for (int k = 0; k < nkernels; k++) {
        LLVMValueRef f = LLVMGetNamedFunction(mod, kernels[k]);
        if (!f || LLVMIsDeclaration(f)) {
            return fe_error(WEFT_ERR_INTERNAL,
                            "weft: PTX module has no kernel named %s",
                            kernels[k]);
        }
        mark_kernel(mod, f);
    }
    weft_status s = WEFT_OK;
    uint64_t t = fe_clock_ns();
    if (needs_libdevice(mod)) {
        s = link_libdevice(mod, d);
        if (s != WEFT_OK) {
            return s;
        }
        t = fe_phase_end(ctx, FE_PHASE_LLVM_OPT, t, "libdevice.link",
                         "\"kernel\":\"%s\"", kernels[0]);
    }
    internalise(mod, kernels, nkernels);
    bool huge = cg_module_instructions(mod, PTX_HUGE_INSTRUCTIONS) >
                PTX_HUGE_INSTRUCTIONS;
    s = cg_optimise(mod, tm,
                    huge || quick == 1 + CG_PTX_QUICK_BARE ? PTX_HUGE_PIPELINE
                    : quick == 1 + CG_PTX_QUICK_O1         ? PTX_QUICK_O1
                    : quick                                ? PTX_QUICK_PIPELINE
                                                           : PTX_PIPELINE,
                    "weft (ptx)");
    if (s != WEFT_OK) {
        return s;
    }
    t = fe_phase_end(ctx, FE_PHASE_LLVM_OPT, t, "llvm.opt", "\"kernel\":\"%s\"",
                     kernels[0]);
    approx_divisions(mod);
    if (dump_prefix) {
        dump_opt_ir(dump_prefix, mod);
    }
    char *err = NULL;
    LLVMTargetMachineRef none = NULL; /* a machine at CodeGenOpt::None */
    if (huge && !quick) {
        char *cpu = LLVMGetTargetMachineCPU(tm);
        char *features = LLVMGetTargetMachineFeatureString(tm);
        none = LLVMCreateTargetMachine(
            LLVMGetTargetMachineTarget(tm), PTX_TRIPLE, cpu, features,
            LLVMCodeGenLevelNone, LLVMRelocDefault, LLVMCodeModelDefault);
        LLVMDisposeMessage(cpu);
        LLVMDisposeMessage(features);
    }
    bool failed = LLVMTargetMachineEmitToMemoryBuffer(
        none ? none : tm, mod, LLVMAssemblyFile, &err, ptx);
    if (none) {
        LLVMDisposeTargetMachine(none);
    }
    if (failed || d->error) {
        s = fe_error(WEFT_ERR_INTERNAL, "weft: PTX emission failed: %s",
                     err        ? err
                     : d->error ? d->msg
                                : "?");
        LLVMDisposeMessage(err);
        if (*ptx) {
            LLVMDisposeMemoryBuffer(*ptx);
            *ptx = NULL;
        }
        return s;
    }
    LLVMDisposeMessage(err);
    fe_phase_end(ctx, FE_PHASE_PTX, t, "ptx.emit",
                 "\"kernel\":\"%s\",\"ptx_bytes\":%zu", kernels[0],
                 LLVMGetBufferSize(*ptx));
    return WEFT_OK;
}

/* cg_ptx_finish and cg_ptx_finish_quick. */
static weft_status finish_tier(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                               const char *const *kernels, int nkernels,
                               const char *dump_prefix, weft_context *ctx,
                               int quick, LLVMMemoryBufferRef *ptx)
{
    *ptx = NULL;
    /* Without a handler of its own, LLVM prints warnings and exits the
     * process on an error diagnostic (a bad bitcode file, a failed
     * link). */
    LLVMContextRef c = LLVMGetModuleContext(mod);
    LLVMDiagnosticHandler old = LLVMContextGetDiagnosticHandler(c);
    void *old_ctx = LLVMContextGetDiagnosticContext(c);
    diag d = {.error = false};
    LLVMContextSetDiagnosticHandler(c, diag_handler, &d);
    weft_status s =
        finish(mod, tm, kernels, nkernels, dump_prefix, ctx, quick, &d, ptx);
    LLVMContextSetDiagnosticHandler(c, old, old_ctx);
    if (s == WEFT_OK && dump_prefix) {
        dump_ptx(dump_prefix, *ptx);
    }
    return s;
}

/* Turn a skeleton's module into PTX (see cg.h). */
weft_status cg_ptx_finish(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                          const char *const *kernels, int nkernels,
                          const char *dump_prefix, weft_context *ctx,
                          LLVMMemoryBufferRef *ptx)
{
    return finish_tier(mod, tm, kernels, nkernels, dump_prefix, ctx, 0, ptx);
}

/* The same, quickly (see cg.h). */
weft_status cg_ptx_finish_quick(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                                const char *const *kernels, int nkernels,
                                weft_context *ctx, cg_ptx_quick pipeline,
                                LLVMMemoryBufferRef *ptx)
{
    return finish_tier(mod, tm, kernels, nkernels, NULL, ctx, 1 + pipeline,
                       ptx);
}
