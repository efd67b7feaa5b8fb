"""Every array operation of the language against numpy, on every backend.

Inputs are random integers (stored in float arrays where the operation is
on floats) so that sums and products in any order are exact: results are
compared with assert_array_equal unless a tolerance is stated.  Shapes
cover rank 0 to 3, empty arrays, one element and odd sizes.
"""

import numpy as np
import pytest

import weft

RNG = np.random.default_rng(17)
SHAPES = [(), (0,), (1,), (7,), (1000,), (0, 3), (3, 0), (5, 3), (2, 3, 4),
          (1, 1, 1)]
NONSCALAR = [s for s in SHAPES if s != ()]


def rand(shape, dtype=np.float32, lo=-50, hi=50):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def on(ctx, fn):
    return weft.jit(fn, context=ctx)


# -- map and zip_with -------------------------------------------------------

@pytest.mark.parametrize('shape', SHAPES)
@pytest.mark.parametrize('dtype', [np.float32, np.float64, np.int32, np.int64,
                                   np.uint8, np.int16])
def test_map(ctx, shape, dtype):
    x = rand(shape, dtype, 0, 20)
    f = on(ctx, lambda a: weft.map(lambda v: v * 3 + 1, a))
    np.testing.assert_array_equal(f(x), x * dtype(3) + dtype(1))
    assert f(x).dtype == np.dtype(dtype)
    assert f(x).shape == shape


@pytest.mark.parametrize('shape', SHAPES)
def test_operators_on_arrays(ctx, shape):
    x, y = rand(shape, np.float64), rand(shape, np.float64, 1, 9)
    f = on(ctx, lambda a, b: (a + b, a - b, a * b, -a, abs(a), a / b,
                              a // b, a % b, a ** 2, a < b, a >= b, a == b))
    want = (x + y, x - y, x * y, -x, abs(x), x / y, x // y, x % y, x ** 2,
            x < y, x >= y, x == y)
    for k, (got, w) in enumerate(zip(f(x, y), want)):
        # a / b and a % b: one correctly rounded operation each in weft and
        # numpy, so equal; assert_allclose only guards the NaN-free case.
        # a ** 2 is pow, which weft states within 2 ulp (libdevice's pow on
        # ptx gives 19 ** 2 = 361 + 1 ulp), where numpy squares exactly.
        rtol = 2 * np.finfo(np.float64).eps if k == 8 else 0
        np.testing.assert_allclose(np.asarray(got), w, rtol=rtol, atol=0)
        assert np.asarray(got).dtype == w.dtype


@pytest.mark.parametrize('shape', [(9,), (4, 5), (0,)])
def test_zip_with_intersection(ctx, shape):
    x = rand(shape, np.int32)
    y = rand(tuple(s + 2 for s in shape), np.int32)
    z = rand(tuple(s + 1 for s in shape), np.int32)
    f = on(ctx, lambda a, b: weft.zip_with(lambda u, v: u * 2 - v, a, b))
    g = on(ctx, lambda a, b, c: weft.zip_with(lambda u, v, w: u + v * w,
                                              a, b, c))
    sl = tuple(slice(0, s) for s in shape)
    np.testing.assert_array_equal(f(x, y), x * 2 - y[sl])
    np.testing.assert_array_equal(g(x, y, z), x + y[sl] * z[sl])
    h = on(ctx, lambda a, b: weft.map(lambda u, v: u - v, a, b))
    np.testing.assert_array_equal(h(x, y), x - y[sl])


def test_scalar_argument(ctx):
    x = rand((100,), np.float32)
    saxpy = on(ctx, lambda a, u, v: a * u + v)
    np.testing.assert_array_equal(saxpy(np.float32(2.5), x, x), 2.5 * x + x)
    # a Python float is f64: the f32 array promotes (numpy's rule)
    r = saxpy(2.5, x, x)
    assert r.dtype == np.float64


@pytest.mark.parametrize('shape', [(), (5,), (3, 4), (2, 3, 4), (0, 2)])
def test_generate(ctx, shape):
    f = on(ctx, lambda: weft.generate(
        shape, lambda ix: sum(c * 10 ** k for k, c in enumerate(ix)) + 0))
    want = np.zeros(shape, np.int64)
    for ix in np.ndindex(*shape):
        want[ix] = sum(c * 10 ** k for k, c in enumerate(ix))
    np.testing.assert_array_equal(f(), want)


def test_generate_from_shape_of_input(ctx):
    x = rand((4, 6), np.float32)
    f = on(ctx, lambda a: weft.generate(a.shape, lambda ix: a[ix[1] % 4,
                                                             ix[0]] + 1))
    t = on(ctx, lambda a: weft.generate((a.shape[1], a.shape[0]),
                                        lambda ix: a[ix[1], ix[0]]))
    np.testing.assert_array_equal(t(x), x.T)
    want = np.array([[x[j % 4, i] + 1 for j in range(6)] for i in range(4)])
    np.testing.assert_array_equal(f(x), want)


# -- reductions -------------------------------------------------------------

@pytest.mark.parametrize('shape', [s for s in NONSCALAR])
def test_fold(ctx, shape):
    x = rand(shape, np.float32)
    f = on(ctx, lambda a: (weft.fold(lambda u, v: u + v, 10, a),
                           weft.fold_all(lambda u, v: u + v, 0, a),
                           weft.sum(a, axis=-1), weft.prod(a, axis=-1)))
    fo, fa, s, _ = f(x)
    # products of values in {-1, 1} are exact in any order
    sgn = np.where(x < 0, -1, 1).astype(np.float32)
    p = f(sgn)[3]
    np.testing.assert_array_equal(fo, x.sum(-1) + 10)
    np.testing.assert_array_equal(fa, x.sum())
    np.testing.assert_array_equal(s, x.sum(-1))
    np.testing.assert_array_equal(p, sgn.prod(-1))


@pytest.mark.parametrize('shape', [(1,), (7,), (1000,), (5, 3), (2, 3, 4)])
def test_fold1(ctx, shape):
    x = rand(shape, np.int32)
    f = on(ctx, lambda a: (weft.fold1(weft.maximum, a),
                           weft.fold1_all(weft.minimum, a), weft.max(a),
                           weft.min(a, axis=-1)))
    m, mn, mx, mn1 = f(x)
    np.testing.assert_array_equal(m, x.max(-1))
    assert int(mn) == x.min() and int(mx) == x.max()
    np.testing.assert_array_equal(mn1, x.min(-1))


def test_fold1_empty_is_shape_error(ctx):
    f = on(ctx, lambda a: weft.fold1(lambda u, v: u + v, a))
    with pytest.raises(weft.ShapeError) as e:
        f(np.zeros((3, 0), np.float32))
    assert e.value.status_name == 'WEFT_ERR_EMPTY_ARRAY'


@pytest.mark.parametrize('seg', [[3, 0, 2, 5], [10], [0, 0], []])
def test_fold_seg(ctx, seg):
    n = sum(seg)
    for shape in [(n,), (2, n)]:
        x = rand(shape, np.float64)
        s = np.array(seg, np.int32)
        f = on(ctx, lambda a, sg: weft.fold_seg(lambda u, v: u + v, 0, a, sg))
        bounds = np.cumsum([0] + seg)
        want = np.stack([x[..., bounds[k]:bounds[k + 1]].sum(-1)
                         for k in range(len(seg))], -1) if seg else \
            np.zeros(shape[:-1] + (0,))
        np.testing.assert_array_equal(f(x, s), want)
        if 0 not in seg and seg:
            g = on(ctx, lambda a, sg: weft.fold1_seg(weft.maximum, a, sg))
            want = np.stack([x[..., bounds[k]:bounds[k + 1]].max(-1)
                             for k in range(len(seg))], -1)
            np.testing.assert_array_equal(g(x, s), want)


@pytest.mark.parametrize('off', [[2, 5, 5, 7, 12], [0, 10], [3], [],
                                 [4, 4, 4]])
def test_fold_seg_offsets(ctx, off):
    n = 13  # elements before off[0] and from off[-1] on belong to none
    for shape in [(n,), (2, n)]:
        x = rand(shape, np.float64)
        o = np.array(off, np.int64)
        f = on(ctx, lambda a, sg: weft.fold_seg_offsets(
            lambda u, v: u + v, 0.5, a, sg))
        nseg = max(len(off) - 1, 0)
        want = np.stack([0.5 + x[..., off[k]:off[k + 1]].sum(-1)
                         for k in range(nseg)], -1) if nseg else \
            np.zeros(shape[:-1] + (0,))
        np.testing.assert_array_equal(f(x, o), want)
        g = on(ctx, lambda a, sg: weft.fold1_seg_offsets(weft.maximum, a, sg))
        if all(off[k] < off[k + 1] for k in range(nseg)):
            want = np.stack([x[..., off[k]:off[k + 1]].max(-1)
                             for k in range(nseg)], -1) if nseg else \
                np.zeros(shape[:-1] + (0,))
            np.testing.assert_array_equal(g(x, o), want)
        else:
            with pytest.raises(weft.ShapeError) as e:
                g(x, o)
            assert e.value.status_name == 'WEFT_ERR_EMPTY_ARRAY'


@pytest.mark.parametrize('off', [[-1, 3], [0, 5, 4], [0, 14]])
def test_fold_seg_offsets_bad(ctx, off):
    f = on(ctx, lambda a, sg: weft.fold_seg_offsets(
        lambda u, v: u + v, 0, a, sg))
    with pytest.raises(weft.Error) as e:
        f(rand((13,), np.float32), np.array(off, np.int32))
    assert e.value.status_name == 'WEFT_ERR_SEGMENTS'


# -- scans ------------------------------------------------------------------

@pytest.mark.parametrize('shape', [(0,), (1,), (7,), (1000,), (3, 5),
                                   (2, 3, 4), (3, 0)])
def test_scans(ctx, shape):
    x = rand(shape, np.int64)
    add = lambda u, v: u + v  # noqa: E731
    f = on(ctx, lambda a: (weft.scanl(add, 5, a), weft.scanl1(add, a),
                           weft.scanl_exclusive(add, 5, a),
                           weft.scanr(add, 5, a), weft.scanr1(add, a),
                           weft.scanr_exclusive(add, 5, a), weft.cumsum(a)))
    sl, sl1, (slx, slt), sr, sr1, (srx, srt), cs = f(x)
    c = np.cumsum(x, -1)
    lead = np.full(shape[:-1] + (1,), 5)
    np.testing.assert_array_equal(sl, np.concatenate([lead, c + 5], -1))
    np.testing.assert_array_equal(sl1, c)
    np.testing.assert_array_equal(cs, c)
    np.testing.assert_array_equal(slx, np.concatenate([lead, c + 5], -1)
                                  [..., :-1])
    np.testing.assert_array_equal(slt, x.sum(-1) + 5)
    rc = np.flip(np.cumsum(np.flip(x, -1), -1), -1)
    np.testing.assert_array_equal(sr, np.concatenate([rc + 5, lead], -1))
    np.testing.assert_array_equal(sr1, rc)
    np.testing.assert_array_equal(srx, np.concatenate([rc + 5, lead], -1)
                                  [..., 1:])
    np.testing.assert_array_equal(srt, x.sum(-1) + 5)


def test_scan_non_commutative(ctx):
    # The composition of affine maps t -> m t + c, (m1, c1) then (m2, c2)
    # = (m1 m2, c1 m2 + c2), is associative (as a scan's function must be:
    # the parallel backends regroup it) but not commutative, so it tells
    # the left scan's argument order.  2000 elements reach the multi-block
    # scan on ptx; int64 wraps the same way everywhere.
    m, c = rand((2000,), np.int64, 1, 4), rand((2000,), np.int64, 0, 5)
    f = on(ctx, lambda a, b: weft.scanl(
        lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1]), (1, 0),
        weft.zip(a, b)))
    want_m, want_c = [1], [0]
    with np.errstate(over='ignore'):
        for mi, ci in zip(m, c):
            want_m.append(np.int64(want_m[-1]) * mi)
            want_c.append(np.int64(want_c[-1]) * mi + ci)
    gm, gc = f(m, c)
    np.testing.assert_array_equal(gm, want_m)
    np.testing.assert_array_equal(gc, want_c)


# -- permutations -----------------------------------------------------------

@pytest.mark.parametrize('n', [0, 1, 1000])
def test_permute_histogram_with_ignore(ctx, n):
    x = RNG.integers(-2, 10, size=n).astype(np.int32)
    f = on(ctx, lambda v: weft.permute(
        lambda a, b: a + b,
        weft.generate((10,), lambda ix: 0),
        lambda ix: weft.cond(v[ix] < 0, weft.ignore, (weft.cast(v[ix],
                                                                weft.i64),)),
        weft.map(lambda _: 1, v)))
    want = np.bincount(x[x >= 0], minlength=10)
    np.testing.assert_array_equal(f(x), want)


@pytest.mark.parametrize('shape', [(0,), (9,), (3, 4)])
def test_backpermute_transform(ctx, shape):
    x = rand(shape, np.float32)
    rev = on(ctx, lambda a: weft.backpermute(
        a.shape, lambda ix: tuple(a.shape[k] - 1 - ix[k]
                                  for k in range(len(shape))), a))
    np.testing.assert_array_equal(rev(x), np.flip(x))
    tr = on(ctx, lambda a: weft.transform(
        a.shape, lambda ix: tuple(a.shape[k] - 1 - ix[k]
                                  for k in range(len(shape))),
        lambda v: v * 2, a))
    np.testing.assert_array_equal(tr(x), np.flip(x) * 2)


def test_transpose_reshape_flatten(ctx):
    x = rand((3, 5), np.int32)
    f = on(ctx, lambda a: (a.T, weft.reshape(a, (5, 3)), a.reshape(15),
                           weft.flatten(a), weft.transpose(a)))
    t, r, r1, fl, t2 = f(x)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(t2, x.T)
    np.testing.assert_array_equal(r, x.reshape(5, 3))
    np.testing.assert_array_equal(r1, x.reshape(15))
    np.testing.assert_array_equal(fl, x.reshape(-1))


def test_reshape_size_error(ctx):
    f = on(ctx, lambda a: weft.reshape(a, (4, 4)))
    with pytest.raises(weft.ShapeError) as e:
        f(np.zeros(15, np.float32))
    assert e.value.status_name == 'WEFT_ERR_RESHAPE_SIZE'


def test_replicate_slice(ctx):
    v = rand((4,), np.int32)
    m = rand((3, 4, 2), np.int32)
    f = on(ctx, lambda a, b: (weft.replicate((3, weft.all), a),
                              weft.replicate((weft.all, 2), a),
                              b[:, 1, :], weft.slice(b, (2, weft.all,
                                                         weft.all)),
                              b[1, :, 0]))
    r1, r2, s1, s2, s3 = f(v, m)
    np.testing.assert_array_equal(r1, np.tile(v, (3, 1)))
    np.testing.assert_array_equal(r2, np.repeat(v[:, None], 2, 1))
    np.testing.assert_array_equal(s1, m[:, 1, :])
    np.testing.assert_array_equal(s2, m[2])
    np.testing.assert_array_equal(s3, m[1, :, 0])


def test_slice_index_error(ctx):
    f = on(ctx, lambda b: b[:, 9])
    with pytest.raises(weft.ShapeError):
        f(np.zeros((3, 4), np.float32))


# -- stencils ---------------------------------------------------------------

_PAD = {'clamp': dict(mode='edge'), 'mirror': dict(mode='reflect'),
        'wrap': dict(mode='wrap'), 7.0: dict(mode='constant',
                                             constant_values=7.0)}


def _np_stencil(x, window, boundary, weights):
    r = [w // 2 for w in window]
    xp = np.pad(x, [(k, k) for k in r], **_PAD[boundary])
    out = np.zeros_like(x)
    for off in np.ndindex(*window):
        sl = tuple(slice(o, o + n) for o, n in zip(off, x.shape))
        out = out + weights[off] * xp[sl]
    return out


@pytest.mark.parametrize('boundary', ['clamp', 'mirror', 'wrap', 7.0])
@pytest.mark.parametrize('shape,window', [((10,), (3,)), ((13,), (5,)),
                                          ((6, 7), (3, 3)),
                                          ((4, 5, 6), (3, 3, 3))])
def test_stencil(ctx, boundary, shape, window):
    x = rand(shape, np.float64)
    weights = RNG.integers(-3, 4, size=window).astype(np.float64)

    def body(w):
        acc = 0.0
        for off in np.ndindex(*window):
            e = w
            for k in off:
                e = e[k]
            acc = acc + float(weights[off]) * e
        return acc
    f = on(ctx, lambda a: weft.stencil(body, window, boundary, a))
    np.testing.assert_array_equal(f(x), _np_stencil(x, window, boundary,
                                                    weights))


@pytest.mark.parametrize('boundary', ['clamp', 'wrap'])
def test_stencil2(ctx, boundary):
    x, y = rand((6, 5), np.float32), rand((7, 5), np.float32)
    f = on(ctx, lambda a, b: weft.stencil2(
        lambda u, v: u[0][1] + u[2][1] - v[1][0] * 2 + v[1][2],
        (3, 3), boundary, a, (3, 3), 'mirror', b))
    wx = np.zeros((3, 3)); wx[0, 1] = wx[2, 1] = 1
    wy = np.zeros((3, 3)); wy[1, 0] = -2; wy[1, 2] = 1
    want = _np_stencil(x.astype(np.float64), (3, 3), boundary, wx) + \
        _np_stencil(y.astype(np.float64), (3, 3), 'mirror', wy)[:6]
    np.testing.assert_array_equal(f(x, y), want.astype(np.float32))


def test_stencil_bad_window(ctx):
    f = on(ctx, lambda a: weft.stencil(lambda w: w[0], (2,), 'clamp', a))
    with pytest.raises(weft.Error):
        f(np.zeros(4, np.float32))


# -- control flow and odds --------------------------------------------------

def test_acond(ctx):
    x = rand((10,), np.int32)
    f = on(ctx, lambda a, c: weft.acond(c > 0, a * 2, a - 1))
    np.testing.assert_array_equal(f(x, np.int32(1)), x * 2)
    np.testing.assert_array_equal(f(x, np.int32(0)), x - 1)
    g = on(ctx, lambda a, c: weft.cond(c > 0, a, a + 1))  # cond of arrays
    np.testing.assert_array_equal(g(x, np.int32(0)), x + 1)


def test_awhile(ctx):
    x = rand((5,), np.int64, 1, 9)
    # double until the sum passes 1000: one array state
    f = on(ctx, lambda a: weft.awhile(lambda s: weft.sum(s) < 1000,
                                      lambda s: s * 2, a))
    want = x.copy()
    while want.sum() < 1000:
        want = want * 2
    np.testing.assert_array_equal(f(x), want)
    # a tuple state: (array, step counter as a rank-0 array)
    g = on(ctx, lambda a: weft.awhile(
        lambda st: weft.the(st[1]) < 3,
        lambda st: (st[0] + 1, weft.unit(weft.the(st[1]) + 1)),
        (a, weft.unit(weft.cast(0, weft.i32)))))
    arr, k = g(x)
    np.testing.assert_array_equal(arr, x + 3)
    assert int(k) == 3


def test_use_unit_the(ctx):
    table = np.array([10, 20, 30], np.int32)
    f = on(ctx, lambda ix: weft.map(lambda i: weft.use(table)[i], ix))
    np.testing.assert_array_equal(f(np.array([2, 0, 1], np.int64)),
                                  [30, 10, 20])
    g = on(ctx, lambda a: weft.unit(weft.the(weft.sum(a)) * 2))
    assert int(g(table)) == 120


def test_tuple_results_and_elements(ctx):
    x = rand((8,), np.float32)
    f = on(ctx, lambda a: weft.map(lambda v: (v, v * 2, v > 0), a))
    a, b, c = f(x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x * 2)
    np.testing.assert_array_equal(c, x > 0)
    # an array of tuples in, through zip_with, reduced with a tuple fold
    g = on(ctx, lambda u: weft.fold_all(
        lambda p, q: (p[0] + q[0], weft.maximum(p[1], q[1])), (0.0, -1e30),
        weft.map(lambda v: (v, v), u)))
    s, m = g(x)
    assert float(s) == x.sum() and float(m) == x.max()


def test_tuple_arguments(ctx):
    x, y = rand((4,), np.int32), rand((4,), np.int32)
    f = on(ctx, lambda pair: pair[0] - pair[1])
    np.testing.assert_array_equal(f((x, y)), x - y)


def test_one_trace_serves_every_shape(ctx):
    f = on(ctx, lambda a: weft.sum(a, axis=-1))
    for shape in [(3,), (100,), (0,), (17,)]:
        x = rand(shape, np.int32)
        np.testing.assert_array_equal(f(x), x.sum())
    assert len(ctx._exes[f._key_owner]) == 1
    f(rand((2, 3), np.int32))  # another rank: a second trace
    f(rand((3,), np.int16))    # another type: a third
    assert len(ctx._exes[f._key_owner]) == 3
