#!/usr/bin/env bash
# Installs the Debian packages simpler needs to build and test, if missing.
# As root it uses apt-get; otherwise it names what is missing and fails.
# Two rounds: the fixed list (which includes clang), then the libFuzzer
# runtime for the installed clang's major version (libclang-rt-N-dev), which
# can only be named once clang is there.
set -euo pipefail

# liblapacke-dev + libblas-dev: the comparison benchmark's tile kernels
# (its simpler worker is also a test). gdb: the test watchdog's report of a
# hung test (every thread's stack; docs/testing.md). binutils (nm, readelf)
# and pkg-config: the checks of the shared library and the installed
# package (docs/install.md). spin: the model check of the kernel-mode round
# gate (make verify, model/round_gate.pml). libjansson-dev: the JSON parser
# the trace test reads traces back with and tools/simpler-trace reads them
# with. python3-pytest + python3-numpy: the Python package's tests and
# example (python/, docs/python.md), which run on /usr/bin/python3, the
# interpreter Debian's python3-* packages install for. libmpich-dev +
# mpich: distributed clusters and their `mpiexec -n 2` test
# (docs/cluster.md section 9); MPICH's hydra runs as root without a flag.
needed=(cmake make gcc libc6-dev libcmocka-dev pkg-config binutils libasan8 libubsan1 libtsan2
        clang liblapacke-dev libblas-dev gdb spin libjansson-dev python3-pytest python3-numpy
        libmpich-dev mpich)

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

updated=0
# Installs the named packages that are missing: as root with apt-get,
# otherwise names them (and `hint`, if set) and fails.
install_missing() {
    local missing=()
    for pkg in "$@"; do
        installed "$pkg" || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "simpler: missing Debian packages: ${missing[*]}" >&2
        echo "simpler: install them with: sudo apt-get install ${missing[*]}" >&2
        if [ -n "${hint:-}" ]; then
            echo "simpler: $hint" >&2
        fi
        exit 1
    fi
    echo "simpler: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if [ "$updated" -eq 0 ]; then
        apt-get update -qq
        updated=1
    fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

hint=""
installed clang || hint="then also the libFuzzer runtime libclang-rt-N-dev, N = clang's major version (run this again to have it named)"
install_missing "${needed[@]}"

# "Debian clang version 14.0.6", "Ubuntu clang version 18.1.3 (1ubuntu1)", ...
clang_major=$(clang --version | sed -n '1s/.*clang version \([0-9][0-9]*\).*/\1/p')
if [ -z "$clang_major" ]; then
    echo "simpler: cannot read clang's version from: $(clang --version | head -n 1)" >&2
    exit 1
fi
hint=""
install_missing "libclang-rt-${clang_major}-dev"
