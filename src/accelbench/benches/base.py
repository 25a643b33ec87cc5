"""Bench: what every benchmark kind shares: time rounds through pytest-benchmark, record typed
results into extra_info, hand every judged number to the run's verdicts. Timed work of a WORKS
kind (here, on another backend, against B) is timed_work.py's; a cell in an A/B run, ab_cell.py's;
a step trace, step_trace.py's."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.grid.cells import Grid
from accelbench.measured import Part, Timed
from accelbench.option import Option
from accelbench.processes.protocol import CellSpec, Cellwork
from accelbench.results.summary import Section
from accelbench.run.session import Session

KIND_WORK_NAME = "kind"  # the work a kind's own call in a worker is keyed under (Bench.in_worker)


@dataclass
class Bench:
    session: Session
    cell: Any
    name: str  # the test's name with its id: what results, baselines and verdicts are keyed by
    extra_info: dict[str, Any] = field(default_factory=dict)  # goes into the benchmark JSON (record)

    @property
    def preset(self):
        return self.session.run.preset

    @property
    def baseline_key(self) -> str:
        """What the cell's baselines are stored under: its name, but a cell named with its backend
        and precision (a run of several) that runs the default ones shares the plain cell's."""
        cell = self.cell
        if (
            getattr(cell, "backend", PROCESS_BACKEND) == PROCESS_BACKEND
            and getattr(cell, "precision", REFERENCE_PRECISION) == REFERENCE_PRECISION
            and any(getattr(cell, "tagged", ()))
        ):
            return self.name.replace(f"[{cell.id}]", f"[{dataclasses.replace(cell, tagged=(False, False)).id}]")
        return self.name

    @property
    def verdicts(self):
        return self.session.verdicts

    @property
    def gates(self):
        return self.session.gates(self.cell.model)

    @property
    def dataset(self):
        """The data the cell's model runs on (its own, or the run's --dataset)."""
        return self.session.data(self.cell.model)

    def placement(self, device: str | None = None):
        return self.session.placement(device or self.cell.device)

    def say(self, text: str) -> None:
        """The run's one-line status: what this cell is measuring now."""
        self.session.progress(f"{self.name}: {text}")

    def setup(self, node: pytest.Item) -> None:
        """Work done when the fixture is made, before the test body (which pytest-memray may track)."""

    def record(self, *parts: Part | Mapping[str, Any]) -> None:
        """The one place a cell's result goes into its extra_info: typed parts, each written
        under its fields' keys (accelbench.measured), or a work's own numbers as it named them
        (work.builders.its_own)."""
        for part in parts:
            self.extra_info.update(part if isinstance(part, Mapping) else part.entries())

    def time_rounds(
        self,
        benchmark: Any,
        target: Callable[[], object],
        samples_per_round: int,
        work: str,
        rounds: int,
        warmup_rounds: int = 1,
        setup: Callable | None = None,
        teardown: Callable | None = None,
    ) -> float | None:
        """Time rounds of fixed work through pytest-benchmark and judge them against a compared
        run, per sample; returns the median round's seconds (None under --benchmark-disable)."""
        benchmark.pedantic(
            target, setup=setup, teardown=teardown, rounds=rounds, warmup_rounds=warmup_rounds, iterations=1
        )
        self.record(Timed(work=work, cell=self.cell.id, device=self.placement().description))
        stats = getattr(benchmark, "stats", None)
        if not stats:  # --benchmark-disable: nothing was timed
            return None
        per_sample = [seconds / samples_per_round for seconds in stats.stats.data]
        self.record(Timed(seconds_per_sample=per_sample))
        self.verdicts.timing(self.name, per_sample)
        return stats.stats.median

    def on_other_backend(self) -> bool:
        return getattr(self.cell, "backend", PROCESS_BACKEND) != PROCESS_BACKEND

    def in_worker(
        self, function: str, /, side: str | None = None, cell: Any = None, fresh: bool = False, **arguments: Any
    ) -> Any:
        """A kind's own work run in a worker, its reply back to the kind: `function`
        ("module:function", a built-in kind's work.py or a user's module) is called there with
        the cell's Site, built as every worker builds one, and `arguments` (JSON). `side` None:
        the worker of the cell's backend; "A" or "B": that side of an A/B run. Its reply crosses
        as JSON (a dataclass as its fields); a worker that fails raises WorkerFailed. `cell`: the
        cell whose site the worker builds, where it is not this bench's (a twin on another backend).
        `fresh`: in a fresh worker of the backend, ended after it (nothing of an earlier cell runs
        there first: an allocator whose peak cannot be reset sees this call's alone)."""
        kwargs, cell = dict(target=function, arguments=arguments), cell or self.cell
        if side is None:
            workers = self.session.backends
            spec = workers.spec(KIND_WORK_NAME, cell)
            call = workers.call_fresh if fresh else workers.call
            return call(cell.backend, Cellwork.KIND_WORK, spec=spec, **kwargs)
        ab_run = self.session.ab_run
        spec = CellSpec.of(KIND_WORK_NAME, cell, ab_run.run_fields).to_wire()
        return ab_run.call(side, Cellwork.KIND_WORK, spec=spec, **kwargs)

    def apart(self, function: str, /, deadline_s: float | None = None, **arguments: Any) -> Any:
        """A kind's own function ("module:function") called with `arguments` (JSON) in the worker
        that never loads a Keras backend and builds no cell: for work of a framework outside
        Keras, whose host peaks TensorFlow's loaded libraries would swamp (a memray tracker
        costs 0.33 s beside them). The function builds what it measures from its arguments, and
        may keep it there between calls. Its reply crosses as JSON; a worker that fails (or
        outlasts `deadline_s`, else --worker-deadline) raises WorkerFailed."""
        run = dataclasses.asdict(self.session.run.worker_fields())
        return self.session.backends.call_without_tensorflow(
            Cellwork.KIND_CALL, deadline_s, target=function, run=run, arguments=arguments
        )


# When a kind's cells run within the session (plugin/hooks.py sorts by it): the harness's own
# overhead first, on a quiet machine; the speedups last, as they take the best round each
# trainer showed in the run.
FIRST, IN_TURN, LAST = 0, 1, 2


@dataclass(frozen=True)
class Benchmark:
    """A benchmark kind, registered under its fixture's name: the cells it is parameterized over,
    what it runs on each, the metrics it judges (a skipped cell gets a skipped verdict for each),
    and where its test lives. The fixture, the scaffold's test file and the run's order are made
    from this."""

    cells: Callable[[Grid], list]
    bench: type[Bench]
    test: str  # the test function that asks for this fixture (scaffold.py writes it)
    judges: tuple[str, ...] = ()
    ab: bool = False  # judged B against A in an A/B run
    timed: bool = True  # its test hands pytest-benchmark's `benchmark` fixture over (memory cells: not timed)
    file: str = "test_benchmarks.py"  # the file under benchmarks/ its test lives in
    # That file's docstring, as `accelbench init` writes it; the first kind of a file that gives
    # one gives it (a kind added to a file that has one need not).
    file_doc: str = ""
    about: str = ""  # what it measures, in a line: its fixture's docstring (pytest --fixtures)
    order: int = IN_TURN  # FIRST, IN_TURN or LAST
    sections: tuple[Section, ...] = ()  # its tables in the summary, the terminal's and the report's
    plots: tuple[str, ...] = ()  # the report's plots of its numbers, by name (a kind folder's plots.py PLOTS)
    held_to_roofs: bool = False  # its cells' FLOP/s are taken against the device's roofs (run/roofs.py)
    # Its own command-line options and ini keys (accelbench.option.Option): the plugin adds them beside
    # its own, and the run holds their values by flag (RunConfig.kind_options).
    options: tuple[Option, ...] = ()
    # The presets that leave it out, and why (preset name -> the skip reason its cells show).
    left_out: Mapping[str, str] = field(default_factory=dict)
