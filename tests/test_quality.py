"""Qualities: what a recipe is scored by and which way is better (accuracy up, a regression's
MAE down); the outputs a dataset asks of a model; and a user's loader checked in one line."""

from __future__ import annotations

import numpy as np
import pytest

from accelbench import Dataset
from accelbench.axes.data import QUALITIES, checked
from accelbench.axes.formats import DataError
from accelbench.judge.rules import RelativeRise, regression


def arrays(n=8, features=3, y=None):
    rng = np.random.default_rng(0)
    x = rng.random((n, features), dtype=np.float32)
    return x, (np.arange(n) % 3 if y is None else y)


def test_accuracy_counts_the_argmax_and_mae_the_mean_distance():
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 5.0], [1.0, 3.0, 0.0], [0.0, 1.0, 0.0]])
    assert QUALITIES["accuracy"].score(logits, np.array([0, 2, 0, 1])) == 0.75
    assert QUALITIES["mae"].score(np.array([[1.0], [4.0]]), np.array([2.0, 2.0])) == 1.5
    assert QUALITIES["accuracy"].better(0.9, than=0.8) and not QUALITIES["accuracy"].better(0.7, than=0.8)
    assert QUALITIES["mae"].better(40.0, than=45.0) and not QUALITIES["mae"].better(50.0, than=45.0)


def test_a_dataset_asks_for_a_logit_per_class_or_a_number_per_target():
    x, y = arrays()
    assert Dataset("three", x, y, x, y).outputs == 3  # the largest label + 1
    assert Dataset("five", x, y, x, y, classes=5).outputs == 5
    targets = np.linspace(0, 1, len(x), dtype=np.float32)
    assert Dataset("one", x, targets, x, targets, quality="mae").outputs == 1
    two = np.stack([targets, targets], axis=1)
    assert Dataset("two", x, two, x, two, quality="mae").outputs == 2


@pytest.mark.parametrize("made, message", [
    (lambda x, y: (x, y), "dataset 'bad': its loader returned tuple, not an accelbench.Dataset"),
    (lambda x, y: Dataset("bad", x, y[:-1], x, y), "dataset 'bad': 8 training inputs and 7 training targets"),
    (lambda x, y: Dataset("bad", np.full_like(x, np.nan), y, x, y), "dataset 'bad': its training inputs hold NaN"),
    (lambda x, y: Dataset("bad", x, y, x, y, classes=2), "dataset 'bad': labels 0..2 outside 0..1"),
    (lambda x, y: Dataset("bad", x, y + 0.5, x, y + 0.5), "dataset 'bad': quality 'accuracy' needs integer class labels"),
    (lambda x, y: Dataset("bad", x, y, x, y, quality="r2"), "dataset 'bad': unknown quality 'r2'; choose from: accuracy, mae"),
])
def test_a_loader_that_returns_something_else_is_one_line_naming_the_dataset(made, message):
    with pytest.raises(DataError) as raised:
        checked(made(*arrays()), "bad")
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_an_error_fails_above_its_baseline_and_passes_below_it():
    rule = RelativeRise(0.05)
    assert regression("mae", "cell", 40.0, 39.0, rule) is None  # better: lower
    assert regression("mae", "cell", 40.0, 41.9, rule) is None
    assert regression("mae", "cell", 40.0, 42.1, rule) == (
        "mae regression in cell: measured 42.1000, baseline 40.0000, tolerance 5% relative (must be <= 42.0000)")
