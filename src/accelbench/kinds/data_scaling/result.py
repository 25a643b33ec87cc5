"""A data-scaling cell's result, typed (accelbench.measured.Part): the sizes, their times and
host peaks, and each quantity's fit and projection. No framework, no pytest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from accelbench.measured import Part


@dataclass(frozen=True)
class DataScaling(Part):
    """Time and host peak of one phase at growing data sizes, and the projection's verdict."""

    device: str | None = None
    phase: str | None = None
    work: str | None = None
    sizes: list[int] | None = None
    seconds: list[float] | None = None
    seconds_rounds: list[list[float]] | None = None
    peak_memory_bytes: list[int] | None = None
    sizes_stopped: str | None = None
    target_n: int | None = None
    machine_memory_bytes: int | None = None
    projection_verdict: str | None = None
    unsafe_reasons: list[str] | None = None
    memray_tracking: bool | None = None


@dataclass(frozen=True)
class Projected(Part):
    """One quantity's fit a + b·n^k over the sizes, its back-test and its projection to the
    target; time's keys are plain, memory's prefixed (`memory_exponent`)."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "exponent": "{prefix}exponent",
        "exponent_stderr": "{prefix}exponent_stderr",
        "loglog_exponent": "{prefix}loglog_exponent",
        "loglog_exponent_stderr": "{prefix}loglog_exponent_stderr",
        "fit": "{prefix}fit",
        "backtest": "{prefix}backtest",
        "backtest_ok": "{prefix}backtest_ok",
        "projected": "projected_{quantity}",
        "projected_ci95": "projected_{quantity}_ci95",
    }
    NAMING: ClassVar[tuple[str, ...]] = ("quantity", "prefix")

    quantity: str = "seconds"
    prefix: str = ""
    exponent: float | None = None
    exponent_stderr: float | None = None
    loglog_exponent: float | None = None
    loglog_exponent_stderr: float | None = None
    fit: dict[str, float] | None = None  # a, b, k
    backtest: dict[str, Any] | None = None  # size, measured, predicted, ci95
    backtest_ok: bool | None = None
    projected: float | None = None
    projected_ci95: list[float] | None = None


# The projections a data-scaling cell records: (quantity, the DataScaling field it projects, prefix).
TIME_PROJECTION = {"quantity": "seconds", "prefix": ""}
MEMORY_PROJECTION = {"quantity": "peak_memory_bytes", "prefix": "memory_"}
