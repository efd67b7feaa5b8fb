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
 *
 * On the PTX target, a kernel of this family without a while loop
 * (sk_ptx_wide) computes four elements per chunk and moves them 16 bytes
 * at a time (elements_wide): Black-Scholes reads each of its three
 * operands with one ld.global.nc.v4.f32 and writes each of its two
 * results with one st.global.v4.f32, as the hand-written float4 loop
 * does.
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

/* The elements of [f->start, f->end) on the PTX target for a wide kernel
 * (sk_ptx_wide): a full chunk of K = chunk_elems elements from c K reads
 * all K elements' values before storing any, and stores leaf by leaf, so
 * that LLVM's load-store vectoriser makes each operand's K reads and each
 * result leaf's K writes one 16-byte access (the order of sk_elements'
 * loop, element by element, interleaves the leaves' stores, which the
 * vectoriser may not reorder; and a heavy body in a loop is not
 * unrolled); any other range (the last chunk's rest) is a plain loop,
 * emitted cold. */
static weft_status elements_wide(sk_fn *f)
{
    enum { K_MAX = 8 };
    cg_fn *fn = &f->fn;
    LLVMBuilderRef b = fn->b;
    int k = f->e->target->chunk_elems;
    if (k > K_MAX || k < 1) {
        return fe_error(WEFT_ERR_INTERNAL, "weft_compile: chunk of %d", k);
    }
    LLVMValueRef kk = cg_i64(fn, k);
    LLVMValueRef go = LLVMBuildICmp(
        b, LLVMIntEQ, LLVMBuildSub(b, f->end, f->start, ""), kk, "full");
    cg_if full;
    cg_if_begin(fn, &full, go);
    /* c K with the constant K: LLVM knows the alignment (see sk_elements) */
    LLVMValueRef lo = LLVMBuildNSWMul(b, f->chunk, kk, "");
    LLVMValueRef ix[K_MAX];
    cg_val y[K_MAX];
    weft_status s = WEFT_OK;
    for (int j = 0; j < k && s == WEFT_OK; j++) {
        ix[j] = LLVMBuildNSWAdd(b, lo, cg_i64(fn, j), "");
        s = sk_read(f, f->e->k->op, ix[j], NULL, &y[j]);
    }
    const cg_array *out = sk_out_array(f, 0);
    for (int l = 0; l < out->nleaf && s == WEFT_OK; l++) {
        cg_array leaf = *out;
        leaf.nleaf = 1;
        leaf.leaf = &out->leaf[l];
        leaf.ptr = &out->ptr[l];
        for (int j = 0; j < k; j++) {
            cg_val v = {.n = 1, .v = &y[j].v[l]};
            cg_array_store(fn, &leaf, ix[j], &v);
        }
    }
    cg_if_else(fn, &full);
    if (s == WEFT_OK) {
        /* at most K - 1 elements, once: cold (cg_fn.cold) */
        bool cold = fn->cold;
        fn->cold = true;
        cg_loop l;
        LLVMValueRef i;
        cg_loop_begin(fn, &l, f->start, f->end, &i);
        s = sk_store_element(f, i, NULL);
        cg_loop_end(fn, &l);
        fn->cold = cold;
    }
    cg_if_end(fn, &full);
    return s;
}

/* The element of a staged kernel (sk_emit.stage): every thread of a
 * block runs the trips of the chunk loop together (ptx/target.c), and one
 * whose chunk lies past the end computes the last element instead and
 * does not store it, so that it meets the other threads at every barrier
 * of the staged loops (codegen/stage.c).  That element is one the kernel
 * computes anyway, so its loops end and its reports are the kernel's
 * own. */
static weft_status element_staged(sk_fn *f)
{
    cg_fn *fn = &f->fn;
    LLVMBuilderRef b = fn->b;
    LLVMValueRef active = LLVMBuildICmp(b, LLVMIntULT, f->chunk, f->n, "");
    LLVMValueRef i = LLVMBuildSelect(
        b, active, f->chunk, LLVMBuildSub(b, f->n, cg_i64(fn, 1), ""), "");
    cg_val y;
    fn->stage_tile = SK_PTX_ELEMENT_BLOCK;
    weft_status s = sk_read(f, f->e->k->op, i, NULL, &y);
    fn->stage_tile = 0;
    if (s == WEFT_OK) {
        cg_if put;
        cg_if_begin(fn, &put, active);
        cg_array_store(fn, sk_out_array(f, 0), i, &y);
        cg_if_end(fn, &put);
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
    bool ptx = e->target == &sk_target_ptx;
    e->stage = ptx && !e->k->checked && !sk_ptx_wide(e->k) &&
               cg_stage_find(e->k->op, e->core->nvar, e->arena);
    s = sk_fn_begin(e, &f, names[0]);
    if (s) {
        e->stage = false;
        return s;
    }
    s = e->stage                   ? element_staged(&f)
        : ptx && sk_ptx_wide(e->k) ? elements_wide(&f)
                                   : sk_elements(&f, sk_store_element, NULL);
    e->stage = false;
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
