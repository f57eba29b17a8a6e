"""simpler.Cluster: runs on several devices ordered by what they read and
write, group submits, a failing task and its cancelled dependents, an
exception raised by the Python orchestration, refused input, and no leak.

The callables are the test fixtures of helpers.py: offset (y = x + s over
1-D f32 views) and fail (reports 321: its run's status is -321, y is
never written)."""
import gc
import sys

import numpy as np
import pytest

import simpler
from helpers import offset_image, fail_image

OFFSET, FAIL = 1, 2
N = 4096
FILL = -5.0  # what an output holds when nothing wrote it


@pytest.fixture
def cluster():
    """Four workers on devices 0..3, with the offset and fail callables."""
    with simpler.Cluster(workers=4) as cl:
        cl.register(OFFSET, offset_image())
        cl.register(FAIL, fail_image())
        yield cl


def _filled(n=N):
    return np.full(n, FILL, np.float32)


def _s(value):
    return [np.float32(value)]


def test_a_run_on_each_worker_reads_what_the_previous_worker_wrote(cluster):
    x = np.arange(N, dtype=np.float32)
    stages = [_filled() for _ in range(4)]
    seen = {}

    def orch(o):
        tasks, src = [], x
        for w, dst in enumerate(stages):  # worker w: stages[w] = stages[w - 1] + (w + 1)
            tasks.append(o.submit(w, OFFSET, [src, dst], _s(w + 1)))
            src = dst
        seen["tasks"] = tasks
        seen["status"] = o.wait(tasks[-1])
        seen["last"] = stages[-1].copy()  # the task ended: its output is in host memory
        seen["info"] = o.query(tasks[-1])

    info = cluster.run(orch)
    assert seen["tasks"] == [1, 2, 3, 4], "tasks are 1, 2, ... in submission order"
    assert seen["status"] == 0
    assert (seen["last"] == x + 10).all(), "after wait() the task's output must be in host memory"
    assert seen["info"].done and seen["info"].status == 0
    assert (seen["info"].members, seen["info"].members_ended) == (1, 1)
    for w in range(4):  # 1, 1+2, 1+2+3, 1+2+3+4: a stale read would show FILL + k
        assert (stages[w] == x + (w + 1) * (w + 2) // 2).all(), "stage %d inexact" % w
    assert (info.status, info.orch_status) == (0, 0)
    assert (info.tasks_submitted, info.tasks_succeeded, info.runs_launched) == (4, 4, 4)
    assert (info.tasks_failed, info.tasks_cancelled, info.first_failed_task) == (0, 0, 0)
    # A dependency is counted only while its earlier task had not succeeded
    # at the submit: at most 3 here, all reads after writes.
    assert info.dependencies <= 3 and info.raw == info.dependencies
    assert (info.war, info.waw, info.remote_runs, info.bytes_sent) == (0, 0, 0, 0)
    assert cluster.last_run_info == info


def test_a_group_writes_tiles_of_one_array_and_its_dependent_reads_them_all(cluster):
    x = np.arange(3 * N, dtype=np.float32)
    y, z = _filled(3 * N), _filled(3 * N)
    seen = {}

    def orch(o):
        members = [(w, [x[w * N:(w + 1) * N], y[w * N:(w + 1) * N]], _s(10 * (w + 1)))
                   for w in range(3)]
        group = o.submit_group(OFFSET, members)
        reader = o.submit(3, OFFSET, [y, z], _s(0.5))
        seen["group_status"] = o.wait(group)
        seen["group"] = o.query(group)
        seen["reader_status"] = o.wait(reader)
        seen["ids"] = (group, reader)

    info = cluster.run(orch)
    tile = np.repeat(np.float32([10, 20, 30]), N)
    assert (y == x + tile).all(), "each member writes its own tile of y"
    assert (z == x + tile + 0.5).all(), "the reader must wait for the whole group"
    assert seen["ids"] == (1, 2)
    assert (seen["group_status"], seen["reader_status"]) == (0, 0)
    g = seen["group"]
    assert (g.state, g.status, g.members, g.members_ended) == (simpler.TaskState.DONE, 0, 3, 3)
    assert g.dependencies == 0, "the group depends on nothing"
    assert (info.tasks_submitted, info.tasks_succeeded, info.runs_launched) == (2, 2, 4)


def test_a_failing_task_is_the_runs_status_its_dependents_are_cancelled_the_rest_exact(cluster):
    xs = [np.arange(N, dtype=np.float32) + 100 * k for k in range(6)]
    ys = [_filled() for _ in range(6)]
    bad_out, after, after2 = _filled(), _filled(), _filled()
    seen = {}

    def orch(o):
        ids = [o.submit(k % 4, OFFSET, [xs[k], ys[k]], _s(k)) for k in range(3)]
        seen["failing"] = o.submit(1, FAIL, [xs[3], bad_out])
        seen["dependent"] = o.submit(2, OFFSET, [bad_out, after], _s(1))
        seen["transitive"] = o.submit(3, OFFSET, [after, after2], _s(1))
        ids += [o.submit(k % 4, OFFSET, [xs[k], ys[k]], _s(k)) for k in range(3, 6)]
        seen["dependent_status"] = o.wait(seen["dependent"])
        seen["failing_status"] = o.wait(seen["failing"])
        seen["ok"] = [o.wait(t) for t in ids]

    info = cluster.run(orch, check=False)
    assert info.status == -321, "the run's status is the failed task's code"
    assert (info.first_failed_task, info.first_failed_status) == (seen["failing"], -321)
    assert seen["failing"] == 4
    assert seen["failing_status"] == -321
    assert seen["dependent_status"] == simpler.DependencyFailed.CODE, \
        "a task reading the failed task's output is cancelled"
    assert seen["ok"] == [0] * 6
    assert (info.tasks_submitted, info.tasks_succeeded, info.tasks_failed,
            info.tasks_cancelled) == (9, 6, 1, 2)
    assert info.runs_launched == 7, "cancelled tasks never launch"
    for k in range(6):
        assert (ys[k] == xs[k] + k).all(), "task %d, independent of the failure, inexact" % k
    for name, arr in (("failed", bad_out), ("cancelled", after), ("transitively cancelled", after2)):
        assert (arr == FILL).all(), "the %s task's output must be untouched" % name


def test_a_failing_task_raises_its_code_by_default_with_the_run_info(cluster):
    x, y, ok = np.arange(N, dtype=np.float32), _filled(), _filled()

    def orch(o):
        o.submit(0, FAIL, [x, y])
        o.submit(1, OFFSET, [x, ok], _s(2))

    with pytest.raises(simpler.RunFailed) as caught:
        cluster.run(orch)
    assert caught.value.code == -321
    assert caught.value.call == "simpler_cluster_run"
    info = caught.value.run_info
    assert (info.status, info.tasks_failed, info.tasks_succeeded, info.first_failed_task) == \
        (-321, 1, 1, 1)
    assert (ok == x + 2).all() and (y == FILL).all()


class Stop(Exception):
    pass


def test_an_exception_in_the_orchestration_is_raised_by_run_after_every_task_ended(cluster):
    x = np.arange(N, dtype=np.float32)
    outs = [_filled() for _ in range(3)]
    stop = Stop("the orchestration gives up")

    def orch(o):
        for w in range(3):
            o.submit(w, OFFSET, [x, outs[w]], _s(w + 7))
        raise stop

    with pytest.raises(Stop) as caught:
        cluster.run(orch)
    assert caught.value is stop, "run() raises the orchestration's own exception object"
    info = cluster.last_run_info
    assert info.orch_status == -9 and info.status == -9, \
        "a non-simpler exception ends the orchestration with -9 (EXPLICIT_FATAL)"
    assert (info.tasks_submitted, info.tasks_succeeded) == (3, 3), \
        "every task submitted before the exception still runs to its end"
    for w in range(3):
        assert (outs[w] == x + w + 7).all(), "task on worker %d inexact" % w

    # The cluster runs again afterwards.
    again = _filled()
    cluster.run(lambda o: o.submit(3, OFFSET, [x, again], _s(1)))
    assert (again == x + 1).all()


def test_a_simpler_error_in_the_orchestration_ends_it_with_its_code(cluster):
    x, y = np.arange(N, dtype=np.float32), _filled()

    def orch(o):
        o.submit(0, OFFSET, [x, y], _s(3))
        o.submit(4, OFFSET, [x, _filled()], _s(3))  # no worker 4: refused, uncaught

    with pytest.raises(simpler.InvalidArgument) as caught:
        cluster.run(orch)
    assert caught.value.call == "simpler_cluster_submit"
    info = cluster.last_run_info
    assert (info.orch_status, info.status) == (-1004, -1004)
    assert (info.tasks_submitted, info.tasks_succeeded) == (1, 1), "the refused submit made no task"
    assert (y == x + 3).all()


def test_bad_input_raises_the_codes_class_and_creates_no_task(cluster):
    x, y = np.arange(N, dtype=np.float32), _filled()
    raised = {}

    def attempt(name, fn):
        try:
            fn()
        except simpler.SimplerError as e:
            raised[name] = (type(e), e.code)

    def orch(o):
        attempt("worker", lambda: o.submit(4, OFFSET, [x, y], _s(1)))
        attempt("negative worker", lambda: o.submit(-1, OFFSET, [x, y], _s(1)))
        attempt("unregistered", lambda: o.submit(0, 99, [x, y], _s(1)))
        attempt("counts", lambda: o.submit(0, OFFSET, [x, y]))
        attempt("repeated worker", lambda: o.submit_group(
            OFFSET, [(1, [x[:8], y[:8]], _s(1)), (1, [x[8:16], y[8:16]], _s(1))]))
        attempt("overlapping writes", lambda: o.submit_group(
            OFFSET, [(1, [x[:8], y[:8]], _s(1)), (2, [x[8:16], y[4:12]], _s(1))]))
        attempt("empty group", lambda: o.submit_group(OFFSET, []))
        attempt("unknown task", lambda: o.wait(1))
        attempt("nested run", lambda: cluster.run(lambda inner: None))
        attempt("close inside run", cluster.close)
        raised["first task"] = o.submit(0, OFFSET, [x, y], _s(1))
        raised["orch"] = o

    info = cluster.run(orch)
    IA, NR, IS = simpler.InvalidArgument, simpler.CallableNotResident, simpler.InvalidState
    assert raised.pop("worker") == (IA, -1004)
    assert raised.pop("negative worker") == (IA, -1004)
    assert raised.pop("unregistered") == (NR, -1007)
    assert raised.pop("counts") == (IA, -1004)
    assert raised.pop("repeated worker") == (IA, -1004)
    assert raised.pop("overlapping writes") == (IA, -1004)
    assert raised.pop("empty group") == (IA, -1004)
    assert raised.pop("unknown task") == (IA, -1004)
    assert raised.pop("nested run") == (IS, -1003)
    assert raised.pop("close inside run") == (IS, -1003)
    assert raised.pop("first task") == 1, "a refused submit creates no task"
    assert info.tasks_submitted == 1 and (y == x + 1).all()
    with pytest.raises(simpler.InvalidState):
        raised["orch"].submit(0, OFFSET, [x, y], _s(1))  # the orchestration has returned

    with pytest.raises(simpler.CallableNotResident):
        cluster.unregister(99)
    cluster.unregister(FAIL)
    with pytest.raises(simpler.CallableNotResident):
        cluster.run(lambda o: o.submit(0, FAIL, [x, y]))
    with pytest.raises(simpler.InvalidArgument):
        cluster.run("not a function")


def test_bad_clusters_are_refused_with_their_codes():
    with pytest.raises(simpler.InvalidArgument):
        simpler.Cluster(workers=0)
    with pytest.raises(simpler.InvalidArgument):
        simpler.Cluster(workers=simpler._structs.CLUSTER_MAX_WORKERS + 1)
    with pytest.raises(simpler.InvalidArgument):
        simpler.Cluster(workers=2, device_ids=[1, 1])
    with pytest.raises(simpler.InvalidArgument):
        simpler.Cluster(workers=2, device_ids=[0])
    with simpler.Worker(level=2, device_id=1):
        with pytest.raises(simpler.InvalidState) as caught:
            simpler.Cluster(workers=2)  # device 1 is the worker's
        assert caught.value.call == "simpler_cluster_create"
    with simpler.Cluster(workers=2, device_ids=[3, 1], max_tasks=2) as cl:
        assert cl.worker_count == 2 and cl.device_ids == (3, 1)
        cl.register(OFFSET, offset_image())
        x, y = np.arange(8, dtype=np.float32), _filled(8)
        refused = []

        def orch(o):
            o.submit(0, OFFSET, [x[:4], y[:4]], _s(1))
            o.submit(1, OFFSET, [x[4:], y[4:]], _s(2))
            try:
                o.submit(0, OFFSET, [x, _filled(8)], _s(1))
            except simpler.CapacityExceeded as e:
                refused.append(e.code)

        info = cl.run(orch)
        assert refused == [-1008], "max_tasks=2: the third submit is refused"
        assert info.tasks_submitted == 2
        assert (y == x + np.float32([1, 1, 1, 1, 2, 2, 2, 2])).all()
    assert cl.worker_count == 0
    with pytest.raises(simpler.InvalidState):
        cl.run(lambda o: None)


def test_arrays_are_kept_alive_until_the_run_returns(cluster):
    y = _filled()
    counts = {}

    def orch(o):
        # The input exists only in the submit's arguments.
        o.submit(0, OFFSET, [np.arange(N, dtype=np.float32), y], _s(1))
        counts["during"] = sys.getrefcount(y)
        counts["orch"] = o  # kept past the run: it must not keep the arrays

    before = sys.getrefcount(y)
    cluster.run(orch)
    assert counts["during"] > before, "the run must hold its arrays"
    assert sys.getrefcount(y) == before, "the run must drop its arrays when it returns"
    assert counts["orch"]._built == [], "a kept orchestration handle holds no arrays"
    assert (y == np.arange(N, dtype=np.float32) + 1).all()


def _package_objects():
    from simpler import _args, cluster as cluster_module
    kinds = (cluster_module.ClusterOrch, _args.Built, _args.HostArray, _args._BufferExport)
    found = {}
    for o in gc.get_objects():
        if isinstance(o, kinds):
            found[type(o).__name__] = found.get(type(o).__name__, 0) + 1
    return found


RUNS = 1000


def test_a_thousand_runs_keep_refcounts_objects_and_device_memory_flat(cluster):
    x = np.arange(64, dtype=np.float32)
    y, z = np.zeros(64, np.float32), np.zeros(64, np.float32)
    s = np.float32(1.0)

    def orch(o):
        o.submit(0, OFFSET, [x, y], [s])
        o.submit_group(OFFSET, [(1, [y[:32], z[:32]], [s]), (2, [y[32:], z[32:]], [s])])

    def failing(o):
        o.submit(3, OFFSET, [x, y], [s])
        raise Stop()

    def one(i):
        if i % 10 == 9:
            with pytest.raises(Stop):
                cluster.run(failing)
        else:
            cluster.run(orch)

    for i in range(20):  # warm: first-use caches settle
        one(i)
    gc.collect()
    refs_before = [sys.getrefcount(o) for o in (x, y, z, s)]
    objects_before = len(gc.get_objects())
    memory_before = [simpler.Device(d).memory_in_use for d in range(4)]
    for i in range(RUNS):
        one(i)
    gc.collect()
    cluster.run(orch)
    assert (y == x + 1).all() and (z == x + 2).all(), "the last run's result is wrong"
    assert [sys.getrefcount(o) for o in (x, y, z, s)] == refs_before, \
        "the arrays' reference counts grew: runs keep references"
    assert _package_objects() == {}, "objects of the package outlived their runs"
    objects_after = len(gc.get_objects())
    assert objects_after - objects_before < RUNS // 10, \
        "%d Python objects more after %d runs: something per run is never freed" % (
            objects_after - objects_before, RUNS)
    assert [simpler.Device(d).memory_in_use for d in range(4)] == memory_before, \
        "device memory grew: a run's staging was not freed"
