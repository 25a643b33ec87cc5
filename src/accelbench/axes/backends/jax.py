"""The JAX backend, in a worker of its own (KERAS_BACKEND=jax)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from accelbench.axes.backends.base import BACKENDS, Backend, peak_above_start

# float32 as IEEE float32, as devices.init_tensorflow sets TensorFlow's: JAX's matmuls at full
# precision (not TF32, nor bfloat16 passes on a TPU).
VARIABLES = (
    ("JAX_DEFAULT_MATMUL_PRECISION", "highest"),
    # XLA takes 75% of GPU 0 at start unless told not to; TensorFlow's cells share it.
    ("XLA_PYTHON_CLIENT_PREALLOCATE", "false"),
)


def accelerators() -> dict[str, str]:
    import jax

    found = {}
    for kind in ("gpu", "tpu"):
        try:
            present = jax.devices(kind)
        except RuntimeError:  # no such platform
            continue
        found[kind] = f"{len(present)} x {present[0].device_kind}"
    return found


def device_peak(work: Callable[[], object]) -> int | None:
    import jax

    device = jax.devices()[0]
    if device.memory_stats() is None:
        work()
        return None

    def read() -> tuple[int, int]:
        stats = device.memory_stats()
        return stats["bytes_in_use"], stats["peak_bytes_in_use"]

    return peak_above_start(read, None, work)  # JAX has no reset


@contextlib.contextmanager
def profiler(folder: Path) -> Iterator[Callable[[str, int], Any]]:
    import jax

    with jax.profiler.trace(str(folder)):
        yield lambda phase, number: jax.profiler.StepTraceAnnotation(phase, step_num=number)


BACKENDS.register(
    "jax",
    Backend(
        "jax",
        "jax",
        ("jax", "jaxlib", "keras"),
        "pip install 'accelbench[jax]'",
        "jax.jit (XLA)",
        variables=VARIABLES,
        accelerators=accelerators,
        device_peak=device_peak,
        profiler=profiler,
    ),
)
