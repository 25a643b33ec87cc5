"""Fixtures shared by the harness tests."""

import importlib
import os
import shutil
import tempfile

import pytest

from accelbench.axes import backends

# The tests' process runs the backend a run's would (KERAS_BACKEND, else the first installed):
# the tests run in a TensorFlow, a JAX-only and a PyTorch-only environment alike. Its variables
# are set here too, before the imports below start it (TensorFlow reads its allocator's once).
backends.use_process_backend()

# pytester's in-process runs drop modules first imported inside them, and numpy, scipy and
# TensorFlow refuse to be imported twice in one process: import them once, up front.
HEAVY_MODULES = (
    backends.PROCESS_BACKEND,
    "keras",
    "sklearn.svm",
    "sklearn.datasets",
    "sklearn.model_selection",
    "scipy.stats",
    "numpy.fft",
)


# The tiers: `pytest tests` (tox -e tests) runs the fast tests, a few minutes' work for a
# developer's loop and a pull request's first answer; --runslow adds the tests marked slow or
# timing (whole benchmark suites run through pytester, worker processes, tf.distribute jobs, the
# conformance matrix: about 25 CPU-minutes), which tox -e slow-tests and .ci/run run. pytest's
# own recipe for slow tests ("Control skipping of tests according to command line option"),
# with the tier deselected rather than skipped: a skip would read as something missing here.
SLOW_MARKERS = ("slow", "timing")


def pytest_addoption(parser):
    parser.addoption(
        "--runslow",
        action="store_true",
        help="also run the tests marked slow or timing (whole benchmark runs, worker processes; tox -e slow-tests)",
    )


def pytest_report_header(config):
    if not config.getoption("runslow"):
        return "the tests marked slow or timing are deselected: --runslow runs them (tox -e slow-tests)"
    return None


def pytest_configure(config):
    share_one_xla_cache(config)
    share_one_roofs_folder(config)
    config.addinivalue_line(
        "markers",
        "timing: asserts on measured times or ratios; run alone, after the "
        "parallel tests (tox -e slow-tests), as other tests' load would bend them",
    )
    config.addinivalue_line(
        "markers",
        "slow(seconds): takes over 5 s (worker processes, a recipe, tf.distribute "
        "jobs); run with --runslow (tox -e slow-tests), dealt out first, longest "
        "first, so that pytest-xdist's workers finish together",
    )


def share_one_xla_cache(config):
    """One XLA compilation cache for the whole test session: pytest-xdist's workers, which start
    after this hook, and every JAX worker process they start inherit it. The JAX tests compile the
    same few steps (the mlp on digits) in a fresh process each, and a cached compile halves such a
    process's CPU time (6.6 s -> 3.2 s). A run of the suite never sets it: compile time is part of
    what a JAX cell measures. The session that made the folder removes it."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:  # a worker of this session, or the user's own cache
        return
    folder = tempfile.mkdtemp(prefix="accelbench-tests-xla-")
    os.environ.update(
        {
            "JAX_COMPILATION_CACHE_DIR": folder,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",  # small steps too (default: 1 s)
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
    )
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def share_one_roofs_folder(config):
    """The suites pytester runs here (-p no:cacheprovider: no pytest cache) keep the devices'
    roofs in one folder for the whole session, as a user's CI keeps them between runs: measured
    by the first run that needs them (a few seconds), read by every later one."""
    if "ACCELBENCH_ROOFS_DIR" in os.environ:  # a worker of this session
        return
    folder = tempfile.mkdtemp(prefix="accelbench-tests-roofs-")
    os.environ["ACCELBENCH_ROOFS_DIR"] = folder
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: `pytest tests` runs without it too
def pytest_xdist_auto_num_workers(config):
    """One pytest-xdist worker more than there are cores (tox -e tests: -n auto). The slow tests
    spend much of their time waiting on the processes they start (TensorFlow's start in each,
    a planted hang's deadline), and a third worker keeps two cores busy through it: the tests
    took 178 s with two workers and 153 s with three on 2 vCPUs."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config, items):
    if not config.getoption("runslow"):
        leave_out_the_slow_tier(config, items)
    deal_out_the_slow_first(items)


def leave_out_the_slow_tier(config, items):
    slow = {item for item in items if any(item.get_closest_marker(name) for name in SLOW_MARKERS)}
    if slow:
        config.hook.pytest_deselected(items=[item for item in items if item in slow])
        items[:] = [item for item in items if item not in slow]


def deal_out_the_slow_first(items):
    """Under pytest-xdist's work stealing, which hands each worker one contiguous share of this
    order: the slow tests dealt out across the shares, longest first (a snake order), each share
    then filled with fast tests, so that no worker starts with all the long ones."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    slow = sorted((item for item in items if item.get_closest_marker("slow")), key=lambda item: -_seconds(item))
    fast = [item for item in items if not item.get_closest_marker("slow")]
    shares: list[list] = [[] for _ in range(workers)]
    for index, item in enumerate(slow):
        lap, place = divmod(index, workers)
        shares[place if lap % 2 == 0 else workers - 1 - place].append(item)
    remaining = len(items)
    for index, share in enumerate(shares):  # the sizes xdist's worksteal scheduler hands out, in order
        size = remaining // (workers - index)
        remaining -= size
        while len(share) < size and fast:
            share.append(fast.pop(0))
    items[:] = [item for share in shares for item in share] + fast


def _seconds(item) -> float:
    """A slow test's rough duration (its marker's argument, seen with --durations), for the order."""
    marker = item.get_closest_marker("slow")
    return float(marker.args[0]) if marker.args else 10.0


# A test of what only TensorFlow does (its placement, its profiler's files, tf.distribute): skipped,
# saying so, in the JAX-only and PyTorch-only environments.
needs_tensorflow = pytest.mark.skipif(
    backends.PROCESS_BACKEND != "tensorflow", reason="TensorFlow's own path: the process backend here is not tensorflow"
)


@pytest.fixture(scope="session")
def heavy_imports():
    for name in HEAVY_MODULES:
        importlib.import_module(name)


@pytest.fixture(autouse=True)
def registries_as_they_were():
    """A user's module that a pytester run imports declares its models in this process's
    registries, which outlive the run: the next test must see the zoo alone."""
    from accelbench.axes.data import DATASETS
    from accelbench.axes.models import MODELS
    from accelbench.benches.catalog import BENCHMARKS
    from accelbench.judge.gates import GATES

    saved = [(registry, dict(registry._entries)) for registry in (MODELS, DATASETS, BENCHMARKS, GATES)]
    yield
    for registry, entries in saved:
        registry._entries.clear()
        registry._entries.update(entries)


@pytest.fixture(autouse=True)
def not_an_xdist_worker_inside(monkeypatch):
    """The tests run in pytest-xdist workers (tox -e tests: -n auto), and pytest-benchmark
    disables itself in any process that has PYTEST_XDIST_WORKER set, which the suites that
    pytester runs inside a test would inherit. Their benchmarks are the thing under test."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
