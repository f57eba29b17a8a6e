#!/usr/bin/env bash
# Builds the callable-image fuzzer (fuzz_callable.c, clang + libFuzzer +
# ASan + UBSan) and its seed writer into OUT (default build-fuzz/), writes
# the seed corpus, and fuzzes a temporary copy of it for FUZZ_SECONDS
# (default 30). Fails on a crash, a sanitizer report or a violated
# invariant; the reproducer is left in OUT as crash-*/leak-*/timeout-*.
# Independent of CMake: the target links only src/host/callable.c, the
# common validator (src/common/callable_validate.c, elf_check.c) and
# src/common/host_alloc.c.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-30}
cc=${FUZZ_CC:-clang}

mkdir -p "$out"
out=$(cd "$out" && pwd)
flags=(-std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -fno-omit-frame-pointer
       -I"$root/include" -I"$root/src" -I"$root/tests/unit")
sources=("$root/src/host/callable.c" "$root/src/common/callable_validate.c"
         "$root/src/common/elf_check.c" "$root/src/common/host_alloc.c")

"$cc" "${flags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    "$root/tests/fuzz/fuzz_callable.c" "${sources[@]}" -o "$out/fuzz_callable"
"$cc" "${flags[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all \
    "$root/tests/fuzz/callable_seeds.c" "${sources[@]}" -o "$out/callable_seeds"

# A real shared object for seed 5 (the scenario tests' ELF callable).
"$cc" -std=c11 -O1 -fPIC -shared -I"$root/include" "$root/tests/scenario/elf/elf_callable.c" \
    -o "$out/elf_callable.so"

rm -rf "$out/seeds"
mkdir "$out/seeds"
"$out/callable_seeds" "$out/seeds" "$out/elf_callable.so"

corpus=$(mktemp -d "${TMPDIR:-/tmp}/simpler-fuzz-corpus.XXXXXX")
trap 'rm -rf "$corpus"' EXIT
cp "$out/seeds"/* "$corpus"/

log="$out/fuzz_callable.log"
echo "fuzz_callable: ${seconds}s on $(ls "$corpus" | wc -l) seeds (log: $log)"
if ! "$out/fuzz_callable" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$out/" "$corpus" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz_callable: FAILED (reproducer in $out/)" >&2
    exit 1
fi
grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)' "$log" || true
