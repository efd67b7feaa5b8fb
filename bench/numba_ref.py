#!/usr/bin/env python3
"""bench/numba_ref.py: the numba column of bench/weft_bench.c, and its
other peers (scipy.sparse, scikit-learn).

weft_bench runs this once per program and peer, where python3 can import
what the program needs:

    python3 bench/numba_ref.py PROGRAM THREADS RUNS N W H MAX_ITER X0 Y0 DX DY EPS2 A [DIR]

PROGRAM is dotp, saxpy, sum, prefix_sum, black_scholes, mandelbrot or
nbody (numba, on inputs made here in the same ranges as the bench's);
smvm, jacobi or kmeans (numba, on the bench's own inputs, which it wrote
to DIR/in0.bin, in1.bin, ... as bench/programs.h made them); or the other
peers smvm_scipy (scipy.sparse's CSR matrix times a vector: one thread,
as scipy runs it) and kmeans_sklearn (scikit-learn's KMeans, Lloyd's
algorithm from the same initial centroids, tol=0 so that it stops when no
point changes cluster, at most MAX_ITER iterations, on THREADS OpenMP
threads).  The numbers are the bench's sizes and parameters (smvm: N rows,
W nonzeros; jacobi: W x H, MAX_ITER steps; kmeans: N points, MAX_ITER
iterations at most).  Each numba program is one function with
parallel=True and fastmath=True (prange loops; the prefix sum in three
phases as bench/ref.c; smvm's rows split by nonzeros, k-means with
partial sums per thread, as bench/ref.c).  It compiles, warms up once,
then prints the median wall time of RUNS runs as `ms <value>` and the
median of those runs' CPU time (all threads) over wall time as
`cpu_wall <value>` (weft_bench's "CPU use" table).  Exits 2
when what the program needs cannot be imported (the bench then leaves the
column empty).
"""
import os
import sys
import time

try:
    import numpy as np
except ImportError as e:  # every column here is optional
    print("numpy unavailable: %s" % e)
    sys.exit(2)
try:
    import numba
    from numba import njit, prange
except ImportError as e:  # the numba column is optional; the other peers
    numba = None          # do without it
    NUMBA_ERROR = str(e)
    prange = range

    def njit(*args, **kwargs):
        return lambda f: f

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


@njit(**FAST)
def smvm(rowptr, cols, vals, x, y, bounds):
    for t in prange(bounds.shape[0] - 1):
        for r in range(bounds[t], bounds[t + 1]):
            s = np.float32(0)
            for i in range(rowptr[r], rowptr[r + 1]):
                s += vals[i] * x[cols[i]]
            y[r] = s


@njit(**FAST)
def jacobi(u, a, b, steps):
    h, w = u.shape
    src = u
    for it in range(steps):
        dst = a if it % 2 == 0 else b
        for i in prange(h):
            im = max(i - 1, 0)
            ip = min(i + 1, h - 1)
            dst[i, 0] = np.float32(0.25) * (((src[im, 0] + src[ip, 0]) +
                                             src[i, 0]) + src[i, 1])
            for j in range(1, w - 1):
                dst[i, j] = np.float32(0.25) * (((src[im, j] + src[ip, j]) +
                                                 src[i, j - 1]) + src[i, j + 1])
            dst[i, w - 1] = np.float32(0.25) * (
                ((src[im, w - 1] + src[ip, w - 1]) + src[i, w - 2]) +
                src[i, w - 1])
        src = dst
    return src


@njit(**FAST)
def kmeans(px, py, cx, cy, assign, max_iter, nt):
    n = px.shape[0]
    k = cx.shape[0]
    sx = np.zeros((nt, k), np.float32)
    sy = np.zeros((nt, k), np.float32)
    cnt = np.zeros((nt, k), np.int64)
    mv = np.zeros(nt, np.int64)
    assign[:] = -1
    it = 0
    moved = 1
    while moved > 0 and it < max_iter:
        for t in prange(nt):
            lo = n * t // nt
            hi = n * (t + 1) // nt
            for j in range(k):
                sx[t, j] = 0
                sy[t, j] = 0
                cnt[t, j] = 0
            m = 0
            for i in range(lo, hi):
                x = px[i]
                y = py[i]
                best = np.float32(np.inf)
                bj = 0
                for j in range(k):
                    dx = x - cx[j]
                    dy = y - cy[j]
                    d = dx * dx + dy * dy
                    if d < best:
                        best = d
                        bj = j
                if assign[i] != bj:
                    m += 1
                assign[i] = bj
                sx[t, bj] += x
                sy[t, bj] += y
                cnt[t, bj] += 1
            mv[t] = m
        moved = mv.sum()
        for j in range(k):
            c = cnt[:, j].sum()
            if c > 0:
                cx[j] = sx[:, j].sum() / np.float32(c)
                cy[j] = sy[:, j].sum() / np.float32(c)
        it += 1
    return it


def bench_inputs(d, kinds):
    """The bench's inputs: DIR/in<i>.bin of the numpy dtypes in kinds."""
    return [np.fromfile("%s/in%d.bin" % (d, i), dtype=t)
            for i, t in enumerate(kinds)]


def peer_call(prog, threads, n, max_iter, d):
    """The call of a peer that numba is not needed for, or None."""
    if prog == "smvm_scipy":
        from scipy.sparse import csr_matrix  # ImportError: column empty
        vals, cols, rowptr, x = bench_inputs(
            d, [np.float32, np.int32, np.int32, np.float32])
        m = csr_matrix((vals, cols, rowptr), shape=(n, x.shape[0]))
        return lambda: m @ x
    if prog == "kmeans_sklearn":
        from sklearn.cluster import KMeans
        from threadpoolctl import threadpool_limits
        px, py, cx, cy = bench_inputs(d, [np.float32] * 4)
        pts = np.ascontiguousarray(np.stack([px, py], axis=1))
        init = np.stack([cx, cy], axis=1)

        def fit():
            with threadpool_limits(limits=threads):
                KMeans(n_clusters=init.shape[0], init=init, n_init=1,
                       max_iter=max_iter, tol=0, algorithm="lloyd").fit(pts)
        return fit
    return None


def main():
    if len(sys.argv) not in (14, 15):
        print(__doc__)
        sys.exit(1)
    prog = sys.argv[1]
    threads, runs = int(sys.argv[2]), int(sys.argv[3])
    n, w, h, max_iter = (int(v) for v in sys.argv[4:8])
    x0, y0, dx, dy, eps2, a = (np.float32(float(v)) for v in sys.argv[8:14])
    d = sys.argv[14] if len(sys.argv) > 14 else "."
    try:
        call = peer_call(prog, threads, n, max_iter, d)
    except ImportError as e:
        print("%s unavailable: %s" % (prog, e))
        sys.exit(2)
    if call is not None:
        sys.exit(time_runs(call, runs))
    if numba is None:
        print("numba unavailable: %s" % NUMBA_ERROR)
        sys.exit(2)
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
    elif prog == "smvm":
        vals, cols, rowptr, x = bench_inputs(
            d, [np.float32, np.int32, np.int32, np.float32])
        rowptr = rowptr.astype(np.int64)
        # each thread a share of rows with as many nonzeros (bench/ref.c)
        bounds = np.searchsorted(
            rowptr, np.arange(threads + 1, dtype=np.int64) * w // threads)
        bounds[-1] = n
        y = np.empty(n, np.float32)
        call = lambda: smvm(rowptr, cols, vals, x, y, bounds)
    elif prog == "jacobi":
        (u,) = bench_inputs(d, [np.float32])
        u = u.reshape(h, w)
        ga, gb = np.empty_like(u), np.empty_like(u)
        call = lambda: jacobi(u, ga, gb, max_iter)
    elif prog == "kmeans":
        px, py, cx0, cy0 = bench_inputs(d, [np.float32] * 4)
        cx, cy = cx0.copy(), cy0.copy()
        assign = np.empty(n, np.int32)

        def call():
            cx[:] = cx0
            cy[:] = cy0
            return kmeans(px, py, cx, cy, assign, max_iter, threads)
    else:
        print("unknown program %s" % prog)
        sys.exit(1)
    sys.exit(time_runs(call, runs))


def thread_cpu_ms():
    """{thread id: CPU ms} for every thread of this process, each read from
    its own clock (Linux's clock id of a thread's CPU time, as
    bench/timing.h reads it: exact, where the process clock lags by up to a
    timer tick for threads running on other CPUs); None where
    /proc/self/task cannot be read."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return None
    ms = {}
    for tid in tids:
        clock = ((~tid << 3) | 6) & 0xffffffff
        clock = clock - (1 << 32) if clock >= 1 << 31 else clock
        try:
            ms[tid] = time.clock_gettime(clock) * 1e3
        except OSError:  # exited since the listing
            pass
    return ms


def time_runs(call, runs):
    """Warm up (and compile), then print the median of runs calls, and the
    median of their CPU time of all the process's threads over wall time
    (read outside the wall clock's reads: it does not change the times)."""
    call()
    times = []
    ratios = []
    for _ in range(runs):
        c0 = thread_cpu_ms()
        t0 = time.perf_counter()
        call()
        ms = (time.perf_counter() - t0) * 1e3
        c1 = thread_cpu_ms()
        times.append(ms)
        if c0 is not None and c1 is not None and ms > 0:
            cpu = sum(v - c0.get(t, 0.0) for t, v in c1.items())
            ratios.append(cpu / ms)
    times.sort()
    print("ms %.4f" % times[len(times) // 2])
    if len(ratios) == runs:
        ratios.sort()
        print("cpu_wall %.4f" % ratios[len(ratios) // 2])
    return 0


if __name__ == "__main__":
    main()
