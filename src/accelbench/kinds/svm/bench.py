"""The RBF SVM study's cells: an RBF SVM fitted on n-image subsets of the data, grayscale or
binarized, its fit timed through pytest-benchmark and its test accuracy gated."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from accelbench.axes.models import MODELS
from accelbench.benches.base import Bench, Benchmark
from accelbench.grid.cells import Grid, device_absent, device_unsupported, params, placeholder
from accelbench.judge.verdicts import TIMING
from accelbench.kinds.svm.result import SvmFit
from accelbench.kinds.svm.settings import SvmSettings
from accelbench.measured import Place
from accelbench.results.summary import Section
from accelbench.work import measure

FIXTURE = "svm_bench"
SETTINGS = "svm"  # its settings' name in run.presets.KIND_SETTINGS (settings.py)
SVM_FIT_ROUNDS = 10  # fits take milliseconds; a comparison ranks the fast half of the rounds
SVM_PIXELS = ("grayscale", "binarized")


@dataclass(frozen=True)
class SvmCell:
    device: str
    subset: int
    pixels: str
    model: str = "svm"

    @property
    def id(self) -> str:
        return f"{self.device}-n{self.subset}-{self.pixels}"

    def fields(self) -> dict:
        keys = Place.keys
        return {keys.device: self.device, keys.model: self.model, keys.column: f"n{self.subset} {self.pixels}"}


class SvmBench(Bench):
    """RBF SVM fit time on an n-image subset, grayscale or binarized; accuracy gated."""

    cell: SvmCell

    def __call__(self, benchmark: Any) -> None:
        dataset = self.dataset
        if self.cell.subset > len(dataset.x_train):
            pytest.skip(
                f"{dataset.key} has only {len(dataset.x_train)} training images, "
                f"fewer than the subset of {self.cell.subset}"
            )
        if self.cell.pixels == "binarized":
            dataset = dataset.binarized()
        n = self.cell.subset
        x, y = dataset.x_train[:n].reshape(n, -1), dataset.y_train[:n]
        make = lambda: MODELS["svm"].build(dataset.input_shape, dataset.outputs, self.session.run.model_options)
        fitted = []
        self.time_rounds(
            benchmark,
            lambda svm: fitted.append(svm.fit(x, y)),
            n,
            "svm_fit",
            SVM_FIT_ROUNDS,
            warmup_rounds=0,
            setup=lambda: ((make(),), {}),
        )
        x_test = dataset.x_test.reshape(len(dataset.x_test), -1)
        predict_seconds = measure.seconds(lambda: fitted[-1].predict(x_test))
        self.record(
            SvmFit(
                subset=n,
                pixels=self.cell.pixels,
                predict_seconds=predict_seconds,
                support_vectors=int(fitted[-1].support_vectors_.shape[0]),
            )
        )
        if dataset.labelled:  # synthetic labels are noise: their accuracy means nothing
            accuracy = float((fitted[-1].predict(x_test) == dataset.y_test).mean())
            self.record(SvmFit(accuracy=accuracy))
            self.verdicts.against_baseline(self.name, self.gates["accuracy"], accuracy)


# Its cells: every device, subset and pixel form, when the run has the SVM.
def subsets(grid: Grid) -> tuple[int, ...]:
    settings: SvmSettings = grid.settings[SETTINGS]
    return settings.subsets


def svm_cells(grid: Grid) -> list:
    if "svm" not in grid.models:
        return placeholder("svm-not-selected", "svm is not among --models")
    cells = [SvmCell(d, n, p) for d, n, p in itertools.product(grid.devices, subsets(grid), SVM_PIXELS)]
    return params(grid, cells, (device_absent, device_unsupported))


# Where this module's tables come in the summary: after the throughput tables (benches/catalog.py).
PLACE_IN_SUMMARY = 15
# This module's benchmark kind, by fixture name (benches/catalog.py registers it).
KINDS: dict[str, Benchmark] = {
    FIXTURE: Benchmark(
        svm_cells,
        SvmBench,
        "test_svm",
        (TIMING, "accuracy"),
        file="test_svm.py",
        file_doc="The RBF SVM study: fit time and accuracy on n-image subsets, grayscale vs binarized.",
        about="The RBF SVM's fit on an n-image subset, accuracy gated (kinds/svm/).",
        sections=(
            Section(
                "SVM test accuracy by training subset",
                {FIXTURE: "{column}"},
                SvmFit.keys.accuracy,
                "percent",
                ("accuracy",),
            ),
        ),
    ),
}
