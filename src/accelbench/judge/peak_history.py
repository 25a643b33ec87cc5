"""Memory peaks of earlier runs of this machine, read from pytest-benchmark's saved runs.

A memory baseline is recorded with the spread of its cell's peak over unchanged runs, and its
gate allows that spread, not one constant for every cell (verdicts.SpreadGrowth). --update-
baselines takes the spread from the runs pytest-benchmark already saved (--benchmark-autosave,
on in this repository's ini): each is a JSON file whose accelbench section holds every memory
cell's peaks. Only runs of this hardware and software fingerprint count: peaks move with both.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from accelbench.judge.storage import read_runs_of, runs_in

MEMORY_METRICS = ("peak_memory_bytes", "device_peak_memory_bytes")
MOST_RUNS = 20  # the newest saved runs read: a spread of today's code, not of last year's


def saved_files(storage: Path) -> list[Path]:
    """pytest-benchmark's saved runs under a storage folder (one subfolder a machine id), oldest first."""
    return sorted(runs_in(storage), key=lambda path: path.name)[-MOST_RUNS:] if storage.is_dir() else []


def peaks(files: Iterable[Path], hardware: str, software: str) -> tuple[dict[tuple[str, str], list[float]], list[str]]:
    """(cell name, metric) -> the peaks saved runs of this hardware and software recorded, and
    one line for each file that could not be read (the others are still read)."""
    found: dict[tuple[str, str], list[float]] = {}

    def read(saved: dict[str, Any]) -> None:
        cells = [*saved.get("benchmarks", []), *saved.get("accelbench", {}).get("untimed_cells", [])]
        for cell in cells:
            for metric in MEMORY_METRICS:
                value = cell.get("extra_info", {}).get(metric)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    found.setdefault((cell["name"], metric), []).append(float(value))

    return found, read_runs_of(files, hardware, software, "for memory spreads", read)
