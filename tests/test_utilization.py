"""How far a cell is from its device's limit: the roofs measured (axes/backends/roof_kernels.py
and each backend's kernels), kept and
measured again (run/roofs.py), a cell's MFU and intensity (benches/context.py), a cell above the
roof failed as a measurement error, the roofline drawn (kinds/throughput/plots.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from accelbench.axes import backends
from accelbench.axes.backends import BACKENDS, roof_kernels
from accelbench.axes.flops import Costs
from accelbench.benches.context import above_the_roof, utilization
from accelbench.measured import ROOFS_KEY, Roof, Throughput, Utilization
from accelbench.results import summary
from accelbench.run.roofs import FolderCache, Roofs

ROOF = Roof(device="/CPU:0", dtype="float32", flops_per_s=1e11, bytes_per_s=2e10, matmul_size=2048, seconds=3.0)


def test_mfu_is_model_flops_over_the_roof_hfu_executed_flops_and_intensity_flops_over_bytes():
    rates = Throughput(samples_per_s=1000.0, flops_per_sample=2e7, achieved_flops=2e10)
    used = utilization(rates, Costs(executed_flops=1.5e7, bytes=4e5), ROOF)
    assert used.mfu == pytest.approx(0.2) and used.hfu == pytest.approx(0.15)
    assert used.arithmetic_intensity == pytest.approx(50.0)
    assert (used.roof_flops, used.roof_dtype, used.roof_device) == (1e11, "float32", "/CPU:0")
    assert above_the_roof("test_train[cpu-bs32-mlp]", used) is None
    unknown = utilization(Throughput(samples_per_s=1000.0, flops_per_sample="unknown: no counter"), Costs(), ROOF)
    assert unknown == Utilization()  # nothing made up where the FLOPs are not counted


def test_a_cell_above_105_percent_of_its_roof_is_one_line_naming_both_numbers():
    rates = Throughput(samples_per_s=1000.0, flops_per_sample=1.06e8, achieved_flops=1.06e11)
    message = above_the_roof("test_train[cpu-bs32-mlp]", utilization(rates, Costs(1.06e8, None), ROOF))
    assert message.startswith(
        "test_train[cpu-bs32-mlp]: 1.06e+11 FLOP/s executed is 106% of this device's measured float32"
    )
    assert "1e+11 FLOP/s" in message and "measurement error" in message and "\n" not in message
    at_the_edge = Throughput(samples_per_s=1000.0, flops_per_sample=1.05e8, achieved_flops=1.05e11)
    assert above_the_roof("x", utilization(at_the_edge, Costs(1.05e8, None), ROOF)) is None
    # small padded images: the convention's count above the roof, what the kernels execute below
    padded = Throughput(samples_per_s=1000.0, flops_per_sample=1.2e8, achieved_flops=1.2e11)
    assert above_the_roof("x", utilization(padded, Costs(0.8e8, None), ROOF)) is None


def test_roofs_are_kept_per_machine_checked_each_run_and_measured_again_when_a_cell_beats_them(tmp_path, monkeypatch):
    rates = iter([1e11, 2e11, 1.5e11, 2.5e11, 3e11, 0.5e11, 4e11])
    asked = []

    def kernels(placement, dtype, sizes, repeats):
        asked.append(sizes)
        return Roof(placement, dtype, next(rates), 2e10, 2048, 1.0)

    # the TensorFlow backend's kernels faked, measured and checked through backends.measure_roof
    monkeypatch.setitem(BACKENDS._entries, "tensorflow", dataclasses.replace(BACKENDS["tensorflow"], roof=kernels))
    monkeypatch.delenv("ACCELBENCH_ROOFS_DIR", raising=False)

    def run(machine="cpu=EPYC; cpus=2"):
        measure = lambda backend, device, dtype, kept: backends.measure_roof(backend, device, dtype, kept)
        roofs = Roofs(lambda: machine, lambda text: None, measure)
        roofs.use_cache(FolderCache(tmp_path))
        return roofs

    first = run()
    assert first.of("tensorflow", "cpu", "float32").flops_per_s == 1e11 and asked == [roof_kernels.MATMUL_SIZES]
    assert first.of("tensorflow", "cpu", "float32").flops_per_s == 1e11 and len(asked) == 1  # once a run
    assert first.of("tensorflow", "cpu", "float32", again=True).flops_per_s == 2e11  # a cell beat it: the better
    assert first.of("tensorflow", "cpu", "float32", again=True).flops_per_s == 2e11 and len(asked) == 2  # once
    assert run().of("tensorflow", "cpu", "float32").flops_per_s == 2e11  # checked: a busy check lowers nothing
    assert asked[-1] == (2048,)  # one matmul: twice the size that gave it, at most 2048
    assert run().of("tensorflow", "cpu", "float32").flops_per_s == 2.5e11  # and a quieter one raises it
    assert run("cpu=Xeon; cpus=64").of("tensorflow", "cpu", "float32").flops_per_s == 3e11  # another machine
    for kept in tmp_path.glob("*.json"):
        kept.write_text("{not json")
    assert run().of("tensorflow", "cpu", "float32").flops_per_s == 0.5e11  # a corrupt entry is measured anew
    assert asked[-1] == roof_kernels.MATMUL_SIZES
    # another backend's roof of the same device is its own, measured in full
    monkeypatch.setitem(BACKENDS._entries, "jax", dataclasses.replace(BACKENDS["jax"], roof=kernels))
    assert run().of("jax", "cpu", "float32").flops_per_s == 4e11 and asked[-1] == roof_kernels.MATMUL_SIZES


def test_one_roof_per_run_a_cell_above_it_has_it_measured_again_and_the_earlier_cells_held_to_the_new_one():
    """The issue's run: cells held to 139.7 GFLOP/s until one beat it, the rest to 219.5; now
    every cell's utilization is against the run's last roof of its device and dtype."""
    from types import SimpleNamespace

    from accelbench.benches.context import record_rates

    measured = iter([139.7e9, 219.5e9])
    roofs = Roofs(
        lambda: "cpu=EPYC; cpus=2",
        lambda text: None,
        lambda b, d, t, kept: Roof(d, t, next(measured), 2e10, 2048, 1.0, b),
    )
    cells = {}

    def cell(name, flops_per_s):
        bench = SimpleNamespace(
            name=name,
            cell=SimpleNamespace(device="cpu", backend="jax", precision="float32"),
            session=SimpleNamespace(roofs=roofs),
            extra_info={},
        )
        bench.record = lambda *parts: [bench.extra_info.update(part.entries()) for part in parts]
        record_rates(
            bench, Throughput(samples_per_s=1.0, flops_per_sample=flops_per_s, achieved_flops=flops_per_s), Costs()
        )
        cells[name] = bench.extra_info

    cell("early", 100e9)
    assert Utilization.of(cells["early"]).mfu == pytest.approx(100 / 139.7)
    cell("above", 180e9)  # above 1.05 x 139.7: measured again, and below the new roof
    cell("late", 100e9)
    for name, share in (("early", 100 / 219.5), ("above", 180 / 219.5), ("late", 100 / 219.5)):
        used = Utilization.of(cells[name])
        assert used.roof_flops == 219.5e9 and used.mfu == pytest.approx(share), name
    assert [r.flops_per_s for r in roofs.measured()] == [219.5e9]  # the run saves the one roof it held cells to


@pytest.mark.slow(8)
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_the_roofs_of_this_cpu_are_measured_by_each_backend_and_below_its_physical_limit(backend):
    """The matmul rate cannot exceed what every core could do with 512-bit fused multiply-adds at
    every cycle of a 6 GHz clock (2 FMA units x 16 float32 lanes x 2 FLOPs); the triad's rate
    cannot exceed what DDR5-8000 moves over 12 channels (768 GB/s). Each backend measures its
    own, in its own worker (Cellwork.ROOF), as a run does for its cells."""
    import os

    from accelbench.processes.protocol import Cellwork
    from accelbench.processes.workers import WorkerPool

    if not BACKENDS[backend].installed():
        pytest.skip(BACKENDS[backend].missing_reason())
    pool = WorkerPool()
    try:
        wire = pool.call(
            BACKENDS[backend].environment(),
            Cellwork.ROOF.target,
            300,
            device="cpu",
            dtype="float32",
            intra_op_threads=0,
            kept=None,
        )
    finally:
        pool.end()
    roof = Roof.from_json(wire)
    cores = len(os.sched_getaffinity(0))
    assert roof.backend == backend
    assert 0 < roof.flops_per_s < cores * 2 * 16 * 2 * 6e9
    assert 0 < roof.bytes_per_s < 768e9
    assert roof.matmul_size in roof_kernels.MATMUL_SIZES and roof.ridge_intensity > 0
    assert roof.bandwidth_kernel in (roof_kernels.TRIAD, roof_kernels.MATVEC)


@pytest.mark.parametrize(("triad_s", "matvec_s", "kernel"), [(0.04, 0.01, "matrix-vector"), (0.01, 0.04, "triad")])
def test_the_bandwidth_roof_is_the_better_of_the_triad_and_the_matvec_and_says_which(
    triad_s, matvec_s, kernel, monkeypatch
):
    """A triad moves 12 bytes an element, a matvec 4: each kernel's seconds become its bytes/s,
    the roof keeps the better and names it, and a kept roof's check keeps the better of two.
    Each kernel returns the seconds it stands for, so nothing is timed."""
    monkeypatch.setattr(roof_kernels, "per_call_seconds", lambda run, repeats: run(1))
    asked = []

    def make_matvec(rows, columns):
        asked.append((rows, columns))
        return lambda calls: matvec_s

    roof = roof_kernels.measured(
        "jax", "cpu:0", "float32", lambda n, reps: 1.0, lambda n: lambda calls: triad_s, make_matvec, (512,), 1
    )
    assert asked == [(roof_kernels.TRIAD_ELEMENTS // roof_kernels.MATVEC_COLUMNS, roof_kernels.MATVEC_COLUMNS)]
    triad = 12 * roof_kernels.TRIAD_ELEMENTS / triad_s
    matvec = 4 * roof_kernels.TRIAD_ELEMENTS / matvec_s
    assert roof.bytes_per_s == pytest.approx(max(triad, matvec))
    assert kernel in roof.bandwidth_kernel and kernel in summary.roof_line(roof)
    slower = dataclasses.replace(roof, bytes_per_s=roof.bytes_per_s / 2, bandwidth_kernel="another")
    assert slower.best_of(roof).bandwidth_kernel == roof.bandwidth_kernel
    assert roof.best_of(slower).bytes_per_s == roof.bytes_per_s


@pytest.mark.parametrize(
    ("overhead_s", "kernel_s", "calls"), [(120e-6, 110e-6, 22), (120e-6, 15e-3, 1)], ids=["gpu", "cpu"]
)
def test_a_short_bandwidth_kernel_is_timed_back_to_back_so_its_launch_and_wait_do_not_count(
    overhead_s, kernel_s, calls, monkeypatch
):
    """One H200 triad of 3 x 128 MiB takes about 0.11 ms, and JAX's launch and wait about as long
    again (its triad read 1,642 GiB/s, PyTorch's 3,489): timed one call at a time, the roof is
    half the device's. A run of back-to-back calls pays the launch and wait once, and a CPU's
    15 ms call is still timed alone. On a clock that advances by what each run costs."""
    now = [0.0]
    made = []

    def run(count):
        made.append(count)
        now[0] += overhead_s + count * kernel_s

    monkeypatch.setattr(roof_kernels.time, "perf_counter", lambda: now[0])
    per_call = roof_kernels.per_call_seconds(run, 3)
    assert made[-1] == calls
    assert per_call == pytest.approx(kernel_s, rel=0.06)


USER_MODEL = """
import accelbench

COUNTED = {counted}  # FLOPs per element the user's counter claims for its layer


def build(input_shape, outputs, options):
    import keras

    class Gain(keras.layers.Layer):
        def build(self, shape):
            self.gain = self.add_weight(shape=(shape[-1],), initializer="ones")

        def call(self, x):
            return x * self.gain

    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(), Gain(name="gain"),
                             keras.layers.Dense(64, activation="relu"), keras.layers.Dense(outputs)])


accelbench.register_layer_flops("Gain", lambda layer, inputs, outputs: COUNTED * inputs[0][-1])
accelbench.register_model(accelbench.ModelSpec("gain_mlp", "a user's MLP with a layer of its own", build))
"""


def smoke(pytester, *args):
    baselines = pytester.path / "baselines"
    baselines.mkdir(exist_ok=True)
    return pytester.runpytest(
        "-p", "accelbench.plugin", "-p", "no:cacheprovider", "--preset", "smoke", "--baselines", str(baselines), *args
    )


@pytest.mark.slow
def test_a_users_layer_counted_honestly_gets_mfu_and_one_counted_far_too_high_fails_the_cell(pytester, heavy_imports):
    """The planted fault: a user's FLOP counter a billion times too high puts the cell far above
    the roof; it fails as a measurement error, and its numbers are not shown as a result."""
    for path in (Path(__file__).resolve().parents[1] / "benchmarks").glob("test_*.py"):
        pytester.makepyfile(**{path.stem: path.read_text()})
    pytester.makeini("[pytest]\naccelbench_modules = my_models\n")
    cells = ("test_training.py::test_train", "--models", "gain_mlp", "--batch-sizes", "32")

    pytester.makepyfile(my_models=USER_MODEL.format(counted=1))
    saved = pytester.path / "run.json"
    smoke(pytester, *cells, f"--benchmark-json={saved}").assert_outcomes(passed=1)
    document = json.loads(saved.read_text())
    (cell,) = document["benchmarks"]
    used = Utilization.of(cell["extra_info"])
    assert 0 < used.mfu <= 1.05 and used.arithmetic_intensity > 0
    (roof,) = document["accelbench"][ROOFS_KEY]
    assert roof["dtype"] == "float32" and used.roof_flops == roof["flops_per_s"]
    from accelbench.results.report import markdown, plots
    from accelbench.results.report.runs import load_runs

    runs = load_runs([saved])  # the pull request's comment says what the utilization is taken against
    assert "### Roofs, measured" in markdown.render(runs) and "roofs of " in markdown.render(runs)
    assert [plot.name for plot in plots.all_plots(runs) if plot.name == "roofline"] == ["roofline"]

    pytester.makepyfile(my_models=USER_MODEL.format(counted=10**9))
    result = smoke(pytester, *cells)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_train[[]cpu-bs32-gain_mlp[]]: * FLOP/s executed is *% of this device's*"])
    assert "measurement error" in result.stdout.str()


def test_the_tf32_roof_is_float32_work_with_tensorfloat32_allowed_and_only_where_a_gpu_has_it():
    """The TF32 roof (shown beside float32's on an NVIDIA GPU of compute capability 8.0 or
    above): measured by the process backend's kernels in float32 storage; no CPU has it, so on
    this machine it is never asked for, and measuring it leaves float32 IEEE afterwards."""
    placement = backends.inventory(backends.PROCESS_BACKEND).get("cpu")
    assert BACKENDS[backends.PROCESS_BACKEND].tf32(placement) is False
    roof = BACKENDS[backends.PROCESS_BACKEND].roof(placement, roof_kernels.TF32, (64, 128), 1)
    assert roof.dtype == "tensorfloat32" and roof.flops_per_s > 0 and roof.backend == backends.PROCESS_BACKEND
    if backends.PROCESS_BACKEND == "tensorflow":
        import tensorflow as tf

        assert tf.config.experimental.tensor_float_32_execution_enabled() is False
    if backends.PROCESS_BACKEND == "torch":
        import torch

        assert torch.backends.cuda.matmul.allow_tf32 is False


def test_a_run_saved_before_roofs_were_called_roofs_still_loads_its_utilization():
    """Compute limits are roofs, never peaks (a peak is memory's): the keys were peak_flops,
    peak_dtype and peak_device; a run saved then reads back under today's names."""
    saved = {"peak_flops": 1e11, "peak_dtype": "float32", "peak_device": "/cpu:0", "mfu": 0.5}
    used = Utilization.of(saved)
    assert (used.roof_flops, used.roof_dtype, used.roof_device, used.mfu) == (1e11, "float32", "/cpu:0", 0.5)
    today = Utilization(roof_flops=2e11, roof_dtype="bfloat16", roof_device="gpu:0", roof_backend="jax").entries()
    assert set(today) == {"roof_flops", "roof_dtype", "roof_device", "roof_backend"}
    assert Utilization.of({**saved, **today}).roof_flops == 2e11  # today's key first


def test_parallel_runs_keeping_one_roof_neither_fail_nor_leave_half_a_file(tmp_path):
    """Runs in parallel (CI's xdist workers share one roofs folder) write the same kept roof:
    each write is whole, and none fails (a shared temporary name raced: the second replace found
    the file gone, and its run stopped at collection with a FileNotFoundError)."""
    import json
    import threading

    cache, failures = FolderCache(tmp_path), []

    def keep(writer: int) -> None:
        for attempt in range(200):
            try:
                cache.set("accelbench/roofs/cpu", {"writer": writer, "attempt": attempt, "pad": "x" * 4096})
            except OSError as error:
                failures.append(error)

    threads = [threading.Thread(target=keep, args=(writer,)) for writer in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert json.loads((tmp_path / "accelbench__roofs__cpu.json").read_text())["pad"] == "x" * 4096
    assert list(tmp_path.glob("*.tmp")) == []
