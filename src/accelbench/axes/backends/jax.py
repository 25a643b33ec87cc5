"""The JAX backend: the pytest process's where JAX is the process backend, else a worker of its
own (KERAS_BACKEND=jax). Its devices are jax.devices(), placed with keras.device()."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from accelbench.axes.backends import roof_kernels
from accelbench.axes.backends.backend import BACKENDS, Backend, Neutral, StepCount, neutral_placements
from accelbench.axes.backends.roof_kernels import best_seconds
from accelbench.measured import Roof

# float32 as IEEE float32, as the TensorFlow backend's start sets TensorFlow's: JAX's matmuls at
# full precision (not TF32, nor bfloat16 passes on a TPU).
VARIABLES = (
    ("JAX_DEFAULT_MATMUL_PRECISION", "highest"),
    # XLA takes 75% of GPU 0 at start unless told not to; the process backend's cells share it.
    ("XLA_PYTHON_CLIENT_PREALLOCATE", "false"),
)


SETTLE_S = 0.05  # what a leak watch waits at its end for XLA's last frees (settle)


@functools.cache
def start(intra_op_threads: int = 0) -> Any:
    """Import JAX with its variables set (where the process did not set them itself). XLA's CPU
    threads are not set per process: the intra-op count is TensorFlow's and PyTorch's knob."""
    for name, value in VARIABLES:
        os.environ.setdefault(name, value)
    import jax

    return jax


def _platform_devices(kind: str) -> list[Any]:
    import jax

    try:
        return list(jax.devices(kind))
    except RuntimeError:  # no such platform
        return []


def placements(intra_op_threads: int = 0) -> dict[str, Any]:
    start(intra_op_threads)
    return neutral_placements(
        "jax", {kind: [device.device_kind for device in _platform_devices(kind)] for kind in ("gpu", "tpu")}
    )


def _device(placement: Neutral) -> Any:
    """The jax.Device a placement names: cpu, gpu (the first), gpu:1."""
    kind, _, number = placement.device.partition(":")
    return _platform_devices(kind)[int(number or 0)]


def devices_of(value: Any) -> tuple[str, ...]:
    """A jax.Array's devices: cpu:0, gpu:0 (a CUDA or ROCm device's platform is "gpu")."""
    return tuple(f"{device.platform}:{device.id}" for device in value.devices())


def step_bytes(model: Any, kind: str, inputs: tuple[Any, ...]) -> StepCount | None:
    """What one compiled step of the model allocates on its device beyond its resident state,
    by XLA's own count (the executable's memory_analysis()): its temporaries (activations,
    gradients, the kernels' workspaces), its outputs less those written over donated state (the
    new weights of a training step), and its inputs copied in; and of it, the largest library
    workspace among its kernels (library_workspace). The step is Keras' own (train_step,
    predict_step), jitted as Keras' JAX trainer jits it. JAX's allocator cannot reset its peak,
    and a process's mark also holds its compiles': on an H100 the MLP's mark read 176 MiB where
    its training step counts 1.8 MiB here. None where XLA gives no count."""
    import jax

    def values(variables: Any) -> list[Any]:
        return [variable.value for variable in variables]

    weights = (values(model.trainable_variables), values(model.non_trainable_variables))
    if kind == "train":
        state = (*weights, values(model.optimizer.variables), values(model.metrics_variables))
        lowered = jax.jit(model.train_step, donate_argnums=0).lower(state, (*inputs, None))  # (x, y, sample_weight)
    else:
        lowered = jax.jit(model.predict_step).lower(weights, inputs)
    compiled = lowered.compile()
    counted = compiled.memory_analysis()
    if counted is None:
        return None
    copied_in = sum(int(getattr(array, "nbytes", 0)) for array in inputs)
    held = counted.temp_size_in_bytes + counted.output_size_in_bytes - counted.alias_size_in_bytes + copied_in
    return StepCount(int(held), library_workspace(compiled.as_text() or ""))


# A custom call's outputs, "(f32[256,400]{1,0}, s8[33554432]{0}) custom-call(": a library call
# (cuBLAS, cuBLAS-Lt, cuDNN) returns its scratch buffer as its last output, bytes of s8 or u8.
_CUSTOM_CALL_OUTPUTS = re.compile(r"=\s*\(([^()]*)\)\s*custom-call\(")
_SCRATCH = re.compile(r"[su]8\[(\d+)\](?:\{[^{}]*\})?\s*$")


def library_workspace(hlo: str) -> int:
    """The largest scratch buffer among the custom calls of a compiled module's HLO text: XLA's
    GPU compiler gives a cuBLAS-Lt matmul 32 MiB on Hopper (GemmConfig::kHopperWorkspace) and a
    legacy cuBLAS gemm at most its operands' bytes. The largest, not their sum: the buffer
    assignment lets one call's scratch reuse another's. 0 where no call has one (a CPU's step)."""
    sizes = [
        int(found.group(1)) for outputs in _CUSTOM_CALL_OUTPUTS.findall(hlo) if (found := _SCRATCH.search(outputs))
    ]
    return max(sizes, default=0)


def traced(function: Callable[..., Any], model: Any, donate: tuple[int, ...] = ()) -> Callable[..., Any]:
    """`function` as one jax.jit, the model's weights passed in as Keras' stateless_call passes
    them (a StatelessScope over the jitted function's arguments: traced as constants instead,
    every weight would be compiled into the program) and its int arguments as int32 arrays, so
    that calls differing only in them share one compile (Backend.traced); the arguments at
    `donate` donated (backends.compiled: GPT-2 small's decode step at batch 8 on the EPYC's CPU
    took 121-245 ms copying its cache, 52 ms writing it in place, docs/measurements.md)."""
    import jax
    import keras
    import numpy as np

    variables = list(model.variables)

    def stateless(values: list[Any], *args: Any) -> Any:
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return function(*args)

    compiled = jax.jit(stateless, donate_argnums=tuple(position + 1 for position in donate))  # after the weights
    return lambda *args: compiled(
        [variable.value for variable in variables], *(np.int32(arg) if isinstance(arg, int) else arg for arg in args)
    )


def tf32(placement: Neutral) -> bool:
    """An NVIDIA GPU of compute capability 8.0 or above (JAX's CUDA devices say theirs)."""
    if placement.device_type != "gpu":
        return False
    capability = getattr(_device(placement), "compute_capability", None)
    return capability is not None and float(capability) >= 8.0


def resident(placement: Neutral, array: Any) -> Any:
    """The array on the placement's device (Keras' JAX data adapter slices a jax.Array where it
    lies, so fit() then copies nothing from the host)."""
    import jax

    return jax.device_put(array, _device(placement)).block_until_ready()


def roof(placement: Neutral, dtype: str, sizes: tuple[int, ...], repeats: int) -> Roof:
    """The device's matmul rate and bandwidth (roof_kernels.py) through jax.jit. The
    whole product is computed and waited for: a slice of it would let XLA multiply a slice."""
    import jax
    import jax.numpy as jnp

    device = _device(placement)
    # float32 runs at HIGHEST (IEEE) whatever the process's default; the TF32 roof at DEFAULT,
    # which on a GPU that has it is TensorFloat-32
    precision = jax.lax.Precision.DEFAULT if dtype == roof_kernels.TF32 else jax.lax.Precision.HIGHEST
    multiply = jax.jit(functools.partial(jnp.matmul, precision=precision))
    keys = jax.random.split(jax.random.key(0))
    stored = roof_kernels.arrays_dtype(dtype)

    def timed(n: int, reps: int) -> float:
        a = jax.device_put(jax.random.normal(keys[0], (n, n)).astype(stored), device)
        b = jax.device_put(jax.random.normal(keys[1], (n, n)).astype(stored), device)
        return best_seconds(lambda: multiply(a, b).block_until_ready(), reps)

    def make_triad(elements: int) -> Callable[[int], object]:
        b = jax.device_put(jnp.ones((elements,), jnp.float32), device)
        c = jax.device_put(jnp.full((elements,), 2.0, jnp.float32), device)
        triad = jax.jit(lambda b, c: b + 3.0 * c)
        return roof_kernels.back_to_back(lambda: triad(b, c), lambda out: out.block_until_ready())

    def make_matvec(rows: int, columns: int) -> Callable[[int], object]:
        matrix = jax.device_put(jnp.ones((rows, columns), jnp.float32), device)
        vector = jax.device_put(jnp.ones((columns,), jnp.float32), device)
        product = jax.jit(functools.partial(jnp.matmul, precision=jax.lax.Precision.HIGHEST))
        return roof_kernels.back_to_back(lambda: product(matrix, vector), lambda out: out.block_until_ready())

    return roof_kernels.measured("jax", placement.device, dtype, timed, make_triad, make_matvec, sizes, repeats)


def bare_loop(model: Any, data: Any, placement: Neutral, batch_size: int) -> Callable[[int], Any]:
    """fit()'s reference on JAX, as Keras' guide to a training loop in JAX writes it: the model's
    stateless call and the optimizer's stateless apply in one jitted step, called in a Python loop
    over the trainer's fixed batches (data.batches), put on the device once. (A lax.fori_loop of
    the same step ran the cnn 3.4x slower than fit() on XLA's CPU backend: not the tightest.)
    It trains a copy of the model's weights and optimizer state: the trainer's stay its own."""
    import jax

    optimizer = model.optimizer

    def loss_and_updates(trainable, non_trainable, x, y):
        predicted, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        return model.loss(y, predicted), non_trainable

    gradients = jax.value_and_grad(loss_and_updates, has_aux=True)

    @jax.jit
    def step(state, x, y):
        trainable, non_trainable, optimizer_state = state
        (loss, non_trainable), grads = gradients(trainable, non_trainable, x, y)
        trainable, optimizer_state = optimizer.stateless_apply(optimizer_state, grads, trainable)
        return loss, (trainable, non_trainable, optimizer_state)

    device = _device(placement)
    state = jax.device_put(
        (
            [v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables],
            [v.value for v in optimizer.variables],
        ),
        device,
    )
    batches = [jax.device_put((x, y), device) for x, y in zip(*data.batches)]
    kept = {"state": state}

    def run(steps: int) -> Any:
        loss = None
        for i in range(steps):
            loss, kept["state"] = step(kept["state"], *batches[i % len(batches)])
        return loss

    return run


def settle() -> None:
    """XLA's CPU client frees an execution's buffers in a callback on its own threads once the
    execution's event is ready, which can be after the caller has its result: a leak watch that
    ended at once saw the last cnn prediction's 1.7 MiB buffer still held (4 of 8 unchanged runs
    of quick's leak cells failed). Nothing signals the callback's end, so this waits a moment."""
    import jax

    jax.effects_barrier()
    time.sleep(SETTLE_S)


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
        step_bytes=step_bytes,
        traced=traced,
        profiler=profiler,
        start=start,
        placements=placements,
        roof=roof,
        gpu_install="pip install 'jax[cuda13]' (or 'jax[cuda12]')",
        bare_loop=bare_loop,
        resident=resident,
        tf32=tf32,
        settle=settle,
        devices_of=devices_of,
    ),
)
