/*
 * skeletons-ir/ptx/scan.c: the six scans on the GPU in a single pass,
 * with decoupled look-back (Merrill and Garland, "Single-pass Parallel
 * Prefix Scan with Decoupled Look-back", 2016): the PTX target's own
 * SK_SCAN skeleton, of family SK_SCAN_PASS (driver rt_exec_scan_pass,
 * runtime/exec_scan.c).
 *
 * Semantics are scan.c's (and the interpreter's, lib/interp.c acc_scan).
 * A right scan is the mirror of a left one: logical position p of a row
 * of m elements is physical position p (left scans) or m - 1 - p (right
 * scans), and combining `earlier` with `later` in logical order is
 * f(earlier, later) for left scans and f(later, earlier) for right ones.
 * With y_p the element at logical position p, a seed z standing before
 * y_0 (seeded scans), I_p = [z .] y_0 . ... . y_p and E_p = [z .] y_0 .
 * ... . y_{p-1} (E_0 = z), every scan writes, at physical position j of
 * logical p (its row's output starting at row * (m + 1) for scanl and
 * scanr, row * m otherwise):
 *   scanl1, scanr1, scanr: I_p;   scanl, scanl', scanr': E_p;
 * and the totals: scanl I_{m-1} at position m of its row (z when m = 0),
 * scanr z there, scanl' and scanr' I_{m-1} (or z) in the second output.
 * No step needs an identity or commutativity: every combine keeps the
 * logical order, and absent values (no seed, the first element) are
 * validity flags, never identities.
 *
 * Entry 0, a block per tile (entry 1: "Several devices").  Each row is
 * cut into tiles of T = B K logical positions (B the block size, known at
 * run time, at most BLOCK (sk_kernel.block_max: the staging areas are
 * sized for it), a multiple of 32; K a constant of the kernel,
 * items_per_lane); tiles never span two rows, tpr = ceil(m / T) tiles
 * per row (1 when m = 0: the tile that writes z and the totals), and tile
 * t is (row t / tpr, piece t % tpr).
 * The blocks loop (the grid is what stays resident: a few blocks of 256
 * threads per SM, so that while one waits at a barrier or in its
 * look-back the others load): when the block is free, thread 0 takes
 * the next tile from a global counter (atomic add) and broadcasts it
 * through shared memory.  So tiles start in order and a tile's
 * predecessors are held by running blocks, which publish their
 * aggregates without waiting for anyone: look-back always makes
 * progress.  Within a tile:
 *
 *   1. warp w owns the 32 K consecutive positions [lo + 32 K w, ...),
 *      lane l the K consecutive ones [lo + 32 K w + K l, ... + K) of
 *      them.  The warp reads its positions coalesced (K passes, lane l
 *      taking 32 i + l; right scans read descending addresses, the same
 *      sectors; when all 32 K are in the tile every read comes first and
 *      unguarded) into its staging area in shared memory, where they stay
 *      until step 4; a warp barrier; each lane combines its own K in order
 *      into its total (K - 1 combines; the positions inside the tile are
 *      a prefix of them).  The area has a pad slot after every 32, so
 *      neither pattern has bank conflicts.  The warp scans the lane totals
 *      in order (Hillis-Steele with shuffles: lane l takes x = (lane l -
 *      d) . x for d = 1, 2, 4, 8, 16 when l >= d and it holds a value; the
 *      lanes holding values are always a prefix), and each lane keeps the
 *      total of the lanes before it (lane l - 1's scanned value).  So a
 *      warp pays five shuffles per 32 K positions, not per 32, and a lane
 *      keeps two values, not K, across steps 2 and 3 (registers: more
 *      blocks per SM).  Lane 0 of each warp puts the warp's total (the
 *      value of its last lane with positions) in shared memory.
 *   2. warp 0 scans the warp totals the same way: the tile's aggregate
 *      and each warp's exclusive prefix within the tile.
 *   3. look-back (warp 0): piece 0 of a row has the prefix z (or none);
 *      any other tile publishes its aggregate (flag A), then looks at its
 *      predecessors 32 at a time, nearest in lane 0: it spins until every
 *      flag up to the first P (inclusive prefix) is set, reads the
 *      aggregates before it and that prefix (with the packed status they
 *      came with the flags), and reduces the window in
 *      order (lane l + d holds the earlier values: x = y . x); windows
 *      without a P go in front of what it has and it moves 32 further
 *      back.  Then the tile publishes its inclusive prefix (flag P), and
 *      the last piece of a row writes the row's total (the first piece of
 *      scanr writes z).  Warp 0 puts each warp's prefix (the tile's
 *      prefix . the warp's exclusive prefix, either possibly absent) in
 *      shared memory.
 *   4. each lane's prefix is the warp's . the lane's (where there);
 *      the lane walks its K values in the staging area once more and puts
 *      in their place prefix . its values up to each (inclusive scans) or
 *      up to the one before (exclusive ones): one combine per position;
 *      a warp barrier, and the warp writes the area out coalesced, as it
 *      read it.
 *
 * Three barriers per tile (before step 1, after steps 1 and 3), at
 * block-uniform points (the tile loop's condition comes from shared
 * memory; nothing returns early); they also keep the next tile from
 * overwriting shared memory that is still read.
 *
 * Publishing and reading follow the PTX memory model with the target's
 * relaxed operations.  Where the element is one leaf of 4 bytes (i32,
 * u32, f32: packed_status) a tile's status is a single 64-bit word, the
 * flag in its low half and the value's bits in its high one (A with the
 * aggregate, later P with the inclusive prefix): the publisher stores it
 * with one st.volatile.u64 and the look-back takes flag and value from
 * the one ld.volatile.u64 of its spin.  An aligned 64-bit access is
 * single-copy atomic, so a reader never sees a flag without its value,
 * and no fence is needed on either side (Merrill and Garland's packed
 * descriptor; CUB does the same).  Otherwise the publisher stores the
 * value leaves, then target->fence (membar.gl, fence.sc.gpu), then the
 * flag; the reader loads the flags, target->fence, then the values.
 * Flags and values of the tile status are loaded and stored volatile
 * (ld.volatile: never a stale line of the SM's L1, and never hoisted out
 * of the spin loop).  The fence was costly where it sat: besides ordering
 * it waits for the lane's outstanding stores, among them the previous
 * tile's writes.
 *
 * Kernels with the packed status carry launch bounds (launch_bounds:
 * .maxntid BLOCK, .minnctapersm MIN_BLOCKS), so that ptxas keeps to 64
 * registers and four blocks of 256 share an SM; the others keep ptxas's
 * own choice.
 *
 * Aux items: 0 the tile flags (0 none, 1 A, 2 P; i32, or the i64 words
 * of the packed status), 1 the aggregates, 2 the inclusive prefixes (both
 * of the element type; with the packed status unused, and the driver
 * makes them one element long), 3 the tile counter (i64; over several
 * devices a counter and a ticket a part, then the fused reduce's
 * partials: the backend sizes it), 4 the totals of a row's parts over
 * several devices (the element type; packed words, two elements each,
 * where the status is packed), all zeroed by the driver and sized for the
 * smallest block (32 threads: at most ceil(m / (32 K)) tiles per row);
 * k->chunk_min carries 32 K to the driver.  The input is read through sk_read (fused
 * producers inline), by linear position or, where that would divide per
 * element, by multi-index with the row's outer components computed once
 * per tile, as scan.c does.
 *
 * Several devices.  One long row on a context over D devices
 * (runtime-gpu/multi.c; the driver's rt_phase.spread) is scanned in D
 * parts of consecutive tiles, part r of tiles [T r / D, T (r + 1) / D)
 * (T the row's tiles, T >= D: no part is empty), each on the device that
 * holds its positions, by reduce-then-scan:
 *
 *   1. every part but the last reduces its tiles to a total: its tiles
 *      in runs of consecutive tiles (reduce_run: no look-back, no waiting
 *      for another block); a block reads a run's tiles as entry 0 does
 *      (steps 1 and 2), combines their aggregates in order, puts the
 *      run's combination in a partial slot, then a fence and a ticket
 *      (aux 3 [SK_DEVICES_MAX + r]); the block with the last ticket
 *      combines the partials in order into the part's total, aux 4 [r]
 *      (AUX_TOTAL, on the context's first device; with a packed status
 *      one word, flag P and the value, stored over peer access).  Read
 *      only, so it runs at the speed of memory rather than of a
 *      look-back's chain;
 *   2. entry 0 scans every part (grain 2 + r, its tiles from aux 3 [r])
 *      as it scans a row on one device, but for the part's first tile
 *      past piece 0: no look-back, its prefix [z .] total 0 . ... . total
 *      r - 1, in order (parts_before: a handful of loads over peer access,
 *      no kernel of its own for the scan of D totals; with a packed
 *      status each word spun on until its flag is set).  So a seeded
 *      scan's tiles have a prefix always, as on one device (z is the
 *      first part's), and every scan kind splits the same way.
 *
 * Fused (a packed status, every part on a device of its own): one kernel
 * a part, entry 0, whose `skip` parameter is the runs the driver asks of
 * the part (0 for the last, and on one device).  The part's counter hands
 * out its runs first, then its tiles (fuse_take), so that every block
 * reduces before it scans and the part's total is out as early as it can
 * be; the runs' partials follow the counters in aux 3 (SK_SCAN_RUNS_MAX a
 * part), and what a run keeps across its tiles lives in shared memory
 * (fuse_begin: the scan needs every one of its 64 registers).  No phase
 * boundary, no join of the devices, one launch: the last part starts at
 * once, its first tile waiting in parts_before, the others behind it in
 * their look-back.  A part waits there for parts that no block of its
 * own device holds, so two parts may not share a device (`0,0`, whose
 * first part could find the device full of the second's waiting blocks).
 * Apart (other elements, or parts sharing a device): entry 1 reduces
 * every part but the last (grain 2 + r, launched with entry 0's block so
 * that its tiles are entry 0's), block b of the grid run b (its partial
 * in the status slot of the run's first tile: a packed word with flag
 * none, or the aggregates', which the scan after it reads as a tile not
 * yet published); the driver's phases join there (an event each,
 * multi.c), then entry 0 scans.
 *
 * Three units of traffic per element (the reduce's read, the scan's read
 * and write) against scan-then-fix-up's four, and no pass after the
 * scan; the last part reduces nothing, but waits for the others' totals.
 * The association of a float scan's terms changes with the parts, as it
 * does with timing.  Many rows go by whole rows, part r the tiles of its
 * rows (its first tile a piece 0, as any row's): entry 0 alone.
 */
#include <string.h>

#include <llvm-c/DebugInfo.h> /* LLVMTemporaryMDNode */

#include "../sk.h"

enum {
    WARP = 32,        /* lanes */
    MAX_WARPS = 32,   /* warps of a block of 1024 threads */
    BLOCK = 256,      /* the most threads of a block (sk_kernel.block_max);
                        with ITEM_BYTES and MIN_BLOCKS measured on an H200
                        for scanl1 (+) over 2^28 i32 (CUB 0.70 ms):
                        128 threads x 16 items 1.07 ms, 256 x 16 1.00,
                        128 x 32 0.78, 256 x 32 0.75: the fewer tiles the
                        less look-back (the earlier 512 x 16, one tile
                        per block, 1.91); a nanosleep in the look-back
                        spin and ld/st.relaxed.gpu for the status words
                        changed nothing measurable there */
    MAX_ITEMS = 32,   /* the most chunks of 32 a warp owns in a tile */
    ITEM_BYTES = 128, /* ... and the most bytes of leaves a lane reads
                         (the staging areas of a block take 8 (32 + 1) of
                         them: 33 KiB, within the 48 KiB of static shared
                         memory a block may have; 512 threads would not
                         fit) */
    MIN_BLOCKS = 4,   /* blocks of BLOCK resident per SM asked of ptxas for
                        a packed status (launch_bounds): 64 registers, no
                        spills for 32 i32 items in the relocatable code
                        the driver's link compiles (ptxas -c, 13.0,
                        sm_90); 24 items spill at 64 */
};

enum { FLAG_NONE, FLAG_AGG, FLAG_PREFIX };

enum { BATCH = 4 }; /* partials a lane loads at once (run_done) */

enum { AUX_FLAGS, AUX_AGG, AUX_INCL, AUX_COUNTER, AUX_TOTAL };

/* What kind of scan an operation is (scan.c's scan_info). */
typedef sk_scan_info scan_info;

/* K: chunks of 32 per warp and tile, as many as keep a lane's values
 * within ITEM_BYTES of leaves, 1 .. MAX_ITEMS. */
static int items_per_lane(weft_context *ctx, weft_type elt)
{
    const weft_type *leaf;
    int n = fe_type_leaves(ctx, elt, &leaf), bytes = 0;
    for (int l = 0; l < n; l++) {
        bytes += (int)weft_type_size(leaf[l]);
    }
    int k = bytes > 0 ? ITEM_BYTES / bytes : MAX_ITEMS;
    return k < 1 ? 1 : (k > MAX_ITEMS ? MAX_ITEMS : k);
}

/* Whether a tile's status is one 64-bit word, the flag in its low half
 * and the value's bits in its high one (a single leaf of 4 bytes): one
 * relaxed 64-bit access carries both, so neither side needs a fence. */
static bool packed_status(weft_context *ctx, weft_type elt)
{
    const weft_type *leaf;
    int n = fe_type_leaves(ctx, elt, &leaf);
    return n == 1 &&
           (leaf[0] == WEFT_I32 || leaf[0] == WEFT_U32 || leaf[0] == WEFT_F32);
}

static weft_status ptx_scan_prepare(weft_context *ctx, fe_arena *arena,
                                    sk_kernel *k)
{
    scan_info in = sk_scan_info_of(k->op);
    k->nentry = 2; /* the tiles; a part's reduce (a row over devices) */
    for (int e = 0; e < 4; e++) {
        k->item_threads[e] = SK_ITEM_BLOCK;
    }
    k->chunk_min = (int64_t)WARP * items_per_lane(ctx, in.elt);
    k->block_max = BLOCK;
    static const struct {
        int aux;
        bool elt;
        weft_type t;
    } aux[5] = {{AUX_FLAGS, false, WEFT_I32},
                {AUX_AGG, true, 0},
                {AUX_INCL, true, 0},
                {AUX_COUNTER, false, WEFT_I64},
                {AUX_TOTAL, true, 0}};
    bool packed = packed_status(ctx, in.elt);
    for (int a = 0; a < 5; a++) {
        weft_type t = aux[a].elt ? in.elt : aux[a].t;
        if (aux[a].aux == AUX_FLAGS && packed) {
            t = WEFT_I64;
        }
        weft_status s =
            sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, aux[a].aux, t, 1);
        if (s) {
            return s;
        }
        k->aux_item[aux[a].aux] = k->nitem - 1;
    }
    return WEFT_OK;
}

/* ---- small helpers ---------------------------------------------------- */

static LLVMValueRef i1_const(cg_fn *fn, bool v)
{
    return LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), v, 0);
}

static LLVMValueRef i32_const(cg_fn *fn, int v)
{
    return LLVMConstInt(LLVMInt32TypeInContext(fn->llctx), (unsigned)v, 0);
}

/* a == b (i64 or i32). */
static LLVMValueRef eq(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildICmp(fn->b, LLVMIntEQ, a, b, "");
}

/* a < b, signed (i64 or i32). */
static LLVMValueRef lt(cg_fn *fn, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildICmp(fn->b, LLVMIntSLT, a, b, "");
}

/* Whether i1 value c is the constant v. */
static bool is_const(LLVMValueRef c, bool v)
{
    return LLVMIsAConstantInt(c) && (LLVMConstIntGetZExtValue(c) != 0) == v;
}

/* A value of type t with every leaf zero (a placeholder where a lane has
 * no value). */
static weft_status zero_val(cg_fn *fn, weft_type t, cg_val *out)
{
    const weft_type *leaf;
    int n = cg_leaves(fn, t, &leaf);
    weft_status s = cg_val_make(fn, n, out);
    for (int l = 0; s == WEFT_OK && l < n; l++) {
        out->v[l] = LLVMConstNull(cg_type(fn->llctx, leaf[l]));
    }
    return s;
}

/* A mutable i1. */
static LLVMValueRef flag_new(cg_fn *fn, bool init)
{
    LLVMValueRef p = cg_alloca(fn, LLVMInt1TypeInContext(fn->llctx), "valid");
    LLVMBuildStore(fn->b, i1_const(fn, init), p);
    return p;
}

static LLVMValueRef flag_get(cg_fn *fn, LLVMValueRef p)
{
    return LLVMBuildLoad2(fn->b, LLVMInt1TypeInContext(fn->llctx), p, "");
}

static weft_status vload_val(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                             cg_val *out)
{
    weft_status s = cg_val_make(fn, a->nleaf, out);
    for (int l = 0; s == WEFT_OK && l < a->nleaf; l++) {
        out->v[l] = sk_ptx_vload(fn, a->leaf[l], a->ptr[l], i);
    }
    return s;
}

static void vstore_val(cg_fn *fn, const cg_array *a, LLVMValueRef i,
                       const cg_val *x)
{
    for (int l = 0; l < a->nleaf; l++) {
        sk_ptx_vstore(fn, a->leaf[l], a->ptr[l], i, x->v[l]);
    }
}

/* The packed status word of flag and x (packed_status). */
static LLVMValueRef pack(cg_fn *fn, int flag, const cg_val *x)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMValueRef bits = x->v[0];
    if (LLVMTypeOf(bits) != i32) {
        bits = LLVMBuildBitCast(fn->b, bits, i32, "");
    }
    LLVMValueRef hi = LLVMBuildShl(fn->b, LLVMBuildZExt(fn->b, bits, i64, ""),
                                   cg_i64(fn, 32), "");
    return LLVMBuildOr(fn->b, hi, cg_i64(fn, flag), "");
}

/* The value of packed status word w, of element type elt. */
static weft_status unpack(cg_fn *fn, weft_type elt, LLVMValueRef w, cg_val *out)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    const weft_type *leaf;
    cg_leaves(fn, elt, &leaf);
    weft_status s = cg_val_make(fn, 1, out);
    if (s == WEFT_OK) {
        LLVMValueRef bits = LLVMBuildTrunc(
            fn->b, LLVMBuildLShr(fn->b, w, cg_i64(fn, 32), ""), i32, "");
        LLVMTypeRef t = cg_type(fn->llctx, leaf[0]);
        out->v[0] = t == i32 ? bits : LLVMBuildBitCast(fn->b, bits, t, "");
    }
    return s;
}

/* x of lane `src` (i32), every leaf; every lane of the warp takes part. */
static weft_status shuffle_val(cg_fn *fn, const cg_val *x, LLVMValueRef src,
                               cg_val *out)
{
    weft_status s = cg_val_make(fn, x->n, out);
    for (int l = 0; s == WEFT_OK && l < x->n; l++) {
        out->v[l] = fn->target->shuffle_idx(fn, x->v[l], src);
    }
    return s;
}

/* The same as shuffle_val, down by delta (x of lane + delta). */
static weft_status shuffle_down_val(cg_fn *fn, const cg_val *x, int delta,
                                    cg_val *out)
{
    weft_status s = cg_val_make(fn, x->n, out);
    for (int l = 0; s == WEFT_OK && l < x->n; l++) {
        out->v[l] = fn->target->shuffle_down(fn, x->v[l], i32_const(fn, delta));
    }
    return s;
}

/* cg_loop_end for the loops of partial tiles, which run for few tiles
 * (the last of a row): the back-edge also says llvm.loop.unroll.disable,
 * so that they stay small (less to compile) and leave registers alone. */
static void loop_end_rolled(cg_fn *fn, cg_loop *l)
{
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(fn->b);
    cg_loop_end(fn, l);
    LLVMValueRef br = LLVMGetBasicBlockTerminator(latch);
    LLVMContextRef c = fn->llctx;
    LLVMMetadataRef kv[2] = {
        LLVMMDStringInContext2(c, "llvm.loop.vectorize.enable", 26),
        LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(c), 0, 0))};
    LLVMMetadataRef off =
        LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef self = LLVMTemporaryMDNode(c, NULL, 0);
    LLVMMetadataRef ops[3] = {self, LLVMMDNodeInContext2(c, kv, 2),
                              LLVMMDNodeInContext2(c, &off, 1)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(c, ops, 3);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(c, "llvm.loop", 9),
                    LLVMMetadataAsValue(c, id));
}

/* ---- combining in logical order ---------------------------------------- */

/* out = earlier . later: f(earlier, later) for left scans, f(later,
 * earlier) for right ones. */
static weft_status comb(sk_fn *f, const scan_info *in, const cg_val *earlier,
                        const cg_val *later, cg_val *out)
{
    cg_val args[2];
    args[0] = in->left ? *earlier : *later;
    args[1] = in->left ? *later : *earlier;
    return cg_apply(&f->fn, in->comb, args, out);
}

/* m = earlier . m. */
static weft_status comb_front(sk_fn *f, const scan_info *in,
                              const cg_val *earlier, const cg_mut *m)
{
    cg_val x, y;
    weft_status s = cg_mut_get(&f->fn, m, &x);
    if (s == WEFT_OK) {
        s = comb(f, in, earlier, &x, &y);
    }
    if (s == WEFT_OK) {
        cg_mut_set(&f->fn, m, &y);
    }
    return s;
}

/* m = m . later. */
static weft_status comb_back(sk_fn *f, const scan_info *in, const cg_mut *m,
                             const cg_val *later)
{
    cg_val x, y;
    weft_status s = cg_mut_get(&f->fn, m, &x);
    if (s == WEFT_OK) {
        s = comb(f, in, &x, later, &y);
    }
    if (s == WEFT_OK) {
        cg_mut_set(&f->fn, m, &y);
    }
    return s;
}

/* Either value may be absent (av, bv: i1, possibly constants): out = a . b
 * when both are there, else the one that is (a placeholder when neither
 * is); *valid (if not NULL) gets av | bv. */
static weft_status comb_opt(sk_fn *f, const scan_info *in, const cg_val *a,
                            LLVMValueRef av, const cg_val *b, LLVMValueRef bv,
                            cg_val *out, LLVMValueRef *valid)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    if (valid) {
        *valid = LLVMBuildOr(fn->b, av, bv, "");
    }
    if (is_const(av, false)) {
        *out = *b;
        return WEFT_OK;
    }
    if (is_const(bv, false)) {
        *out = *a;
        return WEFT_OK;
    }
    if (is_const(av, true) && is_const(bv, true)) {
        return comb(f, in, a, b, out);
    }
    cg_mut m;
    if ((s = cg_mut_new(fn, in->elt, &m)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &m, b);
    cg_if ia, ib;
    cg_if_begin(fn, &ia, av);
    cg_if_begin(fn, &ib, bv);
    cg_val y;
    if ((s = comb(f, in, a, b, &y)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &m, &y);
    cg_if_else(fn, &ib);
    cg_mut_set(fn, &m, a);
    cg_if_end(fn, &ib);
    cg_if_end(fn, &ia);
    return cg_mut_get(fn, &m, out);
}

/* ---- warps ------------------------------------------------------------ */

/* The thread's place in the block. */
typedef struct lanes {
    LLVMValueRef tid;    /* i64 */
    LLVMValueRef lane;   /* i64 0..31 */
    LLVMValueRef lane32; /* i32 */
    LLVMValueRef wid;    /* i64: warp within the block */
    LLVMValueRef nwarp;  /* i64: warps in the block */
} lanes;

/* Inclusive scan of x across the lanes in lane order: lane l ends with
 * x_0 . ... . x_l.  valid (i1) says whether this lane holds a value; the
 * lanes that do are a prefix of the warp.  Every lane takes part. */
static weft_status warp_scan(sk_fn *f, const scan_info *in, const lanes *L,
                             const cg_mut *x, LLVMValueRef valid)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    weft_status s;
    for (int d = 1; d < WARP; d *= 2) {
        cg_val cur, y;
        if ((s = cg_mut_get(fn, x, &cur)) != WEFT_OK) {
            return s;
        }
        LLVMValueRef up =
            LLVMBuildICmp(fn->b, LLVMIntUGE, L->lane32, i32_const(fn, d), "");
        if ((s = cg_val_make(fn, cur.n, &y)) != WEFT_OK) {
            return s;
        }
        for (int l = 0; l < cur.n; l++) {
            y.v[l] = tg->shuffle_up(fn, cur.v[l], i32_const(fn, d));
        }
        cg_if c;
        cg_if_begin(fn, &c, LLVMBuildAnd(fn->b, up, valid, ""));
        s = comb_front(f, in, &y, x);
        cg_if_end(fn, &c);
        if (s) {
            return s;
        }
    }
    return WEFT_OK;
}

/* Lanes 0 .. nv - 1 hold values in x (nv: i64, 0 .. 32): x scanned
 * across them in lane order (warp_scan), *xs each lane's result and
 * *total the last one's (a placeholder when nv is 0).  Every lane takes
 * part. */
static weft_status lanes_total(sk_fn *f, const scan_info *in, const lanes *L,
                               const cg_mut *x, LLVMValueRef nv, cg_val *xs,
                               cg_val *total)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef wv = LLVMBuildICmp(fn->b, LLVMIntSLT, L->lane, nv, "");
    weft_status s;
    if ((s = warp_scan(f, in, L, x, wv)) != WEFT_OK ||
        (s = cg_mut_get(fn, x, xs)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef last =
        cg_smax(fn, LLVMBuildSub(fn->b, nv, cg_i64(fn, 1), ""), cg_i64(fn, 0));
    return shuffle_val(
        fn, xs,
        LLVMBuildTrunc(fn->b, last, LLVMInt32TypeInContext(fn->llctx), ""),
        total);
}

/* ---- reading the input ------------------------------------------------ */

/* ---- the kernel ------------------------------------------------------- */

/* Everything one tile's code needs. */
typedef struct tile {
    const scan_info *in;
    lanes L;
    int K;
    bool packed;         /* packed_status */
    LLVMValueRef m;      /* row length */
    LLVMValueRef tpr;    /* tiles per row */
    LLVMValueRef t;      /* the tile */
    LLVMValueRef row, q; /* its row and piece */
    LLVMValueRef part;   /* the device's part (grain - 2), or 0 */
    LLVMValueRef start;  /* i1: the first tile of a device's part of a
                             row over several ("Several devices"): no
                             look-back; its prefix the parts' before */
    LLVMValueRef lo, hi; /* its logical positions in the row */
    LLVMValueRef seg;    /* the warp's first position */
    LLVMValueRef whole;  /* i1: all the warp's 32 K positions are in the
                             tile (reads and writes need no guard) */
    LLVMValueRef *wt;    /* shared, per leaf [32]: warp totals */
    LLVMValueRef *wp;    /* shared, per leaf [32]: warp prefixes */
    LLVMValueRef wpv;    /* shared i8 [32]: whether warp v has one */
    LLVMValueRef *buf;   /* shared, per leaf: the warps' staging areas */
    LLVMValueRef wbase;  /* this warp's area in buf: 32 K + K slots */
    cg_mut pre;          /* the total of the warp's earlier lanes (none
                             in lane 0); its leaves name the leaf types */
} tile;

/* Physical position of logical position p. */
static LLVMValueRef phys(cg_fn *fn, const tile *T, LLVMValueRef p)
{
    if (T->in->left) {
        return p;
    }
    return LLVMBuildSub(fn->b, LLVMBuildSub(fn->b, T->m, cg_i64(fn, 1), ""), p,
                        "");
}

/* Offset q (within the warp's 32 K positions) of item i of this lane:
 * each lane owns K consecutive positions, lane l [K l, K (l + 1)). */
static LLVMValueRef item_off(cg_fn *fn, const tile *T, int i)
{
    return LLVMBuildAdd(fn->b,
                        LLVMBuildMul(fn->b, T->L.lane, cg_i64(fn, T->K), ""),
                        cg_i64(fn, i), "");
}

/* Offset of the lane's element in step i of a coalesced pass: 32 i +
 * lane. */
static LLVMValueRef stripe_off(cg_fn *fn, const tile *T, int i)
{
    return LLVMBuildAdd(fn->b, T->L.lane, cg_i64(fn, (int64_t)WARP * i), "");
}

/* item_off and stripe_off of an i64 index. */
static LLVMValueRef item_at(cg_fn *fn, const tile *T, LLVMValueRef i)
{
    return LLVMBuildAdd(
        fn->b, LLVMBuildMul(fn->b, T->L.lane, cg_i64(fn, T->K), ""), i, "");
}

static LLVMValueRef stripe_at(cg_fn *fn, const tile *T, LLVMValueRef i)
{
    return LLVMBuildAdd(fn->b, T->L.lane,
                        LLVMBuildMul(fn->b, i, cg_i64(fn, WARP), ""), "");
}

/* How many of the lane's items (K lane + i) are in the tile: a prefix,
 * 0 .. K. */
static LLVMValueRef items_in(cg_fn *fn, const tile *T)
{
    LLVMValueRef left =
        LLVMBuildSub(fn->b, LLVMBuildSub(fn->b, T->hi, T->seg, ""),
                     LLVMBuildMul(fn->b, T->L.lane, cg_i64(fn, T->K), ""), "");
    return cg_smin(fn, cg_smax(fn, left, cg_i64(fn, 0)), cg_i64(fn, T->K));
}

/* How many of the lane's coalesced steps (32 i + lane) are in the tile:
 * a prefix, 0 .. K. */
static LLVMValueRef stripes_in(cg_fn *fn, const tile *T)
{
    LLVMValueRef left =
        cg_smax(fn,
                LLVMBuildSub(fn->b, LLVMBuildSub(fn->b, T->hi, T->seg, ""),
                             T->L.lane, ""),
                cg_i64(fn, 0));
    LLVMValueRef n = LLVMBuildLShr(
        fn->b, LLVMBuildAdd(fn->b, left, cg_i64(fn, WARP - 1), ""),
        cg_i64(fn, 5), "");
    return cg_smin(fn, n, cg_i64(fn, T->K));
}

/* The staging slot of offset q: one pad slot after every 32, so that
 * both the coalesced passes (32 i + lane) and the lanes' own runs (K lane
 * + i) fall into 32 different banks. */
static LLVMValueRef slot(cg_fn *fn, const tile *T, LLVMValueRef q)
{
    return LLVMBuildAdd(
        fn->b, T->wbase,
        LLVMBuildAdd(fn->b, q, LLVMBuildLShr(fn->b, q, cg_i64(fn, 5), ""), ""),
        "");
}

static void stage_put(cg_fn *fn, const tile *T, LLVMValueRef q, const cg_val *x)
{
    for (int l = 0; l < x->n; l++) {
        cg_store(fn, T->pre.leaf[l], T->buf[l], slot(fn, T, q), x->v[l]);
    }
}

static weft_status stage_get(cg_fn *fn, const tile *T, LLVMValueRef q,
                             cg_val *out)
{
    weft_status s = cg_val_make(fn, T->pre.n, out);
    for (int l = 0; s == WEFT_OK && l < out->n; l++) {
        out->v[l] = cg_load(fn, T->pre.leaf[l], T->buf[l], slot(fn, T, q));
    }
    return s;
}

/* x = x . the value at staging offset q. */
static weft_status take_next(sk_fn *f, const tile *T, LLVMValueRef q,
                             const cg_mut *x)
{
    cg_val e, cur, y;
    weft_status s;
    if ((s = stage_get(&f->fn, T, q, &e)) != WEFT_OK ||
        (s = cg_mut_get(&f->fn, x, &cur)) != WEFT_OK ||
        (s = comb(f, T->in, &cur, &e, &y)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(&f->fn, x, &y);
    return WEFT_OK;
}

/* The lane's positions of the staging area in order combined into *x,
 * the lane's total: all K unrolled, or with `guarded` those in the tile
 * (a prefix, maybe none: *x is then left as it is) by a loop. */
static weft_status lane_total(sk_fn *f, const tile *T, bool guarded,
                              const cg_mut *x)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    cg_val e;
    if (!guarded) {
        if ((s = stage_get(fn, T, item_off(fn, T, 0), &e)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, x, &e);
        for (int i = 1; i < T->K; i++) {
            if ((s = take_next(f, T, item_off(fn, T, i), x)) != WEFT_OK) {
                return s;
            }
        }
        return WEFT_OK;
    }
    LLVMValueRef n = items_in(fn, T);
    cg_if any;
    cg_if_begin(fn, &any, lt(fn, cg_i64(fn, 0), n));
    if ((s = stage_get(fn, T, item_off(fn, T, 0), &e)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, x, &e);
    cg_loop lp;
    LLVMValueRef i;
    cg_loop_begin(fn, &lp, cg_i64(fn, 1), n, &i);
    if ((s = take_next(f, T, item_at(fn, T, i), x)) != WEFT_OK) {
        return s;
    }
    loop_end_rolled(fn, &lp);
    cg_if_end(fn, &any);
    return WEFT_OK;
}

/* Step 1: the warp's positions, coalesced, into its staging area (when
 * all 32 K are in the tile, every read first and unguarded: K loads in
 * flight per lane), a warp barrier, and each lane combines its own K
 * positions in order into its total; the values stay in the staging area
 * for step 4.  The warp scans the lane totals; each lane keeps the total
 * of the lanes before it (T->pre, nothing for lane 0), and lane 0 of each
 * warp that has positions in the tile puts the warp's total in shared
 * memory. */
static weft_status warp_chunks(sk_fn *f, tile *T, const sk_row *sr)
{
    cg_fn *fn = &f->fn;
    const scan_info *in = T->in;
    const lanes *L = &T->L;
    weft_status s;
    cg_mut x;
    cg_val z;
    if ((s = cg_mut_new(fn, in->elt, &x)) != WEFT_OK ||
        (s = zero_val(fn, in->elt, &z)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &x, &z);
    cg_if wh;
    cg_if_begin(fn, &wh, T->whole);
    cg_val got[MAX_ITEMS];
    for (int i = 0; i < T->K; i++) {
        LLVMValueRef p = LLVMBuildAdd(fn->b, T->seg, stripe_off(fn, T, i), "");
        if ((s = sk_row_read_in(f, sr, phys(fn, T, p), &got[i])) != WEFT_OK) {
            return s;
        }
    }
    for (int i = 0; i < T->K; i++) {
        stage_put(fn, T, stripe_off(fn, T, i), &got[i]);
    }
    fn->target->warp_barrier(fn);
    if ((s = lane_total(f, T, false, &x)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &wh);
    cg_loop rd;
    LLVMValueRef i;
    cg_loop_begin(fn, &rd, cg_i64(fn, 0), stripes_in(fn, T), &i);
    LLVMValueRef q = stripe_at(fn, T, i);
    cg_val e;
    if ((s = sk_row_read_in(f, sr,
                            phys(fn, T, LLVMBuildAdd(fn->b, T->seg, q, "")),
                            &e)) != WEFT_OK) {
        return s;
    }
    stage_put(fn, T, q, &e);
    loop_end_rolled(fn, &rd);
    fn->target->warp_barrier(fn);
    if ((s = lane_total(f, T, true, &x)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &wh);
    /* across the lanes: lane l gets the total of lanes 0 .. l (the lanes
     * with positions are a prefix of the warp) */
    LLVMValueRef has =
        lt(fn, LLVMBuildAdd(fn->b, T->seg, item_off(fn, T, 0), ""), T->hi);
    if ((s = warp_scan(f, in, L, &x, has)) != WEFT_OK) {
        return s;
    }
    cg_val xs, pre;
    if ((s = cg_mut_get(fn, &x, &xs)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef lane0 = eq(fn, L->lane32, i32_const(fn, 0));
    LLVMValueRef left = LLVMBuildSelect(
        fn->b, lane0, i32_const(fn, 0),
        LLVMBuildSub(fn->b, L->lane32, i32_const(fn, 1), ""), "");
    if ((s = shuffle_val(fn, &xs, left, &pre)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &T->pre, &pre);
    /* the warp's total: the value of its last lane with positions */
    LLVMValueRef past = LLVMBuildSub(
        fn->b, LLVMBuildSub(fn->b, T->hi, T->seg, ""), cg_i64(fn, 1), "");
    LLVMValueRef lane = LLVMBuildSDiv(fn->b, cg_smax(fn, past, cg_i64(fn, 0)),
                                      cg_i64(fn, T->K), "");
    LLVMValueRef last = cg_smin(fn, lane, cg_i64(fn, WARP - 1));
    cg_val total;
    if ((s = shuffle_val(
             fn, &xs,
             LLVMBuildTrunc(fn->b, last, LLVMInt32TypeInContext(fn->llctx), ""),
             &total)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef busy = lt(fn, T->seg, T->hi);
    cg_if put;
    cg_if_begin(fn, &put, LLVMBuildAnd(fn->b, busy, lane0, ""));
    for (int l = 0; l < total.n; l++) {
        cg_store(fn, T->pre.leaf[l], T->wt[l], L->wid, total.v[l]);
    }
    cg_if_end(fn, &put);
    return WEFT_OK;
}

/* Look-back (warp 0 of a tile that is not the first of its row): lane 0
 * ends with the combination of every earlier tile of the row in *excl. */
static weft_status look_back(sk_fn *f, tile *T, const cg_mut *excl)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const scan_info *in = T->in;
    const lanes *L = &T->L;
    const cg_array *flags = sk_aux_array(f, AUX_FLAGS);
    const cg_array *agg = sk_aux_array(f, AUX_AGG);
    const cg_array *incl = sk_aux_array(f, AUX_INCL);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    weft_status s;
    LLVMValueRef have = flag_new(fn, false);
    LLVMValueRef endp = cg_alloca(fn, i64, "end");
    LLVMBuildStore(fn->b, T->q, endp);
    LLVMValueRef first = LLVMBuildSub(fn->b, T->t, T->q, ""); /* piece 0 */
    LLVMBasicBlockRef head =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lb.window");
    LLVMBasicBlockRef spin =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lb.spin");
    LLVMBasicBlockRef got =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lb.got");
    LLVMBasicBlockRef done =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "lb.done");
    LLVMBuildBr(fn->b, head);
    /* the window: pieces end - 1 - lane */
    LLVMPositionBuilderAtEnd(fn->b, head);
    LLVMValueRef end = LLVMBuildLoad2(fn->b, i64, endp, "");
    LLVMValueRef j = LLVMBuildSub(
        fn->b, LLVMBuildSub(fn->b, end, cg_i64(fn, 1), ""), L->lane, "");
    LLVMValueRef inr = LLVMBuildICmp(fn->b, LLVMIntSGE, j, cg_i64(fn, 0), "");
    LLVMValueRef gi = LLVMBuildSelect(
        fn->b, inr, LLVMBuildAdd(fn->b, first, j, ""), T->t, "");
    LLVMBuildBr(fn->b, spin);
    /* spin until every flag up to the first P (lanes past the row's first
     * piece count as P) is set */
    LLVMPositionBuilderAtEnd(fn->b, spin);
    LLVMValueRef word = NULL, fl;
    if (T->packed) {
        word = sk_ptx_vload(fn, WEFT_I64, flags->ptr[0], gi);
        fl = LLVMBuildTrunc(fn->b, word, i32, "");
    } else {
        fl = sk_ptx_vload(fn, WEFT_I32, flags->ptr[0], gi);
    }
    fl = LLVMBuildSelect(fn->b, inr, fl, i32_const(fn, FLAG_PREFIX), "");
    LLVMValueRef pm = tg->ballot(fn, eq(fn, fl, i32_const(fn, FLAG_PREFIX)));
    LLVMValueRef zm = tg->ballot(fn, eq(fn, fl, i32_const(fn, FLAG_NONE)));
    LLVMValueRef ctz_args[2] = {pm, i1_const(fn, false)};
    LLVMValueRef fp = cg_intrinsic(fn, "llvm.cttz", &i32, 1, ctz_args, 2);
    /* lanes 0 .. fp (all 32 when there is no P) */
    LLVMValueRef upto =
        LLVMBuildShl(fn->b, cg_i64(fn, 2), cg_zext64(fn, fp), "");
    LLVMValueRef need = LLVMBuildTrunc(
        fn->b, LLVMBuildSub(fn->b, upto, cg_i64(fn, 1), ""), i32, "");
    LLVMValueRef wait = LLVMBuildNot(
        fn->b, eq(fn, LLVMBuildAnd(fn->b, zm, need, ""), i32_const(fn, 0)), "");
    LLVMBuildCondBr(fn->b, wait, spin, got);
    /* read the window: aggregates before the first P, its prefix */
    LLVMPositionBuilderAtEnd(fn->b, got);
    if (!T->packed) {
        tg->fence(fn);
    }
    LLVMValueRef fp64 = cg_zext64(fn, fp);
    cg_mut x;
    cg_val z, a, p;
    if ((s = cg_mut_new(fn, in->elt, &x)) != WEFT_OK ||
        (s = zero_val(fn, in->elt, &z)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &x, &z);
    cg_if take;
    LLVMValueRef upto_fp = LLVMBuildICmp(fn->b, LLVMIntULE, L->lane, fp64, "");
    cg_if_begin(fn, &take, LLVMBuildAnd(fn->b, inr, upto_fp, ""));
    if (T->packed) {
        /* the value came with its flag */
        if ((s = unpack(fn, in->elt, word, &a)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &x, &a);
    } else {
        cg_if which;
        cg_if_begin(fn, &which,
                    LLVMBuildICmp(fn->b, LLVMIntULT, L->lane, fp64, ""));
        if ((s = vload_val(fn, agg, gi, &a)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &x, &a);
        cg_if_else(fn, &which);
        if ((s = vload_val(fn, incl, gi, &p)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &x, &p);
        cg_if_end(fn, &which);
    }
    cg_if_end(fn, &take);
    /* reduce lanes 0 .. fp in order: higher lanes hold earlier pieces */
    for (int d = 1; d < WARP; d *= 2) {
        cg_val cur, y;
        if ((s = cg_mut_get(fn, &x, &cur)) != WEFT_OK ||
            (s = shuffle_down_val(fn, &cur, d, &y)) != WEFT_OK) {
            return s;
        }
        LLVMValueRef mine = LLVMBuildICmp(
            fn->b, LLVMIntEQ,
            LLVMBuildAnd(fn->b, L->lane, cg_i64(fn, 2 * d - 1), ""),
            cg_i64(fn, 0), "");
        LLVMValueRef there = LLVMBuildICmp(
            fn->b, LLVMIntULE, LLVMBuildAdd(fn->b, L->lane, cg_i64(fn, d), ""),
            fp64, "");
        cg_if c;
        cg_if_begin(fn, &c, LLVMBuildAnd(fn->b, mine, there, ""));
        s = comb_front(f, in, &y, &x);
        cg_if_end(fn, &c);
        if (s) {
            return s;
        }
    }
    /* lane 0: excl = window . excl */
    cg_val w;
    if ((s = cg_mut_get(fn, &x, &w)) != WEFT_OK) {
        return s;
    }
    cg_if l0, h;
    cg_if_begin(fn, &l0, eq(fn, L->lane, cg_i64(fn, 0)));
    cg_if_begin(fn, &h, flag_get(fn, have));
    s = comb_front(f, in, &w, excl);
    cg_if_else(fn, &h);
    cg_mut_set(fn, excl, &w);
    cg_if_end(fn, &h);
    LLVMBuildStore(fn->b, i1_const(fn, true), have);
    cg_if_end(fn, &l0);
    if (s) {
        return s;
    }
    LLVMBuildStore(fn->b, LLVMBuildSub(fn->b, end, cg_i64(fn, WARP), ""), endp);
    LLVMBuildCondBr(fn->b, lt(fn, fp, i32_const(fn, WARP)), done, head);
    LLVMPositionBuilderAtEnd(fn->b, done);
    return WEFT_OK;
}

/* Publish x as the tile's aggregate (aux AUX_AGG, flag FLAG_AGG) or
 * inclusive prefix (AUX_INCL, FLAG_PREFIX): the packed word, or the value,
 * a fence and the flag. */
static void publish(sk_fn *f, const tile *T, int aux, int flag, const cg_val *x)
{
    cg_fn *fn = &f->fn;
    const cg_array *flags = sk_aux_array(f, AUX_FLAGS);
    if (T->packed) {
        sk_ptx_vstore(fn, WEFT_I64, flags->ptr[0], T->t, pack(fn, flag, x));
        return;
    }
    vstore_val(fn, sk_aux_array(f, aux), T->t, x);
    fn->target->fence(fn);
    sk_ptx_vstore(fn, WEFT_I32, flags->ptr[0], T->t, i32_const(fn, flag));
}

/* Part q's total (AUX_TOTAL [q], over peer access): with a packed
 * status the word that total_put stores, spun on until its flag is set
 * (a fused part's reduce may still run on its device), else the value
 * (the phases joined after the reduce). */
static weft_status total_get(sk_fn *f, const tile *T, LLVMValueRef q,
                             cg_val *out)
{
    cg_fn *fn = &f->fn;
    const cg_array *tot = sk_aux_array(f, AUX_TOTAL);
    if (!T->packed) {
        return vload_val(fn, tot, q, out);
    }
    LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
    LLVMBasicBlockRef spin =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "total.spin");
    LLVMBasicBlockRef got =
        LLVMAppendBasicBlockInContext(fn->llctx, fn->fn, "total.got");
    LLVMBuildBr(fn->b, spin);
    LLVMPositionBuilderAtEnd(fn->b, spin);
    LLVMValueRef w = sk_ptx_vload(fn, WEFT_I64, tot->ptr[0], q);
    LLVMValueRef fl = LLVMBuildTrunc(fn->b, w, i32, "");
    LLVMBuildCondBr(fn->b, eq(fn, fl, i32_const(fn, FLAG_NONE)), spin, got);
    LLVMPositionBuilderAtEnd(fn->b, got);
    return unpack(fn, T->in->elt, w, out);
}

/* The prefix of a part's first tile past piece 0 (one row over several
 * devices, part r >= 1: part 0 starts at piece 0), into *m: [z .] the
 * totals of parts 0 .. r - 1 (total_get), in order. */
static weft_status parts_before(sk_fn *f, const tile *T, const cg_mut *m)
{
    cg_fn *fn = &f->fn;
    cg_val x;
    weft_status s;
    LLVMValueRef q0 = cg_i64(fn, 0);
    if (T->in->seeded) {
        cg_mut_set(fn, m, sk_kid_value(f, 0));
    } else {
        if ((s = total_get(f, T, q0, &x)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, m, &x);
        q0 = cg_i64(fn, 1);
    }
    cg_loop lp;
    LLVMValueRef q;
    cg_loop_begin(fn, &lp, q0, T->part, &q);
    if ((s = total_get(f, T, q, &x)) != WEFT_OK ||
        (s = comb_back(f, T->in, m, &x)) != WEFT_OK) {
        return s;
    }
    loop_end_rolled(fn, &lp);
    return WEFT_OK;
}

/* Step 2 (warp 0): the warp totals scanned in lane order, in *x (a new
 * mutable), each lane's result in *xs, the tile's aggregate in *agg (a
 * placeholder where *nvalid, the warps with positions in the tile, a
 * prefix of the block's, is 0). */
static weft_status tile_aggregate(sk_fn *f, const tile *T, cg_mut *x,
                                  cg_val *xs, cg_val *agg, LLVMValueRef *nvalid)
{
    cg_fn *fn = &f->fn;
    const lanes *L = &T->L;
    LLVMValueRef span = cg_i64(fn, (int64_t)WARP * T->K);
    *nvalid =
        cg_smin(fn, L->nwarp,
                cg_ceil_div(fn, LLVMBuildSub(fn->b, T->hi, T->lo, ""), span));
    LLVMValueRef wv = LLVMBuildICmp(fn->b, LLVMIntSLT, L->lane, *nvalid, "");
    cg_val z, e;
    weft_status s;
    if ((s = cg_mut_new(fn, T->in->elt, x)) != WEFT_OK ||
        (s = zero_val(fn, T->in->elt, &z)) != WEFT_OK ||
        (s = cg_val_make(fn, z.n, &e)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, x, &z);
    cg_if rd;
    cg_if_begin(fn, &rd, wv);
    for (int l = 0; l < e.n; l++) {
        e.v[l] = cg_load(fn, x->leaf[l], T->wt[l], L->lane);
    }
    cg_mut_set(fn, x, &e);
    cg_if_end(fn, &rd);
    return lanes_total(f, T->in, L, x, *nvalid, xs, agg);
}

/* Steps 2 and 3 (warp 0): the warp totals scanned, the tile's prefix by
 * look-back, the inclusive prefix published, the row's totals, and each
 * warp's prefix into shared memory. */
static weft_status tile_prefix(sk_fn *f, tile *T)
{
    cg_fn *fn = &f->fn;
    const scan_info *in = T->in;
    const lanes *L = &T->L;
    weft_status s;
    LLVMValueRef zero = cg_i64(fn, 0), one = cg_i64(fn, 1);
    LLVMValueRef lane0 = LLVMBuildICmp(fn->b, LLVMIntEQ, L->lane, zero, "");
    cg_mut x;
    cg_val z, xs, agg, we;
    LLVMValueRef nvalid;
    if ((s = zero_val(fn, in->elt, &z)) != WEFT_OK ||
        (s = tile_aggregate(f, T, &x, &xs, &agg, &nvalid)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef aggv = LLVMBuildICmp(fn->b, LLVMIntSGT, nvalid, zero, "");
    LLVMValueRef src = LLVMBuildSelect(
        fn->b, lane0, i32_const(fn, 0),
        LLVMBuildSub(fn->b, L->lane32, i32_const(fn, 1), ""), "");
    if ((s = shuffle_val(fn, &xs, src, &we)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef wev = LLVMBuildNot(fn->b, lane0, "");
    /* the tile's prefix: z or none for piece 0, the parts' before for
     * a part's first tile, else look-back */
    cg_mut prefix;
    if ((s = cg_mut_new(fn, in->elt, &prefix)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &prefix, &z);
    LLVMValueRef q0 = LLVMBuildICmp(fn->b, LLVMIntEQ, T->q, zero, "");
    cg_if piece0;
    cg_if_begin(fn, &piece0, LLVMBuildOr(fn->b, q0, T->start, ""));
    if (in->seeded) {
        cg_if seed;
        cg_if_begin(fn, &seed, q0);
        cg_mut_set(fn, &prefix, sk_kid_value(f, 0));
        cg_if_end(fn, &seed);
    }
    cg_if parts;
    cg_if_begin(fn, &parts, LLVMBuildNot(fn->b, q0, ""));
    if ((s = parts_before(f, T, &prefix)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &parts);
    cg_if_else(fn, &piece0);
    /* publish the aggregate (a tile past the first is never empty) */
    cg_if pa;
    cg_if_begin(fn, &pa, lane0);
    publish(f, T, AUX_AGG, FLAG_AGG, &agg);
    cg_if_end(fn, &pa);
    if ((s = look_back(f, T, &prefix)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &piece0);
    /* whether there is a prefix: always in a seeded scan (z, or z and
     * the parts' before); in another, past piece 0 (a part's first tile
     * past it has parts before) */
    LLVMValueRef pv =
        in->seeded ? i1_const(fn, true) : LLVMBuildNot(fn->b, q0, "");
    cg_val pre;
    if ((s = cg_mut_get(fn, &prefix, &pre)) != WEFT_OK) {
        return s;
    }
    /* lane 0: publish the inclusive prefix; the row's totals */
    cg_if pub;
    cg_if_begin(fn, &pub, lane0);
    cg_val inc;
    if ((s = comb_opt(f, in, &pre, pv, &agg, aggv, &inc, NULL)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef lastq = LLVMBuildICmp(
        fn->b, LLVMIntEQ, T->q, LLVMBuildSub(fn->b, T->tpr, one, ""), "");
    cg_if more;
    cg_if_begin(fn, &more, LLVMBuildNot(fn->b, lastq, ""));
    publish(f, T, AUX_INCL, FLAG_PREFIX, &inc);
    cg_if_end(fn, &more);
    LLVMValueRef m1 = LLVMBuildAdd(fn->b, T->m, one, "");
    LLVMValueRef endpos =
        LLVMBuildAdd(fn->b, LLVMBuildMul(fn->b, T->row, m1, ""), T->m, "");
    if (in->grow && !in->left) {
        cg_if w0;
        cg_if_begin(fn, &w0, q0);
        cg_array_store(fn, sk_out_array(f, 0), endpos, sk_kid_value(f, 0));
        cg_if_end(fn, &w0);
    } else if (in->grow || in->pair) {
        cg_if wl;
        cg_if_begin(fn, &wl, lastq);
        if (in->grow) {
            cg_array_store(fn, sk_out_array(f, 0), endpos, &inc);
        } else {
            cg_array_store(fn, sk_out_array(f, 1), T->row, &inc);
        }
        cg_if_end(fn, &wl);
    }
    cg_if_end(fn, &pub);
    /* each warp's prefix: the tile's . the warp's exclusive one */
    cg_val tp, wpre;
    LLVMValueRef wpv;
    if ((s = shuffle_val(fn, &pre, i32_const(fn, 0), &tp)) != WEFT_OK) {
        return s;
    }
    cg_if put;
    cg_if_begin(fn, &put, lt(fn, L->lane, L->nwarp));
    if ((s = comb_opt(f, in, &tp, pv, &we, wev, &wpre, &wpv)) != WEFT_OK) {
        return s;
    }
    for (int l = 0; l < wpre.n; l++) {
        cg_store(fn, x.leaf[l], T->wp[l], L->lane, wpre.v[l]);
    }
    cg_store(fn, WEFT_BOOL, T->wpv, L->lane, wpv);
    cg_if_end(fn, &put);
    return WEFT_OK;
}

/* Item 0 of lane_results: y = lp . e_0 (e_0 alone where lpv is false),
 * and in its place y (inclusive) or lp (exclusive). */
static weft_status result_first(sk_fn *f, const tile *T, const cg_val *lp,
                                LLVMValueRef lpv, const cg_mut *y)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef q = item_off(fn, T, 0);
    cg_val e, nx;
    weft_status s;
    if ((s = stage_get(fn, T, q, &e)) != WEFT_OK) {
        return s;
    }
    if (T->in->exclusive) {
        stage_put(fn, T, q, lp);
    }
    cg_if pv;
    if (lpv) {
        cg_if_begin(fn, &pv, lpv);
    }
    if ((s = comb(f, T->in, lp, &e, &nx)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, y, &nx);
    if (lpv) {
        cg_if_else(fn, &pv);
        cg_mut_set(fn, y, &e);
        cg_if_end(fn, &pv);
    }
    if (!T->in->exclusive) {
        if ((s = cg_mut_get(fn, y, &nx)) != WEFT_OK) {
            return s;
        }
        stage_put(fn, T, q, &nx);
    }
    return WEFT_OK;
}

/* A later item of lane_results, at staging offset q: y = y . e, and in
 * its place y (inclusive scans) or y before (exclusive ones; `last`: the
 * lane's last item, whose combine nobody needs). */
static weft_status result_next(sk_fn *f, const tile *T, LLVMValueRef q,
                               const cg_mut *y, bool last)
{
    cg_fn *fn = &f->fn;
    cg_val e, cur, nx;
    weft_status s;
    if ((s = stage_get(fn, T, q, &e)) != WEFT_OK ||
        (s = cg_mut_get(fn, y, &cur)) != WEFT_OK) {
        return s;
    }
    if (T->in->exclusive) {
        stage_put(fn, T, q, &cur);
        if (last) {
            return WEFT_OK;
        }
    }
    if ((s = comb(f, T->in, &cur, &e, &nx)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, y, &nx);
    if (!T->in->exclusive) {
        stage_put(fn, T, q, &nx);
    }
    return WEFT_OK;
}

/* The lane's results in place of its values in the staging area: at item
 * i, lp . e_0 . ... . e_i (inclusive scans) or lp . e_0 . ... . e_{i-1}
 * (exclusive ones, lp at item 0), e the values step 1 left there and lp
 * the lane's prefix, absent where lpv (i1; NULL: always there) is false
 * (only scans without a seed, whose first position has nothing before
 * it).  All K unrolled, or with `guarded` those in the tile (a prefix)
 * by a loop. */
static weft_status lane_results(sk_fn *f, const tile *T, bool guarded,
                                const cg_val *lp, LLVMValueRef lpv)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    cg_mut y;
    if ((s = cg_mut_new(fn, T->in->elt, &y)) != WEFT_OK) {
        return s;
    }
    if (!guarded) {
        if ((s = result_first(f, T, lp, lpv, &y)) != WEFT_OK) {
            return s;
        }
        for (int i = 1; i < T->K; i++) {
            if ((s = result_next(f, T, item_off(fn, T, i), &y,
                                 i == T->K - 1)) != WEFT_OK) {
                return s;
            }
        }
        return WEFT_OK;
    }
    LLVMValueRef n = items_in(fn, T);
    cg_if any;
    cg_if_begin(fn, &any, lt(fn, cg_i64(fn, 0), n));
    if ((s = result_first(f, T, lp, lpv, &y)) != WEFT_OK) {
        return s;
    }
    cg_loop lo;
    LLVMValueRef i;
    cg_loop_begin(fn, &lo, cg_i64(fn, 1), n, &i);
    if ((s = result_next(f, T, item_at(fn, T, i), &y, false)) != WEFT_OK) {
        return s;
    }
    loop_end_rolled(fn, &lo);
    cg_if_end(fn, &any);
    return WEFT_OK;
}

/* Step 4: every lane puts its results into the staging area (the warp's
 * prefix and the lane's in front), a warp barrier, and the warp writes
 * the area out coalesced, as it read it. */
static weft_status tile_write(sk_fn *f, tile *T)
{
    cg_fn *fn = &f->fn;
    const scan_info *in = T->in;
    const lanes *L = &T->L;
    const cg_array *out = sk_out_array(f, 0);
    weft_status s;
    cg_val w, pre, lp;
    if ((s = cg_val_make(fn, T->pre.n, &w)) != WEFT_OK ||
        (s = cg_mut_get(fn, &T->pre, &pre)) != WEFT_OK) {
        return s;
    }
    for (int l = 0; l < w.n; l++) {
        w.v[l] = cg_load(fn, T->pre.leaf[l], T->wp[l], L->wid);
    }
    /* a seeded scan's warps always have a prefix (tile_prefix) */
    LLVMValueRef wv = in->seeded ? i1_const(fn, true)
                                 : cg_load(fn, WEFT_BOOL, T->wpv, L->wid);
    /* the lanes before this one, where it has positions (never a
     * combine with the placeholder of a lane without) */
    LLVMValueRef before = LLVMBuildAnd(
        fn->b, LLVMBuildICmp(fn->b, LLVMIntNE, L->lane, cg_i64(fn, 0), ""),
        lt(fn, LLVMBuildAdd(fn->b, T->seg, item_off(fn, T, 0), ""), T->hi), "");
    LLVMValueRef lpv;
    if ((s = comb_opt(f, in, &w, wv, &pre, before, &lp, &lpv)) != WEFT_OK) {
        return s;
    }
    if (in->seeded) {
        lpv = NULL;
    }
    LLVMValueRef rowlen =
        in->grow ? LLVMBuildAdd(fn->b, T->m, cg_i64(fn, 1), "") : T->m;
    LLVMValueRef obase = LLVMBuildMul(fn->b, T->row, rowlen, "");
    /* the results into the staging area ... */
    cg_if wh;
    cg_if_begin(fn, &wh, T->whole);
    if ((s = lane_results(f, T, false, &lp, lpv)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &wh);
    if ((s = lane_results(f, T, true, &lp, lpv)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &wh);
    fn->target->warp_barrier(fn);
    /* ... and out, coalesced (unguarded when all 32 K are in the tile) */
    cg_if_begin(fn, &wh, T->whole);
    for (int i = 0; i < T->K; i++) {
        LLVMValueRef q = stripe_off(fn, T, i);
        cg_val y;
        if ((s = stage_get(fn, T, q, &y)) != WEFT_OK) {
            return s;
        }
        cg_array_store(
            fn, out,
            LLVMBuildAdd(fn->b, obase,
                         phys(fn, T, LLVMBuildAdd(fn->b, T->seg, q, "")), ""),
            &y);
    }
    cg_if_else(fn, &wh);
    cg_loop wr;
    LLVMValueRef i;
    cg_loop_begin(fn, &wr, cg_i64(fn, 0), stripes_in(fn, T), &i);
    LLVMValueRef q = stripe_at(fn, T, i);
    cg_val y;
    if ((s = stage_get(fn, T, q, &y)) != WEFT_OK) {
        return s;
    }
    cg_array_store(fn, out,
                   LLVMBuildAdd(fn->b, obase,
                                phys(fn, T, LLVMBuildAdd(fn->b, T->seg, q, "")),
                                ""),
                   &y);
    loop_end_rolled(fn, &wr);
    cg_if_end(fn, &wh);
    return WEFT_OK;
}

/* A part's reduce ("Several devices"): its tiles [first, n) in runs of
 * `per` consecutive tiles, run j [first + j per, first + (j + 1) per) cut
 * at n, nb runs (none empty).  A block combines a run's tiles in order,
 * no counter and no look-back, puts the run's combination in the run's
 * partial slot, p0 + j pstride of pbase (packed words, flag none) or of
 * AUX_AGG, takes a ticket, and the block with the last ticket combines
 * the nb partials in order into the part's total (run_done).
 *
 * Entry 1 gives block b of G run b (per = ceil((n - first) / G)), its
 * partials in the status slots of the runs' first tiles, its combination
 * in registers (acc, have).  Entry 0 of a fused part (packed status
 * only) hands its runs out by the part's counter before its tiles, their
 * partials after the tile counters in aux 3, and keeps what must outlive
 * a tile in shared memory, so that the scan's registers stay as they
 * were (fuse_begin). */
typedef struct reduce_run {
    LLVMValueRef first, per, nb; /* i64 (fused: per and nb in sh) */
    LLVMValueRef p0, pstride;    /* i64: the partial slots */
    LLVMValueRef pbase;          /* their i64 words (packed), or NULL */
    LLVMValueRef slot, end;      /* entry 1, i64: the run's first tile, its
                                    end */
    LLVMValueRef next;           /* entry 1, alloca i64: its next tile */
    LLVMValueRef run;            /* i64: the block's run */
    cg_mut acc;                  /* entry 1: the run's combination (warp 0) */
    LLVMValueRef have;           /* entry 1, alloca i1: acc holds a tile's */
    LLVMValueRef sh;             /* fused: shared i64 [FUSE_WORDS], or NULL */
} reduce_run;

/* The fused part's shared words: per, its runs (0: none), thread 0's run
 * (next tile, end, index), the run and the edges of the tile it hands
 * out (FIRST, LAST: bits), the run's combination (a packed word). */
enum {
    SH_PER,
    SH_NB,
    SH_NEXT,
    SH_END,
    SH_CUR,
    SH_RUN,
    SH_EDGE,
    SH_ACC,
    SH_P0,     /* the part's first partial slot */
    SH_TICKET, /* its ticket's counter, from its tile counter */
    FUSE_WORDS
};
enum { EDGE_FIRST = 1, EDGE_LAST = 2 };

static LLVMValueRef sh_at(cg_fn *fn, const reduce_run *R, int w)
{
    LLVMValueRef i = cg_i64(fn, w);
    return LLVMBuildInBoundsGEP2(fn->b, LLVMInt64TypeInContext(fn->llctx),
                                 R->sh, &i, 1, "");
}

static LLVMValueRef sh_get(cg_fn *fn, const reduce_run *R, int w)
{
    return LLVMBuildLoad2(fn->b, LLVMInt64TypeInContext(fn->llctx),
                          sh_at(fn, R, w), "");
}

static void sh_put(cg_fn *fn, const reduce_run *R, int w, LLVMValueRef x)
{
    LLVMBuildStore(fn->b, x, sh_at(fn, R, w));
}

static weft_status reduce_begin(sk_fn *f, const tile *T, reduce_run *R)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMValueRef G = cg_zext64(fn, tg->grid_size(fn, 0));
    LLVMValueRef b = cg_zext64(fn, tg->block_index(fn, 0));
    LLVMValueRef count = LLVMBuildSub(fn->b, f->n, f->first, "");
    R->first = f->first;
    R->per = cg_ceil_div(fn, count, G);
    R->nb = cg_ceil_div(fn, count, R->per);
    R->p0 = f->first;
    R->pstride = R->per;
    R->pbase = T->packed ? sk_aux_array(f, AUX_FLAGS)->ptr[0] : NULL;
    R->run = b;
    R->slot = LLVMBuildAdd(fn->b, f->first, LLVMBuildMul(fn->b, b, R->per, ""),
                           "run");
    R->end = cg_smin(fn, LLVMBuildAdd(fn->b, R->slot, R->per, ""), f->n);
    R->next = cg_alloca(fn, i64, "next");
    LLVMBuildStore(fn->b, R->slot, R->next);
    R->have = flag_new(fn, false);
    return cg_mut_new(fn, T->in->elt, &R->acc);
}

/* Warp 0 of a reduce's tile: the tile's aggregate onto the block's run
 * (lane 0; fused: the run's first tile, edge bit EDGE_FIRST, starts it). */
static weft_status tile_fold(sk_fn *f, tile *T, const reduce_run *R)
{
    cg_fn *fn = &f->fn;
    cg_mut x;
    cg_val xs, agg, acc;
    LLVMValueRef nvalid;
    weft_status s = tile_aggregate(f, T, &x, &xs, &agg, &nvalid);
    if (s) {
        return s;
    }
    cg_if l0, h;
    cg_if_begin(fn, &l0, eq(fn, T->L.lane, cg_i64(fn, 0)));
    if (R->sh) {
        LLVMValueRef first = LLVMBuildAnd(fn->b, sh_get(fn, R, SH_EDGE),
                                          cg_i64(fn, EDGE_FIRST), "");
        cg_mut m;
        if ((s = cg_mut_new(fn, T->in->elt, &m)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &m, &agg);
        cg_if_begin(fn, &h, eq(fn, first, cg_i64(fn, 0)));
        if ((s = unpack(fn, T->in->elt, sh_get(fn, R, SH_ACC), &acc)) ==
            WEFT_OK) {
            s = comb_front(f, T->in, &acc, &m);
        }
        cg_if_end(fn, &h);
        cg_val y;
        if (s == WEFT_OK && (s = cg_mut_get(fn, &m, &y)) == WEFT_OK) {
            sh_put(fn, R, SH_ACC, pack(fn, FLAG_NONE, &y));
        }
        cg_if_end(fn, &l0);
        return s;
    }
    cg_if_begin(fn, &h, flag_get(fn, R->have));
    s = comb_back(f, T->in, &R->acc, &agg);
    cg_if_else(fn, &h);
    cg_mut_set(fn, &R->acc, &agg);
    cg_if_end(fn, &h);
    LLVMBuildStore(fn->b, i1_const(fn, true), R->have);
    cg_if_end(fn, &l0);
    return s;
}

/* Partial slot j of a reduce: a packed word with flag none (entry 1:
 * the scan after it reads it as a tile not yet published) or the
 * aggregates' (the scan writes its own before its flag). */
static LLVMValueRef partial_slot(cg_fn *fn, const tile *T, const reduce_run *R,
                                 LLVMValueRef j)
{
    (void)T;
    if (R->sh) {
        /* from shared memory: a value made before the tile loop would
         * hold a register in it, where the scan needs them all */
        return LLVMBuildAdd(fn->b, sh_get(fn, R, SH_P0), j, "");
    }
    return LLVMBuildAdd(fn->b, R->p0, LLVMBuildMul(fn->b, j, R->pstride, ""),
                        "");
}

static void partial_put(sk_fn *f, const tile *T, const reduce_run *R,
                        LLVMValueRef j, const cg_val *x)
{
    cg_fn *fn = &f->fn;
    if (T->packed) {
        sk_ptx_vstore(fn, WEFT_I64, R->pbase, partial_slot(fn, T, R, j),
                      pack(fn, FLAG_NONE, x));
    } else {
        vstore_val(fn, sk_aux_array(f, AUX_AGG), partial_slot(fn, T, R, j), x);
    }
}

static weft_status partial_get(sk_fn *f, const tile *T, const reduce_run *R,
                               LLVMValueRef j, cg_val *out)
{
    cg_fn *fn = &f->fn;
    if (T->packed) {
        return unpack(
            fn, T->in->elt,
            sk_ptx_vload(fn, WEFT_I64, R->pbase, partial_slot(fn, T, R, j)),
            out);
    }
    return vload_val(fn, sk_aux_array(f, AUX_AGG), partial_slot(fn, T, R, j),
                     out);
}

/* The part's total x into AUX_TOTAL [part] on the context's first
 * device: with a packed status one word, flag P and the value (what
 * parts_before spins on), else the value (read after the join). */
static void total_put(sk_fn *f, const tile *T, const cg_val *x)
{
    cg_fn *fn = &f->fn;
    const cg_array *tot = sk_aux_array(f, AUX_TOTAL);
    if (T->packed) {
        sk_ptx_vstore(fn, WEFT_I64, tot->ptr[0], T->part,
                      pack(fn, FLAG_PREFIX, x));
    } else {
        vstore_val(fn, tot, T->part, x);
    }
}

/* Warp 0 after the last tile of a run: the run's combination into its
 * partial slot (lane 0, where it has one), a fence, a ticket from
 * `counter`; the block with ticket nb - 1 (every other partial in)
 * combines the nb partials in order, lane l a run of ceil(nb / 32) of
 * them, then across the lanes, into the part's total (total_put). */
static weft_status run_done(sk_fn *f, const tile *T, const reduce_run *R,
                            LLVMValueRef counter)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    const lanes *L = &T->L;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(fn->llctx);
    LLVMValueRef zero = cg_i64(fn, 0), one = cg_i64(fn, 1);
    weft_status s;
    LLVMValueRef lane0 = eq(fn, L->lane, zero);
    LLVMValueRef mine =
        R->sh ? lane0 : LLVMBuildAnd(fn->b, lane0, flag_get(fn, R->have), "");
    LLVMValueRef nb = R->sh ? sh_get(fn, R, SH_NB) : R->nb;
    LLVMValueRef tk = cg_alloca(fn, i64, "ticket");
    LLVMBuildStore(fn->b, cg_i64(fn, -1), tk);
    cg_if put;
    cg_if_begin(fn, &put, mine);
    cg_val a;
    s = R->sh ? unpack(fn, T->in->elt, sh_get(fn, R, SH_ACC), &a)
              : cg_mut_get(fn, &R->acc, &a);
    if (s) {
        return s;
    }
    partial_put(f, T, R, R->run, &a);
    tg->fence(fn);
    LLVMBuildStore(fn->b,
                   tg->atomic_rmw(fn, LLVMAtomicRMWBinOpAdd, counter, one), tk);
    cg_if_end(fn, &put);
    LLVMValueRef ticket = tg->shuffle_idx(
        fn, LLVMBuildLoad2(fn->b, i64, tk, ""), i32_const(fn, 0));
    cg_if last;
    cg_if_begin(fn, &last, eq(fn, ticket, LLVMBuildSub(fn->b, nb, one, "")));
    tg->fence(fn);
    LLVMValueRef M = cg_ceil_div(fn, nb, cg_i64(fn, WARP));
    LLVMValueRef j0 = LLVMBuildMul(fn->b, L->lane, M, "");
    LLVMValueRef j1 = cg_smin(fn, LLVMBuildAdd(fn->b, j0, M, ""), nb);
    cg_mut x;
    cg_val z, p, xs, total;
    if ((s = cg_mut_new(fn, T->in->elt, &x)) != WEFT_OK ||
        (s = zero_val(fn, T->in->elt, &z)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &x, &z);
    cg_if any;
    cg_if_begin(fn, &any, lt(fn, j0, j1));
    if ((s = partial_get(f, T, R, j0, &p)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &x, &p);
    /* the rest BATCH at a time, every load of a batch before its
     * combines (clamped to the lane's last: in bounds), so that their
     * latencies overlap: this is the part's total's critical path */
    LLVMValueRef from1 = LLVMBuildAdd(fn->b, j0, one, "");
    cg_loop lp;
    LLVMValueRef q;
    cg_loop_begin(
        fn, &lp, zero,
        cg_ceil_div(fn, LLVMBuildSub(fn->b, j1, from1, ""), cg_i64(fn, BATCH)),
        &q);
    LLVMValueRef jb = LLVMBuildAdd(
        fn->b, from1, LLVMBuildMul(fn->b, q, cg_i64(fn, BATCH), ""), "");
    LLVMValueRef jlast = LLVMBuildSub(fn->b, j1, one, "");
    cg_val pb[BATCH];
    for (int u = 0; u < BATCH; u++) {
        LLVMValueRef ju =
            cg_smin(fn, LLVMBuildAdd(fn->b, jb, cg_i64(fn, u), ""), jlast);
        if ((s = partial_get(f, T, R, ju, &pb[u])) != WEFT_OK) {
            return s;
        }
    }
    for (int u = 0; u < BATCH; u++) {
        cg_if in;
        cg_if_begin(fn, &in,
                    lt(fn, LLVMBuildAdd(fn->b, jb, cg_i64(fn, u), ""), j1));
        s = comb_back(f, T->in, &x, &pb[u]);
        cg_if_end(fn, &in);
        if (s) {
            return s;
        }
    }
    loop_end_rolled(fn, &lp);
    cg_if_end(fn, &any);
    if ((s = lanes_total(f, T->in, L, &x, cg_ceil_div(fn, nb, M), &xs,
                         &total)) != WEFT_OK) {
        return s;
    }
    cg_if st;
    cg_if_begin(fn, &st, lane0);
    total_put(f, T, &total);
    cg_if_end(fn, &st);
    cg_if_end(fn, &last);
    return WEFT_OK;
}

/* Entry 1 after its run (every thread): run_done on warp 0. */
static weft_status reduce_end(sk_fn *f, const tile *T, const reduce_run *R,
                              LLVMValueRef counter)
{
    cg_fn *fn = &f->fn;
    cg_if w0;
    cg_if_begin(fn, &w0, eq(fn, T->L.wid, cg_i64(fn, 0)));
    weft_status s = run_done(f, T, R, counter);
    cg_if_end(fn, &w0);
    return s;
}

/* A fused part (entry 0, packed status): the runs the driver asks for in
 * the kernel's `skip` (0: none, the part's tiles only: one device, the
 * last part, or the reduce in a phase of its own), per = ceil(tiles /
 * asked), the runs nb = ceil(tiles / per) (0 without), their partials
 * after the tile counters in aux 3 (SK_SCAN_RUNS_MAX a part); thread 0
 * puts per, nb and its empty run in shared memory (it alone reads them
 * before the tile loop's first barrier). */
static void fuse_begin(sk_fn *f, const tile *T, reduce_run *R,
                       LLVMValueRef several, LLVMValueRef from)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef zero = cg_i64(fn, 0), one = cg_i64(fn, 1);
    R->sh = fn->target->shared_array(fn, LLVMInt64TypeInContext(fn->llctx),
                                     FUSE_WORDS);
    R->first = from;
    cg_if t0;
    cg_if_begin(fn, &t0, eq(fn, T->L.tid, zero));
    LLVMValueRef asked = LLVMGetParam(fn->fn, 4);
    LLVMValueRef has = LLVMBuildAnd(
        fn->b, several, LLVMBuildICmp(fn->b, LLVMIntSGT, asked, zero, ""),
        "fused");
    LLVMValueRef count = cg_smax(fn, LLVMBuildSub(fn->b, f->n, from, ""), one);
    LLVMValueRef per = cg_ceil_div(fn, count, cg_smax(fn, asked, one));
    sh_put(fn, R, SH_PER, per);
    sh_put(fn, R, SH_NB,
           LLVMBuildSelect(fn->b, has, cg_ceil_div(fn, count, per), zero, ""));
    sh_put(fn, R, SH_NEXT, zero);
    sh_put(fn, R, SH_END, zero);
    sh_put(fn, R, SH_P0,
           LLVMBuildAdd(
               fn->b, cg_i64(fn, 2 * SK_DEVICES_MAX),
               LLVMBuildMul(fn->b, T->part, cg_i64(fn, SK_SCAN_RUNS_MAX), ""),
               ""));
    sh_put(fn, R, SH_TICKET, cg_i64(fn, SK_DEVICES_MAX));
    cg_if_end(fn, &t0);
}

/* Thread 0 of a fused part: the block's next tile into stile, its run
 * into SH_RUN (-1 for a tile of the scan) and the tile's edges of the
 * run into SH_EDGE: the next tile of the run it holds (SH_NEXT <
 * SH_END), else the counter's next item: run c < nb (its tiles [from + c
 * per, ...)), or tile from + c - nb. */
static void fuse_take(sk_fn *f, const reduce_run *R, LLVMValueRef counter,
                      LLVMValueRef stile)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef zero = cg_i64(fn, 0), one = cg_i64(fn, 1);
    LLVMValueRef nx = sh_get(fn, R, SH_NEXT), re = sh_get(fn, R, SH_END);
    LLVMValueRef edge_last =
        LLVMBuildSelect(fn->b, eq(fn, LLVMBuildAdd(fn->b, nx, one, ""), re),
                        cg_i64(fn, EDGE_LAST), zero, "");
    cg_if more;
    cg_if_begin(fn, &more, lt(fn, nx, re));
    LLVMBuildStore(fn->b, nx, stile);
    sh_put(fn, R, SH_RUN, sh_get(fn, R, SH_CUR));
    sh_put(fn, R, SH_EDGE, edge_last);
    sh_put(fn, R, SH_NEXT, LLVMBuildAdd(fn->b, nx, one, ""));
    cg_if_else(fn, &more);
    LLVMValueRef c =
        fn->target->atomic_rmw(fn, LLVMAtomicRMWBinOpAdd, counter, one);
    LLVMValueRef nb = sh_get(fn, R, SH_NB);
    cg_if run;
    cg_if_begin(fn, &run, lt(fn, c, nb));
    LLVMValueRef per = sh_get(fn, R, SH_PER);
    LLVMValueRef a =
        LLVMBuildAdd(fn->b, R->first, LLVMBuildMul(fn->b, c, per, ""), "");
    LLVMValueRef e = cg_smin(fn, LLVMBuildAdd(fn->b, a, per, ""), f->n);
    LLVMValueRef a1 = LLVMBuildAdd(fn->b, a, one, "");
    LLVMBuildStore(fn->b, a, stile);
    sh_put(fn, R, SH_RUN, c);
    sh_put(fn, R, SH_EDGE,
           LLVMBuildOr(fn->b, cg_i64(fn, EDGE_FIRST),
                       LLVMBuildSelect(fn->b, eq(fn, a1, e),
                                       cg_i64(fn, EDGE_LAST), zero, ""),
                       ""));
    sh_put(fn, R, SH_NEXT, a1);
    sh_put(fn, R, SH_END, e);
    sh_put(fn, R, SH_CUR, c);
    cg_if_else(fn, &run);
    LLVMBuildStore(
        fn->b,
        LLVMBuildSub(fn->b, LLVMBuildAdd(fn->b, R->first, c, ""), nb, ""),
        stile);
    sh_put(fn, R, SH_RUN, cg_i64(fn, -1));
    cg_if_end(fn, &run);
    cg_if_end(fn, &more);
}

/* A fused part's run tile (after its reads and the barrier; warp 0
 * works): onto the run, and after the run's last tile run_done (the
 * block's run and edges from shared memory: warp 0 holds thread 0, the
 * only writer, so they are this tile's). */
static weft_status fuse_tile(sk_fn *f, tile *T, reduce_run *R,
                             LLVMValueRef counter)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef zero = cg_i64(fn, 0);
    weft_status s;
    cg_if w0;
    cg_if_begin(fn, &w0, eq(fn, T->L.wid, zero));
    if ((s = tile_fold(f, T, R)) != WEFT_OK) {
        return s;
    }
    R->run = sh_get(fn, R, SH_RUN);
    R->pbase = sk_aux_array(f, AUX_COUNTER)->ptr[0];
    LLVMValueRef at = sh_get(fn, R, SH_TICKET);
    LLVMValueRef ticket = LLVMBuildInBoundsGEP2(
        fn->b, LLVMInt64TypeInContext(fn->llctx), counter, &at, 1, "ticket");
    LLVMValueRef last =
        LLVMBuildAnd(fn->b, sh_get(fn, R, SH_EDGE), cg_i64(fn, EDGE_LAST), "");
    cg_if end;
    cg_if_begin(fn, &end, LLVMBuildNot(fn->b, eq(fn, last, zero), ""));
    if ((s = run_done(f, T, R, ticket)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &end);
    cg_if_end(fn, &w0);
    return WEFT_OK;
}

/* The entry: the blocks take tiles until there are none left.  With
 * `reduce`, entry 1: a part's tiles reduced, not written ("Several
 * devices"). */
static weft_status emit_tiles(sk_fn *f, const scan_info *in, bool reduce)
{
    cg_fn *fn = &f->fn;
    const cg_target *tg = fn->target;
    LLVMContextRef c = fn->llctx;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
    weft_status s;
    tile T;
    memset(&T, 0, sizeof T);
    T.in = in;
    T.K = items_per_lane(fn->ctx, in->elt);
    T.packed = packed_status(fn->ctx, in->elt);
    lanes *L = &T.L;
    L->tid = cg_zext64(fn, tg->thread_index(fn, 0));
    L->lane32 = LLVMBuildAnd(fn->b, tg->thread_index(fn, 0),
                             i32_const(fn, WARP - 1), "lane");
    L->lane = cg_zext64(fn, L->lane32);
    L->wid = LLVMBuildLShr(fn->b, L->tid, cg_i64(fn, 5), "warp");
    L->nwarp = LLVMBuildLShr(fn->b, cg_zext64(fn, tg->block_size(fn, 0)),
                             cg_i64(fn, 5), "nwarp");
    /* rows, tiles per row, tiles */
    LLVMValueRef ext[WEFT_MAX_RANK];
    if ((s = sk_extent(f, in->src, ext)) != WEFT_OK) {
        return s;
    }
    int rank = in->src->rank;
    T.m = ext[rank - 1];
    LLVMValueRef rows = cg_i64(fn, 1);
    for (int d = 0; d < rank - 1; d++) {
        rows = LLVMBuildMul(fn->b, rows, ext[d], "");
    }
    LLVMValueRef zero = cg_i64(fn, 0);
    LLVMValueRef tsize =
        LLVMBuildMul(fn->b, LLVMBuildMul(fn->b, L->nwarp, cg_i64(fn, WARP), ""),
                     cg_i64(fn, T.K), "tile");
    LLVMValueRef empty = LLVMBuildICmp(fn->b, LLVMIntEQ, T.m, zero, "");
    /* ceil(m / tsize) as ceil(ceil(m / 32 K) / nwarp): a constant divisor
     * (a multiplication), then a small one */
    LLVMValueRef span = cg_i64(fn, (int64_t)WARP * T.K);
    LLVMValueRef chunks = cg_ceil_udiv(fn, T.m, span);
    LLVMValueRef tpr = cg_ceil_div_small(fn, chunks, L->nwarp);
    T.tpr = LLVMBuildSelect(fn->b, empty, cg_i64(fn, 1), tpr, "tpr");
    LLVMValueRef total = LLVMBuildMul(fn->b, rows, T.tpr, "");
    if (!in->seeded) {
        total = LLVMBuildSelect(fn->b, empty, zero, total, "");
    }
    /* shared memory */
    if ((s = cg_mut_new(fn, in->elt, &T.pre)) != WEFT_OK) {
        return s;
    }
    int nleaf = T.pre.n;
    T.wt = fe_arena_alloc(fn->arena, sizeof *T.wt * (size_t)(nleaf + 1));
    T.wp = fe_arena_alloc(fn->arena, sizeof *T.wp * (size_t)(nleaf + 1));
    T.buf = fe_arena_alloc(fn->arena, sizeof *T.buf * (size_t)(nleaf + 1));
    if (!T.wt || !T.wp || !T.buf) {
        return fe_oom("weft_compile");
    }
    int64_t area = (int64_t)WARP * T.K + T.K;
    for (int l = 0; l < nleaf; l++) {
        LLVMTypeRef mt = cg_mem_type(c, T.pre.leaf[l]);
        T.wt[l] = tg->shared_array(fn, mt, MAX_WARPS);
        T.wp[l] = tg->shared_array(fn, mt, MAX_WARPS);
        T.buf[l] = tg->shared_array(fn, mt, BLOCK / WARP * area);
    }
    T.wpv = tg->shared_array(fn, LLVMInt8TypeInContext(c), MAX_WARPS);
    T.wbase = LLVMBuildMul(fn->b, L->wid, cg_i64(fn, area), "wbase");
    /* the tile loop: thread 0 takes the next tile and hands it over
     * through shared memory.  Only when the block is free: a tile taken
     * early (say at the start of the block's previous one, to hide the
     * atomic) starts late, after tiles taken after it, which then wait
     * for it in their look-back (tried: 2.2 ms for 2^28 i32 on an H200,
     * most of it warps at barriers) */
    LLVMValueRef stile = tg->shared_array(fn, i64, 1);
    /* one device: tiles [0, total); a part of a row over several
     * (grain 2 + d): tiles [first, n) by the part's own counter; a
     * reduce's block its own run of them (reduce_run); a fused part its
     * runs first (fuse_begin) */
    LLVMValueRef several =
        LLVMBuildICmp(fn->b, LLVMIntSGE, f->grain, cg_i64(fn, 2), "several");
    LLVMValueRef part = LLVMBuildSelect(
        fn->b, several, LLVMBuildSub(fn->b, f->grain, cg_i64(fn, 2), ""), zero,
        "part");
    LLVMValueRef from = LLVMBuildSelect(fn->b, several, f->first, zero, "");
    total = LLVMBuildSelect(fn->b, several, f->n, total, "");
    T.part = part;
    LLVMValueRef slot_at =
        reduce ? LLVMBuildAdd(fn->b, part, cg_i64(fn, SK_DEVICES_MAX), "")
               : part;
    LLVMValueRef counter = LLVMBuildInBoundsGEP2(
        fn->b, i64, sk_aux_array(f, AUX_COUNTER)->ptr[0], &slot_at, 1, "");
    reduce_run R;
    memset(&R, 0, sizeof R);
    if (reduce && (s = reduce_begin(f, &T, &R)) != WEFT_OK) {
        return s;
    }
    bool fused = !reduce && T.packed;
    if (fused) {
        fuse_begin(f, &T, &R, several, from);
    }
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(c, fn->fn, "tile");
    LLVMBasicBlockRef body =
        LLVMAppendBasicBlockInContext(c, fn->fn, "tile.body");
    LLVMBasicBlockRef exit =
        LLVMAppendBasicBlockInContext(c, fn->fn, "tile.end");
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, head);
    LLVMValueRef isrun = NULL; /* fused: i1, the tile is a run's */
    if (reduce) {
        /* the next of the block's run (the barrier: the shared memory
         * warp 0 read for the last one) */
        tg->barrier(fn);
        T.t = LLVMBuildLoad2(fn->b, i64, R.next, "t");
        LLVMBuildStore(fn->b, LLVMBuildAdd(fn->b, T.t, cg_i64(fn, 1), ""),
                       R.next);
        total = R.end;
    } else {
        cg_if t0;
        cg_if_begin(fn, &t0, eq(fn, L->tid, zero));
        if (fused) {
            fuse_take(f, &R, counter, stile);
        } else {
            LLVMBuildStore(
                fn->b,
                LLVMBuildAdd(fn->b, from,
                             tg->atomic_rmw(fn, LLVMAtomicRMWBinOpAdd, counter,
                                            cg_i64(fn, 1)),
                             ""),
                stile);
        }
        cg_if_end(fn, &t0);
        tg->barrier(fn);
        T.t = LLVMBuildLoad2(fn->b, i64, stile, "t");
        if (fused) {
            isrun = LLVMBuildICmp(fn->b, LLVMIntSGE, sh_get(fn, &R, SH_RUN),
                                  zero, "isrun");
        }
    }
    LLVMBuildCondBr(fn->b, lt(fn, T.t, total), body, exit);
    LLVMPositionBuilderAtEnd(fn->b, body);
    if (rank == 1) {
        /* one row: no division per tile */
        T.row = zero;
        T.q = T.t;
    } else {
        T.row = LLVMBuildSDiv(fn->b, T.t, T.tpr, "row");
        T.q = LLVMBuildSub(fn->b, T.t, LLVMBuildMul(fn->b, T.row, T.tpr, ""),
                           "q");
    }
    T.start = LLVMBuildAnd(fn->b, several, eq(fn, T.t, from), "start");
    if (fused) {
        T.start = LLVMBuildAnd(fn->b, T.start, LLVMBuildNot(fn->b, isrun, ""),
                               "start");
    }
    T.lo = LLVMBuildMul(fn->b, T.q, tsize, "lo");
    T.hi = cg_smin(fn, LLVMBuildAdd(fn->b, T.lo, tsize, ""), T.m);
    T.seg = LLVMBuildAdd(
        fn->b, T.lo,
        LLVMBuildMul(fn->b, L->wid, cg_i64(fn, (int64_t)WARP * T.K), ""),
        "seg");
    T.whole = LLVMBuildICmp(
        fn->b, LLVMIntSLE,
        LLVMBuildAdd(fn->b, T.seg, cg_i64(fn, (int64_t)WARP * T.K), ""), T.hi,
        "whole");
    sk_row sr;
    if ((s = sk_row_begin(f, in->src, ext, T.row,
                          LLVMBuildMul(fn->b, T.row, T.m, ""), false, &sr)) !=
            WEFT_OK ||
        (s = warp_chunks(f, &T, &sr)) != WEFT_OK) {
        return s;
    }
    tg->barrier(fn);
    cg_if red;
    if (fused) {
        cg_if_begin(fn, &red, isrun);
        if ((s = fuse_tile(f, &T, &R, counter)) != WEFT_OK) {
            return s;
        }
        cg_if_else(fn, &red);
    }
    cg_if w0;
    cg_if_begin(fn, &w0, eq(fn, L->wid, zero));
    if ((s = reduce ? tile_fold(f, &T, &R) : tile_prefix(f, &T)) != WEFT_OK) {
        return s;
    }
    cg_if_end(fn, &w0);
    if (!reduce) {
        tg->barrier(fn);
        if ((s = tile_write(f, &T)) != WEFT_OK) {
            return s;
        }
    }
    if (fused) {
        cg_if_end(fn, &red);
    }
    LLVMBuildBr(fn->b, head);
    LLVMPositionBuilderAtEnd(fn->b, exit);
    return reduce ? reduce_end(f, &T, &R, counter) : WEFT_OK;
}

/* Launch bounds (!nvvm.annotations beside the target's "kernel"): blocks
 * of at most BLOCK threads (.maxntid; the driver's block_max is the same)
 * and MIN_BLOCKS of them resident per SM (.minnctapersm), which bounds
 * ptxas to 64K / (MIN_BLOCKS BLOCK) registers a thread. */
static void launch_bounds(cg_fn *fn)
{
    cg_ptx_launch_bounds(fn, BLOCK, MIN_BLOCKS);
}

static weft_status ptx_scan_emit(sk_emit *e, const char *const *names)
{
    scan_info in = sk_scan_info_of(e->k->op);
    sk_fn f;
    weft_status s = sk_fn_begin_raw(e, &f, names[0]);
    if (s == WEFT_OK) {
        if (packed_status(f.fn.ctx, in.elt)) {
            launch_bounds(&f.fn);
        }
        s = emit_tiles(&f, &in, false);
    }
    if (s) {
        return s;
    }
    sk_fn_end(&f);
    if ((s = sk_fn_begin_raw(e, &f, names[1])) != WEFT_OK) {
        return s;
    }
    if (packed_status(f.fn.ctx, in.elt)) {
        launch_bounds(&f.fn);
    }
    if ((s = emit_tiles(&f, &in, true)) != WEFT_OK) {
        return s;
    }
    sk_fn_end(&f);
    return WEFT_OK;
}

const sk_skeleton sk_ptx_scan = {
    .name = "ptx-scan",
    .family = SK_SCAN_PASS,
    .supported = sk_scan_supported,
    .prepare = ptx_scan_prepare,
    .emit = ptx_scan_emit,
    .fuses_input = true,
};
