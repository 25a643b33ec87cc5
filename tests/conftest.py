"""Fixtures shared by the harness tests."""

import importlib
import os

import pytest

# TensorFlow reads this once, at its first allocation: it must be set before the imports
# below, as the plugin sets it before it starts TensorFlow (see devices.init_tensorflow).
os.environ.setdefault("TF_ONEDNN_USE_SYSTEM_ALLOCATOR", "1")

# pytester's in-process runs drop modules first imported inside them, and numpy, scipy and
# TensorFlow refuse to be imported twice in one process: import them once, up front.
HEAVY_MODULES = ("tensorflow", "keras", "sklearn.svm", "sklearn.datasets", "sklearn.model_selection",
                 "scipy.stats", "numpy.fft")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes over 5 s (worker processes, a recipe, tf.distribute jobs); "
                                       "runs first, so that pytest-xdist's workers finish together")


def pytest_xdist_auto_num_workers(config):
    """One pytest-xdist worker more than there are cores (tox -e tests: -n auto). The slow tests
    spend much of their time waiting on the processes they start (TensorFlow's start in each,
    a planted hang's deadline), and a third worker keeps two cores busy through it: the tests
    took 178 s with two workers and 153 s with three on 2 vCPUs."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(items):
    """The slow tests first (a stable sort): handed out one by one while the fast ones fill the gaps."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def heavy_imports():
    for name in HEAVY_MODULES:
        importlib.import_module(name)


@pytest.fixture(autouse=True)
def not_an_xdist_worker_inside(monkeypatch):
    """The tests run in pytest-xdist workers (tox -e tests: -n auto), and pytest-benchmark
    disables itself in any process that has PYTEST_XDIST_WORKER set, which the suites that
    pytester runs inside a test would inherit. Their benchmarks are the thing under test."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
