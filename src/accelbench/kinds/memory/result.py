"""The memory cells' results, typed (accelbench.measured.Part): no framework, no pytest."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.measured import Part


@dataclass(frozen=True)
class StepMemory(Part):
    """Host and device peaks of one step (or batch), each beside the smallest growth its gate
    detects, and the cap the estimate puts on the host's."""

    device: str | None = None
    backend: str | None = None
    batch_size: int | None = None
    steps_measured: int | None = None
    estimated_bytes: int | None = None
    host_memory_cap_bytes: int | None = None
    host_memory_cap_from: str | None = None
    memory_measured_in: str | None = None
    peak_memory_bytes: int | None = None
    peak_memory_bytes_detectable_growth: float | None = None
    device_peak_memory_bytes: int | None = None
    device_peak_memory_bytes_detectable_growth: float | None = None
    device_peak_over_estimate: float | None = None  # the device peak over the analytic estimate
    device_peak_from: str | None = None  # the allocator's reset peak, or the compiler's count (JAX)
    # Of a counted device peak, the largest library kernel's workspace (backends.StepCount): XLA
    # gives a cuBLAS-Lt matmul 32 MiB on Hopper whatever its size, which no estimate holds.
    device_workspace_bytes: int | None = None


@dataclass(frozen=True)
class Leaks(Part):
    device: str | None = None
    batch_size: int | None = None
    predictions: int | None = None
    leak_limit_per_location_bytes: int | None = None


@dataclass(frozen=True)
class MemoryScaling(Part):
    """Training-step peaks against batch size: the fit, the analytic estimate, the largest batch."""

    device: str | None = None
    ladder_batch_sizes: list[int] | None = None
    ladder_peak_bytes: list[int] | None = None
    fixed_bytes: float | None = None
    per_sample_bytes: float | None = None
    fit_max_residual_bytes: float | None = None
    estimated_fixed_bytes: int | None = None
    estimated_per_sample_bytes: int | None = None
    weight_bytes: int | None = None
    optimizer_slot_bytes: int | None = None
    memory_budget_bytes: int | None = None
    largest_batch: int | None = None
    largest_batch_search: str | None = None


# --- data scaling ------------------------------------------------------------------------------
