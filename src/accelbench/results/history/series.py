"""Saved runs as series: one per cell, number and machine, oldest run first.

pytest-benchmark keeps every run of `pytest benchmarks` (--benchmark-autosave, on in the ini)
under its storage folder, each a JSON file with the machine, the commit and the date. A series
never mixes machines: its key holds the run's hardware fingerprint. Library versions are not in
the key, so an upgrade that slows a cell shows as a change in its series; each point keeps
them, and the history names the versions where they changed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.judge import changepoints
from accelbench.registry import Registry
from accelbench.results.report.runs import ReportError, Run, load_run
from accelbench.results.summary import CellRecord
from accelbench.units import format_bytes, format_seconds


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


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def _time_per_sample(cell: CellRecord) -> float | None:
    """The median of the cell's rounds, per sample: what its summary row shows."""
    rounds = cell.info.get("seconds_per_sample")
    if not isinstance(rounds, list) or not rounds:
        return None
    return _positive(statistics.median(rounds))


def _info(key: str) -> Callable[[CellRecord], float | None]:
    return lambda cell: _positive(cell.info.get(key))


NUMBERS: Registry[Number] = Registry("number")
NUMBERS.register("time_per_sample", Number("time_per_sample", _time_per_sample, False, format_seconds))
NUMBERS.register("speedup", Number("speedup", _info("speedup"), True, lambda value: f"{value:.2f}x"))
for _peak in ("peak_memory_bytes", "device_peak_memory_bytes"):
    NUMBERS.register(_peak, Number(_peak, _info(_peak), False, format_bytes, floor=0.02))
NUMBERS.register("accuracy", Number("accuracy", _info("accuracy"), True, lambda value: f"{value:.2%}"))
NUMBERS.register("mae", Number("mae", _info("mae"), False, lambda value: f"{value:.4g}"))


@dataclass(frozen=True)
class Point:
    value: float
    run: Run

    @property
    def commit(self) -> str:
        return str(self.run.commit.get("id", ""))[:10] or "no commit"

    @property
    def date(self) -> str:
        return self.run.datetime[:16].replace("T", " ")

    @property
    def software(self) -> str:
        return " ".join(f"{name} {self.run.machine[name]}" for name in ("tensorflow", "keras")
                        if self.run.machine.get(name))


@dataclass
class Series:
    cell: str
    number: Number
    machine: str  # the runs' hardware fingerprint
    points: list[Point] = field(default_factory=list)

    @property
    def values(self) -> list[float]:
        return [point.value for point in self.points]


@dataclass(frozen=True)
class History:
    series: list[Series]
    runs: int  # saved runs read
    unreadable: list[str]  # one line per file that could not be read; the others were


def saved_files(storages: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """The JSON files under each storage folder (pytest-benchmark's: one subfolder per
    interpreter, or the files themselves), and one line per path that does not exist."""
    files, missing = [], []
    for storage in storages:
        if storage.is_file():
            files.append(storage)
        elif storage.is_dir():
            files.extend(sorted(storage.rglob("*.json")))
        else:
            missing.append(f"{storage}: no such file or folder")
    return files, missing


def read(storages: Sequence[Path]) -> History:
    """Every readable saved run under the storages, as series in the order the runs were made."""
    files, unreadable = saved_files(storages)
    runs = []
    for path in files:
        try:
            runs.append(load_run(path))
        except ReportError as error:
            unreadable.append(f"not read: {error}")
    runs.sort(key=lambda run: run.datetime)
    by_key: dict[tuple[str, str, str], Series] = {}
    for run in runs:
        for cell in run.cells:
            for number in NUMBERS.values():
                value = number.read(cell)
                if value is not None:
                    key = (run.fingerprint, cell.name, number.name)
                    by_key.setdefault(key, Series(cell.name, number, run.fingerprint)).points.append(Point(value, run))
    return History(list(by_key.values()), len(runs), unreadable)
