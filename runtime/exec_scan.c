/*
 * runtime/exec_scan.c: the driver of the scan skeleton
 * (skeletons-ir/scan.c): scanl, scanl1, scanl', scanr, scanr1, scanr'.
 *
 * The input has `rows` rows of m elements.  Many rows: entry 0 scans whole
 * rows, in parallel over rows.  Few long rows (fewer than four per worker,
 * each at least two grains long): each row is cut into C chunks, enough
 * that every worker gets several, and the three phases run as one gang
 * job (rt_job_phases): chunk reductions, per-row carries, rescans.
 * Empty rows are no error for any scan (scanl1 of an empty row is empty);
 * scanl and scanr still write z, scanl' and scanr' their totals z.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

/* Run scan job j: allocate the outputs and the partials, choose the
 * strategy and run it.  Errors: WEFT_ERR_BAD_SHAPE (a result too large),
 * those of the input's shape (a fused producer), WEFT_ERR_OUT_OF_MEMORY,
 * and whatever the gang reports. */
weft_status rt_exec_scan(rt_job *j)
{
    const fe_term *t = j->k->op;
    fe_kind kind = (fe_kind)t->kind;
    bool seeded = kind == FE_SCANL || kind == FE_SCANL_ || kind == FE_SCANR ||
                  kind == FE_SCANR_;
    bool pair = kind == FE_SCANL_ || kind == FE_SCANR_;
    bool grow = kind == FE_SCANL || kind == FE_SCANR;
    weft_type elt = pair ? t->atype->comp[0]->elt : t->type;
    const fe_term *in = t->kid[seeded ? 1 : 0];
    int64_t shape[WEFT_MAX_RANK], oshape[WEFT_MAX_RANK];
    weft_status s = rt_term_shape(j, in, shape);
    if (s) {
        return s;
    }
    int rank = in->rank;
    if (rank < 1) {
        return fe_error(WEFT_ERR_INTERNAL, WHO ": a scan of a rank-0 array");
    }
    int64_t m = shape[rank - 1];
    int64_t rows = fe_shape_size(rank - 1, shape);
    memcpy(oshape, shape, sizeof shape[0] * (size_t)rank);
    oshape[rank - 1] = m + (grow ? 1 : 0);
    if (fe_shape_size(rank, oshape) < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        WHO ": scan: the result has too many elements");
    }
    if ((s = rt_job_out(j, 0, elt, rank, oshape)) != WEFT_OK ||
        (pair && (s = rt_job_out(j, 1, elt, rank - 1, shape)) != WEFT_OK)) {
        return s;
    }
    int64_t C = rt_row_chunks(j, rows, m);
    j->auxval[1].i = C;
    if ((s = rt_job_aux(j, 0, elt, C > 1 ? rows * C : 1, false)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (rows == 0 || (m == 0 && !seeded)) {
        return WEFT_OK; /* nothing to write */
    }
    if (C == 1) {
        int64_t grain = m > 0 ? j->grain / m : j->grain;
        return rt_job_run(j, 0, rows, grain > 0 ? grain : 1);
    }
    rt_phase ph[3] = {
        {.entry = 1, .n = rows * C, .grain = 1},
        {.entry = 2, .n = rows, .grain = 1},
        {.entry = 3, .n = rows * C, .grain = 1},
    };
    return rt_job_phases(j, 3, ph);
}
#endif
