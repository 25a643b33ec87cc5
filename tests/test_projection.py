"""Fits, intervals, back-tests and projections on synthetic curves with a known truth."""

import numpy as np
import pytest

from accelbench.judge import projection
from accelbench.kinds.data_scaling.settings import DataScalingSettings
from accelbench.run.presets import KIND_SETTINGS

SIZES = (250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0)
QUICK: DataScalingSettings = KIND_SETTINGS["data_scaling"].of("quick")
ROUNDS = QUICK.rounds
DRAWS = 200


def quadratic(n):
    return 2.0 + 3e-6 * np.asarray(n, dtype=float) ** 2


def measured(truth, seed, noise=0.03, sizes=SIZES, rounds=ROUNDS):
    """Rounds of a curve with relative Gaussian noise, as a Curve."""
    rng = np.random.default_rng(seed)
    values = truth(np.array(sizes))[:, None] * (1.0 + rng.normal(0.0, noise, (len(sizes), rounds)))
    return projection.Curve(sizes, tuple(tuple(row) for row in values))


def test_power_law_fit_recovers_a_known_curve_exactly():
    fit = projection.fit_power_law(SIZES, quadratic(SIZES))
    assert fit.k == pytest.approx(2.0, abs=1e-6)
    assert fit.a == pytest.approx(2.0, rel=1e-5)
    assert fit.b == pytest.approx(3e-6, rel=1e-5)


def test_pure_power_law_has_no_fixed_cost_and_a_constant_is_exponent_zero():
    pure = projection.fit_power_law(SIZES, 1e-3 * np.array(SIZES) ** 1.5)
    assert (pure.a, pure.k) == (pytest.approx(0.0, abs=1e-9), pytest.approx(1.5, abs=1e-6))
    flat = projection.fit_power_law(SIZES, [4.0] * len(SIZES))
    assert flat(1e9) == pytest.approx(4.0)


@pytest.mark.slow
def test_interval_covers_the_truth_at_100x_the_largest_size_in_at_least_90_percent_of_draws():
    """t = 2 + 3e-6·n², 3% noise, the preset's rounds: the 95% interval at 800,000 images."""
    target = 100 * SIZES[-1]
    covered, exponents, stderrs = 0, [], []
    for seed in range(DRAWS):
        projected = projection.project(measured(quadratic, seed), target, draws=300, seed=seed)
        low, high = projected.ci95
        covered += low <= quadratic(target) <= high
        exponents.append(projected.exponent)
        stderrs.append(projected.exponent_stderr)
    assert covered >= 0.90 * DRAWS, f"covered {covered} of {DRAWS}"
    assert np.mean(exponents) == pytest.approx(2.0, abs=0.01)
    # the reported standard error is the spread the exponent really has between draws
    assert np.mean(stderrs) == pytest.approx(np.std(exponents), rel=0.35)


def test_a_curve_with_a_knee_fails_its_backtest_and_is_unsafe_even_close_by():
    """Linear up to 4,000 images, then steeply worse (a cache outgrown): 2x beyond the data."""
    knee = lambda n: 0.5 + 1e-4 * n * np.maximum(1.0, n / 4000.0) ** 2
    projected = projection.project(measured(knee, seed=1), target=16_000)
    reasons = projection.beyond_data(projected) + projection.doubts(projected, "time", "s")
    assert not projected.backtest_ok
    assert projection.verdict(reasons).startswith("unsafe: ")
    assert any(reason.startswith("time back-test failed: without n=8,000 the fit predicts") for reason in reasons)


def test_a_clean_curve_within_10x_is_extrapolated_and_far_beyond_it_is_unsafe_with_the_number_shown():
    curve = measured(quadratic, seed=3)
    near = projection.project(curve, target=40_000)
    assert near.backtest_ok
    assert projection.verdict(projection.beyond_data(near) + projection.doubts(near, "time", "s")) == "extrapolated"
    far = projection.project(curve, target=60e9)
    assert projection.beyond_data(far) == [
        "the target is 7,500,000x the largest measured size (extrapolated only within 10x)"
    ]
    # 7.5 million times beyond the data an exponent off by 0.014 is a factor 1.25: still inside
    assert far.ci95[0] <= quadratic(60e9) <= far.ci95[1]


def test_an_exponent_lost_in_noise_is_named_a_doubt():
    flat_and_noisy = projection.project(measured(lambda n: 1.0 + 0 * n, seed=0, noise=0.2), target=16_000)
    doubts = projection.doubts(flat_and_noisy, "time", "s")
    assert any("the time exponent is poorly determined" in doubt for doubt in doubts)


def test_too_few_sizes_for_a_backtest_are_said_so():
    curve = measured(quadratic, seed=0, sizes=SIZES[:4])
    projected = projection.project(curve, target=8000)
    assert projected.backtest is None
    assert "no memory back-test: fewer than 5 sizes were measured" in projection.doubts(projected, "memory", "B")
    with pytest.raises(ValueError, match="a projection needs 4 or more sizes, got 3"):
        projection.project(measured(quadratic, seed=0, sizes=SIZES[:3]), target=8000)


def test_curve_rejects_unordered_sizes_and_empty_rounds():
    with pytest.raises(ValueError, match="ascending"):
        projection.Curve((2.0, 1.0), ((1.0,), (1.0,)))
    with pytest.raises(ValueError, match="at least one round"):
        projection.Curve((1.0, 2.0), ((1.0,), ()))


def test_one_round_per_size_takes_its_interval_from_the_residuals():
    """The quick preset takes one memory peak per size: the fit's departures set the interval."""
    target, covered = 100 * SIZES[-1], 0
    for seed in range(100):
        projected = projection.project(measured(quadratic, seed, rounds=1), target, draws=300, seed=seed)
        covered += projected.ci95[0] <= quadratic(target) <= projected.ci95[1]
        assert projected.exponent_stderr > 0
    assert covered >= 80, f"covered {covered} of 100"
    exact = projection.project(projection.Curve(SIZES, tuple((v,) for v in 3.0 * np.array(SIZES))), target)
    assert exact.ci95 == pytest.approx((3.0 * target, 3.0 * target)) and exact.backtest_ok
