"""Timing primitives: calibrated rounds, interleaved A/B comparisons, percentiles."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from accelbench.judge import comparison

MAX_STEPS_PER_ROUND = 10_000
CALIBRATION_STEPS = 5  # steps timed to size a round
CALIBRATION_GROWTH = 8  # the most a calibrating call's steps grow by at once (calibrated_steps)
# The most of a round a call's own cost (Keras fit()'s: its callbacks, its data adapter, its
# dispatch; not its steps) may take. Steps are sized to half of it (sized_for_calls): the split of
# a call into its steps and its own cost is an estimate, and in simulation with every call slowed
# by noise of 10% on average, sizing to 2% itself left 50% of rounds above 2%, to 1% left 0.8%
# (tests/test_measure.py).
MAX_CALL_SHARE = 0.02
SIZED_CALL_SHARE = MAX_CALL_SHARE / 2
# The longest a round is made for it, as a multiple of the round length asked for (at least 0.5 s):
# PyTorch's fit() loops over its steps in Python, and a slow step beside a 50 ms call asked for
# rounds of seconds, measured three times at three sizes: a conformance cell's build ran past its
# worker's 300 s deadline. Past the cap the share is what it is, and recorded (call_share).
LONGEST_SIZED_ROUND = 5
# Steps a split asks for within this factor of the steps it was taken over are kept without
# timing them too (sized_for_calls): a split over nearly as many steps says as much, and each
# size timed is three calls of up to a capped round. In simulation (tests/test_measure.py: 1,500
# works, every call slowed by 10% noise on average, rounds capped at 0.5 s) sizing took 3,619
# simulated seconds instead of 5,480, and left 16 rounds above MAX_CALL_SHARE that could have
# been within it instead of 18. A JAX training cell here timed sizes 13, 16 and 17 in turn; the quick
# suite's 8 JAX training cells spent 18.3 and 13.4 s in their sizing calls timing every size,
# 12.6 and 12.1 s with this (two runs each, alternated, on a 2-core EPYC).
CLOSE_ENOUGH = 1.25


def seconds(work: Callable[[], object]) -> float:
    """Wall time of one call; work must return only once the device is done (it syncs)."""
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def best_of(work: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of a few calls: for fixed work, noise only ever adds time."""
    return min(seconds(work) for _ in range(repeats))


def steps_for(round_seconds: float, step_seconds: float) -> int:
    """How many steps make a round of about round_seconds, so short steps are not lost in noise."""
    if step_seconds <= 0:
        return MAX_STEPS_PER_ROUND
    return max(1, min(MAX_STEPS_PER_ROUND, math.ceil(round_seconds / step_seconds)))


def calibrated_steps(run: Callable[[int], object], round_seconds: float) -> int:
    """Steps that make a round of about round_seconds: grow the steps given to run until one
    call lasts a quarter of a round (best of two), then scale. A difference of two short calls
    was thrown by fit()'s cost per call (10-20 ms) and its slow rounds: quick's 0.2 s rounds
    came out at 0.09 to 0.47 s. So per-call costs count as step time in the scaling, and a
    round comes out a little short rather than long; a difference only says how far to grow
    next (between 2x and CALIBRATION_GROWTH), where doubling from one step took six sizes,
    twelve calls, for a small model."""
    target = round_seconds / 4
    steps, last = 1, None
    while True:
        elapsed = best_of(lambda: run(steps), repeats=2)
        if elapsed >= target or steps >= MAX_STEPS_PER_ROUND:
            return steps_for(round_seconds, elapsed / steps)
        if last is None:  # one size: as if all of it were steps
            needed = steps * target / elapsed if elapsed > 0 else steps * CALIBRATION_GROWTH
        else:  # two sizes: their difference is the steps' part, the rest is the call's
            per_step = (elapsed - last[1]) / (steps - last[0])
            needed = steps + (target - elapsed) / per_step if per_step > 0 else steps * CALIBRATION_GROWTH
        last = (steps, elapsed)
        growth = min(CALIBRATION_GROWTH, max(2, math.ceil(needed / steps)))
        steps = min(MAX_STEPS_PER_ROUND, steps * growth)


@dataclass(frozen=True)
class CallCost:
    """What a call of a round costs beyond its steps, and its share of a round of `steps`."""

    seconds: float
    step_seconds: float
    steps: int

    @property
    def share(self) -> float:
        return self.seconds / (self.seconds + self.steps * self.step_seconds)


def sized_for_calls(
    run: Callable[[int], object], steps: int, share: float = SIZED_CALL_SHARE, longest_s: float = math.inf
) -> CallCost:
    """Steps per round (at least `steps`) that keep a call's own cost within `share` of a round,
    and that cost: a call of one step and a call of more, each the best of a few, split into the
    steps' time and the call's; where more steps are needed, measured again at that many (a
    split taken over a few short steps is mostly noise). On an accelerator fit()'s per-call cost
    (dispatch, callbacks, a sync) can be a round's tenth where the steps are short. No round is
    made longer than `longest_s` (the share past it is recorded, not hidden)."""
    one = best_of(lambda: run(1), repeats=3)
    longer = max(steps, 2)
    call, per_step, needed = 0.0, one, steps  # until a split is measured: no call cost to size by
    for _ in range(4):  # from a 3-step round to 700 steps took two here (tests/test_measure.py)
        many = best_of(lambda: run(longer), repeats=3)
        # A step's time counting the call's as steps': never below a step's true time, so a
        # round sized by it stays within longest_s whatever the split below made of noise.
        upper_step = many / longer
        most = math.floor(longest_s / upper_step) if math.isfinite(longest_s) else MAX_STEPS_PER_ROUND
        per_step = (many - one) / (longer - 1)
        if per_step <= 0:  # the steps lost in the call's noise: more of them, within the cap
            per_step, grown = upper_step, min(MAX_STEPS_PER_ROUND, most, longer * CALIBRATION_GROWTH)
            if grown <= longer:
                break
            longer = grown
            continue
        call = max(0.0, one - per_step)
        needed = min(MAX_STEPS_PER_ROUND, max(steps, math.ceil(call * (1 - share) / (share * per_step))))
        needed = max(steps, min(needed, most))
        if needed <= longer * CLOSE_ENOUGH or longer >= MAX_STEPS_PER_ROUND:
            break
        longer = needed
    return CallCost(call, per_step, max(needed, steps))


def interleaved(first: Callable[[], float], second: Callable[[], float], pairs: int) -> tuple[list[float], list[float]]:
    """Throughputs of two workloads timed in alternating rounds, A B B A A B ... (comparison.order)
    to cancel drift.

    Each callable times one round and returns its throughput. Running the two back to back
    gives both the same chances at a quiet machine. Both must come warm, as every pair is
    timed, and warm right now: a work goes cold when another model is built after it (building
    seeds TensorFlow, and tf.random.set_seed clears its kernel cache). kinds/speedup/bench.py's
    timed_pairs runs a round of each just before, outside pytest-benchmark's clock.
    """
    firsts, seconds_ = [], []
    collecting = gc.isenabled()
    gc.disable()  # as timeit does: a collection landing in one side of a pair is pure noise
    try:
        sides = {"A": (first, firsts), "B": (second, seconds_)}
        for pair in comparison.order(pairs):
            for side in pair:
                run, kept = sides[side]
                kept.append(run())
    finally:
        if collecting:
            gc.enable()
    return firsts, seconds_


@dataclass
class Partner:
    """Rounds of a partner's work run around pytest-benchmark's rounds of a cell, as pedantic()'s
    setup and teardown, so that the two interleave in one pass: pair i is the cell's timed round
    i and the partner's round i, the partner first where orders[i] is ("A", "B") (A: the partner;
    comparison.order). Warm-up rounds, and the extra calls of --benchmark-cprofile, get none.
    Half the rounds a separate interleaving would take, and the cell's rounds are the ones
    its benchmark reports."""

    round_seconds: Callable[[], float]  # one round of the partner, timed by its own clock
    orders: list[tuple[str, str]]
    warmup_rounds: int
    seconds: list[float] = field(default_factory=list)  # the partner's, in pair order
    calls: int = 0  # of setup: rounds begun, warm-ups included

    def _partner_runs(self, position: int) -> None:
        """The partner's round, where the current pair puts it at `position` (0: before, 1: after)."""
        pair = self.calls - 1 - self.warmup_rounds
        if 0 <= pair < len(self.orders) and self.orders[pair][position] == "A":
            self.seconds.append(self.round_seconds())

    def setup(self) -> None:
        self.calls += 1
        self._partner_runs(0)

    def teardown(self, *_: object) -> None:
        self._partner_runs(1)


def best_ratio(reference: Sequence[float], candidate: Sequence[float]) -> float:
    """Best candidate throughput over best reference throughput.

    On a shared machine noise only ever slows a round down, often by a third at once (seen
    on 2-core CI machines), so the best round of each side is the stable estimate of what
    the code can do; medians of per-pair ratios moved by 40% between runs of unchanged code.
    """
    return max(candidate) / max(reference)


def pair_ratios(reference: Sequence[float], candidate: Sequence[float]) -> list[float]:
    return [c / r for r, c in zip(reference, candidate)]


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
