/*
 * runtime-gpu/cuda.c: the CUDA driver, the device, modules and launches.
 *
 * The driver.  libcuda.so.1 is opened with dlopen once per process
 * (pthread_once) and never closed; every entry point weft uses is looked
 * up by the symbol that cuda.h's macros map its name to (cuMemAlloc is
 * cuMemAlloc_v2), with the unversioned symbol as a fallback where older
 * drivers had only that.  The same once runs cuInit and counts the
 * devices, so gpu_available (and gpu_probe, gpu_device_count, which
 * weft_backend_available and weft-info use) is cheap after its first call
 * and a missing driver is reported the same way each time (with dlopen's
 * own message).  Asking about a device (gpu_device_info) makes no CUDA
 * context: only the driver's device queries run.
 *
 * Calls.  Every driver call goes through GPU_CU (driver.h) or gpu_cu_fail:
 * a CUresult becomes WEFT_ERR_DEVICE (WEFT_ERR_OUT_OF_MEMORY for
 * CUDA_ERROR_OUT_OF_MEMORY) with the message
 *     "<who>: <call>: <error name>: <error string>".
 *
 * Contexts and threads.  One gpu_dev per weft context holds the device's
 * primary context (retained, so several gpu_devs of one device share it),
 * one non-blocking stream on which everything runs in order, and a
 * recursive mutex.  Each public function that touches the device locks the
 * mutex and makes the context current on the calling thread (gpu_enter),
 * and undoes that and unlocks on every path out (gpu_leave), so that any
 * host thread may call in and nested calls (the backend holding the lock
 * for a run, a mirror hook inside it) are fine.  Only the outermost enter
 * of a thread costs driver calls: cuCtxGetCurrent, and a push and a pop
 * of the context when another one (or none) was current there; a run
 * enters once for all its kernels, copies and waits.
 *
 * Modules.  PTX is compiled and loaded in one call, cuModuleLoadDataEx,
 * as a whole program (ptxas without -c), for the architecture of the
 * current context.  The driver's JIT linker (cuLinkCreate / AddData /
 * Complete), which weft used before to get a cubin for its disk cache,
 * compiles PTX as relocatable code (ptxas -c): every weft kernel then
 * took 8-14 more registers (on sm_90: Black-Scholes 60 against 47,
 * Mandelbrot 42 against 28, the fold of dotp 54 against 40), and fewer
 * resident warps.  The options: an error log, whose text goes into the
 * message of a failed compile; CU_JIT_WALL_TIME, the driver's own time
 * of the compile, for the trace; the optimisation level when the caller
 * gives one; and the compiler's work split over the machine's threads
 * (CU_JIT_SPLIT_COMPILE, where the driver knows it).  No cubin comes
 * back, so weft's disk cache keeps the PTX (backend.c), and a disk hit
 * is a load of PTX that the driver's own cache of compiled PTX answers
 * (~/.nv/ComputeCache; CUDA_CACHE_PATH moves it, CUDA_CACHE_MAXSIZE sizes
 * it, CUDA_CACHE_DISABLE=1 turns it off): without it, or when it has
 * dropped the entry, a disk hit compiles again (correct, as slow as a
 * first compile's driver phase).  A load takes no lock of d: only the
 * calling thread's context stack is touched, and the kernels of one
 * program compile on several threads at once (backend.c).
 *
 * Launch configuration.  cuOccupancyMaxPotentialBlockSize gives a kernel's
 * block size.  With dynamic shared memory per thread, the block is first
 * capped so that its shared memory fits in a block (48 KiB less the
 * kernel's static shared memory), then the occupancy API is asked again
 * with that fixed amount and that cap: the block it returns is no larger
 * than the cap, so it needs no more shared memory than was assumed (no
 * callback: the driver's callback carries no user data).  Resident blocks
 * per SM come from cuOccupancyMaxActiveBlocksPerMultiprocessor, and
 * gpu_grid_for launches min(ceil(items / block), SMs * resident blocks)
 * (for a block smaller than the kernel's, as many resident threads).
 *
 * Faults.  Launches are asynchronous: a kernel that faults or traps is
 * reported by the next call that waits for the stream.  gpu_launch keeps
 * the names of the kernels launched since the last wait, and a fault
 * (illegal address, trap, launch failure...) is reported as
 *     "<who>: kernel <names> failed: <error name>: <error string>".
 * Such faults are sticky, and with today's drivers (seen with 580 on an
 * H100) not only for the context: releasing every retain of the primary
 * context, even cuDevicePrimaryCtxReset, does not bring the device back,
 * and cuDevicePrimaryCtxRetain itself keeps failing with the fault's code.
 * CUDA's own advice is to end the process.  So after a fault every later
 * call, gpu_dev_open included, fails with WEFT_ERR_DEVICE, and the message
 * of those that did not wait for the faulting kernel says so.
 *
 * Loops.  A kernel with a scalar while loop may run for ever; its loops
 * read a flag in mapped host memory (gpu_cancel_flag) that the host
 * raises when the run is cancelled while it waits.  The host does not
 * wait for such a kernel when it is queued (that cost k-means a wait
 * per iteration): gpu_loop_queued notes the run's cancellation in
 * d->loops, and every wait until the stream is next waited for polls
 * (cuStreamQuery, cuEventQuery) instead of blocking, raising the flag
 * when the run is cancelled meanwhile (poll_wait); the run waits for
 * what is still queued at its end (gpu_loops_wait).  A wait that raised
 * the flag, or saw the run cancelled, reports WEFT_ERR_CANCELLED: what
 * such a kernel left is not a result.
 *
 * Speculation.  An awhile body queued before its flag is known (lib/
 * interp.c, "Speculation") may, on the state after the last iteration,
 * contain a loop that never ends; nothing may wait for it before the flag
 * is known.  Its kernels with while loops poll a flag of their own, one
 * of GPU_SPEC_FLAGS after the cancel flag (taken in turn, lowered when
 * taken: a body's kernels are done long before its flag is taken again,
 * since every iteration waits for work queued after the previous body).
 * A wait for the stream while such a kernel is queued raises that flag
 * first (the body is spoiled: the walker runs it again if it counts);
 * a wait for the stage's event does so only when the event was recorded
 * after such a kernel, and then waits for the whole stream.  A body that
 * does not count gets its flag raised, so that its loops leave at once.
 * A cancel raises every flag.
 *
 * Tracing (WEFT_TRACE, lib/trace.c).  Only when the context traces,
 * gpu_launch records an event on the stream before and after each launch
 * (events are made on first use, GPU_TIMED_MAX pairs per device, and
 * destroyed with it).  Nothing waits for them: their times are read
 * (cuEventElapsedTime) when the host waits for the stream anyway
 * (gpu_stream_wait: every download, upload and error
 * word), and written as "kernel.device" spans on the device's own track.
 * Only when GPU_TIMED_MAX launches pile up with no wait in between does
 * gpu_launch wait first, to reuse the events.  A device span's duration
 * and the gaps between device spans are the events' (about half a
 * microsecond of resolution); their place against the host's spans is
 * anchored at the host time of the first launch since the last wait, so
 * it is early by the time the device took to start that launch.  The
 * module load's span (cuModuleLoadDataEx: the driver's compile and load)
 * is timed always, for weft_stats.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "driver.h"

gpu_driver gpu_drv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static weft_status load_status;   /* WEFT_OK: driver and a device present */
static char load_msg[FE_MSG_MAX]; /* why not, without the caller's name */
static int device_count;

/* Entry points: the field, the symbol, and an older symbol or NULL. */
#define SYM(field, name, old) {offsetof(gpu_driver, field), name, old}
static const struct {
    size_t off;
    const char *name, *old;
} syms[] = {
    SYM(cuInit, "cuInit", NULL),
    SYM(cuDriverGetVersion, "cuDriverGetVersion", NULL),
    SYM(cuGetErrorName, "cuGetErrorName", NULL),
    SYM(cuGetErrorString, "cuGetErrorString", NULL),
    SYM(cuDeviceGetCount, "cuDeviceGetCount", NULL),
    SYM(cuDeviceGet, "cuDeviceGet", NULL),
    SYM(cuDeviceGetName, "cuDeviceGetName", NULL),
    SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL),
    SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2", NULL),
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL),
    SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
        "cuDevicePrimaryCtxRelease"),
    SYM(cuCtxPushCurrent, "cuCtxPushCurrent_v2", NULL),
    SYM(cuCtxPopCurrent, "cuCtxPopCurrent_v2", NULL),
    SYM(cuCtxGetCurrent, "cuCtxGetCurrent", NULL),
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent", NULL),
    SYM(cuStreamCreate, "cuStreamCreate", NULL),
    SYM(cuStreamSynchronize, "cuStreamSynchronize", NULL),
    SYM(cuCtxSynchronize, "cuCtxSynchronize", NULL),
    SYM(cuStreamQuery, "cuStreamQuery", NULL),
    SYM(cuMemHostAlloc, "cuMemHostAlloc", NULL),
    SYM(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", NULL),
    SYM(cuMemFreeHost, "cuMemFreeHost", NULL),
    SYM(cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy"),
    SYM(cuMemAlloc, "cuMemAlloc_v2", NULL),
    SYM(cuMemFree, "cuMemFree_v2", NULL),
    SYM(cuMemGetInfo, "cuMemGetInfo_v2", NULL),
    SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL),
    SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL),
    SYM(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL),
    SYM(cuMemsetD32Async, "cuMemsetD32Async", NULL),
    SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx", NULL),
    SYM(cuModuleUnload, "cuModuleUnload", NULL),
    SYM(cuModuleGetFunction, "cuModuleGetFunction", NULL),
    SYM(cuFuncGetAttribute, "cuFuncGetAttribute", NULL),
    SYM(cuOccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize",
        NULL),
    SYM(cuOccupancyMaxActiveBlocksPerMultiprocessor,
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL),
    SYM(cuLaunchKernel, "cuLaunchKernel", NULL),
    SYM(cuEventCreate, "cuEventCreate", NULL),
    SYM(cuEventRecord, "cuEventRecord", NULL),
    SYM(cuEventElapsedTime, "cuEventElapsedTime", NULL),
    SYM(cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
    SYM(cuEventSynchronize, "cuEventSynchronize", NULL),
    SYM(cuEventQuery, "cuEventQuery", NULL),
};

/* Entry points that only some features need (driver.h, "Optional"): a
 * driver without them loads, and the feature says what it lacks. */
static const struct {
    size_t off;
    const char *name;
} optional[] = {
    {offsetof(gpu_driver, cuStreamWaitEvent), "cuStreamWaitEvent"},
    {offsetof(gpu_driver, cuDeviceCanAccessPeer), "cuDeviceCanAccessPeer"},
    {offsetof(gpu_driver, cuCtxEnablePeerAccess), "cuCtxEnablePeerAccess"},
    {offsetof(gpu_driver, cuMemAddressReserve), "cuMemAddressReserve"},
    {offsetof(gpu_driver, cuMemAddressFree), "cuMemAddressFree"},
    {offsetof(gpu_driver, cuMemCreate), "cuMemCreate"},
    {offsetof(gpu_driver, cuMemRelease), "cuMemRelease"},
    {offsetof(gpu_driver, cuMemMap), "cuMemMap"},
    {offsetof(gpu_driver, cuMemUnmap), "cuMemUnmap"},
    {offsetof(gpu_driver, cuMemSetAccess), "cuMemSetAccess"},
    {offsetof(gpu_driver, cuMemGetAllocationGranularity),
     "cuMemGetAllocationGranularity"},
};

/* The driver's name and description of r (into buf when it has none). */
static void cu_describe(CUresult r, const char **name, const char **str,
                        char *buf, size_t n)
{
    *name = NULL;
    *str = NULL;
    if (gpu_drv.cuGetErrorName) {
        gpu_drv.cuGetErrorName(r, name);
    }
    if (gpu_drv.cuGetErrorString) {
        gpu_drv.cuGetErrorString(r, str);
    }
    if (!*name) {
        snprintf(buf, n, "CUresult %d", r);
        *name = buf;
    }
    if (!*str) {
        *str = "unknown error";
    }
}

/* Open the driver, look up every entry point, cuInit, count devices. */
static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    load_status = WEFT_ERR_BACKEND_UNAVAILABLE;
    if (!h) {
        const char *e = dlerror();
        snprintf(load_msg, sizeof load_msg, "no CUDA driver: %s",
                 e ? e : "libcuda.so.1 cannot be opened");
        return;
    }
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p && syms[i].old) {
            p = dlsym(h, syms[i].old);
        }
        if (!p) {
            snprintf(load_msg, sizeof load_msg,
                     "libcuda.so.1 has no %s: the CUDA driver is too old",
                     syms[i].name);
            memset(&gpu_drv, 0, sizeof gpu_drv);
            dlclose(h);
            return;
        }
        /* POSIX: a function's address fits a void * and back. */
        memcpy((char *)&gpu_drv + syms[i].off, &p, sizeof p);
    }
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
        void *p = dlsym(h, optional[i].name);
        memcpy((char *)&gpu_drv + optional[i].off, &p, sizeof p);
    }
    char buf[32];
    const char *name, *str;
    CUresult r = gpu_drv.cuInit(0);
    if (r == CUDA_SUCCESS) {
        r = gpu_drv.cuDeviceGetCount(&device_count);
    }
    if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && device_count <= 0)) {
        snprintf(load_msg, sizeof load_msg,
                 "no CUDA device (the driver libcuda.so.1 sees none)");
        return;
    }
    if (r != CUDA_SUCCESS) {
        cu_describe(r, &name, &str, buf, sizeof buf);
        snprintf(load_msg, sizeof load_msg,
                 "the CUDA driver cannot start: cuInit: %s: %s", name, str);
        return;
    }
    load_status = WEFT_OK;
}

bool gpu_available(void)
{
    pthread_once(&load_once, load);
    return load_status == WEFT_OK;
}

weft_status gpu_probe(void)
{
    pthread_once(&load_once, load);
    if (load_status != WEFT_OK) {
        return fe_error(load_status, "%s", load_msg);
    }
    return WEFT_OK;
}

weft_status gpu_device_count(int *n)
{
    *n = 0;
    weft_status st = gpu_probe();
    if (st == WEFT_OK) {
        *n = device_count;
    }
    return st;
}

weft_status gpu_device_info(int ordinal, weft_device_info *out)
{
    static const char who[] = "weft_device_info";
    memset(out, 0, sizeof *out);
    weft_status st = gpu_probe();
    if (st != WEFT_OK) {
        return st;
    }
    if (ordinal < 0 || ordinal >= device_count) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: there is no CUDA device %d (%d present)", who,
                        ordinal, device_count);
    }
    CUdevice dev;
    size_t total = 0;
    out->ordinal = ordinal;
    GPU_CU(NULL, who, cuDeviceGet, &dev, ordinal);
    GPU_CU(NULL, who, cuDeviceGetName, out->name, (int)sizeof out->name, dev);
    out->name[sizeof out->name - 1] = '\0';
    GPU_CU(NULL, who, cuDeviceGetAttribute, &out->sm_major,
           CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    GPU_CU(NULL, who, cuDeviceGetAttribute, &out->sm_minor,
           CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    GPU_CU(NULL, who, cuDeviceGetAttribute, &out->multiprocessors,
           CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    /* Newer drivers may stop reporting the clock: 0 then, no error. */
    if (gpu_drv.cuDeviceGetAttribute(&out->clock_khz,
                                     CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
                                     dev) != CUDA_SUCCESS) {
        out->clock_khz = 0;
    }
    GPU_CU(NULL, who, cuDeviceTotalMem, &total, dev);
    out->memory_bytes = total;
    GPU_CU(NULL, who, cuDriverGetVersion, &out->driver_version);
cleanup:
    return st;
}

/* Whether r is a fault of a kernel (reported by the call that waits). */
static bool is_kernel_fault(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: return true;
    default: return false;
    }
}

weft_status gpu_cu_fail(gpu_dev *d, const char *who, const char *call,
                        CUresult r, const char *file, int line)
{
    (void)file; /* for a debugger stopped here */
    (void)line;
    char buf[32];
    const char *name, *str;
    cu_describe(r, &name, &str, buf, sizeof buf);
    weft_status s = r == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ERR_OUT_OF_MEMORY
                                                  : WEFT_ERR_DEVICE;
    if (d && is_kernel_fault(r) && d->pending[0]) {
        fe_error(s, "%s: kernel %s failed: %s: %s", who, d->pending, name, str);
        d->pending[0] = '\0';
        return s;
    }
    if (is_kernel_fault(r)) {
        return fe_error(s,
                        "%s: %s: %s: %s (a kernel fault earlier in this "
                        "process: CUDA cannot be used again until it "
                        "restarts)",
                        who, call, name, str);
    }
    return fe_error(s, "%s: %s: %s: %s", who, call, name, str);
}

weft_status gpu_enter(gpu_dev *d, const char *who)
{
    pthread_mutex_lock(&d->lock);
    if (d->entered > 0) { /* this thread entered already (the lock is
                             recursive): d's context is current */
        d->entered++;
        return WEFT_OK;
    }
    CUcontext cur = NULL;
    if (gpu_call(d)->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == d->cu) {
        d->pushed = false;
        d->entered = 1;
        return WEFT_OK;
    }
    CUresult r = gpu_call(d)->cuCtxPushCurrent(d->cu);
    if (r != CUDA_SUCCESS) {
        weft_status s =
            gpu_cu_fail(d, who, "cuCtxPushCurrent", r, __FILE__, __LINE__);
        pthread_mutex_unlock(&d->lock);
        return s;
    }
    d->pushed = true;
    d->entered = 1;
    return WEFT_OK;
}

void gpu_leave(gpu_dev *d)
{
    if (--d->entered == 0 && d->pushed) {
        CUcontext popped;
        gpu_call(d)->cuCtxPopCurrent(&popped); /* cannot fail after a push */
        d->pushed = false;
    }
    pthread_mutex_unlock(&d->lock);
}

void gpu_lock(gpu_dev *d)
{
    pthread_mutex_lock(&d->lock);
}

void gpu_unlock(gpu_dev *d)
{
    pthread_mutex_unlock(&d->lock);
}

/* ---- the device ---------------------------------------------------------- */

/* The ordinal that gpu_dev_open(ctx, -1) means: $WEFT_DEVICE unless ctx
 * ignores the environment, else 0; -1 when $WEFT_DEVICE is not a number. */
static int default_ordinal(const weft_context *ctx)
{
    const char *e = getenv("WEFT_DEVICE");
    if ((ctx && (ctx->cfg.flags & WEFT_FLAG_NO_ENV)) || !e || !*e) {
        return 0;
    }
    char *end;
    errno = 0;
    long v = strtol(e, &end, 10);
    if (errno || *end || v < 0 || v > 1 << 20) {
        return -1;
    }
    return (int)v;
}

weft_status gpu_dev_open(weft_context *ctx, int ordinal, gpu_dev **out)
{
    static const char who[] = "weft_context_create";
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: out is NULL", who);
    }
    *out = NULL;
    pthread_once(&load_once, load);
    if (load_status != WEFT_OK) {
        return fe_error(load_status, "%s: %s", who, load_msg);
    }
    if (ordinal < 0) {
        ordinal = default_ordinal(ctx);
        if (ordinal < 0) {
            return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                            "%s: $WEFT_DEVICE is \"%s\", not a device number",
                            who, getenv("WEFT_DEVICE"));
        }
    }
    if (ordinal >= device_count) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "%s: there is no CUDA device %d (%d present)", who,
                        ordinal, device_count);
    }
    gpu_dev *d = fe_calloc(ctx, sizeof *d);
    if (!d) {
        return fe_oom(who);
    }
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    int e = pthread_mutex_init(&d->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    if (e) {
        fe_free(ctx, d, sizeof *d);
        return fe_oom(who); /* a mutex */
    }
    d->ctx = ctx;
    d->ordinal = ordinal;
    weft_status st = WEFT_OK;
    bool retained = false, pushed = false;
    int major = 0, minor = 0;
    size_t total = 0;
    GPU_CU(NULL, who, cuDeviceGet, &d->dev, ordinal);
    GPU_CU(NULL, who, cuDeviceGetAttribute, &major,
           CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
    GPU_CU(NULL, who, cuDeviceGetAttribute, &minor,
           CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
    GPU_CU(NULL, who, cuDeviceGetAttribute, &d->sms,
           CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev);
    GPU_CU(NULL, who, cuDeviceGetAttribute, &d->smem_per_block,
           CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, d->dev);
    GPU_CU(NULL, who, cuDeviceTotalMem, &total, d->dev);
    GPU_CU(NULL, who, cuDeviceGetName, d->name, (int)sizeof d->name, d->dev);
    d->name[sizeof d->name - 1] = '\0';
    d->sm = major * 10 + minor;
    d->memory = total;
    if (d->sms < 1) {
        d->sms = 1;
    }
    GPU_CU(NULL, who, cuDevicePrimaryCtxRetain, &d->cu, d->dev);
    retained = true;
    GPU_CU(NULL, who, cuCtxPushCurrent, d->cu);
    pushed = true;
    GPU_CU(NULL, who, cuStreamCreate, &d->stream, CU_STREAM_NON_BLOCKING);
cleanup:
    if (pushed) {
        CUcontext popped;
        gpu_call(d)->cuCtxPopCurrent(&popped);
    }
    if (st != WEFT_OK) {
        if (retained) {
            gpu_call(d)->cuDevicePrimaryCtxRelease(d->dev);
        }
        pthread_mutex_destroy(&d->lock);
        fe_free(ctx, d, sizeof *d);
        return st;
    }
    *out = d;
    return WEFT_OK;
}

static void timed_flush(gpu_dev *d, bool done);

void gpu_dev_close(gpu_dev *d)
{
    if (!d) {
        return;
    }
    pthread_mutex_lock(&d->lock);
    bool live = gpu_call(d)->cuCtxPushCurrent(d->cu) == CUDA_SUCCESS;
    /* the memory is gone already (gpu_mem_close), and the other devices
     * (gpu_multi_end) */
    /* pinned host memory: the cancel flags, the bounce buffer, the
     * prefetch stage, the upload area */
    void *pinned[4] = {(void *)d->cancel_host, d->bounce, d->stage, d->up};
    for (int i = 0; live && i < 4; i++) {
        if (pinned[i]) {
            gpu_call(d)->cuMemFreeHost(pinned[i]);
        }
    }
    d->cancel_host = NULL;
    d->bounce = d->stage = d->up = NULL;
    if (live && d->stage_event) {
        gpu_call(d)->cuEventDestroy(d->stage_event);
        d->stage_event = NULL;
    }
    if (live) {
        timed_flush(d, d->ntimed > 0 && gpu_call(d)->cuStreamSynchronize(
                                            d->stream) == CUDA_SUCCESS);
        for (int i = 0; i < d->nevents; i++) {
            gpu_call(d)->cuEventDestroy(d->timed[i].start);
            gpu_call(d)->cuEventDestroy(d->timed[i].end);
        }
    }
    if (live) {
        gpu_call(d)->cuStreamDestroy(d->stream);
        CUcontext popped;
        gpu_call(d)->cuCtxPopCurrent(&popped);
    }
    gpu_call(d)->cuDevicePrimaryCtxRelease(d->dev);
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_destroy(&d->lock);
    fe_free(d->ctx, d, sizeof *d);
}

int gpu_dev_ordinal(const gpu_dev *d)
{
    return d->ordinal;
}

weft_status gpu_ctx_sync(gpu_dev *d, const char *who)
{
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    if (d->loops || d->spec_loops) {
        /* weft's own stream first, watching loops ("Loops") */
        st = gpu_stream_wait(d, who);
    }
    CUresult r = st == WEFT_OK ? gpu_call(d)->cuCtxSynchronize() : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
        st = gpu_cu_fail(d, who, "cuCtxSynchronize", r, __FILE__, __LINE__);
    }
    d->pending[0] = '\0';
    gpu_leave(d);
    return st;
}

int gpu_dev_sm(const gpu_dev *d)
{
    return d->sm;
}

int gpu_dev_sms(const gpu_dev *d)
{
    return d->sms;
}

uint64_t gpu_dev_memory(const gpu_dev *d)
{
    return d->memory;
}

const char *gpu_dev_name(const gpu_dev *d)
{
    return d->name;
}

void *gpu_dev_stream(const gpu_dev *d)
{
    return d->stream;
}

/* ---- modules ------------------------------------------------------------- */

#define LOG_MAX 4096 /* bytes of the JIT compiler's error log */

/* The status of a failed JIT compile, with the compiler's log (newlines
 * made spaces, so the message stays one line). */
static weft_status jit_fail(const char *who, const char *call, CUresult r,
                            char *log)
{
    char buf[32];
    const char *name, *str;
    cu_describe(r, &name, &str, buf, sizeof buf);
    log[LOG_MAX - 1] = '\0';
    size_t n = strlen(log);
    while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' ')) {
        log[--n] = '\0';
    }
    for (size_t i = 0; i < n; i++) {
        if (log[i] == '\n' || log[i] == '\r' || log[i] == '\t') {
            log[i] = ' ';
        }
    }
    weft_status s = r == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ERR_OUT_OF_MEMORY
                                                  : WEFT_ERR_DEVICE;
    return fe_error(s, "%s: %s: %s: %s%s%s", who, call, name, str,
                    n ? ": " : "", log);
}

weft_status gpu_module_load(gpu_dev *d, const void *text, size_t n,
                            int opt_level, const char *from, const char *who,
                            gpu_module **out)
{
    if (!d || !text || !out || !from) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "%s: gpu_module_load: a required argument is NULL",
                        who);
    }
    *out = NULL;
    if (n == 0 || n == SIZE_MAX) {
        return fe_error(WEFT_ERR_DEVICE, "%s: the kernel's PTX is empty", who);
    }
    /* The JIT wants the text NUL-terminated. */
    char *ptx = fe_alloc(d->ctx, n + 1);
    gpu_module *m = fe_calloc(d->ctx, sizeof *m);
    if (!ptx || !m) {
        fe_free(d->ctx, ptx, n + 1);
        fe_free(d->ctx, m, sizeof *m);
        return fe_oom(who);
    }
    memcpy(ptx, text, n);
    ptx[n] = '\0';
    /* d's lock is not taken: only this thread's context stack is touched,
     * and failures name no kernel (gpu_cu_fail without d) */
    weft_status st = WEFT_OK;
    char log[LOG_MAX];
    log[0] = '\0';
    uint64_t t0 = fe_clock_ns();
    CUresult r = gpu_call(d)->cuCtxPushCurrent(d->cu);
    if (r != CUDA_SUCCESS) {
        st = gpu_cu_fail(NULL, who, "cuCtxPushCurrent", r, __FILE__, __LINE__);
        fe_free(d->ctx, ptx, n + 1);
        fe_free(d->ctx, m, sizeof *m);
        return st;
    }
    /* CU_JIT_WALL_TIME is an output: the driver writes the compile's
     * milliseconds, a float, into its own value slot (0 when its cache
     * had the code).  CU_JIT_SPLIT_COMPILE 0 (last): the compiler's
     * optimisations on as many threads as the machine has, which a driver
     * that does not know the option refuses; the load then goes without
     * it. */
    CUjit_option opt[5] = {CU_JIT_WALL_TIME, CU_JIT_ERROR_LOG_BUFFER,
                           CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[5] = {NULL, log, (void *)(uintptr_t)LOG_MAX};
    unsigned nopt = 3;
    if (opt_level >= 0 && opt_level <= 4) {
        opt[nopt] = CU_JIT_OPTIMIZATION_LEVEL;
        val[nopt++] = (void *)(uintptr_t)opt_level;
    }
    opt[nopt] = CU_JIT_SPLIT_COMPILE;
    val[nopt++] = (void *)(uintptr_t)0;
    r = gpu_call(d)->cuModuleLoadDataEx(&m->mod, ptx, nopt, opt, val);
    if (r == CUDA_ERROR_INVALID_VALUE) {
        log[0] = '\0';
        val[0] = NULL;
        r = gpu_call(d)->cuModuleLoadDataEx(&m->mod, ptx, nopt - 1, opt, val);
    }
    if (r != CUDA_SUCCESS) {
        st = jit_fail(who, "cuModuleLoadDataEx", r, log);
        m->mod = NULL;
    } else {
        float jit_ms = 0;
        memcpy(&jit_ms, &val[0], sizeof jit_ms);
        fe_phase_end(d->ctx, FE_PHASE_DRIVER_LINK, t0, "cuda.module_load",
                     "\"ptx_bytes\":%zu,\"from\":\"%s\",\"opt_level\":%d,"
                     "\"jit_ms\":%.3f",
                     n, from, opt_level >= 0 && opt_level <= 4 ? opt_level : 4,
                     (double)jit_ms);
    }
    CUcontext popped;
    gpu_call(d)->cuCtxPopCurrent(&popped);
    if (st == WEFT_OK && d->multi) {
        /* for the other devices (multi.c), loaded where it first runs */
        m->ptx = ptx;
        m->nptx = n + 1;
        m->opt_level = opt_level;
    } else {
        fe_free(d->ctx, ptx, n + 1);
    }
    if (st != WEFT_OK) {
        fe_free(d->ctx, m, sizeof *m);
        return st;
    }
    *out = m;
    return WEFT_OK;
}

void gpu_module_free(gpu_dev *d, gpu_module *m)
{
    if (!m) {
        return;
    }
    pthread_mutex_lock(&d->lock);
    if (gpu_call(d)->cuCtxPushCurrent(d->cu) == CUDA_SUCCESS) {
        gpu_call(d)->cuModuleUnload(m->mod);
        CUcontext popped;
        gpu_call(d)->cuCtxPopCurrent(&popped);
    }
    pthread_mutex_unlock(&d->lock);
    for (gpu_name *nm = m->names, *next; nm; nm = next) {
        next = nm->next;
        fe_free(d->ctx, nm, nm->size);
    }
    fe_free(d->ctx, m->ptx, m->nptx);
    fe_free(d->ctx, m, sizeof *m);
}

weft_status gpu_module_fn(gpu_dev *d, gpu_module *m, const char *name,
                          int shared_per_thread, int block_max, gpu_fn *out)
{
    static const char who[] = "weft_compile";
    if (!d || !m || !name || !out || shared_per_thread < 0 || block_max < 0) {
        return fe_error(WEFT_ERR_INTERNAL, "%s: gpu_module_fn: bad arguments",
                        who);
    }
    memset(out, 0, sizeof *out);
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    CUfunction f = NULL;
    CUresult r = gpu_call(d)->cuModuleGetFunction(&f, m->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND) {
        st = fe_error(WEFT_ERR_INTERNAL, "%s: the module has no kernel %s", who,
                      name);
        goto cleanup;
    }
    if (r != CUDA_SUCCESS) {
        st = gpu_cu_fail(d, who, "cuModuleGetFunction", r, __FILE__, __LINE__);
        goto cleanup;
    }
    int min_grid = 0, block = 0, per_sm = 0;
    GPU_CU(d, who, cuOccupancyMaxPotentialBlockSize, &min_grid, &block, f, NULL,
           0, block_max);
    if (shared_per_thread > 0) {
        int fixed = 0;
        GPU_CU(d, who, cuFuncGetAttribute, &fixed,
               CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
        int cap = (d->smem_per_block - fixed) / shared_per_thread;
        if (cap >= 32) {
            cap -= cap % 32; /* whole warps */
        }
        if (cap < 1) {
            st = fe_error(WEFT_ERR_INTERNAL,
                          "%s: kernel %s: %d bytes of shared memory per "
                          "thread do not fit in a block",
                          who, name, shared_per_thread);
            goto cleanup;
        }
        int limit = block < cap ? block : cap; /* block <= block_max */
        GPU_CU(d, who, cuOccupancyMaxPotentialBlockSize, &min_grid, &block, f,
               NULL, (size_t)shared_per_thread * (size_t)limit, limit);
    }
    if (block < 1) {
        st = fe_error(WEFT_ERR_INTERNAL,
                      "%s: kernel %s: the occupancy API gives no block size",
                      who, name);
        goto cleanup;
    }
    GPU_CU(d, who, cuOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, f,
           block, (size_t)shared_per_thread * (size_t)block);
    GPU_CU(d, who, cuFuncGetAttribute, &out->regs, CU_FUNC_ATTRIBUTE_NUM_REGS,
           f);
    gpu_name *copy = NULL;
    for (gpu_name *nm = m->names; nm; nm = nm->next) {
        if (strcmp(nm->s, name) == 0) {
            copy = nm;
            break;
        }
    }
    if (!copy) {
        size_t size = sizeof *copy + strlen(name) + 1;
        copy = fe_alloc(d->ctx, size);
        if (!copy) {
            st = fe_oom(who);
            goto cleanup;
        }
        memset(copy, 0, sizeof *copy);
        copy->size = size;
        copy->mod = m;
        memcpy(copy->s, name, strlen(name) + 1);
        copy->next = m->names;
        m->names = copy;
    }
    out->fn = f;
    out->name = copy->s;
    out->block = block;
    out->blocks_per_sm = per_sm > 0 ? per_sm : 1;
cleanup:
    gpu_leave(d);
    return st;
}

/* ---- launches ------------------------------------------------------------ */

/* Whether d's context writes a trace. */
static bool tracing(const gpu_dev *d)
{
    return d->ctx && FE_TRACING(d->ctx);
}

/* Write the device spans of d's timed launches (when `done`: the stream
 * was waited for without a fault) and forget them (d entered). */
static void timed_flush(gpu_dev *d, bool done)
{
    if (d->ntimed == 0) {
        return;
    }
    int tid = FE_TRACE_DEVICE_TID + d->ordinal;
    char label[64];
    snprintf(label, sizeof label, "GPU %d stream (device time)", d->ordinal);
    fe_trace_track_name(d->ctx, tid, label);
    const gpu_timed *first = &d->timed[0];
    for (int i = 0; done && i < d->ntimed; i++) {
        const gpu_timed *t = &d->timed[i];
        float off = 0, ms = 0;
        if (gpu_call(d)->cuEventElapsedTime(&off, first->start, t->start) !=
                CUDA_SUCCESS ||
            gpu_call(d)->cuEventElapsedTime(&ms, t->start, t->end) !=
                CUDA_SUCCESS) {
            continue;
        }
        off = off > 0 ? off : 0;
        ms = ms > 0 ? ms : 0;
        fe_trace_event(d->ctx, tid, first->host_ns + (uint64_t)(off * 1e6),
                       (uint64_t)(ms * 1e6), "device", "kernel.device",
                       "\"fn\":\"%s\",\"grid\":%u,\"block\":%d,"
                       "\"regs\":%d,\"device_us\":%.3f",
                       t->name, t->grid, t->block, t->regs, ms * 1e3);
    }
    d->ntimed = 0;
}

/* The next slot for a timed launch of f (d entered, tracing), or NULL
 * when no event can be had (the launch then goes untimed). */
static gpu_timed *timed_slot(gpu_dev *d, const gpu_fn *f, unsigned grid,
                             int block)
{
    if (d->ntimed == GPU_TIMED_MAX) {
        if (d->loops || d->spec_loops) {
            return NULL; /* a loop kernel may never end: no wait here
                            ("Loops"); this launch goes untimed */
        }
        /* only while tracing: make the events reusable */
        timed_flush(d, gpu_call(d)->cuStreamSynchronize(d->stream) ==
                           CUDA_SUCCESS);
    }
    gpu_timed *t = &d->timed[d->ntimed];
    if (d->ntimed == d->nevents) {
        if (gpu_call(d)->cuEventCreate(&t->start, 0) != CUDA_SUCCESS) {
            return NULL;
        }
        if (gpu_call(d)->cuEventCreate(&t->end, 0) != CUDA_SUCCESS) {
            gpu_call(d)->cuEventDestroy(t->start);
            return NULL;
        }
        d->nevents++;
    }
    t->host_ns = fe_clock_ns();
    t->name = f->name;
    t->regs = f->regs;
    t->grid = grid;
    t->block = block;
    return t;
}

/* Add kernel `name` to d's pending list, once; "..." when it is full. */
static void pending_add(gpu_dev *d, const char *name)
{
    if (name == d->pending_last && d->pending[0]) {
        return; /* the kernel launched last: listed */
    }
    d->pending_last = name;
    size_t n = strlen(name), used = strlen(d->pending);
    for (const char *p = d->pending; (p = strstr(p, name)) != NULL; p += n) {
        bool starts = p == d->pending || p[-1] == ' ';
        if (starts && (p[n] == ',' || p[n] == '\0')) {
            return;
        }
    }
    if (used >= 3 && strcmp(d->pending + used - 3, "...") == 0) {
        return;
    }
    const char *sep = used ? ", " : "";
    if (used + strlen(sep) + n + 6 < sizeof d->pending) {
        snprintf(d->pending + used, sizeof d->pending - used, "%s%s", sep,
                 name);
    } else {
        snprintf(d->pending + used, sizeof d->pending - used, "%s...", sep);
    }
}

weft_status gpu_launch(gpu_dev *d, const gpu_fn *f, unsigned grid, int block,
                       unsigned shared, void **params, const char *who)
{
    return gpu_launch_rows(d, f, grid, 1, block, shared, params, who);
}

weft_status gpu_launch_rows(gpu_dev *d, const gpu_fn *f, unsigned grid,
                            unsigned rows, int block, unsigned shared,
                            void **params, const char *who)
{
    if (block <= 0) {
        block = f->block;
    }
    if (grid < 1 || grid > 0x7fffffffu || rows < 1 || rows > 65535 ||
        block < 1 || block > 1024) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: kernel %s: %u x %u blocks of %d threads is out "
                        "of range",
                        who, f->name, grid, rows, block);
    }
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    gpu_timed *t = tracing(d) ? timed_slot(d, f, grid, block) : NULL;
    if (t && gpu_call(d)->cuEventRecord(t->start, d->stream) != CUDA_SUCCESS) {
        t = NULL;
    }
    CUresult r =
        gpu_call(d)->cuLaunchKernel(f->fn, grid, rows, 1, (unsigned)block, 1, 1,
                                    shared, d->stream, params, NULL);
    if (t && r == CUDA_SUCCESS &&
        gpu_call(d)->cuEventRecord(t->end, d->stream) == CUDA_SUCCESS) {
        d->ntimed++;
    }
    if (r != CUDA_SUCCESS) {
        char call[160];
        snprintf(call, sizeof call, "cuLaunchKernel (%.120s)", f->name);
        st = gpu_cu_fail(d, who, call, r, __FILE__, __LINE__);
    } else {
        pending_add(d, f->name);
    }
    gpu_leave(d);
    return st;
}

unsigned gpu_grid_for(const gpu_dev *d, const gpu_fn *f, int block,
                      int64_t items)
{
    if (items <= 0) {
        return 0;
    }
    uint64_t fb = f->block > 0 ? (uint64_t)f->block : 1;
    uint64_t b = block > 0 ? (uint64_t)block : fb;
    uint64_t want = ((uint64_t)items + b - 1) / b;
    /* resident blocks of b threads: as many threads per SM as of f's */
    uint64_t per_sm = (uint64_t)(f->blocks_per_sm > 0 ? f->blocks_per_sm : 1);
    per_sm = b < fb ? per_sm * fb / b : per_sm;
    uint64_t cap = (uint64_t)d->sms * (per_sm > 0 ? per_sm : 1);
    uint64_t grid = want < cap ? want : cap;
    return grid > 0 ? (unsigned)grid : 1;
}

static weft_status poll_wait(gpu_dev *d, CUevent e, fe_cancel *c,
                             const char *who);

/* Raise speculative flag f (1 .. GPU_SPEC_FLAGS) of d. */
static void spec_raise(gpu_dev *d, int f)
{
    if (d->cancel_host && f > 0) {
        d->cancel_host[f] = 1;
    }
}

weft_status gpu_stream_wait(gpu_dev *d, const char *who)
{
    weft_status st = WEFT_OK;
    if (d->spec_loops) {
        spec_raise(d, d->spec); /* "Speculation" */
        d->spoiled = true;
        d->spec_loops = false;
    }
    if (d->loops) {
        st = poll_wait(d, NULL, d->loops, who);
        d->loops = NULL;
    } else {
        CUresult r = gpu_call(d)->cuStreamSynchronize(d->stream);
        if (r != CUDA_SUCCESS) {
            st = gpu_cu_fail(d, who, "cuStreamSynchronize", r, __FILE__,
                             __LINE__);
        }
    }
    d->pending[0] = '\0';
    if (st == WEFT_OK || st == WEFT_ERR_CANCELLED) {
        d->up_used = 0; /* every upload out of d->up is done (mem.c) */
    }
    timed_flush(d, st == WEFT_OK || st == WEFT_ERR_CANCELLED);
    return st;
}

weft_status gpu_event_wait(gpu_dev *d, CUevent e, const char *who)
{
    if (d->loops) {
        return poll_wait(d, e, d->loops, who);
    }
    CUresult r = gpu_call(d)->cuEventSynchronize(e);
    return r == CUDA_SUCCESS ? WEFT_OK
                             : gpu_cu_fail(d, who, "cuEventSynchronize", r,
                                           __FILE__, __LINE__);
}

weft_status gpu_sync(gpu_dev *d, const char *who)
{
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    st = gpu_stream_wait(d, who);
    gpu_leave(d);
    return st;
}

/* ---- cancellation -------------------------------------------------------- */

weft_status gpu_cancel_flag(gpu_dev *d, uint64_t *dev_addr, const char *who)
{
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    if (!d->cancel_host) {
        void *p = NULL;
        CUdeviceptr dp = 0;
        /* portable over several devices: their kernels read it too */
        GPU_CU(d, who, cuMemHostAlloc, &p,
               sizeof(int32_t) * (1 + GPU_SPEC_FLAGS),
               CU_MEMHOSTALLOC_DEVICEMAP |
                   (d->multi ? CU_MEMHOSTALLOC_PORTABLE : 0));
        CUresult r = gpu_call(d)->cuMemHostGetDevicePointer(&dp, p, 0);
        if (r != CUDA_SUCCESS) {
            gpu_call(d)->cuMemFreeHost(p);
            st = gpu_cu_fail(d, who, "cuMemHostGetDevicePointer", r, __FILE__,
                             __LINE__);
            goto cleanup;
        }
        d->cancel_host = p;
        d->cancel_dev = dp;
        memset(p, 0, sizeof(int32_t) * (1 + GPU_SPEC_FLAGS));
    }
    if (d->spec > 0) {
        /* a speculative body's ("Speculation") */
        d->spec_loops = true;
        *dev_addr = d->cancel_dev + sizeof(int32_t) * (size_t)d->spec;
    } else {
        *d->cancel_host = 0;
        *dev_addr = d->cancel_dev;
    }
cleanup:
    gpu_leave(d);
    return st;
}

weft_status gpu_spec_begin(gpu_dev *d, const char *who)
{
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    d->spec = 1 + d->spec_next;
    d->spec_next = (d->spec_next + 1) % GPU_SPEC_FLAGS;
    d->spec_loops = false;
    d->spoiled = false;
    if (d->cancel_host) {
        d->cancel_host[d->spec] = 0;
    }
    gpu_leave(d);
    return WEFT_OK;
}

bool gpu_spec_end(gpu_dev *d, bool discard)
{
    gpu_lock(d);
    if (discard) {
        spec_raise(d, d->spec);
    }
    bool spoiled = d->spoiled;
    d->spec = 0;
    d->spec_loops = false;
    d->spoiled = false;
    gpu_unlock(d);
    return spoiled;
}

#define WAIT_SPIN_NS 4000000 /* poll_wait yields, not sleeps, this long */

/* Wait for event e (NULL: the stream) by polling, raising the cancel
 * flag when the run c is cancelled meanwhile (d entered); "Loops". */
static weft_status poll_wait(gpu_dev *d, CUevent e, fe_cancel *c,
                             const char *who)
{
    weft_status st = WEFT_OK;
    bool raised = false;
    /* Between queries: for the first WAIT_SPIN_NS only a yield of the CPU
     * (cuStreamSynchronize spins too, so a short kernel's end is seen as
     * soon), then a sleep of a 256th of the time waited so far, at least
     * 50 us (a shorter sleep lasts that long anyway: Linux's timer slack)
     * and at most 1 ms: a long kernel's end is seen at most ~0.4% late, a
     * cancel within a millisecond.  (A nominal 2 us sleep that grew by a
     * 32nd of the sleeps' sum lost up to 3% and more: each lasted 50 us.) */
    uint64_t t0 = fe_clock_ns();
    for (;;) {
        CUresult r = e ? gpu_call(d)->cuEventQuery(e)
                       : gpu_call(d)->cuStreamQuery(d->stream);
        if (r == CUDA_SUCCESS) {
            break;
        }
        if (r != CUDA_ERROR_NOT_READY) {
            st = gpu_cu_fail(d, who, e ? "cuEventQuery" : "cuStreamQuery", r,
                             __FILE__, __LINE__);
            break;
        }
        if (!raised && d->cancel_host && fe_cancelled(c)) {
            /* the kernels' loops read them and leave */
            for (int f = 0; f <= GPU_SPEC_FLAGS; f++) {
                d->cancel_host[f] = 1;
            }
            raised = true;
        }
        uint64_t waited = fe_clock_ns() - t0;
        if (waited < WAIT_SPIN_NS) {
            sched_yield();
            continue;
        }
        uint64_t pause = waited / 256;
        pause = pause < 50000 ? 50000 : pause > 1000000 ? 1000000 : pause;
        struct timespec ts = {0, (long)pause};
        nanosleep(&ts, NULL);
    }
    if (st == WEFT_OK && (raised || fe_cancel_hit(c))) {
        st = fe_cancel_error(c);
    }
    return st;
}

void gpu_loop_queued(gpu_dev *d, fe_cancel *c)
{
    gpu_lock(d);
    d->loops = c;
    gpu_unlock(d);
}

weft_status gpu_loops_wait(gpu_dev *d, const char *who)
{
    gpu_lock(d);
    weft_status st = WEFT_OK;
    if (d->loops) {
        st = gpu_enter(d, who);
        if (st == WEFT_OK) {
            st = gpu_stream_wait(d, who);
            gpu_leave(d);
        }
        d->loops = NULL; /* the run's, which ends */
    }
    gpu_unlock(d);
    return st;
}
