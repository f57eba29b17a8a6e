"""simpler._structs — ctypes mirrors of the public C structs the package passes.

Owns: the layouts only. Each mirror follows its header field by field; the
test suite compares every size and offset with what the C compiler lays
out (python/tests/native/layout.c), and the tensor descriptor's fixed size
is also checked here at import.
"""
import ctypes

TENSOR_MAX_DIMS = 5   # SIMPLER_TENSOR_MAX_DIMS
RUN_RINGS = 4         # SIMPLER_RUN_RINGS
TASK_ID_NONE = (1 << 64) - 1  # SIMPLER_TASK_ID_NONE
MEM_HOST, MEM_DEVICE = 0, 1   # enum simpler_address_space
CALLABLE_MAGIC = 0x4C435053   # SIMPLER_CALLABLE_MAGIC
CALLABLE_NAME_MAX = 64
CALLABLE_MAX_ARGS = 128


class Tensor(ctypes.Structure):
    """struct simpler_tensor (tensor.h)."""
    _fields_ = [
        ("addr", ctypes.c_uint64),
        ("buffer_bytes", ctypes.c_uint64),
        ("start_offset", ctypes.c_uint64),
        ("producer_task_id", ctypes.c_uint64),
        ("version", ctypes.c_uint32),
        ("ndims", ctypes.c_uint8),
        ("dtype", ctypes.c_uint8),
        ("address_space", ctypes.c_uint8),
        ("flags", ctypes.c_uint8),
        ("shape", ctypes.c_uint64 * TENSOR_MAX_DIMS),
        ("stride", ctypes.c_int64 * TENSOR_MAX_DIMS),
        ("reserved", ctypes.c_uint64),
    ]


if ctypes.sizeof(Tensor) != 128:  # the header's _Static_assert, on this side
    raise ImportError("simpler: ctypes lays struct simpler_tensor out in %d bytes, not 128"
                      % ctypes.sizeof(Tensor))


class Args(ctypes.Structure):
    """struct simpler_args (simpler.h)."""
    _fields_ = [
        ("tensor_count", ctypes.c_uint32),
        ("scalar_count", ctypes.c_uint32),
        ("tensors", ctypes.POINTER(Tensor)),
        ("scalars", ctypes.POINTER(ctypes.c_uint64)),
    ]


class RunConfig(ctypes.Structure):
    """struct simpler_run_config (orchestration.h)."""
    _fields_ = [
        ("task_window", ctypes.c_uint32 * RUN_RINGS),
        ("heap_bytes", ctypes.c_uint64 * RUN_RINGS),
        ("dep_pool", ctypes.c_uint32 * RUN_RINGS),
        ("tensormap_buckets", ctypes.c_uint32),
        ("tensormap_entries", ctypes.c_uint32),
        ("max_fanin", ctypes.c_uint32),
        ("scheduler_threads", ctypes.c_uint32),
        ("ring_timeout_ms", ctypes.c_uint32),
        ("sched_timeout_ms", ctypes.c_uint32),
        ("tensor_wait_timeout_ms", ctypes.c_uint32),
        ("trace_level", ctypes.c_uint32),
        ("trace_records", ctypes.c_uint32),
    ]


class Config(ctypes.Structure):
    """struct simpler_config (simpler.h)."""
    _fields_ = [
        ("pipeline_depth", ctypes.c_uint32),
        ("max_callables", ctypes.c_uint32),
        ("callable_bytes", ctypes.c_uint64),
        ("run_capacity", RunConfig),
        ("max_captures", ctypes.c_uint32),
        ("runtime", ctypes.c_uint32),
    ]


class RunInfo(ctypes.Structure):
    """struct simpler_run_info (simpler.h)."""
    _fields_ = [
        ("status", ctypes.c_int32),
        ("reserved", ctypes.c_uint32),
        ("tasks_submitted", ctypes.c_uint64),
        ("tasks_completed", ctypes.c_uint64),
        ("edges", ctypes.c_uint64),
    ]


class ContextInfo(ctypes.Structure):
    """struct simpler_context_info (simpler.h)."""
    _fields_ = [
        ("unfinalized_runs", ctypes.c_uint32),
        ("stranded_runs", ctypes.c_uint32),
        ("stranded_runs_released", ctypes.c_uint64),
        ("host_preparations", ctypes.c_uint64),
        ("prepared_calls", ctypes.c_uint64),
        ("packets_encoded", ctypes.c_uint64),
        ("host_orchestration_loads", ctypes.c_uint64),
        ("runtime", ctypes.c_uint32),
        ("host_orchestration_unloads", ctypes.c_uint64),
        ("host_builds", ctypes.c_uint64),
        ("host_builds_skipped", ctypes.c_uint64),
    ]


class CallableHeader(ctypes.Structure):
    """struct simpler_callable_header (callable.h): read to learn a signature."""
    _fields_ = [
        ("magic", ctypes.c_uint32),
        ("version", ctypes.c_uint32),
        ("total_bytes", ctypes.c_uint64),
        ("header_bytes", ctypes.c_uint32),
        ("sig_count", ctypes.c_uint32),
        ("scalar_count", ctypes.c_uint32),
        ("child_count", ctypes.c_uint32),
        ("orch_kind", ctypes.c_uint32),
        ("reserved0", ctypes.c_uint32),
        ("orch_offset", ctypes.c_uint64),
        ("orch_bytes", ctypes.c_uint64),
        ("children_offset", ctypes.c_uint64),
        ("entry_name", ctypes.c_char * CALLABLE_NAME_MAX),
        ("config_name", ctypes.c_char * CALLABLE_NAME_MAX),
        ("signature", ctypes.c_uint8 * CALLABLE_MAX_ARGS),
    ]


class MemInfo(ctypes.Structure):
    """struct simdev_mem_info (device.h)."""
    _fields_ = [
        ("capacity", ctypes.c_uint64),
        ("in_use", ctypes.c_uint64),
        ("high_water", ctypes.c_uint64),
        ("allocations", ctypes.c_uint64),
    ]


class ClusterConfig(ctypes.Structure):
    """struct simpler_cluster_config (cluster.h)."""
    _fields_ = [
        ("worker_count", ctypes.c_uint32),
        ("max_tasks", ctypes.c_uint32),
        ("device_ids", ctypes.POINTER(ctypes.c_int)),
        ("device_config", ctypes.POINTER(Config)),
        ("distributed", ctypes.c_uint32),
        ("peer_timeout_ms", ctypes.c_uint32),
    ]


class ClusterRunInfo(ctypes.Structure):
    """struct simpler_cluster_run_info (cluster.h)."""
    _fields_ = [
        ("status", ctypes.c_int32),
        ("orch_status", ctypes.c_int32),
        ("tasks_submitted", ctypes.c_uint64),
        ("tasks_succeeded", ctypes.c_uint64),
        ("tasks_failed", ctypes.c_uint64),
        ("tasks_cancelled", ctypes.c_uint64),
        ("runs_launched", ctypes.c_uint64),
        ("dependencies", ctypes.c_uint64),
        ("raw", ctypes.c_uint64),
        ("war", ctypes.c_uint64),
        ("waw", ctypes.c_uint64),
        ("first_failed_task", ctypes.c_uint64),
        ("first_failed_status", ctypes.c_int32),
        ("reserved", ctypes.c_uint32),
        ("bytes_sent", ctypes.c_uint64),
        ("bytes_received", ctypes.c_uint64),
        ("remote_runs", ctypes.c_uint64),
    ]


class ClusterMember(ctypes.Structure):
    """struct simpler_cluster_member (cluster.h)."""
    _fields_ = [
        ("worker", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("args", ctypes.POINTER(Args)),
    ]


class ClusterTaskInfo(ctypes.Structure):
    """struct simpler_cluster_task_info (cluster.h)."""
    _fields_ = [
        ("state", ctypes.c_uint32),
        ("status", ctypes.c_int32),
        ("members", ctypes.c_uint32),
        ("members_ended", ctypes.c_uint32),
        ("dependencies", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
    ]


# simpler_cluster_orch_fn: int (*)(struct simpler_cluster_orch *, void *).
ClusterOrchFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

CLUSTER_MAX_WORKERS = 64  # SIMPLER_CLUSTER_MAX_WORKERS

# Every mirror by its C name, for the layout test.
MIRRORS = {
    "simpler_tensor": Tensor,
    "simpler_args": Args,
    "simpler_run_config": RunConfig,
    "simpler_config": Config,
    "simpler_run_info": RunInfo,
    "simpler_context_info": ContextInfo,
    "simpler_callable_header": CallableHeader,
    "simdev_mem_info": MemInfo,
    "simpler_cluster_config": ClusterConfig,
    "simpler_cluster_run_info": ClusterRunInfo,
    "simpler_cluster_member": ClusterMember,
    "simpler_cluster_task_info": ClusterTaskInfo,
}
