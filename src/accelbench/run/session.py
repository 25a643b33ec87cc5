"""The run's context: its configuration, the devices found, the data, the gates, the workers.

What it builds per cell lives in built.py, how big it may go in sizing.py, what it concludes
in verdicts.py; the Session holds one of each for the run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from accelbench import progress
from accelbench.axes import backends, data
from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.axes.devices import Inventory, Placement
from accelbench.axes.models import MODELS
from accelbench.grid.cells import Grid
from accelbench.judge.baselines import BaselineFile
from accelbench.judge.gates import Gates, Scope, write_staged
from accelbench.judge.verdicts import Verdicts
from accelbench.measured import Roof
from accelbench.processes import ab, workers
from accelbench.processes.protocol import Cellwork
from accelbench.results.costs import ProjectedTime
from accelbench.run import presets
from accelbench.run.backend_workers import BackendWorkers
from accelbench.run.built import BuiltWork
from accelbench.run.config import RunConfig
from accelbench.run.roofs import Roofs
from accelbench.run.sizing import Sizing
from accelbench.work.loadgen import SERVING_RULES


class Session:
    def __init__(self, run: RunConfig) -> None:
        self.run = run
        # every finished cell's extra_info: the summary tables, the JSON's untimed cells
        self.cells: dict[str, dict] = {}
        self.projections: list[ProjectedTime] = []  # data-scaling cells' projections, for the cost table
        self.progress = progress.Progress()  # silent until the plugin gives it pytest's terminal
        self.deferred: list[tuple[str, Callable[[], None]]] = []  # (what, work) after the last cell: step traces
        self.notes: list[str] = []  # shown at the end of the run (baselines written or refused)
        self.backends = BackendWorkers(run)  # the other Keras backends' workers
        self.built = BuiltWork(self)
        self.sizing = Sizing(
            run,
            lambda cell: self.built.step("train", cell).built,
            lambda device: self.inventory.get(device) is not None,
            lambda model: len(self.data(model).x_train),
        )
        self.verdicts = Verdicts(
            update=run.update_baselines,
            require_baselines=run.require_baselines,
            memray_tracking=run.memray_tracking,
            timing_threshold=run.timing_threshold,
            process_backend=PROCESS_BACKEND,
            ab_strict=bool(run.ab_setup and run.ab_setup.strict),
        )
        self.process_results: dict[Any, Any] = {}  # a distributed.Job -> its Result, for cells that share a job
        self._datasets: dict[str, data.Dataset] = {}  # by name: models on the same data share it
        self._gates: dict[str, Gates] = {}  # by dataset name
        self._baseline_files: dict[str, BaselineFile] = {}  # by file: every dataset's gates share it
        # the devices' measured roofs; kept between runs in pytest's cache, which the plugin sets
        self.roofs = Roofs(lambda: self.inventory.fingerprint().key, lambda text: self.progress(text), self._roof)

    # --- lazily found: the backend starts only when a benchmark is collected -------------------
    @functools.cached_property
    def inventory(self) -> Inventory:
        inventory = backends.inventory(PROCESS_BACKEND, self.run.intra_op_threads)
        self.verdicts.fingerprint = inventory.fingerprint().key
        return inventory

    @functools.cached_property
    def grid(self) -> Grid:
        sweeps = self.run.preset.sizing.sweep_to_largest and not self.run.user_batch_sizes
        return Grid(
            devices=self.run.devices or self.inventory.default_names(),
            batch_sizes=self.run.batch_sizes,
            models=tuple(m for m in self.run.models if MODELS[m].generation is None),
            generative=tuple(m for m in self.run.models if MODELS[m].generation is not None),
            unlabelled=frozenset(m for m in self.run.models if self.run.dataset_of(m) in data.UNLABELLED),
            inventory=self.inventory,
            sweep=self.sizing.sweep if sweeps else None,
            settings=presets.kind_settings(self.run.preset),
            user_models=self.run.user_models,
            left_out=self.run.preset.left_out,
            backends=self.run.backends,
            precisions=self.run.precisions,
        )

    def data(self, model: str) -> data.Dataset:
        """The dataset `model` runs on (its own, or the run's --dataset), loaded once per name."""
        name = self.run.dataset_of(model)
        if name not in self._datasets:
            self._datasets[name] = data.load(name, self.run.data_dir).head(self.run.preset.max_train_samples)
        return self._datasets[name]

    def gates(self, model: str) -> Gates:
        """The gates of `model`'s cells: its data's baselines on this machine (each file loaded
        once for every dataset of the run, and written once)."""
        name = self.run.dataset_of(model)
        if name not in self._gates:
            scope = Scope(
                self.inventory.fingerprint().key,
                backends.software().key,
                self.data(model),
                f"{self.run.preset.name} preset, {SERVING_RULES.of(self.run.kind_options)} rules",
                self.run.kind_options,
            )
            self._gates[name] = Gates.load(self.run.baselines, scope, self._tolerances(), self._baseline_files)
        return self._gates[name]

    def _tolerances(self) -> dict[str, Any]:
        return {
            "accuracy": self.run.accuracy_tolerance,
            "error": self.run.error_tolerance,
            "memory": self.run.memory_tolerance,
            **self.run.kind_options,  # a kind's own tolerances, by their options' flags
        }

    @functools.cached_property
    def ab_run(self) -> ab.ABRun | None:
        """The run's two workers, A and B, started on first use; None for a plain run."""
        return ab.ABRun(self.run.ab_setup, self.run.worker_fields()) if self.run.ab_setup else None

    def end(self) -> None:
        """Every process the run started ends with it (workers, and any job left running)."""
        if self.__dict__.get("ab_run") is not None:  # started only if it was asked for
            self.ab_run.end()
        self.backends.end()
        workers.end_all()

    def prepare(self) -> None:
        """Load what every benchmark needs, so bad data or baselines stop the run up front."""
        for model in self.run.models:  # each loads on its first access
            self.gates(model)

    # --- building blocks shared between benchmarks -------------------------------------------
    def placement(self, name: str) -> Placement:
        placement = self.inventory.get(name)
        if placement is None:
            raise LookupError(backends.absent_reason(self.inventory, name))
        return placement

    def _roof(self, backend: str, device: str, dtype: str, kept: Roof | None) -> Roof:
        """A device's roofs measured by `backend` where its cells run: here, or in its worker."""
        if backend == PROCESS_BACKEND:
            return backends.measure_roof(backend, self.placement(device), dtype, kept)
        wire = self.backends.call(
            backend,
            Cellwork.ROOF,
            device=device,
            dtype=dtype,
            intra_op_threads=self.run.intra_op_threads,
            kept=kept.as_json() if kept else None,
        )
        return Roof.from_json(wire)

    def save_baselines(self) -> list[str]:
        return write_staged(self._baseline_files)
