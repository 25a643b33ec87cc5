"""A memory cell's step measured in a backend's worker (Bench.in_worker), as the pytest process
measures its own: child-safe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelbench.axes import backends
from accelbench.axes.backends import PROCESS_BACKEND


@dataclass(frozen=True)
class StepMemoryReply:
    """A memory cell measured in a worker (step_memory_in_worker), as StepMemoryBench measures one."""

    host_peak_bytes: int
    host_peak_repeats: list[int]  # the recording's further peaks (its spread); [] when not recording
    device_peak_bytes: int | None  # None: the backend keeps no device allocator count here
    estimated_bytes: int | None  # None: the estimate does not know the model (estimate_unknown says why)
    estimate_unknown: str
    device: str


def step_memory_in_worker(
    site: Any, work_name: str, steps_measured: int, repeats: int = 1, first_in_process: bool = False
) -> StepMemoryReply:
    """The step of `work_name` (a work.builders.STEPS entry) built and warmed up here, then the
    backend allocator's device peak where it keeps one, memray's host peak over `steps_measured`
    steps, and the analytic estimate. `first_in_process`: this worker was started for this call alone (an
    allocator whose peak cannot be reset), and the device peak is read before memray's runs of
    the same steps."""
    from accelbench.work import memory
    from accelbench.work.builders import STEPS

    step = STEPS[work_name](site)

    def steps() -> None:
        for _ in range(steps_measured):
            step.run()

    device_peak = backends.device_peak_bytes(PROCESS_BACKEND, site.placement, steps, first_in_process)
    repeated = [memory.host_peak(steps) for _ in range(repeats - 1)]  # recording: the peak's spread
    host_peak = memory.host_peak(steps)
    return StepMemoryReply(
        host_peak_bytes=host_peak,
        host_peak_repeats=repeated,
        device_peak_bytes=device_peak,
        estimated_bytes=step.estimated_bytes,
        estimate_unknown=step.why_unknown,
        device=site.placement.description,
    )
