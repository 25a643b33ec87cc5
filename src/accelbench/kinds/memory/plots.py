"""The memory cells' plot in the report: one training step's host peak against batch size, the
ladder's fit and the step cells. No pytest, no framework: the report reads saved runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from accelbench.kinds.memory.result import MemoryScaling, StepMemory
from accelbench.results.report.plots import Plot, by_model, curve, encode, panels, per_device, series_label, style_axes
from accelbench.results.report.runs import Run

LADDER, STEPS = "memory_scaling", "train_memory"  # the fixtures whose cells it draws (bench.py's KINDS)


def memory(runs: Sequence[Run]) -> list[Plot]:
    """Host peak of one training step against batch size: the measured ladder, its linear fit,
    and the step-memory cells."""
    models = by_model(runs, (LADDER,), MemoryScaling.keys.per_sample_bytes)
    models_with_steps = by_model(runs, (STEPS,), StepMemory.keys.peak_memory_bytes)
    names = list(dict.fromkeys([*models, *models_with_steps]))
    if not names:
        return []
    figure, axes = panels(len(names))
    mib = 2**20
    for ax, model in zip(axes, names):
        for run in runs:
            label = lambda device: series_label(run, device, len(runs) > 1)
            for cell in models.get(model, {}).get(run.tag, []):
                ladder = MemoryScaling.of(cell.info)
                sizes = np.array(ladder.ladder_batch_sizes, dtype=float)
                ax.plot(
                    sizes,
                    np.array(ladder.ladder_peak_bytes) / mib,
                    marker="o",
                    linestyle="",
                    label=f"{label(cell.device)} ladder",
                )
                line = np.geomspace(sizes.min(), sizes.max(), 50)
                fitted = ladder.fixed_bytes + ladder.per_sample_bytes * line
                ax.plot(
                    line,
                    fitted / mib,
                    label=f"{label(cell.device)} fit: "
                    f"{ladder.fixed_bytes / mib:.1f} MiB + {ladder.per_sample_bytes / 1024:.1f} KiB/sample",
                )
            steps = models_with_steps.get(model, {}).get(run.tag, [])
            for device, mine in per_device(steps).items():
                sizes, peaks = curve(mine, StepMemory.keys.peak_memory_bytes)
                ax.plot(sizes, np.array(peaks) / mib, marker="^", linestyle="", label=f"{label(device)} step cells")
        style_axes(ax, f"{model}: host peak of one training step", "batch size", "MiB", xbase=2, legend="x-small")
    return [Plot("memory", "Memory against batch size", encode(figure))]


# The report's plots of this kind, by the name its Benchmark.plots gives.
PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {"memory": memory}
