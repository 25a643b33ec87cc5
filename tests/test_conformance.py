"""A conformance matrix of model families the zoo does not have (tests/conformance/families.py:
recurrent, bidirectional, convolutional over sequences, attention, embeddings and pooling, batch
normalization and dropout, a two-output regression; Sequential, functional and subclassed),
declared through the public API only, run through the benchmark files as a user's project runs
them: every cell kind on TensorFlow, and the backend cells on JAX and PyTorch. The first run on
unchanged code must be green: every number judged, or new, ungated or unknown with its reason.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ROOT / "tests" / "conformance" / "families.py"
# tox -e backends' selection: the cells that run on every Keras backend
BACKEND_CELLS = (
    "test_training.py::test_train",
    "test_inference.py::test_inference",
    "test_inference.py::test_latency",
    "test_memory.py::test_train_memory",
    "test_memory.py::test_inference_memory",
    "test_training.py::test_time_to_accuracy",
)
# dataset -> its models, in groups that each make one run (tests/conformance/families.py FAMILIES)
GROUPS = {
    "tokens-recurrent": ("tokens", "gru,lstm,bilstm"),
    "tokens-other": ("tokens", "embed_pool,attention,subclassed"),
    "series": ("series", "conv1d,batchnorm_dropout"),
    "two_targets": ("two_targets", "two_outputs"),
}


@pytest.fixture
def project(pytester, heavy_imports):
    """A user's project: the benchmark files init writes, the families module, no baselines yet."""
    for path in (ROOT / "benchmarks").glob("test_*.py"):
        pytester.makepyfile(**{path.stem: path.read_text()})
    shutil.copy(FAMILIES, pytester.path / "families.py")
    (pytester.path / "baselines").mkdir()
    return pytester


def run(project, group, *args):
    dataset, models = GROUPS[group]
    result = project.runpytest(
        "-p",
        "accelbench.plugin",
        "-p",
        "no:cacheprovider",
        "--preset",
        "smoke",
        "--baselines",
        str(project.path / "baselines"),
        "--modules",
        "families",
        "--dataset",
        dataset,
        "--models",
        models,
        *args,
    )
    text = result.stdout.str()
    assert result.ret == 0, f"the first run of {group} on unchanged code is not green:\n{text[-6000:]}"
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 0 and not outcomes.get("failed") and not outcomes.get("errors")
    assert "verdicts: 0 fail" in text
    return text


@pytest.mark.slow(150)
@pytest.mark.parametrize("group", GROUPS)
def test_every_cell_kind_is_green_on_tensorflow(project, group):
    text = run(project, group, "-v")
    passed = [line for line in text.splitlines() if " PASSED" in line]
    for kind in (
        "test_train[",
        "test_inference[",
        "test_latency[",
        "test_train_memory[",
        "test_time_to_accuracy[",
        "test_batch_speedup[",
        "test_multi_device[",
        "test_multi_worker[",
    ):
        assert any(f"::{kind}" in line for line in passed), f"no {kind} cell passed for {group}"


@pytest.mark.slow(90)
@pytest.mark.parametrize("backend", ["jax", "torch"])
@pytest.mark.parametrize("group", GROUPS)
def test_the_backend_cells_are_green_on_jax_and_torch(project, group, backend):
    # Looked up, not imported: torch imported beside TensorFlow in one process can crash it.
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed here (tox -e tests installs it)")
    text = run(project, group, *BACKEND_CELLS, "--backends", f"tensorflow,{backend}", "-v")
    assert f"[{backend}-cpu-" in text
