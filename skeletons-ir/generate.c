/*
 * skeletons-ir/generate.c: the producers that compute each element of
 * their result independently: generate, map, zipWith, backpermute and
 * transform.
 *
 * One entry point runs over linear positions [start, end) of the result:
 *
 *     for (i = start; i < end; i++) out[i] = element(i);
 *
 * where element(i) is sk_read of the operation itself (input.c), which
 * also computes any producers fused into it.  map reads its input at the
 * same linear position, so its loop is a plain streaming loop that LLVM
 * vectorises.  zipWith does the same in the kernel's equal-shapes variant
 * (the driver picks it when its operands have one shape, the common case),
 * and otherwise goes through the multi-index, since the result's extent is
 * the intersection.  generate, backpermute and transform need the
 * multi-index of i.  backpermute and transform check that the index they
 * gather from is inside the source; an index outside sets the error word
 * instead of reading, and the driver reports WEFT_ERR_OUT_OF_BOUNDS.
 */
#include "sk.h"

static weft_status generate_prepare(weft_context *ctx, fe_arena *arena,
                                    sk_kernel *k)
{
    (void)ctx;
    (void)arena;
    k->nentry = 1;
    if (sk_zipwith_general(k->op)) {
        k->general = true; /* may be set already by a fused zipWith */
    }
    return WEFT_OK;
}

/* out[i] = the operation's element i (also reshape.c's transforms). */
weft_status sk_store_element(sk_fn *f, LLVMValueRef i, void *user)
{
    (void)user;
    cg_val y;
    weft_status s = sk_read(f, f->e->k->op, i, NULL, &y);
    if (s == WEFT_OK) {
        cg_array_store(&f->fn, sk_out_array(f, 0), i, &y);
    }
    return s;
}

static weft_status generate_emit(sk_emit *e, const char *const *names)
{
    sk_fn f;
    /* SPMD hook (spmd.c): the element function over W lanes, if it can */
    bool done = false;
    weft_status s = sk_spmd_generate(e, names[0], &done);
    if (s || done) {
        return s;
    }
    s = sk_fn_begin(e, &f, names[0]);
    if (s) {
        return s;
    }
    s = sk_elements(&f, sk_store_element, NULL);
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
    .fuses_input = true,
};
