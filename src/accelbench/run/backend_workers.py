"""The workers of the Keras backends other than the pytest process's: one per backend, started
on first use, and a cellwork call on a cell's spec in the backend's worker; and one worker kept
free of TensorFlow, for the memory peaks of models that do not need it."""

from __future__ import annotations

import functools
import sys
from typing import Any

from accelbench.axes.backends import BACKENDS
from accelbench.environments import Environment
from accelbench.grid.cells import Cell
from accelbench.processes import workers
from accelbench.processes.protocol import CellSpec, Cellwork
from accelbench.run.config import RunConfig

# This interpreter with no variable set: Keras' default backend, never imported there.
WITHOUT_TENSORFLOW = Environment("without-tensorflow", sys.executable)


class BackendWorkers:
    def __init__(self, run: RunConfig) -> None:
        self.run = run

    @functools.cached_property
    def pool(self) -> workers.WorkerPool:
        """One worker per backend, started on first use."""
        return workers.WorkerPool()

    def spec(self, work_name: str, cell: Cell, tag: str = "") -> dict[str, Any]:
        """The cell as a worker builds it, on the wire (processes.protocol.CellSpec)."""
        return CellSpec.of(work_name, cell, self.run.worker_fields(), tag).to_wire()

    def call(self, backend: str, call: Cellwork, **kwargs: Any) -> Any:
        """A cellwork call in the backend's worker, its reply as its type."""
        return self._call(BACKENDS[backend].environment(), call, self.run.worker_deadline_s, **kwargs)

    def call_fresh(self, backend: str, call: Cellwork, **kwargs: Any) -> Any:
        """A cellwork call in a fresh worker of the backend, ended after it: nothing of an earlier
        cell runs there first (an allocator whose peak cannot be reset sees this call's alone)."""
        pool = workers.WorkerPool()
        try:
            return call.reply(
                pool.call(BACKENDS[backend].environment(), call.target, self.run.worker_deadline_s, **kwargs)
            )
        finally:
            pool.end()

    def call_without_tensorflow(self, call: Cellwork, deadline_s: float | None = None, **kwargs: Any) -> Any:
        """A cellwork call in a worker that is asked only for work of frameworks outside Keras
        (Bench.apart), so it never loads TensorFlow; its reply as its type.
        deadline_s: the call's, where it may run longer than --worker-deadline."""
        return self._call(WITHOUT_TENSORFLOW, call, deadline_s or self.run.worker_deadline_s, **kwargs)

    def _call(self, environment: Environment, call: Cellwork, deadline_s: float, **kwargs: Any) -> Any:
        return call.reply(self.pool.call(environment, call.target, deadline_s, **kwargs))

    def end(self) -> None:
        if "pool" in self.__dict__:
            self.pool.end()
