"""Serving's gates: each scenario's headline under LoadGen. A rate (Server's peak QPS under the
latency bound, Offline's samples/s) may not drop; a latency (SingleStream's p90, MultiStream's
p99, Server's p99 at the fixed QPS the baseline was recorded at, stored beside it as
FIXED_QPS) may not rise. Each depends on the hardware and on the libraries (a TensorFlow
release moves the per-call overhead a served batch pays), like memory, on the data (the model's
inputs) and on what the cells are served under (the preset's batchings and durations, LoadGen's
rules); Server's two, on --latency-bound as well: they have gates of their own, so that a run
under another bound leaves the other scenarios judged."""

from __future__ import annotations

from accelbench.judge.gates import GATES, GateSpec, served
from accelbench.judge.rules import RelativeDrop, RelativeRise
from accelbench.option import Option, fraction, positive_number

SERVING_RATE, SERVING_LATENCY = "serving_rate", "serving_latency_ms"  # Offline's; SingleStream's, MultiStream's
SERVER_RATE, SERVER_LATENCY = "server_peak_qps", "server_latency_ms"  # Server's peak, and its p99 at FIXED_QPS
FIXED_QPS = "serving_fixed_qps"
# The bound Server's peak is searched under: its gates keep a peak found under another apart.
BOUND = Option(
    "--latency-bound",
    positive_number,
    "MS",
    "Server's latency bound in milliseconds for every served model: the peak QPS is the highest whose "
    "99th-percentile latency stays under it. Default: each model's own (ModelSpec.latency_bound_ms, 10 ms).",
    None,
)
# Their tolerances are options of the kind's, which the run hands the gates by flag.
RATE_TOLERANCE = Option(
    "--serving-tolerance",
    fraction,
    "FRACTION",
    "Relative drop allowed below a baseline for a serving rate (Server's peak QPS under the bound, "
    "Offline's samples/s).",
    "0.35",
)
LATENCY_TOLERANCE = Option(
    "--serving-latency-tolerance",
    positive_number,
    "FRACTION",
    "Relative rise allowed above a baseline for a serving latency (SingleStream's p90, MultiStream's p99, Server's "
    "p99 at the fixed QPS).",
    "0.6",
)


def _drop(tolerances: dict[str, float]) -> RelativeDrop:
    return RelativeDrop(RATE_TOLERANCE.of(tolerances))


def _rise(tolerances: dict[str, float]) -> RelativeRise:
    return RelativeRise(LATENCY_TOLERANCE.of(tolerances))


# Server's peak is searched under the bound, and its fixed QPS is a share of that peak.
for _metric, _rule, _options in (
    (SERVING_RATE, _drop, ()),
    (SERVING_LATENCY, _rise, ()),
    (SERVER_RATE, _drop, (BOUND,)),
    (SERVER_LATENCY, _rise, (BOUND,)),
):
    GATES.register(
        _metric,
        GateSpec(
            _metric,
            "serving.json",
            lambda s, options=_options: (s.hardware, s.software, f"{s.dataset.name}, {served(s, *options)}"),
            _rule,
            timed=True,
            fingerprints=2,
        ),
    )
