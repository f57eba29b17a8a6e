#!/usr/bin/env bash
# Installs what the comparison benchmark (make bench) needs beyond the
# build: single-threaded BLAS/LAPACK with C interfaces (the tile kernels
# every system runs) and the peers — LLVM's OpenMP runtime (libomp-dev; GCC's
# libgomp comes with gcc) and StarPU 1.3 (libstarpu-dev, which also holds
# starpu_mpi.h) — and for the distributed Cholesky against StarPU-MPI
# (issue 30) Open MPI's headers and launcher (libopenmpi-dev, openmpi-bin):
# Debian's libstarpumpi is linked with Open MPI, while simpler uses MPICH
# (tools/install-deps.sh). Installing Open MPI must not take the `mpi`
# and `mpirun` alternatives (mpicc, mpiexec, the mpi.h directory) from
# MPICH, which simpler's build and tests use: they are pinned to their
# current choice first. As root it uses
# apt-get; otherwise it names what is missing. A peer that cannot be
# installed is skipped with a line saying so: the benchmark then runs
# without it (bench_compare names what it skipped).
set -uo pipefail

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# Required: without a CBLAS and LAPACKE nothing of the comparison builds.
required=(liblapacke-dev)
# OpenBLAS (its pthread build: thread-safe when called from several threads,
# which the serial build is not; bench_compare sets OPENBLAS_NUM_THREADS=1
# so each call runs on its caller's thread), else reference BLAS.
blas=libopenblas-pthread-dev
peers=(libomp-dev libstarpu-dev libopenmpi-dev openmpi-bin)

missing=()
for pkg in "${required[@]}" "$blas" "${peers[@]}"; do
    installed "$pkg" || missing+=("$pkg")
done
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "simpler: the benchmark's peers are missing: ${missing[*]}" >&2
    echo "simpler: install them with: sudo apt-get install ${missing[*]}" >&2
    echo "simpler: (the benchmark runs without the ones that stay missing)" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || echo "simpler: apt-get update failed; trying the installed lists" >&2
try_install() {
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
if ! installed "$blas" && ! try_install "$blas"; then
    echo "simpler: skipped $blas (not installable); using reference BLAS (libblas-dev)" >&2
    try_install libblas-dev || echo "simpler: no BLAS could be installed" >&2
fi
for pkg in "${required[@]}"; do
    installed "$pkg" || try_install "$pkg" ||
        { echo "simpler: cannot install $pkg: the comparison benchmark cannot be built" >&2; exit 1; }
done
# Keep mpicc, mpiexec and the mpi.h directory where they point now (an
# Open MPI installed later has a higher priority and would take them in
# automatic mode).
for alt in mpi mpirun mpi-x86_64-linux-gnu mpi-aarch64-linux-gnu; do
    current=$(readlink "/etc/alternatives/$alt" 2>/dev/null) || continue
    update-alternatives --quiet --set "$alt" "$current" ||
        echo "simpler: could not pin the $alt alternative to $current" >&2
done
for pkg in "${peers[@]}"; do
    installed "$pkg" || try_install "$pkg" ||
        echo "simpler: skipped peer $pkg: not installable here; bench_compare runs without it" >&2
done
exit 0
