"""Every error class, raised by the call that should raise it, with its code
and name; wrong arguments refused before anything is enqueued."""
import ctypes

import numpy as np
import pytest

import simpler
from simpler._lib import lib
from helpers import N, offset_image, vector_expected, vector_inputs, wrong

# enum simdev_op_kind (simdev_fault.h): test-only fault injection.
OP_STREAM_CREATE, OP_MALLOC, OP_SYNC = 0, 4, 10

CODES = {
    "Internal": (-1000, "INTERNAL"),
    "Unsupported": (-1001, "UNSUPPORTED"),
    "PreparedIncompatible": (-1002, "PREPARED_INCOMPATIBLE"),
    "InvalidState": (-1003, "INVALID_STATE"),
    "InvalidArgument": (-1004, "INVALID_ARGUMENT"),
    "CallableCountExceeded": (-1005, "CALLABLE_COUNT_EXCEEDED"),
    "CallableBytesExceeded": (-1006, "CALLABLE_BYTES_EXCEEDED"),
    "CallableNotResident": (-1007, "CALLABLE_NOT_RESIDENT"),
    "CapacityExceeded": (-1008, "CAPACITY_EXCEEDED"),
    "DependencyFailed": (-1009, "DEPENDENCY_FAILED"),
    "PeerLost": (-1010, "PEER_LOST"),
    "DeviceLost": (-1100, "DEVICE_LOST"),
    "OutOfDeviceMemory": (-1101, "OUT_OF_DEVICE_MEMORY"),
    "CaptureUnsupported": (-1103, "CAPTURE_UNSUPPORTED"),
    "CaptureInvalidated": (-1104, "CAPTURE_INVALIDATED"),
    "CaptureUnjoined": (-1105, "CAPTURE_UNJOINED"),
    "Timeout": (-1106, "TIMEOUT"),
    "OutOfHostMemory": (-1107, "OUT_OF_HOST_MEMORY"),
}


@pytest.fixture(autouse=True)
def _no_fault_left():
    yield
    lib.simdev_fault_clear(0)


def expect(cls_name, excinfo):
    code, name = CODES[cls_name]
    e = excinfo.value
    assert type(e) is getattr(simpler, cls_name), "raised %s, not %s" % (type(e).__name__, cls_name)
    assert (e.code, e.name) == (code, name), "the code or name does not match status.h"
    assert e.message == lib.simpler_strerror(code).decode(), "the message is not simpler_strerror's"
    assert isinstance(e, simpler.SimplerError)


def test_every_public_code_of_status_h_has_its_class():
    for cls_name, (code, name) in CODES.items():
        cls = getattr(simpler, cls_name)
        e = simpler.errors.error(code, "call")
        assert type(e) is cls and e.name == name, "%d maps to %s" % (code, type(e).__name__)
    for code in (-1, -99, -100, -200, -321, -999):
        assert type(simpler.errors.error(code)) is simpler.RunFailed, "run codes are RunFailed"
    assert not hasattr(simpler, "NotReady"), "NOT_READY is never raised, so it has no class"


def test_unsupported_level():
    with pytest.raises(simpler.Unsupported) as e:
        simpler.Worker(level=3)
    expect("Unsupported", e)


def test_a_config_c_refuses_raises_invalid_argument_at_worker():
    with pytest.raises(simpler.InvalidArgument) as e:
        simpler.Worker(config=simpler.CallConfig(pipeline_depth=17))
    expect("InvalidArgument", e)
    with pytest.raises(simpler.InvalidArgument) as e:
        simpler.Worker(config=simpler.CallConfig(run_capacity=simpler.RunConfig(task_window=3)))
    expect("InvalidArgument", e)
    with pytest.raises(simpler.InvalidArgument) as e:  # would wrap to 4 in a uint32
        simpler.Worker(config=simpler.CallConfig(run_capacity=simpler.RunConfig(task_window=2**32 + 4)))
    expect("InvalidArgument", e)


def test_unknown_config_keywords_raise_type_error():
    with pytest.raises(TypeError):
        simpler.RunConfig(task_windows=8)
    with pytest.raises(TypeError):
        simpler.CallConfig(depth=2)


def test_config_defaults_are_the_libraries():
    rc = simpler.RunConfig()
    assert rc.task_window == (1024,) * 4 and rc.heap_bytes == (16 << 20,) * 4
    assert (rc.dep_pool, rc.tensormap_buckets, rc.tensormap_entries) == ((8192,) * 4, 4096, 16384)
    assert (rc.max_fanin, rc.ring_timeout_ms, rc.sched_timeout_ms) == (1024, 1000, 10000)
    cc = simpler.CallConfig()
    assert (cc.pipeline_depth, cc.max_callables, cc.callable_bytes) == (4, 64, 256 << 20)
    assert cc.run_capacity == simpler.RunConfig()


def test_invalid_state_registering_an_id_in_use(worker):
    worker.register(1, offset_image())
    with pytest.raises(simpler.InvalidState) as e:
        worker.register(1, offset_image())
    expect("InvalidState", e)


def test_invalid_state_after_close_and_across_modes():
    with simpler.Worker() as w:
        with pytest.raises(simpler.InvalidState) as e:
            w.kernel_prepare_callable(offset_image())
        expect("InvalidState", e)
        with pytest.raises(simpler.InvalidState) as e:  # the device has its program context
            simpler.Worker(device_id=0)
        expect("InvalidState", e)
    w = simpler.Worker()
    w.close()
    w.close()  # idempotent
    with pytest.raises(simpler.InvalidState) as e:
        w.register(1, offset_image())
    expect("InvalidState", e)


def test_callable_not_resident(worker):
    with pytest.raises(simpler.CallableNotResident) as e:
        worker.run(5, [np.zeros(4, np.float32)])
    expect("CallableNotResident", e)
    with pytest.raises(simpler.CallableNotResident) as e:
        worker.unregister(5)
    expect("CallableNotResident", e)


def test_callable_count_and_bytes_exceeded():
    with simpler.Worker(config=simpler.CallConfig(max_callables=1)) as w:
        w.register(0, offset_image())
        with pytest.raises(simpler.CallableCountExceeded) as e:
            w.register(1, offset_image())
        expect("CallableCountExceeded", e)
    with simpler.Worker(config=simpler.CallConfig(callable_bytes=1024)) as w:
        with pytest.raises(simpler.CallableBytesExceeded) as e:
            w.register(0, offset_image())
        expect("CallableBytesExceeded", e)


def test_capacity_exceeded_for_a_run_config_larger_than_the_arena(worker):
    worker.register(1, offset_image())
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(simpler.CapacityExceeded) as e:
        worker.run(1, [x, y], [0], config=simpler.RunConfig(task_window=2048))
    expect("CapacityExceeded", e)


def test_out_of_device_memory_from_malloc():
    with pytest.raises(simpler.OutOfDeviceMemory) as e:
        simpler.Device(0).malloc(1 << 40)
    expect("OutOfDeviceMemory", e)


@pytest.mark.parametrize("cls_name", ["DeviceLost", "Internal", "PreparedIncompatible"])
def test_a_device_code_from_malloc_raises_its_class(cls_name):
    assert lib.simdev_fault_inject(0, OP_MALLOC, 1, CODES[cls_name][0]) == 0
    with pytest.raises(getattr(simpler, cls_name)) as e:
        simpler.Device(0).malloc(64)
    expect(cls_name, e)


def test_timeout_from_a_stream_synchronize():
    stream = simpler.Device(0).stream()
    assert lib.simdev_fault_inject(0, OP_SYNC, 1, -1106) == 0
    with pytest.raises(simpler.Timeout) as e:
        stream.synchronize()
    expect("Timeout", e)
    stream.synchronize()  # the fault fired once: the stream works again


def test_out_of_host_memory_from_stream_creation():
    device = simpler.Device(0)
    assert lib.simdev_fault_inject_host(1) == 0
    with pytest.raises(simpler.OutOfHostMemory) as e:
        device.stream()
    expect("OutOfHostMemory", e)
    device.stream().destroy()  # a retry succeeds


def test_capture_unsupported_then_invalidated():
    device = simpler.Device(0)
    stream = device.stream()
    graph = simpler.Graph()
    with pytest.raises(simpler.CaptureInvalidated) as outer:
        with stream.capture(graph):
            with pytest.raises(simpler.CaptureUnsupported) as e:
                device.malloc(64)  # forbidden while capturing: invalidates the capture
            expect("CaptureUnsupported", e)
    expect("CaptureInvalidated", outer)
    with pytest.raises(simpler.InvalidState):
        graph.replay(stream)  # nothing was captured


def test_capture_unjoined_from_a_fork_that_never_joins():
    # The fork uses simdev's events, which the package does not wrap: the
    # test calls them through ctypes.
    p, pp = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
    for name, args in (("simdev_event_create", [pp]), ("simdev_event_destroy", [p]),
                       ("simdev_event_record", [p, p]), ("simdev_stream_wait_event", [p, p]),
                       ("simdev_memset_async", [p, ctypes.c_int, ctypes.c_size_t, p])):
        getattr(lib, name).argtypes, getattr(lib, name).restype = args, ctypes.c_int
    device = simpler.Device(0)
    origin, side = device.stream(), device.stream()
    buf = device.malloc(64)
    event = ctypes.c_void_p()
    assert lib.simdev_event_create(ctypes.byref(event)) == 0
    graph = simpler.Graph()
    with pytest.raises(simpler.CaptureUnjoined) as e:
        with origin.capture(graph):
            assert lib.simdev_event_record(event, origin.handle) == 0
            assert lib.simdev_stream_wait_event(side.handle, event) == 0  # side joins the capture
            assert lib.simdev_memset_async(ctypes.c_void_p(buf.address), 0, 64, side.handle) == 0
            # ... and never joins back into origin
    expect("CaptureUnjoined", e)
    assert lib.simdev_event_destroy(event) == 0
    side.synchronize()
    origin.synchronize()


@pytest.mark.parametrize("bad, why", [
    (lambda: [np.zeros(4, np.complex64), np.zeros(4, np.float32)], "a dtype simpler lacks"),
    (lambda: [np.zeros(4, np.float32).astype(">f4"), np.zeros(4, np.float32)], "big-endian"),
    (lambda: [np.float32(1.0), np.zeros(4, np.float32)], "0-d array"),
    (lambda: [np.zeros((1,) * 6, np.float32), np.zeros(4, np.float32)], "6 dims"),
    (lambda: [np.zeros((4, 0), np.float32), np.zeros(4, np.float32)], "an empty dim"),
    (lambda: [np.zeros(4, np.float32)], "too few tensors"),
    (lambda: [object(), np.zeros(4, np.float32)], "not an array"),
])
def test_bad_arguments_raise_invalid_argument_before_anything_is_enqueued(worker, bad, why):
    worker.register(1, offset_image())
    with pytest.raises(simpler.InvalidArgument) as e:
        worker.submit(1, bad(), [0])
    expect("InvalidArgument", e)
    assert worker.committed_device_memory == _idle(worker), "a refused call left staging behind (%s)" % why
    assert len(worker._runs) == 0, "a refused submit left a run (%s)" % why
    _still_works(worker)


def _idle(worker):
    return worker.committed_device_memory


def _still_works(worker):
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    worker.run(1, [x, y], [np.float32(2.0)])
    assert wrong(y, x + 2) == 0, "the worker must still work after a refused call"


def test_a_read_only_array_is_refused_as_out_but_accepted_as_in(worker):
    worker.register(1, offset_image())
    x = np.arange(4, dtype=np.float32)
    ro = np.zeros(4, np.float32)
    ro.setflags(write=False)
    idle = worker.committed_device_memory
    with pytest.raises(simpler.InvalidArgument) as e:
        worker.run(1, [x, ro], [0])
    expect("InvalidArgument", e)
    assert "read-only" in str(e.value)
    assert worker.committed_device_memory == idle
    y = np.zeros(4, np.float32)
    x.setflags(write=False)
    worker.run(1, [x, y], [np.float32(1.0)])
    assert wrong(y, x + 1) == 0, "a read-only IN array must be accepted"


def test_misaligned_strides_and_scalars_out_of_range_are_refused(worker):
    worker.register(1, offset_image())
    x = np.zeros(4, np.float32)
    y = np.zeros(4, np.float32)
    # A 2-byte stride on 4-byte elements: not whole elements.
    bad = np.lib.stride_tricks.as_strided(np.zeros(8, np.float32), shape=(4,), strides=(2,))
    with pytest.raises(simpler.InvalidArgument):
        worker.run(1, [bad, y], [0])
    with pytest.raises(simpler.InvalidArgument):
        worker.run(1, [x, y], [1 << 64])
    with pytest.raises(simpler.InvalidArgument):
        worker.run(1, [x, y], ["1"])
    _still_works(worker)


def test_buffer_protocol_objects_are_tensors(worker):
    import array
    worker.register(1, offset_image())
    x = array.array("f", [1.0, 2.0, 3.0, 4.0])
    y = array.array("f", [0.0] * 4)
    worker.run(1, [x, y], [np.float32(0.5)])
    assert list(y) == [1.5, 2.5, 3.5, 4.5], "array.array is read through the buffer protocol"
    with pytest.raises(simpler.InvalidArgument):
        worker.run(1, [x, bytes(16)], [0])  # bytes are read-only: not an OUT


def test_the_vector_example_still_exact_after_every_refusal(vector_worker):
    a, b = vector_inputs()
    for bad in ([a, b], [a, b, np.zeros(N, np.complex64)]):
        with pytest.raises(simpler.InvalidArgument):
            vector_worker.run(0, bad)
    f = np.full(N, -1.0, np.float32)
    vector_worker.run(0, [a, b, f])
    assert wrong(f, vector_expected(a, b)) == 0
