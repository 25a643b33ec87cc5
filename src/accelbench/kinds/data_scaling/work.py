"""The work as the data grows: one epoch of a model's training recipe (or an SVM fit) on n
training images, and the prediction of m test images, at log-spaced sizes; and what the data
and the model would need at sizes no machine here can hold."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench import progress, units
from accelbench.axes.data import Dataset
from accelbench.axes.devices import Placement
from accelbench.axes.models import ModelOptions, ModelSpec
from accelbench.registry import Registry
from accelbench.work import measure, memory
from accelbench.work.build import fit_estimator
from accelbench.work.inference import fitted_estimator, serving_model
from accelbench.work.training import build_compiled, check_finite

LAST_STEP = 1.5  # the largest size is always measured; a doubling closer to it than this is dropped
PIXEL_BYTES = 1  # the images as their files keep them: 8 bits a pixel


def ladder(smallest: int, largest: int, unit: int = 1) -> tuple[int, ...]:
    """Doubling sizes from smallest to largest, whole multiples of unit, largest (rounded down
    to a unit) always last. A unit is a batch: a partial last batch would trace anew."""
    top = largest // unit * unit
    size = max(unit, smallest // unit * unit)
    sizes = []
    while size * LAST_STEP <= top:
        sizes.append(size)
        size *= 2
    return (*sizes, top) if top >= unit else ()


def subsets(arrays: tuple[np.ndarray, ...], seed: int) -> tuple[np.ndarray, ...]:
    """The arrays in one seeded random order: the first n of them are a random n-image subset,
    and every smaller subset lies inside every larger one. (The first images of a file are not
    a random sample: MNIST's test set puts its 5,000 cleaner digits first.)"""
    order = np.random.default_rng(seed).permutation(len(arrays[0]))
    return tuple(a[order] for a in arrays)


class GrowthWork:
    """One phase of one model, run on the first n images."""

    unit: int = 1  # sizes are multiples of this
    description = ""  # what one run is, for extra_info

    def run(self, n: int) -> object:
        raise NotImplementedError


@dataclass
class KerasEpoch(GrowthWork):
    """One epoch of the recipe: fit() on n images at the recipe's batch size, shuffled, as a user
    trains. Every size is whole batches, so the step is traced once."""

    model: Any
    placement: Placement
    x: np.ndarray
    y: np.ndarray
    where: str
    unit: int  # the recipe's batch size

    @classmethod
    def build(cls, where: str, spec: ModelSpec, dataset: Dataset, placement: Placement, options: ModelOptions):
        x, y = subsets((dataset.x_train, dataset.y_train), options.seed)
        return cls(build_compiled(spec, dataset, placement, options), placement, x, y, where, spec.recipe_batch_size)

    @property
    def description(self) -> str:
        return f"one epoch of fit() at batch {self.unit}"

    def run(self, n: int) -> float:
        with self.placement.scope():
            history = self.model.fit(self.x[:n], self.y[:n], batch_size=self.unit, epochs=1, shuffle=True, verbose=0)
        return check_finite(float(history.history["loss"][-1]), self.where)  # float() waits for the device


PREDICT_BATCH = 32  # Keras's own default for predict(): what model.predict(x) does


@dataclass
class KerasPrediction(GrowthWork):
    """predict() of n test images at Keras's default batch of 32 (the weights do not change the
    time). Every size is whole batches, so the prediction is traced once."""

    model: Any
    placement: Placement
    x: np.ndarray
    unit: int = PREDICT_BATCH
    description = f"predict() at batch {PREDICT_BATCH}"

    @classmethod
    def build(cls, where: str, spec: ModelSpec, dataset: Dataset, placement: Placement, options: ModelOptions):
        (x,) = subsets((dataset.x_test,), options.seed)
        return cls(serving_model(spec, dataset, placement, options), placement, x)

    def run(self, n: int) -> np.ndarray:
        with self.placement.scope():
            return self.model.predict(self.x[:n], batch_size=self.unit, verbose=0)  # numpy: synced


@dataclass
class EstimatorFit(GrowthWork):
    """A scikit-learn fit on n flattened images (the RBF SVM study's fit time)."""

    spec: ModelSpec
    dataset: Dataset
    x: np.ndarray
    y: np.ndarray
    options: ModelOptions
    description = "fit() on n flattened images"

    @classmethod
    def build(cls, where: str, spec: ModelSpec, dataset: Dataset, placement: Placement, options: ModelOptions):
        x, y = subsets((dataset.x_train.reshape(len(dataset.x_train), -1), dataset.y_train), options.seed)
        return cls(spec, dataset, x, y, options)

    def run(self, n: int) -> Any:
        shape, outputs = self.dataset.input_shape, self.dataset.outputs
        return fit_estimator(self.spec, shape, outputs, self.options, self.x[:n], self.y[:n])


@dataclass
class EstimatorPrediction(GrowthWork):
    """predict() of n flattened test images by the estimator test_inference measures."""

    estimator: Any
    x: np.ndarray
    description = "predict() of n flattened test images"

    @classmethod
    def build(cls, where: str, spec: ModelSpec, dataset: Dataset, placement: Placement, options: ModelOptions):
        (x,) = subsets((dataset.x_test.reshape(len(dataset.x_test), -1),), options.seed)
        return cls(fitted_estimator(spec, dataset, options), x)

    def run(self, n: int) -> np.ndarray:
        return self.estimator.predict(self.x[:n])


@dataclass(frozen=True)
class Phase:
    """Training or prediction: which images grow, and the work for each framework."""

    name: str
    slot: int  # its place in (training, test) pairs: the preset's smallest sizes, --target-sizes
    images: Callable[[Dataset], np.ndarray]
    works: dict[str, Callable[..., GrowthWork]]  # by the model's framework


PHASES: Registry[Phase] = Registry("data-scaling phase")
PHASES.register(
    "train", Phase("train", 0, lambda d: d.x_train, {"keras": KerasEpoch.build, "sklearn": EstimatorFit.build})
)
PHASES.register(
    "predict",
    Phase("predict", 1, lambda d: d.x_test, {"keras": KerasPrediction.build, "sklearn": EstimatorPrediction.build}),
)


# Frameworks whose works never load TensorFlow: their peaks are measured in a worker that has
# not loaded it either (Bench.apart: build_apart, then peaks_apart). memray rewrites every loaded library's relocations
# when a tracker starts and again when it stops; with TensorFlow loaded that is 1.5 million of
# them and 0.33 s a tracker. The SVM's ten quick sizes (one tracker each) took 3.25 s beside
# TensorFlow and 0.38 s without it, plus the worker's 0.8 s start (docs/measurements.md).
MEASURED_APART = frozenset({"sklearn"})


@dataclass(frozen=True)
class SizePeaks:
    """One size's warm-up seconds and host peaks. Crosses from a worker as JSON (peaks_apart):
    its list is made a tuple again."""

    first_seconds: float
    peaks: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "peaks", tuple(self.peaks))


def peaks_at(work: GrowthWork, size: int, repeats: int) -> SizePeaks:
    """Warm the size up (tracing at its shapes), then take its host peak `repeats` times.

    Runs outside any test body: memray runs one tracker at a time, and pytest-memray may be
    tracking the body."""
    first = measure.seconds(lambda: work.run(size))
    return SizePeaks(first, tuple(memory.host_peak(lambda: work.run(size)) for _ in range(repeats)))


# --- the work of a model of MEASURED_APART, in the worker that never loads TensorFlow -----------

_KEPT: dict[str, GrowthWork] = {}  # key -> a cell's work built by build_apart, until forget_apart


def build_apart(
    key: str, where: str, model: str, phase: str, dataset: str, data_dir: str | None, head: int | None, options: dict
) -> None:
    """Build a data-scaling cell's work here as the pytest process builds its own for the timed
    rounds (the same builder, the same data), kept under `key` for peaks_apart. Only a framework
    of MEASURED_APART is sent here: its works take no placement and never load TensorFlow."""
    from pathlib import Path

    from accelbench.axes import data
    from accelbench.axes.models import MODELS

    spec = MODELS[model]
    if spec.framework not in MEASURED_APART:
        raise ValueError(f"{model} is a {spec.framework} model: its peaks are measured where TensorFlow is")
    images = data.load(dataset, Path(data_dir) if data_dir else None).head(head)
    _KEPT[key] = PHASES[phase].works[spec.framework](where, spec, images, None, ModelOptions(**options))


def peaks_apart(key: str, size: int, repeats: int) -> SizePeaks:
    """One size's warm-up seconds and host peaks of the kept work (peaks_at)."""
    return peaks_at(_KEPT[key], size, repeats)


def forget_apart(key: str) -> None:
    """Drop a finished cell's work, so the worker's memory does not grow cell by cell."""
    _KEPT.pop(key, None)


@dataclass(frozen=True)
class Peaks:
    """Host peaks of every size (memray, a few repeats each); sizes stop where one got too slow."""

    sizes: tuple[int, ...]
    peaks: tuple[tuple[int, ...], ...]
    stopped: str | None  # why the ladder stopped short of its largest size


def measure_peaks(
    peaks_of: Callable[[int], SizePeaks],
    sizes: tuple[int, ...],
    slowest_seconds: float,
    say: Callable[[str], None] = progress.quiet,
) -> Peaks:
    """Every size's peaks_at (here, or in a worker), smallest first. A size whose warm-up takes
    longer than slowest_seconds is the last."""
    measured, peaks = [], []
    for index, size in enumerate(sizes, 1):
        say(f"memory peak at n={size:,} ({index} of {len(sizes)} sizes)")
        found = peaks_of(size)
        measured.append(size)
        peaks.append(found.peaks)
        if found.first_seconds > slowest_seconds and size != sizes[-1]:
            return Peaks(
                tuple(measured),
                tuple(peaks),
                f"n={size:,} took {found.first_seconds:.3g} s, over the preset's {slowest_seconds:g} s a size",
            )
    return Peaks(tuple(measured), tuple(peaks), None)


def time_rounds(
    work: GrowthWork, sizes: tuple[int, ...], rounds: int, say: Callable[[str], None] = progress.quiet
) -> tuple[tuple[float, ...], ...]:
    """Seconds of every size in every round, the sizes taken in turn within each round: a slow
    spell on a shared machine then touches all sizes alike instead of bending the curve."""
    seconds: list[list[float]] = [[] for _ in sizes]
    for round_number in range(1, rounds + 1):
        for index, size in enumerate(sizes):
            say(f"timing n={size:,}, round {round_number} of {rounds}")
            seconds[index].append(measure.seconds(lambda: work.run(size)))
    return tuple(tuple(s) for s in seconds)


# --- what the target sizes would hold ------------------------------------------------------------


def data_bytes(input_shape: tuple[int, ...], n: float) -> float:
    return n * math.prod(input_shape) * PIXEL_BYTES


def machines_needed(bytes_needed: float, machine_bytes: int) -> int:
    return max(1, math.ceil(bytes_needed / machine_bytes))


def regime_reasons(
    spec: ModelSpec, phase: str, input_shape: tuple[int, ...], target: float, projected_peak: float, machine_bytes: int
) -> list[str]:
    """What stops the measured method from working at the target size on machines like this one."""
    machine = units.format_si_bytes(machine_bytes)
    reasons = []
    held = data_bytes(input_shape, target)
    if held > machine_bytes:
        reasons.append(
            f"the data itself ({units.format_si_bytes(held)} as 8-bit pixels) outgrows this machine's "
            f"memory ({machine}), and the measured work holds it in memory"
        )
    if phase == "train" and spec.working_set:
        what, size_of = spec.working_set
        if size_of(target) > machine_bytes:
            reasons.append(
                f"{what} ({units.format_si_bytes(size_of(target))}) outgrows this machine's memory ({machine})"
            )
    if projected_peak > machine_bytes:
        reasons.append(
            f"the projected peak memory ({units.format_si_bytes(projected_peak)}) would take "
            f"{machines_needed(projected_peak, machine_bytes):,} machines of this kind ({machine} each), "
            f"and the method then changes (streaming, sharding): a projection is not a promise"
        )
    return reasons
