"""weft.Context: a backend, its kernel caches and its arrays.

Ownership.  The C context must outlive every program, executable and array
made with it.  A `_Handle` owns the weft_context *; the Context, and every
Array and Executable made with it, hold the handle, so the C context is
freed only after the last of them is gone, whatever order Python collects
them in.  The Context holds its executables (jit caches, keyed by the jit
function) and nothing holds the Context but the user: Context.close() (or
the end of a `with` block, or collection) frees the executables at once
and drops the handle; the C context itself goes with the last array.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import weakref
from typing import Any, Dict, List, Optional

from ._errors import Error, InvalidArgument, check, error_for
from ._ffi import ffi, has, lib

_BACKENDS = {'interp': lib.WEFT_BACKEND_INTERP, 'cpu': lib.WEFT_BACKEND_CPU,
             'ptx': lib.WEFT_BACKEND_PTX}
_BACKEND_NAMES = {v: k for k, v in _BACKENDS.items()}


class _Handle:
    """Owns one weft_context *; freed when the last holder is gone."""

    __slots__ = ('ptr', 'ctx', '__weakref__')

    def __init__(self, ptr):
        self.ptr = ptr
        self.ctx = None  # a weak reference to its Context

    def __del__(self):
        if self.ptr is not None and lib is not None:
            lib.weft_context_free(self.ptr)
            self.ptr = None


def _new_config(backend, device, threads, fast_math, checked, cache_dir,
                timeout_ms, keep):
    """A weft_config with the library's defaults, then the arguments.  The
    config is sized (weft_config_init_sized) where the library has it."""
    cfg = ffi.new('weft_config *')
    if has('weft_config_init_sized'):
        check(lib.weft_config_init_sized(cfg, ffi.sizeof('weft_config')))
    else:
        cfg[0] = lib.weft_config_default()
    if backend is not None:
        b = ffi.new('weft_backend *')
        check(lib.weft_backend_from_name(str(backend).encode(), b))
        cfg.backend = b[0]
    cfg.device = device
    cfg.threads = threads
    if fast_math:
        cfg.flags |= lib.WEFT_FLAG_FAST_MATH
    if checked:
        cfg.flags |= lib.WEFT_FLAG_CHECKED
    if cache_dir is not None:
        s = ffi.new('char[]', os.fsencode(cache_dir))
        keep.append(s)
        cfg.cache_dir = s
    cfg.timeout_ms = float(timeout_ms)
    return cfg


@dataclasses.dataclass
class Stats:
    """A context's counters (weft_stats): kernels compiled, loaded and
    reused, compile time, and on a GPU the bytes uploaded and downloaded.
    Fields that the library's weft.h adds appear in `extra`."""
    kernels_compiled: int = 0
    kernels_loaded: int = 0
    kernels_reused: int = 0
    compile_ms: float = 0.0
    threads: int = 0
    bytes_uploaded: int = 0
    bytes_downloaded: int = 0
    evictions: int = 0
    device_bytes: int = 0
    kernels_optimised: int = 0
    optimise_ms: float = 0.0
    extra: Dict[str, Any] = dataclasses.field(default_factory=dict)


class Context:
    """A weft context: one backend and its caches.

    Context(backend=None, device=0, threads=0, fast_math=False,
            checked=False, cache_dir=None, timeout_ms=0)

    backend: "cpu" (LLVM JIT on all cores), "interp" (the reference
    interpreter) or "ptx" (NVIDIA GPU); None takes the library's default.
    As in C, $WEFT_BACKEND (and the other WEFT_* variables) override the
    arguments.  threads 0 is one worker per core; checked=True reports
    every undefined operation (out-of-bounds index, ...) as an exception;
    timeout_ms > 0 cancels a run that takes longer (weft.Cancelled).

    Use it as a context manager, or call close(); a context that is
    collected closes itself.  Raises weft.BackendUnavailable when the
    backend cannot run here (e.g. ptx without a GPU).
    """

    def __init__(self, backend: Optional[str] = None, device: int = 0,
                 threads: int = 0, fast_math: bool = False,
                 checked: bool = False, cache_dir: Optional[str] = None,
                 timeout_ms: float = 0):
        keep: List[Any] = []
        cfg = _new_config(backend, device, threads, fast_math, checked,
                          cache_dir, timeout_ms, keep)
        out = ffi.new('weft_context **')
        check(lib.weft_context_create(cfg, out))
        self._h: Optional[_Handle] = _Handle(out[0])
        self._h.ctx = weakref.ref(self)
        # jit function -> {trace key -> executable}; dropped by close().
        self._exes: Dict[Any, Dict[Any, Any]] = {}
        self._lock = threading.Lock()
        self.backend: str = _BACKEND_NAMES.get(
            int(lib.weft_context_backend(out[0])), '?')
        self.checked = bool(checked)
        self.device = device

    @property
    def _ptr(self):
        h = self._h
        if h is None:
            raise InvalidArgument(int(lib.WEFT_ERR_NULL_ARGUMENT),
                                  'the context is closed')
        return h.ptr

    def close(self) -> None:
        """Free the context's executables now; the C context goes when the
        last array made with it is gone.  Calling it again does nothing."""
        self._exes = {}
        self._h = None

    def __enter__(self) -> 'Context':
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._h is None

    def cancel(self) -> None:
        """Stop every run of this context in progress (from any thread):
        each raises weft.Cancelled.  Runs started later are not affected."""
        h = self._h
        if h is not None:
            lib.weft_cancel(h.ptr)

    def wait_optimised(self) -> None:
        """Wait until every kernel compiled so far runs its optimised code
        (CPU backend's tiered compilation); call before timing."""
        check(lib.weft_context_wait_optimised(self._ptr))

    def stats(self) -> Stats:
        """The context's counters (weft_context_stats) as a Stats."""
        out = ffi.new('weft_stats *')
        if has('weft_context_stats_sized'):
            check(lib.weft_context_stats_sized(self._ptr, out,
                                               ffi.sizeof('weft_stats')))
        else:
            check(lib.weft_context_stats(self._ptr, out))
        known = {f.name for f in dataclasses.fields(Stats)}
        values: Dict[str, Any] = {}
        extra: Dict[str, Any] = {}
        for name, _ in ffi.typeof('weft_stats').fields:
            v = getattr(out, name)
            if isinstance(v, ffi.CData) and ffi.typeof(v).kind == 'array':
                # text (char[]) or numbers (device_bytes_on)
                v = (ffi.string(v).decode()
                     if ffi.typeof(v).item.cname == 'char' else list(v))
            (values if name in known else extra)[name] = v
        return Stats(extra=extra, **values)

    def __repr__(self) -> str:
        return '<weft.Context %s%s>' % (self.backend,
                                        ' closed' if self.closed else '')


_default: Optional[Context] = None
_default_lock = threading.Lock()


def default_context() -> Context:
    """The context used where none is given: made at first use with the
    library's defaults and $WEFT_BACKEND."""
    global _default
    ctx = _default
    if ctx is None or ctx.closed:
        with _default_lock:
            if _default is None or _default.closed:
                _default = Context()
            ctx = _default
    return ctx


def set_default_context(ctx: Optional[Context]) -> None:
    """Make ctx the default context (None: make a new one at next use)."""
    global _default
    _default = ctx


def backend_available(backend: str) -> bool:
    """Whether a backend can run here (weft_backend_available where the
    library has it, else by creating a context)."""
    b = ffi.new('weft_backend *')
    check(lib.weft_backend_from_name(backend.encode(), b))
    if has('weft_backend_available'):
        return bool(lib.weft_backend_available(b[0], ffi.NULL))
    try:
        Context(backend).close()
    except Error as e:
        if e.status == lib.WEFT_ERR_BACKEND_UNAVAILABLE:
            return False
        raise
    return True


def devices() -> List[Dict[str, Any]]:
    """The GPUs weft can use, one dict each (name, compute capability,
    memory, multiprocessors, driver version); [] without a driver, or where
    the library has no weft_device_count."""
    if not has('weft_device_count'):
        return []
    n = ffi.new('int *')
    st = lib.weft_device_count(n)
    if st:
        if st == lib.WEFT_ERR_BACKEND_UNAVAILABLE:
            return []
        raise error_for(st)
    result = []
    for i in range(n[0]):
        d: Dict[str, Any] = {'ordinal': i}
        if has('weft_device_info_sized'):
            info = ffi.new('weft_device_info *')
            check(lib.weft_device_info_sized(i, info,
                                             ffi.sizeof('weft_device_info')))
            for name, _ in ffi.typeof('weft_device_info').fields:
                v = getattr(info, name)
                if isinstance(v, ffi.CData):
                    v = ffi.string(v).decode('utf-8', 'replace')
                d[name] = v
        result.append(d)
    return result


def version() -> str:
    """The library's version: weft_version() where it has one, else the
    header's WEFT_VERSION_MAJOR.MINOR."""
    if has('weft_version'):
        v = lib.weft_version()
        if isinstance(v, ffi.CData):
            return ffi.string(v).decode()
        return str(v)
    return '%d.%d' % (lib.WEFT_VERSION_MAJOR, lib.WEFT_VERSION_MINOR)
