"""What each preset sets for the serving cells (run.presets.KIND_SETTINGS "serving")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from accelbench.kinds.serving.work import Batching
from accelbench.run.presets import ALL_MODELS, KIND_SETTINGS, KindSettings


@dataclass(frozen=True)
class ServingSettings:
    """How the serving cells run LoadGen (work.py): each run lasts at least min_duration_ms and
    min_query_count queries (--serving-rules mlperf: MLPerf's own); Server's peak search tries
    every batching setting, stopping at qps_precision or max_search_runs."""

    models: tuple[str, ...]  # ALL_MODELS (): every model the run has; and every model a user's module declared
    min_duration_ms: int
    min_query_count: int
    batchings: tuple[Batching, ...]  # the first is the streams' and Offline's maximum batch
    qps_precision: float
    max_search_runs: int
    attempts: int = 2  # LoadGen runs per result (the best VALID one), per rate of the search (work.py)


# Quick serves the MLP (and a user's models) alone, each LoadGen run a quarter of a second:
# about 6 s for its four scenarios on a 2-core CPU (docs/measurements.md).
QUICK_SERVING = ServingSettings(
    models=("mlp",),
    min_duration_ms=250,
    min_query_count=64,
    batchings=(Batching(32, 1.0),),
    qps_precision=0.1,
    max_search_runs=8,
)
KIND_SETTINGS.register(
    "serving",
    KindSettings(
        {
            "quick": QUICK_SERVING,
            # Three maximum batch sizes x two batching timeouts (Triton's max_queue_delay), each
            # searched for its peak QPS under the bound.
            "full": ServingSettings(
                models=ALL_MODELS,
                min_duration_ms=2000,
                min_query_count=256,
                batchings=tuple(Batching(size, timeout) for size in (16, 64, 256) for timeout in (1.0, 4.0)),
                qps_precision=0.05,
                max_search_runs=12,
            ),
            "smoke": dataclasses.replace(
                QUICK_SERVING,
                min_duration_ms=200,
                batchings=(Batching(16, 1.0),),
                qps_precision=0.25,
                max_search_runs=6,
                attempts=1,
            ),
        }
    ),
    origin=__name__,
)
