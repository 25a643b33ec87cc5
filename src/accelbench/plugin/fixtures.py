"""One plain fixture per benchmark kind (benches/catalog.py), each parameterized over its cells
by pytest_generate_tests (hooks.py): a test file asks for one and calls it with pytest-benchmark's
`benchmark`, e.g. `def test_train(train_bench, benchmark): train_bench(benchmark)`.

The Bench is made when the fixture is, and its setup (building and stepping a memory cell's
model) runs then: outside the test body that pytest-benchmark times and pytest-memray tracks.
"""

from __future__ import annotations

import pytest

from accelbench.benches.base import Bench
from accelbench.benches.catalog import BENCHMARKS
from accelbench.plugin.state import session_of


def bench_for(name: str, request: pytest.FixtureRequest) -> Bench:
    """The Bench of benchmark kind `name` for the cell pytest parameterized this test with."""
    made = BENCHMARKS[name].bench(session_of(request.config), request.param, request.node.name)
    made.setup(request.node)
    return made


@pytest.fixture
def train_bench(request: pytest.FixtureRequest) -> Bench:
    """Steady-state training throughput of one cell (benches/throughput.py)."""
    return bench_for("train_bench", request)


@pytest.fixture
def inference_bench(request: pytest.FixtureRequest) -> Bench:
    """Inference throughput of one cell (benches/throughput.py)."""
    return bench_for("inference_bench", request)


@pytest.fixture
def latency_bench(request: pytest.FixtureRequest) -> Bench:
    """Batch-1 latency of one cell (benches/throughput.py)."""
    return bench_for("latency_bench", request)


@pytest.fixture
def accuracy_bench(request: pytest.FixtureRequest) -> Bench:
    """The published recipe's time to accuracy, final accuracy gated (benches/accuracy.py)."""
    return bench_for("accuracy_bench", request)


@pytest.fixture
def svm_bench(request: pytest.FixtureRequest) -> Bench:
    """The RBF SVM's fit on an n-image subset, accuracy gated (benches/throughput.py)."""
    return bench_for("svm_bench", request)


@pytest.fixture
def overhead_bench(request: pytest.FixtureRequest) -> Bench:
    """The suite's fit() against a hand-written training loop (benches/speedup.py)."""
    return bench_for("overhead_bench", request)


@pytest.fixture
def batch_speedup(request: pytest.FixtureRequest) -> Bench:
    """The largest batch's training throughput over the smallest's, interleaved (benches/speedup.py)."""
    return bench_for("batch_speedup", request)


@pytest.fixture
def device_speedup(request: pytest.FixtureRequest) -> Bench:
    """A device's training throughput over the CPU's, interleaved (benches/speedup.py)."""
    return bench_for("device_speedup", request)


@pytest.fixture
def accuracy_parity(request: pytest.FixtureRequest) -> Bench:
    """A device's recipe accuracy and loss against the CPU's (benches/accuracy.py)."""
    return bench_for("accuracy_parity", request)


@pytest.fixture
def train_memory(request: pytest.FixtureRequest) -> Bench:
    """Host and device peak of a training step, gated (benches/memory.py)."""
    return bench_for("train_memory", request)


@pytest.fixture
def inference_memory(request: pytest.FixtureRequest) -> Bench:
    """Host and device peak of a predicted batch, gated (benches/memory.py)."""
    return bench_for("inference_memory", request)


@pytest.fixture
def inference_leaks(request: pytest.FixtureRequest) -> Bench:
    """Repeated predictions under pytest-memray's limit_leaks (benches/memory.py)."""
    return bench_for("inference_leaks", request)


@pytest.fixture
def memory_scaling(request: pytest.FixtureRequest) -> Bench:
    """Training-step peaks against batch size and the largest batch that fits (benches/memory.py)."""
    return bench_for("memory_scaling", request)


@pytest.fixture
def train_data_scaling(request: pytest.FixtureRequest) -> Bench:
    """Training time and memory as the training set grows, projected (benches/data_scaling.py)."""
    return bench_for("train_data_scaling", request)


@pytest.fixture
def predict_data_scaling(request: pytest.FixtureRequest) -> Bench:
    """Prediction time and memory as the test set grows, projected (benches/data_scaling.py)."""
    return bench_for("predict_data_scaling", request)


@pytest.fixture
def threads_bench(request: pytest.FixtureRequest) -> Bench:
    """One intra-op thread against all, in fresh processes (benches/distributed.py)."""
    return bench_for("threads_bench", request)


@pytest.fixture
def multi_device(request: pytest.FixtureRequest) -> Bench:
    """tf.distribute across replicas of one process against one device (benches/distributed.py)."""
    return bench_for("multi_device", request)


@pytest.fixture
def multi_worker(request: pytest.FixtureRequest) -> Bench:
    """tf.distribute across worker processes against one process (benches/distributed.py)."""
    return bench_for("multi_worker", request)
