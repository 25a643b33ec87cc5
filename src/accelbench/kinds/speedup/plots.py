"""The speedups' plot in the report: the interleaved batch speedups beside each device's
throughput over its smallest batch's, and where an accelerator overtakes the cpu. No pytest, no
framework: the report reads saved runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from accelbench.axes.devices import REFERENCE_DEVICE
from accelbench.judge import analysis
from accelbench.kinds.speedup.result import Speedup
from accelbench.measured import Throughput
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

BATCH_SPEEDUP = "batch_speedup"  # the fixture whose cells it marks (bench.py's KINDS)
TRAINING = "train_bench"  # the training cells whose throughput it draws beside them


def speedup(runs: Sequence[Run]) -> list[Plot]:
    """The interleaved training speedups the run measured (the speedup), beside each device's
    throughput over its smallest batch's from cells timed apart (a ratio, labelled as one),
    and every device against the cpu with the batch size where it overtakes."""
    models = by_model(runs, (TRAINING,), Throughput.keys.samples_per_s)
    if not models:
        return []
    figure, axes = panels(len(models))
    notes = []
    for ax, (model, by_run) in zip(axes, models.items()):
        for run in runs:
            several = len(runs) > 1
            rate = Throughput.keys.samples_per_s
            curves = {d: curve(mine, rate) for d, mine in per_device(by_run.get(run.tag, [])).items()}
            for device, (sizes, rates) in curves.items():
                measured_line(
                    ax,
                    sizes,
                    np.array(rates) / rates[0],
                    marker="o",
                    label=f"{series_label(run, device, several)} throughput over bs{sizes[0]} (timed apart)",
                )
            for pair in run.cells_of(BATCH_SPEEDUP):
                if pair.model == model and pair.batch_size:
                    ax.plot(
                        [pair.batch_size],
                        [Speedup.of(pair.info).speedup],
                        marker="*",
                        markersize=12,
                        linestyle="",
                        label=f"{series_label(run, pair.device, several)} speedup {pair.column} (interleaved)",
                    )
            notes += _overtakes(ax, run, model, curves, several)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        style_axes(ax, f"{model}: training speedup and throughput ratios", "batch size", "x", xbase=2, ylog=True)
    if not notes:
        notes = ["every run measured one device: no device overtakes another here"]
    return [Plot("speedup", "Speedup against batch size", encode(figure), "; ".join(notes))]


def _overtakes(ax, run: Run, model: str, curves: dict, several: bool) -> list[str]:
    """Plot each device's throughput over the cpu's at shared batch sizes; mark the crossover."""
    if REFERENCE_DEVICE not in curves:
        return []
    reference = dict(zip(*curves[REFERENCE_DEVICE]))
    notes = []
    for device, (sizes, rates) in curves.items():
        shared = [(b, r / reference[b]) for b, r in zip(sizes, rates) if b in reference and device != REFERENCE_DEVICE]
        if not shared:
            continue
        xs, ratios = zip(*shared)
        label = series_label(run, device, several)
        measured_line(ax, xs, ratios, linestyle="--", marker="s", label=f"{label} over cpu")
        batch = analysis.crossover(xs, ratios)
        if batch is None:
            notes.append(f"{label} never overtakes the cpu on {model} up to bs{max(xs)}")
        else:
            ax.axvline(batch, color="red", linestyle=":")
            ax.annotate(f"{device} overtakes\nat bs≈{batch:.0f}", (batch, 1.0), fontsize="small", color="red")
            notes.append(f"{label} overtakes the cpu on {model} at batch size ≈{batch:.0f}")
    return notes


# The report's plots of this kind, by the name its Benchmark.plots gives.
PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {"speedup": speedup}
