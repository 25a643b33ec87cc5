"""Steady-state throughput and latency: training and inference rounds of one cell, batch-1
latency, and the SVM's fit."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from accelbench.axes.models import MODELS
from accelbench.benches import other_backend, timed_work
from accelbench.benches.base import Bench
from accelbench.benches.step_trace import trace_later
from accelbench.grid.cells import SvmCell
from accelbench.measured import Latency, SvmFit, Timed
from accelbench.processes.protocol import Cellwork
from accelbench.work import measure

SVM_FIT_ROUNDS = 10  # fits take milliseconds; a comparison ranks the fast half of the rounds


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


class SvmBench(Bench):
    """RBF SVM fit time on an n-image subset, grayscale or binarized; accuracy gated."""

    cell: SvmCell

    def __call__(self, benchmark: Any) -> None:
        dataset = self.session.dataset
        if self.cell.subset > len(dataset.x_train):
            pytest.skip(
                f"{dataset.key} has only {len(dataset.x_train)} training images, "
                f"fewer than the subset of {self.cell.subset}"
            )
        if self.cell.pixels == "binarized":
            dataset = dataset.binarized()
        n = self.cell.subset
        x, y = dataset.x_train[:n].reshape(n, -1), dataset.y_train[:n]
        make = lambda: MODELS["svm"].build(dataset.input_shape, dataset.outputs, self.session.run.model_options)
        fitted = []
        self.time_rounds(
            benchmark,
            lambda svm: fitted.append(svm.fit(x, y)),
            n,
            "svm_fit",
            SVM_FIT_ROUNDS,
            warmup_rounds=0,
            setup=lambda: ((make(),), {}),
        )
        x_test = dataset.x_test.reshape(len(dataset.x_test), -1)
        predict_seconds = measure.seconds(lambda: fitted[-1].predict(x_test))
        self.record(
            SvmFit(
                subset=n,
                pixels=self.cell.pixels,
                predict_seconds=predict_seconds,
                support_vectors=int(fitted[-1].support_vectors_.shape[0]),
            )
        )
        if dataset.labelled:  # synthetic labels are noise: their accuracy means nothing
            accuracy = float((fitted[-1].predict(x_test) == dataset.y_test).mean())
            self.record(SvmFit(accuracy=accuracy))
            self.verdicts.against_baseline(self.name, self.gates["accuracy"], accuracy)
