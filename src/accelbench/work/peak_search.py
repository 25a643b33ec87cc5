"""The highest Server QPS whose LoadGen run is VALID (its p99 under the latency bound): bracket
from a start by stepping up or down (a first step, then doublings or halvings), then bisect
until the bracket is as narrow as asked.

LoadGen has a mode of its own for this (TestMode.FindPeakPerformance); it is not used because
it reports the peak alone, while the report draws every rate tried with its percentiles (the
latency against offered load), and the search here stops at a stated relative precision and
run count that a quick preset can afford."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accelbench.work.loadgen import LoadgenResult

# Halvings below the start before the search gives up: the bound is not met at 1/16 of the
# rate the cell's own batch throughput suggested (the last step down stops there).
MOST_HALVINGS = 4
WIDTH_ROUNDING = 1e-9  # a bracket one step of 1 + precision wide is as narrow as asked, rounding aside


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
    run_at: Callable[[float], LoadgenResult],
    start_qps: float,
    precision: float,
    most_runs: int,
    first_step: float = 2.0,
) -> PeakSearch:
    """Bracket [highest VALID rate, lowest INVALID rate] from start_qps, then bisect it until
    (high - low) / low <= precision or most_runs runs are spent. The bracket's first step from
    the start is `first_step` (a start that estimates the peak closely takes 1 + precision: the
    neighbour either side closes the bracket at once), each after it a doubling or a halving.
    A run whose system under test raised ends the search at once (its error is the cell's)."""
    runs: list[LoadgenResult] = []
    low: LoadgenResult | None = None
    high: LoadgenResult | None = None

    def attempt(qps: float) -> LoadgenResult:
        result = run_at(qps)
        runs.append(result)
        return result

    qps, step, lowest = start_qps, first_step, start_qps / 2**MOST_HALVINGS
    while len(runs) < most_runs:
        result = attempt(qps)
        if result.error:
            return PeakSearch(tuple(runs), None, float("inf"))
        if result.valid:
            low = result
            if high is not None:
                break
            qps *= step
        else:
            high = result
            if low is not None:
                break
            if qps <= lowest:
                return PeakSearch(tuple(runs), None, float("inf"))
            qps = max(qps / step, lowest)
        step = 2.0
    if low is None:
        return PeakSearch(tuple(runs), None, float("inf"))
    while high is not None and len(runs) < most_runs and _width(low, high) > precision + WIDTH_ROUNDING:
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
