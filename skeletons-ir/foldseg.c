/*
 * skeletons-ir/foldseg.c: not written yet; until it is, supported() says no
 * and the interpreter's walker runs these operations on the host.
 */
#include "sk.h"

static bool fold_seg_supported(const fe_term *t)
{
    (void)t;
    return false;
}

static weft_status fold_seg_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    (void)ctx;
    (void)arena;
    (void)k;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no fold_seg skeleton yet");
}

static weft_status fold_seg_emit(sk_emit *e, const char *const *names)
{
    (void)e;
    (void)names;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no fold_seg skeleton yet");
}

const sk_skeleton sk_fold_seg = {
    .name = "fold_seg",
    .family = SK_FOLD_SEG,
    .supported = fold_seg_supported,
    .prepare = fold_seg_prepare,
    .emit = fold_seg_emit,
};
