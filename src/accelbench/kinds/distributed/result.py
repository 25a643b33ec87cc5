"""The distributed and threads cells' results, typed (accelbench.measured.Part): no framework,
no pytest."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.measured import Part


@dataclass(frozen=True)
class Threads(Part):
    device: str | None = None
    batch_size: int | None = None
    cores: int | None = None
    one_thread_samples_per_s: float | None = None
    all_threads_samples_per_s: float | None = None
    all_threads_speedup: float | None = None
    parallel_efficiency: float | None = None
    pair_ratios: list[float] | None = None


@dataclass(frozen=True)
class Distributed(Part):
    """tf.distribute across replicas or worker processes, against one device."""

    replicas: int | None = None
    workers: int | None = None
    device: str | None = None
    per_replica_batch: int | None = None
    global_batch: int | None = None
    replicas_in_sync: int | None = None
    replica_devices: list[str] | None = None
    samples_per_s: float | None = None
    one_device_samples_per_s: float | None = None
    scaling_efficiency: float | None = None
    losses: list[float] | None = None
    reference_losses: list[float] | None = None
    loss_gap: float | None = None
    loss_tolerance: float | None = None
