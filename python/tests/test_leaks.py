"""No leak: many runs keep reference counts, Python objects and device
memory flat."""
import gc
import sys

import numpy as np

from helpers import offset_image

RUNS = 10_000


def _snapshot(*objects):
    gc.collect()
    return [sys.getrefcount(o) for o in objects], len(gc.get_objects())


def _package_objects():
    """Live objects of the package's per-run types, by type name."""
    from simpler import _args, worker as worker_module
    kinds = (worker_module.RunHandle, _args.Built, _args.HostArray, _args._BufferExport)
    found = {}
    for o in gc.get_objects():
        if isinstance(o, kinds):
            found[type(o).__name__] = found.get(type(o).__name__, 0) + 1
    return found


def test_ten_thousand_runs_keep_refcounts_objects_and_device_memory_flat(worker):
    worker.register(1, offset_image())
    idle = worker.committed_device_memory
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    s = np.float32(1.0)
    for _ in range(50):  # warm: first-use caches (ctypes types, enum members) settle
        worker.run(1, [x, y], [s])
        worker.submit(1, [x, y], [s]).wait()
    refs_before, objects_before = _snapshot(x, y, s)
    for i in range(RUNS):
        if i % 2:
            worker.run(1, [x, y], [s])
        else:
            worker.submit(1, [x, y], [s]).wait()
    refs_after, objects_after = _snapshot(x, y, s)
    assert (y == x + 1).all(), "the last run's result is wrong"
    assert refs_after == refs_before, "the arrays' reference counts grew: runs keep references"
    assert _package_objects() == {}, "objects of the package outlived their runs"
    # The interpreter and pytest may make or drop a few objects meanwhile;
    # one object kept per run would show as 10,000 more.
    assert objects_after - objects_before < RUNS // 100, \
        "%d Python objects more after %d runs: something per run is never freed" % (
            objects_after - objects_before, RUNS)
    assert worker.committed_device_memory == idle, \
        "device memory did not return to its idle figure: a run's staging was not freed"
    assert len(worker._runs) == 0, "the worker still holds finalized runs"
