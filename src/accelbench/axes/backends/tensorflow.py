"""The TensorFlow backend: its start (threads, GPU memory growth, float32 as IEEE float32, its
native start notices left out), its devices (a tf.device scope, or a tf.distribute strategy
where several GPUs or a TPU need one), its allocator's device peak, its roofs and its profiler.
`import tensorflow` lives here, in the work's TensorFlow paths and in tf.distribute's jobs."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from accelbench.axes.backends import roof_kernels
from accelbench.axes.backends.backend import BACKENDS, Backend, peak_above_start
from accelbench.axes.backends.roof_kernels import best_seconds
from accelbench.axes.devices import cpu_description, is_accelerator, jit_compile_for, type_of
from accelbench.measured import Roof

TPU_HINTS = ("TPU_NAME", "COLAB_TPU_ADDR", "TPU_ACCELERATOR_TYPE")
TPU_PROBE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class TensorflowPlacement:
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
    def device_type(self) -> str:
        return type_of(self.name)

    @property
    def jit_compile(self) -> bool | str:
        return jit_compile_for(self.device_type)

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

        if is_accelerator(self.device_type):
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
# Set before TensorFlow starts, where the process did not set them itself: its C++ info lines
# off, and oneDNN's system allocator. oneDNN's CPU allocator keeps tensors over 4 KiB in a pool
# that grows and never shrinks, so memray saw a training step's activations only while the pool
# was growing (an mlp step "took" 0.4 MiB at batch 256 but 1.3 MiB at 128). The system allocator
# makes every tensor visible; mlp, mlp_wide and cnn throughput moved by less than this machine's
# noise (10%). A user may still choose the pool by setting the variable; machine_info says which ran.
VARIABLES = (("TF_CPP_MIN_LOG_LEVEL", "2"), (SYSTEM_ALLOCATOR, "1"))


def host_allocator() -> str:
    """Which allocator TensorFlow's oneDNN CPU path takes its tensors from (see start)."""
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
def start(intra_op_threads: int = 0) -> Any:
    """Import TensorFlow once, setting threads and GPU memory growth before its runtime starts."""
    if SYSTEM_ALLOCATOR not in os.environ and "tensorflow" in sys.modules:
        warnings.warn(
            f"TensorFlow was imported before accelbench could set {SYSTEM_ALLOCATOR}=1: "
            "if it has already allocated, host memory peaks miss its pooled tensors; "
            "set the variable before TensorFlow starts",
            RuntimeWarning,
            stacklevel=2,
        )
    for name, value in VARIABLES:
        os.environ.setdefault(name, value)
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


def _gpu_description(tf, gpu) -> str:
    return tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)


def _gpu_placements(tf) -> dict[str, TensorflowPlacement]:
    gpus = tf.config.list_physical_devices("GPU")
    placements = {}
    for index, gpu in enumerate(gpus):
        placements[f"gpu:{index}"] = TensorflowPlacement(f"gpu:{index}", f"/gpu:{index}", _gpu_description(tf, gpu))
    if gpus:
        # 'gpu' means every local GPU: data parallel when there are several.
        strategy = tf.distribute.MirroredStrategy() if len(gpus) > 1 else None
        names = sorted({_gpu_description(tf, gpu) for gpu in gpus})
        placements["gpu"] = TensorflowPlacement("gpu", "/gpu:0", f"{len(gpus)} x {', '.join(names)}", strategy)
    return placements


def _tpu_is_hinted() -> bool:
    return any(os.environ.get(name) for name in TPU_HINTS) or os.path.exists("/dev/accel0")


def _connect_tpu(tf) -> Any:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def _tpu_placement(tf, timeout_s: float) -> TensorflowPlacement | None:
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
    return TensorflowPlacement("tpu", "/device:TPU:0", f"TPU x {strategy.num_replicas_in_sync}", strategy)


def placements(intra_op_threads: int = 0) -> dict[str, TensorflowPlacement]:
    """The CPU, every GPU (gpu, gpu:N) and a TPU where the environment hints at one, as
    TensorFlow finds them."""
    tf = start(intra_op_threads)
    found = {"cpu": TensorflowPlacement("cpu", "/cpu:0", cpu_description())}
    found.update(_gpu_placements(tf))
    tpu = _tpu_placement(tf, TPU_PROBE_TIMEOUT_S)
    return found | ({"tpu": tpu} if tpu is not None else {})


def device_peak(placement: TensorflowPlacement, work: Callable[[], object]) -> int | None:
    """TensorFlow's peak bytes on an accelerator while work runs, above what was resident when
    it started (peak_above_start). Several GPUs under one strategy report the first replica's."""
    import tensorflow as tf

    name = tf_device_name(placement.device)

    def read() -> tuple[int, int]:
        info = tf.config.experimental.get_memory_info(name)
        return int(info["current"]), int(info["peak"])

    return peak_above_start(read, lambda: tf.config.experimental.reset_memory_stats(name), work)


def tf_device_name(device: str) -> str:
    """'/gpu:0' or '/device:TPU:0' -> 'GPU:0' / 'TPU:0', the names tf.config.experimental takes."""
    parts = device.strip("/").split(":")
    return f"{parts[-2].upper()}:{parts[-1]}"


def devices_of(value: Any) -> tuple[str, ...]:
    """A variable's device, "/job:localhost/replica:0/task:0/device:GPU:0" -> gpu:0 (a mirrored
    one's: its primary copy's)."""
    kind, number = value.device.rsplit("device:", 1)[-1].split(":")
    return (f"{kind.lower()}:{number}",)


def roof(placement: TensorflowPlacement, dtype: str, sizes: tuple[int, ...], repeats: int) -> Roof:
    """The device's matmul rate (in a graph, as Keras' steps run: oneDNN's rewrites apply on a
    CPU) and its bandwidth (roof_kernels.py), in this process."""
    import tensorflow as tf

    # one trace for every size (TensorFlow warns of a retrace per size otherwise)
    multiply = tf.function(lambda a, b: tf.matmul(a, b)[0, 0], reduce_retracing=True)

    stored = roof_kernels.arrays_dtype(dtype)

    def timed(n: int, reps: int) -> float:
        a = tf.cast(tf.random.normal((n, n)), stored)
        b = tf.cast(tf.random.normal((n, n)), stored)
        # reading one element back waits for the multiply to finish on an accelerator
        return best_seconds(lambda: multiply(a, b).numpy(), reps)

    def make_triad(elements: int) -> Callable[[int], object]:
        # filled, not drawn: a bandwidth's bytes are the same whatever their values
        b, c = tf.fill((elements,), 1.0), tf.fill((elements,), 2.0)
        triad = tf.function(lambda b, c: b + 3.0 * c, jit_compile=True)
        return roof_kernels.back_to_back(lambda: triad(b, c), lambda out: out[0].numpy())

    def make_matvec(rows: int, columns: int) -> Callable[[int], object]:
        matrix, vector = tf.fill((rows, columns), 1.0), tf.fill((columns,), 1.0)
        product = tf.function(tf.linalg.matvec)
        return roof_kernels.back_to_back(lambda: product(matrix, vector), lambda out: out[0].numpy())

    allowed = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(dtype == roof_kernels.TF32)  # IEEE otherwise
    try:
        with tf.device(placement.device):
            return roof_kernels.measured(
                "tensorflow", placement.device, dtype, timed, make_triad, make_matvec, sizes, repeats
            )
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(allowed)


def tf32(placement: TensorflowPlacement) -> bool:
    """An NVIDIA GPU of compute capability 8.0 or above (the first of the placement's GPUs)."""
    import tensorflow as tf

    if placement.device_type != "gpu":
        return False
    index = int(placement.device.rsplit(":", 1)[-1])
    gpus = tf.config.list_physical_devices("GPU")
    details = tf.config.experimental.get_device_details(gpus[index]) if index < len(gpus) else {}
    return tuple(details.get("compute_capability") or (0, 0)) >= (8, 0)


def custom_step(model: Any, optimizer: Any, global_batch: int, jit_compile: bool = False, training: bool = True) -> Any:
    """One replica's training step, tf.distribute style: the compiled model's own loss per sample
    (Loss.call: unreduced), averaged over the global batch, so that gradients summed across
    replicas equal one device's on the whole batch. training=False: dropout and batch
    normalization as at inference (no random masks, no per-replica batch statistics)."""
    import tensorflow as tf

    @tf.function(jit_compile=jit_compile)
    def replica_step(x, y):
        with tf.GradientTape() as tape:
            outputs = model(x, training=training)
            per_sample = model.loss.call(y, outputs)
            loss = tf.nn.compute_average_loss(per_sample, global_batch_size=global_batch)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    return replica_step


def bare_loop(model: Any, data: Any, placement: TensorflowPlacement, batch_size: int) -> Callable[[int], Any]:
    """fit()'s reference on TensorFlow: custom_step looped in one tf.function over the trainer's
    own input pipeline (data.pipeline), as tf.distribute's guides write it; steps -> last loss."""
    import tensorflow as tf

    replica_step = custom_step(model, model.optimizer, batch_size, jit_compile=bool(model.jit_compile))

    @tf.function
    def loop(iterator, steps):
        loss = tf.constant(0.0)
        for _ in tf.range(steps):
            loss = placement.sum(placement.run(replica_step, next(iterator)))
        return loss

    with placement.scope():
        iterator = iter(data.pipeline)

    def run(steps: int) -> Any:
        with placement.scope():
            return loop(iterator, tf.constant(steps))  # a tensor: a new Python int would retrace

    return run


# The work's TensorFlow paths (work/training.py, inference.py, serving.py call them where the
# placement is TensorFlow's, placement.FEEDS_ARRAYS false): its input pipelines, its compiled
# prediction loop and its served predict step.


def batches_pipeline(batches: tuple[Any, ...]) -> Any:
    """Fixed batches (NumPy, (batches, batch_size, ...) each) as an endless tf.data pipeline.
    tf.data batching slice by slice cost more CPU than a small model's training step, and its
    cache() is bypassed while an earlier iterator is still alive (Keras makes one per fit),
    which doubled some rounds: so the batches are made once, in NumPy, by the caller."""
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices(batches if len(batches) > 1 else batches[0]).repeat()


def shuffled_pipeline(x: Any, y: Any, batch_size: int, seed: int) -> Any:
    """The training set in batches, reshuffled each epoch from the seed (a recipe's input)."""
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=seed).batch(batch_size)


def prediction_loop(model: Any, placement: TensorflowPlacement, images: Any) -> Callable[[int], float]:
    """steps -> the last batch's first logit, fetched (the device done): `steps` batches of the
    fixed `images` through the model, in one tf.function looping over a prefetched iterator."""
    import tensorflow as tf

    _warm_prediction(placement)
    iterator = iter(placement.feed(batches_pipeline((images,))))

    @tf.function(jit_compile=model.jit_compile)
    def serve(x):
        return model(x, training=False)

    @tf.function
    def loop(iterator, steps):
        logits = placement.run(serve, (next(iterator),))
        for _ in tf.range(steps - 1):
            logits = placement.run(serve, (next(iterator),))
        return placement.synced(logits)

    counts: dict[int, Any] = {}

    def predict(steps: int) -> float:
        if steps not in counts:  # a tensor: a new Python int would retrace (made while warming up)
            counts[steps] = tf.constant(steps)
        with placement.scope():
            return float(loop(iterator, counts[steps]))  # float() waits for the device

    return predict


_WARMED: set[str] = set()  # the placements whose first prediction loop this process has run


def _warm_prediction(placement: TensorflowPlacement) -> None:
    """Once per process and placement: a throwaway Keras model's prediction loop, traced and run,
    so that the first cell's compilation (Predictor.compile_seconds, which the summary's
    "+overheads" adds to a round) is its model's and not the process's. Whichever model's
    first inference cell ran first in a TensorFlow process read 0.2-0.3 s where the same cell
    run second read 0.07-0.1 s, so its bs256 "+overheads" read 4.7-4.9x its bs32's against
    1.1-1.7x for the others; a raw matmul's loop took little of that one-time cost, a Keras
    model's most of it (docs/measurements.md). Zeros, not Keras' initializers: it draws nothing
    from the seeded generators the cells' models are built from."""
    if placement.name in _WARMED:  # by name: "gpu" (every GPU, mirrored) and "gpu:0" run apart
        return
    _WARMED.add(placement.name)
    import keras

    with placement.scope():
        inputs = keras.Input((4,))
        model = keras.Model(inputs, keras.layers.Dense(2, kernel_initializer="zeros")(inputs))
    # One batch of 64: a strategy's replicas each take a slice of it, as of a cell's batch.
    prediction_loop(model, placement, np.zeros((1, 64, 4), dtype="float32"))(1)


def served_predict(model: Any, placement: TensorflowPlacement) -> Callable[[Any], Any]:
    """A served batch's predict step: a tf.function of the model (XLA where the placement
    compiles), as the inference cells run it, called through a concrete function per batch
    shape, as a SavedModel's serving signature is: that skips tf.function's argument matching,
    a fifth of a call's cost (0.49 against 0.60 ms for the MLP at batch 32 on 2 cores), which
    every served batch pays."""
    import tensorflow as tf

    @tf.function(jit_compile=model.jit_compile)
    def serve(batch: Any) -> Any:
        return model(batch, training=False)

    by_shape: dict[tuple[int, ...], Any] = {}

    def predict(batch: Any) -> Any:
        with placement.scope():
            concrete = by_shape.get(batch.shape)
            if concrete is None:  # made while warming up, before LoadGen starts
                spec = tf.TensorSpec(batch.shape, tf.as_dtype(batch.dtype))
                concrete = by_shape[batch.shape] = serve.get_concrete_function(spec)
            return concrete(tf.constant(batch)).numpy()

    return predict


def traced(function: Callable[..., Any], model: Any, donate: tuple[int, ...] = ()) -> Callable[..., Any]:
    """`function` as one tf.function, its int arguments passed as int32 tensors (Backend.traced);
    it reads the model's variables as a graph does. A tf.function takes no donation (`donate`
    is ignored): a tensor it returns is its own."""
    import tensorflow as tf

    graph = tf.function(function)
    return lambda *args: graph(*(tf.constant(arg, dtype="int32") if isinstance(arg, int) else arg for arg in args))


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
        "pip install 'accelbench[tensorflow]'",
        "tf.function (XLA where jit_compile is on)",
        profiler=profiler,
        cpu_kernels_checked=True,
        start=start,
        placements=placements,
        device_peak=device_peak,
        roof=roof,
        quiet_start=start_notices_dropped,
        variables=VARIABLES,
        host_allocator=host_allocator,
        bare_loop=bare_loop,
        tf32=tf32,
        traced=traced,
        devices_of=devices_of,
        gpu_install="pip install 'accelbench[tensorflow]' 'tensorflow[and-cuda]' (CUDA 12)",
    ),
)
