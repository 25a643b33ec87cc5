"""Run-wide state: the configuration, the devices found, the data, built cells, results and gates."""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench import data, options
from accelbench.baselines import AbsoluteDrop, BaselineFile, RelativeDrop, regression
from accelbench.cells import Cell, Grid
from accelbench.devices import Inventory, Placement
from accelbench.measure import matmul_peak_flops
from accelbench.models import MODELS, ModelOptions
from accelbench.presets import PRESETS, Preset
from accelbench.training import AccuracyRun, Trainer, train_to_accuracy

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
    model_options: ModelOptions
    intra_op_threads: int

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
            model_options=ModelOptions(deep_layers=value["--deep-layers"]),
            intra_op_threads=value["--intra-op-threads"],
        )


@dataclass(frozen=True)
class Gate:
    """A gated metric: the file its baselines live in, what they depend on, how far it may drop."""

    metric: str
    store: BaselineFile
    scope: tuple[str, ...]
    check: Any


class Session:
    def __init__(self, run: RunConfig) -> None:
        self.run = run
        self.results: dict[str, dict[str, float]] = {}
        self.notes: list[str] = []  # shown at the end of the run (baselines written or refused)
        self._trainers: dict[Cell, Trainer] = {}
        self._accuracy_runs: dict[Cell, AccuracyRun] = {}
        self._peaks: dict[str, float] = {}

    # --- lazily found: TensorFlow starts only when a benchmark is collected -------------------
    @functools.cached_property
    def inventory(self) -> Inventory:
        return Inventory.discover(self.run.intra_op_threads)

    @functools.cached_property
    def grid(self) -> Grid:
        return Grid(devices=self.run.devices or self.inventory.default_names(),
                    batch_sizes=self.run.batch_sizes, models=self.run.models,
                    svm_subsets=self.run.preset.svm_subsets,
                    labelled=self.run.dataset not in data.UNLABELLED, inventory=self.inventory)

    @functools.cached_property
    def dataset(self) -> data.Dataset:
        return data.load(self.run.dataset, self.run.data_dir).head(self.run.preset.max_train_samples)

    @functools.cached_property
    def gates(self) -> dict[str, Gate]:
        load = lambda name, depth: BaselineFile.load(self.run.baselines / name, depth)  # noqa: E731
        return {
            "accuracy": Gate("accuracy", load("accuracy.json", 1), (self.dataset.key,),
                             AbsoluteDrop(self.run.accuracy_tolerance)),
            "speedup": Gate("speedup", load("speedup.json", 2),
                            (self.inventory.machine_class(), self.dataset.name),
                            RelativeDrop(self.run.speedup_tolerance)),
        }

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

    def peak_flops(self, device: str) -> float:
        """This machine's measured matmul FLOP/s on a device, measured once per run."""
        if device not in self._peaks:
            size = 1024 if device == "cpu" else 4096  # big enough to saturate, quick on 2 cores
            self._peaks[device] = matmul_peak_flops(self.placement(device).device, size)
        return self._peaks[device]

    # --- results and gates --------------------------------------------------------------------
    def record(self, test_name: str, **metrics: float) -> None:
        self.results.setdefault(test_name, {}).update({k: float(v) for k, v in metrics.items()})

    def gate(self, test_name: str) -> list[str]:
        """Failure messages for this test's gated metrics; stages them instead when updating."""
        failures = []
        for metric, measured in self.results.get(test_name, {}).items():
            gate = self.gates.get(metric)
            if gate is None:
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
        for gate in self.gates.values():
            if gate.store.staged:
                gate.store.save()
                written.append(f"{gate.store.path} ({gate.store.staged} {gate.metric} values)")
        return written
