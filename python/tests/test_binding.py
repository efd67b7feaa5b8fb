"""The binding itself: the cdef is weft.h's (no function missing, struct
layouts as the C compiler lays them out), the cleaner handles what a
newer weft.h brings (static inline functions, attributes), the library
and header lookup, and the GIL released during weft's calls."""

import os
import shutil
import subprocess
import threading

import cffi

import numpy as np
import pytest

import weft
from weft import _cdef, _ffi
from weft._ffi import ffi


def test_every_api_function_is_declared():
    """Every WEFT_API function named in weft.h (and each primitive's
    builder from weft_ops.h) is in the cdef, so none goes missing when the
    header grows."""
    names = _cdef.api_functions(_ffi.include_dir)
    assert 'weft_run' in names and 'weft_add' in names and 'weft_fexp' in names
    missing = [n for n in names if not re.search(r'\b%s\s*\(' % n, _ffi.cdef)]
    assert missing == []
    # ...and is exported by the library built from the same tree, unless a
    # parallel change has not reached this build (then it is reported)
    absent = [n for n in names if not _ffi.has(n)]
    assert absent == [], 'declared in weft.h but not in %s: %s' % (
        _ffi.library_path, absent)


import re  # noqa: E402


def _c_layout(struct, fields):
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        pytest.skip('no C compiler')
    src = '#include <stddef.h>\n#include <stdio.h>\n#include "weft.h"\n' \
          'int main(void) {\n printf("%%zu\\n", sizeof(%s));\n' % struct
    for f in fields:
        src += ' printf("%%zu\\n", offsetof(%s, %s));\n' % (struct, f)
    src += ' return 0;\n}\n'
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, 'layout.c')
        with open(c, 'w') as fp:
            fp.write(src)
        exe = os.path.join(d, 'layout')
        subprocess.run([cc, '-I', _ffi.include_dir, c, '-o', exe], check=True)
        out = subprocess.run([exe], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout.split()
    return [int(v) for v in out]


@pytest.mark.parametrize('struct', ['weft_config', 'weft_stats',
                                    'weft_boundary', 'weft_device_info'])
def test_struct_layout_matches_the_compiler(struct):
    try:
        fields = [name for name, _ in ffi.typeof(struct).fields]
    except cffi.CDefError:
        pytest.skip('%s is not in this weft.h' % struct)
    want = _c_layout(struct, fields)
    got = [ffi.sizeof(struct)] + [ffi.offsetof(struct, f) for f in fields]
    assert got == want


def test_cleaner_drops_static_inline_and_attributes():
    text = ('#define WEFT_A 0x10u\n#define WEFT_B (3)\n#define WEFT_F(x) x\n'
            '#define OTHER 4\n'
            'typedef struct s { int a; } s;\n'
            'static inline s weft_s_default(void)\n{\n  s v; { v.a = 1; }\n'
            '  return v;\n}\n'
            'int weft_f(int x) __attribute__((deprecated("no")));\n')
    out = _cdef.clean(text)
    assert '#define WEFT_A 0x10\n' in out and '#define WEFT_B 3\n' in out
    assert 'WEFT_F' not in out and 'OTHER' not in out
    assert 'static' not in out and 'return' not in out
    assert '__attribute__' not in out and 'int weft_f(int x) ;' in out
    import cffi
    cffi.FFI().cdef(out)  # and cffi reads it


def test_library_and_header_found():
    assert os.path.isfile(os.path.join(_ffi.include_dir, 'weft.h'))
    assert 'libweft' in os.path.basename(_ffi.library_path)


def test_version():
    assert isinstance(weft.version, str) and weft.version[0].isdigit()


def test_weft_library_override(tmp_path):
    """$WEFT_LIBRARY names the library; a bad one is an ImportError."""
    import sys
    env = dict(os.environ, WEFT_LIBRARY=str(tmp_path / 'nope.so'))
    r = subprocess.run([sys.executable, '-c', 'import weft'], env=env,
                       cwd=os.path.dirname(os.path.dirname(weft.__file__)),
                       stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode != 0 and 'nope.so' in r.stderr


def _spin_program():
    # an awhile that never ends by itself (a counter far from overflow)
    return weft.jit(lambda a: weft.awhile(lambda s: weft.the(s) >= 0,
                                          lambda s: weft.unit(weft.the(s) + 1),
                                          a))


def test_gil_released_during_run_and_cancel(ctx):
    """A run in another thread lets this thread run Python (cffi releases
    the GIL in ABI mode), and ctx.cancel() from here stops it with
    weft.Cancelled."""
    f = _spin_program().with_context(ctx)
    x = np.zeros((), np.int64)
    f.lower(x, context=ctx)       # compile here, run there
    result = {}
    started = threading.Event()

    def worker():
        started.set()
        try:
            f(x)
        except weft.Error as e:
            result['error'] = e

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    # Python work in this thread while the worker is inside weft_run: with
    # the GIL held by the worker this thread would never get here
    busy = sum(i * i for i in range(200000))
    assert busy > 0 and t.is_alive()
    while t.is_alive():           # cancel affects runs in progress: repeat
        ctx.cancel()              # until the worker's run has started
        t.join(0.01)
    assert isinstance(result.get('error'), weft.Cancelled)
    assert result['error'].status_name == 'WEFT_ERR_CANCELLED'
    # the context stays usable
    assert int(weft.jit(lambda a: a + 1, context=ctx)(np.int64(1))) == 2


def test_timeout(backend, cache_dir):
    with weft.Context(backend, timeout_ms=50, cache_dir=cache_dir) as c:
        f = _spin_program().with_context(c)
        with pytest.raises(weft.Cancelled):
            f(np.zeros((), np.int64))
