/*
 * cmake/static-compat.c: what libweft.so needs to stand alone when LLVM,
 * libstdc++ and libgcc are linked into it (WEFT_STATIC_LLVM).
 *
 * zstd: LLVM's Support library (Compression.cpp) refers to libzstd, for
 * compressed debug sections, which weft neither reads nor writes.  These
 * stubs make every zstd call fail cleanly (LLVM then reports the error), so
 * the library needs no libzstd at all.
 *
 * arc4random: LLVM's Process.cpp and libstdc++'s random_device call it
 * where the build machine's glibc has it (2.36, Debian 12).  This one, over
 * getrandom (glibc 2.25), binds first, so the library runs on an older
 * glibc (Ubuntu 22.04: 2.35).
 *
 * Everything here is hidden; cmake/weft.map exports only weft_*.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>

#define COMPAT __attribute__((visibility("hidden")))

/* ZSTD_error_GENERIC; any value above (size_t)-120 is an error. */
#define ZSTD_FAIL ((size_t)-1)

COMPAT unsigned ZSTD_isError(size_t code);
COMPAT const char *ZSTD_getErrorName(size_t code);
COMPAT size_t ZSTD_compressBound(size_t size);
COMPAT void *ZSTD_createCCtx(void);
COMPAT size_t ZSTD_freeCCtx(void *cctx);
COMPAT size_t ZSTD_CCtx_setParameter(void *cctx, int param, int value);
COMPAT size_t ZSTD_compress2(void *cctx, void *dst, size_t cap, const void *src,
                             size_t size);
COMPAT size_t ZSTD_decompress(void *dst, size_t cap, const void *src,
                              size_t size);
COMPAT uint32_t arc4random(void);

unsigned ZSTD_isError(size_t code)
{
    return code > (size_t)-120;
}

const char *ZSTD_getErrorName(size_t code)
{
    (void)code;
    return "zstd is not linked into libweft";
}

size_t ZSTD_compressBound(size_t size)
{
    return size + (size >> 8) + 64;
}

void *ZSTD_createCCtx(void)
{
    return NULL;
}

size_t ZSTD_freeCCtx(void *cctx)
{
    (void)cctx;
    return 0;
}

size_t ZSTD_CCtx_setParameter(void *cctx, int param, int value)
{
    (void)cctx, (void)param, (void)value;
    return ZSTD_FAIL;
}

size_t ZSTD_compress2(void *cctx, void *dst, size_t cap, const void *src,
                      size_t size)
{
    (void)cctx, (void)dst, (void)cap, (void)src, (void)size;
    return ZSTD_FAIL;
}

size_t ZSTD_decompress(void *dst, size_t cap, const void *src, size_t size)
{
    (void)dst, (void)cap, (void)src, (void)size;
    return ZSTD_FAIL;
}

uint32_t arc4random(void)
{
    uint32_t r;
    while (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
        /* interrupted, or too early in boot: try again */
    }
    return r;
}
