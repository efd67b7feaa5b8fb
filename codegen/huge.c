/*
 * codegen/huge.c: telling huge modules (issue 21: a generated program's
 * one element function of 10^4 or more terms) from the others.
 *
 * Above a size, a backend picks passes linear in practice, since several
 * of LLVM's passes and its -O3 code generation take time superlinear in
 * the size of a function: the CPU's "Huge kernels" (runtime-cpu/jit.c)
 * and the PTX pipeline (codegen/target_ptx.c).
 */
#include "cg.h"

size_t cg_function_instructions(LLVMValueRef f, size_t limit)
{
    size_t n = 0;
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b && n <= limit;
         b = LLVMGetNextBasicBlock(b)) {
        for (LLVMValueRef i = LLVMGetFirstInstruction(b); i;
             i = LLVMGetNextInstruction(i)) {
            n++;
        }
    }
    return n;
}

size_t cg_module_instructions(LLVMModuleRef mod, size_t limit)
{
    size_t n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f && n <= limit;
         f = LLVMGetNextFunction(f)) {
        n += cg_function_instructions(f, limit - n);
    }
    return n;
}
