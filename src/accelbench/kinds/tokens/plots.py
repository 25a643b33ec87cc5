"""The token cells' plot in the report: time to first token and time per output token against
the offered request rate of Server's peak search, the model's limits as lines. No pytest, no
framework: the report reads saved runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

from accelbench.kinds.tokens.result import TokenLoad, Tokens
from accelbench.results.report.plots import Plot, encode, panels, style_axes
from accelbench.results.report.runs import Run

FIXTURE = "token_serving"  # the fixtures whose cells it draws (bench.py's KINDS)
PHASES = {"token_prefill": ("prefill", "o"), "token_decode": ("decode", "^")}
LATENCIES = (("ttft", "time to first token", "ttft_limit_ms"), ("tpot", "time per output token", "tpot_limit_ms"))


def tokens_under_load(runs: Sequence[Run]) -> list[Plot]:
    """Per Server cell, three panels: TTFT and TPOT (p50 and the held percentile) against every
    rate the search tried under each batching (a hollow marker: INVALID), the limit as a dashed
    line and the peak rate dotted; and completed requests/s and goodput against offered."""
    cells = [cell for run in runs for cell in run.cells_of(FIXTURE) if TokenLoad.of(cell.info).rates_tried]
    if not cells:
        return []
    figure, axes = panels(3 * len(cells))
    for index, cell in enumerate(cells):
        load = TokenLoad.of(cell.info)
        held = (load.held_percentile or "p99").replace(".", "")
        batchings = list(dict.fromkeys(run["batching"] for run in load.rates_tried))
        _goodput(axes[3 * index + 2], cell, load, batchings)
        for (name, title, limit), ax in zip(LATENCIES, axes[3 * index : 3 * index + 2]):
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


def _goodput(ax, cell, load: TokenLoad, batchings: list[str]) -> None:
    """Completed requests/s and goodput (those that met both limits) against offered, per batching:
    the two told apart by their markers as well as their lines (the legend's short line samples
    barely show a dash)."""
    for colour, batching in enumerate(batchings):
        tried = sorted((r for r in load.rates_tried if r["batching"] == batching), key=lambda r: r["rate"])
        for style, marker, key in (("-", "o", "completed"), ("--", "s", "goodput")):
            shown = [r for r in tried if r.get(key) is not None]
            ax.plot([r["rate"] for r in shown], [r[key] for r in shown], linestyle=style, marker=marker,
                    color=f"C{colour}", label=f"{batching} {key}")  # fmt: skip
    rates = [r["rate"] for r in load.rates_tried]
    ax.plot([0, max(rates)], [0, max(rates)], color="grey", linewidth=0.8, label="offered")
    style_axes(ax, f"{cell.device} {cell.model}: goodput", "offered requests/s", "requests/s")
    ax.legend(fontsize="x-small")


def token_roofline(runs: Sequence[Run]) -> list[Plot]:
    """Prefill and decode under the device's measured roofs: each cell a point at its arithmetic
    intensity (a step's FLOPs over the bytes of weights and cache it reads) and the FLOP/s it
    reached; prefill (circles) toward the compute roof, decode (triangles) on the bandwidth slope."""
    points: dict[str, list] = {}
    roofs: dict[str, tuple[float, float]] = {}
    for run in runs:
        for cell in run.cells_of(*PHASES):
            tokens = Tokens.of(cell.info)
            seconds = _step_seconds(tokens)
            if not (tokens.flops_per_step and tokens.bytes_per_step and seconds and tokens.roof_device):
                continue
            if tokens.roof_flops_per_s and tokens.roof_bytes_per_s:
                roofs[tokens.roof_device] = (tokens.roof_flops_per_s, tokens.roof_bytes_per_s)
            intensity = tokens.flops_per_step / tokens.bytes_per_step
            points.setdefault(tokens.roof_device, []).append((cell, intensity, tokens.flops_per_step / seconds))
    shown = [device for device in roofs if device in points]
    if not shown:
        return []
    figure, axes = panels(len(shown))
    for ax, device in zip(axes, shown):
        (flops, bandwidth), cells = roofs[device], points[device]
        ridge = flops / bandwidth
        intensities = [intensity for _, intensity, _ in cells]
        xs = np.geomspace(min(*intensities, ridge) / 4, max(*intensities, ridge) * 4, 200)
        ax.plot(xs, np.minimum(flops, bandwidth * xs), color="black", linewidth=1.5)
        ax.axvline(ridge, color="grey", linestyle=":", linewidth=1)
        for index, (cell, intensity, reached) in enumerate(cells):
            phase, marker = PHASES[cell.benchmark]
            ax.plot(
                intensity,
                reached,
                marker=marker,
                linestyle="",
                color=f"C{index % 10}",
                label=f"{cell.model} {phase} {cell.column}",
            )
        ax.set_xscale("log")
        style_axes(ax, f"{device}: prefill and decode under the roofs", "FLOPs per byte", "FLOP/s", ylog=True)
        from matplotlib.ticker import NullFormatter

        ax.yaxis.set_minor_formatter(NullFormatter())  # decades apart: a label per decade reads
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return [
        Plot(
            "token_roofline",
            "Prefill and decode against the measured roofs",
            encode(figure),
            "A step's FLOPs over the bytes of weights and key/value cache it reads; the roofs are measured on "
            "this machine (a saturating matmul; the better of a STREAM triad and a matrix-vector product).",
        )
    ]


def _step_seconds(tokens: Tokens) -> float | None:
    """A step's median seconds: prefill's whole prompt (its TTFT), decode's one token per sequence (TPOT)."""
    milliseconds = tokens.ttft_ms if tokens.phase == "prefill" else tokens.tpot_ms
    return milliseconds / 1e3 if milliseconds else None


# The report's plots of this kind, by the name its Benchmark.plots gives.
PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {
    "tokens_under_load": tokens_under_load,
    "token_roofline": token_roofline,
}
