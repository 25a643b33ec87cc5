"""The device's attainable roofs, measured where the cells run, in the run's own process (its
allocator and threads): the compute roof from a matrix multiply at sizes that saturate it, the
bandwidth roof from a STREAM triad (a = b + s·c).

A datasheet's peak is what the silicon could do with every unit busy; what a Keras step can
reach on this machine, with this TensorFlow and its oneDNN or cuBLAS, is the matmul's rate, so
utilization is taken against that. STREAM's own code is C; its triad is three arrays, here in
one XLA-fused kernel so the bytes counted (two reads and a write per element) are the bytes
moved, on arrays far larger than any last-level cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from accelbench.measured import Roof

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
REPEATS = 5  # best of: the roof is what the device can do, noise only lowers a rate


def _best_seconds(run: Callable[[], object], repeats: int = REPEATS) -> float:
    run()  # the first call compiles and warms caches
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def measure(device: str, dtype: str, sizes: tuple[int, ...] = MATMUL_SIZES, repeats: int = REPEATS) -> Roof:
    """The roofs of one TensorFlow device (e.g. /CPU:0) in one compute dtype; `sizes` and
    `repeats` fewer to check a kept roof in a second."""
    import tensorflow as tf

    started = time.perf_counter()
    # one trace for every size (TensorFlow warns of a retrace per size otherwise)
    multiply = tf.function(lambda a, b: tf.matmul(a, b)[0, 0], reduce_retracing=True)
    with tf.device(device):
        rate, size = 0.0, 0
        for n in sizes:
            a = tf.cast(tf.random.normal((n, n)), dtype)
            b = tf.cast(tf.random.normal((n, n)), dtype)
            # in a graph, as Keras' compiled steps run (oneDNN's rewrites apply on a CPU); reading
            # one element back waits for the multiply to finish on an accelerator
            seconds = _best_seconds(lambda a=a, b=b: multiply(a, b).numpy(), repeats if n <= 2048 else min(repeats, 3))
            if 2.0 * n**3 / seconds > rate:
                rate, size = 2.0 * n**3 / seconds, n
            if seconds * 8 > MAX_MATMUL_SECONDS:  # the next size would take 8x as long
                break
        # filled, not drawn: a bandwidth's bytes are the same whatever their values, and drawing
        # 2 x 2^25 normals took 0.5 s of a 3.6 s measurement
        b = tf.fill((TRIAD_ELEMENTS,), 1.0)
        c = tf.fill((TRIAD_ELEMENTS,), 2.0)
        triad = tf.function(lambda b, c: b + 3.0 * c, jit_compile=True)
        triad_seconds = _best_seconds(lambda: triad(b, c)[0].numpy(), repeats)
    return Roof(
        device=device,
        dtype=dtype,
        flops_per_s=rate,
        bytes_per_s=3 * 4 * TRIAD_ELEMENTS / triad_seconds,
        matmul_size=size,
        seconds=time.perf_counter() - started,
    )
