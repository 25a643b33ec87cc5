"""Saved runs as the report reads them: pytest-benchmark JSON files, or a storage folder of them.

Every file is checked before anything is drawn, so a bad input is one clear line.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.judge.fingerprint import FINGERPRINT_KEY
from accelbench.results.summary import CELL_KEY, CellRecord


class ReportError(Exception):
    """An input the report cannot use; its message names the file and what is wrong."""


@dataclass(frozen=True)
class Run:
    path: Path
    tag: str  # A, B, ...: a run's column and series in every table and plot
    machine: dict[str, Any]
    commit: dict[str, Any]
    datetime: str
    cells: tuple[CellRecord, ...]  # timed and untimed, in the order the run ran them
    timed: dict[str, dict[str, Any]]  # pytest-benchmark's stats by cell name
    verdicts: tuple[dict[str, Any], ...]
    projections: tuple[dict[str, Any], ...]

    @property
    def label(self) -> str:
        """Library versions and date: what tells runs of one machine apart (the machine is
        `fingerprint`)."""
        versions = " ".join(f"{name} {self.machine[name]}" for name in ("tensorflow", "keras", "scikit-learn")
                            if self.machine.get(name))
        return f"{versions} · {self.datetime[:16].replace('T', ' ')}"

    @property
    def fingerprint(self) -> str:
        """The machine as baselines key it (cpu, caches, ISA, accelerators); a run saved before
        fingerprints has only its machine class."""
        return str(self.machine.get(FINGERPRINT_KEY) or self.machine.get("accelbench_machine_class", "unknown machine"))

    def cells_of(self, *benchmarks: str) -> list[CellRecord]:
        return [cell for cell in self.cells if cell.benchmark in benchmarks]


def run_files(paths: Sequence[str | Path]) -> list[Path]:
    """The JSON files named, with a folder (pytest-benchmark's storage) standing for every
    run under it, oldest first as pytest-benchmark numbers them."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(path.rglob("*.json"))
            if not found:
                raise ReportError(f"{path}: a folder with no .json runs in it")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise ReportError(f"{path}: no such file or folder")
    return files


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    files = run_files(paths)
    if len(files) > len(string.ascii_uppercase):
        raise ReportError(f"{len(files)} runs given; the report compares at most {len(string.ascii_uppercase)}")
    return [load_run(path, tag) for path, tag in zip(files, string.ascii_uppercase)]


def load_run(path: Path, tag: str = "A") -> Run:
    document = _read_json(path)
    if not (isinstance(document, dict) and isinstance(document.get("benchmarks"), list)
            and isinstance(document.get("machine_info"), dict)):
        raise ReportError(f"{path}: not a pytest-benchmark run (no 'benchmarks' list and 'machine_info'); "
                          f"save one with: pytest benchmarks --benchmark-json=run.json")
    accelbench = document.get("accelbench") or {}
    named = [(b.get("name", "?"), b.get("extra_info") or {}) for b in document["benchmarks"]]
    named += [(u.get("name", "?"), u.get("extra_info") or {}) for u in accelbench.get("untimed_cells", ())]
    cells = tuple(record for record in (CellRecord.from_extra_info(n, info) for n, info in named) if record)
    if not cells:
        raise ReportError(f"{path}: a pytest-benchmark run with no accelbench cells (none of its "
                          f"{len(document['benchmarks'])} benchmarks has the '{CELL_KEY}' record that "
                          f"`pytest benchmarks` of this accelbench version saves)")
    return Run(path=path, tag=tag, machine=document["machine_info"], commit=document.get("commit_info") or {},
               datetime=str(document.get("datetime", "")), cells=cells,
               timed={b["name"]: b.get("stats") or {} for b in document["benchmarks"] if "name" in b},
               verdicts=tuple(accelbench.get("verdicts", ())), projections=tuple(accelbench.get("projections", ())))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}: not JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReportError(f"{path}: cannot be read ({error})") from None


def tagged_cells(runs: Iterable[Run]) -> list[tuple[str, list[CellRecord]]]:
    """(tag, cells) per run: what summary.tables compares."""
    return [(run.tag, list(run.cells)) for run in runs]
