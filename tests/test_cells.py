"""The grid: ids read device-batch-model; impossible cells skip with a reason."""

import os

import pytest

from accelbench.axes import backends
from accelbench.axes.devices import Inventory
from accelbench.grid import cells
from accelbench.kinds.accuracy import bench as accuracy
from accelbench.kinds.memory import bench as memory
from accelbench.kinds.speedup import bench as speedup
from accelbench.kinds.throughput import bench as throughput

# The process backend (the default) and another: the tests run in TensorFlow, JAX-only and
# PyTorch-only environments alike.
HERE = backends.PROCESS_BACKEND
OTHER = next(name for name in ("jax", "tensorflow") if name != HERE)


def grid(devices=("cpu",), batch_sizes=(32, 256), models=("mlp", "svm"), labelled=True, present=("cpu",)):
    inventory = Inventory({name: backends.Neutral(name, name, "jax") for name in present}, "jax")
    unlabelled = frozenset() if labelled else frozenset(models)
    return cells.Grid(devices, batch_sizes, models, inventory, unlabelled=unlabelled)


def ids_and_skips(params):
    return {p.id: p.skip_reason for p in params}


def test_train_ids_and_svm_skip():
    result = ids_and_skips(throughput.train_cells(grid()))
    assert list(result) == ["cpu-bs32-mlp", "cpu-bs32-svm", "cpu-bs256-mlp", "cpu-bs256-svm"]
    assert result["cpu-bs32-mlp"] is None
    assert "svm fits the whole subset at once" in result["cpu-bs32-svm"]


def test_absent_device_skips_naming_it_what_is_there_and_what_to_install():
    result = ids_and_skips(throughput.inference_cells(grid(devices=("cpu", "gpu"))))
    assert result["gpu-bs32-mlp"] == (
        "device gpu requested but not present (present: cpu); jax sees no GPU here "
        "(a GPU build: pip install 'jax[cuda13]' (or 'jax[cuda12]'))"
    )
    assert result["cpu-bs32-mlp"] is None
    # one GPU of a kind that is there, but not that one: what is there, no install advice
    three = ids_and_skips(throughput.inference_cells(grid(devices=("gpu:3",), present=("cpu", "gpu", "gpu:0"))))
    assert three["gpu:3-bs32-mlp"] == "device gpu:3 requested but not present (present: cpu, gpu, gpu:0)"


def test_svm_is_cpu_only():
    result = ids_and_skips(throughput.inference_cells(grid(devices=("cpu", "gpu"), present=("cpu", "gpu"))))
    assert result["gpu-bs32-svm"] == "svm runs on cpu only, not gpu"
    assert result["gpu-bs32-mlp"] is None


def test_accuracy_cells_use_the_recipe_batch_and_need_labels():
    assert list(ids_and_skips(accuracy.accuracy_cells(grid()))) == ["cpu-bs100-mlp", "cpu-bs128-svm"]
    unlabelled = ids_and_skips(accuracy.accuracy_cells(grid(labelled=False)))
    assert "random labels" in unlabelled["cpu-bs100-mlp"]


def test_speedups_and_parity():
    assert list(ids_and_skips(speedup.batch_speedup_cells(grid()))) == ["cpu-bs256-over-bs32-mlp"]
    one = ids_and_skips(speedup.device_speedup_cells(grid()))
    assert list(one) == ["one-device"] and "needs a device besides cpu" in one["one-device"]
    two = grid(devices=("cpu", "gpu"), present=("cpu", "gpu"))
    assert list(ids_and_skips(speedup.device_speedup_cells(two))) == ["gpu-over-cpu-bs32-mlp", "gpu-over-cpu-bs256-mlp"]
    assert list(ids_and_skips(accuracy.parity_cells(two))) == ["gpu-vs-cpu-bs100-mlp"]


def test_batch_speedup_needs_two_sizes():
    assert list(ids_and_skips(speedup.batch_speedup_cells(grid(batch_sizes=(64,))))) == ["one-batch-size"]


def test_a_sweep_gives_each_model_its_own_batch_sizes():
    sweep = {"mlp": (32, 64, 128), "cnn": (32, 64)}
    swept = cells.Grid(("cpu",), (32,), ("mlp", "cnn"), grid().inventory, sweep=lambda device, model: sweep[model])
    assert list(ids_and_skips(throughput.train_cells(swept))) == [
        "cpu-bs32-mlp",
        "cpu-bs32-cnn",
        "cpu-bs64-mlp",
        "cpu-bs64-cnn",
        "cpu-bs128-mlp",
    ]
    assert list(ids_and_skips(speedup.batch_speedup_cells(swept))) == [
        "cpu-bs128-over-bs32-mlp",
        "cpu-bs64-over-bs32-cnn",
    ]
    assert list(ids_and_skips(memory.leak_cells(swept))) == ["cpu-bs128-mlp", "cpu-bs64-cnn"]
    assert list(ids_and_skips(memory.scaling_cells(swept))) == ["cpu-mlp", "cpu-cnn"]


def test_leaks_are_watched_at_the_largest_batch_and_an_estimators_at_the_smallest():
    assert list(ids_and_skips(memory.leak_cells(grid()))) == ["cpu-bs256-mlp", "cpu-bs32-svm"]


def test_one_backend_keeps_the_plain_ids():
    result = ids_and_skips(throughput.inference_cells(grid()))
    assert list(result) == ["cpu-bs32-mlp", "cpu-bs32-svm", "cpu-bs256-mlp", "cpu-bs256-svm"]


def test_several_backends_name_theirs_side_by_side_and_the_svm_runs_once_under_its_plain_id(monkeypatch):
    monkeypatch.setattr(backends.backend, "importable", lambda module: True)
    several = cells.Grid(("cpu",), (32,), ("mlp", "svm"), grid().inventory, backends=(HERE, OTHER))
    result = ids_and_skips(throughput.inference_cells(several))
    assert list(result) == [f"{HERE}-cpu-bs32-mlp", f"{OTHER}-cpu-bs32-mlp", "cpu-bs32-svm"]
    assert set(result.values()) == {None}


def test_a_backend_that_is_not_installed_skips_saying_how_to_get_it(monkeypatch):
    """A grid made without the options' check (--backends refuses a missing backend up front)."""
    missing = OTHER
    monkeypatch.setattr(backends.backend, "importable", lambda module: module != missing)  # where Backend looks
    several = cells.Grid(("cpu",), (32,), ("mlp",), grid().inventory, backends=(HERE, missing))
    result = ids_and_skips(throughput.train_cells(several))
    assert result[f"{HERE}-cpu-bs32-mlp"] is None
    assert result[f"{missing}-cpu-bs32-mlp"].startswith(
        f"the {missing} backend needs {missing}, which is not installed here: pip install"
    )


def test_backends_asked_for_must_be_installed_and_none_at_all_is_one_line_naming_the_extras(monkeypatch):
    from accelbench.plugin.options import installed_backends

    monkeypatch.setattr(backends.backend, "importable", lambda module: module == HERE)
    assert installed_backends(HERE) == (HERE,)
    with pytest.raises(
        ValueError,
        match=rf"^the {OTHER} backend needs {OTHER}, which is not installed here: .*"
        rf"\(installed: {HERE}\)$",
    ):
        installed_backends(f"{HERE},{OTHER}")
    assert backends.backend.choose_process_backend({}) == HERE
    assert backends.backend.choose_process_backend({"KERAS_BACKEND": OTHER}) == OTHER
    monkeypatch.setattr(backends.backend, "importable", lambda module: False)
    assert backends.backend.choose_process_backend({}) == ""
    monkeypatch.setattr(backends.backend, "PROCESS_BACKEND", "")
    with pytest.raises(
        backends.NoBackend,
        match=r"^no Keras backend is installed .*'accelbench\[tensorflow\]', "
        r"'accelbench\[jax\]' or 'accelbench\[torch\]'$",
    ):
        backends.use_process_backend()


def test_the_process_backend_s_variables_are_set_before_a_user_s_module_can_start_it(monkeypatch):
    """The plugin takes its backend before it imports the user's modules, which may import Keras
    and so start TensorFlow: its variables (oneDNN's system allocator, which host memory peaks
    need) are set then, and one the user set is kept."""
    monkeypatch.setattr(backends.backend, "PROCESS_BACKEND", "tensorflow")
    monkeypatch.setattr(backends.backend, "importable", lambda module: True)
    monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", HERE))
    monkeypatch.delenv("TF_ONEDNN_USE_SYSTEM_ALLOCATOR", raising=False)
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    assert backends.use_process_backend() == "tensorflow"
    assert os.environ["TF_ONEDNN_USE_SYSTEM_ALLOCATOR"] == "1" and os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


def test_a_cell_named_with_its_backend_is_the_same_cell():
    """The speedup and memory benchmarks find the trainer a tagged training cell built."""
    assert cells.Cell("cpu", 32, "mlp", HERE, tagged=(True, True)) == cells.Cell("cpu", 32, "mlp")
    assert cells.Cell("cpu", 32, "mlp", OTHER) != cells.Cell("cpu", 32, "mlp")


def test_several_precisions_end_the_id_with_theirs_and_the_svm_runs_once():
    several = cells.Grid(("cpu",), (32,), ("mlp", "svm"), grid().inventory, precisions=("float32", "mixed_bfloat16"))
    result = ids_and_skips(throughput.train_cells(several))
    assert list(result) == ["cpu-bs32-mlp-fp32", "cpu-bs32-mlp-bf16", "cpu-bs32-svm"]
    both = cells.Grid(
        ("cpu",),
        (32,),
        ("mlp",),
        grid().inventory,
        backends=(HERE, OTHER),
        precisions=("float32", "mixed_float16"),
    )
    assert [p.id for p in throughput.inference_cells(both)] == [
        f"{HERE}-cpu-bs32-mlp-fp32",
        f"{HERE}-cpu-bs32-mlp-fp16",
        f"{OTHER}-cpu-bs32-mlp-fp32",
        f"{OTHER}-cpu-bs32-mlp-fp16",
    ]


def test_one_backend_or_precision_other_than_the_default_is_named_in_the_id(monkeypatch):
    monkeypatch.setattr(backends.backend, "importable", lambda module: True)

    def ids(**axes):
        return list(
            ids_and_skips(throughput.train_cells(cells.Grid(("cpu",), (32,), ("mlp",), grid().inventory, **axes)))
        )

    assert ids() == ids(backends=(HERE,), precisions=("float32",)) == ["cpu-bs32-mlp"]
    assert ids(backends=(OTHER,)) == [f"{OTHER}-cpu-bs32-mlp"]  # not the tensorflow cell's name
    assert ids(precisions=("mixed_bfloat16",)) == ["cpu-bs32-mlp-bf16"]


def test_memory_and_latency_cells_run_on_every_backend_asked_for(monkeypatch):
    monkeypatch.setattr(backends.backend, "importable", lambda module: True)
    several = cells.Grid(("cpu",), (32,), ("mlp", "svm"), grid().inventory, backends=(HERE, OTHER))
    for cells_of in (memory.train_memory_cells, memory.inference_memory_cells):
        result = ids_and_skips(cells_of(several))
        assert result[f"{HERE}-cpu-bs32-mlp"] is None and result[f"{OTHER}-cpu-bs32-mlp"] is None
    assert list(ids_and_skips(throughput.latency_cells(several))) == [
        f"{HERE}-cpu-bs1-mlp",
        f"{OTHER}-cpu-bs1-mlp",
        "cpu-bs1-svm",
    ]


def test_a_default_cell_named_with_its_backend_keeps_the_plain_cell_s_baseline():
    from accelbench.benches.base import Bench

    def key(cell):
        return Bench(session=None, cell=cell, name=f"test_time_to_accuracy[{cell.id}]").baseline_key

    assert key(cells.Cell("cpu", 100, "mlp", HERE, "float32", (True, True))) == "test_time_to_accuracy[cpu-bs100-mlp]"
    assert (
        key(cells.Cell("cpu", 100, "mlp", OTHER, "float32", (True, False)))
        == f"test_time_to_accuracy[{OTHER}-cpu-bs100-mlp]"
    )
    assert key(cells.Cell("cpu", 100, "mlp", HERE, "mixed_bfloat16", (False, True))) == (
        "test_time_to_accuracy[cpu-bs100-mlp-bf16]"
    )
