"""Keras 3 backends as an axis (see base.py). Importing the package registers every backend:
a new one is a module here, imported below, in the order options and reports list them."""

# isort: off
from accelbench.axes.backends import tensorflow  # noqa: F401  (the pytest process's own backend, first)
from accelbench.axes.backends import jax  # noqa: F401
from accelbench.axes.backends import torch  # noqa: F401

# isort: on
from accelbench.axes.backends.base import (
    BACKENDS,
    FLOAT32_IEEE,
    PROCESS_BACKEND,
    Backend,
    Neutral,
    current,
    device_peak_bytes,
    devices_here,
    importable,
    peak_above_start,
)

__all__ = [
    "BACKENDS",
    "FLOAT32_IEEE",
    "PROCESS_BACKEND",
    "Backend",
    "Neutral",
    "current",
    "device_peak_bytes",
    "devices_here",
    "importable",
    "peak_above_start",
]
