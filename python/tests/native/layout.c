/*
 * layout.c — prints the size and every field offset of the public structs
 * the Python package mirrors with ctypes, as one JSON object, so the test
 * compares the mirror against what the C compiler lays out (one source of
 * truth: the headers).
 */
#include <stddef.h>
#include <stdio.h>

#include "simpler/cluster.h"
#include "simpler/simpler.h"

#define STRUCT(type) printf("%s\"%s\": {\"sizeof\": %zu", first ? "" : ", ", #type, \
                            sizeof(struct type)), first = 0
#define FIELD(type, field) printf(", \"%s\": %zu", #field, offsetof(struct type, field))
#define END() printf("}")

int main(void)
{
    int first = 1;
    printf("{");
    STRUCT(simpler_tensor);
    FIELD(simpler_tensor, addr); FIELD(simpler_tensor, buffer_bytes);
    FIELD(simpler_tensor, start_offset); FIELD(simpler_tensor, producer_task_id);
    FIELD(simpler_tensor, version); FIELD(simpler_tensor, ndims); FIELD(simpler_tensor, dtype);
    FIELD(simpler_tensor, address_space); FIELD(simpler_tensor, flags);
    FIELD(simpler_tensor, shape); FIELD(simpler_tensor, stride); FIELD(simpler_tensor, reserved);
    END();
    STRUCT(simpler_args);
    FIELD(simpler_args, tensor_count); FIELD(simpler_args, scalar_count);
    FIELD(simpler_args, tensors); FIELD(simpler_args, scalars);
    END();
    STRUCT(simpler_run_config);
    FIELD(simpler_run_config, task_window); FIELD(simpler_run_config, heap_bytes);
    FIELD(simpler_run_config, dep_pool); FIELD(simpler_run_config, tensormap_buckets);
    FIELD(simpler_run_config, tensormap_entries); FIELD(simpler_run_config, max_fanin);
    FIELD(simpler_run_config, scheduler_threads); FIELD(simpler_run_config, ring_timeout_ms);
    FIELD(simpler_run_config, sched_timeout_ms); FIELD(simpler_run_config, tensor_wait_timeout_ms);
    FIELD(simpler_run_config, trace_level); FIELD(simpler_run_config, trace_records);
    END();
    STRUCT(simpler_config);
    FIELD(simpler_config, pipeline_depth); FIELD(simpler_config, max_callables);
    FIELD(simpler_config, callable_bytes); FIELD(simpler_config, run_capacity);
    FIELD(simpler_config, max_captures);
    FIELD(simpler_config, runtime);
    END();
    STRUCT(simpler_run_info);
    FIELD(simpler_run_info, status); FIELD(simpler_run_info, reserved);
    FIELD(simpler_run_info, tasks_submitted); FIELD(simpler_run_info, tasks_completed);
    FIELD(simpler_run_info, edges);
    END();
    STRUCT(simpler_context_info);
    FIELD(simpler_context_info, unfinalized_runs); FIELD(simpler_context_info, stranded_runs);
    FIELD(simpler_context_info, stranded_runs_released);
    FIELD(simpler_context_info, host_preparations);
    FIELD(simpler_context_info, prepared_calls);
    FIELD(simpler_context_info, packets_encoded);
    FIELD(simpler_context_info, host_orchestration_loads);
    FIELD(simpler_context_info, runtime);
    FIELD(simpler_context_info, host_orchestration_unloads);
    FIELD(simpler_context_info, host_builds);
    FIELD(simpler_context_info, host_builds_skipped);
    END();
    STRUCT(simpler_callable_header);
    FIELD(simpler_callable_header, magic); FIELD(simpler_callable_header, version);
    FIELD(simpler_callable_header, total_bytes); FIELD(simpler_callable_header, header_bytes);
    FIELD(simpler_callable_header, sig_count); FIELD(simpler_callable_header, scalar_count);
    FIELD(simpler_callable_header, child_count); FIELD(simpler_callable_header, orch_kind);
    FIELD(simpler_callable_header, reserved0); FIELD(simpler_callable_header, orch_offset);
    FIELD(simpler_callable_header, orch_bytes); FIELD(simpler_callable_header, children_offset);
    FIELD(simpler_callable_header, entry_name); FIELD(simpler_callable_header, config_name);
    FIELD(simpler_callable_header, signature);
    END();
    STRUCT(simdev_mem_info);
    FIELD(simdev_mem_info, capacity); FIELD(simdev_mem_info, in_use);
    FIELD(simdev_mem_info, high_water); FIELD(simdev_mem_info, allocations);
    END();
    STRUCT(simpler_cluster_config);
    FIELD(simpler_cluster_config, worker_count); FIELD(simpler_cluster_config, max_tasks);
    FIELD(simpler_cluster_config, device_ids); FIELD(simpler_cluster_config, device_config);
    FIELD(simpler_cluster_config, distributed); FIELD(simpler_cluster_config, peer_timeout_ms);
    END();
    STRUCT(simpler_cluster_run_info);
    FIELD(simpler_cluster_run_info, status); FIELD(simpler_cluster_run_info, orch_status);
    FIELD(simpler_cluster_run_info, tasks_submitted);
    FIELD(simpler_cluster_run_info, tasks_succeeded);
    FIELD(simpler_cluster_run_info, tasks_failed); FIELD(simpler_cluster_run_info, tasks_cancelled);
    FIELD(simpler_cluster_run_info, runs_launched); FIELD(simpler_cluster_run_info, dependencies);
    FIELD(simpler_cluster_run_info, raw); FIELD(simpler_cluster_run_info, war);
    FIELD(simpler_cluster_run_info, waw); FIELD(simpler_cluster_run_info, first_failed_task);
    FIELD(simpler_cluster_run_info, first_failed_status); FIELD(simpler_cluster_run_info, reserved);
    FIELD(simpler_cluster_run_info, bytes_sent); FIELD(simpler_cluster_run_info, bytes_received);
    FIELD(simpler_cluster_run_info, remote_runs);
    END();
    STRUCT(simpler_cluster_member);
    FIELD(simpler_cluster_member, worker); FIELD(simpler_cluster_member, reserved);
    FIELD(simpler_cluster_member, args);
    END();
    STRUCT(simpler_cluster_task_info);
    FIELD(simpler_cluster_task_info, state); FIELD(simpler_cluster_task_info, status);
    FIELD(simpler_cluster_task_info, members); FIELD(simpler_cluster_task_info, members_ended);
    FIELD(simpler_cluster_task_info, dependencies); FIELD(simpler_cluster_task_info, reserved);
    END();
    /* The enums the package mirrors as IntEnums. */
    printf(", \"enums\": {");
#define ENUM(name) printf("%s\"%s\": %d", first_enum ? "" : ", ", #name, (int)(name)), first_enum = 0
    int first_enum = 1;
    ENUM(SIMPLER_DTYPE_F32); ENUM(SIMPLER_DTYPE_F16); ENUM(SIMPLER_DTYPE_BF16);
    ENUM(SIMPLER_DTYPE_F64); ENUM(SIMPLER_DTYPE_I8); ENUM(SIMPLER_DTYPE_I16);
    ENUM(SIMPLER_DTYPE_I32); ENUM(SIMPLER_DTYPE_I64); ENUM(SIMPLER_DTYPE_U8);
    ENUM(SIMPLER_DTYPE_U16); ENUM(SIMPLER_DTYPE_U32); ENUM(SIMPLER_DTYPE_U64);
    ENUM(SIMPLER_DIR_SCALAR); ENUM(SIMPLER_DIR_IN); ENUM(SIMPLER_DIR_OUT); ENUM(SIMPLER_DIR_INOUT);
    ENUM(SIMPLER_CORE_AIC); ENUM(SIMPLER_CORE_AIV);
    ENUM(SIMPLER_TENSOR_MAX_DIMS); ENUM(SIMPLER_RUN_RINGS); ENUM(SIMPLER_CALLABLE_MAGIC);
    ENUM(SIMPLER_CALLABLE_NAME_MAX); ENUM(SIMPLER_CALLABLE_MAX_ARGS);
    ENUM(SIMPLER_MEM_HOST); ENUM(SIMPLER_MEM_DEVICE);
    ENUM(SIMDEV_COPY_HOST_TO_DEVICE); ENUM(SIMDEV_COPY_DEVICE_TO_HOST);
    ENUM(SIMPLER_CLUSTER_TASK_PENDING); ENUM(SIMPLER_CLUSTER_TASK_QUEUED);
    ENUM(SIMPLER_CLUSTER_TASK_RUNNING); ENUM(SIMPLER_CLUSTER_TASK_DONE);
    ENUM(SIMPLER_CLUSTER_MAX_WORKERS);
    printf("}}\n");
    return 0;
}
