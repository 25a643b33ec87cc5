"""Statistics behind the verdicts: pure numpy/scipy, no TensorFlow, no pytest.

Noise on a shared machine is one-sided: a busy neighbour only ever slows a round down, often
by a third at once, and in bursts that cover several rounds. So a run's timing is its fast
half of rounds (the undisturbed ones), and a comparison of two runs needs both a significant
rank test between their fast halves and an effect larger than the drift seen between
unchanged runs.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def fast_half(samples: Sequence[float]) -> list[float]:
    """The faster half of the round times (the middle one included when their count is odd)."""
    ordered = sorted(samples)
    return ordered[: math.ceil(len(ordered) / 2)]


def typical_fast(samples: Sequence[float]) -> float:
    """The median of the fast half: a run's undisturbed time, robust to bursts of slow rounds."""
    return statistics.median(fast_half(samples))


def significantly_below(ratios: Sequence[float], floor: float, alpha: float = 0.05) -> tuple[bool, float]:
    """One-sided Wilcoxon signed-rank test that the ratios lie below the floor: (below?, p).

    A gate on a ratio of two noisy timings fails only when the shortfall is more than the
    noise explains, so unchanged code does not flake on a busy machine.
    """
    from scipy.stats import wilcoxon

    differences = [math.log(r / floor) for r in ratios]
    if all(d == 0 for d in differences):
        return False, 1.0
    p_value = float(wilcoxon(differences, alternative="less").pvalue)
    return p_value < alpha, p_value


def mann_whitney_floor(first: int, second: int) -> float:
    """The smallest one-sided p that Mann-Whitney's exact test can give samples of these sizes
    (every value of one above every value of the other): 1 / C(first + second, first). Two
    fast halves of 2 rounds can give no less than 1/6, however much slower one is."""
    return 1.0 / math.comb(first + second, first)


def wilcoxon_floor(pairs: int) -> float:
    """The smallest one-sided p that Wilcoxon's exact signed-rank test can give `pairs` pairs
    (every difference of one sign): 1 / 2**pairs."""
    return 0.5**pairs


def rounds_to_show_a_shift(alpha: float = 0.05) -> int:
    """The fewest rounds a side whose fast halves can show a shift at p < alpha (shift)."""
    rounds = 1
    while mann_whitney_floor(*(len(fast_half(range(rounds))),) * 2) >= alpha:
        rounds += 1
    return rounds


def pairs_to_show_a_shortfall(alpha: float = 0.05) -> int:
    """The fewest pairs whose ratios can show a shortfall at p < alpha (significantly_below)."""
    return math.floor(math.log2(1.0 / alpha)) + 1


@functools.cache
def median_interval_ranks(n: int, confidence: float = 0.95) -> tuple[int, int] | None:
    """The 0-based order statistics (k, n - 1 - k) of n samples that bound the median with at
    least `confidence`, k as large as that allows; None when even the smallest and largest fall
    short (n < 6 at 95%: min..max holds the median with 1 - 2**(1 - n), 93.75% of 5).

    The median lies below the (k+1)-th smallest unless at most k samples fall below it, and
    above the (n-k)-th unless at most k fall above: the pair holds it with 1 - 2 * binom.cdf(k, n, 1/2).
    """
    from scipy.stats import binom

    k = -1
    while k + 1 <= n - 2 - k and 1.0 - 2.0 * binom.cdf(k + 1, n, 0.5) >= confidence:  # the coverage of k + 1
        k += 1
    return None if k < 0 else (k, n - 1 - k)


def median_interval(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median (of 7 samples: the smallest and largest,
    98.4%; of 15: the 4th and 12th smallest, 96.5%); (-inf, inf) when the samples are too few
    to bound it at this confidence."""
    ordered = sorted(samples)
    ranks = median_interval_ranks(len(ordered), confidence)
    if ranks is None:
        return -math.inf, math.inf
    return ordered[ranks[0]], ordered[ranks[1]]


def median_interval_or_none(samples: Sequence[float], confidence: float = 0.95) -> list[float] | None:
    """median_interval as a JSON value: None where the samples are too few to bound the median."""
    low, high = median_interval(samples, confidence)
    return [low, high] if math.isfinite(low) else None


def median_bound(samples: Sequence[float], side: str, error: float) -> float:
    """A one-sided bound for the median that is wrong with probability at most `error`: the
    lower ("low") or upper ("high") end of the two-sided interval at 1 - 2 * error."""
    low, high = median_interval(samples, 1.0 - 2.0 * error)
    return low if side == "low" else high


@dataclass(frozen=True)
class Shift:
    """How a new sample of round times compares with a saved one."""

    ratio: float  # typical_fast(new) / typical_fast(saved): above 1 is slower
    p_value: float  # one-sided Mann-Whitney U: new fast half slower than the saved fast half
    threshold: float  # the smallest slowdown that counts, as a fraction
    alpha: float

    floor: float = 0.0  # the smallest p_value these sample sizes can give (mann_whitney_floor)

    @property
    def slower(self) -> bool:
        return self.ratio > 1.0 + self.threshold and self.p_value < self.alpha

    @property
    def could_show(self) -> bool:
        """Whether these rounds could have shown a slowdown at all: a pass needs it."""
        return self.floor < self.alpha

    @property
    def faster(self) -> bool:
        return self.ratio < 1.0 / (1.0 + self.threshold) and self.p_value > 1.0 - self.alpha


def shift(saved: Sequence[float], new: Sequence[float], threshold: float, alpha: float = 0.05) -> Shift:
    """Compare two runs' per-sample round times (as asv compare does: a factor and a rank test).

    Both look at each run's fast half only, so a burst of slow rounds in either run is not
    taken for a change: the rank test says whether the new fast rounds are slower than noise
    explains, the factor whether the slowdown is larger than the drift between unchanged runs.
    """
    from scipy.stats import mannwhitneyu

    ratio = typical_fast(new) / typical_fast(saved)
    p_value = float(mannwhitneyu(fast_half(new), fast_half(saved), alternative="greater").pvalue)
    return Shift(ratio, p_value, threshold, alpha, mann_whitney_floor(len(fast_half(new)), len(fast_half(saved))))


def crossover(xs: Sequence[float], ratios: Sequence[float]) -> float | None:
    """Where a candidate overtakes a reference: the first x at which ratio = candidate /
    reference rises through 1, interpolated on log x between the two measured points around it.

    The smallest x when the candidate leads from the start; None when it never leads.
    """
    points = sorted(zip(xs, ratios))
    if not points:
        return None
    if points[0][1] >= 1.0:
        return float(points[0][0])
    for (x0, r0), (x1, r1) in zip(points, points[1:]):
        if r0 < 1.0 <= r1:
            share = (1.0 - r0) / (r1 - r0)
            return float(np.exp(np.log(x0) + share * (np.log(x1) - np.log(x0))))
    return None


MAX_DIGITS = 15  # a float64 agrees with itself to about this many significant digits


def matching_digits(reference: float, candidate: float) -> int:
    """Significant digits two numbers share, as the studies counted them ("equal to the 3rd
    significant digit"): floor(-log10(|a - b| / |a|)), 0 when they differ in the first."""
    if reference == candidate:
        return MAX_DIGITS
    if reference == 0 or not math.isfinite(reference) or not math.isfinite(candidate):
        return 0
    relative = abs(candidate - reference) / abs(reference)
    return int(min(MAX_DIGITS, max(0.0, math.floor(-math.log10(relative)))))


def saturation(batch_sizes: Sequence[float], throughputs: Sequence[float], growth: float = 0.05) -> float | None:
    """The batch size from which throughput stops growing by more than `growth` per doubling
    (on one device: where a larger batch stops paying); None when it grows all the way."""
    points = sorted(zip(batch_sizes, throughputs))
    for (b0, t0), (b1, t1) in zip(points, points[1:]):
        per_doubling = (t1 / t0) ** (1.0 / math.log2(b1 / b0)) - 1.0
        if per_doubling <= growth:
            return float(b0)
    return None


# A quality held to its twin (another backend, device or precision) fails only where the test
# set shows the difference: McNemar's exact test on the same test images, at this level. Two
# models whose true accuracies are equal then fail at most this often (tests/test_quality.py
# measures it by simulation), however few the test images.
PAIRED_ALPHA = 0.01


@dataclass(frozen=True)
class Paired:
    """Two classifiers scored on the same test images: how many each alone got right."""

    images: int
    reference_only: int  # right on the reference side, wrong on the candidate
    candidate_only: int
    p_value: float  # McNemar's exact test, two-sided: the two sides are equally accurate

    @property
    def shown(self) -> bool:
        return self.p_value < PAIRED_ALPHA

    def describe(self) -> str:
        return (
            f"of {self.images} test images, {self.reference_only} right only on the reference side and "
            f"{self.candidate_only} only here (McNemar p = {self.p_value:.2g})"
        )


def paired(reference_correct: Sequence[bool], candidate_correct: Sequence[bool]) -> Paired:
    """McNemar's exact test (a binomial test on the discordant images): scipy has the binomial
    test; statsmodels, which has McNemar by name, is not a dependency for this one line."""
    from scipy import stats

    reference, candidate = np.asarray(reference_correct, bool), np.asarray(candidate_correct, bool)
    if reference.shape != candidate.shape:
        raise ValueError(f"paired scores on {reference.size} and {candidate.size} test images")
    reference_only, candidate_only = int(np.sum(reference & ~candidate)), int(np.sum(candidate & ~reference))
    discordant = reference_only + candidate_only
    p_value = 1.0 if discordant == 0 else float(stats.binomtest(reference_only, discordant, 0.5).pvalue)
    return Paired(int(reference.size), reference_only, candidate_only, p_value)
