"""The A/B verdict's statistics: pure numpy/scipy, no TensorFlow, no pytest.

Environment A and B time the same rounds (same steps, data, seed and batch) alternately, in
a seeded random A B B A order, so drift of the machine falls on both alike. Each adjacent
A, B pair gives a ratio B/A of round seconds (above 1: B is slower). The cell's effect is the
median ratio, with a distribution-free 95% interval for it; the test is a one-sided Wilcoxon
signed-rank test on the log ratios (B slower than A).

A cell is judged after `first` pairs and again every `step` pairs up to `most`. An early
look may only pass a cell (stop when a slowdown of min_effect is already excluded); a cell
fails only at the last look, tested at family_alpha / cells (Bonferroni over the run's cells),
so a whole run of unchanged code (A/A) fails with probability at most family_alpha, and a
cell that did slow down gets every pair of its budget.

- fail:    at the last look, B significantly slower and either the median ratio at least
           1 + min_effect or a slowdown of min_effect inside the 95% interval;
- pass:    the interval's upper end below 1 + min_effect: a slowdown that large is excluded
           (a significant smaller slowdown passes too, and its ratio is shown);
- unknown: neither after `most` pairs (shown; it fails only under --ab-strict).

A fail is then confirmed, twice, in fresh pairs of processes (`confirm`): two processes of the
same code can differ by a few percent for as long as they live (where a model's buffers landed
in memory). Across six runs (five A/A, one of two TensorFlow releases), each cell's B/A (one pair of
processes each) spread by 0.7% to
4.9% (sd), most for mlp_wide training and the SVM's batch-256 inference (0.946-1.060 between
processes whose numpy and scikit-learn were the same build), and no number of rounds inside one
pair of processes can tell that from B. The fail stands only if each of CONFIRMATIONS fresh
pairs of processes shows B slower again over up to `most` pairs (one-sided p < CONFIRM_ALPHA, median
ratio above 1; fresh_pairs stops at a look where B is not slower at all); otherwise the cell is unknown, saying the slowdown did not repeat. A slowdown
whose interval starts above 1 + BEYOND_PROCESS_SPREAD is beyond any process effect seen and
fails at once. In a simulation with the measured process spreads, 46 of 100 A/A runs failed
a cell with no confirmation, 12 with one, 3 with two (tests/test_comparison.py).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accelbench import analysis

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
FAMILY_ALPHA = 0.01  # of a whole A/A run falsely failing any cell
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


def judge(pair_ratios: Sequence[float], plan: Plan, last: bool) -> Comparison:
    """The verdict on the pairs so far; `last`: no more pairs will come."""
    ratio = statistics.median(pair_ratios)
    low, high = analysis.median_interval(pair_ratios)
    p_value = p_slower(pair_ratios)
    bound = 1.0 + plan.min_effect
    significant = last and p_value < plan.alpha
    if high < bound:
        outcome, reason = PASS, f"a slowdown of {plan.min_effect:.0%} is outside the 95% interval"
    elif significant:
        outcome, reason = FAIL, f"B slower (one-sided Wilcoxon p = {p_value:.2g} < {plan.alpha:.2g}, {len(pair_ratios)} pairs)"
    elif last:
        outcome, reason = UNKNOWN, (f"after {len(pair_ratios)} pairs a slowdown of {plan.min_effect:.0%} is neither "
                                    f"excluded nor significant (p = {p_value:.2g}, needs < {plan.alpha:.2g})")
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


def order(pairs: int, seed: int) -> list[tuple[str, str]]:
    """Each pair's order, A B or B A, in seeded random A B B A blocks: half the pairs of every
    block run A first, so neither side always follows the other."""
    rng = random.Random(seed)
    orders = []
    for _ in range(0, pairs, 2):
        block = [("A", "B"), ("B", "A")]
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


def confirm(first: Comparison, first_ratios: Sequence[float], again: Sequence[float]) -> Comparison:
    """A failed cell's verdict once fresh processes have timed `again` pairs: it fails only if
    B is slower there too. The ratio and interval are then those of every pair, both pairs of
    processes together."""
    p_again, ratio_again = p_slower(again), statistics.median(again)
    pooled = [*first_ratios, *again]
    low, high = analysis.median_interval(pooled)
    if p_again < CONFIRM_ALPHA and ratio_again > 1.0:
        return Comparison(statistics.median(pooled), low, high, first.p_value, len(pooled), FAIL,
                          f"{first.reason}; and again in fresh processes (B/A = {ratio_again:.3f}, p = {p_again:.2g})")
    return Comparison(statistics.median(pooled), low, high, first.p_value, len(pooled), UNKNOWN,
                      f"B was slower (B/A = {first.ratio:.3f}, {first.reason}) but not again "
                      f"in fresh ones (B/A = {ratio_again:.3f}, p = {p_again:.2g}, needs < {CONFIRM_ALPHA:g}): a "
                      f"difference between two processes, not shown to be one between the environments")


def confirmed(first: Comparison, first_ratios: Sequence[float], fresh: Callable[[], Sequence[float]],
              confirmations: int = CONFIRMATIONS) -> Comparison:
    """A fail, confirmed in up to `confirmations` fresh pairs of processes (fresh() times one
    pair's pairs of rounds and returns their ratios); any other verdict as it is."""
    found, ratios = first, list(first_ratios)
    if first.low >= 1.0 + BEYOND_PROCESS_SPREAD:
        return first
    for _ in range(confirmations):
        if found.outcome != FAIL:
            break
        again = list(fresh())
        found = confirm(found, ratios, again)
        ratios += again
    return found
