"""A user's builder, optimizer factory or loader that raises: one line naming it and the error's
last line, a non-zero exit, the run stopped and not autosaved; the traceback under --tb=long."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BROKEN = """
import accelbench
import numpy as np


def broken(input_shape, outputs, options):
    import keras
    return keras.Sequential([keras.Input(input_shape), keras.layers.Dense(outputs, activation="nope")])


def no_optimizer():
    raise RuntimeError("first line\\nthe optimizer's real reason")


def fine(input_shape, outputs, options):
    import keras
    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(), keras.layers.Dense(outputs)])


def misspelt_estimator(input_shape, outputs, options):
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(max_itr=200)


def unfittable_estimator(input_shape, outputs, options):
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(C=-1.0)  # scikit-learn checks its parameters when it fits


def unreadable(data_dir):
    raise OSError("cannot open the user's files")


def blobs(data_dir):  # enough rows for the full preset's data-scaling sizes (250 to 2,000 and all)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2600, 4)).astype("float32"), rng.integers(0, 2, 2600)
    return accelbench.Dataset("blobs", x[:2400], y[:2400], x[2400:], y[2400:], quality="accuracy", classes=2)


accelbench.register_model(accelbench.ModelSpec("broken", "raises in its builder", broken))
accelbench.register_model(accelbench.ModelSpec("no_optimizer", "raises in its optimizer", fine, no_optimizer))
for name, build in (("misspelt", misspelt_estimator), ("unfittable", unfittable_estimator)):
    accelbench.register_model(
        accelbench.ModelSpec(name, "a scikit-learn model that raises", build, framework="sklearn", batch_trained=False)
    )
accelbench.register_dataset("unreadable", unreadable)
accelbench.register_dataset("blobs", blobs)
"""


@pytest.fixture
def project(pytester, heavy_imports):
    for path in (ROOT / "benchmarks").glob("test_*.py"):
        pytester.makepyfile(**{path.stem: path.read_text()})
    pytester.makepyfile(mine=BROKEN)
    (pytester.path / "baselines").mkdir()
    return pytester


def run(project, *args):
    return project.runpytest(
        "-p",
        "accelbench.plugin",
        "-p",
        "no:cacheprovider",
        "--preset",
        "smoke",
        "--baselines",
        str(project.path / "baselines"),
        "--modules",
        "mine",
        "--benchmark-autosave",
        *args,
    )


@pytest.mark.slow(8)
@pytest.mark.parametrize(
    ("model", "says"),
    [
        (
            "broken",
            "model 'broken': its builder raised ValueError: Could not interpret activation function identifier: nope",
        ),
        (
            "no_optimizer",
            "model 'no_optimizer': its optimizer factory raised RuntimeError: the optimizer's real reason",
        ),
    ],
)
def test_a_model_that_raises_is_one_line_and_stops_the_run_unsaved(project, model, says):
    result = run(project, "test_training.py", "test_inference.py", "--models", model)
    assert result.ret != 0
    result.assert_outcomes(failed=1)  # stopped after the first cell: every other would fail alike
    text = result.stdout.str()
    assert f"{says}" in text and "Traceback" not in text and "def " not in text
    assert "this run was not saved to .benchmarks" in text
    assert not list(project.path.glob(".benchmarks/**/*.json"))
    assert "mine.py:" in run(project, "test_training.py::test_train", "--models", model, "--tb=long").stdout.str()


@pytest.mark.slow(8)
@pytest.mark.parametrize(
    ("model", "says"),
    [
        (
            "misspelt",
            "model 'misspelt': its builder raised TypeError: "
            "LogisticRegression.__init__() got an unexpected keyword argument 'max_itr'",
        ),
        ("unfittable", "model 'unfittable': its fit raised InvalidParameterError: The 'C' parameter"),
    ],
)
def test_a_scikit_learn_model_that_raises_in_its_builder_or_fit_is_one_line_and_stops_the_run(project, model, says):
    result = run(project, "test_inference.py", "test_memory.py", "--models", model)
    assert result.ret != 0
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert says in text and "Traceback" not in text and "def " not in text
    assert "this run was not saved to .benchmarks" in text


def test_a_loader_that_raises_is_one_line_before_any_cell(project):
    result = run(project, "test_training.py::test_train", "--models", "mlp", "--dataset", "unreadable")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*dataset 'unreadable': its loader raised OSError: cannot open the user's files"])


@pytest.mark.slow(6)
def test_a_scikit_learn_model_whose_fit_raises_in_the_data_scaling_worker_is_one_line_and_stops_the_run(project):
    """Its data-scaling peaks are measured in a worker without TensorFlow, where its fit is first
    called: the worker's UserCodeFailed comes back as one, and stops the run as in this process."""
    result = run(project, "test_data_scaling.py", "--preset", "full", "--dataset", "blobs", "--models", "unfittable")
    assert result.ret != 0
    result.assert_outcomes(errors=1)  # in the first cell's setup; the second is never run
    text = result.stdout.str()
    assert "model 'unfittable': its fit raised InvalidParameterError: The 'C' parameter" in text
    assert "Traceback" not in text and "this run was not saved to .benchmarks" in text
