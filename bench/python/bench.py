#!/usr/bin/env python3
"""The bench programs written once in Python with @weft.jit, against
numpy and numba on the CPU and CuPy, PyTorch and JAX on the GPU.

    /usr/bin/python3 bench/python/bench.py [--backend cpu|ptx]
        [--scale 1.0] [--runs 10] [--out bench/results/python-cpu]

Programs and sizes are bench/weft_bench.c's (dotp, saxpy, sum, prefix sum,
Black-Scholes, Mandelbrot, n-body; --scale shrinks them as its -s does).
Every implementation is timed in this one run: a warm-up call (weft
traces and compiles there, then waits for its optimised code), then the
median of --runs calls.  Inputs are made once; weft's are weft.Arrays
(wrapped once: on ptx they stay on the device after the first run), the
GPU libraries' are their device arrays.  A weft call on ptx is timed up to
its results being complete (weft_array_wait where the library has it).

Every result is checked against numpy's (on the host) with
bench/weft_bench.c's tolerance for that program; a failing check marks
the row FAIL.  The references of dotp and sum are numpy's in f64: numpy's
own f32 dot (BLAS) is off by 5e-3 at 6.7M elements.  Columns of libraries that cannot be imported (numba here;
CuPy, torch, JAX off the GPU machine) are left empty.  Writes OUT.md (a
Markdown table, ratios as reference time / weft time: above 1, weft is
faster) and OUT.json.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
sys.path.insert(0, os.path.join(ROOT, 'examples', 'python'))

import _path  # noqa: E402,F401 - examples/python/_path: the checkout's weft
import numpy as np  # noqa: E402

import weft  # noqa: E402
from mandelbrot import mandelbrot as w_mandelbrot  # noqa: E402
from nbody import accelerations as w_accelerations  # noqa: E402

RISKFREE, VOLATILITY = np.float32(0.02), np.float32(0.30)
CND = (0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429)


# -- the programs in weft ------------------------------------------------------

@weft.jit
def w_dotp(x, y):
    return weft.sum(x * y)


@weft.jit
def w_saxpy(x, y):
    return 2.5 * x + y


@weft.jit
def w_sum(x):
    return weft.sum(x)


@weft.jit
def w_prefix(x):
    return weft.cumsum(x)


def cnd(d, xp_abs, xp_exp, where):
    """The cumulative normal distribution by its polynomial (as
    examples/blackscholes.c), written once for weft terms and arrays."""
    k = 1 / (1 + np.float32(0.2316419) * xp_abs(d))
    poly = np.float32(CND[4])
    for c in CND[3::-1]:
        poly = np.float32(c) + k * poly
    r = np.float32(0.3989422804014327) * xp_exp(np.float32(-0.5) * (d * d)) \
        * (k * poly)
    return where(d > 0, 1 - r, r)


def black_scholes(s, x, t, xp):
    """(call, put) for price s, strike x, years t; xp has abs, exp, log,
    sqrt and where."""
    drift = RISKFREE + np.float32(0.5) * (VOLATILITY * VOLATILITY)
    v_sqrtt = VOLATILITY * xp.sqrt(t)
    d1 = (xp.log(s / x) + drift * t) / v_sqrtt
    d2 = d1 - v_sqrtt
    c1, c2 = (cnd(d, xp.abs, xp.exp, xp.where) for d in (d1, d2))
    x_exprt = x * xp.exp(-RISKFREE * t)
    return s * c1 - x_exprt * c2, x_exprt * (1 - c2) - s * (1 - c1)


class _WeftTerms:
    abs = staticmethod(weft.absolute)
    exp = staticmethod(weft.exp)
    log = staticmethod(weft.log)
    sqrt = staticmethod(weft.sqrt)
    where = staticmethod(weft.cond)


@weft.jit
def w_black_scholes(s, x, t):
    return weft.unzip(weft.zip_with(
        lambda a, b, c: black_scholes(a, b, c, _WeftTerms), s, x, t))


# -- sizes, inputs, numpy's results and the checks ----------------------------

def scaled(n, scale):
    return max(1, int(n * scale))


def make(name, scale, rng):
    """(size text, inputs, scalars for the programs)."""
    if name in ('dotp', 'saxpy', 'sum'):
        n = scaled(67108864 if name == 'dotp' else 33554432, scale)
        xs = [(rng.integers(0, 16, n) / 16).astype(np.float32)
              for _ in range(2 if name != 'sum' else 1)]
        return '%d f32' % n, xs
    if name == 'prefix sum':
        n = scaled(33554432, scale)
        return '%d i32' % n, [rng.integers(-100, 100, n).astype(np.int32)]
    if name == 'Black-Scholes':
        n = scaled(4194304, scale)
        return '%d options' % n, [
            rng.uniform(5, 30, n).astype(np.float32),
            rng.uniform(1, 100, n).astype(np.float32),
            rng.uniform(0.25, 10, n).astype(np.float32)]
    if name == 'Mandelbrot':
        w = scaled(2048, scale ** 0.5)
        return '%dx%d, 256 iterations' % (w, w), [w]
    if name == 'n-body':
        n = scaled(8192, scale ** 0.5)
        xs = [rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3)]
        return '%d bodies' % n, xs + [rng.uniform(0.5, 1.5, n)
                                      .astype(np.float32)]
    raise KeyError(name)


def mandel_args(w):
    d = np.float32(2.5 / w)
    return (w, w, np.int32(256), np.float32(-2), np.float32(-1.25), d, d)


def np_mandelbrot(w, xp=np, zeros=None):
    x0, y0, d = np.float32(-2), np.float32(-1.25), np.float32(2.5 / w)
    ar = xp.arange(w, dtype=xp.float32) if zeros is None else zeros(w)
    cr = x0 + d * ar[None, :] + 0 * ar[:, None]
    ci = y0 + d * ar[:, None] + 0 * ar[None, :]
    zr, zi = cr * 0, cr * 0
    k = xp.zeros((w, w), dtype=xp.int32)
    for _ in range(256):
        live = zr * zr + zi * zi <= 4
        nr = xp.where(live, zr * zr - zi * zi + cr, zr)
        zi = xp.where(live, 2 * zr * zi + ci, zi)
        zr = nr
        k = k + (live.astype(xp.int32) if hasattr(live, 'astype')
                 else live.to(xp.int32))  # a torch tensor
    return k


def np_nbody(x, y, z, m, xp=np, eps2=np.float32(0.01)):
    d = [c[None, :] - c[:, None] for c in (x, y, z)]
    r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2
    s = m[None, :] / (r2 * xp.sqrt(r2))
    return tuple((dc * s).sum(1) for dc in d)


def numpy_impl(name):
    return _xp_impl(name, np)


def weft_impl(name, ctx):
    f = {'dotp': w_dotp, 'saxpy': w_saxpy, 'sum': w_sum,
         'prefix sum': w_prefix, 'Black-Scholes': w_black_scholes,
         'Mandelbrot': w_mandelbrot, 'n-body': w_accelerations}[name]
    f = f.with_context(ctx)
    if name == 'Mandelbrot':
        return lambda w: f(*mandel_args(w))
    if name == 'n-body':
        return lambda x, y, z, m: f(x, y, z, m, np.float32(0.01))
    return f


def host(r):
    if isinstance(r, tuple):
        return tuple(host(v) for v in r)
    if hasattr(r, 'get'):            # cupy
        return r.get()
    if hasattr(r, 'cpu'):            # torch
        return r.cpu().numpy()
    return np.asarray(r)


def check(name, got, want):
    """(ok, error) with bench/weft_bench.c's tolerance for the program."""
    got, want = host(got), host(want)
    if name in ('dotp', 'sum'):
        e = abs(float(got) - float(want)) / max(abs(float(want)), 1e-30)
        return e <= 1e-4, e
    if name == 'saxpy':
        e = float(np.max(np.abs(got - want) / np.maximum(1, np.abs(want))))
        return e <= 1e-6, e
    if name == 'prefix sum':
        e = int(np.sum(got != want))
        return e == 0, e
    if name == 'Black-Scholes':
        e = max(float(np.max(np.abs(g - w) / np.maximum(1, np.abs(w))))
                for g, w in zip(got, want))
        return e <= 1e-4, e
    if name == 'Mandelbrot':
        e = float(np.mean(got != want))
        return e <= 1e-3, e
    if name == 'n-body':
        scale = max(float(np.abs(w).max()) for w in want)
        e = max(float(np.abs(g - w).max()) for g, w in zip(got, want)) / scale
        return e <= 1e-3, e
    raise KeyError(name)


# -- the other libraries --------------------------------------------------------

_numba = []


def _numba_ref():
    """bench/numba_ref.py's module, or None where numba is missing (it
    prints why and exits at import: silenced here, once)."""
    if not _numba:
        import contextlib
        import io
        sys.path.insert(0, os.path.join(ROOT, 'bench'))
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                import numba_ref
            _numba.append(numba_ref)
        except (ImportError, SystemExit):
            _numba.append(None)
    return _numba[0]


def numba_impl(name):
    nr = _numba_ref()
    if nr is None:
        return None
    if name == 'dotp':
        return nr.dotp
    if name == 'sum':
        return nr.vsum
    if name == 'saxpy':
        def saxpy(x, y):
            out = np.empty_like(x)
            nr.saxpy(np.float32(2.5), x, y, out)
            return out
        return saxpy
    if name == 'prefix sum':
        def prefix(x):
            out = np.empty_like(x)
            nr.prefix_sum(x, out, 64)
            return out
        return prefix
    if name == 'Black-Scholes':
        def bs(s, x, t):
            c, p = np.empty_like(s), np.empty_like(s)
            nr.black_scholes(s, x, t, c, p, RISKFREE, VOLATILITY)
            return c, p
        return bs
    if name == 'Mandelbrot':
        def mandel(w):
            out = np.empty(w * w, np.int32)
            a = mandel_args(w)
            nr.mandelbrot(w, w, 256, a[3], a[4], a[5], a[6], out)
            return out.reshape(w, w)
        return mandel
    if name == 'n-body':
        def nb(x, y, z, m):
            a = [np.empty_like(x) for _ in range(3)]
            nr.nbody(x, y, z, m, *a, np.float32(0.01))
            return tuple(a)
        return nb
    return None


def gpu_libraries():
    """name -> (to_device, sync, implementation of a program or None)."""
    libs = {}
    try:
        import cupy as cp
        libs['CuPy'] = (cp.asarray, cp.cuda.Device().synchronize,
                        lambda name: _xp_impl(name, cp))
    except Exception:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            libs['PyTorch'] = (lambda a: torch.as_tensor(a, device='cuda'),
                               torch.cuda.synchronize,
                               lambda name: _torch_impl(name, torch))
    except Exception:
        pass
    try:
        import jax
        import jax.numpy as jnp
        if any(d.platform == 'gpu' for d in jax.devices()):
            libs['JAX'] = (jnp.asarray, lambda: None,
                           lambda name: _jax_impl(name, jax, jnp))
    except Exception:
        pass
    return libs


def _xp_impl(name, xp):
    return {
        'dotp': lambda x, y: xp.dot(x, y),
        'saxpy': lambda x, y: np.float32(2.5) * x + y,
        'sum': lambda x: x.sum(),
        'prefix sum': lambda x: xp.cumsum(x, dtype=xp.int32),
        'Black-Scholes': lambda s, x, t: black_scholes(s, x, t, xp),
        'Mandelbrot': lambda w: np_mandelbrot(w, xp),
        'n-body': lambda *a: np_nbody(*a, xp=xp),
    }[name]


def _torch_impl(name, torch):
    class T:
        abs, exp, log, sqrt, where = (torch.abs, torch.exp, torch.log,
                                      torch.sqrt, torch.where)
        int32, float32 = torch.int32, torch.float32

        @staticmethod
        def arange(n, dtype):
            return torch.arange(n, dtype=dtype, device='cuda')

        @staticmethod
        def zeros(shape, dtype):
            return torch.zeros(shape, dtype=dtype, device='cuda')

    def mandel(w):
        k = np_mandelbrot(w, T)
        return k
    return {
        'dotp': lambda x, y: torch.dot(x, y),
        'saxpy': lambda x, y: 2.5 * x + y,
        'sum': lambda x: x.sum(),
        'prefix sum': lambda x: torch.cumsum(x, 0, dtype=torch.int32),
        'Black-Scholes': lambda s, x, t: black_scholes(s, x, t, T),
        'Mandelbrot': mandel,
        'n-body': lambda *a: np_nbody(*a, xp=torch),
    }[name]


def _jax_impl(name, jax, jnp):
    fns = {
        'dotp': lambda x, y: jnp.dot(x, y),
        'saxpy': lambda x, y: np.float32(2.5) * x + y,
        'sum': lambda x: x.sum(),
        'prefix sum': lambda x: jnp.cumsum(x, dtype=jnp.int32),
        'Black-Scholes': lambda s, x, t: black_scholes(s, x, t, jnp),
        'n-body': lambda *a: np_nbody(*a, xp=jnp),
    }
    if name == 'Mandelbrot':
        compiled = {}

        def mandel(w):
            if w not in compiled:
                compiled[w] = jax.jit(lambda: np_mandelbrot(w, jnp))
            return compiled[w]().block_until_ready()
        return mandel
    f = jax.jit(fns[name])

    def run(*a):
        r = f(*a)
        jax.block_until_ready(r)
        return r
    return run


# -- timing ---------------------------------------------------------------------

def median_ms(fn, args, runs, sync=lambda r: None):
    r = fn(*args)
    sync(r)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = fn(*args)
        sync(r)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), r


def weft_sync(r):
    for a in (r if isinstance(r, tuple) else (r,)):
        a.wait()


PROGRAMS = ['dotp', 'saxpy', 'sum', 'prefix sum', 'Black-Scholes',
            'Mandelbrot', 'n-body']


def main():
    ap = argparse.ArgumentParser(description='weft from Python, benchmarked')
    ap.add_argument('--backend', default='cpu')
    ap.add_argument('--scale', type=float, default=1.0)
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--only', default='', help='comma-separated programs')
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    ctx = weft.Context(args.backend)
    out = args.out or os.path.join(ROOT, 'bench', 'results',
                                   'python-%s' % ctx.backend)
    rng = np.random.default_rng(1)
    gpu = gpu_libraries() if ctx.backend == 'ptx' else {}
    refs = ['numpy'] + (['numba'] if ctx.backend != 'ptx' else list(gpu))
    rows = []
    for name in PROGRAMS:
        if args.only and name not in args.only.split(','):
            continue
        size, inputs = make(name, args.scale, rng)
        want_ms, want = median_ms(numpy_impl(name), inputs,
                                  max(1, args.runs // 3))
        if name in ('dotp', 'sum'):   # numpy's f32 sums err by 1e-3 here:
            want = numpy_impl(name)(*[a.astype(np.float64) for a in inputs])
        winputs = [weft.asarray(a, context=ctx) if isinstance(a, np.ndarray)
                   else a for a in inputs]
        wf = weft_impl(name, ctx)
        wf(*winputs)
        ctx.wait_optimised()
        w_ms, got = median_ms(wf, winputs, args.runs, weft_sync)
        ok, err = check(name, got, want)
        row = {'program': name, 'size': size, 'weft_ms': w_ms, 'ok': ok,
               'error': err, 'numpy_ms': want_ms}
        for lib in refs[1:]:
            if lib == 'numba':
                f = numba_impl(name)
                if f is None:
                    continue
                ms, r = median_ms(f, inputs, args.runs)
            else:
                to_dev, sync, impl = gpu[lib]
                dev = [to_dev(a) if isinstance(a, np.ndarray) else a
                       for a in inputs]
                ms, r = median_ms(impl(name), dev, args.runs,
                                  lambda _r: sync())
            rok, rerr = check(name, r, want)
            row[lib + '_ms'] = ms
            row[lib + '_ok'] = rok
        rows.append(row)
        print('%-14s %-24s weft %9.3f ms  numpy %9.3f ms  %s'
              % (name, size, w_ms, want_ms, 'ok' if ok else 'FAIL'),
              flush=True)
    write(out, ctx, refs, rows, args)


def write(out, ctx, refs, rows, args):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    meta = {'backend': ctx.backend, 'weft': weft.version,
            'python': platform.python_version(), 'numpy': np.__version__,
            'machine': platform.node(), 'cpus': os.cpu_count(),
            'scale': args.scale, 'runs': args.runs,
            'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}
    with open(out + '.json', 'w') as f:
        json.dump({'meta': meta, 'rows': rows}, f, indent=1)
    head = ['program', 'size', 'weft ms', 'check'] + \
        ['%s ms (ratio)' % r for r in refs]
    lines = ['# weft from Python, %s backend' % ctx.backend, '',
             'Run by `bench/python/bench.py --backend %s --scale %g --runs '
             '%d` on %s (%s CPUs), %s; Python %s, numpy %s.  Median of the '
             'runs after a warm-up; ratio = reference time / weft time '
             '(above 1: weft faster).  Checks against numpy use '
             'bench/weft_bench.c\'s tolerances.'
             % (ctx.backend, args.scale, args.runs, meta['machine'],
                meta['cpus'], meta['date'], meta['python'], meta['numpy']),
             '', '| ' + ' | '.join(head) + ' |',
             '|' + '---|' * len(head)]
    for r in rows:
        cells = [r['program'], r['size'], '%.3f' % r['weft_ms'],
                 ('ok' if r['ok'] else 'FAIL') + ' (%.2g)' % r['error']]
        for ref in refs:
            ms = r.get(ref + '_ms')
            cells.append('' if ms is None else '%.3f (%.2fx)%s' % (
                ms, ms / r['weft_ms'],
                '' if r.get(ref + '_ok', True) else ' FAIL'))
        lines.append('| ' + ' | '.join(cells) + ' |')
    with open(out + '.md', 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('wrote %s.md and %s.json' % (out, out))


if __name__ == '__main__':
    main()
