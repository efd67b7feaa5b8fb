/*
 * skeletons-ir/reshape.c: the producers without functions: unit,
 * reshape, replicate and slice.
 *
 * unit has one element, the value of its scalar operand, which the host
 * evaluates; its kernel stores that value:
 *
 *     out[0] = x
 *
 * reshape, replicate and slice are index transforms: each element of the
 * result is one element of the source, found from the element's position
 * alone.  One entry point runs over linear positions [start, end) of the
 * result:
 *
 *     for (i = start; i < end; i++) out[i] = a[source of i]
 *
 * where the source position is the one sk_read (input.c) computes for the
 * operation itself: reshape keeps the linear position (a streaming copy
 * that LLVM vectorises), replicate drops the replicated components of the
 * multi-index, slice inserts the fixed ones.  The source may be a fused
 * producer, computed inline.  The driver checks the specification on the
 * host first (negative counts, slice indices outside their dimension,
 * sizes that differ), so the kernel's own check of a slice read never
 * fires on a valid run.
 */
#include "sk.h"

static weft_status reshape_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    (void)ctx;
    (void)arena;
    k->nentry = 1;
    return WEFT_OK;
}

/* unit: out[0] = the scalar operand (when the range holds position 0). */
static weft_status emit_unit(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    const cg_val *x = sk_kid_value(f, 0);
    if (!x) {
        return fe_error(WEFT_ERR_INTERNAL,
                        "weft_compile: unit without its value");
    }
    cg_loop l;
    LLVMValueRef i;
    cg_loop_begin(fn, &l, f->start, f->end, &i);
    cg_array_store(fn, sk_out_array(f, 0), i, x);
    cg_loop_end(fn, &l);
    return WEFT_OK;
}

/* reshape, replicate, slice: out[i] = the operation's element i. */
static weft_status emit_transform(sk_fn *f)
{
    return sk_elements(f, sk_store_element, NULL);
}

static weft_status reshape_emit(sk_emit *e, const char *const *names)
{
    sk_fn f;
    weft_status s = sk_fn_begin(e, &f, names[0]);
    if (s) {
        return s;
    }
    s = e->k->op->kind == FE_UNIT ? emit_unit(&f) : emit_transform(&f);
    sk_fn_end(&f);
    return s;
}

static bool reshape_supported(const fe_term *t)
{
    if (t->atype->narrays != 1) {
        return false;
    }
    switch ((fe_kind)t->kind) {
    case FE_UNIT: return t->nkid == 1 && t->kid[0] && !t->kid[0]->acc;
    case FE_RESHAPE:
        return t->nkid == 2 && t->kid[1]->acc && t->kid[1]->atype &&
               t->kid[1]->atype->narrays == 1;
    case FE_REPLICATE:
    case FE_SLICE: {
        /* The specification must agree with the ranks (the interpreter
         * reports a malformed one). */
        const fe_term *a = t->kid[0];
        int nall = 0, nfix = 0;
        if (!a || !a->acc || !a->atype || a->atype->narrays != 1) {
            return false;
        }
        for (int d = 1; d < t->nkid; d++) {
            if (!t->kid[d]) {
                return false;
            }
            if (t->kid[d]->kind == FE_ALL) {
                nall++;
            } else {
                nfix++;
            }
        }
        if (t->kind == FE_REPLICATE) {
            return nall == a->rank && nall + nfix == t->rank;
        }
        return nall == t->rank && nall + nfix == a->rank;
    }
    default: return false;
    }
}

const sk_skeleton sk_reshape = {
    .name = "reshape",
    .family = SK_RESHAPE,
    .supported = reshape_supported,
    .prepare = reshape_prepare,
    .emit = reshape_emit,
    .fuses_input = true,
};
