"""Keras 3 backends as an axis: what every backend is (Backend), the registry (BACKENDS), and
what the work asks of whichever backend it runs on. Each backend is one module beside this
one (tensorflow.py, jax.py, torch.py) that registers itself.

Keras fixes its backend when it is first imported (`KERAS_BACKEND`), and the pytest process
runs TensorFlow's. A cell on another backend is therefore built and timed in a worker started
with `KERAS_BACKEND` set (workers.py), the same model code from models.py, fed NumPy arrays
rather than tf.data so that nothing of TensorFlow sits in its timed rounds.

This package is imported on both sides: the registry and the environments by the pytest
process, `Neutral` and the allocator statistics inside a worker (each backend's module imports
its own library only inside the functions a worker calls).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from accelbench.axes.devices import AUTO, is_accelerator, kind_of
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
    # Inside its worker: the accelerators it sees (device kind -> description; the CPU is always
    # there), its allocator's peak over some work (None: it keeps none), and its profiler (a
    # context manager over the traced steps, given the trace folder, that yields how to mark
    # one step: (phase, number) -> a context manager). TensorFlow's devices and device peak are
    # the pytest process's own (devices.Inventory, memory.device_peak).
    accelerators: Callable[[], dict[str, str]] = lambda: {}
    device_peak: Callable[[Callable[[], object]], int | None] | None = None
    profiler: Callable[[Any], Any] | None = None
    # Whether the CPU's lower-precision arithmetic is known for this backend (precisions.py:
    # TensorFlow's oneDNN kernels are checked; other backends' are "not known").
    cpu_kernels_checked: bool = False
    # What keras.device() is given to pin a CPU cell to the host: "cpu:0" for JAX (a device and
    # its number); torch differs (torch.py).
    cpu_device: str = "cpu:0"

    def installed(self) -> bool:
        return importable(self.module)

    def missing_reason(self) -> str:
        return f"the {self.name} backend needs {self.module}, which is not installed here: {self.install}"

    def environment(self) -> Environment:
        """The worker this backend's cells run in: this interpreter, KERAS_BACKEND set."""
        return Environment(self.name, sys.executable, (("KERAS_BACKEND", self.name), *self.variables))


# float32 as IEEE float32 on every backend (TF32 off): what each cell's extra_info says.
FLOAT32_IEEE = "IEEE float32 (TF32 off)"

BACKENDS: Registry[Backend] = Registry("backend")


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
        return None if is_accelerator(self.kind) else BACKENDS[self.backend].cpu_device

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

    return {"cpu": cpu_description(), **BACKENDS[backend].accelerators()}


def device_peak_bytes(backend: str, device: str, work: Callable[[], object]) -> int | None:
    """The backend allocator's own peak while `work` runs on an accelerator, above what was
    resident when it started (peak_above_start); None on the CPU (host memory is
    memray's), where the allocator says nothing, or where JAX's unresettable peak stayed at an
    earlier cell's high-water mark."""
    if not is_accelerator(kind_of(device)):
        return None
    peak = BACKENDS[backend].device_peak
    return peak(work) if peak else None


def peak_above_start(
    read: Callable[[], tuple[int, int]], reset: Callable[[], object] | None, work: Callable[[], object]
) -> int | None:
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
