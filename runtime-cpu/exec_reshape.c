/*
 * runtime-cpu/exec_reshape.c: the driver of the reshape skeleton (not written yet:
 * the skeleton declines every operation, so this is never called).
 */
#ifdef WEFT_HAVE_LLVM
#include "cpu.h"

weft_status cpu_exec_reshape(cpu_job *j)
{
    (void)j;
    return fe_error(WEFT_ERR_INTERNAL, "weft_run: no reshape driver yet");
}
#endif
