"""Kernel mode: a captured launch rebound to new arguments without
recapturing (Worker.kernel_graph_launches, kernel_graph_update,
kernel_graph_update_call; docs/kernel-mode.md, "Rebinding a replay"), and
what the graph and the replays keep alive."""
import gc
import weakref

import numpy as np
import pytest

import simpler
from helpers import vector_expected, vector_image, vector_inputs, wrong
from test_kernel_mode import VectorBuffers, kernel  # noqa: F401 (kernel: a fixture)

N = 2048
UNTOUCHED = np.full(N, -1.0, np.float32)  # what VectorBuffers.write leaves in f


def captured(w, device, vid, bufs):
    """A stream and a Graph holding one launch of the vector callable on
    `bufs` (after a warm launch: the callable is loaded), `bufs`' output
    reset to UNTOUCHED."""
    stream = device.stream()
    w.kernel_launch(vid, bufs.tensors, caller_stream=stream)
    stream.synchronize()
    graph = simpler.Graph()
    with stream.capture(graph):
        w.kernel_launch(vid, bufs.tensors, caller_stream=stream)
    bufs.buffers[2].write(UNTOUCHED)
    return stream, graph


def filled(device, seed):
    """VectorBuffers holding inputs of `seed`, and the output they should give."""
    bufs = VectorBuffers(device, n=N)
    a, b = vector_inputs(n=N, seed=seed)
    bufs.write(a, b)
    return bufs, vector_expected(a, b)


def test_the_graph_counts_one_launch_of_the_worker(kernel):
    w, device, vid = kernel
    bufs, _ = filled(device, 0)
    stream, graph = captured(w, device, vid, bufs)
    assert w.kernel_graph_launches(graph) == 1, \
        "one round was captured; 0 = the round was not found, 2 = the warm launch or a " \
        "non-round node was counted"
    with pytest.raises(simpler.InvalidArgument):
        w.kernel_graph_launches(None)
    with pytest.raises(simpler.InvalidState):
        w.kernel_graph_launches(simpler.Graph())  # nothing captured


def test_an_update_moves_the_next_replay_to_b_and_leaves_a_untouched(kernel):
    w, device, vid = kernel
    buffers_a, expected_a = filled(device, 1)
    stream, graph = captured(w, device, vid, buffers_a)
    graph.replay(stream)
    stream.synchronize()
    assert wrong(buffers_a.read(), expected_a) == 0, "the captured replay did not write A's output"

    buffers_b, expected_b = filled(device, 2)
    buffers_a.buffers[2].write(UNTOUCHED)
    before = w.context_info()
    w.kernel_graph_update(graph, 0, vid, buffers_b.tensors)
    after = w.context_info()
    assert after.packets_encoded == before.packets_encoded + 1, \
        "an update encodes exactly one packet; 0 = nothing was rebound, 2 = encoded twice"
    graph.replay(stream)
    stream.synchronize()
    assert wrong(buffers_b.read(), expected_b) == 0, \
        "the replay after the update did not write B's output: it still runs the old packet"
    assert wrong(buffers_a.read(), UNTOUCHED) == 0, \
        "the replay after the update wrote A: it ran the captured binding, or both"
    assert w.context_info().packets_encoded == after.packets_encoded, \
        "a replay of a rebound launch encoded a packet"


def test_an_update_from_a_prepared_call_encodes_nothing_and_the_call_may_be_released(kernel):
    w, device, vid = kernel
    buffers_a, _ = filled(device, 3)
    stream, graph = captured(w, device, vid, buffers_a)
    buffers_c, expected_c = filled(device, 4)
    call = w.prepare(vid, buffers_c.tensors)
    before = w.context_info()
    w.kernel_graph_update_call(graph, 0, call)
    call.release()  # the launch took the call's packet
    graph.replay(stream)
    stream.synchronize()
    after = w.context_info()
    assert (after.packets_encoded, after.host_preparations) == \
        (before.packets_encoded, before.host_preparations), \
        "an update from a prepared call checked or encoded the packet again"
    assert wrong(buffers_c.read(), expected_c) == 0, \
        "the replay after the update did not write the prepared call's output"
    assert wrong(buffers_a.read(), UNTOUCHED) == 0, "the replay after the update still wrote A"
    with pytest.raises(simpler.InvalidArgument):
        w.kernel_graph_update_call(graph, 0, call)  # released
    with pytest.raises(simpler.InvalidArgument):
        w.kernel_graph_update_call(graph, 0, None)


def test_another_callable_is_prepared_incompatible_and_changes_nothing(kernel):
    w, device, vid = kernel
    other = w.kernel_prepare_callable(vector_image())  # same signature, another id
    assert other != vid, "the same image prepared again gets its own id"
    buffers_a, expected_a = filled(device, 5)
    stream, graph = captured(w, device, vid, buffers_a)
    buffers_b, _ = filled(device, 6)
    before = w.context_info()
    with pytest.raises(simpler.PreparedIncompatible) as e:
        w.kernel_graph_update(graph, 0, other, buffers_b.tensors)
    assert e.value.code == -1002, "PREPARED_INCOMPATIBLE is -1002"
    call = w.prepare(other, buffers_b.tensors)
    prepared = w.context_info()
    with pytest.raises(simpler.PreparedIncompatible):
        w.kernel_graph_update_call(graph, 0, call)
    call.release()
    assert w.context_info().packets_encoded == prepared.packets_encoded == \
        before.packets_encoded + 1, "a refused update counted a packet (only the prepare may)"
    graph.replay(stream)
    stream.synchronize()
    assert wrong(buffers_a.read(), expected_a) == 0, \
        "after the refused updates the replay no longer runs the captured binding"
    assert wrong(buffers_b.read(), UNTOUCHED) == 0, "a refused update rebound the launch"


def test_an_index_past_the_count_is_invalid_argument(kernel):
    w, device, vid = kernel
    buffers_a, expected_a = filled(device, 7)
    stream, graph = captured(w, device, vid, buffers_a)
    buffers_b, _ = filled(device, 8)
    with pytest.raises(simpler.InvalidArgument) as e:
        w.kernel_graph_update(graph, 1, vid, buffers_b.tensors)
    assert e.value.call == "simpler_kernel_mode_graph_update", \
        "index 1 of a 1-launch graph is the library's refusal, not the package's"
    with pytest.raises(simpler.InvalidArgument):
        w.kernel_graph_update(graph, -1, vid, buffers_b.tensors)
    call = w.prepare(vid, buffers_b.tensors)
    with pytest.raises(simpler.InvalidArgument) as e:
        w.kernel_graph_update_call(graph, 1, call)
    assert e.value.call == "simpler_kernel_mode_graph_update_call", \
        "index 1 of a 1-launch graph is the library's refusal, not the package's"
    call.release()
    graph.replay(stream)
    stream.synchronize()
    assert wrong(buffers_a.read(), expected_a) == 0, "a refused index rebound launch 0"
    assert wrong(buffers_b.read(), UNTOUCHED) == 0, "a refused index rebound launch 0 to B"


def test_the_graph_keeps_the_current_binding_and_a_replay_keeps_its_own_until_synchronized(kernel):
    """Tracks the Tensor objects a binding was made of (weak references);
    the test holds their DeviceBuffers itself, so a package dropping a
    binding too early fails an assertion here rather than a replay running
    on freed memory."""
    w, device, vid = kernel
    buffers_a, _ = filled(device, 9)
    stream, graph = captured(w, device, vid, buffers_a)

    buffers_b, _ = filled(device, 10)
    w.kernel_graph_update(graph, 0, vid, buffers_b.tensors)
    b_memory, b_alive = buffers_b.buffers, weakref.ref(buffers_b.tensors[2])
    del buffers_b
    gc.collect()
    assert b_alive() is not None, "the graph dropped its launch's current binding"
    graph.replay(stream)  # launched with B

    buffers_d, expected_d = filled(device, 11)
    call = w.prepare(vid, buffers_d.tensors)
    w.kernel_graph_update_call(graph, 0, call)
    call.release()
    d_memory, d_alive = buffers_d.buffers, weakref.ref(buffers_d.tensors[2])
    del buffers_d, call
    gc.collect()
    assert d_alive() is not None, "the graph dropped the prepared call's binding once released"
    assert b_alive() is not None, \
        "B was dropped while a replay launched with it was not synchronized"

    stream.synchronize()
    gc.collect()
    assert b_alive() is None, \
        "B is still held after the only replay launched with it was synchronized: " \
        "replaced bindings leak"
    assert d_alive() is not None, "the current binding went with the stream's synchronize"
    d_memory[2].write(UNTOUCHED)
    graph.replay(stream)
    stream.synchronize()
    out = np.empty(N, np.float32)
    d_memory[2].read(out)
    assert wrong(out, expected_d) == 0, "the replay did not write the prepared call's output"
    graph.destroy()
    gc.collect()
    assert d_alive() is None, "a destroyed graph still holds its current binding"
    del b_memory
