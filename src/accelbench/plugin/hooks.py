"""The accelbench pytest plugin: options, parametrization, benchmark fixtures, the pytest
outcome of every verdict, and where verdicts are shown (terminal) and kept (JSON)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from accelbench.axes import backends
from accelbench.axes.backends import roof_kernels
from accelbench.axes.formats import DataError
from accelbench.axes.precisions import PRECISIONS, REFERENCE_PRECISION
from accelbench.benches import catalog
from accelbench.benches.base import IN_TURN, Bench
from accelbench.benches.catalog import BENCHMARKS
from accelbench.judge import fingerprint, gated_history, peak_history, storage
from accelbench.judge.baselines import BaselineError
from accelbench.judge.verdicts import AB_METRICS, FAIL, FINGERPRINT_KEY, LEAKS, PASS, PEAK_CAP, SavedRun, Verdict
from accelbench.measured import CELL_KEY, ROOFS_KEY, SCHEMA_VERSION, VERDICTS_KEY
from accelbench.plugin import fixtures, options, terminal
from accelbench.plugin.state import BODY_PASSED, SESSION, session_of
from accelbench.processes.workers import WorkerFailed
from accelbench.processes.worktree import WorktreeError
from accelbench.progress import Progress
from accelbench.run.session import Session
from accelbench.units import parse_bytes
from accelbench.user_modules import UserCodeFailed
from accelbench.work.memory import is_out_of_memory
from accelbench.work.training import NonFiniteLoss

# pytest-memray's markers decide their own limits; each becomes a verdict of this metric.
MEMRAY_LIMITS = {"limit_memory": PEAK_CAP, "limit_leaks": LEAKS}


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


TIMED_MARKER = "timed"
STARTED = pytest.StashKey[float]()  # when the run began (time.monotonic()), for --stop-after
# Keras' torch backend hands NumPy 2 tensors whose __array__ takes no copy keyword (torch 2.13,
# NumPy 2.4): a DeprecationWarning at every torch prediction, thousands a run, that says nothing
# about the user's code. Left out wherever the plugin runs, after the project's own filters.
THIRD_PARTY_NOISE = ("ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning",)


def pytest_configure(config: pytest.Config) -> None:
    for noise in THIRD_PARTY_NOISE:
        config.addinivalue_line("filterwarnings", noise)
    config.addinivalue_line(
        "markers",
        f"{TIMED_MARKER}: an accelbench cell that pytest-benchmark times "
        "(select the timed cells alone with -m timed, e.g. for an A/B run)",
    )
    try:  # before anything imports Keras: it fixes its backend then
        backends.use_process_backend()
    except backends.NoBackend as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[STARTED] = time.monotonic()
    session = config.stash[SESSION] = Session(options.run_config(config))
    session.roofs.use_cache(getattr(config, "cache", None))  # None under -p no:cacheprovider
    session.progress = Progress(config)
    fixtures.register(config)  # after run_config imported the user's modules: their kinds too


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name in metafunc.fixturenames:
        if name in BENCHMARKS:
            grid = session_of(metafunc.config).grid
            try:  # the full preset's sweep measures memory, so it loads the data here
                kind = BENCHMARKS[name]
                cells = grid.params_of(name, kind.cells, kind.left_out.get(session_of(metafunc.config).run.preset.name))
            except (DataError, BaselineError) as error:
                pytest.exit(f"ERROR: {error}", returncode=pytest.ExitCode.USAGE_ERROR)
            metafunc.parametrize(
                name,
                [pytest.param(param.cell, id=param.id, marks=_skip(param.skip_reason)) for param in cells],
                indirect=True,
            )


def _skip(reason: str | None) -> list:
    return [pytest.mark.skip(reason=reason)] if reason else []


def benchmark_of(item: pytest.Item) -> str | None:
    """The benchmark fixture a cell uses; None for a test that is not a benchmark cell."""
    return next((name for name in getattr(item, "fixturenames", ()) if name in BENCHMARKS), None)


def is_cell(item: pytest.Item) -> bool:
    return benchmark_of(item) is not None


def bench_of(item: pytest.Item) -> Bench | None:
    name = benchmark_of(item)
    return getattr(item, "funcargs", {}).get(name) if name else None


def run_order(item: pytest.Item) -> int:
    """Its kind's `order` (benches/base.py): the harness overhead first, since fit() against a
    hand-written loop on the cnn fell from about 0.95 (run alone) to 0.85-0.89 after the rest of
    the suite had run in the process; the speedups after the training cells whose best rounds
    they take."""
    name = benchmark_of(item)
    return BENCHMARKS[name].order if name else IN_TURN


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """pytest-benchmark groups like with like: one group per benchmark kind and model, so its
    batch sizes and devices sit side by side and "relative" compares comparable rounds."""
    items.sort(key=run_order)  # stable: the rest keep their order
    for item in items:
        name, model = benchmark_of(item), getattr(cell_of(item), "model", None)
        if name and model:  # a placeholder (nothing to compare) has no cell
            item.add_marker(pytest.mark.benchmark(group=f"{name.removesuffix('_bench')} {model}"))
        if name and BENCHMARKS[name].timed:
            item.add_marker(TIMED_MARKER)


def cell_of(item: pytest.Item) -> Any:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get(benchmark_of(item)) if callspec else None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Load data and baselines once, before any cell runs, so a bad file is one clear line."""
    if session.config.option.collectonly:
        return
    if any(is_cell(item) for item in session.items):
        state = session_of(session.config)
        try:
            state.prepare()
        except (DataError, BaselineError) as error:
            raise pytest.UsageError(str(error)) from None
        if state.run.update_baselines:
            _read_saved_runs(session.config, state)
        _measure_roofs(session.items, state)
        try:
            ab_run = state.ab_run  # --ab-ref checks out its worktree here (its ref was resolved at start)
        except WorktreeError as error:
            pytest.exit(f"ERROR: {error}", returncode=pytest.ExitCode.USAGE_ERROR)
        if ab_run is not None:  # the multiple-testing correction counts the cells an A/B run judges
            ab_run.cells_judged = sum(BENCHMARKS[benchmark_of(item)].ab for item in session.items if is_cell(item))
            if ab_run.cells_judged:
                _start_workers(state)


def _measure_roofs(items: list[pytest.Item], state: Session) -> None:
    """The roofs the run's throughput cells are held to, measured before any cell is built: a
    built cell's input pipeline prefetches in threads of its own, and a roof measured at the
    first cell came out at 171 GFLOP/s where the same run measured 219 again later."""
    for item in items:
        name, cell = benchmark_of(item), cell_of(item)
        if not (name and BENCHMARKS[name].held_to_roofs and cell is not None) or item.get_closest_marker("skip"):
            continue
        backend = getattr(cell, "backend", backends.PROCESS_BACKEND)
        placement = state.inventory.get(cell.device)
        if placement is not None and backends.BACKENDS[backend].roof is not None:
            dtype = PRECISIONS[getattr(cell, "precision", REFERENCE_PRECISION)].compute
            state.roofs.of(backend, cell.device, dtype)
            if (
                dtype == "float32"
                and backend == backends.PROCESS_BACKEND
                and backends.BACKENDS[backend].tf32(placement)
            ):
                state.roofs.of(backend, cell.device, roof_kernels.TF32)  # shown beside: cells stay IEEE float32


def _read_saved_runs(config: pytest.Config, state: Session) -> None:
    """What --update-baselines takes from this machine's earlier saved runs (pytest-benchmark's
    storage, --benchmark-storage): the memory peaks, for the spread each memory baseline is
    recorded with (peak_history); the numbers this commit's runs judged against stored
    baselines, for the gates recorded as a median of runs (gated_history). Nothing where the
    storage is not a folder (pytest-benchmark's elasticsearch storage)."""
    folder = getattr(getattr(getattr(config, "_benchmarksession", None), "storage", None), "path", None)
    if folder is None:
        return
    files = peak_history.saved_files(Path(folder))
    hardware, software = state.inventory.fingerprint().key, backends.software().key
    peaks, unreadable = peak_history.peaks(files, hardware, software)
    state.verdicts.peak_history.update(peaks)
    commit = storage.commit_of(config.hook.pytest_benchmark_generate_commit_info(config=config))
    judged, unread = gated_history.judged(files, hardware, software, commit)
    state.verdicts.earlier = gated_history.Earlier(commit, judged)
    state.notes.extend([*unreadable, *unread])


def _start_workers(state: Session) -> None:
    """Start A's and B's workers before any cell: a B that cannot run accelbench is one line."""
    try:
        state.ab_run.describe()
    except WorkerFailed as error:
        raise pytest.UsageError(
            f"A/B: {error} (does B's interpreter have accelbench and its dependencies installed?)"
        ) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    """No process the run started outlives it."""
    state = config.stash.get(SESSION, None)
    if state is not None:
        state.end()


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
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    result = yield
    _stop_when_out_of_time(item, nextitem)
    return result


def _stop_when_out_of_time(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """--stop-after: past its seconds, the next cell does not start. pytest ends the loop as
    interrupted, between cells, and the session finishes as usual: the finished cells are
    judged and saved. (A Ctrl-C lands inside a cell: on the H100 one JAX run so stopped saved
    nothing, and on the EPYC a LoadGen run interrupted in its C++ threads never returned.)"""
    limit = session_of(item.config).run.stop_after_s
    if limit is None or nextitem is None or item.session.shouldstop:
        return
    elapsed = time.monotonic() - item.config.stash[STARTED]
    if elapsed >= limit:
        left = len(item.session.items) - item.session.items.index(nextitem)
        item.session.shouldstop = f"--stop-after {limit:g} s: {left} test(s) not started after {elapsed:.0f} s"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _run_clearly(item))  # memory cells build and step their models in setup


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield from _run_clearly(item)
    bench = bench_of(item)
    if bench is not None:
        _hand_over_host_peak(item, bench)
        failures = session_of(item.config).verdicts.failures(bench.name)
        item.stash[BODY_PASSED] = not failures
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)
    return result


def _hand_over_host_peak(item: pytest.Item, bench: Bench) -> None:
    """Give a memory cell the peak pytest-memray measured over its body (its limit_memory
    marker makes pytest-memray track it, with or without --memray)."""
    if getattr(bench, "tracked_here", False):
        manager = item.config.pluginmanager.get_plugin("memray_manager")
        result = manager.results.get(item.nodeid) if manager else None
        if result is None:
            pytest.fail(f"{item.name}: pytest-memray recorded no peak for this cell", pytrace=False)
        bench.host_peak_measured(int(result.peak_memory))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Outermost, so it sees the report after pytest-memray has applied its limits."""
    report = yield
    if report.when != "setup" or not report.passed:  # one status line from setup to the cell's result
        session_of(item.config).progress.done()
    if call.excinfo is not None and call.excinfo.errisinstance(UserCodeFailed):
        _stop_on_user_code(item, report, call.excinfo.value)
    name = benchmark_of(item)
    if name is None:
        return report
    verdicts = session_of(item.config).verdicts
    if report.skipped:  # at setup (a cell that cannot run) or in the body (data too small)
        benchmark, ab_run = BENCHMARKS[name], session_of(item.config).ab_run
        judges = benchmark.judges + (AB_METRICS if benchmark.ab and ab_run else ())
        verdicts.skipped(item.name, judges, _skip_reason(report))
    elif report.when == "call" and item.stash.get(BODY_PASSED, False):
        _memray_verdicts(item, report)
    if report.when == "call":
        _keep_extra_info(item)
    return report


USER_CODE_FAILED = pytest.StashKey[str]()


def _stop_on_user_code(item: pytest.Item, report: pytest.TestReport, error: UserCodeFailed) -> None:
    """A user's builder, loader or factory that raised fails every cell of its model the same
    way: the cell fails on one line (the traceback under --tb=long or -v), the run stops after
    it, and it is not autosaved as a run to compare with (pytest_sessionfinish)."""
    config = item.config
    if config.getoption("tbstyle") != "long" and config.getoption("verbose") <= 0:
        report.longrepr = f"{item.name}: {error}"
    config.stash[USER_CODE_FAILED] = str(error)
    item.session.shouldstop = f"{error} (--tb=long shows where)"


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def _memray_verdicts(item: pytest.Item, report: pytest.TestReport) -> None:
    """pytest-memray decides its own limits (limit_memory, limit_leaks): what it said, as a
    verdict of the cell, against the limit the cell's marker set."""
    bench = bench_of(item)
    for marker in item.iter_markers():
        metric = MEMRAY_LIMITS.get(marker.name)
        if metric and bench is not None:
            failure = None if report.passed else str(report.longrepr)
            session_of(item.config).verdicts.add(
                Verdict(
                    cell=item.name,
                    metric=metric,
                    outcome=FAIL if failure else PASS,
                    measured=getattr(bench, "host_peak", None) if metric == PEAK_CAP else None,
                    baseline=parse_bytes(str(marker.args[0])),
                    against="pytest-memray limit",
                    tolerance="hard limit",
                    message=failure or "",
                )
            )


def _keep_extra_info(item: pytest.Item) -> None:
    """A cell's extra_info, with its verdicts, goes to its pytest-benchmark entry; cells that
    pytest-benchmark does not time (memory) are kept for the JSON's accelbench section."""
    bench = bench_of(item)
    if bench is None:
        return
    state = session_of(item.config)
    bench.extra_info[VERDICTS_KEY] = [v.as_json() for v in state.verdicts.by_cell.get(item.name, [])]
    model = getattr(bench.cell, "model", None)
    data = {"dataset": state.run.dataset_of(model)} if model else {}  # a kind's cell may have no model
    bench.extra_info[CELL_KEY] = {"benchmark": benchmark_of(item), **bench.cell.fields(), **data}
    benchmark = getattr(item, "funcargs", {}).get("benchmark")
    if benchmark is not None and getattr(benchmark, "stats", None):
        benchmark.extra_info.update(bench.extra_info)
        bench.extra_info = benchmark.extra_info  # one dict: what comes later (traces) lands in the JSON
    state.cells[item.name] = bench.extra_info


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session):
    """Step traces run after the last cell and before pytest-benchmark saves the run (its own
    wrapper saves before it yields), so the saved extra_info names them. Both this and the
    baselines come before the terminal reporter's summary, which shows their notes."""
    state = session_of(session.config)
    _run_deferred(state)
    _save_baselines(session, state)
    _no_autosave_after_user_code_failed(session.config, state)
    _drop_interrupted_cells(session.config)
    result = yield
    _save_untimed_alone(session.config, state)
    return result


def _drop_interrupted_cells(config: pytest.Config) -> None:
    """A cell stopped inside its timed rounds (Ctrl-C, gpu-check's deadline) has statistics
    with no rounds; pytest-benchmark's save raises on them (min() of nothing) and writes no file,
    losing every finished cell with it. Such a cell measured nothing, so it is left out."""
    bench = getattr(config, "_benchmarksession", None)
    if bench is not None:
        bench.benchmarks[:] = [stats for stats in bench.benchmarks if stats]  # falsy: no rounds


def _save_untimed_alone(config: pytest.Config, state: Session) -> None:
    """A run of cells pytest-benchmark does not time (serving, memory) alone, saved as it saves
    a run (--benchmark-json, --benchmark-autosave/--benchmark-save): its handle_saving() saves
    nothing when it timed nothing, and such a run would be lost to the report and the history.
    The same hooks (this plugin's pytest_benchmark_update_json adds the cells) and storage."""
    bench = getattr(config, "_benchmarksession", None)
    if bench is None or bench.benchmarks or not state.cells or bench.disabled:
        return
    save = bench.save or bench.autosave
    if not (save or bench.json):
        return
    machine_info = bench.get_machine_info()
    commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
    config.hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)

    def made() -> dict:
        output = config.hook.pytest_benchmark_generate_json(
            config=config, benchmarks=[], include_data=True, machine_info=machine_info, commit_info=commit_info
        )
        config.hook.pytest_benchmark_update_json(config=config, benchmarks=[], output_json=output)
        return output

    if bench.json:
        bench.save_json(made())
    if save:
        bench.storage.save(made(), save)


def _no_autosave_after_user_code_failed(config: pytest.Config, state: Session) -> None:
    """A run stopped by a user's code that raised is no run to compare later ones with: its
    --benchmark-autosave/--benchmark-save is dropped (an explicit --benchmark-json is kept)."""
    if USER_CODE_FAILED not in config.stash:
        return
    benchmark_session = getattr(config, "_benchmarksession", None)  # pytest-benchmark's, set at configure
    if benchmark_session is not None and (benchmark_session.save or benchmark_session.autosave):
        benchmark_session.save = benchmark_session.autosave = None
        state.notes.append("this run was not saved to .benchmarks: it stopped on an error in your code")


def _run_deferred(state: Session) -> None:
    for what, work in state.deferred:
        try:
            work()
        except Exception as error:  # a trace is a by-product: the run's numbers stand without it
            first_line = next(iter(str(error).splitlines()), "")[:200]
            state.notes.append(f"{what} failed: {type(error).__name__}: {first_line}")
    state.progress.done()


def _save_baselines(session: pytest.Session, state: Session) -> None:
    if not state.run.update_baselines:
        return
    if session.testsfailed:
        state.notes.append(f"baselines NOT updated: {session.testsfailed} test(s) failed")
        return
    try:
        written = state.save_baselines()
    except OSError as error:  # all or nothing: none was written, and the run says so in one line
        state.notes.append(f"baselines NOT updated: {error}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    state.notes.extend(f"baselines written: {entry}" for entry in written)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminal.write_summary(terminalreporter, session_of(terminalreporter.config))


@pytest.hookimpl(optionalhook=True, wrapper=True)
def pytest_benchmark_compare_machine_info(
    config: pytest.Config, benchmarksession: Any, machine_info: dict, compared_benchmark: dict
) -> Any:
    """pytest-benchmark loaded a saved run for --benchmark-compare: timed cells are judged against it.

    A wrapper, because pytest-benchmark's own implementation of this hook crashes (ValueError,
    its issue #217) where the saved run's machine differs and the storage lies outside the
    working directory (a CI cache, a network drive): it formats the storage's location
    relative to the working directory. The run goes on, with one line saying what differs.
    """
    saved = SavedRun.from_json(compared_benchmark)
    session_of(config).verdicts.saved_runs.append(saved)
    try:
        return (yield)
    except ValueError as error:
        if "subpath" not in str(error):
            raise
        differences = saved.machine_differences(machine_info.get(FINGERPRINT_KEY, ""))
        benchmarksession.logger.warning(
            f"Benchmark machine_info is different: saved run {saved.name} ({benchmarksession.storage.path}) is from "
            f"another machine: {'; '.join(differences) or 'the same fingerprint, other machine details'}"
        )
        return None


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list, output_json: dict) -> None:
    """Every verdict of the run, and the cells pytest-benchmark does not time, beside its benchmarks."""
    state = session_of(config)
    timed = {entry["name"] for entry in output_json.get("benchmarks", ())}
    output_json["accelbench"] = {
        "schema": SCHEMA_VERSION,
        "verdicts": [verdict.as_json() for verdict in state.verdicts.all()],
        "untimed_cells": [
            {"name": name, "extra_info": info} for name, info in state.cells.items() if name not in timed
        ],
        "projections": [cost.as_json() for cost in terminal.device_costs(state)],
        # the summary's tables as this run laid them out, a kind's own included: the report
        # imports no benchmark kind, so it reads them here
        "sections": [section.as_json() for section in catalog.sections()],
        "plots": catalog.plots(),
        # the device roofs the cells' utilization is taken against. Not in machine_info: that is
        # asked for at the start too when comparing, before any roof is measured, and
        # pytest-benchmark warns of a machine_info unlike the saved run's.
        ROOFS_KEY: [roof.as_json() for roof in state.roofs.measured()],
    }


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    """Library versions, the devices and the machine class.

    pytest-benchmark asks at start-up when comparing and at the end when saving; both must
    see the same devices, so this starts TensorFlow if the run has not yet.
    """
    machine_info.update(backends.versions())
    machine_info[fingerprint.PROCESS_BACKEND_KEY] = backends.PROCESS_BACKEND
    machine_info[fingerprint.SOFTWARE_KEY] = backends.software().key  # what its memory and served numbers key by
    inventory = session_of(config).inventory
    machine_info["accelbench_devices"] = {
        name: placement.description for name, placement in inventory.placements.items()
    }
    machine_info["accelbench_machine_class"] = inventory.machine_class()
    machine_info[FINGERPRINT_KEY] = inventory.fingerprint().key  # --benchmark-compare judges only its own
    # Timings under memray are slower: a run tracked by --memray must not pass for an untracked one.
    machine_info["accelbench_memray_tracking"] = session_of(config).run.memray_tracking
    machine_info["accelbench_host_allocator"] = backends.BACKENDS[backends.PROCESS_BACKEND].host_allocator()
