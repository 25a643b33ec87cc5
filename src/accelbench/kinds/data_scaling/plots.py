"""The data-scaling cells' plots in the report: time and memory against data size, the fit
carried out to the target. No pytest, no framework: the report reads saved runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from accelbench.kinds.data_scaling.result import MEMORY_PROJECTION, TIME_PROJECTION, DataScaling, Projected
from accelbench.results.report.plots import Plot, encode, panels, short, style_axes
from accelbench.results.report.runs import Run

FIXTURES = ("train_data_scaling", "predict_data_scaling")  # the fixtures whose cells it draws (bench.py's KINDS)


def data_size(runs: Sequence[Run]) -> list[Plot]:
    """Time and memory against data size: rounds, medians, the fit a + b·n^k carried out to the
    target with its 95% interval, and the back-test's held-out size."""
    cells = [(run, cell) for run in runs for cell in run.cells_of(*FIXTURES) if DataScaling.of(cell.info).sizes]
    if not cells:
        return []
    plots = []
    for quantity, naming, unit in (("time", TIME_PROJECTION, "s"), ("memory", MEMORY_PROJECTION, "B")):
        figure, axes = panels(len(cells))
        for ax, (run, cell) in zip(axes, cells):
            _projection_panel(ax, DataScaling.of(cell.info), Projected.of(cell.info, **naming), unit)
            scaled = DataScaling.of(cell.info)
            verdict = str(scaled.projection_verdict or "").split(":")[0]
            ax.set_title(
                f"{run.tag + ' ' if len(runs) > 1 else ''}{cell.device} {cell.model} {scaled.phase}: "
                f"{quantity} ({verdict or 'no projection'})",
                fontsize="medium",
            )
        plots.append(
            Plot(
                "data size",
                f"{quantity.capitalize()} against data size, projected",
                encode(figure),
                "the dotted line is the fit carried beyond the data, the red bar its 95% interval at the target; "
                "the title says whether the projection is a safe extrapolation (see Projections)",
            )
        )
    return plots


def _projection_panel(ax, scaled: DataScaling, projected: Projected, unit: str) -> None:
    sizes = np.array(scaled.sizes, dtype=float)
    timed = projected.quantity == TIME_PROJECTION["quantity"]
    if timed:
        for size, rounds in zip(sizes, scaled.seconds_rounds or ()):
            ax.plot([size] * len(rounds), rounds, marker=".", linestyle="", color="grey", alpha=0.5)
    ax.plot(sizes, scaled.seconds if timed else scaled.peak_memory_bytes, marker="o", linestyle="", label="median")
    fit, target = projected.fit, scaled.target_n
    if fit and target:
        line = np.geomspace(sizes.min(), max(sizes.max(), target), 100)
        values = fit["a"] + fit["b"] * line ** fit["k"]
        inside = line <= sizes.max()
        ax.plot(line[inside], values[inside], label=f"a + b·n^k, k={fit['k']:.2f}")
        ax.plot(line[~inside], values[~inside], linestyle=":", color="C1")
        value, ci95 = projected.projected, projected.projected_ci95
        if value and ci95:
            ax.errorbar(
                [target],
                [value],
                yerr=[[value - ci95[0]], [ci95[1] - value]],
                marker="D",
                color="red",
                capsize=4,
                label=f"n={short(target)}: {short(value)} {unit}",
            )
    backtest = projected.backtest
    if backtest:
        ok = projected.backtest_ok
        ax.errorbar(
            [backtest["size"]],
            [backtest["predicted"]],
            yerr=[[backtest["predicted"] - backtest["ci95"][0]], [backtest["ci95"][1] - backtest["predicted"]]],
            marker="x",
            color="green" if ok else "red",
            capsize=3,
            label=f"back-test {'held' if ok else 'FAILED'}",
        )
    style_axes(ax, "", "images", unit, xbase=10, ylog=True, legend="x-small")


PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {"data_size": data_size}
