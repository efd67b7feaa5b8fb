/*
 * skeletons-ir/scan.c: not written yet; until it is, supported() says no
 * and the interpreter's walker runs these operations on the host.
 */
#include "sk.h"

static bool scan_supported(const fe_term *t)
{
    (void)t;
    return false;
}

static weft_status scan_prepare(weft_context *ctx, fe_arena *arena,
                                   sk_kernel *k)
{
    (void)ctx;
    (void)arena;
    (void)k;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no scan skeleton yet");
}

static weft_status scan_emit(sk_emit *e, const char *const *names)
{
    (void)e;
    (void)names;
    return fe_error(WEFT_ERR_INTERNAL, "weft_compile: no scan skeleton yet");
}

const sk_skeleton sk_scan = {
    .name = "scan",
    .family = SK_SCAN,
    .supported = scan_supported,
    .prepare = scan_prepare,
    .emit = scan_emit,
};
