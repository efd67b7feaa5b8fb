"""DLPack both ways: weft.Array.__dlpack__ / __dlpack_device__ and
weft.from_dlpack(x) for anything with __dlpack__ (torch, cupy, jax, numpy).

The structs are DLPack's ABI (dlpack.h 1.x: DLManagedTensorVersioned and
the older DLManagedTensor), declared here because Debian's dlpack.h (0.6)
predates the versioned one; weft.h only forward-declares the struct.

Where the library has weft_array_to_dlpack / weft_array_from_dlpack (the
C API of issue 17), they do the work, on every device weft supports: a
CUDA tensor goes into a ptx context with no upload, a ptx result comes
out as a CUDA tensor with no download.  Where it does not (a library
older than this package), host tensors are exchanged here in Python:
export points a DLPack tensor at weft_array_data's host buffer and holds a
reference to the weft array until the consumer calls the deleter; import
wraps the tensor's data with weft_array_wrap and calls the tensor's
deleter from the release callback.

Capsules.  A producer's capsule is named "dltensor_versioned" (or
"dltensor" for a consumer that gives no max_version, e.g. numpy 1.24's
np.from_dlpack); the consumer renames it "used_..." once it owns the
tensor.  A capsule collected unconsumed calls the deleter itself
(_capsule_destructor).

Streams (CUDA): weft synchronises with the device when it takes a CUDA
tensor and before it hands one out (the C API's rule, at the least a full
synchronisation), so the producer's stream argument is accepted and
needs no event; weft_array_wait, where present, is called before export.
"""

from __future__ import annotations

import ctypes
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _types as T
from ._errors import InvalidArgument, check, error_for
from ._ffi import ffi, has, keep_forever, lib


def _known(decl: str) -> bool:
    try:
        ffi.sizeof(decl)
        return True
    except Exception:
        return False


# Declared here unless weft.h brought a full dlpack.h into the cdef.
if not _known('DLTensor'):
    ffi.cdef('''
    typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
    typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
    typedef struct {
        void *data; DLDevice device; int32_t ndim; DLDataType dtype;
        int64_t *shape; int64_t *strides; uint64_t byte_offset;
    } DLTensor;
    typedef struct DLManagedTensor {
        DLTensor dl_tensor; void *manager_ctx;
        void (*deleter)(struct DLManagedTensor *self);
    } DLManagedTensor;
    struct DLManagedTensorVersioned {
        DLPackVersion version; void *manager_ctx;
        void (*deleter)(struct DLManagedTensorVersioned *self);
        uint64_t flags; DLTensor dl_tensor;
    };
    typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;
    ''')

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
_INT, _UINT, _FLOAT, _BOOL = 0, 1, 2, 6
_READ_ONLY, _IS_COPIED = 1, 2

_NAME_V = b'dltensor_versioned'
_NAME_L = b'dltensor'
_USED_V = b'used_dltensor_versioned'
_USED_L = b'used_dltensor'

_py = ctypes.pythonapi
_py.PyCapsule_New.restype = ctypes.py_object
_py.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                              ctypes.c_void_p]
_py.PyCapsule_GetPointer.restype = ctypes.c_void_p
_py.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_IsValid.restype = ctypes.c_int
_py.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_SetName.restype = ctypes.c_int
_py.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_CapsuleGetPointerRaw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_char_p)(
    ('PyCapsule_GetPointer', _py))
_CapsuleIsValidRaw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                                       ctypes.c_char_p)(
    ('PyCapsule_IsValid', _py))


def _dl_dtype(dtype: np.dtype) -> Tuple[int, int]:
    kind = {'b': _BOOL, 'i': _INT, 'u': _UINT, 'f': _FLOAT}[dtype.kind]
    return kind, dtype.itemsize * 8


def _np_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    kinds = {_INT: 'i', _UINT: 'u', _FLOAT: 'f', _BOOL: 'b'}
    if lanes != 1 or code not in kinds or bits % 8:
        raise TypeError('weft.from_dlpack: DLPack dtype (code %d, %d bits, '
                        '%d lanes) has no weft type' % (code, bits, lanes))
    d = np.dtype('%s%d' % (kinds[code], bits // 8)) if code != _BOOL \
        else np.dtype(np.bool_)
    if d not in T.CODE_OF:
        raise TypeError('weft.from_dlpack: dtype %s has no weft type' % d)
    return d


# -- export ------------------------------------------------------------------

# address of a tensor we made -> what keeps it and its weft array alive
_exported: Dict[int, Any] = {}


def _addr(p) -> int:
    return int(ffi.cast('uintptr_t', p))


def _context_of(a):
    ctx = a._h.ctx() if a._h.ctx is not None else None
    return ctx


def device_of(a) -> Tuple[int, int]:
    """__dlpack_device__: (kDLCUDA, device) for a ptx context's array,
    else (kDLCPU, 0)."""
    ctx = _context_of(a)
    if ctx is not None and ctx.backend == 'ptx':
        return (KDL_CUDA, getattr(ctx, 'device', 0))
    return (KDL_CPU, 0)


@ffi.callback('void(DLManagedTensorVersioned *)')
def _deleter_v(t):
    _drop(t)


keep_forever(_deleter_v)


@ffi.callback('void(DLManagedTensor *)')
def _deleter_l(t):
    _drop(t)


keep_forever(_deleter_l)


def _drop(t) -> None:
    try:
        keep = _exported.pop(_addr(t), None)
        if keep is not None:
            inner = keep.get('inner')
            if inner is not None and inner.deleter != ffi.NULL:
                inner.deleter(inner)
            if keep.get('array') is not None:
                lib.weft_array_release(keep['array'])
    except Exception:  # pragma: no cover - shutdown only
        pass


def _host_tensor(a, versioned: bool):
    """A DLPack tensor over a's host buffer, made here (no C support)."""
    ptr = lib.weft_array_data(a._ptr, a._leaf) if a.size else ffi.NULL
    if a.size and ptr == ffi.NULL:
        raise error_for(int(lib.WEFT_ERR_DEVICE))
    shape = ffi.new('int64_t[]', list(a.shape) or [0])
    if versioned:
        t = ffi.new('DLManagedTensorVersioned *')
        t.version.major, t.version.minor = 1, 0
        t.deleter = _deleter_v
        t.flags = 0
    else:
        t = ffi.new('DLManagedTensor *')
        t.deleter = _deleter_l
    d = t.dl_tensor
    d.data = ptr if ptr != ffi.NULL else ffi.cast('void *', 0)
    d.device.device_type, d.device.device_id = KDL_CPU, 0
    d.ndim = a.ndim
    d.dtype.code, d.dtype.bits = _dl_dtype(a.dtype)
    d.dtype.lanes = 1
    d.shape = shape
    d.strides = ffi.NULL
    d.byte_offset = 0
    lib.weft_array_retain(a._ptr)
    _exported[_addr(t)] = {'t': t, 'shape': shape, 'array': a._ptr}
    return t


def _legacy_of(v):
    """A DLManagedTensor that owns the versioned tensor v (its deleter
    calls v's)."""
    t = ffi.new('DLManagedTensor *')
    t.dl_tensor = v.dl_tensor
    t.deleter = _deleter_l
    _exported[_addr(t)] = {'t': t, 'inner': v}
    return t


@ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(cap):
    # An unconsumed capsule still has its producer's name: delete the
    # tensor.  (A consumed one was renamed "used_..." and is the
    # consumer's.)
    try:
        for name in (_NAME_V, _NAME_L):
            if _CapsuleIsValidRaw(cap, name):
                p = _CapsuleGetPointerRaw(cap, name)
                kind = ('DLManagedTensorVersioned *' if name == _NAME_V
                        else 'DLManagedTensor *')
                t = ffi.cast(kind, p)
                if t.deleter != ffi.NULL:
                    t.deleter(t)
                return
    except Exception:  # pragma: no cover
        pass


keep_forever(_capsule_destructor)


def export(a, stream=None, max_version=None, dl_device=None, copy=None):
    """a.__dlpack__(...): a capsule of the versioned tensor when the
    consumer gives max_version >= (1, 0), else of the legacy one."""
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    want = tuple(dl_device) if dl_device is not None else device_of(a)
    if copy is True:
        raise BufferError('weft: __dlpack__(copy=True) is not supported '
                          '(export without a copy and copy on the other '
                          'side)')
    if want[0] not in (KDL_CPU, KDL_CUDA):
        raise BufferError('weft: cannot export to DLPack device %r' % (want,))
    if has('weft_array_to_dlpack'):
        if has('weft_array_wait'):
            check(lib.weft_array_wait(a._ptr))
        out = ffi.new('DLManagedTensorVersioned **')
        check(lib.weft_array_to_dlpack(a._ptr, a._leaf, want[0], out))
        v = out[0]
        t = v if versioned else _legacy_of(v)
    else:
        if want[0] != KDL_CPU:
            raise BufferError('weft: this libweft has no '
                              'weft_array_to_dlpack: host export only')
        t = _host_tensor(a, versioned)
    name = _NAME_V if versioned else _NAME_L
    return _py.PyCapsule_New(int(ffi.cast('uintptr_t', t)), name,
                             ctypes.cast(_capsule_destructor,
                                         ctypes.c_void_p).value)


# -- import ------------------------------------------------------------------

_imported: Dict[int, Any] = {}


@ffi.callback('void(void *)')
def _release_imported(user):
    try:
        t = _imported.pop(_addr(user), None)
        if t is not None and t.deleter != ffi.NULL:
            t.deleter(t)
    except Exception:  # pragma: no cover
        pass


keep_forever(_release_imported)


def _compact(d) -> bool:
    if d.strides == ffi.NULL:
        return True
    expect = 1
    for k in range(d.ndim - 1, -1, -1):
        if d.shape[k] != 1 and d.strides[k] != expect:
            return False
        expect *= d.shape[k]
    return True


def _versioned_of(legacy):
    """A versioned tensor owning the legacy one (for the C import)."""
    v = ffi.new('DLManagedTensorVersioned *')
    v.version.major, v.version.minor = 1, 0
    v.dl_tensor = legacy.dl_tensor
    v.flags = 0
    v.deleter = _deleter_v
    _exported[_addr(v)] = {'t': v, 'inner': legacy}
    return v


def _capsule(x) -> Tuple[Any, bool]:
    try:
        cap = x.__dlpack__(max_version=(1, 0))
    except TypeError:  # producers older than DLPack 1.0's protocol
        cap = x.__dlpack__()
    if _py.PyCapsule_IsValid(cap, _NAME_V):
        return cap, True
    if _py.PyCapsule_IsValid(cap, _NAME_L):
        return cap, False
    raise BufferError('weft.from_dlpack: not a DLPack capsule (or one '
                      'already consumed)')


def from_dlpack(x, context=None, copy: Optional[bool] = None):
    """A weft.Array over the memory of x (anything with __dlpack__: torch,
    cupy, jax, numpy arrays) without a copy: host tensors on any context,
    CUDA tensors on a ptx context (where the library has
    weft_array_from_dlpack).  copy=None (the default) or True: the library
    copies where it cannot share (WEFT_DLPACK_COPY: strides that are not
    compact, a device pointer off weft's 256-byte alignment, as a slice's
    offset gives); copy=False: never, such a tensor is an error.  Errors:
    a dtype weft has no type for (TypeError), with copy=False a tensor
    that cannot be shared, a device the context cannot use
    (weft.InvalidArgument or BufferError)."""
    from ._array import Array
    from ._context import default_context
    ctx = context or default_context()
    if not hasattr(x, '__dlpack__'):
        raise TypeError('weft.from_dlpack: %s has no __dlpack__'
                        % type(x).__name__)
    cap, versioned = _capsule(x)
    name = _NAME_V if versioned else _NAME_L
    p = _py.PyCapsule_GetPointer(cap, name)
    t = ffi.cast('DLManagedTensorVersioned *' if versioned
                 else 'DLManagedTensor *', p)
    d = t.dl_tensor
    dtype = _np_dtype(d.dtype.code, d.dtype.bits, d.dtype.lanes)
    if has('weft_array_from_dlpack'):
        v = t if versioned else _versioned_of(t)
        out = ffi.new('weft_array **')
        # copy=None: copy only where weft cannot share (a slice's offset,
        # strides), as the array API's from_dlpack; copy=False: never
        flags = getattr(lib, 'WEFT_DLPACK_COPY', 1) if copy is not False else 0
        st = lib.weft_array_from_dlpack(ctx._ptr, v, flags, out)
        if st:
            if not versioned:
                _exported.pop(_addr(v), None)
            raise error_for(st)
        _py.PyCapsule_SetName(cap, _USED_V if versioned else _USED_L)
        return Array._own(out[0], ctx._h, 0, dtype)
    if d.device.device_type not in (KDL_CPU, KDL_CUDA_HOST):
        raise InvalidArgument(int(lib.WEFT_ERR_INVALID_ARGUMENT),
                              'weft.from_dlpack: device type %d needs a '
                              'libweft with weft_array_from_dlpack'
                              % d.device.device_type)
    if not _compact(d):
        raise InvalidArgument(int(lib.WEFT_ERR_INVALID_ARGUMENT),
                              'weft.from_dlpack: strided (non-contiguous) '
                              'tensor; make it contiguous first')
    shape = ffi.new('int64_t[]', [d.shape[k] for k in range(d.ndim)] or [0])
    data = ffi.new('void *[1]')
    data[0] = ffi.cast('char *', d.data) + d.byte_offset
    out = ffi.new('weft_array **')
    _imported[_addr(t)] = t
    st = lib.weft_array_wrap(ctx._ptr, T.CODE_OF[dtype], d.ndim, shape,
                             data, _release_imported, t, out)
    if st:
        _imported.pop(_addr(t), None)
        raise error_for(st)
    _py.PyCapsule_SetName(cap, _USED_V if versioned else _USED_L)
    return Array._own(out[0], ctx._h, 0, dtype)
