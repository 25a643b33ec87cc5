"""The A/B verdict's statistics: pure numpy/scipy, no TensorFlow, no pytest.

Environment A and B time the same rounds (same steps, data, seed and batch) alternately, in
a seeded random A B B A order, so drift of the machine falls on both alike. Each adjacent
A, B pair gives a ratio B/A of round seconds (above 1: B is slower). The cell's effect is the
median ratio, with a distribution-free interval for it (analysis.median_interval); the test
is a one-sided Wilcoxon signed-rank test on the log ratios (B slower than A).

A cell is judged after `first` pairs and again every `step` pairs up to `most`. The rules,
with min_effect the smallest slowdown that fails a cell (--ab-min-effect):

- pass:    at any look, the median's upper bound at 1 - PASS_ERROR / looks lies below
           1 + min_effect. The chance of passing a cell whose B really is min_effect slower
           or more is at most PASS_ERROR, spent evenly over the looks (Bonferroni).
- fail:    at the last look only, both (1) B significantly slower than A, one-sided Wilcoxon
           p < family_alpha / cells (Bonferroni over the run's cells: a whole run of unchanged
           code fails with probability at most family_alpha), with a median ratio of at least
           1 + min_effect, and (2) B shown slower by at least min_effect: over every pair timed
           (these and the confirmations' below), the median's one-sided lower bound at
           1 - EFFECT_ERROR is at least 1 + min_effect, so a cell slowed by less than min_effect
           fails with probability at most EFFECT_ERROR (a 3% slowdown under min_effect 5% far
           less), where pairs of processes do not differ.
- unknown: neither after `most` pairs: the interval says what is known (shown; it fails only
           under --ab-strict).

So one family of decisions, over every cell and look of a run, is held to two rates: no
false fail of an unchanged cell in more than family_alpha of runs, no pass of a cell slowed by
min_effect in more than PASS_ERROR of its cells.

A fail is then confirmed, twice, in fresh pairs of processes (`repeated`): two processes of the
same code can differ by a few percent for as long as they live (where a model's buffers landed
in memory). Across six runs (five A/A, one of two TensorFlow releases), each cell's B/A (one
pair of processes each) spread by 0.7% to 4.9% (sd), most for mlp_wide training and the SVM's
batch-256 inference, and no number of rounds inside one pair of processes can tell that from B.
The fail stands only if each of CONFIRMATIONS fresh pairs of processes shows B slower again
over up to `most` pairs (one-sided p < CONFIRM_ALPHA, median ratio above 1; fresh_pairs stops
at a look where B is not slower at all) and every pair of every process, pooled, still shows
the min_effect slowdown (rule 2); otherwise the cell is unknown, saying the slowdown did not
repeat. A slowdown whose interval starts above 1 + BEYOND_PROCESS_SPREAD is beyond any process
effect seen and fails at once. tests/test_comparison.py simulates every rate above with this
machine's pair noise and each quick cell's process spread.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from accelbench.judge import analysis
from accelbench.units import format_small

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
FAMILY_ALPHA = 0.01  # of a whole A/A run falsely failing any cell
EFFECT_ERROR = 0.05  # of failing a cell slowed by less than min_effect (one-sided lower bound)
PASS_ERROR = 0.05  # of passing a cell slowed by min_effect or more, over all its looks
CONFIRM_ALPHA = 0.01  # of the fresh processes' test: a slowdown that repeats, not a second search
CONFIRMATIONS = 2  # fresh pairs of processes a fail must repeat in
# A slowdown whose whole 95% interval lies above this is no difference between two processes:
# three times the largest spread between pairs of processes seen in A/A runs (4.9%, sd). Such a
# fail needs no confirmation (ONEDNN_MAX_CPU_ISA=AVX: 11 and 12 of 16 cells in two runs).
BEYOND_PROCESS_SPREAD = 0.15


@dataclass(frozen=True)
class Plan:
    """How many pairs a cell gets and how strictly each look tests."""

    min_effect: float = 0.05
    first: int = 12
    step: int = 12
    most: int = 36
    cells: int = 1  # judged in the run: the multiple-testing correction
    family_alpha: float = FAMILY_ALPHA

    @property
    def alpha(self) -> float:
        """Of the last look's test: a run's false-failure rate over its cells stays under family_alpha."""
        return self.family_alpha / max(1, self.cells)

    @property
    def pass_error(self) -> float:
        """Of one look's upper bound: PASS_ERROR spent evenly over the looks."""
        return PASS_ERROR / len(self.sizes())

    def sizes(self) -> list[int]:
        """The pair counts at which a cell is judged."""
        return sorted({*range(self.first, self.most, self.step), self.most})


@dataclass(frozen=True)
class Comparison:
    ratio: float  # median of the pairs' B/A
    low: float  # 95% interval of that median
    high: float
    p_value: float  # one-sided Wilcoxon: B slower
    pairs: int
    outcome: str
    reason: str


def ratios(a_seconds: Sequence[float], b_seconds: Sequence[float]) -> list[float]:
    return [b / a for a, b in zip(a_seconds, b_seconds)]


def p_slower(pair_ratios: Sequence[float]) -> float:
    """One-sided Wilcoxon signed-rank p that the log ratios centre above 0 (B slower)."""
    from scipy.stats import wilcoxon

    logs = [math.log(r) for r in pair_ratios]
    if all(value == 0.0 for value in logs):
        return 1.0
    # Exact where it can be; with ties or zeros scipy would fall back to a slow permutation test.
    exact = len(set(logs)) == len(logs) and 0.0 not in logs and len(logs) <= 50
    return float(wilcoxon(logs, alternative="greater", method="exact" if exact else "approx").pvalue)


def effect_bound(pair_ratios: Sequence[float]) -> float:
    """Rule 2's bound: the median's one-sided lower bound at 1 - EFFECT_ERROR."""
    return analysis.median_bound(pair_ratios, "low", EFFECT_ERROR)


def judge(pair_ratios: Sequence[float], plan: Plan, last: bool) -> Comparison:
    """The verdict on the pairs so far; `last`: no more pairs will come. A fail here is B
    significantly slower with a median ratio of at least 1 + min_effect: confirmed() then asks
    fresh processes to repeat it and every pair to show it (rule 2)."""
    ratio = statistics.median(pair_ratios)
    low, high = analysis.median_interval(pair_ratios)
    p_value = p_slower(pair_ratios)
    bound = 1.0 + plan.min_effect
    upper = analysis.median_bound(pair_ratios, "high", plan.pass_error)
    if upper < bound:
        outcome, reason = (
            PASS,
            (
                f"a slowdown of {plan.min_effect:.0%} is excluded (B/A at most {upper:.3f}, "
                f"{1 - plan.pass_error:.1%} bound)"
            ),
        )
    elif last and p_value < plan.alpha and ratio >= bound:
        outcome, reason = (
            FAIL,
            (
                f"B slower (one-sided Wilcoxon p = {format_small(p_value)} < {format_small(plan.alpha)}, "
                f"{len(pair_ratios)} pairs)"
            ),
        )
    elif last:
        # One interval per line: the message's named 95% interval; here only the one bound
        # that kept a pass out, named, beside the test that kept a fail out.
        outcome, reason = (
            UNKNOWN,
            (
                f"after {len(pair_ratios)} pairs a slowdown of {plan.min_effect:.0%} is neither "
                f"excluded (B/A's {1 - plan.pass_error:.1%} upper bound is {upper:.3f}) nor shown "
                f"(p = {format_small(p_value)}, needs < {format_small(plan.alpha)}); more pairs "
                "(a larger preset) would tell"
            ),
        )
    else:
        outcome, reason = "", "undecided"
    return Comparison(ratio, low, high, p_value, len(pair_ratios), outcome, reason)


def looks(pairs_up_to: Callable[[int], Sequence[float]], plan: Plan) -> tuple[Comparison, list[float]]:
    """Judge at each look in turn, the first decision standing: pairs_up_to(n) returns the
    ratios of the first n pairs (a run times the missing ones). The verdict and its pairs."""
    for n in plan.sizes():
        ratios = list(pairs_up_to(n))
        found = judge(ratios, plan, last=n == plan.most)
        if found.outcome:
            return found, ratios
    raise AssertionError("the last look always decides")


def sequential(pair_ratios: Sequence[float], plan: Plan) -> Comparison:
    """looks() over pairs already timed (the statistics' tests)."""
    if len(pair_ratios) < plan.most:
        raise ValueError(f"{len(pair_ratios)} pairs: fewer than the plan's {plan.most}")
    return looks(lambda n: pair_ratios[:n], plan)[0]


def order(pairs: int, seed: int | None = None) -> list[tuple[str, str]]:
    """Each pair's order, A B or B A, in A B B A blocks: half the pairs of every block run A
    first, so neither side always follows the other and a drift favours neither. With a seed
    each block's order is drawn at random (an A/B run's rounds); without one it is fixed:
    A B, B A, A B, ... The suite's one interleaving order: A/B runs, backends round for
    round, speedups' pairs and the threads cells' processes all take it."""
    rng = random.Random(seed) if seed is not None else None
    orders: list[tuple[str, str]] = []
    for _ in range(0, pairs, 2):
        block = [("A", "B"), ("B", "A")]
        if rng is not None:
            rng.shuffle(block)
        orders += block
    return orders[:pairs]


def fresh_pairs(pairs_up_to: Callable[[int], Sequence[float]], plan: Plan) -> list[float]:
    """A confirmation's ratios, timed to the plan's looks as the first pairs were, stopping at a
    look where B is not slower at all (median B/A at most 1): confirm() needs a median above 1,
    and most A/A confirmations end there after `first` pairs instead of `most`."""
    for n in plan.sizes():
        ratios = list(pairs_up_to(n))
        if statistics.median(ratios) <= 1.0:
            break
    return ratios


def repeated(first: Comparison, first_ratios: Sequence[float], again: Sequence[float]) -> Comparison:
    """A failed cell's verdict once fresh processes have timed `again` pairs: it stays failed
    only if B is slower there too. The ratio and interval are then those of every pair, both
    pairs of processes together."""
    p_again, ratio_again = p_slower(again), statistics.median(again)
    pooled = [*first_ratios, *again]
    low, high = analysis.median_interval(pooled)
    if p_again < CONFIRM_ALPHA and ratio_again > 1.0:
        return Comparison(
            statistics.median(pooled),
            low,
            high,
            first.p_value,
            len(pooled),
            FAIL,
            f"{first.reason}; and again in fresh processes (B/A = {ratio_again:.3f}, p = {format_small(p_again)})",
        )
    return Comparison(
        statistics.median(pooled),
        low,
        high,
        first.p_value,
        len(pooled),
        UNKNOWN,
        f"B was slower (B/A = {first.ratio:.3f}, {first.reason}) but not again "
        f"in fresh ones (B/A = {ratio_again:.3f}, p = {format_small(p_again)}, "
        f"needs < {format_small(CONFIRM_ALPHA)}): a "
        f"difference between two processes, not shown to be one between the environments",
    )


def shown(found: Comparison, every_ratio: Sequence[float], min_effect: float) -> Comparison:
    """Rule 2 on a fail: every pair together shows B slower by at least min_effect (the
    median's one-sided lower bound at 1 - EFFECT_ERROR); otherwise unknown, saying so."""
    lower = effect_bound(every_ratio)
    if lower >= 1.0 + min_effect:
        return replace(
            found, reason=f"{found.reason}; B/A at least {lower:.3f} over every pair ({1 - EFFECT_ERROR:.0%} bound)"
        )
    return replace(
        found,
        outcome=UNKNOWN,
        reason=(
            f"{found.reason}, but by how much is not shown: B/A at least {lower:.3f} over every pair "
            f"({1 - EFFECT_ERROR:.0%} bound), below the {min_effect:.0%} that fails a cell"
        ),
    )


def confirmed(
    first: Comparison,
    first_ratios: Sequence[float],
    fresh: Callable[[], Sequence[float]],
    min_effect: float,
    confirmations: int = CONFIRMATIONS,
) -> Comparison:
    """A fail, repeated in up to `confirmations` fresh pairs of processes (fresh() times one
    pair's pairs of rounds and returns their ratios) and then held to rule 2 over every pair;
    any other verdict as it is."""
    if first.outcome != FAIL or first.low >= 1.0 + BEYOND_PROCESS_SPREAD:
        return first
    found, ratios = first, list(first_ratios)
    for _ in range(confirmations):
        again = list(fresh())
        found = repeated(found, ratios, again)
        ratios += again
        if found.outcome != FAIL:
            return found
    return shown(found, ratios, min_effect)
