"""Device kinds (DEVICE_KINDS: cpu, gpu, tpu), their discovery and placement: each device name
becomes a tf.device scope or a tf.distribute strategy.

A device kind is one DeviceKind entry here: the names --devices accepts for it, whether it
is an accelerator (its own allocator's memory, XLA as Keras chooses, the largest batch found
by real steps), whether it hosts the multi-replica cells, and how TensorFlow finds it."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from accelbench.judge.fingerprint import Fingerprint, hardware
from accelbench.registry import Registry

TPU_HINTS = ("TPU_NAME", "COLAB_TPU_ADDR", "TPU_ACCELERATOR_TYPE")
TPU_PROBE_TIMEOUT_S = 60.0


def parse_devices(text: str) -> tuple[str, ...]:
    """'cpu,gpu:1' -> ('cpu', 'gpu:1'); 'all' -> () meaning every device present."""
    words = [word.strip().lower() for word in text.split(",") if word.strip()]
    if not words:
        raise ValueError("empty device list")
    if words == ["all"]:
        return ()
    bad = [word for word in words if not _named(word)]
    if bad:
        raise ValueError(
            f"unknown device {bad[0]!r}; use {', '.join(kind.usage for kind in DEVICE_KINDS.values())} or all"
        )
    return tuple(dict.fromkeys(words))


def _named(word: str) -> bool:
    kind = DEVICE_KINDS.get(kind_of(word))
    return kind is not None and (word == kind.name or (kind.numbered and re.fullmatch(rf"{kind.name}:\d+", word)))


def kind_of(name: str) -> str:
    return name.split(":")[0]


AUTO = "auto"  # Keras' own choice of XLA


def jit_compile_for(kind: str) -> bool | str:
    """XLA for a TensorFlow cell, decided by the cell's own device. Keras' default ("auto",
    Trainer._resolve_auto_jit_compile) turns XLA on whenever the process sees any GPU, whatever
    the model's placement: on a GPU host every CPU cell would be compiled with XLA, which ran
    the cnn 3-9x slower on a CPU here, and every gpu-over-cpu speedup would be inflated. So a
    CPU cell is compiled without XLA, and an accelerator's cell as Keras chooses."""
    return AUTO if is_accelerator(kind) else False


def is_accelerator(kind: str) -> bool:
    return DEVICE_KINDS[kind].accelerator


@dataclass(frozen=True)
class Placement:
    """Where a cell runs.

    A single device is a plain tf.device scope: Keras fit() under a OneDeviceStrategy ran
    2.5x slower than the same work under tf.device on CPU (TF 2.21), so a strategy is used
    only where it earns its keep: several GPUs (MirroredStrategy) and TPUs (TPUStrategy).
    """

    name: str
    device: str  # the TensorFlow device of the first replica
    description: str
    strategy: Any = None  # a tf.distribute strategy, or None for one device
    FEEDS_ARRAYS: ClassVar[bool] = False  # work is fed tf.data pipelines (backends.Neutral: NumPy arrays)

    @property
    def kind(self) -> str:
        return kind_of(self.name)

    @property
    def jit_compile(self) -> bool | str:
        return jit_compile_for(self.kind)

    def scope(self) -> Any:
        """Where variables are created and compiled functions are traced and called."""
        import tensorflow as tf

        return self.strategy.scope() if self.strategy else tf.device(self.device)

    def feed(self, dataset: Any) -> Any:
        """A tf.data pipeline as this placement consumes it.

        Accelerators get a prefetch so host work overlaps device work. The CPU does not: there
        the prefetch thread competes with the training step for the same cores (on 2 cores it
        cost a third of the throughput of small models). With nothing left to tune, the CPU's
        pipeline also turns tf.data's autotuning off. With it on, rounds of 180 ms stretched to
        303-308 ms in 34 of 60 rounds (cnn, batch 256; TF 2.21 on 2 vCPUs), with it off in 1
        of 60: that was the "slow mode" of fit(). Its rungs (142, 303, 623, 1264 ms) match
        wake-ups at 10, 30, 70, 150, 310, 630, 1270 ms after a new iterator (a period
        doubling from 10 ms), and fit() makes an iterator every round; that schedule is read
        off the rungs, not from TensorFlow's source.
        """
        import tensorflow as tf

        if is_accelerator(self.kind):
            dataset = dataset.prefetch(tf.data.AUTOTUNE)
        else:
            untuned = tf.data.Options()
            untuned.autotune.enabled = False
            dataset = dataset.with_options(untuned)
        return self.strategy.experimental_distribute_dataset(dataset) if self.strategy else dataset

    def run(self, function: Any, args: tuple) -> Any:
        """Call a step on every replica (inside a tf.function)."""
        return self.strategy.run(function, args=args) if self.strategy else function(*args)

    def sum(self, value: Any) -> Any:
        return self.strategy.reduce("SUM", value, axis=None) if self.strategy else value

    def synced(self, value: Any) -> Any:
        """One number that depends on every replica's result (the first element of each, summed):
        fetching it waits for all of them, so a clock stopped after it has timed every replica,
        not only the first."""
        if not self.strategy:
            return value[0, 0]
        import tensorflow as tf

        return tf.add_n([result[0, 0] for result in self.strategy.experimental_local_results(value)])


SYSTEM_ALLOCATOR = "TF_ONEDNN_USE_SYSTEM_ALLOCATOR"


def host_allocator() -> str:
    """Which allocator TensorFlow's oneDNN CPU path takes its tensors from (see init_tensorflow)."""
    return "system" if os.environ.get(SYSTEM_ALLOCATOR, "").lower() in ("1", "true") else "oneDNN pool"


# What TensorFlow's native start writes to the process's stderr before absl's logging is set up,
# whatever TF_CPP_MIN_LOG_LEVEL says (TF 2.21: six lines on every import, twice in `accelbench
# layers`): the oneDNN and CUDA-stub notices, the CPU-feature advice and absl's own preamble.
START_NOTICE = re.compile(
    r"^(?:[IW]\d{4} [\d:. ]+\d+ \S+:\d+\] .*"
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|To enable the following instructions: .*)$"
)
# TensorFlow's Linux wheel tries CUDA at its first tensor and logs the failure as an error. On a
# machine with no NVIDIA driver (no /dev/nvidiactl) that failure says only that there is no GPU,
# which the run's device list says too; where a driver is present it is a real fault, and kept.
NO_DRIVER_CUINIT = re.compile(r"^E\d{4} [\d:. ]+\d+ cuda_platform\.cc:\d+\] failed call to cuInit: .*$")
NVIDIA_DRIVER = "/dev/nvidiactl"


def is_start_notice(line: str) -> bool:
    if START_NOTICE.match(line):
        return True
    return bool(NO_DRIVER_CUINIT.match(line)) and not os.path.exists(NVIDIA_DRIVER)


@contextlib.contextmanager
def start_notices_dropped():
    """File descriptor 2 into a temporary file while TensorFlow starts; then every line but its
    start notices (is_start_notice) goes on to stderr. Written by hand: the notices come from C++
    before any Python logging or absl flag can reach them, and no library filters a descriptor."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            lines = caught.read().decode(errors="replace").splitlines()
            kept = [line for line in lines if not is_start_notice(line)]
            if kept:
                print("\n".join(kept), file=sys.stderr)


@functools.cache
def init_tensorflow(intra_op_threads: int = 0) -> Any:
    """Import TensorFlow once, setting threads and GPU memory growth before its runtime starts."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # oneDNN's CPU allocator keeps tensors over 4 KiB in a pool that grows and never shrinks,
    # so memray saw a training step's activations only while the pool was growing (an mlp step
    # "took" 0.4 MiB at batch 256 but 1.3 MiB at 128). The system allocator makes every tensor
    # visible; mlp, mlp_wide and cnn throughput moved by less than this machine's noise (10%).
    # A user may still choose the pool by setting the variable; machine_info says which ran.
    if SYSTEM_ALLOCATOR not in os.environ and "tensorflow" in sys.modules:
        warnings.warn(
            f"TensorFlow was imported before accelbench could set {SYSTEM_ALLOCATOR}=1: "
            "if it has already allocated, host memory peaks miss its pooled tensors; "
            "set the variable before TensorFlow starts",
            RuntimeWarning,
            stacklevel=2,
        )
    os.environ.setdefault(SYSTEM_ALLOCATOR, "1")
    with start_notices_dropped():
        import tensorflow as tf

    if intra_op_threads:
        tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
    for gpu in tf.config.list_physical_devices("GPU"):
        # Grow on demand so that one cell does not take the whole card from the next.
        tf.config.experimental.set_memory_growth(gpu, True)
    # float32 means IEEE float32 on every backend: TensorFlow and JAX run float32 matmuls and
    # convolutions in TF32 on Ampere and later by default, PyTorch's matmuls do not, so parity
    # and the precision gate's float32 reference would compare different arithmetic
    # (axes/backends/jax.py and torch.py set the same for the JAX and PyTorch workers).
    tf.config.experimental.enable_tensor_float_32_execution(False)
    return tf


def cpu_description() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_description(tf, gpu) -> str:
    return tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)


def _gpu_placements(tf) -> dict[str, Placement]:
    gpus = tf.config.list_physical_devices("GPU")
    placements = {}
    for index, gpu in enumerate(gpus):
        placements[f"gpu:{index}"] = Placement(f"gpu:{index}", f"/gpu:{index}", _gpu_description(tf, gpu))
    if gpus:
        # 'gpu' means every local GPU: data parallel when there are several.
        strategy = tf.distribute.MirroredStrategy() if len(gpus) > 1 else None
        names = sorted({_gpu_description(tf, gpu) for gpu in gpus})
        placements["gpu"] = Placement("gpu", "/gpu:0", f"{len(gpus)} x {', '.join(names)}", strategy)
    return placements


def _tpu_is_hinted() -> bool:
    return any(os.environ.get(name) for name in TPU_HINTS) or os.path.exists("/dev/accel0")


def _connect_tpu(tf) -> Any:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def _tpu_placement(tf, timeout_s: float) -> Placement | None:
    """Connect to a TPU only where the environment hints at one, and never wait past the timeout."""
    if not _tpu_is_hinted():
        return None
    outcome: dict[str, Any] = {}

    def probe() -> None:
        try:
            outcome["strategy"] = _connect_tpu(tf)
        except Exception as error:  # any failure to reach a TPU means: no TPU here
            outcome["error"] = error

    thread = threading.Thread(target=probe, name="accelbench-tpu-probe", daemon=True)
    thread.start()
    thread.join(timeout_s)
    strategy = outcome.get("strategy")
    if strategy is None:
        return None
    return Placement("tpu", "/device:TPU:0", f"TPU x {strategy.num_replicas_in_sync}", strategy)


def _cpu_placements(tf: Any, tpu_timeout_s: float) -> dict[str, Placement]:
    return {"cpu": Placement("cpu", "/cpu:0", cpu_description())}


def _tpu_placements(tf: Any, tpu_timeout_s: float) -> dict[str, Placement]:
    tpu = _tpu_placement(tf, tpu_timeout_s)
    return {"tpu": tpu} if tpu is not None else {}


def _cpu_replicas(tf: Any, count: int) -> Any:
    """`count` logical CPU devices under one MirroredStrategy (set before TensorFlow uses any)."""
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
    return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])


def _gpu_replicas(tf: Any, count: int) -> Any:
    """The first `count` GPUs under one MirroredStrategy, not every GPU the host has."""
    return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("GPU")][:count])


@dataclass(frozen=True)
class DeviceKind:
    """A kind of device, as --devices names it and as TensorFlow finds it."""

    name: str  # "cpu", "gpu", "tpu": also the name of the placement of every device of the kind
    accelerator: bool  # memory from its own allocator, XLA as Keras chooses, largest batch probed
    discover: Callable[[Any, float], dict[str, Placement]]  # (tf, tpu timeout) -> placements found
    numbered: bool = False  # also names one device of several: gpu:0, gpu:1
    # (tf, count) -> a strategy over `count` replicas of this kind in one fresh process (the
    # multi-device cells, processes/job_main.py); None: the kind hosts none.
    replica_strategy: Callable[[Any, int], Any] | None = None

    @property
    def replicas(self) -> bool:
        return self.replica_strategy is not None

    @property
    def usage(self) -> str:
        return f"{self.name}, {self.name}:N" if self.numbered else self.name


# Device kinds in the order --devices all lists them; the first is the reference every
# device's speedup and parity are measured against.
DEVICE_KINDS: Registry[DeviceKind] = Registry("device kind")
DEVICE_KINDS.register(
    "cpu", DeviceKind("cpu", accelerator=False, discover=_cpu_placements, replica_strategy=_cpu_replicas)
)
DEVICE_KINDS.register(
    "gpu",
    DeviceKind(
        "gpu",
        accelerator=True,
        discover=lambda tf, _: _gpu_placements(tf),
        numbered=True,
        replica_strategy=_gpu_replicas,
    ),
)
DEVICE_KINDS.register("tpu", DeviceKind("tpu", accelerator=True, discover=_tpu_placements))
REFERENCE_DEVICE = next(iter(DEVICE_KINDS))  # "cpu"


@dataclass(frozen=True)
class Inventory:
    """The devices this machine has, found once per run."""

    placements: dict[str, Placement]

    @classmethod
    def discover(cls, intra_op_threads: int = 0, tpu_timeout_s: float = TPU_PROBE_TIMEOUT_S) -> Inventory:
        tf = init_tensorflow(intra_op_threads)
        placements: dict[str, Placement] = {}
        for kind in DEVICE_KINDS.values():
            placements.update(kind.discover(tf, tpu_timeout_s))
        return cls(placements)

    def default_names(self) -> tuple[str, ...]:
        """'all': one placement per device kind present."""
        return tuple(name for name in DEVICE_KINDS if name in self.placements)

    def get(self, name: str) -> Placement | None:
        return self.placements.get(name)

    def absent_reason(self, name: str) -> str:
        return f"device {name} requested but not present (present: {', '.join(self.placements)})"

    def fingerprint(self) -> Fingerprint:
        """What speedup and memory baselines are keyed by (see fingerprint.py)."""
        return hardware([placement.description for placement in self._accelerators()])

    def machine_class(self) -> str:
        """A short name for the machine in reports: CPU architecture, CPU count and accelerators."""
        parts = [platform.machine(), f"{os.cpu_count()}cpu"]
        parts += [placement.description for placement in self._accelerators()]
        return re.sub(r"[^A-Za-z0-9._]+", "-", "-".join(parts)).strip("-")

    def _accelerators(self) -> list[Placement]:
        """One placement per accelerator kind present (the kind's own, standing for all its devices)."""
        return [
            self.placements[kind.name]
            for kind in DEVICE_KINDS.values()
            if kind.accelerator and kind.name in self.placements
        ]
