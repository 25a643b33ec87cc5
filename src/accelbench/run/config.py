"""What a run was asked for, free of pytest: the plugin fills it from the options
(plugin/options.py: run_config)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.axes.models import ModelOptions
from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.processes import ab
from accelbench.processes.protocol import RunFields
from accelbench.run.presets import Preset


@dataclass(frozen=True)
class RunConfig:
    devices: tuple[str, ...]  # () means every device present
    batch_sizes: tuple[int, ...]
    models: tuple[str, ...]
    dataset: str | None  # --dataset: every model's data; None: each model's own (dataset_of)
    data_dir: Path | None
    preset: Preset
    baselines: Path
    update_baselines: bool
    accuracy_tolerance: float  # absolute, for a quality where higher is better (accuracy)
    error_tolerance: float  # relative, for a quality where lower is better (a regression's MAE)
    memory_tolerance: float
    timing_threshold: float  # the smallest slowdown against a saved run that fails a cell
    parity_digits: int  # significant digits a device's final loss shares with the CPU's
    require_baselines: bool  # new and ungated verdicts fail
    memory_budget: int  # bytes the CPU's largest-batch search plans for
    memray_tracking: bool  # --memray: every test runs under memray, which slows TensorFlow
    model_options: ModelOptions
    intra_op_threads: int
    target_sizes: tuple[int, int]  # training and test images data-scaling projections aim at
    assumed_speedups: dict[str, float]  # over the CPU, for devices the run does not measure
    device_prices: dict[str, float]  # dollars per device-hour
    trace_dir: Path | None = None  # --trace-dir: where step traces go; None traces nothing
    user_batch_sizes: bool = False  # --batch-sizes given: no sweep to the largest batch
    user_models: bool = False  # --models given: every one is served, not the preset's serving models
    output_root: Path | None = None  # where a kind keeps what its cells write (<rootdir>/.benchmarks)
    stamp: str = ""  # when the run started, for the folders of what it writes
    ab_setup: ab.Setup | None = None  # --ab-python / --ab-env: environment B; None for a plain run
    backends: tuple[str, ...] = (PROCESS_BACKEND,)  # Keras backends of the training and inference cells
    precisions: tuple[str, ...] = (REFERENCE_PRECISION,)  # their Keras dtype policies
    # the benchmark kinds' own options (Benchmark.options), by flag: parsed, or their default
    kind_options: Mapping[str, Any] = field(default_factory=dict)
    worker_deadline_s: float = 300.0  # of one call to a worker
    stop_after_s: float | None = None  # --stop-after: no cell starts after this many seconds of the run
    modules: tuple[str, ...] = ()  # --modules: the user's modules, imported in every process
    module_roots: tuple[str, ...] = ()  # the folders they were found in, for another interpreter's path

    def dataset_of(self, model: str) -> str:
        """The dataset `model` runs on in this run (axes.models.ModelSpec.dataset_in)."""
        return self.worker_fields().dataset_of(model)

    def worker_fields(self) -> RunFields:
        """What a worker needs to build a cell as this run does (processes.protocol.CellSpec)."""
        return RunFields(
            dataset=self.dataset,
            data_dir=str(self.data_dir) if self.data_dir else None,
            max_train_samples=self.preset.max_train_samples,
            deep_layers=self.model_options.deep_layers,
            seed=self.model_options.seed,
            intra_op_threads=self.intra_op_threads,
            round_seconds=self.preset.round_seconds,
            predict_round_seconds=self.preset.predict_round_seconds,
            modules=self.modules,
            module_roots=self.module_roots,
            full_size_inputs=self.preset.full_size_inputs,
        )
