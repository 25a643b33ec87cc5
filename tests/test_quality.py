"""Qualities: what a recipe is scored by and which way is better (accuracy up, a regression's
MAE down); the outputs a dataset asks of a model; and a user's loader checked in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from accelbench import Dataset
from accelbench.axes.data import QUALITIES, checked
from accelbench.axes.formats import DataError
from accelbench.judge import held_to
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


@pytest.mark.parametrize(
    "made, message",
    [
        (lambda x, y: (x, y), "dataset 'bad': its loader returned tuple, not an accelbench.Dataset"),
        (lambda x, y: Dataset("bad", x, y[:-1], x, y), "dataset 'bad': 8 training inputs and 7 training targets"),
        (lambda x, y: Dataset("bad", np.full_like(x, np.nan), y, x, y), "dataset 'bad': its training inputs hold NaN"),
        (lambda x, y: Dataset("bad", x, y, x, y, classes=2), "dataset 'bad': labels 0..2 outside 0..1"),
        (
            lambda x, y: Dataset("bad", x, y + 0.5, x, y + 0.5),
            "dataset 'bad': quality 'accuracy' needs integer class labels",
        ),
        (
            lambda x, y: Dataset("bad", x, y, x, y, quality="r2"),
            "dataset 'bad': unknown quality 'r2'; choose from: accuracy, mae",
        ),
    ],
)
def test_a_loader_that_returns_something_else_is_one_line_naming_the_dataset(made, message):
    with pytest.raises(DataError) as raised:
        checked(made(*arrays()), "bad")
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_an_error_fails_above_its_baseline_and_passes_below_it():
    rule = RelativeRise(0.05)
    assert regression("mae", "cell", 40.0, 39.0, rule) is None  # better: lower
    assert regression("mae", "cell", 40.0, 41.9, rule) is None
    assert regression("mae", "cell", 40.0, 42.1, rule) == (
        "mae regression in cell: measured 42.1000, baseline 40.0000, tolerance 5% relative (must be <= 42.0000)"
    )


def _twins(rng, images, accuracy, candidate_accuracy, agreement=0.9):
    """Two classifiers' right answers on the same images: the candidate copies the reference's
    answer on a share `agreement` of images and is drawn afresh (at its own accuracy) elsewhere."""
    reference = rng.random(images) < accuracy
    fresh = rng.random(images) < (candidate_accuracy - agreement * accuracy) / (1 - agreement)
    return reference, np.where(rng.random(images) < agreement, reference, fresh)


@pytest.mark.parametrize("images", [64, 360, 2000])
def test_twins_of_equal_accuracy_fail_the_paired_rule_at_most_one_time_in_a_hundred(images):
    """The paired rule's stated false-alarm rate (analysis.PAIRED_ALPHA): two models equally
    accurate, past the 2-point parity tolerance only by the test set's chance, on 4,000 draws."""
    from accelbench.judge import analysis

    rng = np.random.default_rng(0)
    failed = 0
    for _ in range(4000):
        reference, candidate = _twins(rng, images, 0.9, 0.9)
        gap = candidate.mean() - reference.mean()
        failed += abs(gap) > 0.02 and analysis.paired(reference, candidate).shown
    assert failed / 4000 <= analysis.PAIRED_ALPHA


@pytest.mark.parametrize(("images", "drop", "power"), [(360, 0.06, 0.95), (2000, 0.04, 0.99), (10_000, 0.03, 0.99)])
def test_a_real_drop_fails_the_paired_rule(images, drop, power):
    """What the test set can show: a candidate `drop` points less accurate fails in at least
    `power` of 1,000 draws, the models agreeing on 9 images in 10 (digits' 360 test images show
    6 points; MNIST's 10,000, 3 points: a drop just past the 2-point tolerance is past it in only
    about half of the draws, whatever the test)."""
    from accelbench.judge import analysis

    rng = np.random.default_rng(1)
    caught = 0
    for _ in range(1000):
        reference, candidate = _twins(rng, images, 0.9, 0.9 - drop)
        caught += reference.mean() - candidate.mean() > 0.02 and analysis.paired(reference, candidate).shown
    assert caught / 1000 >= power


def test_a_gap_the_test_set_cannot_show_is_unknown_and_one_it_shows_fails():
    from accelbench.judge import analysis
    from accelbench.judge.rules import WithinGap
    from accelbench.judge.verdicts import FAIL, UNKNOWN, Verdicts

    verdicts = Verdicts(update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.4)
    few = analysis.paired([True] * 60 + [False] * 4, [True] * 57 + [False] * 7)  # 3 of 64 images
    unknown = held_to.paired_quality(verdicts, "cell", "accuracy_gap", -3 / 64, 0.0, WithinGap(0.02), "parity", few)
    assert unknown.outcome == UNKNOWN and "too few test images show it" in unknown.message
    many = analysis.paired([True] * 340 + [False] * 20, [True] * 300 + [False] * 60)
    failed = held_to.paired_quality(verdicts, "cell", "accuracy_gap", -40 / 360, 0.0, WithinGap(0.02), "parity", many)
    assert failed.outcome == FAIL and "40 right only on the reference side and 0 only here" in failed.message


def _recipe(quality, losses):
    from accelbench.kinds.accuracy.work import RecipeRun

    return RecipeRun(quality=quality, epochs=len(losses), train_seconds=1.0, target=None, losses=list(losses))


def _labelled(y_test):
    x = np.zeros((len(y_test), 2), np.float32)
    return Dataset("ten", x, np.asarray(y_test), x, np.asarray(y_test), classes=10)


def test_a_recipe_no_better_than_the_most_common_label_is_said_and_why_by_its_losses():
    from accelbench.kinds.accuracy.bench import no_better_than_chance

    data = _labelled([0] * 12 + list(range(10)) * 9)  # label 0 is 21 of 102 test items: 20.59%
    assert no_better_than_chance("c", _recipe(0.25, [2.3, 1.0]), data) is None
    fell = no_better_than_chance("c", _recipe(21 / 102, [2.14, 1.31]), data)
    assert fell.startswith("c: test accuracy 20.59% after 2 epoch(s) is no better than always answering")
    assert "the most common label (20.59% of the test set)" in fell
    assert "fell from 2.14 to 1.31" in fell and "BatchNormalization" in fell
    flat = no_better_than_chance("c", _recipe(0.1, [2.303, 2.302]), data)
    assert "went from 2.3 to 2.3: it is not learning" in flat
    one = no_better_than_chance("c", _recipe(0.1, [2.303]), data)
    assert one.endswith("(20.59% of the test set)")
    regression = Dataset(
        "r", data.x_train, np.zeros(102, np.float32), data.x_test, np.zeros(102, np.float32), quality="mae"
    )
    assert no_better_than_chance("c", _recipe(0.0, [1.0, 1.0]), regression) is None


def _parity(monkeypatch, reference, candidate):
    """A gpu-vs-cpu parity cell judged on two given recipe runs (nothing is trained)."""
    from types import SimpleNamespace

    from accelbench.grid.cells import Cell, Pair
    from accelbench.judge.verdicts import Verdicts
    from accelbench.kinds.accuracy import bench as accuracy

    pair = Pair(Cell("cpu", 100, "cnn", "torch"), Cell("gpu", 100, "cnn", "torch"), "gpu-vs-cpu-bs100-cnn")
    runs = {pair.reference: reference, pair.candidate: candidate}
    monkeypatch.setattr(accuracy, "recipe_run", lambda bench, cell: runs[cell])
    judged = Verdicts(
        update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.3, fingerprint=""
    )
    session = SimpleNamespace(
        verdicts=judged,
        run=SimpleNamespace(parity_digits=2, accuracy_tolerance=0.02),
        data=lambda model: SimpleNamespace(scored_by=QUALITIES["accuracy"]),
    )
    bench = accuracy.ParityBench(session=session, cell=pair, name=f"test_accuracy_parity[{pair.id}]")
    bench(SimpleNamespace(pedantic=lambda run, rounds, iterations: run()))
    return {verdict.metric: verdict for verdict in judged.all()}, bench.extra_info


def test_device_parity_holds_the_first_epochs_loss_and_only_shows_the_last(monkeypatch):
    """Training amplifies a rounding difference epoch by epoch (the deep MLP's loss shared 6-7
    digits with a rounding-perturbed twin after one epoch, 0 after twenty): a last epoch apart
    in its first digit passes where the first epoch agrees, and a first epoch apart fails."""
    apart_at_the_end = _recipe(0.95, [0.81234, 0.0049])
    verdicts, shown = _parity(monkeypatch, _recipe(0.95, [0.81230, 0.0003]), apart_at_the_end)
    assert verdicts["first_epoch_loss_matching_digits"].outcome == "pass"
    assert (shown["first_epoch_loss_matching_digits"], shown["loss_matching_digits"]) == (4, 0)
    assert "loss_matching_digits" not in verdicts  # shown, not judged
    verdicts, _ = _parity(monkeypatch, _recipe(0.95, [0.81230, 0.0003]), _recipe(0.95, [0.86, 0.0003]))
    failed = verdicts["first_epoch_loss_matching_digits"]
    assert failed.outcome == "fail"
    assert "first_epoch_loss 0.86 on the device against 0.8123 on the reference" in failed.message


def test_device_parity_leaves_out_the_loss_of_a_device_that_draws_its_own_dropout_masks(monkeypatch):
    """PyTorch draws a Dropout's masks from the GPU's own generator, another stream than the CPU's
    for the same seed: its losses are not held digit by digit, and the skip says why."""
    own = dataclasses.replace(_recipe(0.95, [0.86, 0.0049]), drew_on_device=True)
    verdicts, _ = _parity(monkeypatch, _recipe(0.95, [0.81230, 0.0003]), own)
    skipped = verdicts["first_epoch_loss_matching_digits"]
    assert skipped.outcome == "skipped"
    assert (
        "cnn draws random numbers in training" in skipped.message and "torch draws them from the gpu" in skipped.message
    )
    assert verdicts["accuracy_gap"].outcome == "pass"


def test_a_model_with_dropout_draws_random_numbers_in_training_and_a_plain_mlp_does_not():
    import keras

    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.kinds.accuracy.work import draws_random_numbers

    keras.utils.set_random_seed(0)
    assert draws_random_numbers(MODELS["cnn"].build((8, 8, 1), 10, ModelOptions()))
    assert not draws_random_numbers(MODELS["mlp"].build((8, 8, 1), 10, ModelOptions()))
