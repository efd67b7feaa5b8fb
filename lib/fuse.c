/*
 * lib/fuse.c: array fusion (DESIGN.md pipeline step 4; seed 001).
 *
 * Needs: a simplified core.  Provides: the fused delayed program (Done,
 * Yield, Step).  Planned by the fusion issue; until then the core is left
 * unfused, which the interpreter evaluates directly.
 */
#include "fe.h"

weft_status fe_fuse(fe_core *core)
{
    (void)core;
    return WEFT_OK;
}
