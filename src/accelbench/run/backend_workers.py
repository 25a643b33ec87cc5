"""The workers of the Keras backends other than the pytest process's: one per backend, started
on first use, and a cellwork call on a cell's spec in the backend's worker."""

from __future__ import annotations

import functools
from typing import Any

from accelbench.axes.backends import BACKENDS
from accelbench.grid.cells import Cell
from accelbench.processes import workers
from accelbench.processes.protocol import CellSpec, Cellwork
from accelbench.run.config import RunConfig


class BackendWorkers:
    def __init__(self, run: RunConfig) -> None:
        self.run = run

    @functools.cached_property
    def pool(self) -> workers.Workers:
        """One worker per backend, started on first use."""
        return workers.Workers()

    def spec(self, kind: str, cell: Cell, tag: str = "") -> dict[str, Any]:
        """The cell as a worker builds it, on the wire (processes.protocol.CellSpec)."""
        return CellSpec.of(kind, cell, self.run.worker_fields(), tag).to_wire()

    def call(self, backend: str, call: Cellwork, **kwargs: Any) -> Any:
        """A cellwork call in the backend's worker, its reply as its type."""
        environment = BACKENDS[backend].environment()
        return call.reply(self.pool.call(environment, call.target, self.run.worker_deadline_s, **kwargs))

    def end(self) -> None:
        if "pool" in self.__dict__:
            self.pool.end()
