"""Timing primitives: calibrated rounds, interleaved A/B comparisons, percentiles, matmul peak."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence

MAX_STEPS_PER_ROUND = 10_000


def seconds(work: Callable[[], object]) -> float:
    """Wall time of one call; work must return only once the device is done (it syncs)."""
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def steps_for(round_seconds: float, step_seconds: float) -> int:
    """How many steps make a round of about round_seconds, so short steps are not lost in noise."""
    if step_seconds <= 0:
        return MAX_STEPS_PER_ROUND
    return max(1, min(MAX_STEPS_PER_ROUND, math.ceil(round_seconds / step_seconds)))


def interleaved(first: Callable[[], float], second: Callable[[], float], pairs: int) -> list[float]:
    """Per-pair ratios second/first of two timed rounds, run A B B A A B ... to cancel drift.

    Each callable returns its own round's throughput. Pairs run back to back, so a noisy
    neighbour slows both sides of a pair alike and the ratio stays put.
    """
    first(), second()  # one untimed round each: caches and allocators settle first
    ratios = []
    for pair in range(pairs):
        if pair % 2:
            b, a = second(), first()
        else:
            a, b = first(), second()
        ratios.append(b / a)
    return ratios


def olympic_median(values: Sequence[float]) -> float:
    """Median after dropping the best and the worst value (where there are enough to spare)."""
    ordered = sorted(values)
    if len(ordered) > 4:
        ordered = ordered[1:-1]
    return statistics.median(ordered)


def percentiles(samples: Sequence[float], quantiles: Sequence[int] = (50, 90, 99)) -> dict[str, float]:
    """p50/p90/p99 by linear interpolation (numpy's default method)."""
    ordered = sorted(samples)
    result = {}
    for q in quantiles:
        position = (len(ordered) - 1) * q / 100
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        result[f"p{q}"] = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    return result


def matmul_peak_flops(device: str, size: int, repeats: int = 5) -> float:
    """Best FLOP/s of a square float32 matmul on a device: the ceiling achieved FLOP/s is read against."""
    import tensorflow as tf

    with tf.device(device):
        a = tf.random.uniform((size, size), seed=0)
        b = tf.random.uniform((size, size), seed=1)
        product = tf.function(lambda: tf.linalg.matmul(a, b)[0, 0])
        float(product())  # trace and warm up outside the clock
        best = min(seconds(lambda: float(product())) for _ in range(repeats))
    return 2.0 * size**3 / best
