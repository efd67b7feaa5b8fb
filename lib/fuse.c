/*
 * lib/fuse.c: array fusion (DESIGN.md pipeline step 4; seed 001, "Fusion").
 *
 * Needs: a simplified core (a tree: a producer that is used more than once
 * has been bound by a let, so a producer that appears as an operand is used
 * exactly once there).  Provides: the same core with `delayed` set on every
 * producer that its consumer computes inline instead of reading a manifest
 * array.
 *
 * The delayed representation of seed 001 maps onto the core as follows: a
 * term that is a variable, a parameter, a used array or any collective
 * operation that is not a producer is Done (manifest); a producer marked
 * delayed is Yield (an extent and a function from an index to a value:
 * generate, backpermute, transform, replicate, slice, reshape) or Step (a
 * value function over another array at the same index: map, zipWith).
 * Backends compose these index functions when they emit the consumer.
 *
 * Producers (generate, map, zipWith, backpermute, transform, replicate,
 * slice, reshape) fuse into each other and into the array input of fold,
 * fold1, foldSeg, fold1Seg, the scans, and the source of permute.  A
 * producer that is let-bound because it has several data uses stays
 * manifest: no work is duplicated.  The cost rule for gathers: a producer
 * fused into backpermute, transform, replicate or slice is computed once
 * per element of the consumer, which may be more often than once per
 * element of the producer (replicate reads each source element several
 * times); this is the trade Accelerate makes too, since it saves writing
 * and reading the intermediate array.  Stencils read every element several
 * times and take their input manifest.
 *
 * A backend may decline a fused operand (its skeleton for that consumer
 * cannot read it inline); it then clears `delayed` and computes the
 * producer as an array, which is always correct.  The interpreter ignores
 * the flag.  WEFT_FLAG_NO_FUSION turns the pass off.
 */
#include "fe.h"

static bool is_producer(const fe_term *t)
{
    switch ((fe_kind)t->kind) {
    case FE_GENERATE:
    case FE_MAP:
    case FE_ZIPWITH:
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
    case FE_REPLICATE:
    case FE_SLICE:
    case FE_RESHAPE:
        return t->atype && t->atype->narrays == 1;
    default:
        return false;
    }
}

bool fe_fusible_operand(const fe_term *t, int k)
{
    switch ((fe_kind)t->kind) {
    case FE_MAP:
    case FE_ZIPWITH:
    case FE_REPLICATE:
    case FE_SLICE:
    case FE_FOLD1:
    case FE_FOLD1_SEG:
    case FE_SCANL1:
    case FE_SCANR1:
        return k == 0;
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
    case FE_RESHAPE:
    case FE_FOLD:
    case FE_FOLD_SEG:
    case FE_SCANL:
    case FE_SCANL_:
    case FE_SCANR:
    case FE_SCANR_:
    case FE_PERMUTE:
        return k == 1;
    default:
        return false;
    }
}

static void mark(fe_term *t)
{
    if (!t) {
        return;
    }
    for (int i = 0; i < t->nkid; i++) {
        fe_term *kid = t->kid[i];
        if (!kid) {
            continue;
        }
        bool zip = t->kind == FE_ZIPWITH;
        if ((zip || fe_fusible_operand(t, i)) && kid->acc && is_producer(kid)) {
            kid->delayed = true;
        }
        mark(kid);
    }
    for (int i = 0; i < t->nfun; i++) {
        mark(t->fun[i]->body);
    }
}

weft_status fe_fuse(fe_core *core)
{
    if (core->no_fusion) {
        return WEFT_OK;
    }
    mark(core->root);
    return WEFT_OK;
}
