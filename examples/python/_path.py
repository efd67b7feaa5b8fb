"""Run the examples from a checkout without installing the package: put
the checkout's python/ first on sys.path when weft is not installed."""

import os
import sys

try:
    import weft  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), '..', '..', 'python'))
