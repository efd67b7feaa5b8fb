/*
 * codegen/init.c: LLVM's one piece of global state, set up once.
 *
 * LLVM needs its targets registered before a target machine or a JIT can
 * be made.  That registration is process-wide, so it runs exactly once
 * through pthread_once, whichever thread or context asks first; later
 * calls only read the recorded outcome.  The native target is required;
 * NVPTX is registered too when this LLVM has it (Debian's does), so that a
 * PTX context needs no second initialisation.
 *
 * A warm-up (below) also runs once, but only before the first compile
 * (cg_warm_up): a context that compiles nothing, or loads its kernels
 * from the disk cache, does not pay for it (creating the first context of
 * a process: about 1 ms without it, 7-9 ms with it).
 */
#include <llvm-c/IRReader.h>
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
 * optimise_module).  Running the pipeline once in the warm-up, which
 * every compile calls first (cg_warm_up), creates those objects before
 * any other thread can compile; every later compile is ordered after it
 * by pthread_once, which ThreadSanitizer does see.  Costs well under a
 * millisecond (an empty module). */
/* The same for code generation: LLVM 19 keeps some of its state in
 * function-local statics made on first use (SelectionDAG's table of value
 * types among them), whose destructors run at exit in the reverse order
 * of their making.  Made by the warm-up, before any cpu_jit registers its
 * exit handler (runtime-cpu/jit.c, tier_at_exit: when it starts its first
 * background thread, after a compile), they outlive that handler, which
 * waits for background tier-ups still inside LLVM; made first by such a
 * tier-up, they would be destroyed under it.  One small function with a
 * switch, an odd vector type and wide integers, emitted at -O0 and -O3
 * for the host: a few milliseconds, once per process. */
static const char warm_up_ir[] =
    "define void @f(ptr %p, i64 %n, i128 %w) {\n"
    "entry:\n"
    "  %v = load <3 x i64>, ptr %p\n"
    "  %s = add <3 x i64> %v, <i64 1, i64 2, i64 3>\n"
    "  store <3 x i64> %s, ptr %p\n"
    "  %x = load <8 x float>, ptr %p\n"
    "  %y = fmul <8 x float> %x, %x\n"
    "  %z = fadd <8 x float> %y, <float 2.0, float 2.0, float 2.0, float 2.0,"
    " float 2.0, float 2.0, float 2.0, float 2.0>\n"
    "  store <8 x float> %z, ptr %p\n"
    "  %m = mul i128 %w, %w\n"
    "  store i128 %m, ptr %p\n"
    "  switch i64 %n, label %done [ i64 0, label %a\n"
    "                               i64 7, label %b ]\n"
    "a:\n"
    "  store i64 1, ptr %p\n"
    "  br label %done\n"
    "b:\n"
    "  store i64 2, ptr %p\n"
    "  br label %done\n"
    "done:\n"
    "  ret void\n"
    "}\n";

static void warm_up_codegen(void)
{
    char *triple = LLVMGetDefaultTargetTriple();
    char *cpu = LLVMGetHostCPUName();
    char *features = LLVMGetHostCPUFeatures();
    LLVMTargetRef target = NULL;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &err) == 0) {
        const LLVMCodeGenOptLevel levels[2] = {LLVMCodeGenLevelNone,
                                               LLVMCodeGenLevelAggressive};
        for (int i = 0; i < 2; i++) {
            LLVMContextRef c = LLVMContextCreate();
            LLVMMemoryBufferRef src = LLVMCreateMemoryBufferWithMemoryRangeCopy(
                warm_up_ir, sizeof warm_up_ir - 1, "weft_warm_up");
            LLVMModuleRef m = NULL;
            char *perr = NULL;
            /* takes src */
            if (LLVMParseIRInContext(c, src, &m, &perr) == 0) {
                LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
                    target, triple, cpu, features, levels[i], LLVMRelocPIC,
                    LLVMCodeModelDefault);
                LLVMMemoryBufferRef obj = NULL;
                char *eerr = NULL;
                if (tm && LLVMTargetMachineEmitToMemoryBuffer(
                              tm, m, LLVMObjectFile, &eerr, &obj) == 0) {
                    LLVMDisposeMemoryBuffer(obj);
                }
                LLVMDisposeMessage(eerr);
                if (tm) {
                    LLVMDisposeTargetMachine(tm);
                }
                LLVMDisposeModule(m);
            }
            LLVMDisposeMessage(perr);
            LLVMContextDispose(c);
        }
    }
    LLVMDisposeMessage(err);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
}

/* The pipeline's warm-up runs on a call of a library function: the
 * optimiser's table of their names (TargetLibraryInfoImpl::getLibFunc) is
 * a static made on the first call it looks at. */
static const char warm_up_passes_ir[] = "declare double @sin(double)\n"
                                        "define double @g(double %x) {\n"
                                        "entry:\n"
                                        "  %y = call double @sin(double %x)\n"
                                        "  ret double %y\n"
                                        "}\n";

static void warm_up_passes(void)
{
    LLVMContextRef c = LLVMContextCreate();
    LLVMMemoryBufferRef src = LLVMCreateMemoryBufferWithMemoryRangeCopy(
        warm_up_passes_ir, sizeof warm_up_passes_ir - 1, "weft_warm_up");
    LLVMModuleRef m = NULL;
    char *perr = NULL;
    /* takes src; an empty module where the text does not parse */
    if (LLVMParseIRInContext(c, src, &m, &perr) != 0) {
        m = LLVMModuleCreateWithNameInContext("weft_warm_up", c);
    }
    LLVMDisposeMessage(perr);
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
    init_ok = true;
}

static pthread_once_t warm_once = PTHREAD_ONCE_INIT;

static void warm_up(void)
{
    warm_up_passes();
    warm_up_codegen();
}

/* The warm-up, once per process (see cg.h). */
void cg_warm_up(void)
{
    (void)pthread_once(&warm_once, warm_up);
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
