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

from accelbench.registry import Registry
from accelbench.workers import Environment

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

    def installed(self) -> bool:
        return importable(self.module)

    def missing_reason(self) -> str:
        return f"the {self.name} backend needs {self.module}, which is not installed here: {self.install}"

    def environment(self) -> Environment:
        """The worker this backend's cells run in: this interpreter, KERAS_BACKEND set."""
        return Environment(self.name, sys.executable, (("KERAS_BACKEND", self.name),))


BACKENDS: Registry[Backend] = Registry("backend")
BACKENDS.register("tensorflow", Backend(
    "tensorflow", "tensorflow", ("tensorflow", "keras"), "pip install accelbench",
    "tf.function (XLA where jit_compile is on)"))
BACKENDS.register("jax", Backend(
    "jax", "jax", ("jax", "jaxlib", "keras"), "pip install 'accelbench[jax]'", "jax.jit (XLA)"))
BACKENDS.register("torch", Backend(
    "torch", "torch", ("torch", "keras"),
    "pip install 'accelbench[torch]' (CPU-only wheel: --index-url https://download.pytorch.org/whl/cpu)",
    "eager PyTorch (Keras' jit_compile on torch would be torch.compile)", steps_per_call=False))


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

    @property
    def kind(self) -> str:
        return self.name.split(":")[0]

    def scope(self) -> Any:
        if self.backend == "jax" and self.kind == "cpu":
            import jax

            return jax.default_device(jax.devices("cpu")[0])
        return contextlib.nullcontext()


def current() -> str:
    """This process's Keras backend."""
    import keras

    return keras.backend.backend()


def devices_here(backend: str) -> dict[str, str]:
    """Device name (as --devices names it) -> description, as this backend sees them."""
    from accelbench.devices import cpu_description

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
    """The backend allocator's own peak while `work` runs on an accelerator, where it keeps one;
    None on the CPU (host memory is memray's) or where the allocator says nothing. PyTorch's
    peak is reset first; JAX's cannot be, so it is the process's high-water mark so far."""
    if device.split(":")[0] == "cpu":
        return None
    peak = DEVICE_PEAKS.get(backend)
    return peak(work) if peak else None


def _jax_peak(work: Callable[[], object]) -> int | None:
    import jax

    work()
    return (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")


def _torch_peak(work: Callable[[], object]) -> int | None:
    import torch

    if not torch.cuda.is_available():
        return None
    torch.cuda.reset_peak_memory_stats()
    work()
    return int(torch.cuda.max_memory_allocated())


DEVICE_PEAKS = {"jax": _jax_peak, "torch": _torch_peak}  # tensorflow's: memory.device_peak, in the pytest process
