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
 *
 * The offset form (foldSeg', weft_fold_seg_offsets) has three entries
 * and neither status words nor a counter (run_offsets; the kernel's head
 * comment has the whole): the check of the offsets, which lists the
 * segments longer than SK_SEGOFF_LONG (AUX_LIST) and the middle ones
 * (AUX_MID; their counts and entry 1's ticket in AUX_COUNT, kept zero:
 * entry 1 puts them back), entry 2 the short segments with L = 2^lg lanes
 * a segment, lg chosen here from the shapes alone (aux AUX_LANES), and
 * entry 1 the listed ones, each long one with a block, the middle ones a
 * warp or 8 lanes each.  Unchecked, entry 2 makes the check itself and
 * runs first; in checked mode entry 0 makes it before entries 2 and 1;
 * with no rows entry 0 alone runs.  Nothing of it is zeroed per run: on
 * the GPU no memset comes before its launches.
 */
#ifdef WEFT_HAVE_LLVM
#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

enum {
    MIN_BLOCK = 32, /* the smallest block the kernel runs in */
    TILE = 256,     /* segments of a tile in the usual block */
};

/* log2 of L, the offset form's lanes a segment in entry 2: the least
 * power of two whose lanes fold the mean segment (inner / nseg, from the
 * shapes alone) in their trips (sk_segoff_limit), at most a warp.  A
 * banded matrix's rows of 10 take a lane each, four elements a trip (a
 * CUDA kernel of that shape 32.4 us against 36 for 2 lanes of 4, the H200
 * in session 33); with two trips at most, 2 lanes of 4 had measured 0.103
 * ms against 0.112 with 4 lanes and 0.176 with 8 (round r1, H200). */
static int lanes_lg(int64_t inner, int64_t nseg)
{
    int64_t mean = nseg > 0 ? (inner + nseg - 1) / nseg : 1;
    int lg = 0;
    while (lg < 5 && sk_segoff_limit(lg) < mean) {
        lg++;
    }
    return lg;
}

/* The offset form: its lists sized, lg, and the three entries (see the
 * head comment).  Segments do not overlap, so a well-formed descriptor has
 * at most inner / (LONG + 1) long segments and inner / (limit + 1) middle
 * ones, limit the lanes' two trips; entry 0 lists no more than a list
 * holds (bad offsets may make more look long, and are reported). */
static weft_status run_offsets(rt_job *j, int64_t outer, int64_t inner,
                               int64_t nseg, int rank, const int64_t *shape)
{
    int64_t groups = (nseg + SK_SEGOFF_GROUP - 1) / SK_SEGOFF_GROUP;
    int64_t tiles = (nseg + SK_SEGOFF_TILE - 1) / SK_SEGOFF_TILE;
    int lg = lanes_lg(inner, nseg);
    int64_t limit = sk_segoff_limit(lg);
    int64_t nlong = inner / (SK_SEGOFF_LONG + 1);
    int64_t nmid = inner / (limit + 1);
    nlong = nlong < nseg ? nlong : nseg;
    nmid = nmid < nseg ? nmid : nseg;
    /* entry 0 writes what it lists */
    j->aux_start[SK_SEGOFF_LIST] = RT_AUX_ANY;
    j->aux_start[SK_SEGOFF_MID] = RT_AUX_ANY;
    j->aux_start[SK_SEGOFF_COUNT] = RT_AUX_KEPT_ZERO;
    j->auxval[SK_SEGOFF_LANES].i = lg;
    weft_status s;
    if ((s = rt_job_aux(j, SK_SEGOFF_LIST, WEFT_I64, nlong > 0 ? nlong : 1,
                        false)) != WEFT_OK ||
        (s = rt_job_aux(j, SK_SEGOFF_MID, WEFT_I64, nmid > 0 ? nmid : 1,
                        false)) != WEFT_OK ||
        (s = rt_job_aux(j, SK_SEGOFF_COUNT, WEFT_I64, SK_SEGOFF_COUNTS,
                        false)) != WEFT_OK ||
        (s = rt_job_out(j, 0, j->k->op->type, rank, shape)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (nseg == 0) {
        return WEFT_OK;
    }
    /* an input of no rows still has its offsets checked (entry 0 alone);
     * unchecked, entry 2 checks and lists them itself, checked entry 0
     * does first (its reports come before any gather's); entry 1's items
     * bound its grid (long segments a block, middle ones a warp), and it
     * runs even with none, as it puts the counts back */
    int64_t items1 = (nlong + (nmid + 7) / 8) * outer;
    rt_phase ph[3] = {{.entry = 0, .n = tiles, .grain = 1},
                      {.entry = 2, .n = groups * outer, .grain = 1},
                      {.entry = 1, .n = items1 > 0 ? items1 : 1, .grain = 1}};
    if (outer == 0) {
        return rt_job_phases(j, 1, ph);
    }
    return j->k->checked ? rt_job_phases(j, 3, ph)
                         : rt_job_phases(j, 2, ph + 1);
}

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
    bool byoff = j->k->op->op == FE_SEG_OFFSETS;
    int64_t nseg = fe_seg_count(j->k->op->op, seg->shape[0]);
    int64_t inner = shape[rank - 1];
    shape[rank - 1] = nseg;
    int64_t n = fe_shape_size(rank, shape);
    if (n < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        WHO ": %s: the result has too many elements",
                        byoff ? "fold_seg_offsets" : "fold_seg");
    }
    if (byoff) {
        return run_offsets(j, outer, inner, nseg, rank, shape);
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
