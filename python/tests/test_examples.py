"""The examples of examples/python compute what numpy computes: the
Mandelbrot counts (at most 0.1% of points may differ: points on the
boundary escape one iteration apart with f32 rounding, bench/weft_bench.c's
rule), the n-body accelerations (max error / max |a| <= 1e-3: reassociated
f32 sums, the C bench's rule); and each script runs."""

import os
import subprocess
import sys

import numpy as np
import pytest

import weft

EX = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                  'examples', 'python')
sys.path.insert(0, EX)

import mandelbrot  # noqa: E402
import nbody  # noqa: E402


def np_mandelbrot(size, max_iter):
    x0, y0, d = np.float32(-2), np.float32(-1.25), np.float32(2.5 / size)
    cr = x0 + d * np.arange(size, dtype=np.float32)[None, :]
    ci = y0 + d * np.arange(size, dtype=np.float32)[:, None]
    cr, ci = np.broadcast_to(cr, (size, size)), np.broadcast_to(ci, (size,
                                                                     size))
    zr = np.zeros((size, size), np.float32)
    zi = np.zeros((size, size), np.float32)
    k = np.zeros((size, size), np.int32)
    for _ in range(max_iter):
        live = zr * zr + zi * zi <= 4
        nr = np.where(live, zr * zr - zi * zi + cr, zr)
        zi = np.where(live, 2 * zr * zi + ci, zi)
        zr = nr
        k += live
    return k


def test_mandelbrot(ctx):
    got = mandelbrot.render(ctx, 96, 64)
    want = np_mandelbrot(96, 64)
    assert got.shape == (96, 96) and got.dtype == np.int32
    assert np.mean(got != want) <= 0.001


def test_nbody_accelerations(ctx):
    (x, y, z, *_), m = nbody.bodies(300)
    ax, ay, az = nbody.accelerations.with_context(ctx)(x, y, z, m,
                                                       np.float32(0.01))
    d = [c[None, :] - c[:, None] for c in (x, y, z)]
    r2 = d[0] ** 2 + d[1] ** 2 + d[2] ** 2 + np.float32(0.01)
    s = m[None, :] / (r2 * np.sqrt(r2))
    want = [np.sum(dc * s, 1) for dc in d]
    scale = max(np.abs(w).max() for w in want)
    for g, w in zip((ax, ay, az), want):
        assert np.abs(np.asarray(g) - w).max() / scale <= 1e-3


@pytest.mark.parametrize('script,args', [
    ('mandelbrot.py', ['--size', '64', '--iter', '32']),
    ('nbody.py', ['--bodies', '64', '--steps', '2']),
    ('torch_interop.py', [])])
def test_scripts_run(tmp_path, script, args):
    out = [] if script == 'torch_interop.py' else ['--out',
                                                    str(tmp_path / 'o.png')]
    path = [os.path.dirname(os.path.dirname(weft.__file__))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        path + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    r = subprocess.run([sys.executable, os.path.join(EX, script)] + args + out,
                       env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, r.stderr
    if out:
        assert (tmp_path / 'o.png').stat().st_size > 100
