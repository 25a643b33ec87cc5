"""Change points in one series of saved runs (a cell's time per sample, speedup, peak memory or
quality on one machine, oldest run first): where its level moved, by how much, and how sure.

The search is ruptures' PELT (Killick et al. 2012), an exact minimiser of the within-segment
cost plus a penalty per change point. It runs on the logarithm of the values divided by the
series' own noise scale, so a penalty means the same for a 2 ms cell and a 2 s one and a step
is a ratio. Why ruptures and not Apache Otava's E-Divisive, the detector asv's and
MongoDB's CI descend from: Otava 0.8 pins numpy 2.2.0 exactly and scipy below 1.17 and brings
BigQuery, Postgres and Slack clients, which would downgrade the numpy TensorFlow and JAX run on;
MongoDB's signal-processing-algorithms ships no wheel. ruptures needs numpy and scipy alone.

The cost, the scale and the penalty are not textbook choices: they were set by simulation
(tests/test_changepoints.py holds the claims). With this project's measured run-to-run spread
(12% as a robust standard deviation, heavy-tailed: tests/data/run_to_run.json), squared error
and a median-based scale named a change in 13% of unchanged series of 30 runs; the absolute
error, a scale read from the tail too, and a penalty of 8 scales name one in fewer than 1 in
100. On that spread a 3x step is found within 3 runs and a 2x step within 6, but a 10% step is
not: it is under the noise of three runs. A VM with nothing else running measured 2% (robust)
with fewer, smaller slow runs (tests/data/run_to_run_quiet.json): there a 20% step is found
within 3 runs in 9 series in 10, and a 10% step within 6, but within 3 in only a third. On a
dedicated runner (1.5% run to run, normal) a 10% step is found within 3 runs in 9 in 10.

A point can also be a push's median of several runs (accelbench history --by-commit), which one
slow run does not move. On the quiet VM that took one run's 2.4% (5.5% plain) to 1.1% (2.5%)
for four runs a push (tests/data/run_to_run_pushes.json), and its tail is light enough for a
lower penalty (MEDIANS_PENALTY) at the same false-change rate: a 10% step is then found within
3 pushes in 9 series in 10.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

# The shortest run of points a level is made of: a change is named once MIN_SEGMENT runs show
# it, so one or two slow runs (a busy neighbour for a few minutes) are not a change.
MIN_SEGMENT = 3
# PELT's cost of a segment is ruptures' "l1" (_tabled_l1): the sum of absolute deviations from
# its median, not of squares: one run slowed by a third (a busy neighbour) weighs as 3 scales, not 9.
# The penalty per change point, in noise scales (PELT on log values / scale).
PENALTY = 8.0
# A noise scale below this share of the level is taken as this: a deterministic number (a
# seeded accuracy, a peak that repeats to the byte) moves only when something changed, and a
# scale of 0 would make any step infinitely sure.
SCALE_FLOOR = 0.0005
# The scale is also read from the upper tail of the successive differences (their 80th
# percentile, as a normal standard deviation): on a normal series the two readings agree, and
# where a busy neighbour slows runs now and then the tail reading is larger, so bursts of slow
# runs, which an unchanged series of such a machine has, are not taken for changes.
TAIL_QUANTILE, TAIL_Z = 0.8, 1.2816
# The fewest runs a series needs before it is searched: a level on each side of a change.
MIN_RUNS = 2 * MIN_SEGMENT
# A series whose every point is the median of MEDIANS_OF saved runs or more (a push on main that
# runs the suite several times: accelbench history --by-commit) has lighter tails: one slow run
# does not move a point. It is searched at a lower penalty, which keeps its false changes under 1
# in 100 series where a single run's heavy tail would not (tests/test_changepoints.py).
MEDIANS_OF, MEDIANS_PENALTY = 3, 6.5


def penalty_for(runs_per_point: int) -> float:
    """The penalty for a series whose points are each the median of at least this many runs."""
    return MEDIANS_PENALTY if runs_per_point >= MEDIANS_OF else PENALTY


@dataclass(frozen=True)
class Change:
    """A change of level at run `index` (the first run of the new level)."""

    index: int
    before: float  # the level before (geometric mean of the segment)
    after: float  # the level from `index` on, up to the next change
    ratio: float  # after / before
    interval: tuple[float, float]  # 95% interval of the ratio
    runs_before: int
    runs_after: int

    @property
    def confirmed(self) -> bool:
        """MIN_SEGMENT runs show the new level. A change the last one or two runs show is named
        at the run where it starts, but not yet confirmed: a regression fails a push only once
        it is (findings.new_regressions)."""
        return self.runs_after >= MIN_SEGMENT


def noise_scale(logs: np.ndarray, floor: float = SCALE_FLOOR) -> float:
    """The series' run-to-run spread in log units, robust to its own steps: the median absolute
    deviation of successive differences (a step moves one difference, not the median), as a
    normal standard deviation (x 1.4826), per run (/ sqrt 2)."""
    differences = np.abs(np.diff(logs))
    mad = 1.4826 * float(np.median(differences)) / math.sqrt(2.0)
    tail = float(np.quantile(differences, TAIL_QUANTILE)) / (TAIL_Z * math.sqrt(2.0))
    return max(mad, tail, floor)


def shown_by_most(before: np.ndarray, after: np.ndarray, step: float) -> bool:
    """Whether most runs of each level show the step, not one extreme run: the medians of the
    two segments must differ the same way by at least half the means' difference. A last run
    far off, with the two before it at the old level, makes a segment whose mean moved and
    whose median did not."""
    median_step = float(np.median(after) - np.median(before))
    return median_step * step > 0 and abs(median_step) >= abs(step) / 2


@cache
def _tabled_l1() -> type:
    """ruptures' "l1" cost with every segment's cost computed when the signal is fitted.

    PELT asks for about n²/2 segments, and ruptures' CostL1 takes each one's median with its own
    np.median call: `find` took 7-11 ms on a series of 30 runs. Here each start's growing
    segments are sorted as one array, which is the same cost: `find` takes 1.1 ms. That matters
    to the simulations behind this module's claims (thousands of series) and to a history of
    many cells. The class is made on first use, as `find` imports ruptures: its import takes
    1.2 s, which nothing else here needs."""
    from ruptures.costs import CostL1, NotEnoughPoints

    class TabledL1(CostL1):
        def fit(self, signal):
            super().fit(signal)
            values = self.signal[:, 0]
            self.table = np.zeros((len(values) + 1, len(values) + 1))
            for start in range(len(values)):
                tail = values[start:]
                lengths = np.arange(1, len(tail) + 1)
                inside = np.arange(len(tail))[None, :] < lengths[:, None]  # row k: the segment start..start+k
                segments = np.where(inside, tail[None, :], np.inf)
                ordered = np.sort(segments, axis=1)
                rows = lengths - 1
                medians = (ordered[rows, rows // 2] + ordered[rows, lengths // 2]) / 2
                deviations = np.where(inside, np.abs(segments - medians[:, None]), 0.0)
                self.table[start, start + 1 :] = deviations.sum(axis=1)
            return self

        def error(self, start, end):
            if end - start < self.min_size:
                raise NotEnoughPoints
            return float(self.table[start, end])

    return TabledL1


def _where_it_starts(table: np.ndarray, left: int, right: int) -> int:
    """The run where a change PELT found between `left` and `right` starts: the split of that
    stretch into two levels at the least cost, segments of any length. PELT's segments are at
    least MIN_SEGMENT runs long, so a step that the last two runs show was placed where a
    3-run segment fits: at the run before it. The search decides whether there is a change;
    this, where it is."""
    return min(range(left + 1, right), key=lambda split: table[left, split] + table[split, right])


def find(
    values: Sequence[float], penalty: float = PENALTY, min_segment: int = MIN_SEGMENT, floor: float = SCALE_FLOOR
) -> list[Change]:
    """The series' changes of level, oldest first; none for fewer than 2 x min_segment runs.
    Values must be positive (times, ratios, bytes, accuracies, errors); floor: the smallest
    noise scale taken (SCALE_FLOOR; a number that moves in coarse steps sets its own)."""
    import ruptures
    from scipy import stats

    logs = np.log(np.asarray(values, dtype=float))
    if len(logs) < 2 * min_segment:
        return []
    scale = noise_scale(logs, floor)
    cost = _tabled_l1()()  # fitted by Pelt.fit; its table then places each change
    ends = ruptures.Pelt(custom_cost=cost, min_size=min_segment, jump=1).fit(logs / scale).predict(pen=penalty)
    bounds = [0, *ends]  # ruptures ends every segment, the last at len(logs)
    changes = []
    for left, split, right in zip(bounds, bounds[1:], bounds[2:]):
        split = _where_it_starts(cost.table, left, right)
        before, after = logs[left:split], logs[split:right]
        step = float(after.mean() - before.mean())
        if not shown_by_most(before, after, step):
            continue
        margin = (
            float(stats.t.ppf(0.975, len(before) + len(after) - 2))
            * scale
            * math.sqrt(1 / len(before) + 1 / len(after))
        )
        changes.append(
            Change(
                split,
                float(np.exp(before.mean())),
                float(np.exp(after.mean())),
                math.exp(step),
                (math.exp(step - margin), math.exp(step + margin)),
                len(before),
                len(after),
            )
        )
    return changes
