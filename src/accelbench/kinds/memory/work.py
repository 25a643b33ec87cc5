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
    device_peak_from: str = ""  # how the device peak was found (backends.device_peak_bytes); "": none
    device_workspace_bytes: int | None = None  # of a counted peak, its largest library workspace (StepCount)
    weights_on: str | None = None  # where the step's model's weights lie (backends.weights_on)


def step_memory_in_worker(site: Any, work_name: str, steps_measured: int, repeats: int = 1) -> StepMemoryReply:
    """The step of `work_name` (a work.builders.STEPS entry) built and warmed up here, then its
    device peak on an accelerator (backends.device_peak_bytes), memray's host peak over
    `steps_measured` steps, and the analytic estimate."""
    from accelbench.work import memory
    from accelbench.work.builders import STEPS, weights_device

    step = STEPS[work_name](site)

    def steps() -> None:
        for _ in range(steps_measured):
            step.run()

    counted = backends.counted_step_bytes(PROCESS_BACKEND, site.placement, step.compiled)  # before memray's runs
    device_peak, found_by = backends.device_peak_bytes(PROCESS_BACKEND, site.placement, steps, counted)
    repeated = [memory.host_peak(steps) for _ in range(repeats - 1)]  # recording: the peak's spread
    host_peak = memory.host_peak(steps)
    return StepMemoryReply(
        host_peak_bytes=host_peak,
        host_peak_repeats=repeated,
        device_peak_bytes=device_peak,
        device_peak_from=found_by,
        device_workspace_bytes=counted.workspace_bytes if counted else None,
        estimated_bytes=step.estimated_bytes,
        estimate_unknown=step.why_unknown,
        device=site.placement.description,
        weights_on=weights_device(step.built),
    )
