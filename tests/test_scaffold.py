"""`accelbench init`: a project of your own gets this repository's benchmarks, ini lines, a
models module and a CI workflow; a scaffolded project runs green."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelbench import cli, scaffold

ROOT = Path(__file__).resolve().parents[1]


def test_the_repositorys_benchmarks_are_what_init_writes():
    """One source for the test files: the catalog. A kind registered with its `file` is written there."""
    generated = scaffold.benchmark_files()
    assert sorted(generated) == sorted(path.name for path in (ROOT / "benchmarks").glob("test_*.py"))
    for name, text in generated.items():
        assert (ROOT / "benchmarks" / name).read_text() == text, name


def test_every_cell_the_workflow_a_b_tests_is_a_test_init_writes():
    """The pull request's A/B step names tests by node id: each must be one init writes, or the
    step would run nothing of it (pytest: "not found") and the pull request would pass untested."""
    import re

    generated = scaffold.benchmark_files()
    (ab_step,) = [line for line in scaffold.WORKFLOW.splitlines() if "--ab-ref" in line and "pytest" in line]
    named = re.findall(r"benchmarks/(test_\w+\.py)::(\w+)", ab_step)
    assert {test for _, test in named} >= {"test_train", "test_inference", "test_token_serving"}, ab_step
    for file, test in named:
        assert f"def {test}(" in generated[file], (file, test)


def test_a_kind_in_a_file_of_its_own_gives_that_file_its_docstring(monkeypatch):
    from accelbench.benches.base import Benchmark
    from accelbench.benches.catalog import BENCHMARKS

    monkeypatch.setitem(
        BENCHMARKS._entries,
        "first_prediction",
        Benchmark(
            cells=lambda grid: [], bench=object, test="test_first_prediction", file="test_mine.py", file_doc="Mine."
        ),
    )
    monkeypatch.setitem(
        BENCHMARKS._entries,
        "second",
        Benchmark(cells=lambda grid: [], bench=object, test="test_second", file="test_mine.py"),
    )
    mine = scaffold.benchmark_files()["test_mine.py"]
    assert mine.startswith('"""Mine."""') and "def test_first_prediction(benchmark, first_prediction)" in mine
    assert "def test_second(benchmark, second)" in mine


def test_a_long_file_docstring_is_wrapped_to_the_width_linters_allow(monkeypatch):
    from accelbench.benches.base import Benchmark
    from accelbench.benches.catalog import BENCHMARKS

    sentence = "A kind whose file says a great deal about itself, " * 6
    monkeypatch.setitem(
        BENCHMARKS._entries,
        "talkative",
        Benchmark(cells=lambda grid: [], bench=object, test="test_talkative", file="test_long.py", file_doc=sentence),
    )
    text = scaffold.benchmark_files()["test_long.py"]
    doc = text.split('"""')[1]
    assert " ".join(doc.split()) == " ".join(sentence.split())
    assert max(len(line) for line in text.splitlines()) <= scaffold.DOC_WIDTH


def test_init_writes_nothing_over_a_file_that_is_there(tmp_path, capsys):
    (tmp_path / "benchmark_models.py").write_text("# mine\n")
    assert cli.main(["init", str(tmp_path)]) == 2
    assert "benchmark_models.py already there; nothing was written" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["benchmark_models.py"]


# A project's own pytest settings, in each file pytest reads them from: a marker its test needs
# (--strict-markers fails the test without it) and its testpaths.
LAYOUTS = {
    "pyproject.toml": '[project]\nname = "mine"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    'markers = ["mine: the project\'s own marker"]\n',
    "setup.cfg": "[metadata]\nname = mine\n\n[tool:pytest]\ntestpaths = tests\nmarkers =\n    mine: its own marker\n",
    "tox.ini": "[tox]\nenv_list = py\n\n[pytest]\ntestpaths = tests\nmarkers =\n    mine: its own marker\n",
    "pytest.ini": "[pytest]\ntestpaths = tests\nmarkers =\n    mine: its own marker\n",
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_init_joins_the_project_s_pytest_settings_and_its_tests_run_as_before(pytester, layout, heavy_imports):
    (pytester.path / layout).write_text(LAYOUTS[layout])
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_own.py").write_text(
        "import pytest\n\n\n@pytest.mark.mine\ndef test_own():\n    pass\n"
    )
    assert cli.main(["init", str(pytester.path)]) == 0
    assert layout == "pytest.ini" or not (pytester.path / "pytest.ini").exists()  # nothing shadows it
    own = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider")
    own.assert_outcomes(passed=1)  # its testpaths and its marker, as before
    cells = pytester.runpytest(
        "benchmarks/test_training.py",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "--models",
        "my_mlp",
        "--preset",
        "smoke",
    )
    cells.stdout.fnmatch_lines(["*test_train?cpu-bs32-my_mlp?*"])


def test_init_stops_where_the_project_sets_addopts_and_says_what_to_add(tmp_path, capsys):
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\naddopts = -ra\n")
    assert cli.main(["init", str(tmp_path)]) == 2
    assert "add -p accelbench.plugin to it and accelbench_modules = benchmark_models" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["setup.cfg"]


@pytest.mark.slow(30)
def test_a_project_made_by_init_runs_green(pytester, heavy_imports):
    assert cli.main(["init", str(pytester.path)]) == 0
    for made in (
        "benchmarks/test_training.py",
        "benchmarks/baselines/README.md",
        "pytest.ini",
        "benchmark_models.py",
        ".github/workflows/accelbench.yml",
    ):
        assert (pytester.path / made).is_file(), made
    saved = pytester.path / "run.json"
    # The smoke preset on the model the scaffold declares: its training, inference and latency cells
    # (the memory cells are tested on the zoo's models; memray makes them the slow part here).
    result = pytester.runpytest(
        "benchmarks/test_training.py::test_train",
        "benchmarks/test_inference.py",
        "-p",
        "no:cacheprovider",
        "--preset",
        "smoke",
        "--models",
        "my_mlp",
        "--batch-sizes",
        "32",
        f"--benchmark-json={saved}",
    )
    result.assert_outcomes(passed=3)
    names = {bench["name"] for bench in json.loads(saved.read_text())["benchmarks"]}
    assert {"test_train[cpu-bs32-my_mlp]", "test_inference[cpu-bs32-my_mlp]"} <= names
