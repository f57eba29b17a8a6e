"""Fixtures of the Python package's tests.

The tests run on /usr/bin/python3 (Debian's python3-pytest and
python3-numpy). CTest (python/CMakeLists.txt) gives every path through the
environment: SIMPLER_LIBRARY (the built libsimpler.so), the examples' and
the test callables' shared objects (*_SO), the layout printer. Run by hand
from python/, the paths default to the build tree ../build.
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import helpers  # noqa: E402  (sets SIMPLER_LIBRARY before simpler is imported)
import simpler  # noqa: E402


@pytest.fixture
def worker():
    """A program-mode worker on device 0, closed after the test."""
    with simpler.Worker(level=2, device_id=0) as w:
        yield w


@pytest.fixture
def vector_worker(worker):
    worker.register(0, helpers.vector_image())
    return worker
