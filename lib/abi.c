/*
 * lib/abi.c: the two facts every sized struct of the API leans on
 * (docs/abi.md): which weft this is (weft_version, weft_version_numbers),
 * and the sized copy of a struct weft fills for the caller.
 *
 * Structs that weft fills for the caller are copied with fe_copy_sized:
 * the caller passes its sizeof, so that a binding built against an older
 * weft.h (a smaller struct) or a newer one (a larger struct) gets what
 * both know and never a write past its struct.  The context (statistics,
 * lib/context.c) and the questions asked before a context (lib/info.c)
 * both copy this way, and the configuration's check names the version.
 */
#include <string.h>

#include "fe.h"

#define ABI_STR_(x) #x
#define ABI_STR(x) ABI_STR_(x)

void fe_copy_sized(void *dst, size_t dst_n, const void *src, size_t src_n)
{
    size_t n = dst_n < src_n ? dst_n : src_n;
    memcpy(dst, src, n);
    if (dst_n > n) {
        memset((char *)dst + n, 0, dst_n - n);
    }
}

const char *weft_version(void)
{
    return ABI_STR(WEFT_VERSION_MAJOR) "." ABI_STR(
        WEFT_VERSION_MINOR) "." ABI_STR(WEFT_VERSION_PATCH);
}

void weft_version_numbers(int *major, int *minor, int *patch)
{
    if (major) {
        *major = WEFT_VERSION_MAJOR;
    }
    if (minor) {
        *minor = WEFT_VERSION_MINOR;
    }
    if (patch) {
        *patch = WEFT_VERSION_PATCH;
    }
}
