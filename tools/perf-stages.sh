#!/usr/bin/env bash
# Where simpler's time goes, per stage of a task's life, for one workload
# of the comparison benchmark's simpler worker:
#
#   tools/perf-stages.sh WORKLOAD [key=value ...]    e.g. chain n=100000
#
# Builds build-profile/ (-O2 -fno-inline, so each stage keeps its own
# symbols), runs bench_cmp_simpler under `perf record -e task-clock` (CPU
# time of every thread, sampled), and sums the samples by stage: submit,
# TensorMap, ready queue, dispatch, core (kernel, doorbell wait, register
# protocol), completion, retirement, the scheduler's loop, signalling
# (wake-ups), waiting (spin, yield, futex), clock reads, launch and setup,
# other. Prints each stage's share and its CPU ns
# per task. CPU time on every thread, not wall time: on 2 CPUs the threads
# overlap.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
command -v perf >/dev/null || { echo "perf-stages: perf is not installed (linux-perf)" >&2; exit 1; }
cmake -S . -B build-profile -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="-O2 -fno-inline -fno-omit-frame-pointer" >/dev/null
cmake --build build-profile -j "$(nproc)" --target bench_cmp_simpler >/dev/null
worker=build-profile/bench/compare/bench_cmp_simpler
data=$(mktemp /tmp/perf-stages.XXXXXX)
trap 'rm -f "$data" "$data.old"' EXIT
line=$(OPENBLAS_NUM_THREADS=1 perf record -q -e task-clock -F 4000 -o "$data" -- "$worker" "$@" warmup=0)
echo "$line"
tasks=$(sed -n 's/.* tasks=\([0-9]*\).*/\1/p' <<<"$line")
perf report -i "$data" --no-children --sort sym -g none --percent-limit 0 --stdio 2>/dev/null |
awk -v tasks="$tasks" '
/Event count \(approx\.\)/ { total = $NF }
/^ *[0-9.]+%/ {
    pct = $1; sub("%", "", pct); sym = $NF
    stage = "other"
    if (sym ~ /^(op_submit|check_submit|submit$|cmp_so_|record_|wire_|fanin_|op_scope|scope_|rt_scope_|rt_deps_|rt_producer_valid|dep_take|slot_free|heap_fits|deps_fit|init_slot|output_bytes|tensor_valid|simpler_task_args|simpler_tensor_slice|cell_view|span_view|tile_view|orch_)/) stage = "submit"
    else if (sym ~ /tensormap|tm_|lookup_chain|region_overlap|rt_overlap_|view_|nested_overlap|extent_of|bucket_of|rt_task_retired|is_retired|unlink_and_free/) stage = "TensorMap"
    else if (sym ~ /^rt_rq_|rt_task_ready/) stage = "ready queue"
    else if (sym ~ /dispatch|rt_sched_step|free_units|run_block_on_unit|core_idle|core_can_queue|ring_doorbell/) stage = "dispatch"
    else if (sym ~ /^cmp_sk_|^cmp_k_|dgemm|dtrsm|dsyrk|dpotrf|dgemm_|_HASWELL|_SKYLAKEX|_ZEN|openblas|^d[a-z]+_k|rt_core_main|platform_wait_doorbell|doorbell_changed|platform_write_cond/) stage = "core (kernel, doorbell, ACK/FIN)"
    else if (sym ~ /rt_task_complete|^finish$|poll_core|platform_read_cond|rt_slot_lock|rt_slot_unlock/) stage = "completion"
    else if (sym ~ /ring_advance|rt_slot_release|orch_wants_retirement/) stage = "retirement"
    else if (sym ~ /sd_wake|rt_signal|platform_cond_signal|platform_notify_signal/) stage = "signalling (wake-ups)"
    else if (sym ~ /sd_wait|wait_spin|cpu_relax|sched_yield|futex|_changed$|platform_cond_wait|platform_notify_wait|platform_cond_seq|platform_notify_seq|platform_read_doorbell|pause|schedule|pvm_|finish_task_switch|do_syscall|entry_SYSCALL|syscall|__get_user|exit_to_user|rseq/) stage = "waiting (spin, yield, futex)"
    else if (sym ~ /clock_gettime|simdev_clock_ns|platform_clock_ns|vdso|0x0000/) stage = "clock reads"
    else if (sym ~ /rt_schedule|rt_sched_watch|^loop$|handshake|progress_mark|work_visible|run_finished|any_running/) stage = "scheduler loop"
    else if (sym ~ /memcpy|memmove|memset|page_fault|clear_page|_dl_|do_lookup|mmap|munmap|run_init|rt_layout|rt_aicpu_main|launch|staging|simpler_prepare|simpler_finalize|cmp_chol_init|cmp_gemm_init|cmp_stencil|cmp_check|cmp_fan_expected/) stage = "launch, setup, copies"
    share[stage] += pct
}
END {
    printf "%-36s %7s %12s\n", "stage", "share", "cpu ns/task"
    n = split("submit|TensorMap|ready queue|dispatch|core (kernel, doorbell, ACK/FIN)|completion|retirement|scheduler loop|signalling (wake-ups)|waiting (spin, yield, futex)|clock reads|launch, setup, copies|other", order, "|")
    for (i = 1; i <= n; i++) {
        s = order[i]
        printf "%-36s %6.1f%% %12.1f\n", s, share[s], share[s] / 100 * total / (tasks ? tasks : 1)
    }
    printf "total CPU %.1f ms over %d tasks\n", total / 1e6, tasks
}'
