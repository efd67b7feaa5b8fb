"""weft.Array, and numpy arrays crossing into weft without a copy.

Inputs.  A C-contiguous numpy array is wrapped with weft_array_wrap: weft
reads (and, for an output that is the input itself, writes) the numpy
buffer in place.  The numpy array must stay alive until weft drops its
last reference, which may be later than the call (an array fixed into a
program with weft.use lives as long as the executable).  So each wrapped
array gets a number, the numpy object is kept in `_kept[number]`, the
number is the `user` pointer of the wrap, and one cffi callback,
`_release`, removes the entry when weft calls it.  `released()` counts the
callbacks (for the leak test).  A numpy array that is not C-contiguous is
copied first (np.ascontiguousarray); so is one of a byte order other than
the machine's.

Outputs.  A weft.Array holds one reference to a weft_array (and the
context's handle, which must outlive it).  np.asarray(r) / r.numpy() is a
view of weft's host buffer through __array_interface__: the view's base
is the weft.Array, which keeps the weft array alive.  On a GPU context the
first host access downloads the array (weft_array_data).  An array of a
tuple type is returned as a Python tuple of weft.Arrays, one per leaf
(struct of arrays), each holding its own reference.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Dict, List, Tuple

import numpy as np

from . import _types as T
from ._errors import Error, InvalidArgument, error_for
from ._ffi import ffi, has, keep_forever, lib

# buffer (a cffi pointer, equal and hashing by address) -> list of the
# from_buffer cdata objects wrapping it, each of which keeps its numpy array
# alive; a list because one buffer may be wrapped again before weft
# releases it.
_kept: Dict[Any, List[Any]] = {}
_released = [0]


@ffi.callback('void(void *)')
def _release(user):
    # Runs on whichever thread drops the last reference (cffi takes the
    # GIL).  At interpreter exit the module may be half torn down.
    try:
        e = _kept[user]
        e.pop()
        if not e:
            del _kept[user]
        _released[0] += 1
    except Exception:  # pragma: no cover - shutdown only
        pass


keep_forever(_release)


def released() -> int:
    """How many wrapped numpy arrays weft has let go of so far."""
    return _released[0]


def kept() -> int:
    """How many wrapped numpy arrays weft holds now."""
    return sum(len(e) for e in _kept.values())


def _contiguous(a: np.ndarray) -> np.ndarray:
    if not a.flags.c_contiguous or not a.dtype.isnative:
        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder('='))
    return a


class _Bufs(threading.local):
    """Per-thread scratch for a wrap (shape and data pointer arrays), so a
    call allocates no cffi objects of its own."""

    def __init__(self):
        self.shape = ffi.new('int64_t[%d]' % (lib.WEFT_MAX_RANK + 1))
        self.data = ffi.new('void *[1]')
        self.out = ffi.new('weft_array **')


_bufs = _Bufs()
_data = lib.weft_array_data
_cast = ffi.cast
_uintptr = ffi.typeof('uintptr_t')
_num_code = T.CODE_OF_NUM
_from_buffer = ffi.from_buffer
_wrap = lib.weft_array_wrap


def wrap(ctxptr, a: np.ndarray):
    """A new weft_array * (one reference, the caller's) over a's buffer;
    a must be C-contiguous and native-endian (see _contiguous)."""
    try:
        code = _num_code[a.dtype.num]
    except KeyError:
        raise TypeError('weft: no weft element type for dtype %s' % a.dtype) \
            from None
    b = _bufs
    shape = a.shape
    rank = len(shape)
    sh = b.shape
    if rank == 1:
        sh[0] = shape[0]
    else:
        for d in range(rank):
            sh[d] = shape[d]
    buf = _from_buffer(a, require_writable=False)
    b.data[0] = buf
    e = _kept.get(buf)
    if e is None:
        _kept[buf] = [buf]
    else:
        e.append(buf)
    st = _wrap(ctxptr, code, rank, sh, b.data, _release, buf, b.out)
    if st:
        e = _kept[buf]
        e.pop()
        if not e:
            del _kept[buf]
        raise error_for(st)
    return b.out[0]


class Array:
    """An array computed by weft (or wrapped for it), on the context's
    backend.  np.asarray(r) and r.numpy() give a view without a copy that
    keeps r alive; r.__dlpack__() exports it (torch.from_dlpack(r)).
    .shape, .dtype, .ndim, .size, len(r)."""

    __slots__ = ('_ptr', '_h', '_leaf', '_dtype', '_shape', '__weakref__')

    def __init__(self, *a, **k):
        raise TypeError('weft.Array is made by weft (weft.asarray, the '
                        'results of a jit function)')

    @classmethod
    def _own(cls, ptr, h, leaf: int, dtype) -> 'Array':
        """An Array taking over one reference to ptr."""
        r = object.__new__(cls)
        r._ptr = ptr
        r._h = h
        r._leaf = leaf
        r._dtype = dtype
        r._shape = None
        return r

    def _ctx_of(self):
        ctx = self._h.ctx() if self._h.ctx is not None else None
        if ctx is None or ctx.closed:
            raise InvalidArgument(int(lib.WEFT_ERR_NULL_ARGUMENT),
                                  "this array's context is closed: pass "
                                  "context=")
        return ctx

    def __del__(self):
        p = getattr(self, '_ptr', None)
        if p is not None and lib is not None:
            self._ptr = None
            lib.weft_array_release(p)

    @property
    def shape(self) -> Tuple[int, ...]:
        s = self._shape
        if s is None:
            p = self._ptr
            s = self._shape = tuple(lib.weft_array_extent(p, d)
                                    for d in range(lib.weft_array_rank(p)))
        return s

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return lib.weft_array_rank(self._ptr)

    @property
    def size(self) -> int:
        return lib.weft_array_size(self._ptr)

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError('len() of a rank-0 weft.Array')
        return self.shape[0]

    def _host(self):
        ptr = lib.weft_array_data(self._ptr, self._leaf)
        if ptr == ffi.NULL:
            raise error_for(int(lib.WEFT_ERR_DEVICE))
        return ptr

    @property
    def __array_interface__(self) -> Dict[str, Any]:
        shape = self.shape
        if 0 in shape:
            # numpy wants a pointer even for no elements; weft may have none
            addr = _EMPTY_ADDR
        else:
            ptr = _data(self._ptr, self._leaf)
            if ptr == ffi.NULL:
                raise error_for(int(lib.WEFT_ERR_DEVICE))
            addr = int(_cast(_uintptr, ptr))
        return {'version': 3, 'shape': shape, 'typestr': self._dtype.str,
                'data': (addr, False)}

    def numpy(self) -> np.ndarray:
        """A numpy view of the host buffer (no copy; it keeps this array
        alive).  Writing through it changes the weft array."""
        return np.asarray(self)

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def wait(self) -> 'Array':
        """Wait until weft has finished computing this array (a GPU run
        may return before its kernels finish; weft_array_wait); returns
        self.  A no-op where the library has no weft_array_wait (its runs
        are complete when they return)."""
        if has('weft_array_wait'):
            st = lib.weft_array_wait(self._ptr)
            if st:
                raise error_for(st)
        return self

    block_until_ready = wait  # JAX's name

    def item(self):
        """The value of a one-element array as a Python scalar."""
        return self.numpy().item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        return bool(self.item())

    def __getitem__(self, ix):
        return self.numpy()[ix]

    def __iter__(self):
        return iter(self.numpy())

    def __repr__(self) -> str:
        try:
            body = np.array2string(self.numpy(), separator=', ')
        except Error as e:
            body = '<%s>' % e.status_name
        return 'weft.Array(%s, dtype=%s)' % (body, self._dtype)

    @property
    def device(self) -> str:
        t = self.__dlpack_device__()[0]
        return 'cuda' if t == _KDL_CUDA else 'cpu'

    # DLPack, in _dlpack.py
    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None):
        from . import _dlpack
        return _dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> Tuple[int, int]:
        from . import _dlpack
        return _dlpack.device_of(self)


_EMPTY = np.empty(1, np.uint8)
_EMPTY_ADDR = _EMPTY.ctypes.data
_KDL_CUDA = 2


def results(ptr, h, ctxptr, t: int):
    """The Python value of one result array: an Array, or for a tuple type
    a (nested) tuple of Arrays, one per leaf."""
    if T.is_scalar(t):
        return Array._own(ptr, h, 0, T.DTYPE_OF[t])
    counter = itertools.count()

    def build(tt):
        if T.is_scalar(tt):
            lib.weft_array_retain(ptr)
            return Array._own(ptr, h, next(counter), T.DTYPE_OF[tt])
        return tuple(build(lib.weft_type_component(ctxptr, tt, i))
                     for i in range(lib.weft_type_arity(ctxptr, tt)))

    try:
        return build(t)
    finally:
        lib.weft_array_release(ptr)


def asarray(x, context=None) -> Array:
    """A weft.Array over a numpy array (or anything np.asarray takes) on
    a context (default: the default context), without a copy where x is
    already C-contiguous; a weft.Array of that context is returned as it
    is.  Passing the same weft.Array to many jit calls saves wrapping the
    numpy array each time."""
    from ._context import default_context
    ctx = context or default_context()
    if isinstance(x, Array):
        if x._h is ctx._h:
            return x
        x = x.numpy()
    a = _contiguous(np.asarray(x))
    return Array._own(wrap(ctx._ptr, a), ctx._h, 0, a.dtype)
