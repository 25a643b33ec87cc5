"""Keras 3 backends as an axis: TensorFlow, JAX and PyTorch, each in a worker process of its own.

Keras fixes its backend when it is first imported (`KERAS_BACKEND`), and the pytest process
runs TensorFlow's. A cell on another backend is therefore built and timed in a worker started
with `KERAS_BACKEND` set (workers.py), the same model code from models.py, fed NumPy arrays
rather than tf.data so that nothing of TensorFlow sits in its timed rounds.

This module is imported on both sides: the registry and the environments by the pytest
process, `Neutral` and the allocator statistics inside a worker (they import only the
worker's own backend).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from accelbench.axes.devices import AUTO
from accelbench.environments import Environment
from accelbench.registry import Registry

PROCESS_BACKEND = "tensorflow"  # the pytest process's own Keras backend


def importable(module: str) -> bool:
    """Whether the module is installed, without importing it."""
    return importlib.util.find_spec(module) is not None


@dataclass(frozen=True)
class Backend:
    name: str  # KERAS_BACKEND's value
    module: str  # the library that must be importable
    packages: tuple[str, ...]  # distributions whose versions a cell records
    install: str  # how to get it, for the skip reason where it is missing
    compiles: str  # what Keras compiles a training step with on this backend
    # Whether Keras can run several training steps in one compiled call (steps_per_execution);
    # on PyTorch it must be 1, and fit() loops over the steps in Python.
    steps_per_call: bool = True
    variables: tuple[tuple[str, str], ...] = ()  # set in this backend's worker, beside KERAS_BACKEND

    def installed(self) -> bool:
        return importable(self.module)

    def missing_reason(self) -> str:
        return f"the {self.name} backend needs {self.module}, which is not installed here: {self.install}"

    def environment(self) -> Environment:
        """The worker this backend's cells run in: this interpreter, KERAS_BACKEND set."""
        return Environment(self.name, sys.executable, (("KERAS_BACKEND", self.name), *self.variables))


# float32 as IEEE float32, as devices.init_tensorflow sets TensorFlow's: JAX's matmuls at full
# precision (not TF32, nor bfloat16 passes on a TPU); NVIDIA_TF32_OVERRIDE=0 keeps cuDNN's
# convolutions, which PyTorch lets use TF32 by default (torch.backends.cudnn.allow_tf32), in float32.
FLOAT32_IEEE = "IEEE float32 (TF32 off)"
JAX_VARIABLES = (("JAX_DEFAULT_MATMUL_PRECISION", "highest"),
                 # XLA takes 75% of GPU 0 at start unless told not to; TensorFlow's cells share it.
                 ("XLA_PYTHON_CLIENT_PREALLOCATE", "false"))
TORCH_VARIABLES = (("NVIDIA_TF32_OVERRIDE", "0"),)

BACKENDS: Registry[Backend] = Registry("backend")
BACKENDS.register("tensorflow", Backend(
    "tensorflow", "tensorflow", ("tensorflow", "keras"), "pip install accelbench",
    "tf.function (XLA where jit_compile is on)"))
BACKENDS.register("jax", Backend(
    "jax", "jax", ("jax", "jaxlib", "keras"), "pip install 'accelbench[jax]'", "jax.jit (XLA)",
    variables=JAX_VARIABLES))
BACKENDS.register("torch", Backend(
    "torch", "torch", ("torch", "keras"),
    "pip install 'accelbench[torch]' (CPU-only wheel: --index-url https://download.pytorch.org/whl/cpu)",
    "eager PyTorch (Keras' jit_compile on torch would be torch.compile)", steps_per_call=False,
    variables=TORCH_VARIABLES))


# --- inside a worker whose KERAS_BACKEND is not TensorFlow ----------------------------------

@dataclass(frozen=True)
class Neutral:
    """A placement for a backend other than TensorFlow: no tf.device, no tf.data.

    The work (training.Trainer, inference.ArrayPredictor) asks it for a scope and feeds
    NumPy arrays, which Keras moves to the backend's device batch by batch. Only the CPU
    is placed explicitly; on an accelerator Keras' own default (the first one) applies.
    """

    name: str
    description: str
    backend: str
    FEEDS_ARRAYS: ClassVar[bool] = True

    jit_compile: ClassVar[str] = AUTO  # JAX runs through XLA everywhere; on torch "auto" is eager

    @property
    def kind(self) -> str:
        return self.name.split(":")[0]

    @property
    def keras_device(self) -> str | None:
        """What keras.device() is given: a "cpu" cell pinned to the CPU. Keras' torch backend
        otherwise puts every tensor on CUDA wherever CUDA is available, and JAX on its first
        accelerator; an accelerator's cell takes that default (the first one)."""
        return "cpu:0" if self.kind == "cpu" else None

    def scope(self) -> Any:
        if self.keras_device is None:
            return contextlib.nullcontext()
        import keras

        return keras.device(self.keras_device)


def current() -> str:
    """This process's Keras backend."""
    import keras

    return keras.backend.backend()


def devices_here(backend: str) -> dict[str, str]:
    """Device name (as --devices names it) -> description, as this backend sees them."""
    from accelbench.axes.devices import cpu_description

    found = {"cpu": cpu_description()}
    if backend == "jax":
        import jax

        for kind in ("gpu", "tpu"):
            try:
                present = jax.devices(kind)
            except RuntimeError:  # no such platform
                continue
            found[kind] = f"{len(present)} x {present[0].device_kind}"
    elif backend == "torch":
        import torch

        if torch.cuda.is_available():
            found["gpu"] = f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"
    return found


def device_peak_bytes(backend: str, device: str, work: Callable[[], object]) -> int | None:
    """The backend allocator's own peak while `work` runs on an accelerator, above what was
    resident when it started (peak_above_start); None on the CPU (host memory is
    memray's), where the allocator says nothing, or where JAX's unresettable peak stayed at an
    earlier cell's high-water mark."""
    if device.split(":")[0] == "cpu":
        return None
    peak = DEVICE_PEAKS.get(backend)
    return peak(work) if peak else None


def _jax_peak(work: Callable[[], object]) -> int | None:
    import jax

    device = jax.devices()[0]
    if device.memory_stats() is None:
        work()
        return None

    def read() -> tuple[int, int]:
        stats = device.memory_stats()
        return stats["bytes_in_use"], stats["peak_bytes_in_use"]

    return peak_above_start(read, None, work)  # JAX has no reset


def _torch_peak(work: Callable[[], object]) -> int | None:
    import torch

    if not torch.cuda.is_available():
        return None
    read = lambda: (int(torch.cuda.memory_allocated()), int(torch.cuda.max_memory_allocated()))  # noqa: E731
    return peak_above_start(read, torch.cuda.reset_peak_memory_stats, work)


def peak_above_start(read: Callable[[], tuple[int, int]], reset: Callable[[], object] | None,
                     work: Callable[[], object]) -> int | None:
    """The most bytes an allocator held during `work` on top of what it held when the work
    started: read() gives (bytes in use, peak bytes); reset() restarts the peak, where the
    allocator can (TensorFlow, PyTorch). What earlier cells left alive (their models, their
    caches) is not counted, so the figure does not depend on run order or -k. An allocator
    whose peak cannot be reset (JAX) tells this work's peak only if the work raised it: None
    where an earlier cell's high-water mark stayed above."""
    if reset is not None:
        reset()
    in_use, peak_before = read()
    work()
    _, peak = read()
    if reset is None and peak <= peak_before:
        return None
    return max(0, peak - in_use)


DEVICE_PEAKS = {"jax": _jax_peak, "torch": _torch_peak}  # tensorflow's: memory.device_peak, in the pytest process
