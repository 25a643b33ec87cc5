"""The recipe: a model's published recipe trained from the run's seed, epoch by epoch, its test
quality scored after each (outside the training clock). Child-safe: a backend's worker trains
its own cells' recipes through the same code (recipe_in_worker)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accelbench import progress
from accelbench.axes import backends
from accelbench.axes.backends import BACKENDS
from accelbench.axes.data import Dataset
from accelbench.axes.devices import Placement
from accelbench.axes.models import ModelOptions, ModelSpec
from accelbench.work.training import (
    build_compiled,
    check_finite,
    one_execution_per_fit,
    right_answers,
    test_outputs,
)


@dataclass
class RecipeRun:
    """Result of training the published recipe for its epochs from a fixed seed, scored after
    each epoch by the dataset's quality (accuracy, MAE, ...)."""

    quality: float
    epochs: int
    train_seconds: float
    target: float | None  # the quality the recipe must reach; None: none is set
    epochs_to_target: int | None = None
    seconds_to_target: float | None = None
    history: list[float] = field(default_factory=list)  # test quality after each epoch
    clock: list[float] = field(default_factory=list)  # training seconds up to the end of each epoch
    losses: list[float] = field(default_factory=list)  # training loss of each epoch
    correct: str | None = None  # after the last epoch, per test item: '1' right, '0' wrong (right_answers)
    # Training drew random numbers (a Dropout's masks) from its device's own stream, which is
    # not the one the CPU draws from the same seed (Backend.drawn_on_device): two devices then
    # train on different masks, and their losses differ by more than their arithmetic.
    drew_on_device: bool = False


def recipe_input(dataset: Dataset, batch_size: int, placement: Any, seed: int) -> Callable[[int], dict[str, Any]]:
    """fit()'s input for epoch n of the recipe: the training set shuffled from the seed.

    TensorFlow: one tf.data pipeline that reshuffles each epoch. Another backend: NumPy arrays
    in a permutation drawn from seed + n, so no TensorFlow runs; the two orders differ, which
    the parity between backends allows for (it compares accuracies within a tolerance).
    """
    if placement.FEEDS_ARRAYS:

        def epoch_arrays(number: int) -> dict[str, Any]:
            order = np.random.default_rng(seed + number).permutation(len(dataset.x_train))
            return {"x": dataset.x_train[order], "y": dataset.y_train[order], "batch_size": batch_size}

        return epoch_arrays
    from accelbench.axes.backends import tensorflow

    pipeline = placement.feed(tensorflow.shuffled_pipeline(dataset.x_train, dataset.y_train, batch_size, seed))
    return lambda number: {"x": pipeline}


def train_recipe(
    where: str,
    spec: ModelSpec,
    dataset: Dataset,
    placement: Placement,
    batch_size: int,
    epochs: int,
    target: float | None,
    options: ModelOptions,
    say: Callable[[str], None] = progress.quiet,
) -> RecipeRun:
    """Train epoch by epoch, scoring the test set after each (outside the training clock)."""
    # an epoch as one compiled execution, as a Trainer's round: the same steps in the same order,
    # so the same losses and accuracy (the four quick recipes matched to every digit shown),
    # without Python's dispatch between steps (7-11% of their training seconds on a 2-core Xeon)
    model = one_execution_per_fit(build_compiled(spec, dataset, placement, options))
    epoch_input = recipe_input(dataset, batch_size, placement, options.seed)
    quality = dataset.scored_by
    drew = BACKENDS[backends.current()].drawn_on_device(model) and draws_random_numbers(model)
    run = RecipeRun(quality=0.0, epochs=0, train_seconds=0.0, target=target, drew_on_device=drew)
    for epoch in range(1, epochs + 1):
        say(
            f"{where}: training epoch {epoch} of {epochs}"
            + (f", test {quality.name} {quality.show(run.quality)}" if run.epochs else "")
        )
        given = epoch_input(epoch)  # a NumPy epoch is shuffled outside the clock
        start = time.perf_counter()
        with placement.scope():
            history = model.fit(**given, epochs=1, verbose=0, shuffle=False)
        run.losses.append(check_finite(float(history.history["loss"][-1]), where))
        run.train_seconds += time.perf_counter() - start
        with placement.scope():
            outputs = test_outputs(model, dataset)
        run.quality, run.correct = quality.score(outputs, dataset.y_test), right_answers(outputs, dataset)
        run.epochs = epoch
        run.history.append(run.quality)
        run.clock.append(run.train_seconds)
        if run.epochs_to_target is None and target is not None and quality.better(run.quality, target):
            run.epochs_to_target, run.seconds_to_target = epoch, run.train_seconds
    return run


def draws_random_numbers(model: Any) -> bool:
    """Whether a step draws random numbers: a layer holds a keras.random.SeedGenerator (Dropout,
    GaussianNoise, the random augmentations), whose state Keras keeps as a variable of this name."""
    return any(variable.path.endswith("seed_generator_state") for variable in model.variables)


def recipe(site: Any, epochs: int, target: float | None) -> RecipeRun:
    """The model's published recipe from the run's seed, `epochs` of it or to `target`: the
    recipe cells' run, here or in a backend's worker."""
    return train_recipe(
        site.cell_id,
        site.model,
        site.dataset,
        site.placement,
        site.batch_size,
        epochs,
        target,
        site.options,
        site.say,
    )


def recipe_in_worker(site: Any, epochs: int, target: float | None) -> dict[str, Any]:
    """The recipe trained in a backend's worker (Bench.in_worker), as JSON."""
    return dataclasses.asdict(recipe(site, epochs, target))
