#!/usr/bin/env bash
# Runs the Python package's tests: run-pytest.sh PYTHON PYTHON_DIR.
# Exit 77 (CTest's skip) only when PYTHON lacks pytest or numpy, saying
# which and how to install them; otherwise pytest's own status.
set -euo pipefail
python=$1 dir=$2
for module in pytest numpy; do
    if ! "$python" -c "import $module" 2>/dev/null; then
        echo "python tests skipped: $python cannot import $module" \
             "(tools/install-deps.sh installs python3-pytest and python3-numpy)" >&2
        exit 77
    fi
done
cd "$dir"
# -p no:cacheprovider: nothing written into the source tree.
exec "$python" -m pytest -q -p no:cacheprovider tests
