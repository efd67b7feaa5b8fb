/*
 * lib/dlpack_abi.h: the DLPack 1.x ABI, as weft declares it for itself.
 *
 * DLPack (dmlc/dlpack) is the in-memory tensor structure that numpy,
 * PyTorch, CuPy and JAX exchange.  Its types are plain C structs whose
 * layout the specification fixes, so weft declares them here from the
 * published layout instead of including dlpack.h (Debian ships only 0.6,
 * which lacks the versioned tensor).  This mirrors the DLPack 1.1 ABI:
 * the same field order, types and constants; the static assertions below
 * check the offsets and sizes the specification gives for a 64-bit ABI.
 *
 * Only what lib/dlpack.c needs is here.  weft.h forward-declares struct
 * DLManagedTensorVersioned with the same tag, so a caller that includes the
 * real dlpack.h passes its tensors to weft without a cast.
 */
#ifndef WEFT_DLPACK_ABI_H
#define WEFT_DLPACK_ABI_H

#include <stddef.h>
#include <stdint.h>

#define DL_MAJOR_VERSION 1 /* the major version weft produces and accepts */
#define DL_MINOR_VERSION 1

/* DLDeviceType (an int-sized enum in the specification). */
enum {
    DL_CPU = 1,          /* kDLCPU */
    DL_CUDA = 2,         /* kDLCUDA */
    DL_CUDA_HOST = 3,    /* kDLCUDAHost: pinned host memory */
    DL_CUDA_MANAGED = 13 /* kDLCUDAManaged: unified memory */
};

/* DLDataTypeCode. */
enum {
    DL_INT = 0,   /* kDLInt */
    DL_UINT = 1,  /* kDLUInt */
    DL_FLOAT = 2, /* kDLFloat */
    DL_BFLOAT = 4,
    DL_COMPLEX = 5,
    DL_BOOL = 6 /* kDLBool */
};

/* DLManagedTensorVersioned.flags */
#define DL_FLAG_READ_ONLY ((uint64_t)1 << 0) /* DLPACK_FLAG_BITMASK_READ_ONLY */
#define DL_FLAG_IS_COPIED ((uint64_t)1 << 1) /* DLPACK_FLAG_BITMASK_IS_COPIED */

typedef struct DLPackVersion {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLDevice {
    int32_t device_type; /* DLDeviceType */
    int32_t device_id;
} DLDevice;

typedef struct DLDataType {
    uint8_t code;   /* DLDataTypeCode */
    uint8_t bits;   /* bits of one lane */
    uint16_t lanes; /* 1 for scalars */
} DLDataType;

typedef struct DLTensor {
    void *data; /* the buffer; elements start at data + byte_offset */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;   /* ndim extents */
    int64_t *strides; /* ndim strides in elements, or NULL: compact
                             row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;                                      /* the producer's */
    void (*deleter)(struct DLManagedTensorVersioned *self); /* may be NULL */
    uint64_t flags;                                         /* DL_FLAG_* */
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* The specification's layout (LP64). */
_Static_assert(sizeof(DLPackVersion) == 8, "DLPackVersion");
_Static_assert(sizeof(DLDevice) == 8, "DLDevice");
_Static_assert(sizeof(DLDataType) == 4, "DLDataType");
_Static_assert(offsetof(DLTensor, data) == 0, "DLTensor.data");
_Static_assert(offsetof(DLTensor, device) == 8, "DLTensor.device");
_Static_assert(offsetof(DLTensor, ndim) == 16, "DLTensor.ndim");
_Static_assert(offsetof(DLTensor, dtype) == 20, "DLTensor.dtype");
_Static_assert(offsetof(DLTensor, shape) == 24, "DLTensor.shape");
_Static_assert(offsetof(DLTensor, strides) == 32, "DLTensor.strides");
_Static_assert(offsetof(DLTensor, byte_offset) == 40, "DLTensor.byte_offset");
_Static_assert(sizeof(DLTensor) == 48, "DLTensor");
_Static_assert(offsetof(DLManagedTensorVersioned, version) == 0, "version");
_Static_assert(offsetof(DLManagedTensorVersioned, manager_ctx) == 8,
               "manager_ctx");
_Static_assert(offsetof(DLManagedTensorVersioned, deleter) == 16, "deleter");
_Static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "flags");
_Static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
               "dl_tensor");
_Static_assert(sizeof(DLManagedTensorVersioned) == 80,
               "DLManagedTensorVersioned");

#endif /* WEFT_DLPACK_ABI_H */
