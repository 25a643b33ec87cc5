"""The report's pictures, drawn with matplotlib and embedded as PNG data: nothing to fetch.

Each kind of plot is one function from the runs to its figures; a run is a series in each
(its tag beside the device when several runs are compared).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accelbench.registry import Registry
from accelbench.results.report.runs import Run
from accelbench.results.summary import CellRecord

PANEL = (4.6, 3.4)  # inches per subplot
DPI = 80
# A line through two points is straight on any axes and says nothing the points do not (the
# quick preset measures two batch sizes): fewer points than this are drawn as points alone.
MIN_POINTS_FOR_A_LINE = 3


@dataclass(frozen=True)
class Plot:
    name: str  # throughput, speedup, memory, data size, accuracy
    title: str
    png: str  # base64
    note: str = ""  # what the picture says that a reader might miss
    folder: str = ""  # a local folder the plot's numbers came from (LoadGen's logs), linked under it

    @property
    def data_uri(self) -> str:
        return f"data:image/png;base64,{self.png}"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display: the report is drawn on CI machines too
    import matplotlib.pyplot as plt

    return plt


def panels(count: int):
    plt = _pyplot()
    columns = min(count, 3)
    rows = -(-count // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(PANEL[0] * columns, PANEL[1] * rows), squeeze=False)
    for extra in axes.flat[count:]:
        extra.set_visible(False)
    return figure, list(axes.flat)


def encode(figure) -> str:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=DPI)
    _pyplot().close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def measured_line(ax, xs, ys, **style) -> None:
    """Measured points of one series, joined by a line only where there are enough of them."""
    if len(xs) < MIN_POINTS_FOR_A_LINE:
        style = {**style, "linestyle": "", "markersize": style.get("markersize", 8)}
    ax.plot(xs, ys, **style)


def series_label(run: Run, device: str, several: bool) -> str:
    return f"{run.tag} {device}" if several else device


def by_model(runs: Sequence[Run], benchmarks: tuple[str, ...], metric: str) -> dict[str, dict[str, list[CellRecord]]]:
    """model -> run tag -> the run's cells of these benchmarks that report the metric."""
    found: dict[str, dict[str, list[CellRecord]]] = {}
    for run in runs:
        for cell in run.cells_of(*benchmarks):
            if cell.info.get(metric) is not None:
                found.setdefault(cell.model, {}).setdefault(run.tag, []).append(cell)
    return found


def curve(cells: Sequence[CellRecord], metric: str) -> tuple[list[int], list[float]]:
    points = sorted((cell.batch_size, cell.info[metric]) for cell in cells if cell.batch_size)
    return [b for b, _ in points], [v for _, v in points]


def per_device(cells: Sequence[CellRecord]) -> dict[str, list[CellRecord]]:
    found: dict[str, list[CellRecord]] = {}
    for cell in cells:
        found.setdefault(cell.device, []).append(cell)
    return found


def style_axes(
    ax, title: str, xlabel: str, ylabel: str, *, xbase: int | None = None, ylog: bool = False, legend: str = "small"
) -> None:
    """Titles, labels, grid and legend of a panel; log axes where asked (batch sizes: base 2),
    their ticks written as numbers (32, 256; 15.6k, 2), not as powers."""
    from matplotlib.ticker import FuncFormatter

    if xbase:
        ax.set_xscale("log", base=xbase)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}" if xbase == 2 else short(value)))
    if ylog:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: short(value)))
        # Minor ticks labelled at 2 and 5 times a power of ten only: an axis over two decades is
        # not the crowd of 6 7 8 9 it was under each label. An axis within one decade labels
        # every minor tick: a TTFT axis from 1.1k to 3.6k ms read "2k" alone.
        ax.yaxis.set_minor_formatter(
            FuncFormatter(lambda value, _: short(value) if one_two_five(value) or within_a_decade(ax) else "")
        )
    if title:
        ax.set_title(title, fontsize="medium")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend)


def within_a_decade(ax) -> bool:
    """Whether a log y axis's view spans less than a factor of ten (read as it is drawn)."""
    low, high = sorted(ax.get_ylim())
    return low > 0 and high / low < 10


def one_two_five(value: float) -> bool:
    """Whether a positive tick is 2 or 5 times a power of ten."""
    import math

    leading = value / 10 ** math.floor(math.log10(value)) if value > 0 else 0.0
    return any(math.isclose(leading, mark, rel_tol=1e-6) for mark in (2.0, 5.0))


def short(value: float) -> str:
    """A tick of a log axis: 15600 -> 15.6k, 2.0 -> 2, 6e10 -> 60G (SI prefixes, never e-notation)."""
    for scale, suffix in (
        (1e24, "Y"),
        (1e21, "Z"),
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


# The plots this version drew for every run before runs named their own, in the order it drew
# them: a run saved then is drawn with them. Frozen: plots a kind declares now travel in the run.
SCHEMA_0_PLOTS = ("throughput", "data_size", "roofline", "accuracy", "memory", "serving", "speedup")


# Plots a user's module declares (accelbench.register_plot), by name: `accelbench report
# --modules` imports the module, as the pytest process did.
USER_PLOTS: Registry[Callable[[Sequence[Run]], list[Plot]]] = Registry("plot")


def drawn() -> dict[str, Callable[[Sequence[Run]], list[Plot]]]:
    """Every plot this version draws, by the name a kind gives it in its registration
    (Benchmark.plots): each kind folder's plots.py PLOTS (kinds/__init__.py), imported here, not
    at the top, as a kind's plots import this module's helpers; then the user's. The report
    reads saved runs and imports no bench, no framework."""
    from accelbench import kinds

    found = {name: plot for module in kinds.each("plots") for name, plot in module.PLOTS.items()}
    return {**found, **{name: USER_PLOTS[name] for name in USER_PLOTS}}


def not_drawn(runs: Sequence[Run]) -> list[str]:
    """The plots the runs name that this version does not draw: a user's kind's, whose module
    the report was not given (--modules), or one of a newer accelbench."""
    every = drawn()
    return list(dict.fromkeys(name for run in runs for name in run.plots or () if name not in every))


def all_plots(runs: Sequence[Run]) -> list[Plot]:
    """The plots the runs' kinds named, in order (SCHEMA_0_PLOTS, for a run saved before runs
    named them); a name this version does not draw is left out."""
    every = drawn()
    named = [name for run in runs for name in (SCHEMA_0_PLOTS if run.plots is None else run.plots)]
    return [plot for name in dict.fromkeys(named) if name in every for plot in every[name](runs)]
