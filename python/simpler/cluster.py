"""simpler.cluster — Cluster: one host orchestration over several devices.

Owns: the cluster's life (simpler_cluster_create, _destroy), the callables
registered on it with their signatures, and its runs: Cluster.run calls a
Python function with a ClusterOrch during simpler_cluster_run (through a
ctypes callback, on the calling thread), keeps the arrays of every task
the function submitted until simpler_cluster_run has returned (the C side
reads and writes them until then), and carries an exception raised by the
function across the C frames: the callback catches it, the orchestration
returns a negative code, and run() raises it once every submitted task has
ended. One process only: the distributed entries (MPI) are not bound.
docs/python.md, section "Clusters"; docs/cluster.md for the semantics.
"""
import ctypes
import threading
from dataclasses import dataclass

from . import _args
from . import _structs as S
from ._lib import lib
from ._types import TaskState
from .callable import Image
from .config import CallConfig
from .device import _bump_epoch
from .errors import InvalidState, SimplerError, check, error, invalid
from .worker import Worker

# What the orchestration returns for an exception that carries no status
# (anything but a SimplerError): SIMPLER_ORCH_ERR_EXPLICIT_FATAL, "the
# orchestration called fatal", negated as the host sees run codes.
ORCH_EXCEPTION = -9


@dataclass(frozen=True)
class ClusterRunInfo:
    """What a cluster run did (struct simpler_cluster_run_info): status is
    what simpler_cluster_run returned, orch_status what the orchestration
    returned (ORCH_EXCEPTION or a SimplerError's code when the Python
    function raised); the task counters; the dependencies inferred (pairs
    of tasks) and how many had each reason (raw, war, waw); the first
    failed task (0: none) and its status. bytes_sent, bytes_received and
    remote_runs count traffic to other ranks: 0 in one process."""
    status: int
    orch_status: int
    tasks_submitted: int
    tasks_succeeded: int
    tasks_failed: int
    tasks_cancelled: int
    runs_launched: int
    dependencies: int
    raw: int
    war: int
    waw: int
    first_failed_task: int
    first_failed_status: int
    bytes_sent: int
    bytes_received: int
    remote_runs: int

    @classmethod
    def from_c(cls, info):
        return cls(info.status, info.orch_status, info.tasks_submitted, info.tasks_succeeded,
                   info.tasks_failed, info.tasks_cancelled, info.runs_launched,
                   info.dependencies, info.raw, info.war, info.waw, info.first_failed_task,
                   info.first_failed_status, info.bytes_sent, info.bytes_received,
                   info.remote_runs)


@dataclass(frozen=True)
class ClusterTaskInfo:
    """A task's state (struct simpler_cluster_task_info): state a TaskState;
    status its status once DONE (0, its failed run's code, or
    DEPENDENCY_FAILED when cancelled), NOT_READY (-1102) before; members
    the runs of the task (1 for a directed submit) and members_ended how
    many of them ended; dependencies the tasks it waited for at submit."""
    state: TaskState
    status: int
    members: int
    members_ended: int
    dependencies: int

    @property
    def done(self):
        return self.state == TaskState.DONE

    @classmethod
    def from_c(cls, info):
        return cls(TaskState(info.state), info.status, info.members, info.members_ended,
                   info.dependencies)


def _index(value, what, call):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise invalid("%s %r: an int" % (what, value), call)
    value = value.__index__()
    if value < 0:
        raise invalid("%s %d: not negative" % (what, value), call)
    return value


class ClusterOrch:
    """The orchestration handle Cluster.run passes to its function: valid
    during that call only, on that thread only (InvalidState otherwise).
    Tasks are ints, 1, 2, ... in submission order. Every array given to a
    submit is kept alive, and must not be resized or freed, until run()
    returns; the arrays a task writes hold its results once the task has
    ended (wait()) or the run has returned."""

    def __init__(self, cluster, handle):
        self._cluster, self._handle = cluster, handle
        self._thread = threading.get_ident()
        self._built = []     # every accepted submit's args, released after the run
        self._tasks = set()  # the handles this orchestration returned

    @property
    def worker_count(self):
        return self._cluster.worker_count

    def _live(self, call):
        if self._handle is None:
            raise InvalidState(InvalidState.CODE, call, "the orchestration has returned")
        if threading.get_ident() != self._thread:
            raise InvalidState(InvalidState.CODE, call,
                               "called from another thread than the orchestration's")

    def _build(self, callable_id, tensors, scalars):
        # whole_bases: every view of one numpy array names that whole array
        # as its buffer, the same in every submit; the cluster refuses a
        # buffer that overlaps a known one without being it (cluster.h).
        return _args.build(tensors, scalars, self._cluster._signatures.get(callable_id),
                           whole_bases=True)

    def _task(self, task, call):
        if isinstance(task, bool) or not isinstance(task, int) or task not in self._tasks:
            raise invalid("task %r: not a task this run's submit returned" % (task,), call)
        return task

    def submit(self, worker, callable_id, tensors=(), scalars=(), config=None):
        """Directed submit (simpler_cluster_submit): one run of
        `callable_id` on `worker` with host tensors (numpy arrays and their
        views) and scalars; `config` a RunConfig (None: the callable's).
        Returns the task. The run starts once every earlier task it depends
        on (through the regions of the arrays they read and write) has
        ended. InvalidArgument for a worker outside the cluster or bad
        args, CallableNotResident for a callable not registered on the
        cluster, CapacityExceeded past max_tasks; a refused submit creates
        no task."""
        self._live("ClusterOrch.submit")
        worker = _index(worker, "worker", "ClusterOrch.submit")
        callable_id = _index(callable_id, "callable_id", "ClusterOrch.submit")
        built = self._build(callable_id, tensors, scalars)
        task = ctypes.c_uint64()
        try:
            check(lib.simpler_cluster_submit(self._handle, worker, callable_id,
                                             ctypes.byref(built.args), Worker._run_config(config),
                                             ctypes.byref(task)), "simpler_cluster_submit")
        except BaseException:
            built.release()
            raise
        self._built.append(built)
        self._tasks.add(task.value)
        return task.value

    def submit_group(self, callable_id, members, config=None):
        """Group submit (simpler_cluster_submit_group): one task of one run
        of `callable_id` per member, each a (worker, tensors) or (worker,
        tensors, scalars) tuple with distinct workers. The runs start
        together once the group's dependencies are met; a later task that
        depends on any member waits for the whole group. The task fails
        with its lowest-index failed member's status; the other members
        still run. Returns the task."""
        self._live("ClusterOrch.submit_group")
        callable_id = _index(callable_id, "callable_id", "ClusterOrch.submit_group")
        members = list(members)
        if not members:
            raise invalid("members: at least one (worker, tensors[, scalars])",
                          "ClusterOrch.submit_group")
        built, workers = [], []
        try:
            for m, member in enumerate(members):
                if not isinstance(member, (tuple, list)) or len(member) not in (2, 3):
                    raise invalid("members[%d]: a (worker, tensors[, scalars]) tuple" % m,
                                  "ClusterOrch.submit_group")
                workers.append(_index(member[0], "members[%d] worker" % m,
                                      "ClusterOrch.submit_group"))
                built.append(self._build(callable_id, member[1],
                                         member[2] if len(member) == 3 else ()))
            c_members = (S.ClusterMember * len(members))()
            for m, (w, b) in enumerate(zip(workers, built)):
                c_members[m].worker = w
                c_members[m].args = ctypes.pointer(b.args)
            task = ctypes.c_uint64()
            check(lib.simpler_cluster_submit_group(self._handle, callable_id, c_members,
                                                   len(members), Worker._run_config(config),
                                                   ctypes.byref(task)),
                  "simpler_cluster_submit_group")
        except BaseException:
            for b in built:
                b.release()
            raise
        self._built.extend(built)
        self._tasks.add(task.value)
        return task.value

    def wait(self, task):
        """Blocks until `task` has ended (simpler_cluster_wait_task; the GIL
        is released meanwhile) and returns its status: 0, its failed run's
        code, or DEPENDENCY_FAILED (-1009) when it was cancelled. The
        arrays it wrote then hold its results. InvalidArgument for a task
        this orchestration did not submit."""
        self._live("ClusterOrch.wait")
        return lib.simpler_cluster_wait_task(self._handle, self._task(task, "ClusterOrch.wait"))

    def query(self, task):
        """`task`'s ClusterTaskInfo now, without waiting
        (simpler_cluster_task_query)."""
        self._live("ClusterOrch.query")
        info = S.ClusterTaskInfo()
        check(lib.simpler_cluster_task_query(self._handle, self._task(task, "ClusterOrch.query"),
                                             ctypes.byref(info)), "simpler_cluster_task_query")
        return ClusterTaskInfo.from_c(info)

    def _end(self):
        """After the function returned: no more calls."""
        self._handle = None

    def _release(self):
        """After simpler_cluster_run returned: the arrays are the caller's again."""
        for built in self._built:
            built.release()
        self._built = []


class Cluster:
    """A cluster of `workers` program-mode contexts, one per device
    (simpler_cluster_create): devices 0..workers-1, or `device_ids`.
    `max_tasks` bounds the tasks of one run (None: the C default, 65536);
    `config` a CallConfig every worker context is initialised with (None:
    the defaults). A context manager; close() destroys it."""

    def __init__(self, workers=1, max_tasks=None, device_ids=None, config=None):
        self._cluster = ctypes.c_void_p()
        self._signatures = {}   # callable id -> tuple of Directions
        self.last_run_info = None
        workers = _index(workers, "workers", "Cluster")
        if config is not None and not isinstance(config, CallConfig):
            raise TypeError("simpler: config must be a CallConfig")
        c = S.ClusterConfig()
        check(lib.simpler_cluster_config_default(ctypes.byref(c)),
              "simpler_cluster_config_default")
        c.worker_count = workers
        if max_tasks is not None:
            c.max_tasks = _index(max_tasks, "max_tasks", "Cluster")
            if c.max_tasks != max_tasks:
                raise invalid("max_tasks %d does not fit its C field" % max_tasks, "Cluster")
        if device_ids is not None:
            device_ids = [_index(d, "device id", "Cluster") for d in device_ids]
            if len(device_ids) != workers:
                raise invalid("device_ids: %d ids for %d workers" % (len(device_ids), workers),
                              "Cluster")
            ids = (ctypes.c_int * workers)(*device_ids)
            c.device_ids = ids
        c_config = None
        if config is not None:
            c_config = config.to_c()
            c.device_config = ctypes.pointer(c_config)
        check(lib.simpler_cluster_create(ctypes.byref(c), ctypes.byref(self._cluster)),
              "simpler_cluster_create")
        self.device_ids = tuple(device_ids) if device_ids is not None else tuple(range(workers))
        self.config = config

    # ------------------------------------------------------------ life

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _open(self, call):
        if not self._cluster.value:
            raise InvalidState(InvalidState.CODE, call, "the cluster is closed")

    def close(self):
        """Stops the worker threads, finalizes and destroys every worker
        context (simpler_cluster_destroy), which resets their devices
        (DeviceBuffers made on them before are gone, as after a program
        Worker's finalize); idempotent. InvalidState, changing nothing,
        from inside a run's function."""
        if self._cluster.value:
            check(lib.simpler_cluster_destroy(self._cluster), "simpler_cluster_destroy")
            self._cluster = ctypes.c_void_p()
            for device_id in self.device_ids:  # each worker reset its device (as Worker.finalize)
                _bump_epoch(device_id)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def worker_count(self):
        """The number of workers (0 once closed)."""
        return lib.simpler_cluster_worker_count(self._cluster) if self._cluster.value else 0

    # ------------------------------------------------------- callables

    def register(self, callable_id, image):
        """Loads a callable image (bytes) under `callable_id` on every
        worker, or on none (simpler_cluster_register_callable)."""
        self._open("Cluster.register")
        img = Image(image)
        check(lib.simpler_cluster_register_callable(self._cluster, callable_id, img.buffer,
                                                    img.size),
              "simpler_cluster_register_callable")
        self._signatures[callable_id] = img.signature

    def unregister(self, callable_id):
        """Unloads `callable_id` from every worker; CallableNotResident when
        the cluster did not register it."""
        self._open("Cluster.unregister")
        check(lib.simpler_cluster_unregister_callable(self._cluster, callable_id),
              "simpler_cluster_unregister_callable")
        self._signatures.pop(callable_id, None)

    # ------------------------------------------------------------- run

    def run(self, fn, check=True):
        """Calls fn(orch) on this thread during simpler_cluster_run, then
        waits until every task it submitted has ended, and returns the
        run's ClusterRunInfo (also kept as last_run_info). The arrays the
        tasks wrote then hold their results.

        An exception raised by fn stops the orchestration (the tasks
        already submitted still run to their end) and is raised again here
        once they have ended. A failed task: with check (the default)
        run() raises its code's exception (RunFailed for a run's own code)
        with .run_info the ClusterRunInfo; with check=False it returns the
        info, whose status is the first failed task's code. A refused run
        (one already active on the cluster) raises InvalidState."""
        self._open("Cluster.run")
        if not callable(fn):
            raise invalid("fn: a function taking the orchestration", "Cluster.run")
        state = {"orch": None, "exc": None}

        def orchestration(handle, user):
            # Nothing may propagate into C: ctypes would print and return 0.
            try:
                orch = state["orch"] = ClusterOrch(self, handle)
                try:
                    fn(orch)
                finally:
                    orch._end()
                return 0
            except BaseException as e:  # noqa: B902 (KeyboardInterrupt too: re-raised by run)
                state["exc"] = e
                if isinstance(e, SimplerError) and e.code < 0:
                    return e.code
                return ORCH_EXCEPTION

        c_fn = S.ClusterOrchFn(orchestration)
        info = S.ClusterRunInfo()
        rc = lib.simpler_cluster_run(self._cluster, c_fn, None, ctypes.byref(info))
        orch = state["orch"]
        if orch is None:  # refused before fn ran: nothing was submitted
            if state["exc"] is not None:
                raise state["exc"]
            raise error(rc, "simpler_cluster_run")
        orch._release()
        result = self.last_run_info = ClusterRunInfo.from_c(info)
        if state["exc"] is not None:
            raise state["exc"]
        if rc and check:
            e = error(rc, "simpler_cluster_run",
                      "task %d failed first; %d of %d tasks failed, %d cancelled"
                      % (result.first_failed_task, result.tasks_failed, result.tasks_submitted,
                         result.tasks_cancelled))
            e.run_info = result
            raise e
        return result
