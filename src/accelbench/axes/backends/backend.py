"""Keras 3 backends as an axis: what every backend is (Backend), the registry (BACKENDS), and
what the work asks of whichever backend it runs on. Each backend is one module beside this
one (tensorflow.py, jax.py, torch.py) that registers itself.

Keras fixes its backend when it is first imported (`KERAS_BACKEND`). The pytest process runs
the process backend (PROCESS_BACKEND: the one KERAS_BACKEND names, else the first of
tensorflow, jax, torch that is installed), and every comparison across backends is held to
it. A cell on another backend is built and timed in a worker started with `KERAS_BACKEND` set
(workers.py), the same model code from models.py; JAX and PyTorch are fed NumPy arrays, so
that nothing of TensorFlow sits in their timed rounds.

Everything a framework does differently lives in its backend's module: its start, its devices
(placements), its allocator's device peak, its roofs (roof_kernels.py) and its profiler. Each
module imports its library only inside those functions, so the registry can be read anywhere.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from accelbench.axes.devices import AUTO, Inventory, Placement, is_accelerator, type_of
from accelbench.environments import Environment
from accelbench.judge import fingerprint
from accelbench.judge.fingerprint import Fingerprint
from accelbench.measured import Roof
from accelbench.registry import Registry

# The backends a process may run, in the order one is chosen where KERAS_BACKEND names none.
CHOICE_ORDER = ("tensorflow", "jax", "torch")
EXTRAS = "pip install 'accelbench[tensorflow]', 'accelbench[jax]' or 'accelbench[torch]'"


class NoBackend(RuntimeError):
    """No Keras backend is installed, or KERAS_BACKEND names one that is not."""


def choose_process_backend(environ=os.environ) -> str:
    """The Keras backend this process runs: KERAS_BACKEND's, else the first installed of
    CHOICE_ORDER; "" where none is (checked when a run starts: NoBackend's one line)."""
    named = environ.get("KERAS_BACKEND", "").strip()
    if named:
        return named
    return next((name for name in CHOICE_ORDER if importable(name)), "")


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
    # Set before its framework starts: in its workers beside KERAS_BACKEND, and (where unset) in
    # a pytest process that runs it, before the user's modules, which may import Keras, are imported.
    variables: tuple[tuple[str, str], ...] = ()
    # In the process that runs it: its allocator's peak over some work on a placement (None:
    # it keeps none), and its profiler (a context manager over the traced steps, given the trace
    # folder, that yields how to mark one step: (phase, number) -> a context manager).
    device_peak: Callable[[Any, Callable[[], object]], int | None] | None = None
    # Where its allocator's peak cannot be reset (JAX's: a process's high-water mark also holds
    # its compiles'), the compiler's own count instead: (Keras model, "train" or "inference",
    # the step's inputs) -> what one compiled step allocates on the device (CompiledStep).
    step_bytes: Callable[[Any, str, tuple[Any, ...]], StepCount | None] | None = None
    # Waits until the work it dispatched has finished and let go of its buffers (a leak watch's
    # end: JAX's CPU client frees an execution's temporaries on its own threads, after the
    # result is ready).
    settle: Callable[[], object] = lambda: None
    profiler: Callable[[Any], Any] | None = None
    # Whether the CPU's lower-precision arithmetic is known for this backend (precisions.py:
    # TensorFlow's oneDNN kernels are checked; other backends' are "not known").
    cpu_kernels_checked: bool = False
    # What keras.device() is given to pin a CPU cell to the host: "cpu:0" for JAX (a device and
    # its number); torch differs (torch.py).
    cpu_device: str = "cpu:0"

    # This process, started for the backend: threads (0: the framework's own choice), float32
    # as IEEE float32, GPU memory taken as needed; returns the framework's module.
    start: Callable[[int], Any] = lambda threads: None
    # intra-op threads -> every device it finds, by --devices name
    placements: Callable[[int], dict[str, Placement]] = lambda threads: {}
    # (placement, dtype, matmul sizes, repeats) -> the device's roofs (roof_kernels.measured)
    roof: Callable[[Any, str, tuple[int, ...], int], Roof] | None = None
    # A context around the framework's start that keeps its native notices off the terminal.
    quiet_start: Callable[[], Any] = contextlib.nullcontext
    # A context in which a model's own calls record no gradients: PyTorch records them for every
    # op on weights that require them, so a decode loop that feeds each step's key/value cache to
    # the next chained every step's tensors and grew by gigabytes (GPT-2 small: 5 GB in 10 s);
    # TensorFlow and JAX record none outside a tape or a grad transform.
    no_gradients: Callable[[], Any] = contextlib.nullcontext
    # (a model's own function, the model) -> the function as this backend compiles a step, its
    # int arguments as tensors so that calls differing only in them share one trace: the token
    # cells' prefill and decode. TensorFlow's tf.function (KerasHub's cached call also needs it:
    # it writes with slice_update, an XLA op with no eager CPU kernel); JAX's jax.jit with the
    # model's weights passed in (eagerly, each op is a dispatch: 42 ms a token on an H100 for a
    # model that took 12.5 on its host's CPU). Others run it as it is, eagerly. Its third
    # argument: the positions of the function's arguments it consumes (compiled's `donate`).
    traced: Callable[..., Callable[..., Any]] = lambda function, model, donate=(): function
    gpu_install: str = ""  # how to get this backend's GPU build, for --devices gpu without one
    # The harness-overhead cells' reference (work/training.HandLoop): (model, the trainer's input,
    # placement, batch size) -> a loop of `steps` hand-written training steps -> the last loss.
    bare_loop: Callable[[Any, Any, Any, int], Callable[[int], Any]] | None = None
    # placement -> whether its device computes float32 matmuls in TensorFloat-32 where allowed
    # (an NVIDIA GPU of compute capability 8.0 or above): its TF32 roof is measured beside float32's
    tf32: Callable[[Any], bool] = lambda placement: False
    # (placement, a NumPy array) -> the array on the placement's device, synced: a trainer's
    # inputs made resident there once, so its rounds copy nothing from the host (the device
    # speedup without the host-to-device copy). None: the backend feeds its own pipeline.
    resident: Callable[[Any, Any], Any] | None = None
    # model -> whether its seeded first weights came from its device's own random stream, which
    # is not the CPU's for the same seed (PyTorch: a CUDA generator is Philox, the CPU's is a
    # Mersenne Twister). build_model then copies in the CPU's draw, so a model is the same model
    # on every device (accuracy parity). JAX's and TensorFlow's seeded draws are counter-based
    # and the same on every device.
    drawn_on_device: Callable[[Any], bool] = lambda model: False
    # Where its host tensors come from, as machine_info records it (memray sees what it allocates).
    host_allocator: Callable[[], str] = lambda: "the framework's own"
    # A Keras variable's value (the backend's tensor) -> the devices it lies on, as --devices
    # names them (cpu:0, gpu:1): what a cell's weights are checked against once built
    # (weights_on). The device asked for is not proof: Keras' torch backend puts tensors on CUDA
    # wherever CUDA is, and JAX on its first accelerator, unless told otherwise.
    devices_of: Callable[[Any], tuple[str, ...]] = lambda value: ()

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

PROCESS_BACKEND = choose_process_backend()  # the pytest process's own Keras backend ("" where none is)


def software() -> Fingerprint:
    """This process's software fingerprint: the process backend, its framework's and Keras's versions."""
    return fingerprint.software(PROCESS_BACKEND, BACKENDS[PROCESS_BACKEND].module)


def versions() -> dict[str, str]:
    """The full versions of what this process's numbers depend on, those installed: the suite's
    libraries, its backend's, and the accelerator driver and CUDA."""
    packages = (*fingerprint.LIBRARIES, *BACKENDS[PROCESS_BACKEND].packages)
    return fingerprint.versions(packages) | fingerprint.driver_versions()


def weights_on(model: Any) -> str | None:
    """Where a built Keras model's weights lie, as --devices names devices ("gpu:0"; "gpu:0,gpu:1"
    where one weight is spread over both), read from its first weight on this process's backend;
    None where there is no Keras model with weights (an estimator, a user's work or generative
    model without one)."""
    weights = getattr(model, "weights", None)
    value = getattr(weights[0], "value", None) if weights else None  # a Keras Variable's tensor
    if value is None:
        return None
    return ",".join(sorted(BACKENDS[current()].devices_of(value))) or None


def lies_elsewhere(asked: str, found: str | None) -> bool:
    """Whether weights found on `found` (weights_on's answer; None: not read) lie on another kind
    of device than `asked` (a --devices name: cpu, gpu, gpu:1)."""
    return found is not None and {type_of(device) for device in found.split(",")} != {type_of(asked)}


def placed_elsewhere(cell_name: str, asked: str, found: str | None) -> str | None:
    """The one-line failure of a cell whose weights lie on another kind of device than the one its
    name asks for (a cpu cell's on the GPU: the work measured is not the cell's), or None."""
    if not lies_elsewhere(asked, found):
        return None
    return (
        f"{cell_name}: asked for {asked}, but its model's weights lie on {found}: what would be timed is "
        "not this cell's work (a placement the backend did not honour)"
    )


def use_process_backend() -> str:
    """Set KERAS_BACKEND to the process backend before Keras is imported (Keras itself would
    take TensorFlow, installed or not), so this process and every worker it starts agree, and
    the backend's variables where the process has not set them; the one line NoBackend says
    where there is none to run."""
    if not PROCESS_BACKEND:
        raise NoBackend(f"no Keras backend is installed (TensorFlow, JAX or PyTorch): {EXTRAS}")
    backend = BACKENDS.get(PROCESS_BACKEND)
    if backend is None:
        raise NoBackend(
            f"KERAS_BACKEND={PROCESS_BACKEND!r} is not a backend accelbench runs: use {', '.join(BACKENDS)}"
        )
    if not backend.installed():
        raise NoBackend(f"KERAS_BACKEND={PROCESS_BACKEND} but {backend.module} is not installed: {backend.install}")
    os.environ["KERAS_BACKEND"] = PROCESS_BACKEND
    for name, value in backend.variables:
        os.environ.setdefault(name, value)
    return PROCESS_BACKEND


def inventory(backend: str, intra_op_threads: int = 0) -> Inventory:
    """The devices this machine has, as `backend` (this process's) finds them, once per run."""
    return Inventory(BACKENDS[backend].placements(intra_op_threads), backend)


def absent_reason(inventory: Inventory, name: str) -> str:
    """Why a named device cannot be used, in one line: what is there, and what to install."""
    reason = inventory.absent_reason(name)
    hint = BACKENDS[inventory.backend].gpu_install if inventory.backend in BACKENDS else ""
    if is_accelerator(type_of(name)) and type_of(name) not in inventory.placements and hint:
        reason += f"; {inventory.backend} sees no {type_of(name).upper()} here (a GPU build: {hint})"
    return reason


# --- where a backend other than TensorFlow places its work ----------------------------------


@dataclass(frozen=True)
class Neutral:
    """A placement for a backend other than TensorFlow: no tf.device, no tf.data.

    The work (training.Trainer, inference.ArrayPredictor) asks it for a scope and feeds
    NumPy arrays, which Keras moves to the backend's device batch by batch. keras.device()
    places it: the CPU, one GPU by its number, or (`gpu`) the first GPU.
    """

    name: str
    description: str
    backend: str
    FEEDS_ARRAYS: ClassVar[bool] = True

    jit_compile: ClassVar[str] = AUTO  # JAX runs through XLA everywhere; on torch "auto" is eager

    @property
    def device_type(self) -> str:
        return self.name.split(":")[0]

    @property
    def device(self) -> str:
        """The device as Keras names it (what a roof records): cpu, gpu:0, gpu:1."""
        return self.name if ":" in self.name else f"{self.name}:0"

    @property
    def keras_device(self) -> str:
        """What keras.device() is given: a "cpu" cell pinned to the CPU (Keras' torch backend
        otherwise puts every tensor on CUDA wherever CUDA is available, and JAX on its first
        accelerator), an accelerator's cell on its own device (`gpu` on the first)."""
        return self.device if is_accelerator(self.device_type) else BACKENDS[self.backend].cpu_device

    def scope(self) -> Any:
        import keras

        return keras.device(self.keras_device)


def current() -> str:
    """This process's Keras backend."""
    import keras

    return keras.backend.backend()


def compiled(function: Callable[..., Any], model: Any, donate: tuple[int, ...] = ()) -> Callable[..., Any]:
    """`function`, one of a model's steps, compiled as this process's Keras backend compiles one
    (Backend.traced): TensorFlow's tf.function, JAX's jax.jit with the model's weights passed in
    (as Keras' stateless_call passes them); PyTorch calls it eagerly. Its int arguments are
    passed as int32 tensors, so calls that differ only in them (a decode step's position) share
    one compile; each new shape compiles once. The zoo decoder's and KerasHub's steps are made
    so, and a user's (the public accelbench.compiled).

    `donate`: the positions of the arguments the step consumes, a cache it returns updated. JAX
    writes its outputs into their buffers (jax.jit's donate_argnums) instead of copying the
    whole cache to update a position of it, and deletes them: the caller uses the step's
    returned cache from then on, never the one it passed. TensorFlow and PyTorch have no such
    thing and ignore it."""
    return BACKENDS[current()].traced(function, model, donate)


def neutral_placements(backend: str, accelerators: dict[str, list[str]]) -> dict[str, Placement]:
    """The CPU and each accelerator a backend other than TensorFlow found (device type -> the
    description of each device), as --devices names them: `gpu`, `gpu:0`, `gpu:1`."""
    from accelbench.axes.devices import DEVICE_TYPES, cpu_description

    found: dict[str, Placement] = {"cpu": Neutral("cpu", cpu_description(), backend)}
    for kind, devices in accelerators.items():
        if not devices:
            continue
        if DEVICE_TYPES[kind].numbered:
            found.update({f"{kind}:{i}": Neutral(f"{kind}:{i}", d, backend) for i, d in enumerate(devices)})
        names = ", ".join(sorted(set(devices)))
        found[kind] = Neutral(kind, f"{len(devices)} x {names}", backend)
    return found


@dataclass(frozen=True)
class CompiledStep:
    """A memory cell's step as its backend's compiler sees it: the Keras model, "train" (a
    train_on_batch) or "inference" (a predict_on_batch), and the step's inputs."""

    model: Any
    kind: str
    inputs: tuple[Any, ...]


@dataclass(frozen=True)
class StepCount:
    """The compiler's count of what one step allocates on the device (Backend.step_bytes), and
    of it the largest scratch buffer it gives a library's kernel: a cuBLAS or cuDNN call's
    workspace, which XLA sizes by the GPU, not by the call (32 MiB for a cuBLAS-Lt matmul on
    Hopper and later, NVIDIA's recommendation), so it is not in the analytic estimate. 0: none."""

    bytes: int
    workspace_bytes: int = 0


# How a device peak was found, by whether the backend counts it (Backend.step_bytes) or reads
# its allocator (Backend.device_peak): what each memory cell records beside the number.
COUNTED_BY_COMPILER = "the compiled step's memory analysis (its temporaries, outputs and inputs)"
READ_FROM_ALLOCATOR = "the allocator's peak over the steps, reset before them, above what was resident"


def counted_step_bytes(backend: str, placement: Any, step: CompiledStep | None) -> StepCount | None:
    """The compiler's count of one step on an accelerator, where the backend counts instead of
    reading its allocator (Backend.step_bytes: JAX, whose peak cannot be reset and whose mark
    also holds the process's compiles: on an H100 176 MiB for an MLP step counted at 1.8 MiB);
    None elsewhere. It compiles the step once more: call it outside a tracked or timed region."""
    count = BACKENDS[backend].step_bytes
    if count is None or step is None or not is_accelerator(type_of(placement.name)):
        return None
    return count(step.model, step.kind, step.inputs)


def device_peak_bytes(
    backend: str, placement: Any, work: Callable[[], object], counted: StepCount | None = None
) -> tuple[int | None, str]:
    """(bytes, how found): what one step of `work` takes on an accelerator beyond what was
    resident before it. `counted` (counted_step_bytes) where the backend counts; else the
    allocator's peak, reset first, read over the work (peak_above_start: TensorFlow, PyTorch).
    (None, "") on the CPU (host memory is memray's) and where the backend says nothing. The
    work runs either way."""
    if counted is not None:
        work()
        return counted.bytes, COUNTED_BY_COMPILER
    peak = BACKENDS[backend].device_peak
    if not is_accelerator(type_of(placement.name)) or peak is None:
        work()
        return None, ""
    read = peak(placement, work)
    return read, READ_FROM_ALLOCATOR if read is not None else ""


def measure_roof(backend: str, placement: Any, dtype: str, kept: Roof | None = None) -> Roof:
    """The roofs of the placement's device in a compute dtype, measured with `backend` in this
    process (roof_kernels.py): in full, or, given a roof kept from an earlier run, checked at
    one size in a fraction of a second and kept at the better of the two."""
    from accelbench.axes.backends import roof_kernels

    measure = BACKENDS[backend].roof
    if measure is None:
        raise LookupError(f"the {backend} backend measures no roofs")
    if kept is None:
        return measure(placement, dtype, roof_kernels.MATMUL_SIZES, roof_kernels.REPEATS)
    return kept.best_of(
        measure(placement, dtype, roof_kernels.check_sizes(kept.matmul_size), roof_kernels.CHECK_REPEATS)
    )


def peak_above_start(
    read: Callable[[], tuple[int, int]], reset: Callable[[], object], work: Callable[[], object]
) -> int:
    """The most bytes an allocator held during `work` on top of what it held when the work
    started: read() gives (bytes in use, peak bytes); reset() restarts the peak (TensorFlow,
    PyTorch). What earlier cells left alive (their models, their caches) is not counted, so the
    figure does not depend on run order or -k."""
    reset()
    in_use, _ = read()
    work()
    _, peak = read()
    return max(0, peak - in_use)
