#!/usr/bin/env bash
# Checks simpler-trace against a real run: the vector example traced at
# level 4 through SIMPLER_TRACE, then summarised and drawn.
#   check-trace-tool.sh VECTOR_EXAMPLE SIMPLER_TRACE_TOOL SCRATCH_DIR
# Exit 0 when the summary names the example's 5 tasks and 6 edges, reports
# every figure level 4 gives, and the SVG holds one rectangle per task.
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
expect "submit cost per task: mean .*(5 submits)"
expect "host: prepare"
tasks=$(grep -c '<title>kernel_' "$dir/vector.svg" || true)
[ "$tasks" -eq 5 ] || { echo "check-trace-tool: $tasks task rectangles in the SVG, want 5" >&2; exit 1; }
# A file that is not a trace is refused with a message, not a crash.
echo '{"nothing": 1}' > "$dir/bad.json"
if "$tool" "$dir/bad.json" 2> "$dir/bad.err"; then
    echo "check-trace-tool: a file without traceEvents was accepted" >&2; exit 1
fi
grep -q "no traceEvents" "$dir/bad.err"
echo "check-trace-tool: ok"
