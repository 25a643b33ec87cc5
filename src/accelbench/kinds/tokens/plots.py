"""The token cells' plot in the report: time to first token and time per output token against
the offered request rate of Server's peak search, the model's limits as lines. No pytest, no
framework: the report reads saved runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from accelbench.kinds.tokens.result import TokenLoad
from accelbench.results.report.plots import Plot, encode, panels, style_axes
from accelbench.results.report.runs import Run

FIXTURE = "token_serving"  # the fixture whose cells it draws (bench.py's KINDS)
LATENCIES = (("ttft", "time to first token", "ttft_limit_ms"), ("tpot", "time per output token", "tpot_limit_ms"))


def tokens_under_load(runs: Sequence[Run]) -> list[Plot]:
    """Per Server cell, two panels: TTFT and TPOT (p50 and the held percentile) against every
    rate the search tried under each batching (a hollow marker: INVALID), the limit as a dashed
    line and the peak rate dotted."""
    cells = [cell for run in runs for cell in run.cells_of(FIXTURE) if TokenLoad.of(cell.info).rates_tried]
    if not cells:
        return []
    figure, axes = panels(2 * len(cells))
    for index, cell in enumerate(cells):
        load = TokenLoad.of(cell.info)
        held = (load.held_percentile or "p99").replace(".", "")
        batchings = list(dict.fromkeys(run["batching"] for run in load.rates_tried))
        for (name, title, limit), ax in zip(LATENCIES, axes[2 * index : 2 * index + 2]):
            for colour, batching in enumerate(batchings):
                tried = sorted((r for r in load.rates_tried if r["batching"] == batching), key=lambda r: r["rate"])
                for style, percentile in (("-", "p50"), ("--", held)):
                    key = f"{name}_{percentile}_ms"
                    shown = [r for r in tried if r.get(key) is not None]
                    ax.plot(
                        [r["rate"] for r in shown],
                        [r[key] for r in shown],
                        linestyle=style,
                        color=f"C{colour}",
                        label=f"{batching} {percentile}",
                    )
                    for r in shown:
                        ax.plot(
                            r["rate"],
                            r[key],
                            marker="o",
                            color=f"C{colour}",
                            fillstyle="full" if r["valid"] else "none",
                        )
            ax.axhline(getattr(load, limit), color="black", linestyle="--", linewidth=1, label=f"limit ({held})")
            if load.peak_rate:
                ax.axvline(load.peak_rate, color="grey", linestyle=":", linewidth=1, label="peak rate")
            style_axes(ax, f"{cell.device} {cell.model}: {title}", "offered requests/s", "ms", ylog=True)
            ax.legend(fontsize="x-small")
    folders = [TokenLoad.of(cell.info).loadgen_logs for cell in cells if TokenLoad.of(cell.info).loadgen_logs]
    return [
        Plot(
            "tokens_under_load",
            "Tokens under load: time to first token and per output token against offered request rate (Server)",
            encode(figure),
            "Each point is one LoadGen Server run of the peak search (hollow: INVALID, a limit missed), under "
            "each batching; the dashed line is the model's limit on the held percentile.",
            folder=os.path.commonpath(folders) if folders else "",
        )
    ]


# The report's plots of this kind, by the name its Benchmark.plots gives.
PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {"tokens_under_load": tokens_under_load}
