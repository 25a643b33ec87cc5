"""A serving cell's result, typed (accelbench.measured.Part): no framework, no pytest."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.measured import Part


@dataclass(frozen=True)
class Serving(Part):
    """A serving cell's LoadGen result (kinds/serving/bench.py), as LoadGen's summary log reports it."""

    scenario: str | None = None
    loadgen_valid: bool | None = None
    loadgen_why_invalid: str | None = None  # LoadGen's unsatisfied constraints and recommendations
    early_stopping: str | None = None  # LoadGen's early-stopping lines: queries seen, percentiles they support
    # the scenario's own: SingleStream p90, MultiStream p99, Server p99 at the fixed QPS
    serving_latency_ms: float | None = None
    serving_percentile: str | None = None  # the percentile serving_latency_ms is ("p90": what the queries support)
    serving_rate: float | None = None  # Offline samples/s; Server's peak QPS under the bound
    offline_batch: int | None = None  # Offline: the batch it predicted at (the run's largest for the model)
    serving_p50_ms: float | None = None
    serving_p90_ms: float | None = None
    serving_p99_ms: float | None = None
    latency_bound_ms: float | None = None  # Server's bound on p99
    peak_qps_precision: float | None = None  # the search bracket's relative width when it stopped
    best_batching: str | None = None  # Server: the setting with the highest peak QPS
    fixed_qps: float | None = None  # Server: the rate its gated p99 is measured at
    expected_latency_ms: float | None = None  # what LoadGen's schedule was set from, measured just before
    expected_batch_samples_per_s: float | None = None
    # The serving loop's own clock over the run its latency is from (work.py LOOP_PARTS), the
    # median batch's: its wait on the queue, its predict call, and the two together, ms.
    # LoadGen's latency holds the loop's, and LoadGen's own issue and completion.
    loop_wait_ms: float | None = None
    loop_predict_ms: float | None = None
    loop_ms: float | None = None
    server_runs: list | None = None  # Server: every rate tried ({batching, qps, valid, p50/p90/p99 ms}), for the plot
    loadgen_logs: str | None = None  # the folder of this cell's LoadGen logs, a folder per run
