"""An SVM cell's result, typed (accelbench.measured.Part): no framework, no pytest."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.measured import Part


@dataclass(frozen=True)
class SvmFit(Part):
    subset: int | None = None
    pixels: str | None = None
    predict_seconds: float | None = None
    support_vectors: int | None = None
    accuracy: float | None = None  # on labelled data only


# --- speedups ----------------------------------------------------------------------------------
