/*
 * skeletons-ir/fold.c: fold and fold1 along the innermost dimension
 * (foldAll is a fold of the array reshaped to one row).
 *
 * The input is `rows` rows of m elements; the result has one element per
 * row.  Two strategies, chosen at run time by the driver:
 *
 *   entry 0, whole rows (many rows): one iteration per row,
 *       acc = z (fold) or row[0] (fold1); acc = f(acc, row[j]) for the rest.
 *       Empty for an input of rank 1 (SK_FOLD_CHUNKS_ONLY: its one row
 *       always goes by chunks, which halves the fold's compile time).
 *   entries 1 and 2, chunked rows (few, long rows: foldAll):
 *       1: over rows * C chunks, each chunk's fold1 into partial[c]
 *          (chunks are never empty: the driver keeps C <= m);
 *       2: over rows, acc = z (or partial 0) combined with the row's
 *          partials left to right.
 *
 * The seed enters once per result, on the left, as Accelerate says.  The
 * combine function is applied with the reassoc fast-math flag over the
 * elements of a row (entries 0 and 1): the user declared it associative,
 * and that lets LLVM vectorise the inner loop of a floating-point sum.
 * Entry 2 combines a row's few partials in order, without the flag: a
 * vector loop there would cost compile time and gain nothing.  Aux items: 0 the partials (rank 1, the element
 * type), 1 the number of chunks per row C (i64).
 *
 * A fold that took in the map after it (lib/fuse.c, the store rule)
 * works in its combine's type (the partials too, fe_fold_type) and
 * applies the map's function to each result as it stores it
 * (sk_fold_put).
 */
#include "sk.h"

void sk_fold_chunks_only(sk_kernel *k)
{
    const fe_term *op = k->op;
    if (op->kid[op->kind == FE_FOLD ? 1 : 0]->rank == 1) {
        k->flags |= SK_FOLD_CHUNKS_ONLY;
    }
}

weft_status sk_add_chunk_items(weft_context *ctx, fe_arena *arena, sk_kernel *k,
                               weft_type elt)
{
    weft_status s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 0, elt, 1);
    if (s) {
        return s;
    }
    k->aux_item[0] = k->nitem - 1;
    s = sk_add_item(ctx, arena, k, SK_SCALAR, SK_SRC_AUX, 1, WEFT_I64, 0);
    k->aux_item[1] = k->nitem - 1;
    return s;
}

weft_status sk_mut_store(sk_fn *f, const cg_mut *acc, const cg_array *a,
                         LLVMValueRef i)
{
    cg_val y;
    weft_status s = cg_mut_get(&f->fn, acc, &y);
    if (s == WEFT_OK) {
        cg_array_store(&f->fn, a, i, &y);
    }
    return s;
}

weft_status sk_fold_put(sk_fn *f, LLVMValueRef i, const cg_val *y)
{
    const fe_fun *post = fe_fold_post(f->e->k->op);
    cg_val z;
    weft_status s = post ? cg_apply(&f->fn, post, y, &z) : WEFT_OK;
    if (s == WEFT_OK) {
        cg_array_store(&f->fn, sk_out_array(f, 0), i, post ? &z : y);
    }
    return s;
}

static weft_status fold_prepare(weft_context *ctx, fe_arena *arena,
                                sk_kernel *k)
{
    k->nentry = 3;
    sk_fold_chunks_only(k);
    return sk_add_chunk_items(ctx, arena, k, fe_fold_type(k->op));
}

weft_status sk_row_begin(sk_fn *f, const fe_term *src, LLVMValueRef *ext,
                         LLVMValueRef row, LLVMValueRef base, bool rank1,
                         sk_row *rw)
{
    rw->src = src;
    rw->base = base;
    rw->by_index = src && (rank1 || src->rank > 1) && !sk_linear_ok(f, src);
    if (!rw->by_index) {
        return WEFT_OK;
    }
    weft_status s = cg_val_make(&f->fn, src->rank, &rw->ix);
    if (s == WEFT_OK && src->rank > 1) {
        cg_from_index(&f->fn, src->rank - 1, ext, row, rw->ix.v);
    }
    return s;
}

/* The element of the row whose innermost index is inner (by_index). */
static weft_status row_index_read(sk_fn *f, const sk_row *rw,
                                  LLVMValueRef inner, cg_val *out)
{
    cg_val ix;
    weft_status s = cg_val_make(&f->fn, rw->ix.n, &ix);
    if (s) {
        return s;
    }
    for (int d = 0; d < ix.n - 1; d++) {
        ix.v[d] = rw->ix.v[d];
    }
    ix.v[ix.n - 1] = inner;
    return sk_read(f, rw->src, NULL, &ix, out);
}

weft_status sk_row_read(sk_fn *f, const sk_row *rw, LLVMValueRef j, cg_val *out)
{
    if (!rw->by_index) {
        return sk_read(f, rw->src, j, NULL, out);
    }
    return row_index_read(f, rw, LLVMBuildSub(f->fn.b, j, rw->base, ""), out);
}

weft_status sk_row_read_in(sk_fn *f, const sk_row *rw, LLVMValueRef k,
                           cg_val *out)
{
    if (!rw->by_index) {
        return sk_read(f, rw->src, LLVMBuildAdd(f->fn.b, rw->base, k, ""), NULL,
                       out);
    }
    return row_index_read(f, rw, k, out);
}

/* acc = f(acc, element j) over [lo, hi) in one loop (scalar: a short
 * remainder, emitted cold: left alone by the vectorisers and irce); acc
 * is a mutable variable; the elements are src's (the input term, read
 * through rw: it may be fused) or, when src is NULL, the partials part's. */
static weft_status fold_loop(sk_fn *f, const cg_mut *acc, const fe_term *src,
                             const cg_array *part, const sk_row *rw,
                             LLVMValueRef lo, LLVMValueRef hi, bool scalar)
{
    cg_fn *fn = &f->fn;
    const fe_fun *comb = f->e->k->op->fun[0];
    cg_loop l;
    LLVMValueRef j;
    cg_val args[2], y;
    bool was = fn->cold;
    fn->cold = scalar; /* a short remainder */
    cg_loop_begin(fn, &l, lo, hi, &j);
    weft_status s = cg_mut_get(fn, acc, &args[0]);
    if (s == WEFT_OK) {
        s = src ? sk_row_read(f, rw, j, &args[1])
                : cg_array_load(fn, part, j, &args[1]);
    }
    if (s == WEFT_OK) {
        /* reassoc lets LLVM vectorise a sum over a row; the few partials
         * of a row (entry 2) are combined in order, in scalar code */
        fn->fmf = src ? LLVMFastMathAllowReassoc : 0;
        s = cg_apply(fn, comb, args, &y);
        fn->fmf = 0;
    }
    if (s == WEFT_OK) {
        cg_mut_set(fn, acc, &y);
    }
    fn->cold = was;
    cg_loop_end(fn, &l);
    return s;
}

/* Elements of an input row in the loop the vectoriser widens: a multiple
 * of FOLD_BLOCK.  LLVM gives a vector loop whose trip count it cannot
 * divide a vector epilogue and a scalar remainder; for a multiple of
 * FOLD_BLOCK (16 lanes of f32 times 4 accumulators) it needs neither, and
 * the rest, fewer than FOLD_BLOCK elements, is a plain scalar loop: less
 * code to compile (dotp: 330 -> 281 lines of x86 assembly, its first
 * compile in a process 15.3 -> 14.9 ms on the development machine). */
#define FOLD_BLOCK 64

static weft_status fold_range(sk_fn *f, const cg_mut *acc, const fe_term *src,
                              const cg_array *part, const sk_row *rw,
                              LLVMValueRef lo, LLVMValueRef hi)
{
    cg_fn *fn = &f->fn;
    if (!src) {
        return fold_loop(f, acc, NULL, part, rw, lo, hi, false);
    }
    /* SPMD hook (spmd.c): costly elements W at a time, then the rest */
    LLVMValueRef rest = lo;
    weft_status s =
        sk_spmd_fold_range(f, acc, src, rw && rw->by_index ? &rw->ix : NULL,
                           rw ? rw->base : NULL, lo, hi, &rest);
    if (s) {
        return s;
    }
    if (rest != lo) { /* the SPMD loop took the elements: the rest is short */
        return fold_loop(f, acc, src, NULL, rw, rest, hi, true);
    }
    LLVMValueRef len = LLVMBuildSub(fn->b, hi, lo, "");
    LLVMValueRef mid = LLVMBuildAdd(
        fn->b, lo,
        LLVMBuildAnd(fn->b, len, cg_i64(fn, -(int64_t)FOLD_BLOCK), ""), "");
    if ((s = fold_loop(f, acc, src, NULL, rw, lo, mid, false)) != WEFT_OK) {
        return s;
    }
    return fold_loop(f, acc, src, NULL, rw, mid, hi, true);
}

void sk_chunk_bounds(sk_fn *f, LLVMValueRef c, LLVMValueRef C, LLVMValueRef m,
                     LLVMValueRef *row, LLVMValueRef *q, LLVMValueRef *base_out,
                     LLVMValueRef *lo, LLVMValueRef *hi)
{
    cg_fn *fn = &f->fn;
    *row = LLVMBuildSDiv(fn->b, c, C, "");
    *q = LLVMBuildSRem(fn->b, c, C, "");
    LLVMValueRef base = LLVMBuildMul(fn->b, *row, m, "");
    *base_out = base;
    /* piece q covers [q*m/C, (q+1)*m/C) of its row */
    LLVMValueRef a =
        LLVMBuildSDiv(fn->b, LLVMBuildMul(fn->b, *q, m, ""), C, "");
    LLVMValueRef q1 = LLVMBuildAdd(fn->b, *q, cg_i64(fn, 1), "");
    LLVMValueRef b =
        LLVMBuildSDiv(fn->b, LLVMBuildMul(fn->b, q1, m, ""), C, "");
    *lo = LLVMBuildAdd(fn->b, base, a, "");
    *hi = LLVMBuildAdd(fn->b, base, b, "");
}

/* Entry `entry` (the head comment's 0, 1 or 2): for each i in [start,
 * end), one fold of a range [lo, hi) stored at i: entry 0 row i of the
 * input, from z (fold) or its first element; entry 1 chunk i (row i / C,
 * piece i % C) from its first element, into the partials; entry 2 the C
 * partials of row i, from z or the first of them. */
static weft_status emit_entry(sk_fn *f, bool has_seed, int entry)
{
    cg_fn *fn = &f->fn;
    const fe_term *src = entry < 2 ? f->e->k->op->kid[has_seed ? 1 : 0] : NULL;
    const cg_array *part = entry > 0 ? sk_aux_array(f, 0) : NULL;
    const cg_array *dst = entry == 1 ? part : sk_out_array(f, 0);
    LLVMValueRef C = entry > 0 ? sk_aux_value(f, 1)->v[0] : NULL;
    LLVMValueRef ext[WEFT_MAX_RANK], m = C;
    weft_status s;
    if (src) {
        if ((s = sk_extent(f, src, ext)) != WEFT_OK) {
            return s;
        }
        m = ext[src->rank - 1];
    }
    cg_mut acc;
    if ((s = cg_mut_new(fn, fe_fold_type(f->e->k->op), &acc)) != WEFT_OK) {
        return s;
    }
    cg_loop l;
    LLVMValueRef i, row = NULL, q, base, lo, hi = NULL;
    cg_loop_begin(fn, &l, f->start, f->end, &i);
    if (entry == 1) {
        sk_chunk_bounds(f, i, C, m, &row, &q, &base, &lo, &hi);
    } else {
        row = i;
        base = LLVMBuildMul(fn->b, i, m, "");
        lo = base;
    }
    sk_row rw;
    if (src &&
        (s = sk_row_begin(f, src, ext, row, base, true, &rw)) != WEFT_OK) {
        return s;
    }
    LLVMValueRef first = lo;
    if (has_seed && entry != 1) {
        cg_mut_set(fn, &acc, sk_kid_value(f, 0));
    } else {
        cg_val x0;
        if ((s = src ? sk_row_read(f, &rw, lo, &x0)
                     : cg_array_load(fn, part, lo, &x0)) != WEFT_OK) {
            return s;
        }
        cg_mut_set(fn, &acc, &x0);
        first = LLVMBuildAdd(fn->b, lo, cg_i64(fn, 1), "");
    }
    if (!hi) {
        hi = LLVMBuildAdd(fn->b, base, m, "");
    }
    if ((s = fold_range(f, &acc, src, part, src ? &rw : NULL, first, hi)) !=
        WEFT_OK) {
        return s;
    }
    cg_val y;
    if ((s = cg_mut_get(fn, &acc, &y)) != WEFT_OK) {
        return s;
    }
    if (entry == 1) {
        cg_array_store(fn, dst, i, &y);
    } else if ((s = sk_fold_put(f, i, &y)) != WEFT_OK) {
        return s;
    }
    cg_loop_end(fn, &l);
    return WEFT_OK;
}

static weft_status emit_rows(sk_fn *f, bool has_seed)
{
    return emit_entry(f, has_seed, 0);
}

static weft_status emit_chunks(sk_fn *f, bool has_seed)
{
    return emit_entry(f, has_seed, 1);
}

static weft_status emit_combine(sk_fn *f, bool has_seed)
{
    return emit_entry(f, has_seed, 2);
}

weft_status sk_fold_entry(sk_emit *e, const char *name, bool raw, bool empty,
                          weft_status (*emit)(sk_fn *, bool), bool has_seed)
{
    sk_fn f;
    weft_status s =
        raw ? sk_fn_begin_raw(e, &f, name) : sk_fn_begin(e, &f, name);
    if (s == WEFT_OK && !empty) {
        s = emit(&f, has_seed);
    }
    if (s == WEFT_OK) {
        sk_fn_end(&f);
    }
    return s;
}

static weft_status fold_emit(sk_emit *e, const char *const *names)
{
    bool has_seed = e->k->op->kind == FE_FOLD;
    weft_status (*const emit[3])(sk_fn *, bool) = {emit_rows, emit_chunks,
                                                   emit_combine};
    for (int i = 0; i < 3; i++) {
        bool empty = i == 0 && (e->k->flags & SK_FOLD_CHUNKS_ONLY);
        bool done = false;
        /* SPMD hook (spmd.c): short rows W at a time, across rows */
        weft_status s =
            i == 0 && !empty
                ? sk_spmd_fold_rows(e, names[0], has_seed, FOLD_BLOCK - 1,
                                    emit_rows, &done)
                : WEFT_OK;
        if (s) {
            return s;
        }
        if (done) {
            continue;
        }
        if ((s = sk_fold_entry(e, names[i], false, empty, emit[i], has_seed)) !=
            WEFT_OK) {
            return s;
        }
    }
    return WEFT_OK;
}

bool sk_fold_supported(const fe_term *t)
{
    return t->atype->narrays == 1;
}

const sk_skeleton sk_fold = {
    .name = "fold",
    .family = SK_FOLD,
    .supported = sk_fold_supported,
    .prepare = fold_prepare,
    .emit = fold_emit,
    .fuses_input = true,
};
