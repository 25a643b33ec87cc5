"""Keras 3 backends as an axis (see backend.py). Importing the package registers every backend:
a new one is a module here, imported below, in the order options and reports list them."""

# isort: off
from accelbench.axes.backends import tensorflow  # noqa: F401  (first: a process takes it where it can)
from accelbench.axes.backends import jax  # noqa: F401
from accelbench.axes.backends import torch  # noqa: F401

# isort: on
from accelbench.axes.backends.backend import (
    BACKENDS,
    EXTRAS,
    FLOAT32_IEEE,
    PROCESS_BACKEND,
    Backend,
    CompiledStep,
    Neutral,
    NoBackend,
    StepCount,
    absent_reason,
    compiled,
    counted_step_bytes,
    current,
    device_peak_bytes,
    importable,
    inventory,
    lies_elsewhere,
    measure_roof,
    peak_above_start,
    placed_elsewhere,
    software,
    use_process_backend,
    versions,
    weights_on,
)

__all__ = [
    "BACKENDS",
    "EXTRAS",
    "FLOAT32_IEEE",
    "PROCESS_BACKEND",
    "Backend",
    "CompiledStep",
    "Neutral",
    "NoBackend",
    "StepCount",
    "absent_reason",
    "compiled",
    "counted_step_bytes",
    "current",
    "device_peak_bytes",
    "importable",
    "inventory",
    "lies_elsewhere",
    "measure_roof",
    "peak_above_start",
    "placed_elsewhere",
    "software",
    "use_process_backend",
    "versions",
    "weights_on",
]
