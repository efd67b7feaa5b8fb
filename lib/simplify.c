/*
 * lib/simplify.c: the simplifier (DESIGN.md pipeline step 3).
 *
 * Needs: a core from fe_share.  Provides: the same core, simplified.
 * Planned by the fusion issue: constant folding over every primitive,
 * shrinking (inline lets used once), dead code, exact algebraic identities,
 * CSE before shrinking.  Until then this pass leaves the core as it is,
 * which is correct: every later stage accepts an unsimplified core.
 */
#include "fe.h"

weft_status fe_simplify(fe_core *core)
{
    (void)core;
    return WEFT_OK;
}
