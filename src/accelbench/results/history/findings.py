"""What the history says of each series: its changes of level (judge.changepoints), which of
them are regressions, and why a series was not searched."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.judge import changepoints
from accelbench.judge.changepoints import Change
from accelbench.results.history.series import History, Point, Series


@dataclass(frozen=True)
class Finding:
    series: Series
    changes: tuple[Change, ...]
    too_short: bool  # fewer runs than changepoints.MIN_RUNS: not searched

    def is_regression(self, change: Change) -> bool:
        """A change the worse way: slower, bigger, less accurate, a larger error."""
        return change.ratio < 1.0 if self.series.number.higher_is_better else change.ratio > 1.0

    def first_point(self, change: Change) -> Point:
        return self.series.points[change.index]

    def recent(self, change: Change, runs: int) -> bool:
        """Whether the change's first run is among the series' last `runs`."""
        return change.index >= len(self.series.points) - runs

    def describe(self, change: Change) -> str:
        number, point = self.series.number, self.first_point(change)
        low, high = change.interval
        software = self.series.points[change.index - 1].software
        moved = f"; libraries {software} -> {point.software}" if point.software != software else ""
        runs = f", {point.runs} runs" if point.runs > 1 else ""
        shown = (
            ""
            if change.confirmed
            else (
                f"; not yet confirmed: {change.runs_after} of the "
                f"{changepoints.MIN_SEGMENT} {self.series.unit}s it needs show it"
            )
        )
        return (
            f"{self.series.cell} {number.name}: {number.show(change.before)} -> {number.show(change.after)} "
            f"({change.ratio:.3g}x [95% {low:.3g}, {high:.3g}]) from {self.series.unit} {change.index + 1} of "
            f"{len(self.series.points)} (commit {point.commit}{runs}, {point.date}{moved}), "
            f"{'a regression' if self.is_regression(change) else 'an improvement'}{shown}"
        )


def find(history: History) -> list[Finding]:
    found = []
    for series in history.series:
        too_short = len(series.points) < changepoints.MIN_RUNS
        changes = (
            () if too_short else tuple(changepoints.find(series.values, series.penalty, floor=series.number.floor))
        )
        found.append(Finding(series, changes, too_short))
    return found


def new_regressions(findings: list[Finding]) -> list[tuple[Finding, Change]]:
    """Regressions the latest run confirmed: none like it (the same way, within MIN_SEGMENT runs
    of it) is confirmed in the series without its last run. What a push on main fails on: the
    push that completes the evidence (the MIN_SEGMENT-th run of the new level), once, naming the
    run where it started; later pushes do not fail again."""
    new = []
    for finding in findings:
        regressions = [change for change in finding.changes if finding.is_regression(change) and change.confirmed]
        if not regressions:
            continue
        series = finding.series
        before = [
            change
            for change in changepoints.find(series.values[:-1], series.penalty, floor=series.number.floor)
            if finding.is_regression(change) and change.confirmed
        ]
        new += [
            (finding, change)
            for change in regressions
            if not any(abs(earlier.index - change.index) <= changepoints.MIN_SEGMENT for earlier in before)
        ]
    return new
