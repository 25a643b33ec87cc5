"""Rules: how far a number may move from what it is held against. Each is a small frozen class
with holds(measured, reference), bound(reference), describe() and show(value); regression()
words a broken rule as the failure message every gate and verdict uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelbench.units import format_bytes, format_seconds, format_small

# Python's allocator takes memory from the system in 1 MiB arenas: a step that happens to
# open one shows 1 MiB more. Memory gates allow this much on top of their relative tolerance.
PYMALLOC_ARENA_BYTES = 2**20
ALLOCATOR_SLACK_BYTES = 2 * PYMALLOC_ARENA_BYTES


@dataclass(frozen=True)
class AbsoluteDrop:
    """Holds when measured >= reference - tolerance (accuracy: points of accuracy)."""

    tolerance: float
    relation = ">="

    def bound(self, reference: float) -> float:
        return reference - self.tolerance

    def describe(self) -> str:
        return f"{self.tolerance:g} absolute"

    def show(self, value: float) -> str:
        return f"{value:.4f}"

    def holds(self, measured: float, reference: float) -> bool:
        return within(measured, self.bound(reference), self.relation)


def within(measured: float, bound: float, relation: str) -> bool:
    """measured on the right side of a rule's bound: ">=" a floor, "<=" a ceiling."""
    return measured >= bound if relation == ">=" else measured <= bound


@dataclass(frozen=True)
class RelativeDrop(AbsoluteDrop):
    """Holds when measured >= reference x (1 - tolerance) (speedups: ratios)."""

    def bound(self, reference: float) -> float:
        return reference * (1.0 - self.tolerance)

    def describe(self) -> str:
        return f"{self.tolerance:.0%} relative"


@dataclass(frozen=True)
class RelativeRise(AbsoluteDrop):
    """Holds when measured <= reference x (1 + tolerance) (an error, lower is better: a regression's MAE)."""

    relation = "<="

    def bound(self, reference: float) -> float:
        return reference * (1.0 + self.tolerance)

    def describe(self) -> str:
        return f"{self.tolerance:.0%} relative"


@dataclass(frozen=True)
class AtLeast(AbsoluteDrop):
    """Holds when measured >= a fixed floor (the reference): no baseline involved."""

    tolerance: float = 0.0

    def describe(self) -> str:
        return "fixed floor"


@dataclass(frozen=True)
class AtLeastDigits(AtLeast):
    """Holds when two numbers share at least the floor's count of significant digits."""

    def describe(self) -> str:
        return "matching significant digits"

    def show(self, value: float) -> str:
        return f"{value:.0f} digits"


@dataclass(frozen=True)
class WithinGap(AbsoluteDrop):
    """Holds when |measured - reference| <= tolerance (accuracy parity: the gap between devices)."""

    relation = "within +/-"  # shown only: holds() compares the size of the gap

    def bound(self, reference: float) -> float:
        return self.tolerance

    def show(self, value: float) -> str:
        """Four places for accuracy gaps (0.0200); a loss gap of 1e-05 would read 0.0000."""
        return super().show(value) if self.tolerance >= 1e-3 else format_small(value, 3)

    def describe(self) -> str:
        return f"{format_small(self.tolerance)} absolute"

    def holds(self, measured: float, reference: float) -> bool:
        return abs(measured - reference) <= self.tolerance


@dataclass(frozen=True)
class RelativeGrowth(RelativeRise):
    """Holds when measured <= reference x (1 + tolerance) + slack (memory: bytes).

    The slack absorbs allocator granularity, which a relative tolerance cannot for small peaks.
    """

    slack: float = 0.0

    def bound(self, reference: float) -> float:
        return super().bound(reference) + self.slack

    def describe(self) -> str:
        return f"{self.tolerance:.0%} relative + {self.show(self.slack)}"

    def show(self, value: float) -> str:
        return f"{format_bytes(value)} ({value:,.0f} B)" if value >= 1024 else f"{value:,.0f} B"


# A memory peak's gate from its cell's own noise: the baseline is the median peak of at least
# MIN_SPREAD_RUNS unchanged runs, recorded with their spread (largest minus smallest), and a peak
# fails above baseline + max(SPREAD_FACTOR x spread, SPREAD_FLOOR x baseline) + PEAK_GRANULE.
# The factor and the floor cover a later run landing beyond the few runs recorded (four runs
# saw 20.80-20.85 MiB for a step that earlier sessions saw at 19.8-20.9 MiB); the granule is
# one pymalloc arena (1 MiB): a step that happens to open one more shows 1 MiB more, which six
# runs may never see (an inference peak of 1.77 MiB, 16 KiB apart over six runs, read 2.77 MiB
# in an unchanged eighth). A cell whose peak does not repeat (a spread near its size) gets a wide margin, and
# the terminal says so; so does a peak of a few MiB, for which the arena is a large share.
SPREAD_SUFFIX, RUNS_SUFFIX = "_spread", "_runs"  # stored beside the peak in memory.json
SPREAD_FACTOR = 2.0
SPREAD_FLOOR = 0.03
PEAK_GRANULE = PYMALLOC_ARENA_BYTES
MIN_SPREAD_RUNS = 5


@dataclass(frozen=True)
class SpreadGrowth(RelativeGrowth):
    """Holds when measured <= reference + slack, the slack the larger of SPREAD_FACTOR x the
    cell's recorded spread over `runs` runs and SPREAD_FLOOR x the baseline, + PEAK_GRANULE."""

    runs: int = 0

    @classmethod
    def of(cls, spread: float, runs: int, baseline: float) -> SpreadGrowth:
        return cls(0.0, slack=max(SPREAD_FACTOR * spread, SPREAD_FLOOR * baseline) + PEAK_GRANULE, runs=runs)

    def describe(self) -> str:
        return (
            f"+{format_bytes(self.slack)} ({SPREAD_FACTOR:g} x the peak's spread over {self.runs} runs, at "
            f"least {SPREAD_FLOOR:.0%} of the baseline, + {format_bytes(PEAK_GRANULE)})"
        )


def detectable_growth(rule: Any, baseline: float) -> float | None:
    """The smallest growth over the baseline a growth rule fails, as a fraction of it."""
    return rule.bound(baseline) / baseline - 1.0 if baseline > 0 else None


@dataclass(frozen=True)
class SlowerBy(RelativeGrowth):
    """Holds when measured <= reference x (1 + tolerance) + slack, in seconds (compile time)."""

    def show(self, value: float) -> str:
        return format_seconds(value)


# One compile per side: the first call's seconds moved 0.67-1.43x between A/A workers (at most
# 0.43 s apart), so only a change far beyond that fails (XLA turned on, a retrace per step).
AB_COMPILE_RULE = SlowerBy(0.5, slack=0.5)
# MLPerf Inference's rule for a lower precision: at least 99% of float32's accuracy; for an
# error (lower is better), at most 101% of float32's. The one place the share is set.
PRECISION_SHARE = 0.99
PRECISION_ACCURACY_RULE = RelativeDrop(1 - PRECISION_SHARE)
PRECISION_ERROR_RULE = RelativeRise(1 - PRECISION_SHARE)


def regression(
    metric: str, cell: str, reference: float, measured: float, rule: Any, against: str = "baseline"
) -> str | None:
    """The failure message when measured breaks the rule, else None."""
    if rule.holds(measured, reference):
        return None
    return (
        f"{metric} regression in {cell}: measured {rule.show(measured)}, {against} {rule.show(reference)}, "
        f"tolerance {rule.describe()} (must be {rule.relation} {rule.show(rule.bound(reference))})"
    )
