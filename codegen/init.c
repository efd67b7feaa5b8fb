/*
 * codegen/init.c: LLVM's one piece of global state, set up once.
 *
 * LLVM needs its targets registered before a target machine or a JIT can
 * be made.  That registration is process-wide, so it runs exactly once
 * through pthread_once, whichever thread or context asks first; later
 * calls only read the recorded outcome.  The native target is required;
 * NVPTX is registered too when this LLVM has it (Debian's does), so that a
 * PTX context needs no second initialisation.
 */
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg.h"

/* LLVMRunPasses makes LLVM's pass instrumentation, whose timer groups
 * lock a mutex that LLVM creates on first use (a ManagedStatic: made
 * under a lock, published through an atomic pointer).  That is correct,
 * but the atomic lives in libLLVM, which ThreadSanitizer does not see, so
 * when several threads compile at once it reports the first lock of the
 * mutex in one thread as racing with its creation in another
 * (llvm::TimerGroup::TimerGroup, reached from runtime-cpu/jit.c's
 * optimise_module).  Running the pipeline once here, inside the one-time
 * initialisation, creates those objects before any other thread can
 * compile; every later compile is ordered after it by pthread_once, which
 * ThreadSanitizer does see.  Costs well under a millisecond (an empty
 * module). */
static void warm_up_passes(void)
{
    LLVMContextRef c = LLVMContextCreate();
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("weft_warm_up", c);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(m, CG_CPU_PIPELINE, NULL, po);
    if (e) {
        LLVMConsumeError(e); /* only a warm-up: the real runs report */
    }
    LLVMDisposePassBuilderOptions(po);
    LLVMDisposeModule(m);
    LLVMContextDispose(c);
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool init_ok;

static void init_llvm(void)
{
    if (LLVMInitializeNativeTarget() != 0) {
        return;
    }
    if (LLVMInitializeNativeAsmPrinter() != 0) {
        return;
    }
    (void)LLVMInitializeNativeAsmParser();
    (void)LLVMInitializeNativeDisassembler();
    /* Debian's libLLVM-19 is built with every target, NVPTX included. */
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    warm_up_passes();
    init_ok = true;
}

/* Initialise LLVM once (see cg.h). */
weft_status cg_init(void)
{
    if (pthread_once(&init_once, init_llvm) != 0) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft: LLVM initialisation could not run");
    }
    if (!init_ok) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "weft: LLVM has no native target for this host");
    }
    return WEFT_OK;
}
