"""The PyTorch backend: the pytest process's where PyTorch is the process backend, else a worker
of its own (KERAS_BACKEND=torch). Its devices are the CPU and torch.cuda's GPUs."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from accelbench.axes.backends import roof_kernels
from accelbench.axes.backends.backend import BACKENDS, Backend, Neutral, neutral_placements, peak_above_start
from accelbench.axes.backends.roof_kernels import best_seconds
from accelbench.axes.devices import is_accelerator
from accelbench.measured import Roof

# float32 as IEEE float32 through PyTorch's own switches (start()), not NVIDIA_TF32_OVERRIDE=0:
# that variable holds cuBLAS to IEEE for the whole process, so the TF32 roof measured beside
# it read the float32 rate (51.3 TFLOP/s for both on the H100).
VARIABLES: tuple[tuple[str, str], ...] = ()


@functools.cache
def start(intra_op_threads: int = 0) -> Any:
    """Import PyTorch with float32 as IEEE float32 on its GPUs (matmuls and cuDNN's
    convolutions, which PyTorch lets use TF32 by default) and the run's intra-op threads."""
    import torch

    if intra_op_threads:
        torch.set_num_threads(intra_op_threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def placements(intra_op_threads: int = 0) -> dict[str, Any]:
    torch = start(intra_op_threads)
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return neutral_placements("torch", {"gpu": [torch.cuda.get_device_name(i) for i in range(count)]})


def _device(placement: Neutral) -> str:
    """The torch device a placement names: cpu, cuda:0, cuda:1."""
    return placement.device.replace("gpu", "cuda") if is_accelerator(placement.device_type) else "cpu"


def device_peak(placement: Neutral, work: Callable[[], object]) -> int | None:
    import torch

    device = _device(placement)
    read = lambda: (int(torch.cuda.memory_allocated(device)), int(torch.cuda.max_memory_allocated(device)))  # noqa: E731
    return peak_above_start(read, lambda: torch.cuda.reset_peak_memory_stats(device), work)


def resident(placement: Neutral, array: Any) -> Any:
    """The array as a tensor on the placement's device (Keras' torch data adapter slices a
    tensor where it lies, so fit() then copies nothing from the host)."""
    import torch

    tensor = torch.as_tensor(array).to(_device(placement))
    if tensor.is_cuda:
        torch.cuda.synchronize(tensor.device)
    return tensor


def roof(placement: Neutral, dtype: str, sizes: tuple[int, ...], repeats: int) -> Roof:
    """The device's matmul rate and bandwidth (roof_kernels.py), each call waited for."""
    import torch

    device = _device(placement)
    wait = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    generator = torch.Generator(device=device).manual_seed(0)

    stored = getattr(torch, roof_kernels.arrays_dtype(dtype))

    def timed(n: int, reps: int) -> float:
        a = torch.randn((n, n), generator=generator, device=device).to(stored)
        b = torch.randn((n, n), generator=generator, device=device).to(stored)
        return best_seconds(lambda: (torch.matmul(a, b), wait()), reps)

    def make_triad(elements: int) -> Callable[[int], object]:
        a = torch.empty((elements,), device=device)
        b, c = torch.ones((elements,), device=device), torch.full((elements,), 2.0, device=device)
        return roof_kernels.back_to_back(lambda: torch.add(b, c, alpha=3.0, out=a), lambda _: wait())

    def make_matvec(rows: int, columns: int) -> Callable[[int], object]:
        matrix, vector = torch.ones((rows, columns), device=device), torch.ones((columns,), device=device)
        out = torch.empty((rows,), device=device)
        return roof_kernels.back_to_back(lambda: torch.mv(matrix, vector, out=out), lambda _: wait())

    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == roof_kernels.TF32  # IEEE float32 otherwise
    try:
        with torch.inference_mode():
            return roof_kernels.measured(
                "torch", placement.device, dtype, timed, make_triad, make_matvec, sizes, repeats
            )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed


def no_gradients() -> Any:
    import torch

    return torch.no_grad()


def tf32(placement: Neutral) -> bool:
    """An NVIDIA GPU of compute capability 8.0 or above."""
    import torch

    device = _device(placement)
    return device.startswith("cuda") and torch.cuda.get_device_capability(device) >= (8, 0)


def bare_loop(model: Any, data: Any, placement: Neutral, batch_size: int) -> Callable[[int], Any]:
    """fit()'s reference on PyTorch, as Keras' guide to a training loop in PyTorch writes it: the
    forward pass, backward(), and the optimizer's apply of the weights' .grad, in a Python loop
    over the trainer's fixed batches (data.batches), put on the device once."""
    import keras
    import torch

    with placement.scope():
        xs = [keras.ops.convert_to_tensor(x) for x in data.batches[0]]
        ys = [keras.ops.convert_to_tensor(y) for y in data.batches[1]]
    weights = list(model.trainable_weights)

    def run(steps: int) -> Any:
        loss = None
        with placement.scope():
            for i in range(steps):
                loss = model.loss(ys[i % len(ys)], model(xs[i % len(xs)], training=True))
                model.zero_grad()
                loss.backward()
                with torch.no_grad():
                    model.optimizer.apply([weight.value.grad for weight in weights], weights)
        return loss.detach()

    return run


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


def devices_of(value: Any) -> tuple[str, ...]:
    """A tensor's device: cpu:0, gpu:0 (torch's cuda:0, ROCm's too)."""
    device = value.device
    return (f"{'gpu' if device.type == 'cuda' else device.type}:{device.index or 0}",)


def drawn_on_device(model: Any) -> bool:
    """Whether the model's variables live on another device than the CPU, whose generator drew
    them (Keras' torch backend draws an initializer on the variable's own device)."""
    return any(variable.value.device.type != "cpu" for variable in model.weights[:1])


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
        device_peak=device_peak,
        profiler=profiler,
        start=start,
        placements=placements,
        roof=roof,
        gpu_install="pip install torch (PyPI's Linux wheel is a CUDA build)",
        bare_loop=bare_loop,
        resident=resident,
        tf32=tf32,
        drawn_on_device=drawn_on_device,
        no_gradients=no_gradients,
        devices_of=devices_of,
    ),
)
