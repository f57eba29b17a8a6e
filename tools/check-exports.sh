#!/usr/bin/env bash
# Lists what libsimpler.so exports and fails on anything that is not the
# public API: every exported symbol must be named simpler_* or simdev_* and
# be declared in a header of include/simpler/ (so an internal helper that
# happens to carry the prefix does not leak), or be on the allow-list
# below. Also checks the soname. The rule is in docs/install.md.
# Usage: check-exports.sh LIBSIMPLER_SO INCLUDE_DIR SONAME
set -euo pipefail
lib=$1 include=$2 soname=$3

# Exported names that are not public API but must be there, each with the
# reason. Empty today: the version script (src/exports.map) exports only
# simpler_* and simdev_*.
allowed=()

actual_soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$actual_soname" != "$soname" ]; then
    echo "$lib: soname is '$actual_soname', expected '$soname'" >&2
    exit 1
fi

mapfile -t exported < <(nm -D --defined-only "$lib" | awk '{print $NF}' | sort)
if [ "${#exported[@]}" -eq 0 ]; then
    echo "$lib: exports nothing (nm -D found no defined symbol)" >&2
    exit 1
fi

bad=0
for sym in "${exported[@]}"; do
    if [[ " ${allowed[*]} " == *" $sym "* ]]; then
        echo "$sym (allow-listed)"
    elif [[ $sym =~ ^(simpler|simdev)_ ]] && grep -qE "\\b$sym\\(" "$include"/simpler/*.h; then
        echo "$sym"
    else
        echo "$sym: NOT PUBLIC (not simpler_*/simdev_* declared in $include/simpler, not allow-listed)" >&2
        bad=1
    fi
done
echo "$lib ($soname): ${#exported[@]} exported symbols"
exit "$bad"
