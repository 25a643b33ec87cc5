"""The accelbench pytest plugin: options, parametrization, benchmark fixtures, gates, reports."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest

from accelbench import options
from accelbench.baselines import BaselineError
from accelbench.benches import BENCHMARKS
from accelbench.devices import host_allocator
from accelbench.formats import DataError
from accelbench.memory import is_out_of_memory
from accelbench.session import RunConfig, Session
from accelbench.training import NonFiniteLoss

SESSION = pytest.StashKey[Session]()


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    # A missing baseline is news, not an error, even under filterwarnings=error.
    config.addinivalue_line("filterwarnings", "default::accelbench.session.MissingBaselineWarning")
    config.stash[SESSION] = Session(RunConfig.from_pytest(config))


def session_of(config: pytest.Config) -> Session:
    return config.stash[SESSION]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name in metafunc.fixturenames:
        if name in BENCHMARKS:
            grid = session_of(metafunc.config).grid
            try:  # the full preset's sweep measures memory, so it loads the data here
                cells = BENCHMARKS[name].cells(grid)
            except (DataError, BaselineError) as error:
                pytest.exit(f"ERROR: {error}", returncode=pytest.ExitCode.USAGE_ERROR)
            metafunc.parametrize(name, cells, indirect=True)


def is_cell(item: pytest.Item) -> bool:
    """A benchmark cell: a test that uses one of the benchmark fixtures."""
    return any(name in BENCHMARKS for name in getattr(item, "fixturenames", ()))


def _bench_fixture(name: str):
    @pytest.fixture(name=name)
    def bench(request: pytest.FixtureRequest):
        made = BENCHMARKS[name].bench(session_of(request.config), request.param, request.node.name)
        made.setup(request.node)
        return made

    return bench


for _name in BENCHMARKS:  # one fixture per benchmark kind, named after it
    globals()[f"{_name}_fixture"] = _bench_fixture(_name)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Load data and baselines once, before any cell runs, so a bad file is one clear line."""
    if session.config.option.collectonly:
        return
    if any(is_cell(item) for item in session.items):
        try:
            session_of(session.config).prepare()
        except (DataError, BaselineError) as error:
            raise pytest.UsageError(str(error)) from None


def _clear_failure(item: pytest.Item, error: Exception) -> str | None:
    """The one line a user needs for failures that are the run's, not the harness's, fault."""
    if isinstance(error, NonFiniteLoss):
        return str(error)
    if is_out_of_memory(error):  # TensorFlow's ResourceExhaustedError, or the host's MemoryError
        first_line = str(error).splitlines()[0][:200] if str(error) else ""
        return f"{item.name}: out of memory ({first_line}); choose smaller --batch-sizes"
    return None


def _run_clearly(item: pytest.Item):
    """Run a test phase (a hook wrapper's yield), turning the run's own failures into one line."""
    failure = None
    try:
        result = yield
    except Exception as error:
        failure = _clear_failure(item, error)
        if failure is None:
            raise
    if failure:  # outside the except block, so no chained traceback is shown
        pytest.fail(failure, pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _run_clearly(item))  # memory cells build and step their models in setup


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield from _run_clearly(item)
    if is_cell(item):
        _hand_over_host_peak(item)
        failures = session_of(item.config).gate(item.name)
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)
    return result


def _hand_over_host_peak(item: pytest.Item) -> None:
    """Give a memory cell the peak pytest-memray measured over its body (its limit_memory
    marker makes pytest-memray track it, with or without --memray)."""
    benches = [item.funcargs[name] for name in BENCHMARKS if name in getattr(item, "funcargs", {})]
    for bench in benches:
        if hasattr(bench, "host_peak_measured"):
            manager = item.config.pluginmanager.get_plugin("memray_manager")
            result = manager.results.get(item.nodeid) if manager else None
            if result is None:
                pytest.fail(f"{item.name}: pytest-memray recorded no peak for this cell", pytrace=False)
            bench.host_peak_measured(int(result.peak_memory), item.funcargs["benchmark"])


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session_of(session.config)
    if state.unjudged:
        state.notes.append(f"{', '.join(sorted(state.unjudged))} NOT gated or recorded: --memray slows "
                           "TensorFlow down unevenly; judge speed in a run without --memray")
    if not state.run.update_baselines:
        return
    if session.testsfailed:
        state.notes.append(f"baselines NOT updated: {session.testsfailed} test(s) failed")
        return
    state.notes.extend(f"baselines written: {entry}" for entry in state.save_baselines())


def pytest_terminal_summary(terminalreporter: Any) -> None:
    state = session_of(terminalreporter.config)
    if state.results:
        terminalreporter.section("accelbench results")
        for name, metrics in state.results.items():
            values = ", ".join(f"{metric}={value:,.4g}" for metric, value in metrics.items())
            terminalreporter.write_line(f"{name}: {values}")
    for note in state.notes:
        terminalreporter.write_line(f"accelbench: {note}")


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    """Library versions, the devices and the machine class.

    pytest-benchmark asks at start-up when comparing and at the end when saving; both must
    see the same devices, so this starts TensorFlow if the run has not yet.
    """
    for package in ("tensorflow", "keras", "scikit-learn", "numpy"):
        try:
            machine_info[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    inventory = session_of(config).inventory
    machine_info["accelbench_devices"] = {
        name: placement.description for name, placement in inventory.placements.items()}
    machine_info["accelbench_machine_class"] = inventory.machine_class()
    # Timings under memray are slower: a run tracked by --memray must not pass for an untracked one.
    machine_info["accelbench_memray_tracking"] = session_of(config).run.memray_tracking
    machine_info["accelbench_host_allocator"] = host_allocator()
