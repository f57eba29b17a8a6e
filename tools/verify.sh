#!/usr/bin/env bash
# Checks the Promela models in model/ exhaustively with SPIN (docs/kernel-mode.md,
# "The round gate"; docs/device.md, "Register windows and spin-then-park"):
# each model must verify with no error and no unreached state left
# unexplained, and each of its mutants must be caught, so the model's
# properties are shown to bite. Run by `make verify` (and so by `make test`).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs SPIN on model $1 with cpp flags $2; prints pan's report to $work/out.
check() {
    local model=$1 flags=$2
    rm -f "$work"/pan* "$work"/*.trail
    cp "$root/model/$model" "$work/"
    (cd "$work" && spin $flags -a "$model" >/dev/null &&
        cc -O2 -w -DSAFETY -DNOCLAIM -o pan pan.c &&
        ./pan -m2000000 >out 2>&1 || true)
}

status=0
# verify_model MODEL MUTANT...: the model must verify, each mutant be caught.
verify_model() {
    local model=$1
    shift
    check "$model" ""
    if grep -q "errors: 0" "$work/out" && ! grep -q "Search not completed" "$work/out"; then
        states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' "$work/out")
        echo "verify: $model: no error, no deadlock, $states states (exhaustive)"
    else
        echo "verify: $model FAILED:" >&2
        cat "$work/out" >&2
        status=1
    fi
    for mutant in "$@"; do
        check "$model" "-D$mutant"
        if grep -q "errors: 0" "$work/out"; then
            echo "verify: $model with $mutant: no error found; the model no longer checks it" >&2
            status=1
        else
            what=$(grep -m1 -E "^pan:1: " "$work/out" | sed 's/^pan:1: //; s/ (at depth.*//')
            echo "verify: $model with $mutant: caught ($what)"
        fi
    done
}

verify_model round_gate.pml MUTANT_NO_GATE MUTANT_SKIPPED_RELEASE MUTANT_EARLY_RELEASE MUTANT_NO_OWNER
verify_model park_wake.pml MUTANT_PLAIN_ARM MUTANT_LOOK_THEN_ADD
verify_model park_either.pml MUTANT_ARM_OWN_ONLY MUTANT_SLEEP_ON_OWN
exit $status
