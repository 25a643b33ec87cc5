"""The history as a person reads it: lines for the terminal, a Markdown list of the last runs'
changes (a pull-request or job-summary comment), and an HTML page of trend plots."""

from __future__ import annotations

import html
from collections.abc import Sequence

from accelbench.judge import changepoints
from accelbench.results.history.findings import Finding
from accelbench.results.history.series import History
from accelbench.results.report import page
from accelbench.results.report.plots import Plot


def _machines(findings: Sequence[Finding]) -> list[str]:
    return sorted({finding.series.machine for finding in findings})


def _setups(findings: Sequence[Finding]) -> list[str]:
    """Each machine with each process backend its runs had: what the series are of."""
    pairs = sorted({(finding.series.machine, finding.series.backend) for finding in findings})
    return [f"{machine}, process backend {backend}" for machine, backend in pairs]


def _on(findings: Sequence[Finding]) -> str:
    backends = {finding.series.backend for finding in findings}
    machines = f"{len(_machines(findings))} machine(s)"
    return machines if len(backends) < 2 else f"{machines} and {len(backends)} process backends"


def _points(history: History) -> str:
    """How the saved runs became points, where a point is not one run."""
    return f" as {history.point_count} point(s), one per commit and machine" if history.unit == "commit" else ""


def lines(history: History, findings: Sequence[Finding]) -> list[str]:
    """The terminal's account: every change, then the series too short to search, in one line each."""
    out = [
        f"accelbench history: {history.runs} saved run(s){_points(history)}, {len(findings)} series on {_on(findings)}"
    ]
    out += [f"unreadable  {problem}" for problem in history.unreadable]
    changed = [(finding, change) for finding in findings for change in finding.changes]
    for finding, change in changed:
        out.append(f"{'REGRESSION' if finding.is_regression(change) else 'change':<11} {finding.describe(change)}")
    short = [finding for finding in findings if finding.too_short]
    if short:
        runs = sorted({len(finding.series.points) for finding in short})
        out.append(
            f"not enough history: {len(short)} series with {', '.join(map(str, runs))} {history.unit}(s) "
            f"({changepoints.MIN_RUNS} needed), not searched"
        )
    searched = len(findings) - len(short)
    out.append(f"{searched - len({id(f) for f, _ in changed})} of {searched} searched series: no change of level")
    for setup in _setups(findings):
        out.append(f"machine: {setup}")
    return out


def markdown(history: History, findings: Sequence[Finding], last: int) -> str:
    """The changes whose first run is among each series' last `last` runs, as a Markdown table."""
    recent = [(finding, change) for finding in findings for change in finding.changes if finding.recent(change, last)]
    unit = history.unit
    parts = [
        f"### accelbench history: changes in the last {last} {unit}s",
        f"{history.runs} saved runs{_points(history)}, {len(findings)} series; a change is named once "
        f"{changepoints.MIN_SEGMENT} {unit}s show its new level.",
    ]
    if recent:
        rows = [
            "| | cell | number | before | after | ratio [95%] | from | commit |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for finding, change in recent:
            number, point = finding.series.number, finding.first_point(change)
            mark = "regression" if finding.is_regression(change) else "improvement"
            rows.append(
                f"| {mark} | `{finding.series.cell}` | {number.name} | {number.show(change.before)} | "
                f"{number.show(change.after)} | {change.ratio:.3g}x [{change.interval[0]:.3g}, "
                f"{change.interval[1]:.3g}] | {point.date} | `{point.commit}` |"
            )
        parts.append("\n".join(rows))
    else:
        parts.append("No change of level.")
    short = sum(finding.too_short for finding in findings)
    if short:
        parts.append(f"Not enough history: {short} series have fewer than {changepoints.MIN_RUNS} {unit}s.")
    parts += [f"Unreadable: {problem}" for problem in history.unreadable]
    return "\n\n".join(parts) + "\n"


def html_page(history: History, findings: Sequence[Finding], plots: Sequence[Plot]) -> str:
    rows = [
        (
            finding.series.cell,
            finding.series.number.name,
            str(len(finding.series.points)),
            "; ".join(finding.describe(change).split(": ", 1)[1] for change in finding.changes)
            or ("not enough history" if finding.too_short else "no change"),
        )
        for finding in findings
    ]
    machines = html.escape("; ".join(_setups(findings)))
    body = (
        f"<p>{history.runs} saved runs{_points(history)}; machines: {machines}</p>"
        + "".join(f"<p class='fail'>{html.escape(problem)}</p>" for problem in history.unreadable)
        + "<h2>Series</h2>"
        + page.table(("cell", "number", f"{history.unit}s", "changes"), rows)
        + "<h2>Trends</h2>"
        + page.figures(plots)
    )
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>accelbench history</title>"
        f"<style>{page.STYLE}</style></head><body><h1>accelbench history</h1>{body}</body></html>"
    )
