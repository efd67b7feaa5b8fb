"""Zero copy both ways, and no leak over 10,000 runs.

The leak test reads the resident set size from /proc/self/statm after a
warm-up of 1,000 runs and after 10,000 more: it may grow by at most 2 MiB
(a leak of one 200-byte object per run would be 1.9 MiB; Python's and
glibc's allocators keep pools that move by a few hundred KiB).  It also
counts the release callbacks of wrapped numpy inputs: every input wrapped
is released, and nothing stays kept.
"""

import gc
import os
import weakref

import numpy as np
import pytest

import weft
from weft import _array


def test_inputs_used_in_place(ctx):
    x = np.arange(10, dtype=np.float32)
    wa = weft.asarray(x, context=ctx)
    assert np.shares_memory(np.asarray(wa), x)
    # a later write to x is seen by weft: the buffer was not copied
    f = weft.jit(lambda a: weft.sum(a), context=ctx)
    x[0] = 100
    assert float(f(wa)) == x.sum()
    # the identity gives the input array back: a view of x
    r = weft.jit(lambda a: a, context=ctx)(x)
    assert np.shares_memory(np.asarray(r), x)


def test_results_are_views(ctx):
    r = weft.jit(lambda a: a + 1, context=ctx)(np.arange(1000.0))
    v1, v2 = r.numpy(), np.asarray(r)
    assert np.shares_memory(v1, v2)
    ptr = int(weft._ffi.ffi.cast('uintptr_t',
                                 weft._lib.weft_array_data(r._ptr, 0)))
    assert v1.ctypes.data == ptr
    assert v1.base is r  # the view keeps the weft array alive
    ref = weakref.ref(r)
    del r
    gc.collect()
    assert ref() is not None
    assert v2[999] == 1000.0
    del v1, v2
    gc.collect()
    assert ref() is None
    # writing through the view changes the array
    r = weft.jit(lambda a: a + 1, context=ctx)(np.arange(3.0))
    np.asarray(r)[0] = 42
    assert float(r[0]) == 42


def test_empty_results(ctx):
    r = weft.jit(lambda a: a + 1, context=ctx)(np.zeros((0, 4)))
    assert np.asarray(r).shape == (0, 4)


def _rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


@pytest.mark.parametrize('leak_backend', ['cpu', 'interp'])
def test_no_leak_over_10000_runs(leak_backend, cache_dir):
    if not weft.backend_available(leak_backend):
        pytest.skip(leak_backend)
    with weft.Context(leak_backend, cache_dir=cache_dir) as ctx:
        f = weft.jit(lambda a, b: (a * 2 + b, weft.sum(a)), context=ctx)
        x = np.arange(64, dtype=np.float32)

        def run(n):
            for _ in range(n):
                y = x.copy()               # a fresh input each time
                r, s = f(y, y)
                np.asarray(r)              # a view made and dropped
        before_released = _array.released()
        run(1000)
        gc.collect()
        rss0 = _rss()
        run(10000)
        gc.collect()
        rss1 = _rss()
        assert rss1 - rss0 <= 2 * 1024 * 1024, (rss0, rss1)
        # two inputs per run, each released by weft's callback
        assert _array.released() - before_released == 2 * 11000
        assert _array.kept() == 0


def test_contexts_and_programs_freed(cache_dir):
    refs = []
    for _ in range(50):
        c = weft.Context('interp', cache_dir=cache_dir)
        f = weft.jit(lambda a: weft.map(lambda v: v + weft.use(
            np.arange(3))[0], a), context=c)
        r = f(np.arange(4))
        refs.append(weakref.ref(c._h))
        del c, f, r
    gc.collect()
    assert all(h() is None for h in refs)
    assert _array.kept() == 0  # the arrays fixed by weft.use went too


def test_out_into_caller_arrays(ctx):
    """out=: results written into the caller's numpy arrays
    (weft_run_into), returned as given."""
    if not weft._ffi.has('weft_run_into'):
        pytest.skip('this libweft has no weft_run_into')
    x = np.arange(10, dtype=np.float32)
    dst = np.zeros(10, np.float32)
    f = weft.jit(lambda a: a * 3, context=ctx)
    r = f(x, out=dst)
    assert r is dst
    np.testing.assert_array_equal(dst, x * 3)
    with pytest.raises(weft.Error):
        f(x, out=(dst, dst))


def test_wait(ctx):
    r = weft.jit(lambda a: a + 1, context=ctx)(np.arange(3.0))
    assert r.wait() is r and r.block_until_ready() is r
