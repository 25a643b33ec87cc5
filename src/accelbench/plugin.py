"""The accelbench pytest plugin: options, parametrization, benchmark fixtures, gates, reports."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest

from accelbench import options
from accelbench.baselines import BaselineError
from accelbench.benches import BENCHMARKS
from accelbench.formats import DataError
from accelbench.session import RunConfig, Session
from accelbench.training import NonFiniteLoss

SESSION = pytest.StashKey[Session]()
MARKER = "accelbench"


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a device x batch size x model benchmark cell")
    # A missing baseline is news, not an error, even under filterwarnings=error.
    config.addinivalue_line("filterwarnings", "default::accelbench.session.MissingBaselineWarning")
    config.stash[SESSION] = Session(RunConfig.from_pytest(config))


def session_of(config: pytest.Config) -> Session:
    return config.stash[SESSION]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name in metafunc.fixturenames:
        if name in BENCHMARKS:
            grid = session_of(metafunc.config).grid
            metafunc.parametrize(name, BENCHMARKS[name].cells(grid), indirect=True)
            metafunc.definition.add_marker(MARKER)


def _bench_fixture(name: str):
    @pytest.fixture(name=name)
    def bench(request: pytest.FixtureRequest):
        return BENCHMARKS[name].bench(session_of(request.config), request.param, request.node.name)

    return bench


for _name in BENCHMARKS:  # one fixture per benchmark kind, named after it
    globals()[f"{_name}_fixture"] = _bench_fixture(_name)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Load data and baselines once, before any cell runs, so a bad file is one clear line."""
    if session.config.option.collectonly:
        return
    if any(item.get_closest_marker(MARKER) for item in session.items):
        try:
            session_of(session.config).prepare()
        except (DataError, BaselineError) as error:
            raise pytest.UsageError(str(error)) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        result = yield
    except NonFiniteLoss as error:
        pytest.fail(str(error), pytrace=False)
    except Exception as error:
        if type(error).__name__ != "ResourceExhaustedError":  # TensorFlow's out-of-memory
            raise
        pytest.fail(f"{item.name}: out of memory ({str(error).splitlines()[0][:200]}); "
                    "choose smaller --batch-sizes", pytrace=False)
    if item.get_closest_marker(MARKER):
        failures = session_of(item.config).gate(item.name)
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session_of(session.config)
    if not state.run.update_baselines or not state.results:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if session.testsfailed:
        lines = [f"baselines NOT updated: {session.testsfailed} test(s) failed"]
    else:
        lines = [f"baselines written: {entry}" for entry in state.save_baselines()]
    for line in lines:
        if reporter:
            reporter.write_line(f"accelbench: {line}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    results = session_of(terminalreporter.config).results
    if not results:
        return
    terminalreporter.section("accelbench results")
    for name, metrics in results.items():
        values = ", ".join(f"{metric}={value:,.4g}" for metric, value in metrics.items())
        terminalreporter.write_line(f"{name}: {values}")


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    """Library versions and, where TensorFlow was started, the devices and machine class."""
    for package in ("tensorflow", "keras", "scikit-learn", "numpy"):
        try:
            machine_info[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    state = session_of(config)
    if "inventory" in state.__dict__:  # never start TensorFlow just to describe the machine
        machine_info["accelbench_devices"] = {
            name: placement.description for name, placement in state.inventory.placements.items()}
        machine_info["accelbench_machine_class"] = state.inventory.machine_class()
