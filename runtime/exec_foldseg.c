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
 * so that each holds about the backend's grain of input elements.  The
 * common descriptors (i32, i64) are scanned in a tight loop, and many i32
 * lengths on the backend's host threads where it has them
 * (rt_ops.host_phases: the CPU's gang): a serial scan of a million
 * lengths took as long as the segmented fold itself on 16 cores.
 *
 * The offset form (weft_fold_seg_offsets) needs no scan: its descriptor
 * is checked in place (fe_seg_offsets_check's rules: the first offset
 * non-negative, none below the one before, none past the extent), by a
 * tight loop without early exit over chunks on the host threads where
 * there are many, the interpreter's check reporting the first bad segment
 * where that loop fails; the kernel then reads the descriptor itself and
 * the parts are cut by binary search in it.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

#define WHO "weft_run"

/* The offsets of i32 or i64 lengths len[0 .. nseg-1] into off[1 ..] (off[0]
 * = 0 set), for as long as every length is non-negative and the running
 * sum stays within inner; returns the first segment it could not take
 * (nseg when it took them all).  The common descriptor types in a tight
 * loop: fe_load's per-element switch cost as much as the segmented fold
 * of a million short rows; what it stops at goes through the general loop
 * below, which reports it. */
#define OFFSETS(T)                                                             \
    static int64_t offsets_##T(const T##_t *len, int64_t nseg, int64_t inner,  \
                               int64_t *off)                                   \
    {                                                                          \
        int64_t acc = 0;                                                       \
        for (int64_t k = 0; k < nseg; k++) {                                   \
            int64_t v = len[k];                                                \
            if (v < 0 || v > inner - acc) {                                    \
                return k;                                                      \
            }                                                                  \
            acc += v;                                                          \
            off[k + 1] = acc;                                                  \
        }                                                                      \
        return nseg;                                                           \
    }
OFFSETS(int32)
OFFSETS(int64)
#undef OFFSETS

/* Whether the offsets o[0 .. nseg] (i32 or i64) of the offset form are
 * good: o[0] >= 0, non-decreasing, o[nseg] <= inner.  A vectorisable loop
 * with no early exit; where it fails, fe_seg_offsets_check finds and
 * reports the first bad segment. */
#define OFFSETS_OK(T)                                                          \
    static bool offsets_ok_##T(const T##_t *o, int64_t lo, int64_t hi,         \
                               int64_t inner)                                  \
    {                                                                          \
        bool bad = false;                                                      \
        for (int64_t k = lo; k < hi; k++) {                                    \
            bad |= (o[k + 1] < o[k]) | (o[k + 1] > inner);                     \
        }                                                                      \
        return !bad;                                                           \
    }
OFFSETS_OK(int32)
OFFSETS_OK(int64)
#undef OFFSETS_OK

/* Offsets of many i32 lengths on the backend's host threads: each of C
 * chunks of the lengths is summed (phase 1), the sums scanned here, and
 * each chunk writes its offsets from its carry (phase 2).  A negative
 * length or a total past the extent leaves the offsets to the serial
 * loops, which find and report the first bad segment. */
enum {
    PAR_MIN_SEGS = 1 << 16,  /* fewer segments: the serial loop */
    PAR_CHUNK_MIN = 1 << 14, /* fewest lengths in a chunk */
    PAR_CHUNKS_MAX = 256,    /* most chunks */
    LEN_CHUNK_MIN = 1 << 12  /* by_lengths: fewest lengths in a chunk */
};

typedef struct par_offsets {
    const int32_t *len;
    const int64_t *len64; /* par_sum: i64 lengths instead (by_lengths);
                             par_check: the offsets (len or len64) */
    int64_t inner;        /* par_check: the innermost extent */
    int64_t nseg, per;    /* lengths, and per chunk */
    int64_t *off;
    int64_t sum[PAR_CHUNKS_MAX + 1]; /* per chunk; -1: a negative length */
} par_offsets;

/* The lengths [*lo, *hi) of chunk c. */
static void par_chunk(const par_offsets *po, int64_t c, int64_t *lo,
                      int64_t *hi)
{
    *lo = c * po->per;
    *hi = *lo + po->per < po->nseg ? *lo + po->per : po->nseg;
}

static void par_sum(int64_t start, int64_t end, const void *arg)
{
    par_offsets *po = (par_offsets *)arg;
    for (int64_t c = start; c < end; c++) {
        int64_t lo, hi;
        par_chunk(po, c, &lo, &hi);
        int64_t acc = 0;
        bool neg = false;
        if (po->len64) {
            /* a sum past INT64_MAX needs lengths past 2^63 / nseg: such a
             * length is past any extent, and the serial loop says so */
            for (int64_t k = lo; k < hi; k++) {
                neg |= po->len64[k] < 0 || po->len64[k] > INT64_MAX / po->nseg;
                acc += neg ? 0 : po->len64[k];
            }
        } else {
            for (int64_t k = lo; k < hi; k++) {
                neg |= po->len[k] < 0;
                acc += po->len[k];
            }
        }
        po->sum[c] = neg ? -1 : acc;
    }
}

static void par_write(int64_t start, int64_t end, const void *arg)
{
    const par_offsets *po = arg;
    for (int64_t c = start; c < end; c++) {
        int64_t lo, hi;
        par_chunk(po, c, &lo, &hi);
        int64_t acc = po->sum[c];
        for (int64_t k = lo; k < hi; k++) {
            acc += po->len[k];
            po->off[k + 1] = acc;
        }
    }
}

/* How many chunks of nseg lengths or offsets the host threads take: 4 a
 * worker, at most PAR_CHUNKS_MAX, at least PAR_CHUNK_MIN segments each; 0
 * where the backend has no host threads or there are too few segments
 * (the serial loops then). */
static int64_t par_chunks(const rt_job *j, int64_t nseg)
{
    int64_t chunks = j->workers * 4;
    chunks = chunks > PAR_CHUNKS_MAX ? PAR_CHUNKS_MAX : chunks;
    if (chunks > nseg / PAR_CHUNK_MIN) {
        chunks = nseg / PAR_CHUNK_MIN;
    }
    if (!j->ops->host_phases || j->workers < 2 || nseg < PAR_MIN_SEGS ||
        chunks < 2) {
        return 0;
    }
    return chunks;
}

/* The offset form's check of chunk c's segments: sum[c] = -1 where one
 * is bad. */
static void par_check(int64_t start, int64_t end, const void *arg)
{
    par_offsets *po = (par_offsets *)arg;
    for (int64_t c = start; c < end; c++) {
        int64_t lo, hi;
        par_chunk(po, c, &lo, &hi);
        bool ok = po->len64 ? offsets_ok_int64(po->len64, lo, hi, po->inner)
                            : offsets_ok_int32(po->len, lo, hi, po->inner);
        po->sum[c] = ok ? 0 : -1;
    }
}

/* Whether the offset form's descriptor off (nseg + 1 entries) is good by
 * the tight loops: i32 or i64, first offset non-negative, each chunk of
 * segments good (on the host threads where there are many).  False
 * leaves it to fe_seg_offsets_check, which reports the first bad
 * segment (or finds none: a type without a tight loop, out of memory);
 * *s gets a failure of the host threads. */
static bool offsets_good(rt_job *j, const weft_array *off, int64_t nseg,
                         int64_t inner, weft_status *s)
{
    const void *o = off->data[0];
    bool i64 = off->type == WEFT_I64;
    if ((off->type != WEFT_I32 && !i64) || nseg == 0) {
        return false;
    }
    if ((i64 ? ((const int64_t *)o)[0] : ((const int32_t *)o)[0]) < 0) {
        return false;
    }
    int64_t chunks = par_chunks(j, nseg);
    if (chunks == 0) {
        return i64 ? offsets_ok_int64(o, 0, nseg, inner)
                   : offsets_ok_int32(o, 0, nseg, inner);
    }
    par_offsets *po = fe_alloc(j->ctx, sizeof *po);
    if (!po) {
        return false;
    }
    memset(po, 0, sizeof *po);
    po->len = i64 ? NULL : o;
    po->len64 = i64 ? o : NULL;
    po->nseg = nseg;
    po->inner = inner;
    po->per = (nseg + chunks - 1) / chunks;
    chunks = (nseg + po->per - 1) / po->per;
    rt_host_phase ph = {.fn = par_check, .arg = po, .n = chunks, .grain = 1};
    bool good = (*s = j->ops->host_phases(j, 1, &ph)) == WEFT_OK;
    for (int64_t c = 0; good && c < chunks; c++) {
        good = po->sum[c] == 0;
    }
    fe_free(j->ctx, po, sizeof *po);
    return good;
}

/* Step 1 of both users of par_offsets (its lengths and nseg set): about
 * `chunks` chunks of them summed on the host threads, and the sums turned
 * into each chunk's carry (po->sum[c]; po->sum[chunks] the total) where
 * every length is non-negative and the total stays within inner.  Returns
 * the chunks, or 0 when a length is bad (the serial loops report it) or
 * the host threads failed (*s). */
static int64_t chunk_carries(rt_job *j, par_offsets *po, int64_t chunks,
                             int64_t inner, weft_status *s)
{
    po->per = (po->nseg + chunks - 1) / chunks;
    chunks = (po->nseg + po->per - 1) / po->per;
    rt_host_phase ph = {.fn = par_sum, .arg = po, .n = chunks, .grain = 1};
    if ((*s = j->ops->host_phases(j, 1, &ph)) != WEFT_OK) {
        return 0;
    }
    int64_t acc = 0;
    for (int64_t c = 0; c < chunks; c++) {
        int64_t v = po->sum[c];
        if (v < 0 || v > inner - acc) {
            return 0;
        }
        po->sum[c] = acc;
        acc += v;
    }
    po->sum[chunks] = acc;
    return chunks;
}

/* The offsets of i32 lengths by par_offsets where the backend has host
 * threads and there are enough segments: returns the segments done, nseg
 * or 0 (not done here: too few, a bad length, out of memory); *s gets a
 * failure of the host threads (cancellation). */
static int64_t offsets_parallel(rt_job *j, const int32_t *len, int64_t nseg,
                                int64_t inner, int64_t *off, weft_status *s)
{
    int64_t chunks = par_chunks(j, nseg);
    if (chunks == 0) {
        return 0;
    }
    par_offsets *po = fe_alloc(j->ctx, sizeof *po);
    if (!po) {
        return 0; /* the serial loop needs no memory */
    }
    po->len = len;
    po->len64 = NULL;
    po->nseg = nseg;
    po->off = off;
    int64_t done = 0;
    if ((chunks = chunk_carries(j, po, chunks, inner, s)) > 0) {
        rt_host_phase ph = {
            .fn = par_write, .arg = po, .n = chunks, .grain = 1};
        if ((*s = j->ops->host_phases(j, 1, &ph)) == WEFT_OK) {
            done = nseg;
        }
    }
    fe_free(j->ctx, po, sizeof *po);
    return done;
}

/* How many parts of about equal elements a rank-1 input of nseg segments
 * and `elems` elements is cut into: where the workers are host threads
 * (rt_ops.host_phases), PARTS_PER_WORKER per worker, each of at least the
 * grain; else 0 (a GPU runs over the results, a thread per segment).
 * Whole segments go to a part, so one longer than a part leaves the next
 * parts empty; the gang's stealing evens out what remains. */
enum { PARTS_PER_WORKER = 16 };

static int64_t parts_of(const rt_job *j, int64_t nseg, int64_t elems)
{
    if (!j->ops->host_phases || j->workers < 2) {
        return 0;
    }
    int64_t parts = j->workers * PARTS_PER_WORKER;
    int64_t most = elems / (j->grain > 0 ? j->grain : 1);
    parts = parts < most ? parts : most;
    parts = parts < nseg ? parts : nseg;
    return parts >= 2 ? parts : 0;
}

/* The segments' offsets: the driver's (off, i64) or, in the offset form,
 * the descriptor's own (desc, any integral type, checked). */
typedef struct offsets {
    const int64_t *off;
    const weft_array *desc;
} offsets;

static int64_t offset_at(const offsets *o, int64_t k)
{
    if (o->off) {
        return o->off[k];
    }
    switch (o->desc->type) {
    case WEFT_I32: return ((const int32_t *)o->desc->data[0])[k];
    case WEFT_I64: return ((const int64_t *)o->desc->data[0])[k];
    default: return fe_load(o->desc->type, o->desc->data[0], k).i;
    }
}

/* part[p] = the first segment that starts at or after off[0] + p * elems /
 * parts (elems = off[nseg] - off[0]; off non-decreasing), part[parts] =
 * nseg. */
static void cut_parts(int64_t *part, int64_t parts, const offsets *o,
                      int64_t nseg)
{
    /* parts > 1 only where there are segments (parts_of) */
    int64_t first = parts > 1 ? offset_at(o, 0) : 0;
    int64_t elems = parts > 1 ? offset_at(o, nseg) - first : 0;
    part[0] = 0;
    for (int64_t p = 1; p < parts; p++) {
        /* p * elems / parts without overflow (the remainder's product is
         * below parts^2) */
        int64_t want = first + elems / parts * p + elems % parts * p / parts;
        int64_t lo = part[p - 1], hi = nseg;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (offset_at(o, mid) < want) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        part[p] = lo;
    }
    part[parts] = nseg;
}

/* foldSeg of one row by lengths (aux 2 = 2, skeletons-ir/foldseg.c):
 * where the backend has host threads and the descriptor is i32 or i64 with
 * enough segments, the lengths are cut into chunks of equal counts, each
 * chunk's sum taken on the host threads and checked here, and the kernel
 * runs over the chunks, each walking its own lengths from its first
 * element (aux 0) and segment (aux 1).  No offsets are written or read,
 * which is what the offsets path spends beyond the fold on a banded
 * matrix.  Returns true when it ran the kernel or failed (*s); false
 * leaves the run to the offsets path (too few segments, a bad length: the
 * serial loop there reports it, no memory). */
static bool by_lengths(rt_job *j, weft_array *seg, int64_t nseg, int64_t inner,
                       weft_status *s)
{
    /* the chunks are the kernel's parts too: PARTS_PER_WORKER a worker,
     * so that stealing evens out chunks of unequal elements */
    int64_t chunks = j->workers * PARTS_PER_WORKER;
    chunks = chunks > PAR_CHUNKS_MAX ? PAR_CHUNKS_MAX : chunks;
    if (chunks > nseg / LEN_CHUNK_MIN) {
        chunks = nseg / LEN_CHUNK_MIN;
    }
    if (!j->ops->host_phases || j->workers < 2 || nseg < PAR_MIN_SEGS ||
        chunks < 2 || (seg->type != WEFT_I32 && seg->type != WEFT_I64)) {
        return false;
    }
    par_offsets *po = fe_alloc(j->ctx, sizeof *po);
    if (!po) {
        return false;
    }
    memset(po, 0, sizeof *po);
    if (seg->type == WEFT_I32) {
        po->len = seg->data[0];
    } else {
        po->len64 = seg->data[0];
    }
    po->nseg = nseg;
    chunks = chunk_carries(j, po, chunks, inner, s);
    bool ran = chunks > 0 || *s != WEFT_OK;
    int64_t shape[1] = {nseg};
    if (chunks > 0 &&
        (*s = rt_job_aux(j, 0, WEFT_I64, chunks + 1, true)) == WEFT_OK &&
        (*s = rt_job_aux(j, 1, WEFT_I64, chunks + 1, true)) == WEFT_OK) {
        int64_t *first = j->aux[0]->data[0];
        int64_t *part = j->aux[1]->data[0];
        for (int64_t c = 0; c <= chunks; c++) {
            first[c] = po->sum[c];
            part[c] = c * po->per < nseg ? c * po->per : nseg;
        }
        j->auxval[2].i = 2;
        if ((*s = rt_job_out(j, 0, j->k->op->type, 1, shape)) == WEFT_OK &&
            (*s = rt_job_fill(j)) == WEFT_OK) {
            *s = rt_job_run(j, 0, chunks, 1);
        }
    }
    fe_free(j->ctx, po, sizeof *po);
    return ran;
}

weft_status rt_fold_seg_input(rt_job *j, const char *name, int64_t *shape,
                              int *rank, weft_array **seg)
{
    const fe_term *t = j->k->op;
    bool seeded = t->kind == FE_FOLD_SEG;
    const fe_term *ta = t->kid[seeded ? 1 : 0];
    *seg = j->kid[seeded ? 2 : 1];
    weft_status s = rt_term_shape(j, ta, shape);
    if (s) {
        return s;
    }
    *rank = ta->rank;
    if (*rank < 1 || !*seg || (*seg)->rank != 1 || (*seg)->nleaf != 1) {
        return fe_error(WEFT_ERR_INTERNAL,
                        WHO ": %s: a rank-0 input or a bad segment "
                            "descriptor",
                        name);
    }
    return WEFT_OK;
}

/* The offsets of lengths seg (nseg of them, checked) into aux 0. */
static weft_status offsets_of_lengths(rt_job *j, weft_array *seg, int64_t nseg,
                                      int64_t inner, const char *name)
{
    weft_status s = rt_job_aux(j, 0, WEFT_I64, nseg + 1, true);
    if (s) {
        return s;
    }
    int64_t *off = j->aux[0]->data[0];
    off[0] = 0;
    int64_t k0 = 0;
    if (seg->type == WEFT_I32) {
        k0 = offsets_parallel(j, seg->data[0], nseg, inner, off, &s);
        if (s) {
            return s;
        }
        if (k0 == 0) {
            k0 = offsets_int32(seg->data[0], nseg, inner, off);
        }
    } else if (seg->type == WEFT_I64) {
        k0 = offsets_int64(seg->data[0], nseg, inner, off);
    }
    /* the rest, and the error where a length is wrong */
    return fe_seg_offsets(seg, k0, nseg, inner, name, off);
}

/* Runs foldSeg / fold1Seg kernel j->k (see the head comment). */
weft_status rt_exec_fold_seg(rt_job *j)
{
    const fe_term *t = j->k->op;
    bool seeded = t->kind == FE_FOLD_SEG;
    bool byoff = t->op == FE_SEG_OFFSETS;
    const char *name = seeded  ? byoff ? "fold_seg_offsets" : "fold_seg"
                       : byoff ? "fold1_seg_offsets"
                               : "fold1_seg";
    weft_array *seg;
    int64_t shape[WEFT_MAX_RANK];
    int rank;
    weft_status s = rt_fold_seg_input(j, name, shape, &rank, &seg);
    if (s) {
        return s;
    }
    int64_t inner = shape[rank - 1];
    int64_t outer = fe_shape_size(rank - 1, shape);
    int64_t nseg = fe_seg_count(t->op, seg->shape[0]);
    if ((s = fe_array_host(seg)) != WEFT_OK) {
        return s;
    }
    if (seeded && !byoff && rank == 1 && by_lengths(j, seg, nseg, inner, &s)) {
        return s;
    }
    offsets o = {.desc = seg};
    if (byoff) {
        /* aux 0 unused: one element */
        if (!offsets_good(j, seg, nseg, inner, &s) &&
            (s || (s = fe_seg_offsets_check(seg, 0, nseg, inner, name, NULL)) !=
                      WEFT_OK)) {
            return s;
        }
        s = rt_job_aux(j, 0, WEFT_I64, 1, true);
    } else {
        s = offsets_of_lengths(j, seg, nseg, inner, name);
        o.off = s == WEFT_OK ? j->aux[0]->data[0] : NULL;
    }
    if (s) {
        return s;
    }
    shape[rank - 1] = nseg;
    int64_t n = fe_shape_size(rank, shape);
    if (n < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        WHO ": %s: the result has too many elements", name);
    }
    if (!seeded && outer > 0) {
        for (int64_t k = 0; k < nseg; k++) {
            if (offset_at(&o, k + 1) == offset_at(&o, k)) {
                return fe_error(WEFT_ERR_EMPTY_ARRAY,
                                WHO ": %s: segment %lld is empty", name,
                                (long long)k);
            }
        }
    }
    int64_t elems = nseg > 0 ? offset_at(&o, nseg) - offset_at(&o, 0) : 0;
    int64_t parts = outer == 1 ? parts_of(j, nseg, elems) : 0;
    if ((s = rt_job_aux(j, 1, WEFT_I64, parts + 1, true)) != WEFT_OK) {
        return s;
    }
    cut_parts(j->aux[1]->data[0], parts, &o, nseg);
    /* parts of one row: from the results' range (mode 1), the offset
     * form's too.  Its walk (each segment's end the next one's start, as
     * by_lengths' mode 2) ran the power-law smvm 1.6 times as long on Zen
     * 5, on one thread as on two: LLVM kept the bounds check of the
     * fused gather's index read (cols ! i) in the vectorised loop, as
     * masked loads, where from two offsets it splits the check off */
    j->auxval[2].i = parts == 0 ? 0 : 1;
    if ((s = rt_job_out(j, 0, j->k->op->type, rank, shape)) != WEFT_OK ||
        (s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (n == 0) {
        return WEFT_OK;
    }
    if (parts > 0) {
        return rt_job_run(j, 0, parts, 1);
    }
    /* about j->grain input elements per chunk */
    int64_t per = elems / (nseg > 0 ? nseg : 1);
    int64_t grain = j->grain / (per > 1 ? per : 1);
    return rt_job_run(j, 0, n, grain > 0 ? grain : 1);
}
#endif
