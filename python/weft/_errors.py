"""weft.Error and its subclasses, one per family of weft_status.

Every failing call of the C library raises one of these, carrying the
status (`.status`, an int, and `.status_name`, "WEFT_ERR_TYPE_MISMATCH") and
the C library's one-line message (`.message`, weft_last_error() or the
program's first builder error).  The families also derive from the Python
exception a caller would expect (ValueError, TypeError, IndexError,
MemoryError, ...), so `except ValueError` catches a bad shape.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

from ._ffi import ffi, lib


class Error(Exception):
    """A weft call failed.  `.status` is the weft_status (int),
    `.status_name` its name, `.message` the C library's message."""

    def __init__(self, status: int, message: str):
        self.status = status
        self.status_name = _status_name(status)
        self.message = message
        super().__init__('%s: %s' % (self.status_name, message))


class InvalidArgument(Error, ValueError):
    """A NULL handle, a value out of its range, or the wrong number of
    arrays given to a run."""


class BuildError(Error, TypeError):
    """The program is ill-formed: types, ranks, arities or scopes that do
    not agree (raised while tracing, at the offending call)."""


class TypeMismatch(BuildError):
    """Element types that do not agree."""


class RankMismatch(BuildError):
    """Ranks that do not agree."""


class ShapeError(Error, ValueError):
    """A bad shape: reshape of another size, a slice index outside its
    dimension, fold1 of an empty row, a bad stencil window or segments."""


class OutOfBounds(Error, IndexError):
    """An array index outside the array (at run: interp, checked mode)."""


class DivideByZero(Error, ZeroDivisionError):
    """Integer division or remainder by zero (at run: interp, checked)."""


class Undefined(Error, ArithmeticError):
    """Another undefined operation at run (shift by the width, float to
    integer out of range, ...)."""


class BackendUnknown(Error, ValueError):
    """A backend name weft does not know."""


class BackendUnavailable(Error, RuntimeError):
    """A known backend that cannot run here (no GPU or driver, or a build
    without LLVM)."""


class OutOfMemory(Error, MemoryError):
    """An allocation failed (host or device)."""


class InternalError(Error, RuntimeError):
    """A bug in weft: please report it."""


class DeviceError(Error, RuntimeError):
    """The GPU failed: a kernel trapped or faulted, or the driver failed."""


class Cancelled(Error):
    """The run was stopped by Context.cancel() or by the context's
    timeout_ms."""


_BY_NAME: Dict[str, Type[Error]] = {
    'WEFT_ERR_NULL_ARGUMENT': InvalidArgument,
    'WEFT_ERR_INVALID_ARGUMENT': InvalidArgument,
    'WEFT_ERR_ARGUMENT_COUNT': InvalidArgument,
    'WEFT_ERR_TYPE_MISMATCH': TypeMismatch,
    'WEFT_ERR_RANK_MISMATCH': RankMismatch,
    'WEFT_ERR_PROGRAM_MISMATCH': BuildError,
    'WEFT_ERR_ARITY': BuildError,
    'WEFT_ERR_INCOMPLETE': BuildError,
    'WEFT_ERR_SCOPE': BuildError,
    'WEFT_ERR_RESHAPE_SIZE': ShapeError,
    'WEFT_ERR_SLICE_INDEX': ShapeError,
    'WEFT_ERR_EMPTY_ARRAY': ShapeError,
    'WEFT_ERR_STENCIL_WINDOW': ShapeError,
    'WEFT_ERR_SEGMENTS': ShapeError,
    'WEFT_ERR_BAD_SHAPE': ShapeError,
    'WEFT_ERR_OUT_OF_BOUNDS': OutOfBounds,
    'WEFT_ERR_DIVIDE_BY_ZERO': DivideByZero,
    'WEFT_ERR_UNDEFINED': Undefined,
    'WEFT_ERR_BACKEND_UNKNOWN': BackendUnknown,
    'WEFT_ERR_BACKEND_UNAVAILABLE': BackendUnavailable,
    'WEFT_ERR_OUT_OF_MEMORY': OutOfMemory,
    'WEFT_ERR_INTERNAL': InternalError,
    'WEFT_ERR_DEVICE': DeviceError,
    'WEFT_ERR_CANCELLED': Cancelled,
}

# status number -> class, from the enum as the header defines it (a status
# added to weft.h later and not listed above raises the base Error).
_BY_STATUS: Dict[int, Type[Error]] = {}
for _name, _cls in _BY_NAME.items():
    try:
        _BY_STATUS[int(getattr(lib, _name))] = _cls
    except AttributeError:
        pass


def _status_name(status: int) -> str:
    name = lib.weft_status_name(status)
    return ffi.string(name).decode() if name != ffi.NULL else str(status)


def error_for(status: int, message: Optional[str] = None) -> Error:
    """The exception for a status, with weft_last_error() as its message
    unless one is given."""
    if message is None:
        message = ffi.string(lib.weft_last_error()).decode('utf-8', 'replace')
    return _BY_STATUS.get(status, Error)(status, message)


def check(status: int) -> None:
    """Raise the exception for status unless it is WEFT_OK."""
    if status:
        raise error_for(status)
