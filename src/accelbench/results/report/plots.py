"""The report's pictures, drawn with matplotlib and embedded as PNG data: nothing to fetch.

Each kind of plot is one function from the runs to its figures; a run is a series in each
(its tag beside the device when several runs are compared).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from accelbench.measured import (
    Throughput,
    Utilization,
)
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


def throughput(runs: Sequence[Run]) -> list[Plot]:
    """Samples/s against batch size, log axes, one panel per model, per phase."""
    plots = []
    for phase, benchmark in (("training", "train_bench"), ("inference", "inference_bench")):
        models = by_model(runs, (benchmark,), Throughput.keys.samples_per_s)
        if not models:
            continue
        figure, axes = panels(len(models))
        for ax, (model, by_run) in zip(axes, models.items()):
            for run in runs:
                for device, mine in per_device(by_run.get(run.tag, [])).items():
                    sizes, rates = curve(mine, Throughput.keys.samples_per_s)
                    measured_line(ax, sizes, rates, marker="o", label=series_label(run, device, len(runs) > 1))
            style_axes(ax, f"{model}: {phase}", "batch size", "samples/s", xbase=2, ylog=True)
        plots.append(Plot("throughput", f"{phase.capitalize()} throughput against batch size", encode(figure)))
    return plots


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
        for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            axis(FuncFormatter(lambda value, _: short(value)))
    if title:
        ax.set_title(title, fontsize="medium")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend)


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


def roofline(runs: Sequence[Run]) -> list[Plot]:
    """Each backend, device and dtype's measured roofs (Williams, Waterman and Patterson 2009):
    the bandwidth roof rising to the ridge point, the compute roof flat after it; each throughput
    cell a point at its arithmetic intensity and the FLOP/s its kernels execute (what the roof
    bounds: HFU's numerator; the convention's model FLOPs may pass it on padded convolutions),
    coloured by model, a circle for training and a triangle for inference. A point left of the
    ridge is bandwidth-bound."""
    roofs = {(roof.backend, roof.device, roof.dtype): roof for run in runs for roof in run.roofs}
    points: dict[tuple[str, str, str], list[tuple[CellRecord, float, float]]] = {}
    for run in runs:
        for cell in run.cells_of("train_bench", "inference_bench"):
            used = Utilization.of(cell.info)
            share = used.hfu if used.hfu is not None else used.mfu
            if used.arithmetic_intensity and share is not None and used.roof_flops and used.roof_device:
                key = (used.roof_backend or "tensorflow", used.roof_device, used.roof_dtype)
                points.setdefault(key, []).append((cell, used.arithmetic_intensity, share * used.roof_flops))
    shown = [key for key in roofs if key in points]
    if not shown:
        return []
    figure, axes = panels(len(shown))
    colours = {
        model: f"C{index % 10}" for index, model in enumerate(sorted({c.model for k in shown for c, _, _ in points[k]}))
    }
    for ax, key in zip(axes, shown):
        roof, cells = roofs[key], points[key]
        intensities = [intensity for _, intensity, _ in cells]
        low = min(min(intensities), roof.ridge_intensity) / 4
        high = max(max(intensities), roof.ridge_intensity) * 4
        xs = np.geomspace(low, high, 200)
        ax.plot(xs, np.minimum(roof.flops_per_s, roof.bytes_per_s * xs), color="black", linewidth=1.5)
        ax.axvline(roof.ridge_intensity, color="grey", linestyle=":", linewidth=1)
        seen = set()
        for cell, intensity, executed in cells:
            work = "train" if cell.benchmark == "train_bench" else "predict"
            label = f"{cell.model} {work}"
            ax.plot(
                intensity,
                executed,
                marker="o" if work == "train" else "^",
                color=colours[cell.model],
                linestyle="",
                label=None if label in seen else label,
            )
            seen.add(label)
        ax.set_xscale("log")
        style_axes(ax, f"{key[1]} {key[2]} on {key[0]}: roofline", "FLOPs per byte", "executed FLOP/s", ylog=True)
        from matplotlib.ticker import NullFormatter

        ax.yaxis.set_minor_formatter(NullFormatter())  # decades apart: a label per decade reads
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside: points fill the panel
    return [
        Plot(
            "roofline",
            "Roofline: executed FLOP/s against arithmetic intensity, under the measured roofs",
            encode(figure),
            "The roofs are measured on this machine (a saturating matmul, a STREAM triad), not a datasheet's.",
        )
    ]


# The report's plots by the name a benchmark kind gives in its registration (Benchmark.plots).
# A kind in a folder of its own draws its plots in its plots.py (kinds/__init__.py), found by
# drawn(): the report reads saved runs and imports no bench, no framework.
PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {
    "throughput": throughput,
    "roofline": roofline,
}


def drawn() -> dict[str, Callable[[Sequence[Run]], list[Plot]]]:
    """Every plot this version draws, by name: these, and each kind folder's plots.py PLOTS
    (imported here, not at the top: a kind's plots import this module's helpers)."""
    from accelbench import kinds

    found = dict(PLOTS)
    for module in kinds.each("plots"):
        found.update(module.PLOTS)
    return found


def all_plots(runs: Sequence[Run]) -> list[Plot]:
    """The plots the runs' kinds named, in order (every one, for a run saved before runs named
    them); a name this version does not draw is left out."""
    every = drawn()
    named = [name for run in runs for name in (every if run.plots is None else run.plots)]
    return [plot for name in dict.fromkeys(named) if name in every for plot in every[name](runs)]
