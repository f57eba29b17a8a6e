#!/usr/bin/env bash
# Compiles and runs the first C example of README.md against the built
# library, so the README's first example keeps working.
# Usage: check-readme-example.sh README.md INCLUDE_DIR LIBSIMPLER WORK_DIR
set -euo pipefail
readme=$1 include=$2 lib=$3 work=$4
mkdir -p "$work"
awk '/^```c$/ {inside=1; next} inside && /^```$/ {exit} inside {print}' "$readme" > "$work/readme_example.c"
if [ ! -s "$work/readme_example.c" ]; then
    echo "README.md has no \`\`\`c block" >&2
    exit 1
fi
cc -std=c11 -Wall -Wextra -Werror -I"$include" "$work/readme_example.c" "$lib" -lpthread -ldl \
    -rdynamic -o "$work/readme_example"
"$work/readme_example"
