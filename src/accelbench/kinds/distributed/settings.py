"""What each preset sets for the distributed and threads cells (run.presets.KIND_SETTINGS
"distributed")."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.run.presets import KIND_SETTINGS, KindSettings


@dataclass(frozen=True)
class DistributedSettings:
    # Multi-device and multi-worker cells: replicas (or worker processes) each; 0 leaves them
    # out (each starts fresh TensorFlow processes: 20-40 s a cell on 2 cores).
    replicas: int = 0
    # 1 intra-op thread against all, per model (the slides' 1 vs 8 vCPUs): fresh processes a
    # side, in the order A B B A (each starts TensorFlow: about 5 s); 0 leaves them out.
    thread_processes: int = 0


KIND_SETTINGS.register(
    "distributed",
    KindSettings(
        {
            "quick": DistributedSettings(),
            "full": DistributedSettings(replicas=2, thread_processes=2),
            "smoke": DistributedSettings(replicas=2, thread_processes=1),
        }
    ),
    origin=__name__,
)
