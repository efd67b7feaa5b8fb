"""The cffi binding: find weft.h and libweft, build the FFI, open the library.

ABI mode (`ffi.dlopen`): nothing is compiled when the package is installed
or imported but the cdef text (weft/_cdef.py).  cffi releases the GIL
around every call into the library in this mode, so weft_compile and
weft_run let other Python threads run (tests/test_binding.py checks it),
and re-takes it for callbacks (the release callback of wrapped arrays may
run on any thread that drops the last reference).

Library lookup, first found wins:
  1. $WEFT_LIBRARY (a path to libweft.so);
  2. a libweft.so installed beside this package (setup.py copies one when
     it finds a built library);
  3. the checkout's build/libweft.so, when the package runs from python/ in
     a checkout;
  4. the system's libweft.so.0 (ctypes.util.find_library('weft')).
Header lookup: $WEFT_INCLUDE, the package's copy (weft/include), the
checkout's include/, /usr/local/include, /usr/include.  A weft/_cdef.h that
setup.py wrote is used when the header found is the package's own copy;
otherwise the cdef is generated from the header found (needs cc), and
where no C compiler is found a weft/_cdef.h made beforehand stands in.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

import cffi

from . import _cdef

_HERE = os.path.dirname(os.path.abspath(__file__))
_CHECKOUT = os.path.dirname(os.path.dirname(_HERE))


def _find_include() -> str:
    cands = []
    if os.environ.get('WEFT_INCLUDE'):
        cands.append(os.environ['WEFT_INCLUDE'])
    cands += [os.path.join(_HERE, 'include'), os.path.join(_CHECKOUT, 'include'),
              '/usr/local/include', '/usr/include']
    for d in cands:
        if os.path.isfile(os.path.join(d, 'weft.h')):
            return d
    raise ImportError('weft: weft.h not found (looked in %s); set '
                      '$WEFT_INCLUDE' % ', '.join(cands))


def _find_library() -> str:
    env = os.environ.get('WEFT_LIBRARY')
    if env:
        return env
    for path in (os.path.join(_HERE, 'libweft.so'),
                 os.path.join(_CHECKOUT, 'build', 'libweft.so')):
        if os.path.isfile(path):
            return path
    found = ctypes.util.find_library('weft')
    if found:
        return found
    raise ImportError('weft: libweft.so not found (set $WEFT_LIBRARY, build '
                      'the checkout into build/, or install weft)')


def _cdef_text(include: str) -> str:
    pre = os.path.join(_HERE, '_cdef.h')
    own = os.path.join(_HERE, 'include')
    if os.path.isfile(pre) and os.path.isdir(own) and \
            os.path.samefile(include, own):
        with open(pre) as f:
            return f.read()
    try:
        return _cdef.generate(os.path.join(include, 'weft.h'))
    except RuntimeError:
        # no C compiler (a GPU machine with only the library): a _cdef.h
        # written beside the package beforehand (python -m weft._cdef
        # include/weft.h python/weft/_cdef.h) stands in
        if os.path.isfile(pre):
            with open(pre) as f:
                return f.read()
        raise


include_dir = _find_include()
library_path = _find_library()
cdef = _cdef_text(include_dir)
ffi = cffi.FFI()
ffi.cdef(cdef)
# The C library's: DLPack deleters allocate, executable dumps write a FILE.
ffi.cdef('void *malloc(size_t); void free(void *);'
         'FILE *fdopen(int, const char *); int fclose(FILE *);')
try:
    lib = ffi.dlopen(library_path)
except OSError as e:
    raise ImportError('weft: cannot open %s: %s' % (library_path, e)) from e
libc = ffi.dlopen(None)


def keep_forever(obj):
    """obj, with one reference that is never dropped: for the callbacks
    that weft may call while the interpreter shuts down (an array released
    after the module that made the callback was torn down must not call
    freed code)."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    return obj


def has(name: str) -> bool:
    """Whether the library exports `name` and the header declares it (a
    function of a newer weft.h than the library, or the reverse, is
    absent)."""
    try:
        getattr(lib, name)
    except (AttributeError, NotImplementedError):
        return False
    return True
