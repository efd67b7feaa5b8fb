/*
 * runtime-cpu/exec_permute.c: the driver of the permute skeleton (not written yet:
 * the skeleton declines every operation, so this is never called).
 */
#ifdef WEFT_HAVE_LLVM
#include "cpu.h"

weft_status cpu_exec_permute(cpu_job *j)
{
    (void)j;
    return fe_error(WEFT_ERR_INTERNAL, "weft_run: no permute driver yet");
}
#endif
