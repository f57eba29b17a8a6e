"""simpler — Python bindings of the simpler task-graph runtime.

ctypes over libsimpler.so: the core needs only the standard library; numpy
arrays (and anything exposing __array_interface__ or the buffer protocol)
are accepted as host tensors. See docs/python.md.
"""
from ._lib import library_path, version as __version__
from ._types import Core, DataType, Direction, TaskState
from .callable import build_callable
from .cluster import Cluster, ClusterOrch, ClusterRunInfo, ClusterTaskInfo
from .config import CallConfig, RunConfig
from .device import Device, DeviceBuffer, Graph, Stream, Tensor
from .errors import *  # noqa: F401,F403 (SimplerError, RunFailed and one class per code)
from .errors import __all__ as _error_names
from .worker import ContextInfo, PreparedCall, RunHandle, RunInfo, Worker

IN, OUT, INOUT, SCALAR = Direction.IN, Direction.OUT, Direction.INOUT, Direction.SCALAR

__all__ = ["__version__", "library_path", "Core", "DataType", "Direction", "IN", "OUT", "INOUT",
           "SCALAR", "build_callable", "CallConfig", "RunConfig", "Device", "DeviceBuffer",
           "Graph", "Stream", "Tensor", "ContextInfo", "PreparedCall", "RunHandle", "RunInfo",
           "Worker", "Cluster", "ClusterOrch", "ClusterRunInfo", "ClusterTaskInfo",
           "TaskState"] + _error_names
