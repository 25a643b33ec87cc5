"""What each preset sets for the speedup and overhead cells (run.presets.KIND_SETTINGS
"speedup")."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.run.presets import KIND_SETTINGS, KindSettings


@dataclass(frozen=True)
class SpeedupSettings:
    interleaved_pairs: int  # rounds a side behind every ratio (speedups, harness overhead), A B B A


KIND_SETTINGS.register(
    "speedup",
    KindSettings(
        {
            "quick": SpeedupSettings(interleaved_pairs=6),
            "full": SpeedupSettings(interleaved_pairs=15),
            "smoke": SpeedupSettings(interleaved_pairs=5),
        }
    ),
    origin=__name__,
)
