"""What a run builds per cell, once: trainers, predictors, one-step and one-batch work, recipe
runs. The benchmarks that share a cell share its built work (a trainer is timed by the
throughput cell, then the speedup and overhead cells), so each is built and warmed up once.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.axes.data import Dataset
from accelbench.axes.devices import Placement
from accelbench.axes.models import MODELS, ModelOptions
from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.grid.cells import Cell
from accelbench.judge.verdicts import Verdicts
from accelbench.processes.protocol import Cellwork
from accelbench.run.config import RunConfig
from accelbench.work.inference import PREDICTORS, OneBatch
from accelbench.work.training import OneStep, RecipeRun, Trainer, train_recipe

# Test accuracy a time-to-accuracy run aims for, by dataset, where the model publishes none.
TARGET_ACCURACY = {"digits": 0.95, "mnist": 0.95, "fashion_mnist": 0.85, "cifar10": 0.45}


class RunContext(Protocol):
    """What the built work needs of the run (run/session.py's Session is one)."""

    run: RunConfig
    dataset: Dataset
    verdicts: Verdicts

    def progress(self, text: str) -> None: ...
    def placement(self, name: str) -> Placement: ...
    def backend_call(self, backend: str, call: Cellwork, **kwargs: Any) -> Any: ...
    def cell_spec(self, kind: str, cell: Cell, tag: str = "") -> dict[str, Any]: ...


class BuiltWork:
    """The run's built work by cell, from the session's data, devices and settings."""

    def __init__(self, session: RunContext) -> None:
        self.session = session
        self._trainers: dict[Cell, Trainer] = {}
        self._recipe_runs: dict[Cell, RecipeRun] = {}
        self._predictors: dict[Cell, Any] = {}
        self._one_batches: dict[Cell, OneBatch] = {}

    def model_options(self, cell: Cell) -> ModelOptions:
        """The run's model options, under the cell's precision."""
        return dataclasses.replace(
            self.session.run.model_options, precision=getattr(cell, "precision", REFERENCE_PRECISION)
        )

    def trainer(self, cell: Cell) -> Trainer:
        """Built and warmed up once per cell; throughput, speedup and overhead tests share it."""
        if cell not in self._trainers:
            self._trainers[cell] = Trainer.build(
                cell.id,
                MODELS[cell.model],
                self.session.dataset,
                self.session.placement(cell.device),
                cell.batch_size,
                self.model_options(cell),
                self.session.run.preset.round_seconds,
                steps=self.session.verdicts.saved_steps("train", cell.id),
            )
        return self._trainers[cell]

    def predictor(self, cell: Cell) -> Any:
        """Built, calibrated and warmed up once per cell, as a trainer is: its inference and
        latency cells time it, and another backend's inference cell is interleaved with it."""
        if cell not in self._predictors:
            spec = MODELS[cell.model]
            self._predictors[cell] = PREDICTORS[spec.framework].build(
                spec,
                self.session.dataset,
                self.session.placement(cell.device),
                cell.batch_size,
                self.model_options(cell),
                self.session.run.preset.predict_round_seconds,
                steps=self.session.verdicts.saved_steps("inference", cell.id),
            )
        return self._predictors[cell]

    def reference_work(self, kind: str, cell: Cell) -> Any:
        """The work of `cell` on this process's backend (a Trainer or Predictor, built once): what
        another backend's cell of that kind is interleaved with."""
        same_cell_here = dataclasses.replace(cell, backend=PROCESS_BACKEND)
        return {"train": self.trainer, "inference": self.predictor}[kind](same_cell_here)

    def recipe_target(self, model: str) -> float | None:
        """The quality the model's recipe aims for on this run's data: the model's own target,
        else its published accuracy here, else a classifier's default; a regression may have none."""
        spec = MODELS[model]
        if spec.recipe_target is not None:
            return spec.recipe_target
        if self.session.dataset.scored_by.regression:
            return None
        return spec.published_accuracy.get(
            self.session.dataset.name, TARGET_ACCURACY.get(self.session.dataset.name, 0.9)
        )

    def recipe_run(self, cell: Cell) -> RecipeRun:
        """The recipe once per cell; on another backend, in that backend's worker."""
        if cell not in self._recipe_runs:
            spec = MODELS[cell.model]
            if cell.backend != PROCESS_BACKEND:
                self.session.progress(
                    f"{cell.id}: training the recipe in the {cell.backend} worker ({spec.recipe_epochs} epochs)"
                )
                found = self.session.backend_call(
                    cell.backend,
                    Cellwork.RECIPE_RUN,
                    spec=self.session.cell_spec("train", cell),
                    epochs=spec.recipe_epochs,
                    target=self.recipe_target(cell.model),
                )
                self._recipe_runs[cell] = RecipeRun(**found)
            else:
                self._recipe_runs[cell] = train_recipe(
                    cell.id,
                    spec,
                    self.session.dataset,
                    self.session.placement(cell.device),
                    cell.batch_size,
                    spec.recipe_epochs,
                    self.recipe_target(cell.model),
                    self.model_options(cell),
                    self.session.progress,
                )
        return self._recipe_runs[cell]

    def one_batch(self, cell: Cell) -> OneBatch:
        """Built and warmed up once per cell, as a trainer is: the inference memory and leak cells
        of a batch size share it (a model and its trace, 0.2-0.4 s)."""
        if cell not in self._one_batches:
            self._one_batches[cell] = OneBatch.build(
                MODELS[cell.model],
                self.session.dataset,
                self.session.placement(cell.device),
                cell.batch_size,
                self.model_options(cell),
            )
        return self._one_batches[cell]

    def one_step(self, cell: Cell) -> OneStep:
        return OneStep.build(
            cell.id,
            MODELS[cell.model],
            self.session.dataset,
            self.session.placement(cell.device),
            cell.batch_size,
            self.model_options(cell),
        )
