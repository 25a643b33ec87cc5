"""Registries and option parsers: duplicates rejected, unknown names list the choices."""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.axes.devices import parse_devices
from accelbench.axes.models import MODELS
from accelbench.plugin import options
from accelbench.registry import Registry, UnknownName
from accelbench.run import presets
from accelbench.run.presets import PRESETS


def test_register_rejects_duplicates():
    registry = Registry("thing")
    registry.register("a", 1)
    with pytest.raises(ValueError, match="thing 'a' is already registered"):
        registry.register("a", 2)


def test_unknown_name_lists_the_choices():
    with pytest.raises(UnknownName, match="unknown model 'resnet'; choose from: mlp, mlp_wide"):
        MODELS["resnet"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cpu", ("cpu",)),
        ("cpu,gpu:1", ("cpu", "gpu:1")),
        ("CPU, tpu,cpu", ("cpu", "tpu")),
        ("all", ()),
    ],
)
def test_parse_devices(text, expected):
    assert parse_devices(text) == expected


@pytest.mark.parametrize("text", ["cuda", "gpu:x", "", "cpu,all2"])
def test_parse_devices_rejects(text):
    with pytest.raises(ValueError):
        parse_devices(text)


def test_batch_sizes_parse_and_deduplicate():
    assert options.positive_ints("32, 256,32") == (32, 256)


def test_module_names_split_at_commas_or_spaces_as_pytest_s_ini_lists_do():
    assert options.module_names("benchmark_models, my.gen") == ("benchmark_models", "my.gen")
    assert options.module_names("benchmark_models my.gen\n  other") == ("benchmark_models", "my.gen", "other")
    for bad in ("my-gen", "", " , ", "my..gen"):
        with pytest.raises(ValueError, match="is not a Python module name"):
            options.module_names(bad)


@pytest.mark.skipif(PROCESS_BACKEND != "tensorflow", reason="TensorFlow's start notices: other backends print none")
def test_a_users_module_that_starts_tensorflow_leaves_its_start_notices_off_the_terminal(pytester):
    """A module that imports Keras at its top starts TensorFlow while the plugin imports it: its
    native notices (here written as TensorFlow writes them) are dropped, the module's own lines kept."""
    pytester.makepyfile(
        noisy="import os\n"
        "os.write(2, b'I0000 00:00:1795609444.446948   30315 port.cc:153] oneDNN custom operations are on.\\n')\n"
        "os.write(2, b'a line of the user\\n')\n"
    )
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    done = pytester.runpytest_subprocess("-p", "accelbench.plugin", "-p", "no:cacheprovider", "--modules", "noisy")
    assert done.ret == 0
    assert "a line of the user" in done.stderr.str() and "port.cc" not in done.stderr.str() + done.stdout.str()


@pytest.mark.parametrize("text", ["0", "abc", "-1", "3.5", ""])
def test_batch_sizes_reject(text):
    with pytest.raises(ValueError):
        options.positive_ints(text)


@pytest.mark.parametrize(("text", "ok"), [("0.02", True), ("0", True), ("1", False), ("x", False)])
def test_fraction(text, ok):
    if ok:
        assert options.fraction(text) == float(text)
    else:
        with pytest.raises(ValueError):
            options.fraction(text)


def test_every_benchmark_kind_has_a_plain_fixture_of_its_name(pytester):
    from accelbench.benches.catalog import BENCHMARKS

    listed = pytester.runpytest("-p", "accelbench.plugin", "-p", "no:cacheprovider", "--fixtures").stdout.str()
    assert [name for name in BENCHMARKS if f"{name} -- " not in listed and f"{name} [" not in listed] == []


BUILT_IN_KIND_MODULE = """
from accelbench.benches.base import Benchmark

PLACE_IN_SUMMARY = {place}
KINDS = {{"{name}": Benchmark(cells=lambda grid: [], bench=object, test="test_{name}")}}
"""


def test_a_built_in_kind_s_module_is_found_where_it_is_written_and_placed_by_its_place(tmp_path, monkeypatch):
    """A built-in kind is its module: benches/catalog.py registers every module of the package
    that declares KINDS, in PLACE_IN_SUMMARY order, with no list to add it to."""
    import importlib

    from accelbench.benches import catalog

    package = tmp_path / "some_kinds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("HELPS = True\n")  # declares no kind: left alone
    (package / "later.py").write_text(BUILT_IN_KIND_MODULE.format(place=20, name="later"))
    (package / "sooner.py").write_text(BUILT_IN_KIND_MODULE.format(place=10, name="sooner"))
    monkeypatch.syspath_prepend(str(tmp_path))
    found = catalog.kind_modules(importlib.import_module("some_kinds"))
    assert [module.__name__ for module in found] == ["some_kinds.sooner", "some_kinds.later"]

    (package / "unplaced.py").write_text(BUILT_IN_KIND_MODULE.format(place='"last"', name="unplaced"))
    with pytest.raises(TypeError, match="some_kinds.unplaced declares KINDS but no PLACE_IN_SUMMARY"):
        catalog.kind_modules(importlib.import_module("some_kinds"))


def test_the_built_in_kinds_are_every_kinds_module_s_in_the_order_their_tables_were_shown():
    from accelbench.benches import catalog

    found = catalog.kind_modules(catalog.kinds)
    modules = [module.__name__.removeprefix("accelbench.").removesuffix(".bench") for module in found]
    assert modules == [
        "kinds.throughput",
        "kinds.svm",
        "kinds.speedup",
        "kinds.accuracy",
        "kinds.memory",
        "kinds.serving",
        "kinds.distributed",
        "kinds.data_scaling",
        "kinds.tokens",
    ]
    assert list(catalog.BENCHMARKS)[: sum(len(m.KINDS) for m in found)] == [
        name for module in found for name in module.KINDS
    ]


def test_flops_leave_out_a_lookup_and_count_a_recurrent_layers_loop(heavy_imports):
    """Every counter is held to XLA and to its papers in tests/test_flops.py; this is the zoo's
    entry point: a lookup holds weights and does no multiply-adds, a GRU's steps all count."""
    import keras

    from accelbench.axes.flops import forward_flops_per_sample

    dense = keras.Sequential(
        [keras.Input((20,)), keras.layers.Embedding(100, 8), keras.layers.Flatten(), keras.layers.Dense(4)]
    )
    assert forward_flops_per_sample(dense) == 2 * 160 * 4  # the lookup holds weights but does no multiply-adds
    recurrent = keras.Sequential(
        [keras.Input((20,)), keras.layers.Embedding(100, 8), keras.layers.GRU(8), keras.layers.Dense(4)]
    )
    assert forward_flops_per_sample(recurrent) == 2 * 3 * (8 + 8) * 8 * 20 + 2 * 8 * 4  # 20 steps, 3 gates


def test_help_lists_every_option_and_ini_key(pytester):
    """`pytest --help` with the plugin loaded: argparse formats every help text with %, so one
    literal % in an option's help crashed it."""
    result = pytester.runpytest_subprocess("-p", "accelbench.plugin", "--help")
    assert result.ret == 0, result.stderr.str()
    text = result.stdout.str()
    missing = [
        name for option in options.all_options() for name in (option.flag, options.ini_key(option)) if name not in text
    ]
    missing += [
        name
        for name in (
            "--update-baselines",
            "--require-baselines",
            "--ab-strict",
            options.REQUIRE_BASELINES_INI,
            options.AB_STRICT_INI,
        )
        if name not in text
    ]
    assert not missing, f"not in pytest --help: {missing}"


def _generated_pages():
    path = Path(__file__).resolve().parents[1] / "docs" / "hooks" / "generated_pages.py"
    spec = importlib.util.spec_from_file_location("generated_pages", path)
    pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pages)
    return pages


def test_the_options_page_holds_the_option_table_as_it_is():
    """docs/options.md reads whole on the repository: its committed table is the one the option
    table makes (rewrite it with `python docs/hooks/generated_pages.py`)."""
    pages = _generated_pages()
    committed = pages.committed_table(pages.OPTIONS_PAGE.read_text())
    assert committed == pages.options_table(), "docs/options.md's option table is stale"
    assert "95% bound" in committed  # a literal % reads as one %, not argparse's %%


def test_the_results_page_says_what_the_terminal_shows_and_what_only_the_json_holds():
    """The terminal's tables are listed as the code has them; every key the page says only the
    JSON holds is one the code writes and no summary table shows."""
    import re

    from accelbench.benches.catalog import sections

    pages = _generated_pages()
    page = (pages.DOCS / "results.md").read_text()
    assert pages.committed_table(page, "summary-sections") == pages.summary_sections(), "docs/results.md is stale"
    json_only = page.split("What **only the JSON** holds:", 1)[1].lstrip().split("\n\n", 1)[0]
    keys = set(re.findall(r"`(\w+)`", json_only)) - {"stats"}  # stats: pytest-benchmark's own
    assert len(keys) > 40, keys
    shown = {name for section in sections() for name in (section.metric, section.interval, section.stderr) if name}
    assert not keys & shown, f"shown in the terminal, not JSON-only: {keys & shown}"
    source = "".join(path.read_text() for path in (Path(__file__).resolve().parents[1] / "src").rglob("*.py"))
    # keys the code makes from a template (an f-string, or a part's KEYS: "{prefix}exponent",
    # "tensorflow_{metric}"): as patterns
    made = [
        re.compile(re.sub(r"\\\{[^}]*\\\}", r"\\w*", re.escape(text)))
        for text in re.findall(r'f?"([\w{}]*\{[\w{}.]*)"', source)
        if re.sub(r"\{[^}]*\}", "", text)
    ]
    unwritten = [
        key
        for key in keys
        if not re.search(rf"\b{key}\b", source) and not any(pattern.fullmatch(key) for pattern in made)
    ]
    assert not unwritten, f"named on the page, written by no code: {unwritten}"


def test_the_timed_marker_selects_the_timed_cells_alone(pytester, heavy_imports):
    from accelbench.benches.catalog import BENCHMARKS

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    for path in root.glob("test_*.py"):
        pytester.makepyfile(**{path.stem: path.read_text()})
    (pytester.path / "baselines").mkdir()
    result = pytester.runpytest(
        "-p",
        "accelbench.plugin",
        "-p",
        "no:cacheprovider",
        "--collect-only",
        "-q",
        "-m",
        "timed",
        "--preset",
        "smoke",
        "--baselines",
        str(pytester.path / "baselines"),
    )
    selected = {line.split("::")[1].split("[")[0] for line in result.stdout.lines if "::" in line}
    timed = {benchmark.test for benchmark in BENCHMARKS.values() if benchmark.timed}
    assert selected and selected <= timed and "test_train_memory" not in selected


KIND_MODULE = """
import time
from dataclasses import dataclass

import accelbench
from accelbench.benches.base import Bench, Benchmark
from accelbench.grid.cells import Cell, params
from accelbench.measured import Part
from accelbench.results.summary import Section


@dataclass(frozen=True)
class FirstPrediction(Part):
    first_prediction_ms: float | None = None


class FirstPredictionBench(Bench):
    def __call__(self, benchmark):
        benchmark.pedantic(time.perf_counter, rounds=3, iterations=1)
        self.record(FirstPrediction(first_prediction_ms=12.5))


def first_prediction_plot(runs):
    from accelbench.results.report.plots import Plot, encode, panels

    figure, (ax,) = panels(1)
    cells = [cell for run in runs for cell in run.cells_of("first_prediction")]
    ax.bar([cell.model for cell in cells], [FirstPrediction.of(cell.info).first_prediction_ms for cell in cells])
    return [Plot("first prediction", "Time to a first prediction after load", encode(figure))]


accelbench.register_plot("first_prediction", first_prediction_plot)
accelbench.register_benchmark(
    "first_prediction",
    Benchmark(lambda grid: params(grid, [Cell("cpu", 1, grid.models[0])], ()), FirstPredictionBench,
              "test_first_prediction", file="test_first_prediction.py", about="Time to a first prediction after load.",
              plots=("first_prediction",)),
    Section("time to a first prediction after load", {"first_prediction": "{column}"},
            FirstPrediction.keys.first_prediction_ms, "milliseconds"),
)
"""


def test_a_kind_registered_by_a_users_module_gets_its_fixture_and_its_table(pytester, heavy_imports):
    """The fixtures are made from the registry once the run's modules are imported, so a kind
    that a module named in accelbench_modules registers is asked for as the built-in ones are;
    the table it adds is in the terminal's summary, and in the report, which reads it from the
    saved run without importing the module."""
    pytester.makepyfile(first_prediction_kind=KIND_MODULE)
    pytester.makepyfile(
        test_first_prediction="def test_first_prediction(benchmark, first_prediction):\n"
        "    first_prediction(benchmark)\n"
    )
    (pytester.path / "baselines").mkdir()
    common = ("-p", "accelbench.plugin", "-p", "no:cacheprovider", "--modules", "first_prediction_kind")
    listed = pytester.runpytest(*common, "--fixtures")
    listed.stdout.fnmatch_lines(["first_prediction*", "*Time to a first prediction after load.*"])
    result = pytester.runpytest(
        *common,
        "--benchmark-json=run.json",
        "--preset",
        "smoke",
        "--baselines",
        "baselines",
        "--models",
        "mlp",
        "test_first_prediction.py",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_first_prediction*cpu-bs1-mlp*"])
    result.stdout.fnmatch_lines(["time to a first prediction after load", "device *model *bs1", "cpu *mlp *12.5 ms"])
    report = subprocess.run(
        [sys.executable, "-m", "accelbench.cli", "report", "run.json", "-o", "report.html"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    page = (pytester.path / "report.html").read_text()
    assert "time to a first prediction after load" in page and "12.5 ms" in page
    assert "Time to a first prediction after load" not in page  # its plot: the module was not given
    assert "plot 'first_prediction' is not drawn: no module given declares it" in report.stdout
    # Given the module, as the pytest process was, the report draws the kind's own plot.
    report = subprocess.run(
        [sys.executable, "-m", "accelbench.cli", "report", "run.json", "-o", "drawn.html"]
        + ["--modules", "first_prediction_kind"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    assert "not drawn" not in report.stdout and "1 plots" in report.stdout
    assert "Time to a first prediction after load" in (pytester.path / "drawn.html").read_text()


def test_an_ab_run_keeps_the_round_lengths_its_error_rates_were_measured_at(pytester):
    """quick times 0.1 s training rounds; an A/B run of it times the 0.2 s (and 0.1 s prediction)
    rounds whose pair noise the A/B rule's error rates were simulated from (test_comparison.py)."""
    quick = PRESETS["quick"]
    assert (quick.round_seconds, quick.predict_round_seconds) == (0.1, 0.05)
    assert quick.ab_round_seconds == (0.2, 0.1)
    pytester.makeini("[pytest]\naccelbench_baselines = baselines\n")
    pytester.mkdir("baselines")
    plain = options.run_config(pytester.parseconfigure("-p", "accelbench.plugin"))
    assert (plain.preset.round_seconds, plain.preset.predict_round_seconds) == (0.1, 0.05)
    ab = options.run_config(pytester.parseconfigure("-p", "accelbench.plugin", "--ab-env", "ACCELBENCH_AA=1"))
    assert (ab.preset.round_seconds, ab.preset.predict_round_seconds) == (0.2, 0.1)
    assert ab.worker_fields().round_seconds == 0.2
    smoke = PRESETS["smoke"]
    assert presets.for_ab_run(smoke) is smoke  # no A/B lengths of its own: the same preset


RAISING_KIND = """
import accelbench
from accelbench.benches.base import Bench, Benchmark
from accelbench.grid.cells import Cell, params


class RaisingBench(Bench):
    def __call__(self, benchmark):
        benchmark.pedantic(lambda: None, rounds=1, iterations=1)
        return {}["no such number"]  # the kind's own bug


accelbench.register_benchmark(
    "raising",
    Benchmark(
        lambda grid: params(grid, [Cell(d, 1, m) for d in grid.devices for m in grid.models], ()),
        RaisingBench,
        "test_raising",
        file="test_raising.py",
    ),
)
"""


def test_a_users_kind_that_raises_stops_the_run_in_one_line_and_is_not_saved_as_a_run(pytester, heavy_imports):
    """Its code raising is one line naming the kind and the error's last line (the traceback
    with -v, as for a raising builder); the run stops there and is not autosaved, and the log
    does not say it saved one."""
    pytester.makepyfile(raising_kind=RAISING_KIND)
    pytester.makepyfile(test_raising="def test_raising(benchmark, raising):\n    raising(benchmark)\n")
    (pytester.path / "baselines").mkdir()
    common = ("-p", "accelbench.plugin", "-p", "no:cacheprovider", "--modules", "raising_kind", "--preset", "smoke")
    common += ("--baselines", "baselines", "--models", "mlp,cnn", "--benchmark-storage", "storage")
    result = pytester.runpytest(*common, "--benchmark-autosave", "test_raising.py")
    result.assert_outcomes(failed=1)  # the run stopped at the first: the other model's cell never ran
    result.stdout.fnmatch_lines(
        ["*test_raising[[]cpu-bs1-mlp[]]: benchmark kind 'raising' raised KeyError: 'no such number'*"]
    )
    out = result.stdout.str()
    assert "Traceback" not in out and "return {}[" not in out
    assert "Saved benchmark data" not in out and not list((pytester.path / "storage").rglob("*.json"))
    assert "this run was not saved to .benchmarks: it stopped on an error in your code" in out
    verbose = pytester.runpytest(*common, "-v", "test_raising.py")
    assert 'return {}["no such number"]' in verbose.stdout.str()  # the whole traceback under -v


def test_a_users_kind_that_declares_options_is_one_line_not_a_crash(pytester, heavy_imports, monkeypatch):
    """A kind registered from --modules comes after pytest parsed the command line: its options
    cannot be added, and the run says so in one line, naming the option."""
    from accelbench.benches.catalog import BENCHMARKS

    monkeypatch.setattr(BENCHMARKS, "_entries", dict(BENCHMARKS._entries))  # this process's kinds, as they were
    monkeypatch.setattr(BENCHMARKS, "_origins", dict(BENCHMARKS._origins))
    pytester.makepyfile(
        optioned_kind=RAISING_KIND.replace('"raising",', '"optioned",')
        .replace(
            'file="test_raising.py",',
            'file="test_raising.py", options=(Option("--my-knob", float, "X", "mine", "1"),),',
        )
        .replace("import accelbench\n", "import accelbench\nfrom accelbench.option import Option\n")
    )
    with pytest.raises(pytest.UsageError, match="option --my-knob: a benchmark kind registered from --modules"):
        options.run_config(pytester.parseconfigure("-p", "accelbench.plugin", "--modules", "optioned_kind"))


def test_a_kinds_settings_fall_back_to_the_named_preset_and_a_bad_fallback_is_one_line(monkeypatch):
    import accelbench
    from accelbench.run.presets import KIND_SETTINGS, PRESETS, kind_settings

    monkeypatch.setattr(KIND_SETTINGS, "_entries", dict(KIND_SETTINGS._entries))
    accelbench.register_settings("mine", {"quick": 1, "full": 3})
    assert kind_settings(PRESETS["full"])["mine"] == 3 and kind_settings(PRESETS["smoke"])["mine"] == 1
    with pytest.raises(ValueError, match="settings 'yours': the fallback preset 'quick' is not among"):
        accelbench.register_settings("yours", {"full": 3})


def test_a_kinds_option_read_without_the_plugin_is_its_default():
    from accelbench.kinds.serving import bench

    assert bench.SERVING_RULES.of({}) == "preset" and bench.BOUND.of({}) is None
    assert bench.RATE_TOLERANCE.of({"--serving-tolerance": 0.1}) == 0.1


GATED_KIND = """
import os
import time

import accelbench
from accelbench.benches.base import Bench, Benchmark
from accelbench.grid.cells import Cell, params


class BatchOfOneBench(Bench):
    '''The time of one prediction of one sample, gated: at most 50% slower than its baseline.'''

    def __call__(self, benchmark):
        model = self.session.built.site(self.cell).keras_model()
        sample = self.dataset.x_test[:1]
        model.predict_on_batch(sample)

        def predict():
            start = time.perf_counter()
            model.predict_on_batch(sample)
            if os.environ.get("PLANTED_SLOWDOWN"):  # the planted fault: 3x the time
                time.sleep(2 * (time.perf_counter() - start))

        benchmark.pedantic(predict, rounds=30, iterations=1)
        seconds = sorted(benchmark.stats.stats.data)[:10]  # the fast third: noise only adds
        value = 1e3 * sum(seconds) / len(seconds)
        self.extra_info["one_sample_ms"] = value
        self.verdicts.against_baseline(self.name, self.gates["one_sample_ms"], value)


accelbench.register_gate("one_sample_ms", "rise", 0.5)
accelbench.register_benchmark(
    "one_sample",
    Benchmark(
        lambda grid: params(grid, [Cell(d, 1, m) for d in grid.devices for m in grid.models], ()),
        BatchOfOneBench,
        "test_one_sample",
        judges=("one_sample_ms",),
        file="test_one_sample.py",
    ),
)
"""


# Timing: it holds a sub-millisecond time to its baseline, which other tests' load beside it bent
# past its 50% in 1 of 5 unchanged runs here: it runs alone, in the timing tier.
@pytest.mark.timing
def test_a_users_kind_gates_its_own_number_through_the_public_gate_registration(pytester, heavy_imports, monkeypatch):
    """register_gate: a rule and a tolerance, baselines keyed by this machine and recorded by
    --update-baselines; unchanged code passes, a planted 3x slowdown fails naming cell, baseline,
    value and tolerance; bad words are one line naming the choices."""
    import accelbench

    pytester.makepyfile(gated_kind=GATED_KIND)
    pytester.makepyfile(test_one_sample="def test_one_sample(benchmark, one_sample):\n    one_sample(benchmark)\n")
    (pytester.path / "baselines").mkdir()
    common = ("-p", "accelbench.plugin", "-p", "no:cacheprovider", "--modules", "gated_kind", "--preset", "smoke")
    common += ("--baselines", "baselines", "--models", "mlp", "test_one_sample.py")
    pytester.runpytest(*common, "--update-baselines").assert_outcomes(passed=1)
    stored = json.loads((pytester.path / "baselines" / "one_sample_ms.json").read_text())
    assert "one_sample_ms" in json.dumps(stored)
    pytester.runpytest(*common).assert_outcomes(passed=1)
    monkeypatch.setenv("PLANTED_SLOWDOWN", "1")
    slower = pytester.runpytest(*common)
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(
        ["*one_sample_ms regression in test_one_sample[[]cpu-bs1-mlp[]]: measured *, baseline *"]
    )
    for bad, says in (
        (dict(rule="faster"), "rule 'faster' is not one of drop, rise, absolute_drop"),
        (dict(rule="rise", keyed_by="weather"), "keyed_by 'weather' is not one of machine, data"),
        (dict(rule="rise", tolerance=-1), "tolerance -1 must be a number >= 0"),
    ):
        with pytest.raises(ValueError, match=re.escape(says)):
            accelbench.register_gate("x", **{"tolerance": 0.1, **bad})


def test_the_extending_page_shows_the_users_kind_word_for_word():
    """docs/extending.md holds the example kind inline (an include line shows nothing on GitHub);
    this keeps its copy the module the tests run."""
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "extending.md").read_text()
    block = page.split("``` { .python }\n", 1)[1].split("```\n", 1)[0]
    assert block == (root / "tests" / "first_prediction_kind.py").read_text()


def test_a_model_declared_with_the_earlier_device_kinds_name_still_runs_where_it_said():
    """`device_types` was `device_kinds` before "kind" came to mean a benchmark kind alone."""
    import dataclasses

    from accelbench.axes.models import ANY_DEVICE, ModelSpec

    old = ModelSpec("old", "declared the old way", build=lambda *a: None, device_kinds={"cpu"})
    assert old.device_types == frozenset({"cpu"})
    assert ModelSpec("new", "no types named", build=lambda *a: None).device_types == ANY_DEVICE
    assert dataclasses.replace(old, name="copy").device_types == frozenset({"cpu"})
