"""Contexts, errors and their statuses, bad inputs, checked mode."""

import gc
import weakref

import numpy as np
import pytest

import weft


def test_context_basics(ctx, backend):
    assert ctx.backend == backend
    s = ctx.stats()
    assert isinstance(s, weft.Stats)
    f = weft.jit(lambda a: a * 2, context=ctx)
    f(np.ones(1000, np.float32))
    f(np.ones(10, np.float32))
    s2 = ctx.stats()
    if backend == 'cpu':
        assert s2.kernels_compiled + s2.kernels_loaded >= 1
        assert s2.threads >= 1
    if backend == 'ptx':
        # the two numpy inputs went up; the results stay on the device
        assert s2.bytes_uploaded >= 1010 * 4 and s2.bytes_downloaded == 0
    else:
        assert s2.bytes_uploaded == 0 and s2.bytes_downloaded == 0


def test_close_and_with(backend, cache_dir):
    with weft.Context(backend, cache_dir=cache_dir) as c:
        r = weft.jit(lambda a: a + 1, context=c)(np.arange(3.0))
    assert c.closed
    c.close()  # twice is fine
    # the array outlives the closed context: the C context goes with it
    np.testing.assert_array_equal(r, [1, 2, 3])
    with pytest.raises(weft.InvalidArgument, match='closed'):
        weft.jit(lambda a: a, context=c)(np.arange(3.0))


def test_context_freed_after_last_array(backend, cache_dir):
    c = weft.Context(backend, cache_dir=cache_dir)
    r = weft.jit(lambda a: a + 1, context=c)(np.arange(3.0))
    h = weakref.ref(c._h)
    del c
    gc.collect()
    assert h() is not None          # r still needs the C context
    del r
    gc.collect()
    assert h() is None


def test_unknown_backend():
    with pytest.raises(weft.BackendUnknown) as e:
        weft.Context('nope')
    assert e.value.status_name == 'WEFT_ERR_BACKEND_UNKNOWN'
    assert isinstance(e.value, ValueError)
    assert 'nope' in e.value.message or e.value.message


def test_ptx_unavailable_or_works():
    try:
        c = weft.Context('ptx')
    except weft.BackendUnavailable as e:
        assert e.status == int(weft._lib.WEFT_ERR_BACKEND_UNAVAILABLE)
        assert e.message
        assert weft.backend_available('ptx') is False
        assert weft.devices() == []
    else:
        c.close()
        assert weft.backend_available('ptx')


def test_bad_config():
    with pytest.raises(weft.InvalidArgument):
        weft.Context('interp', timeout_ms=-1)
    with pytest.raises(weft.InvalidArgument):
        weft.Context('cpu', threads=100000)


def test_default_context(monkeypatch):
    weft.set_default_context(None)
    monkeypatch.setenv('WEFT_BACKEND', 'interp')
    try:
        assert weft.default_context().backend == 'interp'
        r = weft.jit(lambda a: a * 3)(np.arange(4))
        np.testing.assert_array_equal(r, [0, 3, 6, 9])
    finally:
        weft.default_context().close()
        weft.set_default_context(None)


def test_type_mismatch_raises_at_the_line(ctx):
    f = weft.jit(lambda a, b: weft.zip_with(lambda u, v: weft.quot(u, v), a,
                                            b), context=ctx)
    with pytest.raises(weft.TypeMismatch) as e:
        f(np.ones(3, np.float32), np.ones(3, np.float32))  # quot of floats
    assert isinstance(e.value, TypeError)
    assert e.value.message


def test_rank_mismatch(ctx):
    f = weft.jit(lambda a, b: weft.acond(weft.the(weft.sum(a)) > 0, a, b),
                 context=ctx)
    with pytest.raises(weft.RankMismatch):
        f(np.ones(3), np.ones((3, 3)))


def test_bad_dtype(ctx):
    with pytest.raises(TypeError, match='complex128'):
        weft.jit(lambda a: a, context=ctx)(np.ones(3, np.complex128))
    with pytest.raises(TypeError):
        weft.jit(lambda a: a, context=ctx)(np.array(['x']))


def test_bad_return(ctx):
    with pytest.raises(TypeError, match='return'):
        weft.jit(lambda a: 'no', context=ctx)(np.ones(3))


def test_out_of_bounds_checked(checked_ctx, backend):
    f = weft.jit(lambda a, i: weft.map(lambda k: a[k], i), context=checked_ctx)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(f(x, np.array([4, 0])), [4, 0])
    with pytest.raises(weft.OutOfBounds) as e:
        f(x, np.array([1, 5]))
    assert isinstance(e.value, IndexError)
    assert e.value.status_name == 'WEFT_ERR_OUT_OF_BOUNDS'


def test_divide_by_zero_checked(checked_ctx):
    f = weft.jit(lambda a, b: a // b, context=checked_ctx)
    with pytest.raises(weft.DivideByZero):
        f(np.array([1, 2], np.int32), np.array([1, 0], np.int32))


def test_unchecked_out_of_bounds_is_zero_on_cpu(ctx, backend):
    if backend != 'cpu':
        pytest.skip('the interpreter always checks')
    f = weft.jit(lambda a, i: weft.map(lambda k: a[k], i), context=ctx)
    np.testing.assert_array_equal(f(np.arange(1, 4.0), np.array([0, 7])),
                                  [1, 0])


def test_error_carries_status_and_message(ctx):
    with pytest.raises(weft.Error) as e:
        weft.jit(lambda a: weft.reshape(a, (2, 2)), context=ctx)(np.ones(3))
    err = e.value
    assert isinstance(err.status, int) and err.status > 0
    assert err.status_name.startswith('WEFT_ERR_')
    assert 'reshape' in err.message.lower() or err.message
    assert err.status_name in str(err)


def test_non_contiguous_input_is_copied(ctx):
    x = np.arange(20, dtype=np.float64).reshape(4, 5)[:, ::2]
    r = weft.jit(lambda a: a * 1, context=ctx)(x)
    np.testing.assert_array_equal(r, x)
    big = np.arange(10, dtype='>i4')  # big-endian: converted
    np.testing.assert_array_equal(weft.jit(lambda a: a + 1, context=ctx)(big),
                                  np.arange(1, 11))


def test_array_api(ctx):
    r = weft.jit(lambda a: a * 2, context=ctx)(np.arange(6.0).reshape(2, 3))
    assert r.shape == (2, 3) and r.ndim == 2 and r.size == 6
    assert len(r) == 2 and r.dtype == np.float64 and r.nbytes == 48
    assert 'weft.Array' in repr(r)
    assert float(r[1, 2]) == 10.0
    assert r.device == ('cuda' if ctx.backend == 'ptx' else 'cpu')
    s = weft.jit(lambda a: weft.sum(a), context=ctx)(np.arange(4))
    assert s.ndim == 0 and int(s) == 6 and s.item() == 6
    with pytest.raises(TypeError):
        len(s)
    with pytest.raises(TypeError):
        weft.Array()
