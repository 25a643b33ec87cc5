"""The device's attainable roofs, measured by the backend that runs the cells, on their device,
in the process that runs them (its allocator and threads): the compute roof from a matrix
multiply at sizes that saturate it, the bandwidth roof from the better of a STREAM triad (a = b +
s·c) and a matrix-vector product. Each backend's module supplies the kernels (Backend.roof);
what is common to all is here.

A datasheet's peak is what the silicon could do with every unit busy; what a Keras step can
reach on this machine, with this backend and its oneDNN, Eigen or cuBLAS, is the matmul's rate,
so utilization is taken against that. STREAM's own code is C; its triad is three arrays, here
in one fused kernel so the bytes counted (two reads and a write per element) are the bytes
moved, on arrays far larger than any last-level cache.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from accelbench.measured import MATVEC, TRIAD, Roof

# Square, each measured (the best kept) until the next would take too long: on a CPU here the
# rate grows to 2048 and holds at 4096, and one size's rate can dip in a busy moment, so no size
# is skipped because the last did not grow.
MATMUL_SIZES = (512, 1024, 2048, 4096, 8192)
# No size whose multiply would take longer: the roof costs a second, not minutes, and every
# clean checkout's first run pays it. On a 2-core Xeon a 2048 multiply takes 0.05 s, so 4096
# (0.4 s a call, 1.6 of the 2.8 s the roof took) is not measured: its rate was 355 and 339
# GFLOP/s where 2048's was 325 and 353 (two measurements, 2026-11-25). A GPU, or a CPU past about
# 550 GFLOP/s, still goes on to 4096 and 8192.
MAX_MATMUL_SECONDS = 0.25
TRIAD_ELEMENTS = 2**25  # 128 MiB per float32 array: 4x the largest L3 of the CPUs measured
# The second bandwidth kernel: a matrix of TRIAD_ELEMENTS float32 (MATVEC_COLUMNS wide) times a
# vector, which reads the matrix once and writes almost nothing, as a decode step reads its
# weights. The triad alone under-measured a CPU: XLA's CPU backend (JAX's jit, TensorFlow's
# jit_compile) ran its elementwise loop on one thread and wrote a fresh 128 MiB output each call,
# so on the 2-vCPU AMD EPYC JAX's triad read 10.0 GiB/s where its jitted matvec read 31.8 (numpy's
# copy: 28.8), and GPT-2 small's decode at batch 1 read 157-231% of that roof (docs/measurements.md).
MATVEC_COLUMNS = 4096
REPEATS = 5  # best of: the roof is what the device can do, noise only lowers a rate
# A kept roof's check (run/roofs.py): one matmul, twice its size but at most 2048 (a 4096 one
# took 0.63 s a call here, 2048 0.08 s: every run, and every run a test starts, pays the check),
# and the triad, each the best of 2.
CHECK_SIZE = 2048
CHECK_REPEATS = 2
# The roof of float32 work with TensorFloat-32 allowed (NVIDIA's since Ampere: float32 in and
# out, a 10-bit mantissa inside the matmul): what the device reaches in float32 where a user
# allows it. The suite computes float32 as IEEE float32, so its cells are held to the float32
# roof, and this one is shown beside it (Backend.tf32 says where a device has it).
TF32 = "tensorfloat32"


def arrays_dtype(dtype: str) -> str:
    """What a roof's matrices are stored in: float32 for the TF32 roof."""
    return "float32" if dtype == TF32 else dtype


def check_sizes(kept_size: int) -> tuple[int, ...]:
    """The one size a kept roof is checked at: up a size from a busy 512 or 1024."""
    return (min(2 * kept_size, CHECK_SIZE),)


def best_seconds(run: Callable[[], object], repeats: int = REPEATS) -> float:
    """The fastest of `repeats` calls of `run` (which must wait for the device), after one
    that compiles and warms caches."""
    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


# A bandwidth kernel's call on a GPU is short (an H200 triads 3 x 128 MiB in about 0.1 ms),
# and one call waited for alone is as much launch and wait as kernel: on one H200, JAX's triad
# read 1,642 GiB/s where PyTorch's, with less of both, read 3,489 (docs/measurements.md). So
# calls go back to back until a timing spans this long, and only the last is waited for; a
# CPU's call (10 ms and more here) is timed alone, as before.
MIN_TIMED_SECONDS = 0.005


def per_call_seconds(run: Callable[[int], object], repeats: int = REPEATS) -> float:
    """The fastest seconds per call of `run(calls)`, which makes `calls` calls back to back and
    waits for the last: one call first (compiling, warming, and timing it), then as many per
    timing as fill MIN_TIMED_SECONDS."""
    one = best_seconds(lambda: run(1), 1)
    calls = max(1, math.ceil(MIN_TIMED_SECONDS / max(one, 1e-9)))
    return best_seconds(lambda: run(calls), repeats) / calls


def back_to_back(kernel: Callable[[], Any], wait: Callable[[Any], object]) -> Callable[[int], object]:
    """run(calls) for per_call_seconds: `calls` calls of `kernel` (each queued on the device in
    order, where it has a queue), then `wait` on the last one's result."""

    def run(calls: int) -> object:
        for _ in range(calls - 1):
            kernel()
        return wait(kernel())

    return run


def matmul_rate(timed: Callable[[int, int], float], sizes: tuple[int, ...], repeats: int) -> tuple[float, int]:
    """(the best FLOP/s, the size it came at) over the sizes, given timed(n, repeats) -> the
    best seconds of an n x n multiply; a size past 2048 takes at most 3 repeats."""
    rate, size = 0.0, 0
    for n in sizes:
        seconds = timed(n, repeats if n <= 2048 else min(repeats, 3))
        if 2.0 * n**3 / seconds > rate:
            rate, size = 2.0 * n**3 / seconds, n
        if seconds * 8 > MAX_MATMUL_SECONDS:  # the next size would take 8x as long
            break
    return rate, size


def triad_bytes_per_s(seconds: float, elements: int = TRIAD_ELEMENTS) -> float:
    """A float32 triad's bytes moved per second: two arrays read and one written."""
    return 3 * 4 * elements / seconds


def matvec_bytes_per_s(seconds: float, elements: int = TRIAD_ELEMENTS) -> float:
    """A float32 matrix-vector product's bytes moved per second: the matrix read once (the
    vectors, a few KiB, left out)."""
    return 4 * elements / seconds


def measured(
    backend: str,
    device: str,
    dtype: str,
    timed: Callable[[int, int], float],
    make_triad: Callable[[int], Callable[[int], object]],
    make_matvec: Callable[[int, int], Callable[[int], object]],
    sizes: tuple[int, ...],
    repeats: int,
    triad_elements: int = TRIAD_ELEMENTS,
) -> Roof:
    """A device's roofs from a backend's kernels: timed(n, repeats) -> the best seconds of an
    n x n multiply in `dtype`, each waited for; make_triad(elements) -> run(calls): that many
    triads over float32 arrays already on the device, back to back, the last waited for;
    make_matvec(rows, columns) -> run(calls): as many products of a float32 matrix on the device
    with a vector (per_call_seconds times them). The bandwidth roof is the better of the two,
    named."""
    started = time.perf_counter()
    rate, size = matmul_rate(timed, sizes, repeats)
    triad = triad_bytes_per_s(per_call_seconds(make_triad(triad_elements), repeats), triad_elements)
    rows = max(1, triad_elements // MATVEC_COLUMNS)
    matvec = matvec_bytes_per_s(per_call_seconds(make_matvec(rows, MATVEC_COLUMNS), repeats), rows * MATVEC_COLUMNS)
    return Roof(
        device=device,
        dtype=dtype,
        flops_per_s=rate,
        bytes_per_s=max(triad, matvec),
        matmul_size=size,
        seconds=time.perf_counter() - started,
        backend=backend,
        bandwidth_kernel=TRIAD if triad >= matvec else MATVEC,
    )
