"""A served model under MLPerf LoadGen: the system under test is a real serving loop (a request
queue, a worker thread feeding the model's compiled predict step, dynamic batching with a
maximum batch size and a batching timeout, as TF Serving's and Triton's batchers do), and
LoadGen (loadgen.py) issues the queries and times them. Child-safe: a backend's worker
serves its own cells through the same code.

Why the batcher is written here: TF Serving's and Triton's batchers are C++ inside their
servers (a served model there is a SavedModel or an ONNX file behind gRPC, not this cell's
Keras model on this backend and device), and no kept Python library batches calls in-process.
"""

from __future__ import annotations

import dataclasses
import queue
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.work import loadgen
from accelbench.work.loadgen import Durations, Expected, LoadgenResult

# Samples LoadGen draws its queries from: the test set's first ones (LoadGen's own default
# performance sample count for small models is 1024).
PERFORMANCE_SAMPLES = 1024
LATENCY_CALLS = 30  # batch-1 predictions timed for LoadGen's expected latency (the median)
BATCH_CALLS = 5  # full batches timed for Offline's expected samples/s (the median)
MULTI_STREAM_SAMPLES = 8  # MLPerf's samples per MultiStream query (LoadGen's default)
# The parts of a batch's time in the serving loop, by its own clock (LoadgenResult.loop_parts_ms):
# "wait", from its first sample's issue to its predict call (the hand-off to the loop's thread,
# and the batching timeout); "predict", its inputs gathered and the call (padding, the model,
# its outputs fetched); "in_loop", the two together. LoadGen's latency of a query holds them,
# and its own issue before and completion after (QuerySamplesComplete, where it stamps the
# query done).
LOOP_PARTS = ("wait", "predict", "in_loop")


@dataclass(frozen=True)
class Batching:
    """A dynamic batcher's setting: it predicts once it holds max_batch_size samples, or once
    timeout_ms has passed since the first of them arrived."""

    max_batch_size: int
    timeout_ms: float

    @property
    def label(self) -> str:
        return f"max {self.max_batch_size}, {self.timeout_ms:g} ms"


@dataclass(frozen=True)
class ServingPlan:
    """What a serving cell runs, in plain fields (it crosses to a backend's worker as JSON)."""

    durations: Durations
    bound_ms: float  # the latency bound: Server's p99 must stay under it
    batchings: tuple[Batching, ...]  # Server's sweep; the first is every other scenario's maximum
    qps_precision: float  # the peak-QPS search stops when its bracket is this narrow (relative)
    max_search_runs: int  # ... or after this many LoadGen runs
    log_dir: str  # this cell's LoadGen logs, a folder per run
    fixed_qps: float | None = None  # Server's p99 is also measured here (the baseline's rate); None: half the peak
    # LoadGen's schedule for the streams and Offline; None: measured on the cell just before. An
    # A/B run gives B the schedule A measured, so that both sides get the same queries.
    expected: Expected | None = None
    # LoadGen runs a result is the best VALID one of (streams, Offline, Server at the fixed QPS),
    # and the runs a rate of the peak search gets before it counts as INVALID. Noise on a busy
    # machine only ever adds latency: on 2 cores, 2 of 20 unchanged quick runs found the MLP's
    # peak 40% low after one unlucky INVALID run near the peak (docs/measurements.md).
    attempts: int = 1
    # Offline's batch: the largest the run measures this model at on this device (the sweep's
    # largest, in the full preset), so that Offline measures the device's throughput, not the
    # streams' batch; None: the first batching's maximum, as the streams'.
    offline_batch: int | None = None

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> ServingPlan:
        return cls(
            **{
                **saved,
                "durations": Durations(**saved["durations"]),
                "batchings": tuple(Batching(**b) for b in saved["batchings"]),
                "expected": Expected(**saved["expected"]) if saved.get("expected") else None,
            }
        )


def allowed_batch_sizes(largest: int) -> tuple[int, ...]:
    """The sizes a batch is padded up to (TF Serving's allowed_batch_sizes): powers of two up to
    the largest, and the largest. A compiled step traces once per input shape; padding bounds
    the shapes, so no batch compiles during a LoadGen run."""
    sizes, size = [], 1
    while size < largest:
        sizes.append(size)
        size *= 2
    return (*sizes, largest)


@dataclass
class PredictStep:
    """The cell's model as a server calls it: a batch of inputs in, its outputs out as NumPy
    (fetched: the device has finished), padded up to an allowed size and cut back."""

    call: Callable[[Any], Any]  # a padded batch -> outputs (NumPy)
    sizes: tuple[int, ...]
    weights_on: str | None = None  # where its Keras model's weights lie (backends.weights_on); None: an estimator

    def __call__(self, inputs: Any) -> Any:
        import numpy as np

        count = len(inputs)
        size = next((s for s in self.sizes if s >= count), None)
        if size is None:
            raise ValueError(f"a batch of {count} is above the largest allowed, {self.sizes[-1]}")
        if size != count:
            padding = np.zeros((size - count, *inputs.shape[1:]), dtype=inputs.dtype)
            inputs = np.concatenate([inputs, padding])
        return np.asarray(self.call(inputs))[:count]

    def warm(self, inputs: Any) -> None:
        """Trace and run every allowed size once, outside any LoadGen run."""
        for size in self.sizes:
            self(inputs[:size])
            self(inputs[:size])


def _keras_call(model: Any, placement: Any) -> Callable[[Any], Any]:
    """A Keras model's predict step: on TensorFlow a tf.function of the model (XLA where the
    placement compiles), as the inference cells run it; elsewhere Keras' predict_on_batch (the
    backend's compiled predict step)."""
    if getattr(placement, "FEEDS_ARRAYS", False):

        def predict(batch: Any) -> Any:
            with placement.scope():
                return model.predict_on_batch(batch)

        return predict
    from accelbench.axes.backends import tensorflow

    return tensorflow.served_predict(model, placement)


def predict_step(site: Any, largest: int) -> PredictStep:
    """The cell's model, built as the inference cells build it, as a served predict step."""
    from accelbench.axes.backends import weights_on
    from accelbench.work.inference import fitted_estimator, serving_model

    placed = None
    if site.model.framework == "sklearn":
        estimator = fitted_estimator(site.model, site.dataset, site.options)
        call = lambda batch: estimator.predict(batch.reshape(len(batch), -1))
    else:
        model = serving_model(site.model, site.dataset, site.placement, site.options)
        call, placed = _keras_call(model, site.placement), weights_on(model)
    step = PredictStep(call, allowed_batch_sizes(largest), placed)
    step.warm(samples_of(site))
    return step


def samples_of(site: Any) -> Any:
    """The inputs LoadGen's sample indices point at: the test set's first PERFORMANCE_SAMPLES
    (fewer where the test set is smaller: LoadGen draws its queries from as many as there are)."""
    import numpy as np

    inputs = site.dataset.x_test[:PERFORMANCE_SAMPLES]
    return np.ascontiguousarray(inputs)


@dataclass
class DynamicBatcher:
    """LoadGen's system under test: issue_queries puts each query's samples on a queue; one
    worker thread takes up to max_batch_size of them (waiting at most timeout_ms after the
    first arrived), predicts them as one batch and completes each sample to LoadGen with its
    row of the real outputs. A predict step that raises stops predicting: every query issued
    after is completed empty at once, so LoadGen's run ends, and the error is kept. It keeps its
    own clock of each batch (LOOP_PARTS): what LoadGen's latency holds besides the model."""

    predict: PredictStep
    inputs: Any
    batching: Batching
    error: str | None = None
    batch_sizes: list[int] = field(default_factory=list)  # the batches it predicted, for the report
    # A row per batch predicted: its first sample issued, its predict call begun and ended
    # (perf_counter seconds).
    clock: list[tuple[float, float, float]] = field(default_factory=list)
    _queue: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    _thread: threading.Thread | None = None

    _STOP = object()

    def __enter__(self) -> Any:
        import mlperf_loadgen as lg

        self._thread = threading.Thread(target=self._serve, name="accelbench-batcher", daemon=True)
        self._thread.start()
        self.handle = lg.ConstructSUT(self._issue, lambda: None)
        return self

    def __exit__(self, *exc: object) -> None:
        import mlperf_loadgen as lg

        self._queue.put(self._STOP)
        if self._thread is not None:
            self._thread.join()
        lg.DestroySUT(self.handle)

    def _issue(self, samples: list[Any]) -> None:
        """LoadGen's issue thread: a query's samples go on the queue together (MultiStream's 8
        arrive as one batch, Offline's thousands are cut into full batches by the worker)."""
        issued = time.perf_counter()
        self._queue.put([(sample.id, sample.index, issued) for sample in samples])

    def _serve(self) -> None:
        pending: deque = deque()
        largest, timeout = self.batching.max_batch_size, self.batching.timeout_ms / 1e3
        while True:
            if not pending:
                item = self._queue.get()
                if item is self._STOP:
                    return
                pending.extend(item)
            deadline = time.perf_counter() + timeout
            while len(pending) < largest:
                wait = deadline - time.perf_counter()
                try:
                    item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is self._STOP:
                    self._queue.put(item)  # finish what is pending, then stop
                    break
                pending.extend(item)
            batch = [pending.popleft() for _ in range(min(largest, len(pending)))]
            self._complete(batch)

    def _complete(self, batch: list[tuple[int, int, float]]) -> None:
        import mlperf_loadgen as lg
        import numpy as np

        ids = [query_id for query_id, _, _ in batch]
        if self.error is None:
            try:
                started = time.perf_counter()
                outputs = np.ascontiguousarray(self.predict(self.inputs[[index for _, index, _ in batch]]))
                predicted = time.perf_counter()
                self.batch_sizes.append(len(batch))
            except Exception as raised:  # a user's model may raise anything: one line, and LoadGen ends
                self.error = f"{type(raised).__name__}: {raised}"
        if self.error is not None:
            lg.QuerySamplesComplete([lg.QuerySampleResponse(query_id, 0, 0) for query_id in ids])
            return
        row = outputs.nbytes // max(len(outputs), 1)
        base = outputs.ctypes.data
        lg.QuerySamplesComplete([lg.QuerySampleResponse(q, base + i * row, row) for i, q in enumerate(ids)])
        self.clock.append((batch[0][2], started, predicted))  # first in, first out: its first sample was issued first

    def parts_ms(self) -> dict[str, float]:
        """LOOP_PARTS, each the median over the batches predicted, milliseconds."""
        if not self.clock:
            return {}
        parts = [(begun - issued, done - begun, done - issued) for issued, begun, done in self.clock]
        return {name: statistics.median(column) * 1e3 for name, column in zip(LOOP_PARTS, zip(*parts))}


def measure_expected(step: PredictStep, inputs: Any, largest: int) -> Expected:
    """The cell's own latency and batch throughput, timed here just before LoadGen runs: what
    its schedule is set from."""
    from accelbench.work.measure import seconds

    latency = statistics.median(seconds(lambda: step(inputs[:1])) for _ in range(LATENCY_CALLS))
    batch = inputs[:largest]
    batch_seconds = statistics.median(seconds(lambda: step(batch)) for _ in range(BATCH_CALLS))
    query = inputs[:MULTI_STREAM_SAMPLES]
    query_seconds = statistics.median(seconds(lambda: step(query)) for _ in range(BATCH_CALLS))
    return Expected(latency, len(batch) / batch_seconds, query_seconds)


# How a scenario's VALID runs rank, best first: a latency the lower, a rate the higher.
RANKS: dict[str, Callable[[LoadgenResult], float]] = {
    "SingleStream": lambda result: result.at(result.reported_percentile or "90.00") or float("inf"),
    "MultiStream": lambda result: result.at(result.reported_percentile or "99.00") or float("inf"),
    "Server": lambda result: result.at("99.00") or float("inf"),
    "Offline": lambda result: -(result.samples_per_s or 0.0),
}


def run_scenario(
    step: PredictStep,
    inputs: Any,
    scenario: str,
    batching: Batching,
    expected: Expected,
    plan: ServingPlan,
    log_dir: Path,
    qps: float | None = None,
) -> LoadgenResult:
    """One LoadGen test of a scenario against a batcher of this setting."""
    settings = loadgen.settings_for(loadgen.SCENARIOS[scenario], expected, plan.durations, plan.bound_ms / 1e3, qps)
    with loadgen.SampleLibrary(len(inputs), len(inputs)) as library, DynamicBatcher(step, inputs, batching) as sut:
        loadgen.run_test(sut.handle, library, settings, log_dir)
    result = dataclasses.replace(loadgen.read_summary(scenario, log_dir, qps), loop_parts_ms=sut.parts_ms())
    if sut.error is not None:
        return dataclasses.replace(result, valid=False, error=sut.error)
    return result


@dataclass(frozen=True)
class SweptBatching:
    """Server's peak search under one batching setting."""

    batching: Batching
    expected: Expected
    runs: tuple[LoadgenResult, ...]
    peak: LoadgenResult | None  # the fastest VALID run; None: no rate tried met the bound
    precision: float  # the search bracket's relative width when it stopped


@dataclass(frozen=True)
class Served:
    """What one serving cell measured: its scenario's LoadGen result (Server: the peak run of
    the first batching setting), and for Server every setting's search and the run at the
    fixed QPS. Crosses from a backend's worker as JSON (as_json / from_json)."""

    scenario: str
    expected: Expected
    result: LoadgenResult | None
    swept: tuple[SweptBatching, ...] = ()
    fixed: LoadgenResult | None = None  # Server: the run at the fixed QPS, under the first setting
    error: str | None = None  # the system under test raised: its one line
    weights_on: str | None = None  # where the served model's weights lay (PredictStep's)

    def best(self) -> SweptBatching | None:
        """The setting whose peak QPS under the bound is highest."""
        found = [swept for swept in self.swept if swept.peak is not None]
        return max(found, key=lambda swept: swept.peak.target_qps) if found else None

    def as_json(self) -> dict[str, Any]:
        return loadgen.as_plain(self)

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> Served:
        result = lambda r: LoadgenResult.from_json(r) if r else None
        return cls(
            scenario=saved["scenario"],
            expected=Expected(**saved["expected"]),
            result=result(saved["result"]),
            swept=tuple(
                SweptBatching(
                    Batching(**s["batching"]),
                    Expected(**s["expected"]),
                    tuple(LoadgenResult.from_json(r) for r in s["runs"]),
                    result(s["peak"]),
                    s["precision"],
                )
                for s in saved["swept"]
            ),
            fixed=result(saved["fixed"]),
            error=saved["error"],
            weights_on=saved.get("weights_on"),
        )


def stream_batching(plan: ServingPlan, scenario: str) -> Batching:
    """The streams' and Offline's batcher, no waiting: the first setting's maximum for the
    streams, the plan's offline_batch for Offline. A stream issues a whole query at once
    (SingleStream one sample, MultiStream 8) and the next only after it completes, and Offline
    issues everything at once: waiting for more would only add the timeout to every query."""
    if scenario == "Offline" and plan.offline_batch:
        return Batching(plan.offline_batch, 0.0)
    return Batching(plan.batchings[0].max_batch_size, 0.0)


def largest_batch(plan: ServingPlan) -> int:
    """The largest batch a plan's scenarios predict: its predict step's largest allowed size."""
    return max(MULTI_STREAM_SAMPLES, plan.offline_batch or 0, *(b.max_batch_size for b in plan.batchings))


def serve(
    site: Any,
    scenario: str,
    plan: ServingPlan,
    say: Callable[[str], None] = lambda text: None,
    step: PredictStep | None = None,
) -> Served:
    """One serving cell: the model built as a predict step (or `step`, the model's, built for
    largest_batch(plan) and warmed: a run's scenarios share one), its latency and batch
    throughput timed, then LoadGen's scenario against the dynamic batcher (Server: the peak-QPS
    search for every batching setting, and a run at the fixed QPS)."""
    if step is None:
        say(f"building the predict step for batches up to {largest_batch(plan)}")
        step = predict_step(site, largest_batch(plan))
    return dataclasses.replace(_served(step, site, scenario, plan, say), weights_on=step.weights_on)


def _served(step: PredictStep, site: Any, scenario: str, plan: ServingPlan, say: Callable[[str], None]) -> Served:
    """serve()'s LoadGen runs of its built step."""
    from accelbench.work.peak_search import find_peak

    inputs = samples_of(site)
    root = Path(plan.log_dir)
    default = stream_batching(plan, scenario)
    if scenario != "Server":
        expected = plan.expected or measure_expected(step, inputs, default.max_batch_size)
        say(f"LoadGen {scenario}")
        result = loadgen.best_run(
            plan.attempts,
            root,
            RANKS[scenario],
            lambda where: run_scenario(step, inputs, scenario, default, expected, plan, where),
        )
        return Served(scenario, expected, result, error=result.error)
    swept = []
    for batching in plan.batchings:
        measured = measure_expected(step, inputs, batching.max_batch_size)
        slug = f"max{batching.max_batch_size}-{batching.timeout_ms:g}ms"

        def run_at(qps: float, batching: Batching = batching, measured: Expected = measured, slug: str = slug):
            say(f"LoadGen Server at {qps:,.0f} QPS ({batching.label})")
            return loadgen.best_run(
                plan.attempts,
                root / slug / f"qps-{qps:.0f}",
                RANKS["Server"],
                lambda where: run_scenario(step, inputs, "Server", batching, measured, plan, where, qps),
                lambda result: True,  # a rate of the search is VALID if any run of it is: the first VALID ends it
            )

        search = find_peak(run_at, measured.batch_samples_per_s / 2, plan.qps_precision, plan.max_search_runs)
        swept.append(SweptBatching(batching, measured, search.runs, search.peak, search.precision))
        failed = next((run.error for run in search.runs if run.error), None)
        if failed:
            return Served(scenario, swept[0].expected, search.runs[-1], tuple(swept), error=failed)
    first = swept[0]
    fixed_qps = plan.fixed_qps or (first.peak.target_qps / 2 if first.peak else None)
    fixed = None
    if fixed_qps:
        say(f"LoadGen Server at the fixed {fixed_qps:,.0f} QPS")
        fixed = loadgen.best_run(
            plan.attempts,
            root / "fixed" / f"qps-{fixed_qps:.0f}",
            RANKS["Server"],
            lambda where: run_scenario(
                step, inputs, "Server", plan.batchings[0], first.expected, plan, where, fixed_qps
            ),
        )
    return Served(scenario, first.expected, first.peak, tuple(swept), fixed, error=fixed.error if fixed else None)


def serve_in_worker(site: Any, scenario: str, plan: dict[str, Any]) -> dict[str, Any]:
    """A serving cell measured in a backend's or an A/B side's worker (processes.cellwork.kind_work
    builds `site` from the cell's spec), as the pytest process serves its own: its Served, as JSON."""
    return serve(site, scenario, ServingPlan.from_json(plan)).as_json()
