"""Two environments, one run: a cell's rounds timed in worker A and worker B, interleaved.

A is this interpreter with this environment, or with --ab-ref the project at a git ref (a
worktree, worktree.py), and B is `--ab-python` and/or `--ab-env`, or the working tree. Both run
in worker processes of their own (workers.py), started once and reused across cells, so
neither side has the pytest process's state (memray, the other cells' models) and both
start alike. B builds the cell's work with A's steps per round, and the two then take turns
round by round in a seeded random A B B A order until the statistics decide (comparison.py).

Only the timed rounds take turns. What is not timed side against side runs in both workers at
once: their start, each cell's build and warm-up, the memray peak of one round (bytes, which
the other process's load does not change). Compile seconds are therefore measured with both
sides compiling together, alike.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.environments import Environment
from accelbench.judge import comparison
from accelbench.processes.protocol import CellSpec, Cellwork, Described, Prepared, RunFields
from accelbench.processes.workers import WorkerFailed, WorkerPool
from accelbench.processes.worktree import Worktree

A_ENVIRONMENT = Environment("A")


@dataclass(frozen=True)
class Setup:
    """What the options ask of an A/B run; None of it given means no A/B."""

    b: Environment
    min_effect: float
    strict: bool  # unknown fails the cell
    seed: int
    deadline_s: float  # of one call to a worker (a build, a round)
    confirmations: int = comparison.CONFIRMATIONS  # fresh pairs of processes a fail must repeat in
    ref: str | None = None  # --ab-ref: A is the project at this git ref (a worktree), B the working tree
    repository: str = "."  # a folder inside the project's git repository (pytest's rootdir)

    @classmethod
    def from_options(
        cls,
        python: str | None,
        variables: tuple[tuple[str, str], ...] | None,
        min_effect: float,
        strict: bool,
        seed: int,
        deadline_s: float,
        ref: str | None = None,
        repository: str = ".",
    ) -> Setup | None:
        if python is None and variables is None and ref is None:
            return None
        return cls(
            Environment("B", python or sys.executable, variables or ()),
            min_effect,
            strict,
            seed,
            deadline_s,
            ref=ref,
            repository=repository,
        )


@dataclass(frozen=True)
class Rounds:
    """A cell's interleaved rounds, what each side said while building, and the host peak of
    one round on each side (memray, inside the worker)."""

    a_seconds: list[float]
    b_seconds: list[float]
    a_build: Prepared
    b_build: Prepared
    verdict: comparison.Comparison
    a_peak: int
    b_peak: int
    # the work's own numbers on each side (work.builders.its_own: a user's kind's size or count)
    a_own: dict[str, Any] = field(default_factory=dict)
    b_own: dict[str, Any] = field(default_factory=dict)


@dataclass
class ABRun:
    setup: Setup
    run_fields: RunFields  # what a worker needs to build a cell as this run does
    cells_judged: int = 1
    workers: WorkerPool = field(default_factory=WorkerPool)
    described: dict[str, Described] = field(default_factory=dict)
    worktree: Worktree | None = None  # --ab-ref: where A imports the project from

    def __post_init__(self) -> None:
        if self.setup.ref is not None:  # raises WorktreeError in one line: no repository, no such ref
            self.worktree = Worktree.checkout(self.setup.ref, Path(self.setup.repository))

    @property
    def environments(self) -> dict[str, Environment]:
        a = self.worktree.environment("A") if self.worktree else A_ENVIRONMENT
        return {"A": a, "B": self.setup.b}

    def call(self, side: str, call: Cellwork, **kwargs: Any) -> Any:
        return call.reply(self.workers.call(self.environments[side], call.target, self.setup.deadline_s, **kwargs))

    def call_both(self, call: Cellwork, **kwargs: Any) -> dict[str, Any]:
        """The same call in A and B at once: for what is not timed side against side (a start,
        a build, a memory peak), so that an A/B run does not pay for it twice over."""
        results = self.workers.call_each(list(self.environments.values()), call.target, self.setup.deadline_s, **kwargs)
        return dict(zip(self.environments, map(call.reply, results)))

    def describe(self) -> dict[str, Described]:
        """Each side's library versions and fingerprint, asked once (both workers start here)."""
        if not self.described:
            self.described.update(self.call_both(Cellwork.DESCRIBE))
        return self.described

    def plan(self, first: int, step: int, most: int) -> comparison.Plan:
        return comparison.Plan(self.setup.min_effect, first, step, most, self.cells_judged)

    def compare(
        self, work_name: str, cell: Any, plan: comparison.Plan, say: Callable[[str], None], steps: int
    ) -> Rounds:
        """Build the cell's work on both sides at `steps` per round (the pytest process's
        calibration), then interleave single rounds until a look decides; a fail is confirmed
        in fresh processes."""
        spec = CellSpec.of(work_name, cell, self.run_fields)
        key, fields = spec.key, dict(spec=spec.to_wire(), steps=steps)
        try:
            say("A/B: building in A and B")
            builds = self.call_both(Cellwork.PREPARE, **fields)
            seconds: dict[str, list[float]] = {"A": [], "B": []}
            orders = comparison.order(plan.most, self.setup.seed + zlib.crc32(key.encode()))
            found, ratios = comparison.looks(lambda n: self._pairs(key, orders, n, seconds, say), plan)
            found = comparison.confirmed(
                found,
                ratios,
                lambda: self._fresh(key, plan, seconds, fields, say),
                plan.min_effect,
                self.setup.confirmations,
            )
            say("A/B: host peak of one round in A and in B (memray)")
            peaks = self.call_both(Cellwork.PEAK, key=key)  # bytes, not seconds: both at once
            own = self.call_both(Cellwork.ITS_OWN, key=key)
            return Rounds(
                seconds["A"], seconds["B"], builds["A"], builds["B"], found, peaks["A"], peaks["B"], own["A"], own["B"]
            )
        finally:
            self._forget(key)

    def compile_again(self, work_name: str, cell: Any, steps: int) -> dict[str, float]:
        """Each side's compile seconds measured once more, one side at a time (a fresh build of
        the cell's model). Both sides build at once (call_both), and on a loaded machine the two
        compiles can slow each other unevenly: a compile that looked slower in B is measured again
        before it is judged."""
        spec = CellSpec.of(work_name, cell, self.run_fields, tag="compile again")
        try:
            return {
                side: self.call(side, Cellwork.PREPARE, spec=spec.to_wire(), steps=steps).compile_seconds
                for side in self.environments
            }
        finally:
            self._forget(spec.key)

    def _pairs(
        self,
        key: str,
        orders: list[tuple[str, str]],
        n: int,
        seconds: dict[str, list[float]],
        say: Callable[[str], None],
    ) -> list[float]:
        """Time pairs of rounds in their orders until there are n; the ratios of all n."""
        say(f"A/B: {n} pairs of rounds")
        for pair in orders[len(seconds["A"]) : n]:
            for side in pair:
                seconds[side].append(self.call(side, Cellwork.ONE_ROUND, key=key))
        return comparison.ratios(seconds["A"], seconds["B"])

    def _fresh(
        self,
        key: str,
        plan: comparison.Plan,
        seconds: dict[str, list[float]],
        fields: dict[str, Any],
        say: Callable[[str], None],
    ) -> list[float]:
        """Pairs of rounds in fresh processes of A and B (the cell built again, with the same
        steps), up to `most` (comparison.fresh_pairs); their ratios, and their seconds added to
        the cell's."""
        for environment in self.environments.values():
            self.workers.get(environment).stop()
        say("A/B: B slower: building again in fresh processes of A and B, to confirm")
        self.call_both(Cellwork.PREPARE, **fields)
        again: dict[str, list[float]] = {"A": [], "B": []}
        orders = comparison.order(plan.most, self.setup.seed + len(seconds["A"]) + zlib.crc32(key.encode()))
        ratios = comparison.fresh_pairs(lambda n: self._pairs(key, orders, n, again, say), plan)
        for side in self.environments:
            seconds[side] += again[side]
        return ratios

    def _forget(self, key: str) -> None:
        running = [
            environment
            for environment in self.environments.values()
            if self.workers.get(environment).process is not None
        ]  # not one that died or was killed
        try:
            self.workers.call_each(running, Cellwork.FORGET.target, self.setup.deadline_s, key=key)
        except WorkerFailed:  # the cell's own failure is the one to report
            pass

    def end(self) -> None:
        self.workers.end()
        if self.worktree is not None:
            self.worktree.remove()
