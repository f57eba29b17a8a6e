#!/usr/bin/python3
"""The vector example from Python, in program mode and in kernel mode.

f = (a + b + 1) * (a + b + 2) + (a + b) over 16384 floats, as
examples/vector/main.c computes it, through the simpler package: the same
orchestration and kernels (the shared objects the build makes), packed by
simpler.build_callable. Inputs are multiples of 1/4 and 1/2, so every
intermediate is exact and the result must equal numpy's bit for bit.

Usage: vector.py ORCH_SO KERNELS_SO (make run passes the build's). Runs on
/usr/bin/python3 (Debian's python3-numpy). Exit status 0 when both modes
are exact.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import numpy as np  # noqa: E402

import simpler  # noqa: E402
from simpler import IN, OUT, SCALAR  # noqa: E402

N = 16384


def vector_callable(orch_so, kernels_so):
    return simpler.build_callable(
        orch_so, "vector_orchestration", [IN, IN, OUT],
        kernels=[(0, simpler.Core.AIV, kernels_so, "kernel_add", [IN, IN, OUT]),
                 (1, simpler.Core.AIV, kernels_so, "kernel_add_scalar", [IN, OUT, SCALAR]),
                 (2, simpler.Core.AIV, kernels_so, "kernel_mul", [IN, IN, OUT])])


def program_mode(image, a, b):
    """The runtime owns the device and stages the numpy arrays."""
    f = np.full(N, -1.0, np.float32)
    with simpler.Worker(level=2, device_id=0) as worker:
        worker.register(0, image)
        info = worker.run(0, [a, b, f])
    return f, info


def kernel_mode(image, a, b):
    """The framework (this script) owns the device, the buffers and the stream."""
    device = simpler.Device(0)
    stream = device.stream()
    buffers = [device.malloc(4 * N) for _ in range(3)]
    buffers[0].write(a)
    buffers[1].write(b)
    with simpler.Worker(level=2, device_id=0, execution_mode="kernel") as worker:
        callable_id = worker.kernel_prepare_callable(image)
        tensors = [buf.tensor((N,), simpler.DataType.F32) for buf in buffers]
        worker.kernel_launch(callable_id, tensors, caller_stream=stream)
        stream.synchronize()  # the round's status: raises RunFailed if it failed
    f = np.empty(N, np.float32)
    buffers[2].read(f)
    return f


def main(orch_so, kernels_so):
    i = np.arange(N)
    a = (i % 97).astype(np.float32) * 0.25
    b = (i % 89).astype(np.float32) * 0.5 - 10.0
    c = a + b
    expected = (c + 1.0) * (c + 2.0) + c
    image = vector_callable(orch_so, kernels_so)

    f, info = program_mode(image, a, b)
    wrong = int(np.count_nonzero(f != expected))
    ok_program = wrong == 0 and info.tasks_submitted == 5 and info.edges == 6
    print("%-10s program %6d tasks  check %-4s (exact: %d of %d elements wrong, %d edges)"
          % ("py-vector", info.tasks_submitted, "OK" if ok_program else "FAIL", wrong, N, info.edges))

    f = kernel_mode(image, a, b)
    wrong = int(np.count_nonzero(f != expected))
    print("%-10s kernel  %12s  check %-4s (exact: %d of %d elements wrong)"
          % ("py-vector", "", "OK" if wrong == 0 else "FAIL", wrong, N))
    return 0 if ok_program and wrong == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: vector.py ORCH_SO KERNELS_SO")
    sys.exit(main(sys.argv[1], sys.argv[2]))
