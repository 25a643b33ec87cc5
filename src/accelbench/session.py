"""Run-wide state: the configuration, the devices found, the data, built cells, results and gates."""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench import data, memory, options
from accelbench.baselines import (
    AbsoluteDrop,
    BaselineFile,
    RelativeDrop,
    RelativeGrowth,
    regression,
)
from accelbench.cells import Cell, Grid
from accelbench.devices import Inventory, Placement, kind_of
from accelbench.measure import matmul_peak_flops
from accelbench.models import MODELS, ModelOptions
from accelbench.presets import PRESETS, Preset
from accelbench.training import AccuracyRun, OneStep, Trainer, train_to_accuracy

# Test accuracy a time-to-accuracy run aims for, by dataset, where the model publishes none.
TARGET_ACCURACY = {"digits": 0.95, "mnist": 0.95, "fashion_mnist": 0.85, "cifar10": 0.45}


class MissingBaselineWarning(UserWarning):
    """A gated value has no stored baseline yet: reported, never failed."""


@dataclass(frozen=True)
class RunConfig:
    devices: tuple[str, ...]  # () means every device present
    batch_sizes: tuple[int, ...]
    models: tuple[str, ...]
    dataset: str
    data_dir: Path | None
    preset: Preset
    baselines: Path
    update_baselines: bool
    accuracy_tolerance: float
    speedup_tolerance: float
    memory_tolerance: float
    memory_budget: int  # bytes the CPU's largest-batch search plans for
    memray_tracking: bool  # --memray: every test runs under memray, which slows TensorFlow
    model_options: ModelOptions
    intra_op_threads: int
    user_batch_sizes: bool = False  # --batch-sizes given: no sweep to the largest batch

    @classmethod
    def from_pytest(cls, config: Any) -> RunConfig:
        value = {option.flag: options.value(config, option) for option in options.OPTIONS}
        preset = PRESETS[value["--preset"]]
        baselines = value["--baselines"]
        return cls(
            devices=value["--devices"],
            batch_sizes=value["--batch-sizes"] or preset.batch_sizes,
            models=value["--models"] or preset.models,
            dataset=value["--dataset"],
            data_dir=value["--data-dir"],
            preset=preset,
            baselines=baselines if baselines.is_absolute() else Path(config.rootpath, baselines),
            update_baselines=config.getoption("update_baselines"),
            accuracy_tolerance=value["--accuracy-tolerance"],
            speedup_tolerance=value["--speedup-tolerance"],
            memory_tolerance=value["--memory-tolerance"],
            memory_budget=value["--memory-budget"] or (memory.physical_memory_bytes() or 2**33) // 2,
            memray_tracking=bool(config.getoption("memray", default=False)),
            user_batch_sizes=value["--batch-sizes"] is not None,
            model_options=ModelOptions(deep_layers=value["--deep-layers"]),
            intra_op_threads=value["--intra-op-threads"],
        )


@dataclass(frozen=True)
class Gate:
    """A gated metric: the file its baselines live in, what they depend on, how far it may move."""

    metric: str
    store: BaselineFile
    scope: tuple[str, ...]
    check: Any
    timed: bool = False  # derived from timings: never recorded from a run memray slowed down


@dataclass(frozen=True)
class Scaling:
    """One model's training-step host peaks over a ladder of batch sizes, and what follows."""

    batch_sizes: tuple[int, ...]
    peaks: tuple[int, ...]
    fit: memory.LinearFit
    estimate: memory.Estimate
    budget: int
    largest_batch: int | None  # None: not even the smallest batch fits
    searched_by: str  # how fits(batch) was answered


class Session:
    def __init__(self, run: RunConfig) -> None:
        self.run = run
        self.results: dict[str, dict[str, float]] = {}
        self.notes: list[str] = []  # shown at the end of the run (baselines written or refused)
        self._trainers: dict[Cell, Trainer] = {}
        self._accuracy_runs: dict[Cell, AccuracyRun] = {}
        self._peaks: dict[str, float] = {}
        self._scalings: dict[tuple[str, str], Scaling] = {}
        self.unjudged: set[str] = set()  # timing metrics neither gated nor recorded: the run was tracked

    # --- lazily found: TensorFlow starts only when a benchmark is collected -------------------
    @functools.cached_property
    def inventory(self) -> Inventory:
        return Inventory.discover(self.run.intra_op_threads)

    @functools.cached_property
    def grid(self) -> Grid:
        sweeps = self.run.preset.sweep_to_largest and not self.run.user_batch_sizes
        return Grid(devices=self.run.devices or self.inventory.default_names(),
                    batch_sizes=self.run.batch_sizes, models=self.run.models,
                    svm_subsets=self.run.preset.svm_subsets,
                    labelled=self.run.dataset not in data.UNLABELLED, inventory=self.inventory,
                    sweep=self.sweep if sweeps else None)

    @functools.cached_property
    def dataset(self) -> data.Dataset:
        return data.load(self.run.dataset, self.run.data_dir).head(self.run.preset.max_train_samples)

    @functools.cached_property
    def gates(self) -> dict[str, Gate]:
        load = lambda name, depth: BaselineFile.load(self.run.baselines / name, depth)
        # Allocation patterns change with TensorFlow's version as much as with the machine.
        memory_store = self._memory_baselines
        memory_scope = (self.inventory.machine_class(), f"tensorflow-{_minor_version('tensorflow')}",
                        self.dataset.name)
        growth = RelativeGrowth(self.run.memory_tolerance, memory.ALLOCATOR_SLACK_BYTES)
        return {
            "accuracy": Gate("accuracy", load("accuracy.json", 1), (self.dataset.key,),
                             AbsoluteDrop(self.run.accuracy_tolerance)),
            "speedup": Gate("speedup", load("speedup.json", 2),
                            (self.inventory.machine_class(), self.dataset.name),
                            RelativeDrop(self.run.speedup_tolerance), timed=True),
            **{metric: Gate(metric, memory_store, memory_scope, growth)
               for metric in ("peak_memory_bytes", "device_peak_memory_bytes")},
        }

    @functools.cached_property
    def _memory_baselines(self) -> BaselineFile:
        return BaselineFile.load(self.run.baselines / "memory.json", 3)

    def prepare(self) -> None:
        """Load what every benchmark needs, so bad data or baselines stop the run up front."""
        self.dataset
        self.gates

    # --- building blocks shared between benchmarks -------------------------------------------
    def placement(self, name: str) -> Placement:
        placement = self.inventory.get(name)
        if placement is None:
            raise LookupError(self.inventory.absent_reason(name))
        return placement

    def trainer(self, cell: Cell) -> Trainer:
        """Built and warmed up once per cell; throughput, speedup and overhead tests share it."""
        if cell not in self._trainers:
            self._trainers[cell] = Trainer.build(
                cell.id, MODELS[cell.model], self.dataset, self.placement(cell.device),
                cell.batch_size, self.run.model_options, self.run.preset.round_seconds)
        return self._trainers[cell]

    def accuracy_run(self, cell: Cell) -> AccuracyRun:
        if cell not in self._accuracy_runs:
            spec = MODELS[cell.model]
            target = spec.published_accuracy.get(self.dataset.name, TARGET_ACCURACY.get(self.dataset.name, 0.9))
            self._accuracy_runs[cell] = train_to_accuracy(
                cell.id, spec, self.dataset, self.placement(cell.device), cell.batch_size,
                spec.recipe_epochs, target, self.run.model_options)
        return self._accuracy_runs[cell]

    def one_step(self, cell: Cell) -> OneStep:
        return OneStep.build(cell.id, MODELS[cell.model], self.dataset, self.placement(cell.device),
                             cell.batch_size, self.run.model_options)

    def scaling(self, device: str, model: str) -> Scaling:
        """Measured once per device and model: the ladder's peaks, their fit and the largest batch.

        Called outside test bodies (fixture setup, collection): pytest-memray may be tracking
        a test body, and memray runs one tracker at a time.
        """
        key = (device, model)
        if key not in self._scalings:
            ladder = self.run.preset.memory_ladder
            step = self.one_step(Cell(device, ladder[0], model))
            steps = [step, *(step.resized(b) for b in ladder[1:])]
            peaks = tuple(memory.median_host_peak(s.run) for s in steps)
            fit = memory.fit_line(ladder, peaks)
            estimate = memory.estimate(step.model)
            fits, searched_by = self._fits_predicate(step, fit, estimate)
            largest = memory.largest_fitting(fits, start=1, limit=self._search_limit(estimate))
            self._scalings[key] = Scaling(ladder, peaks, fit, estimate, self.run.memory_budget,
                                          largest, searched_by)
        return self._scalings[key]

    def _fits_predicate(self, step: OneStep, fit: memory.LinearFit, estimate: memory.Estimate):
        if step.placement.kind == "cpu":
            return (memory.budget_predicate(fit, estimate.resident, self.run.memory_budget),
                    f"predicted: resident state + fitted step peak <= {memory.format_bytes(self.run.memory_budget)}")
        return (memory.oom_predicate(lambda batch_size: step.resized(batch_size)),
                f"probed: real steps on {step.placement.description} until out of memory")

    def _search_limit(self, estimate: memory.Estimate) -> int:
        """No batch whose input alone would take a quarter of the budget on the host."""
        return max(1, min(memory.MAX_SEARCH_BATCH, self.run.memory_budget // (4 * estimate.input_per_sample)))

    def sweep(self, device: str, model: str) -> tuple[int, ...]:
        """Doubling batch sizes from the preset's smallest up to the largest that fits, or the
        training set's size: a batch larger than the data set is not a batch."""
        spec = MODELS[model]
        start = min(self.run.batch_sizes)
        if not spec.batch_trained or self.inventory.get(device) is None or kind_of(device) not in spec.device_kinds:
            return self.run.batch_sizes
        ceiling = min(self.scaling(device, model).largest_batch or 0, len(self.dataset.x_train))
        sizes = []
        while start <= ceiling:
            sizes.append(start)
            start *= 2
        return tuple(sizes) or (min(self.run.batch_sizes),)

    def peak_flops(self, device: str) -> float:
        """This machine's measured matmul FLOP/s on a device, measured once per run."""
        if device not in self._peaks:
            size = 1024 if device == "cpu" else 4096  # big enough to saturate, quick on 2 cores
            self._peaks[device] = matmul_peak_flops(self.placement(device).device, size)
        return self._peaks[device]

    # --- results and gates --------------------------------------------------------------------
    @property
    def judges_timing(self) -> bool:
        """False under --memray: memray slows TensorFlow down, and not evenly (a fit() loop and a
        hand-written loop lost different shares), so timings of a tracked run are reported,
        never gated nor recorded as baselines."""
        return not self.run.memray_tracking

    def record(self, test_name: str, **metrics: float) -> None:
        self.results.setdefault(test_name, {}).update({k: float(v) for k, v in metrics.items()})

    def gate(self, test_name: str) -> list[str]:
        """Failure messages for this test's gated metrics; stages them instead when updating."""
        failures = []
        for metric, measured in self.results.get(test_name, {}).items():
            gate = self.gates.get(metric)
            if gate is None:
                continue
            if gate.timed and not self.judges_timing:
                self.unjudged.add(metric)
                continue
            if self.run.update_baselines:
                gate.store.stage(gate.scope, test_name, metric, measured)
                continue
            baseline = gate.store.get(gate.scope, test_name, metric)
            if baseline is None:
                warnings.warn(MissingBaselineWarning(
                    f"no {metric} baseline for {test_name} under {'/'.join(gate.scope)} in "
                    f"{gate.store.path}; record one with: pytest benchmarks --update-baselines"))
                continue
            message = regression(metric, test_name, baseline, measured, gate.check)
            if message:
                failures.append(message)
        return failures

    def save_baselines(self) -> list[str]:
        """Write staged baselines (atomically); returns what was written."""
        written = []
        stores = {id(gate.store): gate.store for gate in self.gates.values()}
        for store in stores.values():
            if store.staged:
                store.save()
                written.append(f"{store.path} ({store.staged} values)")
        return written


def _minor_version(package: str) -> str:
    import importlib.metadata

    return ".".join(importlib.metadata.version(package).split(".")[:2])
