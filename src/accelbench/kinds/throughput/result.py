"""A latency cell's result, typed (accelbench.measured.Part): no framework, no pytest. The
training and inference cells record the parts every timed cell records (Timed, Throughput,
Utilization, in accelbench.measured)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.measured import Part


@dataclass(frozen=True)
class Latency(Part):
    """Batch-1 predictions, each waiting for its result."""

    compile_seconds: float | None = None
    latency_p50_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p99_ms: float | None = None
    worker_latency_seconds: list[float] | None = None  # another backend's: its worker's own clock
    pipe_seconds: float | None = None

    @classmethod
    def from_percentiles(cls, percentiles: Mapping[str, float], **measured: Any) -> Latency:
        """From work.measure.percentiles (seconds, by p50/p90/p99)."""
        return cls(**{f"latency_{name}_ms": seconds * 1e3 for name, seconds in percentiles.items()}, **measured)
