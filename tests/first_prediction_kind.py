"""A user's own benchmark kind, declared through the public API as docs/extending.md shows: the
time to a first prediction after loading a saved model (a server's cold start). The tests copy
it into a scratch project and name it in --modules."""

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

import accelbench
from accelbench.benches.base import Bench, Benchmark
from accelbench.benches.timed_work import time_work
from accelbench.grid.cells import Cell, backend_cells, params
from accelbench.measured import Part, Timed
from accelbench.results.summary import Section


@dataclass
class LoadAndPredict:
    """One round: load the saved model and predict one batch, as a freshly started server does."""

    path: str
    batch: object
    steps: int = 1
    samples_per_round: int = 1  # a round is one cold start
    compile_seconds: float = 0.0

    def run_round(self):
        import keras

        return keras.saving.load_model(self.path).predict_on_batch(self.batch)

    def flops_per_sample(self):
        return None  # loading is not counted in FLOPs

    def measured(self):
        """A number of its own, wherever the work ran (here, or a backend's worker)."""
        return {"saved_model_bytes": Path(self.path).stat().st_size}


def load_and_predict(site, steps):
    """Built the same in the pytest process and in an A/B or backend worker."""
    path = Path(tempfile.mkdtemp(prefix="first-prediction-")) / "model.keras"
    site.keras_model().save(path)
    work = LoadAndPredict(str(path), site.dataset.x_test[: site.batch_size])
    work.run_round()  # the first load imports what later ones reuse
    return work


@dataclass(frozen=True)
class FirstPrediction(Part):
    first_prediction_ms: float | None = None
    saved_model_bytes: int | None = None


class FirstPredictionBench(Bench):
    def __call__(self, benchmark):
        time_work(self, benchmark, "first_prediction")
        rounds = Timed.of(self.extra_info).seconds_per_sample
        if rounds:
            self.record(FirstPrediction(first_prediction_ms=statistics.median(rounds) * 1e3))


accelbench.register_work("first_prediction", load_and_predict)
accelbench.register_benchmark(
    "first_prediction",
    Benchmark(
        # over the run's devices and models, and (backend_cells) its backends and precisions
        lambda grid: params(grid, backend_cells(grid, [Cell(d, 1, m) for d in grid.devices for m in grid.models]), ()),
        FirstPredictionBench,
        "test_first_prediction",
        ab=True,
        file="test_first_prediction.py",
        about="Time to a first prediction after loading the saved model.",
        sections=(
            Section(
                "time to a first prediction after load, median round",
                {"first_prediction": "{column}"},
                FirstPrediction.keys.first_prediction_ms,
                "milliseconds",
            ),
        ),
    ),
)
