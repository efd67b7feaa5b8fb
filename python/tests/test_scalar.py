"""Scalar terms: operators, every primitive of weft_ops.h, cond, while_,
casts, indexing and shapes, against numpy on every backend.

Float primitives are compared with a relative tolerance of 2 ulp (TOL:
2.4e-7 for f32, 4.5e-16 for f64): weft's exp, log, sin, cos and pow are
its own code, within 1 ulp of glibc (README), numpy's are glibc's or SIMD
versions within 1 ulp of the true value, and the others are the C
library's on both sides.
"""

import math

import numpy as np
import pytest

import weft
from weft import _terms

RNG = np.random.default_rng(5)
TOL = {np.float32: 2.4e-7, np.float64: 4.5e-16}

# numpy's function for each primitive name, where numpy's semantics are
# the primitive's (others are tested on their own below)
NP = {'add': np.add, 'subtract': np.subtract, 'multiply': np.multiply,
      'negative': np.negative, 'absolute': np.absolute, 'sign': np.sign,
      'minimum': np.minimum, 'maximum': np.maximum,
      'true_divide': np.true_divide, 'power': np.power,
      'arctan2': np.arctan2, 'exp': np.exp, 'log': np.log, 'sqrt': np.sqrt,
      'sin': np.sin, 'cos': np.cos, 'tan': np.tan, 'arcsin': np.arcsin,
      'arccos': np.arccos, 'arctan': np.arctan, 'sinh': np.sinh,
      'cosh': np.cosh, 'tanh': np.tanh, 'arcsinh': np.arcsinh,
      'arccosh': np.arccosh, 'arctanh': np.arctanh, 'isnan': np.isnan,
      'isinf': np.isinf, 'less': np.less, 'less_equal': np.less_equal,
      'greater': np.greater, 'greater_equal': np.greater_equal,
      'equal': np.equal, 'not_equal': np.not_equal,
      'logical_and': np.logical_and, 'logical_or': np.logical_or,
      'logical_not': np.logical_not, 'bitwise_and': np.bitwise_and,
      'bitwise_or': np.bitwise_or, 'bitwise_xor': np.bitwise_xor,
      'invert': np.invert, 'left_shift': np.left_shift,
      'right_shift': np.right_shift, 'floor_divide': np.floor_divide,
      'mod': np.mod, 'expm1': np.expm1, 'log1p': np.log1p}


def domain(name, dtype, n=64):
    """Inputs inside the primitive's domain."""
    if name in ('arcsin', 'arccos', 'arctanh'):
        return RNG.uniform(-0.99, 0.99, n).astype(dtype)
    if name == 'log1p':
        return RNG.uniform(-0.99, 100, n).astype(dtype)
    if name in ('log', 'sqrt'):
        return RNG.uniform(0.01, 100, n).astype(dtype)
    if name == 'arccosh':
        return RNG.uniform(1, 100, n).astype(dtype)
    if name in ('exp', 'sinh', 'cosh'):
        return RNG.uniform(-20, 20, n).astype(dtype)
    if name == 'power':
        return RNG.uniform(0.1, 4, n).astype(dtype)
    return RNG.uniform(-10, 10, n).astype(dtype)


def test_every_primitive_has_a_function():
    """weft.<name> exists for every arity-1/2 primitive of weft_ops.h."""
    names = [n for n, _, ar, _ in _terms.OPS if ar in ('1', '2')]
    assert len(names) >= 50
    for name in names:
        py = _terms._NUMPY_NAMES.get(name, name.lower())
        assert callable(getattr(weft, py)), py


FLT = [n for n, (_, ar, rule) in
       {(_terms._NUMPY_NAMES.get(a, a.lower())): (a, b, c)
        for a, _, b, c in _terms.OPS}.items() if rule in ('FLT', 'NUM')
       and n in NP]


@pytest.mark.parametrize('name', FLT)
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_float_primitives(ctx, name, dtype):
    f = getattr(weft, name)
    x = domain(name, dtype)
    y = domain(name, dtype)[::-1].copy()
    nargs = 2 if name in ('add', 'subtract', 'multiply', 'minimum',
                          'maximum', 'true_divide', 'power',
                          'arctan2') else 1
    j = weft.jit(lambda a, b: weft.map(f, a) if nargs == 1 else
                 weft.zip_with(f, a, b), context=ctx)
    want = NP[name](x) if nargs == 1 else NP[name](x, y)
    got = np.asarray(j(x, y))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=0)


INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
        np.uint32, np.uint64]


@pytest.mark.parametrize('dtype', INTS)
def test_integer_operators(ctx, dtype):
    info = np.iinfo(dtype)
    lo = max(info.min, -1000)
    hi = min(info.max, 1000)
    x = RNG.integers(lo, hi, 50).astype(dtype)
    y = RNG.integers(1, min(hi, 30), 50).astype(dtype)
    s = RNG.integers(0, info.bits, 50).astype(dtype)
    j = weft.jit(lambda a, b, c: (a + b, a - b, a * b, a // b, a % b, a & b,
                                  a | b, a ^ b, ~a, a << c, a >> c,
                                  weft.minimum(a, b), a < b, a == b,
                                  weft.quot(a, b), weft.rem(a, b)),
                 context=ctx)
    got = j(x, y, s)
    with np.errstate(over='ignore'):
        want = (x + y, x - y, x * y, x // y, x % y, x & y, x | y, x ^ y, ~x,
                x << s, x >> s, np.minimum(x, y), x < y, x == y,
                (np.trunc(x.astype(np.float64) / y)).astype(dtype),
                np.fmod(x, y))
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(np.asarray(g), w, err_msg=str(k))


def test_bit_counts(ctx):
    x = np.array([0, 1, 2, 0xF0, 0x7FFFFFFF, -1], np.int32)
    j = weft.jit(lambda a: (weft.popcount(a), weft.clz(a), weft.ctz(a)),
                 context=ctx)
    pc, lz, tz = j(x)
    np.testing.assert_array_equal(pc, [0, 1, 1, 4, 31, 32])
    np.testing.assert_array_equal(lz, [32, 31, 30, 24, 1, 0])
    np.testing.assert_array_equal(tz, [32, 0, 1, 4, 0, 0])
    r = weft.jit(lambda a: (weft.rotl(a, 4), weft.rotr(a, 4)),
                 context=ctx)(np.array([0x12345678], np.uint32))
    assert int(r[0][0]) == 0x23456781 and int(r[1][0]) == 0x81234567


def test_bool_logic(ctx):
    x = np.array([True, False, True, False])
    y = np.array([True, True, False, False])
    j = weft.jit(lambda a, b: (a & b, a | b, a ^ b, ~a,
                               weft.logical_and(a, b), weft.logical_or(a, b),
                               weft.logical_not(a)), context=ctx)
    want = (x & y, x | y, x ^ y, ~x, x & y, x | y, ~x)
    for g, w in zip(j(x, y), want):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.bool_


def test_constants_typing(ctx):
    x = np.arange(5, dtype=np.float32)
    i = np.arange(5, dtype=np.int16)
    j = weft.jit(lambda a, b: (a * 2, a + 0.5, b * 3, b + 1.5, b / 2,
                               a > 1, weft.cast(b, weft.f32) * a),
                 context=ctx)
    r = j(x, i)
    dts = [np.asarray(v).dtype for v in r]
    # Python scalars are weak (NEP 50): they take the term's type, except
    # a float beside an integer makes f64; / of integers is f64
    assert dts == [np.float32, np.float32, np.int16, np.float64, np.float64,
                   np.bool_, np.float32]
    np.testing.assert_array_equal(r[3], i + 1.5)
    np.testing.assert_array_equal(r[6], i * x)
    with pytest.raises(OverflowError):
        weft.jit(lambda b: b + 70000, context=ctx)(i)


def test_promotion_of_two_terms(ctx):
    x = np.arange(4, dtype=np.float32)
    y = np.arange(4, dtype=np.float64)
    z = np.arange(4, dtype=np.int32)
    r = weft.jit(lambda a, b, c: (a + b, a * c, c + z.dtype.type(1)),
                 context=ctx)(x, y, z)
    assert [np.asarray(v).dtype for v in r] == [np.float64, np.float64,
                                                np.int32]


def test_casts_and_rounding(ctx):
    x = np.array([-2.5, -1.5, -0.4, 0.5, 1.5, 2.7], np.float64)
    j = weft.jit(lambda a: (weft.floor(a), weft.ceil(a), weft.round(a),
                            weft.trunc(a), weft.cast(a, weft.i32),
                            weft.cast(a, weft.bool_),
                            weft.bitcast(weft.cast(a, weft.f32), weft.u32)),
                 context=ctx)
    fl, ce, ro, tr, ci, cb, bc = j(x)
    np.testing.assert_array_equal(fl, np.floor(x).astype(np.int64))
    np.testing.assert_array_equal(ce, np.ceil(x).astype(np.int64))
    np.testing.assert_array_equal(ro, np.round(x).astype(np.int64))
    np.testing.assert_array_equal(tr, np.trunc(x).astype(np.int64))
    np.testing.assert_array_equal(ci, x.astype(np.int32))
    np.testing.assert_array_equal(cb, x != 0)
    np.testing.assert_array_equal(bc, x.astype(np.float32).view(np.uint32))


def test_cond_and_while(ctx):
    x = RNG.integers(1, 200, 40).astype(np.int64)

    def collatz_steps(n):
        return weft.while_(lambda s: s[0] != 1,
                           lambda s: (weft.cond(s[0] % 2 == 0, s[0] // 2,
                                                3 * s[0] + 1), s[1] + 1),
                           (n, 0))[1]
    j = weft.jit(lambda a: weft.map(collatz_steps, a), context=ctx)

    def ref(n):
        k = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            k += 1
        return k
    np.testing.assert_array_equal(j(x), [ref(int(n)) for n in x])


def test_terms_have_no_truth_value(ctx):
    with pytest.raises(TypeError, match='weft.cond'):
        weft.jit(lambda a: weft.map(lambda v: v if v > 0 else -v, a),
                 context=ctx)(np.ones(3, np.float32))


def test_integer_power_and_float_floor_divide(ctx):
    x = np.arange(-4, 5, dtype=np.int32)
    f = np.linspace(-3, 3, 13)
    r = weft.jit(lambda a, b: (a ** 3, a ** 0, b // 0.7, b % 0.7, b ** 2),
                 context=ctx)(x, f)
    np.testing.assert_array_equal(r[0], x ** 3)
    np.testing.assert_array_equal(r[1], np.ones_like(x))
    np.testing.assert_array_equal(r[2], f // 0.7)
    # b % 0.7 is b - 0.7 * floor(b / 0.7) in weft, fmod-based in numpy:
    # equal within a few ulp of 3
    np.testing.assert_allclose(r[3], f % 0.7, rtol=0, atol=1e-15)
    np.testing.assert_allclose(r[4], f ** 2, rtol=1e-15)


def test_index_terms(ctx):
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)

    def body(ix):
        i, j, k = ix
        return weft.cast(i * 100 + j * 10 + k, weft.i32) + x.dtype.type(0)
    f = weft.jit(lambda a: (weft.generate(a.shape, body),
                            weft.unit(a.shape.size),
                            weft.unit(len(a.shape) + a.shape[-1]),
                            weft.unit(a.size),
                            weft.map(lambda i: a.at_linear(i),
                                     weft.generate((3,), lambda ix:
                                                   ix[0] * 5))),
                 context=ctx)
    g, n, r, sz, lin = f(x)
    want = np.fromfunction(lambda i, j, k: i * 100 + j * 10 + k, (2, 3, 4))
    np.testing.assert_array_equal(g, want)
    assert int(n) == 24 and int(r) == 7 and int(sz) == 24
    np.testing.assert_array_equal(lin, [0, 5, 10])


def test_math_on_python_numbers_needs_a_trace():
    with pytest.raises(RuntimeError, match='jit'):
        weft.sqrt(2.0)


def test_f16(ctx):
    x = np.array([0.5, 1.25, -3.0, 1000.0], np.float16)
    r = weft.jit(lambda a: a * 2, context=ctx)(x)
    assert np.asarray(r).dtype == np.float16
    np.testing.assert_array_equal(r, x * np.float16(2))


def test_nan_and_inf(ctx):
    x = np.array([np.nan, np.inf, -np.inf, 1.0])
    r = weft.jit(lambda a: (weft.isnan(a), weft.isinf(a)), context=ctx)(x)
    np.testing.assert_array_equal(r[0], np.isnan(x))
    np.testing.assert_array_equal(r[1], np.isinf(x))
    assert math.isnan(float(weft.jit(lambda a: weft.sum(a),
                                     context=ctx)(x)))


def test_typing_stubs_name_every_primitive():
    from weft import _primitives
    stub = {n for n in dir(_primitives) if not n.startswith('_')} - {'Any',
                                                                     'Term'}
    assert stub == set(_terms.PRIMITIVES)
