"""The training and inference cells' numbers taken together, as records of their own for the
summary's sections (results.summary.derived_records): throughput against batch size (saturation,
over the smallest batch, where a device overtakes the cpu) and a precision's throughput over
float32's. No pytest, no framework: the report builds them from saved runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.axes.devices import REFERENCE_DEVICE as REFERENCE
from accelbench.axes.precisions import NATIVE
from accelbench.judge import analysis
from accelbench.measured import PrecisionUsed, Throughput
from accelbench.results.summary import CellRecord
from accelbench.units import times

CURVE = "batch_curve"  # derived records: throughput against batch size, across a run's cells
SATURATION, OVER_SMALLEST, OVERTAKES_CPU = "saturation", "throughput_over_smallest", "overtakes_cpu"  # their keys
PRECISION_SPEEDUP = "precision_speedup"  # derived records: a precision's throughput over float32's
OVER_FLOAT32 = "over_float32"  # their key


# --- a precision's throughput over float32's ---------------------------------------------------


def precision_records(records: Sequence[CellRecord]) -> list[CellRecord]:
    """Each training and inference cell under a lower precision against the same cell under
    float32 (same backend, device, batch and model), marked where that precision is emulated."""

    def twin_key(record: CellRecord, precision: str) -> tuple:
        where = record.place
        return (record.benchmark, where.backend, record.device, record.batch_size, where.model_name, precision)

    timed = [
        r for r in records if r.benchmark in dict(PHASES).values() and r.samples_per_s is not None and r.place.precision
    ]
    float32 = {twin_key(r, r.place.precision): r for r in timed}
    derived = []
    for record in timed:
        reference = float32.get(twin_key(record, "float32"))
        if reference is None or record is reference:
            continue
        ratio = record.samples_per_s / reference.samples_per_s
        phase = "train" if record.benchmark == "train_bench" else "predict"
        arithmetic = PrecisionUsed.of(record.info).precision_arithmetic
        derived.append(
            CellRecord(
                f"{PRECISION_SPEEDUP}[{record.name}]",
                PRECISION_SPEEDUP,
                record.device,
                record.model,
                f"{phase} {record.column}",
                {OVER_FLOAT32: f"{times(ratio)} {arithmetic}" if arithmetic not in (None, NATIVE) else ratio},
            )
        )
    return derived


# --- throughput against batch size, across cells ---------------------------------------------

PHASES = (("train", "train_bench"), ("predict", "inference_bench"))


def curve_records(records: Sequence[CellRecord]) -> list[CellRecord]:
    """What a run's throughputs say across batch sizes and devices, as records of their own:
    the saturation batch size, throughput over the smallest batch's (prediction also with its
    compilation counted: a ratio of cells timed apart, not the interleaved speedup), and the
    batch size where each device overtakes the cpu."""
    derived = []
    for phase, benchmark in PHASES:
        curves: dict[tuple[str, str], list[CellRecord]] = {}
        for record in records:
            if record.benchmark == benchmark and record.batch_size and record.samples_per_s is not None:
                curves.setdefault((record.device, record.model), []).append(record)
        for (device, model), cells in curves.items():
            cells = sorted(cells, key=lambda cell: cell.batch_size)
            derived += _curve(phase, device, model, cells)
        derived += _crossovers(phase, curves)
    return derived


def _derived(device: str, model: str, column: str, info: Mapping[str, Any]) -> CellRecord:
    return CellRecord(f"{CURVE}[{device}-{model}-{column}]", CURVE, device, model, column, info)


def _curve(phase: str, device: str, model: str, cells: list[CellRecord]) -> list[CellRecord]:
    if len(cells) < 2:
        return []
    sizes = [cell.batch_size for cell in cells]
    rates = [cell.samples_per_s for cell in cells]
    saturated = analysis.saturation(sizes, rates)
    found = [
        _derived(device, model, phase, {SATURATION: f"bs{saturated:.0f}" if saturated else f"none up to bs{sizes[-1]}"})
    ]
    found += [
        _derived(device, model, f"{phase} bs{size}", {OVER_SMALLEST: rate / rates[0]})
        for size, rate in zip(sizes[1:], rates[1:])
    ]
    with_overheads = [_with_compilation(cell) for cell in cells]
    if phase == "predict" and all(with_overheads):
        found += [
            _derived(device, model, f"{phase} bs{size} +overheads", {OVER_SMALLEST: rate / with_overheads[0]})
            for size, rate in zip(sizes[1:], with_overheads[1:])
        ]
    return found


def _with_compilation(cell: CellRecord) -> float | None:
    """Samples/s of one timed round with the cell's compilation (first call) added to it."""
    rounds = Throughput.of(cell.info)
    if not rounds.compile_seconds or not rounds.steps_per_round:
        return None
    samples = rounds.steps_per_round * cell.batch_size
    return samples / (samples / rounds.samples_per_s + rounds.compile_seconds)


def _crossovers(phase: str, curves: Mapping[tuple[str, str], list[CellRecord]]) -> list[CellRecord]:
    found = []
    for (device, model), cells in curves.items():
        reference = {c.batch_size: c.samples_per_s for c in curves.get((REFERENCE, model), [])}
        shared = [(c.batch_size, c.samples_per_s / reference[c.batch_size]) for c in cells if c.batch_size in reference]
        if device == REFERENCE or not shared:
            continue
        sizes, ratios = zip(*sorted(shared))
        batch = analysis.crossover(sizes, ratios)
        found.append(
            _derived(device, model, phase, {OVERTAKES_CPU: f"bs≈{batch:.0f}" if batch else f"not up to bs{sizes[-1]}"})
        )
    return found


# What a run's records derive (results.summary.derived_records).
DERIVED = (curve_records, precision_records)
