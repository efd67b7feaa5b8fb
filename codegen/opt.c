/*
 * codegen/opt.c: checking and optimising a finished module, and calling
 * intrinsics and C functions from generated code; and giving a module
 * its target machine's triple and data layout (cg_module_target).
 *
 * Optimisation uses the new pass manager through LLVMRunPasses with a
 * pipeline string ("default<O3>"), on the target machine the code is for,
 * so that the vectorisers see the real vector widths.  Debug builds verify
 * the module first: a malformed module is a bug in weft, reported as
 * WEFT_ERR_INTERNAL with the verifier's first line rather than a crash
 * inside LLVM.
 */
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg.h"

/* Give mod tm's triple and data layout (see cg.h). */
void cg_module_target(LLVMModuleRef mod, LLVMTargetMachineRef tm)
{
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMDisposeTargetData(td);
}

/* Verify a module (see cg.h). */
weft_status cg_verify(LLVMModuleRef mod, const char *who)
{
    char *msg = NULL;
    if (!LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        LLVMDisposeMessage(msg);
        return WEFT_OK;
    }
    const char *m = msg ? msg : "?";
    size_t len = strcspn(m, "\n");
    weft_status s = fe_error(WEFT_ERR_INTERNAL,
                             "%s: generated LLVM IR does not verify: %.*s", who,
                             (int)len, m);
    LLVMDisposeMessage(msg);
    return s;
}

/* Optimise a module (see cg.h). */
weft_status cg_optimise(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                        const char *passes, const char *who)
{
    cg_warm_up(); /* LLVM's pass timers, made once (init.c) */
#ifndef NDEBUG
    weft_status s = cg_verify(mod, who);
    if (s != WEFT_OK) {
        return s;
    }
#endif
    /* No IR vectorisers for the GPU: LLVM 19's NVPTX cannot select some
     * short vectors they form (a v2i16 setcc of a u16 stencil, weft_fuzz
     * seed 550081) and aborts the process.  These options were not enough
     * for the loop vectoriser (seen: it still ran), so cg_loop also marks
     * the GPU's loops (cg_target.scalar_loops).  Vector loads and stores
     * there come from NVPTX's own load/store vectoriser. */
    const char *triple = LLVMGetTarget(mod);
    bool gpu = triple && strncmp(triple, "nvptx", 5) == 0;
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(opts, !gpu);
    LLVMPassBuilderOptionsSetSLPVectorization(opts, !gpu);
    LLVMPassBuilderOptionsSetLoopInterleaving(opts, !gpu);
    LLVMErrorRef err = LLVMRunPasses(mod, passes, tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (err) {
        char *m = LLVMGetErrorMessage(err);
        weft_status r =
            fe_error(WEFT_ERR_INTERNAL, "%s: LLVM optimisation (%s) failed: %s",
                     who, passes, m ? m : "?");
        LLVMDisposeErrorMessage(m);
        return r;
    }
    return WEFT_OK;
}

/* Call an overloaded intrinsic (see cg.h). */
LLVMValueRef cg_intrinsic(cg_fn *fn, const char *name, LLVMTypeRef *over,
                          int nover, LLVMValueRef *args, int nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (id == 0) {
        return NULL;
    }
    LLVMValueRef decl =
        LLVMGetIntrinsicDeclaration(fn->mod, id, over, (size_t)nover);
    LLVMTypeRef fty = LLVMIntrinsicGetType(fn->llctx, id, over, (size_t)nover);
    return LLVMBuildCall2(fn->b, fty, decl, args, (unsigned)nargs, "");
}

/* Call a C function ty(ty, ...) (see cg.h). */
LLVMValueRef cg_libcall(cg_fn *fn, const char *name, LLVMTypeRef ty,
                        LLVMValueRef *args, int nargs)
{
    LLVMTypeRef params[4];
    if (nargs > 4) {
        return NULL;
    }
    for (int k = 0; k < nargs; k++) {
        params[k] = ty;
    }
    LLVMTypeRef fty = LLVMFunctionType(ty, params, (unsigned)nargs, 0);
    LLVMValueRef f = LLVMGetNamedFunction(fn->mod, name);
    if (!f) {
        f = LLVMAddFunction(fn->mod, name, fty);
        /* libm functions touch no memory but errno; let LLVM know that
         * they neither unwind nor read memory the kernel cares about. */
        unsigned k = LLVMGetEnumAttributeKindForName("nounwind", 8);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(fn->llctx, k, 0));
    }
    return LLVMBuildCall2(fn->b, fty, f, args, (unsigned)nargs, "");
}

/* ---- fast math ---- */

bool cg_fast_math(const cg_fn *fn)
{
    return fn && fn->ctx && (fn->ctx->cfg.flags & WEFT_FLAG_FAST_MATH);
}

LLVMFastMathFlags cg_fast_flags(const cg_fn *fn)
{
    return cg_fast_math(fn) ? CG_FAST_MATH_FLAGS : 0;
}

LLVMFastMathFlags cg_fp_flags(const cg_fn *fn)
{
    return fn->fmf | cg_fast_flags(fn);
}

LLVMValueRef cg_fp_flag(const cg_fn *fn, LLVMValueRef v)
{
    LLVMFastMathFlags f = cg_fp_flags(fn);
    if (f && v && LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v)) {
        LLVMSetFastMathFlags(v, f);
    }
    return v;
}
