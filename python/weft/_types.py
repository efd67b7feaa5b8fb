"""Element types: weft's scalar types as numpy dtypes.

`weft.f32` and friends are numpy dtypes (np.dtype('float32')), so they can
be passed wherever numpy takes a dtype and compared with an array's
.dtype.  weft_type codes are the C enum's (WEFT_BOOL ... WEFT_F64).  Tuple
types are interned per context in C; in Python a tuple type is written as a
tuple of dtypes.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from ._ffi import lib

bool_ = np.dtype(np.bool_)
i8, i16, i32, i64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
u8, u16, u32, u64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
f16, f32, f64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))

# weft_type code <-> numpy dtype, for the scalar types.
CODE_OF: Dict[np.dtype, int] = {
    bool_: lib.WEFT_BOOL, i8: lib.WEFT_I8, i16: lib.WEFT_I16,
    i32: lib.WEFT_I32, i64: lib.WEFT_I64, u8: lib.WEFT_U8,
    u16: lib.WEFT_U16, u32: lib.WEFT_U32, u64: lib.WEFT_U64,
    f16: lib.WEFT_F16, f32: lib.WEFT_F32, f64: lib.WEFT_F64,
}
DTYPE_OF: Dict[int, np.dtype] = {c: d for d, c in CODE_OF.items()}
# The same, keyed by numpy's type character (a faster lookup per call).
CODE_OF_CHAR: Dict[str, int] = {d.char: c for d, c in CODE_OF.items()}
# Also by the dtype's `num`, which is unique per builtin type.
CODE_OF_NUM: Dict[int, int] = {d.num: c for d, c in CODE_OF.items()}

DIM0 = 64  # WEFT_DIM(0): WEFT_DIM(n) is 64 + n


def is_dim(code: int) -> bool:
    return DIM0 <= code <= DIM0 + lib.WEFT_MAX_RANK


def dim(rank: int) -> int:
    return DIM0 + rank


def is_scalar(code: int) -> bool:
    return code in DTYPE_OF


def is_float(code: int) -> bool:
    return code in (lib.WEFT_F16, lib.WEFT_F32, lib.WEFT_F64)


def is_int(code: int) -> bool:
    return lib.WEFT_I8 <= code <= lib.WEFT_U64


def is_signed(code: int) -> bool:
    return lib.WEFT_I8 <= code <= lib.WEFT_I64


def code(dtype) -> int:
    """The weft_type code of anything np.dtype() takes (weft.f32,
    np.float32, 'float32', float)."""
    d = np.dtype(dtype)
    try:
        return CODE_OF[d]
    except KeyError:
        raise TypeError('weft: no weft element type for dtype %s' % d) from None
