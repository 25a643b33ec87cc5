"""Saved runs as the report reads them: pytest-benchmark JSON files, or a storage folder of them.

Every file is checked before anything is drawn, so a bad input is one clear line.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from accelbench.axes.backends import BACKENDS
from accelbench.judge import storage
from accelbench.judge.fingerprint import FINGERPRINT_KEY, process_backend_of
from accelbench.measured import CELL_KEY, ROOFS_KEY, SCHEMA_VERSION, Roof
from accelbench.results.summary import CellRecord, Section

# The summary tables as this version laid out every run before runs saved their own (schema 0):
# a run of that layout is read with them. Frozen: tables a kind declares now travel in the run.
SCHEMA_0_SECTIONS = tuple(
    Section.from_json(saved)
    for saved in json.loads((Path(__file__).parent / "schema0_sections.json").read_text(encoding="utf-8"))
)


class ReportError(Exception):
    """An input the report cannot use; its message names the file and what is wrong."""


@dataclass(frozen=True)
class Run:
    path: Path
    tag: str  # its name (names()): a run's column and series in every table and plot
    machine: dict[str, Any]
    commit: dict[str, Any]
    datetime: str
    cells: tuple[CellRecord, ...]  # timed and untimed, in the order the run ran them
    timed: dict[str, dict[str, Any]]  # pytest-benchmark's stats by cell name
    verdicts: tuple[dict[str, Any], ...]
    projections: tuple[dict[str, Any], ...]
    sections: tuple[Section, ...] = ()  # the summary's tables as the run saved them (or as schema 0 had them)
    # the report's plots its kinds draw, by name; None: saved before runs named them
    plots: tuple[str, ...] | None = None
    roofs: tuple[Roof, ...] = ()  # the devices' measured roofs (none before runs saved them)

    @property
    def label(self) -> str:
        """Library versions, its process backend's first (`jax 0.10.2 jaxlib 0.10.2 keras 3.15.1 …`:
        which backend it ran), and date: what tells runs of one machine apart (the machine is
        `fingerprint`)."""
        versions = self.versions((*self.backend_libraries, "scikit-learn"))
        return f"{versions} · {self.datetime[:16].replace('T', ' ')}"

    @property
    def backend_libraries(self) -> tuple[str, ...]:
        """The distributions of its process backend (its framework and Keras)."""
        backend = BACKENDS.get(self.process_backend)
        return backend.packages if backend is not None else (self.process_backend, "keras")

    def versions(self, names: Sequence[str]) -> str:
        """'tensorflow 2.21.0 keras 3.15.1': the versions of those it recorded."""
        return " ".join(f"{name} {self.machine[name]}" for name in names if self.machine.get(name))

    @property
    def machine_label(self) -> str:
        """The machine in a few words: the CPU, its count and ISA, and its accelerators from the
        fingerprint (the whole fingerprint is the Machines table's and the label's hover)."""
        facts = self.fingerprint_facts
        if not facts:
            return self.fingerprint
        label = f"{facts.get('cpu', '?')} {facts.get('cpus', '?')}c {facts.get('isa', '')}".strip()
        accelerators = facts.get("accelerators", "none")
        return label if accelerators == "none" else f"{label} + {accelerators}"

    @property
    def fingerprint_facts(self) -> dict[str, str]:
        """The fingerprint's fields by name (cpu, isa, accelerators, ...); {} for a machine class."""
        return dict(part.split("=", 1) for part in self.fingerprint.split("; ") if "=" in part)

    @property
    def commit_date(self) -> str:
        """The commit (+ where the tree had uncommitted changes) and the run's date to the minute."""
        given = str(self.commit.get("id") or "")
        # pytest-benchmark saves id "unversioned" outside a git or hg checkout: not a hash to shorten
        commit = "no commit" if given in ("", "unversioned") else given[:7]
        return f"{commit}{'+' if self.commit.get('dirty') else ''} {self.datetime[5:16].replace('T', ' ')}".strip()

    @property
    def fingerprint(self) -> str:
        """The machine as baselines key it (cpu, caches, ISA, accelerators); a run saved before
        fingerprints has only its machine class."""
        return str(self.machine.get(FINGERPRINT_KEY) or self.machine.get("accelbench_machine_class", "unknown machine"))

    @property
    def process_backend(self) -> str:
        """The Keras backend of its cells named without one."""
        return process_backend_of(self.machine)

    def cells_of(self, *benchmarks: str) -> list[CellRecord]:
        return [cell for cell in self.cells if cell.benchmark in benchmarks]


def run_files(paths: Sequence[str | Path]) -> list[Path]:
    """The JSON files named, with a folder (pytest-benchmark's storage) standing for every
    run under it, oldest first as pytest-benchmark numbers them."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = storage.runs_in(path)
            if not found:
                raise ReportError(f"{path}: a folder with no .json runs in it")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise ReportError(f"{path}: no such file or folder")
    return files


MOST_RUNS = 26  # a column per run in every table: more than this no page holds


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    files = run_files(paths)
    if len(files) > MOST_RUNS:
        raise ReportError(f"{len(files)} runs given; the report compares at most {MOST_RUNS}")
    runs = [load_run(path) for path in files]
    return [replace(run, tag=name) for run, name in zip(runs, names(runs))]


def names(runs: Sequence[Run]) -> list[str]:
    """Each run's name as a reader tells runs apart: its commit and date, with the machine's
    label where the runs are of more than one machine and the process backend where of more than
    one backend (their cells of the same names are each backend's); a name two runs share gets
    (2), (3)."""
    several_machines = len({run.fingerprint for run in runs}) > 1
    several_backends = len({run.process_backend for run in runs}) > 1
    plain = [
        " ".join(
            [
                run.commit_date,
                *([run.machine_label] if several_machines else []),
                *([run.process_backend] if several_backends else []),
            ]
        )
        for run in runs
    ]
    seen: Counter[str] = Counter()
    named = []
    for name in plain:
        seen[name] += 1
        named.append(name if plain.count(name) == 1 else f"{name} ({seen[name]})")
    return named


def load_run(path: Path, tag: str = "") -> Run:
    document = _read_json(path)
    if not (
        isinstance(document, dict)
        and isinstance(document.get("benchmarks"), list)
        and isinstance(document.get("machine_info"), dict)
    ):
        raise ReportError(
            f"{path}: not a pytest-benchmark run (no 'benchmarks' list and 'machine_info'); "
            f"save one with: pytest benchmarks --benchmark-json=run.json"
        )
    accelbench = document.get("accelbench") or {}
    schema = accelbench.get("schema", 0)
    if not isinstance(schema, int) or schema > SCHEMA_VERSION:
        raise ReportError(
            f"{path}: saved by a newer accelbench (schema {schema}); this one reads up to {SCHEMA_VERSION}: "
            "upgrade accelbench to read it"
        )
    named = [(b.get("name", "?"), b.get("extra_info") or {}) for b in document["benchmarks"]]
    named += [(u.get("name", "?"), u.get("extra_info") or {}) for u in accelbench.get("untimed_cells", ())]
    cells = tuple(record for record in (CellRecord.from_extra_info(n, info) for n, info in named) if record)
    if not cells:
        raise ReportError(
            f"{path}: a pytest-benchmark run with no accelbench cells (none of its "
            f"{len(document['benchmarks'])} benchmarks has the '{CELL_KEY}' record that "
            f"`pytest benchmarks` of this accelbench version saves)"
        )
    try:
        saved_sections = accelbench.get("sections")
        sections = SCHEMA_0_SECTIONS if saved_sections is None else tuple(map(Section.from_json, saved_sections))
    except (TypeError, ValueError) as error:
        raise ReportError(f"{path}: its accelbench.sections cannot be read ({error!r})") from None
    try:
        roofs = tuple(Roof.from_json(saved) for saved in accelbench.get(ROOFS_KEY, ()))
    except (KeyError, TypeError, ValueError) as error:
        raise ReportError(f"{path}: its accelbench.{ROOFS_KEY} cannot be read ({error!r})") from None
    plots = accelbench.get("plots")
    if plots is not None and not (isinstance(plots, list) and all(isinstance(name, str) for name in plots)):
        raise ReportError(f"{path}: its accelbench.plots is not a list of plot names")
    return Run(
        sections=sections,
        plots=tuple(plots) if plots is not None else None,
        roofs=roofs,
        path=path,
        tag=tag or path.stem,
        machine=document["machine_info"],
        commit=document.get("commit_info") or {},
        datetime=str(document.get("datetime", "")),
        cells=cells,
        timed={b["name"]: b.get("stats") or {} for b in document["benchmarks"] if "name" in b},
        verdicts=tuple(accelbench.get("verdicts", ())),
        projections=tuple(accelbench.get("projections", ())),
    )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}: not JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReportError(f"{path}: cannot be read ({error})") from None


def sections_of(runs: Iterable[Run]) -> list[Section]:
    """The tables to lay the runs out in: every section the runs saved, in order, the first of a
    title kept."""
    found: dict[str, Section] = {}
    for run in runs:
        for section in run.sections:
            found.setdefault(section.title, section)
    return list(found.values())


def tagged_cells(runs: Iterable[Run]) -> list[tuple[str, list[CellRecord]]]:
    """(tag, cells) per run: what summary.tables compares."""
    return [(run.tag, list(run.cells)) for run in runs]
