"""simpler.worker — Worker: one simpler context, in program or kernel mode.

Owns: the context's life (create, init, finalize, destroy), the callables
registered or prepared on it with their signatures, the runs it holds and
its prepared calls: each RunHandle keeps the arrays of its run alive until
the run is finalized (a submission of a PreparedCall keeps the call, which
holds them); a PreparedCall keeps its arrays until it is released and
every submission of it is finalized. The binding of a rebound launch of a
captured Graph (kernel_graph_update, kernel_graph_update_call) is kept as
Graph says. Blocking calls (run, wait, kernel launches) go through
ctypes.CDLL, which releases the GIL for their duration.
"""
import ctypes
import threading
from dataclasses import dataclass

from . import _args
from . import _structs as S
from ._lib import lib
from .callable import Image
from .config import CallConfig, RunConfig
from .device import Graph, Stream, _bump_epoch, _current
from .errors import NOT_READY, Unsupported, check, error, invalid

_MODES = ("program", "kernel")


@dataclass(frozen=True)
class RunInfo:
    """The counters of a completed run (struct simpler_run_info)."""
    status: int
    tasks_submitted: int
    tasks_completed: int
    edges: int

    @classmethod
    def from_c(cls, info):
        return cls(info.status, info.tasks_submitted, info.tasks_completed, info.edges)


@dataclass(frozen=True)
class ContextInfo:
    """The runs a context holds and its preparation work (struct
    simpler_context_info): host_preparations and packets_encoded count over
    the context's life; prepared_calls is the calls alive now. runtime is
    0 (TMR) or 1 (host_build_graph); under host_build_graph,
    host_orchestration_loads and _unloads count the orchestrations loaded
    in this process, host_builds the graphs the host built and
    host_builds_skipped the launches that shipped a prepared call's kept
    graph instead."""
    unfinalized_runs: int
    stranded_runs: int
    stranded_runs_released: int
    host_preparations: int
    prepared_calls: int
    packets_encoded: int
    runtime: int = 0
    host_orchestration_loads: int = 0
    host_orchestration_unloads: int = 0
    host_builds: int = 0
    host_builds_skipped: int = 0

    @classmethod
    def from_c(cls, info):
        return cls(info.unfinalized_runs, info.stranded_runs, info.stranded_runs_released,
                   info.host_preparations, info.prepared_calls, info.packets_encoded,
                   info.runtime, info.host_orchestration_loads,
                   info.host_orchestration_unloads, info.host_builds,
                   info.host_builds_skipped)


class RunHandle:
    """A submitted program-mode run. done() polls; wait() waits, finalizes
    (copying OUT/INOUT arrays back when the run succeeded) and returns its
    RunInfo, or raises its failure (RunFailed for the run's own code). Every
    later wait() returns or raises the same."""

    def __init__(self, worker, run, built, call=None):
        # built: the arrays of a Worker.submit run, released at its finalize;
        # call: the PreparedCall this run is a submission of (None for
        # Worker.submit), which holds the arrays and is told at finalize.
        self._worker, self._run, self._built, self._call = worker, run, built, call
        self._lock = threading.Lock()
        self._result = None  # RunInfo or the exception, once finalized

    def done(self):
        """True once the run completed (successfully or not); never blocks."""
        if self._result is not None:
            return True
        return lib.simpler_poll_run(self._worker._ctx, self._run) != NOT_READY

    def wait(self):
        with self._lock:
            if self._result is None:
                self._result = self._worker._finish(self._run, self._built, self._call)
                self._built = self._call = None
            result = self._result
        if isinstance(result, Exception):
            raise result
        return result


class PreparedCall:
    """An invocation prepared once by Worker.prepare (simpler_prepare_call):
    submit() it (program mode) or launch() it (kernel mode) any number of
    times, also several at once; release() it (or leave it to the worker's
    finalize). It keeps its arrays and device tensors alive until it is
    released and every submission of it is finalized. A context manager:
    release() at exit."""

    def __init__(self, worker, call, built):
        self._worker, self._call, self._built = worker, call, built
        # Held around every C call that passes the pointer, so none passes
        # it after release (a later prepare may be given the same address).
        self._lock = threading.Lock()
        self._unfinalized = 0  # submissions whose handle is not finalized

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        try:
            self.release()
        except Exception:
            if exc_type is None:
                raise
            # The body's exception wins; the call stays for finalize.
        return False

    def _alive(self, call):
        """Caller must hold self._lock."""
        if self._call is None:
            raise invalid("the prepared call was released", call)

    def _drop_arrays_if_unused(self):
        """Caller must hold self._lock."""
        if self._call is None and self._unfinalized == 0 and self._built is not None:
            self._built.release()
            self._built = None

    def submit(self):
        """Program mode: stages a submission (the IN/INOUT arrays are read
        as they are now) and launches it (simpler_submit_call); returns its
        RunHandle at once. Its wait() finalizes it, writing the OUT/INOUT
        arrays back. CapacityExceeded when pipeline_depth runs are held."""
        w = self._worker
        run = ctypes.c_uint64()
        with self._lock:
            self._alive("PreparedCall.submit")
            w._mode("program", "PreparedCall.submit")
            check(lib.simpler_submit_call(w._ctx, self._call, ctypes.byref(run)),
                  "simpler_submit_call")
            self._unfinalized += 1
        handle = RunHandle(w, run.value, None, self)
        with w._lock:
            w._runs[run.value] = handle
        return handle

    def _submission_finalized(self):
        with self._lock:
            self._unfinalized -= 1
            self._drop_arrays_if_unused()

    def launch(self, caller_stream):
        """Kernel mode: enqueues one round on `caller_stream` with the packet
        encoded at prepare (simpler_kernel_mode_launch_call), as
        Worker.kernel_launch does; the stream's synchronize raises the
        round's failure. Inside a capture, the graph records the packet."""
        w = self._worker
        if not isinstance(caller_stream, Stream):
            raise invalid("caller_stream: a simpler.Stream", "PreparedCall.launch")
        handle = caller_stream.handle
        with self._lock:
            self._alive("PreparedCall.launch")
            w._mode("kernel", "PreparedCall.launch")
            _current(w.device_id)
            check(lib.simpler_kernel_mode_launch_call(w._ctx, self._call, handle),
                  "simpler_kernel_mode_launch_call")
            caller_stream.keep(self._built.keep)

    def release(self):
        """Releases the call (simpler_release_call); idempotent. Program
        mode: InvalidState, changing nothing, while a submission of it is
        unfinalized (wait() it first). Kernel mode: always allowed; queued
        rounds and captured graphs keep what they use."""
        w = self._worker
        with self._lock:
            if self._call is None:
                return
            check(lib.simpler_release_call(w._ctx, self._call), "simpler_release_call")
            self._call = None
            self._drop_arrays_if_unused()
        with w._lock:
            w._calls.discard(self)


class Worker:
    """A simpler context on one device. level must be 2 (one device);
    execution_mode "program" (the context owns the device) or "kernel"
    (it borrows the device and the caller's streams). `config`: a
    CallConfig (None: the defaults). A context manager; close() ends it."""

    def __init__(self, level=2, device_id=0, execution_mode="program", config=None):
        self._ctx = ctypes.c_void_p()
        self._initialised = False
        if level != 2:
            raise Unsupported(Unsupported.CODE, "Worker",
                              "level %r: only level 2 (one device) exists" % (level,))
        if execution_mode not in _MODES:
            raise invalid("execution_mode %r: 'program' or 'kernel'" % (execution_mode,))
        if config is None:
            config = CallConfig()
        elif not isinstance(config, CallConfig):
            raise TypeError("simpler: config must be a CallConfig")
        if not isinstance(device_id, int):
            raise invalid("device_id %r: an int" % (device_id,))
        c_config = config.to_c()
        self.level, self.device_id, self.execution_mode = level, device_id, execution_mode
        self.config = config
        self._lock = threading.Lock()
        self._runs = {}        # run handle -> RunHandle, until finalized
        self._calls = set()    # PreparedCalls, until released
        self._signatures = {}  # callable id -> tuple of Directions
        check(lib.simpler_create_device_context(ctypes.byref(self._ctx)),
              "simpler_create_device_context")
        if execution_mode == "program":
            rc = lib.simpler_init(self._ctx, device_id, ctypes.byref(c_config))
            call = "simpler_init"
        else:
            rc = lib.simdev_set_device(device_id)
            call = "simdev_set_device"
            if rc == 0:
                rc = lib.simpler_kernel_mode_init(self._ctx, device_id, ctypes.byref(c_config), 0)
                call = "simpler_kernel_mode_init"
        if rc:
            lib.simpler_destroy_device_context(self._ctx)
            self._ctx = ctypes.c_void_p()
            raise error(rc, call)
        self._initialised = True

    # ------------------------------------------------------------ life

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _open(self, call):
        if not self._initialised:
            raise error(-1003, call, "the worker is closed")

    def _mode(self, mode, call):
        self._open(call)
        if self.execution_mode != mode:
            raise error(-1003, call, "a %s-mode call on a %s-mode worker"
                        % (mode, self.execution_mode))

    def finalize(self):
        """Waits out and finalizes every run still held, releases every
        PreparedCall still alive, then releases everything the context
        holds (simpler_finalize_device; a program worker resets its
        device). The worker cannot run afterwards."""
        if not self._initialised:
            return
        for handle in list(self._runs.values()):
            try:
                handle.wait()
            except Exception:
                pass  # the run's own failure; it is released all the same
        with self._lock:
            calls = list(self._calls)
        for call in calls:
            call.release()
        check(lib.simpler_finalize_device(self._ctx), "simpler_finalize_device")
        self._initialised = False
        if self.execution_mode == "program":
            _bump_epoch(self.device_id)

    def close(self):
        """finalize(), then destroys the context (idempotent)."""
        if self._ctx.value:
            self.finalize()
            check(lib.simpler_destroy_device_context(self._ctx), "simpler_destroy_device_context")
            self._ctx = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def committed_device_memory(self):
        """Bytes of device memory the context holds now."""
        return lib.simpler_committed_device_memory(self._ctx) if self._ctx.value else 0

    def context_info(self):
        """The context's ContextInfo (simpler_get_context_info); readable
        after finalize() too, until close()."""
        if not self._ctx.value:
            raise error(-1003, "context_info", "the worker is closed")
        info = S.ContextInfo()
        check(lib.simpler_get_context_info(self._ctx, ctypes.byref(info)),
              "simpler_get_context_info")
        return ContextInfo.from_c(info)

    # -------------------------------------------------- prepared calls

    def prepare(self, callable_id, tensors=(), scalars=(), config=None):
        """Prepares an invocation once (simpler_prepare_call): checks and
        copies the args, resolves `config` (a RunConfig; None: the
        callable's) and, in kernel mode, encodes the packet. Returns a
        PreparedCall; host array contents are read at each submit, not
        here. In kernel mode tensors are device Tensors."""
        self._open("prepare")
        kernel = self.execution_mode == "kernel"
        built = self._build(callable_id, tensors, scalars, host_allowed=not kernel)
        call = ctypes.c_void_p()
        try:
            cfg = self._run_config(config)
            if kernel:
                _current(self.device_id)
            check(lib.simpler_prepare_call(self._ctx, callable_id, ctypes.byref(built.args), cfg,
                                           ctypes.byref(call)), "simpler_prepare_call")
        except BaseException:
            built.release()
            raise
        prepared = PreparedCall(self, call, built)
        with self._lock:
            self._calls.add(prepared)
        return prepared

    # ---------------------------------------------------- program mode

    def register(self, callable_id, image):
        """Loads a callable image (bytes) under `callable_id`."""
        self._mode("program", "register")
        img = Image(image)
        check(lib.simpler_register_callable(self._ctx, callable_id, img.buffer, img.size),
              "simpler_register_callable")
        self._signatures[callable_id] = img.signature

    def unregister(self, callable_id):
        """Unloads the callable registered under `callable_id`."""
        self._mode("program", "unregister")
        check(lib.simpler_unregister_callable(self._ctx, callable_id),
              "simpler_unregister_callable")
        self._signatures.pop(callable_id, None)

    def _build(self, callable_id, tensors, scalars, host_allowed=True):
        return _args.build(tensors, scalars, self._signatures.get(callable_id), host_allowed)

    @staticmethod
    def _run_config(config):
        if config is None:
            return None
        if not isinstance(config, RunConfig):
            raise TypeError("simpler: config must be a RunConfig")
        return ctypes.byref(config.to_c())

    def run(self, callable_id, tensors=(), scalars=(), config=None):
        """One run, start to end (simpler_run): returns its RunInfo once the
        OUT/INOUT arrays hold its results; raises its failure."""
        self._mode("program", "run")
        built = self._build(callable_id, tensors, scalars)
        try:
            cfg = self._run_config(config)
            info = S.RunInfo()
            rc = lib.simpler_run(self._ctx, callable_id, ctypes.byref(built.args), cfg,
                                 ctypes.byref(info))
        finally:
            built.release()
        check(rc, "simpler_run")
        return RunInfo.from_c(info)

    def submit(self, callable_id, tensors=(), scalars=(), config=None):
        """Prepares and launches one run and returns its RunHandle at once.
        Up to config.pipeline_depth runs may be held; one more raises
        CapacityExceeded."""
        self._mode("program", "submit")
        built = self._build(callable_id, tensors, scalars)
        run = ctypes.c_uint64()
        try:
            cfg = self._run_config(config)
            check(lib.simpler_prepare_run(self._ctx, ctypes.byref(run), callable_id,
                                          ctypes.byref(built.args), cfg), "simpler_prepare_run")
        except BaseException:
            built.release()
            raise
        rc = lib.simpler_launch_run(self._ctx, run.value)
        if rc:
            lib.simpler_finalize_run(self._ctx, run.value)
            built.release()
            raise error(rc, "simpler_launch_run")
        handle = RunHandle(self, run.value, built)
        with self._lock:
            self._runs[run.value] = handle
        return handle

    def _finish(self, run, built, call=None):
        """wait, run info, finalize: the RunInfo, or the exception to raise."""
        status = lib.simpler_wait_run(self._ctx, run)
        info = S.RunInfo()
        if lib.simpler_get_run_info(self._ctx, run, ctypes.byref(info)) != 0:
            # The wait itself failed (a device operation), not the run: the
            # run is released without its outputs.
            info.status = status
        rc = 0
        for _ in range(3):  # a failing finalize redoes only what is left
            rc = lib.simpler_finalize_run(self._ctx, run)
            if rc == 0:
                break
        with self._lock:
            self._runs.pop(run, None)
        if call is None:
            built.release()
        else:
            call._submission_finalized()
        if status:
            return error(status, "run")
        if rc:
            return error(rc, "simpler_finalize_run")
        return RunInfo.from_c(info)

    # ----------------------------------------------------- kernel mode

    @property
    def kernel_mode_supported(self):
        """True when kernel launches can run on this worker's device."""
        if not self._ctx.value:
            return False
        if lib.simdev_set_device(self.device_id) != 0:
            return False
        return bool(lib.simpler_kernel_mode_supported(self._ctx))

    def kernel_prepare_callable(self, image):
        """Loads a callable image and returns the id it is launched by
        (0, 1, 2, ... in order)."""
        self._mode("kernel", "kernel_prepare_callable")
        img = Image(image)
        _current(self.device_id)
        callable_id = ctypes.c_int32(-1)
        check(lib.simpler_kernel_mode_prepare_callable(self._ctx, img.buffer, img.size,
                                                       ctypes.byref(callable_id)),
              "simpler_kernel_mode_prepare_callable")
        self._signatures[callable_id.value] = img.signature
        return callable_id.value

    def kernel_launch(self, callable_id, tensors=(), scalars=(), caller_stream=None):
        """Enqueues one round on `caller_stream` and returns; the stream's
        synchronize raises the round's failure. Tensors are device Tensors."""
        self._mode("kernel", "kernel_launch")
        if not isinstance(caller_stream, Stream):
            raise invalid("caller_stream: a simpler.Stream")
        handle = caller_stream.handle
        built = self._build(callable_id, tensors, scalars, host_allowed=False)
        _current(self.device_id)
        check(lib.simpler_kernel_mode_launch(self._ctx, callable_id, ctypes.byref(built.args),
                                             handle), "simpler_kernel_mode_launch")
        caller_stream.keep(built.keep)

    # ------------------------------------------------ rebinding a replay

    def _graph_exec(self, graph, call):
        self._mode("kernel", call)
        if not isinstance(graph, Graph):
            raise invalid("graph: a simpler.Graph", call)
        return graph._live_exec(call)

    @staticmethod
    def _launch_index(index, call):
        if not isinstance(index, int) or index < 0:
            raise invalid("index %r: a launch index, 0..kernel_graph_launches(graph) - 1"
                          % (index,), call)

    def kernel_graph_launches(self, graph):
        """How many rounds of this worker `graph` recorded (its launches,
        indexed 0..count-1 in capture order; 0 if none)."""
        exec_handle = self._graph_exec(graph, "kernel_graph_launches")
        count = ctypes.c_size_t()
        check(lib.simpler_kernel_mode_graph_launches(self._ctx, exec_handle, ctypes.byref(count)),
              "simpler_kernel_mode_graph_launches")
        return count.value

    def kernel_graph_update(self, graph, index, callable_id, tensors=(), scalars=()):
        """Rebinds launch `index` of `graph` to new device Tensors and
        scalars of the same callable, encoded once (as kernel_launch
        would): replays enqueued from now on run with them; replays
        enqueued before keep theirs. PreparedIncompatible for another
        callable or other counts than the launch's; InvalidArgument for an
        index past kernel_graph_launches(graph). A refused update changes
        nothing. The graph keeps the new tensors while they are the
        launch's binding, and each replay keeps the binding it was
        launched with until its stream's synchronize."""
        self._graph_exec(graph, "kernel_graph_update")
        self._launch_index(index, "kernel_graph_update")
        built = self._build(callable_id, tensors, scalars, host_allowed=False)
        _current(self.device_id)

        def update(exec_handle):
            check(lib.simpler_kernel_mode_graph_update(self._ctx, exec_handle, index, callable_id,
                                                       ctypes.byref(built.args)),
                  "simpler_kernel_mode_graph_update")

        graph._rebind("kernel_graph_update", index, built.keep, update)

    def kernel_graph_update_call(self, graph, index, prepared_call):
        """kernel_graph_update from a PreparedCall of this worker: its
        packet, encoded at prepare, is used as is (nothing is encoded
        again). The launch keeps the run config it was captured with. The
        call may be released afterwards: the graph keeps its tensors while
        they are the launch's binding, as kernel_graph_update does."""
        self._graph_exec(graph, "kernel_graph_update_call")
        self._launch_index(index, "kernel_graph_update_call")
        if not isinstance(prepared_call, PreparedCall) or prepared_call._worker is not self:
            raise invalid("prepared_call: a PreparedCall of this worker",
                          "kernel_graph_update_call")
        _current(self.device_id)
        with prepared_call._lock:
            prepared_call._alive("kernel_graph_update_call")

            def update(exec_handle):
                check(lib.simpler_kernel_mode_graph_update_call(self._ctx, exec_handle, index,
                                                                prepared_call._call),
                      "simpler_kernel_mode_graph_update_call")

            graph._rebind("kernel_graph_update_call", index, prepared_call._built.keep, update)
