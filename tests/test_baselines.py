"""Baseline files: golden format, corrupt input, atomic writes and the regression messages."""

import json
import os
import stat

import pytest

from accelbench.judge.baselines import BaselineError, BaselineFile
from accelbench.judge.rules import AbsoluteDrop, RelativeDrop, regression

GOLDEN = """{
  "digits-n1347": {
    "test_svm[cpu-n500-binarized]": {
      "accuracy": 0.9267
    },
    "test_time_to_accuracy[cpu-bs100-mlp]": {
      "accuracy": 0.9822
    }
  }
}
"""


def test_save_writes_sorted_indented_json(tmp_path):
    store = BaselineFile.load(tmp_path / "accuracy.json", depth=1)
    store.stage(("digits-n1347",), "test_time_to_accuracy[cpu-bs100-mlp]", "accuracy", 0.98222222)
    store.stage(("digits-n1347",), "test_svm[cpu-n500-binarized]", "accuracy", 0.92666)
    store.save()
    assert (tmp_path / "accuracy.json").read_text() == GOLDEN
    assert [p.name for p in tmp_path.iterdir()] == ["accuracy.json"]  # no temporary left behind


def test_load_round_trips(tmp_path):
    (tmp_path / "accuracy.json").write_text(GOLDEN)
    store = BaselineFile.load(tmp_path / "accuracy.json", depth=1)
    assert store.get(("digits-n1347",), "test_svm[cpu-n500-binarized]", "accuracy") == 0.9267
    assert store.get(("mnist-n8000",), "test_svm[cpu-n500-binarized]", "accuracy") is None


def test_scopes_tell_what_is_recorded(tmp_path):
    (tmp_path / "speedup.json").write_text('{"x86_64-2cpu": {"digits": {"t[a]": {"speedup": 2.0}}}}')
    store = BaselineFile.load(tmp_path / "speedup.json", depth=2)
    assert store.has_scope(("x86_64-2cpu", "digits"))
    assert not store.has_scope(("x86_64-4cpu", "digits")) and not store.has_scope(("x86_64-2cpu", "mnist"))
    assert store.scopes() == ["x86_64-2cpu/digits"]


def test_missing_file_is_empty(tmp_path):
    assert BaselineFile.load(tmp_path / "none.json", depth=1).data == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"digits-n1347": {"test_x": {"accuracy": 0.9}', "corrupt baseline JSON"),
        ("[1, 2]", "expected a JSON object, found list"),
        ('{"digits-n1347": {"test_x": {"accuracy": "high"}}}', "accuracy must be a number"),
        (
            '{"digits-n1347": {"test_x": 0.9}}',
            "its numbers lie 0 keys deep before each cell, where this accelbench keys them 1 deep",
        ),
    ],
)
def test_corrupt_files_are_named(tmp_path, text, message):
    path = tmp_path / "accuracy.json"
    path.write_text(text)
    with pytest.raises(BaselineError, match=message) as error:
        BaselineFile.load(path, depth=1)
    assert str(path) in str(error.value)


def test_a_file_keyed_as_an_older_accelbench_keyed_it_is_one_line_saying_how_to_move_it(tmp_path):
    """speedup.json from before speedups were keyed by the process backend: hardware, then data."""
    path = tmp_path / "speedup.json"
    path.write_text(
        '{"arch=x86_64; cpus=2": {"digits": {"test_batch_speedup[cpu-bs256-over-bs32-mlp]": {"speedup": 3.0}}}}'
    )
    with pytest.raises(BaselineError) as error:
        BaselineFile.load(path, depth=3)
    assert str(error.value) == (
        f"{path}: its numbers lie 2 keys deep before each cell, where this accelbench keys them 3 deep: a file "
        "from an older accelbench (docs/baselines.md, 'Files from an older accelbench', says how to move it); "
        "or delete it and record again with --update-baselines"
    )
    # Moved as the docs say (each machine's data under the backend that recorded it), it loads.
    path.write_text(
        '{"arch=x86_64; cpus=2": {"backend=tensorflow": {"digits": '
        '{"test_batch_speedup[cpu-bs256-over-bs32-mlp]": {"speedup": 3.0}}}}}'
    )
    store = BaselineFile.load(path, depth=3)
    assert (
        store.get(
            ("arch=x86_64; cpus=2", "backend=tensorflow", "digits"),
            "test_batch_speedup[cpu-bs256-over-bs32-mlp]",
            "speedup",
        )
        == 3.0
    )


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "accuracy.json"
    path.write_text(GOLDEN)
    store = BaselineFile.load(path, depth=1)
    store.stage(("digits-n1347",), "test_new", "accuracy", 0.5)

    def broken_replace(source, target):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", broken_replace)
    with pytest.raises(OSError):
        store.save()
    assert path.read_text() == GOLDEN
    assert [p.name for p in tmp_path.iterdir()] == ["accuracy.json"]


def test_accuracy_regression_message_names_everything():
    message = regression("accuracy", "test_time_to_accuracy[cpu-bs100-mlp]", 0.98, 0.9, AbsoluteDrop(0.02))
    assert message == (
        "accuracy regression in test_time_to_accuracy[cpu-bs100-mlp]: measured 0.9000, "
        "baseline 0.9800, tolerance 0.02 absolute (must be >= 0.9600)"
    )
    assert regression("accuracy", "c", 0.98, 0.961, AbsoluteDrop(0.02)) is None


def test_speedup_regression_is_relative():
    assert regression("speedup", "c", 4.0, 2.9, RelativeDrop(0.3)) is None
    message = regression("speedup", "c", 4.0, 2.7, RelativeDrop(0.3))
    assert "measured 2.7000, baseline 4.0000, tolerance 30% relative (must be >= 2.8000)" in message


def test_committed_baselines_are_valid():
    from pathlib import Path
    from types import SimpleNamespace

    from accelbench import kinds
    from accelbench.judge.gates import GATES, Scope

    kinds.each("gates")
    root = Path(__file__).resolve().parents[1]
    scope = Scope("hw", "sw", SimpleNamespace(name="digits", key="digits-n1347"), "quick preset", {})
    depths = {spec.file: len(spec.keys(scope)) for spec in GATES.values()}
    folders = [root / "benchmarks" / "baselines", *(root / "examples").glob("*/benchmarks/baselines")]
    committed = sorted(path.relative_to(root) for folder in folders for path in folder.glob("*.json"))
    assert [str(path) for path in committed] == [
        "benchmarks/baselines/accuracy.json",
        "benchmarks/baselines/memory.json",
        "benchmarks/baselines/speedup.json",
        "examples/tabular/benchmarks/baselines/accuracy.json",
        "examples/tabular/benchmarks/baselines/mae.json",
        "examples/tabular/benchmarks/baselines/memory.json",
        "examples/tabular/benchmarks/baselines/speedup.json",
    ]
    for path in committed:  # each as its gates key it: a file an older accelbench keyed fails to load
        text = (root / path).read_text()
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"
        BaselineFile.load(root / path, depths[path.name])


def test_several_files_are_written_all_or_nothing_with_an_ordinary_mode(tmp_path, monkeypatch):
    from accelbench.judge.baselines import save_all

    stores = []
    for name in ("accuracy.json", "memory.json", "speedup.json"):
        (tmp_path / name).write_text(GOLDEN)
        store = BaselineFile.load(tmp_path / name, depth=1)
        store.stage(("digits-n1347",), "test_new", "accuracy", 0.5)
        stores.append(store)
    replace = os.replace
    calls = []

    def fails_on_the_third(source, target):
        calls.append(target)
        if len(calls) == 3:
            raise OSError("disk full")
        replace(source, target)

    monkeypatch.setattr("os.replace", fails_on_the_third)
    with pytest.raises(OSError, match="disk full"):
        save_all(stores)
    assert [(tmp_path / name).read_text() for name in ("accuracy.json", "memory.json", "speedup.json")] == [GOLDEN] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accuracy.json", "memory.json", "speedup.json"]
    monkeypatch.setattr("os.replace", replace)
    save_all(stores)
    umask = os.umask(0)
    os.umask(umask)
    for store in stores:
        assert json.loads(store.path.read_text())["digits-n1347"]["test_new"] == {"accuracy": 0.5}
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o666 & ~umask


def test_two_datasets_gates_share_each_file_and_write_both_in_one_go(tmp_path):
    """A run whose models run on different data (ModelSpec.dataset) judges each against its own
    data's baselines; what both stage lands in one write of each file, neither lost."""
    from types import SimpleNamespace

    from accelbench.judge.gates import Gates, Scope, write_staged

    stores = {}
    tolerances = dict.fromkeys(("accuracy", "error", "speedup", "memory", "serving", "serving_latency"), 0.1)
    gates = {
        name: Gates.load(
            tmp_path,
            Scope(
                "hw",
                "sw",
                SimpleNamespace(name=name, key=f"{name}-n10"),
                "quick preset, preset rules",
                {},
            ),
            tolerances,
            stores,
        )
        for name in ("digits", "tokens_128")
    }
    assert gates["digits"]["accuracy"].store is gates["tokens_128"]["accuracy"].store
    for name, gate in gates.items():
        gate["accuracy"].store.stage(gate["accuracy"].scope, f"test_time_to_accuracy[{name}]", "accuracy", 0.9)
        gate["peak_memory_bytes"].store.stage(
            gate["peak_memory_bytes"].scope, f"test_train_memory[{name}]", "peak", 1.0
        )
    written = write_staged(stores)
    assert sorted(line.split(" (")[0].rsplit("/", 1)[1] for line in written) == ["accuracy.json", "memory.json"]
    accuracy = json.loads((tmp_path / "accuracy.json").read_text())
    assert set(accuracy) == {"digits-n10", "tokens_128-n10"}
    assert set(json.loads((tmp_path / "memory.json").read_text())["hw"]["sw"]) == {"digits", "tokens_128"}


def test_served_numbers_are_kept_apart_by_what_they_were_served_under(tmp_path):
    """A peak rate searched under the full preset's runs, MLPerf's rules or other limits is not the
    quick preset's number: the token and serving gates key their baselines by those, so a run
    under other settings finds none of this machine's and says so (ungated), instead of holding
    its numbers to another setting's. The token cells' are not keyed by the run's dataset: their
    prompts are their own."""
    from types import SimpleNamespace

    from accelbench.judge.gates import Gates, Scope
    from accelbench.kinds.serving.gates import BOUND, SERVER_LATENCY, SERVER_RATE, SERVING_LATENCY, SERVING_RATE
    from accelbench.kinds.tokens.gates import LIMITS_OPTION, TOKEN_OFFLINE, TOKEN_RATE, limits_given
    from accelbench.work.loadgen import SERVING_RULES

    tolerances = dict.fromkeys(("accuracy", "error", "memory"), 0.1)

    def scope(metric, preset="quick", dataset="digits", rules="preset", **given):
        options = {LIMITS_OPTION.flag: None, BOUND.flag: None, SERVING_RULES.flag: rules}
        options.update({f"--{flag.replace('_', '-')}": value for flag, value in given.items()})
        under = f"{preset} preset, {rules} rules"  # as the session says it (run/session.py)
        where = Scope("hw", "sw", SimpleNamespace(name=dataset, key=f"{dataset}-n10"), under, options)
        return Gates.load(tmp_path, where, tolerances, {})[metric].scope

    assert scope(TOKEN_RATE) == ("hw", "sw", "quick preset, preset rules")
    assert scope(TOKEN_OFFLINE, dataset="mnist") == scope(TOKEN_RATE)
    assert scope(TOKEN_RATE, preset="full") == ("hw", "sw", "full preset, preset rules")
    assert scope(TOKEN_RATE, rules="mlperf") == ("hw", "sw", "quick preset, mlperf rules")
    assert scope(TOKEN_OFFLINE, token_limits=limits_given("llama2-70b")) == scope(TOKEN_OFFLINE)
    assert scope(TOKEN_RATE, token_limits=limits_given("llama2-70b")) == (
        "hw",
        "sw",
        "quick preset, preset rules, --token-limits TTFT 2000 ms, TPOT 200 ms",
    )
    assert scope(SERVING_RATE) == ("hw", "sw", "digits, quick preset, preset rules")
    # Only Server's numbers depend on the bound: a run under another keeps the others judged.
    for metric in (SERVER_RATE, SERVER_LATENCY):
        assert scope(metric) == scope(SERVING_RATE)
        bound = "digits, quick preset, preset rules, --latency-bound 5.0"
        assert scope(metric, latency_bound=5.0) == ("hw", "sw", bound)
    for metric in (SERVING_RATE, SERVING_LATENCY):
        assert scope(metric, latency_bound=5.0) == scope(SERVING_RATE)
    assert len({scope(SERVING_RATE), scope(SERVING_RATE, dataset="mnist"), scope(SERVING_RATE, preset="full")}) == 3


def test_the_documented_move_of_older_files_loads_them_keyed_by_the_backend(tmp_path):
    """docs/baselines.md's script, run on files keyed as before the process backend: each then
    loads at its gates' depth and finds its numbers under `backend=tensorflow`."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "baselines.md").read_text()
    script = re.search(r"python - <<'PY'\n(.*?)\nPY\n", docs, re.S).group(1)
    folder = tmp_path / "benchmarks" / "baselines"
    folder.mkdir(parents=True)
    cell = "test_batch_speedup[cpu-bs256-over-bs32-mlp]"
    (folder / "speedup.json").write_text(json.dumps({"hw": {"digits": {cell: {"speedup": 3.0}}}}))
    peak = {"digits": {"test_train_memory[cpu-bs32-mlp]": {"peak_memory_bytes": 5}}}
    memory = {"hw": {"tensorflow=2.21; keras=3.15": peak, "tensorflow=absent; keras=3.15": peak}}
    (folder / "memory.json").write_text(json.dumps(memory))
    for _ in range(2):  # run twice, it moves nothing further
        subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True)
    speedup = BaselineFile.load(folder / "speedup.json", depth=3)
    assert speedup.get(("hw", "backend=tensorflow", "digits"), cell, "speedup") == 3.0
    moved = BaselineFile.load(folder / "memory.json", depth=3)
    # TensorFlow's moved; another backend's, recorded without its versions, left to be recorded again
    assert sorted(moved.data["hw"]) == [
        "backend=tensorflow; tensorflow=2.21; keras=3.15",
        "tensorflow=absent; keras=3.15",
    ]
    software = "backend=tensorflow; tensorflow=2.21; keras=3.15"
    assert moved.get(("hw", software, "digits"), "test_train_memory[cpu-bs32-mlp]", "peak_memory_bytes") == 5
