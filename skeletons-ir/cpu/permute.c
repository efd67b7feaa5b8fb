/*
 * skeletons-ir/cpu/permute.c: permute on the CPU, with a private copy of
 * a small result per chunk of sources (the CPU target's own SK_PERMUTE
 * skeleton).
 *
 * The contract is permute.c's, for the same host driver
 * (runtime/exec_permute.c): entry 0 the atomic loop, entry 1 the plain
 * one and, with a fused default, the default's entry last, all emitted by
 * the shared skeleton.  When the combine is one native atomic a leaf
 * (PERMUTE_RMW: add, min, max, and, or, xor on integers; add on floats;
 * or a tuple of such, componentwise), the kernel has two more entries
 * before the default's, and
 * k->private_parts says so:
 *
 *   entry 2, over chunks c of [0, C) (S sources a chunk, aux 2; the copies
 *   `stride` elements apart, aux 3):
 *       part[c][b] = identity                  for every bin b (each
 *                                              leaf its op's)
 *       for i in [c S, min(n, (c + 1) S)):     permute.c's step, with a
 *           plain update of part[c] (the output's extents) for out
 *   entry 3, over the output's positions b (C copies, aux 4):
 *       out[b] = f(part[C-1][b], ... f(part[1][b], f(part[0][b], out[b])))
 *
 * Why: k-means' permute (+) of 2^22 points into 16 clusters, every update
 * an atomic add on one of two cache lines, which all the cores fight
 * over; here each chunk's updates are plain ones in a copy of its own,
 * and the output sees C S-source copies combined once.  The driver uses
 * it for a small result (the copies cost little beside their sources)
 * and picks S from the number of sources and the size of the result
 * only, never from the workers: the order of every combine is fixed, so
 * a float sum comes out the same bits on every run and every number of
 * threads.  It is not the interpreter's order (one source after the
 * other): a float add differs from it by rounding, as the atomic loop's
 * does; the integer operations, min and max give the interpreter's
 * result exactly.  The identity (sk_permute_identity) changes nothing
 * it is combined with, -0.0 for a float add, so bins a chunk never
 * touches leave the output as it was, bit for bit.
 *
 * `ignore` targets and targets outside the result behave as in
 * permute.c, whose step this is (a chunk's copy has the output's
 * extents).
 */
#include "../sk.h"

enum {
    PARTS_VERSION = 1 /* of entries 2 and 3 (k->flags bits 8-11, the key) */
};

static weft_status cpu_permute_prepare(weft_context *ctx, fe_arena *arena,
                                       sk_kernel *k)
{
    weft_status s = sk_permute.prepare(ctx, arena, k);
    LLVMAtomicRMWBinOp ops[SK_PERMUTE_LEAVES_MAX];
    if (s || sk_permute_rmw_ops(k->op, ops) == 0) {
        return s;
    }
    /* entries 2 and 3, before the default's entry (still the last one) */
    k->nentry += 2;
    k->private_parts = true;
    k->flags |= (unsigned)PARTS_VERSION << 8;
    s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 1, k->op->type, 1);
    k->aux_item[1] = k->nitem - 1;
    for (int a = 2; s == WEFT_OK && a <= 4; a++) {
        s = sk_add_item(ctx, arena, k, SK_SCALAR, SK_SRC_AUX, a, WEFT_I64, 0);
        k->aux_item[a] = k->nitem - 1;
    }
    return s;
}

/* The copy of chunk c: the output's array with its pointers at c stride
 * of the copies (each leaf's). */
static weft_status part_of(sk_fn *f, LLVMValueRef c, cg_array *copy)
{
    cg_fn *fn = &f->fn;
    const cg_array *out = sk_out_array(f, 0);
    const cg_array *part = sk_aux_array(f, 1);
    LLVMValueRef stride = sk_aux_value(f, 3)->v[0];
    *copy = *out;
    copy->ptr =
        fe_arena_alloc(fn->arena, sizeof *copy->ptr * (size_t)out->nleaf);
    if (!copy->ptr) {
        return fe_oom("weft_compile");
    }
    LLVMValueRef off = LLVMBuildMul(fn->b, c, stride, "");
    for (int l = 0; l < out->nleaf; l++) {
        copy->ptr[l] =
            LLVMBuildInBoundsGEP2(fn->b, cg_mem_type(fn->llctx, out->leaf[l]),
                                  part->ptr[l], &off, 1, "part");
    }
    return WEFT_OK;
}

/* Entry 2: each chunk's sources into its own copy (head comment). */
static weft_status emit_parts(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef b = fn->b;
    const fe_term *t = f->e->k->op;
    LLVMAtomicRMWBinOp ops[SK_PERMUTE_LEAVES_MAX];
    const cg_array *out = sk_out_array(f, 0);
    if (sk_permute_rmw_ops(t, ops) != out->nleaf) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: permute: the combine is not atomic");
    }
    LLVMValueRef S = sk_aux_value(f, 2)->v[0];
    LLVMValueRef sext[WEFT_MAX_RANK];
    weft_status s = sk_permute_begin(f, sext);
    if (s) {
        return s;
    }
    LLVMValueRef n = sk_permute_source_size(f, sext);
    LLVMValueRef bins = sk_size(f, out);
    cg_loop cl;
    LLVMValueRef c;
    cg_loop_begin(fn, &cl, f->start, f->end, &c);
    cg_array copy;
    if ((s = part_of(f, c, &copy)) != WEFT_OK) {
        return s;
    }
    cg_loop il;
    LLVMValueRef i;
    cg_loop_begin(fn, &il, cg_i64(fn, 0), bins, &i);
    for (int l = 0; l < out->nleaf; l++) {
        cg_store(fn, out->leaf[l], copy.ptr[l], i,
                 sk_permute_identity(fn, ops[l], out->leaf[l]));
    }
    cg_loop_end(fn, &il);
    LLVMValueRef lo = LLVMBuildMul(b, c, S, "lo");
    LLVMValueRef hi = LLVMBuildAdd(b, lo, S, "");
    hi = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, hi, n, ""), hi, n,
                         "hi");
    cg_loop_begin(fn, &il, lo, hi, &i);
    sk_permute_assume_inside(f, i, n);
    s = sk_permute_step(f, &copy, sext, i, sk_permute_update_plain);
    cg_loop_end(fn, &il);
    cg_loop_end(fn, &cl);
    return s;
}

/* Entry 3: out[b] combined with every chunk's copy of b, in order. */
static weft_status emit_combine(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_array *out = sk_out_array(f, 0);
    LLVMValueRef C = sk_aux_value(f, 4)->v[0];
    cg_mut acc;
    weft_status s = cg_mut_new(fn, f->e->k->op->type, &acc);
    if (s) {
        return s;
    }
    cg_loop bl;
    LLVMValueRef bin;
    cg_loop_begin(fn, &bl, f->start, f->end, &bin);
    cg_val y;
    if ((s = cg_array_load(fn, out, bin, &y)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &acc, &y);
    cg_loop cl;
    LLVMValueRef c;
    cg_loop_begin(fn, &cl, cg_i64(fn, 0), C, &c);
    cg_array copy;
    cg_val args[2];
    if ((s = part_of(f, c, &copy)) != WEFT_OK ||
        (s = cg_array_load(fn, &copy, bin, &args[0])) != WEFT_OK ||
        (s = cg_mut_get(fn, &acc, &args[1])) != WEFT_OK ||
        (s = cg_apply(fn, f->e->k->op->fun[0], args, &y)) != WEFT_OK) {
        return s;
    }
    cg_mut_set(fn, &acc, &y);
    cg_loop_end(fn, &cl);
    if ((s = cg_mut_get(fn, &acc, &y)) != WEFT_OK) {
        return s;
    }
    cg_array_store(fn, out, bin, &y);
    cg_loop_end(fn, &bl);
    return WEFT_OK;
}

static weft_status cpu_permute_emit(sk_emit *e, const char *const *names)
{
    weft_status s = sk_permute.emit(e, names);
    if (s || !e->k->private_parts) {
        return s;
    }
    weft_status (*const emit[2])(sk_fn *) = {emit_parts, emit_combine};
    for (int k = 0; k < 2; k++) {
        sk_fn f;
        if ((s = sk_fn_begin(e, &f, names[2 + k])) != WEFT_OK) {
            return s;
        }
        if ((s = emit[k](&f)) != WEFT_OK) {
            /* close the half-built function; the module is thrown away */
            LLVMBuildUnreachable(f.fn.b);
            cg_fn_end(&f.fn);
            return s;
        }
        sk_fn_end(&f);
    }
    return WEFT_OK;
}

static bool cpu_permute_supported(const fe_term *t)
{
    return sk_permute.supported(t);
}

const sk_skeleton sk_cpu_permute = {
    .name = "cpu-permute",
    .family = SK_PERMUTE,
    .supported = cpu_permute_supported,
    .prepare = cpu_permute_prepare,
    .emit = cpu_permute_emit,
    .fuses_input = true,
};
