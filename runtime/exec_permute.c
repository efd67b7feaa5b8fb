/*
 * runtime/exec_permute.c: the driver of the permute skeleton
 * (skeletons-ir/permute.c).
 *
 * The output starts as a copy of the default array (the backend's copy);
 * then the kernel runs over the linear positions of the source.  With more
 * than one worker and more than one chunk of source, entry 0 runs on the
 * gang and updates the output atomically (native atomics, a CAS loop or
 * striped locks, as the kernel was compiled); otherwise entry 1, the plain
 * sequential loop, runs on the calling thread.  A target outside the
 * output comes back in the error word, which rt_exec turns into
 * WEFT_ERR_OUT_OF_BOUNDS.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

/* Runs permute kernel j->k (see the head comment). */
weft_status rt_exec_permute(rt_job *j)
{
    const fe_term *t = j->k->op;
    const weft_array *def = j->kid[0];
    if (!def || t->kid[1] == NULL) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_run: permute: an operand is missing");
    }
    int64_t sshape[WEFT_MAX_RANK];
    weft_status s = rt_term_shape(j, t->kid[1], sshape);
    if (s || (s = rt_job_out(j, 0, def->type, def->rank, def->shape)) !=
                 WEFT_OK) {
        return s;
    }
    if ((s = j->ops->copy(j, j->out[0], j->kid[0])) != WEFT_OK) {
        return s;
    }
    bool locks = j->k->aux_item[0] >= 0;
    /* the striped locks: PERMUTE_LOCKS of skeletons-ir/permute.c */
    if (locks && (s = rt_job_aux(j, 0, WEFT_I32, 4096, false)) != WEFT_OK) {
        return s;
    }
    if ((s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    int64_t n = fe_shape_size(t->kid[1]->rank, sshape);
    if (n <= 0) {
        return WEFT_OK;
    }
    if (j->workers > 1 && n > j->grain) {
        return rt_job_run(j, 0, n, j->grain);
    }
    /* One chunk, one thread: no atomics needed. */
    return rt_job_run(j, 1, n, n);
}
#endif
