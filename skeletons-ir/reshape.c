/*
 * skeletons-ir/reshape.c: not written yet; until it is, supported() says no
 * and the interpreter's walker runs these operations on the host.
 */
#include "sk.h"

static bool reshape_supported(const fe_term *t)
{
    (void)t;
    return false;
}

static weft_status reshape_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    (void)ctx;
    (void)arena;
    (void)k;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no reshape skeleton yet");
}

static weft_status reshape_emit(sk_emit *e, const char *const *names)
{
    (void)e;
    (void)names;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no reshape skeleton yet");
}

const sk_skeleton sk_reshape = {
    .name = "reshape",
    .family = SK_RESHAPE,
    .supported = reshape_supported,
    .prepare = reshape_prepare,
    .emit = reshape_emit,
};
