/*
 * lib/array.c: reference-counted arrays, one buffer per leaf.
 *
 * An array's home is its host buffers (made by weft, or the caller's,
 * wrapped), with a device copy that a GPU backend keeps beside them
 * (fe_mirror_ops).  A device array (weft_array_wrap_device) is the other
 * way round: its home is the caller's device buffers, and host buffers
 * appear only when someone reads it on the host (the mirror makes them).
 */
#include <string.h>

#include "fe.h"

int64_t fe_shape_size(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0) {
            return -1;
        }
        if (shape[d] != 0 && n > INT64_MAX / shape[d]) {
            return -1;
        }
        n *= shape[d];
    }
    return n;
}

/* Check type, rank and shape and allocate the array header (no buffers). */
static weft_status new_header(weft_context *ctx, const char *who,
                              weft_type type, int rank, const int64_t *shape,
                              weft_array **out)
{
    if (!ctx || !out || (rank > 0 && !shape)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: %s is NULL", who,
                        !ctx   ? "the context"
                        : !out ? "out"
                               : "shape");
    }
    *out = NULL;
    const weft_type *leaves;
    int nleaf = fe_type_leaves(ctx, type, &leaves);
    if (!fe_type_valid(ctx, type) || fe_is_dim(type)) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: %d is not an element type", who, (int)type);
    }
    if (rank < 0 || rank > WEFT_MAX_RANK) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: rank %d is outside 0..%d", who, rank,
                        WEFT_MAX_RANK);
    }
    int64_t size = fe_shape_size(rank, shape);
    if (size < 0) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        "%s: the shape has a negative extent or is too large",
                        who);
    }
    if ((uint64_t)size > SIZE_MAX / 8) {
        return fe_error(WEFT_ERR_BAD_SHAPE, "%s: the array is too large", who);
    }
    weft_array *a = fe_calloc(ctx, sizeof *a);
    void **data = fe_calloc(ctx, sizeof *data * (size_t)nleaf);
    size_t *bytes = fe_calloc(ctx, sizeof *bytes * (size_t)nleaf);
    if (!a || !data || !bytes) {
        fe_free(ctx, a, sizeof *a);
        fe_free(ctx, data, sizeof *data * (size_t)nleaf);
        fe_free(ctx, bytes, sizeof *bytes * (size_t)nleaf);
        return fe_oom(who);
    }
    atomic_init(&a->refs, 1);
    a->ctx = ctx;
    a->type = type;
    a->rank = rank;
    for (int d = 0; d < rank; d++) {
        a->shape[d] = shape[d];
    }
    a->size = size;
    a->nleaf = nleaf;
    a->data = data;
    a->bytes = bytes;
    for (int l = 0; l < nleaf; l++) {
        bytes[l] = (size_t)size * weft_type_size(leaves[l]);
    }
    *out = a;
    return WEFT_OK;
}

/* ---- the buffer pool ---------------------------------------------------- */

struct fe_pooled {
    struct fe_pooled *next;
    void *p;
    size_t bytes;
};

/* Keep buffer p of `bytes` bytes for reuse, or free it.  The newest
 * buffers are kept: past FE_POOL_ENTRIES buffers or FE_POOL_MAX bytes the
 * oldest ones are freed, so that a program run with ever new sizes does
 * not fill the pool with buffers nobody asks for again.  Guarded buffers
 * (fe_data_guarded) are freed at once, into the guard's quarantine. */
static void pool_put(weft_context *ctx, void *p, size_t bytes)
{
    if (!p) {
        return;
    }
    struct fe_pooled *e = NULL;
    if (bytes >= FE_POOL_MIN && bytes <= FE_POOL_MAX && !fe_data_guarded(ctx)) {
        e = fe_alloc(ctx, sizeof *e);
    }
    if (!e) {
        fe_data_free(ctx, p, bytes);
        return;
    }
    e->p = p;
    e->bytes = bytes;
    struct fe_pooled *drop = NULL;
    pthread_mutex_lock(&ctx->pool_lock);
    e->next = ctx->pool;
    ctx->pool = e;
    ctx->pool_bytes += bytes;
    ctx->pool_count++;
    if (ctx->pool_bytes > FE_POOL_MAX || ctx->pool_count > FE_POOL_ENTRIES) {
        /* keep the longest newest-first prefix within both bounds */
        size_t kept = 0;
        int n = 0;
        struct fe_pooled **at = &ctx->pool;
        while (*at && n < FE_POOL_ENTRIES &&
               kept + (*at)->bytes <= FE_POOL_MAX) {
            kept += (*at)->bytes;
            n++;
            at = &(*at)->next;
        }
        drop = *at;
        *at = NULL;
        ctx->pool_bytes = kept;
        ctx->pool_count = n;
    }
    pthread_mutex_unlock(&ctx->pool_lock);
    while (drop) {
        struct fe_pooled *next = drop->next;
        fe_data_free(ctx, drop->p, drop->bytes);
        fe_free(ctx, drop, sizeof *drop);
        drop = next;
    }
}

/* A pooled buffer of exactly `bytes` bytes, or NULL. */
static void *pool_get(weft_context *ctx, size_t bytes)
{
    void *p = NULL;
    struct fe_pooled *hit = NULL;
    if (bytes < FE_POOL_MIN) {
        return NULL;
    }
    pthread_mutex_lock(&ctx->pool_lock);
    for (struct fe_pooled **e = &ctx->pool; *e; e = &(*e)->next) {
        if ((*e)->bytes == bytes) {
            hit = *e;
            *e = hit->next;
            ctx->pool_bytes -= bytes;
            ctx->pool_count--;
            p = hit->p;
            break;
        }
    }
    pthread_mutex_unlock(&ctx->pool_lock);
    fe_free(ctx, hit, sizeof *hit);
    return p;
}

void fe_pool_drain(weft_context *ctx)
{
    struct fe_pooled *e = ctx->pool;
    while (e) {
        struct fe_pooled *next = e->next;
        fe_data_free(ctx, e->p, e->bytes);
        fe_free(ctx, e, sizeof *e);
        e = next;
    }
    ctx->pool = NULL;
    ctx->pool_bytes = 0;
    ctx->pool_count = 0;
}

static void free_array(weft_array *a)
{
    weft_context *ctx = a->ctx;
    if (a->mirror) {
        a->mirror->drop(a);
    }
    if (a->owned) {
        for (int l = 0; l < a->nleaf; l++) {
            pool_put(ctx, a->data[l], a->bytes[l]);
        }
    } else if (a->release) {
        a->release(a->user);
    }
    fe_free(ctx, a->data, sizeof *a->data * (size_t)a->nleaf);
    fe_free(ctx, a->bytes, sizeof *a->bytes * (size_t)a->nleaf);
    fe_free(ctx, a, sizeof *a);
}

/* fe_array_new and fe_array_new_raw. */
static weft_status array_new(weft_context *ctx, const char *who, weft_type type,
                             int rank, const int64_t *shape, bool zero,
                             weft_array **out)
{
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: out is NULL", who);
    }
    weft_array *a;
    weft_status st = new_header(ctx, who, type, rank, shape, &a);
    *out = NULL;
    if (st) {
        return st;
    }
    a->owned = true;
    const weft_type *leaves;
    fe_type_leaves(ctx, type, &leaves);
    for (int l = 0; l < a->nleaf; l++) {
        a->bytes[l] = (size_t)a->size * weft_type_size(leaves[l]);
        a->data[l] = pool_get(ctx, a->bytes[l]);
        if (a->data[l] && zero) {
            memset(a->data[l], 0, a->bytes[l]);
        } else if (!a->data[l]) {
            a->data[l] = fe_data_alloc(ctx, a->bytes[l], zero);
        }
        if (!a->data[l]) {
            free_array(a);
            return fe_oom(who);
        }
    }
    *out = a;
    return WEFT_OK;
}

weft_status fe_array_new(weft_context *ctx, const char *who, weft_type type,
                         int rank, const int64_t *shape, weft_array **out)
{
    return array_new(ctx, who, type, rank, shape, true, out);
}

weft_status fe_array_new_raw(weft_context *ctx, const char *who, weft_type type,
                             int rank, const int64_t *shape, weft_array **out)
{
    return array_new(ctx, who, type, rank, shape, false, out);
}

weft_status weft_array_create(weft_context *ctx, weft_type type, int rank,
                              const int64_t *shape, weft_array **out)
{
    return fe_array_new(ctx, "weft_array_create", type, rank, shape, out);
}

/* Whether type has no leaves (the unit type, and tuples of units): its
 * arrays take no buffers, so data may be NULL. */
static bool no_leaves(const weft_context *ctx, weft_type type)
{
    const weft_type *l;
    return ctx && fe_type_valid(ctx, type) && !fe_is_dim(type) &&
           fe_type_leaves(ctx, type, &l) == 0;
}

weft_status weft_array_from_host(weft_context *ctx, weft_type type, int rank,
                                 const int64_t *shape, const void *const *data,
                                 weft_array **out)
{
    if ((!data && !no_leaves(ctx, type)) || !out) {
        if (out) {
            *out = NULL;
        }
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_array_from_host: %s is NULL",
                        data ? "out" : "data");
    }
    weft_array *a;
    weft_status st =
        fe_array_new(ctx, "weft_array_from_host", type, rank, shape, &a);
    if (st) {
        return st;
    }
    for (int l = 0; l < a->nleaf; l++) {
        if (!data[l] && a->bytes[l] > 0) {
            free_array(a);
            return fe_error(WEFT_ERR_NULL_ARGUMENT,
                            "weft_array_from_host: data[%d] is NULL", l);
        }
        if (a->bytes[l] > 0) {
            memcpy(a->data[l], data[l], a->bytes[l]);
        }
    }
    *out = a;
    return WEFT_OK;
}

weft_status weft_array_wrap(weft_context *ctx, weft_type type, int rank,
                            const int64_t *shape, void *const *data,
                            void (*release)(void *user), void *user,
                            weft_array **out)
{
    if (!data && !no_leaves(ctx, type)) {
        if (out) {
            *out = NULL;
        }
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_array_wrap: data is NULL");
    }
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_array_wrap: out is NULL");
    }
    weft_array *a;
    weft_status st = new_header(ctx, "weft_array_wrap", type, rank, shape, &a);
    if (st) {
        return st;
    }
    for (int l = 0; l < a->nleaf; l++) {
        if (!data[l] && a->size > 0) {
            free_array(a);
            return fe_error(WEFT_ERR_NULL_ARGUMENT,
                            "weft_array_wrap: data[%d] is NULL", l);
        }
        a->data[l] = data[l];
    }
    a->release = release;
    a->user = user;
    *out = a;
    return WEFT_OK;
}

void weft_array_retain(weft_array *a)
{
    if (a) {
        atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
    }
}

void weft_array_release(weft_array *a)
{
    if (a &&
        atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) == 1) {
        free_array(a);
    }
}

weft_type weft_array_type(const weft_array *a)
{
    return a ? a->type : 0;
}

int weft_array_rank(const weft_array *a)
{
    return a ? a->rank : 0;
}

int64_t weft_array_extent(const weft_array *a, int d)
{
    return a && d >= 0 && d < a->rank ? a->shape[d] : 0;
}

int64_t weft_array_size(const weft_array *a)
{
    return a ? a->size : 0;
}

void *weft_array_data(weft_array *a, int leaf)
{
    if (!a || leaf < 0 || leaf >= a->nleaf) {
        fe_error(WEFT_ERR_INVALID_ARGUMENT, "weft_array_data: %s",
                 a ? "leaf out of range" : "array is NULL");
        return NULL;
    }
    /* The caller may write through the pointer: the host copy becomes the
     * only valid one (not of a read-only array, which no one writes). */
    if ((a->read_only ? fe_array_host(a) : fe_array_host_written(a)) !=
        WEFT_OK) {
        return NULL;
    }
    return a->data[leaf];
}

weft_status weft_array_read(weft_array *a, int leaf, void *dst, size_t bytes)
{
    if (!a || !dst) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "weft_array_read: %s is NULL",
                        a ? "dst" : "the array");
    }
    if (leaf < 0 || leaf >= a->nleaf) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_array_read: leaf %d is outside 0..%d", leaf,
                        a->nleaf - 1);
    }
    const weft_type *leaves;
    fe_type_leaves(a->ctx, a->type, &leaves);
    size_t need = (size_t)a->size * weft_type_size(leaves[leaf]);
    if (bytes < need) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "weft_array_read: %zu bytes given, %zu needed", bytes,
                        need);
    }
    weft_status s = fe_array_host(a);
    if (s) {
        return s;
    }
    if (need > 0) {
        memcpy(dst, a->data[leaf], need);
    }
    return WEFT_OK;
}

/* ---- device arrays ------------------------------------------------------- */

/* The backend's device operations, or a status saying there is none. */
static weft_status device_of(weft_context *ctx, const char *who,
                             const fe_device_ops **out)
{
    *out = ctx->be->device;
    if (!*out) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "%s: the %s backend has no device (only ptx has)", who,
                        ctx->be->name);
    }
    int ordinal;
    return (*out)->ordinal(ctx, &ordinal, who);
}

weft_status fe_array_wrap_device(weft_context *ctx, const char *who,
                                 weft_type type, int rank, const int64_t *shape,
                                 void *const *device_ptrs,
                                 void (*release)(void *user), void *user,
                                 weft_array **out)
{
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: out is NULL", who);
    }
    *out = NULL;
    if (!ctx) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: the context is NULL", who);
    }
    if (!device_ptrs && !no_leaves(ctx, type)) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: device_ptrs is NULL", who);
    }
    const fe_device_ops *dev;
    weft_status st = device_of(ctx, who, &dev);
    if (st) {
        return st;
    }
    weft_array *a;
    st = new_header(ctx, who, type, rank, shape, &a);
    if (st) {
        return st;
    }
    for (int l = 0; l < a->nleaf; l++) {
        if (!device_ptrs[l] && a->size > 0) {
            free_array(a);
            return fe_error(WEFT_ERR_NULL_ARGUMENT,
                            "%s: device_ptrs[%d] is NULL", who, l);
        }
        if ((uintptr_t)device_ptrs[l] % FE_DEVICE_ALIGN != 0) {
            free_array(a);
            return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                            "%s: device_ptrs[%d] is not aligned to %d bytes "
                            "(weft's GPU kernels assume cuMemAlloc's "
                            "alignment; a slice's offset breaks it)",
                            who, l, FE_DEVICE_ALIGN);
        }
    }
    a->on_device = true;
    st = dev->wrap(a, device_ptrs, who);
    if (st) {
        free_array(a);
        return st;
    }
    a->release = release; /* only now: a failure above does not call it */
    a->user = user;
    *out = a;
    return WEFT_OK;
}

weft_status weft_array_wrap_device(weft_context *ctx, weft_type type, int rank,
                                   const int64_t *shape,
                                   void *const *device_ptrs,
                                   void (*release)(void *user), void *user,
                                   weft_array **out)
{
    return fe_array_wrap_device(ctx, "weft_array_wrap_device", type, rank,
                                shape, device_ptrs, release, user, out);
}

/* The device address of leaf `leaf` of a (fe_device_ops.export_ptr). */
weft_status fe_array_export(weft_array *a, int leaf, bool writable,
                            uint64_t *ptr, const char *who)
{
    const fe_device_ops *dev;
    weft_status st = device_of(a->ctx, who, &dev);
    return st ? st : dev->export_ptr(a, leaf, writable, ptr, who);
}

weft_status weft_array_device_ptr(weft_array *a, int leaf, void **out)
{
    static const char who[] = "weft_array_device_ptr";
    if (!a || !out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: %s is NULL", who,
                        a ? "out" : "the array");
    }
    *out = NULL;
    if (leaf < 0 || leaf >= a->nleaf) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: leaf %d is outside 0..%d", who, leaf,
                        a->nleaf - 1);
    }
    uint64_t p = 0;
    weft_status st = fe_array_export(a, leaf, !a->read_only, &p, who);
    if (st == WEFT_OK) {
        *out = (void *)(uintptr_t)p;
    }
    return st;
}

weft_status weft_array_wait(weft_array *a)
{
    if (!a) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT,
                        "weft_array_wait: the array is NULL");
    }
    return a->mirror ? a->mirror->wait(a) : WEFT_OK;
}

weft_status weft_context_stream(weft_context *ctx, void **stream)
{
    static const char who[] = "weft_context_stream";
    if (!stream) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: stream is NULL", who);
    }
    *stream = NULL;
    if (!ctx) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: the context is NULL", who);
    }
    const fe_device_ops *dev;
    weft_status st = device_of(ctx, who, &dev);
    return st ? st : dev->stream(ctx, stream, who);
}

weft_status fe_array_copy(weft_array *dst, weft_array *src, const char *who)
{
    if (dst == src) {
        return WEFT_OK;
    }
    if (dst->on_device) {
        const fe_device_ops *dev;
        weft_status st = device_of(dst->ctx, who, &dev);
        return st ? st : dev->copy(dst, src, who);
    }
    weft_status st = fe_array_host(src);
    if (st) {
        return st;
    }
    for (int l = 0; l < dst->nleaf; l++) {
        if (dst->bytes[l] > 0) {
            memcpy(dst->data[l], src->data[l], dst->bytes[l]);
        }
    }
    if (dst->mirror) {
        dst->mirror->host_written(dst);
    }
    return WEFT_OK;
}
