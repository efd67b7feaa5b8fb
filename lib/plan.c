/*
 * lib/plan.c: from the fused program to a plan of kernels, host steps and
 * control flow (DESIGN.md pipeline step 5).
 *
 * Needs: a fused core.  Provides: the plan that compiled backends consume.
 * The interpreter walks the core itself, so until the CPU backend lands
 * there is nothing to plan and this pass leaves the core as it is.
 */
#include "fe.h"

weft_status fe_plan(fe_core *core)
{
    (void)core;
    return WEFT_OK;
}
