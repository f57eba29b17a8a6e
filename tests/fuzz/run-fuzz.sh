#!/usr/bin/env bash
# Builds and runs simpler's libFuzzer targets (clang + libFuzzer + ASan +
# UBSan) into OUT (default build-fuzz/), each for FUZZ_SECONDS (default
# 30). Fails on a crash, a sanitizer report or a violated invariant; the
# reproducer is left in OUT as crash-*/leak-*/timeout-* (run the target on
# it to replay).
#
#   fuzz_callable  simpler_callable_validate and the builder (fuzz_callable.c),
#                  seeded with builder-made images and a real shared object.
#                  Independent of CMake: it links only src/host/callable_builder.c,
#                  the common validator (src/common/callable_validate.c,
#                  elf_check.c) and src/common/host_alloc.c. Its corpus is a
#                  fresh copy of the seeds on every run.
#   fuzz_packet    the kernel-mode packet's decoder and argument check
#                  (fuzz_packet.c), seeded with packets packet_seeds.c
#                  encodes. Independent of CMake: it links only
#                  src/common/packet.c and view.c. Its corpus persists in
#                  OUT/corpus/fuzz_packet; the seeds are added on every run.
#   fuzz_submit    submit's argument checks and element access, against real
#                  runs on the simulated device (fuzz_submit.c).
#   fuzz_prepare   prepare's checks of a run's descriptors, on a program-mode
#                  context (fuzz_prepare.c).
# The last two link the whole runtime: OUT/cmake is a CMake build of the
# project with SIMPLER_SANITIZE=fuzzer (incremental after the first run).
# Their corpora persist in OUT/corpus/<target>, so longer runs (make
# fuzz-long) build on what shorter ones found.
#
# FUZZ_TARGETS (default: all four) names the targets to run; FUZZ_JOBS
# (default 2) the build's parallelism.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-30}
cc=${FUZZ_CC:-clang}
targets=${FUZZ_TARGETS:-fuzz_callable fuzz_packet fuzz_submit fuzz_prepare}
jobs=${FUZZ_JOBS:-2}

mkdir -p "$out"
out=$(cd "$out" && pwd)

# Runs target $1 (an executable) for $seconds on corpus directory $2.
fuzz() {
    local name=$1 corpus=$2 log="$out/$1.log"
    echo "$name: ${seconds}s on $(ls "$corpus" | wc -l) inputs (log: $log)"
    if ! "$3" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 \
            -print_final_stats=1 -artifact_prefix="$out/" "$corpus" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "$name: FAILED (reproducer in $out/)" >&2
        exit 1
    fi
    grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)' \
        "$log" || true
}

build_callable() {
    local flags=(-std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -fno-omit-frame-pointer
                 -I"$root/include" -I"$root/src" -I"$root/tests/support")
    local sources=("$root/src/host/callable_builder.c" "$root/src/common/callable_validate.c"
                   "$root/src/common/elf_check.c" "$root/src/common/host_alloc.c")
    "$cc" "${flags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
        "$root/tests/fuzz/fuzz_callable.c" "${sources[@]}" -o "$out/fuzz_callable"
    "$cc" "${flags[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all \
        "$root/tests/fuzz/callable_seeds.c" "${sources[@]}" -o "$out/callable_seeds"
    # A real shared object for seed 5 (test_program_elf's ELF callable).
    "$cc" -std=c11 -O1 -fPIC -shared -I"$root/include" \
        "$root/tests/support/elf_callable.c" -o "$out/elf_callable.so"
    rm -rf "$out/seeds"
    mkdir "$out/seeds"
    "$out/callable_seeds" "$out/seeds" "$out/elf_callable.so"
}

build_packet() {
    local flags=(-std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -fno-omit-frame-pointer
                 -I"$root/include" -I"$root/src")
    local sources=("$root/src/common/packet.c" "$root/src/common/view.c")
    "$cc" "${flags[@]}" -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
        "$root/tests/fuzz/fuzz_packet.c" "${sources[@]}" -o "$out/fuzz_packet"
    "$cc" "${flags[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all \
        "$root/tests/fuzz/packet_seeds.c" "${sources[@]}" -o "$out/packet_seeds"
    mkdir -p "$out/corpus/fuzz_packet"
    "$out/packet_seeds" "$out/corpus/fuzz_packet"
}

runtime_built=no
build_runtime() {
    [ "$runtime_built" = yes ] && return
    cmake -S "$root" -B "$out/cmake" -DCMAKE_C_COMPILER="$cc" -DSIMPLER_SANITIZE=fuzzer \
        -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" >"$out/cmake.log"
    cmake --build "$out/cmake" -j "$jobs" --target fuzz_submit fuzz_prepare >>"$out/cmake.log" ||
        { tail -n 40 "$out/cmake.log" >&2; exit 1; }
    runtime_built=yes
}

# Seeds for the runtime targets: byte 0 decodes to "the default", so an
# empty input is a valid call; the rest are a few valid shapes to start
# from (see the decoders in fuzz_submit.c and fuzz_prepare.c).
seed_runtime() {
    local corpus="$out/corpus/$1"
    mkdir -p "$corpus"
    [ -n "$(ls -A "$corpus")" ] && return
    : >"$corpus/empty"
    if [ "$1" = fuzz_submit ]; then
        printf '\x03\x00\x02\x01\x00\x06\x00\x00\x00\x00\x03\x01\x00\x00' >"$corpus/submits"
        printf '\x02\x00\x01\x00\x00\x00\x03\x01\x02\x00\x00\x00' >"$corpus/output-read"
    else
        printf '\x00\x06\x00\x01\x06\x00\x02\x06\x00' >"$corpus/f32-views"
        printf '\x03\x00\x01\x22\x03\x00\x00\x02\x01\x02\x44\x01' >"$corpus/mixed"
    fi
}

callable_corpus=
trap 'rm -rf "$callable_corpus"' EXIT
for target in $targets; do
    case $target in
    fuzz_callable)
        build_callable
        callable_corpus=$(mktemp -d "${TMPDIR:-/tmp}/simpler-fuzz-corpus.XXXXXX")
        cp "$out/seeds"/* "$callable_corpus"/
        fuzz fuzz_callable "$callable_corpus" "$out/fuzz_callable"
        ;;
    fuzz_packet)
        build_packet
        fuzz fuzz_packet "$out/corpus/fuzz_packet" "$out/fuzz_packet"
        ;;
    fuzz_submit | fuzz_prepare)
        build_runtime
        seed_runtime "$target"
        fuzz "$target" "$out/corpus/$target" "$out/cmake/tests/fuzz/$target"
        ;;
    *)
        echo "run-fuzz.sh: no target $target" >&2
        exit 2
        ;;
    esac
done
