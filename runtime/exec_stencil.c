/*
 * runtime/exec_stencil.c: the driver of the stencil skeleton
 * (skeletons-ir/stencil.c): stencil and stencil2.
 *
 * The result's shape is the array's (stencil2: the intersection of the
 * two).  The kernel runs over pieces of rows: rows are every dimension
 * but the innermost, and a long row (more than 2 * ST_PIECE columns) is cut
 * into C pieces of about ST_PIECE columns, so that even a rank-1 array
 * spreads over the whole gang (on the GPU, SK_STENCIL_FINE, pieces of
 * about ST_FINE_PIECE columns: one per thread, neighbouring threads on
 * neighbouring pieces).  An empty result runs nothing.  The GPU's
 * tiled kernel of ranks 2 and 3 (SK_STENCIL_TILED,
 * skeletons-ir/ptx/stencil.c) runs instead over its tiles, a block each.
 */
#ifdef WEFT_HAVE_LLVM
#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"
#define ST_PIECE 4096   /* columns per piece of a long row */
#define ST_FINE_PIECE 4 /* ... on the GPU (SK_STENCIL_FINE) */

weft_status rt_exec_stencil(rt_job *j)
{
    const fe_term *t = j->k->op;
    bool two = t->kind == FE_STENCIL2;
    const weft_array *a = j->kid[0], *b = two ? j->kid[2] : NULL;
    FE_CHECK(a && (!two || b));
    int rank = t->rank;
    int64_t shape[WEFT_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        shape[d] = a->shape[d];
        if (b && b->shape[d] < shape[d]) {
            shape[d] = b->shape[d];
        }
    }
    weft_status s = rt_job_out(j, 0, t->type, rank, shape);
    if (s) {
        return s;
    }
    int64_t m = shape[rank - 1];
    int64_t rows = fe_shape_size(rank - 1, shape);
    int64_t piece = j->k->flags & SK_STENCIL_FINE ? ST_FINE_PIECE : ST_PIECE;
    int64_t C = m > 2 * piece ? m / piece : 1;
    j->auxval[0].i = C;
    if ((s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (j->out[0]->size == 0) {
        return WEFT_OK;
    }
    if (j->k->flags & SK_STENCIL_TILED) {
        /* a block per tile of the GPU's tiled kernel (ranks 2 and 3) */
        int64_t tw = sk_stencil_tile_w(j->k->flags);
        int64_t th = sk_stencil_tile_h(j->k->flags);
        int64_t planes = rank == 3 ? shape[0] : 1;
        int64_t tiles =
            planes * ((shape[rank - 2] + th - 1) / th) * ((m + tw - 1) / tw);
        /* over several devices: a range of tiles each (rows of tiles:
         * their halos' other rows read over peer access) */
        rt_phase ph = {.entry = 0,
                       .n = tiles,
                       .grain = 1,
                       .split =
                           j->devices > 1 && j->out[0]->size >= RT_SPLIT_MIN};
        return rt_job_phases(j, 1, &ph);
    }
    int64_t cols = m / C; /* columns per piece, at least 1 */
    int64_t grain = j->grain / (cols > 0 ? cols : 1);
    return rt_job_run(j, 0, rows * C, grain > 0 ? grain : 1);
}
#endif
