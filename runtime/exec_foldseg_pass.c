/*
 * runtime/exec_foldseg_pass.c: the driver of the GPU's foldSeg in one
 * pass (skeletons-ir/ptx/foldseg.c).
 *
 * Nothing of the segment descriptor is read on the host: the kernel scans
 * the lengths itself and checks them as runtime/exec_foldseg.c does on
 * the host (a negative length, or lengths that sum past the innermost
 * extent: WEFT_ERR_SEGMENTS, reported through the error word with the
 * first bad segment).  The driver sizes the result (WEFT_ERR_BAD_SHAPE when
 * it has too many elements), the tile status words for the smallest block
 * the kernel may be launched with (MIN_BLOCK threads: a tile per MIN_BLOCK
 * segments of each row) and the tile counter, both zeroed, and launches the
 * one entry over the tiles of blocks of 256 (the grid is what stays
 * resident; the blocks loop over the tiles).
 */
#ifdef WEFT_HAVE_LLVM
#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

enum {
    MIN_BLOCK = 32, /* the smallest block the kernel runs in */
    TILE = 256,     /* segments of a tile in the usual block */
};

weft_status rt_exec_fold_seg_pass(rt_job *j)
{
    weft_array *seg;
    int64_t shape[WEFT_MAX_RANK];
    int rank;
    weft_status s = rt_fold_seg_input(j, "fold_seg", shape, &rank, &seg);
    if (s) {
        return s;
    }
    int64_t outer = fe_shape_size(rank - 1, shape);
    int64_t nseg = seg->shape[0];
    shape[rank - 1] = nseg;
    int64_t n = fe_shape_size(rank, shape);
    if (n < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        WHO ": fold_seg: the result has too many elements");
    }
    /* rows: an input of no rows still has its lengths checked, once */
    int64_t rows = outer > 0 ? outer : 1;
    int64_t tiles_min = rows * ((nseg + MIN_BLOCK - 1) / MIN_BLOCK);
    if ((s = rt_job_aux(j, 0, WEFT_I64, tiles_min > 0 ? tiles_min : 1,
                        false)) != WEFT_OK ||
        (s = rt_job_aux(j, 1, WEFT_I64, 1, false)) != WEFT_OK ||
        (s = rt_job_out(j, 0, j->k->op->type, rank, shape)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (nseg == 0) {
        return WEFT_OK; /* no segment: nothing to check or fold */
    }
    return rt_job_run(j, 0, rows * ((nseg + TILE - 1) / TILE), 1);
}
#endif
