/*
 * lib/dlpack.c: DLPack exchange, weft_array_from_dlpack and
 * weft_array_to_dlpack (weft.h, "Device arrays and DLPack").
 *
 * Import.  A tensor is checked in the order a reader would look for a
 * mistake: the version (major 1), the rank and shape, the dtype (one lane
 * of bool, int, uint or float, onto the weft type of the same width), the
 * device (host memory on every backend; CUDA memory only where the
 * backend has a device, fe_device_ops, of the same ordinal).  A tensor
 * whose strides are compact row-major (extents of 1 and empty tensors may
 * have any strides) and whose element pointer, data + byte_offset, is
 * aligned to its element size becomes an array over that memory: a host
 * array (weft_array_wrap) or a device array (fe_array_wrap_device, which
 * waits for the producer's work), whose release callback calls the
 * tensor's deleter.  Any other tensor is refused, or, with
 * WEFT_DLPACK_COPY, gathered element by element into a new host array
 * (a device tensor is first downloaded, the span its strides reach), and
 * deleted at once.
 *
 * Export.  A tensor is a small record (dl_export) holding the
 * DLManagedTensorVersioned, its shape and compact strides, and a
 * reference to the array; its deleter drops the reference and frees the
 * record.  The data pointer is the array's own host buffer or device
 * buffer (fe_array_export), never a copy.
 */
#include <string.h>

#include "dlpack_abi.h"
#include "fe.h"

static const char who_in[] = "weft_array_from_dlpack";
static const char who_out[] = "weft_array_to_dlpack";

/* The weft type of one lane of DLPack dtype (code, bits), or 0. */
static weft_type weft_type_of(DLDataType dt)
{
    static const weft_type ints[] = {WEFT_I8, WEFT_I16, WEFT_I32, WEFT_I64};
    static const weft_type uints[] = {WEFT_U8, WEFT_U16, WEFT_U32, WEFT_U64};
    static const weft_type floats[] = {0, WEFT_F16, WEFT_F32, WEFT_F64};
    int w = dt.bits == 8    ? 0
            : dt.bits == 16 ? 1
            : dt.bits == 32 ? 2
            : dt.bits == 64 ? 3
                            : -1;
    if (dt.lanes != 1 || w < 0) {
        return 0;
    }
    switch (dt.code) {
    case DL_BOOL: return w == 0 ? WEFT_BOOL : 0;
    case DL_INT: return ints[w];
    case DL_UINT: return uints[w];
    case DL_FLOAT: return floats[w];
    default: return 0;
    }
}

/* The DLPack dtype of scalar type t. */
static DLDataType dl_type_of(weft_type t)
{
    DLDataType dt = {
        .code = DL_UINT, .bits = (uint8_t)(8 * weft_type_size(t)), .lanes = 1};
    dt.code = t == WEFT_BOOL    ? DL_BOOL
              : fe_is_float(t)  ? DL_FLOAT
              : fe_is_signed(t) ? DL_INT
                                : DL_UINT;
    return dt;
}

static const char *device_name(int32_t type)
{
    switch (type) {
    case DL_CPU: return "kDLCPU";
    case DL_CUDA: return "kDLCUDA";
    case DL_CUDA_HOST: return "kDLCUDAHost";
    case DL_CUDA_MANAGED: return "kDLCUDAManaged";
    default: return "a device weft does not know";
    }
}

/* weft_array_wrap's and fe_array_wrap_device's release: delete the
 * tensor. */
static void delete_tensor(void *user)
{
    DLManagedTensorVersioned *t = user;
    if (t->deleter) {
        t->deleter(t);
    }
}

/* Whether t's strides are compact row-major (NULL strides are). */
static bool compact(const DLTensor *t, int64_t size)
{
    if (!t->strides || size == 0) {
        return true;
    }
    int64_t want = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != want) {
            return false;
        }
        want *= t->shape[d];
    }
    return true;
}

/* The smallest and largest element offsets (in elements) that t's strides
 * reach from its first element (size > 0). */
static void span_of(const DLTensor *t, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    int64_t want = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t st = t->strides ? t->strides[d] : want;
        int64_t reach = st * (t->shape[d] - 1);
        *lo += reach < 0 ? reach : 0;
        *hi += reach > 0 ? reach : 0;
        want *= t->shape[d];
    }
}

/* Copy the elements of t into a's one leaf, row-major; base is the host
 * address of t's element at offset 0. */
static void gather(weft_array *a, const DLTensor *t, const char *base,
                   size_t el)
{
    int64_t ix[WEFT_MAX_RANK] = {0};
    int64_t off = 0, want = 1, stride[WEFT_MAX_RANK];
    for (int d = t->ndim - 1; d >= 0; d--) {
        stride[d] = t->strides ? t->strides[d] : want;
        want *= t->shape[d];
    }
    char *dst = a->data[0];
    for (int64_t i = 0; i < a->size; i++) {
        memcpy(dst + (size_t)i * el, base + off * (int64_t)el, el);
        for (int d = t->ndim - 1; d >= 0; d--) { /* the next index */
            off += stride[d];
            if (++ix[d] < t->shape[d]) {
                break;
            }
            off -= stride[d] * t->shape[d];
            ix[d] = 0;
        }
    }
}

/* A new host array holding t's elements (t on the host, or on the
 * device when dev is not NULL). */
static weft_status copy_tensor(weft_context *ctx, const DLTensor *t,
                               weft_type type, int64_t size,
                               const fe_device_ops *dev, weft_array **out)
{
    weft_array *a;
    weft_status st = fe_array_new_raw(ctx, who_in, type, t->ndim, t->shape, &a);
    if (st || size == 0) {
        *out = st ? NULL : a;
        return st;
    }
    size_t el = weft_type_size(type);
    const char *first = (const char *)t->data + t->byte_offset;
    int64_t lo, hi;
    span_of(t, &lo, &hi);
    char *tmp = NULL;
    size_t tmp_n = (size_t)(hi - lo + 1) * el;
    if (dev) {
        /* the span the strides reach, downloaded, then gathered */
        tmp = fe_alloc(ctx, tmp_n);
        st = tmp ? dev->download(ctx, tmp,
                                 (uint64_t)(uintptr_t)first +
                                     (uint64_t)(lo * (int64_t)el),
                                 tmp_n, who_in)
                 : fe_oom(who_in);
        first = tmp - lo * (int64_t)el;
    }
    if (st == WEFT_OK) {
        gather(a, t, first, el);
    }
    fe_free(ctx, tmp, tmp_n);
    if (st) {
        weft_array_release(a);
        a = NULL;
    }
    *out = a;
    return st;
}

/* Where t's memory is for a context with device operations dev (NULL
 * for none): true for the device, false for host memory; a status when
 * the context cannot take it. */
static weft_status placement(weft_context *ctx, const DLTensor *t,
                             const fe_device_ops *dev, bool *on_device)
{
    int32_t kind = t->device.device_type;
    *on_device = false;
    if (kind == DL_CPU || kind == DL_CUDA_HOST ||
        (kind == DL_CUDA_MANAGED && !dev)) {
        return WEFT_OK;
    }
    if (kind != DL_CUDA && kind != DL_CUDA_MANAGED) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: the tensor is on device type %d (%s); weft takes "
                        "kDLCPU, kDLCUDA, kDLCUDAHost and kDLCUDAManaged",
                        who_in, (int)kind, device_name(kind));
    }
    if (!dev) {
        return fe_error(WEFT_ERR_BACKEND_UNAVAILABLE,
                        "%s: a %s tensor on the %s backend, which has no GPU "
                        "(copy it to the host first, or use a ptx context)",
                        who_in, device_name(kind), ctx->be->name);
    }
    int ordinal;
    weft_status st = dev->ordinal(ctx, &ordinal, who_in);
    if (st) {
        return st;
    }
    if (t->device.device_id != ordinal) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: the tensor is on CUDA device %d, the context on "
                        "device %d",
                        who_in, (int)t->device.device_id, ordinal);
    }
    *on_device = true;
    return WEFT_OK;
}

/* Check t; its weft type and size in *type and *size. */
static weft_status check_tensor(weft_context *ctx,
                                const DLManagedTensorVersioned *m,
                                weft_type *type, int64_t *size)
{
    const DLTensor *t = &m->dl_tensor;
    if (m->version.major != DL_MAJOR_VERSION) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: DLPack version %u.%u; weft takes %d.x", who_in,
                        (unsigned)m->version.major, (unsigned)m->version.minor,
                        DL_MAJOR_VERSION);
    }
    if (t->ndim < 0 || t->ndim > WEFT_MAX_RANK) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: ndim %d is outside 0..%d", who_in, (int)t->ndim,
                        WEFT_MAX_RANK);
    }
    if (t->ndim > 0 && !t->shape) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: the shape is NULL",
                        who_in);
    }
    *size = fe_shape_size(t->ndim, t->shape);
    if (*size < 0 || (uint64_t)*size > SIZE_MAX / 8) {
        return fe_error(WEFT_ERR_BAD_SHAPE,
                        "%s: the shape has a negative extent or is too large",
                        who_in);
    }
    *type = weft_type_of(t->dtype);
    if (!*type) {
        return fe_error(WEFT_ERR_TYPE_MISMATCH,
                        "%s: dtype code %u, %u bits, %u lanes has no weft type "
                        "(weft takes one lane of bool 8, int and uint 8-64, "
                        "float 16-64)",
                        who_in, (unsigned)t->dtype.code,
                        (unsigned)t->dtype.bits, (unsigned)t->dtype.lanes);
    }
    if (!t->data && *size > 0) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: the tensor's data is NULL",
                        who_in);
    }
    (void)ctx;
    return WEFT_OK;
}

weft_status weft_array_from_dlpack(weft_context *ctx,
                                   struct DLManagedTensorVersioned *m,
                                   unsigned flags, weft_array **out)
{
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: out is NULL", who_in);
    }
    *out = NULL;
    if (!ctx || !m) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: %s is NULL", who_in,
                        ctx ? "the tensor" : "the context");
    }
    if (flags & ~WEFT_DLPACK_COPY) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT, "%s: unknown flags %#x",
                        who_in, flags & ~WEFT_DLPACK_COPY);
    }
    weft_type type = 0;
    int64_t size = 0;
    weft_status st = check_tensor(ctx, m, &type, &size);
    const DLTensor *t = &m->dl_tensor;
    const fe_device_ops *dev = ctx->be->device;
    bool on_device = false;
    if (st == WEFT_OK) {
        st = placement(ctx, t, dev, &on_device);
    }
    if (st) {
        return st;
    }
    void *first = t->data ? (char *)t->data + t->byte_offset : NULL;
    /* device memory as weft's kernels assume it (FE_DEVICE_ALIGN), host
     * memory to its element size */
    size_t align = on_device ? FE_DEVICE_ALIGN : weft_type_size(type);
    bool aligned = (uintptr_t)first % align == 0;
    bool in_place = aligned && compact(t, size);
    if (!in_place && !(flags & WEFT_DLPACK_COPY)) {
        return fe_error(
            WEFT_ERR_INVALID_ARGUMENT,
            "%s: the tensor %s; pass WEFT_DLPACK_COPY to copy it", who_in,
            aligned     ? "is not compact row-major (its strides)"
            : on_device ? "is not aligned to 256 bytes (a slice's "
                          "offset?), which weft's GPU kernels assume"
                        : "is not aligned to its element size");
    }
    weft_array *a = NULL;
    if (!in_place) {
        if (on_device && (st = dev->sync_all(ctx, who_in)) != WEFT_OK) {
            return st;
        }
        st = copy_tensor(ctx, t, type, size, on_device ? dev : NULL, &a);
        if (st == WEFT_OK) {
            delete_tensor(m); /* weft owns m now, and needs it no more */
        }
    } else if (on_device) {
        st = fe_array_wrap_device(ctx, who_in, type, t->ndim, t->shape, &first,
                                  delete_tensor, m, &a);
    } else {
        if (t->device.device_type != DL_CPU && dev) {
            /* pinned or managed host memory a producer may still write */
            st = dev->sync_all(ctx, who_in);
        }
        if (st == WEFT_OK) {
            st = weft_array_wrap(ctx, type, t->ndim, t->shape, &first,
                                 delete_tensor, m, &a);
        }
    }
    if (st) {
        return st;
    }
    a->read_only = in_place && (m->flags & DL_FLAG_READ_ONLY) != 0;
    *out = a;
    return WEFT_OK;
}

/* ---- export ---------------------------------------------------------------- */

typedef struct dl_export {
    DLManagedTensorVersioned t; /* first: the deleter casts back */
    int64_t shape[WEFT_MAX_RANK];
    int64_t strides[WEFT_MAX_RANK];
    weft_array *a; /* a reference */
} dl_export;

static void export_deleter(DLManagedTensorVersioned *t)
{
    dl_export *e = (dl_export *)t;
    weft_context *ctx = e->a->ctx;
    weft_array_release(e->a);
    fe_free(ctx, e, sizeof *e);
}

weft_status weft_array_to_dlpack(weft_array *a, int leaf, int device_type,
                                 struct DLManagedTensorVersioned **out)
{
    if (!out) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: out is NULL", who_out);
    }
    *out = NULL;
    if (!a) {
        return fe_error(WEFT_ERR_NULL_ARGUMENT, "%s: the array is NULL",
                        who_out);
    }
    if (leaf < 0 || leaf >= a->nleaf) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: leaf %d is outside 0..%d", who_out, leaf,
                        a->nleaf - 1);
    }
    if (device_type != 0 && device_type != DL_CPU && device_type != DL_CUDA) {
        return fe_error(WEFT_ERR_INVALID_ARGUMENT,
                        "%s: device type %d (weft exports 1, kDLCPU, 2, "
                        "kDLCUDA, or 0, where the newest copy is)",
                        who_out, device_type);
    }
    if (device_type == 0) {
        bool dev_newer = a->mirror && a->mirror->device_newer(a);
        device_type = dev_newer ? DL_CUDA : DL_CPU;
    }
    weft_context *ctx = a->ctx;
    const weft_type *leaves;
    fe_type_leaves(ctx, a->type, &leaves);
    dl_export *e = fe_calloc(ctx, sizeof *e);
    if (!e) {
        return fe_oom(who_out);
    }
    weft_status st = WEFT_OK;
    uint64_t dptr = 0;
    int ordinal = 0;
    if (device_type == DL_CUDA) {
        st = fe_array_export(a, leaf, !a->read_only, &dptr, who_out);
        if (st == WEFT_OK) {
            st = ctx->be->device->ordinal(ctx, &ordinal, who_out);
        }
        e->t.dl_tensor.data = (void *)(uintptr_t)dptr;
    } else {
        /* a consumer may write the host buffer: the device copy is then
         * stale (not for a read-only array, which no one writes) */
        st = a->read_only ? fe_array_host(a) : fe_array_host_written(a);
        e->t.dl_tensor.data = a->data[leaf];
    }
    if (st) {
        fe_free(ctx, e, sizeof *e);
        return st;
    }
    int64_t stride = 1;
    for (int d = a->rank - 1; d >= 0; d--) {
        e->shape[d] = a->shape[d];
        e->strides[d] = stride;
        stride *= a->shape[d];
    }
    weft_array_retain(a);
    e->a = a;
    e->t.version = (DLPackVersion){DL_MAJOR_VERSION, DL_MINOR_VERSION};
    e->t.manager_ctx = e;
    e->t.deleter = export_deleter;
    e->t.flags = a->read_only ? DL_FLAG_READ_ONLY : 0;
    e->t.dl_tensor.device = (DLDevice){device_type, ordinal};
    e->t.dl_tensor.ndim = a->rank;
    e->t.dl_tensor.dtype = dl_type_of(leaves[leaf]);
    e->t.dl_tensor.shape = e->shape;
    e->t.dl_tensor.strides = e->strides;
    e->t.dl_tensor.byte_offset = 0;
    *out = &e->t;
    return WEFT_OK;
}
