#!/usr/bin/env bash
# Fails on an include that crosses a layer the wrong way (docs/architecture.md,
# "Layers"). The table of what each layer may include is src/CMakeLists.txt's:
# it builds, per layer, an include root holding links to exactly what the
# layer may use (LAYERS_DIR/<layer>/). A quoted include in src/<layer>/ must
# name a file of that root, or a file of the same folder by its bare name;
# nothing may climb out with "..", and no project header may be included
# with <>. This holds headers to the table even where no source of the layer
# includes them yet.
# Usage: check-layers.sh SRC_DIR LAYERS_DIR LAYER...
set -euo pipefail
src=$1 layers=$2
shift 2

bad=0
checked=0
for layer in "$@"; do
    root=$layers/$layer
    if [ ! -d "$root" ]; then
        echo "check-layers: no include root for layer '$layer' at $root" >&2
        exit 2
    fi
    for file in "$src/$layer"/*.[ch]; do
        [ -e "$file" ] || continue
        while IFS=: read -r line text; do
            path=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$text")
            checked=$((checked + 1))
            if [[ $path == *..* ]]; then
                echo "$file:$line: \"$path\" climbs out of its folder" >&2
                bad=1
            elif [[ $path == */* ]]; then
                if [ ! -e "$root/$path" ]; then
                    echo "$file:$line: layer '$layer' may not include \"$path\"" >&2
                    bad=1
                fi
            elif [ ! -e "$src/$layer/$path" ]; then
                echo "$file:$line: \"$path\" is not a file of $layer/" >&2
                bad=1
            fi
        done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
        while IFS=: read -r line text; do
            echo "$file:$line: a project header included with <>: $text" >&2
            bad=1
        done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(simpler|common|platform|simdev|runtime|launch|host|trace)/' "$file" || true)
    done
done
echo "check-layers: $checked includes in layers $*: $([ $bad -eq 0 ] && echo clean || echo VIOLATIONS)"
exit "$bad"
