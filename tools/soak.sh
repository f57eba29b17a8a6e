#!/usr/bin/env bash
# Soak: runs the pipeline, fault and review tests many times under each
# build, to catch what fails only sometimes (races, lost wake-ups, hangs).
# Run through `make soak` (which builds what is missing and passes the
# sanitizer options `make test` uses); docs/testing.md explains the output.
#
# The tests, by what they stress:
#   pipeline  test_program_mode, test_program_elf (program-mode runs through
#             simpler.h), test_kernel_mode (kernel-mode launches, several
#             threads and streams at once), test_launch_chain (a stream chain
#             captured and replayed), test_error_chain (errors carried along
#             streams and events), test_kernel_capture (kernel-mode graphs
#             replayed on several streams at once, closed under replays),
#             test_sem (the round gate's semaphore), test_prepared_call
#             (one prepared call submitted four at once and released while
#             another thread submits it), test_graph_update and
#             test_kernel_graph_update (replays racing argument updates);
#             each test_program_*, test_kernel_*
#             and test_prepared_call of these with its _internals half (the
#             cases that read the host's internals)
#   faults    test_program_faults, test_runtime_faults, test_host_faults,
#             test_fault (every device op and host allocation failed in turn),
#             test_chain_breaks (every op of a run's launch chain failed as it
#             executes), test_kernel_chain_breaks (every op of a kernel-mode
#             launch's chain failed at enqueue and as it executes, eagerly
#             and captured, and failing replays), test_program_stranded
#             (runs whose finalize failed)
#   review    test_program_review and test_program_review_internals
#             (regressions from review: run reuse, second waiters, stale
#             results)
#   engine    test_dispatch (the scheduler's steps on awake threads, cores
#             that fetch while idle, parked cores woken only when needed,
#             with a runnable budget of one thread too), test_regs (the
#             register windows, the runnable budget, waits with a predicate),
#             test_stream, test_event and test_profile (a stream's ops run
#             by whichever thread ended the op before: launches ended by
#             their device threads, records letting waiting streams go on)
#   cluster   test_cluster (runs on four devices at once, ordered by the
#             host TensorMap across devices, a failure cancelling its
#             dependents) and test_cluster_faults (every host allocation
#             of a cluster's create, registration and run failed in turn)
#   hbg       test_hbg (host_build_graph's own cases), and test_dispatch,
#             test_program_mode, test_differential, test_program_faults,
#             and kernel mode's test_kernel_chain_breaks,
#             test_kernel_graph_update and test_kernel_capture (staged image
#             copies in captures, replays racing updates that rebuild the
#             image) under host_build_graph:
#             a name test@hbg runs the test with SIMPLER_RUNTIME=hbg
#   mpi       test_cluster_mpi@mpi (a cluster over two MPI ranks: runs
#             across ranks ordered by rank 0's TensorMap, a failing run on
#             rank 1) and test_cluster_mpi@mpikill (rank 1 killed inside a
#             kernel; rank 0 ends with PEER_LOST within the peer timeout)
#             test_cluster_mpi@mpistop (the same with rank 1 stopped, alive
#             and silent) and test_cluster_mpi@mpiabsent (rank 1 never
#             joins create),
#             run through mpiexec -n 2 (the last three through
#             tests/mpi/run_kill.sh); only in the builds that have them (MPI
#             found; never TSan), skipped with a line elsewhere
#
# Environment:
#   SOAK_N        repetitions of each test per build (default 20: about thirty
#                 minutes for the three builds on a 2-CPU machine when
#                 nothing hangs; each hang adds about SOAK_TIMEOUT / 2)
#   SOAK_TESTS    the tests to run instead of the list above
#   SOAK_BUILDS   which builds, in order (default "normal asan tsan"); their
#                 directories are build/, build-asan/, build-tsan/
#   SOAK_JOBS     runs at once (default: the number of CPUs); more than one
#                 puts the runs under load, which is where races show
#   SOAK_TIMEOUT  seconds one run may take before `timeout` kills it
#                 (default 120: test_kernel_mode under TSan took 29 s on
#                 average and 47 s at worst in a soak beside other work on
#                 a 2-CPU machine); the test watchdog fires 15 s earlier and
#                 writes every thread's stack to the log
#   SOAK_ENV_normal, SOAK_ENV_asan, SOAK_ENV_tsan
#                 VAR=value words set for that build's runs (the Makefile
#                 passes its ASAN_ENV and TSAN_ENV)
#   SOAK_LOG_DIR  where the logs of failed runs are kept
#                 (default build-soak/<date-time>/)
#
# Prints, per build and in total, "N passed, M failed" (and how many of the
# failures were hangs), names the kept logs, and exits 1 on any failure.
set -uo pipefail
export LC_ALL=C # a decimal point in $EPOCHREALTIME and awk

root=$(cd "$(dirname "$0")/.." && pwd)
tests=(test_program_mode test_program_mode_internals test_program_elf test_program_elf_internals
       test_kernel_mode test_kernel_mode_internals test_kernel_capture test_kernel_capture_internals
       test_sem test_launch_chain test_error_chain test_program_faults test_runtime_faults test_host_faults
       test_fault test_chain_breaks test_kernel_chain_breaks test_program_stranded test_program_review test_program_review_internals
       test_dispatch test_regs test_prepared_call test_prepared_call_internals
       test_graph_update test_kernel_graph_update test_stream test_event test_profile test_enqueue_batch
       test_hbg test_dispatch@hbg test_program_mode@hbg test_differential@hbg test_program_faults@hbg
       test_kernel_chain_breaks@hbg test_kernel_graph_update@hbg test_kernel_capture@hbg
       test_cluster test_cluster_faults test_cluster_mpi@mpi test_cluster_mpi@mpikill
       test_cluster_mpi@mpistop test_cluster_mpi@mpiabsent)
if [ -n "${SOAK_TESTS:-}" ]; then
    read -r -a tests <<<"$SOAK_TESTS"
fi
repetitions=${SOAK_N:-20}
builds=${SOAK_BUILDS:-normal asan tsan}
jobs=${SOAK_JOBS:-$(nproc 2>/dev/null || echo 2)}
run_timeout=${SOAK_TIMEOUT:-120}
watchdog_margin=15
log_dir=${SOAK_LOG_DIR:-$root/build-soak/$(date +%Y%m%d-%H%M%S)}

if [ "$run_timeout" -le "$watchdog_margin" ]; then
    echo "soak: SOAK_TIMEOUT must exceed $watchdog_margin s (the watchdog fires that much earlier)" >&2
    exit 2
fi
mkdir -p "$log_dir"
results="$log_dir/results"
: >"$results"

build_dir() {
    case "$1" in
        normal) echo "$root/build" ;;
        asan | tsan) echo "$root/build-$1" ;;
        *) echo "soak: unknown build '$1' (normal, asan or tsan)" >&2; return 1 ;;
    esac
}

# Seconds since an $EPOCHREALTIME reading, to a tenth.
elapsed_since() {
    awk -v from="$1" -v to="$EPOCHREALTIME" 'BEGIN { printf "%.1f", to - from }'
}

# One run of one test: appends "build test repetition outcome seconds" to the
# results and keeps the log unless the run passed. Outcomes: pass, fail,
# hang (the watchdog reported and aborted), timeout (killed by `timeout`:
# the watchdog did not fire).
run_one() {
    local build=$1 executable=$2 test=$3 repetition=$4
    local log="$log_dir/$build.$test.$repetition.log" sanitizer_env=()
    local env_name="SOAK_ENV_$build"
    read -r -a sanitizer_env <<<"${!env_name:-}"
    local started=$EPOCHREALTIME status outcome runtime_env=() command=("$executable")
    # test@hbg: the test under host_build_graph; test@mpi: on two MPI
    # ranks; test@mpikill: its kill case, judged by rank 0's verdict.
    case $test in
        *@hbg)
            runtime_env=(SIMPLER_RUNTIME=hbg)
            log="$log_dir/$build.${test%@hbg}.hbg.$repetition.log" ;;
        *@mpi)
            log="$log_dir/$build.${test%@mpi}.mpi.$repetition.log"
            # leaks are not checked under MPI (tests/CMakeLists.txt)
            runtime_env=(ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
            command=(mpiexec -n 2 "$executable") ;;
        *@mpikill | *@mpistop | *@mpiabsent)
            local case=${test##*@mpi}
            log="$log_dir/$build.${test%@*}.$case.$repetition.log"
            runtime_env=(ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
            command=(sh "$root/tests/mpi/run_kill.sh" mpiexec "$executable" "$log.verdict" "$case") ;;
    esac
    env "${sanitizer_env[@]}" "${runtime_env[@]}" \
        SIMPLER_TEST_WATCHDOG_S=$((run_timeout - watchdog_margin)) \
        timeout -k 10 "$run_timeout" "${command[@]}" >"$log" 2>&1 </dev/null
    status=$?
    if [ "$status" -eq 0 ]; then
        outcome=pass
    elif grep -q "^simpler watchdog: aborting" "$log"; then
        outcome=hang
    elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        outcome=timeout
    else
        outcome=fail
    fi
    echo "$build $test $repetition $outcome $(elapsed_since "$started")" >>"$results"
    if [ "$outcome" = pass ]; then
        rm -f "$log" "$log.verdict"
    else
        echo "soak: $build $test run $repetition: $outcome (exit $status), log: $log"
    fi
}

# Prints "<label>: N passed, M failed (H hangs)" for the result lines read
# from stdin.
summarize() {
    awk -v label="$1" '
        { if ($4 == "pass") passed++; else failed++; if ($4 == "hang" || $4 == "timeout") hung++ }
        END { printf "%s: %d passed, %d failed (%d hangs)\n", label, passed, failed, hung }'
}

soak_started=$SECONDS
for build in $builds; do
    dir=$(build_dir "$build") || exit 2
    build_tests=()
    for test in "${tests[@]}"; do
        executable="$dir/tests/${test%@*}"
        if [[ $test == *@mpi* ]] && [ ! -x "$executable" ]; then
            echo "soak: $build: $test skipped (this build has no MPI: docs/cluster.md)"
            continue
        fi
        if [ ! -x "$executable" ]; then
            echo "soak: $executable is missing: build first (make soak builds it)" >&2
            exit 2
        fi
        build_tests+=("$test")
    done
    build_started=$SECONDS
    echo "soak: $build: ${#build_tests[@]} tests x $repetitions runs, $jobs at once, ${run_timeout} s per run"
    running=0
    for ((repetition = 1; repetition <= repetitions; repetition++)); do
        for test in "${build_tests[@]}"; do
            # stderr: bash's own "Aborted" notice for a run the watchdog
            # ended (the run's output goes to its log).
            run_one "$build" "$dir/tests/${test%@*}" "$test" "$repetition" 2>/dev/null &
            running=$((running + 1))
            if [ "$running" -ge "$jobs" ]; then
                wait -n
                running=$((running - 1))
            fi
        done
    done
    wait
    grep "^$build " "$results" | summarize "soak $build ($((SECONDS - build_started)) s)"
done

echo "soak: seconds per run (mean, slowest) by build and test:"
awk '{ key = $1 " " $2; runs[key]++; total[key] += $5; if ($5 > slowest[key]) slowest[key] = $5 }
     END { for (key in runs) printf "  %-32s %6.1f %6.1f\n", key, total[key] / runs[key], slowest[key] }' \
    "$results" | sort
summarize "soak total ($((SECONDS - soak_started)) s)" <"$results"
if grep -qv " pass " "$results"; then
    echo "soak: FAILED: the logs of the failed runs are in $log_dir"
    exit 1
fi
rm -rf "$log_dir"
