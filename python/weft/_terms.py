"""Tracing Python into weft terms: scalar terms (Exp), array terms (Acc),
scalar functions from Python callables, and the primitives.

A weft program is built while a @weft.jit function runs once on symbolic
arguments: every operator and weft.* call on them calls one C builder
(weft_add, weft_map, ...) and returns a new term.  The program being built
is the calling thread's (`current()`), set by the tracer.

Values cross into terms by `to_exp(p, value, t)`:
  - an Exp stays as it is;
  - a Python bool, int or float becomes a constant of type t when t is a
    scalar type (numpy's rule for a Python scalar beside an array: it takes
    the array's type, except that a float beside an integer makes f64),
    else of bool, i64 or f64;
  - a numpy scalar keeps its dtype;
  - a Python tuple becomes an index (t a WEFT_DIM type, components i64) or
    a weft tuple (components converted against t's components);
  - weft.ignore becomes the `ignore` index of t's rank (permute).
Terms of tuple type come back to Python as Python tuples of terms
(`unpack`), terms of index type as Exp with len(), [k] and iteration.

Builder calls are sticky in C (NULL after the first error); here every
call is checked at once, so an ill-typed operation raises weft.BuildError
(or a subclass) at the line of the traced function that made it, with the
C library's message.
"""

from __future__ import annotations

import builtins
import re
import os
import threading
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _types as T
from ._errors import Error, error_for
from ._ffi import ffi, include_dir, lib

_tls = threading.local()


class Program:
    """A weft_program being traced (owned; freed when collected)."""

    __slots__ = ('ptr', 'h', 'keep')

    def __init__(self, handle):
        out = ffi.new('weft_program **')
        st = lib.weft_program_create(handle.ptr, out)
        if st:
            raise error_for(st)
        self.ptr = out[0]
        self.h = handle     # the context's _Handle: outlives the program
        self.keep: List[Any] = []  # objects the program's terms point into

    def __del__(self):
        if self.ptr is not None and lib is not None:
            lib.weft_program_free(self.ptr)
            self.ptr = None

    def fail(self) -> Error:
        st = lib.weft_program_status(self.ptr)
        msg = ffi.string(lib.weft_program_error(self.ptr)).decode()
        if not st:  # a NULL without a program error: a bad argument
            return error_for(int(lib.WEFT_ERR_INVALID_ARGUMENT))
        return error_for(st, msg)


def current() -> Program:
    p = getattr(_tls, 'prog', None)
    if p is None:
        raise RuntimeError('weft: array and scalar operations are traced '
                           'inside a @weft.jit function (no program is '
                           'being built on this thread)')
    return p


class _Tracing:
    """with _Tracing(p): make p the thread's program being built."""

    def __init__(self, p: Program):
        self.p = p

    def __enter__(self):
        self.saved = getattr(_tls, 'prog', None)
        _tls.prog = self.p

    def __exit__(self, *exc):
        _tls.prog = self.saved


def _ok(p: Program, ptr):
    if ptr == ffi.NULL:
        raise p.fail()
    return ptr


class _Ignore:
    """weft.ignore: a permute index function's result for an element that
    is dropped."""

    def __repr__(self):
        return 'weft.ignore'


ignore = _Ignore()


class _All:
    """weft.all: in a replicate or slice specification, a whole dimension
    (also written `slice(None)`, i.e. `:` inside brackets)."""

    def __repr__(self):
        return 'weft.all'


all_ = _All()


# ---------------------------------------------------------------------------
# Type helpers (codes are weft_type ints; tuple codes belong to the context)

def _arity(p: Program, t: int) -> int:
    return lib.weft_type_arity(p.h.ptr, t)


def _component(p: Program, t: int, i: int) -> int:
    return lib.weft_type_component(p.h.ptr, t, i)


def is_tuple_type(p: Program, t: int) -> bool:
    return not T.is_scalar(t) and not T.is_dim(t)


def dtype_of(p: Program, t: int):
    """numpy dtype of a scalar code; a tuple of them for a tuple type;
    ('index', n) for WEFT_DIM(n)."""
    if T.is_scalar(t):
        return T.DTYPE_OF[t]
    if T.is_dim(t):
        return ('index', t - T.DIM0)
    return tuple(dtype_of(p, _component(p, t, i)) for i in range(_arity(p, t)))


def type_code(p: Program, d) -> int:
    """weft_type of a dtype, or of a (nested) tuple of dtypes."""
    if isinstance(d, tuple):
        comps = [type_code(p, x) for x in d]
        arr = ffi.new('weft_type[]', comps or [0])
        t = lib.weft_type_tuple(p.h.ptr, len(comps), arr)
        if not t:
            raise error_for(int(lib.WEFT_ERR_INVALID_ARGUMENT))
        return t
    return T.code(d)


# ---------------------------------------------------------------------------
# Constants

_CONST = {
    lib.WEFT_BOOL: lambda p, v: lib.weft_bool(p, int(bool(v))),
    lib.WEFT_I8: lib.weft_i8, lib.WEFT_I16: lib.weft_i16,
    lib.WEFT_I32: lib.weft_i32, lib.WEFT_I64: lib.weft_i64,
    lib.WEFT_U8: lib.weft_u8, lib.WEFT_U16: lib.weft_u16,
    lib.WEFT_U32: lib.weft_u32, lib.WEFT_U64: lib.weft_u64,
    lib.WEFT_F16: lib.weft_f16, lib.WEFT_F32: lib.weft_f32,
    lib.WEFT_F64: lib.weft_f64,
}


def const(p: Program, value, t: int) -> 'Exp':
    """A constant of scalar type t from a Python or numpy number (an
    integer out of t's range is an error, not wrapped)."""
    if T.is_int(t):
        if isinstance(value, (float, np.floating)):
            if value != int(value):
                raise TypeError('weft: %r is not a value of %s'
                                % (value, T.DTYPE_OF[t]))
        info = np.iinfo(T.DTYPE_OF[t])
        v = int(value)
        if not info.min <= v <= info.max:
            raise OverflowError('weft: %d does not fit %s' % (v, T.DTYPE_OF[t]))
        value = v
    elif T.is_float(t):
        value = float(value)
    return Exp(p, _ok(p, _CONST[t](p.ptr, value)))


def _python_type(value, like: Optional[int]) -> int:
    """The type of a Python number beside a term of type `like` (numpy's
    rules for Python scalars; NEP 50's weak scalars)."""
    if isinstance(value, np.generic):
        return T.code(value.dtype)
    if isinstance(value, bool):
        return like if like == lib.WEFT_BOOL else lib.WEFT_BOOL
    if like is not None and T.is_scalar(like):
        if isinstance(value, int):
            return like if like != lib.WEFT_BOOL else lib.WEFT_I64
        if isinstance(value, float):
            return like if T.is_float(like) else lib.WEFT_F64
    if isinstance(value, int):
        return lib.WEFT_I64
    if isinstance(value, float):
        return lib.WEFT_F64
    raise TypeError('weft: cannot make a term of %r' % (value,))


def to_exp(p: Program, v, t: Optional[int] = None) -> 'Exp':
    """The scalar term for v (see the module's head comment); t, when
    given, is the type expected there (a hint for constants, tuples and
    indices, not a conversion of terms)."""
    if isinstance(v, Exp):
        return v
    if isinstance(v, (bool, int, float, np.generic)):
        return const(p, v, _python_type(v, t))
    if isinstance(v, (tuple, list)):
        if t is not None and T.is_dim(t):
            return index(*v, p=p)
        if t is not None and not T.is_scalar(t) and _arity(p, t) == len(v):
            comps = [to_exp(p, x, _component(p, t, i)) for i, x in enumerate(v)]
        else:
            comps = [to_exp(p, x) for x in v]
        arr = ffi.new('weft_exp *[]', [c.ptr for c in comps] or [ffi.NULL])
        return Exp(p, _ok(p, lib.weft_tuple(p.ptr, len(comps), arr)))
    if v is ignore:
        if t is None or not T.is_dim(t):
            raise TypeError('weft.ignore stands only for a permute index')
        return Exp(p, _ok(p, lib.weft_ignore(p.ptr, t - T.DIM0)))
    if isinstance(v, Acc):
        raise TypeError('weft: an array where a scalar term is expected '
                        '(index it, a[i], or use weft.the(a) for rank 0)')
    raise TypeError('weft: cannot make a scalar term of %r' % (v,))


def index(*components, p: Optional[Program] = None) -> 'Exp':
    """An index or shape (WEFT_DIM(n)) from n integer terms or numbers,
    outermost first: weft.index(i, j).  weft.index() is the rank-0 index."""
    if len(components) == 1 and isinstance(components[0], (tuple, list)):
        components = tuple(components[0])
    if p is None:
        p = _program_of(components) or current()
    comps = [as_i64(p, c) for c in components]
    arr = ffi.new('weft_exp *[]', [c.ptr for c in comps] or [ffi.NULL])
    return Exp(p, _ok(p, lib.weft_index(p.ptr, len(comps), arr)))


def as_i64(p: Program, c) -> 'Exp':
    e = to_exp(p, c, lib.WEFT_I64)
    if e.t != lib.WEFT_I64:
        if not T.is_int(e.t):
            raise TypeError('weft: an index component must be integral, '
                            'not %s' % dtype_of(p, e.t))
        e = Exp(p, _ok(p, lib.weft_convert(e.ptr, lib.WEFT_I64)))
    return e


def _program_of(values) -> Optional[Program]:
    for v in values:
        if isinstance(v, (Exp, Acc)):
            return v.p
        if isinstance(v, (tuple, list)):
            q = _program_of(v)
            if q is not None:
                return q
    return None


def unpack(e: 'Exp'):
    """e itself, or for a term of tuple type the Python tuple of its
    components (recursively)."""
    p = e.p
    if T.is_scalar(e.t) or T.is_dim(e.t):
        return e
    return tuple(unpack(Exp(p, _ok(p, lib.weft_get(e.ptr, i))))
                 for i in range(_arity(p, e.t)))


def to_shape(p: Program, sh) -> 'Exp':
    """A shape term from a tuple of extents, one int (rank 1), an index
    term or an array's .shape."""
    if isinstance(sh, Exp):
        if not T.is_dim(sh.t):
            return index(sh, p=p)
        return sh
    if isinstance(sh, (int, np.integer)):
        return index(sh, p=p)
    return index(*sh, p=p)


# ---------------------------------------------------------------------------
# Scalar terms

def _promote(a: 'Exp', b: 'Exp') -> Tuple['Exp', 'Exp']:
    """a and b converted to one type (numpy's promotion for two scalar
    types; bool with bool stays bool)."""
    if a.t == b.t or not (T.is_scalar(a.t) and T.is_scalar(b.t)):
        return a, b
    t = T.code(np.promote_types(T.DTYPE_OF[a.t], T.DTYPE_OF[b.t]))
    return a.astype_code(t), b.astype_code(t)


def coerce2(a, b) -> Tuple['Exp', 'Exp']:
    """Two operands as terms of one type: a Python number takes the
    other's type (weakly), two terms are promoted."""
    p = a.p if isinstance(a, Exp) else b.p
    if not isinstance(a, Exp):
        a = to_exp(p, a, b.t)
    if not isinstance(b, Exp):
        b = to_exp(p, b, a.t)
    return _promote(a, b)


def _floatify(e: 'Exp') -> 'Exp':
    return e if T.is_float(e.t) else e.astype_code(lib.WEFT_F64)


class _Operators:
    """Python's operators on terms, for Exp (scalar) and Acc (element-wise
    over arrays: _bin and friends map or zip where an operand is an
    array)."""

    __slots__ = ()

    def __add__(self, o): return _bin('ADD', self, o)
    def __radd__(self, o): return _bin('ADD', o, self)
    def __sub__(self, o): return _bin('SUB', self, o)
    def __rsub__(self, o): return _bin('SUB', o, self)
    def __mul__(self, o): return _bin('MUL', self, o)
    def __rmul__(self, o): return _bin('MUL', o, self)
    def __truediv__(self, o): return true_divide(self, o)
    def __rtruediv__(self, o): return true_divide(o, self)
    def __floordiv__(self, o): return floor_divide(self, o)
    def __rfloordiv__(self, o): return floor_divide(o, self)
    def __mod__(self, o): return mod(self, o)
    def __rmod__(self, o): return mod(o, self)
    def __pow__(self, o): return power(self, o)
    def __rpow__(self, o): return power(o, self)
    def __neg__(self): return _un('NEG', self)
    def __pos__(self): return self
    def __abs__(self): return _un('ABS', self)
    def __invert__(self): return _invert(self)
    def __and__(self, o): return _bin('BAND', self, o)
    def __rand__(self, o): return _bin('BAND', o, self)
    def __or__(self, o): return _bin('BOR', self, o)
    def __ror__(self, o): return _bin('BOR', o, self)
    def __xor__(self, o): return _bin('BXOR', self, o)
    def __rxor__(self, o): return _bin('BXOR', o, self)
    def __lshift__(self, o): return _shift('SHL', self, o)
    def __rlshift__(self, o): return _shift('SHL', o, self)
    def __rshift__(self, o): return _shift('SHR', self, o)
    def __rrshift__(self, o): return _shift('SHR', o, self)
    def __lt__(self, o): return _bin('LT', self, o)
    def __le__(self, o): return _bin('LE', self, o)
    def __gt__(self, o): return _bin('GT', self, o)
    def __ge__(self, o): return _bin('GE', self, o)
    def __eq__(self, o): return _bin('EQ', self, o)  # type: ignore[override]
    def __ne__(self, o): return _bin('NE', self, o)  # type: ignore[override]

    __hash__ = object.__hash__


def _invert(a):
    """~a: logical not on bool, bitwise not on integers."""
    if isinstance(a, Acc):
        return map_(_invert, a)
    return _un('NOT' if a.t == lib.WEFT_BOOL else 'BNOT', a)


class Exp(_Operators):
    """A scalar term of a program being traced (weft_exp).

    Arithmetic (+ - * / // % **, unary -, abs), comparisons (giving bool
    terms), & | ^ ~ (logical on bool, bitwise on integers) and << >> build
    terms; Python numbers beside a term take its type.  A term has no
    truth value: branch with weft.cond and loop with weft.while_.  Terms of
    index type (an array's .shape, generate's argument) have len(), [k]
    and unpack as `i, j = ix`."""

    __slots__ = ('p', 'ptr', 't')

    def __init__(self, p: Program, ptr, t: Optional[int] = None):
        self.p = p
        self.ptr = ptr
        self.t = lib.weft_exp_type(ptr) if t is None else t

    @property
    def dtype(self):
        """numpy dtype of the term (a tuple for tuples, ('index', n))."""
        return dtype_of(self.p, self.t)

    def astype(self, dtype) -> 'Exp':
        """Convert to another scalar type (weft.cast)."""
        return self.astype_code(T.code(dtype))

    def astype_code(self, t: int) -> 'Exp':
        if t == self.t:
            return self
        return Exp(self.p, _ok(self.p, lib.weft_convert(self.ptr, t)), t)

    def __repr__(self):
        return '<weft.Exp %s>' % (self.dtype,)

    def __bool__(self):
        raise TypeError('weft: a traced term has no truth value here: use '
                        'weft.cond(c, a, b) for a branch, weft.while_ for a '
                        'loop, & | ~ for logic')

    # -- index and tuple access
    def __len__(self):
        if T.is_dim(self.t):
            return self.t - T.DIM0
        raise TypeError('weft: len() of a scalar term')

    def __getitem__(self, i):
        if T.is_dim(self.t) or not T.is_scalar(self.t):
            n = _arity(self.p, self.t)
            if isinstance(i, builtins.slice):
                return tuple(self[k] for k in range(n)[i])
            if i < 0:
                i += n
            return unpack(Exp(self.p, _ok(self.p, lib.weft_get(self.ptr, i))))
        raise TypeError('weft: indexing a scalar term')

    def __iter__(self):
        if T.is_dim(self.t):
            return iter([self[k] for k in range(len(self))])
        raise TypeError('weft: iterating a scalar term')

    @property
    def size(self) -> 'Exp':
        """The product of an index's components (i64), e.g. a shape's
        number of elements."""
        return Exp(self.p, _ok(self.p, lib.weft_shape_size(self.ptr)))


def _op(name: str) -> int:
    return getattr(lib, 'WEFT_OP_' + name)


def _bin(name: str, a, b):
    if isinstance(a, Acc) or isinstance(b, Acc):
        return _lift(lambda x, y: _bin(name, x, y), a, b)
    a, b = coerce2(a, b)
    p = a.p
    return Exp(p, _ok(p, lib.weft_prim2(_op(name), a.ptr, b.ptr)))


def _un(name: str, a):
    if isinstance(a, Acc):
        return map_(lambda x: _un(name, x), a)
    if not isinstance(a, Exp):
        a = to_exp(current(), a)
    return Exp(a.p, _ok(a.p, lib.weft_prim1(_op(name), a.ptr)))


def _shift(name: str, a, b):
    if isinstance(a, Acc) or isinstance(b, Acc):
        return _lift(lambda x, y: _shift(name, x, y), a, b)
    p = a.p if isinstance(a, Exp) else b.p
    if not isinstance(a, Exp):
        a = to_exp(p, a, b.t)
    if not isinstance(b, Exp):
        b = to_exp(p, b, a.t)
    return Exp(p, _ok(p, lib.weft_prim2(_op(name), a.ptr, b.ptr)))


def true_divide(a, b):
    """a / b: floating division; integer operands are converted to f64
    first (numpy's rule)."""
    if isinstance(a, Acc) or isinstance(b, Acc):
        return _lift(true_divide, a, b)
    a, b = coerce2(a, b)
    a, b = _floatify(a), _floatify(b)
    return Exp(a.p, _ok(a.p, lib.weft_prim2(_op('FDIV'), a.ptr, b.ptr)))


def floor_divide(a, b):
    """a // b: for integers, division rounding toward negative infinity
    (Python's and Haskell's div); for floats floor(a / b), computed
    through i64 (exact while the quotient is below 2**63)."""
    if isinstance(a, Acc) or isinstance(b, Acc):
        return _lift(floor_divide, a, b)
    a, b = coerce2(a, b)
    if T.is_float(a.t):
        q = Exp(a.p, _ok(a.p, lib.weft_prim2(_op('FDIV'), a.ptr, b.ptr)))
        return Exp(a.p, _ok(a.p, lib.weft_floor(q.ptr, lib.WEFT_I64))) \
            .astype_code(a.t)
    return Exp(a.p, _ok(a.p, lib.weft_prim2(_op('IDIV'), a.ptr, b.ptr)))


def mod(a, b):
    """a % b with the sign of the divisor (Python's %); for floats
    a - b * (a // b)."""
    if isinstance(a, Acc) or isinstance(b, Acc):
        return _lift(mod, a, b)
    a, b = coerce2(a, b)
    if T.is_float(a.t):
        return a - b * floor_divide(a, b)
    return Exp(a.p, _ok(a.p, lib.weft_prim2(_op('MOD'), a.ptr, b.ptr)))


def power(a, b):
    """a ** b: pow for floats; for an integer base, a non-negative Python
    int exponent is multiplied out; other integer powers are converted to
    f64 (numpy gives an integer there: cast the result back)."""
    if isinstance(a, Acc) or isinstance(b, Acc):
        return _lift(power, a, b)
    if isinstance(a, Exp) and not T.is_float(a.t) and isinstance(b, int) \
            and not isinstance(b, bool) and b >= 0:
        if b == 0:
            return const(a.p, 1, a.t)
        r = None
        base = a
        while b:
            if b & 1:
                r = r * base if r is not None else base
            b >>= 1
            if b:
                base = base * base
        return r
    a, b = coerce2(a, b)
    a, b = _floatify(a), _floatify(b)
    return Exp(a.p, _ok(a.p, lib.weft_prim2(_op('POW'), a.ptr, b.ptr)))


def cond(c, a, b):
    """a if c else b, with only the chosen branch evaluated.  c a bool term
    (a Python bool picks at trace time); a and b terms or numbers of one
    type (or tuples of them).  With arrays for a and b this is weft.acond."""
    if isinstance(c, (bool, np.bool_)):
        return a if c else b
    if isinstance(a, (Acc, tuple)) and _has_acc(a) or \
            isinstance(b, (Acc, tuple)) and _has_acc(b):
        return acond(c, a, b)
    p = c.p
    if a is ignore or b is ignore:  # a permute index or ignore
        other = b if a is ignore else a
        if not isinstance(other, Exp):
            other = index(*(other if isinstance(other, (tuple, list))
                            else (other,)), p=p)
        ea = to_exp(p, a, other.t)
        eb = to_exp(p, b, other.t)
    else:
        hint_a = b.t if isinstance(b, Exp) else None
        ea = to_exp(p, a, hint_a)
        eb = to_exp(p, b, ea.t)
    ea, eb = _promote(ea, eb)
    c = to_exp(p, c, lib.WEFT_BOOL)
    return unpack(Exp(p, _ok(p, lib.weft_cond(c.ptr, ea.ptr, eb.ptr))))


def _has_acc(v) -> bool:
    if isinstance(v, Acc):
        return True
    return isinstance(v, tuple) and builtins.any(_has_acc(x) for x in v)


def while_(cond_fn: Callable, body_fn: Callable, init):
    """Scalar loop: x = init; while cond_fn(x): x = body_fn(x); the result
    is x.  init may be a tuple of terms (then cond_fn and body_fn take and
    body_fn returns a tuple)."""
    p = _program_of([init]) or current()
    e = to_exp(p, init)
    c = make_fun(p, [e.t], lambda x: cond_fn(x), lib.WEFT_BOOL)
    b = make_fun(p, [e.t], lambda x: body_fn(x), e.t)
    return unpack(Exp(p, _ok(p, lib.weft_while(c, b, e.ptr))))


def cast(x, dtype):
    """x converted to dtype (weft_convert; bool to number is 0/1, number to
    bool is x != 0, float to int truncates).  On an array: a map."""
    if isinstance(x, Acc):
        return map_(lambda v: cast(v, dtype), x)
    x = x if isinstance(x, Exp) else to_exp(current(), x)
    return x.astype(dtype)


def bitcast(x, dtype):
    """The bits of x as another scalar type of the same size."""
    if isinstance(x, Acc):
        return map_(lambda v: bitcast(v, dtype), x)
    x = x if isinstance(x, Exp) else to_exp(current(), x)
    return Exp(x.p, _ok(x.p, lib.weft_bitcast(x.ptr, T.code(dtype))))


def _rounding(cfun, name):
    def f(x, dtype=T.i64):
        if isinstance(x, Acc):
            return map_(lambda v: f(v, dtype), x)
        x = x if isinstance(x, Exp) else to_exp(current(), x)
        return Exp(x.p, _ok(x.p, cfun(x.ptr, T.code(dtype))))
    f.__name__ = name
    f.__doc__ = ('%s(x, dtype=weft.i64): %s of a floating x, as the integral '
                 'dtype (unlike numpy, which keeps the float type).' %
                 (name, name))
    return f


floor = _rounding(lib.weft_floor, 'floor')
ceil = _rounding(lib.weft_ceiling, 'ceil')
round_ = _rounding(lib.weft_round, 'round')   # half to even, like numpy
trunc = _rounding(lib.weft_truncate, 'trunc')


# -- the primitives of weft_ops.h, as numpy-named functions ------------------

# weft_ops.h NAME -> numpy's name; a NAME not listed is its lower case.
_NUMPY_NAMES = {
    'ADD': 'add', 'SUB': 'subtract', 'MUL': 'multiply', 'NEG': 'negative',
    'ABS': 'absolute', 'SIGNUM': 'sign', 'MIN': 'minimum', 'MAX': 'maximum',
    'IDIV': 'floor_divide', 'MOD': 'mod', 'BAND': 'bitwise_and',
    'BOR': 'bitwise_or', 'BXOR': 'bitwise_xor', 'BNOT': 'invert',
    'SHL': 'left_shift', 'SHR': 'right_shift', 'FDIV': 'true_divide',
    'POW': 'power', 'ATAN2': 'arctan2', 'ASIN': 'arcsin', 'ACOS': 'arccos',
    'ATAN': 'arctan', 'ASINH': 'arcsinh', 'ACOSH': 'arccosh',
    'ATANH': 'arctanh', 'LT': 'less', 'LE': 'less_equal', 'GT': 'greater',
    'GE': 'greater_equal', 'EQ': 'equal', 'NE': 'not_equal',
    'AND': 'logical_and', 'OR': 'logical_or', 'NOT': 'logical_not',
}
# Python-level definitions above win over a generated one (numpy's
# semantics differ from the primitive's for these).
_HANDWRITTEN = {'floor_divide': floor_divide, 'mod': mod, 'power': power,
                'true_divide': true_divide}


def _read_ops() -> List[Tuple[str, str, str, str]]:
    with open(os.path.join(include_dir, 'weft_ops.h')) as f:
        text = f.read()
    return re.findall(r'^WEFT_OP\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,'
                      r'\s*(\w+)\s*\)', text, re.M)


OPS = _read_ops()  # (NAME, c_name, arity, rule) for every primitive


def _make_prim(name: str, arity: str, rule: str, pyname: str):
    op = _op(name)
    if arity == '1':
        def f(x):
            if isinstance(x, Acc):
                return map_(f, x)
            if not isinstance(x, Exp):
                x = to_exp(current(), x)
            if rule == 'FLT':
                x = _floatify(x)
            return Exp(x.p, _ok(x.p, lib.weft_prim1(op, x.ptr)))
    else:
        def f(x, y):
            if isinstance(x, Acc) or isinstance(y, Acc):
                return _lift(f, x, y)
            if rule == 'SHIFT':
                return _shift(name, x, y)
            x, y = coerce2(x, y)
            if rule == 'FLT':
                x, y = _floatify(x), _floatify(y)
            return Exp(x.p, _ok(x.p, lib.weft_prim2(op, x.ptr, y.ptr)))
    f.__name__ = pyname
    f.__doc__ = ('weft primitive %s (%s, rule %s) on scalar terms; on arrays '
                 'it is mapped element-wise.' % (name.lower(), arity, rule))
    return f


PRIMITIVES = {}
for _name, _c, _arity_s, _rule in OPS:
    if _arity_s not in ('1', '2'):
        continue
    _py = _NUMPY_NAMES.get(_name, _name.lower())
    PRIMITIVES[_py] = _HANDWRITTEN.get(_py) or _make_prim(_name, _arity_s,
                                                          _rule, _py)


# ---------------------------------------------------------------------------
# Scalar functions

def make_fun(p: Program, arg_types: Sequence[int], fn: Callable,
             result_type: Optional[int] = None, spread: bool = True):
    """A weft_fun taking arg_types, whose body is fn applied to its
    arguments (Exps, or Python tuples for tuple types); fn's result is
    converted with to_exp (result_type as the hint, and a scalar result of
    another scalar type than result_type is converted to it when
    result_type is given: fold's combining function of f32 returning an
    f64 constant expression stays f32)."""
    n = len(arg_types)
    types = ffi.new('weft_type[]', list(arg_types) or [0])
    f = _ok(p, lib.weft_fun_create(p.ptr, n, types))
    args = [unpack(Exp(p, _ok(p, lib.weft_arg(f, i)), t))
            for i, t in enumerate(arg_types)]
    body = fn(*args) if spread else fn(args)
    e = to_exp(p, body, result_type)
    if result_type is not None and e.t != result_type and \
            T.is_scalar(e.t) and T.is_scalar(result_type):
        e = e.astype_code(result_type)
    st = lib.weft_fun_return(f, e.ptr)
    if st:
        raise p.fail()
    return f


def _lift(fn: Callable, a, b):
    """fn applied element-wise where a and/or b are arrays (the other may
    be a scalar term or number, used as a free variable)."""
    if isinstance(a, Acc) and isinstance(b, Acc):
        return zip_with(fn, a, b)
    if isinstance(a, Acc):
        return map_(lambda x: fn(x, b), a)
    return map_(lambda y: fn(a, y), b)


# ---------------------------------------------------------------------------
# Array terms

class Acc(_Operators):
    """An array term of a program being traced (weft_acc): a jit function's
    arguments and the results of weft's array operations.

    Operators work element-wise (a + b is zip_with, a * 2 is map); a[i] with
    integer terms is indexing `!` (inside scalar functions), with `:` (or
    weft.all) entries a slice.  .shape is an index term, .ndim an int,
    .dtype a numpy dtype (a tuple for arrays of tuples)."""

    __slots__ = ('p', 'ptr', 't', 'ndim')

    def __init__(self, p: Program, ptr):
        self.p = p
        self.ptr = ptr
        self.t = lib.weft_acc_type(ptr)
        self.ndim = lib.weft_acc_rank(ptr)

    @property
    def dtype(self):
        return dtype_of(self.p, self.t)

    @property
    def shape(self) -> Exp:
        """The extent, an index term (len(), [k], `n, m = a.shape`)."""
        return Exp(self.p, _ok(self.p, lib.weft_shape(self.ptr)))

    @property
    def size(self) -> Exp:
        """Number of elements (an i64 term)."""
        return Exp(self.p, _ok(self.p, lib.weft_size(self.ptr)))

    def __repr__(self):
        return '<weft.Acc %s rank %d>' % (self.dtype, self.ndim)

    def __bool__(self):
        raise TypeError('weft: an array term has no truth value: use '
                        'weft.acond / weft.awhile')

    def __getitem__(self, ix):
        if not isinstance(ix, tuple):
            ix = (ix,)
        if builtins.any(_is_all(c) for c in ix):
            return slice_(self, ix)
        if len(ix) == 1 and isinstance(ix[0], Exp) and T.is_dim(ix[0].t):
            e = ix[0]
        else:
            e = index(*ix, p=self.p)
        return unpack(Exp(self.p, _ok(self.p, lib.weft_at(self.ptr, e.ptr))))

    def at_linear(self, i) -> Any:
        """a !! i: the element at row-major position i."""
        e = as_i64(self.p, i)
        return unpack(Exp(self.p, _ok(self.p, lib.weft_at_linear(self.ptr,
                                                                 e.ptr))))

    def reshape(self, *shape) -> 'Acc':
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, Exp)):
            shape = shape[0]
        return reshape(self, shape)

    def astype(self, dtype) -> 'Acc':
        return cast(self, dtype)

    @property
    def T(self) -> 'Acc':
        return transpose(self)

    def sum(self, axis=None): return sum_(self, axis)
    def prod(self, axis=None): return prod(self, axis)
    def max(self, axis=None): return max_(self, axis)
    def min(self, axis=None): return min_(self, axis)


def _is_all(c) -> bool:
    return c is all_ or (isinstance(c, builtins.slice) and c.start is None
                         and c.stop is None and c.step is None)


def _acc(p: Program, ptr) -> Acc:
    return Acc(p, _ok(p, ptr))


def _split(p: Program, ptr):
    """An Acc, or for a tuple of arrays a Python tuple of Accs."""
    ptr = _ok(p, ptr)
    n = lib.weft_acc_arity(ptr)
    if lib.weft_acc_type(ptr) == 0:
        return tuple(_split(p, lib.weft_aget(ptr, i)) for i in range(n))
    return Acc(p, ptr)


def join(p: Program, v):
    """weft_acc * for an Acc or a (nested) Python tuple of them."""
    if isinstance(v, Acc):
        return v.ptr
    if isinstance(v, Exp):
        return _ok(p, lib.weft_unit(v.ptr))
    if isinstance(v, tuple):
        comps = [join(p, x) for x in v]
        arr = ffi.new('weft_acc *[]', comps)
        return _ok(p, lib.weft_atuple(p.ptr, len(comps), arr))
    raise TypeError('weft: expected an array term, got %r' % (v,))


def _check_acc(a, what: str) -> Acc:
    if not isinstance(a, Acc):
        raise TypeError('weft.%s: expected an array term, got %r'
                        % (what, type(a).__name__))
    return a


def map_(f: Callable, a: Acc, *more: Acc) -> Acc:
    """map(f, a): f applied to every element.  map(f, a, b[, c]) is
    zip_with."""
    if more:
        return zip_with(f, a, *more)
    a = _check_acc(a, 'map')
    p = a.p
    return _acc(p, lib.weft_map(make_fun(p, [a.t], f), a.ptr))


def zip_with(f: Callable, a: Acc, b: Acc, c: Optional[Acc] = None) -> Acc:
    """f over corresponding elements of two (or three) arrays; the result's
    extent is the intersection of theirs."""
    a = _check_acc(a, 'zip_with')
    b = _check_acc(b, 'zip_with')
    p = a.p
    if c is None:
        return _acc(p, lib.weft_zipwith(make_fun(p, [a.t, b.t], f), a.ptr,
                                        b.ptr))
    c = _check_acc(c, 'zip_with')
    return _acc(p, lib.weft_zipwith3(make_fun(p, [a.t, b.t, c.t], f), a.ptr,
                                     b.ptr, c.ptr))


def zip_with3(f: Callable, a: Acc, b: Acc, c: Acc) -> Acc:
    return zip_with(f, a, b, c)


def generate(shape, f: Callable) -> Acc:
    """An array of the given shape (a tuple of extents or a shape term)
    whose element at index ix is f(ix) (ix an index term: `i, j = ix`)."""
    p = _program_of([shape]) or current()
    sh = to_shape(p, shape)
    return _acc(p, lib.weft_generate(sh.ptr, make_fun(p, [sh.t], f)))


def _fold_fn(p: Program, f: Callable, t: int):
    return make_fun(p, [t, t], f, t)


def fold(f: Callable, init, a: Acc) -> Acc:
    """Reduce the innermost dimension with f (rank n to n-1), init entering
    once per result, on the left (Accelerate's fold)."""
    a = _check_acc(a, 'fold')
    p = a.p
    return _acc(p, lib.weft_fold(_fold_fn(p, f, a.t), to_exp(p, init, a.t).ptr,
                                 a.ptr))


def fold1(f: Callable, a: Acc) -> Acc:
    """fold without a seed (a row of length 0 is weft.ShapeError)."""
    a = _check_acc(a, 'fold1')
    return _acc(a.p, lib.weft_fold1(_fold_fn(a.p, f, a.t), a.ptr))


def fold_all(f: Callable, init, a: Acc) -> Acc:
    """Reduce every element to a rank-0 array."""
    a = _check_acc(a, 'fold_all')
    p = a.p
    return _acc(p, lib.weft_fold_all(_fold_fn(p, f, a.t),
                                     to_exp(p, init, a.t).ptr, a.ptr))


def fold1_all(f: Callable, a: Acc) -> Acc:
    a = _check_acc(a, 'fold1_all')
    return _acc(a.p, lib.weft_fold1_all(_fold_fn(a.p, f, a.t), a.ptr))


def fold_seg(f: Callable, init, a: Acc, seg: Acc) -> Acc:
    """Segmented fold of the innermost dimension: seg is a rank-1 integer
    array of segment lengths; the result's innermost extent is len(seg)."""
    a = _check_acc(a, 'fold_seg')
    p = a.p
    return _acc(p, lib.weft_fold_seg(_fold_fn(p, f, a.t),
                                     to_exp(p, init, a.t).ptr, a.ptr,
                                     _check_acc(seg, 'fold_seg').ptr))


def fold1_seg(f: Callable, a: Acc, seg: Acc) -> Acc:
    a = _check_acc(a, 'fold1_seg')
    return _acc(a.p, lib.weft_fold1_seg(_fold_fn(a.p, f, a.t), a.ptr,
                                        _check_acc(seg, 'fold1_seg').ptr))


def fold_seg_offsets(f: Callable, init, a: Acc, off: Acc) -> Acc:
    """fold_seg with the segments as offsets (Accelerate's foldSeg'): off
    is a rank-1 integer array of n + 1 entries (CSR's row pointers),
    segment k the elements [off[k], off[k + 1]); the result's innermost
    extent is n."""
    a = _check_acc(a, 'fold_seg_offsets')
    p = a.p
    return _acc(p, lib.weft_fold_seg_offsets(
        _fold_fn(p, f, a.t), to_exp(p, init, a.t).ptr, a.ptr,
        _check_acc(off, 'fold_seg_offsets').ptr))


def fold1_seg_offsets(f: Callable, a: Acc, off: Acc) -> Acc:
    a = _check_acc(a, 'fold1_seg_offsets')
    return _acc(a.p, lib.weft_fold1_seg_offsets(
        _fold_fn(a.p, f, a.t), a.ptr,
        _check_acc(off, 'fold1_seg_offsets').ptr))


def _scan(cfun, with_init: bool, name: str):
    if with_init:
        def s(f, init, a):
            a = _check_acc(a, name)
            p = a.p
            return _split(p, cfun(_fold_fn(p, f, a.t),
                                  to_exp(p, init, a.t).ptr, a.ptr))
    else:
        def s(f, a):
            a = _check_acc(a, name)
            return _split(a.p, cfun(_fold_fn(a.p, f, a.t), a.ptr))
    s.__name__ = name
    return s


scanl = _scan(lib.weft_scanl, True, 'scanl')
scanl.__doc__ = ("scanl(f, init, a): inclusive left scan of the innermost "
                 "dimension starting with init: n + 1 elements.")
scanl1 = _scan(lib.weft_scanl1, False, 'scanl1')
scanl1.__doc__ = ("scanl1(f, a): left scan without a seed, n elements "
                  "(cumsum is scanl1 of +).")
scanl_exclusive = _scan(lib.weft_scanl_, True, 'scanl_exclusive')
scanl_exclusive.__doc__ = (
    "scanl_exclusive(f, init, a) -> (scan, totals): Accelerate's scanl': the "
    "exclusive scan (n elements, starting with init) and each row's total "
    "(rank one less).")
scanr = _scan(lib.weft_scanr, True, 'scanr')
scanr.__doc__ = "scanr(f, init, a): right scan, n + 1 elements ending with init."
scanr1 = _scan(lib.weft_scanr1, False, 'scanr1')
scanr1.__doc__ = "scanr1(f, a): right scan without a seed, n elements."
scanr_exclusive = _scan(lib.weft_scanr_, True, 'scanr_exclusive')
scanr_exclusive.__doc__ = (
    "scanr_exclusive(f, init, a) -> (scan, totals): Accelerate's scanr'.")


def permute(f: Callable, defaults: Acc, ix: Callable, src: Acc) -> Acc:
    """Forward permutation: start from a copy of defaults; for each index i
    of src whose ix(i) is not weft.ignore, r[ix(i)] = f(src[i], r[ix(i)]).
    ix returns an index (a tuple, or an int for rank 1) or weft.ignore."""
    defaults = _check_acc(defaults, 'permute')
    src = _check_acc(src, 'permute')
    p = defaults.p
    fn = _fold_fn(p, f, defaults.t)
    ixf = make_fun(p, [T.dim(src.ndim)], ix, T.dim(defaults.ndim))
    return _acc(p, lib.weft_permute(fn, defaults.ptr, ixf, src.ptr))


def backpermute(shape, ix: Callable, a: Acc) -> Acc:
    """An array of `shape` whose element i is a[ix(i)] (a gather)."""
    a = _check_acc(a, 'backpermute')
    p = a.p
    sh = to_shape(p, shape)
    ixf = make_fun(p, [sh.t], ix, T.dim(a.ndim))
    return _acc(p, lib.weft_backpermute(sh.ptr, ixf, a.ptr))


def transform(shape, ix: Callable, f: Callable, a: Acc) -> Acc:
    """backpermute followed by map f: element i is f(a[ix(i)])."""
    a = _check_acc(a, 'transform')
    p = a.p
    sh = to_shape(p, shape)
    ixf = make_fun(p, [sh.t], ix, T.dim(a.ndim))
    return _acc(p, lib.weft_transform(sh.ptr, ixf, make_fun(p, [a.t], f),
                                      a.ptr))


def reshape(a: Acc, shape) -> Acc:
    """a with another shape of the same size (numpy's order: a, shape)."""
    a = _check_acc(a, 'reshape')
    return _acc(a.p, lib.weft_reshape(to_shape(a.p, shape).ptr, a.ptr))


def _spec(p: Program, spec) -> Tuple[int, Any]:
    items = []
    for s in spec:
        if _is_all(s):
            items.append(_ok(p, lib.weft_all(p.ptr)))
        else:
            items.append(as_i64(p, s).ptr)
    return len(items), ffi.new('weft_exp *[]', items or [ffi.NULL])


def replicate(spec, a: Acc) -> Acc:
    """Accelerate's replicate: spec lists the result's dimensions, outermost
    first; weft.all (or slice(None)) takes a's next dimension, an integer
    adds a new dimension of that extent.  replicate((3, weft.all), v) makes
    3 rows of v."""
    a = _check_acc(a, 'replicate')
    n, arr = _spec(a.p, spec)
    return _acc(a.p, lib.weft_replicate(n, arr, a.ptr))


def slice_(a: Acc, spec) -> Acc:
    """Accelerate's slice: one entry per dimension of a, weft.all keeps it,
    an integer fixes it.  a[:, 2] is slice(a, (weft.all, 2))."""
    a = _check_acc(a, 'slice')
    n, arr = _spec(a.p, spec)
    return _acc(a.p, lib.weft_slice(a.ptr, n, arr))


def transpose(a: Acc) -> Acc:
    """The transpose of a rank-2 array (a backpermute)."""
    a = _check_acc(a, 'transpose')
    if a.ndim != 2:
        raise ValueError('weft.transpose: rank 2 only, got rank %d' % a.ndim)
    n, m = a.shape
    return backpermute((m, n), lambda ix: (ix[1], ix[0]), a)


def flatten(a: Acc) -> Acc:
    """a as a rank-1 array (reshape)."""
    return reshape(a, (a.size,))


_BOUNDARIES = {'clamp': lib.WEFT_BOUNDARY_CLAMP,
               'mirror': lib.WEFT_BOUNDARY_MIRROR,
               'wrap': lib.WEFT_BOUNDARY_WRAP}


def _boundary(p: Program, b, t: int):
    bd = ffi.new('weft_boundary *')
    if isinstance(b, str):
        try:
            bd.kind = _BOUNDARIES[b]
        except KeyError:
            raise ValueError("weft.stencil: boundary %r is not 'clamp', "
                             "'mirror', 'wrap' or a constant" % b) from None
        bd.value = ffi.NULL
    else:
        bd.kind = lib.WEFT_BOUNDARY_CONSTANT
        bd.value = to_exp(p, b, t).ptr
    return bd


def _windowed(window: Sequence[int], flat: Sequence[Any]):
    """flat (row-major) as nested tuples of the window's shape."""
    if len(window) == 1:
        return tuple(flat)
    step = len(flat) // window[0]
    return tuple(_windowed(window[1:], flat[k * step:(k + 1) * step])
                 for k in range(window[0]))


def _window(window, a: Acc) -> List[int]:
    if isinstance(window, int):
        window = (window,) * a.ndim
    return [int(w) for w in window]


def stencil(f: Callable, window, boundary, a: Acc) -> Acc:
    """Stencil: each result element is f(w), w the window around it as
    nested tuples (w[1] the centre of a 3-window; w[1][1] of 3x3).  window:
    odd extents (3, 5, 7, 9) per dimension of a (rank 1 to 3), or one int
    for all; boundary: 'clamp', 'mirror', 'wrap' or a constant value."""
    a = _check_acc(a, 'stencil')
    p = a.p
    w = _window(window, a)
    size = int(np.prod(w))
    fn = make_fun(p, [a.t] * size, lambda *xs: f(_windowed(w, xs)), a.t)
    warr = ffi.new('int[]', w)
    return _acc(p, lib.weft_stencil(fn, warr, _boundary(p, boundary, a.t)[0],
                                    a.ptr))


def stencil2(f: Callable, window1, boundary1, a1: Acc, window2, boundary2,
             a2: Acc) -> Acc:
    """Stencil over two arrays: f(w1, w2); the result's extent is the
    intersection of theirs."""
    a1 = _check_acc(a1, 'stencil2')
    a2 = _check_acc(a2, 'stencil2')
    p = a1.p
    w1, w2 = _window(window1, a1), _window(window2, a2)
    n1, n2 = int(np.prod(w1)), int(np.prod(w2))
    fn = make_fun(p, [a1.t] * n1 + [a2.t] * n2,
                  lambda *xs: f(_windowed(w1, xs[:n1]), _windowed(w2, xs[n1:])))
    warr1, warr2 = ffi.new('int[]', w1), ffi.new('int[]', w2)
    return _acc(p, lib.weft_stencil2(fn, warr1,
                                     _boundary(p, boundary1, a1.t)[0], a1.ptr,
                                     warr2, _boundary(p, boundary2, a2.t)[0],
                                     a2.ptr))


def acond(c, t, e):
    """t if c (a bool term) else e: arrays (or tuples of arrays) of one
    type; only the chosen one is computed."""
    p = _program_of([t, e])
    c = to_exp(p, c, lib.WEFT_BOOL)
    return _split(p, lib.weft_acond(c.ptr, join(p, t), join(p, e)))


def awhile(cond_fn: Callable, body_fn: Callable, init):
    """Array loop: x = init; while cond_fn(x): x = body_fn(x).  cond_fn
    returns a bool term or a rank-0 bool array; init may be a tuple of
    arrays (then x is one too)."""
    p = _program_of([init])
    if p is None:
        raise TypeError('weft.awhile: init must be an array term or a tuple '
                        'of them')
    ip = join(p, init)

    def afun(fn, is_cond):
        f = _ok(p, lib.weft_afun_like(ip))
        x = _split(p, lib.weft_afun_arg(f))
        r = fn(x)
        if is_cond and isinstance(r, (Exp, bool)):
            r = unit(to_exp(p, r, lib.WEFT_BOOL))
        if lib.weft_afun_return(f, join(p, r)):
            raise p.fail()
        return f

    return _split(p, lib.weft_awhile(afun(cond_fn, True),
                                     afun(body_fn, False), ip))


def zip_(*arrays: Acc) -> Acc:
    """One array of tuples from two or three arrays (their extents'
    intersection): zip_with of the tuple constructor."""
    return zip_with(lambda *xs: tuple(xs), *arrays)


def unzip(a: Acc) -> Tuple[Acc, ...]:
    """The arrays of the components of an array of tuples (maps of each
    component; fused into their consumers)."""
    a = _check_acc(a, 'unzip')
    n = _arity(a.p, a.t) if is_tuple_type(a.p, a.t) else 0
    if n == 0:
        raise TypeError('weft.unzip: an array of tuples, not %s' % (a.dtype,))
    return tuple(map_(lambda v, k=k: v[k], a) for k in range(n))


def unit(e) -> Acc:
    """A rank-0 array holding the scalar term e."""
    p = _program_of([e]) or current()
    e = to_exp(p, e)
    return _acc(p, lib.weft_unit(e.ptr))


def the(a: Acc):
    """The element of a rank-0 array, as a scalar term."""
    a = _check_acc(a, 'the')
    return unpack(Exp(a.p, _ok(a.p, lib.weft_the(a.ptr))))


def _reduction(op: Callable, ident, name: str, doc: str):
    def r(a: Acc, axis: Optional[int] = None) -> Acc:
        a = _check_acc(a, name)
        if axis is None:
            if ident is None:
                return fold1_all(op, a)
            return fold_all(op, ident(a), a)
        if axis not in (-1, a.ndim - 1):
            raise ValueError('weft.%s: axis None (all) or -1 (innermost) only;'
                             ' transpose or backpermute first' % name)
        return fold1(op, a) if ident is None else fold(op, ident(a), a)
    r.__name__ = name
    r.__doc__ = doc
    return r


sum_ = _reduction(lambda x, y: x + y, lambda a: 0, 'sum',
                  'sum(a, axis=None): the sum of all elements (a rank-0 '
                  'array), or of the innermost dimension with axis=-1.')
prod = _reduction(lambda x, y: x * y, lambda a: 1, 'prod',
                  'prod(a, axis=None): the product (see sum).')
max_ = _reduction(lambda x, y: PRIMITIVES['maximum'](x, y), None, 'max',
                  'max(a, axis=None): the largest element (empty: '
                  'weft.ShapeError).')
min_ = _reduction(lambda x, y: PRIMITIVES['minimum'](x, y), None, 'min',
                  'min(a, axis=None): the smallest element.')


def cumsum(a: Acc) -> Acc:
    """Inclusive prefix sum of the innermost dimension (scanl1 of +)."""
    return scanl1(lambda x, y: x + y, a)


def cumprod(a: Acc) -> Acc:
    """Inclusive prefix product of the innermost dimension."""
    return scanl1(lambda x, y: x * y, a)


def where(c, a, b):
    """Element-wise a if c else b (arrays or scalars; numpy's where):
    arguments that are arrays are zipped (at most three)."""
    args = [c, a, b]
    accs = [x for x in args if isinstance(x, Acc)]
    if not accs:
        return cond(c, a, b)
    pos = [k for k, x in enumerate(args) if isinstance(x, Acc)]

    def f(*vals):
        v = list(args)
        for k, x in zip(pos, vals):
            v[k] = x
        return cond(*v)
    return zip_with(f, *accs) if len(accs) > 1 else map_(f, accs[0])
