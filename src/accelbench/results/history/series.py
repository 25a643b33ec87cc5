"""Saved runs as series: one per cell, number and machine, oldest run first.

pytest-benchmark keeps every run of `pytest benchmarks` (--benchmark-autosave, on in the ini)
under its storage folder, each a JSON file with the machine, the commit and the date. A series
never mixes machines: its key holds the run's hardware fingerprint, and its process backend (a
cell named without a backend is that backend's: a JAX run's `test_train[cpu-bs256-mlp]` is
another series than a TensorFlow run's). Library versions are not in
the key, so an upgrade that slows a cell shows as a change in its series; each point keeps
them, and the history names the versions where they changed.

A point is one saved run, or with `by_commit` one commit's runs on one machine, their median
(a memory peak: their largest): a push on main that runs the suite four times gives one point
that one slow run does not move (asv times each commit in two processes for the same reason).
Runs with uncommitted changes stay a point each: two of them on one commit may hold different
code.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.judge import changepoints
from accelbench.judge import storage as saved
from accelbench.measured import Timed
from accelbench.registry import Registry
from accelbench.results.report.runs import ReportError, Run, load_run
from accelbench.results.summary import CellRecord
from accelbench.units import format_seconds


@dataclass(frozen=True)
class Number:
    """A number a cell records in every run, as a series reads it."""

    name: str
    read: Callable[[CellRecord], float | None]
    higher_is_better: bool
    show: Callable[[float], str]
    # The smallest noise scale its series is given (changepoints.SCALE_FLOOR by default): a host
    # peak that repeats to the byte for runs and then moves by a pymalloc arena has moved by
    # nothing the memory gates care for, so peaks read changes of 2% and less as noise.
    floor: float = changepoints.SCALE_FLOOR
    # One commit's runs as one point (by_commit): their median by default.
    per_commit: Callable[[list[float]], float] = statistics.median
    # Whether that median lightens the number's run-to-run tail, as measured for time per sample
    # (tests/test_changepoints.py): then a series of such medians is searched at the lower
    # changepoints.MEDIANS_PENALTY.
    median_lightens_tail: bool = False


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def _time_per_sample(cell: CellRecord) -> float | None:
    """The fastest of the cell's rounds, per sample: the round least slowed by whatever else the
    machine was doing. Between unchanged runs it moves less than the median of the rounds that the
    summary row shows (docs/measurements.md), and a series needs the quietest number there is."""
    rounds = Timed.of(cell.info).seconds_per_sample
    if not isinstance(rounds, list) or not rounds:
        return None
    return _positive(min(rounds))


def info_number(key: str) -> Callable[[CellRecord], float | None]:
    return lambda cell: _positive(cell.info.get(key))


NUMBERS: Registry[Number] = Registry("number")
NUMBERS.register(
    "time_per_sample", Number("time_per_sample", _time_per_sample, False, format_seconds, median_lightens_tail=True)
)


@dataclass(frozen=True)
class Point:
    value: float
    run: Run  # the first of its runs: its commit, date and libraries
    runs: int = 1  # saved runs it stands for (Number.per_commit)

    @property
    def commit(self) -> str:
        return str(self.run.commit.get("id", ""))[:10] or "no commit"

    @property
    def date(self) -> str:
        return self.run.datetime[:16].replace("T", " ")

    @property
    def software(self) -> str:
        """The versions of its process backend's libraries (its framework and Keras) the run recorded."""
        return self.run.versions(self.run.backend_libraries)


@dataclass
class Series:
    cell: str
    number: Number
    machine: str  # the runs' hardware fingerprint
    backend: str  # their process backend: the Keras backend of the cells named without one
    points: list[Point] = field(default_factory=list)
    unit: str = "run"  # what a point is: a saved "run", or a "commit"'s runs

    @property
    def values(self) -> list[float]:
        return [point.value for point in self.points]

    @property
    def penalty(self) -> float:
        """The change-point penalty its points call for: lower where each is the median of a
        push's several runs and the median lightens this number's tail."""
        runs_per_point = min((point.runs for point in self.points), default=1)
        return changepoints.penalty_for(runs_per_point if self.number.median_lightens_tail else 1)


@dataclass(frozen=True)
class History:
    series: list[Series]
    runs: int  # saved runs read
    unreadable: list[str]  # one line per file that could not be read; the others were
    unit: str  # what a point is: a saved "run", or a "commit"'s runs
    point_count: int  # how many points: runs, or commits (per machine)


def saved_files(storages: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """The JSON files under each storage folder (pytest-benchmark's: one subfolder per
    interpreter, or the files themselves), and one line per path that does not exist."""
    files, missing = [], []
    for storage in storages:
        if storage.is_file():
            files.append(storage)
        elif storage.is_dir():
            files.extend(saved.runs_in(storage))
        else:
            missing.append(f"{storage}: no such file or folder")
    return files, missing


def _commit_groups(runs: Sequence[Run]) -> list[list[Run]]:
    """The runs of each commit on each machine and process backend, in the order of each group's
    first run; a run with uncommitted changes, or with no commit, is a group of its own."""
    groups: dict[object, list[Run]] = {}
    for position, run in enumerate(runs):
        commit = saved.commit_of(run.commit)
        key = (run.fingerprint, run.process_backend, commit) if commit else position
        groups.setdefault(key, []).append(run)
    return list(groups.values())


def read(storages: Sequence[Path], by_commit: bool = False) -> History:
    """Every readable saved run under the storages, as series in the order the runs were made:
    a point per run, or with by_commit per commit and machine (Number.per_commit of its runs)."""
    from accelbench import kinds

    kinds.each("series")  # each kind folder's numbers join NUMBERS (its series.py)
    files, unreadable = saved_files(storages)
    runs = []
    for path in files:
        try:
            runs.append(load_run(path))
        except ReportError as error:
            unreadable.append(f"not read: {error}")
    runs.sort(key=lambda run: run.datetime)
    unit = "commit" if by_commit else "run"
    groups = _commit_groups(runs) if by_commit else [[run] for run in runs]
    by_key: dict[tuple[str, str, str], Series] = {}
    for group in groups:
        values: dict[tuple[str, str], list[float]] = {}
        for run in group:
            for cell in run.cells:
                for number in NUMBERS.values():
                    value = number.read(cell)
                    if value is not None:
                        values.setdefault((cell.name, number.name), []).append(value)
        first = group[0]
        for (cell, name), measured in values.items():
            key = (first.fingerprint, first.process_backend, cell, name)
            series = by_key.setdefault(
                key, Series(cell, NUMBERS[name], first.fingerprint, first.process_backend, unit=unit)
            )
            series.points.append(Point(series.number.per_commit(measured), first, len(measured)))
    return History(list(by_key.values()), len(runs), unreadable, unit, len(groups))
