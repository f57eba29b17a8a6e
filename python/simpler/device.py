"""simpler.device — the simulated device, as a framework in kernel mode sees it.

Owns: Device, DeviceBuffer, Tensor (a device tensor descriptor), Stream and
Graph over simdev's public API (device.h). Every call first makes its
device the calling thread's current device (simdev_set_device), because
simdev's current device is per thread. The objects that enqueued work
points at (buffers of a launch, a replayed graph and the bindings of its
rebound launches) are kept alive by the stream until its next synchronize,
and by a graph for as long as it lives (what its captured launches use,
and each rebound launch's current binding: see Graph).

A program-mode Worker resets its device when it is finalized; buffers
allocated on that device before are gone with it. The package counts those
resets (`_epoch`) so that a stale DeviceBuffer never frees an allocation
that reused its address.
"""
import ctypes
import threading

from . import _structs as S
from ._args import HostArray
from ._lib import COPY_DEVICE_TO_HOST, COPY_HOST_TO_DEVICE, lib
from ._types import DataType, as_dtype
from .errors import check, error, invalid

_epoch = {}  # device id -> resets done through this package
_epoch_lock = threading.Lock()


def _bump_epoch(device_id):
    with _epoch_lock:
        _epoch[device_id] = _epoch.get(device_id, 0) + 1


def _current(device_id):
    check(lib.simdev_set_device(device_id), "simdev_set_device")


class Device:
    """One simulated device, by id."""

    def __init__(self, device_id=0):
        count = ctypes.c_int()
        check(lib.simdev_device_count(ctypes.byref(count)), "simdev_device_count")
        if not isinstance(device_id, int) or not 0 <= device_id < count.value:
            raise invalid("device_id %r: devices are 0..%d" % (device_id, count.value - 1))
        self.device_id = device_id

    def malloc(self, nbytes):
        """A DeviceBuffer of `nbytes` (> 0) bytes (simdev_malloc)."""
        return DeviceBuffer(self, nbytes)

    def stream(self):
        """A new Stream on this device (simdev_stream_create)."""
        return Stream(self)

    def synchronize(self):
        """Waits until every stream of the device is drained; raises the first
        carried error (RunFailed for a round's code), which is cleared."""
        _current(self.device_id)
        check(lib.simdev_device_sync(), "simdev_device_sync")

    @property
    def memory_in_use(self):
        """Bytes of device memory allocated now, by anyone (simdev_mem_get_info)."""
        info = S.MemInfo()
        check(lib.simdev_mem_get_info(self.device_id, ctypes.byref(info)), "simdev_mem_get_info")
        return info.in_use

    def __repr__(self):
        return "simpler.Device(%d)" % self.device_id


def _contiguous(array, what, writable):
    a = HostArray(array, what)
    try:
        if not a.contiguous:
            raise invalid("%s: a C-contiguous array is needed" % what)
        if writable and a.readonly:
            raise invalid("%s: the array is read-only" % what)
    except BaseException:
        a.release()
        raise
    return a


class DeviceBuffer:
    """Device memory (simdev_malloc), freed by free() or when collected."""

    def __init__(self, device, nbytes):
        if not isinstance(nbytes, int) or nbytes <= 0:
            raise invalid("nbytes %r: a positive int" % (nbytes,))
        self.device = device
        self.nbytes = nbytes
        self._ptr = ctypes.c_void_p()
        _current(device.device_id)
        check(lib.simdev_malloc(ctypes.byref(self._ptr), nbytes), "simdev_malloc")
        self._epoch = _epoch.get(device.device_id, 0)

    @property
    def address(self):
        return self._ptr.value or 0

    @property
    def live(self):
        return bool(self._ptr.value) and self._epoch == _epoch.get(self.device.device_id, 0)

    def check_live(self):
        if not self.live:
            raise error(-1003, "DeviceBuffer", "the buffer was freed, or its device reset")

    def _copy(self, array, what, to_device, offset):
        self.check_live()
        a = _contiguous(array, what, writable=not to_device)
        try:
            if not isinstance(offset, int) or offset < 0 or a.nbytes > self.nbytes - offset:
                raise invalid("%s: %d bytes at offset %r do not fit the %d-byte buffer"
                              % (what, a.nbytes, offset, self.nbytes))
            _current(self.device.device_id)
            dev = ctypes.c_void_p(self.address + offset)
            host = ctypes.c_void_p(a.addr)
            if to_device:
                rc = lib.simdev_memcpy(dev, host, a.nbytes, COPY_HOST_TO_DEVICE)
            else:
                rc = lib.simdev_memcpy(host, dev, a.nbytes, COPY_DEVICE_TO_HOST)
            check(rc, "simdev_memcpy")
        finally:
            a.release()

    def write(self, array, offset=0):
        """Copies a C-contiguous host array's bytes into the buffer at byte
        `offset` (synchronous; waits for no stream: synchronize first)."""
        self._copy(array, "write", True, offset)

    def read(self, out_array, offset=0):
        """Fills a writable C-contiguous host array from byte `offset`."""
        self._copy(out_array, "read", False, offset)

    def tensor(self, shape, dtype, strides=None, offset=0):
        """A device Tensor over this buffer: `shape`, `strides` (elements,
        row-major when None; may be negative) and `offset` (elements, of the
        first element)."""
        return Tensor(self, shape, dtype, strides, offset)

    def free(self):
        """Frees the buffer (idempotent)."""
        if self._ptr.value:
            ptr, self._ptr = self._ptr, ctypes.c_void_p()
            if self._epoch == _epoch.get(self.device.device_id, 0):
                _current(self.device.device_id)
                check(lib.simdev_free(ptr), "simdev_free")

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass


class Tensor:
    """A device tensor descriptor (struct simpler_tensor, address space
    DEVICE) over a DeviceBuffer, which it keeps alive."""

    def __init__(self, buffer, shape, dtype, strides=None, offset=0):
        buffer.check_live()
        dt = as_dtype(dtype)
        if dt is None:
            raise invalid("dtype %r is not a simpler.DataType" % (dtype,))
        shape = tuple(int(n) for n in shape)
        if not 1 <= len(shape) <= S.TENSOR_MAX_DIMS or any(n <= 0 for n in shape):
            raise invalid("shape %r: 1..%d positive dims" % (shape, S.TENSOR_MAX_DIMS))
        if strides is None:
            strides, step = [], 1
            for n in reversed(shape):
                strides.insert(0, step)
                step *= n
        strides = tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise invalid("strides %r: one per dim of %r" % (strides, shape))
        es = dt.itemsize
        lo = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        hi = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
        if offset < 0 or lo < 0 or (hi + 1) * es > buffer.nbytes:
            raise invalid("the view (offset %d, shape %r, strides %r) leaves the %d-byte buffer"
                          % (offset, shape, strides, buffer.nbytes))
        self.buffer, self.shape, self.dtype, self.strides, self.offset = (
            buffer, shape, dt, strides, offset)
        t = S.Tensor()
        t.addr, t.buffer_bytes, t.start_offset = buffer.address, buffer.nbytes, offset
        t.producer_task_id = S.TASK_ID_NONE
        t.ndims, t.dtype, t.address_space = len(shape), int(dt), S.MEM_DEVICE
        for d, (n, s) in enumerate(zip(shape, strides)):
            t.shape[d], t.stride[d] = n, s
        self.descriptor = t

    def check_live(self):
        self.buffer.check_live()

    def __repr__(self):
        return "simpler.Tensor(shape=%r, dtype=%s, strides=%r, offset=%d)" % (
            self.shape, self.dtype.name, self.strides, self.offset)


class Stream:
    """A stream of one device (simdev_stream_create), destroyed by
    destroy() or when collected."""

    def __init__(self, device):
        self.device = device
        self._handle = ctypes.c_void_p()
        self._keep = []  # what enqueued work uses, until the next synchronize
        self._lock = threading.Lock()
        _current(device.device_id)
        check(lib.simdev_stream_create(ctypes.byref(self._handle)), "simdev_stream_create")
        self._epoch = _epoch.get(device.device_id, 0)
        self._capturing = None

    @property
    def handle(self):
        if not self._handle.value or self._epoch != _epoch.get(self.device.device_id, 0):
            raise error(-1003, "Stream", "the stream was destroyed, or its device reset")
        return self._handle

    def keep(self, objects):
        """Holds `objects` until work enqueued now has run (next synchronize),
        or, while capturing, for the life of the graph."""
        with self._lock:
            target = self._capturing._keep if self._capturing is not None else self._keep
            target.append(objects)

    def synchronize(self):
        """Waits for the stream's work; raises the error it carried
        (RunFailed for a round's code), which is cleared."""
        handle = self.handle
        _current(self.device.device_id)
        rc = lib.simdev_stream_sync(handle)
        with self._lock:
            self._keep = []
        check(rc, "simdev_stream_sync")

    def capture(self, graph):
        """A context manager: work enqueued on the stream inside it is
        captured into `graph` (a Graph) instead of running."""
        return _Capture(self, graph)

    def destroy(self):
        """Waits for pending work and destroys the stream (idempotent)."""
        if self._handle.value:
            handle, self._handle = self._handle, ctypes.c_void_p()
            if self._epoch == _epoch.get(self.device.device_id, 0):
                _current(self.device.device_id)
                check(lib.simdev_stream_destroy(handle), "simdev_stream_destroy")
            self._keep = []

    def __del__(self):
        try:
            self.destroy()
        except Exception:
            pass


class _Capture:
    def __init__(self, stream, graph):
        if not isinstance(graph, Graph):
            raise invalid("capture: a simpler.Graph to capture into")
        self.stream, self.graph = stream, graph

    def __enter__(self):
        if self.graph._exec.value:
            raise error(-1003, "Stream.capture", "the graph already holds a capture")
        handle = self.stream.handle
        _current(self.stream.device.device_id)
        check(lib.simdev_stream_begin_capture(handle), "simdev_stream_begin_capture")
        self.stream._capturing = self.graph
        return self.graph

    def __exit__(self, exc_type, exc, tb):
        self.stream._capturing = None
        graph = ctypes.c_void_p()
        _current(self.stream.device.device_id)
        rc = lib.simdev_stream_end_capture(self.stream.handle, ctypes.byref(graph))
        if rc or exc_type is not None:
            if rc == 0:
                lib.simdev_graph_destroy(graph)
            self.graph._keep = []
            if exc_type is None:
                check(rc, "simdev_stream_end_capture")
            return False
        self.graph._adopt(self.stream.device, graph)
        return False


class Graph:
    """What a Stream.capture recorded, instantiated for replay.

    It keeps what its captured launches use for as long as it lives. A
    launch rebound (Worker.kernel_graph_update, kernel_graph_update_call)
    replaces what it uses: the graph keeps each launch's current binding,
    and a replay keeps, on its stream until that stream's next synchronize
    (or destroy), the bindings it was launched with; so a binding no
    longer current is dropped once no replay launched with it can still
    run, and a graph rebound many times holds one binding per launch."""

    def __init__(self):
        self._graph = ctypes.c_void_p()
        self._exec = ctypes.c_void_p()
        self._keep = []
        self._bound = {}  # launch index -> what its current rebinding uses
        # Held around a replay's launch and an update's rebinding, so the
        # bindings a replay keeps are the ones it was launched with.
        self._lock = threading.Lock()
        self.device = None

    def _adopt(self, device, graph):
        self.device, self._graph = device, graph
        rc = lib.simdev_graph_instantiate(ctypes.byref(self._exec), graph)
        if rc:
            self.destroy()
            check(rc, "simdev_graph_instantiate")
        self._epoch = _epoch.get(device.device_id, 0)

    @property
    def node_count(self):
        """The captured nodes (launches, copies, memsets, host callbacks)."""
        if not self._graph.value:
            raise error(-1003, "Graph.node_count", "nothing was captured")
        count = ctypes.c_size_t()
        check(lib.simdev_graph_node_count(self._graph, ctypes.byref(count)),
              "simdev_graph_node_count")
        return count.value

    def _live_exec(self, call):
        """The executable graph's handle; InvalidState when there is none."""
        if not self._exec.value or self._epoch != _epoch.get(self.device.device_id, 0):
            raise error(-1003, call, "nothing was captured, or the device was reset")
        return self._exec

    def replay(self, stream):
        """Enqueues one replay on `stream` (simdev_graph_launch); the
        stream's synchronize reports its result."""
        with self._lock:
            exec_handle = self._live_exec("Graph.replay")
            handle = stream.handle
            _current(stream.device.device_id)
            check(lib.simdev_graph_launch(exec_handle, handle), "simdev_graph_launch")
            stream.keep((self, tuple(self._bound.values())))

    def _rebind(self, call, index, keep, update):
        """Runs update(exec handle), which raises on a refusal, and on
        success keeps `keep` as launch `index`'s current binding."""
        with self._lock:
            update(self._live_exec(call))
            self._bound[index] = keep

    def destroy(self):
        """Destroys the graph and its executable form (idempotent)."""
        live = self.device is not None and getattr(self, "_epoch", 0) == _epoch.get(
            self.device.device_id, 0)
        if self._exec.value:
            if live:
                _current(self.device.device_id)
                lib.simdev_graph_exec_destroy(self._exec)
            self._exec = ctypes.c_void_p()
        if self._graph.value:
            if live:
                lib.simdev_graph_destroy(self._graph)
            self._graph = ctypes.c_void_p()
        self._keep = []
        self._bound = {}

    def __del__(self):
        try:
            self.destroy()
        except Exception:
            pass
