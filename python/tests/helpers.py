"""What the Python tests share: the paths of the built objects and the
callable images made from them."""
import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
SOURCE_DIR = os.path.dirname(PYTHON_DIR)
BUILD_DIR = os.environ.get("SIMPLER_TEST_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))

_DEFAULTS = {
    "SIMPLER_LIBRARY": "src/libsimpler.so.0",
    "VECTOR_ORCH_SO": "examples/libvector_orch.so",
    "VECTOR_KERNELS_SO": "examples/libvector_kernels.so",
    "MATMUL_ORCH_SO": "examples/libmatmul_orch.so",
    "MATMUL_KERNELS_SO": "examples/libmatmul_kernels.so",
    "CHOL_ORCH_SO": "examples/libchol_orch.so",
    "CHOL_KERNELS_SO": "examples/libchol_kernels.so",
    "PYTEST_ORCH_SO": "python/libpytest_orch.so",
    "PYTEST_KERNELS_SO": "python/libpytest_kernels.so",
    "FAKE_SIMPLER_SO": "python/libfake_simpler.so",
    "SIMPLER_LAYOUT_EXE": "python/python_layout",
}
for _name, _relative in _DEFAULTS.items():
    os.environ.setdefault(_name, os.path.join(BUILD_DIR, _relative))
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

import numpy as np  # noqa: E402

import simpler  # noqa: E402
from simpler import IN, INOUT, OUT, SCALAR  # noqa: E402,F401


def path(name):
    return os.environ[name]


N = 16384  # the vector example's length


@functools.lru_cache(maxsize=None)
def vector_image():
    """The vector example: f = (a + b + 1) * (a + b + 2) + (a + b); args a, b (IN), f (OUT)."""
    k = path("VECTOR_KERNELS_SO")
    return simpler.build_callable(
        path("VECTOR_ORCH_SO"), "vector_orchestration", [IN, IN, OUT],
        kernels=[(0, simpler.Core.AIV, k, "kernel_add", [IN, IN, OUT]),
                 (1, simpler.Core.AIV, k, "kernel_add_scalar", [IN, OUT, SCALAR]),
                 (2, simpler.Core.AIV, k, "kernel_mul", [IN, IN, OUT])])


@functools.lru_cache(maxsize=None)
def matmul_image():
    """The matmul example: C = A x B by T x T tiles; args A, B (IN), C (OUT), T."""
    return simpler.build_callable(
        path("MATMUL_ORCH_SO"), "matmul_orchestration", [IN, IN, OUT, SCALAR],
        kernels=[(0, simpler.Core.AIC, path("MATMUL_KERNELS_SO"), "kernel_gemm_tile",
                  [IN, IN, INOUT, SCALAR])])


@functools.lru_cache(maxsize=None)
def offset_image():
    """One task: y = x + s over strided 1-D f32 views; args x (IN), y (OUT), s (f32)."""
    return simpler.build_callable(
        path("PYTEST_ORCH_SO"), "offset_orchestration", [IN, OUT, SCALAR],
        kernels=[(0, simpler.Core.AIV, path("PYTEST_KERNELS_SO"), "kernel_offset",
                  [IN, OUT, SCALAR])])


@functools.lru_cache(maxsize=None)
def fail_image():
    """One task that reports kernel failure 321: the run's status is -321."""
    return simpler.build_callable(
        path("PYTEST_ORCH_SO"), "fail_orchestration", [IN, OUT],
        kernels=[(1, simpler.Core.AIV, path("PYTEST_KERNELS_SO"), "kernel_fail", [IN, OUT])])


def vector_inputs(n=N, seed=0):
    """Inputs whose every intermediate is exact in f32 (multiples of 1/4 and 1/2)."""
    i = np.arange(n)
    a = ((i + seed) % 97).astype(np.float32) * 0.25
    b = ((i + 3 * seed) % 89).astype(np.float32) * 0.5 - 10.0
    return a, b


def vector_expected(a, b):
    c = a + b
    return (c + 1.0) * (c + 2.0) + c


def wrong(actual, expected):
    """How many elements differ (0 when exact)."""
    return int(np.count_nonzero(actual != expected))
