"""What each preset sets for the memory cells (run.presets.KIND_SETTINGS "memory")."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.run.presets import KIND_SETTINGS, KindSettings


@dataclass(frozen=True)
class MemorySettings:
    leak_predictions: int  # repeated predictions the leak check watches


KIND_SETTINGS.register(
    "memory",
    KindSettings(
        {
            "quick": MemorySettings(leak_predictions=20),
            "full": MemorySettings(leak_predictions=200),
            "smoke": MemorySettings(leak_predictions=20),
        }
    ),
    origin=__name__,
)
