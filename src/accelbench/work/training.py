"""Training work on a placement: Keras fit in steady state, a hand-written reference loop,
and training to accuracy. Everything here syncs with the device before it returns."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accelbench.axes import backends
from accelbench.axes.backends import BACKENDS
from accelbench.axes.data import Dataset
from accelbench.axes.devices import Placement
from accelbench.axes.flops import TRAIN_FLOPS_PER_FORWARD, Costs, costs_per_sample, forward_flops_per_sample
from accelbench.axes.models import ModelOptions, ModelSpec
from accelbench.work import measure
from accelbench.work.build import build_model

PREDICT_BATCH = 1024
CACHED_SAMPLES = 16_384


class NonFiniteLoss(ArithmeticError):
    """Training diverged: the loss became NaN or infinite."""


def check_finite(loss: float, where: str) -> float:
    if not math.isfinite(loss):
        raise NonFiniteLoss(f"{where}: training loss became {loss}; lower the learning rate or check the data")
    return loss


def build_compiled(spec: ModelSpec, dataset: Dataset, placement: Placement, options: ModelOptions) -> Any:
    """The model with its variables on the placement, compiled the way fit() will run it."""
    return build_model(
        spec,
        dataset.input_shape,
        options,
        placement.scope(),
        train=True,
        jit_compile=placement.jit_compile,
        outputs=dataset.outputs,
        quality=dataset.quality,
        input_dtype=str(dataset.x_train.dtype),
    )


def fixed_batches(arrays: tuple[np.ndarray, ...], batch_size: int) -> tuple[np.ndarray, ...]:
    """Up to CACHED_SAMPLES samples cut into whole batches, shaped (batches, batch_size, ...).

    Wraps around the data where one batch is larger than the data set.
    """
    distinct = max(1, min(len(arrays[0]), CACHED_SAMPLES) // batch_size)
    return tuple(a.reshape(distinct, batch_size, *a.shape[1:]) for a in one_batch(arrays, distinct * batch_size))


def one_batch(arrays: tuple[np.ndarray, ...], batch_size: int) -> tuple[np.ndarray, ...]:
    """The first batch_size samples, wrapping around data smaller than one batch."""
    index = np.arange(batch_size) % len(arrays[0])
    return tuple(a[index] for a in arrays)


def repeated_batches(dataset: Dataset, batch_size: int) -> Any:
    """Endless full batches of training data, batched once up front, as a tf.data pipeline."""
    from accelbench.axes.backends import tensorflow

    return tensorflow.batches_pipeline(fixed_batches((dataset.x_train, dataset.y_train), batch_size))


def batches_for(batches: np.ndarray, steps: int) -> np.ndarray:
    """`steps` of the fixed batches (batches, batch_size, ...), wrapping round, as one array of
    samples: what a NumPy-fed round gives Keras."""
    return batches[np.arange(steps) % len(batches)].reshape(-1, *batches.shape[2:])


@dataclass
class PipelineInput:
    """fit()'s input on TensorFlow: the fixed batches as a tf.data pipeline. A round's input
    ends after its steps (made once per step count, outside any timed round), which is what
    stops the trainer's compiled loop; `pipeline` is the same batches without end."""

    batches: Any  # the endless tf.data.Dataset, not yet fed to the placement
    placement: Placement
    _made: dict[int, dict[str, Any]] = field(default_factory=dict)

    @functools.cached_property
    def pipeline(self) -> Any:
        return self.placement.feed(self.batches)

    def for_steps(self, steps: int) -> dict[str, Any]:
        if steps not in self._made:
            self._made[steps] = {"x": self.placement.feed(self.batches.take(steps))}
        return self._made[steps]


@dataclass
class ArrayInput:
    """fit()'s input on a backend other than TensorFlow: NumPy arrays of exactly `steps` of the
    fixed batches (made once per step count, outside any timed round), which Keras slices and
    moves to the backend's device itself. No tf.data, so TensorFlow is not in the loop."""

    batches: tuple[np.ndarray, np.ndarray]  # (batches, batch_size, ...) each
    # array -> the array on the device (Backend.resident): the inputs made resident there when
    # made, so no round copies them from the host; None: Keras copies each batch as it goes
    put: Callable[[np.ndarray], Any] | None = None
    _made: dict[int, dict[str, Any]] = field(default_factory=dict)

    def for_steps(self, steps: int) -> dict[str, Any]:
        if steps not in self._made:
            x, y = (batches_for(a, steps) for a in self.batches)
            if self.put is not None:
                x, y = self.put(x), self.put(y)
            self._made[steps] = {"x": x, "y": y, "batch_size": self.batches[0].shape[1]}
        return self._made[steps]


def training_input(
    dataset: Dataset, batch_size: int, placement: Any, resident: bool = False
) -> PipelineInput | ArrayInput:
    """fit()'s input: from the host (each batch copied to the device as it goes), or `resident`
    on the device from the start (where the backend can put it there: Backend.resident)."""
    if placement.FEEDS_ARRAYS:
        put = BACKENDS[placement.backend].resident if resident else None
        if resident and put is None:
            raise LookupError(f"the {placement.backend} backend cannot make a trainer's inputs resident on its device")
        batches = fixed_batches((dataset.x_train, dataset.y_train), batch_size)
        return ArrayInput(batches, functools.partial(put, placement) if put else None)
    if resident:
        raise LookupError("TensorFlow's trainers feed a tf.data pipeline: their inputs are not made resident")
    return PipelineInput(repeated_batches(dataset, batch_size), placement)


def test_outputs(model: Any, dataset: Dataset) -> np.ndarray:
    """The model's outputs on the test set, PREDICT_BATCH samples per call: predict_on_batch
    skips the data adapter that cost predict() 50 ms a call (20 epochs of 4 models evaluate 80
    times in a quick run)."""
    x = dataset.x_test
    return np.concatenate(
        [np.asarray(model.predict_on_batch(x[i : i + PREDICT_BATCH])) for i in range(0, len(x), PREDICT_BATCH)]
    ).astype(np.float64)


def right_answers(outputs: np.ndarray, dataset: Dataset) -> str | None:
    """Which test items the model got right, as '0'/'1' (compact on a worker's pipe), for a
    paired test against a twin; None where the quality counts no right answers (an MAE)."""
    correct = dataset.scored_by.correct
    return None if correct is None else "".join("1" if c else "0" for c in correct(outputs, dataset.y_test))


def one_execution_per_fit(model: Any) -> Any:
    """The model, its fit() calls each run as one compiled execution where the backend has one
    (else fit() loops over the steps in Python). Keras' compiled loop runs up to
    steps_per_execution steps or until its input ends, and a trainer's round (a recipe's epoch)
    ends its input: so the loop traced by the first call serves every later call. Set to a
    round's steps, it had to be traced again after calibrating (0.5-1.3 s a cell here)."""
    if BACKENDS[backends.current()].steps_per_call:
        model.steps_per_execution = measure.MAX_STEPS_PER_ROUND
    return model


@dataclass
class Trainer:
    """One cell's model trained by Keras fit() in steady state.

    Built, compiled and traced once; one round is one fit() of `steps` steps, all inside a
    single compiled execution (steps_per_execution, where the backend has it), so Python
    overhead per step is gone.
    """

    where: str
    placement: Placement
    model: Any
    data: PipelineInput | ArrayInput
    batch_size: int
    steps: int = 1
    compile_seconds: float = 0.0
    fastest_samples_per_s: float = 0.0  # the best round this run has timed, wherever it was timed
    call_seconds: float | None = None  # fit()'s own cost per call, where steps were sized here
    call_share: float | None = None  # its share of a round of `steps`

    @classmethod
    def build(
        cls,
        where: str,
        spec: ModelSpec,
        dataset: Dataset,
        placement: Placement,
        batch_size: int,
        options: ModelOptions,
        round_seconds: float,
        steps: int | None = None,
        resident: bool = False,
    ) -> Trainer:
        """steps: per round, as a compared run timed them; None calibrates them to round_seconds,
        raised where fit()'s own cost per call would be above MAX_CALL_SHARE of a round.
        resident: its inputs on the device from the start (training_input)."""
        model = one_execution_per_fit(build_compiled(spec, dataset, placement, options))
        data = training_input(dataset, batch_size, placement, resident)
        trainer = cls(where, placement, model, data, batch_size)
        trainer.compile_seconds = measure.seconds(lambda: trainer._fit(1))  # first call traces
        if steps:
            trainer.steps = steps
        else:
            longest = max(0.5, measure.LONGEST_SIZED_ROUND * round_seconds)
            calibrated = measure.calibrated_steps(trainer._fit, round_seconds)
            cost = measure.sized_for_calls(trainer._fit, calibrated, longest_s=longest)
            trainer.steps, trainer.call_seconds, trainer.call_share = cost.steps, cost.seconds, cost.share
        trainer.run_round()  # warm at the timed length (and its input made), as a predictor is
        return trainer

    def _fit(self, steps: int) -> float:
        with self.placement.scope():
            history = self.model.fit(
                **self.data.for_steps(steps), epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False
            )
        return check_finite(float(history.history["loss"][-1]), self.where)  # float() syncs

    def run_round(self) -> float:
        return self._fit(self.steps)

    def warm(self) -> float:
        """One step, as its first call traced it: what makes the trainer warm again after another
        model's build cleared TensorFlow's kernel cache (kinds/speedup/bench.py timed_pairs)."""
        return self._fit(1)

    @property
    def samples_per_round(self) -> int:
        return self.steps * self.batch_size

    def flops_per_sample(self) -> float | str:
        forward = forward_flops_per_sample(self.model)
        return forward if isinstance(forward, str) else forward * TRAIN_FLOPS_PER_FORWARD

    def costs_per_sample(self) -> Costs:
        return costs_per_sample(self.model, self.batch_size, training=True)

    def throughput(self) -> float:
        """Samples per second of one freshly timed round."""
        return self.saw(measure.seconds(self.run_round))

    def saw(self, round_seconds: float) -> float:
        """Keep the best of the rounds timed so far (by pytest-benchmark or interleaved pairs)."""
        samples_per_s = self.samples_per_round / round_seconds
        self.fastest_samples_per_s = max(self.fastest_samples_per_s, samples_per_s)
        return samples_per_s


@dataclass
class OneStep:
    """Single Keras training steps (train_on_batch) on one fixed batch: what memory is measured on.

    Built and stepped twice before anything is measured: the first step traces the function
    and creates the optimizer's slots, which are the model's state, not the step's.
    """

    where: str
    placement: Placement
    model: Any
    dataset: Dataset
    batch: tuple[np.ndarray, np.ndarray]

    @classmethod
    def build(
        cls, where: str, spec: ModelSpec, dataset: Dataset, placement: Placement, batch_size: int, options: ModelOptions
    ) -> OneStep:
        model = build_compiled(spec, dataset, placement, options)
        return cls(where, placement, model, dataset, (np.empty(0), np.empty(0))).resized(batch_size)

    def resized(self, batch_size: int) -> OneStep:
        """The same model stepping on a batch of another size, warmed up at that size."""
        step = OneStep(
            self.where,
            self.placement,
            self.model,
            self.dataset,
            one_batch((self.dataset.x_train, self.dataset.y_train), batch_size),
        )
        step.run()
        step.run()
        return step

    def run(self) -> float:
        with self.placement.scope():
            loss = self.model.train_on_batch(*self.batch)
        return check_finite(float(loss), self.where)  # float() waits for the device


@dataclass
class HandLoop:
    """The reference: a hand-written training loop, the tightest a user of the backend would
    write (Backend.bare_loop: on TensorFlow a tf.function looping over steps, tf.distribute style;
    on JAX a jitted step of the model's stateless call looped on the device; on PyTorch the
    backward pass and the optimizer's apply in a Python loop), training the trainer's model with
    its optimizer on the same batches.

    Same model, same optimizer, same batches: only the loop around the step differs, so a gap
    between the two is fit()'s overhead and nothing else.
    """

    where: str
    loop: Callable[[int], Any]  # steps -> the last step's loss, waited for
    steps: int
    samples_per_round: int

    @classmethod
    def like(cls, trainer: Trainer) -> HandLoop:
        bare_loop = BACKENDS[backends.current()].bare_loop
        if bare_loop is None:
            raise LookupError(f"the {backends.current()} backend has no bare loop")
        loop = bare_loop(trainer.model, trainer.data, trainer.placement, trainer.batch_size)
        hand = cls(trainer.where, loop, trainer.steps, trainer.samples_per_round)
        hand.run_round()  # trace outside the clock
        return hand

    def run_round(self) -> float:
        return self._loop(self.steps)

    def warm(self) -> float:
        """One step of the traced loop, as Trainer.warm."""
        return self._loop(1)

    def _loop(self, steps: int) -> float:
        return check_finite(float(self.loop(steps)), self.where)  # float() waits for the device

    def throughput(self) -> float:
        return self.samples_per_round / measure.seconds(self.run_round)
