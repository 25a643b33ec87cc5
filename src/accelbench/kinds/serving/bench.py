"""Serving under load: every served model under MLPerf LoadGen's four scenarios (SingleStream,
MultiStream, Server, Offline), against a dynamic batcher feeding the model's compiled predict
step (work.py). LoadGen's own result is what is reported: VALID or INVALID with its
reason, its percentiles and rates, its logs kept per cell. Server searches for the highest QPS
whose p99 stays under the model's latency bound, for every batching setting of the preset."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.axes.models import MODELS
from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.benches.base import Bench, Benchmark
from accelbench.benches.context import placed_as_asked
from accelbench.benches.under_load import Headline, judge_ab, judge_best
from accelbench.grid.cells import (
    Grid,
    backend_missing,
    device_absent,
    device_unsupported,
    fields_in_column,
    params,
    placeholder,
    tagged_id,
)
from accelbench.kinds.serving.gates import (
    BOUND,
    FIXED_QPS,
    LATENCY_TOLERANCE,
    RATE_TOLERANCE,
    SERVER_LATENCY,
    SERVER_RATE,
    SERVING_LATENCY,
    SERVING_RATE,
)
from accelbench.kinds.serving.result import Serving
from accelbench.kinds.serving.settings import ServingSettings
from accelbench.kinds.serving.work import (
    PredictStep,
    Served,
    ServingPlan,
    largest_batch,
    predict_step,
    samples_of,
    serve,
)
from accelbench.processes.workers import WorkerFailed
from accelbench.results.summary import Section
from accelbench.run import presets
from accelbench.run.built import BuiltWork
from accelbench.work.loadgen import RULES, SCENARIOS, SERVING_RULES, Durations, LoadgenResult

FIXTURE = "serving_bench"
SERVE_IN_WORKER = "accelbench.kinds.serving.work:serve_in_worker"  # what Bench.in_worker runs there
SETTINGS = "serving"  # its settings' name in run.presets.KIND_SETTINGS (settings.py)

# Under --update-baselines a serving cell is measured this many times and its baseline is the
# best of them (the lowest latency, the highest rate): noise on a busy machine only ever adds
# latency, and a baseline taken in a noisy moment (the median of three repeats sat 40% above
# what later unchanged runs saw, for a model whose weights fill the L3 cache) hides a 2x
# slower predict step (docs/measurements.md).
BASELINE_REPEATS = 3


@dataclass(frozen=True)
class ServingCell:
    """A model served on a device under one LoadGen scenario: `cpu-mlp-server`."""

    device: str
    model: str
    scenario: str  # a loadgen.SCENARIOS name
    backend: str = PROCESS_BACKEND
    precision: str = REFERENCE_PRECISION
    batch_size: int = 1  # the batcher's first maximum (the worker's CellSpec needs a batch size)
    tagged: tuple[bool, bool] = field(default=(False, False), compare=False)

    @property
    def id(self) -> str:
        return tagged_id(f"{self.device}-{self.model}-{self.scenario.lower()}", self)

    def fields(self) -> dict:
        """A model's row (named with its backend and precision where the run has several), a
        column per scenario: the training and inference cells' fields, the scenario as the column."""
        return fields_in_column(self, self.scenario)


class ServingBench(Bench):
    """One model under one LoadGen scenario; Server's peak QPS and every scenario's headline
    number gated against this machine's baselines."""

    cell: ServingCell

    def plan(self) -> ServingPlan:
        settings: ServingSettings = self.session.grid.settings[SETTINGS]
        run = self.session.run
        rules = SERVING_RULES.of(run.kind_options)
        fixed = None
        if self.cell.scenario == "Server":
            gate = self.gates[SERVER_LATENCY]
            fixed = gate.store.get(gate.scope, self.baseline_key, FIXED_QPS) if not self.verdicts.update else None
        folder = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.name).strip("-")
        return ServingPlan(
            durations=Durations(settings.min_duration_ms, settings.min_query_count, rules),
            bound_ms=BOUND.of(run.kind_options) or MODELS[self.cell.model].latency_bound_ms,
            batchings=settings.batchings,
            qps_precision=settings.qps_precision,
            max_search_runs=settings.max_search_runs,
            log_dir=str(Path(run.output_root or ".benchmarks", "loadgen", run.stamp, folder)),
            fixed_qps=fixed,
            attempts=1 if RULES[rules] else settings.attempts,  # MLPerf's runs: 600 s each
            offline_batch=max(self.session.grid.batch_sizes_for(self.cell.device, self.cell.model)),
        )

    def __call__(self) -> None:
        plan = self.plan()
        repeats = BASELINE_REPEATS if self.verdicts.update else 1
        heads = []
        for _ in range(repeats):
            served = self.served(plan)
            self.record(_part(served, plan))
            if served.error:
                pytest.fail(
                    f"{self.name}: the served model raised: {served.error} (LoadGen was ended: every query after it "
                    f"was completed empty; logs: {plan.log_dir})",
                    pytrace=False,
                )
            heads.append(HEADLINES[self.cell.scenario](self.name, served, plan))
            if served.fixed is not None:  # every repeat measures p99 at the first one's rate
                plan = dataclasses.replace(plan, fixed_qps=served.fixed.target_qps)
        judge_best(self, heads, fails=RULES[SERVING_RULES.of(self.session.run.kind_options)])
        if self.verdicts.update and plan.fixed_qps is not None:
            gate = self.gates[SERVER_LATENCY]
            gate.store.stage(gate.scope, self.baseline_key, FIXED_QPS, plan.fixed_qps)
        self.against_b(dataclasses.replace(plan, expected=served.expected))

    def against_b(self, plan: ServingPlan) -> None:
        """In an A/B run: the cell served in worker A and worker B, in the order A B B A, each
        from the same schedule (A's expected latency and throughput, the same fixed QPS: with
        LoadGen's fixed seeds, the same queries), B's best turn held to the gates' rules against
        A's. A worker that fails fails the cell's A/B verdict in one line."""

        def serve_side(side: str, turn: int) -> Headline:
            nonlocal plan
            self.say(f"A/B: serving in {side}")
            side_plan = dataclasses.replace(plan, log_dir=f"{plan.log_dir}/ab-{turn}-{side}")
            wire = self.in_worker(SERVE_IN_WORKER, side, scenario=self.cell.scenario, plan=side_plan.as_json())
            served = Served.from_json(wire)
            if served.error:
                raise WorkerFailed(f"the served model raised in {side}: {served.error}")
            if served.fixed is not None and plan.fixed_qps is None:  # every turn at the first one's rate
                plan = dataclasses.replace(plan, fixed_qps=served.fixed.target_qps)
            return HEADLINES[self.cell.scenario](self.name, served, plan)

        judge_ab(self, serve_side, HEADLINE_METRICS[self.cell.scenario])

    def served(self, plan: ServingPlan) -> Served:
        """The cell served here, or in its backend's worker (the same work.serve)."""
        if not self.on_other_backend():
            built, largest = self.session.built, largest_batch(plan)
            self.say(f"the predict step for batches up to {largest}")
            step = shared_step(built, self.cell, largest)
            placed_as_asked(self, step.weights_on)  # before LoadGen serves it
            return serve(built.site(self.cell), self.cell.scenario, plan, self.say, step)
        self.say(f"serving in the {self.cell.backend} worker")
        try:
            wire = self.in_worker(SERVE_IN_WORKER, scenario=self.cell.scenario, plan=plan.as_json())
        except WorkerFailed as error:
            pytest.fail(f"{self.name}: {error}", pytrace=False)
        served = Served.from_json(wire)
        placed_as_asked(self, served.weights_on)  # the worker built and served it in one call
        return served


def shared_step(built: BuiltWork, cell: ServingCell, largest: int) -> PredictStep:
    """A serving cell's predict step, built and warmed up once per model on a device (on a
    backend, at a precision): the scenarios' cells share it, where each built its own (0.25 s a
    scenario for the MLP: its model, and a concrete function per allowed batch size). Taken
    again, it is warmed again, as a kept step runs once (run/built.py)."""
    site = built.site(cell)
    return built.kept(
        (FIXTURE, cell.device, cell.model, cell.backend, cell.precision, largest),
        lambda: predict_step(site, largest),
        lambda kept: kept.warm(samples_of(site)),
    )


def _invalid(name: str, result: LoadgenResult, what: str) -> str:
    why = "; ".join(result.why_invalid) or "no reason given in its summary"
    return f"{name}: LoadGen found {what} INVALID: {why} (logs: {result.log_dir})"


def stream_headline(name: str, served: Served, plan: ServingPlan) -> Headline:
    """A stream's headline: its scenario's percentile (SingleStream p90, MultiStream p99)."""
    result = served.result
    if not result.valid:
        return Headline({}, {SERVING_LATENCY: _invalid(name, result, f"the {result.scenario} run")})
    return Headline(
        {SERVING_LATENCY: result.at(result.reported_percentile or SCENARIOS[result.scenario].percentile)}, {}
    )


def offline_headline(name: str, served: Served, plan: ServingPlan) -> Headline:
    result = served.result
    if not result.valid:
        return Headline({}, {SERVING_RATE: _invalid(name, result, "the Offline run")})
    return Headline({SERVING_RATE: result.samples_per_s}, {})


def server_headline(name: str, served: Served, plan: ServingPlan) -> Headline:
    """The peak QPS under the bound, and p99 at the fixed QPS (the baseline's rate)."""
    numbers, invalid = {}, {}
    first = served.swept[0]
    if first.peak is None:
        lowest = min(first.runs, key=lambda run: run.target_qps or 0.0)
        invalid[SERVER_RATE] = (
            f"{name}: no rate tried kept p99 under the {plan.bound_ms:g} ms bound: the lowest, "
            f"{lowest.target_qps:,.0f} QPS, had p99 {lowest.at('99.00') or float('nan'):.2f} ms "
            f"({'; '.join(lowest.why_invalid)}); set a bound with --latency-bound MS or ModelSpec.latency_bound_ms"
        )
    else:
        numbers[SERVER_RATE] = first.peak.target_qps
    if served.fixed is not None:
        numbers[SERVER_LATENCY] = served.fixed.at("99.00")
    return Headline(numbers, invalid)


HEADLINES = {
    "SingleStream": stream_headline,
    "MultiStream": stream_headline,
    "Offline": offline_headline,
    "Server": server_headline,
}
# Each scenario's first gated number: the one an A/B run's failed worker fails.
HEADLINE_METRICS = {
    "SingleStream": SERVING_LATENCY,
    "MultiStream": SERVING_LATENCY,
    "Offline": SERVING_RATE,
    "Server": SERVER_RATE,
}


def _part(served: Served, plan: ServingPlan) -> Serving:
    """The cell's result part: LoadGen's numbers, as its summary log gave them."""
    result = served.fixed if served.scenario == "Server" and served.fixed else served.result
    headline = served.result
    best = served.best()
    runs = [
        {
            "batching": swept.batching.label,
            "qps": run.target_qps,
            "valid": run.valid,
            **{f"p{p.split('.')[0]}_ms": run.at(p) for p in ("50.00", "90.00", "99.00")},
        }
        for swept in served.swept
        for run in swept.runs
    ]
    rate = latency = percentile = None
    if served.scenario == "Server":
        rate = served.swept[0].peak.target_qps if served.swept and served.swept[0].peak else None
        latency, percentile = (served.fixed.at("99.00"), "p99") if served.fixed else (None, None)
    elif headline is not None and headline.valid and served.scenario == "Offline":
        rate = headline.samples_per_s  # its latency is the whole query's: no serving latency
    elif headline is not None and headline.valid:
        reported = headline.reported_percentile or SCENARIOS[served.scenario].percentile
        latency, percentile = headline.at(reported), f"p{float(reported):g}"
    loop = result.loop_parts_ms if result else {}
    return Serving(
        scenario=served.scenario,
        offline_batch=plan.offline_batch if served.scenario == "Offline" else None,
        loadgen_valid=headline.valid if headline else False,
        loadgen_why_invalid="; ".join(headline.why_invalid) if headline else "no rate met the bound",
        early_stopping="; ".join(headline.early_stopping) if headline else None,
        serving_latency_ms=latency,
        serving_percentile=percentile,
        serving_rate=rate,
        serving_p50_ms=result.at("50.00") if result else None,
        serving_p90_ms=result.at("90.00") if result else None,
        serving_p99_ms=result.at("99.00") if result else None,
        latency_bound_ms=plan.bound_ms,
        peak_qps_precision=served.swept[0].precision if served.swept and served.swept[0].peak else None,
        best_batching=best.batching.label if best else None,
        fixed_qps=served.fixed.target_qps if served.fixed else None,
        expected_latency_ms=served.expected.latency_s * 1e3,
        expected_batch_samples_per_s=served.expected.batch_samples_per_s,
        loop_wait_ms=loop.get("wait"),
        loop_predict_ms=loop.get("predict"),
        loop_ms=loop.get("in_loop"),
        server_runs=runs or None,
        loadgen_logs=plan.log_dir,
    )


# Its cells: every served model on every device, backend and precision, under each scenario.
def not_served(grid: Grid, cell: ServingCell) -> str | None:
    if cell.backend != PROCESS_BACKEND and MODELS[cell.model].framework != "keras":
        return f"{cell.model} is not a Keras model: it is served on {PROCESS_BACKEND}'s process alone"
    return None


def served_models(grid: Grid) -> tuple[str, ...]:
    """The models served: every one --models names; else the preset's served models and every
    model a user's module declared."""
    if grid.user_models:
        return grid.models
    settings: ServingSettings = grid.settings[SETTINGS]
    chosen = presets.chosen(settings.models)
    return tuple(m for m in grid.models if m in chosen or not MODELS[m].built_in)


def serving_cells(grid: Grid) -> list:
    served = served_models(grid)
    if not served:
        return placeholder("no-served-model", "none of --models is among this preset's served models")
    tagged = grid.tags()
    cells = [
        ServingCell(device, model, scenario, backend, precision, tagged=tagged)
        for device in grid.devices
        for model in served
        for backend in grid.backends
        for precision in grid.precisions
        for scenario in SCENARIOS
        if MODELS[model].framework == "keras" or (backend == PROCESS_BACKEND and precision == REFERENCE_PRECISION)
    ]
    return params(grid, cells, (device_absent, device_unsupported, backend_missing, not_served))


# Its options, beside the plugin's (--help lists them; each has its ini key, accelbench_<flag>).
OPTIONS = (BOUND, SERVING_RULES, RATE_TOLERANCE, LATENCY_TOLERANCE)

# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 50
# This module's benchmark kind, by fixture name (benches/catalog.py registers it).
KINDS: dict[str, Benchmark] = {
    FIXTURE: Benchmark(
        serving_cells,
        ServingBench,
        "test_serving",
        (SERVING_RATE, SERVING_LATENCY, SERVER_RATE, SERVER_LATENCY),
        timed=False,
        file="test_serving.py",
        file_doc="Serving under load: MLPerf LoadGen's scenarios, dynamic batching, the peak QPS under a "
        "latency bound.\n\nLoadGen times these; pytest-benchmark does not.\n",
        about="A model served under MLPerf LoadGen's scenarios, dynamic batching, peak QPS under a bound "
        "(kinds/serving/).",
        sections=(
            Section(
                "serving latency (LoadGen): SingleStream p90, MultiStream p99 (the presets' seconds: p90), "
                "Server p99 at the fixed QPS",
                {FIXTURE: "{column}"},
                Serving.keys.serving_latency_ms,
                "milliseconds",
                (SERVING_LATENCY, SERVER_LATENCY),
            ),
            Section(
                "serving throughput (LoadGen): Server's peak QPS with p99 under the bound, Offline samples/s",
                {FIXTURE: "{column}"},
                Serving.keys.serving_rate,
                "rate",
                (SERVING_RATE, SERVER_RATE),
            ),
            Section(
                "Server's best batching setting (highest peak QPS under the bound)",
                {FIXTURE: "{column}"},
                Serving.keys.best_batching,
                "plain",
            ),
        ),
        plots=("serving",),
        options=OPTIONS,
    ),
}
