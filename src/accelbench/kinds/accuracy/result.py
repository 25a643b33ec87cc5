"""The recipe and parity cells' results, typed (accelbench.measured.Part): no framework, no
pytest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from accelbench.measured import Part

# Keys named after the dataset's quality (accuracy, mae): an accuracy cell's keys are those it
# always had.
_QUALITY = "quality_metric"


@dataclass(frozen=True)
class Recipe(Part):
    """The published recipe from a fixed seed, scored by the dataset's quality."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "quality": "{metric}",
        "target": "target_{metric}",
        "per_epoch": "{metric}_per_epoch",
    }
    NAMING: ClassVar[tuple[str, ...]] = ("metric",)

    metric: str = "accuracy"
    quality_metric: str | None = None
    quality: float | None = None
    target: float | None = None
    per_epoch: list[float] | None = None
    epochs: int | None = None
    train_seconds: float | None = None
    epochs_to_target: int | None = None
    seconds_to_target: float | None = None
    published_accuracy: float | None = None
    cumulative_train_seconds: list[float] | None = None
    loss_per_epoch: list[float] | None = None
    device: str | None = None
    backend: str | None = None
    precision: str | None = None

    @classmethod
    def read(cls, info: Mapping[str, Any]) -> Recipe:
        """The recipe as a cell recorded it, keyed by the quality it names (accuracy if none)."""
        return cls.of(info, metric=info.get(_QUALITY) or "accuracy")


@dataclass(frozen=True)
class AgainstTwin(Part):
    """The recipe's quality held to a twin from the same seed: tensorflow's (another backend)
    and float32's (a lower precision)."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "tensorflow_quality": "tensorflow_{metric}",
        "gap_to_tensorflow": "{metric}_gap_to_tensorflow",
        "float32_quality": "float32_{metric}",
    }
    NAMING: ClassVar[tuple[str, ...]] = ("metric",)

    metric: str = "accuracy"
    tensorflow_quality: float | None = None
    gap_to_tensorflow: float | None = None
    loss_digits_shared_with_tensorflow: int | None = None
    float32_quality: float | None = None
    share_of_float32: float | None = None


@dataclass(frozen=True)
class Parity(Part):
    """The recipe on a device against the CPU's, both trained from the same seed."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "reference_quality": "reference_{metric}",
        "candidate_quality": "candidate_{metric}",
        "gap": "{metric}_gap",
        "matching_digits": "{metric}_matching_digits",
    }
    NAMING: ClassVar[tuple[str, ...]] = ("metric",)

    metric: str = "accuracy"
    reference_quality: float | None = None
    candidate_quality: float | None = None
    gap: float | None = None
    matching_digits: int | None = None
    reference_loss: float | None = None  # the last epoch's training loss: shown, not gated
    candidate_loss: float | None = None
    loss_matching_digits: int | None = None
    # The first epoch's, which --parity-digits gates (ParityBench says why not the last's).
    reference_first_epoch_loss: float | None = None
    candidate_first_epoch_loss: float | None = None
    first_epoch_loss_matching_digits: int | None = None


# --- memory ----------------------------------------------------------------------------------
