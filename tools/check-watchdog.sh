#!/usr/bin/env bash
# The test watchdog's self-test: runs tests/support/watchdog_hang (a program
# that hangs on purpose, the watchdog linked in as in every test) with a
# short deadline and checks that the watchdog reported both hung threads by
# function name, in the requested way, and aborted the process.
# Usage: check-watchdog.sh PROGRAM gdb|backtrace
set -uo pipefail
program=$1 mode=$2
case "$mode" in
    gdb) export SIMPLER_TEST_WATCHDOG_GDB=1; banner="end of gdb's report" ;;
    backtrace) export SIMPLER_TEST_WATCHDOG_GDB=0; banner="each thread's backtrace" ;;
    *) echo "check-watchdog.sh: mode must be gdb or backtrace" >&2; exit 2 ;;
esac
export SIMPLER_TEST_WATCHDOG_S=${SIMPLER_TEST_WATCHDOG_S:-2}

# A machine where gdb cannot attach to a process at all (ptrace forbidden
# by the sandbox) cannot give a gdb report: the watchdog falls back to its
# backtrace report there, which the backtrace mode tests. Skip (77), do not
# fail, so such a CI machine still runs the rest.
if [ "$mode" = gdb ]; then
    sleep 30 &
    probe=$!
    frames=$(timeout 30 gdb -nx -batch -p "$probe" -ex "bt" 2>&1 | grep -c '^#[0-9]')
    kill "$probe" 2>/dev/null
    wait "$probe" 2>/dev/null
    if [ "${frames:-0}" -eq 0 ]; then
        echo "check-watchdog.sh: gdb cannot attach to a process on this machine: skipped"
        exit 77
    fi
fi

# The outer bound only matters if the watchdog itself is broken.
output=$(timeout -s KILL $((SIMPLER_TEST_WATCHDOG_S + 40)) "$program" 2>&1)
status=$?
printf '%s\n' "$output"

fail() {
    echo "check-watchdog.sh: FAILED: $*" >&2
    exit 1
}
# 134 = 128 + SIGABRT: the watchdog's abort(), not a normal exit.
[ "$status" -eq 134 ] || fail "exit status $status, expected 134 (abort)"
grep -q "simpler watchdog: .* still running after $SIMPLER_TEST_WATCHDOG_S s" <<<"$output" ||
    fail "no watchdog banner"
grep -qF "simpler watchdog: $banner" <<<"$output" || fail "the report was not made with $mode"
for function in watchdog_hang_helper_waits_forever watchdog_hang_main_joins_forever; do
    grep -q "$function" <<<"$output" || fail "no stack line names $function"
done
grep -qF "simpler watchdog: aborting" <<<"$output" || fail "no abort line"
echo "check-watchdog.sh: $mode report names both hung threads"
