/*
 * lib/info.c: what a program may ask before it makes a context (weft.h,
 * "Introspection"): LLVM's version, which backends can run
 * here and why not, the CUDA devices, where libdevice is, and the disk
 * cache a context would use.  tools/weft-info.c prints all of it.
 *
 * Backend facts come from the backends' own tables (fe_backend's probe,
 * device_count and device_info), so this file does not know what a GPU
 * is.  Two facts belong to no backend table and are asked of their
 * owners directly in a build with LLVM: libdevice's path
 * (codegen/target_ptx.c) and the disk cache (runtime/disk.c, opened here
 * as a context opens it, then closed).
 *
 * weft's own version and the sized copy of the structs filled here
 * (fe_copy_sized) are lib/abi.c's; LLVM's version is asked here.
 */
#include <stdio.h>
#include <string.h>

#include "fe.h"

#ifdef WEFT_HAVE_LLVM
#include <llvm/Config/llvm-config.h>

#include "../codegen/cg.h"
#include "../runtime/rt.h"
#include "../runtime-gpu/gpu.h"
#endif

const char *weft_llvm_version(void)
{
#ifdef WEFT_HAVE_LLVM
    return LLVM_VERSION_STRING;
#else
    return "none";
#endif
}

/* The reason weft_backend_available hands out, per thread. */
static _Thread_local char why_buf[FE_MSG_MAX];

/* The status of backend b's probe, with the reason as the last error
 * (prefixed by who) when it cannot run. */
static weft_status probe(weft_backend b, const char *who)
{
    if ((unsigned)b > WEFT_BACKEND_PTX) {
        return fe_error(WEFT_ERR_BACKEND_UNKNOWN,
                        "%s: backend %d is not a backend (known: interp, "
                        "cpu, ptx)",
                        who, (int)b);
    }
    const fe_backend *be = fe_backend_table(b);
    if (!be) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "%s: this weft was built without LLVM, so it has "
                        "only the interp backend",
                        who);
    }
    weft_status s = be->probe ? be->probe() : WEFT_OK;
    if (s != WEFT_OK) {
        char msg[FE_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", weft_last_error());
        fe_error(s, "%s: %s", who, msg);
    }
    return s;
}

int weft_backend_available(weft_backend b, const char **why)
{
    if (why) {
        *why = NULL;
    }
    if (probe(b, "weft_backend_available") == WEFT_OK) {
        return 1;
    }
    snprintf(why_buf, sizeof why_buf, "%s", weft_last_error());
    if (why) {
        *why = why_buf;
    }
    return 0;
}

weft_status weft_device_count(int *n)
{
    static const char who[] = "weft_device_count";
    if (!n) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: n is NULL", who);
    }
    *n = 0;
    weft_status s = probe(WEFT_BACKEND_PTX, who);
    const fe_backend *be = fe_backend_table(WEFT_BACKEND_PTX);
    if (s == WEFT_OK && be->device_count) {
        s = be->device_count(n);
    }
    return s;
}

weft_status weft_device_info_sized(int ordinal, weft_device_info *out,
                                   size_t size)
{
    static const char who[] = "weft_device_info";
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: out is NULL", who);
    }
    weft_device_info info;
    memset(&info, 0, sizeof info);
    weft_status s = probe(WEFT_BACKEND_PTX, who);
    const fe_backend *be = fe_backend_table(WEFT_BACKEND_PTX);
    if (s == WEFT_OK && be->device_info) {
        s = be->device_info(ordinal, &info);
    }
    if (s == WEFT_OK) {
        fe_copy_sized(out, size, &info, sizeof info);
    }
    return s;
}

weft_status weft_libdevice_path(char *buf, size_t n)
{
    if (!buf) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_libdevice_path: buf is NULL");
    }
#ifdef WEFT_HAVE_LLVM
    char path[4096];
    weft_status s = cg_ptx_libdevice_path(path, sizeof path);
    if (s != WEFT_OK) {
        return s;
    }
    if (strlen(path) >= n) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_libdevice_path: the path (%zu bytes) does not "
                        "fit in %zu bytes",
                        strlen(path) + 1, n);
    }
    memcpy(buf, path, strlen(path) + 1);
    return WEFT_OK;
#else
    (void)n;
    return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                    "weft_libdevice_path: this weft was built without LLVM "
                    "(no ptx backend)");
#endif
}

weft_status weft_nccl_path(char *buf, size_t n)
{
    static const char who[] = "weft_nccl_path";
    if (!buf) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: buf is NULL", who);
    }
#ifdef WEFT_HAVE_LLVM
    const char *path = gpu_nccl_find();
    if (!path) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "%s: NCCL not found ($WEFT_NCCL, libnccl.so.2 on "
                        "the library path, pip's nvidia-nccl-cu13/-cu12)",
                        who);
    }
    if (strlen(path) >= n) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: the path (%zu bytes) does not fit in %zu bytes",
                        who, strlen(path) + 1, n);
    }
    memcpy(buf, path, strlen(path) + 1);
    return WEFT_OK;
#else
    (void)n;
    return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                    "%s: this weft was built without LLVM (no ptx backend)",
                    who);
#endif
}

weft_status weft_cache_info_sized(const weft_config *cfg, weft_cache_info *out,
                                  size_t size)
{
    static const char who[] = "weft_cache_info";
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: out is NULL", who);
    }
    weft_config c;
    weft_status s = fe_config_resolve(cfg, &c, who);
    if (s != WEFT_OK) {
        return s;
    }
    weft_cache_info info;
    memset(&info, 0, sizeof info);
    info.max_bytes = c.cache_max ? c.cache_max : FE_CACHE_MAX_DEFAULT;
#ifdef WEFT_HAVE_LLVM
    /* Opened as a context opens it: only cfg and the allocator are read. */
    weft_context tmp = {.cfg = c};
    rt_disk d;
    rt_disk_open(&d, &tmp, NULL, 0, false, ".o");
    info.max_bytes = d.max_bytes;
    info.enabled = d.enabled;
    snprintf(info.dir, sizeof info.dir, "%s", d.dir ? d.dir : "");
    if (d.enabled) {
        rt_disk_usage(&d, &info.bytes, &info.entries);
    } else {
        static const char off[] = "disk cache off: ";
        const char *why = d.note;
        if (strncmp(why, off, sizeof off - 1) == 0) {
            why += sizeof off - 1;
        }
        snprintf(info.why, sizeof info.why, "%s", why);
    }
    rt_disk_close(&d);
#else
    snprintf(info.why, sizeof info.why,
             "this weft was built without LLVM: nothing is compiled");
#endif
    fe_copy_sized(out, size, &info, sizeof info);
    return WEFT_OK;
}
