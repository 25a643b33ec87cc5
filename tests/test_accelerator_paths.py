"""Decisions that matter only on an accelerator, checked here on the CPU: XLA for a CPU cell on
a GPU host, the device a torch or JAX cell is given, the JAX worker's environment, float32 as
IEEE float32, the replica count from the strategy, device peaks from a fresh state, and what
counts as out of memory."""

import os
import sys
from pathlib import Path

import pytest

from accelbench.axes import backends
from accelbench.axes.backends import BACKENDS, Neutral
from accelbench.environments import Environment
from accelbench.kinds.distributed import job_main
from accelbench.kinds.distributed import jobs as distributed
from accelbench.kinds.distributed.job import Job
from accelbench.processes.protocol import RunFields
from accelbench.processes.workers import WorkerPool
from accelbench.work import memory
from conftest import needs_tensorflow

# what a worker gets of a run: digits, the zoo's options, TensorFlow's threads
DIGITS = RunFields("digits", None, None, deep_layers=5, seed=0, intra_op_threads=0, round_seconds=0.2,
                   predict_round_seconds=0.2)  # fmt: skip

HERE = str(Path(__file__).parent)


@needs_tensorflow
def test_a_cpu_cell_is_compiled_without_xla_when_the_process_sees_a_gpu(heavy_imports, monkeypatch):
    """Keras' jit_compile="auto" turns XLA on whenever TensorFlow lists any GPU, whatever the
    model's placement; a CPU cell decides from its own device."""
    import tensorflow as tf

    from accelbench.axes.backends.tensorflow import TensorflowPlacement as Placement
    from accelbench.axes.data import load
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.inference import serving_model
    from accelbench.work.training import build_compiled

    listed = tf.config.list_physical_devices
    fake_gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
    monkeypatch.setattr(
        tf.config,
        "list_physical_devices",
        lambda kind=None: [*listed(kind), *([fake_gpu] if kind in (None, "GPU") else [])],
    )
    dataset = load("digits", None).head(64)
    cpu = Placement("cpu", "/cpu:0", "a CPU")
    auto = MODELS["mlp"].build(dataset.input_shape, 10, ModelOptions())
    auto.compile(optimizer="sgd", loss="mse")
    assert auto.jit_compile is True  # what Keras' default would do to a CPU cell on this "GPU host"
    assert build_compiled(MODELS["mlp"], dataset, cpu, ModelOptions()).jit_compile is False
    assert serving_model(MODELS["mlp"], dataset, cpu, ModelOptions()).jit_compile is False
    assert Placement("gpu", "/gpu:0", "a GPU").jit_compile == "auto"  # an accelerator: Keras' own choice


def test_a_torch_or_jax_cpu_cell_is_pinned_to_the_cpu():
    """Keras' torch backend puts tensors on CUDA wherever CUDA is available: a cpu cell names its
    device ("cpu" on torch: Keras' torch variables moved to "cpu:0" are copies, and nothing trains)."""
    assert Neutral("cpu", "a CPU", "torch").keras_device == "cpu"
    assert Neutral("cpu", "a CPU", "jax").keras_device == "cpu:0"
    assert Neutral("gpu", "a GPU", "torch").keras_device == "gpu:0"  # the first accelerator
    assert Neutral("gpu:1", "a GPU", "jax").keras_device == "gpu:1"  # one GPU by its number


def test_each_backend_names_the_device_a_weight_lies_on_as_devices_names_devices():
    """What a cell's weights are checked against (backends.weights_on): each framework's own name
    for a device, read without importing it, as the --devices name of that device."""
    from types import SimpleNamespace as Fake

    jax_gpu = Fake(devices=lambda: [Fake(platform="gpu", id=1)])  # jax.Array.devices(): a set
    assert BACKENDS["jax"].devices_of(jax_gpu) == ("gpu:1",)
    spread = Fake(devices=lambda: [Fake(platform="gpu", id=0), Fake(platform="gpu", id=1)])
    assert sorted(BACKENDS["jax"].devices_of(spread)) == ["gpu:0", "gpu:1"]
    assert BACKENDS["torch"].devices_of(Fake(device=Fake(type="cuda", index=0))) == ("gpu:0",)
    assert BACKENDS["torch"].devices_of(Fake(device=Fake(type="cpu", index=None))) == ("cpu:0",)
    on_gpu = Fake(device="/job:localhost/replica:0/task:0/device:GPU:1")
    assert BACKENDS["tensorflow"].devices_of(on_gpu) == ("gpu:1",)


def test_a_model_built_for_a_cpu_cell_has_its_weights_on_the_cpu(heavy_imports):
    from accelbench.axes.data import load
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.training import build_compiled

    placement = backends.inventory(backends.current()).get("cpu")
    model = build_compiled(MODELS["mlp"], load("digits", None), placement, ModelOptions())
    assert backends.weights_on(model) == "cpu:0"
    assert backends.weights_on(None) is None  # no Keras model (an estimator's work): nothing to check


def test_a_cell_whose_weights_lie_elsewhere_than_it_asks_fails_in_one_line_naming_both():
    from types import SimpleNamespace as Fake

    from accelbench.benches.context import placed_as_asked

    assert backends.placed_elsewhere("test_train[gpu-bs32-mlp]", "gpu", "gpu:0,gpu:1") is None
    assert backends.placed_elsewhere("test_train[gpu:1-bs32-mlp]", "gpu:1", "gpu:1") is None
    assert backends.placed_elsewhere("test_svm[cpu-n500]", "cpu", None) is None  # no Keras model
    bench = Fake(name="test_train[cpu-bs32-mlp]", cell=Fake(device="cpu"), extra_info={})
    bench.record = lambda part: bench.extra_info.update(part.entries())
    with pytest.raises(pytest.fail.Exception) as failed:
        placed_as_asked(bench, "gpu:0")
    assert str(failed.value).splitlines() == [
        "test_train[cpu-bs32-mlp]: asked for cpu, but its model's weights lie on gpu:0: what would be timed is "
        "not this cell's work (a placement the backend did not honour)"
    ]
    assert bench.extra_info == {"weights_on": "gpu:0"}  # recorded before it fails
    half = backends.placed_elsewhere("test_train[gpu-bs32-mlp]", "gpu", "cpu:0,gpu:0")
    assert half and "lie on cpu:0,gpu:0" in half


def test_worker_environments_keep_float32_ieee_and_leave_the_gpu_to_share():
    jax_variables = dict(BACKENDS["jax"].environment().variables)
    assert jax_variables["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert jax_variables["JAX_DEFAULT_MATMUL_PRECISION"] == "highest"
    assert jax_variables["KERAS_BACKEND"] == "jax"
    assert "NVIDIA_TF32_OVERRIDE" not in dict(BACKENDS["torch"].environment().variables)  # the TF32 roof needs TF32


def test_torch_starts_with_float32_as_ieee_in_matmuls_and_convolutions():
    torch = pytest.importorskip("torch", reason="the torch extra is not installed: pip install 'accelbench[torch]'")
    from accelbench.axes.backends import torch as torch_backend

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # PyTorch's cuDNN default
    torch_backend.start.cache_clear()
    torch_backend.start()
    assert torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 is False


def test_the_jax_worker_runs_with_those_settings_and_places_a_cpu_cell_on_the_cpu(tmp_path):
    pytest.importorskip("jax", reason="the jax extra is not installed: pip install 'accelbench[jax]'")
    base = BACKENDS["jax"].environment()
    environment = Environment(
        "jax", sys.executable, (*base.variables, ("PYTHONPATH", os.pathsep.join([HERE, *sys.path])))
    )
    pool = WorkerPool(tmp_path)
    try:
        found = pool.call(environment, "worker_faults:jax_worker_settings", 120)
    finally:
        pool.end()
    assert found["backend"] == "jax" and found["preallocate"] == "false"
    assert found["matmul_precision"] == "highest"
    assert found["made_on"] and all("cpu" in device.lower() for device in found["made_on"])
    assert found["tensorflow_imported"] is False  # Keras would seed TensorFlow too (build.seed_everything)


@needs_tensorflow
def test_tensorflow_runs_float32_as_ieee_float32(heavy_imports):
    import tensorflow as tf

    from accelbench.axes.backends.tensorflow import start

    start()
    assert tf.config.experimental.tensor_float_32_execution_enabled() is False


class Strategy:
    def __init__(self, replicas):
        self.num_replicas_in_sync = replicas


def test_the_replica_count_and_global_batch_come_from_the_strategy():
    asked = Job("replicas", "mlp", 32, replicas=2, run=DIGITS, device="gpu")
    ran = job_main.replicated(asked, Strategy(4))  # a host with four GPUs
    assert ran.replicas == 4 and ran.global_batch == 128
    single = Job("single", "mlp", 32, replicas=2, run=DIGITS)
    assert job_main.replicated(single, Strategy(1)) == single


@pytest.mark.slow(10)
def test_three_logical_cpu_devices_train_to_the_loss_of_one_device(heavy_imports):
    """Three replicas, not the suite's two: a count taken from anywhere but the strategy shows.
    The one-device reference runs here, in this process (the same job_main code a "single" job's
    process runs), so the test starts one TensorFlow process, not two."""
    small = dict(model="mlp", run=DIGITS, per_replica_batch=32, check_steps=3, rounds=1, steps_per_round=2)
    reference = job_main.run_in_process(Job("single", replicas=3, **small))
    spread = distributed.run_job(Job("replicas", replicas=3, **small), 120.0)
    assert spread.replicas_in_sync == 3 and len(spread.devices) == 3
    assert max(abs(a - b) for a, b in zip(spread.losses, reference.losses)) <= distributed.LOSS_TOLERANCE


class Allocator:
    """An allocator's counters: bytes in use and the peak, which reset() may restart."""

    def __init__(self, in_use, peak, resettable):
        self.in_use, self.peak, self.resettable = in_use, peak, resettable

    def read(self):
        return self.in_use, self.peak

    def reset(self):
        self.peak = self.in_use

    def allocate_and_free(self, size):
        self.peak = max(self.peak, self.in_use + size)


def test_a_device_peak_counts_only_what_the_cell_itself_held():
    """300 MB left alive by earlier cells, a 900 MB high-water mark from one of them: the cell's
    own 50 MB step is what is reported, whatever ran before it."""
    resettable = Allocator(in_use=300, peak=900, resettable=True)
    assert backends.peak_above_start(resettable.read, resettable.reset, lambda: resettable.allocate_and_free(50)) == 50


def test_an_accelerator_step_on_jax_is_counted_by_the_compiler_and_on_the_others_read_from_the_allocator(
    monkeypatch,
):
    """JAX's allocator cannot reset its peak, and a process's mark holds its compiles' (an H100
    read 176 MiB for an MLP step of 1.8 MiB), so its step is counted by XLA (Backend.step_bytes);
    a backend whose peak resets reads it. Each result says which; a CPU cell has no device peak."""
    import dataclasses

    from accelbench.axes.backends.backend import COUNTED_BY_COMPILER, READ_FROM_ALLOCATOR, CompiledStep, StepCount

    counted, ran = [], []
    step = CompiledStep("the model", "train", ("x", "y"))
    monkeypatch.setitem(
        BACKENDS._entries,
        "jax",
        dataclasses.replace(
            BACKENDS["jax"], step_bytes=lambda model, kind, inputs: counted.append(kind) or StepCount(1234, 32)
        ),
    )
    read = lambda placement, work: work() or 99  # noqa: E731
    monkeypatch.setitem(BACKENDS._entries, "torch", dataclasses.replace(BACKENDS["torch"], device_peak=read))
    gpu, cpu = Neutral("gpu:0", "a GPU", "jax"), Neutral("cpu", "a CPU", "jax")
    assert backends.counted_step_bytes("jax", gpu, step) == StepCount(1234, 32)
    assert backends.counted_step_bytes("torch", gpu, step) is None  # its allocator is read instead
    assert backends.counted_step_bytes("jax", cpu, step) is None  # host memory is memray's
    assert backends.device_peak_bytes("jax", gpu, lambda: ran.append(1), StepCount(1234, 32)) == (
        1234,
        COUNTED_BY_COMPILER,
    )
    assert backends.device_peak_bytes("torch", gpu, lambda: ran.append(1)) == (99, READ_FROM_ALLOCATOR)
    assert backends.device_peak_bytes("jax", cpu, lambda: ran.append(1)) == (None, "")
    assert counted == ["train"] and len(ran) == 3  # the steps ran every time


JAX_COUNT = """
import json
import numpy as np
import keras
from accelbench.axes.backends import BACKENDS
from accelbench.work import memory

def mlp(widths):
    layers = [keras.layers.Dense(n, activation="relu") for n in widths]
    model = keras.Sequential([keras.Input((784,)), *layers, keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model

count, found = BACKENDS["jax"].step_bytes, {}
for name, widths in (("mlp", (400, 400, 500)), ("planted", (400, 400, 500, 4096))):
    model = mlp(widths)
    estimate = memory.estimate(model)
    for batch in (32, 256):
        x, y = np.random.rand(batch, 784).astype("float32"), np.random.randint(0, 10, batch)
        model.train_on_batch(x, y)
        model.predict_on_batch(x)
        found[f"{name} {batch}"] = (count(model, "train", (x, y)).bytes, estimate.step(batch),
                                    count(model, "inference", (x,)).bytes, estimate.inference(batch))
        assert count(model, "train", (x, y)).workspace_bytes == 0  # a CPU's step calls no cuBLAS
print(json.dumps(found))
"""


@pytest.mark.slow(10)
def test_xlas_count_of_a_jax_step_holds_its_inputs_and_a_planted_layer_and_no_more_than_the_estimate(tmp_path):
    """XLA's count of the MNIST MLP's training step and predicted batch (on this CPU; a GPU's is
    the same kind of plan) against independent counts: at least the input batch (784 float32 a
    sample), at most the analytic estimate, which holds every gradient and activation at once
    (XLA fuses SGD's update into the backward pass: 0.58x of it at batch 32 on the EPYC); it
    grows with the batch by at least the inputs' growth, and a planted 4096-wide layer adds at
    least its activation (batch x 4096 float32) to the training step."""
    pytest.importorskip("jax", reason="the jax extra is not installed: pip install 'accelbench[jax]'")
    import json
    import subprocess

    environment = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": os.pathsep.join([HERE, *sys.path])}
    printed = subprocess.run(
        [sys.executable, "-c", JAX_COUNT], env=environment, capture_output=True, text=True, timeout=300, check=True
    ).stdout
    found = json.loads(printed.splitlines()[-1])
    for name, (train, train_estimate, inference, inference_estimate) in found.items():
        inputs = int(name.split()[1]) * 784 * 4
        assert inputs < train <= train_estimate and inputs < inference <= inference_estimate, found
    for name in ("mlp", "planted"):
        assert found[f"{name} 256"][0] - found[f"{name} 32"][0] >= (256 - 32) * 784 * 4, found
        assert found[f"{name} 256"][2] - found[f"{name} 32"][2] >= (256 - 32) * 784 * 4, found
    for batch in (32, 256):
        assert found[f"planted {batch}"][0] - found[f"mlp {batch}"][0] >= batch * 4096 * 4, found


class InternalError(Exception):
    pass


class XlaRuntimeError(Exception):
    pass


class OutOfMemoryError(Exception):
    pass


@pytest.mark.parametrize(
    "error",
    [
        InternalError("cuDNN launch failure: CUDNN_STATUS_ALLOC_FAILED"),
        InternalError("Blas GEMM launch failed: CUBLAS_STATUS_ALLOC_FAILED"),
        XlaRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4.0GiB"),
        OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        MemoryError(),
    ],
)
def test_accelerator_out_of_memory_in_its_many_forms_is_recognised(error):
    assert memory.is_out_of_memory(error)


def test_other_failures_are_not_taken_for_out_of_memory():
    assert not memory.is_out_of_memory(InternalError("cuDNN launch failure: CUDNN_STATUS_EXECUTION_FAILED"))
    assert not memory.is_out_of_memory(ValueError("shapes (32, 10) and (5,) not aligned"))


SYNCED_ACROSS_REPLICAS = """
import tensorflow as tf
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
from accelbench.axes.backends.tensorflow import TensorflowPlacement
strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])
placement = TensorflowPlacement("cpu", "/cpu:0", "two logical CPUs", strategy)

@tf.function
def both():
    replica = lambda: tf.fill(
        (2, 3), tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32) + 1.0
    )
    return placement.synced(placement.run(replica, ()))

print(float(both()))
"""


WARMED_UNDER_A_STRATEGY = """
import tensorflow as tf
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
import numpy as np
from accelbench.axes.backends import tensorflow as backend
strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])
placement = backend.TensorflowPlacement("cpu", "/cpu:0", "two logical CPUs", strategy)
with placement.scope():
    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(3, kernel_initializer="ones")(inputs))
loop = backend.prediction_loop(model, placement, np.ones((2, 32, 8), "float32"))
print(sorted(backend._WARMED), loop(3))
"""


@needs_tensorflow
@pytest.mark.slow
def test_the_first_prediction_loop_warms_under_a_strategy_of_several_replicas_too():
    """The once-a-process warm-up before a first cell's compile (a throwaway model's loop) runs
    on a mirrored placement as on one device: its batch is sliced over the replicas, as a cell's
    is (two logical CPUs here, the GPUs of a host with several there), and the cell's own loop
    then predicts: 8 ones through weights of ones, summed over the replicas' first outputs."""
    import subprocess

    found = subprocess.run(
        [sys.executable, "-c", WARMED_UNDER_A_STRATEGY],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "-1", "TF_CPP_MIN_LOG_LEVEL": "2", "KERAS_BACKEND": "tensorflow"},
    )
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.strip().splitlines()[-1] == "['cpu'] 16.0", found.stdout


@pytest.mark.slow
def test_multi_replica_inference_waits_for_every_replica_not_only_the_first():
    """What the clock stops after depends on every replica's output: replica 0 gives 1, replica 1
    gives 2, and the fetched number is their sum (replica 0's alone would be 1)."""
    import subprocess

    found = subprocess.run(
        [sys.executable, "-c", SYNCED_ACROSS_REPLICAS],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "-1", "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert found.returncode == 0, found.stderr[-2000:]
    assert float(found.stdout.strip().splitlines()[-1]) == 3.0


def in_worker(backend, name, tmp_path):
    """tests/worker_faults.py's `name` (steps=20) in `backend`'s own worker; skipped without it."""
    if not BACKENDS[backend].installed():
        pytest.skip(BACKENDS[backend].missing_reason())
    base = BACKENDS[backend].environment()
    environment = Environment(
        backend, sys.executable, (*base.variables, ("PYTHONPATH", os.pathsep.join([HERE, *sys.path])))
    )
    pool = WorkerPool(tmp_path)
    try:
        return pool.call(environment, f"worker_faults:{name}", 300, steps=20)
    finally:
        pool.end()


@pytest.mark.slow(10)
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_each_backend_s_bare_loop_trains_the_model_it_is_held_to(backend, tmp_path):
    """fit() is held to a hand-written loop of the same backend (Backend.bare_loop): it must be a
    real training loop, its loss falling over its rounds, not a loop that does nothing fast."""
    found = in_worker(backend, "bare_loop_losses", tmp_path)
    assert found["samples_per_round"] == 20 * 32
    assert 0 < found["last"] < 0.5 * found["first"], found


@pytest.mark.slow(40)
def test_the_gpu_check_runs_the_suite_per_installed_backend_and_prints_each_decision(tmp_path, capsys, monkeypatch):
    """`accelbench gpu-check` on this CPU-only host: a backend's run (the process backend's
    alone, for time: the others' are the same loop), and its rows, saying plainly that no gpu cell
    ran rather than a number that was not measured."""
    import re

    from accelbench import cli, gpu_check
    from accelbench.run.roofs import ROOFS_DIR

    monkeypatch.setattr(gpu_check, "installed", lambda: [backends.PROCESS_BACKEND])
    monkeypatch.delenv(ROOFS_DIR, raising=False)  # the test session's shared roofs (conftest.py)

    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    # -k matches the file's name too (test_training.py): its other tests are named out
    only_train = "test_train and not (memory or threads or overhead or accuracy or scaling)"
    selection = ["--preset", "smoke", "-k", only_train, "--models", "mlp", "--batch-sizes", "32"]
    storage = f"--benchmark-storage={tmp_path / 'storage'}"
    code = cli.main(["gpu-check", "--benchmarks", str(benchmarks), "-o", str(tmp_path), "--", *selection, storage])
    printed = capsys.readouterr().out
    assert code == 0, printed
    backend = backends.PROCESS_BACKEND
    assert re.search(rf"^{backend}: the run +exit 0 in \d+ s", printed, re.M), printed
    assert (tmp_path / f"run-{backend}.json").exists()
    assert re.search(rf"^{backend}: cells that ran +1$", printed, re.M), printed
    assert " 1 passed" in (tmp_path / f"run-{backend}.log").read_text()  # the row counts the cells pytest ran
    assert re.search(rf"^{backend}: devices found +cpu: ", printed, re.M)
    assert re.search(rf"^{backend}: fingerprint names the accelerator +none$", printed, re.M)
    assert re.search(rf"^{backend}: a gpu cell runs on the gpu +no cell ran there$", printed, re.M)
    assert re.search(
        rf"^{backend}: a cpu cell runs on the cpu +1 cpu cell, its weights on cpu:0 \(1\); "
        r"fastest training test_train\[cpu-bs32-mlp\]: on .*samples/s",
        printed,
        re.M,
    ), printed
    assert re.search(rf"^{backend}: roof of \S+ in float32 +[\d.]+ [GT]FLOP/s", printed, re.M)
    assert list((tmp_path / "roofs").glob("*.json")), "the roofs it measured are kept for the next check"


def slow_host(tmp_path: Path, later_tests: str) -> Path:
    """A benchmarks folder whose first test finishes at once and whose `later_tests` follow."""
    benchmarks = tmp_path / "benchmarks"
    benchmarks.mkdir()
    (benchmarks / "conftest.py").write_text('pytest_plugins = ("accelbench.plugin",)\n')
    first = "import time\n\ndef test_finished(benchmark):\n    benchmark(sum, range(100))\n\n"
    (benchmarks / "test_slow_host.py").write_text(first + later_tests)
    return benchmarks


def test_a_gpu_check_run_stopped_at_its_deadline_keeps_the_cells_it_finished(tmp_path, monkeypatch):
    """A host slower than the check's budget: the run is interrupted as Ctrl-C would, pytest
    saves what finished, and the table is made from it (on the H100 the first check's runs were
    killed at their deadline and saved nothing). The cell interrupted in its timed rounds has
    no rounds: it is left out (on the H100's second check, JAX's JSON was empty because
    pytest-benchmark's save raised on such a cell's empty statistics)."""
    import json

    from accelbench import gpu_check

    # 25 s to save once interrupted: this run loads the process backend (TensorFlow's import) only
    # as it saves, for the machine's description, which took 7.8 s after the Ctrl-C on an idle
    # 2-core machine; among the fast tier's parallel tests 10 s ran out, twice in two runs, and
    # the run was killed before it wrote its JSON.
    monkeypatch.setattr(gpu_check, "SAVE_S", 25)
    monkeypatch.setattr(gpu_check, "STOP_S", 0)  # --stop-after=15: the cell below outlasts it
    running = "def test_still_running(benchmark):\n    benchmark.pedantic(time.sleep, args=(600,))\n"
    benchmarks = slow_host(tmp_path, running)
    saved, code, seconds = gpu_check.run_backend(backends.PROCESS_BACKEND, benchmarks, tmp_path, ["-s"], 40.0)
    log = (tmp_path / f"run-{backends.PROCESS_BACKEND}.log").read_text()
    assert code == gpu_check.DEADLINE, log
    assert seconds < 40.0 + 5, log
    assert saved.exists(), log
    names = [bench["name"] for bench in json.loads(saved.read_text())["benchmarks"]]
    assert names == ["test_finished"]
    assert "KeyboardInterrupt" in log


def test_a_gpu_check_run_out_of_time_stops_between_cells_and_saves_them(tmp_path, monkeypatch):
    """--stop-after: once a run's share is nearly spent, no further cell starts; pytest ends the
    run between cells, with no Ctrl-C inside one, and saves the cells that finished."""
    import json

    from accelbench import gpu_check

    monkeypatch.setattr(gpu_check, "SAVE_S", 10)
    # --stop-after=5 of the 60 s below, Ctrl-C at 50. The run's clock starts with its session
    # (the backend's devices found, collection), which a busy 2-core machine once took past a
    # --stop-after of 2 s before the second test started.
    monkeypatch.setattr(gpu_check, "STOP_S", 45)
    benchmarks = slow_host(
        tmp_path,
        "def test_past_the_time(benchmark):\n    benchmark.pedantic(time.sleep, args=(6,))\n\n"
        "def test_never_started(benchmark):\n    benchmark(sum, range(100))\n",
    )
    saved, code, seconds = gpu_check.run_backend(backends.PROCESS_BACKEND, benchmarks, tmp_path, [], 60.0)
    log = (tmp_path / f"run-{backends.PROCESS_BACKEND}.log").read_text()
    assert code == gpu_check.DEADLINE, log
    assert seconds < 60.0 - 10, log  # before the Ctrl-C (CI's parallel tests: 14.4 s)
    names = [bench["name"] for bench in json.loads(saved.read_text())["benchmarks"]]
    assert names == ["test_finished", "test_past_the_time"]
    assert "--stop-after 5 s: 1 test(s) not started" in log
    assert "KeyboardInterrupt" not in log


@pytest.mark.slow(10)
@pytest.mark.parametrize(("backend", "array"), [("jax", "jax"), ("torch", "torch")])
def test_a_trainer_with_its_inputs_on_the_device_is_fed_the_backends_arrays_and_trains(backend, array, tmp_path):
    """The device speedup without the copy: the trainer's inputs made resident (Backend.resident)
    are the backend's own arrays, which Keras' data adapter slices where they lie, and the trainer
    still trains on them. On the CPU there is no copy to leave out; on a GPU it is the point."""
    found = in_worker(backend, "resident_trainer", tmp_path)
    assert found["fed"].startswith(array) and "numpy" not in found["fed"], found
    assert 0 < found["last"] < 0.5 * found["first"], found


def test_only_an_accelerator_on_a_backend_that_can_hold_its_inputs_is_timed_again_without_the_copy():
    from accelbench.grid.cells import Cell
    from accelbench.kinds.speedup.bench import inputs_can_lie_on
    from accelbench.work.training import training_input

    assert inputs_can_lie_on(Cell("gpu", 256, "mlp", backend="jax"))
    assert inputs_can_lie_on(Cell("gpu:1", 256, "mlp", backend="torch"))
    assert not inputs_can_lie_on(Cell("cpu", 256, "mlp", backend="jax"))
    assert not inputs_can_lie_on(Cell("gpu", 256, "mlp", backend="tensorflow"))  # tf.data feeds its own pipeline

    class TensorflowLike:
        FEEDS_ARRAYS = False

    with pytest.raises(LookupError, match="TensorFlow's trainers feed a tf.data pipeline"):
        training_input(None, 32, TensorflowLike(), resident=True)


def test_a_model_drawn_from_a_devices_own_stream_gets_the_cpus_first_weights(heavy_imports, monkeypatch):
    """Accuracy parity trains the same model on the GPU and the CPU: where the backend's seeded
    draws depend on the device (Backend.drawn_on_device), build_model copies in the CPU's. The
    device's own stream is planted: the builder's first draw in a build is shifted, as a CUDA
    generator's would differ from the CPU's for the same seed."""
    import dataclasses

    import keras
    import numpy as np

    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.build import build_model

    calls = []

    def device_stream_first(input_shape, outputs, options):
        model = MODELS["mlp"].build(input_shape, outputs, options)
        model.build((None, *input_shape))
        if len(calls) % 2 == 0:  # the first draw of a build: the device's own stream
            model.set_weights([w + 1.0 for w in model.get_weights()])
        calls.append(1)
        return model

    planted = dataclasses.replace(MODELS["mlp"], build=device_stream_first)
    backend = BACKENDS[keras.backend.backend()]

    def built(spec):
        scope = keras.device(backend.cpu_device)
        return build_model(spec, (64,), ModelOptions(seed=3), scope, train=True, jit_compile=False).get_weights()

    on_cpu = built(MODELS["mlp"])
    calls.clear()
    assert not all(np.array_equal(a, b) for a, b in zip(on_cpu, built(planted)))  # no copy: the device's draw
    monkeypatch.setitem(
        BACKENDS._entries, backend.name, dataclasses.replace(backend, drawn_on_device=lambda model: True)
    )
    calls.clear()
    assert all(np.array_equal(a, b) for a, b in zip(on_cpu, built(planted)))
    assert len(calls) == 2  # the device's draw, then the CPU's


@pytest.mark.skipif(not backends.importable("torch"), reason="the torch extra is not installed")
def test_torch_says_a_model_on_the_cpu_was_drawn_from_the_cpus_stream():
    """The torch check itself: variables on the CPU are the CPU's draw (nothing to copy)."""
    from accelbench.axes.backends.torch import drawn_on_device

    class Variable:
        def __init__(self, device):
            import torch

            self.value = torch.zeros(1, device=device)

    class Model:
        def __init__(self, device):
            self.weights = [Variable(device)]

    assert not drawn_on_device(Model("cpu"))
    assert drawn_on_device(Model("meta"))  # any device other than the CPU draws from its own stream


# A compiled GPU step's HLO, as XLA prints it (the shapes of its tests' modules): a cuBLAS-Lt
# matmul with a bias epilogue and Hopper's 32 MiB workspace, a legacy gemm whose workspace XLA
# capped at its operands' bytes, a cuDNN convolution with a scratch of u8, and a Triton fusion
# (a custom call with no scratch).
GPU_STEP_HLO = """
ENTRY %main {
  %p0 = f32[256,784]{1,0} parameter(0)
  %cublas-lt-matmul.1 = (f32[256,400]{1,0}, s8[33554432]{0}) custom-call(%p0, %p1, %p2),
    custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"epilogue":"BIAS"}}
  %custom-call.3 = (f32[400,10]{1,0}, s8[1273856]{0}) custom-call(%a, %b), custom_call_target="__cublas$gemm"
  %cudnn-conv.2 = (f32[32,26,26,32]{3,2,1,0}, u8[4325376]{0}) custom-call(f32[32,28,28,1]{3,2,1,0} %x, %w),
    window={size=3x3}, custom_call_target="__cudnn$convForward"
  %triton.1 = (f32[256,10]{1,0}) custom-call(f32[256,400]{1,0} %a), custom_call_target="__triton"
  ROOT %tuple = (f32[256,400]{1,0}) tuple(%get-tuple-element.1)
}
"""


def test_the_largest_library_workspace_is_read_from_a_compiled_steps_hlo():
    """XLA gives each cuBLAS and cuDNN call a scratch buffer as its last output: the largest is
    the step's library workspace (32 MiB: a cuBLAS-Lt matmul on Hopper), not their sum (the
    buffer assignment may share them), and 0 where no call has one."""
    from accelbench.axes.backends.jax import library_workspace

    assert library_workspace(GPU_STEP_HLO) == 33554432
    without_lt = GPU_STEP_HLO.replace("s8[33554432]", "s8[0]")
    assert library_workspace(without_lt) == 4325376  # the convolution's scratch, above the gemm's
    only_triton = "\n".join(line for line in GPU_STEP_HLO.splitlines() if "]{0}) custom-call" not in line)
    assert "__triton" in only_triton and library_workspace(only_triton) == 0
    assert library_workspace("") == 0


def test_the_gpu_check_names_the_library_workspace_inside_a_device_peak():
    """A counted device peak 8.44x the estimate (the H200's MLP at batch 256) reads with the
    workspace it holds, so the ratio is not taken for the model's own memory."""
    import dataclasses

    from accelbench import gpu_check
    from accelbench.axes.backends.backend import COUNTED_BY_COMPILER
    from accelbench.kinds.memory.result import StepMemory
    from accelbench.results.summary import CellRecord

    memory = StepMemory(
        device_peak_memory_bytes=int(35.8 * 2**20),
        device_peak_over_estimate=8.44,
        device_peak_from=COUNTED_BY_COMPILER,
        device_workspace_bytes=2**25,
    )
    cell = CellRecord("test_train_memory[gpu-bs256-mlp]", "train_memory", "gpu", "mlp", "bs256", memory.entries())
    assert gpu_check._peak(cell) == (
        "test_train_memory[gpu-bs256-mlp] 35.8 MiB by XLA's count (8.44x the estimate), "
        "of it a 32.0 MiB library workspace"
    )
    none = dataclasses.replace(memory, device_workspace_bytes=0)
    assert gpu_check._peak(dataclasses.replace(cell, info=none.entries())).endswith("(8.44x the estimate)")


def test_the_gpu_check_counts_each_devices_cells_by_where_their_weights_lay():
    from types import SimpleNamespace as Fake

    from accelbench import gpu_check
    from accelbench.results.summary import CellRecord

    def cell(name, device, weights_on):
        return CellRecord(name, "train_bench", device, "mlp", "bs32", {"weights_on": weights_on} if weights_on else {})

    run = Fake(
        cells=[
            cell("a", "cpu", "cpu:0"),
            cell("b", "cpu", "cpu:0"),
            cell("c", "cpu", "gpu:0"),  # a failed cell's record, saved with the run
            cell("d", "cpu", None),  # no Keras model: not checked
            cell("e", "gpu:0", "gpu:0"),
        ]
    )
    assert gpu_check._placed(run, [], "cpu") == (
        "4 cpu cells, their weights on cpu:0 (2), gpu:0 (1), not checked (1); 1 elsewhere"
    )
    assert gpu_check._placed(run, [], "gpu") == "1 gpu cell, its weights on gpu:0 (1)"
    assert gpu_check._placed(Fake(cells=[]), [], "gpu") == "no cell ran there"


def test_the_gpu_check_says_where_singlestreams_p50_goes_beside_the_latency_cell():
    """SingleStream read 1.52x the latency cell on the H200's PyTorch: the row splits its p50 by
    the serving loop's own clock, so that what the served call adds is named, not guessed."""
    from accelbench import gpu_check
    from accelbench.kinds.serving.result import Serving

    served = Serving(
        scenario="SingleStream",
        serving_p50_ms=2.223,
        expected_latency_ms=1.5,
        loop_wait_ms=0.3,
        loop_predict_ms=1.7,
        loop_ms=2.0,
    )
    assert gpu_check._served_parts(served) == (
        "; of SingleStream's: the served step 1.700 ms (alone, before the run: 1.500), the hand-off 0.300, "
        "LoadGen's own 0.223"
    )
    assert gpu_check._served_parts(Serving(scenario="SingleStream", serving_p50_ms=2.223)) == ""  # an older run's
