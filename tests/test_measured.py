"""A cell's result is typed (accelbench.measured): each part reads back what it wrote, crosses a
process as itself, and no module but measured.py spells a result key; a run saved before the
parts existed (by 1ecbe63, trimmed to 18 cells) loads in `accelbench report` and `accelbench
history` with its numbers where they were."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import accelbench
from accelbench import cli, measured
from accelbench.axes.data import QUALITIES
from accelbench.kinds.accuracy.result import AgainstTwin, Parity, Recipe
from accelbench.kinds.data_scaling.result import MEMORY_PROJECTION, TIME_PROJECTION, Projected
from accelbench.processes.protocol import Cellwork
from accelbench.results import summary
from accelbench.results.report.runs import load_runs

PACKAGE = Path(accelbench.__file__).parent
SAVED = Path(__file__).parent / "data" / "saved_run_1ecbe63.json"


def kind_parts() -> tuple[type[measured.Part], ...]:
    """The parts each kind folder's result.py defines (kinds/<name>/result.py)."""
    import importlib
    import pkgutil

    from accelbench import kinds

    found = []
    for folder in pkgutil.iter_modules(kinds.__path__):
        module = importlib.import_module(f"{kinds.__name__}.{folder.name}.result")
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, measured.Part) and value.__module__ == module.__name__
        ]
    return tuple(found)


# Every part: the house's (measured.PARTS) and every kind folder's.
ALL_PARTS = (*measured.PARTS, *kind_parts())
NAMINGS = {
    Recipe: [{"metric": name} for name in QUALITIES],
    AgainstTwin: [{"metric": name} for name in QUALITIES],
    Parity: [{"metric": name} for name in QUALITIES],
    Projected: [TIME_PROJECTION, MEMORY_PROJECTION],
}


def every_key() -> set[str]:
    keys = {measured.CELL_KEY, measured.VERDICTS_KEY}
    for part in ALL_PARTS:
        for naming in NAMINGS.get(part, [{}]):
            keys.update(part.key_for(name, **naming) for name in part.fields_of())
    return keys


def sample(part: type[measured.Part], naming: dict[str, str]) -> measured.Part:
    """An instance with a value of its own in every field."""
    return part(**naming, **{name: f"value of {name}" for name in part.fields_of()})


@pytest.mark.parametrize("part", ALL_PARTS, ids=lambda part: part.__name__)
def test_every_part_reads_back_what_it_wrote_under_keys_of_its_own(part):
    for naming in NAMINGS.get(part, [{}]):
        written = sample(part, naming)
        entries = written.entries()
        assert len(entries) == len(part.fields_of())  # no two fields share a key
        assert part.of(entries, **naming) == written
    assert part.of({}, **NAMINGS.get(part, [{}])[0]) == part(**NAMINGS.get(part, [{}])[0])  # an older run: Nones


def test_a_key_is_named_by_attribute_and_a_misspelt_one_fails_at_once():
    assert measured.Throughput.keys.samples_per_s == "samples_per_s"
    assert Recipe.key_for("target", metric="mae") == "target_mae"
    with pytest.raises(AttributeError, match="Throughput has no result field 'samples_per_second'"):
        measured.Throughput.keys.samples_per_second  # noqa: B018


def test_a_part_crosses_a_process_as_itself():
    """What worker_main writes (a dataclass as its fields, through JSON) comes back as the part."""
    trace = measured.StepTrace(trace_dir="t/tensorboard", traced_steps=5, traced_step_ms=[1.5, 1.25], profiler="jax")
    wire = json.loads(json.dumps(dataclasses.asdict(trace)))
    assert Cellwork.TRACE_STEPS.reply(wire) == trace


def _reads_and_writes_by_literal(tree: ast.AST) -> list[tuple[int, str]]:
    """`<...info...>["key"]`, `<...info...>.get("key")`, and in a bench a dict literal's key."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and "info" in ast.unparse(node.value):
            index = node.slice
            if isinstance(index, ast.Constant) and isinstance(index.value, str):
                found.append((node.lineno, index.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and "info" in ast.unparse(node.func.value)
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def test_no_module_but_measured_reads_or_writes_a_result_key_by_its_spelling():
    keys = every_key()
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "measured.py" or (path.name == "result.py" and "kinds" in path.parts):
            continue
        tree = ast.parse(path.read_text())
        uses = _reads_and_writes_by_literal(tree)
        if "benches" in path.parts or path.name == "bench.py":  # a bench writes only through Bench.record
            uses += [
                (node.lineno, key.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Dict)
                for key in node.keys
                if isinstance(key, ast.Constant)
            ]
            uses += [
                (node.lineno, "extra_info")
                for node in ast.walk(tree)
                if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("update", "setdefault")
                and "extra_info" in ast.unparse(node.func.value)
                and path.name != "base.py"
            ]
        spelled += [
            f"{path.relative_to(PACKAGE)}:{line}: {key!r}" for line, key in uses if key in keys or key == "extra_info"
        ]
    assert not spelled, "\n".join(spelled)


def test_the_check_above_sees_a_literal_read():
    assert _reads_and_writes_by_literal(ast.parse('x = cell.info["samples_per_s"] + info.get("speedup")')) == [
        (1, "samples_per_s"),
        (1, "speedup"),
    ]


def test_a_run_saved_before_the_parts_reads_by_field(tmp_path):
    document = json.loads(SAVED.read_text())
    run = load_runs([SAVED])[0]
    by_name = {cell.name: cell for cell in run.cells}
    saved = {b["name"]: b["extra_info"] for b in document["benchmarks"]}
    saved.update({u["name"]: u["extra_info"] for u in document["accelbench"]["untimed_cells"]})
    assert set(by_name) == set(saved)
    train = by_name["test_train[cpu-bs32-mlp]"]
    assert measured.Throughput.of(train.info).samples_per_s == saved[train.name]["samples_per_s"]
    assert measured.Timed.of(train.info).seconds_per_sample == saved[train.name]["seconds_per_sample"]
    recipe = Recipe.read(by_name["test_time_to_accuracy[cpu-bs100-mlp]"].info)
    assert recipe.quality == saved["test_time_to_accuracy[cpu-bs100-mlp]"]["accuracy"] and recipe.per_epoch
    jax = measured.AgainstTensorflow.of(by_name["test_train[jax-cpu-bs32-mlp]"].info)
    assert (
        jax.time_per_sample_over_tensorflow == saved["test_train[jax-cpu-bs32-mlp]"]["time_per_sample_over_tensorflow"]
    )
    scaled = by_name["test_train_data_scaling[cpu-svm]"].info
    memory = Projected.of(scaled, **MEMORY_PROJECTION)
    assert memory.exponent == saved["test_train_data_scaling[cpu-svm]"]["memory_exponent"] and memory.fit
    for part in ALL_PARTS:  # every part reads every saved cell without an error
        for cell in by_name.values():
            part.of(cell.info, **NAMINGS.get(part, [{}])[0])


def test_a_run_saved_before_the_parts_loads_in_the_report_and_the_history(tmp_path, capsys):
    document = json.loads(SAVED.read_text())
    rate = document["benchmarks"][[b["name"] for b in document["benchmarks"]].index("test_train[cpu-bs32-mlp]")]
    shown = summary.FORMATS["rate"](rate["extra_info"]["samples_per_s"])
    assert cli.main(["report", str(SAVED), "-o", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text()
    for title in ("training throughput", "batch-1 latency", "time per sample over tensorflow", "data scaling"):
        assert title in page
    assert shown in page and "Accuracy per epoch against training time" in page and "projected" in page
    storage = tmp_path / "storage" / "Linux-CPython-3.11-64bit"
    storage.mkdir(parents=True)
    for number in range(1, 7):
        shutil.copy(SAVED, storage / f"{number:04d}_{document['commit_info']['id']}.json")
    capsys.readouterr()
    assert cli.main(["history", str(tmp_path / "storage"), "-o", str(tmp_path / "history.html")]) == 0
    out = capsys.readouterr().out
    # a series for each number history follows, counted from the saved keys themselves
    cells = [*document["benchmarks"], *document["accelbench"]["untimed_cells"]]
    followed = sum(
        1
        for cell in cells
        for key in ("seconds_per_sample", "speedup", "peak_memory_bytes", "accuracy")
        if isinstance(cell["extra_info"].get(key), (int, float, list)) and "data_scaling" not in cell["name"]
    )
    assert f"6 saved run(s), {followed} series on 1 machine(s)" in out
    assert f"{followed} of {followed} searched series: no change of level" in out
