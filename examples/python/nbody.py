#!/usr/bin/env python3
"""A few steps of an n-body simulation with weft, and a PNG frame of the
bodies projected on the x-y plane.

    /usr/bin/python3 examples/python/nbody.py [--backend cpu|interp|ptx]
        [--bodies 2048] [--steps 10] [--out nbody.png]

accelerations() is Accelerate's n-body: `fold (+) (0,0,0) (generate (n, n)
pull)`, pull (i, j) the pull of body j on body i; weft fuses the generate
into the fold.  step() adds a leapfrog step around it.  The state stays in
weft.Arrays between steps (no copies); numpy reads it at the end.
"""

import time

import _path  # the checkout's package when not installed
import numpy as np

import weft


def pulls(x, y, z, m, eps2):
    """The accelerations (ax, ay, az) of bodies at (x, y, z) of masses m
    (traced inside a jit function)."""
    def pull(ix):
        i, j = ix
        dx, dy, dz = x[j] - x[i], y[j] - y[i], z[j] - z[i]
        r2 = dx * dx + dy * dy + dz * dz + eps2
        inv = 1 / weft.sqrt(r2)
        s = m[j] * (inv * inv * inv)
        return (dx * s, dy * s, dz * s)
    n = x.shape[0]
    return weft.unzip(weft.fold(lambda a, b: (a[0] + b[0], a[1] + b[1], a[2] + b[2]),
                     (0, 0, 0), weft.generate((n, n), pull)))


accelerations = weft.jit(pulls)


@weft.jit
def step(x, y, z, vx, vy, vz, m, dt, eps2):
    """One leapfrog step (kick then drift): the new positions and
    velocities."""
    ax, ay, az = pulls(x, y, z, m, eps2)
    vx, vy, vz = vx + ax * dt, vy + ay * dt, vz + az * dt
    return x + vx * dt, y + vy * dt, z + vz * dt, vx, vy, vz


def bodies(n, seed=1):
    """A rotating disc of n bodies, f32."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.1, 1.0, n)
    a = rng.uniform(0, 2 * np.pi, n)
    x, y = r * np.cos(a), r * np.sin(a)
    z = rng.normal(0, 0.02, n)
    v = 0.6 * np.sqrt(r)
    state = [x, y, z, -v * np.sin(a), v * np.cos(a), np.zeros(n)]
    m = rng.uniform(0.5, 1.5, n) / n
    return [s.astype(np.float32) for s in state], m.astype(np.float32)


def frame(x, y, path, size=512):
    from PIL import Image, ImageDraw
    img = Image.new('RGB', (size, size), (5, 5, 20))
    d = ImageDraw.Draw(img)
    px = (np.asarray(x) / 3 + 0.5) * size
    py = (np.asarray(y) / 3 + 0.5) * size
    for u, v in zip(px, py):
        d.ellipse((u - 1, v - 1, u + 1, v + 1), fill=(255, 230, 160))
    img.save(path)


def main():
    ctx, args = _path.context('n-body with weft', bodies=(int, 2048),
                              steps=(int, 10), out=(str, 'nbody.png'))
    if ctx is None:
        return
    state, m = bodies(args.bodies)
    f = step.with_context(ctx)
    dt, eps2 = np.float32(0.001), np.float32(0.01)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        state = f(*state, m, dt, eps2)
    x, y = np.asarray(state[0]), np.asarray(state[1])
    t1 = time.perf_counter()
    frame(x, y, args.out)
    e = 0.5 * float(np.sum(m * (np.asarray(state[3]) ** 2 +
                                np.asarray(state[4]) ** 2)))
    print('%s: %d bodies, %d steps in %.1f ms (the first traces and '
          'compiles); kinetic energy %.6f; wrote %s'
          % (ctx.backend, args.bodies, args.steps, (t1 - t0) * 1e3, e,
             args.out))


if __name__ == '__main__':
    main()
