"""What each preset sets for the SVM cells (run.presets.KIND_SETTINGS "svm")."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.run.presets import KIND_SETTINGS, KindSettings


@dataclass(frozen=True)
class SvmSettings:
    subsets: tuple[int, ...]  # n-image subsets the SVM is fitted on


KIND_SETTINGS.register(
    "svm",
    KindSettings(
        {
            "quick": SvmSettings(subsets=(500, 1000)),
            "full": SvmSettings(subsets=(1000, 2000, 5000)),
            "smoke": SvmSettings(subsets=(500, 1000)),
        }
    ),
    origin=__name__,
)
