"""What each benchmark fixture does with its cell: time the real work through pytest-benchmark,
put context into extra_info, and hand every judged number to the run's verdicts."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import statistics
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from accelbench.axes.backends import BACKENDS, FLOAT32_IEEE, PROCESS_BACKEND
from accelbench.axes.data import NUM_CLASSES
from accelbench.axes.devices import is_accelerator, kind_of
from accelbench.axes.models import MODELS
from accelbench.axes.precisions import PRECISIONS, REFERENCE_PRECISION
from accelbench.grid import cells
from accelbench.grid.cells import Cell, Grid, ModelOn, Pair, Spread, SvmCell
from accelbench.judge import analysis, comparison, fingerprint, projection
from accelbench.judge.verdicts import (
    AB_COMPILE,
    AB_COMPILE_RULE,
    AB_PEAK,
    AB_TIME,
    LEAKS,
    MEMRAY_REASON,
    PEAK_CAP,
    PRECISION_ACCURACY,
    PRECISION_ACCURACY_RULE,
    TIMING,
    RelativeGrowth,
)
from accelbench.processes import distributed
from accelbench.processes.protocol import Cellwork
from accelbench.processes.workers import WorkerFailed
from accelbench.registry import Registry
from accelbench.results import costs
from accelbench.run.session import Session
from accelbench.work import growth, measure, memory, traces
from accelbench.work.training import HandLoop

TRACED_KINDS = {"train": "train", "predict": "inference"}  # a trace's phase -> the kind of cell work it traces
BACKEND_ACCURACY_GAP = "accuracy_gap_to_tensorflow"  # a backend's recipe accuracy minus tensorflow's
# A memory cell measured in a backend's worker: pytest-memray's limit_memory cap cannot reach
# that process, so its peak is held to the same cap here.
WITHIN_CAP = RelativeGrowth(0.0)
# pytest-benchmark's unpaired warm-up rounds of a cell on another backend (its worker's first
# round after the build; the tensorflow partner is already warm)
BACKEND_WARMUP_ROUNDS = 1

SVM_FIT_ROUNDS = 10  # fits take milliseconds; a comparison ranks the fast half of the rounds
# limit_leaks: what one allocation site may still hold after the repeated predictions.
LEAK_LIMIT_PER_LOCATION = 2**20
MEMORY = ("peak_memory_bytes", PEAK_CAP)
AB_METRICS = (AB_TIME, AB_PEAK, AB_COMPILE)  # what an A/B run judges of a timed cell
TRAIN_STEPS_MEASURED = 20  # a training step's host peak is the worst of this many (see TrainMemoryBench)


@dataclass
class Bench:
    session: Session
    cell: Any
    name: str  # the test's name with its id: what results, baselines and verdicts are keyed by
    extra_info: dict[str, Any] = field(default_factory=dict)  # goes into the benchmark JSON

    @property
    def preset(self):
        return self.session.run.preset

    @property
    def baseline_key(self) -> str:
        """What the cell's baselines are stored under: its name, but a cell named with its backend
        and precision (a run of several) that runs the default ones shares the plain cell's."""
        cell = self.cell
        if getattr(cell, "backend", PROCESS_BACKEND) == PROCESS_BACKEND and \
                getattr(cell, "precision", REFERENCE_PRECISION) == REFERENCE_PRECISION and any(getattr(cell, "tagged", ())):
            return self.name.replace(f"[{cell.id}]", f"[{dataclasses.replace(cell, tagged=(False, False)).id}]")
        return self.name

    @property
    def verdicts(self):
        return self.session.verdicts

    @property
    def gates(self):
        return self.session.gates

    def placement(self, device: str | None = None):
        return self.session.placement(device or self.cell.device)

    def say(self, text: str) -> None:
        """The run's one-line status: what this cell is measuring now."""
        self.session.progress(f"{self.name}: {text}")

    def setup(self, node: pytest.Item) -> None:
        """Work done when the fixture is made, before the test body (which pytest-memray may track)."""

    def info(self, **values: Any) -> None:
        """Plain floats and strings only: the JSON must not depend on numpy's types."""
        self.extra_info.update(
            {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
             for k, v in values.items() if v is not None})

    def time_rounds(self, benchmark: Any, target: Callable[[], object], samples_per_round: int, work: str,
                    rounds: int, warmup_rounds: int = 1, setup: Callable | None = None,
                    teardown: Callable | None = None) -> float | None:
        """Time rounds of fixed work through pytest-benchmark and judge them against a compared
        run, per sample; returns the median round's seconds (None under --benchmark-disable)."""
        benchmark.pedantic(target, setup=setup, teardown=teardown, rounds=rounds, warmup_rounds=warmup_rounds,
                           iterations=1)
        self.info(work=work, cell=self.cell.id, device=self.placement().description)
        stats = getattr(benchmark, "stats", None)
        if not stats:  # --benchmark-disable: nothing was timed
            return None
        per_sample = [seconds / samples_per_round for seconds in stats.stats.data]
        self.extra_info[TIMING] = per_sample
        self.verdicts.timing(self.name, per_sample)
        return stats.stats.median

    def trace(self, phase: str, build_step: Callable[[], Callable[[], object]]) -> None:
        """With --trace-dir: profile a few steady-state steps of this cell's model once every
        cell has run. A trace left the next cell's timed rounds 1.4-1.75x slower when taken
        in place, so no timed round of the run follows one. Estimators have no TensorFlow
        steps to trace."""
        directory = self.session.run.trace_dir
        if directory is None or MODELS[self.cell.model].framework == "sklearn":
            return
        if self.on_other_backend():  # that backend's profiler, in its worker
            spec = self.session.cell_spec(TRACED_KINDS[phase], self.cell)
            take = lambda: self.session.backend_call(  # noqa: E731
                self.cell.backend, Cellwork.TRACE_STEPS, spec=spec, directory=str(directory), cell_name=self.name)
        else:
            take = lambda: traces.trace_steps(directory, self.name, phase, build_step(), self.say)  # noqa: E731
        self.session.deferred.append((f"step trace of {self.name}", lambda: self.info(**take())))

    def against_b(self, kind: str, steps: int) -> None:
        """In an A/B run: this cell's rounds in worker A and worker B, interleaved, judged B
        against A. A worker that crashed or hung fails the cell with one line; the run goes on."""
        ab_run = self.session.ab_run
        if ab_run is None:
            return
        if self.session.run.memray_tracking:
            self.verdicts.skipped(self.name, AB_METRICS, MEMRAY_REASON)
            return
        plan = ab_run.plan(*self.preset.ab_pairs)
        try:
            rounds = ab_run.compare(kind, self.cell, plan, self.say, steps)  # the steps this process calibrated
        except WorkerFailed as error:
            self.verdicts.failed(self.name, AB_TIME, f"{self.name}: A/B: {error}")
            return
        finally:
            self.info(worker_process_ids=ab_run.workers.pids)  # a test checks none outlives the run
        found, environment_b = rounds.verdict, ab_run.setup.b.describe()
        a_round, b_round = statistics.median(rounds.a_seconds), statistics.median(rounds.b_seconds)
        self.verdicts.ab(self.name, AB_TIME, found, a_round, b_round, plan.min_effect, environment_b)
        self.verdicts.ab_single(self.name, AB_PEAK, rounds.a_peak, rounds.b_peak, self.gates.peak_memory.rule)
        try:
            a_compile, b_compile = self.compile_seconds(ab_run, kind, steps, rounds)
        except WorkerFailed as error:
            self.verdicts.failed(self.name, AB_COMPILE, f"{self.name}: A/B compile measured again: {error}")
            a_compile, b_compile = rounds.a_build["compile_seconds"], rounds.b_build["compile_seconds"]
        else:
            self.verdicts.ab_single(self.name, AB_COMPILE, a_compile, b_compile, AB_COMPILE_RULE)
        self.info(ab_environment_b=environment_b, ab_ratio=found.ratio, ab_ci95=[found.low, found.high],
                  ab_p_value=found.p_value, ab_pairs=found.pairs, ab_verdict=found.outcome,
                  ab_steps_per_round=steps,
                  ab_a_round_seconds=rounds.a_seconds, ab_b_round_seconds=rounds.b_seconds,
                  ab_a_compile_seconds=a_compile, ab_b_compile_seconds=b_compile,
                  ab_a_peak_memory_bytes=rounds.a_peak, ab_b_peak_memory_bytes=rounds.b_peak)

    def compile_seconds(self, ab_run: Any, kind: str, steps: int, rounds: Any) -> tuple[float, float]:
        """A's and B's compile seconds, from the builds made at once; where B looked slower by the
        rule, each side's fastest of that and one more build made alone (a fail must repeat: on
        a loaded machine two compiles at once slowed one side 2.2x in an A/A run)."""
        a_compile, b_compile = rounds.a_build["compile_seconds"], rounds.b_build["compile_seconds"]
        if AB_COMPILE_RULE.holds(b_compile, a_compile):
            return a_compile, b_compile
        self.say("A/B: B compiled slower: measuring both compiles again, one at a time")
        again = ab_run.compile_again(kind, self.cell, steps)
        self.info(ab_compile_seconds_at_once=[a_compile, b_compile], ab_compile_seconds_alone=[again["A"], again["B"]])
        return min(a_compile, again["A"]), min(b_compile, again["B"])

    def time_steady_state(self, benchmark: Any, work: Any, work_kind: str, flops_per_sample: float | None) -> None:
        """Rounds of a trainer or predictor: samples/s from the median round. No warm-up round:
        the work comes warm from its build (calibrating, or a round, ran it)."""
        median = self.time_rounds(benchmark, work.run_round, work.samples_per_round, work_kind, self.preset.rounds,
                                  warmup_rounds=0)
        self.info(batch_size=self.cell.batch_size, steps_per_round=work.steps, compile_seconds=work.compile_seconds)
        if not median:
            return
        samples_per_s = work.samples_per_round / median
        self.info(samples_per_s=samples_per_s)
        if flops_per_sample:
            self.info(flops_per_sample=flops_per_sample, achieved_flops=flops_per_sample * samples_per_s)

    def process_backend_info(self) -> None:
        """The pytest process's own backend, recorded as a worker's is."""
        backend = BACKENDS[PROCESS_BACKEND]
        self.info(backend=backend.name, backend_versions=fingerprint.versions(backend.packages),
                  compiled_with=backend.compiles)
        self.precision_info()

    def precision_info(self) -> None:
        """The cell's dtype policy, and on a CPU whether it computes natively in it, and why not."""
        precision = PRECISIONS[self.cell.precision]
        arithmetic, note = None, None
        if not is_accelerator(kind_of(self.cell.device)):
            arithmetic, note = precision.cpu_arithmetic(fingerprint.cpu_flags(), os.environ,
                                                        getattr(self.cell, "backend", PROCESS_BACKEND))
        self.info(precision=precision.name, precision_arithmetic=arithmetic, precision_note=note,
                  float32_arithmetic=FLOAT32_IEEE)

    def on_other_backend(self) -> bool:
        return getattr(self.cell, "backend", PROCESS_BACKEND) != PROCESS_BACKEND

    @contextlib.contextmanager
    def built_in_backend_worker(self, kind: str, steps: int | None = None) -> Iterator[tuple[dict, Callable]]:
        """A cell on another Keras backend, built and warmed up in that backend's worker
        (KERAS_BACKEND set; steps None: calibrated there): what it built, and a call of a
        cellwork function on it. A worker that failed fails the cell in one line; the cell's
        work is dropped afterwards."""
        backend = BACKENDS[self.cell.backend]
        environment, pool = backend.environment(), self.session.backend_workers
        spec = self.session.cell_spec(kind, self.cell)
        key = spec["key"]

        def call(function: Cellwork, **kwargs: Any) -> Any:
            return pool.call(environment, function.target, self.session.run.worker_deadline_s, **kwargs)

        try:
            self.say(f"building in the {backend.name} worker")
            built = call(Cellwork.PREPARE, spec=spec, steps=steps)
            versions = call(Cellwork.DESCRIBE)["versions"]
            self.info(backend=backend.name, compiled_with=backend.compiles, jit_compile=built["jit_compile"],
                      backend_versions={name: versions[name] for name in backend.packages if name in versions},
                      batch_size=self.cell.batch_size, steps_per_round=built["steps"],
                      compile_seconds=built["compile_seconds"], device=built["device"], worker_process_ids=pool.pids)
            self.precision_info()
            yield built, lambda function: call(function, key=key)
        except WorkerFailed as error:
            pytest.fail(f"{self.name}: {error}", pytrace=False)
        finally:
            if pool.get(environment).process is not None:
                with contextlib.suppress(WorkerFailed):
                    call(Cellwork.FORGET, key=key)

    def time_in_backend_worker(self, benchmark: Any, kind: str) -> None:
        """Rounds of a cell on another backend, timed through pytest-benchmark as calls to its
        worker, each paired with a round of the same cell on tensorflow (round_for_round).
        The worker's own clock is kept beside pytest-benchmark's: the difference is the pipe's cost."""
        inside: list[float] = []
        with self.built_in_backend_worker(kind) as (built, call):
            reference = self.process_backend_reference(kind)
            partner = self.round_for_round(reference) if reference else None
            median = self.time_rounds(benchmark, lambda: inside.append(call(Cellwork.ONE_ROUND)),
                                      built["samples_per_round"], kind, self.preset.rounds, BACKEND_WARMUP_ROUNDS,
                                      setup=partner.setup if partner else None,
                                      teardown=partner.teardown if partner else None)
        inside = inside[BACKEND_WARMUP_ROUNDS:BACKEND_WARMUP_ROUNDS + self.preset.rounds]
        self.info(worker_round_seconds=inside)
        if median:
            samples_per_s = built["samples_per_round"] / median
            self.info(samples_per_s=samples_per_s, pipe_seconds=median - statistics.median(inside))
            if built["flops_per_sample"]:
                self.info(flops_per_sample=built["flops_per_sample"],
                          achieved_flops=built["flops_per_sample"] * samples_per_s)
        if partner and len(partner.seconds) == len(inside) > 1:
            self.against_process_backend([s / reference.samples_per_round for s in partner.seconds],
                                         [s / built["samples_per_round"] for s in inside])
            self.info(tensorflow_round_seconds=partner.seconds, tensorflow_steps_per_round=reference.steps)

    def process_backend_reference(self, kind: str) -> Any:
        """The same cell's work on tensorflow, in this process (built once, as its own cell timed
        it); None under pytest-memray, which would slow only this process's rounds."""
        if self.session.run.memray_tracking:
            self.info(time_per_sample_over_tensorflow=f"not measured: {MEMRAY_REASON}")
            return None
        self.say(f"timed round for round with {PROCESS_BACKEND}'s work of the same cell, in this process")
        return self.session.reference_work(kind, self.cell)

    def round_for_round(self, reference: Any) -> measure.Partner:
        """The reference's rounds around this backend's timed rounds, in seeded A B / B A order,
        as an A/B run interleaves A and B."""
        orders = comparison.order(self.preset.rounds, zlib.crc32(self.name.encode()))
        return measure.Partner(lambda: measure.seconds(reference.run_round), orders, BACKEND_WARMUP_ROUNDS)

    def against_process_backend(self, tensorflow_per_sample: list[float], here_per_sample: list[float]) -> None:
        """This backend's time per sample over tensorflow's, the median of the pairs' ratios with
        its 95% interval. Per sample: each backend runs its own calibrated steps a round, the
        round length the same. Reported, not gated: backends are compared, not regressed."""
        ratios = comparison.ratios(tensorflow_per_sample, here_per_sample)
        self.info(time_per_sample_over_tensorflow=statistics.median(ratios),
                  time_per_sample_over_tensorflow_ci95=analysis.median_interval_or_none(ratios),  # None: too few pairs
                  time_per_sample_over_tensorflow_pairs=len(ratios))


class TrainBench(Bench):
    """Steady-state training throughput of one cell."""

    def __call__(self, benchmark: Any) -> None:
        if self.on_other_backend():
            self.time_in_backend_worker(benchmark, "train")
        else:
            trainer = self.session.trainer(self.cell)
            self.process_backend_info()
            self.time_steady_state(benchmark, trainer, "train", trainer.flops_per_sample())
            for seconds_per_sample in self.extra_info.get(TIMING, ()):  # the speedups that follow use them
                trainer.saw(seconds_per_sample * trainer.samples_per_round)
            self.info(jit_compile=bool(trainer.model.jit_compile))
            self.against_b("train", trainer.steps)
        self.trace("train", lambda: self.session.one_step(self.cell).run)


class InferenceBench(Bench):
    """Inference throughput of one cell: full batches of test images, no training."""

    def build(self):
        return self.session.predictor(self.cell)

    def __call__(self, benchmark: Any) -> None:
        if self.on_other_backend():
            self.time_in_backend_worker(benchmark, "inference")
        else:
            predictor = self.build()
            self.process_backend_info()
            self.info(jit_compile=bool(getattr(getattr(predictor, "model", None), "jit_compile", False)))
            self.time_steady_state(benchmark, predictor, "inference", predictor.flops_per_sample())
            self.against_b("inference", predictor.steps)
        self.trace("predict", lambda: self.session.one_batch(self.cell).predict)


class LatencyBench(InferenceBench):
    """Batch-1 latency: every prediction waits for its result, as a serving caller does."""

    warmup_rounds = 10

    def __call__(self, benchmark: Any) -> None:
        if self.on_other_backend():
            self.latency_in_backend_worker(benchmark)
        else:
            predictor = self.build()
            median = self.time_rounds(benchmark, predictor.predict_one, 1, "latency", self.preset.latency_rounds,
                                      warmup_rounds=self.warmup_rounds)
            self.info(compile_seconds=predictor.compile_seconds)
            if median:
                percentiles = measure.percentiles(self.extra_info[TIMING])
                self.info(**{f"latency_{k}_ms": v * 1e3 for k, v in percentiles.items()})
        self.trace("predict", lambda: self.session.one_batch(self.cell).predict)

    def latency_in_backend_worker(self, benchmark: Any) -> None:
        """Predictions on another backend, timed through pytest-benchmark as calls to its worker;
        the percentiles are the worker's own clock's, as a pipe's tenth of a millisecond is not
        small beside one prediction (pipe_seconds: what it added at the median)."""
        inside: list[float] = []
        with self.built_in_backend_worker("inference", steps=1) as (_, call):
            median = self.time_rounds(benchmark, lambda: inside.append(call(Cellwork.ONE_PREDICTION)), 1, "latency",
                                      self.preset.latency_rounds, warmup_rounds=self.warmup_rounds)
        inside = inside[self.warmup_rounds:]
        if median:
            self.info(worker_latency_seconds=inside, pipe_seconds=median - statistics.median(inside),
                      **{f"latency_{k}_ms": v * 1e3 for k, v in measure.percentiles(inside).items()})


class AccuracyBench(Bench):
    """Time to accuracy: the published recipe from a fixed seed; final accuracy is gated."""

    def __call__(self, benchmark: Any) -> None:
        try:
            if self.cell.backend != PROCESS_BACKEND:  # its worker starts outside the clock
                versions = self.session.backend_call(self.cell.backend, Cellwork.DESCRIBE)["versions"]
                self.info(backend_versions={name: versions[name] for name in BACKENDS[self.cell.backend].packages
                                            if name in versions})
            run = benchmark.pedantic(self.session.accuracy_run, args=(self.cell,), rounds=1, iterations=1)
        except WorkerFailed as error:
            pytest.fail(f"{self.name}: {error}", pytrace=False)
        self.info(backend=self.cell.backend, precision=self.cell.precision)
        self.info(device=self.placement().description, accuracy=run.accuracy,
                  epochs=run.epochs, train_seconds=run.train_seconds, target_accuracy=run.target,
                  epochs_to_target=run.epochs_to_target, seconds_to_target=run.seconds_to_target,
                  published_accuracy=MODELS[self.cell.model].published_accuracy.get(
                      self.session.dataset.name),
                  accuracy_per_epoch=run.history, cumulative_train_seconds=run.clock, loss_per_epoch=run.losses)
        self.verdicts.against_baseline(self.name, self.gates.accuracy, run.accuracy, key=self.baseline_key)
        if self.cell.precision != REFERENCE_PRECISION:
            self.against_float32(run.accuracy)
        if self.cell.backend != PROCESS_BACKEND:
            self.accuracy_against_process_backend(run)

    def accuracy_against_process_backend(self, run: Any) -> None:
        """Parity across backends, as across devices: the recipe's accuracy within the accuracy
        tolerance of tensorflow's from the same seed (gated), and the final training losses'
        shared significant digits (reported: other kernels, initialisers and shuffles make bit
        equality unrealistic)."""
        self.say(f"training the {PROCESS_BACKEND} twin this backend is held to")
        reference = self.session.accuracy_run(dataclasses.replace(self.cell, backend=PROCESS_BACKEND))
        gap = run.accuracy - reference.accuracy
        self.info(tensorflow_accuracy=reference.accuracy, accuracy_gap_to_tensorflow=gap,
                  loss_digits_shared_with_tensorflow=analysis.matching_digits(reference.losses[-1], run.losses[-1]))
        self.verdicts.within_gap(self.name, BACKEND_ACCURACY_GAP, gap, self.session.run.accuracy_tolerance)

    def against_float32(self, accuracy: float) -> None:
        """MLPerf's rule for a lower precision: at least 99% of float32's accuracy on the same
        cell (same seed, data, batch and epochs), trained here if no cell of this run has yet."""
        self.say("training the float32 twin this precision is held to")
        reference = self.session.accuracy_run(dataclasses.replace(self.cell, precision=REFERENCE_PRECISION))
        self.info(float32_accuracy=reference.accuracy, share_of_float32=accuracy / reference.accuracy)
        self.verdicts.against_reference(self.name, PRECISION_ACCURACY, accuracy, reference.accuracy,
                                        PRECISION_ACCURACY_RULE, REFERENCE_PRECISION)


class SvmBench(Bench):
    """RBF SVM fit time on an n-image subset, grayscale or binarized; accuracy gated."""

    cell: SvmCell

    def __call__(self, benchmark: Any) -> None:
        dataset = self.session.dataset
        if self.cell.subset > len(dataset.x_train):
            pytest.skip(f"{dataset.key} has only {len(dataset.x_train)} training images, "
                        f"fewer than the subset of {self.cell.subset}")
        if self.cell.pixels == "binarized":
            dataset = dataset.binarized()
        n = self.cell.subset
        x, y = dataset.x_train[:n].reshape(n, -1), dataset.y_train[:n]
        make = lambda: MODELS["svm"].build(dataset.input_shape, NUM_CLASSES, self.session.run.model_options)
        fitted = []
        self.time_rounds(benchmark, lambda svm: fitted.append(svm.fit(x, y)), n, "svm_fit", SVM_FIT_ROUNDS,
                         warmup_rounds=0, setup=lambda: ((make(),), {}))
        x_test = dataset.x_test.reshape(len(dataset.x_test), -1)
        predict_seconds = measure.seconds(lambda: fitted[-1].predict(x_test))
        self.info(subset=n, pixels=self.cell.pixels, predict_seconds=predict_seconds,
                  support_vectors=int(fitted[-1].support_vectors_.shape[0]))
        if dataset.labelled:  # synthetic labels are noise: their accuracy means nothing
            accuracy = float((fitted[-1].predict(x_test) == dataset.y_test).mean())
            self.info(accuracy=accuracy)
            self.verdicts.against_baseline(self.name, self.gates.accuracy, accuracy)


class SpeedupBench(Bench):
    """Throughput of one cell over another: the best round each trainer showed in the run
    (these interleaved pairs, and the rounds test_train timed before them), with the
    interleaved pairs as the evidence a shortfall must be significant on.

    Keras's fit() has a slow mode that sticks for seconds (see docs/measured.md, Harness
    efficiency); once it held a trainer through all 6 pairs of a cell, and the best-of-pairs
    speedup read 1.39 where 2.79 was recorded. A trainer's best round over the whole run is
    its capability; noise and the slow mode only take from it."""

    cell: Pair

    def throughputs(self) -> tuple[list[float], list[float]]:
        reference, candidate = (self.session.trainer(c) for c in self.cell.cells)
        return measure.interleaved(reference.throughput, candidate.throughput,
                                   self.preset.interleaved_pairs)

    def __call__(self, benchmark: Any) -> None:
        reference, candidate = benchmark.pedantic(self.throughputs, rounds=1, iterations=1)
        fastest = [self.session.trainer(c).fastest_samples_per_s for c in self.cell.cells]
        speedup = fastest[1] / fastest[0]
        ratios = measure.pair_ratios(reference, candidate)
        self.info(speedup=speedup, interleaved_speedup=measure.best_ratio(reference, candidate),
                  reference=self.cell.reference.id, candidate=self.cell.candidate.id,
                  reference_samples_per_s=fastest[0], candidate_samples_per_s=fastest[1],
                  pair_ratios=[round(r, 4) for r in ratios])
        self.verdicts.against_baseline(self.name, self.gates.speedup, speedup, ratios)


class OverheadBench(Bench):
    """The suite's fit() throughput over a hand-written tf.function loop on the same data:
    the median of interleaved pair ratios with its 95% interval, reported and not gated
    (fit() has a slow mode of its own on small VMs; see docs/measured.md, Harness efficiency)."""

    cell: Cell

    def throughputs(self) -> tuple[list[float], list[float]]:
        trainer = self.session.trainer(self.cell)
        hand = HandLoop.like(trainer)
        return measure.interleaved(hand.throughput, trainer.throughput, self.preset.interleaved_pairs)

    def __call__(self, benchmark: Any) -> None:
        hand, suite = benchmark.pedantic(self.throughputs, rounds=1, iterations=1)
        ratios = measure.pair_ratios(hand, suite)
        self.info(harness_efficiency=statistics.median(ratios), harness_efficiency_ci95=analysis.median_interval_or_none(ratios),
                  best_round_ratio=measure.best_ratio(hand, suite), suite_samples_per_s=max(suite),
                  hand_loop_samples_per_s=max(hand), pair_ratios=[round(r, 4) for r in ratios])


class ProcessBench(Bench):
    """A cell whose work runs in fresh processes (distributed.py owns them): TensorFlow fixes
    its threads, devices and cluster when it starts."""

    def job(self, mode: str, replicas: int = 1, **fields: Any) -> distributed.Job:
        run = self.session.run
        return distributed.Job(
            mode=mode, model=self.cell.model, dataset=run.dataset, data_dir=str(run.data_dir) if run.data_dir else None,
            per_replica_batch=self.cell.batch_size, replicas=replicas, max_train_samples=self.preset.max_train_samples,
            seed=run.model_options.seed, deep_layers=run.model_options.deep_layers, device=kind_of(self.cell.device),
            **{"threads": run.intra_op_threads, **fields})

    def run_job(self, job: distributed.Job) -> distributed.Result:
        return distributed.run_job(job, PROCESS_TIMEOUT_S, self.watch)

    def watch(self, pids: list[int]) -> None:
        self.extra_info.setdefault("process_ids", []).extend(pids)  # a test checks none is left


THREADS = {"A": 1, "B": 0}  # a threads cell's sides: one intra-op thread, and TensorFlow's default (all)
PROCESS_TIMEOUT_S = 90.0  # per job: TensorFlow's start in each process, a gRPC cluster, a few rounds


class ThreadsBench(ProcessBench):
    """The slides' 1 vCPU against 8: the cell's model trained with 1 intra-op thread and with
    TensorFlow's default (all cores), each side in fresh processes, interleaved A B B A; each
    process times its own rounds."""

    cell: Cell

    def throughputs(self) -> tuple[list[float], list[float]]:
        one, every = [], []
        for threads in (THREADS[side] for pair in comparison.order(self.preset.thread_processes) for side in pair):
            self.say(f"training with {threads or 'all'} intra-op thread(s)")
            result = self.run_job(self.job("single", check_steps=0, threads=threads))
            (one if threads == 1 else every).append(result.fastest_samples_per_s)
        return one, every

    def __call__(self, benchmark: Any) -> None:
        one, every = benchmark.pedantic(self.throughputs, rounds=1, iterations=1)
        speedup = measure.best_ratio(one, every)
        cores = os.cpu_count() or 1
        self.info(device=self.placement().description, batch_size=self.cell.batch_size, cores=cores,
                  one_thread_samples_per_s=max(one), all_threads_samples_per_s=max(every),
                  all_threads_speedup=speedup, parallel_efficiency=speedup / cores,
                  pair_ratios=[round(r, 4) for r in measure.pair_ratios(one, every)])


class ParityBench(Bench):
    """Accuracy on a device against CPU, both trained from the same seed."""

    cell: Pair

    def __call__(self, benchmark: Any) -> None:
        runs = benchmark.pedantic(lambda: [self.session.accuracy_run(c) for c in self.cell.cells],
                                  rounds=1, iterations=1)
        reference, candidate = (run.accuracy for run in runs)
        reference_loss, candidate_loss = (run.losses[-1] for run in runs)
        self.info(reference_accuracy=reference, candidate_accuracy=candidate, accuracy_gap=candidate - reference,
                  reference_loss=reference_loss, candidate_loss=candidate_loss,
                  accuracy_matching_digits=analysis.matching_digits(reference, candidate),
                  loss_matching_digits=analysis.matching_digits(reference_loss, candidate_loss))
        self.verdicts.within_gap(self.name, "accuracy_gap", candidate - reference,
                                 self.session.run.accuracy_tolerance)
        self.verdicts.matching_digits(self.name, "loss", reference_loss, candidate_loss, self.session.run.parity_digits)


def skip_without_memray(node: pytest.Item) -> None:
    """Memory and leak cells are measured by pytest-memray, through the markers they add."""
    if not node.config.pluginmanager.has_plugin("memray_manager"):
        pytest.skip("pytest-memray is not active (was it disabled with -p no:memray?): "
                    "it measures host memory and leaks")


class StepMemoryBench(Bench):
    """Host and device peak memory of one step, built and warmed up before the test body.

    pytest-memray tracks the body, because setup gives the cell a limit_memory cap; the
    plugin hands the host peak it measured to host_peak_measured. The device peak comes from
    TensorFlow's allocator on accelerators.
    """

    cell: Cell
    cap: int = 0
    estimated: int = 0
    steps_measured: int = 1  # the peak is the high-water mark over this many steps

    def build(self) -> Any:
        """(work, estimated bytes): the step to measure, and what the analytic estimate says it needs."""
        raise NotImplementedError

    @property
    def tracked_here(self) -> bool:
        """pytest-memray measures this cell in the pytest process (its body); a cell on another
        backend is measured by memray inside that backend's worker."""
        return not self.on_other_backend()

    def setup(self, node: pytest.Item) -> None:
        if not self.tracked_here:
            return
        skip_without_memray(node)
        self.work, self.estimated = self.build()
        headroom = MODELS[self.cell.model].memory_headroom
        self.cap = memory.host_cap(headroom, self.estimated, self.session.run.memory_budget)
        node.add_marker(pytest.mark.limit_memory(f"{self.cap} B"))

    def steps(self) -> None:
        for _ in range(self.steps_measured):
            self.work()

    def __call__(self) -> None:
        if not self.tracked_here:
            self.measure_in_backend_worker()
            return
        device_peak = memory.device_peak(self.placement(), self.steps)  # the steps measured
        self.info(device=self.placement().description, batch_size=self.cell.batch_size, steps_measured=self.steps_measured,
                  estimated_bytes=self.estimated, host_memory_cap_bytes=self.cap)
        if device_peak is not None:
            self.peak_against_baseline(self.gates.device_peak_memory, device_peak)

    def host_peak_measured(self, peak: int) -> None:
        self.peak_against_baseline(self.gates.peak_memory, peak)

    def peak_against_baseline(self, gate: Any, peak: int) -> None:
        """A peak judged against its baseline; beside it, the smallest growth its gate detects
        (from the spread recorded with the baseline), which the summary shows."""
        self.info(**{gate.metric: peak})
        verdict = self.verdicts.against_baseline(self.name, gate, peak, key=self.baseline_key)
        growth = dict(verdict.statistic).get("smallest_detectable_growth")
        if growth is not None:
            self.info(**{f"{gate.metric}_detectable_growth": growth})

    def measure_in_backend_worker(self) -> None:
        """The same steps, built and measured in the backend's worker (cellwork.step_memory),
        judged as here: host peak against its baseline and the estimate's cap, device peak
        (the backend allocator's) against its baseline."""
        backend = self.cell.backend
        self.say(f"measuring in the {backend} worker (memray there)")
        try:
            found = self.session.backend_call(backend, Cellwork.STEP_MEMORY, spec=self.session.cell_spec(self.kind, self.cell),
                                              steps_measured=self.steps_measured)
        except WorkerFailed as error:
            pytest.fail(f"{self.name}: {error}", pytrace=False)
        self.cap = memory.host_cap(MODELS[self.cell.model].memory_headroom, found["estimated_bytes"],
                                   self.session.run.memory_budget)
        self.info(device=found["device"], backend=backend, batch_size=self.cell.batch_size,
                  steps_measured=self.steps_measured, estimated_bytes=found["estimated_bytes"],
                  host_memory_cap_bytes=self.cap, memory_measured_in=f"the {backend} worker")
        self.precision_info()
        self.host_peak_measured(found["host_peak_bytes"])
        self.verdicts.against_reference(self.name, PEAK_CAP, found["host_peak_bytes"], self.cap, WITHIN_CAP,
                                        "the estimate's cap")
        if found["device_peak_bytes"] is not None:
            self.peak_against_baseline(self.gates.device_peak_memory, found["device_peak_bytes"])


class TrainMemoryBench(StepMemoryBench):
    """Training steps (train_on_batch): gradients, activations and the input batch.

    One step's peak depends on how TensorFlow's executor happens to interleave its ops: single
    cnn steps at batch 32 peaked at 11.4, 13.3, 14.7 or 19.7 MiB in one process, so a baseline
    recorded from one step flapped. The worst of 20 steps held within 0.1 MiB (20.79-20.86 MiB,
    8 repeats); it is also the number that decides whether a batch fits.
    """

    steps_measured = TRAIN_STEPS_MEASURED
    kind = "train"

    def build(self) -> Any:
        step = self.session.one_step(self.cell)
        return step.run, memory.estimate(step.model).step(self.cell.batch_size)


class InferenceMemoryBench(StepMemoryBench):
    """One batch predicted (predict_on_batch, or the estimator's predict)."""

    kind = "inference"

    def build(self) -> Any:
        one = self.session.one_batch(self.cell)
        estimated = memory.estimate(one.model).inference(self.cell.batch_size) if one.model else 0
        return one.predict, estimated


class LeakBench(Bench):
    """The same batch predicted many times: whatever the predictions leave behind must not grow.

    pytest-memray's limit_leaks fails the cell when any one allocation site still holds more
    than LEAK_LIMIT_PER_LOCATION at the end; the model and its traced functions are made in
    setup, so only the predictions are watched.
    """

    cell: Cell

    def setup(self, node: pytest.Item) -> None:
        skip_without_memray(node)
        self.one = self.session.one_batch(self.cell)
        node.add_marker(pytest.mark.limit_leaks(f"{LEAK_LIMIT_PER_LOCATION} B"))

    def predict_repeatedly(self) -> None:
        for _ in range(self.preset.leak_predictions):
            self.one.predict()

    def __call__(self) -> None:
        self.predict_repeatedly()
        self.info(device=self.placement().description, batch_size=self.cell.batch_size,
                  predictions=self.preset.leak_predictions, leak_limit_per_location_bytes=LEAK_LIMIT_PER_LOCATION)


class ScalingBench(Bench):
    """Training-step host peak against batch size: the fit, the analytic estimate, the largest batch.

    The ladder is measured in setup (memray runs one tracker at a time, and pytest-memray may
    be tracking the body); the body reports it.
    """

    cell: ModelOn

    def setup(self, node: pytest.Item) -> None:
        self.scaling = self.session.sizing.scaling(self.cell.device, self.cell.model)

    def __call__(self) -> None:
        scaling = self.scaling
        estimate, fit = scaling.estimate, scaling.fit
        self.info(device=self.placement().description,
                  ladder_batch_sizes=list(scaling.batch_sizes), ladder_peak_bytes=list(scaling.peaks),
                  fixed_bytes=fit.fixed, per_sample_bytes=fit.per_sample, fit_max_residual_bytes=fit.max_residual,
                  estimated_fixed_bytes=estimate.step_fixed, estimated_per_sample_bytes=estimate.step_per_sample,
                  weight_bytes=estimate.weights, optimizer_slot_bytes=estimate.optimizer_slots,
                  memory_budget_bytes=scaling.budget, largest_batch=scaling.largest_batch,
                  largest_batch_search=scaling.searched_by)


class DataScalingBench(Bench):
    """Time and host memory of one phase at log-spaced data sizes, fitted, back-tested and
    projected to the run's target size.

    Peaks are measured in setup (memray runs one tracker at a time, and pytest-memray may
    track the body); the body times every size in interleaved rounds through pytest-benchmark
    (one pytest-benchmark round is the whole sweep).
    """

    cell: ModelOn
    phase: str = ""

    @property
    def slot(self) -> int:
        return growth.PHASES[self.phase].slot

    def setup(self, node: pytest.Item) -> None:
        dataset, spec, phase = self.session.dataset, MODELS[self.cell.model], growth.PHASES[self.phase]
        self.work = phase.works[spec.framework](self.name, spec, dataset, self.placement(),
                                                self.session.run.model_options)
        sizes = growth.ladder(self.preset.growth_smallest[self.slot], len(phase.images(dataset)), self.work.unit)
        if len(sizes) < projection.MIN_SIZES:
            pytest.skip(f"{dataset.key} gives {len(sizes)} sizes {list(sizes)} for {self.phase}; a fit "
                        f"needs {projection.MIN_SIZES} (more data, or a smaller preset start)")
        self.peaks = growth.measure_peaks(self.work, sizes, self.preset.growth_memory_repeats,
                                          self.preset.growth_slowest_seconds, self.say)
        if len(self.peaks.sizes) < projection.MIN_SIZES:  # a busy machine can stop the ladder early
            pytest.skip(f"{len(self.peaks.sizes)} sizes measured for {self.phase} ({self.peaks.stopped}); a fit "
                        f"needs {projection.MIN_SIZES}")

    def __call__(self, benchmark: Any) -> None:
        sizes = self.peaks.sizes
        seconds = benchmark.pedantic(growth.time_rounds, args=(self.work, sizes, self.preset.growth_rounds, self.say),
                                     rounds=1, iterations=1)
        target = self.session.run.target_sizes[self.slot]
        time = projection.project(projection.Curve(sizes, seconds), target)
        peak = projection.project(projection.Curve(sizes, self.peaks.peaks), target)
        reasons = self.unsafe_reasons(time, peak)
        self.info(device=self.placement().description, phase=self.phase, work=self.work.description,
                  sizes=list(sizes), seconds=projection.medians(seconds), seconds_rounds=[list(r) for r in seconds],
                  peak_memory_bytes=[int(x) for x in projection.medians(self.peaks.peaks)],
                  sizes_stopped=self.peaks.stopped, **_projected(time, "seconds"),
                  **_projected(peak, "peak_memory_bytes", prefix="memory_"),
                  target_n=target, machine_memory_bytes=self.session.sizing.machine_memory,
                  projection_verdict=projection.verdict(reasons), unsafe_reasons=reasons,
                  memray_tracking=self.session.run.memray_tracking)
        self.session.projections.append(costs.Projected(
            self.cell.model, self.phase, self.cell.device, target, time.value, time.ci95, tuple(reasons)))

    def unsafe_reasons(self, time: projection.Projection, peak: projection.Projection) -> list[str]:
        """Everything that keeps the projection from being a safe extrapolation: distance, the
        fits' own doubts, and what the target sizes would need of machines like this one."""
        reasons = projection.beyond_data(time) + projection.doubts(time, "time", "s")
        reasons += projection.doubts(peak, "memory", "B")
        return reasons + growth.regime_reasons(MODELS[self.cell.model], self.phase, self.session.dataset.input_shape,
                                               time.target, peak.value, self.session.sizing.machine_memory)


def _projected(fit: projection.Projection, quantity: str, prefix: str = "") -> dict[str, Any]:
    """One projection's numbers, named as the data-scaling extra_info names them."""
    backtest = fit.backtest
    return {
        f"{prefix}exponent": fit.exponent, f"{prefix}exponent_stderr": fit.exponent_stderr,
        f"{prefix}loglog_exponent": fit.loglog_exponent, f"{prefix}loglog_exponent_stderr": fit.loglog_stderr,
        f"{prefix}fit": {"a": fit.fit.a, "b": fit.fit.b, "k": fit.fit.k},
        f"projected_{quantity}": fit.value, f"projected_{quantity}_ci95": list(fit.ci95),
        f"{prefix}backtest_ok": fit.backtest_ok,
        f"{prefix}backtest": None if backtest is None else {
            "size": backtest.size, "measured": backtest.measured, "predicted": backtest.predicted,
            "ci95": list(backtest.ci95)},
    }


class TrainDataScalingBench(DataScalingBench):
    phase = "train"


class PredictDataScalingBench(DataScalingBench):
    phase = "predict"


class SpreadBench(ProcessBench):
    """One model trained across N replicas (one process) or N worker processes, against the
    same model on one device: the loss after the same steps from the same seed, and the
    scaling efficiency, throughput on N / (N x throughput on one) at the same per-replica batch.
    Each side runs in fresh processes (distributed.py owns them)."""

    cell: Spread

    def run_both(self) -> tuple[distributed.Result, distributed.Result]:
        reference_job = self.job("single", self.cell.count)
        reference = self.session.process_results.get(reference_job)
        if reference is None:  # replicas and workers of one model share the same reference
            self.say("training on one device (the reference)")
            reference = self.session.process_results[reference_job] = self.run_job(reference_job)
        self.say(f"training on {self.cell.count} {self.cell.unit}")
        return reference, self.run_job(self.job(self.cell.unit, self.cell.count))

    def __call__(self, benchmark: Any) -> None:
        reference, spread = benchmark.pedantic(self.run_both, rounds=1, iterations=1)
        if spread.replicas_in_sync != self.cell.count:  # another global batch: the losses do not compare
            pytest.fail(f"{self.name}: the strategy ran {spread.replicas_in_sync} replicas in sync, not "
                        f"{self.cell.count} ({', '.join(spread.devices) or 'no devices listed'})", pytrace=False)
        gap = max(abs(a - b) for a, b in zip(spread.losses, reference.losses))
        one_device = reference.reference_samples_per_s
        self.info(**{self.cell.unit: self.cell.count}, device=self.placement().description,
                  per_replica_batch=self.cell.batch_size, global_batch=self.cell.batch_size * self.cell.count,
                  replicas_in_sync=spread.replicas_in_sync, replica_devices=spread.devices,
                  samples_per_s=spread.samples_per_s,
                  one_device_samples_per_s=one_device,
                  scaling_efficiency=spread.samples_per_s / (spread.replicas_in_sync * one_device),
                  losses=spread.losses, reference_losses=reference.losses, loss_gap=gap,
                  loss_tolerance=distributed.LOSS_TOLERANCE)
        self.verdicts.within_gap(self.name, "loss_gap", gap, distributed.LOSS_TOLERANCE)


@dataclass(frozen=True)
class Benchmark:
    """A benchmark fixture: the cells it is parameterized over, what it runs on each, and the
    metrics it judges (a skipped cell gets a skipped verdict for each)."""

    cells: Callable[[Grid], list]
    bench: type[Bench]
    judges: tuple[str, ...] = ()
    ab: bool = False  # judged B against A in an A/B run


# Benchmark fixture name -> its grid and its runner; the plugin makes one fixture of each.
BENCHMARKS: Registry[Benchmark] = Registry("benchmark fixture")
BENCHMARKS.register("train_bench", Benchmark(cells.train_cells, TrainBench, (TIMING,), ab=True))
BENCHMARKS.register("inference_bench", Benchmark(cells.inference_cells, InferenceBench, (TIMING,), ab=True))
BENCHMARKS.register("latency_bench", Benchmark(cells.latency_cells, LatencyBench, (TIMING,)))
BENCHMARKS.register("accuracy_bench", Benchmark(cells.accuracy_cells, AccuracyBench, ("accuracy",)))
BENCHMARKS.register("svm_bench", Benchmark(cells.svm_cells, SvmBench, (TIMING, "accuracy")))
BENCHMARKS.register("overhead_bench", Benchmark(cells.overhead_cells, OverheadBench))
BENCHMARKS.register("batch_speedup", Benchmark(cells.batch_speedup_cells, SpeedupBench, ("speedup",)))
BENCHMARKS.register("device_speedup", Benchmark(cells.device_speedup_cells, SpeedupBench, ("speedup",)))
BENCHMARKS.register("accuracy_parity", Benchmark(cells.parity_cells, ParityBench,
                                                  ("accuracy_gap", "loss_matching_digits")))
BENCHMARKS.register("train_memory", Benchmark(cells.train_memory_cells, TrainMemoryBench, MEMORY))
BENCHMARKS.register("inference_memory", Benchmark(cells.inference_memory_cells, InferenceMemoryBench, MEMORY))
BENCHMARKS.register("inference_leaks", Benchmark(cells.leak_cells, LeakBench, (LEAKS,)))
BENCHMARKS.register("memory_scaling", Benchmark(cells.scaling_cells, ScalingBench))
BENCHMARKS.register("train_data_scaling", Benchmark(cells.data_scaling_cells, TrainDataScalingBench))
BENCHMARKS.register("predict_data_scaling", Benchmark(cells.data_scaling_cells, PredictDataScalingBench))
BENCHMARKS.register("threads_bench", Benchmark(cells.threads_cells, ThreadsBench))
BENCHMARKS.register("multi_device", Benchmark(cells.multi_device_cells, SpreadBench, ("loss_gap",)))
BENCHMARKS.register("multi_worker", Benchmark(cells.multi_worker_cells, SpreadBench, ("loss_gap",)))
