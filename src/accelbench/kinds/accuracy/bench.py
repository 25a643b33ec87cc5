"""Accuracy: the published recipe's accuracy (gated), a lower precision against float32, a
backend against TensorFlow, a device against the CPU."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import pytest

from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND
from accelbench.axes.models import MODELS
from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.benches.base import Bench, Benchmark
from accelbench.grid.cells import (
    Cell,
    Grid,
    Pair,
    backend_missing,
    device_absent,
    device_pairs,
    device_unsupported,
    not_batch_trained,
    one_device,
    params,
    unlabelled,
)
from accelbench.judge import analysis, held_to
from accelbench.judge.rules import (
    PRECISION_ACCURACY_RULE,
    PRECISION_ERROR_RULE,
    PRECISION_SHARE,
    RelativeRise,
    WithinGap,
)
from accelbench.judge.verdicts import PRECISION_ACCURACY
from accelbench.kinds.accuracy.result import AgainstTwin, Parity, Recipe
from accelbench.kinds.accuracy.work import RecipeRun, recipe
from accelbench.measured import BackendUsed
from accelbench.processes.protocol import Cellwork
from accelbench.processes.workers import WorkerFailed
from accelbench.results.summary import Section

# Test accuracy a time-to-accuracy run aims for, by dataset, where the model publishes none.
TARGET_ACCURACY = {"digits": 0.95, "mnist": 0.95, "fashion_mnist": 0.85, "cifar10": 0.45}
RECIPE_IN_WORKER = "accelbench.kinds.accuracy.work:recipe_in_worker"  # what Bench.in_worker runs there


def recipe_target(bench: Bench, model: str) -> float | None:
    """The quality the model's recipe aims for on this run's data: the model's own target,
    else its published accuracy here, else a classifier's default; a regression may have none."""
    spec = MODELS[model]
    if spec.recipe_target is not None:
        return spec.recipe_target
    dataset = bench.session.data(model)
    if dataset.scored_by.regression:
        return None
    return spec.published_accuracy.get(dataset.name, TARGET_ACCURACY.get(dataset.name, 0.9))


def recipe_run(bench: Bench, cell: Cell) -> RecipeRun:
    """The recipe once per cell and run (every cell of the kind that holds it to another shares
    it); on another backend, trained in that backend's worker."""
    spec, target = MODELS[cell.model], recipe_target(bench, cell.model)

    def train() -> RecipeRun:
        if cell.backend == PROCESS_BACKEND:
            return recipe(bench.session.built.site(cell), spec.recipe_epochs, target)
        bench.session.progress(
            f"{cell.id}: training the recipe in the {cell.backend} worker ({spec.recipe_epochs} epochs)"
        )
        return RecipeRun(**bench.in_worker(RECIPE_IN_WORKER, cell=cell, epochs=spec.recipe_epochs, target=target))

    return bench.session.built.kept(("recipe", cell), train, lambda kept: None)


def paired_scores(reference: Any, candidate: Any) -> analysis.Paired | None:
    """Two recipe runs' right answers on the same test images, paired; None for a regression."""
    if reference.correct is None or candidate.correct is None:
        return None
    return analysis.paired([c == "1" for c in reference.correct], [c == "1" for c in candidate.correct])


def hold_to_twin(bench: Bench, run: Any, reference: Any, gap_metric: str, twin: str) -> None:
    """A recipe's quality held to its twin's, trained from the same seed (another backend's,
    another device's): an accuracy within the accuracy tolerance either way (absolute, verdict
    `gap_metric`), failed only where the same test images show the two differ (McNemar); an
    error at most the error tolerance above the twin's (relative)."""
    quality, config = bench.dataset.scored_by, bench.session.run
    if quality.higher_is_better:
        rule, gap = WithinGap(config.accuracy_tolerance), run.quality - reference.quality
        scores = paired_scores(reference, run)
        if scores is None:
            held_to.within_gap(bench.verdicts, bench.name, gap_metric, gap, config.accuracy_tolerance)
        else:
            held_to.paired_quality(bench.verdicts, bench.name, gap_metric, gap, 0.0, rule, "parity", scores)
    else:
        held_to.against_reference(
            bench.verdicts,
            bench.name,
            f"{quality.name}_against_{twin}",
            run.quality,
            reference.quality,
            RelativeRise(config.error_tolerance),
            twin,
        )


# A training loss that ends below 90% of its first epoch's has fallen, noise of one seed aside.
LOSS_FELL = 0.9


def no_better_than_chance(name: str, run: Any, dataset: Any) -> str | None:
    """What a user's first run should say when a recipe's test accuracy is no better than always
    answering the most common test label: the number alone (an ungated 10.00% for a model with no
    baseline yet) reads as a result. The training losses tell a model that does not learn from one
    whose test-time predictions do not follow its training: a BatchNormalization layer's moving
    statistics after a few dozen steps (momentum 0.99) gave a ConvMixer 10% on digits after 5
    epochs in which its training loss fell from 2.14 to 1.31."""
    if dataset.scored_by.name != "accuracy" or not dataset.labelled or not len(dataset.y_test):
        return None
    labels = np.asarray(dataset.y_test).astype(int).ravel()
    most_common = float(np.bincount(labels).max() / len(labels))
    if run.quality > most_common:
        return None
    said = (
        f"{name}: test accuracy {run.quality:.2%} after {run.epochs} epoch(s) is no better than always "
        f"answering the most common label ({most_common:.2%} of the test set)"
    )
    if len(run.losses) < 2:
        return said
    first, last = run.losses[0], run.losses[-1]
    if last < LOSS_FELL * first:
        return (
            f"{said}, though its training loss fell from {first:.3g} to {last:.3g}: its test-time "
            "predictions do not follow its training (a BatchNormalization layer's moving statistics "
            "after few steps?); more recipe_epochs may show it"
        )
    return (
        f"{said}, and its training loss went from {first:.3g} to {last:.3g}: it is not learning "
        "(its learning rate, loss or labels?)"
    )


class AccuracyBench(Bench):
    """Time to quality: the published recipe from a fixed seed, scored by the dataset's quality
    (accuracy: higher is better; a regression's MAE: lower is better); the final score is gated."""

    def __call__(self, benchmark: Any) -> None:
        try:
            if self.cell.backend != PROCESS_BACKEND:  # its worker starts outside the clock
                versions = self.session.backends.call(self.cell.backend, Cellwork.DESCRIBE).versions
                self.record(
                    BackendUsed(
                        backend_versions={
                            name: versions[name] for name in BACKENDS[self.cell.backend].packages if name in versions
                        }
                    )
                )
            run = benchmark.pedantic(recipe_run, args=(self, self.cell), rounds=1, iterations=1)
        except WorkerFailed as error:
            pytest.fail(f"{self.name}: {error}", pytrace=False)
        quality = self.dataset.scored_by
        metric = quality.name
        self.record(
            Recipe(
                metric,
                backend=self.cell.backend,
                precision=self.cell.precision,
                device=self.placement().description,
                quality_metric=metric,
                quality=run.quality,
                epochs=run.epochs,
                train_seconds=run.train_seconds,
                target=run.target,
                epochs_to_target=run.epochs_to_target,
                seconds_to_target=run.seconds_to_target,
                published_accuracy=MODELS[self.cell.model].published_accuracy.get(self.dataset.name),
                per_epoch=run.history,
                cumulative_train_seconds=run.clock,
                loss_per_epoch=run.losses,
            )
        )
        self.verdicts.against_baseline(self.name, self.gates[metric], run.quality, key=self.baseline_key)
        said = no_better_than_chance(self.name, run, self.dataset)
        if said:
            self.session.notes.append(said)
        if self.cell.precision != REFERENCE_PRECISION:
            self.against_float32(run, quality)
        if self.cell.backend != PROCESS_BACKEND:
            self.against_process_backend(run, quality)

    def against_process_backend(self, run: Any, quality: Any) -> None:
        """Parity across backends, as across devices: the recipe's quality held to tensorflow's
        from the same seed (gated: an accuracy within the accuracy tolerance; an error no more
        than the error tolerance above), and the final training losses' shared significant
        digits (reported: other kernels, initialisers and shuffles make bit equality unrealistic)."""
        self.say(f"training the {PROCESS_BACKEND} twin this backend is held to")
        reference = recipe_run(self, dataclasses.replace(self.cell, backend=PROCESS_BACKEND))
        self.record(
            AgainstTwin(
                quality.name,
                tensorflow_quality=reference.quality,
                gap_to_tensorflow=run.quality - reference.quality,
                loss_digits_shared_with_tensorflow=analysis.matching_digits(reference.losses[-1], run.losses[-1]),
            )
        )
        gap_metric = AgainstTwin.key_for("gap_to_tensorflow", metric=quality.name)  # the verdict's, as the key
        hold_to_twin(self, run, reference, gap_metric, PROCESS_BACKEND)

    def against_float32(self, run: Any, quality: Any) -> None:
        """MLPerf's rule for a lower precision: at least 99% of float32's accuracy on the same
        cell (same seed, data, batch and epochs), or at most 101% of its error, trained here if no
        cell of this run has yet. An accuracy below it fails only where the same test images show
        the two differ (McNemar): MLPerf states the rule on tens of thousands of images."""
        self.say("training the float32 twin this precision is held to")
        reference = recipe_run(self, dataclasses.replace(self.cell, precision=REFERENCE_PRECISION))
        self.record(
            AgainstTwin(
                quality.name, float32_quality=reference.quality, share_of_float32=run.quality / reference.quality
            )
        )
        scores = paired_scores(reference, run)
        if quality.higher_is_better and scores is not None:
            held_to.paired_quality(
                self.verdicts,
                self.name,
                PRECISION_ACCURACY,
                run.quality,
                reference.quality,
                PRECISION_ACCURACY_RULE,
                REFERENCE_PRECISION,
                scores,
            )
            return
        metric, rule = (
            (PRECISION_ACCURACY, PRECISION_ACCURACY_RULE)
            if quality.higher_is_better
            else (f"{quality.name}_against_float32", PRECISION_ERROR_RULE)
        )
        held_to.against_reference(
            self.verdicts, self.name, metric, run.quality, reference.quality, rule, REFERENCE_PRECISION
        )


FIRST_EPOCH_LOSS = "first_epoch_loss"  # what the parity's digits verdict holds
FIRST_EPOCH_DIGITS = f"{FIRST_EPOCH_LOSS}_matching_digits"  # that verdict's metric


class ParityBench(Bench):
    """The recipe's quality on a device against the CPU's, both trained from the same seed.

    The losses' digits are held on the first epoch's loss, not the last's: training amplifies
    a rounding difference epoch by epoch. Only the inputs' rounding changed (scaled by 1 + 2^-23,
    same seed, order and masks, on the EPYC's CPU), the deep MLP's loss shared 6-7 digits after
    its first epoch and 0 after its twentieth, on TensorFlow, JAX and PyTorch; an H200 against its
    host's CPU, on PyTorch, read 1 shared digit after the last (docs/measurements.md). What the
    first epoch's digits catch at the default floor of 2, planted on that CPU (TensorFlow): other
    first weights (seed 1) shared 1 digit for the MLP and the deep MLP, and 2 for the CNN, which
    passes; inputs rounded as an 11-bit mantissa would round them shared 2-4, which pass.
    """

    cell: Pair

    def __call__(self, benchmark: Any) -> None:
        runs = benchmark.pedantic(lambda: [recipe_run(self, c) for c in self.cell.cells], rounds=1, iterations=1)
        quality = self.dataset.scored_by
        reference, candidate = (run.quality for run in runs)
        reference_loss, candidate_loss = (run.losses[-1] for run in runs)
        reference_first, candidate_first = (run.losses[0] for run in runs)
        metric = quality.name  # an accuracy cell's keys are those it always had
        self.record(
            Parity(
                metric,
                reference_quality=reference,
                candidate_quality=candidate,
                gap=candidate - reference,
                matching_digits=analysis.matching_digits(reference, candidate),
                reference_loss=reference_loss,
                candidate_loss=candidate_loss,
                loss_matching_digits=analysis.matching_digits(reference_loss, candidate_loss),
                reference_first_epoch_loss=reference_first,
                candidate_first_epoch_loss=candidate_first,
                first_epoch_loss_matching_digits=analysis.matching_digits(reference_first, candidate_first),
            )
        )
        hold_to_twin(self, runs[1], runs[0], Parity.key_for("gap", metric=metric), self.cell.reference.device)
        if any(run.drew_on_device for run in runs):
            self.verdicts.skipped(self.name, (FIRST_EPOCH_DIGITS,), self.own_masks())
            return
        held_to.matching_digits(
            self.verdicts, self.name, FIRST_EPOCH_LOSS, reference_first, candidate_first, self.session.run.parity_digits
        )

    def own_masks(self) -> str:
        candidate = self.cell.cells[1]
        return (
            f"{candidate.model} draws random numbers in training (a Dropout's masks), and {candidate.backend} "
            f"draws them from the {candidate.device}'s own generator, not the stream the cpu draws from the same "
            "seed: their losses differ by more than their arithmetic (the accuracy gap is judged)"
        )


# Its cells: what grid the kind runs over, and why a cell is skipped.
def accuracy_cells(grid: Grid) -> list:
    """The recipe on every backend and precision asked for (each judged against the process
    backend's and float32's of the same cell, from the same seed)."""
    tagged = grid.tags()
    cells = [
        Cell(d, MODELS[m].recipe_batch_size, m, backend, precision, tagged)
        for d, m in itertools.product(grid.devices, grid.models)
        for backend in grid.backends
        for precision in grid.precisions
    ]
    return params(grid, cells, (device_absent, device_unsupported, not_batch_trained, unlabelled, backend_missing))


def parity_cells(grid: Grid) -> list:
    pairs = device_pairs(grid, lambda device, model: (MODELS[model].recipe_batch_size,), "vs")
    rules = (device_absent, device_unsupported, unlabelled)
    return params(grid, pairs, rules) if pairs else one_device(grid)


# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 30
# This module's benchmark kinds, by fixture name (benches/catalog.py registers them): each
# with its cells, its Bench, what it judges, its summary tables and its report's plots.
KINDS: dict[str, Benchmark] = {
    "accuracy_bench": Benchmark(
        accuracy_cells,
        AccuracyBench,
        "test_time_to_accuracy",
        ("accuracy",),
        file="test_training.py",
        about="The published recipe's time to accuracy, final accuracy gated (kinds/accuracy/).",
        sections=(
            Section(
                "test accuracy after the model's recipe (its ModelSpec's recipe_batch_size and recipe_epochs)",
                {"accuracy_bench": "recipe"},
                Recipe.key_for("quality", metric="accuracy"),
                "percent",
                ("accuracy",),
            ),
            Section(
                "recipe: epochs to its target quality ('-': not reached, or no target)",
                {"accuracy_bench": "recipe"},
                Recipe.keys.epochs_to_target,
                "count",
                every_cell=True,
            ),
            Section(
                "recipe: training seconds to its target quality",
                {"accuracy_bench": "recipe"},
                Recipe.keys.seconds_to_target,
                "seconds",
                every_cell=True,
            ),
            Section(
                "test mean absolute error after the recipe (lower is better; marked by its baseline, "
                "and by the process backend's and float32's where it is held to them)",
                {"accuracy_bench": "recipe"},
                Recipe.key_for("quality", metric="mae"),
                "plain",
                ("mae", "mae_against_tensorflow", "mae_against_float32"),
            ),
            Section(
                "accuracy gap to the process backend (same recipe and seed)",
                {"accuracy_bench": "recipe"},
                AgainstTwin.key_for("gap_to_tensorflow", metric="accuracy"),
                "points",
                ("accuracy_gap_to_tensorflow",),
            ),
            Section(
                f"recipe accuracy as a share of float32's (must be >= {PRECISION_SHARE:.0%})",
                {"accuracy_bench": "recipe"},
                AgainstTwin.keys.share_of_float32,
                "percent",
                (PRECISION_ACCURACY,),
            ),
        ),
        plots=("accuracy",),
    ),
    "accuracy_parity": Benchmark(
        parity_cells,
        ParityBench,
        "test_accuracy_parity",
        ("accuracy_gap", FIRST_EPOCH_DIGITS),
        file="test_speedup.py",
        about="A device's recipe accuracy and loss against the CPU's (kinds/accuracy/).",
        sections=(
            Section(
                "accuracy gap to the cpu",
                {"accuracy_parity": "{column}"},
                Parity.key_for("gap", metric="accuracy"),
                "points",
                ("accuracy_gap",),
            ),
            Section(
                "first epoch's loss: significant digits shared with the cpu (must be >= --parity-digits)",
                {"accuracy_parity": "{column}"},
                Parity.keys.first_epoch_loss_matching_digits,
                "count",
                (FIRST_EPOCH_DIGITS,),
            ),
            Section(
                "last epoch's loss: significant digits shared with the cpu (not gated: training amplifies rounding)",
                {"accuracy_parity": "{column}"},
                Parity.keys.loss_matching_digits,
                "count",
                (),
            ),
        ),
    ),
}
