/*
 * runtime-gpu/mem.c: device memory, the pool, and mirrors of host arrays.
 *
 * The pool.  Blocks come from cuMemAlloc in size classes and go back to a
 * free list of their class instead of cuMemFree, so that a program run
 * many times allocates from the driver only on its first run.  Classes:
 * up to 4 KiB, multiples of 256 bytes (16 classes); above, eight steps per
 * power of two (4.5, 5, ... 8 KiB; 9, 10, ... 16 KiB; ...), so a block
 * wastes at most 1/8 of its size; 416 classes reach 4 EiB.  A request is
 * rounded up to its class, and the pool hands back any block of the class
 * and layout (over several GPUs, a large block is one block a device or
 * interleaved, multi.c "Memory": gpu_mem_alloc_laid; a request takes
 * only a block of its own layout, since the layout is all it asks for,
 * and a flush gives back both).
 * The stream is ordered, so a block freed after a launch that uses it may
 * be handed to a later launch at once; before a block goes back to the
 * driver (cuMemFree) the stream is waited for.  The pool is not bounded:
 * it is emptied when the driver runs out of memory and by gpu_mem_close.
 *
 * Mirrors.  An array used by a kernel gets a device copy, kept in a record
 * (gpu_mirror) in a->dev with a->mirror = &mirror_ops, so that lib/ calls
 * back (fe_array_host before a host read, host_written before a host
 * write, drop when the array dies).  The record has one device buffer per
 * leaf and two flags, host_valid and device_valid, at least one of them
 * true:
 *     gpu_array_in     uploads unless device_valid; then both are valid;
 *     gpu_array_out    device_valid only (the kernel will write it);
 *     to_host          downloads unless host_valid; then both are valid;
 *     host_written     host_valid only (the buffers stay, for reuse);
 *     eviction         downloads unless host_valid, frees the buffers.
 * A pin count keeps the arrays of a run on the device until
 * gpu_array_unpin.
 *
 * Prefetches.  mirror_prefetch starts the download of a small array
 * whose device copy is newer (awhile's loop state, lib/interp.c) into
 * d->stage, pinned memory, and records d->stage_event after it, without
 * waiting: a later to_host waits for that event only (cuEventSynchronize)
 * and copies out of the stage, while the kernels queued after the copy
 * (the speculative body of the loop) run on.  The stage is handed out
 * from its start until every prefetched copy has been taken or dropped;
 * a mirror whose device copy is written again, or whose host copy
 * becomes current another way, drops its prefetch.  One event serves
 * every prefetch: waiting for its latest record waits for every copy
 * queued before it.  Records are linked in an LRU list of their gpu_dev,
 * most recently used (gpu_array_in or _out) at the head.
 *
 * Out of memory.  When cuMemAlloc fails with CUDA_ERROR_OUT_OF_MEMORY (or
 * the test limit of gpu_mem_set_limit would be passed), gpu_mem_alloc
 * waits for the stream, empties the pool to the driver and retries; then
 * evicts the least recently used unpinned array with device buffers and
 * retries, one array at a time; when only pinned arrays are left it
 * reports WEFT_ERR_OUT_OF_MEMORY with the bytes they hold.
 *
 * Locking: everything here runs under the gpu_dev's recursive lock; the
 * mirror hooks take it themselves, from whichever thread calls them.
 *
 * Traces (WEFT_TRACE): uploads, downloads (of whole arrays and plain
 * copies, each timed up to the end of its wait) and evictions are spans
 * of category "memory" with their bytes, when the context traces.
 */
#include <string.h>

#include "driver.h"

struct gpu_block {
    gpu_block *next;
    CUdeviceptr p;
    int run; /* its layout over several devices (gpu_multi_run; 0) */
};

struct gpu_mirror {
    gpu_dev *d; /* the device that holds the copy */
    weft_array *a;
    gpu_mirror *prev, *next; /* d's LRU list, most recent first */
    int nleaf;
    int pins;          /* gpu_array_in/_out not yet unpinned */
    bool host_valid;   /* a->data holds the current values */
    bool device_valid; /* ptr[] holds the current values */
    bool foreign;      /* ptr[] are the caller's (a device array):
                                  never freed, pooled or evicted */
    bool fixed;        /* never evicted: foreign, or its addresses
                                  were given out (gpu_array_export) */
    bool host_own;     /* a->data[] made here (a device array read
                                  on the host), freed at drop */
    size_t stage;      /* 1 + the offset in d->stage of a
                                  prefetched copy to take (0: none) */
    size_t size;       /* of this record, for fe_free */
    uint64_t *ptr;     /* device buffer of each leaf (0: none) */
    size_t *bytes;     /* bytes of each leaf */
};

static void mirror_drop(weft_array *a);
static weft_status mirror_to_host(weft_array *a);
static void mirror_host_written(weft_array *a);
static weft_status mirror_wait(weft_array *a);
static bool mirror_device_newer(weft_array *a);
static void mirror_prefetch(weft_array *a);

static const fe_mirror_ops mirror_ops = {
    .to_host = mirror_to_host,
    .host_written = mirror_host_written,
    .drop = mirror_drop,
    .wait = mirror_wait,
    .device_newer = mirror_device_newer,
    .prefetch = mirror_prefetch,
};

/* ---- size classes and the pool ------------------------------------------- */

#define SMALL_MAX 4096 /* classes of 256 bytes up to here */

/* The class of a request of n >= 1 bytes and its rounded size in *size;
 * -1 when n is beyond every class (more than 2^62 bytes). */
static int size_class(size_t n, size_t *size)
{
    if (n <= SMALL_MAX) {
        int c = (int)((n + 255) / 256) - 1;
        *size = (size_t)(c + 1) * 256;
        return c;
    }
    if ((uint64_t)n > (uint64_t)1 << 62) {
        return -1;
    }
    int k = 0; /* floor(log2(n - 1)) >= 12 */
    for (uint64_t v = (uint64_t)n - 1; v > 1; v >>= 1) {
        k++;
    }
    uint64_t step = (uint64_t)1 << (k - 3);
    uint64_t m = ((uint64_t)n + step - 1) / step; /* 9 .. 16 */
    *size = (size_t)(m * step);
    return 16 + (k - 12) * 8 + (int)(m - 9);
}

/* The size of blocks of class c. */
static size_t class_bytes(int c)
{
    if (c < 16) {
        return (size_t)(c + 1) * 256;
    }
    int k = 12 + (c - 16) / 8;
    uint64_t m = 9 + (uint64_t)((c - 16) % 8);
    return (size_t)(m << (k - 3));
}

/* The bytes a block for a request of n bytes really takes. */
static size_t rounded(size_t n)
{
    size_t size = 0;
    return n && size_class(n, &size) >= 0 ? size : 0;
}

/* A new block of `size` bytes from the driver, or the test limit's
 * simulated out-of-memory. */
static CUresult driver_alloc(gpu_dev *d, size_t size, int run, CUdeviceptr *p)
{
    if (d->limit &&
        (d->multi ? !gpu_multi_fits(d, size, run, d->limit)
                  : d->held > d->limit || size > d->limit - d->held)) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = d->multi && size >= GPU_MULTI_MIN
                     ? gpu_multi_map(d, size, run, p) /* over devices */
                     : gpu_call(d)->cuMemAlloc(p, size);
    if (r == CUDA_SUCCESS) {
        d->held += size;
    }
    return r;
}

/* Give block p of `size` bytes back to the driver (d entered, stream
 * waited for).  Errors are ignored: the block is gone either way. */
static void driver_free(gpu_dev *d, CUdeviceptr p, size_t size)
{
    if (!d->multi || !gpu_multi_unmap(d, p)) {
        gpu_call(d)->cuMemFree(p);
    }
    d->held -= size;
}

/* Empty the pool to the driver (live: d entered, stream waited for; else
 * only forget the blocks). */
static void pool_flush(gpu_dev *d, bool live)
{
    for (int c = 0; c < GPU_CLASSES; c++) {
        size_t size = class_bytes(c);
        while (d->pool[c]) {
            gpu_block *b = d->pool[c];
            d->pool[c] = b->next;
            if (live) {
                driver_free(d, b->p, size);
            } else {
                d->held -= size;
            }
            d->pooled -= size;
            b->next = d->spare_blocks;
            d->spare_blocks = b;
        }
    }
}

/* Free the records kept for reuse (d locked). */
static void spares_free(gpu_dev *d)
{
    while (d->spare_blocks) {
        gpu_block *b = d->spare_blocks;
        d->spare_blocks = b->next;
        fe_free(d->ctx, b, sizeof *b);
    }
    while (d->spare_mirrors) {
        gpu_mirror *m = d->spare_mirrors;
        d->spare_mirrors = m->next;
        fe_free(d->ctx, m, m->size);
    }
    d->nspare_mirrors = 0;
}

/* ---- the LRU list --------------------------------------------------------- */

static void lru_unlink(gpu_dev *d, gpu_mirror *m)
{
    if (m->prev) {
        m->prev->next = m->next;
    } else {
        d->lru_head = m->next;
    }
    if (m->next) {
        m->next->prev = m->prev;
    } else {
        d->lru_tail = m->prev;
    }
    m->prev = m->next = NULL;
}

static void lru_push(gpu_dev *d, gpu_mirror *m)
{
    m->prev = NULL;
    m->next = d->lru_head;
    if (d->lru_head) {
        d->lru_head->prev = m;
    } else {
        d->lru_tail = m;
    }
    d->lru_head = m;
}

static bool has_buffers(const gpu_mirror *m)
{
    for (int l = 0; l < m->nleaf; l++) {
        if (m->ptr[l]) {
            return true;
        }
    }
    return false;
}

/* Device bytes of m's buffers. */
static uint64_t buffer_bytes(const gpu_mirror *m)
{
    uint64_t n = 0;
    for (int l = 0; l < m->nleaf; l++) {
        n += m->ptr[l] ? rounded(m->bytes[l]) : 0;
    }
    return n;
}

/* Forget m's prefetched copy, if any (d locked); the stage is handed out
 * from its start again once no prefetch is left (a copy into it still
 * queued lands before any later one: the stream is ordered). */
static void unstage(gpu_dev *d, gpu_mirror *m)
{
    if (m->stage) {
        m->stage = 0;
        if (--d->nstaged == 0) {
            d->stage_used = 0;
        }
    }
}

/* ---- tracing ---------------------------------------------------------------- */

/* The start of a traced copy or eviction: the clock, or 0 when d's
 * context writes no trace. */
static uint64_t trace_begin(const gpu_dev *d)
{
    return d->ctx ? fe_trace_begin(d->ctx) : 0;
}

/* A copy of `bytes` that began at t0 ("upload", "download"), as a span. */
static void trace_copy(gpu_dev *d, uint64_t t0, const char *what,
                       uint64_t bytes)
{
    if (t0) {
        fe_trace_span(d->ctx, t0, "memory", what, "\"bytes\":%llu",
                      (unsigned long long)bytes);
    }
}

/* ---- copies of whole arrays ----------------------------------------------- */

/* d's pinned bounce buffer (GPU_BOUNCE bytes), made on first use (d
 * entered), or NULL when the driver gives none (copies then go straight
 * to pageable memory). */
static void *bounce(gpu_dev *d)
{
    if (!d->bounce) {
        void *p = NULL;
        if (gpu_call(d)->cuMemHostAlloc(&p, GPU_BOUNCE, 0) == CUDA_SUCCESS) {
            d->bounce = p;
        }
    }
    return d->bounce;
}

/* The bytes a leaf of `bytes` takes in a pinned buffer (bounce, stage):
 * leaves start at 16-byte offsets. */
static size_t leaf_room(size_t bytes)
{
    return (bytes + 15) & ~(size_t)15;
}

/* The bytes all of m's leaves take in a pinned buffer (leaf_room). */
static size_t staged_bytes(const gpu_mirror *m)
{
    size_t room = 0;
    for (int l = 0; l < m->nleaf; l++) {
        room += leaf_room(m->bytes[l]);
    }
    return room;
}

/* Queue the download of m's leaves on d's stream (d entered) into buf,
 * each at its leaf_room offset, or, buf NULL, straight into the host
 * copy; *n grows by the bytes queued.  The driver's result. */
static CUresult queue_leaves(gpu_dev *d, gpu_mirror *m, char *buf, uint64_t *n)
{
    size_t off = 0;
    for (int l = 0; l < m->nleaf; l++) {
        if (m->bytes[l] > 0 && m->ptr[l]) {
            void *dst = buf ? buf + off : m->a->data[l];
            CUresult r = gpu_call(d)->cuMemcpyDtoHAsync(dst, m->ptr[l],
                                                        m->bytes[l], d->stream);
            if (r != CUDA_SUCCESS) {
                return r;
            }
            *n += m->bytes[l];
        }
        off += leaf_room(m->bytes[l]);
    }
    return CUDA_SUCCESS;
}

/* Copy m's leaves out of buf (queue_leaves' layout) into its host copy. */
static void take_leaves(gpu_mirror *m, const char *buf)
{
    size_t off = 0;
    for (int l = 0; l < m->nleaf; l++) {
        if (m->bytes[l] > 0 && m->ptr[l]) {
            memcpy(m->a->data[l], buf + off, m->bytes[l]);
        }
        off += leaf_room(m->bytes[l]);
    }
}

/* Download every leaf of m to the host (d entered); host_valid after.
 * Small arrays (all leaves within GPU_BOUNCE bytes, each at a 16-byte
 * offset) come through the pinned bounce buffer: a copy into pinned
 * memory is a plain DMA the stream runs, where one into pageable memory
 * is staged by the driver, and the host copy out of it is a few
 * nanoseconds at these sizes. */
static weft_status download_leaves(gpu_dev *d, gpu_mirror *m, const char *who)
{
    uint64_t t0 = trace_begin(d);
    weft_status st = WEFT_OK;
    uint64_t n = 0;
    char *b = staged_bytes(m) <= GPU_BOUNCE ? bounce(d) : NULL;
    CUresult r = queue_leaves(d, m, b, &n);
    if (r != CUDA_SUCCESS) {
        return gpu_cu_fail(d, who, "cuMemcpyDtoHAsync", r, __FILE__, __LINE__);
    }
    st = gpu_stream_wait(d, who);
    if (st == WEFT_OK && b) {
        take_leaves(m, b);
    }
    if (st == WEFT_OK) {
        d->downloaded += n;
        m->host_valid = true;
        unstage(d, m);
        trace_copy(d, t0, "download", n);
    }
    return st;
}

/* d's pinned upload area, made on first use (d entered), or NULL. */
static void *up_area(gpu_dev *d)
{
    if (!d->up) {
        void *p = NULL;
        if (gpu_call(d)->cuMemHostAlloc(&p, GPU_UP, 0) == CUDA_SUCCESS) {
            d->up = p;
        }
    }
    return d->up;
}

/* Upload every leaf of m from the host (d entered); device_valid after.
 * Small arrays (all leaves, each at a 16-byte offset, within what is
 * left of d->up) are copied into d->up and from there on the stream,
 * without a wait: the copies run in order before the kernels that read
 * them, and d->up is reused only after the stream has been waited for
 * (gpu_stream_wait).  Others wait for their copies: the driver reads
 * pageable memory when the copy runs. */
static weft_status upload_leaves(gpu_dev *d, gpu_mirror *m, const char *who)
{
    uint64_t t0 = trace_begin(d);
    weft_status st = WEFT_OK;
    uint64_t n = 0;
    char *up = staged_bytes(m) <= GPU_UP - d->up_used ? up_area(d) : NULL;
    for (int l = 0; l < m->nleaf; l++) {
        if (m->bytes[l] > 0) {
            const void *src = m->a->data[l];
            if (up) {
                memcpy(up + d->up_used, src, m->bytes[l]);
                src = up + d->up_used;
                d->up_used += leaf_room(m->bytes[l]);
            }
            GPU_CU(d, who, cuMemcpyHtoDAsync, m->ptr[l], src, m->bytes[l],
                   d->stream);
            n += m->bytes[l];
        }
    }
    st = up ? WEFT_OK : gpu_stream_wait(d, who);
    if (st == WEFT_OK) {
        d->uploaded += n;
        m->device_valid = true;
        trace_copy(d, t0, "upload", n);
    }
cleanup:
    return st;
}

/* Move m's device copy out (d entered, stream waited for): download it if
 * the host's is stale, free its buffers to the driver. */
static weft_status evict(gpu_dev *d, gpu_mirror *m, const char *who)
{
    uint64_t t0 = trace_begin(d);
    uint64_t bytes = buffer_bytes(m);
    bool copied = m->device_valid && !m->host_valid;
    if (m->device_valid && !m->host_valid) {
        weft_status st = download_leaves(d, m, who);
        if (st != WEFT_OK) {
            return st;
        }
    }
    for (int l = 0; l < m->nleaf; l++) {
        if (m->ptr[l]) {
            driver_free(d, m->ptr[l], rounded(m->bytes[l]));
            m->ptr[l] = 0;
        }
    }
    m->device_valid = false;
    m->host_valid = true;
    unstage(d, m);
    d->evictions++;
    if (t0) {
        fe_trace_span(d->ctx, t0, "memory", "evict",
                      "\"bytes\":%llu,\"downloaded\":%s",
                      (unsigned long long)bytes, copied ? "true" : "false");
    }
    return WEFT_OK;
}

/* ---- allocation ------------------------------------------------------------ */

weft_status gpu_mem_alloc(gpu_dev *d, size_t bytes, uint64_t *out,
                          const char *who)
{
    return gpu_mem_alloc_laid(d, bytes, 0, out, who);
}

weft_status gpu_mem_alloc_laid(gpu_dev *d, size_t bytes, int run, uint64_t *out,
                               const char *who)
{
    *out = 0;
    if (bytes == 0) {
        return WEFT_OK;
    }
    size_t size;
    int c = size_class(bytes, &size);
    if (c < 0) {
        return fe_error(WEFT_ERR_OUT_OF_MEMORY,
                        "%s: out of device memory: %zu bytes wanted", who,
                        bytes);
    }
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    /* the layout is part of the pool's key ("The pool") */
    run = d->multi && size >= GPU_MULTI_MIN && run > 0 ? run : 0;
    gpu_block **at = &d->pool[c];
    while (*at && (*at)->run != run) {
        at = &(*at)->next;
    }
    if (*at) {
        gpu_block *b = *at;
        *at = b->next;
        d->pooled -= size;
        *out = b->p;
        b->next = d->spare_blocks; /* the record, for the next free */
        d->spare_blocks = b;
        gpu_leave(d);
        return WEFT_OK;
    }
    bool waited = false;
    for (;;) {
        CUdeviceptr p = 0;
        CUresult r = driver_alloc(d, size, run, &p);
        if (r == CUDA_SUCCESS) {
            *out = p;
            break;
        }
        if (r != CUDA_ERROR_OUT_OF_MEMORY) {
            st = gpu_cu_fail(d, who, "cuMemAlloc", r, __FILE__, __LINE__);
            break;
        }
        if (!waited) { /* queued work may still use what goes back */
            st = gpu_stream_wait(d, who);
            if (st != WEFT_OK) {
                break;
            }
            waited = true;
        }
        if (d->pooled > 0) {
            pool_flush(d, true);
            continue;
        }
        gpu_mirror *victim = d->lru_tail;
        while (victim &&
               (victim->pins > 0 || victim->fixed || !has_buffers(victim))) {
            victim = victim->prev;
        }
        if (!victim) {
            uint64_t pinned = 0;
            for (gpu_mirror *m = d->lru_head; m; m = m->next) {
                pinned += m->pins > 0 ? buffer_bytes(m) : 0;
            }
            st = fe_error(WEFT_ERR_OUT_OF_MEMORY,
                          "%s: out of device memory: %zu bytes wanted, "
                          "%llu held by pinned arrays",
                          who, size, (unsigned long long)pinned);
            break;
        }
        st = evict(d, victim, who);
        if (st != WEFT_OK) {
            break;
        }
    }
    gpu_leave(d);
    return st;
}

void gpu_mem_free(gpu_dev *d, uint64_t p, size_t bytes)
{
    size_t size;
    int c = bytes ? size_class(bytes, &size) : -1;
    if (!d || p == 0 || c < 0) {
        return;
    }
    gpu_lock(d);
    gpu_block *b = d->spare_blocks;
    if (b) {
        d->spare_blocks = b->next;
    } else {
        b = fe_alloc(d->ctx, sizeof *b);
    }
    if (b) {
        b->p = p;
        b->run = d->multi && size >= GPU_MULTI_MIN ? gpu_multi_run(d, p) : 0;
        b->run = b->run > 0 ? b->run : 0;
        b->next = d->pool[c];
        d->pool[c] = b;
        d->pooled += size;
    } else if (gpu_enter(d, "weft_run") == WEFT_OK) {
        /* No memory for the pool's record: back to the driver. */
        gpu_call(d)->cuStreamSynchronize(d->stream);
        driver_free(d, p, size);
        gpu_leave(d);
    }
    gpu_unlock(d);
}

/* ---- plain copies ----------------------------------------------------------- */

weft_status gpu_upload(gpu_dev *d, uint64_t dst, const void *src, size_t bytes,
                       const char *who)
{
    if (bytes == 0) {
        return WEFT_OK;
    }
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    uint64_t t0 = trace_begin(d);
    GPU_CU(d, who, cuMemcpyHtoDAsync, dst, src, bytes, d->stream);
    st = gpu_stream_wait(d, who);
    if (st == WEFT_OK) {
        d->uploaded += bytes;
        trace_copy(d, t0, "upload", bytes);
    }
cleanup:
    gpu_leave(d);
    return st;
}

weft_status gpu_download(gpu_dev *d, void *dst, uint64_t src, size_t bytes,
                         const char *who)
{
    if (bytes == 0) {
        return WEFT_OK;
    }
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    uint64_t t0 = trace_begin(d);
    char *b = bytes <= GPU_BOUNCE ? bounce(d) : NULL; /* download_leaves */
    GPU_CU(d, who, cuMemcpyDtoHAsync, b ? b : dst, src, bytes, d->stream);
    st = gpu_stream_wait(d, who);
    if (st == WEFT_OK && b) {
        memcpy(dst, b, bytes);
    }
    if (st == WEFT_OK) {
        d->downloaded += bytes;
        trace_copy(d, t0, "download", bytes);
    }
cleanup:
    gpu_leave(d);
    return st;
}

#define PREFETCH_MAX 4096 /* bytes of outputs gpu_read_words takes along */

/* The mirror of a on d whose host copy is stale, or NULL. */
static gpu_mirror *stale_on(gpu_dev *d, weft_array *a);
static weft_status make_host(gpu_dev *d, gpu_mirror *m, const char *who);

weft_status gpu_read_words(gpu_dev *d, uint64_t src, int64_t *words, int nwords,
                           weft_array *const *outs, int nout, const char *who)
{
    size_t wbytes = sizeof *words * (size_t)nwords;
    memset(words, 0, wbytes);
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    uint64_t t0 = trace_begin(d);
    char *b = wbytes + PREFETCH_MAX <= GPU_BOUNCE ? bounce(d) : NULL;
    if (!b) {
        gpu_leave(d);
        return gpu_download(d, words, src, wbytes, who);
    }
    GPU_CU(d, who, cuMemcpyDtoHAsync, b, src, wbytes, d->stream);
    /* small outputs whose host copies are stale come along in the same
     * wait, each leaf at a 16-byte offset of the bounce buffer */
    gpu_mirror *took[4] = {NULL};
    size_t start = leaf_room(wbytes), off = start;
    uint64_t n = wbytes;
    for (int o = 0; o < nout && o < 4; o++) {
        gpu_mirror *m = outs[o] ? stale_on(d, outs[o]) : NULL;
        if (!m || off + staged_bytes(m) > start + PREFETCH_MAX ||
            make_host(d, m, who)) {
            continue; /* read later, if ever (an allocation failure too) */
        }
        CUresult r = queue_leaves(d, m, b + off, &n);
        if (r != CUDA_SUCCESS) {
            st =
                gpu_cu_fail(d, who, "cuMemcpyDtoHAsync", r, __FILE__, __LINE__);
            goto cleanup;
        }
        off += staged_bytes(m);
        took[o] = m;
    }
    st = gpu_stream_wait(d, who);
    if (st == WEFT_OK) {
        memcpy(words, b, wbytes);
        off = start;
        for (int o = 0; o < nout && o < 4; o++) {
            gpu_mirror *m = took[o];
            if (m) {
                take_leaves(m, b + off);
                off += staged_bytes(m);
                m->host_valid = true;
                unstage(d, m);
            }
        }
        d->downloaded += n;
        trace_copy(d, t0, "download", n);
    }
cleanup:
    gpu_leave(d);
    return st;
}

weft_status gpu_copy(gpu_dev *d, uint64_t dst, uint64_t src, size_t bytes,
                     const char *who)
{
    if (bytes == 0) {
        return WEFT_OK;
    }
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    GPU_CU(d, who, cuMemcpyDtoDAsync, dst, src, bytes, d->stream);
cleanup:
    gpu_leave(d);
    return st;
}

weft_status gpu_memset32(gpu_dev *d, uint64_t dst, uint32_t v, size_t n,
                         const char *who)
{
    if (n == 0) {
        return WEFT_OK;
    }
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    GPU_CU(d, who, cuMemsetD32Async, dst, v, n, d->stream);
cleanup:
    gpu_leave(d);
    return st;
}

/* ---- mirrors ------------------------------------------------------------------ */

/* Keep the record m of a dead mirror for reuse (one-leaf records, the
 * common kind, at most SPARE_MIRRORS of them), else free it (d locked). */
#define SPARE_MIRRORS 64
static void spare_mirror(gpu_dev *d, gpu_mirror *m)
{
    if (m->nleaf == 1 && d->nspare_mirrors < SPARE_MIRRORS) {
        m->next = d->spare_mirrors;
        d->spare_mirrors = m;
        d->nspare_mirrors++;
    } else {
        fe_free(d->ctx, m, m->size);
    }
}

/* a's record on d, made (host copy valid, no buffers) if a has none there.
 * An array mirrored elsewhere is brought to the host and detached from
 * there first.  d entered. */
static weft_status mirror_get(gpu_dev *d, weft_array *a, const char *who,
                              gpu_mirror **out)
{
    if (a->mirror == &mirror_ops && ((gpu_mirror *)a->dev)->d == d) {
        *out = a->dev;
        return WEFT_OK;
    }
    if (a->mirror) {
        /* Arrays belong to one context, so this is defensive: another
         * device's copy (its drop takes that device's lock). */
        weft_status st = fe_array_host(a);
        if (st != WEFT_OK) {
            return st;
        }
        a->mirror->drop(a);
        a->mirror = NULL;
        a->dev = NULL;
    }
    const weft_type *leaves;
    if (fe_type_leaves(a->ctx, a->type, &leaves) != a->nleaf) {
        return fe_error(WEFT_ERR_INTERNAL, "%s: an array of a bad type", who);
    }
    size_t size = sizeof(gpu_mirror) +
                  (size_t)a->nleaf * (sizeof(uint64_t) + sizeof(size_t));
    gpu_mirror *m = NULL;
    if (d->spare_mirrors && d->spare_mirrors->size == size) {
        m = d->spare_mirrors;
        d->spare_mirrors = m->next;
        d->nspare_mirrors--;
        memset(m, 0, size);
    } else {
        m = fe_calloc(d->ctx, size);
    }
    if (!m) {
        return fe_oom(who);
    }
    m->d = d;
    m->a = a;
    m->nleaf = a->nleaf;
    m->size = size;
    m->ptr = (uint64_t *)(m + 1);
    m->bytes = (size_t *)(m->ptr + a->nleaf);
    for (int l = 0; l < a->nleaf; l++) {
        m->bytes[l] = a->bytes[l];
    }
    m->host_valid = true;
    lru_push(d, m);
    a->mirror = &mirror_ops;
    a->dev = m;
    *out = m;
    return WEFT_OK;
}

/* Pin m and give every non-empty leaf a device buffer (d entered), laid
 * out with runs[l] granules a run (runs NULL: 0); on failure m is as it
 * was (buffers made so far are kept). */
static weft_status pin_with_buffers(gpu_dev *d, gpu_mirror *m, const int *runs,
                                    const char *who)
{
    m->pins++; /* before allocating: not a victim of its own eviction */
    for (int l = 0; l < m->nleaf; l++) {
        if (m->bytes[l] > 0 && !m->ptr[l]) {
            weft_status st = gpu_mem_alloc_laid(
                d, m->bytes[l], runs ? runs[l] : 0, &m->ptr[l], who);
            if (st != WEFT_OK) {
                m->pins--;
                return st;
            }
        }
    }
    return WEFT_OK;
}

/* gpu_array_in and gpu_array_out. */
static weft_status array_use(gpu_dev *d, weft_array *a, uint64_t *ptrs,
                             bool out, const int *runs, const char *who)
{
    if (!d || !a || !ptrs) {
        return fe_error(WEFT_ERR_INTERNAL, "%s: gpu_array_%s: NULL argument",
                        who, out ? "out" : "in");
    }
    weft_status st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    gpu_mirror *m = NULL;
    st = mirror_get(d, a, who, &m);
    if (st == WEFT_OK) {
        st = pin_with_buffers(d, m, runs, who);
    }
    if (st == WEFT_OK) {
        if (out) {
            m->device_valid = true;
            m->host_valid = false;
            unstage(d, m);
        } else if (!m->device_valid) {
            st = upload_leaves(d, m, who);
            if (st != WEFT_OK) {
                m->pins--;
            }
        }
    }
    if (st == WEFT_OK) {
        lru_unlink(d, m);
        lru_push(d, m);
        for (int l = 0; l < m->nleaf; l++) {
            ptrs[l] = m->ptr[l];
        }
    }
    gpu_leave(d);
    return st;
}

weft_status gpu_array_in(gpu_dev *d, weft_array *a, uint64_t *ptrs,
                         const char *who)
{
    return array_use(d, a, ptrs, false, NULL, who);
}

weft_status gpu_array_out(gpu_dev *d, weft_array *a, uint64_t *ptrs,
                          const char *who)
{
    return array_use(d, a, ptrs, true, NULL, who);
}

weft_status gpu_array_out_laid(gpu_dev *d, weft_array *a, const int *runs,
                               uint64_t *ptrs, const char *who)
{
    return array_use(d, a, ptrs, true, runs, who);
}

void gpu_array_unpin(gpu_dev *d, weft_array *a)
{
    if (!d || !a) {
        return;
    }
    gpu_lock(d);
    if (a->mirror == &mirror_ops) {
        gpu_mirror *m = a->dev;
        if (m->d == d && m->pins > 0) {
            m->pins--;
        }
    }
    gpu_unlock(d);
}

/* Host buffers for a device array that has none (d locked). */
static weft_status make_host(gpu_dev *d, gpu_mirror *m, const char *who)
{
    weft_array *a = m->a;
    if (fe_array_has_host(a)) {
        return WEFT_OK;
    }
    for (int l = 0; l < m->nleaf; l++) {
        a->data[l] = fe_alloc(d->ctx, m->bytes[l] > 0 ? m->bytes[l] : 1);
        if (!a->data[l]) {
            while (l-- > 0) {
                fe_free(d->ctx, a->data[l], m->bytes[l] > 0 ? m->bytes[l] : 1);
                a->data[l] = NULL;
            }
            return fe_oom(who);
        }
    }
    m->host_own = true;
    return WEFT_OK;
}

static gpu_mirror *stale_on(gpu_dev *d, weft_array *a)
{
    if (a->mirror != &mirror_ops) {
        return NULL;
    }
    gpu_mirror *m = a->dev;
    return m && m->d == d && !m->host_valid && m->device_valid ? m : NULL;
}

/* Take m's prefetched copy (d entered): wait for the stage's event, copy
 * the leaves out; host_valid after.  A fault of a kernel queued before
 * the copy is reported as by gpu_stream_wait. */
static weft_status take_staged(gpu_dev *d, gpu_mirror *m, const char *who)
{
    uint64_t t0 = trace_begin(d);
    weft_status st = WEFT_OK;
    /* after a speculative loop kernel: the stream (cuda.c, "Speculation") */
    st = d->stage_spec ? gpu_stream_wait(d, who)
                       : gpu_event_wait(d, d->stage_event, who);
    if (st != WEFT_OK) {
        return st;
    }
    uint64_t n = 0;
    for (int l = 0; l < m->nleaf; l++) {
        n += m->ptr[l] ? m->bytes[l] : 0;
    }
    take_leaves(m, (char *)d->stage + m->stage - 1);
    d->downloaded += n;
    m->host_valid = true;
    unstage(d, m);
    trace_copy(d, t0, "download", n);
    return st;
}

/* fe_mirror_ops.to_host: download if the device copy is newer (take the
 * prefetched copy when there is one). */
static weft_status mirror_to_host(weft_array *a)
{
    static const char who[] = "weft_array";
    gpu_mirror *m = a->dev;
    gpu_dev *d = m->d;
    weft_status st = WEFT_OK;
    gpu_lock(d);
    if (!m->host_valid && (st = make_host(d, m, who)) == WEFT_OK) {
        st = gpu_enter(d, who);
        if (st == WEFT_OK) {
            st = m->stage ? take_staged(d, m, who) : download_leaves(d, m, who);
            gpu_leave(d);
        }
    }
    gpu_unlock(d);
    return st;
}

/* fe_mirror_ops.prefetch (the head comment, "Prefetches"). */
static void mirror_prefetch(weft_array *a)
{
    gpu_mirror *m = a->dev;
    gpu_dev *d = m->d;
    gpu_lock(d);
    size_t room = staged_bytes(m);
    if (m->host_valid || !m->device_valid || m->stage || room == 0 ||
        room > GPU_STAGE - d->stage_used ||
        gpu_enter(d, "weft_run") != WEFT_OK) {
        gpu_unlock(d);
        return;
    }
    void *p = NULL;
    if (!d->stage &&
        gpu_call(d)->cuMemHostAlloc(&p, GPU_STAGE, 0) == CUDA_SUCCESS) {
        d->stage = p;
    }
    CUevent e = NULL;
    if (!d->stage_event && gpu_call(d)->cuEventCreate(
                               &e, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) {
        d->stage_event = e;
    }
    bool ok =
        d->stage && d->stage_event && make_host(d, m, "weft_run") == WEFT_OK;
    uint64_t n = 0;
    ok = ok && queue_leaves(d, m, (char *)d->stage + d->stage_used, &n) ==
                   CUDA_SUCCESS;
    if (ok &&
        gpu_call(d)->cuEventRecord(d->stage_event, d->stream) == CUDA_SUCCESS) {
        d->stage_spec = d->spec_loops; /* cuda.c, "Speculation" */
        m->stage = d->stage_used + 1;
        d->stage_used += room;
        d->nstaged++;
    }
    gpu_leave(d);
    gpu_unlock(d);
}

/* fe_mirror_ops.host_written: the device copy is stale (kept for reuse). */
static void mirror_host_written(weft_array *a)
{
    gpu_mirror *m = a->dev;
    gpu_dev *d = m->d;
    gpu_lock(d);
    m->device_valid = false;
    m->host_valid = true;
    unstage(d, m);
    gpu_unlock(d);
}

/* fe_mirror_ops.wait: the stream holds every write queued for a. */
static weft_status mirror_wait(weft_array *a)
{
    return gpu_sync(((gpu_mirror *)a->dev)->d, "weft_array_wait");
}

/* fe_mirror_ops.device_newer */
static bool mirror_device_newer(weft_array *a)
{
    gpu_mirror *m = a->dev;
    gpu_lock(m->d);
    bool newer = !m->host_valid;
    gpu_unlock(m->d);
    return newer;
}

/* fe_mirror_ops.drop: a dies; its buffers go to the pool (a device
 * array's stay the caller's, once weft's stream is done with them; an
 * exported copy's once every stream of the context is: a consumer may
 * still read it).  Failures of those waits have no one to go to: the
 * next call that waits reports a fault again. */
static void mirror_drop(weft_array *a)
{
    gpu_mirror *m = a->dev;
    gpu_dev *d = m->d;
    gpu_lock(d);
    if (m->foreign) {
        gpu_sync(d, "weft_array_release");
    } else if (m->fixed) {
        gpu_ctx_sync(d, "weft_array_release");
    }
    for (int l = 0; l < m->nleaf; l++) {
        if (!m->foreign) {
            gpu_mem_free(d, m->ptr[l], m->bytes[l]);
        }
        if (m->host_own) {
            fe_free(d->ctx, a->data[l], m->bytes[l] > 0 ? m->bytes[l] : 1);
            a->data[l] = NULL;
        }
    }
    unstage(d, m);
    lru_unlink(d, m);
    a->mirror = NULL;
    a->dev = NULL;
    spare_mirror(d, m);
    gpu_unlock(d);
}

/* gpu_mem_close's work, d locked; `live`: its context is current. */
static void release_all(gpu_dev *d, bool live)
{
    if (live) {
        gpu_call(d)->cuStreamSynchronize(d->stream);
    }
    while (d->lru_head) {
        gpu_mirror *m = d->lru_head;
        if (live && !m->host_valid && fe_array_has_host(m->a)) {
            for (int l = 0; l < m->nleaf; l++) {
                if (m->bytes[l] > 0 && m->ptr[l]) {
                    gpu_call(d)->cuMemcpyDtoHAsync(m->a->data[l], m->ptr[l],
                                                   m->bytes[l], d->stream);
                }
            }
            gpu_call(d)->cuStreamSynchronize(d->stream);
        }
        for (int l = 0; l < m->nleaf; l++) {
            if (m->ptr[l] && !m->foreign) {
                if (live) {
                    driver_free(d, m->ptr[l], rounded(m->bytes[l]));
                } else {
                    d->held -= rounded(m->bytes[l]);
                }
            }
        }
        lru_unlink(d, m);
        m->a->mirror = NULL;
        m->a->dev = NULL;
        fe_free(d->ctx, m, m->size);
    }
    d->nstaged = 0;
    d->stage_used = 0;
    pool_flush(d, live);
    spares_free(d);
}

void gpu_mem_close(gpu_dev *d)
{
    if (!d) {
        return;
    }
    gpu_lock(d);
    bool live = gpu_call(d)->cuCtxPushCurrent(d->cu) == CUDA_SUCCESS;
    release_all(d, live);
    if (live) {
        CUcontext popped;
        gpu_call(d)->cuCtxPopCurrent(&popped);
    }
    gpu_unlock(d);
}

weft_status gpu_array_wrap(gpu_dev *d, weft_array *a, void *const *ptrs,
                           const char *who)
{
    weft_status st = gpu_ctx_sync(d, who); /* the producer's writes */
    if (st != WEFT_OK) {
        return st;
    }
    st = gpu_enter(d, who);
    if (st != WEFT_OK) {
        return st;
    }
    gpu_mirror *m = NULL;
    st = mirror_get(d, a, who, &m);
    if (st == WEFT_OK) {
        m->foreign = m->fixed = true;
        m->host_valid = false;
        m->device_valid = true;
        for (int l = 0; l < m->nleaf; l++) {
            m->ptr[l] = m->bytes[l] > 0 ? (uint64_t)(uintptr_t)ptrs[l] : 0;
        }
    }
    gpu_leave(d);
    return st;
}

weft_status gpu_array_export(gpu_dev *d, weft_array *a, int leaf, bool writable,
                             uint64_t *ptr, const char *who)
{
    uint64_t *ptrs = fe_calloc(d->ctx, sizeof *ptrs * (size_t)a->nleaf);
    if (!ptrs) {
        return fe_oom(who);
    }
    gpu_lock(d);
    weft_status st = gpu_array_in(d, a, ptrs, who);
    if (st == WEFT_OK) {
        gpu_mirror *m = a->dev;
        m->fixed = true;
        if (writable) {
            m->host_valid = false;
            unstage(d, m);
        }
        gpu_array_unpin(d, a);
        st = gpu_sync(d, who);
        *ptr = ptrs[leaf];
    }
    gpu_unlock(d);
    fe_free(d->ctx, ptrs, sizeof *ptrs * (size_t)a->nleaf);
    return st;
}

void gpu_mem_stats_get(gpu_dev *d, gpu_mem_stats *out)
{
    gpu_lock(d);
    out->uploaded = d->uploaded;
    out->downloaded = d->downloaded;
    out->evictions = d->evictions;
    out->held = d->held;
    out->pooled = d->pooled;
    out->calls = __atomic_load_n(&d->calls, __ATOMIC_RELAXED);
    gpu_unlock(d);
}

void gpu_mem_set_limit(gpu_dev *d, uint64_t bytes)
{
    gpu_lock(d);
    d->limit = bytes;
    gpu_unlock(d);
}
