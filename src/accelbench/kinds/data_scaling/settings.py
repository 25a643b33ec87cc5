"""What each preset sets for the data-scaling cells (run.presets.KIND_SETTINGS "data_scaling")."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.run.presets import ALL_MODELS, KIND_SETTINGS, KindSettings


@dataclass(frozen=True)
class DataScalingSettings:
    """How the data-scaling cells grow the data: sizes double from `smallest` (training, test
    images) up to all of the data; every size is timed in `rounds` interleaved rounds and its
    host peak taken `memory_repeats` times (a memray tracker costs about 0.4 s once TensorFlow
    is loaded; with one peak per size the interval comes from the fit's residuals); a size
    slower than `slowest_seconds` is the last."""

    smallest: tuple[int, int]
    models: tuple[str, ...]  # quick scales the SVM's data alone (seconds); full (ALL_MODELS) every model
    rounds: int
    memory_repeats: int
    slowest_seconds: float


KIND_SETTINGS.register(
    "data_scaling",
    KindSettings(
        {
            "quick": DataScalingSettings(
                smallest=(100, 32), models=("svm",), rounds=3, memory_repeats=1, slowest_seconds=10.0
            ),
            "full": DataScalingSettings(
                smallest=(250, 128), models=ALL_MODELS, rounds=5, memory_repeats=3, slowest_seconds=300.0
            ),
            "smoke": DataScalingSettings(
                smallest=(100, 32), models=("mlp", "svm"), rounds=1, memory_repeats=1, slowest_seconds=10.0
            ),
        }
    ),
    origin=__name__,
)
