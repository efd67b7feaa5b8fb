/*
 * skeletons-ir/ptx/permute.c: permute on the GPU, with per-block copies
 * of a small result (the PTX target's own SK_PERMUTE skeleton).
 *
 * The contract is permute.c's, for the same host driver
 * (runtime/exec_permute.c): entry 0 the atomic grid-stride loop, entry 1
 * the plain one and, with a fused default, the default's entry last, all
 * emitted by the shared skeleton itself.  When the combine is one native
 * atomic a leaf (PERMUTE_RMW: add, min, max, and, or, xor; fadd; or a
 * tuple of them, componentwise) the kernel has one more entry, entry 2
 * (the default's entry after it), and k->privatise says so:
 *
 *   entry 2, a block per chunk of sources (n = source elements, grain the
 *   chunk, so chunk c is [c grain, min(n, (c + 1) grain)), as the
 *   target's range loop cuts [0, n); item_threads SK_ITEM_BLOCK):
 *
 *       copy[c][b] = identity            for every copy c and bin b
 *       barrier
 *       for each chunk c of this block (c = block, block + grid, ...,
 *       or claimed in turn: "Chunks" below):
 *           for each source i of c (groups of 4 consecutive sources,
 *           groups lo + 4 thread and lo + 4 (thread + block), stepping
 *           by 8 blocks, two groups a step): the step of
 *           permute.c with the update an atomicrmw on
 *           copy[thread % ncopy][j] instead of out[j]
 *       barrier
 *       out[b] = out[b] op (op over c of copy[c][b])   (atomic) for every
 *                                        bin b the block touched
 *                                        (the flush, "Flush" below)
 *
 * where the copies lie in shared memory of SK_PERMUTE_SHARED_BYTES (the
 * driver uses entry 2 only for a result that fits), ncopy of them: as
 * many as fit, at most one a thread, and a multiple of 32 from 32 on.
 * They are interleaved, bin b of copy c at b ncopy + c, so that from 32
 * copies on the 32 lanes of a warp update 32 different copies in 32
 * different banks, whatever their bins: no two lanes of a warp ever
 * update one word, and the atomics of one instruction never queue on
 * each other.  That matters most where an atomic is a loop: an f32 or
 * f64 add in shared memory is a load, an add and a compare-and-swap
 * until it holds (sm_90's ATOMS.CAST.SPIN), and lanes on one word take
 * one trip each; k-means' 16 bins, one copy a warp, took ~4 trips an
 * update (its permute of (count, sum x, sum y) ran at 49% of DRAM).  With
 * few bins a copy serves a few threads of different warps (k-means:
 * 2730 tuples fit, 160 copies of 16 for 768 threads), with many (more
 * than 256 bins of i32) fewer than 32 copies serve strides of lanes.
 * A tuple result has a shared array a leaf, each of as many elements as
 * whole tuples fit, and every step above is made leaf by leaf with that
 * leaf's atomic and identity (the combine is componentwise, so no leaf
 * reads another).  So a block's updates contend in its own shared
 * memory, and the output sees one global atomic per block and bin
 * touched instead of one per source: the histogram case (2^28 sources
 * into 256 bins) goes from 2^28 atomics on 256 addresses to a few
 * hundred thousand.
 *
 * Flush.  From 32 bins on, a lane takes a bin and a warp 32 consecutive
 * bins (flush_lane): lane l combines the copies of bin 32 w + l from
 * copy l % ncopy on, round (bank (b ncopy + c) mod 32: from 32 copies on
 * the warp's 32 reads fall in 32 banks), and the warp's atomics into the
 * output or the accumulators go to 32 consecutive words, which the
 * memory system takes as one request.  Before (session 31's round r1,
 * four H200, per-block %globaltimer stamps) the flush took a warp a bin,
 * lane 0 making the bin's atomic: 264 blocks x 256 requests of one word
 * each on the one 1 KiB set of accumulators, queued in the L2, and each
 * block's flush took 15-23 us (median) where its keys took 240 (2^28
 * keys, one GPU), the blocks' flushes one after another at the end of
 * the kernel: by that reading most of the ~40 us that one GPU's kernel
 * spent beyond its keys' time, and a split part's (not yet timed on the
 * device with the new flush).  Below 32 bins a warp still takes a
 * bin (flush_bin): lane l combines copies l, l + 32, ... of the bin
 * (consecutive words), the warp's shuffles combine the lanes, and lane 0
 * makes the bin's atomics (the flush loop's bounds are the same in a
 * warp, so every lane meets every shuffle); with few bins (k-means' 16)
 * a lane a bin would leave most of the block idle over many copies.
 *
 * Chunks.  Block b takes chunks b, b + grid, ... (the driver cuts the
 * sources into 2 chunks per resident block: runtime/exec_permute.c
 * PRIVATE_WORKERS), so a block's share is fixed before it starts.  With
 * $WEFT_PTX_PERMUTE_CLAIM=1 (a knob read at code generation, into the
 * kernel's key; best with $WEFT_PTX_PERMUTE_CHUNKS=8, runtime-gpu/
 * backend.c) a kernel with a last block (a fused default on one device;
 * a split part with its accumulators) has its blocks claim their chunks
 * in turn from a counter beside the ticket (aux 1, kept zero: the last
 * block puts it back to zero with the rest of the set, after every
 * block's last claim): thread 0 claims the next chunk while the block
 * runs the current one and hands it over through shared memory (two
 * slots, one barrier a chunk; block_chunks), so the blocks end within a
 * chunk of each other.  Session 31 measured the tail it cuts (one H200,
 * 2^28 keys, the old flush: with two fixed chunks a block the blocks'
 * keys ended over 46 us, the tenth of them to the last, 229 to 274 us;
 * claimed, chunks of 2^16 keys, 232 to 245) and passed test_ptx_permute
 * on one and four H200 with it (round r1, chunks of 2^13 keys), but its
 * last round timed out under load before telling whether it gains once
 * the flush is fast (bench/results/gpu-multi.md, session 31), so it is
 * off by default.
 *
 * The hot loop is kept short.  A group's four targets are computed before
 * its four updates, so that its reads sit together and become one 128-bit
 * load; every source position is said to lie inside the source's extents
 * (llvm.assume), which sk_permute_begin takes from the array whose shape
 * a fused `generate (shape a) f` source has, so an index function that
 * reads a at the position (the histogram's keys) loses its bounds check;
 * and without checked mode a target outside the result raises a flag that
 * the thread reports once after its loop (such a report names no element
 * anyway), so each update is one atomic on shared memory behind one
 * compare.
 *
 * A fused default (permute.c: the kernel writes the default itself) is
 * written by entry 2 too, so that a histogram is one launch: the blocks
 * flush their copies not into the output but with atomics into
 * accumulators (aux 1, which the runtime zeroes, in a form whose zero is
 * op's identity: acc_op), each thread fences, and thread 0 takes a ticket;
 * the block that draws the last one (all the others' atomics are in)
 * writes out[b] = f(acc[b], def[b]) for the bins some block touched and
 * def[b] for the others (last_block).  Only that block writes the output,
 * after every flush, so no ordering between blocks is needed but the
 * ticket's.
 *
 * The identity of op is 0 for add, or, xor and unsigned max, all ones for
 * and and unsigned min, the type's largest value for min and its smallest
 * for max, and -0.0 for fadd (x + -0.0 = x for every x, -0.0 and NaN
 * included, where x + 0.0 would turn a -0.0 into 0.0).  Combining the
 * identity changes nothing, so skipping the bins whose copy still holds
 * it (compared as bits) is exact; `ignore` targets and targets outside the
 * result behave as in permute.c, since the step is permute.c's, with the
 * copy's extents those of the output.
 *
 * Several devices.  A launch split over the devices (runtime/
 * exec_permute.c, runtime-gpu/backend.c launch_permute) gives each
 * device's grid a range of the sources, [skip, n) (the kernel's `skip`
 * and `n` parameters), cut into chunks from its start, so that the
 * range can start where the device's block of the keys does; `first`
 * holds SK_PERMUTE_SPLIT (sk.h) and the chunk to start from (0).  Its
 * blocks take their chunks from there and flush into accumulators of
 * their device (SK_PERMUTE_ACC: the accumulators of a fused default, at
 * the second half of aux 1 on the first device, SK_PERMUTE_HIGH, and in
 * the others at a copy of its zero first half, made on their stream),
 * and the part's last block (its own ticket: the blocks of several
 * grids share none) reduces each touched bin with a reduction of system
 * scope (red.sys: the default scope, .gpu, says nothing about another
 * GPU's atomics on the same word): into the output, which the driver
 * filled with the default array first, or, with a fused default, into
 * the parts' set of accumulators (aux 2, on the first device, as kept:
 * acc_op's atomic and fadd's bit).  Then that block fences with system
 * scope and takes the parts' ticket in aux 2 (atom.sys; the number of
 * parts is in `first`, SK_PERMUTE_PARTS), and the part that draws the
 * last writes the output from the parts' set and the default, as one
 * device's last block does from its own, and puts aux 2 back to zero: no
 * launch writes the default before the parts (its own launch, and the
 * event the parts waited for, took 8.8 us of a histogram's 195 us on four
 * H200).  So each device sends one reduction a bin over NVLink; reducing
 * each block's copies straight into the output (SK_PERMUTE_SPLIT alone,
 * without replicas: only without a fused default) sends one a block and
 * bin: on four H200 the histogram of 2^28 keys ran 1.14x one GPU's speed
 * so, 1.63x with the accumulators (bench/results/gpu-multi.md).  Leaves
 * without such a reduction (1 and 2 bytes) are not split, and their
 * kernels have no such branch.
 *
 * Barriers.  Every barrier (two, two more around the ticket of a fused
 * default or a part, two around the parts' ticket, and with claimed
 * chunks one a chunk) stands at the top level of the kernel, outside
 * every loop and branch but the uniform ones on the split's mode (around
 * the last blocks and the claims) and the claimed chunks' loop, whose
 * bound each thread reads from shared memory after a barrier (the same
 * in the block), and no thread returns early, so every thread of the
 * block reaches each of them; the other loops hold no barrier, so their
 * bounds need not be uniform.  The block's chunks all go into its
 * copies, flushed once at the end.
 */
#include "../sk.h"
#include <stdlib.h>
#include <string.h>

/* x as the integer of its bits (floats), or x. */
static LLVMValueRef as_bits(cg_fn *fn, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind) {
        return x;
    }
    unsigned bits = LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? 64 : 32;
    return LLVMBuildBitCast(fn->b, x, LLVMIntTypeInContext(fn->llctx, bits),
                            "");
}

enum {
    GROUP = 4,           /* consecutive sources a thread takes at a time */
    PRIVATE_VERSION = 8, /* of entry 2's code (sk_kernel.flags, the key) */
    /* entry 2's launch bounds where the kernel is light: 2 blocks of 1024
     * threads an SM, as many threads as an SM holds, so at most 32
     * registers (the histogram's pairs of groups took ptxas to 39
     * without, which halved the blocks) */
    PRIVATE_BLOCK = 1024,
    PRIVATE_BLOCKS_PER_SM = 2
};

/* What the updates of a thread share: its flag of a target outside the
 * result (an i1 slot) and the distance between two bins of its copy
 * (ncopy: the copies are interleaved, head comment). */
typedef struct private_put_ctx {
    LLVMValueRef bad;
    LLVMValueRef stride;
} private_put_ctx;

/* The update of one element into the thread's copy, at element j stride
 * of it.  Unchecked, a target outside the result only raises the
 * thread's flag, which the kernel reports once at the end (the report
 * names no element then), so that the update is one predicated atomic
 * with no branch to a report in the loop; checked mode reports each
 * element as sk_permute_put does. */
static weft_status private_put(sk_fn *f, const cg_array *copy,
                               const sk_permute_elem *e, void *user)
{
    cg_fn *fn = &f->fn;
    const private_put_ctx *pc = user;
    sk_permute_elem at = *e;
    at.j = LLVMBuildNSWMul(fn->b, e->j, pc->stride, "");
    if (f->e->k->checked) {
        return sk_permute_put(f, copy, &at, sk_permute_update_rmw);
    }
    LLVMTypeRef i1 = LLVMInt1TypeInContext(fn->llctx);
    LLVMValueRef keep = LLVMBuildNot(fn->b, e->ignored, "");
    LLVMValueRef out =
        LLVMBuildAnd(fn->b, keep, LLVMBuildNot(fn->b, e->inside, ""), "");
    LLVMBuildStore(
        fn->b,
        LLVMBuildOr(fn->b, LLVMBuildLoad2(fn->b, i1, pc->bad, ""), out, ""),
        pc->bad);
    cg_if in;
    cg_if_begin(fn, &in, LLVMBuildAnd(fn->b, keep, e->inside, ""));
    weft_status s = sk_permute_update_rmw(f, copy, at.j, &e->x);
    cg_if_end(fn, &in);
    return s;
}

/* The permute step of sources [lo, hi) into the thread's copy. */
static weft_status private_run(sk_fn *f, const cg_array *copy,
                               LLVMValueRef *sext, LLVMValueRef ssize,
                               LLVMValueRef lo, LLVMValueRef hi,
                               private_put_ctx *pc)
{
    cg_fn *fn = &f->fn;
    cg_loop l;
    LLVMValueRef i;
    cg_loop_begin(fn, &l, lo, hi, &i);
    sk_permute_assume_inside(f, i, ssize);
    sk_permute_elem e;
    weft_status s = sk_permute_target(f, copy, sext, i, &e);
    if (s == WEFT_OK) {
        s = private_put(f, copy, &e, pc);
    }
    cg_loop_end(fn, &l);
    return s;
}

/* The step of a thread's two groups g[0] and g[1] (g[0] + GROUP threads,
 * g[0] < hi): where both are whole, their eight targets before their
 * eight updates (two 128-bit loads in flight, as the loads of a pair of
 * grid-stride steps are in hand-written code); else g[0] whole or in
 * part, then the part of g[1] below hi. */
static weft_status private_pair(sk_fn *f, const cg_array *copy,
                                LLVMValueRef *sext, LLVMValueRef ssize,
                                const LLVMValueRef *g, LLVMValueRef hi,
                                private_put_ctx *pc)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef four = cg_i64(fn, GROUP);
    cg_if both;
    cg_if_begin(fn, &both,
                LLVMBuildICmp(fn->b, LLVMIntSLE,
                              LLVMBuildNSWAdd(fn->b, g[1], four, ""), hi, ""));
    weft_status s =
        sk_permute_group(f, copy, sext, ssize, g, 2, GROUP, private_put, pc);
    if (s) {
        return s;
    }
    cg_if_else(fn, &both);
    LLVMValueRef gend = LLVMBuildNSWAdd(fn->b, g[0], four, "");
    cg_if whole;
    cg_if_begin(fn, &whole, LLVMBuildICmp(fn->b, LLVMIntSLE, gend, hi, ""));
    if ((s = sk_permute_group(f, copy, sext, ssize, g, 1, GROUP, private_put,
                              pc)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &whole);
    if ((s = private_run(f, copy, sext, ssize, g[0], hi, pc)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &whole);
    /* g[1] < hi only when g[0] was whole; the loop is empty otherwise */
    if ((s = private_run(f, copy, sext, ssize, g[1], hi, pc)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &both);
    return WEFT_OK;
}

/* Sources [lo, hi) of the block into the thread's copy: GROUP
 * consecutive sources per thread and step, two groups a step (lo is
 * base plus a multiple of the grain, both of which the drivers make
 * multiples of 512, so the `and` changes nothing but tells LLVM that a
 * group is aligned: its reads become one vector load). */
static weft_status private_range(sk_fn *f, const cg_array *copy,
                                 LLVMValueRef *sext, LLVMValueRef ssize,
                                 LLVMValueRef lo, LLVMValueRef hi,
                                 LLVMValueRef tid, LLVMValueRef bs,
                                 private_put_ctx *pc)
{
    cg_fn *fn = &f->fn;
    lo = LLVMBuildAnd(fn->b, lo, cg_i64(fn, -GROUP), "");
    LLVMValueRef gstep = LLVMBuildMul(fn->b, bs, cg_i64(fn, GROUP), "");
    cg_sloop el;
    LLVMValueRef g[2];
    g[0] = cg_sloop_begin(
        fn, &el,
        LLVMBuildAdd(fn->b, lo, LLVMBuildMul(fn->b, tid, cg_i64(fn, GROUP), ""),
                     ""),
        hi, LLVMBuildMul(fn->b, gstep, cg_i64(fn, 2), ""), "src");
    g[1] = LLVMBuildNSWAdd(fn->b, g[0], gstep, "");
    weft_status s = private_pair(f, copy, sext, ssize, g, hi, pc);
    if (s) {
        return s;
    }
    cg_sloop_end(fn, &el);
    return WEFT_OK;
}

/* k->flags bit of the knob $WEFT_PTX_PERMUTE_CLAIM=1: chunks claimed in
 * turn where the kernel has a last block (head comment, "Chunks") */
enum { CLAIM_BIT = 24 };

/* Whether `bit` of `first` (a mode of a split part: sk.h) is set. */
static LLVMValueRef mode_bit(cg_fn *fn, LLVMValueRef first, int64_t bit)
{
    return LLVMBuildICmp(fn->b, LLVMIntNE,
                         LLVMBuildAnd(fn->b, first, cg_i64(fn, bit), ""),
                         cg_i64(fn, 0), "");
}

/* ---- a fused default: the accumulators and the last block ---------- */

/* Where aux 1 keeps the blocks' combined copies (runtime/exec_permute.c
 * sizes it, rt_permute_private_words): for each leaf l, bins accumulators
 * of its type (an even number of words, so that the next leaf's start is
 * 8-byte aligned), then the ticket (an i32), then for each leaf a bit per
 * bin (the bins an f32 / f64 add touched), the whole an even number of
 * words (a split launch keeps a second set after it).  All zero before
 * the run. */
typedef struct acc_place {
    int nleaf;
    const weft_type *ty;
    LLVMAtomicRMWBinOp op[SK_PERMUTE_LEAVES_MAX];
    LLVMValueRef acc[SK_PERMUTE_LEAVES_MAX], bits[SK_PERMUTE_LEAVES_MAX];
    LLVMValueRef ticket;
    LLVMValueRef claim; /* the blocks' count of claimed chunks (head comment) */
    LLVMValueRef words; /* of aux 1 in all (i64), from base */
    LLVMValueRef base;
} acc_place;

/* The words of bins accumulators of type ty, even (head of acc_place). */
static LLVMValueRef acc_words(cg_fn *fn, LLVMValueRef bins, weft_type ty)
{
    LLVMValueRef bytes =
        LLVMBuildMul(fn->b, bins, cg_i64(fn, (int64_t)weft_type_size(ty)), "");
    return LLVMBuildMul(
        fn->b,
        LLVMBuildUDiv(fn->b, LLVMBuildAdd(fn->b, bytes, cg_i64(fn, 7), ""),
                      cg_i64(fn, 8), ""),
        cg_i64(fn, 2), "");
}

/* (in aux `a`; which: the index of the set there, an i64, or NULL for
 * the first: set 1 of aux 1 is the first device's in a split launch,
 * SK_PERMUTE_HIGH; aux 2 holds the parts' set of a split launch with a
 * fused default) */
static weft_status acc_place_of(sk_fn *f, acc_place *pa, int a,
                                LLVMValueRef bins, LLVMValueRef which)
{
    cg_fn *fn = &f->fn;
    const cg_array *aux = sk_aux_array(f, a);
    if (!aux) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: permute: no accumulator array");
    }
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef bit_words =
        LLVMBuildLShr(fn->b, LLVMBuildAdd(fn->b, bins, cg_i64(fn, 31), ""),
                      cg_i64(fn, 5), "");
    LLVMValueRef set = cg_i64(fn, 2);
    for (int l = 0; l < pa->nleaf; l++) {
        set = LLVMBuildAdd(
            fn->b, set,
            LLVMBuildAdd(fn->b, acc_words(fn, bins, pa->ty[l]), bit_words, ""),
            "");
    }
    /* an even number of words, so that a second set's 8-byte leaves
     * are aligned too */
    set = LLVMBuildAnd(fn->b, LLVMBuildAdd(fn->b, set, cg_i64(fn, 1), ""),
                       cg_i64(fn, -2), "");
    LLVMValueRef base = aux->ptr[0];
    if (which) {
        LLVMValueRef off = LLVMBuildMul(fn->b, which, set, "");
        base = LLVMBuildInBoundsGEP2(fn->b, i32, base, &off, 1, "");
    }
    LLVMValueRef at = cg_i64(fn, 0);
    for (int l = 0; l < pa->nleaf; l++) {
        pa->acc[l] = LLVMBuildInBoundsGEP2(fn->b, i32, base, &at, 1, "acc");
        at = LLVMBuildAdd(fn->b, at, acc_words(fn, bins, pa->ty[l]), "");
    }
    pa->ticket = LLVMBuildInBoundsGEP2(fn->b, i32, base, &at, 1, "ticket");
    at = LLVMBuildAdd(fn->b, at, cg_i64(fn, 1), "");
    pa->claim = LLVMBuildInBoundsGEP2(fn->b, i32, base, &at, 1, "claim");
    at = LLVMBuildAdd(fn->b, at, cg_i64(fn, 1), "");
    for (int l = 0; l < pa->nleaf; l++) {
        pa->bits[l] = LLVMBuildInBoundsGEP2(fn->b, i32, base, &at, 1, "bits");
        at = LLVMBuildAdd(fn->b, at, bit_words, "");
    }
    pa->words = set;
    pa->base = base;
    return WEFT_OK;
}

/* How accumulator words hold values of op: the atomic that combines
 * them and the mask that they are xored with, chosen so that op's
 * identity is 0 (what the runtime's zeroing gives): and, umin: the
 * complement, combined by or, umax; max, min: the order turned into an
 * unsigned one (the sign bit flipped; every bit but the sign flipped,
 * which also reverses it), combined by umax.  add, or, xor, umax and fadd
 * keep their values (fadd: the bits say which bins were touched, as 0.0
 * is not fadd's identity -0.0). */
static LLVMAtomicRMWBinOp acc_op(LLVMAtomicRMWBinOp op, int bits,
                                 uint64_t *mask)
{
    uint64_t ones = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    *mask = 0;
    switch (op) {
    case LLVMAtomicRMWBinOpAnd: *mask = ones; return LLVMAtomicRMWBinOpOr;
    case LLVMAtomicRMWBinOpUMin: *mask = ones; return LLVMAtomicRMWBinOpUMax;
    case LLVMAtomicRMWBinOpMax:
        *mask = 1ull << (bits - 1);
        return LLVMAtomicRMWBinOpUMax;
    case LLVMAtomicRMWBinOpMin:
        *mask = ones >> 1;
        return LLVMAtomicRMWBinOpUMax;
    default: return op;
    }
}

/* A load of bin b's accumulator word (or of its bits' word) that sees
 * the other blocks' atomics (after the fence). */
static LLVMValueRef load_seen(cg_fn *fn, LLVMTypeRef ty, LLVMValueRef p,
                              unsigned align)
{
    LLVMValueRef v = LLVMBuildLoad2(fn->b, ty, p, "");
    LLVMSetOrdering(v, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(v, align);
    return v;
}

/* The word of leaf l's bits that holds bin b's, and b's bit in it. */
static LLVMValueRef bit_of(cg_fn *fn, const acc_place *pa, int l,
                           LLVMValueRef b, LLVMValueRef *bit)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef w = LLVMBuildLShr(fn->b, b, cg_i64(fn, 5), "");
    *bit = LLVMBuildShl(
        fn->b, LLVMConstInt(i32, 1, 0),
        LLVMBuildTrunc(fn->b, LLVMBuildAnd(fn->b, b, cg_i64(fn, 31), ""), i32,
                       ""),
        "");
    return LLVMBuildInBoundsGEP2(fn->b, i32, pa->bits[l], &w, 1, "");
}

/* acc_l[b] = acc_l[b] op' (v ^ mask), atomic (the flush of leaf l of a
 * block's bin b that it touched); fadd also sets bin b's bit, by an
 * atomic only where the bit does not show as set already: the bits of 32
 * bins share a word, and every block touches the same few bins of a
 * small result (k-means' 16 sums: 264 blocks x 16 bins on one word took
 * 100 us, where the adds on 16 words took 10).  A bit once set stays set
 * until the next run, so a block that sees it set need not set it. */
static void accumulate(sk_fn *f, const acc_place *pa, int l, LLVMValueRef b,
                       LLVMValueRef v)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMAtomicRMWBinOp op = pa->op[l];
    LLVMTypeRef mt = cg_mem_type(fn->llctx, pa->ty[l]);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(fn->b, mt, pa->acc[l], &b, 1, "");
    if (op == LLVMAtomicRMWBinOpFAdd) {
        tg->atomic_rmw(fn, op, p, v);
        LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
        LLVMValueRef bit;
        LLVMValueRef wp = bit_of(fn, pa, l, b, &bit);
        LLVMValueRef seen = load_seen(fn, i32, wp, 4);
        cg_if set;
        cg_if_begin(fn, &set,
                    LLVMBuildICmp(fn->b, LLVMIntEQ,
                                  LLVMBuildAnd(fn->b, seen, bit, ""),
                                  LLVMConstInt(i32, 0, 0), ""));
        tg->atomic_rmw(fn, LLVMAtomicRMWBinOpOr, wp, bit);
        cg_if_end(fn, &set);
        return;
    }
    uint64_t mask;
    LLVMAtomicRMWBinOp aop = acc_op(op, fe_type_bits(pa->ty[l]), &mask);
    LLVMValueRef x =
        LLVMBuildXor(fn->b, v, LLVMConstInt(LLVMTypeOf(v), mask, 0), "");
    tg->atomic_rmw(fn, aop, p, x);
}

/* How the last block of a grid (or of a part) ends entry 2: it writes
 * the output from the accumulators and the fused default (one device),
 * reduces them into the output (a split part without a fused default),
 * or into the parts' set on the first device, after which the last part
 * writes the output from that set (a split part with a fused default). */
typedef enum last_how { LAST_WRITE, LAST_REDUCE, LAST_GATHER } last_how;

/* Leaf l of bin b of the accumulators pa: its word as kept (raw, op's
 * identity 0) into *raw, whether a block touched the bin into *hit, and
 * the value (the mask taken off) as the result. */
static LLVMValueRef acc_read(cg_fn *fn, const acc_place *pa, int l,
                             LLVMValueRef b, LLVMValueRef *raw,
                             LLVMValueRef *hit)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    weft_type ty = pa->ty[l];
    LLVMTypeRef mt = cg_mem_type(fn->llctx, ty);
    LLVMValueRef a = load_seen(
        fn, mt, LLVMBuildInBoundsGEP2(fn->b, mt, pa->acc[l], &b, 1, ""),
        (unsigned)weft_type_size(ty));
    *raw = a;
    if (pa->op[l] == LLVMAtomicRMWBinOpFAdd) {
        LLVMValueRef bit;
        LLVMValueRef word = load_seen(fn, i32, bit_of(fn, pa, l, b, &bit), 4);
        *hit =
            LLVMBuildICmp(fn->b, LLVMIntNE, LLVMBuildAnd(fn->b, word, bit, ""),
                          LLVMConstInt(i32, 0, 0), "");
        return a;
    }
    uint64_t mask;
    acc_op(pa->op[l], fe_type_bits(ty), &mask);
    *hit = LLVMBuildICmp(fn->b, LLVMIntNE, a, LLVMConstInt(LLVMTypeOf(a), 0, 0),
                         "");
    return LLVMBuildXor(fn->b, a, LLVMConstInt(LLVMTypeOf(a), mask, 0), "");
}

/* out_l[b] = f(acc[b], def[b])_l where a block touched b, def_l[b]
 * elsewhere, for every bin (the block's threads in turn; the combine is
 * componentwise, so leaf l of f(a, d) is f's on leaf l alone). */
static weft_status write_out(sk_fn *f, const acc_place *pa, LLVMValueRef bins,
                             LLVMValueRef tid, LLVMValueRef bs)
{
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    cg_sloop bl;
    LLVMValueRef b = cg_sloop_begin(fn, &bl, tid, bins, bs, "bin");
    cg_val d, args[2], y;
    weft_status s = sk_read(f, t->kid[0], b, NULL, &d);
    if (s) {
        return s;
    }
    LLVMValueRef av[SK_PERMUTE_LEAVES_MAX], hit[SK_PERMUTE_LEAVES_MAX], raw;
    for (int l = 0; l < pa->nleaf; l++) {
        av[l] = acc_read(fn, pa, l, b, &raw, &hit[l]);
    }
    args[0] = (cg_val){.n = pa->nleaf, .v = av};
    args[1] = d;
    if ((s = cg_apply(fn, t->fun[0], args, &y)) != WEFT_OK) {
        return s;
    }
    for (int l = 0; l < pa->nleaf; l++) {
        y.v[l] = LLVMBuildSelect(fn->b, hit[l], y.v[l], d.v[l], "");
    }
    cg_array_store(fn, sk_out_array(f, 0), b, &y);
    cg_sloop_end(fn, &bl);
    return WEFT_OK;
}

/* Every touched bin of pa reduced, with reductions of system scope, into
 * the output (to NULL: the value, by op) or into the accumulators `to`
 * (the word as kept, by acc_op's atomic, and fadd's bit). */
static void reduce_into(sk_fn *f, const acc_place *pa, const acc_place *to,
                        LLVMValueRef bins, LLVMValueRef tid, LLVMValueRef bs)
{
    cg_fn *fn = &f->fn;
    const cg_array *out = sk_out_array(f, 0);
    cg_sloop bl;
    LLVMValueRef b = cg_sloop_begin(fn, &bl, tid, bins, bs, "bin");
    for (int l = 0; l < pa->nleaf; l++) {
        LLVMTypeRef mt = cg_mem_type(fn->llctx, pa->ty[l]);
        LLVMValueRef raw, hit;
        LLVMValueRef a = acc_read(fn, pa, l, b, &raw, &hit);
        cg_if in;
        cg_if_begin(fn, &in, hit);
        if (!to) {
            cg_ptx_red_sys(
                fn, pa->op[l],
                LLVMBuildInBoundsGEP2(fn->b, mt, out->ptr[l], &b, 1, ""), a);
        } else {
            uint64_t mask;
            cg_ptx_red_sys(
                fn, acc_op(pa->op[l], fe_type_bits(pa->ty[l]), &mask),
                LLVMBuildInBoundsGEP2(fn->b, mt, to->acc[l], &b, 1, ""), raw);
            if (pa->op[l] == LLVMAtomicRMWBinOpFAdd) {
                LLVMValueRef bit;
                LLVMValueRef wp = bit_of(fn, to, l, b, &bit);
                cg_ptx_red_sys(fn, LLVMAtomicRMWBinOpOr, wp, bit);
            }
        }
        cg_if_end(fn, &in);
    }
    cg_sloop_end(fn, &bl);
}

/* The words of pa (accumulators, ticket, bits) back to zero, once every
 * bin is read (the bits of 32 bins share a word): the runtime keeps aux
 * 1 among the words that kernels leave zero and zeroes nothing per run
 * (runtime/exec_permute.c, RT_AUX_KEPT_ZERO). */
static void zero_set(cg_fn *fn, const acc_place *pa, LLVMValueRef tid,
                     LLVMValueRef bs)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    fn->target->barrier(fn);
    cg_sloop zl;
    LLVMValueRef w = cg_sloop_begin(fn, &zl, tid, pa->words, bs, "zero");
    LLVMBuildStore(fn->b, LLVMConstInt(i32, 0, 0),
                   LLVMBuildInBoundsGEP2(fn->b, i32, pa->base, &w, 1, ""));
    cg_sloop_end(fn, &zl);
}

/* The end of entry 2 with accumulators pa (a fused default's on one
 * device, or a split part's: SK_PERMUTE_ACC).  Every thread fences its
 * flush, the block meets at a barrier, thread 0 takes a ticket and tells
 * the block through shared memory whether it drew the last one (the
 * grid's size less one, block-uniform, so the barriers inside are too);
 * that block fences again and ends as `how` says (last_how), the parts'
 * set `all` for LAST_GATHER, and puts pa back to zero.  With LAST_GATHER
 * it then fences with system scope (so that its reductions into `all`
 * are seen before its ticket), and its thread 0 takes a ticket of the
 * parts (in `all`, atom.sys); the block of the part that draws the last
 * (`parts` less one: every other part's reductions are in) fences again,
 * writes the output from `all` and the default, and puts `all` back to
 * zero. */
static weft_status last_block(sk_fn *f, const acc_place *pa,
                              const acc_place *all, LLVMValueRef parts,
                              LLVMValueRef bins, LLVMValueRef tid,
                              LLVMValueRef bs, last_how how)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    tg->fence(fn);
    tg->barrier(fn);
    cg_if fin;
    sk_ptx_last_block(fn, tid, pa->ticket, false, 0, &fin);
    weft_status s = WEFT_OK;
    if (how == LAST_WRITE) {
        s = write_out(f, pa, bins, tid, bs);
    } else {
        reduce_into(f, pa, how == LAST_GATHER ? all : NULL, bins, tid, bs);
    }
    if (s) {
        return s;
    }
    zero_set(fn, pa, tid, bs);
    if (how == LAST_GATHER) {
        LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
        LLVMValueRef flag = tg->shared_array(fn, i32, 1);
        cg_ptx_fence_sys(fn);
        tg->barrier(fn);
        cg_if draw, gather;
        cg_if_begin(fn, &draw,
                    LLVMBuildICmp(fn->b, LLVMIntEQ, tid, cg_i64(fn, 0), ""));
        LLVMValueRef old =
            cg_ptx_atom_sys_add(fn, all->ticket, LLVMConstInt(i32, 1, 0));
        LLVMValueRef last =
            LLVMBuildICmp(fn->b, LLVMIntEQ, cg_zext64(fn, old),
                          LLVMBuildSub(fn->b, parts, cg_i64(fn, 1), ""), "");
        LLVMBuildStore(fn->b, LLVMBuildZExt(fn->b, last, i32, ""), flag);
        cg_if_end(fn, &draw);
        tg->barrier(fn);
        cg_if_begin(fn, &gather,
                    LLVMBuildICmp(fn->b, LLVMIntNE,
                                  LLVMBuildLoad2(fn->b, i32, flag, ""),
                                  LLVMConstInt(i32, 0, 0), ""));
        cg_ptx_fence_sys(fn);
        if ((s = write_out(f, all, bins, tid, bs)) != WEFT_OK) {
            return s;
        }
        zero_set(fn, all, tid, bs);
        cg_if_end(fn, &gather);
    }
    cg_if_end(fn, &fin);
    return WEFT_OK;
}

/* The copies' pointers at element `at` of each leaf's shared array. */
static weft_status copy_at(cg_fn *fn, const cg_array *shared, LLVMValueRef at,
                           cg_array *copy)
{
    *copy = *shared;
    copy->ptr =
        fe_arena_alloc(fn->arena, sizeof *copy->ptr * (size_t)shared->nleaf);
    if (!copy->ptr) {
        return fe_oom("weft_compile");
    }
    for (int l = 0; l < shared->nleaf; l++) {
        copy->ptr[l] = LLVMBuildInBoundsGEP2(
            fn->b, cg_mem_type(fn->llctx, shared->leaf[l]), shared->ptr[l], &at,
            1, "copy");
    }
    return WEFT_OK;
}

/* op over copies c = c0, c0 + step, ... below ncopy of the bin whose
 * copies start at `row` of the shared arrays, from op's identity, into
 * *v: copy c itself, or with `from` (not NULL) copy c + from less ncopy
 * where that passes ncopy (from < ncopy: each copy once, from `from` on,
 * round). */
static weft_status combine_copies(sk_fn *f, const cg_array *shared,
                                  const LLVMValueRef *id, LLVMValueRef row,
                                  LLVMValueRef c0, int64_t step,
                                  LLVMValueRef ncopy, LLVMValueRef from,
                                  cg_val *v)
{
    cg_fn *fn = &f->fn;
    const fe_fun *op = f->e->k->op->fun[0];
    cg_mut acc;
    cg_val args[2], y;
    weft_status s = cg_mut_new(fn, f->e->k->op->type, &acc);
    if (s || (s = cg_val_make(fn, shared->nleaf, v)) != WEFT_OK) {
        return s;
    }
    for (int l = 0; l < v->n; l++) {
        v->v[l] = id[l];
    }
    cg_mut_set(fn, &acc, v);
    cg_sloop cc;
    LLVMValueRef c =
        cg_sloop_begin(fn, &cc, c0, ncopy, cg_i64(fn, step), "copies");
    if (from) {
        c = LLVMBuildAdd(fn->b, c, from, "");
        c = LLVMBuildSelect(fn->b,
                            LLVMBuildICmp(fn->b, LLVMIntSGE, c, ncopy, ""),
                            LLVMBuildSub(fn->b, c, ncopy, ""), c, "");
    }
    if ((s = cg_array_load(fn, shared, LLVMBuildAdd(fn->b, row, c, ""),
                           &args[0])) != WEFT_OK ||
        (s = cg_mut_get(fn, &acc, &args[1])) != WEFT_OK ||
        (s = cg_apply(fn, op, args, &y)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &acc, &y);
    cg_sloop_end(fn, &cc);
    return cg_mut_get(fn, &acc, v);
}

/* The combination of bin b's ncopy copies in lane 0 of the warp (the
 * flush takes a warp a bin, head comment): lane l combines copies l, l +
 * 32, ... from op's identity (which a lane without a copy keeps), the
 * warp's shuffles combine the lanes into lane 0, and the other lanes end
 * with the identity, so that only lane 0 finds the bin touched.  Every
 * lane of the warp must run it (the flush loop's bounds are the same in
 * a warp: the block is a whole number of warps, as the occupancy API's
 * blocks are). */
static weft_status flush_bin(sk_fn *f, const cg_array *shared,
                             const LLVMValueRef *id, LLVMValueRef b,
                             LLVMValueRef ncopy, LLVMValueRef lane, cg_val *v)
{
    cg_fn *fn = &f->fn;
    const fe_fun *op = f->e->k->op->fun[0];
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    cg_val args[2];
    weft_status s =
        combine_copies(f, shared, id, LLVMBuildMul(fn->b, b, ncopy, ""), lane,
                       32, ncopy, NULL, v);
    if (s) {
        return s;
    }
    /* lane 0 ends with the warp's combination (shuffle_down past lane 31
     * gives the lane's own value, which only lanes other than 0 take) */
    for (int d = 16; d >= 1; d /= 2) {
        if ((s = cg_val_make(fn, v->n, &args[1])) != WEFT_OK) {
            return s;
        }
        for (int l = 0; l < v->n; l++) {
            args[1].v[l] = fn->target->shuffle_down(
                fn, v->v[l], LLVMConstInt(i32, (unsigned)d, 0));
        }
        args[0] = *v;
        if ((s = cg_apply(fn, op, args, v)) != WEFT_OK) {
            return s;
        }
    }
    LLVMValueRef first =
        LLVMBuildICmp(fn->b, LLVMIntEQ, lane, cg_i64(fn, 0), "");
    for (int l = 0; l < v->n; l++) {
        v->v[l] = LLVMBuildSelect(fn->b, first, v->v[l], id[l], "");
    }
    return WEFT_OK;
}

/* Into *next (thread 0's): a claim of pa's counter where `claim` (an
 * i1; NULL: never) holds, else u + step. */
static void next_chunk(cg_fn *fn, const acc_place *pa, LLVMValueRef claim,
                       LLVMValueRef u, LLVMValueRef step, LLVMValueRef next)
{
    LLVMBuildStore(fn->b, LLVMBuildAdd(fn->b, u, step, ""), next);
    if (!claim) {
        return;
    }
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    cg_if c;
    cg_if_begin(fn, &c, claim);
    LLVMBuildStore(fn->b,
                   cg_zext64(fn, fn->target->atomic_rmw(
                                     fn, LLVMAtomicRMWBinOpAdd, pa->claim,
                                     LLVMConstInt(i32, 1, 0))),
                   next);
    cg_if_end(fn, &c);
}

/* The block's chunks into its copies: chunk u is [start + u grain, ...),
 * start = base + from grain (base the kernel's `skip`, from the chunk of
 * `first`: head comment); the block's first chunk and each next one are
 * claimed from pa's claim counter where `claim` (an i1, the same in the
 * whole grid; NULL: never) holds, else the block's index and steps of
 * the grid's size.  Thread 0 finds the next chunk while the block runs
 * the current one and hands it over through shared memory (two slots, a
 * barrier a chunk; head comment, "Chunks"). */
static weft_status block_chunks(sk_fn *f, const acc_place *pa,
                                LLVMValueRef claim, const cg_array *copy,
                                LLVMValueRef *sext, LLVMValueRef ssize,
                                LLVMValueRef base, LLVMValueRef from,
                                LLVMValueRef tid, LLVMValueRef bs,
                                private_put_ctx *pc)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMValueRef grain = f->grain;
    LLVMValueRef start = LLVMBuildAdd(
        fn->b, base, LLVMBuildMul(fn->b, from, grain, ""), "start");
    LLVMValueRef chunks = LLVMBuildUDiv(
        fn->b,
        LLVMBuildSub(fn->b,
                     LLVMBuildAdd(fn->b, LLVMBuildSub(fn->b, f->n, start, ""),
                                  grain, ""),
                     cg_i64(fn, 1), ""),
        grain, "chunks");
    LLVMValueRef slot = tg->shared_array(fn, i64, 2);
    LLVMValueRef t0 = LLVMBuildICmp(fn->b, LLVMIntEQ, tid, cg_i64(fn, 0), "");
    LLVMValueRef grid = cg_zext64(fn, tg->grid_size(fn, 0));
    LLVMValueRef kslot = cg_alloca(fn, i64, "k");
    LLVMValueRef next = cg_alloca(fn, i64, "next");
    LLVMBuildStore(fn->b, cg_i64(fn, 0), kslot);
    /* the first chunk: claimed, or the block's index */
    cg_if c0;
    cg_if_begin(fn, &c0, t0);
    next_chunk(fn, pa, claim, cg_zext64(fn, tg->block_index(fn, 0)),
               cg_i64(fn, 0), next);
    LLVMBuildStore(fn->b, LLVMBuildLoad2(fn->b, i64, next, ""), slot);
    cg_if_end(fn, &c0);
    tg->barrier(fn);
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk.head");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk.body");
    LLVMBasicBlockRef exit =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "chunk.exit");
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    LLVMValueRef k = LLVMBuildLoad2(fn->b, i64, kslot, "");
    LLVMValueRef at = LLVMBuildAnd(fn->b, k, cg_i64(fn, 1), "");
    LLVMValueRef u = LLVMBuildLoad2(
        fn->b, i64, LLVMBuildInBoundsGEP2(fn->b, i64, slot, &at, 1, ""), "u");
    LLVMBuildCondBr(fn->b, LLVMBuildICmp(fn->b, LLVMIntULT, u, chunks, ""),
                    body, exit);
    LLVMPositionBuilderAtEnd(fn->b, body);
    cg_if c1;
    cg_if_begin(fn, &c1, t0);
    next_chunk(fn, pa, claim, u, grid, next);
    cg_if_end(fn, &c1);
    LLVMValueRef lo =
        LLVMBuildAdd(fn->b, start, LLVMBuildMul(fn->b, u, grain, ""), "lo");
    LLVMValueRef hi = LLVMBuildAdd(fn->b, lo, grain, "");
    hi = LLVMBuildSelect(fn->b, LLVMBuildICmp(fn->b, LLVMIntSLT, hi, f->n, ""),
                         hi, f->n, "hi");
    weft_status s = private_range(f, copy, sext, ssize, lo, hi, tid, bs, pc);
    if (s) {
        return s;
    }
    LLVMValueRef k1 = LLVMBuildAdd(fn->b, k, cg_i64(fn, 1), "");
    cg_if c2;
    cg_if_begin(fn, &c2, t0);
    LLVMValueRef at1 = LLVMBuildAnd(fn->b, k1, cg_i64(fn, 1), "");
    LLVMBuildStore(fn->b, LLVMBuildLoad2(fn->b, i64, next, ""),
                   LLVMBuildInBoundsGEP2(fn->b, i64, slot, &at1, 1, ""));
    cg_if_end(fn, &c2);
    tg->barrier(fn);
    LLVMBuildStore(fn->b, k1, kslot);
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, exit);
    return WEFT_OK;
}

/* What the flush of a block's bins into the output or the accumulators
 * needs (flush_out). */
typedef struct flush_ctx {
    const acc_place *pa;
    const LLVMValueRef *id;
    LLVMValueRef split, accs; /* i1: the part's mode bits */
    bool fused, sys_ok;
} flush_ctx;

/* Bin b's combined copies v (op's identity where the thread has no bin
 * or the block did not touch it) into the output, one atomic a leaf: a
 * split part's block straight into the output (without accumulators),
 * else into the accumulators (a fused default, a split part's), else
 * into the output. */
static weft_status flush_out(sk_fn *f, const flush_ctx *fc, LLVMValueRef b,
                             const cg_val *v)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const cg_array *out = sk_out_array(f, 0);
    const acc_place *pa = fc->pa;
    bool fused = fc->fused, sys_ok = fc->sys_ok;
    for (int l = 0; l < out->nleaf; l++) {
        cg_if touched;
        cg_if_begin(fn, &touched,
                    LLVMBuildICmp(fn->b, LLVMIntNE, as_bits(fn, v->v[l]),
                                  as_bits(fn, fc->id[l]), ""));
        LLVMValueRef p =
            LLVMBuildInBoundsGEP2(fn->b, cg_mem_type(fn->llctx, out->leaf[l]),
                                  out->ptr[l], &b, 1, "");
        cg_if sys, own;
        if (sys_ok) { /* a split part's block: straight into out */
            cg_if_begin(fn, &sys,
                        LLVMBuildAnd(fn->b, fc->split,
                                     LLVMBuildNot(fn->b, fc->accs, ""), ""));
            cg_ptx_red_sys(fn, pa->op[l], p, v->v[l]);
            cg_if_else(fn, &sys);
        }
        if (!fused && sys_ok) { /* a split part's accumulators */
            cg_if_begin(fn, &own, fc->accs);
        }
        if (fused || sys_ok) {
            accumulate(f, pa, l, b, v->v[l]);
        }
        if (!fused && sys_ok) {
            cg_if_else(fn, &own);
        }
        if (!fused) {
            tg->atomic_rmw(fn, pa->op[l], p, v->v[l]);
        }
        if (!fused && sys_ok) {
            cg_if_end(fn, &own);
        }
        if (sys_ok) {
            cg_if_end(fn, &sys);
        }
        cg_if_end(fn, &touched);
    }
    return WEFT_OK;
}

/* The combination of bin b's ncopy copies in the calling lane (the
 * flush of 32 or more bins: a lane a bin, so that a warp's atomics go to
 * 32 consecutive words, one request of the memory system where a warp a
 * bin made 32; head comment): op over the copies from op's identity, the
 * lane's copies in turn from its own lane % ncopy on (bank of copy c of
 * bin b: (b ncopy + c) mod 32, so that from 32 copies on the 32 lanes
 * read 32 banks); a lane past the last bin ends with the identity. */
static weft_status flush_lane(sk_fn *f, const cg_array *shared,
                              const LLVMValueRef *id, LLVMValueRef b,
                              LLVMValueRef bins, LLVMValueRef ncopy,
                              LLVMValueRef lane, cg_val *v)
{
    cg_fn *fn = &f->fn;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef in = LLVMBuildICmp(fn->b, LLVMIntSLT, b, bins, "");
    LLVMValueRef row = LLVMBuildMul(
        fn->b, LLVMBuildSelect(fn->b, in, b, cg_i64(fn, 0), ""), ncopy, "");
    /* lane % ncopy in 32 bits (a 64-bit division is a call on PTX) */
    LLVMValueRef from =
        cg_zext64(fn, LLVMBuildURem(fn->b, LLVMBuildTrunc(fn->b, lane, i32, ""),
                                    LLVMBuildTrunc(fn->b, ncopy, i32, ""), ""));
    weft_status s =
        combine_copies(f, shared, id, row, cg_i64(fn, 0), 1, ncopy, from, v);
    if (s) {
        return s;
    }
    for (int l = 0; l < v->n; l++) {
        v->v[l] = LLVMBuildSelect(fn->b, in, v->v[l], id[l], "");
    }
    return WEFT_OK;
}

/* Entry 2 (see the head comment). */
static weft_status emit_private(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const fe_term *t = f->e->k->op;
    const cg_array *out = sk_out_array(f, 0);
    acc_place pa = {.nleaf = out->nleaf, .ty = out->leaf};
    if (sk_permute_rmw_ops(t, pa.op) != out->nleaf) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: permute: the combine is not atomic");
    }
    /* a shared array of cap elements a leaf: cap whole elements fit */
    int64_t elem = 0;
    for (int l = 0; l < out->nleaf; l++) {
        elem += (int64_t)weft_type_size(out->leaf[l]);
    }
    int64_t cap = SK_PERMUTE_SHARED_BYTES / elem;
    cg_array shared = *out;
    shared.ptr =
        fe_arena_alloc(fn->arena, sizeof *shared.ptr * (size_t)out->nleaf);
    if (!shared.ptr) {
        return fe_oom("weft_compile");
    }
    LLVMValueRef id[SK_PERMUTE_LEAVES_MAX];
    bool sys_ok = true; /* every leaf has a reduction of system scope */
    for (int l = 0; l < out->nleaf; l++) {
        LLVMTypeRef mt = cg_mem_type(fn->llctx, out->leaf[l]);
        shared.ptr[l] = tg->shared_array(fn, mt, cap);
        id[l] = sk_permute_identity(fn, pa.op[l], out->leaf[l]);
        sys_ok &= cg_ptx_red_sys_ok(pa.op[l], mt);
    }
    LLVMValueRef bins = sk_size(f, out);
    LLVMValueRef tid = cg_zext64(fn, tg->thread_index(fn, 0));
    LLVMValueRef bs = cg_zext64(fn, tg->block_size(fn, 0));
    LLVMValueRef sext[WEFT_MAX_RANK];
    weft_status s = sk_permute_begin(f, sext);
    if (s) {
        return s;
    }
    LLVMValueRef ssize = sk_permute_source_size(f, sext);
    /* a part of a split launch, and how it flushes (head comment) */
    LLVMValueRef split = mode_bit(fn, f->first, SK_PERMUTE_SPLIT);
    LLVMValueRef accs = mode_bit(fn, f->first, SK_PERMUTE_ACC);
    LLVMValueRef high = mode_bit(fn, f->first, SK_PERMUTE_HIGH);
    bool fused = sk_permute_init_entry(f->e->k) >= 0;
    LLVMValueRef which =
        sys_ok
            ? LLVMBuildZExt(fn->b, high, LLVMInt64TypeInContext(fn->llctx), "")
            : NULL;
    if ((fused || sys_ok) &&
        (s = acc_place_of(f, &pa, 1, bins, which)) != WEFT_OK) {
        return s;
    }
    /* the parts' set of a split launch with a fused default (aux 2) and
     * the count of its parts (head comment) */
    acc_place all = pa;
    if (fused && sys_ok &&
        (s = acc_place_of(f, &all, 2, bins, NULL)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef parts = LLVMBuildAnd(
        fn->b,
        LLVMBuildLShr(fn->b, f->first, cg_i64(fn, SK_PERMUTE_PARTS_SHIFT), ""),
        cg_i64(fn, SK_PERMUTE_PARTS_MAX), "parts");
    LLVMTypeRef i1 = LLVMInt1TypeInContext(fn->llctx);
    LLVMValueRef bad = cg_alloca(fn, i1, "bad");
    LLVMBuildStore(fn->b, LLVMConstInt(i1, 0, 0), bad);
    /* ncopy = min(threads, cap / bins) copies, a multiple of 32 where
     * that is at least 32, thread t using copy t % ncopy, bin b of copy c
     * at b ncopy + c (head comment); in 32 bits (a 64-bit division by a
     * value known only at run time is a call on PTX) */
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMValueRef one32 = LLVMConstInt(i32, 1, 0);
    LLVMValueRef warps = LLVMBuildLShr(
        fn->b, LLVMBuildAdd(fn->b, bs, cg_i64(fn, 31), ""), cg_i64(fn, 5), "");
    LLVMValueRef nb =
        LLVMBuildTrunc(fn->b, cg_smax(fn, bins, cg_i64(fn, 1)), i32, "");
    LLVMValueRef fit = LLVMBuildUDiv(fn->b, LLVMConstInt(i32, cap, 0), nb, "");
    LLVMValueRef ncopy = cg_smin(fn, fit, LLVMBuildTrunc(fn->b, bs, i32, ""));
    ncopy = LLVMBuildSelect(
        fn->b,
        LLVMBuildICmp(fn->b, LLVMIntUGE, ncopy, LLVMConstInt(i32, 32, 0), ""),
        LLVMBuildAnd(fn->b, ncopy, LLVMConstInt(i32, ~31u, 0), ""), ncopy, "");
    ncopy = cg_smax(fn, ncopy, one32);
    LLVMValueRef mine =
        LLVMBuildURem(fn->b, LLVMBuildTrunc(fn->b, tid, i32, ""), ncopy, "");
    ncopy = cg_zext64(fn, ncopy);
    cg_array copy;
    if ((s = copy_at(fn, &shared, cg_zext64(fn, mine), &copy)) != WEFT_OK) {
        return s;
    }
    private_put_ctx pc = {.bad = bad, .stride = ncopy};
    /* every copy starts at the identity */
    cg_sloop init;
    LLVMValueRef b = cg_sloop_begin(
        fn, &init, tid, LLVMBuildMul(fn->b, ncopy, bins, ""), bs, "init");
    for (int l = 0; l < out->nleaf; l++) {
        cg_store(fn, out->leaf[l], shared.ptr[l], b, id[l]);
    }
    cg_sloop_end(fn, &init);
    tg->barrier(fn);
    /* the block's chunks into the copies: chunk c is [base + c grain,
     * ...), base the kernel's `skip` parameter (0 but in a part of a
     * split launch, whose sources start there: head comment) */
    LLVMValueRef base = LLVMGetParam(fn->fn, 4);
    /* a part of a split launch: its chunks from `first` (head comment) */
    LLVMValueRef from =
        LLVMBuildAnd(fn->b, f->first, cg_i64(fn, ~SK_PERMUTE_MODE), "");
    /* with $WEFT_PTX_PERMUTE_CLAIM=1, chunks claimed in turn where a last
     * block puts the claim counter back to zero; else block b takes
     * chunks b, b + grid, ... (head comment, "Chunks") */
    if ((f->e->k->flags >> CLAIM_BIT & 1) && (fused || sys_ok)) {
        LLVMValueRef claim = LLVMBuildSelect(
            fn->b, split, accs, LLVMConstInt(i1, fused, 0), "claim");
        if ((s = block_chunks(f, &pa, claim, &copy, sext, ssize, base, from,
                              tid, bs, &pc)) != WEFT_OK) {
            return s;
        }
    } else {
        LLVMValueRef chunks = LLVMBuildUDiv(
            fn->b,
            LLVMBuildSub(fn->b,
                         LLVMBuildAdd(fn->b,
                                      LLVMBuildSub(fn->b, f->n, base, ""),
                                      f->grain, ""),
                         cg_i64(fn, 1), ""),
            f->grain, "chunks");
        cg_sloop cl;
        LLVMValueRef c = cg_sloop_begin(
            fn, &cl,
            LLVMBuildAdd(fn->b, from, cg_zext64(fn, tg->block_index(fn, 0)),
                         ""),
            chunks, cg_zext64(fn, tg->grid_size(fn, 0)), "chunk");
        LLVMValueRef lo = LLVMBuildAdd(
            fn->b, base, LLVMBuildMul(fn->b, c, f->grain, ""), "lo");
        LLVMValueRef hi = LLVMBuildAdd(fn->b, lo, f->grain, "");
        hi = LLVMBuildSelect(fn->b,
                             LLVMBuildICmp(fn->b, LLVMIntSLT, hi, f->n, ""), hi,
                             f->n, "hi");
        if ((s = private_range(f, &copy, sext, ssize, lo, hi, tid, bs, &pc)) !=
            WEFT_OK) {
            return s;
        }
        cg_sloop_end(fn, &cl);
    }
    cg_if report;
    cg_if_begin(fn, &report, LLVMBuildLoad2(fn->b, i1, bad, ""));
    sk_set_error(f, CG_ERR_PERMUTE);
    cg_if_end(fn, &report);
    tg->barrier(fn);
    /* each bin, a warp's: its copies combined, then into the output by
     * lane 0, one atomic a leaf where the block touched it */
    flush_ctx fc = {.pa = &pa,
                    .id = id,
                    .split = split,
                    .accs = accs,
                    .fused = fused,
                    .sys_ok = sys_ok};
    LLVMValueRef lane = LLVMBuildAnd(fn->b, tid, cg_i64(fn, 31), "");
    LLVMValueRef warp = LLVMBuildLShr(fn->b, tid, cg_i64(fn, 5), "");
    cg_if wide;
    cg_if_begin(fn, &wide,
                LLVMBuildICmp(fn->b, LLVMIntSGE, bins, cg_i64(fn, 32), ""));
    /* a lane a bin, 32 consecutive bins a warp */
    LLVMValueRef groups =
        LLVMBuildLShr(fn->b, LLVMBuildAdd(fn->b, bins, cg_i64(fn, 31), ""),
                      cg_i64(fn, 5), "");
    cg_sloop fg;
    LLVMValueRef g = cg_sloop_begin(fn, &fg, warp, groups, warps, "flushg");
    b = LLVMBuildAdd(fn->b, LLVMBuildShl(fn->b, g, cg_i64(fn, 5), ""), lane,
                     "");
    cg_val v;
    if ((s = flush_lane(f, &shared, id, b, bins, ncopy, lane, &v)) != WEFT_OK ||
        (s = flush_out(f, &fc, b, &v)) != WEFT_OK) {
        return s;
    }
    cg_sloop_end(fn, &fg);
    cg_if_else(fn, &wide);
    /* a warp a bin */
    cg_sloop flush;
    b = cg_sloop_begin(fn, &flush, warp, bins, warps, "flush");
    if ((s = flush_bin(f, &shared, id, b, ncopy, lane, &v)) != WEFT_OK ||
        (s = flush_out(f, &fc, b, &v)) != WEFT_OK) {
        return s;
    }
    cg_sloop_end(fn, &flush);
    cg_if_end(fn, &wide);
    /* the last blocks: a fused default's on one device, a split part's
     * that accumulates (the branches are uniform: on parameters, so the
     * barriers inside are reached by every thread) */
    cg_if whole, part;
    if (fused) {
        cg_if_begin(fn, &whole, LLVMBuildNot(fn->b, split, ""));
        if ((s = last_block(f, &pa, NULL, parts, bins, tid, bs, LAST_WRITE)) !=
            WEFT_OK) {
            return s;
        }
        cg_if_end(fn, &whole);
    }
    if (sys_ok) {
        cg_if_begin(fn, &part, LLVMBuildAnd(fn->b, split, accs, ""));
        if ((s = last_block(f, &pa, &all, parts, bins, tid, bs,
                            fused ? LAST_GATHER : LAST_REDUCE)) != WEFT_OK) {
            return s;
        }
        cg_if_end(fn, &part);
    }
    return WEFT_OK;
}

static weft_status ptx_permute_prepare(weft_context *ctx, fe_arena *arena,
                                       sk_kernel *k)
{
    weft_status s = sk_permute.prepare(ctx, arena, k);
    LLVMAtomicRMWBinOp ops[SK_PERMUTE_LEAVES_MAX];
    if (s || sk_permute_rmw_ops(k->op, ops) == 0) {
        return s;
    }
    /* entry 2, before the default's entry (still the last one) */
    k->nentry++;
    k->privatise = true;
    /* a block per chunk, in both variants (a fused zipWith has two) */
    k->item_threads[2] = SK_ITEM_BLOCK;
    k->item_threads[k->nentry + 2] = SK_ITEM_BLOCK;
    /* the copy's size is part of the compiled code: into the key, with
     * the version of entry 2's code (cached kernels of an older one are
     * not reused) */
    k->flags |= (unsigned)SK_PERMUTE_SHARED_BYTES << 8 |
                (unsigned)PRIVATE_VERSION << 28;
    /* the knob $WEFT_PTX_PERMUTE_CLAIM=1 (head comment, "Chunks"), read
     * here so that it keys the kernel */
    const char *kc = getenv("WEFT_PTX_PERMUTE_CLAIM");
    if (kc && strcmp(kc, "1") == 0) {
        k->flags |= 1u << CLAIM_BIT;
    }
    /* the accumulators, ticket and bits of a fused default, or of the
     * parts of a split launch (head comment) */
    s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 1, WEFT_U32, 1);
    k->aux_item[1] = k->nitem - 1;
    if (s == WEFT_OK) {
        /* the parts' set of a split launch with a fused default */
        s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 2, WEFT_U32, 1);
        k->aux_item[2] = k->nitem - 1;
    }
    return s;
}

static weft_status ptx_permute_emit(sk_emit *e, const char *const *names)
{
    weft_status s = sk_permute.emit(e, names);
    if (s || !e->k->privatise) {
        return s;
    }
    sk_fn f;
    if ((s = sk_fn_begin_raw(e, &f, names[2])) != WEFT_OK) {
        return s;
    }
    LLVMAtomicRMWBinOp ops[SK_PERMUTE_LEAVES_MAX];
    if (e->k->light && sk_permute_rmw_ops(e->k->op, ops) == 1) {
        /* little work a source: registers to spare for the bound (not
         * with several leaves: a pair of groups holds eight values of
         * each, and k-means' three spilled at 32 registers and at 64;
         * unbounded, 80 and none, and the driver's occupancy query picks
         * the block) */
        cg_ptx_launch_bounds(&f.fn, PRIVATE_BLOCK, PRIVATE_BLOCKS_PER_SM);
    }
    if ((s = emit_private(&f)) != WEFT_OK) {
        /* close the half-built function; the module is thrown away */
        LLVMBuildUnreachable(f.fn.b);
        cg_fn_end(&f.fn);
        return s;
    }
    sk_fn_end(&f);
    return WEFT_OK;
}

static bool ptx_permute_supported(const fe_term *t)
{
    return sk_permute.supported(t);
}

const sk_skeleton sk_ptx_permute = {
    .name = "ptx-permute",
    .family = SK_PERMUTE,
    .supported = ptx_permute_supported,
    .prepare = ptx_permute_prepare,
    .emit = ptx_permute_emit,
    .fuses_input = true,
};
