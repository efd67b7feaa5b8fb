/*
 * runtime/exec_reshape.c: the driver of the reshape skeleton
 * (skeletons-ir/reshape.c): unit, reshape, replicate and slice.
 *
 * unit: a rank-0 output, and the kernel's one position.  The others: the
 * result's shape from the operation's definition (rt_term_shape, which
 * reports the interpreter's errors: a negative extent, a reshape to a
 * different size, a slice index outside its dimension, a negative
 * replicate count), a check that the result's size fits, then the kernel
 * over every position of the result in chunks of the backend's grain.
 */
#ifdef WEFT_HAVE_LLVM
#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

weft_status rt_exec_reshape(rt_job *j)
{
    const fe_term *t = j->k->op;
    int64_t shape[WEFT_MAX_RANK];
    weft_status s;
    if (t->kind == FE_UNIT) {
        if ((s = rt_job_out(j, 0, t->type, 0, NULL)) != WEFT_OK ||
            (s = rt_job_fill(j)) != WEFT_OK) {
            return s;
        }
        return rt_job_run(j, 0, 1, 1);
    }
    if ((s = rt_term_shape(j, t, shape)) != WEFT_OK) {
        return s;
    }
    if (fe_shape_size(t->rank, shape) < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        WHO ": %s: the result has too many elements",
                        t->kind == FE_REPLICATE ? "replicate" : "reshape");
    }
    if ((s = rt_job_out(j, 0, t->type, t->rank, shape)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    return rt_job_run(j, 0, j->out[0]->size, j->grain);
}
#endif
