/*
 * runtime/exec_permute.c: the driver of the permute skeleton
 * (skeletons-ir/permute.c).
 *
 * The output starts as a copy of the default array (the backend's copy),
 * or, where the default is fused into the kernel, as what the kernel's
 * default entry (sk_permute_init_entry) writes, a phase before the
 * others; then the kernel runs over the linear positions of the source.
 * The default's shape is worked out before the source's, as the
 * interpreter computes the default first.  With more
 * than one worker and more than one chunk of source, entry 0 runs on the
 * gang and updates the output atomically (native atomics, a CAS loop or
 * striped locks, as the kernel was compiled); otherwise entry 1, the plain
 * sequential loop, runs on the calling thread.  A target outside the
 * output comes back in the error word, which rt_exec turns into
 * WEFT_ERR_OUT_OF_BOUNDS (the GPU reads it with the run's last wait:
 * runtime-gpu/backend.c, "Held reports").
 *
 * A kernel with k->privatise (the PTX target's permute with a native
 * atomic combine, skeletons-ir/ptx/permute.c) has a third entry, a block
 * per chunk of sources that combines into a copy of the result in shared
 * memory and then into the output: it runs instead of entry 0 when the
 * result fits that copy (SK_PERMUTE_SHARED_BYTES).  Its chunks are long
 * enough that the blocks' copies cost little next to their sources (at
 * least PRIVATE_MIN_CHUNK sources and PRIVATE_PER_BIN per bin), and
 * otherwise as many as give each of j->workers / PRIVATE_WORKERS blocks
 * one (on the GPU j->workers is 64 per SM, so four blocks per SM; the
 * backend launches no more blocks than fit, and those take the rest of the
 * chunks in turn, or claim them: skeletons-ir/ptx/permute.c, "Chunks").
 * With a fused default, entry 2 also writes the
 * default and runs alone: its blocks combine their copies into
 * accumulators in aux 1 (zeroed, private_words of them), and the last
 * block to finish writes each bin from its accumulator and the default
 * and puts aux 1 back to zero (RT_AUX_KEPT_ZERO: on the GPU, a small one
 * lives in the clean area and no run zeroes it).
 *
 * Over several devices (j->devices > 1, RT_SPLIT_MIN sources or more,
 * every leaf of 4 or 8 bytes) entry 2 is a split phase: each device runs
 * its range of the sources (runtime-gpu/backend.c launch_permute); each
 * part's blocks combine their copies in accumulators of its own, and its
 * last block reduces them into the one output with reductions of system
 * scope (skeletons-ir/ptx/permute.c): aux 1 holds two sets of
 * accumulators, the zero one that the other devices copy as theirs and
 * the first device's.  With a fused default no launch writes it first:
 * each part's last block reduces into the parts' set, aux 2, on the
 * first device instead, and the last part to finish writes the output
 * from it and the default, as one device's last block does.  The chunk
 * is cut for the blocks of all the devices.  Other permutes (a result too large for the copies: entry 0's atomics on
 * every source; combines by a CAS loop or locks; leaves of 1 or 2 bytes)
 * run on the first device over the same memory.
 *
 * A kernel with k->private_parts (the CPU target's permute with a native
 * atomic combine, skeletons-ir/cpu/permute.c) has entries 2 and 3 instead:
 * entry 2 combines each chunk of S sources into its own copy of the
 * result (aux 1, C copies `stride` elements apart), entry 3 the copies
 * into the output, in order.  They run instead of entry 0 for a result of
 * at most PARTS_MAX_BINS elements cut into at least two chunks.  S depends
 * on the number of sources n and of bins only (at least PARTS_MIN_CHUNK
 * sources and PARTS_PER_BIN per bin, and no more than PARTS_MAX_CHUNKS
 * chunks), never on the workers, so that the order of the combines, and
 * with it a float sum, is the same on every run and every number of
 * threads; and the copies take at most n / PARTS_PER_BIN elements.
 */
#ifdef WEFT_HAVE_LLVM
#include <string.h>

#include "rt.h"
#include "../skeletons-ir/sk.h"

enum {
    PRIVATE_MIN_CHUNK = 4096, /* fewest sources in a chunk of entry 2 */
    PRIVATE_PER_BIN = 8,      /* ... and fewest per bin of the result */
    PRIVATE_WORKERS = 16,     /* workers per chunk aimed at */
    PRIVATE_ROUND = 1024      /* chunks a multiple of this */
};

enum {
    PARTS_MAX_BINS = 1 << 14,   /* the largest result with private copies */
    PARTS_MIN_CHUNK = 1 << 14,  /* fewest sources in a chunk of entry 2 */
    PARTS_PER_BIN = 8,          /* ... and fewest per bin of the result */
    PARTS_MAX_CHUNKS = 1 << 10, /* most chunks (and copies) */
    PARTS_LINE = 64             /* bytes: copies start a cache line apart */
};

/* The sources per chunk of the CPU's entry 2 for n sources into `bins`
 * (head comment: never the workers). */
static int64_t parts_chunk(int64_t n, int64_t bins)
{
    int64_t S = (n + PARTS_MAX_CHUNKS - 1) / PARTS_MAX_CHUNKS;
    S = S > PARTS_MIN_CHUNK ? S : PARTS_MIN_CHUNK;
    return S > bins * PARTS_PER_BIN ? S : bins * PARTS_PER_BIN;
}

/* Sets up and runs the CPU's entries 2 and 3 (after the default's entry,
 * init, when it is fused): the sources in C chunks of S into `bins`. */
static weft_status run_parts(rt_job *j, int init, int64_t bins, int64_t S,
                             int64_t C)
{
    weft_type ty = j->out[0]->type;
    /* copies a line apart in every leaf: in elements of the narrowest */
    const weft_type *leaf;
    int nleaf = fe_type_leaves(j->ctx, ty, &leaf);
    size_t narrow = 8;
    for (int l = 0; l < nleaf; l++) {
        size_t b = weft_type_size(leaf[l]);
        narrow = b < narrow ? b : narrow;
    }
    int64_t line = PARTS_LINE / (int64_t)narrow;
    int64_t stride = (bins + line - 1) / line * line;
    weft_status s = rt_job_aux(j, 1, ty, C * stride, false);
    if (s) {
        return s;
    }
    j->auxval[2].i = S;
    j->auxval[3].i = stride;
    j->auxval[4].i = C;
    if ((s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    int64_t per = (bins + j->workers - 1) / j->workers;
    rt_phase ph[3];
    int np = 0;
    if (init >= 0) {
        ph[np++] = (rt_phase){.entry = init, .n = bins, .grain = j->grain};
    }
    ph[np++] = (rt_phase){.entry = 2, .n = C, .grain = 1};
    ph[np++] =
        (rt_phase){.entry = 3, .n = bins, .grain = per > 1024 ? per : 1024};
    return rt_job_phases(j, np, ph);
}

/* The chunk of entry 2 for n sources into `bins` bins (head comment),
 * over `devices` devices (the blocks of each). */
static int64_t private_chunk(const rt_job *j, int64_t n, int64_t bins,
                             int devices)
{
    int64_t blocks = j->workers / PRIVATE_WORKERS * devices;
    int64_t grain = blocks > 1 ? (n + blocks - 1) / blocks : n;
    if (grain < PRIVATE_MIN_CHUNK) {
        grain = PRIVATE_MIN_CHUNK;
    }
    if (bins <= INT64_MAX / PRIVATE_PER_BIN && grain < bins * PRIVATE_PER_BIN) {
        grain = bins * PRIVATE_PER_BIN;
    }
    if (grain <= INT64_MAX - PRIVATE_ROUND) {
        grain = (grain + PRIVATE_ROUND - 1) / PRIVATE_ROUND * PRIVATE_ROUND;
    }
    return grain;
}

/* The bytes of one element of type ty (the sum of its leaves'), and its
 * leaves into *leaf (fe_type_leaves). */
static int64_t elem_bytes(const rt_job *j, weft_type ty, const weft_type **leaf,
                          int *nleaf)
{
    *nleaf = fe_type_leaves(j->ctx, ty, leaf);
    int64_t b = 0;
    for (int l = 0; l < *nleaf; l++) {
        b += (int64_t)weft_type_size((*leaf)[l]);
    }
    return b;
}

/* The words of a set of accumulators in aux 1 of a PTX permute whose
 * entry 2 also computes a fused default or runs split (ptx/permute.c,
 * acc_place): each leaf's accumulators (an even number of words), the
 * ticket, the blocks' claim counter, and each leaf's bit per bin, rounded
 * up to an even number. */
static int64_t private_words(int64_t bins, int nleaf, const weft_type *leaf)
{
    int64_t w = 2;
    for (int l = 0; l < nleaf; l++) {
        int64_t bytes = bins * (int64_t)weft_type_size(leaf[l]);
        w += (bytes + 7) / 8 * 2 + (bins + 31) / 32;
    }
    return (w + 1) / 2 * 2; /* even: a second set stays 8-byte aligned */
}

/* Whether entry 2 of n sources runs split over the devices (head
 * comment): several devices, work enough, and leaves of 4 or 8 bytes
 * (their reductions of system scope: codegen's cg_ptx_red_sys). */
static bool split_private(const rt_job *j, int64_t n, int nleaf,
                          const weft_type *leaf)
{
    if (j->devices < 2 || n < RT_SPLIT_MIN) {
        return false;
    }
    for (int l = 0; l < nleaf; l++) {
        size_t b = weft_type_size(leaf[l]);
        if (b != 4 && b != 8) {
            return false;
        }
    }
    return true;
}

/* Runs permute kernel j->k (see the head comment). */
weft_status rt_exec_permute(rt_job *j)
{
    const fe_term *t = j->k->op;
    const fe_term *dt = t->kid[0], *src = t->kid[1];
    int init = sk_permute_init_entry(j->k);
    const weft_array *def = j->kid[0];
    FE_CHECK(dt && src && (init >= 0 || def));
    /* the default's shape first, as the interpreter computes it first */
    int64_t dshape[WEFT_MAX_RANK], sshape[WEFT_MAX_RANK];
    weft_status s = WEFT_OK;
    if (init >= 0) {
        s = rt_term_shape(j, dt, dshape);
    } else {
        memcpy(dshape, def->shape, sizeof *dshape * (size_t)def->rank);
    }
    if (s || (s = rt_term_shape(j, src, sshape)) != WEFT_OK ||
        (s = rt_job_out(j, 0, t->type, dt->rank, dshape)) != WEFT_OK) {
        return s;
    }
    if (init < 0 && (s = j->ops->copy(j, j->out[0], j->kid[0])) != WEFT_OK) {
        return s;
    }
    int64_t n = fe_shape_size(src->rank, sshape);
    int64_t bins = j->out[0]->size;
    bool parallel = j->workers > 1 && n > j->grain;
    const weft_type *leaf;
    int nleaf;
    int64_t eb = elem_bytes(j, j->out[0]->type, &leaf, &nleaf);
    bool private = parallel && j->k->privatise && j->k->nentry >= 3 && eb > 0 &&
                   bins <= SK_PERMUTE_SHARED_BYTES / eb;
    int64_t S = j->k->private_parts ? parts_chunk(n, bins) : 0;
    int64_t C = S > 0 ? (n + S - 1) / S : 0;
    if (parallel && j->k->private_parts && bins <= PARTS_MAX_BINS && C >= 2) {
        return run_parts(j, init, bins, S, C);
    }
    bool locks = j->k->aux_item[0] >= 0;
    /* the striped locks: PERMUTE_LOCKS of skeletons-ir/permute.c */
    if (locks && (s = rt_job_aux(j, 0, WEFT_I32, 4096, false)) != WEFT_OK) {
        return s;
    }
    bool split = private && split_private(j, n, nleaf, leaf);
    if (j->k->private_parts) {
        /* the copies' item, unused */
        s = rt_job_aux(j, 1, j->out[0]->type, 1, false);
    } else if (j->k->aux_item[1] >= 0) {
        /* entry 2 leaves its accumulators zero (ptx/permute.c,
         * last_block): one set for a fused default, two for a split
         * launch (the others' zero template, and the first device's);
         * unused otherwise; aux 2 the parts' set of a split launch with
         * a fused default */
        int64_t sets = split ? 2 : private && init >= 0 ? 1 : 0;
        j->aux_start[1] = RT_AUX_KEPT_ZERO;
        s = rt_job_aux(j, 1, WEFT_U32,
                       sets > 0 ? sets * private_words(bins, nleaf, leaf) : 1,
                       false);
        if (s == WEFT_OK && j->k->aux_item[2] >= 0) {
            j->aux_start[2] = RT_AUX_KEPT_ZERO;
            s = rt_job_aux(j, 2, WEFT_U32,
                           split && init >= 0 ? private_words(bins, nleaf, leaf)
                                              : 1,
                           false);
        }
    }
    if (s) {
        return s;
    }
    if ((s = rt_job_fill(j)) != WEFT_OK) {
        return s;
    }
    if (split) {
        /* the sources' chunks cut over the devices, flushed into the
         * output, which the last part writes from the default with a
         * fused one */
        rt_phase ph = {.entry = 2,
                       .n = n,
                       .grain = private_chunk(j, n, bins, j->devices),
                       .split = true};
        return rt_job_phases(j, 1, &ph);
    }
    if (private) {
        /* entry 2 computes a fused default itself */
        return rt_job_run(j, 2, n, private_chunk(j, n, bins, 1));
    }
    rt_phase ph[2];
    int np = 0;
    if (init >= 0) {
        ph[np++] = (rt_phase){.entry = init, .n = bins, .grain = j->grain};
    }
    if (n > 0) {
        /* one chunk, one thread: no atomics needed */
        ph[np++] = parallel ? (rt_phase){.entry = 0, .n = n, .grain = j->grain}
                            : (rt_phase){.entry = 1, .n = n, .grain = n};
    }
    return np > 0 ? rt_job_phases(j, np, ph) : WEFT_OK;
}
#endif
