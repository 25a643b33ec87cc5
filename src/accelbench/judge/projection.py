"""Time and memory against the data size: a power-law fit with honest uncertainty, a back-test,
and a projection to sizes far beyond the data. Pure numpy/scipy: no TensorFlow, no pytest.

The model is t = a + b·n^k: a fixed cost per call (tracing, a data adapter, Python) plus a
power of the data size. It is fitted in relative terms (as log t), because round-to-round noise
is a fraction of the time, not a number of seconds. For a given k the best a and b are a
non-negative linear least-squares problem, so the fit is a one-dimensional search over k
(variable projection): fast enough to refit a thousand bootstrap resamples.

The 95% interval comes from a bootstrap over the repeated rounds of every size. It is the
measurement noise of one run carried through the fit: not the drift between runs (the SVM's
exponent was 1.80 ± 0.005 alone on the machine and 2.01 ± 0.008 with other work beside it),
and not the error of the model: a curve that bends
beyond the data is caught by the back-test (fit without the largest size, and predict it),
and every projection far beyond the data is called unsafe whatever its interval says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accelbench.units import format_factor

MAX_EXPONENT = 4.0  # nothing here grows faster than n^4; the search for k stays within [0, 4]
SAFE_FACTOR = 10.0  # a projection within 10x of the largest measured size may be called extrapolated
MIN_SIZES = 4  # three parameters and one degree of freedom
# An exponent known only to within this (one standard error) says little about sizes far out:
# at 10x beyond the data its 95% interval spans a factor 10^(2·0.2) = 2.5.
EXPONENT_STDERR_LIMIT = 0.2
# The power law's exponent and the log-log slope of the upper sizes may differ by this much
# before the two fits count as telling different stories.
EXPONENT_DISAGREEMENT = 0.25
BOOTSTRAP_DRAWS = 1000
# A back-test misses only by more than this fraction beyond its interval: memory peaks repeat
# to the byte, so their interval can be a single number, and a miss below 1% is resolution.
RESOLUTION = 0.01
CONFIDENCE = 0.95
TAIL = (1.0 - CONFIDENCE) / 2 * 100  # percent of the bootstrap left out on each side
GOLDEN_STEPS = 48  # shrinks the search for k over [0, 4] to 4e-10


@dataclass(frozen=True)
class PowerLaw:
    """t = a + c·(n / n_ref)^k, i.e. b = c / n_ref^k: scaled so that a and c are both times."""

    a: float
    c: float
    k: float
    n_ref: float

    @property
    def b(self) -> float:
        return self.c / self.n_ref**self.k

    def __call__(self, n: float | np.ndarray) -> float | np.ndarray:
        return self.a + self.c * (np.asarray(n, dtype=float) / self.n_ref) ** self.k


def fit_power_law(sizes: Sequence[float], values: Sequence[float]) -> PowerLaw:
    """Least relative error fit of a + c·(n/n_max)^k, a, c >= 0, 0 <= k <= MAX_EXPONENT."""
    return fit_power_laws(sizes, np.asarray(values, dtype=float)[None, :])[0]


def fit_power_laws(sizes: Sequence[float], values: np.ndarray) -> list[PowerLaw]:
    """One fit per row of values (shape: fits x sizes), all at once.

    For a given k, minimising sum((a + c·x^k) / y - 1)^2 over a, c >= 0 has a closed form;
    k itself is found by a golden-section search run on every row together.
    """
    n = np.asarray(sizes, dtype=float)
    y = np.atleast_2d(np.asarray(values, dtype=float))
    if n.size < 3 or y.shape[1] != n.size or np.any(y <= 0):
        raise ValueError(f"a power law needs 3 or more sizes with positive values, got {n.tolist()}: {y.tolist()}")
    x = n / n.max()
    low, high = np.zeros(len(y)), np.full(len(y), MAX_EXPONENT)
    golden = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(GOLDEN_STEPS):
        left, right = high - golden * (high - low), low + golden * (high - low)
        better_left = _relative_error(x, y, left)[2] < _relative_error(x, y, right)[2]
        high = np.where(better_left, right, high)
        low = np.where(better_left, low, left)
    k = (low + high) / 2.0
    a, c, _ = _relative_error(x, y, k)
    return [PowerLaw(float(ai), float(ci), float(ki), float(n.max())) for ai, ci, ki in zip(a, c, k)]


def _relative_error(x: np.ndarray, y: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row's k: the best a, c >= 0 and the sum of squared relative errors."""
    u = 1.0 / y
    v = x[None, :] ** k[:, None] / y
    uu, uv, vv = (u * u).sum(1), (u * v).sum(1), (v * v).sum(1)
    u1, v1 = u.sum(1), v.sum(1)
    det = uu * vv - uv * uv
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(det > 0, (vv * u1 - uv * v1) / det, 0.0)
        c = np.where(det > 0, (uu * v1 - uv * u1) / det, v1 / vv)
    # a constraint that binds: drop that term and refit the other alone
    only_c, only_a = a < 0, c < 0
    a, c = np.where(only_c, 0.0, a), np.where(only_c, v1 / vv, c)
    a, c = np.where(only_a, u1 / uu, a), np.where(only_a, 0.0, c)
    error = ((a[:, None] * u + c[:, None] * v - 1.0) ** 2).sum(1)
    return a, c, error


def loglog_exponent(sizes: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    """Slope and its standard error of log t against log n over the upper half of the sizes,
    where a fixed cost matters least: the check on the power law's k."""
    from scipy.stats import linregress

    upper = max(3, math.ceil(len(sizes) / 2))
    line = linregress(np.log(np.asarray(sizes[-upper:], float)), np.log(np.asarray(values[-upper:], float)))
    return float(line.slope), float(line.stderr)


def medians(rounds: Sequence[Sequence[float]]) -> list[float]:
    """The median round of each size."""
    return [float(np.median(r)) for r in rounds]


@dataclass(frozen=True)
class Curve:
    """What was measured: for each size (ascending), the value of every repeated round."""

    sizes: tuple[float, ...]
    rounds: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        if len(self.sizes) != len(self.rounds) or any(not r for r in self.rounds):
            raise ValueError("every size needs at least one round")
        if list(self.sizes) != sorted(set(self.sizes)):
            raise ValueError(f"sizes must be distinct and ascending: {self.sizes}")

    @property
    def typical(self) -> list[float]:
        return medians(self.rounds)

    @property
    def largest(self) -> float:
        return self.sizes[-1]

    def without_largest(self) -> Curve:
        return Curve(self.sizes[:-1], self.rounds[:-1])


def resampled_medians(curve: Curve, draws: int, seed: int) -> np.ndarray:
    """Each size's median of its rounds resampled with replacement, `draws` times (draws x sizes).

    With only a few rounds per size a plain resample understates the spread (a resample of R
    values varies (R-1)/R as much as the values do), so each size's rounds are first spread
    around their median by sqrt(R/(R-1)); the median itself stays where it was.
    """
    rng = np.random.default_rng(seed)
    if all(len(rounds) == 1 for rounds in curve.rounds):
        return _resampled_residuals(curve, draws, rng)
    medians = np.empty((draws, len(curve.sizes)))
    for column, rounds in enumerate(curve.rounds):
        values = np.asarray(rounds, dtype=float)
        factor = math.sqrt(len(values) / (len(values) - 1)) if len(values) > 1 else 1.0
        middle = np.median(values)
        spread = np.maximum(middle + (values - middle) * factor, values.min() / 2)
        medians[:, column] = np.median(rng.choice(spread, (draws, len(values))), axis=1)
    return medians


def _resampled_residuals(curve: Curve, draws: int, rng: np.random.Generator) -> np.ndarray:
    """With one round per size there is nothing to resample within a size: resample the fit's
    relative residuals across the sizes instead (inflated for the 3 parameters fitted), so the
    interval is as wide as the curve's departures from a power law."""
    sizes, values = np.asarray(curve.sizes, dtype=float), np.asarray(curve.typical)
    fitted = fit_power_law(sizes, values)(sizes)
    residuals = values / fitted - 1.0
    residuals = (residuals - residuals.mean()) * math.sqrt(len(sizes) / max(1, len(sizes) - 3))
    return np.maximum(fitted * (1.0 + rng.choice(residuals, (draws, len(sizes)))), values.min() / 2)


def interval(fits: Sequence[PowerLaw], n: float) -> tuple[float, float]:
    low, high = np.percentile([fit(n) for fit in fits], [TAIL, 100 - TAIL])
    return float(low), float(high)


@dataclass(frozen=True)
class Backtest:
    """The fit without the largest size, asked to predict the largest size."""

    size: float
    measured: float
    predicted: float
    ci95: tuple[float, float]

    @property
    def ok(self) -> bool:
        low, high = self.ci95
        return low * (1 - RESOLUTION) <= self.measured <= high * (1 + RESOLUTION)

    def describe(self, unit: str) -> str:
        low, high = self.ci95
        return (
            f"without n={self.size:,.0f} the fit predicts {self.predicted:.4g} {unit} "
            f"[{low:.4g}, {high:.4g}] there, measured {self.measured:.4g} {unit}"
        )


def backtest(curve: Curve, resampled: np.ndarray) -> Backtest | None:
    """Fit without the largest size and predict its measurement; None where too few sizes are left.

    `resampled` is the curve's bootstrap (resampled_medians). The interval is a prediction
    interval: each resample's fit of the smaller sizes, times the largest size's own resampled
    noise (its median is a measurement too, not the truth).
    """
    if len(curve.sizes) - 1 < MIN_SIZES:
        return None
    smaller = curve.without_largest()
    fits = fit_power_laws(smaller.sizes, resampled[:, :-1])
    measured = curve.typical[-1]
    predictions = [fit(curve.largest) * noise / measured for fit, noise in zip(fits, resampled[:, -1])]
    low, high = np.percentile(predictions, [TAIL, 100 - TAIL])
    central = fit_power_law(smaller.sizes, smaller.typical)
    return Backtest(curve.largest, measured, float(central(curve.largest)), (float(low), float(high)))


@dataclass(frozen=True)
class Projection:
    """A curve's fit, its exponent, and its value at the target size with a 95% interval."""

    fit: PowerLaw
    exponent_stderr: float  # standard deviation of k over the bootstrap
    loglog_exponent: float
    loglog_stderr: float
    target: float
    value: float
    ci95: tuple[float, float]
    backtest: Backtest | None

    @property
    def exponent(self) -> float:
        return self.fit.k

    @property
    def factor(self) -> float:
        """How far beyond the data the target lies."""
        return self.target / self.fit.n_ref

    @property
    def backtest_ok(self) -> bool:
        return self.backtest is not None and self.backtest.ok


def project(curve: Curve, target: float, draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> Projection:
    if len(curve.sizes) < MIN_SIZES:
        raise ValueError(f"a projection needs {MIN_SIZES} or more sizes, got {len(curve.sizes)}")
    resampled = resampled_medians(curve, draws, seed)
    fits = fit_power_laws(curve.sizes, resampled)
    central = fit_power_law(curve.sizes, curve.typical)
    slope, slope_stderr = loglog_exponent(curve.sizes, curve.typical)
    return Projection(
        central,
        float(np.std([f.k for f in fits], ddof=1)),
        slope,
        slope_stderr,
        float(target),
        float(central(target)),
        interval(fits, target),
        backtest(curve, resampled),
    )


def beyond_data(projection: Projection) -> list[str]:
    """Why the target lies too far beyond the data for any fit to be leaned on."""
    if projection.factor <= SAFE_FACTOR:
        return []
    return [
        f"the target is {format_factor(projection.factor)} the largest measured size "
        f"(extrapolated only within {SAFE_FACTOR:g}x)"
    ]


def doubts(projection: Projection, what: str, unit: str) -> list[str]:
    """Why this fit (of time, or of memory) does not describe the curve well enough to extrapolate."""
    reasons = []
    if projection.exponent_stderr > EXPONENT_STDERR_LIMIT:
        reasons.append(
            f"the {what} exponent is poorly determined ({projection.exponent:.2f} ± "
            f"{projection.exponent_stderr:.2f}): a fixed cost or noise dominates the measured sizes"
        )
    if abs(projection.exponent - projection.loglog_exponent) > EXPONENT_DISAGREEMENT:
        reasons.append(
            f"the {what} power law's exponent {projection.exponent:.2f} and the log-log slope of the "
            f"largest sizes {projection.loglog_exponent:.2f} disagree"
        )
    if projection.backtest is None:
        reasons.append(f"no {what} back-test: fewer than {MIN_SIZES + 1} sizes were measured")
    elif not projection.backtest.ok:
        reasons.append(f"{what} back-test failed: {projection.backtest.describe(unit)}")
    return reasons


def verdict(reasons: Sequence[str]) -> str:
    """`extrapolated`, or `unsafe: <every reason>`; the projected number is shown either way."""
    return f"unsafe: {'; '.join(reasons)}" if reasons else "extrapolated"
