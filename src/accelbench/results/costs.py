"""Hours and dollars at the target sizes, per device: measured where the run timed the device,
assumed where the user gave a speedup over the CPU for a device it did not, and labelled so.

The published comparison this suite grew out of multiplied one CPU run by assumed device ratios
(a GPU = 14 CPUs, a TPU = 768 GPU-hours an hour); here such ratios are only ever the user's,
shown next to every figure they touch.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.axes.devices import REFERENCE_DEVICE
from accelbench.axes.models import MODELS
from accelbench.judge import projection
from accelbench.units import format_dollars, format_hours

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class ProjectedTime:
    """One data-scaling cell's time at the target size, as the cost table needs it."""

    model: str
    phase: str  # train: one epoch of the recipe (or an estimator's fit); predict: the test set
    device: str
    target: int
    seconds: float
    ci95: tuple[float, float]
    reasons: tuple[str, ...]  # why the projection is unsafe; none: extrapolated

    @property
    def verdict(self) -> str:
        return projection.verdict(self.reasons)

    @property
    def epochs(self) -> int:
        """Training the recipe takes its epochs of the target set; a fit or a prediction, one pass."""
        spec = MODELS[self.model]
        return spec.recipe_epochs if self.phase == "train" and spec.batch_trained else 1

    @property
    def work(self) -> str:
        if self.phase == "predict":
            return f"{self.model} predicting {self.target:,} test images"
        if self.epochs == 1:
            return f"{self.model} fitted on {self.target:,} images"
        return f"{self.model} recipe, {self.epochs} epochs of {self.target:,} images"


@dataclass(frozen=True)
class DeviceCost:
    projected: ProjectedTime  # the measurement it comes from (the CPU's, for an assumed device)
    device: str
    basis: str  # "measured", or "assumed: <speedup>x cpu (--assume-speedup)"
    speedup: float  # over the projected measurement: 1 where measured
    price_per_hour: float | None

    @property
    def hours(self) -> float:
        return self.projected.seconds * self.projected.epochs / self.speedup / SECONDS_PER_HOUR

    @property
    def hours_ci95(self) -> tuple[float, float]:
        scale = self.projected.epochs / self.speedup / SECONDS_PER_HOUR
        return self.projected.ci95[0] * scale, self.projected.ci95[1] * scale

    @property
    def dollars(self) -> float | None:
        return None if self.price_per_hour is None else self.hours * self.price_per_hour

    def as_json(self) -> dict:
        return dataclasses.asdict(
            SavedCost(
                model=self.projected.model,
                phase=self.projected.phase,
                device=self.device,
                basis=self.basis,
                target_n=self.projected.target,
                epochs=self.projected.epochs,
                hours=self.hours,
                hours_ci95=list(self.hours_ci95),
                price_per_hour=self.price_per_hour,
                dollars=self.dollars,
                projection_verdict=self.projected.verdict,
            )
        )


@dataclass(frozen=True)
class SavedCost:
    """A DeviceCost as a saved run keeps it (the accelbench section's "projections"), read back
    by the report: its keys are these fields', as runs have always saved them."""

    model: str = ""
    phase: str = ""
    device: str = ""
    basis: str = ""
    target_n: int | None = None
    epochs: int | None = None
    hours: float | None = None
    hours_ci95: list[float] | None = None
    price_per_hour: float | None = None
    dollars: float | None = None
    projection_verdict: str = ""

    @classmethod
    def of(cls, saved: Mapping[str, Any]) -> SavedCost:
        """As saved; a key this version does not know is left out, a missing one is its default."""
        names = {field.name for field in dataclasses.fields(cls)}
        return cls(**{name: value for name, value in saved.items() if name in names})


def device_costs(
    projected: Iterable[ProjectedTime], assumed_speedups: Mapping[str, float], prices: Mapping[str, float]
) -> list[DeviceCost]:
    """Every measured device, then every assumed one (scaled from the CPU's projection) that the
    run did not measure, for each model and phase. Assumptions apply to models that run on
    the assumed device type."""
    rows = []
    order = lambda p: (p.model, p.phase != "train")  # training first, then prediction
    by_work = itertools.groupby(sorted(projected, key=order), key=order)
    for (model, _), group in by_work:
        measured = {p.device: p for p in group}
        rows += [DeviceCost(p, device, "measured", 1.0, prices.get(device)) for device, p in measured.items()]
        reference = measured.get(REFERENCE_DEVICE)
        for device, speedup in assumed_speedups.items():
            if reference is None or device in measured or device.split(":")[0] not in MODELS[model].device_types:
                continue
            rows.append(
                DeviceCost(
                    reference,
                    device,
                    f"assumed: {speedup:g}x {REFERENCE_DEVICE} (--assume-speedup)",
                    speedup,
                    prices.get(device),
                )
            )
    return rows


def lines(costs: list[DeviceCost]) -> list[str]:
    """The terminal's table: one heading per work, one line per device."""
    out = []
    for _, group in itertools.groupby(costs, key=lambda c: (c.projected.model, c.projected.phase)):
        group = list(group)
        out.append(f"{group[0].projected.work}:")
        for cost in group:
            low, high = cost.hours_ci95
            money = (
                f"{format_dollars(cost.dollars)} at ${cost.price_per_hour:g}/h"
                if cost.dollars is not None
                else "no price given (--device-prices)"
            )
            out.append(
                f"  {cost.device:<6} {format_hours(cost.hours):>12} [{format_hours(low)}, {format_hours(high)}]  "
                f"{money:<28}  {cost.basis}"
            )
        reasons = group[0].projected.reasons
        out.append(f"  projection: {'unsafe' if reasons else 'extrapolated'}")
        out += [f"    - {reason}" for reason in reasons]
    return out
