#!/usr/bin/env python3
"""Per-call overhead of weft from Python: a 1,000-element map on a context
(cpu by default), called through @weft.jit with a numpy input (wrapped
each call) and with a weft.Array input (wrapped once), against the same
program called from C through cffi directly (weft_run on a prepared
array: the floor of any binding).  Median of `--repeat` timeit runs of
`--number` calls each, in microseconds per call.

    /usr/bin/python3 bench/python/overhead.py [--backend cpu] [--n 1000]
"""

import argparse
import os
import statistics
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'python'))

import numpy as np  # noqa: E402

import weft  # noqa: E402
from weft._ffi import ffi, lib  # noqa: E402


def median_us(stmt, number, repeat):
    times = timeit.repeat(stmt, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--backend', default='cpu')
    ap.add_argument('--n', type=int, default=1000)
    ap.add_argument('--number', type=int, default=2000)
    ap.add_argument('--repeat', type=int, default=15)
    args = ap.parse_args()

    ctx = weft.Context(args.backend)
    f = weft.jit(lambda a: a * 2.0 + 1.0, context=ctx)
    x = np.arange(args.n, dtype=np.float32)
    wx = weft.asarray(x, context=ctx)
    f(x)
    ctx.wait_optimised()

    exe = f.lower(x)
    ins = ffi.new('weft_array *[1]', [wx._ptr])
    outs = ffi.new('weft_array *[1]')

    def c_floor():
        lib.weft_run(exe.ptr, ins, 1, outs, 1)
        lib.weft_array_release(outs[0])

    rows = [('weft_run through cffi (the floor)', c_floor),
            ('@weft.jit, weft.Array input', lambda: f(wx)),
            ('@weft.jit, numpy input', lambda: f(x)),
            ('@weft.jit, numpy input, np.asarray(result)',
             lambda: np.asarray(f(x)))]
    print('%s, %d-element f32 map, median of %d x %d calls'
          % (ctx.backend, args.n, args.repeat, args.number))
    for name, fn in rows:
        print('  %-45s %7.2f us/call' % (name, median_us(fn, args.number,
                                                          args.repeat)))


if __name__ == '__main__':
    main()
