"""The example project (examples/tabular): a 3-class classifier and a regression on data
scikit-learn ships, declared through the public API, with baselines of its own. Its recipe
cells hold their committed baselines, and each quality gate fails when its baseline moves the
wrong way: a raised accuracy, a lowered error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from accelbench import scaffold

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tabular"
BASELINES = EXAMPLE / "benchmarks" / "baselines"


@pytest.fixture
def example(pytester, heavy_imports):
    """A copy of the example project, as its user has it: its ini, models module, benchmarks, baselines."""
    shutil.copytree(
        EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".benchmarks", "__pycache__")
    )
    return pytester


def recipe(example, dataset, model, *args):
    return example.runpytest(
        "benchmarks/test_training.py::test_time_to_accuracy",
        "-p",
        "no:cacheprovider",
        "--benchmark-disable",
        "--dataset",
        dataset,
        "--models",
        model,
        *args,
    )


def moved(path: Path, metric: str, change) -> None:
    """The stored baseline of `metric`, changed."""
    stored = json.loads(path.read_text())
    for cells in stored.values():
        for metrics in cells.values():
            metrics[metric] = change(metrics[metric])
    path.write_text(json.dumps(stored))


def test_the_example_s_benchmarks_are_what_init_writes():
    for name, text in scaffold.benchmark_files().items():
        assert (EXAMPLE / "benchmarks" / name).read_text() == text, name


@pytest.mark.slow(4)
def test_the_classifier_holds_its_accuracy_baseline_and_fails_a_raised_one(example):
    recipe(example, "wine", "wine_mlp").assert_outcomes(passed=1)
    moved(example.path / "benchmarks" / "baselines" / "accuracy.json", "accuracy", lambda value: value + 0.05)
    result = recipe(example, "wine", "wine_mlp")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(
        [
            r".*accuracy regression in test_time_to_accuracy\[cpu-bs16-wine_mlp\]: measured "
            r"\d\.\d{4}, baseline \d\.\d{4}, tolerance 0\.02 absolute \(must be >= \d\.\d{4}\)"
        ]
    )


@pytest.mark.slow(4)
def test_the_regression_holds_its_error_baseline_and_fails_a_lowered_one(example):
    result = recipe(example, "diabetes", "diabetes_mlp")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines(
        [r"test mean absolute error after the recipe.*", r"device +model +recipe", r"cpu +diabetes_mlp +\d+\.?\d* ok"]
    )
    moved(example.path / "benchmarks" / "baselines" / "mae.json", "mae", lambda value: value * 0.8)
    result = recipe(example, "diabetes", "diabetes_mlp")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(
        [
            r".*mae regression in test_time_to_accuracy\[cpu-bs32-diabetes_mlp\]: measured "
            r"\d+\.\d{4}, baseline \d+\.\d{4}, tolerance 5% relative \(must be <= \d+\.\d{4}\)"
        ]
    )


@pytest.mark.slow(6)
def test_one_run_holds_the_classifier_and_the_regression_each_on_its_own_data(example):
    """No --dataset: each model runs on the dataset its ModelSpec names and is judged against
    that data's baselines, both in one command (the ini names both models)."""
    result = example.runpytest(
        "benchmarks/test_training.py::test_time_to_accuracy", "-p", "no:cacheprovider", "--benchmark-json=run.json"
    )
    result.assert_outcomes(passed=2)
    result.stdout.re_match_lines(
        [r"test accuracy after the model's recipe.*", r"cpu +wine_mlp +\d+\.\d+% ok"], consecutive=False
    )
    result.stdout.re_match_lines(
        [r"test mean absolute error after the recipe.*", r"cpu +diabetes_mlp +\d+\.?\d* ok"], consecutive=False
    )
    saved = json.loads((example.path / "run.json").read_text())
    cells = {cell["name"]: cell["extra_info"]["accelbench_cell"] for cell in saved["benchmarks"]}
    assert {name: cell["dataset"] for name, cell in cells.items()} == {
        "test_time_to_accuracy[cpu-bs16-wine_mlp]": "wine",
        "test_time_to_accuracy[cpu-bs32-diabetes_mlp]": "diabetes",
    }
    # a model naming a dataset nobody declared is one line, before anything runs
    (example.path / "conftest.py").write_text(
        "import dataclasses, accelbench\n"
        "lost = dataclasses.replace(accelbench.MODELS['wine_mlp'], name='lost', dataset='nowhere')\n"
        "accelbench.register_model(lost)\n"
    )
    lost = example.runpytest("benchmarks/test_training.py", "-p", "no:cacheprovider", "--models", "lost")
    assert lost.ret == pytest.ExitCode.USAGE_ERROR
    lost.stderr.re_match_lines([r".*model lost's ModelSpec.dataset: unknown dataset 'nowhere'; choose from: .*wine.*"])
