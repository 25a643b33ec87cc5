"""What a cell ran with and what its rounds come to, as result parts: the Keras backend, the
dtype policy, the throughput; made the same way whether the cell ran in the pytest process or
in a worker."""

from __future__ import annotations

import os
from typing import Any

from accelbench.axes.backends import BACKENDS, FLOAT32_IEEE, PROCESS_BACKEND
from accelbench.axes.devices import is_accelerator, kind_of
from accelbench.axes.models import UNKNOWN_FLOPS
from accelbench.axes.precisions import PRECISIONS
from accelbench.judge import fingerprint
from accelbench.measured import BackendUsed, PrecisionUsed, Throughput


def backend_here() -> BackendUsed:
    """The pytest process's own backend, recorded as a worker's is."""
    backend = BACKENDS[PROCESS_BACKEND]
    return BackendUsed(
        backend=backend.name,
        backend_versions=fingerprint.versions(backend.packages),
        compiled_with=backend.compiles,
    )


def precision_used(cell: Any) -> PrecisionUsed:
    """The cell's dtype policy, and on a CPU whether it computes natively in it, and why not."""
    precision = PRECISIONS[cell.precision]
    arithmetic, note = None, None
    if not is_accelerator(kind_of(cell.device)):
        arithmetic, note = precision.cpu_arithmetic(
            fingerprint.cpu_flags(), os.environ, getattr(cell, "backend", PROCESS_BACKEND)
        )
    return PrecisionUsed(
        precision=precision.name,
        precision_arithmetic=arithmetic,
        precision_note=note,
        float32_arithmetic=FLOAT32_IEEE,
    )


def throughput(samples_per_round: int, median_round: float | None, flops_per_sample: float | None, **measured: Any):
    """Samples/s from the median round (none under --benchmark-disable), and FLOP/s where the
    model's work is counted; "unknown" where it is not (models.forward_flops_per_sample), never
    a silent 0."""
    if not median_round:
        return Throughput(**measured)
    samples_per_s = samples_per_round / median_round
    if flops_per_sample is None:
        return Throughput(samples_per_s=samples_per_s, flops_per_sample=UNKNOWN_FLOPS, **measured)
    return Throughput(
        samples_per_s=samples_per_s,
        flops_per_sample=flops_per_sample,
        achieved_flops=flops_per_sample * samples_per_s,
        **measured,
    )
