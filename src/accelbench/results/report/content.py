"""What both the HTML page and the Markdown summary show, as plain rows: verdicts, timings,
projections and machines of every run. The writers only lay it out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from accelbench.judge.verdicts import (
    AB_COMPILE,
    AB_PEAK,
    FAIL,
    LEAKS,
    NEW,
    OUTCOMES,
    PEAK_CAP,
    TIMING,
    UNGATED,
    UNKNOWN,
)
from accelbench.results import summary
from accelbench.results.costs import SavedCost
from accelbench.results.report.runs import Run
from accelbench.units import format_bytes, format_number, format_seconds

MACHINE_KEYS = (
    "accelbench_machine_class",
    "accelbench_fingerprint",
    "node",
    "cpu",
    "system",
    "release",
    "python_version",
    "tensorflow",
    "keras",
    "scikit-learn",
    "numpy",
    "accelbench_devices",
    "accelbench_host_allocator",
    "accelbench_memray_tracking",
)


ATTENTION = (FAIL, UNKNOWN, UNGATED, NEW)  # outcomes a reviewer must look at


def verdict_counts(run: Run) -> str:
    counts = Counter(v.get("outcome") for v in run.verdicts)
    return ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o]) or "no verdicts"


VERDICT_HEADER = ("run", "cell", "metric", "outcome", "measured", "held against", "tolerance", "message")
SHOWN_CELLS = 3  # of a reason that many cells share, the cells named in its row


def _shown(metric: str, value: object) -> str:
    """A verdict's number in its unit: bytes as KiB/MiB, seconds as ms/µs, anything else plain."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return format_number(value)
    return METRIC_UNITS.get(metric, format_number)(value)


# How a metric's measured and baseline values read (summary.py's tables show the same units).
METRIC_UNITS = {
    TIMING: format_seconds,
    AB_COMPILE: format_seconds,
    AB_PEAK: format_bytes,
    PEAK_CAP: format_bytes,
    LEAKS: format_bytes,
    "peak_memory_bytes": format_bytes,
    "device_peak_memory_bytes": format_bytes,
}


def _verdict_row(tag: str, v: dict) -> tuple[str, ...]:
    metric = v.get("metric", "")
    baseline = _shown(metric, v.get("baseline"))
    return (
        tag,
        v.get("cell", ""),
        metric,
        v.get("outcome", ""),
        _shown(metric, v.get("measured")),
        f"{baseline} ({v.get('against')})" if v.get("against") else baseline,
        str(v.get("tolerance", "")),
        str(v.get("message", "")),
    )


def _group_row(tag: str, group: list[dict]) -> tuple[str, ...]:
    """One row for the verdicts that share a reason (a machine with no baselines: every speedup
    and peak), as the terminal's verdict block gives them one line: how many, the first cells,
    the range of what they measured."""
    cells = list(dict.fromkeys(v.get("cell", "") for v in group))  # a cell of several numbers named once
    named = ", ".join(cells[:SHOWN_CELLS]) + (
        f" and {len(cells) - SHOWN_CELLS} more" if len(cells) > SHOWN_CELLS else ""
    )
    counted = f"{len(group)} cells" if len(cells) == len(group) else f"{len(group)} numbers of {len(cells)} cells"
    metrics = list(dict.fromkeys(v.get("metric", "") for v in group))
    values = [v.get("measured") for v in group if isinstance(v.get("measured"), (int, float))]
    measured = ""
    if values and len(metrics) == 1:
        low, high = min(values), max(values)
        measured = (
            _shown(metrics[0], low) if low == high else f"{_shown(metrics[0], low)} to {_shown(metrics[0], high)}"
        )
    return (
        tag,
        f"{counted}: {named}",
        ", ".join(metrics),
        group[0].get("outcome", ""),
        measured,
        "",
        "",
        str(group[0].get("message", "")),
    )


def verdict_rows(runs: Sequence[Run], outcomes: Sequence[str] = OUTCOMES) -> list[tuple[str, ...]]:
    """The verdicts of these outcomes, the worst first: one row per verdict, except that verdicts
    of one run and outcome that share their message (their reason) share one row."""
    rows = []
    for run in runs:
        groups: dict[tuple[str, str], list[dict]] = {}
        for v in run.verdicts:
            if v.get("outcome") in outcomes:
                groups.setdefault((v.get("outcome", ""), str(v.get("message", ""))), []).append(v)
        rows += [
            _verdict_row(run.tag, group[0]) if len(group) == 1 else _group_row(run.tag, group)
            for group in groups.values()
        ]
    return sorted(rows, key=lambda row: OUTCOMES.index(row[3]) if row[3] in OUTCOMES else 0)


CELL_HEADER = ("run", "cell", "benchmark", "median round", "min round", "IQR", "rounds")


def cell_rows(runs: Sequence[Run]) -> list[tuple[str, ...]]:
    """Every cell of every run, with pytest-benchmark's timing where it timed the cell."""
    rows = []
    for run in runs:
        for cell in run.cells:
            stats = run.timed.get(cell.name)
            timing = (
                (
                    _shown_seconds(stats.get("median")),
                    _shown_seconds(stats.get("min")),
                    _shown_seconds(stats.get("iqr")),
                    format_number(stats.get("rounds")),
                )
                if stats
                else ("not timed by pytest-benchmark (memory, LoadGen, ...)", "", "", "")
            )
            rows.append((run.tag, cell.name, cell.benchmark, *timing))
    return rows


PROJECTION_HEADER = (
    "run",
    "model",
    "phase",
    "device",
    "basis",
    "images",
    "hours",
    "95% interval",
    "dollars",
    "verdict",
)


def projection_rows(runs: Sequence[Run]) -> list[tuple[str, ...]]:
    return [
        (
            run.tag,
            cost.model,
            cost.phase,
            cost.device,
            cost.basis,
            format_number(cost.target_n),
            format_number(cost.hours),
            " – ".join(format_number(x) for x in cost.hours_ci95 or ()),
            format_number(cost.dollars),
            cost.projection_verdict,
        )
        for run in runs
        for cost in map(SavedCost.of, run.projections)
    ]


def machine_rows(runs: Sequence[Run]) -> list[tuple[str, ...]]:
    """One row per machine fact, one column per run."""
    rows = [
        ("file", *(str(run.path) for run in runs)),
        ("date", *(run.datetime for run in runs)),
        ("machine", *(run.machine_label for run in runs)),
        (
            "commit",
            *(f"{run.commit.get('id', '')[:10]}{' (dirty)' if run.commit.get('dirty') else ''}" for run in runs),
        ),
    ]
    for key in MACHINE_KEYS:
        values = [run.machine.get(key) for run in runs]
        if any(v is not None for v in values):
            rows.append((key, *(_machine_value(v) for v in values)))
    return rows


def _machine_value(value) -> str:
    if isinstance(value, dict) and "brand_raw" in value:  # py-cpuinfo's record: its flags fill a page
        return f"{value['brand_raw']}, {value.get('count', '?')} logical cores, {value.get('arch_string_raw', '')}"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_machine_value(v)}" for k, v in value.items())
    return "" if value is None else str(value)


AB_HEADER = ("run", *summary.AB_HEADER)


def ab_rows(runs: Sequence[Run]) -> list[tuple[str, ...]]:
    """Every cell judged B against A in an A/B run, the largest slowdown first."""
    return [(run.tag, *row) for run in runs for row in summary.ab_rows(run.verdicts)]


AB_LOAD_HEADER = ("run", *summary.AB_LOAD_HEADER)


def ab_load_rows(runs: Sequence[Run]) -> list[tuple[str, ...]]:
    """Every number of a cell served under load and judged B against A in an A/B run."""
    return [(run.tag, *row) for run in runs for row in summary.ab_load_rows(run.verdicts)]


def _shown_seconds(value: object) -> str:
    return format_seconds(value) if isinstance(value, (int, float)) else ""
