"""Kernel mode: the framework's device, buffers and streams; launches from
two threads; capture and replay; the GIL released while blocked."""
import ctypes
import threading

import numpy as np
import pytest

import simpler
from simpler._lib import lib
from helpers import N, fail_image, offset_image, vector_expected, vector_image, vector_inputs, wrong


@pytest.fixture
def kernel():
    """A kernel-mode worker on device 0, its Device, and the vector callable's id."""
    device = simpler.Device(0)
    with simpler.Worker(level=2, device_id=0, execution_mode="kernel") as w:
        yield w, device, w.kernel_prepare_callable(vector_image())


class VectorBuffers:
    """a, b, f on the device, and their tensors."""

    def __init__(self, device, n=N):
        self.n = n
        self.buffers = [device.malloc(4 * n) for _ in range(3)]
        self.tensors = [buf.tensor((n,), simpler.DataType.F32) for buf in self.buffers]

    def write(self, a, b):
        self.buffers[0].write(a)
        self.buffers[1].write(b)
        self.buffers[2].write(np.full(self.n, -1.0, np.float32))

    def read(self):
        f = np.empty(self.n, np.float32)
        self.buffers[2].read(f)
        return f


def test_kernel_mode_is_supported_and_the_vector_example_is_exact(kernel):
    w, device, vid = kernel
    assert w.kernel_mode_supported is True, "simdev's default device runs kernel mode"
    assert vid == 0, "the first prepared callable's id is 0"
    assert w.kernel_prepare_callable(vector_image()) == 1, "the same image again gets a new id"
    stream = device.stream()
    bufs = VectorBuffers(device)
    a, b = vector_inputs()
    bufs.write(a, b)
    w.kernel_launch(vid, bufs.tensors, caller_stream=stream)
    stream.synchronize()
    assert wrong(bufs.read(), vector_expected(a, b)) == 0, "the round's output is not exact"


def test_a_failing_round_makes_its_stream_raise_run_failed_and_the_next_round_works(kernel):
    w, device, vid = kernel
    fid = w.kernel_prepare_callable(fail_image())
    stream = device.stream()
    x, y = device.malloc(16), device.malloc(16)
    w.kernel_launch(fid, [x.tensor((4,), simpler.DataType.F32), y.tensor((4,), "<f4")],
                    caller_stream=stream)
    with pytest.raises(simpler.RunFailed) as e:
        stream.synchronize()
    assert e.value.code == -321, "the stream carries the round's code"
    bufs = VectorBuffers(device)
    a, b = vector_inputs(seed=5)
    bufs.write(a, b)
    w.kernel_launch(vid, bufs.tensors, caller_stream=stream)
    stream.synchronize()
    assert wrong(bufs.read(), vector_expected(a, b)) == 0, "the round after a failure must be exact"


def test_launches_on_two_streams_from_two_threads_are_each_exact(kernel):
    w, device, vid = kernel
    rounds = 20
    errors, results = [], {}
    start = threading.Barrier(2)

    def launcher(lane):
        try:
            stream = device.stream()
            bufs = VectorBuffers(device, n=1024)
            start.wait()
            for r in range(rounds):
                a, b = vector_inputs(n=1024, seed=lane * 1000 + r)
                bufs.write(a, b)
                w.kernel_launch(vid, bufs.tensors, caller_stream=stream)
                stream.synchronize()
                results[(lane, r)] = wrong(bufs.read(), vector_expected(a, b))
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=launcher, args=(lane,)) for lane in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], "a launcher thread failed: %r" % errors
    assert len(results) == 2 * rounds, "every round of both threads ran"
    assert sum(results.values()) == 0, "some round's output was not its own inputs' result"


def test_one_captured_launch_replayed_100_times_with_fresh_inputs_is_exact_each_time(kernel):
    w, device, vid = kernel
    stream = device.stream()
    bufs = VectorBuffers(device, n=2048)
    a, b = vector_inputs(n=2048)
    bufs.write(a, b)
    w.kernel_launch(vid, bufs.tensors, caller_stream=stream)  # warm: the callable is loaded
    stream.synchronize()
    graph = simpler.Graph()
    with stream.capture(graph):
        w.kernel_launch(vid, bufs.tensors, caller_stream=stream)
    assert graph.node_count > 0, "the capture recorded the launch's nodes"
    for r in range(100):
        a, b = vector_inputs(n=2048, seed=r + 1)
        bufs.write(a, b)
        graph.replay(stream)
        stream.synchronize()
        assert wrong(bufs.read(), vector_expected(a, b)) == 0, \
            "replay %d did not compute from the buffers' fresh contents" % r


def test_device_tensors_pass_through_program_mode_views_and_offsets():
    device = simpler.Device(0)
    with simpler.Worker() as w:
        w.register(1, offset_image())
        x = device.malloc(64)
        y = device.malloc(64)
        x.write(np.arange(16, dtype=np.float32))
        y.write(np.full(16, -1.0, np.float32))
        xt = x.tensor((4,), simpler.DataType.F32, strides=(-2,), offset=9)  # 9, 7, 5, 3
        yt = y.tensor((4,), simpler.DataType.F32, strides=(3,), offset=1)   # 1, 4, 7, 10
        w.run(1, [xt, yt], [np.float32(0.5)])
        out = np.empty(16, np.float32)
        y.read(out)
        expect = np.full(16, -1.0, np.float32)
        expect[[1, 4, 7, 10]] = np.array([9, 7, 5, 3], np.float32) + 0.5
        assert wrong(out, expect) == 0, "a device view's elements, and only those, are written"


def test_device_buffer_refusals_and_lifetime():
    device = simpler.Device(0)
    buf = device.malloc(64)
    with pytest.raises(simpler.InvalidArgument):
        buf.write(np.zeros(32, np.float32))      # 128 bytes into 64
    with pytest.raises(simpler.InvalidArgument):
        buf.write(np.zeros(32, np.float32)[::2])  # non-contiguous: forbidden for copies
    ro = np.zeros(4, np.float32)
    ro.setflags(write=False)
    with pytest.raises(simpler.InvalidArgument):
        buf.read(ro)                               # a read-only array cannot be read into
    with pytest.raises(simpler.InvalidArgument):
        buf.tensor((17,), simpler.DataType.F32)    # 68 bytes: outside the buffer
    with pytest.raises(simpler.InvalidArgument):
        buf.tensor((4,), simpler.DataType.F32, strides=(-1,))  # before the buffer's start
    with pytest.raises(simpler.InvalidArgument):
        buf.tensor((4,), "complex")
    before = device.memory_in_use
    buf.free()
    assert device.memory_in_use == before - 64, "free returns the buffer's bytes"
    buf.free()  # idempotent
    with pytest.raises(simpler.InvalidState):
        buf.write(np.zeros(4, np.float32))
    again = device.malloc(64)
    del again  # freed when collected
    assert device.memory_in_use == before - 64, "a collected buffer is freed"


def test_kernel_launch_refuses_host_arrays_and_bad_counts_before_enqueueing(kernel):
    w, device, vid = kernel
    stream = device.stream()
    bufs = VectorBuffers(device, n=64)
    with pytest.raises(simpler.InvalidArgument):
        w.kernel_launch(vid, [np.zeros(64, np.float32)] + bufs.tensors[1:], caller_stream=stream)
    with pytest.raises(simpler.InvalidArgument):
        w.kernel_launch(vid, bufs.tensors[:2], caller_stream=stream)
    with pytest.raises(simpler.InvalidArgument):
        w.kernel_launch(vid, bufs.tensors, caller_stream=None)
    with pytest.raises(simpler.CallableNotResident) as e:
        w.kernel_launch(9, bufs.tensors, caller_stream=stream)
    assert e.value.code == -1007
    with pytest.raises(simpler.InvalidState):
        w.run(0, bufs.tensors)  # a program-mode call on a kernel worker
    stream.synchronize()  # nothing was enqueued: nothing fails
    a, b = vector_inputs(n=64)
    bufs.write(a, b)
    w.kernel_launch(vid, bufs.tensors, caller_stream=stream)
    stream.synchronize()
    assert wrong(bufs.read(), vector_expected(a, b)) == 0, "the worker still works"


# ------------------------------------------------------------------ GIL

_HOST_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


def test_two_threads_blocked_in_synchronize_release_the_gil_and_progress_together():
    """Each stream holds a host callback written in Python that waits for the
    other's: they can only both finish while the two threads that
    synchronize the streams are blocked in C without the GIL. If either
    synchronize kept the GIL, neither callback could run and the barrier
    would time out (the timeout bounds a failure; it orders nothing)."""
    lib.simdev_launch_host_func.argtypes = [ctypes.c_void_p, _HOST_FN, ctypes.c_void_p]
    lib.simdev_launch_host_func.restype = ctypes.c_int
    device = simpler.Device(0)
    streams = [device.stream(), device.stream()]
    meeting = threading.Barrier(2, timeout=60)
    entering = [threading.Event(), threading.Event()]
    met = []

    def callback(_):
        # Not before both threads are calling synchronize: from then on,
        # this Python code runs only if neither of them holds the GIL.
        for e in entering:
            assert e.wait(60)
        meeting.wait()
        met.append(threading.get_ident())
        return 0

    callbacks = [_HOST_FN(callback) for _ in streams]
    outcome = {}

    def synchronizer(i):
        try:
            entering[i].set()
            streams[i].synchronize()
            outcome[i] = "ok"
        except BaseException as e:
            outcome[i] = e

    threads = [threading.Thread(target=synchronizer, args=(i,)) for i in range(2)]
    for s, cb in zip(streams, callbacks):
        assert lib.simdev_launch_host_func(s.handle, cb, None) == 0
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcome == {0: "ok", 1: "ok"}, "both synchronizes must return cleanly: %r" % outcome
    assert len(met) == 2, "both callbacks met while both threads were blocked"


def test_device_synchronize_raises_a_failed_round_and_graph_destroy_is_idempotent(kernel):
    w, device, vid = kernel
    fid = w.kernel_prepare_callable(fail_image())
    stream = device.stream()
    x, y = device.malloc(16), device.malloc(16)
    tensors = [x.tensor((4,), simpler.DataType.F32), y.tensor((4,), simpler.DataType.F32)]
    w.kernel_launch(fid, tensors, caller_stream=stream)
    with pytest.raises(simpler.RunFailed) as e:
        device.synchronize()
    assert e.value.code == -321, "the device sync returns the first carried stream error"
    device.synchronize()  # cleared by the sync that reported it
    graph = simpler.Graph()
    with stream.capture(graph):
        w.kernel_launch(fid, tensors, caller_stream=stream)
    graph.replay(stream)
    with pytest.raises(simpler.RunFailed) as e:
        stream.synchronize()
    assert e.value.code == -321, "a replayed failing round fails its stream"
    graph.destroy()
    graph.destroy()
    with pytest.raises(simpler.InvalidState):
        graph.replay(stream)
    assert [dt.itemsize for dt in simpler.DataType] == [4, 2, 2, 8, 1, 2, 4, 8, 1, 2, 4, 8]
