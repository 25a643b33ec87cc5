"""The training and inference cells' plots in the report: throughput against batch size, and
each cell under its device's measured roofs. No pytest, no framework: the report reads saved runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from accelbench.measured import Throughput, Utilization
from accelbench.results.report.plots import (
    Plot,
    by_model,
    curve,
    encode,
    measured_line,
    panels,
    per_device,
    series_label,
    style_axes,
)
from accelbench.results.report.runs import Run
from accelbench.results.summary import CellRecord

TRAINING, INFERENCE = "train_bench", "inference_bench"  # the fixtures whose cells it draws (bench.py's KINDS)


def throughput(runs: Sequence[Run]) -> list[Plot]:
    """Samples/s against batch size, log axes, one panel per model, per phase."""
    plots = []
    for phase, benchmark in (("training", TRAINING), ("inference", INFERENCE)):
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
        for cell in run.cells_of(TRAINING, INFERENCE):
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
            work = "train" if cell.benchmark == TRAINING else "predict"
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
            "The roofs are measured on this machine (a saturating matmul; the better of a STREAM triad and a "
            "matrix-vector product), not a datasheet's.",
        )
    ]


PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {"throughput": throughput, "roofline": roofline}
