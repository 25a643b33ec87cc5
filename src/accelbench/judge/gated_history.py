"""Gated numbers of earlier runs of the same commit, read from pytest-benchmark's saved runs.

A number measured under load (a token cell's TTFT, TPOT, peak rate, Offline tokens/s) moves
with the machine's moment: 20 unchanged runs of one JAX Server cell on a 2-vCPU EPYC read TPOT
0.29-0.62 ms, and a baseline recorded in one run lands wherever that run fell. Recorded at the
slow end (0.553 ms) it let a 2x slower decode step pass in 3 of 4 runs; at the fast end a
TensorFlow one failed 11 of 20 unchanged runs (docs/measurements.md). Such a gate (GateSpec
history=True) records, under --update-baselines, the median of this run's number and those of
the earlier runs of the same commit that were judged against the baseline it replaces:
unchanged code, each run its own process, at the same fixed rate (which the token cells keep
where such runs exist). A dirty tree's runs are not counted: their code is not the commit's.
Runs one after another share the machine's moment too: six in two minutes all fell in one slow
stretch and gave a baseline at the slow end all the same. Six 90 s apart gave one that 1 of 20
unchanged runs failed, where the first of them alone would have failed 10.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.judge.gates import Gate
from accelbench.judge.storage import commit_of, read_runs_of

MOST_EARLIER_RUNS = 9  # with this run's, a median of at most 10: today's runs of this commit


@dataclass(frozen=True)
class Judged:
    """One saved run's number of a cell, and the stored baseline it was judged against."""

    measured: float
    baseline: float


@dataclass
class Earlier:
    """This commit's earlier saved runs, as judged (`judged`), read under --update-baselines."""

    commit: str | None = None
    judged: dict[tuple[str, str], list[Judged]] = field(default_factory=dict)

    def runs(self, cell: str, gate: Gate, stored: str) -> list[float]:
        """The cell's numbers that were judged against its stored baseline (against); none for a
        gate without history, or with no baseline stored."""
        if not gate.history:
            return []
        return against(self.judged.get((cell, gate.metric), []), gate.store.get(gate.scope, stored, gate.metric))


def judged(
    files: Iterable[Path], hardware: str, software: str, commit: str | None
) -> tuple[dict[tuple[str, str], list[Judged]], list[str]]:
    """(cell name, metric) -> the numbers saved runs of this commit, hardware and software had
    judged against a stored baseline, oldest first; and one line for each file that could not
    be read (the others are still read). Nothing without a commit."""
    found: dict[tuple[str, str], list[Judged]] = {}
    if commit is None:
        return found, []

    def read(saved: dict[str, Any]) -> None:
        if commit_of(saved.get("commit_info") or {}) != commit:
            return
        for verdict in saved.get("accelbench", {}).get("verdicts", []):
            measured, baseline = verdict.get("measured"), verdict.get("baseline")
            if verdict.get("against") == "baseline" and _number(measured) and _number(baseline):
                found.setdefault((verdict["cell"], verdict["metric"]), []).append(
                    Judged(float(measured), float(baseline))
                )

    return found, read_runs_of(files, hardware, software, "for earlier runs of this commit", read)


def against(runs: list[Judged], baseline: float | None) -> list[float]:
    """The newest MOST_EARLIER_RUNS numbers judged against `baseline`: the runs whose median
    may replace it."""
    if baseline is None:
        return []
    same = [run.measured for run in runs if math.isclose(run.baseline, baseline, rel_tol=1e-9)]
    return same[-MOST_EARLIER_RUNS:]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
