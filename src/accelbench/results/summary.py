"""The run at a glance: tables with rows device x model and a column per batch size (or per
compared pair, subset, phase), each number beside the verdict that judged it.

Built from cells' extra_info as the JSON keeps it, so the terminal and `accelbench report`
show the same tables. No TensorFlow: one or several runs in, tables out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from accelbench.judge.verdicts import (
    AB_COMPILE,
    AB_METRICS,
    AB_PEAK,
    AB_PREFIX,
    AB_TIME,
    FAIL,
    NEW,
    OUTCOMES,
    PASS,
    REPORTED,
    SKIPPED,
    UNGATED,
    UNKNOWN,
)
from accelbench.measured import (
    VERDICTS_KEY,
    Place,
    Roof,
    Throughput,
)
from accelbench.units import (
    count,
    flops,
    format_bytes,
    format_number,
    format_seconds,
    format_small,
    milliseconds,
    percent,
    plain,
    points,
    rate,
    times,
    two_places,
)

# Beside a number: how its verdict came out (the worst, if several judged it). None: no verdict.
MARKS = {
    PASS: "ok",
    FAIL: "FAIL",
    NEW: "new",
    UNGATED: "ungated",
    SKIPPED: "skipped",
    UNKNOWN: "unknown",
    REPORTED: "reported",
}


@dataclass(frozen=True)
class CellRecord:
    """One benchmark cell of one run, as its extra_info describes it."""

    name: str  # test name with its id: test_train[cpu-bs256-mlp]
    benchmark: str  # the benchmark fixture: train_bench, batch_speedup, ...
    device: str
    model: str
    column: str  # bs256, bs256/bs32, n5000 grayscale, '' (one per device x model)
    info: Mapping[str, Any]

    @classmethod
    def from_extra_info(cls, name: str, info: Mapping[str, Any]) -> CellRecord | None:
        where = Place.read(info)
        if where is None:
            return None
        return cls(name, where.benchmark, where.device, where.model, where.column or "", info)

    @property
    def place(self) -> Place:
        return Place.read(self.info) or Place()

    @property
    def batch_size(self) -> int | None:
        return self.place.batch_size

    @property
    def samples_per_s(self) -> float | None:
        return Throughput.of(self.info).samples_per_s

    def outcome(self, metrics: Sequence[str]) -> str | None:
        """The worst outcome among this cell's verdicts on these metrics; None if none judged them."""
        outcomes = {v["outcome"] for v in self.info.get(VERDICTS_KEY, ()) if v.get("metric") in metrics}
        return next((o for o in OUTCOMES if o in outcomes), None)


# --- the sections ------------------------------------------------------------------------------


# How a section's numbers read, by name: a section names its format, so that it can be saved
# with a run (its JSON's accelbench.sections) and the report, which imports no benchmark kind,
# lays out a kind's table as the run that measured it did.
FORMATS: dict[str, Callable[[float], str]] = {
    "rate": rate,
    "flop_rate": lambda value: rate(value).replace("/s", " FLOP/s"),
    "flops": flops,
    "milliseconds": milliseconds,
    "seconds": format_seconds,
    "bytes": format_bytes,
    "plain": plain,
    "small": format_small,
    "two_places": two_places,
    "times": times,
    "percent": percent,
    "points": points,
    "count": count,
    "growth": lambda value: f"+{value:.0%}",
}


@dataclass(frozen=True)
class Section:
    """One table: the metric some benchmarks report, how it reads, and which verdicts judge it."""

    title: str
    benchmarks: Mapping[str, str]  # benchmark fixture -> its column label, from the cell's {column}
    metric: str
    show: str  # a FORMATS name
    judged_by: tuple[str, ...] = ()
    stderr: str | None = None  # the extra_info key of the number's standard error, shown as ±
    interval: str | None = None  # the extra_info key of the number's [low, high] interval
    # A row for every cell of its benchmarks, '-' where the cell has no number: a recipe that
    # did not reach its target is a finding, not a model missing from the table.
    every_cell: bool = False

    def __post_init__(self) -> None:
        if self.show not in FORMATS:
            raise ValueError(f"section {self.title!r}: format {self.show!r} is not one of {', '.join(FORMATS)}")

    def as_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "benchmarks": dict(self.benchmarks), "judged_by": list(self.judged_by)}

    @classmethod
    def from_json(cls, saved: Mapping[str, Any]) -> Section:
        return cls(**{**saved, "judged_by": tuple(saved.get("judged_by", ()))})

    def format(self, value: float) -> str:
        return FORMATS[self.show](value)

    def column(self, record: CellRecord) -> str:
        return self.benchmarks[record.benchmark].format(column=record.column).strip() or "value"

    def cell_text(self, record: CellRecord) -> str:
        value = record.info.get(self.metric)
        if isinstance(value, str):  # a derived finding, already in words; "unknown: why" reads "unknown" here
            return "unknown" if value.startswith("unknown:") else value
        if not isinstance(value, (int, float)):
            return "-"
        text = self.format(value)
        if self.stderr and isinstance(record.info.get(self.stderr), (int, float)):
            text += f"±{self.format(record.info[self.stderr])}"
        if self.interval and isinstance(record.info.get(self.interval), (list, tuple)):
            text += " [" + ", ".join(self.format(bound) for bound in record.info[self.interval]) + "]"
        outcome = record.outcome(self.judged_by)
        return f"{text} {MARKS[outcome]}" if outcome else text


@dataclass(frozen=True)
class Table:
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def tables(runs: Sequence[tuple[str, Sequence[CellRecord]]], sections: Sequence[Section]) -> list[Table]:
    """One table per section (the registered kinds' in a run, the saved ones in the report) that
    any run has numbers for. With several runs each (device, model) has a row per run, the run's tag
    in its own column: runs compare down a column, and a table is as wide for ten runs as for one."""
    runs = [(tag, [*records, *derived_records(records)]) for tag, records in runs]
    result = []
    for section in sections:
        table = _table(section, runs)
        if table.rows:
            result.append(table)
    return result


def derived_records(records: Sequence[CellRecord]) -> list[CellRecord]:
    """What the runs' cells say together, as records of their own, for a section to show: each
    kind folder's tables.py DERIVED (a function from a run's records to more records: the
    throughput kind's batch curves and precision ratios), imported here, not at the top, as a
    kind's tables import this module."""
    from accelbench import kinds

    return [found for module in kinds.each("tables") for derive in module.DERIVED for found in derive(records)]


def _table(section: Section, runs: Sequence[tuple[str, Sequence[CellRecord]]]) -> Table:
    found: dict[tuple[str, str], dict[str, dict[str, str]]] = {}  # (device, model) -> tag -> column -> text
    columns: list[str] = []
    for tag, records in runs:
        for record in records:
            if record.benchmark not in section.benchmarks:
                continue
            if section.metric not in record.info and not section.every_cell:
                continue
            column = section.column(record)
            if column not in columns:
                columns.append(column)
            found.setdefault((record.device, record.model), {}).setdefault(tag, {})[column] = section.cell_text(record)
    several = len(runs) > 1
    header = ("device", "model", *(("run",) if several else ()), *columns)
    rows = tuple(
        (device, model, *((tag,) if several else ()), *(by_tag[tag].get(column, "-") for column in columns))
        for (device, model), by_tag in found.items()
        for tag, _ in runs
        if tag in by_tag
    )
    return Table(section.title, header, rows)


def text_lines(table: Table) -> list[str]:
    """A table for a fixed-width terminal: columns padded to their widest entry."""
    widths = [max(len(row[i]) for row in (table.header, *table.rows)) for i in range(len(table.header))]
    line = lambda row: "  ".join(text.ljust(width) for text, width in zip(row, widths)).rstrip()
    return [table.title, line(table.header), *(line(row) for row in table.rows)]


LEGEND = "beside a number: its verdict (ok, FAIL, new: no baseline yet, ungated: none for this machine and settings)"


# --- the A/B table -------------------------------------------------------------------------------

AB_HEADER = (
    "cell",
    "A round",
    "B round",
    "B/A [95% interval]",
    "pairs",
    "verdict",
    "host peak A -> B",
    "compile A -> B",
)


def _as_json(verdict: Any) -> Mapping[str, Any]:
    return verdict if isinstance(verdict, Mapping) else verdict.as_json()


def _single(verdict: Mapping[str, Any] | None, show: Callable[[float], str]) -> str:
    """A one-measurement-a-side A/B number (peak, compile): A -> B, marked where B lies beyond
    the rule it is shown against (reported, not judged) or where it did not come back."""
    if not verdict or verdict.get("measured") is None:
        return "-"
    beyond = verdict["outcome"] == REPORTED and (verdict.get("statistic") or {}).get("beyond_rule")
    mark = (
        " beyond its rule"
        if beyond
        else ""
        if verdict["outcome"] in (PASS, REPORTED)
        else f" {MARKS[verdict['outcome']]}"
    )
    return f"{show(verdict['baseline'])} -> {show(verdict['measured'])}{mark}"


def ab_rows(verdicts: Sequence[Any]) -> list[tuple[str, ...]]:
    """One row per cell judged B against A (Verdict objects or their JSON): cells whose worker
    failed first, saying why, then the largest slowdown first."""
    by_metric: dict[str, dict[str, Mapping[str, Any]]] = {}
    for verdict in map(_as_json, verdicts):
        by_metric.setdefault(verdict.get("metric", ""), {})[verdict.get("cell", "")] = verdict
    keyed = []  # (sort key, row): failed workers first (no ratio), then the largest ratio
    for cell, v in by_metric.get(AB_TIME, {}).items():
        if v.get("outcome") == SKIPPED:
            continue
        statistic, ratio = v.get("statistic") or {}, v.get("measured")
        if ratio is None:  # a worker failed: no numbers
            keyed.append(
                (float("-inf"), (cell, "-", "-", "-", "-", f"{MARKS[v['outcome']]}: {v['message'][:80]}", "-", "-"))
            )
            continue
        low, high = statistic["ci95"]
        keyed.append(
            (
                -ratio,
                (
                    cell,
                    f"{statistic['a'] * 1e3:.1f} ms",
                    f"{statistic['b'] * 1e3:.1f} ms",
                    f"{ratio:.3f} [{low:.3f}, {high:.3f}]",
                    str(statistic["pairs"]),
                    MARKS[v["outcome"]],
                    _single(by_metric.get(AB_PEAK, {}).get(cell), format_bytes),
                    _single(by_metric.get(AB_COMPILE, {}).get(cell), lambda s: f"{s:.2f} s"),
                ),
            )
        )
    return [row for _, row in sorted(keyed, key=lambda pair: pair[0])]


AB_LOAD_HEADER = ("cell", "number", "A", "B", "B/A", "verdict")
AB_LOAD_TITLE = (
    "served under load, each side's best of its two turns, by the gate's rule "
    "(B slower: a rate's B/A below 1, a latency's above 1)"
)


def ab_load_rows(verdicts: Sequence[Any]) -> list[tuple[str, ...]]:
    """One row per number of a cell served under load (LoadGen) and judged B against A: a
    gate's metric after AB_PREFIX, A's and B's pick of their turns. Sides that failed first."""
    keyed = []  # (0: a side failed, 1: judged, row)
    for verdict in map(_as_json, verdicts):
        metric = verdict.get("metric", "")
        if not metric.startswith(AB_PREFIX) or metric in AB_METRICS:
            continue
        outcome, cell, number = verdict.get("outcome"), verdict.get("cell", ""), metric.removeprefix(AB_PREFIX)
        mark = MARKS.get(outcome, outcome)
        a, b = verdict.get("baseline"), verdict.get("measured")
        if a is None or b is None:
            keyed.append((0, (cell, number, "-", "-", "-", f"{mark}: {verdict.get('message', '')[:80]}")))
            continue
        ratio = f"{b / a:.3f}" if a else "-"
        keyed.append((1, (cell, number, format_number(a), format_number(b), ratio, mark)))
    return [row for _, row in sorted(keyed, key=lambda pair: pair[0])]


class Side(Protocol):
    """What an A/B side's worker said of itself (processes.protocol.Described)."""

    versions: Mapping[str, str]
    fingerprint: str


def ab_lines(
    environment_b: str,
    described: Mapping[str, Side],
    verdicts: Sequence[Any],
    environment_a: str = "A (this interpreter)",
) -> list[str]:
    """The terminal's A/B section: what B and A are, then the tables (timed cells, cells served under load)."""
    timed, under_load = ab_rows(verdicts), ab_load_rows(verdicts)
    lines = [f"{environment_b} against {environment_a}" + (": B/A above 1 is B slower" if timed else "")]
    for side, about in described.items():
        versions = ", ".join(f"{k} {v}" for k, v in about.versions.items())
        lines.append(f"{side}: {versions}; {about.fingerprint}")
    if not timed and not under_load:
        return lines + ["no cell was judged B against A"]
    if timed:
        lines += text_lines(Table("", AB_HEADER, tuple(timed)))[1:]  # no title: the line above says it
    if under_load:
        lines += text_lines(Table(AB_LOAD_TITLE, AB_LOAD_HEADER, tuple(under_load)))
    return lines


def data_line(records: Sequence[CellRecord]) -> str | None:
    """Which data each model ran on, where a run's models ran on more than one dataset (each
    model's own: ModelSpec.dataset); None where they shared one (a run saved before cells named
    their data shares its one)."""
    models_by_dataset: dict[str, list[str]] = {}
    for record in records:
        where = record.place
        model = where.model_name or record.model  # the row's label may carry a backend and precision
        if where.dataset and model not in models_by_dataset.setdefault(where.dataset, []):
            models_by_dataset[where.dataset].append(model)
    if len(models_by_dataset) < 2:
        return None
    return "data: " + "; ".join(f"{name} ({', '.join(models)})" for name, models in models_by_dataset.items())


def roof_line(roof: Roof) -> str:
    """A device's measured roofs in words: what every utilization in the tables is taken against."""
    return (
        f"roofs of {roof.device} on {roof.backend} in {roof.dtype}, measured: {flops(roof.flops_per_s)}/s "
        f"(a {roof.matmul_size}x{roof.matmul_size} matmul), "
        f"{format_bytes(roof.bytes_per_s)}/s ({roof.bandwidth_kernel}); "
        f"ridge point {roof.ridge_intensity:.3g} FLOPs per byte"
    )
