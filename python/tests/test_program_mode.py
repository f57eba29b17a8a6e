"""Program mode: the examples from Python, strided host views, run-ahead,
failing runs."""
import numpy as np
import pytest

import simpler
from helpers import (N, fail_image, matmul_image, offset_image, vector_expected,
                     vector_inputs, wrong)


def test_vector_example_runs_exact_with_its_five_tasks_and_six_edges(vector_worker):
    a, b = vector_inputs()
    f = np.full(N, -1.0, np.float32)
    info = vector_worker.run(0, [a, b, f])
    assert wrong(f, vector_expected(a, b)) == 0, "f is not the host's exact result: staging or the graph is wrong"
    assert info == simpler.RunInfo(status=0, tasks_submitted=5, tasks_completed=5, edges=6), \
        "other counts mean the graph the runtime built changed"


def test_matmul_example_equals_numpy_product(worker):
    rng = np.random.default_rng(2024)
    a = rng.integers(-4, 5, size=(256, 256)).astype(np.float32)
    b = rng.integers(-4, 5, size=(256, 256)).astype(np.float32)
    c = np.full((256, 256), -1.0, np.float32)
    worker.register(3, matmul_image())
    info = worker.run(3, [a, b, c], [64])
    assert wrong(c, a @ b) == 0, "C differs from numpy's product (integers: exact in f32)"
    assert (info.tasks_submitted, info.edges) == (64, 48), \
        "64 tile tasks and 3 K-chain edges per tile; else the runtime saw false or missing overlap"


def test_transposed_and_negative_stride_views_are_staged_exactly(worker):
    rng = np.random.default_rng(7)
    worker.register(3, matmul_image())
    a_store = rng.integers(-4, 5, size=(8, 8)).astype(np.float32)
    b_store = rng.integers(-4, 5, size=(8, 8)).astype(np.float32)
    a = a_store.T                # transposed: strides (1, 8)
    b = b_store[::-1, ::-1]      # negative strides in both dims
    c_store = np.full((16, 8), -1.0, np.float32)
    c = c_store[::2]             # an OUT view with gaps: every other row
    worker.run(3, [a, b, c], [4])
    assert wrong(c, a @ b) == 0, "a strided view was read or written at the wrong elements"
    assert wrong(c_store[1::2], np.full((8, 8), -1.0, np.float32)) == 0, \
        "the gaps of the OUT view were overwritten: finalize copied more than the view"


def test_strided_one_dimensional_views_in_and_out_are_exact(worker):
    worker.register(1, offset_image())
    x_store = np.arange(40, dtype=np.float32)
    x = x_store[30:0:-3]                     # negative stride, inside the buffer
    y_store = np.full(40, -1.0, np.float32)
    y = y_store[1::4]                        # 10 elements, stride 4
    worker.run(1, [x, y], [np.float32(0.5)])
    assert wrong(y, x + np.float32(0.5)) == 0, "a strided element was read or written wrongly"
    untouched = np.delete(y_store, np.arange(1, 40, 4))
    assert wrong(untouched, np.full(30, -1.0, np.float32)) == 0, "bytes between the view's elements changed"


def test_two_views_of_one_array_share_one_buffer(worker):
    worker.register(1, offset_image())
    store = np.arange(16, dtype=np.float32)
    x, y = store[0::2], store[1::2]          # interleaved views: their extents overlap
    worker.run(1, [x, y], [np.float32(100.0)])
    assert wrong(store[1::2], np.arange(0, 16, 2, dtype=np.float32) + 100) == 0, \
        "the odd elements must be the even ones + 100"
    assert wrong(store[0::2], np.arange(0, 16, 2, dtype=np.float32)) == 0, "the IN view changed"


def test_four_submits_in_flight_waited_out_of_order_are_each_exact(vector_worker):
    inputs = [vector_inputs(seed=s) for s in range(4)]
    outs = [np.full(N, -1.0, np.float32) for _ in range(4)]
    handles = [vector_worker.submit(0, [a, b, f]) for (a, b), f in zip(inputs, outs)]
    for i in (2, 0, 3, 1):
        info = handles[i].wait()
        assert info.tasks_submitted == 5, "run %d reported another graph" % i
        assert wrong(outs[i], vector_expected(*inputs[i])) == 0, \
            "run %d's output is not its own inputs' result" % i
    assert all(h.done() for h in handles), "a waited run must report done"
    assert handles[0].wait() == handles[0].wait(), "a second wait must return the same RunInfo"


def test_a_fifth_submit_past_the_pipeline_depth_raises_capacity_exceeded(vector_worker):
    a, b = vector_inputs()
    handles = [vector_worker.submit(0, [a, b, np.empty(N, np.float32)]) for _ in range(4)]
    with pytest.raises(simpler.CapacityExceeded) as e:
        vector_worker.submit(0, [a, b, np.empty(N, np.float32)])
    assert (e.value.code, e.value.name) == (-1008, "CAPACITY_EXCEEDED")
    for h in handles:
        h.wait()
    f = np.full(N, -1.0, np.float32)
    vector_worker.run(0, [a, b, f])
    assert wrong(f, vector_expected(a, b)) == 0, "the worker must still run after a refused submit"


def test_a_failing_kernel_raises_run_failed_321_and_the_next_run_is_exact(vector_worker):
    vector_worker.register(2, fail_image())
    x = np.arange(8, dtype=np.float32)
    y = np.full(8, -1.0, np.float32)
    with pytest.raises(simpler.RunFailed) as e:
        vector_worker.run(2, [x, y])
    assert e.value.code == -321, "the run's status is the kernel's code, negated"
    assert e.value.name == "kernel-reported error"
    assert wrong(y, np.full(8, -1.0, np.float32)) == 0, "a failed run must deliver no output"
    handle = vector_worker.submit(2, [x, y])
    with pytest.raises(simpler.RunFailed) as e:
        handle.wait()
    assert e.value.code == -321, "submit's wait reports the same status"
    with pytest.raises(simpler.RunFailed):
        handle.wait()  # the same failure, again
    a, b = vector_inputs()
    f = np.full(N, -1.0, np.float32)
    vector_worker.run(0, [a, b, f])
    assert wrong(f, vector_expected(a, b)) == 0, "a run's failure must not poison the next run"


def test_done_is_false_never_raises_not_ready_and_true_after_completion(vector_worker):
    a, b = vector_inputs()
    f = np.empty(N, np.float32)
    handle = vector_worker.submit(0, [a, b, f])
    states = {handle.done() for _ in range(3)}   # no NOT_READY escapes as an exception
    assert states <= {False, True}
    handle.wait()
    assert handle.done() is True


def test_arrays_of_a_submitted_run_are_kept_alive_until_it_is_finalized(vector_worker):
    import gc
    import weakref
    a, b = vector_inputs()
    f = np.full(N, -1.0, np.float32)
    probe = weakref.ref(a)
    handle = vector_worker.submit(0, [a, b, f])
    del a
    gc.collect()
    assert probe() is not None, "the IN array was collected while its run was held"
    handle.wait()
    del handle
    gc.collect()
    assert probe() is None, "the run kept its array after it was finalized (a leak)"


def test_unregister_then_register_again_and_finalize_releases_every_byte():
    with simpler.Worker() as w:
        idle = w.committed_device_memory
        w.register(1, offset_image())
        assert w.committed_device_memory > idle, "a registered callable holds device memory"
        w.unregister(1)
        with pytest.raises(simpler.CallableNotResident):
            w.run(1, [np.zeros(4, np.float32), np.zeros(4, np.float32)], [0])
        w.register(1, offset_image())
        x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
        w.submit(1, [x, y], [np.float32(3.0)])  # never waited: finalize waits it out
        w.finalize()
        assert wrong(y, x + 3) == 0, "finalize must deliver a held run's outputs"
        assert w.committed_device_memory == 0, "finalize_device leaves no device memory"
        with pytest.raises(simpler.InvalidState):
            w.run(1, [x, y], [0])


def test_scalars_int_negative_float_and_f32_words():
    from simpler._args import scalar_word
    assert scalar_word(5) == 5
    assert scalar_word(-1) == (1 << 64) - 1, "negative ints are two's complement"
    assert scalar_word(1.0) == 0x3FF0000000000000, "a Python float is f64 bits"
    assert scalar_word(np.float32(1.0)) == 0x3F800000, "a numpy float32 is its f32 bits"
    assert scalar_word(np.int64(-2)) == (1 << 64) - 2


def test_two_threads_running_on_one_worker_each_get_exact_results(vector_worker):
    import threading
    results, errors = {}, []

    def runner(lane):
        try:
            for r in range(10):
                a, b = vector_inputs(n=N, seed=lane * 100 + r)
                f = np.full(N, -1.0, np.float32)
                if r % 2:
                    vector_worker.run(0, [a, b, f])
                else:
                    vector_worker.submit(0, [a, b, f]).wait()
                results[(lane, r)] = wrong(f, vector_expected(a, b))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=runner, args=(lane,)) for lane in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], "a runner failed: %r" % errors
    assert len(results) == 20 and sum(results.values()) == 0, "a run got another run's result"


def test_a_run_config_of_its_own_that_fits_the_capacity_runs(worker):
    worker.register(1, offset_image())
    x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    small = simpler.RunConfig(task_window=64, heap_bytes=1 << 16, dep_pool=256)
    assert small.task_window == 64 and small.to_c().task_window[3] == 64, "one int is every ring"
    info = worker.run(1, [x, y], [np.float32(4.0)], config=small)
    assert info.tasks_submitted == 1 and wrong(y, x + 4) == 0
    handle = worker.submit(1, [x, y], [np.float32(5.0)], config=simpler.RunConfig(task_window=(64, 32, 16, 8)))
    handle.wait()
    assert wrong(y, x + 5) == 0
    with pytest.raises(TypeError):
        worker.run(1, [x, y], [0], config={"task_window": 64})
