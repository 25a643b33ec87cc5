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


@pytest.fixture(scope="session")
def heavy_imports():
    for name in HEAVY_MODULES:
        importlib.import_module(name)
