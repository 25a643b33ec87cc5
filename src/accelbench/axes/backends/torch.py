"""The PyTorch backend, in a worker of its own (KERAS_BACKEND=torch)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from accelbench.axes.backends.base import BACKENDS, Backend, peak_above_start

# float32 as IEEE float32: NVIDIA_TF32_OVERRIDE=0 keeps cuDNN's convolutions, which PyTorch
# lets use TF32 by default (torch.backends.cudnn.allow_tf32), in float32.
VARIABLES = (("NVIDIA_TF32_OVERRIDE", "0"),)


def accelerators() -> dict[str, str]:
    import torch

    return (
        {"gpu": f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"} if torch.cuda.is_available() else {}
    )


def device_peak(work: Callable[[], object]) -> int | None:
    import torch

    if not torch.cuda.is_available():
        return None
    read = lambda: (int(torch.cuda.memory_allocated()), int(torch.cuda.max_memory_allocated()))  # noqa: E731
    return peak_above_start(read, torch.cuda.reset_peak_memory_stats, work)


@contextlib.contextmanager
def profiler(folder: Path) -> Iterator[Callable[[str, int], Any]]:
    import torch

    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(
        activities=activities, on_trace_ready=torch.profiler.tensorboard_trace_handler(str(folder))
    ):
        yield lambda phase, number: torch.profiler.record_function(f"{phase} step {number}")


BACKENDS.register(
    "torch",
    Backend(
        "torch",
        "torch",
        ("torch", "keras"),
        "pip install 'accelbench[torch]' (CPU-only wheel: --index-url https://download.pytorch.org/whl/cpu)",
        "eager PyTorch (Keras' jit_compile on torch would be torch.compile)",
        steps_per_call=False,
        # Not "cpu:0": Keras 3.15's torch Variable is made as a Parameter and then .to(device), and
        # torch takes "cpu:0" for another device than the tensor's "cpu", so each weight became a
        # copy that is no Parameter and no leaf: "No gradients provided for any variable" at the
        # first step of every model built under keras.device("cpu:0"). With "cpu" .to() is a no-op.
        cpu_device="cpu",
        variables=VARIABLES,
        accelerators=accelerators,
        device_peak=device_peak,
        profiler=profiler,
    ),
)
