"""Build step of the weft package (pyproject.toml has the metadata).

build_py also writes, into the built package:
  weft/include/weft.h, weft_ops.h  the headers the binding was made from
                                   ($WEFT_INCLUDE, else the checkout's);
  weft/_cdef.h                     the cdef generated from them
                                   (weft/_cdef.py, needs cc), so an
                                   installed package needs no compiler;
  weft/libweft.so                  a copy of the built library
                                   ($WEFT_LIBRARY, else the checkout's
                                   build/libweft.so), when one exists; else
                                   the package finds the system's
                                   libweft.so.0 at import.
"""

import importlib.util
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _cdef_module():
    spec = importlib.util.spec_from_file_location(
        'weft_cdef_build', os.path.join(HERE, 'weft', '_cdef.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BuildWithCdef(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, 'weft')
        inc = os.environ.get('WEFT_INCLUDE') or \
            os.path.join(HERE, '..', 'include')
        if not os.path.isfile(os.path.join(inc, 'weft.h')):
            raise SystemExit('weft: weft.h not found in %s (set WEFT_INCLUDE)'
                             % inc)
        os.makedirs(os.path.join(target, 'include'), exist_ok=True)
        for h in ('weft.h', 'weft_ops.h'):
            shutil.copyfile(os.path.join(inc, h),
                            os.path.join(target, 'include', h))
        with open(os.path.join(target, '_cdef.h'), 'w') as f:
            f.write(_cdef_module().generate(
                os.path.join(target, 'include', 'weft.h')))
        lib = os.environ.get('WEFT_LIBRARY') or \
            os.path.join(HERE, '..', 'build', 'libweft.so')
        if os.path.isfile(lib):
            shutil.copyfile(os.path.realpath(lib),
                            os.path.join(target, 'libweft.so'))


setup(cmdclass={'build_py': BuildWithCdef})
