/*
 * runtime/exec_foldseg.c: the driver of the foldSeg / fold1Seg
 * skeleton (skeletons-ir/foldseg.c).
 *
 * The segment descriptor is read on the host, as the interpreter reads it
 * (lib/interp.c, acc_fold_seg), with the same checks in the same order: a
 * negative length, or lengths that sum past the innermost extent, is
 * WEFT_ERR_SEGMENTS; a result with too many elements WEFT_ERR_BAD_SHAPE;
 * an empty segment of fold1Seg where the result has elements
 * WEFT_ERR_EMPTY_ARRAY.  The running sums become the kernel's offsets (aux
 * 0), and the kernel runs over the results on the gang, with chunks sized
 * so that each holds about the backend's grain of input elements.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

/* Runs foldSeg / fold1Seg kernel j->k (see the head comment). */
weft_status rt_exec_fold_seg(rt_job *j)
{
    const fe_term *t = j->k->op;
    bool seeded = t->kind == FE_FOLD_SEG;
    const char *name = seeded ? "fold_seg" : "fold1_seg";
    const fe_term *ta = t->kid[seeded ? 1 : 0];
    weft_array *seg = j->kid[seeded ? 2 : 1];
    int64_t shape[WEFT_MAX_RANK];
    weft_status s = rt_term_shape(j, ta, shape);
    if (s) {
        return s;
    }
    int rank = ta->rank;
    if (rank < 1 || !seg || seg->rank != 1 || seg->nleaf != 1) {
        return fe_error(WEFT_ERR_INTERNAL,
                        WHO ": %s: a rank-0 input or a bad segment "
                        "descriptor", name);
    }
    int64_t inner = shape[rank - 1];
    int64_t outer = fe_shape_size(rank - 1, shape);
    int64_t nseg = seg->shape[0];
    if ((s = rt_job_aux(j, 0, WEFT_I64, nseg + 1, true)) != WEFT_OK ||
        (s = fe_array_host(seg)) != WEFT_OK) {
        return s;
    }
    int64_t *off = j->aux[0]->data[0];
    off[0] = 0;
    for (int64_t k = 0; k < nseg; k++) {
        fe_val v = fe_load(seg->type, seg->data[0], k);
        bool neg = fe_is_signed(seg->type) ? v.i < 0 : false;
        bool huge = !fe_is_signed(seg->type) && v.u > (uint64_t)INT64_MAX;
        if (neg) {
            return fe_error(WEFT_ERR_SEGMENTS,
                            WHO ": %s: segment %lld has negative length %lld",
                            name, (long long)k, (long long)v.i);
        }
        if (huge || v.i > inner - off[k]) {
            return fe_error(WEFT_ERR_SEGMENTS,
                            WHO ": %s: segment lengths sum past the innermost "
                            "extent %lld (at segment %lld)", name,
                            (long long)inner, (long long)k);
        }
        off[k + 1] = off[k] + v.i;
    }
    shape[rank - 1] = nseg;
    int64_t n = fe_shape_size(rank, shape);
    if (n < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        WHO ": %s: the result has too many elements", name);
    }
    if (!seeded && outer > 0) {
        for (int64_t k = 0; k < nseg; k++) {
            if (off[k + 1] == off[k]) {
                return fe_error(WEFT_ERR_EMPTY_ARRAY,
                                WHO ": fold1_seg: segment %lld is empty",
                                (long long)k);
            }
        }
    }
    if ((s = rt_job_out(j, 0, t->type, rank, shape)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (n == 0) {
        return WEFT_OK;
    }
    /* about j->grain input elements per chunk */
    int64_t per = off[nseg] / (nseg > 0 ? nseg : 1);
    int64_t grain = j->grain / (per > 1 ? per : 1);
    return rt_job_run(j, 0, n, grain > 0 ? grain : 1);
}
#endif
