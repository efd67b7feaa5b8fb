"""Shared fixtures: the backend as a parameter (interp, cpu; ptx where a
GPU is present), each test's context with its own disk cache directory.

The WEFT_* environment is set aside first: $WEFT_BACKEND overrides a
context's backend (as in C), which would make the backend parameter lie.
"""

import os
import sys

import pytest

for _k in [k for k in os.environ if k.startswith('WEFT_') and
           k not in ('WEFT_LIBRARY', 'WEFT_INCLUDE')]:
    del os.environ[_k]

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import weft  # noqa: E402

_BACKENDS = ['interp', 'cpu', 'ptx']


def _available(b):
    try:
        return weft.backend_available(b)
    except weft.Error:
        return False


@pytest.fixture(scope='session')
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp('weft-cache'))


@pytest.fixture(params=_BACKENDS)
def backend(request):
    if not _available(request.param):
        pytest.skip('backend %s not available here' % request.param)
    return request.param


@pytest.fixture
def ctx(backend, cache_dir):
    with weft.Context(backend, cache_dir=cache_dir) as c:
        yield c


@pytest.fixture
def checked_ctx(backend, cache_dir):
    with weft.Context(backend, checked=True, cache_dir=cache_dir) as c:
        yield c


def pytest_configure(config):
    config.addinivalue_line('markers', 'gpu: needs the ptx backend (a GPU '
                            'and its driver)')
