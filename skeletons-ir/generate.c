/*
 * skeletons-ir/generate.c: the producers that compute each element of
 * their result independently: generate, map, zipWith, backpermute and
 * transform.
 *
 * One entry point runs over linear positions [start, end) of the result:
 *
 *     for (i = start; i < end; i++) out[i] = element(i);
 *
 * map reads its input at the same linear position, so its loop is a plain
 * streaming loop that LLVM vectorises.  zipWith does the same when its
 * operands have one shape (the common case; the driver says so in aux 0),
 * and otherwise goes through the multi-index, since the result's extent is
 * the intersection.  generate, backpermute and transform need the
 * multi-index of i.  backpermute and transform check that the index they
 * gather from is inside the source; an index outside sets the error word
 * (aux 0) instead of reading, and the driver reports
 * WEFT_ERR_OUT_OF_BOUNDS.
 */
#include "sk.h"

static weft_status generate_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    weft_status s = WEFT_OK;
    k->nentry = 1;
    switch ((fe_kind)k->op->kind) {
    case FE_ZIPWITH:
        s = sk_add_item(ctx, arena, k, SK_SCALAR, SK_SRC_AUX, 0, WEFT_I64, 0);
        k->aux_item[0] = k->nitem - 1;
        break;
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
        s = sk_add_item(ctx, arena, k, SK_ARRAY, SK_SRC_AUX, 0, WEFT_I64, 1);
        k->aux_item[0] = k->nitem - 1;
        break;
    default:
        break;
    }
    return s;
}

/* The zipWith element at linear position i of the result: operands read at
 * i (same shapes) or at the multi-index of i (general). */
static weft_status zip_element(sk_fn *f, bool general, LLVMValueRef i,
                               cg_val *y)
{
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    const cg_array *out = sk_out_array(f, 0);
    cg_val x[3], ix;
    weft_status s = WEFT_OK;
    if (general && (s = sk_from_linear(f, out->rank, out->extent, i, &ix))) {
        return s;
    }
    for (int k = 0; k < t->nkid && k < 3; k++) {
        const cg_array *a = sk_kid_array(f, k);
        LLVMValueRef j = general ? cg_to_index(fn, a->rank, a->extent, ix.v) : i;
        if ((s = cg_array_load(fn, a, j, &x[k])) != WEFT_OK) {
            return s;
        }
    }
    return cg_apply(fn, t->fun[0], x, y);
}

/* One loop over [start, end) storing element(i). */
static weft_status zip_loop(sk_fn *f, bool general)
{
    cg_fn *fn = &f->fn;
    cg_loop l;
    LLVMValueRef i;
    cg_val y;
    cg_loop_begin(fn, &l, f->start, f->end, &i);
    weft_status s = zip_element(f, general, i, &y);
    if (s == WEFT_OK) {
        cg_array_store(fn, sk_out_array(f, 0), i, &y);
    }
    cg_loop_end(fn, &l);
    return s;
}

static weft_status emit_zipwith(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef flag = sk_aux_value(f, 0)->v[0];
    cg_if c;
    cg_if_begin(fn, &c, LLVMBuildICmp(fn->b, LLVMIntNE, flag, cg_i64(fn, 0), ""));
    weft_status s = zip_loop(f, true);
    cg_if_else(fn, &c);
    if (s == WEFT_OK) {
        s = zip_loop(f, false);
    }
    cg_if_end(fn, &c);
    return s;
}

/* backpermute / transform: gather from the source at ix(multi-index i). */
static weft_status gather_element(sk_fn *f, LLVMValueRef i)
{
    cg_fn *fn = &f->fn;
    const fe_term *t = f->e->k->op;
    const cg_array *out = sk_out_array(f, 0);
    const cg_array *src = sk_kid_array(f, 1);
    cg_val ix, jx, x, y;
    weft_status s = sk_from_linear(f, out->rank, out->extent, i, &ix);
    if (s || (s = cg_apply(fn, t->fun[0], &ix, &jx))) {
        return s;
    }
    LLVMValueRef inside = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0);
    for (int d = 0; d < src->rank; d++) {
        LLVMValueRef ok = LLVMBuildICmp(fn->b, LLVMIntULT, jx.v[d],
                                        src->extent[d], "");
        inside = LLVMBuildAnd(fn->b, inside, ok, "");
    }
    cg_if c;
    cg_if_begin(fn, &c, inside);
    LLVMValueRef j = cg_to_index(fn, src->rank, src->extent, jx.v);
    if ((s = cg_array_load(fn, src, j, &x)) != WEFT_OK) {
        return s;
    }
    if (t->kind == FE_TRANSFORM) {
        if ((s = cg_apply(fn, t->fun[1], &x, &y)) != WEFT_OK) {
            return s;
        }
    } else {
        y = x;
    }
    cg_array_store(fn, out, i, &y);
    cg_if_else(fn, &c);
    LLVMValueRef st = LLVMBuildStore(fn->b, cg_i64(fn, 1), sk_aux_array(f, 0)->ptr[0]);
    LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(st, 8);
    cg_if_end(fn, &c);
    return WEFT_OK;
}

static weft_status generate_emit(sk_emit *e, const char *const *names)
{
    sk_fn f;
    weft_status s = sk_fn_begin(e, &f, names[0]);
    if (s) {
        return s;
    }
    cg_fn *fn = &f.fn;
    const fe_term *t = e->k->op;
    const cg_array *out = sk_out_array(&f, 0);
    if (t->kind == FE_ZIPWITH) {
        s = emit_zipwith(&f);
    } else {
        cg_loop l;
        LLVMValueRef i;
        cg_val x, y;
        cg_loop_begin(fn, &l, f.start, f.end, &i);
        switch ((fe_kind)t->kind) {
        case FE_MAP:
            s = cg_array_load(fn, sk_kid_array(&f, 0), i, &x);
            if (s == WEFT_OK) {
                s = cg_apply(fn, t->fun[0], &x, &y);
            }
            break;
        case FE_GENERATE:
            s = sk_from_linear(&f, out->rank, out->extent, i, &x);
            if (s == WEFT_OK) {
                s = cg_apply(fn, t->fun[0], &x, &y);
            }
            break;
        default:
            s = gather_element(&f, i);
            y.n = 0;
            break;
        }
        if (s == WEFT_OK && y.n > 0) {
            cg_array_store(fn, out, i, &y);
        }
        cg_loop_end(fn, &l);
    }
    sk_fn_end(&f);
    return s;
}

static bool generate_supported(const fe_term *t)
{
    return t->atype->narrays == 1;
}

const sk_skeleton sk_generate = {
    .name = "generate",
    .family = SK_GENERATE,
    .supported = generate_supported,
    .prepare = generate_prepare,
    .emit = generate_emit,
};
