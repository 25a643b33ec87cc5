"""The highest Server QPS whose LoadGen run is VALID (its p99 under the latency bound): bracket
from a start by doubling or halving, then bisect until the bracket is as narrow as asked.

LoadGen has a mode of its own for this (TestMode.FindPeakPerformance); it is not used because
it reports the peak alone, while the report draws every rate tried with its percentiles (the
latency against offered load), and the search here stops at a stated relative precision and
run count that a quick preset can afford."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accelbench.work.loadgen import LoadgenResult

# Halvings below the start before the search gives up: the bound is not met at 1/16 of the
# rate the cell's own batch throughput suggested.
MOST_HALVINGS = 4


@dataclass(frozen=True)
class PeakSearch:
    """Every run the search made, in order, and what it found."""

    runs: tuple[LoadgenResult, ...]
    peak: LoadgenResult | None  # the fastest VALID run; None: no rate tried met the bound
    precision: float  # the bracket's relative width when it stopped (None-like inf if it never closed)

    @property
    def lowest_tried(self) -> LoadgenResult:
        return min(self.runs, key=lambda run: run.target_qps or 0.0)


def find_peak(
    run_at: Callable[[float], LoadgenResult], start_qps: float, precision: float, most_runs: int
) -> PeakSearch:
    """Bracket [highest VALID rate, lowest INVALID rate] from start_qps, then bisect it until
    (high - low) / low <= precision or most_runs runs are spent. A run whose system under test
    raised ends the search at once (its error is the cell's)."""
    runs: list[LoadgenResult] = []
    low: LoadgenResult | None = None
    high: LoadgenResult | None = None

    def attempt(qps: float) -> LoadgenResult:
        result = run_at(qps)
        runs.append(result)
        return result

    qps, halvings = start_qps, 0
    while len(runs) < most_runs:
        result = attempt(qps)
        if result.error:
            return PeakSearch(tuple(runs), None, float("inf"))
        if result.valid:
            low = result
            if high is not None:
                break
            qps *= 2
        else:
            high = result
            if low is not None:
                break
            halvings += 1
            if halvings > MOST_HALVINGS:
                return PeakSearch(tuple(runs), None, float("inf"))
            qps /= 2
    if low is None:
        return PeakSearch(tuple(runs), None, float("inf"))
    while high is not None and len(runs) < most_runs and _width(low, high) > precision:
        result = attempt((low.target_qps + high.target_qps) / 2)
        if result.error:
            return PeakSearch(tuple(runs), None, float("inf"))
        if result.valid:
            low = result
        else:
            high = result
    return PeakSearch(tuple(runs), low, _width(low, high) if high is not None else float("inf"))


def _width(low: LoadgenResult, high: LoadgenResult) -> float:
    return (high.target_qps - low.target_qps) / low.target_qps
