/*
 * skeletons-ir/permute.c: not written yet; until it is, supported() says no
 * and the interpreter's walker runs these operations on the host.
 */
#include "sk.h"

static bool permute_supported(const fe_term *t)
{
    (void)t;
    return false;
}

static weft_status permute_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    (void)ctx;
    (void)arena;
    (void)k;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no permute skeleton yet");
}

static weft_status permute_emit(sk_emit *e, const char *const *names)
{
    (void)e;
    (void)names;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no permute skeleton yet");
}

const sk_skeleton sk_permute = {
    .name = "permute",
    .family = SK_PERMUTE,
    .supported = permute_supported,
    .prepare = permute_prepare,
    .emit = permute_emit,
};
