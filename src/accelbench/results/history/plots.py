"""A trend plot per series: each run (or commit) a point (oldest left, its commit below), each level the
detector found a horizontal line over its runs, each change a dashed line at its first run,
labelled with its ratio. Series without a change are drawn too, smaller, a few to a figure."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from accelbench.results.history.findings import Finding
from accelbench.results.report.plots import Plot, encode, panels

REGRESSION, IMPROVEMENT, LEVEL = "#c0392b", "#27ae60", "#555555"


def _panel(ax, finding: Finding) -> None:
    series = finding.series
    values = np.array(series.values)
    runs = np.arange(1, len(values) + 1)
    ax.plot(runs, values, "o", color="#1f77b4", markersize=5)
    starts = [0, *(change.index for change in finding.changes), len(values)]
    for left, right in zip(starts, starts[1:]):
        level = float(np.exp(np.log(values[left:right]).mean()))
        ax.hlines(level, left + 0.7, right + 0.3, colors=LEVEL, linewidth=1.5)
    for change in finding.changes:
        color = REGRESSION if finding.is_regression(change) else IMPROVEMENT
        ax.axvline(change.index + 0.5, color=color, linestyle="--", linewidth=1.2)
        ax.annotate(f"{change.ratio:.3g}x", (change.index + 0.6, ax.get_ylim()[1]), color=color, va="top", fontsize=8)
    step = max(1, len(runs) // 12)
    ax.set_xticks(runs[::step], [series.points[i - 1].commit[:7] for i in runs[::step]], rotation=60, fontsize=7)
    ax.set_title(f"{series.cell}\n{series.number.name}", fontsize=9)
    ax.yaxis.set_major_formatter(lambda value, _: series.number.show(value))
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(alpha=0.3)


def trends(findings: Sequence[Finding]) -> list[Plot]:
    """One figure for the series with a change, one for the searched series without."""
    plots = []
    for title, chosen in (
        ("series with a change of level", [f for f in findings if f.changes]),
        ("series without a change", [f for f in findings if not f.changes and not f.too_short]),
    ):
        if not chosen:
            continue
        figure, axes = panels(len(chosen))
        for ax, finding in zip(axes, chosen):
            _panel(ax, finding)
        unit = chosen[0].series.unit
        each = (
            "one saved run each"
            if unit == "run"
            else "one commit each, the median of its saved runs (of a memory peak, the largest)"
        )
        plots.append(
            Plot(
                "trend",
                title,
                encode(figure),
                f"Points: {each}, oldest left, labelled by commit. Grey lines: the levels found; "
                f"dashed: a change at its first {unit} (red a regression, green an improvement).",
            )
        )
    return plots
