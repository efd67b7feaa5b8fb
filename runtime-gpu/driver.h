/*
 * runtime-gpu/driver.h: what cuda.c and mem.c share and nobody else sees:
 * the CUDA driver's types and constants (declared here, since weft builds
 * without cuda.h), the table of driver entry points, struct gpu_dev, and
 * the wrapper every driver call goes through.  The backend codes against
 * gpu.h only.
 *
 * Numeric constants are those of cuda.h (CUDA 11 to 13; none of them has
 * changed since it was introduced): CUresult codes, CUdevice_attribute,
 * CUfunction_attribute, CUjit_option and the stream flag.
 */
#ifndef WEFT_GPU_DRIVER_H
#define WEFT_GPU_DRIVER_H

#include <pthread.h>

#include "gpu.h"

/* ---- the driver's types (cuda.h declares them the same way) ------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef int CUjit_option;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;
typedef size_t (*CUoccupancyB2DSize)(int block);
typedef unsigned long long CUmemGenericAllocationHandle;

/* The driver's virtual memory management (multi.c), laid out as cuda.h's
 * CUmemLocation, CUmemAllocationProp and CUmemAccessDesc (CUDA 10.2 on). */
typedef struct CUmemLocation {
    int type; /* CU_MEM_LOCATION_TYPE_DEVICE */
    int id;   /* the device ordinal */
} CUmemLocation;
typedef struct CUmemAllocationProp {
    int type;                 /* CU_MEM_ALLOCATION_TYPE_PINNED */
    int requestedHandleTypes; /* 0: none */
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;
typedef struct CUmemAccessDesc {
    CUmemLocation location;
    int flags; /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
} CUmemAccessDesc;

enum {
    CU_MEM_LOCATION_TYPE_DEVICE = 1,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3,
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
};

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600, /* cuStreamQuery: work still running */
    /* kernel faults: reported by the next call that waits, and sticky
     * (cuda.c's head comment says how far) */
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_ASSERT = 710, /* a device assert or trap */
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
};

enum {
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13, /* kHz */
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
};

enum {
    CU_JIT_WALL_TIME = 2, /* an output: a float of ms in its value slot */
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    CU_JIT_OPTIMIZATION_LEVEL = 7, /* 0 to 4, 4 the default */
    CU_JIT_SPLIT_COMPILE = 34,     /* newer drivers only (cuda.c) */
};

enum { CU_STREAM_NON_BLOCKING = 1 };

enum { CU_MEMHOSTALLOC_PORTABLE = 1, CU_MEMHOSTALLOC_DEVICEMAP = 2 };

enum { CU_EVENT_DISABLE_TIMING = 2 };

/* ---- the driver table (cuda.c loads it once per process) ---------------- */

/* One field per entry point, named as cuda.h's macros name them (cuMemAlloc
 * is the symbol cuMemAlloc_v2), so that error messages carry the name a
 * reader finds in NVIDIA's documentation. */
typedef struct gpu_driver {
    CUresult (*cuInit)(unsigned flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuGetErrorName)(CUresult r, const char **s);
    CUresult (*cuGetErrorString)(CUresult r, const char **s);
    CUresult (*cuDeviceGetCount)(int *n);
    CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*cuDeviceGetAttribute)(int *v, CUdevice_attribute a,
                                     CUdevice dev);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev);
    CUresult (*cuCtxPushCurrent)(CUcontext ctx);
    CUresult (*cuCtxPopCurrent)(CUcontext *ctx);
    CUresult (*cuCtxGetCurrent)(CUcontext *ctx);
    CUresult (*cuCtxSetCurrent)(CUcontext ctx);
    CUresult (*cuStreamCreate)(CUstream *s, unsigned flags);
    CUresult (*cuStreamSynchronize)(CUstream s);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuStreamQuery)(CUstream s);
    CUresult (*cuMemHostAlloc)(void **p, size_t bytes, unsigned flags);
    CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr *d, void *p,
                                          unsigned flags);
    CUresult (*cuMemFreeHost)(void *p);
    CUresult (*cuStreamDestroy)(CUstream s);
    CUresult (*cuMemAlloc)(CUdeviceptr *p, size_t bytes);
    CUresult (*cuMemFree)(CUdeviceptr p);
    CUresult (*cuMemGetInfo)(size_t *free_bytes, size_t *total_bytes);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src,
                                  size_t bytes, CUstream s);
    CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes,
                                  CUstream s);
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src,
                                  size_t bytes, CUstream s);
    CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned v, size_t n,
                                 CUstream s);
    CUresult (*cuModuleLoadDataEx)(CUmodule *m, const void *image,
                                   unsigned nopt, CUjit_option *opt,
                                   void **vals);
    CUresult (*cuModuleUnload)(CUmodule m);
    CUresult (*cuModuleGetFunction)(CUfunction *f, CUmodule m,
                                    const char *name);
    CUresult (*cuFuncGetAttribute)(int *v, CUfunction_attribute a,
                                   CUfunction f);
    CUresult (*cuOccupancyMaxPotentialBlockSize)(int *min_grid, int *block,
                                                 CUfunction f,
                                                 CUoccupancyB2DSize smem_of,
                                                 size_t smem, int limit);
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks,
                                                            CUfunction f,
                                                            int block,
                                                            size_t smem);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, CUstream s,
                               void **params, void **extra);
    /* events: the device time of launches, only while tracing */
    CUresult (*cuEventCreate)(CUevent *e, unsigned flags);
    CUresult (*cuEventRecord)(CUevent e, CUstream s);
    CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
    CUresult (*cuEventDestroy)(CUevent e);
    CUresult (*cuEventSynchronize)(CUevent e);
    CUresult (*cuEventQuery)(CUevent e);
    /* Optional entry points (NULL where the driver lacks them; cuda.c's
     * `optional` table): several devices in one context (multi.c) */
    CUresult (*cuStreamWaitEvent)(CUstream s, CUevent e, unsigned flags);
    CUresult (*cuDeviceCanAccessPeer)(int *can, CUdevice dev, CUdevice peer);
    CUresult (*cuCtxEnablePeerAccess)(CUcontext peer, unsigned flags);
    CUresult (*cuMemAddressReserve)(CUdeviceptr *p, size_t size, size_t align,
                                    CUdeviceptr addr, unsigned long long flags);
    CUresult (*cuMemAddressFree)(CUdeviceptr p, size_t size);
    CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *h, size_t size,
                            const CUmemAllocationProp *prop,
                            unsigned long long flags);
    CUresult (*cuMemRelease)(CUmemGenericAllocationHandle h);
    CUresult (*cuMemMap)(CUdeviceptr p, size_t size, size_t offset,
                         CUmemGenericAllocationHandle h,
                         unsigned long long flags);
    CUresult (*cuMemUnmap)(CUdeviceptr p, size_t size);
    CUresult (*cuMemSetAccess)(CUdeviceptr p, size_t size,
                               const CUmemAccessDesc *desc, size_t count);
    CUresult (*cuMemGetAllocationGranularity)(size_t *g,
                                              const CUmemAllocationProp *prop,
                                              int option);
} gpu_driver;

/* The table, valid once gpu_available or gpu_dev_open has succeeded. */
extern gpu_driver gpu_drv;

/* ---- the device ---------------------------------------------------------- */

#define GPU_CLASSES 416     /* size classes of the pool (mem.c) */
#define GPU_PENDING_MAX 256 /* bytes of kernel names kept between syncs */
#define GPU_TIMED_MAX 64    /* launches timed between syncs (tracing) */

/* A launch whose device time is measured (cuda.c, "Tracing"): events
 * recorded before and after it on the stream, read at the next wait. */
typedef struct gpu_timed {
    CUevent start, end;
    uint64_t host_ns; /* fe_clock_ns when it was launched */
    const char *name; /* the kernel function's (its module's copy) */
    unsigned grid;
    int block;
    int regs; /* the kernel's registers per thread */
} gpu_timed;

typedef struct gpu_block gpu_block; /* a pooled device block (mem.c) */
typedef struct gpu_multi gpu_multi; /* the other devices (multi.c) */

/* A kernel name handed out in a gpu_fn (gpu_fn.name points at s), with
 * the kernel's function on each device of a context over several
 * (multi.c; on[0] unused: device 0 has gpu_fn.fn). */
typedef struct gpu_name {
    struct gpu_name *next;
    size_t size;     /* of this record */
    gpu_module *mod; /* whose kernel it is */
    CUfunction on[GPU_MULTI_MAX];
    char s[];
} gpu_name;

/* A loaded module; with several devices of distinct contexts, its PTX is
 * kept to be loaded on each of them when it first runs there (multi.c). */
struct gpu_module {
    CUmodule mod;
    gpu_name *names;
    char *ptx;   /* NUL-terminated copy, or NULL */
    size_t nptx; /* its bytes, NUL included */
    int opt_level;
    CUmodule on[GPU_MULTI_MAX]; /* loaded on device i (on[0] unused) */
};
typedef struct gpu_mirror gpu_mirror; /* an array's device copy (mem.c) */

struct gpu_dev {
    weft_context *ctx;    /* allocator (may be NULL) */
    pthread_mutex_t lock; /* recursive: see gpu.h */
    int ordinal;
    CUdevice dev;
    CUcontext cu;       /* the device's primary context, retained */
    CUstream stream;    /* non-blocking; every copy and launch */
    int sm;             /* compute capability, major * 10 + minor */
    int sms;            /* multiprocessors */
    int smem_per_block; /* dynamic + static shared memory a block may
                               use without opting in (48 KiB) */
    uint64_t memory;    /* total device memory */
    char name[256];
    /* kernels launched since the last sync, ", "-separated, for faults */
    char pending[GPU_PENDING_MAX];
    /* mem.c */
    gpu_block *pool[GPU_CLASSES]; /* freed blocks by size class */
    gpu_mirror *lru_head;         /* mirrored arrays, most recent first */
    gpu_mirror *lru_tail;
    uint64_t held;   /* bytes from cuMemAlloc, pool included */
    uint64_t pooled; /* bytes in the pool */
    uint64_t limit;  /* gpu_mem_set_limit (0: none) */
    uint64_t uploaded, downloaded, evictions;
    /* the cancel flag (gpu_cancel_flag): an i32 in mapped, pinned host
     * memory, and its device address; the GPU_SPEC_FLAGS flags of
     * speculative bodies follow it (cuda.c, "Speculation") */
    volatile int32_t *cancel_host;
    CUdeviceptr cancel_dev;
    int spec;        /* the flag of the body speculated now (1 ..
                               GPU_SPEC_FLAGS), or 0 */
    int spec_next;   /* the flag the next one takes */
    bool spec_loops; /* a loop kernel of it is queued */
    bool spoiled;    /* a wait stopped its loop kernels */
    bool stage_spec; /* stage_event was recorded after them */
    /* a kernel with a scalar while loop was queued since the stream was
     * last waited for: the run's cancellation, which every wait until
     * then watches (cuda.c, "Loops"); else NULL */
    fe_cancel *loops;
    /* tracing (cuda.c): launches timed since the last wait, the first
     * ntimed of timed[]; events are made on first use and kept */
    gpu_timed timed[GPU_TIMED_MAX];
    int ntimed;
    int nevents;    /* entries of timed[] whose events exist */
    uint64_t calls; /* driver calls made for d (gpu_call) */
    /* gpu_enter: how deep the thread holding the lock has entered d, and
     * whether the outermost enter pushed d's context (it did not when the
     * context was current on that thread already) */
    int entered;
    bool pushed;
    /* kernels launched since the last sync (pending): the last name
     * added, so that a run of launches of one kernel adds it once */
    const char *pending_last;
    /* small copies to and from the host go through pinned memory
     * (mem.c, gpu_bounce): made on first use, GPU_BOUNCE bytes */
    void *bounce;
    /* prefetches (mem.c, gpu_prefetch): copies to the host started
     * without a wait land in the pinned stage, GPU_STAGE bytes made on
     * first use, handed out from stage_used on; stage_event is recorded
     * after the latest of them; nstaged mirrors wait to be taken */
    void *stage;
    size_t stage_used;
    /* small uploads (mem.c, upload_leaves) go through pinned memory, up,
     * GPU_UP bytes made on first use, handed out from up_used on until
     * the stream is next waited for (then every copy out of it is done) */
    void *up;
    size_t up_used;
    int nstaged;
    CUevent stage_event;
    /* records of the pool and of mirrors kept for reuse (mem.c) */
    gpu_block *spare_blocks;
    gpu_mirror *spare_mirrors;
    int nspare_mirrors;
    /* the other devices of a context over several, or NULL (multi.c):
     * set once after opening, before anything is compiled or run */
    gpu_multi *multi;
};

#define GPU_BOUNCE 65536 /* bytes of d->bounce */
#define GPU_SPEC_FLAGS 4 /* flags of speculative bodies, used in turn */
#define GPU_STAGE 4096   /* bytes of d->stage */
#define GPU_UP 65536     /* bytes of d->up */

/* The driver table, counting one call made for d (NULL: a call for no
 * device, not counted): every call to the driver is written
 * gpu_call(d)->cuXxx(...), so that d->calls is weft's whole use of the
 * driver (weft_stats.driver_calls). */
static inline const gpu_driver *gpu_call(gpu_dev *d)
{
    if (d) { /* atomic: gpu_module_load calls without d's lock */
        __atomic_fetch_add(&d->calls, 1, __ATOMIC_RELAXED);
    }
    return &gpu_drv;
}

/* The status of a failed driver call `call` (its cuda.h name) made for
 * `who`: WEFT_ERR_OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY, else
 * WEFT_ERR_DEVICE, with the message "<who>: <call>: <error name>: <error
 * string>"; a kernel fault is reported as "<who>: kernel <names> failed:
 * ..." naming the kernels launched on d since its last sync (d may be
 * NULL).  file and line are where the call was made (for a debugger: every
 * driver failure passes through here). */
weft_status gpu_cu_fail(gpu_dev *d, const char *who, const char *call,
                        CUresult r, const char *file, int line);

/* Call driver entry point `fn` with the remaining arguments; on failure set
 * the local `st` and jump to the local label `cleanup`. */
#define GPU_CU(d, who, fn, ...)                                                \
    do {                                                                       \
        CUresult gpu_r_ = gpu_call(d)->fn(__VA_ARGS__);                        \
        if (gpu_r_ != CUDA_SUCCESS) {                                          \
            st = gpu_cu_fail((d), (who), #fn, gpu_r_, __FILE__, __LINE__);     \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

/* Wait for d's stream (d entered); a fault names the pending kernels.
 * Clears the pending list.  While a kernel with a while loop is queued
 * (d->loops) the wait watches the run's cancellation (cuda.c, "Loops")
 * and reports WEFT_ERR_CANCELLED when it was seen. */
weft_status gpu_stream_wait(gpu_dev *d, const char *who);
/* Wait for event e of d's stream (d entered) the same way: the work
 * queued before its last record is done. */
weft_status gpu_event_wait(gpu_dev *d, CUevent e, const char *who);

/* ---- multi.c ------------------------------------------------------------- */

/* Large blocks of a context over several devices: `size` bytes (a size
 * class of mem.c, >= GPU_MULTI_MIN) as one virtual range mapped on every
 * device, its pages split among them (d entered): run 0, one block a
 * device; run r > 0, interleaved, granules [k r, (k + 1) r) on device
 * k mod D (multi.c, "Memory").  CUDA_SUCCESS or the driver's error
 * (CUDA_ERROR_OUT_OF_MEMORY starts mem.c's eviction). */
CUresult gpu_multi_map(gpu_dev *d, size_t size, int run, CUdeviceptr *p);
/* Unmap and release range p when it is one of gpu_multi_map's (d entered,
 * streams waited for): true; false when p is not such a range. */
bool gpu_multi_unmap(gpu_dev *d, CUdeviceptr p);

#endif /* WEFT_GPU_DRIVER_H */
