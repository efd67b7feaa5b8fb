/*
 * runtime-cpu/exec_foldseg.c: the driver of the fold_seg skeleton (not written yet:
 * the skeleton declines every operation, so this is never called).
 */
#ifdef WEFT_HAVE_LLVM
#include "cpu.h"

weft_status cpu_exec_fold_seg(cpu_job *j)
{
    (void)j;
    return fe_error(WEFT_ERR_INTERNAL, "weft_run: no fold_seg driver yet");
}
#endif
