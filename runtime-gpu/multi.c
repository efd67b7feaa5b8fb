/*
 * runtime-gpu/multi.c: one context over several GPUs of one host (issue
 * 20, phase 1; docs/distributed.md is the design).
 *
 * The devices.  A context over devices o0, o1, ... (weft_config.devices,
 * $WEFT_DEVICES) is the gpu_dev of o0, as for one GPU, plus this file's
 * gpu_multi, hung on it (d->multi) before anything is compiled or run.
 * Device i > 0 has its own non-blocking stream and an event; its context
 * is its primary context, retained here, or, where its ordinal repeats an
 * earlier one ("0,0": the partition logic on one GPU), that one's.  Peer
 * access is enabled between every pair of distinct devices (a pair
 * without it refuses the context), so that a kernel on any device reads
 * and writes memory that cuMemAlloc made on device 0.  One device, or
 * none named, makes no gpu_multi: every branch below is off the path of
 * a context over one GPU.
 *
 * Memory.  Blocks of GPU_MULTI_MIN (1 MiB) bytes and more (mem.c's
 * driver_alloc asks here instead of cuMemAlloc) are one range of virtual
 * addresses (cuMemAddressReserve) whose pages are split into one
 * contiguous block per device, in the order of the devices, as equal as
 * the allocation granularity (2 MiB on an H100) allows; each block is
 * physical memory of its device (cuMemCreate), mapped into the range
 * (cuMemMap), and the whole range is made readable and writable by every
 * device of the context (cuMemSetAccess).  So an array keeps one address
 * per leaf, on every device, and any kernel runs unchanged on any device
 * over the same argument block: reads and writes of another device's
 * block go over NVLink.  Smaller blocks stay on device 0 and the other
 * devices reach them by peer access (not replicated: a replica needs a
 * rule for which copy is current, and such arrays are read a few times
 * per kernel, where a peer read costs about what a launch does).  The
 * output of a kernel dealt out in pieces ("Pieces") is interleaved
 * instead: its granules in runs of r, run k on device k mod D, each run
 * a physical block of its own (cuMemMap maps a block whole), so that a
 * piece of r granules is written where it is computed; r is 1 for the
 * output's smallest element and k for a leaf of elements k times as
 * large (backend.c out_interleaved).  mem.c's pool keeps freed ranges by
 * size class and layout (a range serves only a request of its layout:
 * the layout is what the interleaving is for), so a program run again
 * does not map again; a range goes back to the driver only when the
 * pool is flushed (out of memory) or the context ends.  Host reads and
 * uploads are copies of device 0's stream over the one range: the driver
 * gathers the blocks.
 *
 * Kernels.  The element-wise family (rt_exec_generate: generate, map,
 * zipWith, backpermute, transform) is split: chunks [0, C) of its index
 * space are cut into one range per device, at multiples of GPU_SPLIT_UNIT
 * chunks (so a staged block never straddles two devices), as equal as
 * that allows (a kernel of fewer than GPU_SPLIT_MIN such units runs on
 * device 0 alone), which is where the rows of an output split by bytes
 * fall up to a granule; device i runs its range through the kernel's `first`
 * parameter (skeletons-ir/ptx/target.c) on its own stream, after an
 * event recorded on device 0's stream (what was queued before is done),
 * and device 0's stream waits for device i's event after it, so that
 * everything after the kernel, on device 0's stream, sees its writes and
 * a wait for device 0's stream waits for all.  No host wait is added.
 * Idle: where device 0's stream has done everything queued on it
 * (cuStreamQuery, under d's lock, so that nothing is queued meanwhile),
 * no event is recorded or waited for: device i's stream then follows all
 * that device 0 did, what device 0 waited for included, and its own
 * earlier parts in its order.  A weft_run after a wait (every
 * benchmark's) starts so; it saves a wait a device (on four H200,
 * session 31: a sum 1.5-3.1 us less by CUDA events, a saxpy within 1.4
 * us either way).
 *
 * Pieces.  That split is fair where every element costs the same.  An
 * uneven kernel's (a while loop whose trip count varies: sk_ptx_uneven)
 * is not: Mandelbrot's set sits in the middle rows of 8192 x 8192, so of
 * four ranges the middle two cost 1.8 times the mean (2.2x on four GPUs).
 * Its chunks (one element each) are dealt out instead: pieces of
 * GPU_PIECE chunks (fewer where a device would get fewer than
 * GPU_PIECES_MIN), piece q to device q mod D, all of one device's pieces in
 * one launch (skeletons-ir/ptx/target.c, "Pieces": a row of blocks per
 * piece, the pieces `skip` chunks apart).  Computed from Mandelbrot's
 * counts per warp, pieces of 8 rows leave the devices within 0.1% of
 * the mean on two and four GPUs; pieces of half a row or less can
 * resonate with the columns (the left and right halves of the image
 * differ: 1.6 times the mean with pieces of 4,096 pixels), which is why
 * a piece is as long as the chunks allow.  Measured on four H200,
 * Mandelbrot went from 2.2x to 3.0-3.1x, where the balance alone would
 * give about 3.8x, with each device writing three quarters of its output
 * into the other devices' blocks over NVLink.  So the output is
 * interleaved ("Memory"), and where that leaves GPU_PIECES_MIN pieces a
 * device, a piece is the elements of one granule of its smallest leaf
 * (2 MiB: 64 rows of Mandelbrot's 8192 i32), which lands in memory of
 * the device that computes it in every leaf.  2 MiB is the driver's
 * least granule, so pieces that keep the writes local are no shorter;
 * computed from the counts per warp (bench/gpu/mandel_balance.c),
 * pieces of 64 rows leave the devices within 0.12% of the mean on four
 * GPUs, 0.2% on eight (8 rows: 0.02% and 0.07%).  On four H200,
 * Mandelbrot 8192^2 went from 2.97x (0.693 ms) to 3.66x (0.564).
 * $WEFT_PTX_INTERLEAVE=0 (backend.c) keeps outputs in blocks and the
 * pieces of before.
 * Memory-bound kernels keep owner-computes: their cost is the bytes,
 * where they are.
 * A fold is split by its own entries (gpu_launch_items: rows, or chunks
 * of few long rows; the partials then combined on device 0) or, for one
 * row, spread: every device folds its part of the row, and one thread on
 * device 0 combines the parts' folds in order (backend.c launch_spread,
 * skeletons-ir/ptx/fold.c); no NCCL: the partials are a handful of
 * values, read over peer access.  A scan of one long row is spread the
 * same way (ptx/scan.c, "Several devices": every part but the last
 * reduced to its total first, then every part scanned with the totals
 * before it as its first tile's prefix; a scan of many rows, whole
 * rows per device); stencils by ranges of tiles or pieces of rows; the
 * permute and the segmented fold run on device 0 over the same
 * addresses, but for a permute whose combine is a native atomic, split by
 * ranges of its sources' chunks, every device's blocks reducing into the
 * one result with atomics of system scope (backend.c launch_permute,
 * ptx/permute.c).
 *
 * A module is loaded on a device of another context when one of its
 * kernels first runs there (its PTX kept by gpu_module_load for that),
 * and unloaded with the module.  Traced, a split kernel's span gives
 * each device's share and kernel time (events around each part, made
 * once per device; the span waits for them) and the launching thread's
 * time by step (bench/gpu/trace_kernels.py prints them).
 *
 * Queueing.  A device's part of a split launch is a wait for `ready` on
 * its stream, its replicas' copies, the launch and a record of its
 * `done`, each a driver call on its context.  Queued by the launching
 * thread one device after another, with a push and a pop of the context
 * around each, on four H200 (traced, medians per launch, session 30 r1):
 * 4.3 us a device in cuLaunchKernel, 1.9 in the wait for `ready`, 0.3
 * in the record, 0.2 in the push and pop, then device 0's part, then 2.1
 * a device in device 0's waits for the `done`s; a weft_run of one split
 * saxpy took 21-25 us of host time against 4-6 on one GPU.  So, with
 * $WEFT_PTX_RELAYS=1, in a context of GPU_RELAYS_MIN devices or more
 * each other device has a relay (relay.c): a thread with that device's context current for good,
 * to which the launching thread hands the part (a gpu_job: the function,
 * grid, parameters, replicas) after recording `ready`, then queues device
 * 0's part itself, waits until every relay has queued its own, and has
 * device 0's stream wait for each `done`.  The parts are queued at once:
 * 15-18 us a weft_run on four GPUs, and by events 2.5-9.5 us less at
 * 2^18 to 2^26 elements in 9 of 10 cases (sum at 2^24: 2.8 more); not
 * the whole of the serial queueing, since the driver serialises part of
 * the concurrent calls (a relay's wait takes 4.1-4.5 us, its launch
 * 4.6-5.0).  On two GPUs the one
 * other part queued by a relay gained nothing and lost the wake-up of a
 * sleeping relay (relay.c, "Waking") where runs were far apart, hence
 * the minimum.  The order holds: a relay's wait for `ready` comes after
 * its record (the hand-off follows it), and device 0's stream waits for
 * a `done` only once the relay has recorded it (the wait for the relay
 * comes first).  A relay reads its job, the argument block and its
 * device's argument copy, which the launching thread fills before the
 * hand-off and leaves alone until the wait (rep_prepare: the host side
 * of the replicas, allocation included, stays on the launching thread,
 * as does fn_on's first load of a module on the device).  It runs only
 * inside a launch, under d's lock, so a module's unloading
 * (gpu_multi_module_free) never meets it.  It makes driver calls only: a
 * failure comes back as the call and its CUresult, which the launching
 * thread turns into the status (gpu_cu_fail is not for other threads: it
 * writes d->pending and the thread's message).  The relays stop with the
 * context, before its streams are destroyed; a relay that could not
 * start leaves its device's parts to the launching thread.  Tried and
 * dropped (r1): cuCtxSetCurrent for the push and pop (no gain: they cost
 * 0.2 us), device 0's part first (slower), a relay polling 10 ms rather
 * than 0.2 (no clear gain), and joins by stream memory operations
 * (cuStreamWriteValue32 / WaitValue32 on a launch number: cheaper calls,
 * but 9 us more by events on four GPUs).  At 2^28 elements session 30
 * found the split's cost by events the same with relays or without
 * (saxpy 225 us on four GPUs against a quarter of one GPU's 197), but
 * its runs came more than the poll apart, so the relays slept; session
 * 31's timeline of the devices (bench/results/gpu-multi.md) shows the
 * queueing on the critical path: device 0's part starts only once the
 * other three are queued, about 18 us into a launch, and with the relays
 * awake a sum of 2^28 took 117 us against 140 (both with the timeline's
 * stamps, which double the queueing).  Relays are off unless asked
 * for: in session 30's final round (four H200, bench/gpu/run.py, whose
 * rounds leave milliseconds between weft's runs, so the relays had gone
 * to sleep) every four-GPU program got slower with them (by the host
 * clock: dotp 0.166 -> 0.320 ms, sum 0.120 -> 0.158, saxpy 0.235 ->
 * 0.285, Mandelbrot 0.564 -> 0.625), each launch paying three threads'
 * wake-up; they win only where launches follow each other within the
 * poll, and a relay that polled for longer would hold a core per device.

 * Replicas.  A split element-wise kernel that reads a small array
 * (4 KiB to 1 MiB: on device 0) at arbitrary places, every element all
 * of it (n-body's bodies), would have every block of the other devices
 * read it over NVLink, device 0's links serving them all.  Instead each
 * other device copies it, on its stream before its part, into a buffer
 * of its own (kept and grown per device, freed with the context), and
 * runs its part with an argument block whose words name the copies
 * (backend.c small_inputs picks the arrays).  The copies are made for
 * every split launch, not cached: a cache would need every write of such
 * an array (a kernel's, an upload) to drop it, and a copy of 1 MiB over
 * NVLink costs a few microseconds, next to a kernel of 1 MiB of output
 * or more.  A kernel whose while loops all read their arrays at the
 * loop's counter (sk_kernel.even_loops: every element reads them whole)
 * has arrays up to 16 MiB copied too, split or not, 64 MiB in all
 * (n-body's 2^18 bodies: four arrays of 1 MiB, which one granule puts
 * on device 0).  They are outside WEFT_DEVICE_MEMORY's count (at most
 * 64 MiB a device).
 *
 * A scan spread over the devices hands its parts' tile status and
 * counters to the other devices the same way (backend.c scan_status):
 * copies of device 0's zeroed slots, so that each device's look-back
 * spins on its own memory.
 *
 * NCCL (gpu_nccl_find) is looked for and reported, not used: the
 * collectives of the families split so far are a few values per device
 * (folds' parts, scans' totals), which peer reads bring in less time
 * than a collective's launch takes.
 */
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

#define GPU_SPLIT_UNIT                                                         \
    1024                 /* chunks: a device's range starts at a
                               multiple of this */
#define GPU_PIECE 65536  /* chunks of an uneven kernel's piece, at most */
#define GPU_PIECES_MIN 8 /* pieces a device at least, where there are so many */
#define GPU_RELAYS_MIN                                                         \
    3 /* devices: a context of fewer queues its split launches on the
         launching thread alone ("Queueing") */
#define GPU_SPLIT_MIN                                                          \
    64 /* units: a kernel of fewer runs on device 0
                               alone (64 units of 4-element chunks: 1 MiB
                               of f32, the size from which arrays are
                               split; below it the joins of the streams
                               cost about what the kernel does) */

/* A range of gpu_multi_map: its runs of granules, run k on device k mod D
 * (laid out in blocks, run i is device i's whole block, maybe empty). */
typedef struct gpu_range {
    struct gpu_range *next;
    CUdeviceptr p;
    size_t size;                      /* reserved and mapped (granules) */
    size_t blk[GPU_MULTI_MAX];        /* bytes on device i */
    int run;                          /* granules a run; 0: a block a device */
    size_t nh;                        /* runs */
    CUmemGenericAllocationHandle h[]; /* each run's memory (0: none) */
} gpu_range;

/* What device i's part of a split launch needs queued (part_queue), and
 * what came of it: the first failed call and, with a trace, the host's
 * ns in each step. */
enum {
    STEP_CTX,
    STEP_WAIT,
    STEP_REP,
    STEP_LAUNCH,
    STEP_DONE,
    STEP_BACK,
    STEP_MARKS,
    STEPS
};
#define SPLIT_HOST 7 /* the launching thread's steps (split_span) */
typedef struct gpu_job {
    CUfunction fn;
    unsigned grid, rows;
    int block;
    void *args;
    int64_t n, grain, first, skip;
    const gpu_replicas *rep; /* NULL: none */
    bool timed;              /* a trace: timing events and steps */
    bool ready;              /* its stream waits for `ready` first */
    CUresult r;
    const char *call;
    uint64_t ns[STEPS];
} gpu_job;

typedef struct gpu_other {
    int ordinal;
    CUdevice dev;
    CUcontext cu;    /* d->cu, another device's, or an earlier one's */
    bool retained;   /* cu is retained by this entry */
    CUstream stream; /* device 0: d->stream */
    CUevent done;    /* recorded after its part of a split kernel */
    uint64_t bytes;  /* bytes of ranges held in its memory now */
    CUdeviceptr rep; /* its replicas ("Replicas"), rep_size bytes */
    size_t rep_size;
    uint64_t *args;   /* the argument block with its replicas' */
    size_t args_cap;  /* words of args */
    CUevent tb, te;   /* a traced part's timing events, made once */
    gpu_relay *relay; /* its queueing thread ("Queueing"), or NULL */
    gpu_dev *d;       /* for the relay's function */
    gpu_job job;      /* the part the relay queues */
    bool current;     /* cu is current on the relay's thread */
} gpu_other;

struct gpu_multi {
    int n;
    gpu_other dev[GPU_MULTI_MAX];
    bool distinct; /* some device has a context other than d->cu */
    bool repeats;  /* some ordinal is named twice (`0,0`) */
    CUevent ready; /* on d->stream, before a split kernel */
    size_t gran;   /* allocation granularity (the largest) */
    gpu_range *ranges;
    uint64_t launches; /* kernels split over the devices */
    uint64_t moved;    /* bytes of partials handed to device 0, and
                             of replicas copied to the others */
};

/* ---- the list of devices --------------------------------------------------- */

weft_status gpu_devices_parse(const char *spec, int count, int *ords, int *n,
                              const char *who)
{
    *n = 0;
    if (!spec || !*spec) {
        return WEFT_OK;
    }
    if (strcmp(spec, "all") == 0) {
        if (count > GPU_MULTI_MAX) {
            count = GPU_MULTI_MAX;
        }
        for (int i = 0; i < count; i++) {
            ords[i] = i;
        }
        *n = count;
        return WEFT_OK;
    }
    const char *p = spec;
    int k = 0;
    for (;;) {
        long v = 0;
        const char *start = p;
        while (*p >= '0' && *p <= '9' && v <= 1 << 20) {
            v = v * 10 + (*p++ - '0');
        }
        if (p == start || (*p != ',' && *p != '\0') || v > 1 << 20) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: devices \"%.64s\" is not a list of device "
                            "numbers (\"0,1\") or \"all\"",
                            who, spec);
        }
        if (v >= count) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: devices \"%.64s\": there is no CUDA device "
                            "%ld (%d present)",
                            who, spec, v, count);
        }
        if (k == GPU_MULTI_MAX) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: devices \"%.64s\": more than %d devices", who,
                            spec, GPU_MULTI_MAX);
        }
        ords[k++] = (int)v;
        if (*p == '\0') {
            break;
        }
        p++;
    }
    *n = k;
    return WEFT_OK;
}

/* ---- opening and closing ----------------------------------------------------- */

/* Whether the driver has every entry point several devices need. */
static const char *missing_entry(void)
{
    const gpu_driver *g = &gpu_drv;
    return !g->cuStreamWaitEvent               ? "cuStreamWaitEvent"
           : !g->cuDeviceCanAccessPeer         ? "cuDeviceCanAccessPeer"
           : !g->cuCtxEnablePeerAccess         ? "cuCtxEnablePeerAccess"
           : !g->cuMemAddressReserve           ? "cuMemAddressReserve"
           : !g->cuMemAddressFree              ? "cuMemAddressFree"
           : !g->cuMemCreate                   ? "cuMemCreate"
           : !g->cuMemRelease                  ? "cuMemRelease"
           : !g->cuMemMap                      ? "cuMemMap"
           : !g->cuMemUnmap                    ? "cuMemUnmap"
           : !g->cuMemSetAccess                ? "cuMemSetAccess"
           : !g->cuMemGetAllocationGranularity ? "cuMemGetAllocationGranularity"
                                               : NULL;
}

/* The properties of physical memory on device `ordinal`. */
static CUmemAllocationProp prop_on(int ordinal)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    return prop;
}

/* Make m->dev[i]'s context current on top of d's (when it is another);
 * true when pushed.  Its errors leave the status. */
static weft_status push_other(gpu_dev *d, gpu_other *o, bool *pushed,
                              const char *who)
{
    weft_status st = WEFT_OK;
    *pushed = false;
    if (o->cu != d->cu) {
        GPU_CU(d, who, cuCtxPushCurrent, o->cu);
        *pushed = true;
    }
cleanup:
    return st;
}

static void pop_other(gpu_dev *d, bool pushed)
{
    if (pushed) {
        CUcontext popped;
        gpu_call(d)->cuCtxPopCurrent(&popped);
    }
}

static void multi_close(gpu_dev *d, bool live);
static void relay_open(gpu_dev *d, gpu_other *o);
static void relay_close(gpu_other *o);

weft_status gpu_multi_open(gpu_dev *d, const int *ords, int n, bool relays,
                           const char *who)
{
    if (n < 2) {
        return WEFT_OK;
    }
    const char *miss = missing_entry();
    if (miss) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "%s: the CUDA driver has no %s: a context over "
                        "several devices needs a newer driver",
                        who, miss);
    }
    weft_device_info first, info;
    weft_status st = gpu_device_info(ords[0], &first);
    for (int i = 1; st == WEFT_OK && i < n; i++) {
        st = gpu_device_info(ords[i], &info);
        if (st == WEFT_OK && (info.sm_major != first.sm_major ||
                              info.sm_minor != first.sm_minor)) {
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: devices: device %d is sm_%d%d, device %d "
                            "sm_%d%d: the devices of one context must have "
                            "one compute capability",
                            who, ords[i], info.sm_major, info.sm_minor, ords[0],
                            first.sm_major, first.sm_minor);
        }
    }
    if (st != WEFT_OK) {
        return st;
    }
    gpu_multi *m = fe_calloc(d->ctx, sizeof *m);
    if (!m) {
        return fe_oom(who);
    }
    st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        fe_free(d->ctx, m, sizeof *m);
        return st;
    }
    m->n = n;
    m->dev[0] = (gpu_other){
        .ordinal = ords[0], .dev = d->dev, .cu = d->cu, .stream = d->stream};
    d->multi = m; /* from here multi_close undoes what was made */
    bool pushed = false;
    for (int i = 1; i < n; i++) {
        gpu_other *o = &m->dev[i];
        o->ordinal = ords[i];
        GPU_CU(d, who, cuDeviceGet, &o->dev, ords[i]);
        for (int j = 0; j < i && !o->cu; j++) {
            if (m->dev[j].ordinal == ords[i]) {
                o->cu = m->dev[j].cu;
                m->repeats = true;
            }
        }
        if (!o->cu) {
            GPU_CU(d, who, cuDevicePrimaryCtxRetain, &o->cu, o->dev);
            o->retained = true;
            m->distinct = true;
        }
        st = push_other(d, o, &pushed, who);
        if (st != WEFT_OK) {
            goto cleanup;
        }
        GPU_CU(d, who, cuStreamCreate, &o->stream, CU_STREAM_NON_BLOCKING);
        GPU_CU(d, who, cuEventCreate, &o->done, CU_EVENT_DISABLE_TIMING);
        pop_other(d, pushed);
        pushed = false;
    }
    GPU_CU(d, who, cuEventCreate, &m->ready, CU_EVENT_DISABLE_TIMING);
    /* peer access both ways between every pair of distinct devices */
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            gpu_other *a = &m->dev[i], *b = &m->dev[j];
            if (a->ordinal == b->ordinal || (!a->retained && i > 0) ||
                (!b->retained && j > 0)) {
                continue; /* the same device, or a repeat of one */
            }
            int can = 0;
            GPU_CU(d, who, cuDeviceCanAccessPeer, &can, a->dev, b->dev);
            if (!can) {
                st = fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                              "%s: devices: device %d cannot access device "
                              "%d's memory (no peer access): a context over "
                              "several devices needs it between every pair",
                              who, a->ordinal, b->ordinal);
                goto cleanup;
            }
            st = push_other(d, a, &pushed, who);
            if (st != WEFT_OK) {
                goto cleanup;
            }
            CUresult r = gpu_call(d)->cuCtxEnablePeerAccess(b->cu, 0);
            pop_other(d, pushed);
            pushed = false;
            if (r != CUDA_SUCCESS &&
                r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
                st = gpu_cu_fail(d, who, "cuCtxEnablePeerAccess", r, __FILE__,
                                 __LINE__);
                goto cleanup;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        size_t g = 0;
        CUmemAllocationProp prop = prop_on(ords[i]);
        GPU_CU(d, who, cuMemGetAllocationGranularity, &g, &prop,
               CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        m->gran = g > m->gran ? g : m->gran;
    }
    for (int i = 1; i < n && relays && n >= GPU_RELAYS_MIN; i++) {
        relay_open(d, &m->dev[i]);
    }
cleanup:
    pop_other(d, pushed);
    if (st != WEFT_OK) {
        multi_close(d, true);
    }
    gpu_leave(d);
    return st;
}

/* Close the other devices (d locked; live: d's context current).  Modules
 * loaded on them were unloaded first (gpu_multi_module_free). */
static void multi_close(gpu_dev *d, bool live)
{
    gpu_multi *m = d->multi;
    if (!m) {
        return;
    }
    while (m->ranges) { /* mem.c released them all, unless not live */
        gpu_range *r = m->ranges;
        m->ranges = r->next;
        fe_free(d->ctx, r, sizeof *r + r->nh * sizeof r->h[0]);
    }
    for (int i = 1; i < m->n; i++) {
        relay_close(&m->dev[i]);
    }
    for (int i = 0; i < m->n; i++) {
        gpu_other *o = &m->dev[i];
        bool pushed = false;
        if (live && o->cu &&
            push_other(d, o, &pushed, "weft_context_free") == WEFT_OK) {
            if (o->tb) {
                gpu_call(d)->cuEventDestroy(o->tb);
            }
            if (o->te) {
                gpu_call(d)->cuEventDestroy(o->te);
            }
            pop_other(d, pushed);
        }
        if (i == 0) {
            continue;
        }
        if (live && o->cu &&
            push_other(d, o, &pushed, "weft_context_free") == WEFT_OK) {
            if (o->stream) {
                gpu_call(d)->cuStreamSynchronize(o->stream);
                gpu_call(d)->cuStreamDestroy(o->stream);
            }
            if (o->done) {
                gpu_call(d)->cuEventDestroy(o->done);
            }
            if (o->rep) {
                gpu_call(d)->cuMemFree(o->rep);
            }
            pop_other(d, pushed);
        }
        if (o->args) {
            fe_free(d->ctx, o->args, sizeof *o->args * o->args_cap);
        }
        if (o->retained) {
            gpu_call(d)->cuDevicePrimaryCtxRelease(o->dev);
        }
    }
    if (live && m->ready) {
        gpu_call(d)->cuEventDestroy(m->ready);
    }
    d->multi = NULL;
    fe_free(d->ctx, m, sizeof *m);
}

void gpu_multi_end(gpu_dev *d)
{
    if (!d || !d->multi) {
        return;
    }
    gpu_lock(d);
    bool live = gpu_call(d)->cuCtxPushCurrent(d->cu) == CUDA_SUCCESS;
    multi_close(d, live);
    if (live) {
        CUcontext popped;
        gpu_call(d)->cuCtxPopCurrent(&popped);
    }
    gpu_unlock(d);
}

int gpu_multi_count(const gpu_dev *d)
{
    return d && d->multi ? d->multi->n : 1;
}

bool gpu_multi_repeats(const gpu_dev *d)
{
    return d && d->multi && d->multi->repeats;
}

int gpu_multi_device(gpu_dev *d, int i, uint64_t *bytes)
{
    gpu_multi *m = d->multi;
    if (!m) {
        *bytes = d->held;
        return d->ordinal;
    }
    gpu_lock(d);
    *bytes = m->dev[i].bytes;
    int ord = m->dev[i].ordinal;
    gpu_unlock(d);
    return ord;
}

uint64_t gpu_multi_launches(gpu_dev *d)
{
    return d->multi ? d->multi->launches : 0;
}

uint64_t gpu_multi_moved(gpu_dev *d, uint64_t bytes)
{
    if (!d->multi) {
        return 0;
    }
    gpu_lock(d);
    d->multi->moved += bytes;
    uint64_t all = d->multi->moved;
    gpu_unlock(d);
    return all;
}

/* ---- memory ---------------------------------------------------------------- */

/* Bytes of the record of a range of nh runs (multi_close, above, spells
 * it out). */
static size_t range_bytes(size_t nh)
{
    return sizeof(gpu_range) + nh * sizeof(CUmemGenericAllocationHandle);
}

/* Granules of a range of `granules` on device i (gpu_multi_map's split). */
static size_t share_of(const gpu_multi *m, size_t granules, int i)
{
    return granules / (size_t)m->n +
           ((size_t)i < granules % (size_t)m->n ? 1 : 0);
}

/* Runs of a range of `granules` laid out with runs of `run` granules (0:
 * one block a device, some maybe empty). */
static size_t runs_of(const gpu_multi *m, size_t granules, int run)
{
    return run > 0 ? (granules + (size_t)run - 1) / (size_t)run : (size_t)m->n;
}

/* Granules of run k of such a range (on device k mod D). */
static size_t run_granules(const gpu_multi *m, size_t granules, int run,
                           size_t k)
{
    if (run == 0) {
        return share_of(m, granules, (int)k);
    }
    size_t r = (size_t)run, left = granules - k * r;
    return left < r ? left : r;
}

/* Granules of such a range on device i. */
static size_t granules_on(const gpu_multi *m, size_t granules, int run, int i)
{
    size_t runs = runs_of(m, granules, run), mine = 0;
    for (size_t k = (size_t)i; k < runs; k += (size_t)m->n) {
        mine += run_granules(m, granules, run, k);
    }
    return mine;
}

bool gpu_multi_fits(gpu_dev *d, size_t size, int run, uint64_t limit)
{
    gpu_multi *m = d->multi;
    uint64_t ranges = 0;
    for (int i = 0; i < m->n; i++) {
        ranges += m->dev[i].bytes;
    }
    /* device 0 also holds every block below GPU_MULTI_MIN */
    uint64_t small = d->held > ranges ? d->held - ranges : 0;
    size_t g = m->gran, granules = (size + g - 1) / g;
    for (int i = 0; i < m->n; i++) {
        uint64_t add = size < GPU_MULTI_MIN
                           ? (i == 0 ? size : 0)
                           : granules_on(m, granules, run, i) * g;
        uint64_t now = m->dev[i].bytes + (i == 0 ? small : 0);
        /* a repeated ordinal ("0,0") counts as a device of its own */
        if (now > limit || add > limit - now) {
            return false;
        }
    }
    return true;
}

/* Undo a range: unmap it, release its runs, free its addresses. */
static void range_free(gpu_dev *d, gpu_range *r, bool mapped)
{
    gpu_multi *m = d->multi;
    if (mapped) {
        gpu_call(d)->cuMemUnmap(r->p, r->size);
    }
    for (size_t k = 0; k < r->nh; k++) {
        if (r->h[k]) {
            gpu_call(d)->cuMemRelease(r->h[k]);
        }
    }
    for (int i = 0; i < m->n; i++) {
        m->dev[i].bytes -= r->blk[i];
    }
    if (r->p) {
        gpu_call(d)->cuMemAddressFree(r->p, r->size);
    }
    fe_free(d->ctx, r, range_bytes(r->nh));
}

CUresult gpu_multi_map(gpu_dev *d, size_t size, int run, CUdeviceptr *p)
{
    gpu_multi *m = d->multi;
    size_t g = m->gran, granules = (size + g - 1) / g;
    run = run > 0 ? run : 0;
    size_t nh = runs_of(m, granules, run);
    gpu_range *r = fe_calloc(d->ctx, range_bytes(nh));
    if (!r) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->size = granules * g;
    r->run = run;
    r->nh = nh;
    CUresult e = gpu_call(d)->cuMemAddressReserve(&r->p, r->size, g, 0, 0);
    if (e != CUDA_SUCCESS) {
        r->p = 0;
        range_free(d, r, false);
        return e;
    }
    /* cuMemMap maps a handle whole (its offset must be 0): one handle a
     * run */
    size_t off = 0;
    for (size_t k = 0; k < nh; k++) {
        size_t share = run_granules(m, granules, run, k);
        int i = (int)(k % (size_t)m->n);
        if (share == 0) {
            continue;
        }
        CUmemAllocationProp prop = prop_on(m->dev[i].ordinal);
        e = gpu_call(d)->cuMemCreate(&r->h[k], share * g, &prop, 0);
        if (e != CUDA_SUCCESS) {
            r->h[k] = 0;
            break;
        }
        r->blk[i] += share * g;
        m->dev[i].bytes += share * g;
        e = gpu_call(d)->cuMemMap(r->p + off, share * g, 0, r->h[k], 0);
        if (e != CUDA_SUCCESS) {
            break;
        }
        off += share * g;
    }
    if (e == CUDA_SUCCESS) {
        CUmemAccessDesc acc[GPU_MULTI_MAX];
        int na = 0;
        for (int i = 0; i < m->n; i++) {
            bool seen = false;
            for (int j = 0; j < na; j++) {
                seen |= acc[j].location.id == m->dev[i].ordinal;
            }
            if (!seen) {
                acc[na].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
                acc[na].location.id = m->dev[i].ordinal;
                acc[na++].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            }
        }
        e = gpu_call(d)->cuMemSetAccess(r->p, r->size, acc, (size_t)na);
    }
    if (e != CUDA_SUCCESS) {
        if (off > 0) {
            gpu_call(d)->cuMemUnmap(r->p, off);
        }
        range_free(d, r, false);
        return e;
    }
    r->next = m->ranges;
    m->ranges = r;
    *p = r->p;
    return CUDA_SUCCESS;
}

int gpu_multi_run(gpu_dev *d, uint64_t p)
{
    gpu_multi *m = d->multi;
    for (gpu_range *r = m ? m->ranges : NULL; r; r = r->next) {
        if (r->p == p) {
            return r->run;
        }
    }
    return -1;
}

size_t gpu_multi_granule(const gpu_dev *d)
{
    return d->multi ? d->multi->gran : 0;
}

bool gpu_multi_unmap(gpu_dev *d, CUdeviceptr p)
{
    gpu_multi *m = d->multi;
    for (gpu_range **at = &m->ranges; *at; at = &(*at)->next) {
        if ((*at)->p == p) {
            gpu_range *r = *at;
            *at = r->next;
            /* other devices' streams joined d's, which was waited for */
            range_free(d, r, true);
            return true;
        }
    }
    return false;
}

/* ---- kernels ------------------------------------------------------------------ */

/* f's function on device i (its context current): loaded from the
 * module's PTX on first use where i has a context of its own. */
static weft_status fn_on(gpu_dev *d, const gpu_fn *f, int i, CUfunction *out,
                         const char *who)
{
    gpu_multi *m = d->multi;
    weft_status st = WEFT_OK;
    if (m->dev[i].cu == d->cu) {
        *out = f->fn;
        return WEFT_OK;
    }
    gpu_name *nm = (gpu_name *)(void *)(f->name - offsetof(gpu_name, s));
    gpu_module *mod = nm->mod;
    if (!nm->on[i]) {
        if (!mod->on[i]) {
            if (!mod->ptx) {
                return fe_error(WEFT_ERR_INTERNAL,
                                "%s: kernel %s has no PTX for device %d", who,
                                nm->s, m->dev[i].ordinal);
            }
            CUjit_option opt[1] = {CU_JIT_OPTIMIZATION_LEVEL};
            void *val[1] = {(void *)(uintptr_t)mod->opt_level};
            bool level = mod->opt_level >= 0 && mod->opt_level <= 4;
            GPU_CU(d, who, cuModuleLoadDataEx, &mod->on[i], mod->ptx,
                   level ? 1u : 0u, level ? opt : NULL, level ? val : NULL);
        }
        GPU_CU(d, who, cuModuleGetFunction, &nm->on[i], mod->on[i], nm->s);
    }
    *out = nm->on[i];
cleanup:
    return st;
}

void gpu_multi_module_free(gpu_dev *d, gpu_module *mod)
{
    gpu_multi *m = d ? d->multi : NULL;
    if (!m || !mod) {
        return;
    }
    gpu_lock(d);
    for (int i = 1; i < m->n; i++) {
        bool pushed = false;
        if (mod->on[i] && push_other(d, &m->dev[i], &pushed,
                                     "weft_context_free") == WEFT_OK) {
            gpu_call(d)->cuModuleUnload(mod->on[i]);
            pop_other(d, pushed);
        }
        mod->on[i] = NULL;
    }
    gpu_unlock(d);
}

/* Device o's argument block for a part that reads replicas of rep (on the
 * host thread, before the part is queued): args copied into o->args (grown
 * as needed), whose replicas' words rep_copy then points at the copies. */
static weft_status rep_prepare(gpu_dev *d, gpu_other *o,
                               const gpu_replicas *rep, void *args,
                               const char *who)
{
    if (o->args_cap < rep->words) {
        uint64_t *a = fe_calloc(d->ctx, sizeof *a * rep->words);
        if (!a) {
            return fe_oom(who);
        }
        if (o->args) {
            fe_free(d->ctx, o->args, sizeof *o->args * o->args_cap);
        }
        o->args = a;
        o->args_cap = rep->words;
    }
    memcpy(o->args, args, sizeof *o->args * rep->words);
    for (int i = 0; i < rep->n; i++) {
        d->multi->moved += rep->r[i].bytes;
    }
    return WEFT_OK;
}

/* Device o's replicas of rep (its context current, its stream after
 * device 0's work): the arrays copied on its stream into its replica
 * buffer (grown as needed: the old one freed once its stream is done with
 * it), and o->args's words pointed at them.  Only driver calls: a failure
 * is its result and *call. */
static CUresult rep_copy(gpu_dev *d, gpu_other *o, const gpu_replicas *rep,
                         const char **call)
{
    const gpu_driver *g = gpu_call(d);
    size_t need = 0;
    for (int i = 0; i < rep->n; i++) {
        need += (rep->r[i].bytes + 255) & ~(size_t)255;
    }
    CUresult r = CUDA_SUCCESS;
    if (o->rep_size < need) {
        if (o->rep) {
            *call = "cuStreamSynchronize";
            if ((r = g->cuStreamSynchronize(o->stream)) != CUDA_SUCCESS) {
                return r;
            }
            g->cuMemFree(o->rep);
            o->rep = 0;
            o->rep_size = 0;
        }
        *call = "cuMemAlloc";
        if ((r = g->cuMemAlloc(&o->rep, need)) != CUDA_SUCCESS) {
            return r;
        }
        o->rep_size = need;
    }
    CUdeviceptr at = o->rep;
    *call = "cuMemcpyDtoDAsync";
    for (int i = 0; i < rep->n && r == CUDA_SUCCESS; i++) {
        int w = rep->r[i].word;
        r = gpu_call(d)->cuMemcpyDtoDAsync(at, (CUdeviceptr)o->args[w],
                                           rep->r[i].bytes, o->stream);
        o->args[w] = (uint64_t)at;
        at += (rep->r[i].bytes + 255) & ~(size_t)255;
    }
    return r;
}

/* With a trace: a timing event of device o's part (made once, kept in o)
 * recorded on its stream (its context current); a failure leaves *e
 * unset (no time in the span). */
static void part_mark(gpu_dev *d, CUstream stream, CUevent *e)
{
    if (!*e && gpu_call(d)->cuEventCreate(e, 0 /* timing */) != CUDA_SUCCESS) {
        *e = NULL;
        return;
    }
    if (gpu_call(d)->cuEventRecord(*e, stream) != CUDA_SUCCESS) {
        gpu_call(d)->cuEventDestroy(*e);
        *e = NULL;
    }
}

/* ns since *t, and *t now (a step's time, with a trace). */
static uint64_t lap(uint64_t *t)
{
    uint64_t now = fe_clock_ns(), dt = now - *t;
    *t = now;
    return dt;
}

/* With a trace (*t set), the time since *t counted to j's step k. */
static void step(gpu_job *j, uint64_t *t, int k)
{
    if (*t) {
        j->ns[k] += lap(t);
    }
}

/* Queue job j, device o's part (its context current, o != device 0):
 * its stream waits for `ready`, copies the replicas, runs the kernel and
 * records o->done after it; with j->timed, timing events around the
 * kernel and the steps' times.  Only driver calls (the queueing thread
 * runs it): j->r and j->call say the first failure. */
static void part_queue(gpu_dev *d, gpu_other *o, CUevent ready, gpu_job *j)
{
    uint64_t t = j->timed ? fe_clock_ns() : 0;
    j->call = "cuStreamWaitEvent";
    j->r = j->ready ? gpu_call(d)->cuStreamWaitEvent(o->stream, ready, 0)
                    : CUDA_SUCCESS;
    step(j, &t, STEP_WAIT);
    void *args = j->args;
    if (j->r == CUDA_SUCCESS && j->rep) {
        j->r = rep_copy(d, o, j->rep, &j->call);
        args = o->args;
        step(j, &t, STEP_REP);
    }
    if (j->r != CUDA_SUCCESS) {
        return;
    }
    if (t) {
        part_mark(d, o->stream, &o->tb);
        step(j, &t, STEP_MARKS);
    }
    void *params[5] = {args, &j->n, &j->grain, &j->first, &j->skip};
    j->call = "cuLaunchKernel";
    j->r = gpu_call(d)->cuLaunchKernel(j->fn, j->grid, j->rows, 1,
                                       (unsigned)j->block, 1, 1, 0, o->stream,
                                       params, NULL);
    step(j, &t, STEP_LAUNCH);
    if (j->r != CUDA_SUCCESS) {
        return;
    }
    if (t) {
        part_mark(d, o->stream, &o->te);
        step(j, &t, STEP_MARKS);
    }
    j->call = "cuEventRecord";
    j->r = gpu_call(d)->cuEventRecord(o->done, o->stream);
    step(j, &t, STEP_DONE);
}

/* ---- queueing threads ("Queueing") ----------------------------------------- */

/* Device o's relay: its part (o->job) queued on the relay's thread, o's
 * context made current there on the first. */
static void part_relay(void *arg)
{
    gpu_other *o = arg;
    gpu_dev *d = o->d;
    if (!o->current) {
        CUresult r = gpu_call(d)->cuCtxSetCurrent(o->cu);
        if (r != CUDA_SUCCESS) {
            o->job.r = r;
            o->job.call = "cuCtxSetCurrent";
            return;
        }
        o->current = true;
    }
    part_queue(d, o, d->multi->ready, &o->job);
}

/* Start device o's relay (d's lock held); without one (threads or memory
 * short) its parts are queued by the launching thread. */
static void relay_open(gpu_dev *d, gpu_other *o)
{
    o->d = d;
    o->current = false;
    o->relay = gpu_relay_start(d->ctx, part_relay, o);
}

static void relay_close(gpu_other *o)
{
    gpu_relay_stop(o->relay);
    o->relay = NULL;
}

/* ---- a split launch -------------------------------------------------------- */

/* With a trace: the parts' kernel times (ms; -1 where unknown) once they
 * have finished (a host wait: a traced run is not one to time for speed). */
static void part_times(gpu_dev *d, const gpu_part *part, double *ms)
{
    gpu_multi *m = d->multi;
    for (int i = 0; i < m->n; i++) {
        CUevent tb = m->dev[i].tb, te = m->dev[i].te;
        ms[i] = -1;
        bool pushed = false;
        if (part[i].grid == 0 || !tb || !te ||
            push_other(d, &m->dev[i], &pushed, "weft_run") != WEFT_OK) {
            continue;
        }
        float t = 0;
        if (gpu_call(d)->cuEventSynchronize(te) == CUDA_SUCCESS &&
            gpu_call(d)->cuEventElapsedTime(&t, tb, te) == CUDA_SUCCESS) {
            ms[i] = t;
        }
        pop_other(d, pushed);
    }
}

/* Device i's part queued on the launching thread: its context pushed
 * (where it is another), part_queue, d's context back. */
static void part_here(gpu_dev *d, int i, gpu_job *j)
{
    gpu_multi *m = d->multi;
    gpu_other *o = &m->dev[i];
    uint64_t t = j->timed ? fe_clock_ns() : 0;
    bool other = o->cu != d->cu;
    if (other) {
        j->r = gpu_call(d)->cuCtxPushCurrent(o->cu);
        j->call = "cuCtxPushCurrent";
    }
    step(j, &t, STEP_CTX);
    if (j->r != CUDA_SUCCESS) {
        return;
    }
    part_queue(d, o, m->ready, j);
    if (t) {
        t = fe_clock_ns();
    }
    if (other) {
        CUcontext popped;
        gpu_call(d)->cuCtxPopCurrent(&popped);
    }
    step(j, &t, STEP_BACK);
}

/* Device 0's part (d's stream), between timing events with a trace. */
static weft_status part_zero(gpu_dev *d, const gpu_fn *f, int block,
                             const gpu_part *p, void *args, CUevent *tb,
                             CUevent *te, bool timed, const char *who)
{
    if (p->grid == 0) {
        return WEFT_OK;
    }
    int64_t n = p->n, grain = p->grain, first = p->first, skip = p->skip;
    void *params[5] = {args, &n, &grain, &first, &skip};
    if (timed) {
        part_mark(d, d->stream, tb);
    }
    weft_status st = gpu_launch_rows(d, f, p->grid, p->rows > 0 ? p->rows : 1,
                                     block, 0, params, who);
    if (st == WEFT_OK && timed) {
        part_mark(d, d->stream, te);
    }
    return st;
}

/* A traced split launch's span (started at t0): each device's work
 * (sizes, named by `what`) and kernel time (after a wait for the parts),
 * the launching thread's time to queue the parts and the join (issue_us,
 * before that wait), and that time by step: host[] the launching
 * thread's (SPLIT_HOST), job[i].ns the other devices' summed. */
static void split_span(gpu_dev *d, const gpu_fn *f, const gpu_part *part,
                       const char *what, const int64_t *sizes, uint64_t t0,
                       const uint64_t *host, const gpu_job *job)
{
    gpu_multi *m = d->multi;
    static const char *const names[STEPS] = {"ctx",  "wait", "rep",  "launch",
                                             "done", "back", "marks"};
    static const char *const hnames[SPLIT_HOST] = {
        "h_ready", "h_jobs", "h_post", "h_here", "h_zero", "h_acks", "h_join"};
    double issue_us = (double)(fe_clock_ns() - t0) * 1e-3;
    double ms[GPU_MULTI_MAX];
    part_times(d, part, ms);
    char at[GPU_MULTI_MAX * 24] = "", tm[GPU_MULTI_MAX * 24] = "";
    char steps[GPU_MULTI_MAX * STEPS * 16] = "";
    size_t used = 0, tused = 0, sused = 0;
    for (int i = 0; i < m->n && used < sizeof at && tused < sizeof tm; i++) {
        used += (size_t)snprintf(at + used, sizeof at - used, "%s%lld",
                                 i ? "," : "", (long long)sizes[i]);
        tused += (size_t)snprintf(tm + tused, sizeof tm - tused, "%s%.4f",
                                  i ? "," : "", ms[i]);
    }
    char hs[SPLIT_HOST * 24] = "";
    size_t hused = 0;
    for (int k = 0; k < SPLIT_HOST && hused < sizeof hs; k++) {
        hused +=
            (size_t)snprintf(hs + hused, sizeof hs - hused, ",\"%s_us\":%.2f",
                             hnames[k], (double)host[k] * 1e-3);
    }
    for (int k = 0; k < STEPS && sused < sizeof steps; k++) {
        double sum = 0;
        for (int i = 1; i < m->n; i++) {
            sum += (double)job[i].ns[k] * 1e-3;
        }
        sused += (size_t)snprintf(steps + sused, sizeof steps - sused,
                                  ",\"%s_us\":%.2f", names[k], sum);
    }
    fe_trace_span(d->ctx, t0, "gpu", "kernel.split",
                  "\"kernel\":\"%s\",\"%s\":[%s],\"ms\":[%s],"
                  "\"issue_us\":%.1f%s%s",
                  f->name, what, at, tm, issue_us, hs, steps);
}

weft_status gpu_launch_parts(gpu_dev *d, const gpu_fn *f, int block,
                             const gpu_part *part, void *args,
                             const gpu_replicas *rep, const char *what,
                             const int64_t *sizes, const char *who)
{
    gpu_multi *m = d->multi;
    weft_status st = WEFT_OK;
    uint64_t t0 = d->ctx ? fe_clock_ns() : 0;
    bool traced = d->ctx && fe_trace_begin(d->ctx);
    bool others = false;
    for (int i = 1; i < m->n; i++) {
        others |= part[i].grid > 0;
    }
    bool timed = traced && others;
    uint64_t host[SPLIT_HOST] = {0}; /* split_span's h_ steps (ns) */
    uint64_t t = t0;
    gpu_job job[GPU_MULTI_MAX];
    CUevent *tb0 = &m->dev[0].tb, *te0 = &m->dev[0].te;
    if (!others) {
        st = part_zero(d, f, block, &part[0], args, tb0, te0, false, who);
        goto cleanup;
    }
    /* no `ready` where device 0's stream has done all that was queued on
     * it ("Idle") */
    bool ready = gpu_call(d)->cuStreamQuery(d->stream) != CUDA_SUCCESS;
    if (ready) {
        GPU_CU(d, who, cuEventRecord, m->ready, d->stream);
    }
    m->launches++;
    host[0] = lap(&t);
    /* the other devices' jobs: on the host thread (fn_on loads a module on
     * first use, rep_prepare grows an argument block), then queued by
     * their threads or here */
    for (int i = 1; i < m->n; i++) {
        const gpu_part *p = &part[i];
        gpu_job *j = &job[i];
        memset(j, 0, sizeof *j);
        if (p->grid == 0) {
            continue;
        }
        gpu_other *o = &m->dev[i];
        bool pushed = false;
        CUfunction fn = NULL;
        gpu_name *nm = (gpu_name *)(void *)(f->name - offsetof(gpu_name, s));
        if (o->cu == d->cu) {
            fn = f->fn;
        } else if (nm->on[i]) {
            fn = nm->on[i]; /* loaded: no need of o's context */
        } else {
            st = push_other(d, o, &pushed, who);
            if (st == WEFT_OK) {
                st = fn_on(d, f, i, &fn, who);
            }
            pop_other(d, pushed);
        }
        if (st == WEFT_OK && rep && rep->n > 0) {
            st = rep_prepare(d, o, rep, args, who);
        }
        if (st != WEFT_OK) {
            goto cleanup;
        }
        *j = (gpu_job){.fn = fn,
                       .grid = p->grid,
                       .rows = p->rows > 0 ? p->rows : 1,
                       .block = block,
                       .args = args,
                       .n = p->n,
                       .grain = p->grain,
                       .first = p->first,
                       .skip = p->skip,
                       .rep = rep && rep->n > 0 ? rep : NULL,
                       .timed = timed,
                       .ready = ready};
    }
    host[1] = lap(&t);
    /* the relays first (they queue while this thread works), then the
     * parts of devices without one, then device 0's */
    for (int i = 1; i < m->n; i++) {
        if (part[i].grid > 0 && m->dev[i].relay) {
            m->dev[i].job = job[i];
            gpu_relay_post(m->dev[i].relay);
        }
    }
    host[2] = lap(&t);
    for (int i = m->n - 1; i >= 1 && st == WEFT_OK; i--) {
        if (part[i].grid > 0 && !m->dev[i].relay) {
            part_here(d, i, &job[i]);
        }
    }
    host[3] = lap(&t);
    if (st == WEFT_OK) {
        st = part_zero(d, f, block, &part[0], args, tb0, te0, timed, who);
        host[4] = lap(&t);
    }
    for (int i = 1; i < m->n; i++) {
        if (part[i].grid > 0 && m->dev[i].relay) {
            gpu_relay_wait(m->dev[i].relay);
            job[i] = m->dev[i].job;
        }
    }
    host[5] = lap(&t);
    /* every part queued (or failed): then d's stream joins them, each
     * after its `done`, recorded after its kernel */
    for (int i = 1; i < m->n; i++) {
        if (part[i].grid > 0 && job[i].r != CUDA_SUCCESS && st == WEFT_OK) {
            st = gpu_cu_fail(d, who, job[i].call, job[i].r, __FILE__, __LINE__);
        }
    }
    if (st != WEFT_OK) {
        goto cleanup;
    }
    for (int i = 1; i < m->n; i++) {
        if (part[i].grid > 0) {
            GPU_CU(d, who, cuStreamWaitEvent, d->stream, m->dev[i].done, 0);
        }
    }
    host[6] = lap(&t);
    if (timed) {
        split_span(d, f, part, what, sizes, t0, host, job);
    }
cleanup:
    return st;
}

/* An uneven kernel's chunks [0, chunks) of one element each (n = total)
 * dealt out in pieces ("Pieces"): pieces of x chunks, a multiple of the
 * block (each a row of x / block blocks), piece q on device q mod D.  x
 * is `piece` (the elements of a granule of the interleaved output) where
 * that leaves GPU_PIECES_MIN pieces a device, else GPU_PIECE at most and
 * at least GPU_PIECES_MIN a device where the chunks allow. */
static weft_status launch_dealt(gpu_dev *d, const gpu_fn *f, int64_t total,
                                int64_t grain, int64_t chunks, int block,
                                int64_t piece, void *args,
                                const gpu_replicas *rep, const char *who)
{
    gpu_multi *m = d->multi;
    int64_t nd = m->n;
    int64_t x = chunks / (nd * GPU_PIECES_MIN);
    if (piece > 0 && piece % block == 0 && x >= piece) {
        x = piece;
    } else {
        x = (x < GPU_PIECE ? x : GPU_PIECE) / block * block;
    }
    x = x > block ? x : block;
    int64_t pieces = (chunks + x - 1) / x;
    gpu_part part[GPU_MULTI_MAX];
    int64_t sizes[GPU_MULTI_MAX];
    for (int64_t i = 0; i < nd; i++) {
        int64_t mine = pieces > i ? (pieces - i + nd - 1) / nd : 0;
        part[i] = (gpu_part){.grid = mine > 0 ? (unsigned)(x / block) : 0,
                             .rows = mine < 65535 ? (unsigned)mine : 65535u,
                             .n = total,
                             .grain = grain,
                             .first = i * x,
                             .skip = nd * x};
        /* the last piece, on device (pieces - 1) mod D, may be short */
        sizes[i] =
            mine * x - ((pieces - 1) % nd == i ? pieces * x - chunks : 0);
    }
    return gpu_launch_parts(d, f, block, part, args, rep, "chunks", sizes, who);
}

weft_status gpu_launch_split(gpu_dev *d, const gpu_fn *f, int64_t total,
                             int64_t grain, int64_t unit, int block,
                             bool uneven, int64_t piece, void *args,
                             const gpu_replicas *rep, const char *who)
{
    gpu_multi *m = d->multi;
    int64_t chunks = (total + unit - 1) / unit;
    int64_t pieces = (chunks + GPU_SPLIT_UNIT - 1) / GPU_SPLIT_UNIT;
    if (uneven && unit == 1 && pieces >= GPU_SPLIT_MIN) {
        return launch_dealt(d, f, total, grain, chunks, block, piece, args, rep,
                            who);
    }
    int64_t bound[GPU_MULTI_MAX + 1];
    for (int i = 0; i <= m->n; i++) { /* device 0 gets the remainder */
        int64_t c = (pieces * i + m->n - 1) / m->n * GPU_SPLIT_UNIT;
        bound[i] = c < chunks && pieces >= GPU_SPLIT_MIN ? c : chunks;
    }
    bound[0] = 0;
    gpu_part part[GPU_MULTI_MAX];
    int64_t sizes[GPU_MULTI_MAX];
    for (int i = 0; i < m->n; i++) {
        int64_t first = bound[i], hi = bound[i + 1] * unit;
        int64_t items = bound[i + 1] - first;
        unsigned grid = items > 0 ? gpu_grid_for(d, f, block, items) : 0;
        if (uneven && items > 0) {
            int64_t all = (items + block - 1) / block;
            grid = all < 0x7fffffff ? (unsigned)all : 0x7fffffffu;
        }
        part[i] = (gpu_part){.grid = grid,
                             .n = hi < total ? hi : total,
                             .grain = grain,
                             .first = first};
        sizes[i] = items;
    }
    return gpu_launch_parts(d, f, block, part, args, rep, "chunks", sizes, who);
}

weft_status gpu_launch_items(gpu_dev *d, const gpu_fn *f, int64_t n,
                             int64_t grain, int per, int block, void *args,
                             const gpu_replicas *rep, const char *who)
{
    gpu_multi *m = d->multi;
    gpu_part part[GPU_MULTI_MAX];
    int64_t sizes[GPU_MULTI_MAX];
    for (int i = 0; i < m->n; i++) {
        int64_t lo = n * i / m->n, hi = n * (i + 1) / m->n;
        int64_t threads = (hi - lo) * per;
        part[i] =
            (gpu_part){.grid = hi > lo ? gpu_grid_for(d, f, block, threads) : 0,
                       .n = hi,
                       .grain = grain,
                       .first = lo};
        sizes[i] = hi - lo;
    }
    return gpu_launch_parts(d, f, block, part, args, rep, "items", sizes, who);
}

/* ---- NCCL ------------------------------------------------------------------- */

static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;
static char nccl_path[1024]; /* where libnccl.so.2 was found, or "" */

/* $WEFT_NCCL, then the library path, then pip's packages
 * (nvidia-nccl-cu13, -cu12: site-packages/nvidia/nccl/lib). */
static void nccl_find(void)
{
    const char *env = getenv("WEFT_NCCL");
    void *h = NULL;
    if (env && *env && (h = dlopen(env, RTLD_NOW | RTLD_LOCAL)) != NULL) {
        snprintf(nccl_path, sizeof nccl_path, "%s", env);
    } else if ((h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL)) != NULL) {
        snprintf(nccl_path, sizeof nccl_path, "libnccl.so.2");
    } else {
        static const char *const pats[] = {
            "%s/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
            "%s/.local/lib/python3*/site-packages/nvidia/nccl/lib/"
            "libnccl.so.2",
            "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/"
            "libnccl.so.2",
            "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
        };
        const char *roots[] = {getenv("VIRTUAL_ENV"), getenv("HOME"), "", ""};
        for (size_t i = 0; !h && i < sizeof pats / sizeof pats[0]; i++) {
            char pat[1024];
            if (i < 2 && !roots[i]) {
                continue;
            }
            snprintf(pat, sizeof pat, pats[i], roots[i]);
            glob_t gl;
            if (glob(pat, 0, NULL, &gl) == 0) {
                for (size_t k = 0; !h && k < gl.gl_pathc; k++) {
                    h = dlopen(gl.gl_pathv[k], RTLD_NOW | RTLD_LOCAL);
                    if (h) {
                        snprintf(nccl_path, sizeof nccl_path, "%s",
                                 gl.gl_pathv[k]);
                    }
                }
                globfree(&gl);
            }
        }
    }
    if (h) {
        /* NVLink SHARP multicast objects can take a shared host's GPUs
         * out of service when a process dies holding them: off unless the
         * user says otherwise, before any NCCL communicator exists */
        setenv("NCCL_NVLS_ENABLE", "0", 0);
    }
}

const char *gpu_nccl_find(void)
{
    pthread_once(&nccl_once, nccl_find);
    return nccl_path[0] ? nccl_path : NULL;
}
