#!/usr/bin/python3
"""The cluster example from Python: a tiled matmul and a tiled Cholesky over
four simulated devices, each checked bit for bit against one device.

As examples/cluster/main.c does it, through simpler.Cluster, with the same
orchestrations and kernels (the shared objects the build makes):

matmul    C = A B, 256 x 256 f32, tile 64: the matmul example's callable.
          The reference runs it once on one device (a simpler.Worker) over
          the whole matrices; the cluster makes one group submit per row
          band of C, member w computing tile (i, w) from A's row band i and
          B's column band w (numpy views). Each tile's reduction runs in the
          same order in both, so the bits agree.
Cholesky  A = L L^T, 128 x 128 f64 SPD, tile 32, each tile an array of its
          own: one directed submit per tile operation (potrf, trsm, syrk,
          gemm) to the worker owning the tile it writes (2 x 2
          block-cyclic); the reference runs the same operations in the same
          order on one Worker. The cluster orders them by what they read
          and write.

Usage: cluster.py MATMUL_ORCH_SO MATMUL_KERNELS_SO CHOL_ORCH_SO CHOL_KERNELS_SO
(make run passes the build's). Runs on /usr/bin/python3 (Debian's
python3-numpy). Exit status 0 when both are exact.
"""
import os
import sys
import time

# Five simulated devices share the host's CPUs: one runnable thread each,
# as the C example configures them (read by simdev at each device's first use).
os.environ.setdefault("SIMDEV_RUNNABLE_CPUS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import numpy as np  # noqa: E402

import simpler  # noqa: E402
from simpler import IN, INOUT, OUT, SCALAR  # noqa: E402

WORKERS = 4
REF_DEVICE = 4  # the one-device references run on a device of their own
MM_DIM, MM_TILE = 256, 64
CH_TILES, CH_T = 4, 32
CH_N = CH_TILES * CH_T
MATMUL_ID, CHOL_ID0 = 1, 2  # Cholesky: CHOL_ID0 + op
POTRF, TRSM, SYRK, GEMM = range(4)
CHOL_OPS = (("chol_potrf_orchestration", "chol_kernel_potrf", 1),
            ("chol_trsm_orchestration", "chol_kernel_trsm", 2),
            ("chol_syrk_orchestration", "chol_kernel_syrk", 2),
            ("chol_gemm_orchestration", "chol_kernel_gemm", 3))


def images(matmul_orch, matmul_kernels, chol_orch, chol_kernels):
    """{callable id: image}: the matmul example's, and one per tile operation."""
    out = {MATMUL_ID: simpler.build_callable(
        matmul_orch, "matmul_orchestration", [IN, IN, OUT, SCALAR],
        kernels=[(0, simpler.Core.AIC, matmul_kernels, "kernel_gemm_tile",
                  [IN, IN, INOUT, SCALAR])])}
    for op, (entry, kernel, tiles) in enumerate(CHOL_OPS):
        sig = [IN] * (tiles - 1) + [INOUT]  # the last tile is the one written
        out[CHOL_ID0 + op] = simpler.build_callable(
            chol_orch, entry, sig, kernels=[(0, simpler.Core.AIC, chol_kernels, kernel, sig)])
    return out


# ----------------------------------------------------------------- matmul

def matmul_inputs():
    i = np.arange(MM_DIM * MM_DIM, dtype=np.uint64)
    a = ((i * 7) % 23).astype(np.float32).reshape(MM_DIM, MM_DIM) * np.float32(0.125) - 1
    b = ((i * 5) % 19).astype(np.float32).reshape(MM_DIM, MM_DIM) * np.float32(0.25) - 2
    return a, b


def matmul_orchestration(a, b, c):
    """One group submit per row band of C: member w computes tile (i, w)."""
    def orchestrate(orch):
        for i in range(MM_DIM // MM_TILE):
            rows = slice(i * MM_TILE, (i + 1) * MM_TILE)
            members = []
            for w in range(WORKERS):
                cols = slice(w * MM_TILE, (w + 1) * MM_TILE)
                members.append((w, [a[rows, :], b[:, cols], c[rows, cols]], [MM_TILE]))
            orch.submit_group(MATMUL_ID, members)
    return orchestrate


# --------------------------------------------------------------- Cholesky

def chol_input():
    """The lower tiles of an SPD matrix, each an array of its own:
    1 / (1 + |r - c|) plus n on the diagonal."""
    r = np.arange(CH_N, dtype=np.float64)
    a = 1.0 / (1.0 + np.abs(r[:, None] - r[None, :])) + np.eye(CH_N) * CH_N
    return {(i, j): np.ascontiguousarray(a[i * CH_T:(i + 1) * CH_T, j * CH_T:(j + 1) * CH_T])
            for i in range(CH_TILES) for j in range(i + 1)}, a


def chol_graph(run_op):
    """The right-looking tiled factorisation, in one order for both paths:
    run_op(op, tiles), the last tile the one written."""
    for k in range(CH_TILES):
        run_op(POTRF, [(k, k)])
        for i in range(k + 1, CH_TILES):
            run_op(TRSM, [(k, k), (i, k)])
        for i in range(k + 1, CH_TILES):
            run_op(SYRK, [(i, k), (i, i)])
            for j in range(k + 1, i):
                run_op(GEMM, [(i, k), (j, k), (i, j)])


def chol_owner(tile):
    i, j = tile
    return (i % 2) * 2 + j % 2


# ------------------------------------------------------------------- main

def references(images_by_id, a, b, ref_tiles):
    """The matmul and the Cholesky on one device (one Worker)."""
    c_ref = np.full((MM_DIM, MM_DIM), -7.0, np.float32)  # not the cluster's fill (NaN)
    with simpler.Worker(level=2, device_id=REF_DEVICE) as worker:
        for callable_id, image in images_by_id.items():
            worker.register(callable_id, image)
        worker.run(MATMUL_ID, [a, b, c_ref], [MM_TILE])
        chol_graph(lambda op, tiles: worker.run(CHOL_ID0 + op, [ref_tiles[t] for t in tiles]))
    return c_ref


def report(name, info, wrong, total, ms, extra=""):
    exact = wrong == 0 and info.status == 0
    print("%-9s cluster of %d devices: %d tasks, %d runs, %d dependencies (RAW %d, WAR %d, "
          "WAW %d); %s against one device: %d of %d elements differ%s; %.1f ms"
          % (name, WORKERS, info.tasks_submitted, info.runs_launched, info.dependencies,
             info.raw, info.war, info.waw, "exact" if exact else "WRONG", wrong, total, extra,
             ms))
    return exact


def differ(x, y):
    """How many elements of two same-shaped contiguous arrays differ in any bit."""
    xb, yb = x.view(np.uint8).reshape(x.size, -1), y.view(np.uint8).reshape(y.size, -1)
    return int(np.count_nonzero((xb != yb).any(axis=1)))


def main(matmul_orch, matmul_kernels, chol_orch, chol_kernels):
    images_by_id = images(matmul_orch, matmul_kernels, chol_orch, chol_kernels)
    a, b = matmul_inputs()
    tiles, spd = chol_input()
    ref_tiles = {t: v.copy() for t, v in tiles.items()}
    c_ref = references(images_by_id, a, b, ref_tiles)

    c = np.full((MM_DIM, MM_DIM), np.nan, np.float32)
    with simpler.Cluster(workers=WORKERS) as cluster:
        for callable_id, image in images_by_id.items():
            cluster.register(callable_id, image)

        t0 = time.monotonic()
        info = cluster.run(matmul_orchestration(a, b, c))
        ms = (time.monotonic() - t0) * 1e3
        ok = report("matmul", info, differ(c, c_ref), c.size, ms)

        t0 = time.monotonic()
        info = cluster.run(lambda orch: chol_graph(
            lambda op, ts: orch.submit(chol_owner(ts[-1]), CHOL_ID0 + op, [tiles[t] for t in ts])))
        ms = (time.monotonic() - t0) * 1e3
    wrong = sum(differ(tiles[t], ref_tiles[t]) for t in tiles)
    low = np.zeros((CH_N, CH_N))
    for (i, j), tile in tiles.items():
        low[i * CH_T:(i + 1) * CH_T, j * CH_T:(j + 1) * CH_T] = tile
    low = np.tril(low)
    residual = float(np.max(np.abs(np.tril(low @ low.T - spd))))
    ok_chol = report("Cholesky", info, wrong, len(tiles) * CH_T * CH_T, ms,
                     ", max |L L^T - A| = %.2g" % residual)
    return 0 if ok and ok_chol and residual < 1e-9 else 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: cluster.py MATMUL_ORCH_SO MATMUL_KERNELS_SO CHOL_ORCH_SO CHOL_KERNELS_SO")
    sys.exit(main(*sys.argv[1:]))
