#!/usr/bin/env python3
"""A PyTorch CUDA tensor through a weft program on the GPU and back, with
no copy through host memory (DLPack both ways; weft's counters prove it).

    python3 examples/python/torch_interop.py

On a machine without torch, CUDA or weft's ptx backend it says so and
exits 0.
"""

import sys

import _path  # noqa: F401 - the checkout's package when not installed

import weft


def main():
    try:
        import torch
    except ImportError:
        print('torch is not installed here: nothing to show')
        return 0
    if not torch.cuda.is_available():
        print('torch has no CUDA device here: nothing to show')
        return 0
    if not weft.backend_available('ptx'):
        print("weft's ptx backend is not available here: nothing to show")
        return 0
    with weft.Context('ptx') as ctx:
        x = torch.linspace(-4, 4, 1 << 22, device='cuda', dtype=torch.float32)

        @weft.jit
        def softsign_sum(a):
            s = a / (1 + abs(a))
            return s, weft.sum(s * s)

        f = softsign_sum.with_context(ctx)
        wx = weft.from_dlpack(x, context=ctx)   # no upload: weft reads x
        f(wx)                                   # trace and compile
        before = ctx.stats()
        s, total = f(wx)
        ts = torch.from_dlpack(s)               # no download: a CUDA tensor
        after = ctx.stats()
        want = x / (1 + x.abs())
        err = (ts - want).abs().max().item()
        print('result on %s, shape %s; max |weft - torch| = %.3g'
              % (ts.device, tuple(ts.shape), err))
        print('sum of squares: weft %.6g, torch %.6g'
              % (torch.from_dlpack(total).item(), (want * want).sum().item()))
        print('bytes uploaded %d, downloaded %d during the run'
              % (after.bytes_uploaded - before.bytes_uploaded,
                 after.bytes_downloaded - before.bytes_downloaded))
        ok = err <= 1e-6 and after.bytes_uploaded == before.bytes_uploaded \
            and after.bytes_downloaded == before.bytes_downloaded
        return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
