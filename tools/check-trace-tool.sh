#!/usr/bin/env bash
# Checks simpler-trace against a real run: the vector example traced at
# level 4 through SIMPLER_TRACE, then summarised and drawn, under the
# runtime SIMPLER_RUNTIME names (tmr when unset; hbg: the host builds the
# graph, so its summary has the host build where TMR's has the device's
# submits and orchestration).
#   check-trace-tool.sh VECTOR_EXAMPLE SIMPLER_TRACE_TOOL SCRATCH_DIR
# Exit 0 when the summary names the example's 5 tasks and 6 edges, reports
# every figure level 4 gives (the run's steps in time order among them),
# and the SVG holds one rectangle per task.
set -euo pipefail
example=$1 tool=$2 dir=$3
rm -rf "$dir"
mkdir -p "$dir"
SIMPLER_TRACE="4,$dir/vector.json" "$example" > "$dir/example.out"
for f in vector.json vector.deps.json vector.deps.dot; do
    [ -s "$dir/$f" ] || { echo "check-trace-tool: $f was not written" >&2; exit 1; }
done
"$tool" --svg "$dir/vector.svg" "$dir/vector.json" > "$dir/summary.txt"
cat "$dir/summary.txt"
expect() {
    grep -q -- "$1" "$dir/summary.txt" || { echo "check-trace-tool: no \"$1\" in the summary" >&2; exit 1; }
}
expect "tasks 5, dependency edges 6, dropped records 0"
expect "critical path: .* over 4 tasks"   # t0 -> t1 (or t2) -> t3 -> t4
expect "ready-to-start latency: .*(5 tasks)"
expect "dispatch-to-start latency: .*(5 tasks)"
expect "scheduler overhead per task: [0-9]"
expect "host: prepare"
# The run step by step: every milestone level 4 records in program mode,
# from the launch; a missing row means its events were not read.
steps=("host: launch called  *0.0" "first task ready" "first block dispatched"
       "first kernel begins" "last kernel ends" "last block's end seen" "host: wait returns")
if [ "${SIMPLER_RUNTIME:-tmr}" = hbg ]; then
    expect "submit cost per task: .* on the host (host_build_graph: .* for 5 tasks)"
    steps+=("host: graph built")
else
    expect "submit cost per task: mean .*(5 submits)"
    steps+=("orchestration begins" "first task submitted" "orchestration ends")
fi
for step in "${steps[@]}"; do
    expect "^  $step "
done
# In time order: the launch first (the device starts after it), the last
# kernel's end after the first kernel's begin, the wait's return last.
order=$(sed -n '/step by step/,$p' "$dir/summary.txt" | awk 'NR > 1 && /^  / {print $0}')
row() { grep -n -- "$1" <<< "$order" | cut -d: -f1; }
rows=$(wc -l <<< "$order")
[ "$(row "host: launch called")" -eq 1 ] && [ "$(row "first kernel begins")" -lt "$(row "last kernel ends")" ] &&
    [ "$(row "host: wait returns")" -eq "$rows" ] ||
    { echo "check-trace-tool: the steps are out of order" >&2; exit 1; }
tasks=$(grep -c '<title>kernel_' "$dir/vector.svg" || true)
[ "$tasks" -eq 5 ] || { echo "check-trace-tool: $tasks task rectangles in the SVG, want 5" >&2; exit 1; }
# A file that is not a trace is refused with a message, not a crash.
echo '{"nothing": 1}' > "$dir/bad.json"
if "$tool" "$dir/bad.json" 2> "$dir/bad.err"; then
    echo "check-trace-tool: a file without traceEvents was accepted" >&2; exit 1
fi
grep -q "no traceEvents" "$dir/bad.err"
echo "check-trace-tool: ok"
