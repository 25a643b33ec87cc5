"""What a run builds per cell, once: its timed work (a trainer, a predictor, a user's kind's work),
its one step for memory cells, a kind's own kept things, through the builders a worker uses too
(work/builders.py). The benchmarks that share a cell share its built work (a trainer is timed by
the throughput cell, then the speedup and overhead cells), so each is built and warmed up once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.axes.data import Dataset
from accelbench.axes.devices import Placement
from accelbench.axes.models import MODELS, ModelOptions
from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.grid.cells import Cell
from accelbench.judge.verdicts import Verdicts
from accelbench.run.backend_workers import BackendWorkers
from accelbench.run.config import RunConfig
from accelbench.work.builders import STEPS, WORKS, Site, Step, Work
from accelbench.work.training import Trainer


class RunContext(Protocol):
    """What the built work needs of the run (run/session.py's Session is one)."""

    run: RunConfig
    verdicts: Verdicts
    backends: BackendWorkers

    def progress(self, text: str) -> None: ...
    def data(self, model: str) -> Dataset: ...
    def placement(self, name: str) -> Placement: ...


class BuiltWork:
    """The run's built work by cell, from the session's data, devices and settings, through the
    same builders a worker uses (work/builders.py)."""

    def __init__(self, session: RunContext) -> None:
        self.session = session
        self._works: dict[tuple[str, Cell], Work] = {}
        self._steps: dict[tuple[str, Cell], Step] = {}
        self._kept: dict[tuple[Any, ...], Any] = {}  # a kind's own built things (kept)

    def model_options(self, cell: Cell) -> ModelOptions:
        """The run's model options, under the cell's precision."""
        return dataclasses.replace(
            self.session.run.model_options, precision=getattr(cell, "precision", REFERENCE_PRECISION)
        )

    def site(self, cell: Cell) -> Site:
        """What the cell's work is built from in this process."""
        preset = self.session.run.preset
        return Site(
            cell.id,
            MODELS[cell.model],
            self.session.data(cell.model),
            self.session.placement(cell.device),
            cell.batch_size,
            self.model_options(cell),
            preset.round_seconds,
            preset.predict_round_seconds,
            self.session.progress,
        )

    def work(self, work_name: str, cell: Cell) -> Work:
        """A WORKS entry's work of the cell, built, calibrated and warmed up once: a trainer is
        timed by the throughput cell, then the speedup and overhead cells; a predictor by the
        inference and latency cells, and another backend's cell is interleaved with it. Its
        steps per round are a compared run's, where there is one."""
        if (work_name, cell) not in self._works:
            self._works[work_name, cell] = WORKS[work_name](
                self.site(cell), self.session.verdicts.saved_steps(work_name, cell.id)
            )
        return self._works[work_name, cell]

    def trainer(self, cell: Cell) -> Trainer:
        return self.work("train", cell)

    def predictor(self, cell: Cell) -> Any:
        return self.work("inference", cell)

    def reference_work(self, work_name: str, cell: Cell) -> Work:
        """The work of `cell` on this process's backend: what another backend's cell of that
        work is interleaved with."""
        return self.work(work_name, dataclasses.replace(cell, backend=PROCESS_BACKEND))

    def step(self, work_name: str, cell: Cell) -> Step:
        """A STEPS entry's one step of the cell, built and warmed up once: the memory and leak
        cells of a batch size share it, and a step trace takes it. Taken again, it runs once
        first: every model built since seeded TensorFlow, which clears its kernel cache, and the
        next call re-instantiates the step's function. Inside a leak cell's watch those were
        allocations of no prediction, and 0.14-0.23 s of the MLPs' 0.6-0.7 s leak cells under
        memray's native traces."""
        if (work_name, cell) in self._steps:
            self._steps[work_name, cell].run()
        else:
            self._steps[work_name, cell] = STEPS[work_name](self.site(cell))
        return self._steps[work_name, cell]

    def kept(self, key: tuple[Any, ...], build: Callable[[], Any], again: Callable[[Any], None]) -> Any:
        """A kind's own built thing under `key`, built once a run (`build()`) and shared between
        its cells; taken again, `again(it)` readies it (a kept step runs once: see step)."""
        if key in self._kept:
            again(self._kept[key])
        else:
            self._kept[key] = build()
        return self._kept[key]
