/*
 * runtime/exec_foldseg_pass.c: the driver of the GPU's foldSeg
 * (skeletons-ir/ptx/foldseg.c), two phases in one run.
 *
 * Nothing of the segment descriptor is read on the host: entry 0 scans
 * the lengths into offsets on the device and checks them as
 * runtime/exec_foldseg.c does on the host (a negative length, or lengths
 * that sum past the innermost extent: WEFT_ERR_SEGMENTS, reported through
 * the error word with the first bad segment); entry 1 folds the segments
 * of every row from those offsets, L lanes a segment.  The driver sizes
 * the result (WEFT_ERR_BAD_SHAPE when it has too many elements), the tile
 * status words for the smallest block entry 0 may be launched with
 * (MIN_BLOCK threads of SEGS segments), the tile counter (both zeroed) and
 * the nseg + 1 offsets (entry 0 writes each), and chooses L from the
 * shapes alone: the greatest power of two not above the mean length
 * inner / nseg, at most a warp (a banded matrix's rows of 10 take 8 lanes,
 * as the hand CSR-vector kernel's; entry 1 gives a warp of longer
 * segments the whole warp each).  Entry 0 runs over the tiles of blocks
 * of 256 and entry 1 over warps of 32 / L segments (the grids are what
 * stays resident; blocks and warps loop).
 */
#ifdef WEFT_HAVE_LLVM
#include <stdlib.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

enum {
    MIN_BLOCK = 32,    /* the smallest block entry 0 runs in */
    SEGS = 4,          /* segments a thread of entry 0 */
    TILE = 256 * SEGS, /* segments of a tile in the usual block */
    WARP = 32,
    AUX_LANES = 3, /* log2 L */
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
    int64_t inner = shape[rank - 1];
    shape[rank - 1] = nseg;
    int64_t n = fe_shape_size(rank, shape);
    if (n < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        WHO ": fold_seg: the result has too many elements");
    }
    int64_t mean = nseg > 0 && inner / nseg > 0 ? inner / nseg : 1;
    int lg = 0;
    while (lg < 5 && ((int64_t)2 << lg) <= mean) {
        lg++;
    }
    const char *lk = getenv("WEFT_SEG4_LG");
    if (lk && lk[0] >= '0' && lk[0] <= '5') {
        lg = lk[0] - '0';
    }
    j->auxval[AUX_LANES].i = lg;
    int64_t tiles_min = (nseg + MIN_BLOCK * SEGS - 1) / (MIN_BLOCK * SEGS);
    j->aux_start[2] = RT_AUX_ANY; /* entry 0 writes every offset */
    if ((s = rt_job_aux(j, 0, WEFT_I64, tiles_min > 0 ? tiles_min : 1,
                        false)) != WEFT_OK ||
        (s = rt_job_aux(j, 1, WEFT_I64, 1, false)) != WEFT_OK ||
        (s = rt_job_aux(j, 2, WEFT_I64, nseg + 1, false)) != WEFT_OK ||
        (s = rt_job_out(j, 0, j->k->op->type, rank, shape)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (nseg == 0) {
        return WEFT_OK; /* no segment: nothing to check or fold */
    }
    /* an input of no rows still has its lengths checked (entry 1 then
     * has nothing to do) */
    int64_t per = WARP >> lg;
    rt_phase ph[2] = {
        {.entry = 0, .n = (nseg + TILE - 1) / TILE, .grain = 1},
        {.entry = 1, .n = (outer * nseg + per - 1) / per, .grain = 1}};
    return rt_job_phases(j, 2, ph);
}
#endif
