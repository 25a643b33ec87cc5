"""The TensorFlow backend: the pytest process's own (its devices are devices.Inventory's, its
device peak memory.device_peak's); in a worker only for an A/B run's B."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from accelbench.axes.backends.base import BACKENDS, Backend


@contextlib.contextmanager
def profiler(folder: Path) -> Iterator[Callable[[str, int], Any]]:
    import tensorflow as tf

    tf.profiler.experimental.start(str(folder))
    try:
        yield lambda phase, number: tf.profiler.experimental.Trace(phase, step_num=number, _r=1)
    finally:
        tf.profiler.experimental.stop()


BACKENDS.register(
    "tensorflow",
    Backend(
        "tensorflow",
        "tensorflow",
        ("tensorflow", "keras"),
        "pip install accelbench",
        "tf.function (XLA where jit_compile is on)",
        profiler=profiler,
        cpu_kernels_checked=True,
    ),
)
