"""What a run concludes: one Verdict per judged number, decided here and nowhere else.

A verdict names the cell and metric, the measured value, what it was held against (a stored
baseline, a fixed floor, a saved run), the rule and its tolerance, the statistic behind it,
and an outcome:

- pass / fail: judged against a baseline (a stored one, a fixed floor, a saved run's value);
- new: no baseline for this cell yet, though its scope has some (a new cell);
- ungated: nothing to judge against, with the reason (no baselines for this machine's
  fingerprint, naming the nearest recorded one and how it differs; a saved run from
  another machine);
- skipped: deliberately not judged (the cell was skipped, or --memray slowed the timings);
- unknown: an A/B comparison that did not decide within its pairs (comparison.py); a quality
  past its twin's tolerance that too few test images show (analysis.paired); a test that could
  not have failed however large the change (a saved run's comparison on fewer than 7 rounds a
  side, a gate's pairs fewer than 5): never a pass that could not have been a fail;
- reported: shown beside a verdict, never failing: an A/B run's host peak and compile seconds,
  one measurement a side, which the A/B rule's error rates do not cover;
- invalid: MLPerf LoadGen found a serving result INVALID (its reason), or no rate met the
  latency bound: never a number passed as valid; it fails under --serving-rules mlperf.

--require-baselines turns new and ungated into failures, --ab-strict unknown. The terminal's
block is results/verdict_block.py's; baselines are staged here, and written only when asked
(gates.write_staged).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from accelbench.judge import analysis, fingerprint, gated_history
from accelbench.judge.fingerprint import FINGERPRINT_KEY
from accelbench.judge.gates import Gate
from accelbench.judge.rules import (
    MIN_SPREAD_RUNS,
    RUNS_SUFFIX,
    SPREAD_SUFFIX,
    SpreadGrowth,
    detectable_growth,
    regression,
)
from accelbench.measured import Throughput, Timed
from accelbench.units import format_seconds, format_small

PASS, FAIL, NEW, UNGATED, SKIPPED, UNKNOWN = "pass", "fail", "new", "ungated", "skipped", "unknown"
REPORTED, INVALID = "reported", "invalid"
# the order the terminal shows them in: worst first
OUTCOMES = (FAIL, INVALID, UNKNOWN, UNGATED, NEW, SKIPPED, REPORTED, PASS)
# Metrics judged outside a bench's own code: against a compared run, and by pytest-memray.
TIMING = "seconds_per_sample"
AB_TIME = "ab_round_seconds"  # B's round time over A's, interleaved in one run
AB_PEAK = "ab_peak_memory_bytes"  # B's host peak of one round against A's
AB_COMPILE = "ab_compile_seconds"  # B's first (tracing) call against A's
AB_METRICS = (AB_TIME, AB_PEAK, AB_COMPILE)  # what an A/B run judges of a timed cell
AB_PREFIX = "ab_"  # before a gate's metric: B's number under load against A's, by the gate's rule
PRECISION_ACCURACY = "accuracy_against_float32"  # a lower precision's recipe accuracy, against float32's
PEAK_CAP, LEAKS = "peak_memory_cap", "leaked_bytes_per_location"
RECORDED_FROM_RUNS = "recorded_from_runs"  # a new baseline's statistic: the runs its median took (gated_history)
RECORD_HINT = "record with: pytest benchmarks --update-baselines"
# Where no baseline exists for this machine: the one command that records them, for this
# fingerprint only (other machines' entries in the same files are left as they are).
RECORD_HERE = (
    "record this machine's baselines with: pytest benchmarks --update-baselines "
    "(adds or replaces this fingerprint's and backend's entries only; review git diff benchmarks/baselines)"
)
MEMRAY_REASON = "--memray slows TensorFlow down unevenly: judge speed in a run without --memray"


# --- the verdict --------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    cell: str
    metric: str
    outcome: str
    measured: float | None = None
    baseline: float | None = None  # what it is held against: a stored baseline, a floor, a saved run's value
    against: str = ""  # which of those: "baseline", "floor", "saved run of <date> (<commit>)", ...
    tolerance: str = ""
    statistic: tuple[tuple[str, Any], ...] = ()  # (name, value): p-values, pair-ratio ranges
    message: str = ""  # a failure's message, or why a number was not judged

    def as_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "metric": self.metric,
            "outcome": self.outcome,
            "measured": self.measured,
            "baseline": self.baseline,
            "against": self.against,
            "tolerance": self.tolerance,
            "statistic": dict(self.statistic),
            "message": self.message,
        }


@dataclass(frozen=True)
class SavedRun:
    """A run pytest-benchmark loaded for --benchmark-compare."""

    name: str
    machine_info: dict[str, Any]
    cells: dict[str, dict[str, Any]]  # test name with its id -> saved benchmark

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> SavedRun:
        commit = saved.get("commit_info", {}).get("id") or "no commit"
        return cls(
            f"of {saved.get('datetime', 'unknown date')} ({commit[:8]})",
            saved.get("machine_info", {}),
            {bench["name"]: bench for bench in saved.get("benchmarks", [])},
        )

    def machine_differences(self, mine: str) -> list[str]:
        """How this run's machine differs from the one whose hardware fingerprint key is `mine`."""
        theirs = self.machine_info.get(FINGERPRINT_KEY)
        if not theirs:
            return ["it has no fingerprint (saved by an older accelbench)"]
        return fingerprint.Fingerprint.parse(mine).differences(fingerprint.Fingerprint.parse(theirs))


@dataclass
class Verdicts:
    """Every verdict of a run, by cell, and the baselines it stages."""

    update: bool  # --update-baselines: record, do not judge against stored baselines
    require_baselines: bool
    memray_tracking: bool
    timing_threshold: float
    fingerprint: str = ""  # this machine's hardware fingerprint key: saved runs compare only with their own
    process_backend: str = ""  # the pytest process's Keras backend: a saved run's cells named alike are its
    saved_runs: list[SavedRun] = field(default_factory=list)
    by_cell: dict[str, list[Verdict]] = field(default_factory=dict)
    machine_missing: bool = False  # some number was ungated for want of this machine's baselines
    ab_strict: bool = False  # --ab-strict: an unknown A/B verdict fails its cell
    # (cell, metric) -> memory peaks of earlier saved runs of this machine (peak_history), for
    # the spread a memory baseline is recorded with; read only under --update-baselines.
    peak_history: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    # (cell, metric) -> this run's further peaks of the cell, measured in this process under
    # --update-baselines. They steady this run's number (their median), but say nothing of how
    # a peak moves from one process to the next (3.5 MiB in one process, 5.1 MiB in the next,
    # for the mlp's batch-32 step), so they are never counted as runs of a spread.
    repeat_peaks: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    # The numbers earlier saved runs of this commit and machine had judged against stored
    # baselines, for a gate recorded as a median of runs; read only under --update-baselines.
    earlier: gated_history.Earlier = field(default_factory=gated_history.Earlier)

    def add(self, verdict: Verdict) -> Verdict:
        self.by_cell.setdefault(verdict.cell, []).append(verdict)
        return verdict

    def all(self) -> list[Verdict]:
        return [verdict for verdicts in self.by_cell.values() for verdict in verdicts]

    def saved_steps(self, work: str, cell_id: str) -> int | None:
        """Steps per round the compared run timed this work with, so both runs time the same
        work and pytest-benchmark's own comparison of round times means something."""
        saved = self.saved_runs[-1] if self.saved_runs else None
        if saved is None or self._other_setup(saved) is not None:
            return None
        for bench in saved.cells.values():
            info = bench.get("extra_info", {})
            timed, steps = Timed.of(info), Throughput.of(info).steps_per_round
            if timed.work == work and timed.cell == cell_id and steps:
                return int(steps)
        return None

    # --- judging ------------------------------------------------------------------------------
    def against_baseline(
        self, cell: str, gate: Gate, measured: float, ratios: Sequence[float] = (), key: str | None = None
    ) -> Verdict:
        """key: what the baseline is stored under, where it is not the cell's name (a cell named
        with its backend and precision shares the plain cell's baseline when they are the default)."""
        base = dict(cell=cell, metric=gate.metric, measured=float(measured), tolerance=gate.rule.describe())
        stored = key or cell
        if gate.timed and self.memray_tracking:
            return self.add(Verdict(outcome=SKIPPED, message=MEMRAY_REASON, **base))
        if self.update and gate.history:
            return self.add(self._record_median(gate, stored, base))
        if self.update:
            return self.add(Verdict(outcome=NEW, message=self._record(gate, cell, stored, measured), **base))
        baseline = gate.store.get(gate.scope, stored, gate.metric)
        if baseline is None:
            if gate.store.has_scope(gate.scope):
                where = "this machine's fingerprint" if gate.fingerprints else "/".join(gate.scope)
                return self.add(
                    Verdict(
                        outcome=NEW,
                        message=f"no baseline for this cell under {where} in {gate.store.path.name}; {RECORD_HINT}",
                        **base,
                    )
                )
            self.machine_missing = self.machine_missing or bool(gate.fingerprints)
            return self.add(
                Verdict(outcome=UNGATED, message=gate.missing_machine(), **base)
            )  # RECORD_HERE closes the block
        rule = gate.rule_for(stored)
        if not gate.spread:
            return self.judge(base, baseline, "baseline", rule, ratios if gate.significance else ())
        growth = detectable_growth(rule, baseline)
        base["tolerance"] = rule.describe()
        return self.judge(
            base,
            baseline,
            "baseline",
            rule,
            (),
            {"smallest_detectable_growth": growth},
            detail=f"the gate detects growth above {growth:+.0%}" if growth is not None else "",
        )

    def _record(self, gate: Gate, cell: str, stored: str, measured: float) -> str:
        """Stage this run's number as the baseline; a memory peak with its spread over this run
        and the earlier saved runs of this machine (the newest 2 x MIN_SPREAD_RUNS), once there
        are MIN_SPREAD_RUNS of them: runs, each its own process. This run's number is the median
        of its peaks (the body's and its repeats in this process)."""
        if not gate.spread:
            gate.store.stage(gate.scope, stored, gate.metric, measured)
            return "recorded as the new baseline (--update-baselines)"
        this_run = statistics.median([float(measured), *self.repeat_peaks.get((cell, gate.metric), [])])
        runs = [*self.peak_history.get((cell, gate.metric), []), this_run][-MIN_SPREAD_RUNS * 2 :]
        if len(runs) < MIN_SPREAD_RUNS:
            gate.store.stage(gate.scope, stored, gate.metric, round(this_run))
            for suffix in (SPREAD_SUFFIX, RUNS_SUFFIX):
                gate.store.drop(gate.scope, stored, gate.metric + suffix)  # an older spread is not this baseline's
            return (
                f"recorded as the new baseline (--update-baselines); its spread is not measured: "
                f"{len(runs)} run(s) of this machine saved, {MIN_SPREAD_RUNS} needed, so the fixed "
                f"{gate.rule.describe()} holds it"
            )
        baseline, spread = round(statistics.median(runs)), round(max(runs) - min(runs))  # bytes
        gate.store.stage(gate.scope, stored, gate.metric, baseline)
        gate.store.stage(gate.scope, stored, gate.metric + SPREAD_SUFFIX, spread)
        gate.store.stage(gate.scope, stored, gate.metric + RUNS_SUFFIX, len(runs))
        return (
            f"recorded as the new baseline (--update-baselines): the median of {len(runs)} runs, "
            f"held to {SpreadGrowth.of(spread, len(runs), baseline).describe()}"
        )

    def _record_median(self, gate: Gate, stored: str, base: dict) -> Verdict:
        """Stage the median of this run's number and the same commit's earlier runs judged
        against the baseline it replaces (gated_history): one run's number lands wherever the
        machine was at that moment. The verdict counts the runs (RECORDED_FROM_RUNS)."""
        earlier = self.earlier.runs(base["cell"], gate, stored)
        gate.store.stage(gate.scope, stored, gate.metric, statistics.median([*earlier, base["measured"]]))
        message = (
            f"recorded as the new baseline (--update-baselines): the median of this run and {len(earlier)} "
            f"earlier run(s) of commit {str(self.earlier.commit)[:12]} judged against the baseline it replaces"
            if earlier
            else "recorded as the new baseline (--update-baselines): this run's number alone, no earlier run of "
            "this commit having been judged against the baseline it replaces"
        )
        statistic = ((RECORDED_FROM_RUNS, len(earlier) + 1),)
        return Verdict(outcome=NEW, message=message, statistic=statistic, **base)

    def judge(
        self,
        base: dict,
        reference: float,
        against: str,
        rule: Any,
        ratios: Sequence[float],
        statistic: dict[str, Any] | None = None,
        detail: str = "",
    ) -> Verdict:
        """A number (base: cell, metric, measured, tolerance) held by `rule` against `reference`;
        with pair ratios, a shortfall fails only where the pairs agree (Wilcoxon)."""
        message = regression(base["metric"], base["cell"], reference, base["measured"], rule, against)
        statistic = dict(statistic or {})
        if message and detail:  # what the number was derived from, where that is what a reader needs
            message += f": {detail}"
        if ratios:
            statistic.update(
                {"pairs": len(ratios), "pair_ratio_min": round(min(ratios), 4), "pair_ratio_max": round(max(ratios), 4)}
            )
        if ratios and analysis.wilcoxon_floor(len(ratios)) >= 0.05:  # no shortfall could fail: not a pass
            return self.add(
                Verdict(
                    outcome=UNKNOWN,
                    baseline=float(reference),
                    against=against,
                    statistic=tuple(statistic.items()),
                    message=(
                        f"{base['cell']}: {len(ratios)} pairs cannot show a shortfall (Wilcoxon's p >= "
                        f"{format_small(analysis.wilcoxon_floor(len(ratios)), 3)} however far below); at least "
                        f"{analysis.pairs_to_show_a_shortfall()} pairs can"
                    ),
                    **base,
                )
            )
        if message and ratios:
            # A shortfall of one best-of ratio may be noise: it fails only if the pairs agree.
            below, p_value = analysis.significantly_below(ratios, rule.bound(reference))
            statistic["wilcoxon_p"] = round(p_value, 4)
            message = f"{message}, Wilcoxon p = {format_small(p_value, 3)} < 0.05" if below else None
        return self.add(
            Verdict(
                outcome=FAIL if message else PASS,
                baseline=float(reference),
                against=against,
                statistic=tuple(statistic.items()),
                message=message or "",
                **base,
            )
        )

    def timing(self, cell: str, seconds_per_sample: Sequence[float]) -> Verdict | None:
        """The cell's rounds against the run loaded by --benchmark-compare; None without one."""
        if not self.saved_runs:
            return None
        saved = self.saved_runs[-1]
        tolerance = f"{self.timing_threshold:.0%} slower and Mann-Whitney p < 0.05"
        base = dict(
            cell=cell,
            metric=TIMING,
            measured=analysis.typical_fast(seconds_per_sample),
            against=f"saved run {saved.name}",
            tolerance=tolerance,
        )
        reason = self._not_comparable(saved, cell)
        if reason:
            outcome, message = reason
            return self.add(Verdict(outcome=outcome, message=message, **base))
        rounds = Timed.of(saved.cells[cell]["extra_info"]).seconds_per_sample
        found = analysis.shift(rounds, seconds_per_sample, self.timing_threshold)
        statistic = (
            ("ratio", round(found.ratio, 4)),
            ("mann_whitney_p", round(found.p_value, 4)),
            ("rounds", [len(rounds), len(seconds_per_sample)]),
        )
        if not found.could_show:  # a pass here could not have been a fail
            return self.add(
                Verdict(
                    outcome=UNKNOWN,
                    baseline=analysis.typical_fast(rounds),
                    statistic=statistic,
                    message=(
                        f"{cell}: {len(rounds)} saved and {len(seconds_per_sample)} new rounds cannot show a slowdown "
                        f"({found.ratio:.2f}x here): their fast halves' rank test gives p >= "
                        f"{format_small(found.floor, 3)} however slow; at least "
                        f"{analysis.rounds_to_show_a_shift()} rounds a side can (--preset quick times 8)"
                    ),
                    **base,
                )
            )
        message = ""
        if found.slower:
            message = (
                f"timing regression in {cell}: {found.ratio:.2f}x the time per sample of saved run "
                f"{saved.name} ({format_seconds(analysis.typical_fast(rounds))} -> "
                f"{format_seconds(base['measured'])} per sample, fast rounds), tolerance {tolerance} "
                f"(p = {format_small(found.p_value, 3)})"
            )
        return self.add(
            Verdict(
                outcome=FAIL if message else PASS,
                baseline=analysis.typical_fast(rounds),
                statistic=statistic,
                message=message,
                **base,
            )
        )

    def _not_comparable(self, saved: SavedRun, cell: str) -> tuple[str, str] | None:
        if self.memray_tracking or saved.machine_info.get("accelbench_memray_tracking"):
            return SKIPPED, "a run tracked by --memray: " + MEMRAY_REASON
        other = self._other_setup(saved)
        if other is not None:
            return UNGATED, other
        if cell not in saved.cells:
            return NEW, f"saved run {saved.name} has no {cell}"
        if Timed.of(saved.cells[cell].get("extra_info", {})).seconds_per_sample is None:
            return UNGATED, f"saved run {saved.name} has no per-sample rounds for {cell} (saved by an older accelbench)"
        return None

    def _other_setup(self, saved: SavedRun) -> str | None:
        """Why a saved run's cells are not this run's cells of the same names: another machine,
        or another process backend (whose cells carry no backend in their names); None where
        they are."""
        if saved.machine_info.get(FINGERPRINT_KEY) != self.fingerprint:
            differences = saved.machine_differences(self.fingerprint)
            return (
                f"saved run {saved.name} is from another machine ({'; '.join(differences)}): "
                "timings compare only on the same hardware"
            )
        theirs = fingerprint.process_backend_of(saved.machine_info)
        if self.process_backend and theirs != self.process_backend:
            return (
                f"saved run {saved.name} ran on the {theirs} backend, this run on {self.process_backend}: "
                "cells named without a backend are each run's own backend's, and compare only with their own"
            )
        return None

    def failed(self, cell: str, metric: str, message: str) -> Verdict:
        """A measurement that did not come back (a worker that crashed or hung)."""
        return self.add(Verdict(cell=cell, metric=metric, outcome=FAIL, message=message))

    def invalid(self, cell: str, metric: str, message: str, fails: bool) -> Verdict:
        """A LoadGen result that is not a result (INVALID, or no rate under the bound): named, with
        LoadGen's reason; a failure where the run holds to MLPerf's rules (fails)."""
        return self.add(Verdict(cell=cell, metric=metric, outcome=FAIL if fails else INVALID, message=message))

    def skipped(self, cell: str, metrics: Sequence[str], reason: str) -> None:
        for metric in metrics:
            self.add(Verdict(cell=cell, metric=metric, outcome=SKIPPED, message=reason))

    # --- the pytest outcome -------------------------------------------------------------------
    def failures(self, cell: str) -> list[str]:
        """One line per verdict of this cell that fails the test."""
        lines = []
        for verdict in self.by_cell.get(cell, []):
            if verdict.outcome == FAIL:
                lines.append(verdict.message)
            elif self.require_baselines and not self.update and verdict.outcome in (NEW, UNGATED):
                lines.append(f"--require-baselines: {verdict.metric} of {cell} is {verdict.outcome}: {verdict.message}")
            elif self.ab_strict and verdict.outcome == UNKNOWN:
                lines.append(f"--ab-strict: {verdict.metric} of {cell} is unknown: {verdict.message}")
        return lines
