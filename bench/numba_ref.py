#!/usr/bin/env python3
"""bench/numba_ref.py: the numba column of bench/weft_bench.c.

weft_bench runs this once per program, where numba can be imported:

    python3 bench/numba_ref.py PROGRAM THREADS RUNS N W H MAX_ITER X0 Y0 DX DY EPS2 A

PROGRAM is dotp, saxpy, sum, prefix_sum, black_scholes, mandelbrot or
nbody; the numbers are the bench's sizes and parameters.  Each program is
one numba function with parallel=True and fastmath=True (prange loops; the
prefix sum in three phases as bench/ref.c), on inputs made here in the
same ranges as the bench's.  It compiles, warms up once, then prints the
median wall time of RUNS runs as `ms <value>`.  Exits 2 when numba cannot
be imported (the bench then leaves the column empty).
"""
import sys
import time

try:
    import numba
    import numpy as np
    from numba import njit, prange
except ImportError as e:  # the column is optional
    print("numba unavailable: %s" % e)
    sys.exit(2)

FAST = dict(parallel=True, fastmath=True, cache=False)


@njit(**FAST)
def dotp(x, y):
    s = np.float32(0)
    for i in prange(x.shape[0]):
        s += x[i] * y[i]
    return s


@njit(**FAST)
def saxpy(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


@njit(**FAST)
def vsum(x):
    s = np.float32(0)
    for i in prange(x.shape[0]):
        s += x[i]
    return s


@njit(**FAST)
def prefix_sum(x, out, nblocks):
    n = x.shape[0]
    sums = np.zeros(nblocks + 1, dtype=np.int32)
    for b in prange(nblocks):
        lo = b * n // nblocks
        hi = (b + 1) * n // nblocks
        s = np.int32(0)
        for i in range(lo, hi):
            s += x[i]
        sums[b + 1] = s
    for b in range(nblocks):
        sums[b + 1] += sums[b]
    for b in prange(nblocks):
        lo = b * n // nblocks
        hi = (b + 1) * n // nblocks
        s = sums[b]
        for i in range(lo, hi):
            s += x[i]
            out[i] = s


@njit(fastmath=True, inline="always")
def cnd(d):
    k = np.float32(1) / (np.float32(1) + np.float32(0.2316419) * abs(d))
    poly = np.float32(1.330274429)
    poly = np.float32(-1.821255978) + k * poly
    poly = np.float32(1.781477937) + k * poly
    poly = np.float32(-0.356563782) + k * poly
    poly = np.float32(0.31938153) + k * poly
    r = (np.float32(0.3989422804014327) *
         np.exp(np.float32(-0.5) * (d * d))) * (k * poly)
    return np.float32(1) - r if d > 0 else r


@njit(**FAST)
def black_scholes(price, strike, years, call, put, riskfree, volatility):
    drift = riskfree + np.float32(0.5) * (volatility * volatility)
    for i in prange(price.shape[0]):
        s = price[i]
        x = strike[i]
        t = years[i]
        v_sqrtt = volatility * np.sqrt(t)
        d1 = (np.log(s / x) + drift * t) / v_sqrtt
        d2 = d1 - v_sqrtt
        c1 = cnd(d1)
        c2 = cnd(d2)
        x_exprt = x * np.exp(-riskfree * t)
        call[i] = s * c1 - x_exprt * c2
        put[i] = x_exprt * (np.float32(1) - c2) - s * (np.float32(1) - c1)


@njit(**FAST)
def mandelbrot(w, h, max_iter, x0, y0, dx, dy, out):
    for py in prange(h):
        ci = y0 + dy * np.float32(py)
        for px in range(w):
            cr = x0 + dx * np.float32(px)
            zr = np.float32(0)
            zi = np.float32(0)
            it = 0
            while it < max_iter and zr * zr + zi * zi <= np.float32(4):
                nr = zr * zr - zi * zi + cr
                zi = np.float32(2) * zr * zi + ci
                zr = nr
                it += 1
            out[py * w + px] = it


@njit(**FAST)
def nbody(x, y, z, m, ax, ay, az, eps2):
    n = x.shape[0]
    for i in prange(n):
        xi = x[i]
        yi = y[i]
        zi = z[i]
        sx = np.float32(0)
        sy = np.float32(0)
        sz = np.float32(0)
        for j in range(n):
            dx = x[j] - xi
            dy = y[j] - yi
            dz = z[j] - zi
            r2 = dx * dx + dy * dy + dz * dz + eps2
            inv = np.float32(1) / np.sqrt(r2)
            s = m[j] * (inv * inv * inv)
            sx += dx * s
            sy += dy * s
            sz += dz * s
        ax[i] = sx
        ay[i] = sy
        az[i] = sz


def main():
    if len(sys.argv) != 14:
        print(__doc__)
        sys.exit(1)
    prog = sys.argv[1]
    threads, runs = int(sys.argv[2]), int(sys.argv[3])
    n, w, h, max_iter = (int(v) for v in sys.argv[4:8])
    x0, y0, dx, dy, eps2, a = (np.float32(float(v)) for v in sys.argv[8:14])
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    rng = np.random.default_rng(1)

    def f32(lo, hi, k=n):
        return rng.uniform(lo, hi, k).astype(np.float32)

    if prog == "dotp":
        x, y = f32(-1, 1), f32(-1, 1)
        call = lambda: dotp(x, y)
    elif prog == "saxpy":
        x, y, out = f32(-1, 1), f32(-1, 1), np.empty(n, np.float32)
        call = lambda: saxpy(a, x, y, out)
    elif prog == "sum":
        x = f32(-1, 1)
        call = lambda: vsum(x)
    elif prog == "prefix_sum":
        x = rng.integers(-100, 100, n).astype(np.int32)
        out = np.empty(n, np.int32)
        nb = 4 * threads
        call = lambda: prefix_sum(x, out, nb)
    elif prog == "black_scholes":
        s, k, t = f32(5, 30), f32(1, 100), f32(0.25, 10)
        c, p = np.empty(n, np.float32), np.empty(n, np.float32)
        call = lambda: black_scholes(s, k, t, c, p, np.float32(0.02),
                                     np.float32(0.30))
    elif prog == "mandelbrot":
        out = np.empty(w * h, np.int32)
        call = lambda: mandelbrot(w, h, max_iter, x0, y0, dx, dy, out)
    elif prog == "nbody":
        x, y, z, m = f32(-1, 1), f32(-1, 1), f32(-1, 1), f32(0.5, 1.5)
        ax, ay, az = (np.empty(n, np.float32) for _ in range(3))
        call = lambda: nbody(x, y, z, m, ax, ay, az, eps2)
    else:
        print("unknown program %s" % prog)
        sys.exit(1)
    call()  # compile and warm up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print("ms %.4f" % times[len(times) // 2])


if __name__ == "__main__":
    main()
