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
 *
 * rt_exec_scan_pass drives the PTX target's single-pass scan
 * (skeletons-ir/ptx/scan.c): the same outputs, then one launch over the
 * row's tiles with a zeroed tile status (flags, aggregates, inclusive
 * prefixes) and a zeroed tile counter; over several devices
 * (rt_job.devices), whole rows per device, or one long row in parts,
 * reduce-then-scan: every part but the last reduces its tiles to a total,
 * then every part scans its tiles with the totals before it (and the
 * seed) as its first tile's prefix, a tile counter per part and pass.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

/* What both drivers need to know of a scan, once its outputs are made:
 * the element type, the input's row length m and its rows, and whether
 * the scan has z. */
typedef struct scan_rows {
    weft_type elt;
    int64_t m, rows;
    bool seeded;
} scan_rows;

/* The outputs of scan job j (scan.c's shapes), and *out.  Errors:
 * WEFT_ERR_BAD_SHAPE (a result too large), those of the input's shape (a
 * fused producer), WEFT_ERR_OUT_OF_MEMORY. */
static weft_status scan_outputs(rt_job *j, scan_rows *out)
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
    *out = (scan_rows){.elt = elt, .m = m, .rows = rows, .seeded = seeded};
    return WEFT_OK;
}

/* Run scan job j: allocate the outputs and the partials, choose the
 * strategy and run it.  Errors: those of scan_outputs, and whatever the
 * gang reports. */
weft_status rt_exec_scan(rt_job *j)
{
    scan_rows sc;
    weft_status s = scan_outputs(j, &sc);
    if (s) {
        return s;
    }
    int64_t C = rt_row_chunks(j, sc.rows, sc.m);
    j->auxval[1].i = C;
    int64_t partials = C > 1 ? sc.rows * C : 1;
    if ((s = rt_job_aux(j, 0, sc.elt, partials, false)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (sc.rows == 0 || (sc.m == 0 && !sc.seeded)) {
        return WEFT_OK; /* nothing to write */
    }
    if (C == 1) {
        int64_t grain = sc.m > 0 ? j->grain / sc.m : j->grain;
        return rt_job_run(j, 0, sc.rows, grain > 0 ? grain : 1);
    }
    rt_phase ph[3] = {
        {.entry = 1, .n = sc.rows * C, .grain = 1},
        {.entry = 2, .n = sc.rows, .grain = 1},
        {.entry = 3, .n = sc.rows * C, .grain = 1},
    };
    return rt_job_phases(j, 3, ph);
}

/* The row length of scan job j's input, from its first output (a row
 * longer by one for scanl and scanr). */
static int64_t row_length(const rt_job *j)
{
    const weft_array *o = j->out[0];
    fe_kind kind = (fe_kind)j->k->op->kind;
    return o->shape[o->rank - 1] - (kind == FE_SCANL || kind == FE_SCANR);
}

/* Run single-pass scan job j (ptx/scan.c): the outputs, aux 0 the tile
 * flags (of the kernel's type: i32, or i64 holding the value too), 1 and
 * 2 the tiles' aggregates and inclusive prefixes (one element each where
 * the flags hold the values: the kernel does not touch them), 3 the tile
 * counter, 4 the parts' totals of a row over devices (one element per
 * device), all zeroed, sized for the most tiles the kernel can
 * cut (k->chunk_min positions per tile, its smallest block: at most
 * ceil(m / chunk_min) per row, one for an empty row), then one launch of
 * entry 0 over those tiles, a block each.  Errors: those of scan_outputs,
 * WEFT_ERR_INTERNAL without a tile size, and the launch's. */
weft_status rt_exec_scan_pass(rt_job *j)
{
    scan_rows sc;
    weft_status s = scan_outputs(j, &sc);
    if (s) {
        return s;
    }
    int64_t tile = j->k->chunk_min;
    FE_CHECK(tile >= 1);
    int64_t per_row = sc.m > 0 ? sc.m / tile + (sc.m % tile != 0) : 1;
    int64_t tiles = sc.rows * per_row;
    int64_t slots = tiles > 0 ? tiles : 1;
    /* the flags' type is the kernel's (i64 where flag and value share a
     * word) */
    weft_type flag = j->k->item[j->k->aux_item[0]].type;
    int64_t vslots = flag == WEFT_I64 ? 1 : slots; /* unused when packed */
    if ((s = rt_job_aux(j, 0, flag, slots, false)) != WEFT_OK ||
        (s = rt_job_aux(j, 1, sc.elt, vslots, false)) != WEFT_OK ||
        (s = rt_job_aux(j, 2, sc.elt, vslots, false)) != WEFT_OK ||
        (s = rt_job_aux(j, 3, WEFT_I64, 1, false)) != WEFT_OK ||
        (s = rt_job_aux(j, 4, sc.elt, j->devices > 1 ? j->devices : 1,
                        false)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (sc.rows == 0 || (sc.m == 0 && !sc.seeded)) {
        return WEFT_OK; /* nothing to write */
    }
    int64_t rm = row_length(j), nrows = tiles / per_row;
    if (j->devices > 1 && j->k->nentry == 2 &&
        ((nrows == 1 && rm >= RT_SPLIT_MIN) ||
         (nrows >= j->devices && nrows * rm >= RT_SPLIT_MIN))) {
        /* over several devices: each its part's tiles (of whole rows
         * where there are several), a tile counter each (the backend
         * sizes aux 3); one row: the parts' totals first (entry 1, all
         * parts but the last), then the parts' scans (ptx/scan.c,
         * "Several devices": where the backend fuses the totals into the
         * scan's kernel, the first phase launches nothing) */
        rt_phase ph[2] = {{.entry = 1, .n = tiles, .grain = 1, .spread = rm},
                          {.entry = 0, .n = tiles, .grain = 1, .spread = rm}};
        return nrows == 1 ? rt_job_phases(j, 2, ph)
                          : rt_job_phases(j, 1, &ph[1]);
    }
    return rt_job_run(j, 0, tiles, 1);
}
#endif
