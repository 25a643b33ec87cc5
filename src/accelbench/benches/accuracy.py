"""Accuracy: the published recipe's accuracy (gated), a lower precision against float32, a
backend against TensorFlow, a device against the CPU."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND
from accelbench.axes.models import MODELS
from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.benches.base import Bench
from accelbench.grid.cells import Pair
from accelbench.judge import analysis
from accelbench.judge.rules import PRECISION_ACCURACY_RULE
from accelbench.judge.verdicts import PRECISION_ACCURACY
from accelbench.processes.protocol import Cellwork
from accelbench.processes.workers import WorkerFailed

BACKEND_ACCURACY_GAP = "accuracy_gap_to_tensorflow"  # a backend's recipe accuracy minus tensorflow's
class AccuracyBench(Bench):
    """Time to accuracy: the published recipe from a fixed seed; final accuracy is gated."""

    def __call__(self, benchmark: Any) -> None:
        try:
            if self.cell.backend != PROCESS_BACKEND:  # its worker starts outside the clock
                versions = self.session.backend_call(self.cell.backend, Cellwork.DESCRIBE)["versions"]
                self.info(backend_versions={name: versions[name] for name in BACKENDS[self.cell.backend].packages
                                            if name in versions})
            run = benchmark.pedantic(self.session.accuracy_run, args=(self.cell,), rounds=1, iterations=1)
        except WorkerFailed as error:
            pytest.fail(f"{self.name}: {error}", pytrace=False)
        self.info(backend=self.cell.backend, precision=self.cell.precision)
        self.info(device=self.placement().description, accuracy=run.accuracy,
                  epochs=run.epochs, train_seconds=run.train_seconds, target_accuracy=run.target,
                  epochs_to_target=run.epochs_to_target, seconds_to_target=run.seconds_to_target,
                  published_accuracy=MODELS[self.cell.model].published_accuracy.get(
                      self.session.dataset.name),
                  accuracy_per_epoch=run.history, cumulative_train_seconds=run.clock, loss_per_epoch=run.losses)
        self.verdicts.against_baseline(self.name, self.gates["accuracy"], run.accuracy, key=self.baseline_key)
        if self.cell.precision != REFERENCE_PRECISION:
            self.against_float32(run.accuracy)
        if self.cell.backend != PROCESS_BACKEND:
            self.accuracy_against_process_backend(run)

    def accuracy_against_process_backend(self, run: Any) -> None:
        """Parity across backends, as across devices: the recipe's accuracy within the accuracy
        tolerance of tensorflow's from the same seed (gated), and the final training losses'
        shared significant digits (reported: other kernels, initialisers and shuffles make bit
        equality unrealistic)."""
        self.say(f"training the {PROCESS_BACKEND} twin this backend is held to")
        reference = self.session.accuracy_run(dataclasses.replace(self.cell, backend=PROCESS_BACKEND))
        gap = run.accuracy - reference.accuracy
        self.info(tensorflow_accuracy=reference.accuracy, accuracy_gap_to_tensorflow=gap,
                  loss_digits_shared_with_tensorflow=analysis.matching_digits(reference.losses[-1], run.losses[-1]))
        self.verdicts.within_gap(self.name, BACKEND_ACCURACY_GAP, gap, self.session.run.accuracy_tolerance)

    def against_float32(self, accuracy: float) -> None:
        """MLPerf's rule for a lower precision: at least 99% of float32's accuracy on the same
        cell (same seed, data, batch and epochs), trained here if no cell of this run has yet."""
        self.say("training the float32 twin this precision is held to")
        reference = self.session.accuracy_run(dataclasses.replace(self.cell, precision=REFERENCE_PRECISION))
        self.info(float32_accuracy=reference.accuracy, share_of_float32=accuracy / reference.accuracy)
        self.verdicts.against_reference(self.name, PRECISION_ACCURACY, accuracy, reference.accuracy,
                                        PRECISION_ACCURACY_RULE, REFERENCE_PRECISION)


class ParityBench(Bench):
    """Accuracy on a device against CPU, both trained from the same seed."""

    cell: Pair

    def __call__(self, benchmark: Any) -> None:
        runs = benchmark.pedantic(lambda: [self.session.accuracy_run(c) for c in self.cell.cells],
                                  rounds=1, iterations=1)
        reference, candidate = (run.accuracy for run in runs)
        reference_loss, candidate_loss = (run.losses[-1] for run in runs)
        self.info(reference_accuracy=reference, candidate_accuracy=candidate, accuracy_gap=candidate - reference,
                  reference_loss=reference_loss, candidate_loss=candidate_loss,
                  accuracy_matching_digits=analysis.matching_digits(reference, candidate),
                  loss_matching_digits=analysis.matching_digits(reference_loss, candidate_loss))
        self.verdicts.within_gap(self.name, "accuracy_gap", candidate - reference,
                                 self.session.run.accuracy_tolerance)
        self.verdicts.matching_digits(self.name, "loss", reference_loss, candidate_loss, self.session.run.parity_digits)
