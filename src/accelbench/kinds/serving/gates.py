"""Serving's gates: each scenario's headline under LoadGen. A rate (Server's peak QPS under the
latency bound, Offline's samples/s) may not drop; a latency (SingleStream's p90, MultiStream's
p99, Server's p99 at the fixed QPS the baseline was recorded at, stored beside it as
FIXED_QPS) may not rise. Both depend on the hardware and on the libraries (a TensorFlow
release moves the per-call overhead a served batch pays), like memory."""

from __future__ import annotations

from accelbench.judge.gates import GATES, GateSpec
from accelbench.judge.rules import RelativeDrop, RelativeRise

SERVING_RATE, SERVING_LATENCY, FIXED_QPS = "serving_rate", "serving_latency_ms", "serving_fixed_qps"
for _metric, _rule in (
    (SERVING_RATE, lambda tolerances: RelativeDrop(tolerances["serving"])),
    (SERVING_LATENCY, lambda tolerances: RelativeRise(tolerances["serving_latency"])),
):
    GATES.register(
        _metric,
        GateSpec(
            _metric,
            "serving.json",
            lambda s: (s.hardware, s.software, s.dataset.name),
            _rule,
            timed=True,
            fingerprints=2,
        ),
    )
