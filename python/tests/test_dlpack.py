"""DLPack on the host: numpy's np.from_dlpack of weft results and
weft.from_dlpack of numpy arrays, without copies, with every deleter
called once; the versioned capsule's protocol (unconsumed capsules free
their tensor)."""

import gc

import numpy as np
import pytest

import weft
from weft import _dlpack
from weft._ffi import ffi, lib


def test_numpy_from_weft(ctx, backend):
    if backend == 'ptx':
        pytest.skip('host test')
    r = weft.jit(lambda a: a * 2, context=ctx)(np.arange(12.0).reshape(3, 4))
    assert r.__dlpack_device__() == (1, 0)
    # numpy 1.24 asks for the legacy capsule, which weft's Python side
    # wraps (and counts in _exported); numpy 2 for the versioned one, which
    # the C library makes: either way nothing is left once v is gone.
    n = len(_dlpack._exported)
    v = np.from_dlpack(r)
    np.testing.assert_array_equal(v, np.arange(12.0).reshape(3, 4) * 2)
    assert np.shares_memory(v, np.asarray(r))
    del r
    gc.collect()
    assert v[2, 3] == 22.0      # the view keeps the weft array alive
    del v
    gc.collect()
    assert len(_dlpack._exported) == n


@pytest.mark.parametrize('dtype', [np.float32, np.float64, np.int8,
                                   np.uint16, np.int64])
@pytest.mark.parametrize('shape', [(), (0,), (5,), (2, 3, 4)])
def test_weft_from_numpy(ctx, backend, dtype, shape):
    if backend == 'ptx':
        pytest.skip('host test')
    x = (np.arange(int(np.prod(shape))) % 100).astype(dtype).reshape(shape)
    w = weft.from_dlpack(x, context=ctx)
    assert w.shape == shape and w.dtype == np.dtype(dtype)
    assert np.shares_memory(np.asarray(w), x) or x.size == 0
    r = weft.jit(lambda a: a + 1, context=ctx)(w)
    np.testing.assert_array_equal(r, x + dtype(1))
    del w, r
    gc.collect()
    assert not _dlpack._imported


def test_strided_and_bad_dtype_rejected(ctx):
    x = np.arange(10.0)[::2]
    with pytest.raises((weft.Error, BufferError)):
        weft.from_dlpack(x, context=ctx, copy=False)
    # copy=None (the default): copied, since the strides cannot be shared
    np.testing.assert_array_equal(weft.from_dlpack(x, context=ctx), x)
    with pytest.raises(TypeError):
        weft.from_dlpack(object(), context=ctx)
    with pytest.raises(TypeError):
        weft.from_dlpack(np.arange(4, dtype=np.complex64), context=ctx)


def test_unconsumed_capsule_frees_its_tensor(ctx):
    r = weft.jit(lambda a: a - 1, context=ctx)(np.arange(4.0))
    n = len(_dlpack._exported)
    for mv in [None, (1, 0)]:
        cap = r.__dlpack__(max_version=mv)
        assert len(_dlpack._exported) >= n
        del cap
        gc.collect()
        assert len(_dlpack._exported) == n


def test_versioned_round_trip_through_weft(ctx):
    """weft.from_dlpack of a weft result (versioned capsule) and back."""
    r = weft.jit(lambda a: a * 3, context=ctx)(np.arange(5, dtype=np.int32))
    w = weft.from_dlpack(r, context=ctx)
    np.testing.assert_array_equal(w, [0, 3, 6, 9, 12])
    if ctx.backend == 'ptx':
        # a device result: the same device memory, nothing downloaded for it
        p, q = ffi.new('void **'), ffi.new('void **')
        assert lib.weft_array_device_ptr(w._ptr, 0, p) == 0
        assert lib.weft_array_device_ptr(r._ptr, 0, q) == 0
        assert p[0] == q[0]
    else:
        assert np.shares_memory(np.asarray(w), np.asarray(r))


class _Foreign:
    """An array of another library: only the DLPack protocol."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None, **kw):
        return self.a.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_jit_takes_dlpack_objects(ctx, backend):
    if backend == 'ptx':
        pytest.skip('host test')
    x = np.arange(6, dtype=np.float32)
    f = weft.jit(lambda a: a, context=ctx)
    r = f(_Foreign(x))
    assert np.shares_memory(np.asarray(r), x)
    np.testing.assert_array_equal(weft.jit(lambda a: a * 2, context=ctx)(
        _Foreign(x)), x * 2)
