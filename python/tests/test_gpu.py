"""GPU: DLPack both ways with PyTorch and CuPy on the ptx backend, with
no host copy (bytes_uploaded == bytes_downloaded == 0 over the run), and
results equal to torch's.  Skipped without a GPU, torch or cupy.  Run on
the GPU machine:

    WEFT_LIBRARY=build/libweft.so python3 -m pytest -q python/tests -m gpu
"""

import numpy as np
import pytest

import weft

pytestmark = pytest.mark.gpu


def _ptx(cache_dir):
    if not weft.backend_available('ptx'):
        pytest.skip('no GPU: ptx unavailable')
    if not weft._ffi.has('weft_array_from_dlpack'):
        pytest.skip('this libweft has no weft_array_from_dlpack')
    return weft.Context('ptx', cache_dir=cache_dir)


def test_torch_round_trip_no_host_copy(cache_dir):
    torch = pytest.importorskip('torch')
    if not torch.cuda.is_available():
        pytest.skip('torch without CUDA')
    with _ptx(cache_dir) as ctx:
        x = torch.arange(1 << 20, dtype=torch.float32, device='cuda')
        y = torch.full((1 << 20,), 0.5, dtype=torch.float32, device='cuda')
        f = weft.jit(lambda a, b: a * 2.0 + b, context=ctx)
        wx = weft.from_dlpack(x, context=ctx)
        wy = weft.from_dlpack(y, context=ctx)
        s0 = ctx.stats()
        r = f(wx, wy)
        t = torch.from_dlpack(r)
        assert t.device.type == 'cuda'
        want = x * 2.0 + y
        assert torch.equal(t, want)
        s1 = ctx.stats()
        assert s1.bytes_uploaded - s0.bytes_uploaded == 0
        assert s1.bytes_downloaded - s0.bytes_downloaded == 0
        # a reduction too: torch's sum of integers in f32 is exact here
        g = weft.jit(lambda a: weft.sum(a), context=ctx)
        z = torch.ones(4096, dtype=torch.float32, device='cuda')
        assert float(torch.from_dlpack(g(weft.from_dlpack(z, context=ctx)))
                     .cpu()) == 4096.0


def test_torch_tensor_straight_into_jit(cache_dir):
    torch = pytest.importorskip('torch')
    if not torch.cuda.is_available():
        pytest.skip('torch without CUDA')
    with _ptx(cache_dir) as ctx:
        x = torch.randn(1000, device='cuda', dtype=torch.float64)
        r = weft.jit(lambda a: weft.exp(a) + 1, context=ctx)(x)
        # weft's exp is within 1 ulp of glibc's, torch's CUDA exp within 1
        # ulp of the true value: rtol 4.5e-16 (2 ulp of f64)
        torch.testing.assert_close(torch.from_dlpack(r), torch.exp(x) + 1,
                                   rtol=4.5e-16, atol=0)


def test_cupy_round_trip(cache_dir):
    cp = pytest.importorskip('cupy')
    with _ptx(cache_dir) as ctx:
        x = cp.arange(100000, dtype=cp.int32)
        s0 = ctx.stats()
        r = weft.jit(lambda a: a * 3 - 1, context=ctx)(
            weft.from_dlpack(x, context=ctx))
        c = cp.from_dlpack(r)
        assert bool((c == x * 3 - 1).all())
        s1 = ctx.stats()
        assert s1.bytes_uploaded == s0.bytes_uploaded
        assert s1.bytes_downloaded == s0.bytes_downloaded


def test_numpy_on_ptx_downloads(cache_dir):
    if not weft.backend_available('ptx'):
        pytest.skip('no GPU')
    with weft.Context('ptx', cache_dir=cache_dir) as ctx:
        x = np.arange(1000, dtype=np.float32)
        r = weft.jit(lambda a: a + 1, context=ctx)(x)
        np.testing.assert_array_equal(np.asarray(r), x + 1)
        assert ctx.stats().bytes_downloaded >= 4000
