"""The token cells: a generative model's prefill (prompt tokens/s and time to first token against
prompt length) and decode (tokens/s and time per output token against batch size and context), timed through
pytest-benchmark on the process backend, with the key/value cache's bytes per token counted and
measured, and each phase's share of its roof: prefill's FLOP/s of the compute roof, decode's
bytes read per second of the copy roof (a decode step reads every weight and the whole cache)."""

from __future__ import annotations

import dataclasses
import itertools
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND, weights_on
from accelbench.axes.models import MODELS
from accelbench.axes.precisions import PRECISIONS, REFERENCE_PRECISION
from accelbench.benches.base import Bench, Benchmark
from accelbench.benches.context import placed_as_asked
from accelbench.benches.under_load import Headline, judge_ab, judge_best
from accelbench.grid.cells import (
    Grid,
    backend_missing,
    device_absent,
    device_unsupported,
    fields_in_column,
    model_missing,
    params,
    placeholder,
    tagged_id,
)
from accelbench.judge.verdicts import TIMING
from accelbench.kinds.tokens import serve, work
from accelbench.kinds.tokens.gates import (
    FIXED_RATE,
    LATENCY_TOLERANCE,
    LIMITS_OPTION,
    OFFLINE_TOLERANCE,
    RATE_TOLERANCE,
    TOKEN_METRICS,
    TOKEN_OFFLINE,
    TOKEN_RATE,
    TOKEN_TPOT,
    TOKEN_TTFT,
    Limits,
)
from accelbench.kinds.tokens.result import TokenLoad, Tokens
from accelbench.kinds.tokens.settings import TokenSettings
from accelbench.measured import Placed, Roof
from accelbench.processes.workers import WorkerFailed
from accelbench.results.summary import Section
from accelbench.user_modules import call_user
from accelbench.work.loadgen import RULES, SERVING_RULES, Durations

PREFILL, DECODE = "prefill", "decode"  # its phases
PREFILL_FIXTURE, DECODE_FIXTURE, LOAD_FIXTURE = "token_prefill", "token_decode", "token_serving"  # its fixtures
SERVED_SCENARIOS = ("Server", "Offline")  # LoadGen's scenarios a generative model is served under
# What Bench.in_worker runs in a backend's or an A/B side's worker.
SERVE_IN_WORKER = "accelbench.kinds.tokens.bench:serve_in_worker"
PREPARE_IN_WORKER = "accelbench.kinds.tokens.work:prepare_in_worker"
ROUND_IN_WORKER = "accelbench.kinds.tokens.work:round_in_worker"
RUNS_OVER_TTFT = 5  # a LoadGen run lasts at least this many TTFT limits
# Under --update-baselines a cell is served this many times and each baseline is the median of
# their numbers: a later run serves it once, and its verdict is the one the best of its attempts
# would get, so the baseline is that same statistic's typical value. The best of three, as the
# serving cells keep, sat at the fast edge of what a later run reads: a search's peak errs both ways (the bracket's
# width below it; above it, a run too short for its queue to pass the limit reads VALID), and over
# 20 unchanged runs the best of three put two peak rates 35% below it and Offline's tokens/s at a
# median of 0.85 of it (docs/measurements.md).
BASELINE_REPEATS = 3
# How a model whose Generation has no insert (its cache takes no request between decode steps:
# KerasHub's) is served, whatever the preset's batchings.
ONE_AT_A_TIME = serve.TokenBatching("static", 1)
SETTINGS = "tokens"  # its settings' name in run.presets.KIND_SETTINGS (settings.py)
ABOVE_THE_ROOF = 1.05  # a share past this is a measurement error (a wrong count, a clock that stopped early)
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}  # a compute dtype's bytes


@dataclass(frozen=True)
class TokenCell:
    """A prefill or decode cell: `cpu-p64-gpt_tiny`, `jax-cpu-bs8-ctx96-gpt_tiny-bf16`."""

    device: str
    model: str
    phase: str
    size: int  # prefill: the prompt's tokens; decode: the sequences decoded together
    context: int = 0  # decode: the prompt's tokens each sequence holds before its steps
    backend: str = PROCESS_BACKEND
    precision: str = REFERENCE_PRECISION
    tagged: tuple[bool, bool] = field(default=(False, False), compare=False)

    @property
    def column(self) -> str:
        return f"p{self.size}" if self.phase == PREFILL else f"bs{self.size}-ctx{self.context}"

    @property
    def batch_size(self) -> int:
        """The sequences a step runs (a worker's CellSpec carries it)."""
        return self.size if self.phase == DECODE else 1

    @property
    def id(self) -> str:
        return tagged_id(f"{self.device}-{self.column}-{self.model}", self)

    def fields(self) -> dict:
        """A model's row (named with its backend and precision where the run has several), a
        column per prompt length or batch and context."""
        return fields_in_column(self, self.column.replace("-", " "))


class TokenBench(Bench):
    """A token cell: the model built and its work warmed up (traced, compiled) in setup, outside
    the timed region, here or in its backend's worker; rounds timed in the test."""

    cell: TokenCell

    @property
    def settings(self) -> TokenSettings:
        return self.session.grid.settings[SETTINGS]

    def setup(self, node: pytest.Item) -> None:
        self.spec = MODELS[self.cell.model]
        self.generation, self.where = self.spec.generation, self.placement()
        seed = self.session.run.model_options.seed
        if self.cell.phase == PREFILL:
            prompt = work.prompts(self.generation, 1, self.cell.size, seed)
        else:
            prompt = work.prompts(self.generation, self.cell.size, self.cell.context, seed)
        if self.on_other_backend():
            self.say(f"building the model and tracing its steps in the {self.cell.backend} worker")
            try:
                built = self.in_worker(PREPARE_IN_WORKER, phase=self.cell.phase, prompt=prompt.tolist(), **self.steps())
            except WorkerFailed as error:
                pytest.fail(f"{self.name}: {error}", pytrace=False)
            placed_as_asked(self, built[Placed.keys.weights_on])
            self.weight_bytes, self.cache_held = built["parameters"] * 4, built["cache_bytes"]
            return
        self.say("building the model and tracing its steps")
        model = shared_model(self)
        placed_as_asked(self, weights_on(model))
        self.weight_bytes = int(model.count_params()) * 4  # variables in float32 under every policy
        made = work.made(self.spec, model, self.where, self.cell.phase, prompt, **self.steps())
        self.work = work.warmed(self.spec, made)
        measure = self.generation.cache_bytes
        self.cache_held = measure(self.work.cache) if measure and self.cell.phase == DECODE else None

    def steps(self) -> dict:
        return {"steps": self.settings.decode_steps} if self.cell.phase == DECODE else {}

    def timed(self, benchmark: Any, samples_per_round: int) -> float | None:
        """The cell's rounds timed through pytest-benchmark; the median round's seconds (None under
        --benchmark-disable). On another backend each round is a call to its worker, and the
        median is the worker's own clock's (a pipe's tenth of a millisecond is not small beside a
        step of the tiny decoder)."""
        rounds, phase = self.settings.rounds, self.cell.phase
        if not self.on_other_backend():
            return self.time_rounds(benchmark, self.work.run, samples_per_round, phase, rounds)
        inside: list[float] = []

        def call() -> None:
            try:
                inside.append(self.in_worker(ROUND_IN_WORKER))
            except WorkerFailed as error:
                pytest.fail(f"{self.name}: {error}", pytrace=False)

        median = self.time_rounds(benchmark, call, samples_per_round, phase, rounds)
        return statistics.median(inside[1:]) if median and len(inside) > 1 else median  # the first: warm-up

    def hold_to_roof(self, share_of: Any) -> None:
        """Record the cell's share of its device's roof now, and again if the roof is measured
        again later in the run; a share past ABOVE_THE_ROOF fails the cell."""
        backend, device = self.cell.backend, self.cell.device
        if BACKENDS[backend].roof is None:
            return
        dtype = PRECISIONS[self.cell.precision].compute
        roof = self.session.roofs.of(backend, device, dtype)
        share = share_of(roof)
        if share is not None and share > ABOVE_THE_ROOF:
            pytest.fail(f"{self.name}: {share:.0%} of the device's measured roof: a measurement error", pytrace=False)
        record = lambda roof: self.record(self.shares(share_of(roof), roof))
        self.session.roofs.hold(backend, device, dtype, record)

    def shares(self, share: float | None, roof: Roof) -> Tokens:
        raise NotImplementedError

    def cache_bytes_per_token(self) -> int | None:
        """The counted bytes of one position (Generation's, for float32), in the precision's
        compute dtype: a mixed policy keeps its cache in bfloat16 or float16."""
        counted = self.generation.cache_bytes_per_token
        if counted is None:
            return None
        return counted * ITEMSIZE[PRECISIONS[self.cell.precision].compute] // 4


class PrefillBench(TokenBench):
    """One prompt of the cell's length into an empty cache: prompt tokens/s, and its time to the
    first token (no queue before it)."""

    def __call__(self, benchmark: Any) -> None:
        length = self.cell.size
        median = self.timed(benchmark, length)
        count, per_token = self.generation.flops_per_token, self.cache_bytes_per_token()
        flops = sum(count(position) for position in range(length)) if count else None
        self.record(
            Tokens(
                phase=PREFILL,
                prompt_tokens=length,
                sequences=1,
                cache_bytes_per_token=per_token,
                flops_per_token=flops / length if flops else None,
                flops_per_step=flops,
                # every weight once, and the cache's buffer (its context's positions) attended
                bytes_per_step=self.weight_bytes + per_token * self.generation.context if per_token else None,
            )
        )
        if median:
            self.record(Tokens(tokens_per_s=length / median, ttft_ms=median * 1e3))
            if flops:
                self.hold_to_roof(lambda roof: flops / median / roof.flops_per_s)

    def shares(self, share: float | None, roof: Roof) -> Tokens:
        return Tokens(compute_share=share, **roof_fields(roof))


class DecodeBench(TokenBench):
    """The cell's batch of sequences, each after a prompt of the cell's context length, decoded
    `decode_steps` tokens a round: new tokens/s of every sequence, and the time per output token
    (a step)."""

    def __call__(self, benchmark: Any) -> None:
        steps, sequences, start = self.settings.decode_steps, self.cell.size, self.cell.context
        median = self.timed(benchmark, steps * sequences)
        count, held = self.generation.flops_per_token, self.cache_held
        read = self.weight_bytes + held if held is not None else None
        middle = start + steps // 2  # a round's steps attend up to here on average
        self.record(
            Tokens(
                phase=DECODE,
                prompt_tokens=start,
                sequences=sequences,
                decode_steps=steps,
                cache_bytes_per_token=self.cache_bytes_per_token(),
                cache_bytes_measured=held,
                cache_positions=self.generation.context,
                bytes_per_step=read,
                flops_per_step=sequences * count(middle) if count else None,
            )
        )
        if median:
            step = median / steps
            self.record(Tokens(tokens_per_s=steps * sequences / median, tpot_ms=step * 1e3))
            if read:
                self.hold_to_roof(lambda roof: read / step / roof.bytes_per_s)

    def shares(self, share: float | None, roof: Roof) -> Tokens:
        return Tokens(bandwidth_share=share, **roof_fields(roof))


def shared_model(bench: Any) -> Any:
    """The cell's model, built once a run for every token cell of its model, device and precision
    in this process: the weights are the seed's either way, and its compiled steps (kept on the
    model) are traced once per shape, not once per cell (0.45 s of each quick cell's setup on
    the EPYC, building and tracing gpt_tiny anew)."""
    cell, built = bench.cell, bench.session.built
    build = lambda: work.build(bench.spec, bench.where, built.model_options(cell))
    return built.kept(("tokens", cell.model, cell.device, cell.precision), build, lambda model: None)


def roof_fields(roof: Roof) -> dict:
    """The roof a share was taken of, both its numbers (the roofline plot draws the two roofs)."""
    return dict(roof_device=roof.device, roof_flops_per_s=roof.flops_per_s, roof_bytes_per_s=roof.bytes_per_s)


@dataclass(frozen=True)
class TokenServeCell:
    """A generative model served on a device under one LoadGen scenario: `cpu-gpt_tiny-server`,
    `torch-cpu-gpt_tiny-offline`."""

    device: str
    model: str
    scenario: str  # Server or Offline
    backend: str = PROCESS_BACKEND
    precision: str = REFERENCE_PRECISION
    tagged: tuple[bool, bool] = field(default=(False, False), compare=False)
    batch_size: int = 1  # a worker's CellSpec needs one: the plan's batchings say the batch

    @property
    def id(self) -> str:
        return tagged_id(f"{self.device}-{self.model}-{self.scenario.lower()}", self)

    def fields(self) -> dict:
        return fields_in_column(self, self.scenario)


class TokenServingBench(Bench):
    """A generative model under LoadGen with token latencies on (serve.py): Server's peak request
    rate under the model's TTFT and TPOT limits and its latencies at the fixed rate, or Offline's
    tokens/s; each gated against this machine's baselines, and A/B'd where the run has two sides."""

    cell: TokenServeCell

    @property
    def settings(self) -> TokenSettings:
        return self.session.grid.settings[SETTINGS]

    def plan(self) -> serve.TokenPlan:
        settings, run = self.settings, self.session.run
        generation = MODELS[self.cell.model].generation
        limits = LIMITS_OPTION.of(run.kind_options) or Limits(generation.ttft_ms, generation.tpot_ms)
        rules = SERVING_RULES.of(run.kind_options)
        fixed = None
        if self.cell.scenario == "Server":
            gate = self.gates[TOKEN_TTFT]
            # Recorded anew, the rate stays where this commit's earlier runs measured TTFT and
            # TPOT against the baseline (their median is the new one); else half this run's peak.
            if not self.verdicts.update or self.verdicts.earlier.runs(self.name, gate, self.baseline_key):
                fixed = gate.store.get(gate.scope, self.baseline_key, FIXED_RATE)
        folder = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.name).strip("-")
        # A Server run shorter than a few TTFT limits cannot show a queue growing past the limit:
        # a rate above the model's capacity would read VALID for the queue it had no time to build.
        duration = settings.min_duration_ms
        if self.cell.scenario == "Server":
            duration = max(duration, int(RUNS_OVER_TTFT * limits.ttft_ms))
        return serve.TokenPlan(
            durations=Durations(duration, settings.min_query_count, rules),
            limits=limits,
            requests=dataclasses.replace(settings.requests, seed=run.model_options.seed),
            # A cache that takes no request between steps (no insert): one request at a time.
            batchings=settings.batchings if generation.insert else (ONE_AT_A_TIME,),
            rate_precision=settings.rate_precision,
            max_search_runs=settings.max_search_runs,
            log_dir=str(Path(run.output_root or ".benchmarks", "loadgen", run.stamp, folder)),
            fixed_rate=fixed,
            attempts=1 if RULES[rules] else settings.attempts,  # MLPerf's runs: 600 s each
            bounds=None if self.verdicts.update else self.bounds(),
        )

    def bounds(self) -> tuple[serve.Bound, ...]:
        """Each gated number's bound where this machine has its baseline: what the gate holds it to."""
        found = []
        for metric in (TOKEN_TTFT, TOKEN_TPOT) if self.cell.scenario == "Server" else (TOKEN_OFFLINE,):
            gate = self.gates[metric]
            baseline = gate.store.get(gate.scope, self.baseline_key, metric)
            if baseline is not None:
                rule = gate.rule_for(self.baseline_key)
                found.append(serve.Bound(metric, rule.relation, rule.bound(baseline)))
        return tuple(found)

    def setup(self, node: pytest.Item) -> None:
        self.spec = MODELS[self.cell.model]
        self.where = self.placement()
        if not self.on_other_backend():  # else its backend's worker builds it (served)
            self.say("building the model")
            self.model = shared_model(self)
            placed_as_asked(self, weights_on(self.model))

    def __call__(self) -> None:
        plan = self.plan()
        heads = []
        for _ in range(BASELINE_REPEATS if self.verdicts.update else 1):
            served = self.served(plan)
            self.record(_load_part(served, plan, self.gates[TOKEN_TPOT].rule.tolerance))
            if served.error:
                pytest.fail(
                    f"{self.name}: the model raised while serving: {served.error} (LoadGen was ended: every "
                    f"request after it was completed empty; logs: {plan.log_dir})",
                    pytrace=False,
                )
            heads.append(token_headline(self.name, served, plan))
            if served.fixed is not None:  # every repeat, and B, at the first one's rate
                plan = dataclasses.replace(plan, fixed_rate=served.fixed.target_qps)
        judge_best(self, heads, fails=RULES[SERVING_RULES.of(self.session.run.kind_options)], medians=TOKEN_METRICS)
        if self.verdicts.update and plan.fixed_rate is not None:
            gate = self.gates[TOKEN_TTFT]
            gate.store.stage(gate.scope, self.baseline_key, FIXED_RATE, plan.fixed_rate)
        self.against_b(dataclasses.replace(plan, capacity=served.capacity, bounds=None))

    def served(self, plan: serve.TokenPlan) -> serve.TokenServed:
        """The cell served here, or in its backend's worker (the same serve.serve)."""
        if self.on_other_backend():
            self.say(f"serving in the {self.cell.backend} worker")
            try:
                wire = self.in_worker(SERVE_IN_WORKER, scenario=self.cell.scenario, plan=plan.as_json())
            except WorkerFailed as error:
                pytest.fail(f"{self.name}: {error}", pytrace=False)
            placed_as_asked(self, wire.get(Placed.keys.weights_on))
            return serve.TokenServed.from_json(wire)
        return call_user(
            f"model {self.spec.name!r}: its generation under load",
            serve.serve,
            self.model,
            self.spec.generation,
            self.where,
            self.cell.scenario,
            plan,
            self.say,
        )

    def against_b(self, plan: serve.TokenPlan) -> None:
        """In an A/B run: the cell served in worker A and worker B, in the order A B B A, from
        the same schedule and requests (A's capacity, the same fixed rate, LoadGen's fixed seeds),
        B's best turn held to the gates' rules against A's. A worker that fails fails the A/B verdict."""

        def serve_side(side: str, turn: int) -> Headline:
            self.say(f"A/B: serving tokens in {side}")
            side_plan = dataclasses.replace(plan, log_dir=f"{plan.log_dir}/ab-{turn}-{side}")
            wire = self.in_worker(SERVE_IN_WORKER, side, scenario=self.cell.scenario, plan=side_plan.as_json())
            served = serve.TokenServed.from_json(wire)
            if served.error:
                raise WorkerFailed(f"the model raised in {side}: {served.error}")
            return token_headline(self.name, served, plan)

        judge_ab(self, serve_side, TOKEN_RATE)


def token_headline(name: str, served: serve.TokenServed, plan: serve.TokenPlan) -> Headline:
    """Server: the peak rate, and TTFT and TPOT medians (serve.GATED) at the fixed rate;
    Offline: its output tokens/s."""
    numbers, invalid = {}, {}
    held = serve.held_percentile(plan)
    if served.scenario != "Server":
        result = served.result
        if result.valid and result.tokens_per_s:
            numbers.update(serve.gated_numbers(served.scenario, result))
        else:
            why = "; ".join(result.why_invalid) or "no tokens/s in its summary"
            invalid[TOKEN_OFFLINE] = f"{name}: LoadGen found the Offline run INVALID: {why} (logs: {result.log_dir})"
        return Headline(numbers, invalid)
    first = served.searched[0]
    if first.peak is None:
        lowest = min(first.runs, key=lambda run: run.target_qps or 0.0)
        ttft, tpot = (lowest.first_token_ms.get(held, float("nan")), lowest.output_token_ms.get(held, float("nan")))
        invalid[TOKEN_RATE] = (
            f"{name}: no rate tried kept TTFT p{float(held):g} under {plan.limits.ttft_ms:g} ms and TPOT under "
            f"{plan.limits.tpot_ms:g} ms: the lowest, {lowest.target_qps:,.2f} requests/s, had TTFT "
            f"{ttft:.1f} ms, TPOT {tpot:.1f} ms "
            f"({'; '.join(lowest.why_invalid)}); set limits with --token-limits or the model's Generation"
        )
    else:
        numbers[TOKEN_RATE] = first.peak.target_qps
    fixed = served.fixed
    if fixed is not None:
        numbers.update(serve.gated_numbers(served.scenario, fixed))
    return Headline(numbers, invalid)


def _load_part(served: serve.TokenServed, plan: serve.TokenPlan, latency_tolerance: float) -> TokenLoad:
    held = serve.held_percentile(plan)
    result = served.fixed if served.scenario == "Server" else served.result
    step = result.loop_parts_ms.get(serve.DECODE_STEP) if result and served.scenario == "Server" else None
    tpot = result.output_token_ms.get("50.00") if result else None
    share = step / tpot if step and tpot else None
    headline = served.result
    peaks = [s for s in served.searched if s.peak is not None]
    best = max(peaks, key=lambda s: s.peak.target_qps) if peaks else None
    tried = [
        {
            "batching": searched.batching.label,
            "rate": run.target_qps,
            "valid": run.valid,
            "completed": run.samples_per_s,
            "goodput": good,
            **{f"ttft_p{p.split('.')[0]}_ms": run.first_token_ms.get(p) for p in ("50.00", held)},
            **{f"tpot_p{p.split('.')[0]}_ms": run.output_token_ms.get(p) for p in ("50.00", held)},
        }
        for searched in served.searched
        for run, good in zip(searched.runs, searched.goodput or (None,) * len(searched.runs))
    ]
    first = served.searched[0] if served.searched else None
    return TokenLoad(
        scenario=served.scenario,
        loadgen_valid=headline.valid if headline else False,
        loadgen_why_invalid="; ".join(headline.why_invalid) if headline else "no rate met the limits",
        early_stopping="; ".join(headline.early_stopping) if headline else None,
        gated_batching=plan.batchings[0].label,
        peak_rate=first.peak.target_qps if first and first.peak else None,
        best_batching=best.batching.label if best else None,
        rate_precision=first.precision if first and first.peak and first.precision != float("inf") else None,
        fixed_rate=served.fixed.target_qps if served.fixed else None,
        ttft_p50_ms=result.first_token_ms.get("50.00") if result else None,
        ttft_held_ms=result.first_token_ms.get(held) if result else None,
        tpot_p50_ms=result.output_token_ms.get("50.00") if result else None,
        tpot_held_ms=result.output_token_ms.get(held) if result else None,
        held_percentile=f"p{float(held):g}",
        ttft_limit_ms=plan.limits.ttft_ms,
        tpot_limit_ms=plan.limits.tpot_ms,
        output_tokens_per_s=result.tokens_per_s if result else None,
        requests_per_s=result.samples_per_s if result else None,
        rates_tried=tried or None,
        capacity_requests_per_s=served.capacity.requests_per_s,
        loadgen_logs=plan.log_dir,
        decode_step_ms=step,
        decode_share_of_tpot=share,
        tpot_gate_sees_decode_slowdown=1 + latency_tolerance / share if share else None,
    )


def serve_in_worker(site: Any, scenario: str, plan: dict[str, Any]) -> dict[str, Any]:
    """A token-serving cell measured in an A/B side's worker (processes.cellwork.kind_work builds
    `site`), as the pytest process serves its own: its TokenServed, as JSON."""
    model = work.kept_model(site)
    served = serve.serve(model, site.model.generation, site.placement, scenario, serve.TokenPlan.from_json(plan))
    return {**served.as_json(), Placed.keys.weights_on: weights_on(model)}  # checked by the pytest process


def token_serve_cells(grid: Grid) -> list:
    models = token_models(grid)
    if not models:
        return placeholder("no-generative-model-load", "no generative model among --models")
    tagged = grid.tags()
    made = [
        TokenServeCell(d, m, s, backend, precision, tagged)
        for d, m, backend, precision, s in itertools.product(
            grid.devices, models, grid.backends, grid.precisions, SERVED_SCENARIOS
        )
    ]
    return params(grid, made, (model_missing, device_absent, device_unsupported, backend_missing))


# Its cells: every device and generative model, at each prompt length (prefill) or batch (decode).
def token_models(grid: Grid) -> list[str]:
    """The run's generative models where --models names some, else the preset's."""
    if grid.user_models:
        return list(grid.generative)
    settings: TokenSettings = grid.settings[SETTINGS]
    return [name for name in settings.models if name in MODELS]


def cells_of(phase: str, sizes_of: Any, contexts_of: Any = lambda settings: (0,)) -> Any:
    def cells(grid: Grid) -> list:
        models = token_models(grid)
        if not models:
            return placeholder(
                f"no-generative-model-{phase}",
                "no generative model among --models (gpt_tiny, gpt2_small, or yours: a ModelSpec with a Generation)",
            )
        settings, tagged = grid.settings[SETTINGS], grid.tags()
        made = [
            TokenCell(d, m, phase, n, c, backend, precision, tagged)
            for d, m, backend, precision, c, n in itertools.product(
                grid.devices, models, grid.backends, grid.precisions, contexts_of(settings), sizes_of(settings)
            )
        ]
        return params(grid, made, (model_missing, device_absent, device_unsupported, backend_missing))

    return cells


FILE_DOC = (
    "Generative models' tokens: prefill tokens/s and time to first token against prompt length, "
    "decode tokens/s and time per output token against batch size and context; tokens under LoadGen."
)
# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 75
# Its benchmark kinds, by fixture name (benches/catalog.py registers them).
KINDS: dict[str, Benchmark] = {
    PREFILL_FIXTURE: Benchmark(
        cells_of(PREFILL, lambda settings: settings.prompt_lengths),
        PrefillBench,
        "test_prefill",
        (TIMING,),
        file="test_tokens.py",
        file_doc=FILE_DOC,
        about="A prompt into an empty key/value cache: prompt tokens/s and time to first token (kinds/tokens/).",
        sections=(
            Section(
                "prefill: prompt tokens/s, median round",
                {PREFILL_FIXTURE: "{column}"},
                Tokens.keys.tokens_per_s,
                "rate",
            ),
            Section(
                "time to first token: one prompt's prefill, no queue, median round",
                {PREFILL_FIXTURE: "{column}"},
                Tokens.keys.ttft_ms,
                "milliseconds",
                (TIMING,),
            ),
            Section(
                "prefill: FLOP/s as a share of the measured compute roof",
                {PREFILL_FIXTURE: "{column}"},
                Tokens.keys.compute_share,
                "percent",
            ),
        ),
        plots=("token_roofline",),
    ),
    DECODE_FIXTURE: Benchmark(
        cells_of(DECODE, lambda settings: settings.batches, lambda settings: settings.contexts),
        DecodeBench,
        "test_decode",
        (TIMING,),
        file="test_tokens.py",
        about="Greedy tokens against a prefilled key/value cache: tokens/s and time per output token (kinds/tokens/).",
        sections=(
            Section(
                "decode: new tokens/s of every sequence, median round",
                {DECODE_FIXTURE: "{column}"},
                Tokens.keys.tokens_per_s,
                "rate",
            ),
            Section(
                "time per output token: one decode step, median round",
                {DECODE_FIXTURE: "{column}"},
                Tokens.keys.tpot_ms,
                "milliseconds",
                (TIMING,),
            ),
            Section(
                "key/value cache: bytes per token of one sequence, counted",
                {DECODE_FIXTURE: "{column}"},
                Tokens.keys.cache_bytes_per_token,
                "bytes",
            ),
            Section(
                "decode: weights and cache read per second as a share of the measured bandwidth roof",
                {DECODE_FIXTURE: "{column}"},
                Tokens.keys.bandwidth_share,
                "percent",
            ),
        ),
    ),
    LOAD_FIXTURE: Benchmark(
        token_serve_cells,
        TokenServingBench,
        "test_token_serving",
        TOKEN_METRICS,
        timed=False,
        file="test_tokens.py",
        about="A generative model under MLPerf LoadGen with token latencies: Server's peak request rate under its "
        "TTFT and TPOT limits, Offline's tokens/s, static and continuous batching (kinds/tokens/).",
        sections=(
            Section(
                "tokens under load (LoadGen Server): peak requests/s with TTFT and TPOT within the limits",
                {LOAD_FIXTURE: "{column}"},
                TokenLoad.keys.peak_rate,
                "rate",
                (TOKEN_RATE,),
            ),
            Section(
                "time to first token under load: median at the fixed rate (half the peak)",
                {LOAD_FIXTURE: "{column}"},
                TokenLoad.keys.ttft_p50_ms,
                "milliseconds",
                (TOKEN_TTFT,),
            ),
            Section(
                "time per output token under load: median at the fixed rate (half the peak)",
                {LOAD_FIXTURE: "{column}"},
                TokenLoad.keys.tpot_p50_ms,
                "milliseconds",
                (TOKEN_TPOT,),
            ),
            Section(
                "time to first token under load: the limits' percentile (p90; MLPerf's rules: p99) at the fixed rate",
                {LOAD_FIXTURE: "{column}"},
                TokenLoad.keys.ttft_held_ms,
                "milliseconds",
            ),
            Section(
                "time per output token under load: the limits' percentile (p90; MLPerf's rules: p99) at the fixed rate",
                {LOAD_FIXTURE: "{column}"},
                TokenLoad.keys.tpot_held_ms,
                "milliseconds",
            ),
            Section(
                "output tokens/s under load (Offline: all requests at once; Server: completed at the fixed rate)",
                {LOAD_FIXTURE: "{column}"},
                TokenLoad.keys.output_tokens_per_s,
                "rate",
                (TOKEN_OFFLINE,),
            ),
            Section(
                "the smallest slowdown of the model's decode step that TPOT's gate fails (Server, at the fixed rate: "
                "1 + tolerance x TPOT / the step's median in the loop; the rest of a served token is the loop's)",
                {LOAD_FIXTURE: "{column}"},
                TokenLoad.keys.tpot_gate_sees_decode_slowdown,
                "times",
            ),
            Section(
                "the batching with the highest peak request rate (Server)",
                {LOAD_FIXTURE: "{column}"},
                TokenLoad.keys.best_batching,
                "plain",
            ),
        ),
        plots=("tokens_under_load",),
        options=(LIMITS_OPTION, RATE_TOLERANCE, LATENCY_TOLERANCE, OFFLINE_TOLERANCE),
    ),
}
