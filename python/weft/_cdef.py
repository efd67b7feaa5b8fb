"""Declarations for cffi, derived from weft.h itself.

weft.h changes as the C library grows (sized structs, new functions), so the
binding never mirrors it by hand: this module runs the C preprocessor over
the header and cleans what cffi's parser (pycparser) cannot read.

The steps:
  1. Drop `#include <...>` of system headers (stddef.h, stdint.h, stdio.h:
     cffi knows size_t, int64_t, FILE already) and keep `#include "..."`
     (weft_ops.h, whose X-macro table builds the weft_op enum and one
     builder per primitive).
  2. `cc -E -P -dD -undef`: no compiler macros, so WEFT_API is empty and the
     `extern "C"` block of C++ disappears; -dD keeps the #defines.
  3. In Python: drop `static inline` functions with their bodies (cffi in ABI
     mode cannot call them: they are not in the library), `__attribute__`,
     and every #define but those of an integer literal (which cffi accepts
     as constants; the C suffixes u, l are removed).

The module needs nothing but the standard library, so setup.py can run it
to write weft/_cdef.h at build time (`python -m weft._cdef HEADER OUT`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

_SYS_INCLUDE = re.compile(r'^\s*#\s*include\s*<[^>]*>\s*$', re.M)
_INT_DEFINE = re.compile(
    r'^#define\s+([A-Za-z_]\w*)\s+\(?\s*(-?(?:0[xX][0-9a-fA-F]+|\d+))'
    r'[uUlL]*\s*\)?\s*$')


def _compiler() -> str:
    for cc in (os.environ.get('CC'), 'cc', 'gcc', 'clang'):
        if cc and shutil.which(cc):
            return cc
    raise RuntimeError('weft: no C compiler (cc) to preprocess weft.h; '
                       'install one, or install the package (pip install '
                       './python), which writes weft/_cdef.h at build time')


def _strip_balanced(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket that closes the first open_ch at or after
    start."""
    i = text.index(open_ch, start)
    depth = 0
    while i < len(text):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError('weft: unbalanced %r in the preprocessed header' % open_ch)


def _remove(text: str, keyword: str, open_ch: str, close_ch: str) -> str:
    """Remove every `keyword ... (balanced group)` from text: for
    `static inline` the whole function up to its closing brace, for
    `__attribute__` its parenthesised arguments."""
    while True:
        k = text.find(keyword)
        if k < 0:
            return text
        end = _strip_balanced(text, k, open_ch, close_ch)
        text = text[:k] + text[end:]


def clean(preprocessed: str) -> str:
    """The cdef text from the preprocessor's output (with -dD)."""
    decls = []
    defines = []
    for line in preprocessed.splitlines():
        if line.startswith('#'):
            m = _INT_DEFINE.match(line)
            if m and m.group(1).startswith('WEFT_'):
                defines.append('#define %s %s' % (m.group(1), m.group(2)))
            continue
        decls.append(line)
    text = '\n'.join(decls)
    text = _remove(text, 'static inline', '{', '}')
    text = _remove(text, '__attribute__', '(', ')')
    text = re.sub(r'\b__extension__\b|\b__restrict\b|\b__inline\b', '', text)
    text = re.sub(r'\n\s*\n+', '\n', text)
    return '\n'.join(defines) + '\n' + text.strip() + '\n'


def generate(header: str) -> str:
    """Preprocess the weft.h at path `header` (its weft_ops.h beside it) and
    return the cdef text."""
    incdir = os.path.dirname(os.path.abspath(header))
    with open(header) as f:
        src = _SYS_INCLUDE.sub('', f.read())
    with tempfile.TemporaryDirectory(prefix='weft-cdef-') as tmp:
        path = os.path.join(tmp, 'weft_cdef_input.h')
        with open(path, 'w') as f:
            f.write(src)
        r = subprocess.run([_compiler(), '-E', '-P', '-dD', '-undef',
                            '-nostdinc', '-I', incdir, '-x', 'c', path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    if r.returncode != 0:
        raise RuntimeError('weft: preprocessing %s failed:\n%s'
                           % (header, r.stderr))
    return clean(r.stdout)


def api_functions(header_dir: str) -> list:
    """Names of the WEFT_API functions declared in weft.h (and the one per
    primitive that weft_ops.h's table declares), read from the text, for
    the test that none is missing from the cdef."""
    with open(os.path.join(header_dir, 'weft.h')) as f:
        text = f.read()
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    names = set(re.findall(r'WEFT_API\s[^;{]*?\b(weft_\w+)\s*\(', text))
    names.discard('weft_')  # the token-pasting declarations below
    with open(os.path.join(header_dir, 'weft_ops.h')) as f:
        for m in re.finditer(r'^WEFT_OP\(\s*\w+\s*,\s*(\w+)\s*,\s*([12])',
                             f.read(), re.M):
            names.add('weft_' + m.group(1))
    return sorted(names)


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit('usage: python -m weft._cdef include/weft.h OUT')
    with open(sys.argv[2], 'w') as out:
        out.write(generate(sys.argv[1]))
