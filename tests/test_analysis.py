"""The statistics behind the verdicts, on synthetic samples with a known truth."""

import numpy as np
import pytest

from accelbench.judge import analysis

DRAWS = 100
ROUNDS = 8  # the quick preset's timed rounds


def rounds(rng, base, noise, bursts=0, burst_size=0.0):
    """One run's round times: one-sided noise (a round is only ever slowed down), and a few
    rounds slowed by burst_size at once, as a busy neighbour does."""
    times = base * (1.0 + np.abs(rng.normal(0.0, noise, ROUNDS)))
    times[rng.choice(ROUNDS, bursts, replace=False)] *= 1.0 + burst_size
    return list(times)


def caught(shift_by, noise, threshold, bursts=0, seed0=0):
    hits = 0
    for seed in range(seed0, seed0 + DRAWS):
        rng = np.random.default_rng(seed)
        saved = rounds(rng, 1.0, noise, bursts, 0.6)
        new = rounds(rng, 1.0 + shift_by, noise, bursts, 0.6)
        hits += analysis.shift(saved, new, threshold).slower
    return hits


def test_a_ten_percent_slowdown_at_low_noise_is_caught():
    assert caught(0.10, noise=0.01, threshold=0.05) >= 95


def test_pure_noise_is_not_taken_for_a_slowdown():
    assert caught(0.0, noise=0.01, threshold=0.05) <= 5
    assert caught(0.0, noise=0.05, threshold=0.05) <= 5


def test_bursts_of_slow_rounds_are_not_a_regression_but_a_halving_is():
    """Three rounds of eight slowed by 60% in both runs: the fast halves still tell the truth."""
    assert caught(0.0, noise=0.03, threshold=0.3, bursts=3) <= 5
    assert caught(1.0, noise=0.03, threshold=0.3, bursts=3) >= 95


def test_a_small_slowdown_below_the_threshold_passes_however_significant():
    assert caught(0.10, noise=0.01, threshold=0.3) == 0


def test_typical_fast_is_the_median_of_the_fast_half():
    assert analysis.fast_half([5, 1, 4, 2, 3]) == [1, 2, 3]
    assert analysis.typical_fast([5, 1, 4, 2, 3, 9]) == 2
    assert analysis.typical_fast([1.0, 100.0, 1.2, 100.0]) == pytest.approx(1.1)


def test_significantly_below():
    below, p_value = analysis.significantly_below([0.7, 0.72, 0.69, 0.75, 0.71, 0.73, 0.7, 0.74, 0.68], 0.9)
    assert below and p_value < 0.01
    assert not analysis.significantly_below([0.7, 1.1, 0.95, 1.05, 0.8, 1.0, 1.2, 0.9, 1.0], 0.9)[0]
    assert analysis.significantly_below([0.9] * 9, 0.9) == (False, 1.0)


@pytest.mark.parametrize(
    "reference, candidate, digits",
    [
        (0.9812, 0.9815, 3),  # the studies' "equal to the 3rd significant digit"
        (0.2345, 0.2391, 1),
        (1.0, 1.0, analysis.MAX_DIGITS),
        (0.5, 0.9, 0),
        (0.0, 0.1, 0),
    ],
)
def test_matching_significant_digits(reference, candidate, digits):
    assert analysis.matching_digits(reference, candidate) == digits


def test_saturation_is_where_throughput_stops_growing_5_percent_per_doubling():
    sizes = [32, 64, 128, 256, 512, 1024]
    assert analysis.saturation(sizes, [10, 18, 30, 32, 33, 33]) == 256  # 30 -> 32: +6.7%, 32 -> 33: +3.1%
    assert analysis.saturation(sizes, [10, 20, 40, 80, 160, 320]) is None
    assert analysis.saturation([32, 256], [100, 110]) == 32  # 10% over three doublings: 3.2% each


def test_the_95_percent_median_interval_holds_the_median_in_at_least_94_5_percent_of_draws():
    """Coverage by simulation, every n from 5 to 60: 4,000 draws each of a skewed distribution
    (lognormal, median 1); below 6 samples no pair of order statistics reaches 95% and the
    interval is unbounded."""
    rng = np.random.default_rng(0)
    for n in range(5, 61):
        draws = np.sort(rng.lognormal(0.0, 0.5, size=(4000, n)), axis=1)
        ranks = analysis.median_interval_ranks(n)
        if ranks is None:
            assert n == 5 and analysis.median_interval(draws[0]) == (-np.inf, np.inf)
            continue
        held = (draws[:, ranks[0]] <= 1.0) & (draws[:, ranks[1]] >= 1.0)
        assert held.mean() >= 0.945, (n, ranks, held.mean())
        assert analysis.median_interval(draws[0]) == (draws[0, ranks[0]], draws[0, ranks[1]])


def test_the_median_interval_is_the_widest_pair_that_still_reaches_its_confidence():
    assert analysis.median_interval_ranks(7) == (0, 6)  # 98.4%; the 2nd and 6th would hold only 87.5%
    assert analysis.median_interval_ranks(15) == (3, 11)  # 96.5%; the 5th and 11th: 88.2%
    assert analysis.median_interval([5, 1, 4, 2, 3, 7, 6]) == (1, 7)
    assert analysis.median_bound(list(range(1, 49)), "low", 0.05) < analysis.median_interval(list(range(1, 49)))[1]
