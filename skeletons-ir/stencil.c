/*
 * skeletons-ir/stencil.c: not written yet; until it is, supported() says no
 * and the interpreter's walker runs these operations on the host.
 */
#include "sk.h"

static bool stencil_supported(const fe_term *t)
{
    (void)t;
    return false;
}

static weft_status stencil_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    (void)ctx;
    (void)arena;
    (void)k;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no stencil skeleton yet");
}

static weft_status stencil_emit(sk_emit *e, const char *const *names)
{
    (void)e;
    (void)names;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no stencil skeleton yet");
}

const sk_skeleton sk_stencil = {
    .name = "stencil",
    .family = SK_STENCIL,
    .supported = stencil_supported,
    .prepare = stencil_prepare,
    .emit = stencil_emit,
};
