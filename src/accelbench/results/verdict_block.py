"""The terminal's verdict block: failures first, each naming its cell, baseline, measured value
and tolerance; then what was not judged and why (verdicts that share a reason share a line);
then the counts."""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.judge.verdicts import (
    FAIL,
    INVALID,
    NEW,
    OUTCOMES,
    RECORD_HERE,
    RECORD_HINT,
    RECORDED_FROM_RUNS,
    REPORTED,
    SKIPPED,
    UNGATED,
    UNKNOWN,
    Verdict,
    Verdicts,
)


def lines(verdicts: Verdicts) -> list[str]:
    """Failures first, then what was not judged and why, then counts of the rest."""
    judged = verdicts.all()
    lines = [f"{FAIL.upper():8} {v.message}" for v in judged if v.outcome == FAIL]  # a failure names its cell
    for outcome in (INVALID, UNKNOWN) if verdicts.update else (INVALID, UNKNOWN, UNGATED, NEW):
        lines += _grouped(outcome, [v for v in judged if v.outcome == outcome])
    unjudged = sum(v.outcome in (UNGATED, NEW) for v in judged)
    if verdicts.update:
        runs = [dict(v.statistic).get(RECORDED_FROM_RUNS, 1) for v in judged if v.outcome == NEW]
        medians = [n for n in runs if n > 1]
        of_runs = f"; {len(medians)} of them the median of {_span(medians)} runs of this commit" if medians else ""
        lines.append(f"{unjudged} value(s) recorded as new baselines (--update-baselines){of_runs}")
    elif unjudged:
        consequence = (
            "failed (--require-baselines)"
            if verdicts.require_baselines
            else "not judged: pass --require-baselines to fail them"
        )
        lines.append(f"{unjudged} gated number(s) had nothing to be judged against: {consequence}")
        if verdicts.machine_missing:
            backend = f", process backend {verdicts.process_backend}" if verdicts.process_backend else ""
            lines += [f"this machine: {verdicts.fingerprint}{backend}", RECORD_HERE]
        else:
            lines.append(RECORD_HINT)
    reasons: dict[str, int] = {}
    for verdict in (v for v in judged if v.outcome == SKIPPED):
        reasons[verdict.message] = reasons.get(verdict.message, 0) + 1
    lines += [f"skipped  {count} verdict(s): {reason}" for reason, count in reasons.items()]
    counts = {o: sum(v.outcome == o for v in judged) for o in OUTCOMES}
    shown = [o for o in OUTCOMES if o not in (UNKNOWN, REPORTED, INVALID) or counts[o]]  # from A/B and serving runs
    lines.append("verdicts: " + ", ".join(f"{counts[o]} {o}" for o in shown))
    return lines


def _span(counts: Sequence[int]) -> str:
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{low}-{high}"


def _grouped(outcome: str, verdicts: Sequence[Verdict]) -> list[str]:
    """One line per verdict; verdicts that share a reason (a new machine: every speedup and
    peak) share one line that gives it, followed by their cells."""
    by_reason: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        by_reason.setdefault(verdict.message, []).append(verdict)
    lines = []
    for reason, group in by_reason.items():
        if len(group) == 1:
            lines.append(f"{outcome.upper():8} {group[0].cell} {group[0].metric}: {reason}")
        else:
            lines.append(f"{outcome.upper():8} {len(group)} numbers: {reason}")
            lines += [f"{'':8}   {v.cell} {v.metric}" for v in group]
    return lines
