"""The training, inference and latency cells: steady-state rounds of one cell's training or
inference work, and batch-1 latency percentiles."""

from __future__ import annotations

import itertools
import statistics
from typing import Any

from accelbench.benches import other_backend, timed_work
from accelbench.benches.base import Bench, Benchmark
from accelbench.benches.context import placed_as_asked
from accelbench.benches.step_trace import trace_later
from accelbench.grid.cells import (
    Cell,
    Grid,
    backend_cells,
    backend_missing,
    device_absent,
    device_unsupported,
    not_batch_trained,
    params,
)
from accelbench.judge.verdicts import TIMING
from accelbench.kinds.throughput.result import Latency
from accelbench.kinds.throughput.tables import (
    CURVE,
    OVER_FLOAT32,
    OVER_SMALLEST,
    OVERTAKES_CPU,
    PRECISION_SPEEDUP,
    SATURATION,
)
from accelbench.measured import AgainstTensorflow, Throughput, Timed, Utilization
from accelbench.processes.protocol import Cellwork
from accelbench.results.summary import Section
from accelbench.work import measure
from accelbench.work.builders import weights_device


class TrainBench(Bench):
    """Steady-state training throughput of one cell."""

    def __call__(self, benchmark: Any) -> None:
        trainer = timed_work.time_work(self, benchmark, "train")
        if trainer is not None:  # the speedups that follow take its best round
            for seconds_per_sample in Timed.of(self.extra_info).seconds_per_sample or ():
                trainer.saw(seconds_per_sample * trainer.samples_per_round)
        trace_later(self, "train")


class InferenceBench(Bench):
    """Inference throughput of one cell: full batches of test images, no training."""

    def __call__(self, benchmark: Any) -> None:
        timed_work.time_work(self, benchmark, "inference")
        trace_later(self, "inference")


class LatencyBench(InferenceBench):
    """Batch-1 latency: every prediction waits for its result, as a serving caller does."""

    warmup_rounds = 10

    def __call__(self, benchmark: Any) -> None:
        if self.on_other_backend():
            self.latency_in_backend_worker(benchmark)
        else:
            predictor = self.session.built.work("inference", self.cell)
            placed_as_asked(self, weights_device(predictor))
            median = self.time_rounds(
                benchmark,
                predictor.predict_one,
                1,
                "latency",
                self.preset.latency_rounds,
                warmup_rounds=self.warmup_rounds,
            )
            self.record(Latency(compile_seconds=predictor.compile_seconds))
            if median:
                self.record(Latency.from_percentiles(measure.percentiles(Timed.of(self.extra_info).seconds_per_sample)))
        trace_later(self, "inference")

    def latency_in_backend_worker(self, benchmark: Any) -> None:
        """Predictions on another backend, timed through pytest-benchmark as calls to its worker;
        the percentiles are the worker's own clock's, as a pipe's tenth of a millisecond is not
        small beside one prediction (pipe_seconds: what it added at the median)."""
        inside: list[float] = []
        with other_backend.built_in_worker(self, "inference", steps=1) as (_, call):
            median = self.time_rounds(
                benchmark,
                lambda: inside.append(call(Cellwork.ONE_PREDICTION)),
                1,
                "latency",
                self.preset.latency_rounds,
                warmup_rounds=self.warmup_rounds,
            )
        inside = inside[self.warmup_rounds :]
        if median:
            self.record(
                Latency.from_percentiles(
                    measure.percentiles(inside),
                    worker_latency_seconds=inside,
                    pipe_seconds=median - statistics.median(inside),
                )
            )


# Its cells: what grid the kind runs over, and why a cell is skipped.
def train_cells(grid: Grid) -> list:
    return params(grid, backend_cells(grid), (device_absent, device_unsupported, not_batch_trained, backend_missing))


def inference_cells(grid: Grid) -> list:
    return params(grid, backend_cells(grid), (device_absent, device_unsupported, backend_missing))


def latency_cells(grid: Grid) -> list:
    cells = [Cell(d, 1, m) for d, m in itertools.product(grid.devices, grid.models)]
    return params(grid, backend_cells(grid, cells), (device_absent, device_unsupported, backend_missing))


# A table of both phases: a column per phase and batch size.
TRAIN_AND_PREDICT = {"train_bench": "train {column}", "inference_bench": "predict {column}"}

# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 10
# This module's benchmark kinds, by fixture name (benches/catalog.py registers them): each
# with its cells, its Bench, what it judges, its summary tables and its report's plots.
KINDS: dict[str, Benchmark] = {
    "train_bench": Benchmark(
        train_cells,
        TrainBench,
        "test_train",
        (TIMING,),
        held_to_roofs=True,
        ab=True,
        file="test_training.py",
        file_doc="Training: steady-state throughput, time to accuracy, and the harness's own overhead.",
        about="Steady-state training throughput of one cell (kinds/throughput).",
        sections=(
            Section(
                "training throughput (samples/s), median round",
                {"train_bench": "{column}"},
                Throughput.keys.samples_per_s,
                "rate",
                (TIMING,),
            ),
            Section(
                "fit()'s own cost per call (beyond its steps) as a share of a round: steps per round are "
                "raised to keep it within 2%",
                {"train_bench": "{column}"},
                Throughput.keys.call_share,
                "percent",
            ),
        ),
        plots=("throughput", "roofline"),
    ),
    "inference_bench": Benchmark(
        inference_cells,
        InferenceBench,
        "test_inference",
        (TIMING,),
        held_to_roofs=True,
        ab=True,
        file="test_inference.py",
        file_doc="Inference: throughput per batch size and batch-1 latency percentiles.",
        about="Inference throughput of one cell (kinds/throughput).",
        sections=(
            Section(
                "inference throughput (samples/s), median round",
                {"inference_bench": "{column}"},
                Throughput.keys.samples_per_s,
                "rate",
                (TIMING,),
            ),
            Section(
                "FLOPs per sample (training: 3 x forward; unknown where a layer's FLOPs are not counted)",
                TRAIN_AND_PREDICT,
                Throughput.keys.flops_per_sample,
                "flops",
            ),
            Section(
                "achieved FLOP/s, median round",
                TRAIN_AND_PREDICT,
                Throughput.keys.achieved_flops,
                "flop_rate",
            ),
            Section(
                "MFU, model FLOPs utilization: the convention's FLOPs per sample (every tap of a convolution, "
                "padding included) x samples/s over the run's measured matmul roof of the cell's device and dtype "
                "(may pass 100% where padded taps are not computed)",
                TRAIN_AND_PREDICT,
                Utilization.keys.mfu,
                "percent",
            ),
            Section(
                "HFU, hardware FLOPs utilization: the FLOPs the kernels execute (padded taps left out) x samples/s "
                "over the same roof; what the roof bounds (above 105%: a measurement error, failed)",
                TRAIN_AND_PREDICT,
                Utilization.keys.hfu,
                "percent",
            ),
            Section(
                "arithmetic intensity: FLOPs per byte a sample moves (estimated per layer); below the "
                "device's ridge point a cell is bandwidth-bound",
                TRAIN_AND_PREDICT,
                Utilization.keys.arithmetic_intensity,
                "plain",
            ),
            Section(
                "time per sample over the process backend's, round for round with the same cell [95% interval] "
                "(above 1: slower)",
                TRAIN_AND_PREDICT,
                AgainstTensorflow.keys.time_per_sample_over_tensorflow,
                "plain",
                interval=AgainstTensorflow.keys.time_per_sample_over_tensorflow_ci95,
            ),
            Section(
                "throughput over float32, same cell, median rounds (marked where the CPU emulates the format, "
                "or is not known to compute in it natively)",
                {PRECISION_SPEEDUP: "{column}"},
                OVER_FLOAT32,
                "times",
            ),
            Section(
                "saturation: the batch size from which throughput grows less than 5% per doubling",
                {CURVE: "{column}"},
                SATURATION,
                "plain",
            ),
            Section(
                "throughput over the smallest batch's, median rounds of cells timed apart; "
                "not the speedup (best rounds), which has a table of its own",
                {CURVE: "{column}"},
                OVER_SMALLEST,
                "times",
            ),
            Section(
                "where a device overtakes the cpu (throughput ratio crosses 1)",
                {CURVE: "{column}"},
                OVERTAKES_CPU,
                "plain",
            ),
        ),
    ),
    "latency_bench": Benchmark(
        latency_cells,
        LatencyBench,
        "test_latency",
        (TIMING,),
        file="test_inference.py",
        about="Batch-1 latency of one cell (kinds/throughput).",
        sections=(
            Section(
                "batch-1 latency, median",
                {"latency_bench": "{column}"},
                Latency.keys.latency_p50_ms,
                "milliseconds",
                (TIMING,),
            ),
        ),
    ),
}
