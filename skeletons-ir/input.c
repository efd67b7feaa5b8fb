/*
 * skeletons-ir/input.c: reading a kernel's array operands, manifest or
 * fused.
 *
 * A manifest operand is an item of the layout (an operand of the
 * operation, a free array variable, a parameter, a used array, or an
 * operand of a delayed producer that the host evaluated): reading it is a
 * load.  A delayed producer (lib/fuse.c) is read through its definition,
 * composing index functions as seed 001's Yield and Step do:
 *
 *   map g a         g(a[i])                    (linear: same extent)
 *   zipWith g a b   g(a[ix], b[ix])            (linear when the kernel is
 *                                               the equal-shapes variant)
 *   generate sh g   g(ix)
 *   backpermute sh p a     a[p(ix)]            (checked: the error word)
 *   transform sh p g a     g(a[p(ix)])
 *   replicate spec a, slice a spec   a[the source index of ix]
 *   reshape sh a    a[i]                       (linear positions agree)
 *
 * where ix is the multi-index of linear position i in the producer's
 * extent, computed only where needed.
 */
#include "sk.h"

/* The item holding manifest array term t, or -1. */
static int manifest_item(sk_fn *f, const fe_term *t)
{
    const sk_kernel *k = f->e->k;
    for (int c = 0; c < k->op->nkid && c < 8; c++) {
        if (k->op->kid[c] == t && k->kid_item[c] >= 0) {
            return k->kid_item[c];
        }
    }
    for (int i = 0; i < k->nitem; i++) {
        const sk_item *it = &k->item[i];
        if (it->kind != SK_ARRAY) {
            continue;
        }
        if ((it->src == SK_SRC_TERM && it->term == t) ||
            (it->src == SK_SRC_VAR && t->kind == FE_VAR &&
             it->var == t->u.var) ||
            (it->src == SK_SRC_PARAM && t->kind == FE_PARAM &&
             it->index == t->u.index) ||
            (it->src == SK_SRC_USE && t->kind == FE_USE &&
             it->array == t->u.array)) {
            return i;
        }
    }
    return -1;
}

const cg_array *sk_manifest_array(sk_fn *f, const fe_term *t)
{
    int i = manifest_item(f, t);
    return i >= 0 ? &f->arr[i] : NULL;
}

/* The value of scalar operand t of a delayed producer (or of the
 * operation). */
static const cg_val *scalar_item(sk_fn *f, const fe_term *t)
{
    const sk_kernel *k = f->e->k;
    for (int c = 0; c < k->op->nkid && c < 8; c++) {
        if (k->op->kid[c] == t && k->kid_item[c] >= 0) {
            return &f->val[k->kid_item[c]];
        }
    }
    for (int i = 0; i < k->nitem; i++) {
        if (k->item[i].src == SK_SRC_TERM && k->item[i].term == t &&
            k->item[i].kind == SK_SCALAR) {
            return &f->val[i];
        }
    }
    return NULL;
}

static bool is_delayed(sk_fn *f, const fe_term *t)
{
    return t->delayed || t == f->e->k->op;
}

bool sk_linear_ok(sk_fn *f, const fe_term *t)
{
    if (!is_delayed(f, t)) {
        return true;
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP: return sk_linear_ok(f, t->kid[0]);
    case FE_ZIPWITH:
        for (int k = 0; k < t->nkid; k++) {
            if (!f->e->uniform || !sk_linear_ok(f, t->kid[k])) {
                return false;
            }
        }
        return true;
    case FE_RESHAPE: return sk_linear_ok(f, t->kid[1]);
    default: return false;
    }
}

static weft_status missing(void)
{
    return fe_error(WEFT_ERR_INTERNAL,
                    "weft_compile: a kernel reads an operand it was not given");
}

weft_status sk_extent(sk_fn *f, const fe_term *t, LLVMValueRef *ext)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    if (!is_delayed(f, t)) {
        int i = manifest_item(f, t);
        if (i < 0) {
            return missing();
        }
        for (int d = 0; d < t->rank; d++) {
            ext[d] = f->arr[i].extent[d];
        }
        return WEFT_OK;
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP: return sk_extent(f, t->kid[0], ext);
    case FE_ZIPWITH: {
        if ((s = sk_extent(f, t->kid[0], ext)) != WEFT_OK) {
            return s;
        }
        for (int k = 1; k < t->nkid; k++) {
            LLVMValueRef e2[WEFT_MAX_RANK];
            if ((s = sk_extent(f, t->kid[k], e2)) != WEFT_OK) {
                return s;
            }
            for (int d = 0; d < t->rank; d++) {
                LLVMValueRef lt =
                    LLVMBuildICmp(fn->b, LLVMIntSLT, e2[d], ext[d], "");
                ext[d] = LLVMBuildSelect(fn->b, lt, e2[d], ext[d], "");
            }
        }
        return WEFT_OK;
    }
    case FE_GENERATE:
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
    case FE_RESHAPE: {
        const cg_val *sh = scalar_item(f, t->kid[0]);
        if (!sh) {
            return missing();
        }
        for (int d = 0; d < t->rank; d++) {
            ext[d] = sh->v[d];
        }
        return WEFT_OK;
    }
    case FE_REPLICATE: {
        LLVMValueRef src[WEFT_MAX_RANK];
        if ((s = sk_extent(f, t->kid[0], src)) != WEFT_OK) {
            return s;
        }
        int next = 0;
        for (int d = 0; d < t->nkid - 1; d++) {
            const fe_term *sp = t->kid[1 + d];
            if (sp->kind == FE_ALL) {
                ext[d] = src[next++];
            } else {
                const cg_val *v = scalar_item(f, sp);
                if (!v) {
                    return missing();
                }
                ext[d] = v->v[0];
            }
        }
        return WEFT_OK;
    }
    case FE_SLICE: {
        LLVMValueRef src[WEFT_MAX_RANK];
        if ((s = sk_extent(f, t->kid[0], src)) != WEFT_OK) {
            return s;
        }
        int o = 0;
        for (int d = 0; d < t->nkid - 1; d++) {
            if (t->kid[1 + d]->kind == FE_ALL) {
                ext[o++] = src[d];
            }
        }
        return WEFT_OK;
    }
    default: return missing();
    }
}

/* ix from i in t's extent when the caller gave only i. */
static weft_status index_of(sk_fn *f, const fe_term *t, LLVMValueRef i,
                            const cg_val *ix, cg_val *tmp, const cg_val **out)
{
    if (ix) {
        *out = ix;
        return WEFT_OK;
    }
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, t, ext);
    if (s == WEFT_OK) {
        s = sk_from_linear(f, t->rank, ext, i, tmp);
    }
    *out = tmp;
    return s;
}

/* A value of type t with every leaf zero (the result of a failed gather). */
static weft_status zero_of(sk_fn *f, weft_type t, cg_val *out)
{
    const weft_type *leaves;
    int n = cg_leaves(&f->fn, t, &leaves);
    weft_status s = cg_val_make(&f->fn, n, out);
    for (int l = 0; s == WEFT_OK && l < n; l++) {
        out->v[l] = LLVMConstNull(cg_type(f->fn.llctx, leaves[l]));
    }
    return s;
}

static weft_status read_at(sk_fn *f, const fe_term *t, LLVMValueRef i,
                           const cg_val *ix, cg_val *out);

/* a[jx] if jx is inside a's extent, else zero and the error word. */
static weft_status gather(sk_fn *f, const fe_term *a, const cg_val *jx,
                          int code, cg_val *out)
{
    cg_fn *fn = &f->fn;
    LLVMValueRef ext[WEFT_MAX_RANK];
    weft_status s = sk_extent(f, a, ext);
    if (s) {
        return s;
    }
    LLVMValueRef inside = LLVMConstInt(LLVMInt1TypeInContext(fn->llctx), 1, 0);
    for (int d = 0; d < a->rank; d++) {
        inside = LLVMBuildAnd(
            fn->b, inside,
            LLVMBuildICmp(fn->b, LLVMIntULT, jx->v[d], ext[d], ""), "");
    }
    int it = is_delayed(f, a) ? -1 : manifest_item(f, a);
    if (fn->flat_reads && f->local_errors && !fn->checked && it >= 0) {
        /* no branch (cg_fn.flat_reads): the element or zeros, and the
         * code's bit where it was outside */
        const cg_array *m = &f->arr[it];
        LLVMValueRef bits = sk_err_bits(f);
        LLVMTypeRef i32 = LLVMInt32TypeInContext(fn->llctx);
        LLVMValueRef fine =
            fn->flat_mask
                ? LLVMBuildOr(fn->b, inside,
                              LLVMBuildNot(fn->b, fn->flat_mask, ""), "")
                : inside;
        LLVMValueRef bit =
            LLVMBuildSelect(fn->b, fine, LLVMConstInt(i32, 0, 0),
                            LLVMConstInt(i32, 1u << code, 0), "");
        LLVMBuildStore(
            fn->b,
            LLVMBuildOr(fn->b, LLVMBuildLoad2(fn->b, i32, bits, ""), bit, ""),
            bits);
        return cg_array_load_or_zero(
            fn, m, cg_to_index(fn, m->rank, m->extent, jx->v), inside, out);
    }
    cg_if c;
    cg_val x, z;
    cg_if_begin(fn, &c, inside);
    if (fn->target == &cg_target_cpu && !fn->cold) {
        /* inside, as a ! ix says (exp.c): LLVM then lays the read out
         * on the straight path, where it put the error's block between
         * the read and the join, a jump per element (smvm's x) */
        cg_branch_weights(fn, c.br, CG_USUAL, CG_RARE);
    }
    if ((s = read_at(f, a, NULL, jx, &x)) != WEFT_OK) {
        return s;
    }
    cg_if_else(fn, &c);
    sk_set_error(f, code);
    if ((s = zero_of(f, a->type, &z)) != WEFT_OK) {
        return s;
    }
    return cg_if_merge(fn, &c, &x, &z, out);
}

static weft_status read_at(sk_fn *f, const fe_term *t, LLVMValueRef i,
                           const cg_val *ix, cg_val *out)
{
    cg_fn *fn = &f->fn;
    weft_status s;
    cg_val tmp, x[3], jx;
    const cg_val *ixv;
    if (!is_delayed(f, t)) {
        int it = manifest_item(f, t);
        if (it < 0) {
            return missing();
        }
        const cg_array *a = &f->arr[it];
        LLVMValueRef j = i ? i : cg_to_index(fn, a->rank, a->extent, ix->v);
        return cg_array_load(fn, a, j, out);
    }
    switch ((fe_kind)t->kind) {
    case FE_MAP:
        if ((s = read_at(f, t->kid[0], i, ix, &x[0])) != WEFT_OK) {
            return s;
        }
        return cg_apply(fn, t->fun[0], x, out);
    case FE_ZIPWITH:
        if (i && f->e->uniform) {
            for (int k = 0; k < t->nkid && k < 3; k++) {
                if ((s = read_at(f, t->kid[k], i, NULL, &x[k])) != WEFT_OK) {
                    return s;
                }
            }
        } else {
            if ((s = index_of(f, t, i, ix, &tmp, &ixv)) != WEFT_OK) {
                return s;
            }
            for (int k = 0; k < t->nkid && k < 3; k++) {
                if ((s = read_at(f, t->kid[k], NULL, ixv, &x[k])) != WEFT_OK) {
                    return s;
                }
            }
        }
        return cg_apply(fn, t->fun[0], x, out);
    case FE_GENERATE:
        if ((s = index_of(f, t, i, ix, &tmp, &ixv)) != WEFT_OK) {
            return s;
        }
        return cg_apply(fn, t->fun[0], ixv, out);
    case FE_BACKPERMUTE:
    case FE_TRANSFORM:
        if ((s = index_of(f, t, i, ix, &tmp, &ixv)) != WEFT_OK ||
            (s = cg_apply(fn, t->fun[0], ixv, &jx)) != WEFT_OK) {
            return s;
        }
        if (t->kind == FE_BACKPERMUTE) {
            return gather(f, t->kid[1], &jx, CG_ERR_GATHER, out);
        }
        if ((s = gather(f, t->kid[1], &jx, CG_ERR_GATHER, &x[0])) != WEFT_OK) {
            return s;
        }
        return cg_apply(fn, t->fun[1], x, out);
    case FE_RESHAPE:
        if (!i) {
            LLVMValueRef ext[WEFT_MAX_RANK];
            if ((s = sk_extent(f, t, ext)) != WEFT_OK) {
                return s;
            }
            i = cg_to_index(fn, t->rank, ext, ix->v);
        }
        return read_at(f, t->kid[1], i, NULL, out);
    case FE_REPLICATE:
    case FE_SLICE: {
        if ((s = index_of(f, t, i, ix, &tmp, &ixv)) != WEFT_OK) {
            return s;
        }
        const fe_term *a = t->kid[0];
        if ((s = sk_source_index(f, t, ixv, &jx)) != WEFT_OK) {
            return s;
        }
        if (t->kind == FE_REPLICATE) {
            return read_at(f, a, NULL, &jx, out);
        }
        return gather(f, a, &jx, CG_ERR_SLICE, out);
    }
    default: return missing();
    }
}

weft_status sk_source_index(sk_fn *f, const fe_term *t, const cg_val *ix,
                            cg_val *out)
{
    const fe_term *a = t->kid[0];
    weft_status s = cg_val_make(&f->fn, a->rank, out);
    if (s != WEFT_OK) {
        return s;
    }
    int src = 0, o = 0;
    for (int d = 0; d < t->nkid - 1; d++) {
        const fe_term *sp = t->kid[1 + d];
        if (t->kind == FE_REPLICATE) {
            if (sp->kind == FE_ALL) {
                out->v[src++] = ix->v[d];
            }
        } else if (sp->kind == FE_ALL) {
            out->v[d] = ix->v[o++];
        } else {
            const cg_val *v = scalar_item(f, sp);
            if (!v) {
                return missing();
            }
            out->v[d] = v->v[0];
        }
    }
    return WEFT_OK;
}

weft_status sk_read(sk_fn *f, const fe_term *t, LLVMValueRef i,
                    const cg_val *ix, cg_val *out)
{
    cg_fn *fn = &f->fn;
    if (fn->checked) {
        LLVMValueRef j = i;
        if (!j) {
            LLVMValueRef ext[WEFT_MAX_RANK];
            weft_status s = sk_extent(f, t, ext);
            if (s != WEFT_OK) {
                return s;
            }
            j = cg_to_index(fn, t->rank, ext, ix->v);
        }
        cg_set_elem(fn, j);
    }
    return read_at(f, t, i, ix, out);
}
