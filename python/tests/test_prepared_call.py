"""Prepared calls: Worker.prepare once, then PreparedCall.submit (program
mode) or .launch (kernel mode) many times; what is prepared once and what
each submission still reads; the lifetimes and their refusals;
Worker.context_info's counters."""
import gc
import weakref

import numpy as np
import pytest

import simpler
from helpers import N, vector_expected, vector_image, vector_inputs, wrong
from test_kernel_mode import VectorBuffers, kernel  # noqa: F401 (kernel: a fixture)


def _fill(a, b, seed):
    """Rewrites a and b in place: the prepared call holds these arrays."""
    a[:], b[:] = vector_inputs(n=len(a), seed=seed)
    return a.copy(), b.copy()


# ------------------------------------------------------------ program mode

def test_one_call_submitted_three_times_in_flight_reads_each_submits_inputs_and_prepares_once():
    with simpler.Worker(config=simpler.CallConfig(pipeline_depth=3)) as w:
        w.register(0, vector_image())
        a, b = vector_inputs()
        f = np.full(N, -1.0, np.float32)
        before = w.context_info()
        call = w.prepare(0, [a, b, f])
        prepared = w.context_info()
        assert prepared.host_preparations == before.host_preparations + 1, \
            "the prepare must run the preparation step exactly once"
        assert prepared.prepared_calls == 1, "one call is alive"
        assert prepared.packets_encoded == 0, "program mode encodes no packets"
        inputs, handles = [], []
        for s in range(3):
            inputs.append(_fill(a, b, seed=s + 1))
            handles.append(call.submit())
        assert w.context_info().unfinalized_runs == 3, \
            "each submission holds its own slot; fewer means submissions were merged"
        with pytest.raises(simpler.CapacityExceeded):
            call.submit()  # the three submissions fill pipeline_depth 3
        for i, h in enumerate(handles):
            info = h.wait()
            assert info.tasks_submitted == 5, "submission %d ran another graph" % i
            assert wrong(f, vector_expected(*inputs[i])) == 0, \
                "submission %d's output is not from the inputs as they were at its submit " \
                "(read at prepare, at a later submit, or written back at another's finalize)" % i
        after = w.context_info()
        assert after.host_preparations == prepared.host_preparations, \
            "a submission of a prepared call ran the preparation step again"
        assert after.unfinalized_runs == 0, "every submission was finalized"
        w.submit(0, [a, b, f]).wait()
        assert w.context_info().host_preparations == after.host_preparations + 1, \
            "an unprepared submit prepares once; else the counter does not count"
        call.release()
        assert w.context_info().prepared_calls == 0, "the released call is still counted alive"


def test_release_while_a_submission_is_unfinalized_raises_invalid_state_then_works(vector_worker):
    a, b = vector_inputs()
    f = np.full(N, -1.0, np.float32)
    call = vector_worker.prepare(0, [a, b, f])
    handle = call.submit()
    with pytest.raises(simpler.InvalidState) as e:
        call.release()
    assert e.value.code == -1003 and e.value.call == "simpler_release_call", \
        "the refusal is C's INVALID_STATE"
    assert vector_worker.context_info().prepared_calls == 1, "a refused release changed nothing"
    handle.wait()
    assert wrong(f, vector_expected(a, b)) == 0, "the submission's output after a refused release"
    call.release()
    assert vector_worker.context_info().prepared_calls == 0, "release after wait must release"
    call.release()  # idempotent
    with pytest.raises(simpler.InvalidArgument):
        call.submit()  # a released call, as C refuses a released pointer


def test_unregister_while_a_prepared_call_lives_raises_invalid_state(vector_worker):
    a, b = vector_inputs(seed=3)
    f = np.full(N, -1.0, np.float32)
    call = vector_worker.prepare(0, [a, b, f])
    with pytest.raises(simpler.InvalidState) as e:
        vector_worker.unregister(0)
    assert e.value.call == "simpler_unregister_callable", "C refuses: the call names the callable"
    call.submit().wait()
    assert wrong(f, vector_expected(a, b)) == 0, "the refused unregister must leave the callable loaded"
    call.release()
    vector_worker.unregister(0)
    with pytest.raises(simpler.CallableNotResident):
        vector_worker.prepare(0, [a, b, f])


def test_arrays_are_kept_alive_until_the_call_is_released_and_its_submissions_finalized(vector_worker):
    a, b = vector_inputs()
    f = np.full(N, -1.0, np.float32)
    probe = weakref.ref(a)
    call = vector_worker.prepare(0, [a, b, f])
    handle = call.submit()
    del a
    gc.collect()
    assert probe() is not None, "the IN array was collected while a submission used it"
    handle.wait()
    gc.collect()
    assert probe() is not None, "the IN array was collected while the call could still be submitted"
    call.release()
    del handle
    gc.collect()
    assert probe() is None, "the released call kept its array (a leak)"


def test_finalize_waits_out_submissions_then_releases_live_calls():
    with simpler.Worker() as w:
        w.register(0, vector_image())
        a, b = vector_inputs(seed=7)
        f = np.full(N, -1.0, np.float32)
        call = w.prepare(0, [a, b, f])
        call.submit()  # never waited: finalize waits it out
        w.finalize()
        assert wrong(f, vector_expected(a, b)) == 0, "finalize must deliver the submission's output"
        info = w.context_info()
        assert (info.prepared_calls, info.unfinalized_runs) == (0, 0), \
            "finalize left a call or a run alive"
        assert w.committed_device_memory == 0, "finalize_device ran: no device memory is held"
        call.release()  # released by finalize: nothing left to do
        with pytest.raises(simpler.InvalidArgument):
            call.submit()


def test_a_call_used_as_a_context_manager_is_released_at_exit(vector_worker):
    a, b = vector_inputs(seed=2)
    f = np.full(N, -1.0, np.float32)
    with vector_worker.prepare(0, [a, b, f]) as call:
        call.submit().wait()
        assert vector_worker.context_info().prepared_calls == 1, "the call is alive inside"
    assert vector_worker.context_info().prepared_calls == 0, "the call outlived its with block"
    assert wrong(f, vector_expected(a, b)) == 0, "the submission's output inside the block"


# ------------------------------------------------------------- kernel mode

def test_one_kernel_call_launched_100_times_encodes_nothing_again_and_is_exact(kernel):
    w, device, vid = kernel
    stream = device.stream()
    bufs = VectorBuffers(device, n=1024)
    before = w.context_info()
    call = w.prepare(vid, bufs.tensors)
    prepared = w.context_info()
    assert (prepared.host_preparations, prepared.packets_encoded) == \
        (before.host_preparations + 1, before.packets_encoded + 1), \
        "the prepare must validate and encode exactly once"
    assert (prepared.prepared_calls, prepared.unfinalized_runs) == (1, 0), \
        "one call alive; a kernel context has no runs"
    for r in range(100):
        a, b = vector_inputs(n=1024, seed=r)
        bufs.write(a, b)
        call.launch(stream)
        if r == 99:
            call.release()  # allowed with the round queued: the launch took its packet
        stream.synchronize()
        assert wrong(bufs.read(), vector_expected(a, b)) == 0, \
            "launch %d did not compute from the buffers' fresh contents" % r
    after = w.context_info()
    assert (after.host_preparations, after.packets_encoded) == \
        (prepared.host_preparations, prepared.packets_encoded), \
        "a launch of a prepared call validated or encoded again"
    assert after.prepared_calls == 0, "the released call is still counted alive"
    w.kernel_launch(vid, bufs.tensors, caller_stream=stream)
    stream.synchronize()
    assert w.context_info().packets_encoded == after.packets_encoded + 1, \
        "an unprepared launch encodes one packet; else the counter does not count"


def test_a_captured_launch_of_a_prepared_call_replays_with_fresh_inputs(kernel):
    w, device, vid = kernel
    stream = device.stream()
    bufs = VectorBuffers(device, n=2048)
    call = w.prepare(vid, bufs.tensors)
    a, b = vector_inputs(n=2048)
    bufs.write(a, b)
    call.launch(stream)  # warm: the callable is loaded
    stream.synchronize()
    graph = simpler.Graph()
    with stream.capture(graph):
        call.launch(stream)
    assert graph.node_count > 0, "the capture recorded the prepared launch's nodes"
    call.release()  # the graph holds the packet it recorded
    counted = w.context_info()
    for r in range(20):
        a, b = vector_inputs(n=2048, seed=r + 1)
        bufs.write(a, b)
        graph.replay(stream)
        stream.synchronize()
        assert wrong(bufs.read(), vector_expected(a, b)) == 0, \
            "replay %d did not compute from the buffers' fresh contents" % r
    after = w.context_info()
    assert (after.host_preparations, after.packets_encoded) == \
        (counted.host_preparations, counted.packets_encoded), "a replay prepared or encoded again"


def test_each_mode_refuses_the_others_calls_and_kernel_mode_host_arrays(kernel):
    w, device, vid = kernel
    stream = device.stream()
    bufs = VectorBuffers(device, n=64)
    with pytest.raises(simpler.InvalidArgument):
        w.prepare(vid, [np.zeros(64, np.float32)] + bufs.tensors[1:])
    assert w.context_info().prepared_calls == 0, "a refused prepare left a call"
    call = w.prepare(vid, bufs.tensors)
    with pytest.raises(simpler.InvalidState):
        call.submit()  # a program-mode submission on a kernel worker
    with pytest.raises(simpler.InvalidArgument):
        call.launch(None)
    call.release()


def test_a_program_call_refuses_a_kernel_launch(vector_worker):
    a, b = vector_inputs()
    call = vector_worker.prepare(0, [a, b, np.empty(N, np.float32)])
    with pytest.raises(simpler.InvalidState):
        call.launch(simpler.Device(0).stream())  # a kernel-mode launch on a program worker
    call.release()


def test_under_host_build_graph_a_prepared_call_builds_once_and_ships_its_graph_after():
    with simpler.Worker(config=simpler.CallConfig(pipeline_depth=3, runtime=1)) as w:
        w.register(0, vector_image())
        a, b = vector_inputs()
        f = np.full(N, -1.0, np.float32)
        info = w.context_info()
        assert info.runtime == 1, "the config's runtime was not taken (0: TMR)"
        assert info.host_orchestration_loads == 1, \
            "host_build_graph loads the orchestration in this process once a registration"
        with w.prepare(0, [a, b, f]) as call:
            for s in range(4):
                inputs = _fill(a, b, seed=s + 1)
                call.submit().wait()
                assert wrong(f, vector_expected(*inputs)) == 0, \
                    "submission %d's output is not from its own inputs" % s
        after = w.context_info()
        assert (after.host_builds, after.host_builds_skipped) == (1, 3), \
            "the call builds its graph at its first submission and ships it after; " \
            "(4, 0) means it was never kept, (0, 4) that the counters do not count"
