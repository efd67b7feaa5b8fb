"""@weft.jit: trace a Python function of arrays once per argument types and
ranks, compile it, and run the executable on every later call.

The trace key of a call is, per argument, ('a', dtype code, rank) for an
array (numpy, weft.Array, anything np.asarray takes), ('s', dtype code)
for a scalar (Python or numpy number: passed as a rank-0 array, seen by
the function as a scalar term), and a tuple of keys for a Python tuple of
arrays.  Shapes are not in the key: weft's executables are
shape-polymorphic, so one compile serves every shape.  Executables live in
the context (Context._exes[jit function][key]) and go with it.

The call path is the hot one (the per-call overhead of a small map is
bench/python/overhead.py's subject), so it avoids work per call: the key
is built from dtype.num and ndim; the executable keeps its cffi arrays of
input and output pointers (one set per thread); inputs are wrapped with
one weft_array_wrap each, and results become weft.Arrays without any
query of the library (type and rank are known from the trace).
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, List, Optional

import numpy as np

from . import _terms
from . import _types as T
from ._array import Array, _contiguous, results, wrap
from ._context import Context, default_context
from ._dlpack import from_dlpack
from ._errors import InvalidArgument, check, error_for
from ._ffi import ffi, has, lib

_num_code = T.CODE_OF_NUM


class _Scratch(threading.local):
    def __init__(self, nin: int, nout: int):
        self.ins = ffi.new('weft_array *[]', max(nin, 1))
        self.outs = ffi.new('weft_array *[]', max(nout, 1))


class Executable:
    """One compiled trace of a jit function on one context."""

    __slots__ = ('ptr', 'h', 'nin', 'nout', 'out_types', 'out_dtypes',
                 'structure', 'scratch', 'nested')

    def __init__(self, ptr, h, nin, nout, out_types, structure, nested):
        self.ptr = ptr
        self.h = h
        self.nin = nin
        self.nout = nout
        self.out_types = out_types
        self.out_dtypes = [T.DTYPE_OF.get(t) for t in out_types]
        self.structure = structure
        self.scratch = _Scratch(nin, nout)
        self.nested = nested  # some argument is a tuple of arrays

    def __del__(self):
        if self.ptr is not None and lib is not None:
            lib.weft_executable_free(self.ptr)
            self.ptr = None


def _arg_key(x):
    """The trace key of one argument (see the module's head comment): an
    array's is (dtype.num, ndim), numpy's numbers for its dtypes."""
    if isinstance(x, np.ndarray):
        return (x.dtype.num, x.ndim)
    if isinstance(x, Array):
        if lib.weft_array_type(x._ptr) != T.CODE_OF[x._dtype]:
            raise TypeError('weft.jit: a leaf of a tuple array is passed as '
                            'numpy (x.numpy())')
        return (x._dtype.num, x.ndim)
    if isinstance(x, tuple):
        return tuple(_arg_key(v) for v in x)
    if isinstance(x, (bool, int, float, np.generic)):
        return ('s', np.asarray(x).dtype.num)
    return _arg_key(np.asarray(x))


class jit:
    """Compile a Python function of arrays with weft.

        @weft.jit
        def saxpy(a, x, y):
            return a * x + y

        r = saxpy(np.float32(2), x, y)     # numpy in, weft.Array out
        np.asarray(r)                      # a view, no copy

    Arguments: numpy arrays (C-contiguous ones are used in place; others
    are copied), weft.Arrays, arrays of other libraries that speak DLPack
    (torch, cupy, jax: taken without a copy, weft.from_dlpack), Python or
    numpy scalars (seen as scalar terms), or tuples of those.  The function returns an array term, a
    scalar term (a rank-0 array), or a tuple of them; the call returns
    weft.Arrays in the same structure (an array of tuples: a tuple of
    weft.Arrays).

    The function is traced once per element types and ranks of its
    arguments and per context, then compiled; one executable serves every
    shape.  The context: `context=` of the decorator, else that of the
    first weft.Array argument, else weft.default_context();
    f.with_context(ctx) gives the function bound to ctx (same caches).
    """

    def __init__(self, fn: Optional[Callable] = None, *,
                 context: Optional[Context] = None):
        self._fn = fn
        self._context = context
        self._key_owner = self  # the caches' key; shared by with_context
        self._lock = threading.Lock()
        if fn is not None:
            functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if self._fn is None:  # @weft.jit(context=...)
            (fn,) = args
            return jit(fn, context=self._context)
        out = kwargs.pop('out', None)
        if kwargs:
            raise TypeError('weft.jit functions take positional arguments '
                            '(and out=)')
        ctx = self._context
        if ctx is None:
            for a in args:
                if isinstance(a, Array):
                    ctx = a._ctx_of()
                    break
            else:
                ctx = default_context()
        h = ctx._h
        if h is None:
            ctx._ptr  # raises: closed
        # the key: (dtype.num, ndim) per numpy array, the fast common case
        key = []
        for k, a in enumerate(args):
            if type(a) is np.ndarray:
                key.append((a.dtype.num, a.ndim))
                continue
            if not isinstance(a, (Array, np.ndarray, tuple, bool, int, float,
                                  np.generic)) and hasattr(a, '__dlpack__'):
                # torch, cupy, jax...: taken through DLPack, no copy
                a = from_dlpack(a, context=ctx)
                args = args[:k] + (a,) + args[k + 1:]
            key.append(_arg_key(a))
        key = tuple(key)
        exes = ctx._exes.get(self._key_owner)
        exe = exes.get(key) if exes is not None else None
        if exe is None:
            exe = self._compile(ctx, key)
        if out is not None:
            return _run_into(exe, h, args, out)
        return _run(exe, h, args)

    def with_context(self, ctx: Context) -> 'jit':
        """This function bound to ctx (sharing the trace caches)."""
        j = jit(self._fn, context=ctx)
        j._key_owner = self._key_owner
        j._lock = self._lock
        return j

    def lower(self, *args, context: Optional[Context] = None) -> Executable:
        """Trace and compile for these arguments without running."""
        ctx = context or self._context or default_context()
        key = tuple(map(_arg_key, args))
        exes = ctx._exes.get(self._key_owner)
        exe = exes.get(key) if exes is not None else None
        return exe or self._compile(ctx, key)

    def dump(self, *args, context: Optional[Context] = None) -> str:
        """The executable's plan for these arguments
        (weft_executable_dump): what was fused into each kernel."""
        import os
        import tempfile
        from ._ffi import libc
        exe = self.lower(*args, context=context)
        with tempfile.TemporaryFile('w+') as tf:
            fp = libc.fdopen(os.dup(tf.fileno()), b'w')
            try:
                st = lib.weft_executable_dump(exe.ptr, fp)
            finally:
                libc.fclose(fp)
            if st:
                raise error_for(st)
            tf.seek(0)
            return tf.read()

    def _compile(self, ctx: Context, key) -> Executable:
        with self._lock:
            exes = ctx._exes.setdefault(self._key_owner, {})
            exe = exes.get(key)
            if exe is None:
                exe = exes[key] = trace(self._fn, ctx, key)
            return exe


def _params(p: _terms.Program, key):
    """The jit function's symbolic arguments for a key, and the list of
    (kind) flattening them into weft_param order."""
    if key == () or isinstance(key[0], tuple):
        return tuple(_params(p, k) for k in key)
    if key[0] == 's':
        acc = _terms.Acc(p, _terms._ok(p, lib.weft_param(
            p.ptr, _code_of_num(key[1]), 0)))
        return _terms.the(acc)
    return _terms.Acc(p, _terms._ok(p, lib.weft_param(
        p.ptr, _code_of_num(key[0]), key[1])))


def _code_of_num(num: int) -> int:
    try:
        return _num_code[num]
    except KeyError:
        for d in (np.dtype(c) for c in np.typecodes['All']):
            if d.num == num:
                raise TypeError('weft.jit: no weft element type for dtype '
                                '%s' % d) from None
        raise TypeError('weft.jit: no weft element type for this dtype') \
            from None


def _flatten_results(r, out: List[Any]):
    """Structure of the function's result; appends each array term."""
    if isinstance(r, tuple):
        return tuple(_flatten_results(x, out) for x in r)
    if isinstance(r, (_terms.Exp, bool, int, float, np.generic)):
        r = _terms.unit(r)
    if not isinstance(r, _terms.Acc):
        raise TypeError('weft.jit: the function must return array or scalar '
                        'terms (or tuples of them), not %r' % (r,))
    out.append(r)
    return len(out) - 1


def trace(fn: Callable, ctx: Context, key) -> Executable:
    """Trace fn on symbolic arguments of the key's types and compile."""
    p = _terms.Program(ctx._h)
    with _terms._Tracing(p):
        args = [_params(p, k) for k in key]
        r = fn(*args)
        accs: List[Any] = []
        structure = _flatten_results(r, accs)
    arr = ffi.new('weft_acc *[]', [a.ptr for a in accs] or [ffi.NULL])
    out = ffi.new('weft_executable **')
    st = lib.weft_compile(p.ptr, arr, len(accs), out)
    if st:
        if lib.weft_program_status(p.ptr):
            raise p.fail()
        raise error_for(st)
    exe = out[0]
    nin = lib.weft_executable_inputs(exe)
    nout = lib.weft_executable_outputs(exe)
    nested = any(isinstance(k, tuple) and k and isinstance(k[0], tuple)
                 for k in key)
    return Executable(exe, ctx._h, nin, nout, [a.t for a in accs], structure,
                      nested)


def _flat_args(args, flat: List[Any]):
    for a in args:
        if isinstance(a, tuple):
            _flat_args(a, flat)
        else:
            flat.append(a)


_new = object.__new__
_weft_run = lib.weft_run
_release_array = lib.weft_array_release


def _run(exe: Executable, h, args):
    ctxptr = h.ptr
    s = exe.scratch
    ins = s.ins
    if exe.nested:
        flat: List[Any] = []
        _flat_args(args, flat)
        args = flat
    n = len(args)
    owned = []
    try:
        for i in range(n):
            a = args[i]
            if type(a) is not np.ndarray:
                if isinstance(a, Array):
                    if a._h is h:
                        ins[i] = a._ptr
                        continue
                    a = a.numpy()
                a = np.asarray(a)
            if not a.flags.c_contiguous or not a.dtype.isnative:
                a = _contiguous(a)
            w = wrap(ctxptr, a)
            owned.append(w)
            ins[i] = w
        outs = s.outs
        st = _weft_run(exe.ptr, ins, n, outs, exe.nout)
    finally:
        for w in owned:
            _release_array(w)
    if st:
        raise error_for(st)
    dts = exe.out_dtypes
    vals = []
    for i in range(exe.nout):
        d = dts[i]
        if d is not None:
            r = _new(Array)
            r._ptr = outs[i]
            r._h = h
            r._leaf = 0
            r._dtype = d
            r._shape = None
            vals.append(r)
        else:
            vals.append(results(outs[i], h, ctxptr, exe.out_types[i]))
    st = exe.structure
    if st.__class__ is int:
        return vals[st]
    return _rebuild(st, vals)


def _run_into(exe: Executable, h, args, out):
    """A run whose outputs go into the caller's arrays (weft_run_into):
    `out` is one array or a tuple, one per output of the executable, each
    of the output's type and shape (numpy arrays are written in place);
    returns `out`."""
    if not has('weft_run_into'):
        raise NotImplementedError('weft: this libweft has no weft_run_into '
                                  '(out=)')
    outs = list(out) if isinstance(out, tuple) else [out]
    if len(outs) != exe.nout:
        raise InvalidArgument(int(lib.WEFT_ERR_ARGUMENT_COUNT),
                              'out= gives %d arrays for %d outputs'
                              % (len(outs), exe.nout))
    flat: List[Any] = []
    _flat_args(args, flat)
    owned = []
    try:
        ins = ffi.new('weft_array *[]', max(len(flat), 1))
        dst = ffi.new('weft_array *[]', max(len(outs), 1))
        for arr, items in ((ins, flat), (dst, outs)):
            for i, a in enumerate(items):
                if isinstance(a, Array) and a._h is h:
                    arr[i] = a._ptr
                    continue
                a = np.asarray(a.numpy() if isinstance(a, Array) else a)
                if items is outs and (not a.flags.c_contiguous or
                                      not a.flags.writeable):
                    raise ValueError('weft: out= arrays must be writable and '
                                     'C-contiguous')
                w = wrap(h.ptr, _contiguous(a))
                owned.append(w)
                arr[i] = w
        check(lib.weft_run_into(exe.ptr, ins, len(flat), dst, len(outs)))
    finally:
        for w in owned:
            _release_array(w)
    return out


def _rebuild(st, vals):
    if isinstance(st, int):
        return vals[st]
    return tuple(_rebuild(x, vals) for x in st)
