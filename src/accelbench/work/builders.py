"""What a cell's work is built from, and the one builder of each work: the pytest
process (run/built.py) and a worker (processes/cellwork.py) both build through these, so a
trainer timed in the pytest process and one timed in an A/B side or another backend's worker
are the same code from the same inputs.

WORKS: timed work, a round at a time (a Trainer, a Predictor, or a user's own: anything with
run_round, samples_per_round, steps, compile_seconds and flops_per_sample()).
STEPS: one step for the memory cells (a training step, a predicted batch), with the analytic
estimate of its peak and why there is none.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from accelbench.axes.backends.backend import CompiledStep, weights_on
from accelbench.axes.data import Dataset
from accelbench.axes.flops import Costs
from accelbench.axes.models import ModelOptions, ModelSpec
from accelbench.registry import Registry


@dataclass(frozen=True)
class Site:
    """A cell's work, before it is built: the model, data, place and settings it is built from."""

    cell_id: str
    model: ModelSpec
    dataset: Dataset
    placement: Any  # axes.devices.Placement, or backends.Neutral on another backend
    batch_size: int
    options: ModelOptions
    round_seconds: float  # a training round's length, where steps are calibrated
    predict_round_seconds: float  # an inference round's
    say: Callable[[str], None] = lambda text: None

    def keras_model(self) -> Any:
        """The cell's model, uncompiled, built as the suite builds its own: from the run's seed,
        with its variables in the placement's scope, under the cell's precision."""
        from accelbench.work.build import build_model

        return build_model(
            self.model,
            self.dataset.input_shape,
            self.options,
            self.placement.scope(),
            train=False,
            outputs=self.dataset.outputs,
            quality=self.dataset.quality,
            input_dtype=str(self.dataset.x_train.dtype),
        )


class Work(Protocol):
    """Timed work: what pytest-benchmark, an A/B side and a backend's worker time a round of."""

    steps: int
    samples_per_round: int
    compile_seconds: float

    def run_round(self) -> Any: ...
    def flops_per_sample(self) -> float | str | None: ...  # str: "unknown: why"; None: not counted


def costs_of(work: Work) -> Costs:
    """A sample's executed FLOPs and bytes moved (axes/flops.py), where the work says: a method a
    work may leave out (a user's kind need not estimate them), unlike flops_per_sample."""
    estimate = getattr(work, "costs_per_sample", None)
    return estimate() if callable(estimate) else Costs()


def call_cost(work: Work) -> dict[str, float | None]:
    """A round's call's own cost and its share of the round, where the work sized its steps by
    it (a trainer's fit()); a work that did not (a user's) has none."""
    return {"call_seconds": getattr(work, "call_seconds", None), "call_share": getattr(work, "call_share", None)}


def its_own(work: Work) -> dict[str, Any]:
    """The numbers a work measured of its own (a user's kind's: a size, a count, a time the
    rounds do not show), from its optional `measured()` method, as {extra_info key: a number or
    a string}: recorded into the cell's extra_info wherever the work ran, this process or a
    backend's worker. A work without the method has none."""
    measured = getattr(work, "measured", None)
    found = measured() if callable(measured) else {}
    if not isinstance(found, dict) or not all(isinstance(key, str) for key in found):
        raise TypeError(f"{type(work).__name__}.measured() must return a dict of str keys, not {found!r}")
    return found


def weights_device(built: Any) -> str | None:
    """Where a built work's or memory step's Keras model's weights lie, as --devices names
    devices (gpu:0); None for one without a Keras model (an estimator's, or a user's work)."""
    return weights_on(getattr(built, "model", None))


def jit_compiled(work: Work) -> bool:
    """Whether the work's Keras model runs under XLA (an estimator's work has no model)."""
    return bool(getattr(getattr(work, "model", None), "jit_compile", False))


@dataclass(frozen=True)
class Step:
    """One step for a memory cell, and the estimate its host peak is capped by."""

    run: Callable[[], Any]
    estimated_bytes: int | None
    why_unknown: str | None
    built: Any = None  # the OneStep or OneBatch it runs (the memory ladder resizes a OneStep)
    compiled: CompiledStep | None = None  # the step as the backend's compiler counts it (None: no Keras model)


def _trainer(site: Site, steps: int | None, resident: bool = False) -> Work:
    """resident: its inputs lie on its device from the start, so its rounds copy nothing from
    the host (the device speedup without the host-to-device copy)."""
    from accelbench.work.training import Trainer

    return Trainer.build(
        site.cell_id,
        site.model,
        site.dataset,
        site.placement,
        site.batch_size,
        site.options,
        site.round_seconds,
        steps=steps,
        resident=resident,
    )


def _predictor(site: Site, steps: int | None) -> Work:
    from accelbench.work.inference import PREDICTORS

    return PREDICTORS[site.model.framework].build(
        site.model,
        site.dataset,
        site.placement,
        site.batch_size,
        site.options,
        site.predict_round_seconds,
        steps=steps,
    )


# A timed work's name -> its builder (site, steps per round or None to calibrate) -> Work.
WORKS: Registry[Callable[[Site, int | None], Work]] = Registry("cell work")
WORKS.register("train", _trainer)
WORKS.register("train_inputs_on_device", functools.partial(_trainer, resident=True))
WORKS.register("inference", _predictor)


def _training_step(site: Site) -> Step:
    from accelbench.work import memory
    from accelbench.work.training import OneStep

    step = OneStep.build(site.cell_id, site.model, site.dataset, site.placement, site.batch_size, site.options)
    estimate = memory.estimate(step.model)
    compiled = CompiledStep(step.model, "train", step.batch)
    return Step(step.run, estimate.step(site.batch_size), estimate.why_unknown, step, compiled)


def _predicted_batch(site: Site) -> Step:
    from accelbench.work import memory
    from accelbench.work.inference import OneBatch

    one = OneBatch.build(site.model, site.dataset, site.placement, site.batch_size, site.options)
    if one.model is None:  # a scikit-learn estimator: no Keras graph, and no headroom set
        return Step(one.predict, None, "no Keras model", one)
    estimate = memory.estimate(one.model)
    compiled = CompiledStep(one.model, "inference", (one.images,))
    return Step(one.predict, estimate.inference(site.batch_size), estimate.why_unknown, one, compiled)


# A memory cell's kind -> its one step, built and warmed up.
STEPS: Registry[Callable[[Site], Step]] = Registry("memory step")
STEPS.register("train", _training_step)
STEPS.register("inference", _predicted_batch)
