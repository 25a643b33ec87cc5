"""Memory helpers: sizes, the line fit, the largest-batch search, the analytic estimate, memray."""

import numpy as np
import pytest

from accelbench import units
from accelbench.judge.rules import RelativeGrowth, regression
from accelbench.work import memory


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4GiB", 4 * 2**30), ("512 MiB", 512 * 2**20), ("500MB", 500 * 10**6), ("1.5kb", 1500), ("1024", 1024)],
)
def test_parse_bytes(text, expected):
    assert units.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["lots", "4 gigs", "0", "-1GiB", ""])
def test_parse_bytes_rejects(text):
    with pytest.raises(ValueError, match="size"):
        units.parse_bytes(text)


def test_fit_line_recovers_fixed_and_per_sample():
    sizes = [64, 256, 1024]
    fit = memory.fit_line(sizes, [3_000_000 + 4_000 * b for b in sizes])
    assert fit.fixed == pytest.approx(3_000_000) and fit.per_sample == pytest.approx(4_000)
    assert fit.max_residual == pytest.approx(0, abs=1e-3) and fit.at(10) == pytest.approx(3_040_000)
    with pytest.raises(ValueError, match="two batch sizes"):
        memory.fit_line([64, 64], [1, 2])


@pytest.mark.parametrize(("largest", "limit", "expected"), [(1000, 2**20, 1000), (1, 100, 1), (2**20, 5000, 5000)])
def test_largest_fitting_finds_the_boundary(largest, limit, expected):
    asked = []

    def fits(batch_size):
        asked.append(batch_size)
        return batch_size <= largest

    assert memory.largest_fitting(fits, start=1, limit=limit) == expected
    assert len(asked) < 50  # doubling then bisection, not a scan


def test_largest_fitting_none_when_nothing_fits():
    assert memory.largest_fitting(lambda b: False, start=1, limit=100) is None


def test_budget_predicate_counts_resident_state():
    fits = memory.budget_predicate(
        memory.LinearFit(fixed=1000, per_sample=10, max_residual=0), resident=500, budget=2500
    )
    assert fits(100) and not fits(101)


def test_oom_predicate_answers_only_out_of_memory():
    class ResourceExhaustedError(Exception):  # named as TensorFlow names its out-of-memory error
        pass

    def step(batch_size):
        if batch_size > 8:
            raise ResourceExhaustedError("OOM when allocating tensor")
        if batch_size == 3:
            raise ValueError("a real bug")

    fits = memory.oom_predicate(step)
    assert fits(8) and not fits(9)
    with pytest.raises(ValueError):
        fits(3)


def test_estimate_counts_weights_slots_and_activations(heavy_imports):
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    model.train_on_batch(np.zeros((5, 3), np.float32), np.zeros((5, 2), np.float32))
    estimate = memory.estimate(model)
    weights = (3 * 4 + 4 + 4 * 2 + 2) * 4
    assert (estimate.weights, estimate.gradients, estimate.optimizer_slots) == (weights, weights, 2 * weights)
    assert estimate.activations_per_sample == 2 * (4 + 2) * 4 and estimate.input_per_sample == 3 * 4
    assert estimate.step(10) == weights + 10 * (48 + 12)


def test_estimate_counts_the_weights_cast_each_call_under_mixed_precision(heavy_imports):
    import keras

    from accelbench.axes import precisions

    with precisions.policy("mixed_bfloat16"):
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(2)])
    assert keras.config.dtype_policy().name == "float32"  # restored for the next cell's model
    estimate = memory.estimate(model)
    weights = 3 * 4 + 4 + 4 * 2 + 2
    assert estimate.casts == weights * 2  # a bfloat16 copy of each float32 weight
    assert estimate.inference(10) == 10 * ((4 + 2) * 4 + 3 * 4) + weights * 2


def test_host_peak_sees_a_native_allocation():
    peak = memory.host_peak(lambda: np.ones(50 * 2**20, np.uint8).sum())
    assert 50 * 2**20 <= peak < 60 * 2**20


def test_memory_regression_message_names_everything():
    check = RelativeGrowth(0.25, slack=2 * 2**20)
    assert regression("peak_memory_bytes", "t[cpu-bs32-mlp]", 4 * 2**20, 7 * 2**20, check) is None
    message = regression("peak_memory_bytes", "t[cpu-bs32-mlp]", 4 * 2**20, 60 * 2**20, check)
    assert message == (
        "peak_memory_bytes regression in t[cpu-bs32-mlp]: measured 60.0 MiB (62,914,560 B), "
        "baseline 4.0 MiB (4,194,304 B), tolerance 25% relative + 2.0 MiB (2,097,152 B) "
        "(must be <= 7.0 MiB (7,340,032 B))"
    )
