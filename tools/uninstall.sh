#!/usr/bin/env bash
# Removes what one `cmake --install` wrote, as listed in its manifest
# (make uninstall: build/install_manifest.txt): exactly those files and
# links, then the directories only simpler writes into (include/simpler,
# lib/cmake/simpler, the Python package's simpler/) once they are empty,
# with the byte-code the interpreter cached for the package's modules. Shared directories (lib/,
# lib/pkgconfig/, ...) stay, even if empty. The manifest names files
# without DESTDIR; under DESTDIR (as given to the install) they are
# removed from there.
# Usage: [DESTDIR=...] uninstall.sh MANIFEST
set -euo pipefail
manifest=$1
if [ ! -f "$manifest" ]; then
    echo "simpler: $manifest not found: nothing was installed from this build" >&2
    exit 1
fi

own_dirs=()
# The manifest's last line has no newline: read it too.
while IFS= read -r file || [ -n "$file" ]; do
    [ -n "$file" ] || continue
    file=${DESTDIR:-}$file
    if [ -e "$file" ] || [ -L "$file" ]; then
        rm -f "$file"
        echo "simpler: removed $file"
    fi
    dir=$(dirname "$file")
    if [ "$(basename "$dir")" = simpler ]; then
        own_dirs+=("$dir")
        # The interpreter's byte-code cache of an installed Python module.
        if [[ $file == *.py ]]; then
            stem=$(basename "$file" .py)
            for cached in "$dir/__pycache__/$stem".*.pyc; do
                [ -e "$cached" ] && rm -f "$cached" && echo "simpler: removed $cached"
            done
            rmdir "$dir/__pycache__" 2>/dev/null || true
        fi
    fi
done <"$manifest"

if [ "${#own_dirs[@]}" -gt 0 ]; then
    while IFS= read -r dir; do
        if rmdir "$dir" 2>/dev/null; then
            echo "simpler: removed $dir/"
        fi
    done < <(printf '%s\n' "${own_dirs[@]}" | sort -u)
fi
