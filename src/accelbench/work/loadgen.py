"""MLPerf LoadGen, driven: a scenario's TestSettings from a plan and the suite's own
measurements of the cell, one LoadGen test against a system under test, and LoadGen's result
read back from the summary log it writes (a served model's latencies, and a generative one's
token latencies where the test measured them). LoadGen itself (the `mlcommons-loadgen` wheel,
module `mlperf_loadgen`) issues the queries, times them and decides VALID or INVALID; nothing
here re-implements it. The serving and the token cells drive it (kinds/serving/, kinds/tokens/).
Child-safe: a backend's worker runs it too."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.option import Option, name_in
from accelbench.registry import Registry

NS = 1e9
# LoadGen's summary prints these percentiles of the queries' latencies ("99.00 percentile latency (ns)").
PERCENTILES = ("50.00", "90.00", "95.00", "97.00", "99.00", "99.90")
SUMMARY_FILE = "mlperf_log_summary.txt"
# MLPerf's own rules, from the mlperf.conf LoadGen carries (TestSettings.FromConfig, conf_type 0):
# 600 s a scenario, 662 MultiStream queries, ...; the model name matches none of MLPerf's, so
# its "*" entries apply.
MLPERF_CONF_TYPE = 0


@dataclass(frozen=True)
class Expected:
    """What LoadGen schedules from, measured by the suite on this cell just before: one
    sample's latency (a SingleStream query) and the samples/s of full batches (Offline's
    expected QPS). With LoadGen's defaults instead, short runs come back INVALID."""

    latency_s: float
    batch_samples_per_s: float
    multi_stream_latency_s: float  # one query of MultiStream's 8 samples, predicted as one batch


@dataclass(frozen=True)
class Durations:
    """How long a scenario runs: LoadGen's min_duration_ms and min_query_count ("mlperf": its
    own mlperf.conf's, whatever these say)."""

    min_duration_ms: int
    min_query_count: int
    rules: str = "preset"  # a RULES name: "preset" (these), "mlperf" (MLPerf's minimum durations and query counts)


@dataclass(frozen=True)
class Scenario:
    """A LoadGen scenario: its TestScenario, the percentile its result is read at, and how its
    settings follow from the measured cell (qps: Server's target, None elsewhere)."""

    name: str
    percentile: str  # the percentile MLPerf reports it at
    configure: Callable[[Any, Expected, Durations, float, float | None], None]  # (settings, ..., bound_s, qps)


# A stream's queries are pre-generated for min duration / expected latency: a query faster
# than expected runs out of them before the min duration and the run is INVALID ("Decrease
# the expected latency so the loadgen pre-generates more queries"). Half the measured latency
# leaves room for a quieter moment than the one measured.
STREAM_MARGIN = 0.5


# LoadGen's early stopping needs at least this many queries before it will vouch for a 99th
# percentile (its summary: "Need to process at least 662 queries for early stopping"); 64 for
# a 90th.
P99_QUERIES, P90_QUERIES = 662, 64


def _single_stream(settings: Any, expected: Expected, durations: Durations, bound_s: float, qps: float | None) -> None:
    settings.single_stream_expected_latency_ns = int(STREAM_MARGIN * expected.latency_s * NS)
    if not RULES[durations.rules]:
        settings.min_query_count = max(durations.min_query_count, P90_QUERIES)


def _multi_stream(settings: Any, expected: Expected, durations: Durations, bound_s: float, qps: float | None) -> None:
    """MLPerf reports MultiStream at p99, over at least 662 queries (its rules' run: 600 s). The
    preset's seconds are asked for, and report, the p90: over 20 unchanged quick runs the MLP's
    p99 of half a second (about 800 queries: its 8th slowest) moved from 0.67 to 1.29 ms, one
    scheduler hiccup of the machine, where its p90 holds."""
    settings.multi_stream_expected_latency_ns = int(STREAM_MARGIN * expected.multi_stream_latency_s * NS)
    if not RULES[durations.rules]:
        settings.multi_stream_target_latency_percentile = 0.90
        settings.min_query_count = max(durations.min_query_count, P90_QUERIES)


def _server(settings: Any, expected: Expected, durations: Durations, bound_s: float, qps: float | None) -> None:
    """A rate, and the bound on p99; enough queries that early stopping can vouch for the p99 at
    a low rate too (else a slow model's every rate is INVALID for its query count, not its latency)."""
    settings.server_target_qps = float(qps or 1.0)
    settings.server_target_latency_ns = int(bound_s * NS)
    if not RULES[durations.rules]:
        settings.min_query_count = max(durations.min_query_count, P99_QUERIES)


def _offline(settings: Any, expected: Expected, durations: Durations, bound_s: float, qps: float | None) -> None:
    # LoadGen issues expected QPS x min duration x 1.1 samples as one query; a server faster
    # than expected finishes before the min duration and the run is INVALID. Twice the measured
    # batch rate leaves room for a quieter moment than the one measured.
    settings.offline_expected_qps = 2.0 * expected.batch_samples_per_s


SCENARIOS: Registry[Scenario] = Registry("LoadGen scenario")
SCENARIOS.register("SingleStream", Scenario("SingleStream", "90.00", _single_stream))
SCENARIOS.register("MultiStream", Scenario("MultiStream", "99.00", _multi_stream))
SCENARIOS.register("Server", Scenario("Server", "99.00", _server))
SCENARIOS.register("Offline", Scenario("Offline", "90.00", _offline))


def settings_for(
    scenario: Scenario, expected: Expected, durations: Durations, bound_s: float, qps: float | None = None
) -> Any:
    """The scenario's TestSettings: MLPerf's rules from LoadGen's own mlperf.conf, or the
    plan's short durations; the schedule from the measured cell."""
    import mlperf_loadgen as lg

    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario.name)
    settings.mode = lg.TestMode.PerformanceOnly
    if RULES[durations.rules]:
        settings.FromConfig("", "accelbench", scenario.name, MLPERF_CONF_TYPE)
    else:
        settings.min_duration_ms = durations.min_duration_ms
        settings.min_query_count = durations.min_query_count
    scenario.configure(settings, expected, durations, bound_s, qps)
    return settings


# --serving-rules: whether LoadGen's runs last as long as MLPerf's rules ask (its mlperf.conf).
RULES: Registry[bool] = Registry("serving rules")
RULES.register("preset", False)  # the preset's durations: seconds a scenario, percentiles the queries support
RULES.register("mlperf", True)  # MLPerf's: at least 600 s and its query counts a scenario
SERVING_RULES = Option(
    "--serving-rules",
    name_in(RULES),
    "NAME",
    "How long each LoadGen run of the serving and token-serving cells lasts: preset (its few seconds; the "
    "terminal says which percentile the query count supports) or mlperf (MLPerf's minimum durations and query "
    "counts: 600 s a run).",
    "preset",
)


@dataclass(frozen=True)
class LoadgenResult:
    """One LoadGen test as its summary log reports it."""

    scenario: str
    valid: bool
    why_invalid: tuple[str, ...]  # the constraints it reports unsatisfied, and its recommendations
    latency_ms: dict[str, float]  # percentile ("99.00") -> milliseconds
    samples_per_s: float | None  # Offline: samples/s; Server: completed samples/s; streams: QPS w/o overhead
    scheduled_qps: float | None  # Server: the Poisson rate LoadGen issued at
    early_stopping: tuple[str, ...]  # its early-stopping lines: the queries seen and what percentile they support
    log_dir: str
    target_qps: float | None = None  # Server: the rate asked for
    error: str | None = None  # the system under test raised: its one line (the numbers are not a result)
    reported_percentile: str | None = None  # a stream's result line: the percentile LoadGen reports it at ("90.00")
    # With token latencies on (a generative model's test): time to first token and time per
    # output token, percentile -> milliseconds, and output tokens/s (Server: completed).
    first_token_ms: dict[str, float] = field(default_factory=dict)
    output_token_ms: dict[str, float] = field(default_factory=dict)
    tokens_per_s: float | None = None
    # The system under test's own clock over the same run, where it keeps one (the serving
    # loop's: kinds/serving/work.py LOOP_PARTS), part -> the median over its batches, ms.
    loop_parts_ms: dict[str, float] = field(default_factory=dict)

    def at(self, percentile: str) -> float | None:
        return self.latency_ms.get(percentile)

    def as_json(self) -> dict[str, Any]:
        """Every field (a worker's reply, read back by from_json): tuples as lists."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> LoadgenResult:
        return cls(
            **{
                **saved,
                "why_invalid": tuple(saved.get("why_invalid", ())),
                "early_stopping": tuple(saved.get("early_stopping", ())),
            }
        )


# The token latencies' lines of a summary ("99.00 percentile first token latency (ns)", "99.00
# percentile time to output token (ns)") and its rate of output tokens.
_FIRST_TOKEN_LINE = "{} percentile first token latency (ns)"
_OUTPUT_TOKEN_LINE = "{} percentile time to output token (ns)"
_TOKEN_RATE_KEYS = ("Completed tokens per second", "Tokens per second")


def as_plain(value: Any) -> Any:
    """A tree of dataclasses with LoadGen's results in it (a cell's measurement, crossing from a
    worker) as JSON-ready values: tuples as lists, an unbounded float as None."""
    if isinstance(value, LoadgenResult):
        return value.as_json()
    if dataclasses.is_dataclass(value):
        return {f.name: as_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [as_plain(item) for item in value]
    if isinstance(value, float) and value == float("inf"):
        return None
    return value


_REPORTED = re.compile(r"^(?P<percentile>[\d.]+)th percentile latency \(ns\)$")
_LINE = re.compile(r"^\s*(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
_RATE_KEYS = ("Samples per second", "Completed samples per second", "QPS w/o loadgen overhead")


def read_summary(scenario: str, log_dir: Path, target_qps: float | None = None) -> LoadgenResult:
    """LoadGen's result from its summary log (mlperf_log_summary.txt): "key : value" lines,
    the "Result is" verdict, the constraints it reports unsatisfied ("... satisfied : NO"),
    its recommendations and its early-stopping lines (" * ...")."""
    text = (log_dir / SUMMARY_FILE).read_text(encoding="utf-8")
    values: dict[str, str] = {}
    unsatisfied: list[str] = []
    bullets: dict[str, list[str]] = {
        "Recommendations": [],
        "Early Stopping Result": [],
        "TTFT Early Stopping Result": [],
        "TPOT Early Stopping Result": [],
    }
    heading = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("* ") and heading in bullets:
            bullets[heading].append(stripped[2:])
            continue
        if stripped.rstrip(":") in bullets:
            heading = stripped.rstrip(":")
            continue
        found = _LINE.match(line)
        if not found:
            heading = None if stripped.startswith("=") else heading
            continue
        key, value = found["key"], found["value"]
        values.setdefault(key, value)
        if key.endswith("satisfied") and value.upper().startswith("NO"):
            unsatisfied.append(f"{key[0].lower()}{key[1:]}: NO")
    keys = {p: f"{p} percentile latency (ns)" for p in PERCENTILES}
    latency = {p: int(values[key]) / 1e6 for p, key in keys.items() if key in values}
    reported = next((found for key in values if (found := _REPORTED.match(key))), None)
    if reported is not None:  # "90.0th percentile latency (ns) : 1124198": the stream's own result
        latency.setdefault(f"{float(reported['percentile']):.2f}", int(values[reported.string]) / 1e6)
    rate = next((float(values[key]) for key in _RATE_KEYS if key in values), None)
    scheduled = values.get("Scheduled samples per second")
    percentiles = lambda line: {p: int(values[line.format(p)]) / 1e6 for p in PERCENTILES if line.format(p) in values}
    token_rate = next((float(values[key]) for key in _TOKEN_RATE_KEYS if key in values), None)
    stopping = [
        *bullets["Early Stopping Result"],
        *(f"TTFT: {line}" for line in bullets["TTFT Early Stopping Result"]),
        *(f"TPOT: {line}" for line in bullets["TPOT Early Stopping Result"]),
    ]
    return LoadgenResult(
        scenario=scenario,
        valid=values.get("Result is", "").upper() == "VALID",
        why_invalid=(*unsatisfied, *bullets["Recommendations"]),
        latency_ms=latency,
        samples_per_s=rate,
        scheduled_qps=float(scheduled) if scheduled else None,
        early_stopping=tuple(stopping),
        log_dir=str(log_dir),
        target_qps=target_qps,
        reported_percentile=f"{float(reported['percentile']):.2f}" if reported else None,
        first_token_ms=percentiles(_FIRST_TOKEN_LINE),
        output_token_ms=percentiles(_OUTPUT_TOKEN_LINE),
        tokens_per_s=token_rate,
    )


@dataclass
class SampleLibrary:
    """LoadGen's query sample library over arrays already in memory: loading is a no-op."""

    count: int
    performance_count: int
    handle: Any = field(default=None, repr=False)

    def __enter__(self) -> SampleLibrary:
        import mlperf_loadgen as lg

        self.handle = lg.ConstructQSL(self.count, self.performance_count, lambda _: None, lambda _: None)
        return self

    def __exit__(self, *exc: object) -> None:
        import mlperf_loadgen as lg

        lg.DestroyQSL(self.handle)


def run_test(sut: Any, library: SampleLibrary, settings: Any, log_dir: Path) -> None:
    """One LoadGen test, its logs in log_dir (kept: the report links them)."""
    import mlperf_loadgen as lg

    log_dir.mkdir(parents=True, exist_ok=True)
    log = lg.LogSettings()
    log.log_output.outdir = str(log_dir)
    log.log_output.copy_summary_to_stdout = False
    log.enable_trace = False  # the trace is megabytes a run; the summary and detail logs say what is reported
    lg.StartTestWithLogSettings(sut, library.handle, settings, log)


def _never(result: LoadgenResult) -> bool:
    return False


def best_run(
    attempts: int,
    root: Path,
    rank: Callable[[LoadgenResult], float],
    run: Callable[[Path], LoadgenResult],
    enough: Callable[[LoadgenResult], bool] = _never,
) -> LoadgenResult:
    """Up to `attempts` LoadGen runs (each its own log folder), the best VALID one by `rank`, or
    the last where none is VALID; stops at a raising system under test, and at the first VALID
    run that is `enough` (a rate of a peak search is VALID if any run of it is; a gated result
    holds its gates if any run of it does)."""
    results: list[LoadgenResult] = []
    for attempt in range(attempts):
        result = run(root / f"run-{attempt + 1}" if attempts > 1 else root)
        results.append(result)
        if result.error or (result.valid and enough(result)):
            break
    valid = [result for result in results if result.valid and not result.error]
    return min(valid, key=rank) if valid else results[-1]
