"""A kind is one folder (issue 50): a new kind written as kinds/<name>/ is found by the catalog
(its fixture, its tables, its options), by the presets (its settings), by the report (its plots)
and by the scaffold (its test file), with no file outside the folder edited."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from accelbench import kinds

# A new kind, whole: the files a contributor writes, and nothing else.
ECHO = {
    "__init__.py": '"""Echo: how long an empty round takes (a kind the tests add)."""\n',
    "result.py": """
        from dataclasses import dataclass

        from accelbench.measured import Part


        @dataclass(frozen=True)
        class Echo(Part):
            echo_rounds: int | None = None
        """,
    "settings.py": """
        from accelbench.run.presets import KIND_SETTINGS, KindSettings

        KIND_SETTINGS.register("echo", KindSettings({"quick": 3, "full": 30}), origin=__name__)
        """,
    "plots.py": """
        def echo(runs):
            return []


        PLOTS = {"echo": echo}
        """,
    "bench.py": """
        from accelbench.benches.base import Bench, Benchmark
        from accelbench.grid.cells import Cell, params
        from accelbench.kinds.echo.result import Echo
        from accelbench.kinds.echo import settings  # noqa: F401  (registers its settings)
        from accelbench.option import Option, positive_number
        from accelbench.results.summary import Section


        class EchoBench(Bench):
            def __call__(self, benchmark):
                rounds = self.session.grid.settings["echo"]
                benchmark.pedantic(lambda: None, rounds=rounds, iterations=1)
                self.record(Echo(echo_rounds=rounds))


        PLACE_IN_SUMMARY = 99
        KINDS = {
            "echo_bench": Benchmark(
                lambda grid: params(grid, [Cell(d, 1, m) for d in grid.devices for m in grid.models], ()),
                EchoBench,
                "test_echo",
                file="test_echo.py",
                file_doc="Echo: an empty round.",
                sections=(Section("echo rounds", {"echo_bench": "{column}"}, Echo.keys.echo_rounds, "plain"),),
                plots=("echo",),
                options=(Option("--echo-scale", positive_number, "X", "How loud the echo is.", "1"),),
            )
        }
        """,
}


@pytest.fixture
def echo_folder(tmp_path, monkeypatch):
    """kinds/echo/ written beside the built-in folders (a second path of the kinds package)."""
    folder = tmp_path / "echo"
    folder.mkdir()
    for name, text in ECHO.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    monkeypatch.setattr(kinds, "__path__", [*kinds.__path__, str(tmp_path)])
    yield folder
    for name in [name for name in sys.modules if name.startswith("accelbench.kinds.echo")]:
        del sys.modules[name]


def test_a_new_kind_folder_is_found_everywhere_with_no_other_file_edited(
    echo_folder, monkeypatch, pytester, heavy_imports
):
    from accelbench import scaffold
    from accelbench.benches import catalog
    from accelbench.results.report import plots
    from accelbench.run.presets import KIND_SETTINGS, PRESETS, kind_settings

    for registry in (catalog.BENCHMARKS, KIND_SETTINGS):  # this process's registries, as they were
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
        monkeypatch.setattr(registry, "_origins", dict(registry._origins))
    found = catalog.kind_modules(kinds)
    assert found[-1].__name__ == "accelbench.kinds.echo.bench"
    for name, kind in found[-1].KINDS.items():
        catalog.BENCHMARKS.register(name, kind)
    assert "echo rounds" in [section.title for section in catalog.sections()]
    assert "echo" in catalog.plots() and "echo" in plots.drawn()
    assert kind_settings(PRESETS["full"])["echo"] == 30 and kind_settings(PRESETS["smoke"])["echo"] == 3
    from accelbench.plugin import options

    assert "--echo-scale" in [option.flag for option in options.all_options()]
    written = scaffold.benchmark_files()["test_echo.py"]
    assert written.startswith('"""Echo: an empty round."""') and "def test_echo(benchmark, echo_bench)" in written
    # What the kind is: its folder's five files and the test file the scaffold writes for it.
    assert sorted(path.name for path in echo_folder.iterdir() if path.suffix == ".py") == sorted(ECHO)
    pytester.makepyfile(test_echo=written)
    (pytester.path / "baselines").mkdir()
    result = pytester.runpytest(
        "-p", "accelbench.plugin", "-p", "no:cacheprovider", "--baselines", "baselines", "--models", "mlp",
        "--preset", "full", "--echo-scale", "2", "test_echo.py",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["echo rounds", "cpu *mlp *30"])  # its table, from full's settings


def test_a_kind_folder_without_plots_draws_nothing_and_one_whose_plots_fail_to_import_says_so(echo_folder):
    from accelbench.results.report import plots

    (echo_folder / "plots.py").unlink()
    assert "echo" not in plots.drawn()
    (echo_folder / "plots.py").write_text("import no_such_module\n")
    importlib.invalidate_caches()
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        plots.drawn()


def test_a_kinds_reply_from_a_worker_crosses_as_json_and_reads_back_as_itself():
    """Bench.in_worker's reply crosses as the dataclass's fields (worker_main), and the kind
    rebuilds it: the memory cell's StepMemoryReply, as a worker sends it."""
    import dataclasses
    import json

    from accelbench.kinds.memory.work import StepMemoryReply

    reply = StepMemoryReply(1_048_576, [1_048_000, 1_049_000], None, None, "GRU: not counted", "cpu")
    assert StepMemoryReply(**json.loads(json.dumps(dataclasses.asdict(reply)))) == reply
