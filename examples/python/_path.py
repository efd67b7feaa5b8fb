"""What the examples share: run from a checkout without installing the
package (the checkout's python/ goes on sys.path when weft is not
installed), and a context from the command line."""

import os
import sys

try:
    import weft  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), '..', '..', 'python'))


def context(argv_description, **options):
    """Parse --backend and the example's options (name -> (type, default)),
    and open the context; (None, args) with a message where the backend
    cannot run here."""
    import argparse
    import weft
    ap = argparse.ArgumentParser(description=argv_description)
    ap.add_argument('--backend', default='cpu')
    for name, (typ, default) in options.items():
        ap.add_argument('--' + name, type=typ, default=default)
    args = ap.parse_args()
    try:
        return weft.Context(args.backend), args
    except weft.BackendUnavailable as e:
        print('backend %s is not available here: %s' % (args.backend,
                                                       e.message))
        return None, args
