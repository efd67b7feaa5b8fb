"""weft from Python: data-parallel array programs traced from Python
functions, compiled by weft (LLVM on the CPU, NVPTX on NVIDIA GPUs).

    import numpy as np, weft

    @weft.jit
    def dotp(x, y):
        return weft.sum(x * y)

    x = np.arange(1000, dtype=np.float32)
    print(float(dotp(x, x)))            # numpy in, weft.Array out

Array operations (Accelerate's language): map, zip_with, generate, fold,
fold1, fold_all, fold1_all, fold_seg, fold1_seg, fold_seg_offsets,
fold1_seg_offsets, scanl, scanl1,
scanl_exclusive, scanr, scanr1, scanr_exclusive, permute (with
weft.ignore), backpermute, transform, reshape, replicate, slice,
transpose, flatten, zip, unzip, stencil, stencil2, acond, awhile, use,
unit, the;
numpy-style helpers sum, prod, max, min, cumsum, cumprod, where.
Scalar terms: operators, weft.cond, weft.while_, weft.cast, and every
primitive of weft_ops.h under numpy's name (weft.sqrt, weft.exp,
weft.arctan2, weft.minimum, ...), each also mapped over arrays.
Errors are weft.Error subclasses; contexts are weft.Context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the primitives below are made at run time
    from ._primitives import (  # noqa: F401
        add, subtract, multiply, negative, absolute, sign, minimum, maximum,
        quot, rem, floor_divide, mod, bitwise_and, bitwise_or, bitwise_xor,
        invert, left_shift, right_shift, rotl, rotr, popcount, clz, ctz,
        true_divide, power, arctan2, exp, log, sqrt, sin, cos, tan, arcsin,
        arccos, arctan, sinh, cosh, tanh, arcsinh, arccosh, arctanh, isnan,
        isinf, less, less_equal, greater, greater_equal, equal, not_equal,
        logical_and, logical_or, logical_not)

from . import _terms
from ._array import Array, asarray
from ._context import (Context, Stats, backend_available, default_context,
                       devices, set_default_context)
from ._context import version as _version
from ._errors import (BackendUnavailable, BackendUnknown, BuildError,
                      Cancelled, DeviceError, DivideByZero, Error,
                      InternalError, InvalidArgument, OutOfBounds,
                      OutOfMemory, RankMismatch, ShapeError, TypeMismatch,
                      Undefined)
from ._ffi import lib as _lib
from ._jit import jit
from ._terms import (Acc, Exp, acond, awhile, backpermute, bitcast, cast,
                     ceil, cond, cumprod, cumsum, flatten, floor, fold,
                     fold1, fold1_all, fold1_seg, fold1_seg_offsets,
                     fold_all, fold_seg, fold_seg_offsets, generate, ignore, index, permute, prod, replicate,
                     reshape, scanl, scanl1, scanl_exclusive, scanr, scanr1,
                     scanr_exclusive, stencil, stencil2, the, transform,
                     transpose, trunc, unit, unzip, where, while_,
                     zip_with, zip_with3)
from ._terms import zip_ as zip  # noqa: A001
from ._terms import all_ as all  # noqa: A001 - Accelerate's `All`
from ._terms import map_ as map  # noqa: A001
from ._terms import max_ as max  # noqa: A001
from ._terms import min_ as min  # noqa: A001
from ._terms import round_ as round  # noqa: A001
from ._terms import slice_ as slice  # noqa: A001
from ._terms import sum_ as sum  # noqa: A001
from ._types import (bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32,
                     u64)
from ._dlpack import from_dlpack

version: str = _version()

# numpy-named functions for every primitive of weft_ops.h (generated from
# its X-macro table), e.g. weft.sqrt, weft.exp, weft.arctan2, weft.minimum.
globals().update({k: v for k, v in _terms.PRIMITIVES.items()
                  if k not in globals()})
abs = _terms.PRIMITIVES['absolute']  # noqa: A001
divide = _terms.PRIMITIVES['true_divide']
pow = _terms.PRIMITIVES['power']  # noqa: A001


def use(x, context=None) -> Acc:
    """An array fixed into the program being traced (weft.use): a numpy
    array (used in place when C-contiguous, kept alive as long as the
    executable) or a weft.Array."""
    p = _terms.current()
    if isinstance(x, Array) and x._h is p.h:
        a = x
    else:
        a = asarray(x, context=p.h.ctx())
    return _terms._acc(p, _lib.weft_use(p.ptr, a._ptr))


__all__ = [n for n in dir() if not n.startswith('_')]
