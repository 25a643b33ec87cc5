"""What crosses to a distributed cell's job processes (jobs.py starts them, job_main.py and
jax_job_main.py run them): the Job, as JSON beside the process, and its Result."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from accelbench.processes.protocol import RunFields


@dataclass(frozen=True)
class Job:
    """What one process of a distributed cell does; passed to it as JSON."""

    mode: str  # single, replicas, workers
    model: str
    per_replica_batch: int
    replicas: int  # devices (replicas) or processes (workers); 1 for single
    # what every worker of the run gets: the data, the model options, the intra-op threads
    # (0: TensorFlow's choice) and the user's modules, imported before the model is built
    run: RunFields
    check_steps: int = 5  # steps whose losses are compared
    rounds: int = 5
    steps_per_round: int = 10
    device: str = "cpu"  # replicas: cpu (logical CPU devices) or gpu (the GPUs)
    use_fit: bool = False  # train with Keras fit() instead of the custom loop (the xfail check)
    backend: str = "tensorflow"  # whose job runs it (distributed.JOB_MAINS): tf.distribute's, or JAX's DataParallel

    @property
    def global_batch(self) -> int:
        return self.per_replica_batch * self.replicas

    def with_threads(self, threads: int) -> Job:
        return replace(self, run=replace(self.run, intra_op_threads=threads))

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> Job:
        """As asdict wrote it: the run's fields nested, its tuples as lists."""
        return cls(**{**saved, "run": RunFields.from_wire(saved["run"])})


@dataclass
class Result:
    losses: list[float]  # the reduced loss of each of the first check_steps steps
    round_seconds: list[float]
    samples_per_round: int
    replicas_in_sync: int
    devices: list[str] = field(default_factory=list)
    reference_round_seconds: list[float] = field(default_factory=list)  # single: at the per-replica batch
    reference_samples_per_round: int = 0

    @property
    def samples_per_s(self) -> float:
        return self.samples_per_round / statistics.median(self.round_seconds)

    @property
    def fastest_samples_per_s(self) -> float:
        """Of the best round: what A/B comparisons rank (noise only ever slows a round)."""
        return self.samples_per_round / min(self.round_seconds)

    @property
    def reference_samples_per_s(self) -> float:
        return self.reference_samples_per_round / statistics.median(self.reference_round_seconds)
