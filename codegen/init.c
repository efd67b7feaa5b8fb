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

#include "cg.h"

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
