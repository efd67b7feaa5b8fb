#!/usr/bin/env python3
"""The Mandelbrot set, computed by weft and written as a PNG picture.

    /usr/bin/python3 examples/python/mandelbrot.py [--backend cpu|interp|ptx]
        [--size 1024] [--iter 256] [--out mandelbrot.png]

One @weft.jit function: `generate (h, w)` whose element function runs a
scalar while loop over (zr, zi, k) and returns k, the iteration at which
the point escaped (max_iter inside the set).  The colours are numpy's
work on the counts; PIL writes the file.
"""

import time

import _path  # the checkout's package when not installed
import numpy as np

import weft


@weft.jit
def mandelbrot(w, h, max_iter, x0, y0, dx, dy):
    """Escape iterations of the w x h points from (x0, y0) in steps of
    (dx, dy); the scalars are f32 except w, h (i64) and max_iter (i32)."""
    def point(ix):
        i, j = ix
        cr = x0 + dx * weft.cast(j, weft.f32)
        ci = y0 + dy * weft.cast(i, weft.f32)
        zr, zi, k = weft.while_(
            lambda s: (s[2] < max_iter) & (s[0] * s[0] + s[1] * s[1] <= 4),
            lambda s: (s[0] * s[0] - s[1] * s[1] + cr,
                       2 * s[0] * s[1] + ci, s[2] + 1),
            (np.float32(0), np.float32(0), np.int32(0)))
        return k
    return weft.generate((h, w), point)


def render(ctx, size, max_iter):
    """The escape counts of the classic view, size x size, as numpy."""
    x0, y0, span = -2.0, -1.25, 2.5
    f = mandelbrot.with_context(ctx)
    return np.asarray(f(size, size, np.int32(max_iter), np.float32(x0),
                        np.float32(y0), np.float32(span / size),
                        np.float32(span / size)))


def colour(counts, max_iter):
    """RGB bytes: black inside the set, a smooth ramp outside."""
    t = np.log1p(counts.astype(np.float64)) / np.log1p(max_iter)
    rgb = np.stack([9 * (1 - t) * t ** 3, 15 * (1 - t) ** 2 * t ** 2,
                    8.5 * (1 - t) ** 3 * t], -1)
    rgb = (np.clip(rgb, 0, 1) * 255).astype(np.uint8)
    rgb[counts >= max_iter] = 0
    return rgb


def main():
    ctx, args = _path.context('Mandelbrot with weft', size=(int, 1024),
                              iter=(int, 256), out=(str, 'mandelbrot.png'))
    if ctx is None:
        return
    t0 = time.perf_counter()
    counts = render(ctx, args.size, args.iter)
    t1 = time.perf_counter()
    counts = render(ctx, args.size, args.iter)
    t2 = time.perf_counter()
    from PIL import Image
    Image.fromarray(colour(counts, args.iter), 'RGB').save(args.out)
    print('%s: %dx%d, %d iterations: first call %.1f ms (tracing and '
          'compiling), second %.1f ms; %.1f%% of points inside; wrote %s'
          % (ctx.backend, args.size, args.size, args.iter,
             (t1 - t0) * 1e3, (t2 - t1) * 1e3,
             100.0 * np.mean(counts >= args.iter), args.out))


if __name__ == '__main__':
    main()
