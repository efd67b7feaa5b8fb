/*
 * runtime-gpu/gpu.h: weft's GPU runtime, one internal header sectioned by
 * file.  Names carry the prefix gpu_.
 *
 * The CUDA driver is opened at run time (dlopen of libcuda.so.1), so weft
 * builds and its other backends run where no CUDA exists; nothing here
 * includes cuda.h.  Every driver call goes through one wrapper that turns a
 * CUresult into a weft status whose message names the call, the driver's
 * own error name and the caller ("weft_run: cuMemAlloc: out of memory").
 *
 *   cuda.c     the driver table (dlopen, dlsym of the _v2 entry points),
 *              the device and its primary context, the stream, modules
 *              (PTX compiled and loaded by cuModuleLoadDataEx),
 *              kernel functions with their occupancy, launches, syncs;
 *   mem.c      device memory: a pool of freed blocks by size class, the
 *              mirror of host arrays (lib/fe.h fe_mirror_ops: upload on
 *              first GPU use, download on first host read), eviction of
 *              the least recently used device copies to the host when the
 *              device is out of memory;
 *   multi.c    a context over several GPUs of one host (issue 20): the
 *              other devices' contexts and streams, large blocks split
 *              over the devices through the driver's virtual memory,
 *              kernels launched in parts over them (gpu_launch_split,
 *              _items, _parts) with replicas of small arrays, the memory
 *              bound per device, NCCL looked for;
 *   relay.c    a thread that runs a function each time it is asked (a
 *              split launch's queueing thread per other device);
 *   backend.c  the PTX backend (fe_backend_ptx): kernels, drivers, runs.
 *
 * Threads.  One gpu_dev per weft context.  Its mutex is recursive: the
 * backend holds it for a whole run, and the mirror hooks, which any thread
 * may call (weft_array_data), take it too.  Every function below that
 * touches the device takes the lock itself.
 */
#ifndef WEFT_GPU_H
#define WEFT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/fe.h"

/* ===== cuda.c ===== */

typedef struct gpu_dev gpu_dev;
typedef struct gpu_module gpu_module;

/* A kernel function of a loaded module. */
typedef struct gpu_fn {
    void *fn;          /* CUfunction */
    const char *name;  /* points into the module's copy */
    int block;         /* threads per block from the occupancy API */
    int blocks_per_sm; /* resident blocks of that size per SM */
    int regs;          /* registers per thread (for traces) */
} gpu_fn;

/* Open device `ordinal` (< 0: $WEFT_DEVICE, else 0) of the driver:
 * dlopen("libcuda.so.1"), cuInit, the device, its primary context
 * (retained), one non-blocking stream.  Errors:
 * WEFT_ERR_BACKEND_UNAVAILABLE when there is no driver, no device, or the
 * ordinal is out of range (the message says which, and for a missing
 * driver the dlopen error); WEFT_ERR_OUT_OF_MEMORY.  ctx gives the
 * allocator (may be NULL).  Close with gpu_mem_close, then gpu_multi_end
 * (other devices), then gpu_dev_close (NULL does nothing), after every
 * array mirrored on it has been released: memory first, since the
 * device's memory (mem.c) is built on it and the device (cuda.c) knows
 * nothing of the memory, nor of the other devices (multi.c, built on
 * it). */
weft_status gpu_dev_open(weft_context *ctx, int ordinal, gpu_dev **out);
void gpu_dev_close(gpu_dev *d);

/* Whether a driver and at least one device are present (cheap after the
 * first call; for tests that skip). */
bool gpu_available(void);
/* The same as a status: WEFT_OK, or WEFT_ERR_BACKEND_UNAVAILABLE with the
 * reason as the message (no driver, with dlopen's message; a driver too
 * old; cuInit failing; no device).  The ptx backend's probe. */
weft_status gpu_probe(void);
/* The devices the driver sees (weft_device_count): *n, or 0 and
 * gpu_probe's status. */
weft_status gpu_device_count(int *n);
/* Facts of device `ordinal` (weft_device_info_sized), through the driver's
 * device queries only.  Errors: gpu_probe's; WEFT_ERR_INVALID_ARGUMENT for
 * an ordinal out of range; WEFT_ERR_DEVICE when a query fails. */
weft_status gpu_device_info(int ordinal, weft_device_info *out);

/* Device facts: compute capability as major * 10 + minor (90 on an H100),
 * multiprocessors, total memory in bytes, the name ("NVIDIA H100 80GB
 * HBM3"). */
int gpu_dev_ordinal(const gpu_dev *d);
int gpu_dev_sm(const gpu_dev *d);
int gpu_dev_sms(const gpu_dev *d);
uint64_t gpu_dev_memory(const gpu_dev *d);
const char *gpu_dev_name(const gpu_dev *d);
/* The stream everything of d runs on (a CUstream). */
void *gpu_dev_stream(const gpu_dev *d);

/* The device's recursive lock (see the head comment). */
void gpu_lock(gpu_dev *d);
void gpu_unlock(gpu_dev *d);
/* Lock d and make its context current on this thread; on failure the lock
 * is released again and the status returned.  Pair every success with
 * gpu_leave.  Only the outermost enter of a thread touches the driver: it
 * asks for the current context (cuCtxGetCurrent) and pushes d's when it
 * is another; nested enters (a mirror hook inside a run, an allocation
 * inside gpu_array_in) only count. */
weft_status gpu_enter(gpu_dev *d, const char *who);
/* Undo gpu_enter: the outermost pops d's context if it pushed it; unlock. */
void gpu_leave(gpu_dev *d);

/* Compile PTX text (n bytes, not necessarily NUL-terminated) as a whole
 * program for d's device and load it (cuModuleLoadDataEx; the driver's
 * own cache of compiled PTX may answer).  opt_level: the compiler's
 * optimisation level, 0 to 4 (4 the driver's default); any other value
 * gives the default.  `from` ("llvm", "disk cache") only labels the
 * trace span.  Any thread may call it, also while another holds d's lock
 * (it takes none, so that the kernels of one program compile in
 * parallel).  Errors: WEFT_ERR_DEVICE with the compiler's error log in
 * the message, WEFT_ERR_OUT_OF_MEMORY.  `who` prefixes messages. */
weft_status gpu_module_load(gpu_dev *d, const void *ptx, size_t n,
                            int opt_level, const char *from, const char *who,
                            gpu_module **out);
/* Unload m (NULL: nothing) from d's device; on a context over several,
 * gpu_multi_module_free first. */
void gpu_module_free(gpu_dev *d, gpu_module *m);
/* Kernel `name` of m, with its occupancy-derived block size (for dynamic
 * shared memory of `shared_per_thread` bytes per thread; 0 for none), at
 * most block_max threads (0: no limit but the device's).
 * Errors: WEFT_ERR_INTERNAL (no such function). */
weft_status gpu_module_fn(gpu_dev *d, gpu_module *m, const char *name,
                          int shared_per_thread, int block_max, gpu_fn *out);

/* Launch f on the stream: grid blocks of `block` threads (block <= 0:
 * f->block), `shared` bytes of dynamic shared memory, kernel parameters
 * params[0..] as cuLaunchKernel takes them.  Asynchronous: a fault in the
 * kernel shows at the next gpu_sync, which names the kernels launched
 * since the previous sync.  Errors: WEFT_ERR_DEVICE,
 * WEFT_ERR_INVALID_ARGUMENT (grid or block out of range). */
weft_status gpu_launch(gpu_dev *d, const gpu_fn *f, unsigned grid, int block,
                       unsigned shared, void **params, const char *who);
/* gpu_launch of a grid of `rows` rows of grid blocks each (the pieces of
 * an uneven kernel over several devices: skeletons-ir/ptx/target.c,
 * "Pieces"); rows 1 is gpu_launch.  Errors as gpu_launch (rows out of
 * range: WEFT_ERR_INVALID_ARGUMENT). */
weft_status gpu_launch_rows(gpu_dev *d, const gpu_fn *f, unsigned grid,
                            unsigned rows, int block, unsigned shared,
                            void **params, const char *who);
/* Blocks of `block` threads (<= 0: f->block) to launch for `items`
 * independent pieces of work, one per thread with a grid-stride loop: at
 * most f's resident blocks on every SM (for a smaller block, as many
 * resident threads), at least 1 (0 when items is 0). */
unsigned gpu_grid_for(const gpu_dev *d, const gpu_fn *f, int block,
                      int64_t items);
/* Wait for the stream; report a kernel fault or trap as WEFT_ERR_DEVICE
 * naming the kernels launched since the last sync.  After a sticky fault
 * (illegal address) the context is unusable and every later call fails
 * with WEFT_ERR_DEVICE. */
weft_status gpu_sync(gpu_dev *d, const char *who);

/* Wait for all work queued on d's context, by weft or anyone else
 * (cuCtxSynchronize): a producer's writes to memory weft is given are
 * complete.  Errors: WEFT_ERR_DEVICE. */
weft_status gpu_ctx_sync(gpu_dev *d, const char *who);

/* Cancellation of a kernel with a scalar while loop (codegen/cg.h
 * cancel_poll).  gpu_cancel_flag lowers d's cancel flag, an i32 in mapped
 * host memory (cuMemHostAlloc with DEVICEMAP, made on first use), and
 * gives its device address.  gpu_loop_queued: such a kernel of the run
 * whose cancellation is c was just queued; instead of a wait for it now,
 * every wait of the stream (or of an event on it) until the stream's next
 * one polls (cuStreamQuery or cuEventQuery, with yields of the CPU for
 * the first 4 ms, then sleeps of a 256th of the time waited, 50 us to
 * 1 ms): when fe_cancelled(c) it raises the flag, which the running
 * kernel's loops read, goes on waiting until the kernel has left, and
 * reports WEFT_ERR_CANCELLED (cuda.c, "Loops").  gpu_loops_wait, at the
 * end of a run, waits so for such kernels still queued (nothing when
 * there are none): WEFT_OK, WEFT_ERR_CANCELLED or a fault
 * (WEFT_ERR_DEVICE).  gpu_cancel_flag's errors: WEFT_ERR_DEVICE,
 * WEFT_ERR_OUT_OF_MEMORY. */
weft_status gpu_cancel_flag(gpu_dev *d, uint64_t *dev_addr, const char *who);
/* Speculation (cuda.c, "Speculation").  gpu_spec_begin: a speculative
 * awhile body starts (the outermost; lib/interp.c); until gpu_spec_end,
 * gpu_cancel_flag gives kernels with a while loop the body's own flag,
 * and a wait that would wait for such a kernel raises that flag first
 * (the body is spoiled: its loop kernels may stop early).  gpu_spec_end:
 * the body's flag is known; when it does not count (discard), its loop
 * kernels are stopped.  Returns whether the body was spoiled (a body
 * that counts must then run again). */
weft_status gpu_spec_begin(gpu_dev *d, const char *who);
bool gpu_spec_end(gpu_dev *d, bool discard);
void gpu_loop_queued(gpu_dev *d, fe_cancel *c);
weft_status gpu_loops_wait(gpu_dev *d, const char *who);

/* ===== mem.c ===== */

/* Device memory of at least `bytes` (bytes 0: *out = 0 and WEFT_OK), from
 * the pool when a freed block of the same size class is there, else from
 * the driver; when the driver is out of memory the pool is emptied, then
 * the least recently used unpinned device copies of arrays are moved to
 * the host (evicted) one by one until the allocation succeeds.  Errors:
 * WEFT_ERR_OUT_OF_MEMORY when nothing is left to evict, WEFT_ERR_DEVICE. */
weft_status gpu_mem_alloc(gpu_dev *d, size_t bytes, uint64_t *out,
                          const char *who);
/* gpu_mem_alloc with a layout for a context over several devices: a
 * block of GPU_MULTI_MIN bytes or more interleaved in runs of `run`
 * granules (gpu_multi_map; 0: one block a device, as gpu_mem_alloc).
 * The pool hands back only a block of the same layout. */
weft_status gpu_mem_alloc_laid(gpu_dev *d, size_t bytes, int run, uint64_t *out,
                               const char *who);
/* Give a block back to the pool (p 0 does nothing).  The stream is
 * ordered, so a block freed after a launch that uses it may be reused by
 * a later launch. */
void gpu_mem_free(gpu_dev *d, uint64_t p, size_t bytes);
/* Release every device buffer of d before gpu_dev_close: the pool and the
 * mirrors, detaching the mirrored arrays (a device copy newer than the
 * host's is downloaded first); where d's context cannot be made current
 * only the host side is cleaned up.  Driver errors are ignored and leave
 * no message.  NULL does nothing; d stays usable (the pool starts empty). */
void gpu_mem_close(gpu_dev *d);

/* Copies on the stream.  Host to device and device to host wait for the
 * copy to finish before returning (the host buffer may be reused at
 * once); device to device and memset do not. */
weft_status gpu_upload(gpu_dev *d, uint64_t dst, const void *src, size_t bytes,
                       const char *who);
weft_status gpu_download(gpu_dev *d, void *dst, uint64_t src, size_t bytes,
                         const char *who);
/* Read the nwords 8-byte words at device address src (error words; at
 * most 512) into words[], waiting for the stream; in the same wait,
 * outs[0 .. nout) (at most 4; NULL entries skipped) whose device copies on
 * d are newer than their host copies come to the host too when they take
 * a few KiB in all (a small result read right after its run then costs
 * nothing more).  Errors as gpu_download. */
weft_status gpu_read_words(gpu_dev *d, uint64_t src, int64_t *words, int nwords,
                           weft_array *const *outs, int nout, const char *who);
weft_status gpu_copy(gpu_dev *d, uint64_t dst, uint64_t src, size_t bytes,
                     const char *who);
weft_status gpu_memset32(gpu_dev *d, uint64_t dst, uint32_t v, size_t n,
                         const char *who); /* n 32-bit words */

/* The device copy of array a as a kernel input: made and uploaded when the
 * host copy is newer (or there is none), then pinned (not evicted) until
 * gpu_array_unpin.  ptrs[l] is leaf l's device address (0 for an empty
 * array).  An array mirrored on another device is first brought to the
 * host.  Errors as gpu_mem_alloc and gpu_upload. */
weft_status gpu_array_in(gpu_dev *d, weft_array *a, uint64_t *ptrs,
                         const char *who);
/* The device copy of array a as a kernel output: device buffers are made
 * (uninitialised) and the device copy becomes the newer one (the host
 * copy is stale until downloaded); pinned like gpu_array_in. */
weft_status gpu_array_out(gpu_dev *d, weft_array *a, uint64_t *ptrs,
                          const char *who);
/* gpu_array_out whose new buffers are laid out with runs[l] granules a
 * run for leaf l (gpu_mem_alloc_laid; runs NULL: gpu_array_out).  Buffers
 * the array already has keep their layout. */
weft_status gpu_array_out_laid(gpu_dev *d, weft_array *a, const int *runs,
                               uint64_t *ptrs, const char *who);
void gpu_array_unpin(gpu_dev *d, weft_array *a);

/* Device arrays and exports (lib/fe.h fe_device_ops).  gpu_array_wrap
 * makes the caller's buffers ptrs[leaf] the device copy of a (a new
 * device array, a->on_device, without host buffers), after waiting for
 * the context (gpu_ctx_sync): the buffers are never freed, pooled or
 * evicted, host buffers are made on the first download (and freed with
 * a), and the stream is waited for before a dies.  gpu_array_export
 * gives leaf `leaf`'s device address, uploading first when the host copy
 * is newer, waits for the stream, and keeps the copy on the device for
 * good (never evicted; the context is waited for when a dies, in case a
 * consumer still reads it); `writable`: the host copy becomes stale.
 * Errors as gpu_array_in, WEFT_ERR_DEVICE. */
weft_status gpu_array_wrap(gpu_dev *d, weft_array *a, void *const *ptrs,
                           const char *who);
weft_status gpu_array_export(gpu_dev *d, weft_array *a, int leaf, bool writable,
                             uint64_t *ptr, const char *who);

/* Counters of d (bytes both ways, evictions, device bytes held now
 * including the pool, driver calls made for d). */
typedef struct gpu_mem_stats {
    uint64_t uploaded, downloaded, evictions, held, pooled, calls;
} gpu_mem_stats;
void gpu_mem_stats_get(gpu_dev *d, gpu_mem_stats *out);

/* Test hook: make gpu_mem_alloc behave as if the device had only `bytes`
 * bytes (0: no limit), so that eviction can be tested on a large GPU. */
void gpu_mem_set_limit(gpu_dev *d, uint64_t bytes);

/* ===== multi.c ===== */

#define GPU_MULTI_MAX 8 /* devices of one context */
#define GPU_MULTI_MIN                                                          \
    ((size_t)1 << 20) /* bytes: blocks this large and
                                           larger are split over the
                                           devices, smaller ones live on
                                           the first (multi.c, "Memory") */

/* The device list of weft_config.devices / $WEFT_DEVICES, `spec`, for a
 * driver that sees `count` devices: ords[0 .. *n) (at most GPU_MULTI_MAX,
 * 8; ords has room for that many).  NULL or "": *n = 0 (one GPU, as
 * without the setting); "all": 0 .. count - 1 (the first 8); else
 * ordinals separated by commas, which may repeat ("0,0").  No driver is
 * asked: a pure function.  Errors: WEFT_ERR_INVALID_ARGUMENT for
 * anything else, an ordinal >= count (naming it) or more than 8; `who`
 * prefixes messages. */
weft_status gpu_devices_parse(const char *spec, int count, int *ords, int *n,
                              const char *who);
/* Make d (opened on ords[0]) a context over devices ords[0 .. n): for
 * n < 2 nothing.  Every device must have d's compute capability
 * (WEFT_ERR_INVALID_ARGUMENT naming it) and peer access to every other
 * (WEFT_ERR_BACKEND_UNAVAILABLE), and the driver the virtual memory
 * calls (WEFT_ERR_BACKEND_UNAVAILABLE naming the missing one); driver
 * failures WEFT_ERR_DEVICE.  Call before anything is compiled or run on
 * d; gpu_multi_end closes the other devices.  `relays`: a queueing
 * thread per other device where there are 3 devices or more (multi.c,
 * "Queueing"). */
weft_status gpu_multi_open(gpu_dev *d, const int *ords, int n, bool relays,
                           const char *who);
/* Close the other devices of d's context (nothing for one): after
 * gpu_mem_close, before gpu_dev_close. */
void gpu_multi_end(gpu_dev *d);
/* Unload module m's copies on the other devices of d's context (nothing
 * for one): before gpu_module_free(d, m). */
void gpu_multi_module_free(gpu_dev *d, gpu_module *m);
/* Devices of d's context (1 without gpu_multi_open). */
int gpu_multi_count(const gpu_dev *d);
/* Whether some device of d's context is named twice (`0,0`: parts of
 * one GPU), as gpu_multi_open found it. */
bool gpu_multi_repeats(const gpu_dev *d);
/* Device i of d's context: its ordinal, and in *bytes the bytes of
 * partitioned arrays (and pooled ranges) in its memory now; with one
 * device, d's ordinal and all the bytes d holds. */
int gpu_multi_device(gpu_dev *d, int i, uint64_t *bytes);
/* Whether a new block of `size` bytes (mem.c's driver_alloc: a range
 * split over the devices from GPU_MULTI_MIN bytes with runs of `run`
 * granules, gpu_multi_map; else on device 0)
 * keeps every device of d's context within `limit` bytes
 * ($WEFT_DEVICE_MEMORY, per device). */
bool gpu_multi_fits(gpu_dev *d, size_t size, int run, uint64_t limit);
/* The layout of block p of d's context: its run (gpu_multi_map; 0: one
 * block a device), or -1 when p is not a range of gpu_multi_map's (a
 * small block, or one context over one device). */
int gpu_multi_run(gpu_dev *d, uint64_t p);
/* The granule of d's ranges in bytes (0 for a context over one device). */
size_t gpu_multi_granule(const gpu_dev *d);
/* Kernels split over the devices so far. */
uint64_t gpu_multi_launches(gpu_dev *d);
/* Count `bytes` handed from other devices to the first (partials); the
 * bytes so far (weft_stats.device_bytes_moved: these and the replicas'
 * copies) with bytes 0. */
uint64_t gpu_multi_moved(gpu_dev *d, uint64_t bytes);
/* Small arrays a split kernel reads (multi.c, "Replicas"): word r[i].word
 * of its argument block (of `words` words) holds the address of r[i].bytes
 * bytes on device 0, which every other device reads from a copy of its
 * own. */
#define GPU_REPLICAS_MAX 16
typedef struct gpu_replicas {
    size_t words;
    int n;
    struct {
        int word;
        size_t bytes;
    } r[GPU_REPLICAS_MAX];
} gpu_replicas;
/* Launch element-wise kernel f of a context over several devices (d
 * entered): `total` elements in chunks of `unit` elements (the kernel's
 * own chunk: the grain it really takes), its parameters (args, n, grain,
 * first, skip); each device runs its range of chunks on its stream, after
 * the work queued on d's stream, and d's stream waits for them all
 * (multi.c, "Kernels").  `uneven` (sk_ptx_uneven: an element's cost
 * varies): a chunk per thread, the chunks dealt out in pieces round robin
 * ("Pieces"), else one range per device on gpu_grid_for's persistent
 * grid; `piece` (0: none) the elements of a granule of an uneven
 * kernel's interleaved output, its pieces where there are enough of
 * them.  rep (NULL: none): small arrays the other devices read from
 * replicas.  Errors as gpu_launch. */
weft_status gpu_launch_split(gpu_dev *d, const gpu_fn *f, int64_t total,
                             int64_t grain, int64_t unit, int block,
                             bool uneven, int64_t piece, void *args,
                             const gpu_replicas *rep, const char *who);
/* One device's launch of a kernel over several devices: its grid (0:
 * none on that device; rows of grid blocks, 0 taken as 1) and the
 * kernel's n, grain, first and skip parameters (skip: 0 but for the
 * pieces of an uneven kernel, skeletons-ir/ptx/target.c). */
typedef struct gpu_part {
    unsigned grid, rows;
    int64_t n, grain, first, skip;
} gpu_part;
/* Launch f of a context over several devices (d entered) once per device
 * i with part[i] (blocks of `block` threads, the argument block args), the
 * others after the work queued on d's stream, and d's stream waits for
 * them all (multi.c, "Kernels").  `what` names the parts' sizes in the
 * trace's span ("chunks", "rows", "elements"): sizes[i].  rep (NULL:
 * none): small arrays the other devices read from replicas, copied on
 * their streams before their parts.  Errors as gpu_launch. */
weft_status gpu_launch_parts(gpu_dev *d, const gpu_fn *f, int block,
                             const gpu_part *part, void *args,
                             const gpu_replicas *rep, const char *what,
                             const int64_t *sizes, const char *who);
/* Launch a raw entry f (`per` threads per item: a warp's or a block's)
 * whose items [0, n) start at its `first` parameter (skeletons-ir/ptx/
 * fold.c) over the devices of d's context: one range of items per device,
 * as equal as they come, each device's grid sized as for one device; rep
 * as for gpu_launch_parts.  Errors as gpu_launch. */
weft_status gpu_launch_items(gpu_dev *d, const gpu_fn *f, int64_t n,
                             int64_t grain, int per, int block, void *args,
                             const gpu_replicas *rep, const char *who);
/* Where libnccl.so.2 was found ($WEFT_NCCL, the library path, pip's
 * nvidia-nccl-cu13/-cu12), or NULL; looked for once per process.  When
 * found, NCCL_NVLS_ENABLE=0 is set in the environment unless the user set
 * it (multi.c, "NCCL"). */
const char *gpu_nccl_find(void);

/* ===== relay.c ===== */

/* A thread that runs fn(arg) once for every gpu_relay_post (multi.c,
 * "Queueing").  The caller writes what fn reads, posts, and reads what fn
 * wrote only after gpu_relay_wait; it posts again only after that wait.
 * One caller at a time (multi.c: the thread holding d's lock). */
typedef struct gpu_relay gpu_relay;
/* Start the thread (its memory from ctx's allocator, NULL allowed); NULL
 * when it could not be made (out of memory or threads): the caller then
 * does the work itself. */
gpu_relay *gpu_relay_start(weft_context *ctx, void (*fn)(void *arg), void *arg);
/* Have r's thread run fn(arg) once more; returns at once. */
void gpu_relay_post(gpu_relay *r);
/* Block until the run of the last post has returned (at once if it has). */
void gpu_relay_wait(gpu_relay *r);
/* Stop r's thread and free r (after a wait for its last post); NULL is a
 * no-op. */
void gpu_relay_stop(gpu_relay *r);

/* ===== backend.c ===== */

/* Test hooks of the tier-up thread (backend.c, "Tiers"), set before the
 * contexts they concern are made.  gpu_tier_without_device: compile-only
 * ptx contexts (target sm_XY) tier too: weft_compile emits the quick PTX
 * and the thread the optimised PTX, which it counts (kernels_optimised)
 * and drops, so the thread's life can be tested where there is no GPU.
 * gpu_tier_hook, when set, is called on the thread before each job (to
 * hold or slow it). */
extern bool gpu_tier_without_device;
extern void (*gpu_tier_hook)(void);
/* Test hook: when set, called by weft_compile as it starts to build a
 * kernel's PTX, with no lock of the context held (backend.c, "Compiling
 * in parallel"), so that a test can see two compiles overlap. */
extern void (*gpu_build_hook)(void);

#endif /* WEFT_GPU_H */
