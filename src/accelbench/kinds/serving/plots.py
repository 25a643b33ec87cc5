"""Serving's plot in the report: LoadGen's latency percentiles against the offered QPS of
Server's peak search. No pytest, no framework: the report reads saved runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from accelbench.kinds.serving.result import Serving
from accelbench.results.report.plots import Plot, encode, panels, style_axes
from accelbench.results.report.runs import Run
from accelbench.results.summary import CellRecord

FIXTURE = "serving_bench"  # the fixture whose cells it draws (bench.py's KINDS)


def _logs_folder(cells: Sequence[CellRecord]) -> str:
    """Where the cells' LoadGen logs are: their common folder (a folder per cell below it)."""
    folders = [Serving.of(cell.info).loadgen_logs for cell in cells if Serving.of(cell.info).loadgen_logs]
    return os.path.commonpath(folders) if folders else ""


def serving(runs: Sequence[Run]) -> list[Plot]:
    """Per served model, LoadGen's p50/p90/p99 against the offered Server QPS of every rate the
    peak search tried (under the first batching setting; a hollow marker: INVALID), the latency
    bound as a line, the peak QPS marked, the best batching setting named in the title."""
    cells = [cell for run in runs for cell in run.cells_of(FIXTURE) if Serving.of(cell.info).server_runs]
    if not cells:
        return []
    figure, axes = panels(len(cells))
    for ax, cell in zip(axes, cells):
        served = Serving.of(cell.info)
        first = served.server_runs[0]["batching"]
        runs_tried = sorted((r for r in served.server_runs if r["batching"] == first), key=lambda r: r["qps"])
        for index, percentile in enumerate(("p50_ms", "p90_ms", "p99_ms")):
            shown = [r for r in runs_tried if r.get(percentile) is not None]
            ax.plot([r["qps"] for r in shown], [r[percentile] for r in shown], color=f"C{index}", label=percentile[:3])
            for r in shown:
                fill = "full" if r["valid"] else "none"
                ax.plot(r["qps"], r[percentile], marker="o", color=f"C{index}", fillstyle=fill)
        ax.axhline(served.latency_bound_ms, color="black", linestyle="--", linewidth=1, label="bound (p99)")
        if served.serving_rate:
            ax.axvline(served.serving_rate, color="grey", linestyle=":", linewidth=1, label="peak QPS")
        style_axes(
            ax, f"{cell.device} {cell.model}: best {served.best_batching or 'none'}", "offered QPS", "ms", ylog=True
        )
        from matplotlib.ticker import NullFormatter

        ax.yaxis.set_minor_formatter(NullFormatter())  # decades apart: a label per decade reads
        ax.legend(fontsize="x-small")
    return [
        Plot(
            "serving",
            "Serving under load: LoadGen's latency percentiles against offered QPS (Server)",
            encode(figure),
            "Each point is one LoadGen Server run of the peak search (hollow: INVALID, p99 over the bound), "
            "under the first batching setting.",
            folder=_logs_folder(cells),
        )
    ]


# The report's plots of this kind, by the name its Benchmark.plots gives.
PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {"serving": serving}
