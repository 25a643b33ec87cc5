"""Inference work on a placement: a compiled multi-batch loop for throughput, one synced
batch at a time for latency."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from accelbench.axes.data import Dataset
from accelbench.axes.devices import Placement
from accelbench.axes.flops import Costs, costs_per_sample, forward_flops_per_sample
from accelbench.axes.models import ModelOptions, ModelSpec
from accelbench.work import build, measure
from accelbench.work.build import build_model
from accelbench.work.training import batches_for, fixed_batches, one_batch


def serving_model(spec: ModelSpec, dataset: Dataset, placement: Placement, options: ModelOptions) -> Any:
    """The model, seeded and built on the placement, as inference runs it (no training needed:
    the weights do not change the time or the memory of a prediction)."""
    return build_model(
        spec,
        dataset.input_shape,
        options,
        placement.scope(),
        train=False,
        jit_compile=placement.jit_compile,
        outputs=dataset.outputs,
        input_dtype=str(dataset.x_train.dtype),
    )


class BatchRounds:
    """What every predictor's rounds share: `steps` batches of `batch_size` a round, whatever
    predicts them (`_predict(steps)`)."""

    batch_size: int
    steps: int

    def run_round(self) -> float:
        return self._predict(self.steps)

    @property
    def samples_per_round(self) -> int:
        return self.steps * self.batch_size

    def predict_one(self) -> float:
        """One batch, synced: the latency a caller waits for."""
        return self._predict(1)


class KerasRounds(BatchRounds):
    """A Keras predictor's rounds, whatever feeds its batches."""

    model: Any

    def flops_per_sample(self) -> float | str:
        return forward_flops_per_sample(self.model)

    def costs_per_sample(self) -> Costs:
        return costs_per_sample(self.model, self.batch_size, training=False)


@dataclass
class Predictor(KerasRounds):
    """One cell's model predicting full batches of test images, `steps` batches per round."""

    model: Any
    placement: Placement
    loop: Callable[[int], float]  # steps -> one logit, fetched to sync (backends/tensorflow.py prediction_loop)
    batch_size: int
    steps: int = 1
    compile_seconds: float = 0.0

    @classmethod
    def build(
        cls,
        spec: ModelSpec,
        dataset: Dataset,
        placement: Placement,
        batch_size: int,
        options: ModelOptions,
        round_seconds: float,
        steps: int | None = None,
    ) -> Predictor | ArrayPredictor:
        if placement.FEEDS_ARRAYS:  # a backend other than TensorFlow: no tf.function to loop in
            return ArrayPredictor.build(spec, dataset, placement, batch_size, options, round_seconds, steps)
        from accelbench.axes.backends import tensorflow

        model = serving_model(spec, dataset, placement, options)
        (images,) = fixed_batches((dataset.x_test,), batch_size)
        predictor = cls(model, placement, tensorflow.prediction_loop(model, placement, images), batch_size)
        predictor.compile_seconds = measure.seconds(lambda: predictor._predict(1))
        calibration = measure.CALIBRATION_STEPS
        predictor.steps = steps or measure.steps_for(
            round_seconds, measure.best_of(lambda: predictor._predict(calibration)) / calibration
        )
        predictor.run_round()
        return predictor

    def _predict(self, steps: int) -> float:
        return self.loop(steps)


@dataclass
class ArrayPredictor(KerasRounds):
    """A Keras model on a backend other than TensorFlow predicting `steps` full batches of test
    images per round through Keras' own predict() (the backend's compiled predict step, one
    call per batch), fed NumPy arrays: what a user of that backend runs."""

    model: Any
    placement: Any
    batches: Any  # (batches, batch_size, ...) test images
    batch_size: int
    steps: int = 1
    compile_seconds: float = 0.0
    _made: dict[int, Any] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        spec: ModelSpec,
        dataset: Dataset,
        placement: Any,
        batch_size: int,
        options: ModelOptions,
        round_seconds: float,
        steps: int | None = None,
    ) -> ArrayPredictor:
        model = serving_model(spec, dataset, placement, options)
        (images,) = fixed_batches((dataset.x_test,), batch_size)
        predictor = cls(model, placement, images, batch_size)
        predictor.compile_seconds = measure.seconds(lambda: predictor._predict(1))
        calibration = measure.CALIBRATION_STEPS
        predictor._images(calibration)
        predictor.steps = steps or measure.steps_for(
            round_seconds, measure.best_of(lambda: predictor._predict(calibration)) / calibration
        )
        predictor.run_round()
        return predictor

    def predict_one(self) -> float:
        """One batch through predict_on_batch, synced: what a serving caller waits for, and the
        call LoadGen's served step makes. predict() would add its per-call setup (a data adapter,
        an epoch iterator, callbacks): on a 2-core EPYC the MLP's batch-1 p50 was 0.65 ms through
        predict() against 0.13 through predict_on_batch on JAX, 2.25 against 1.05 on PyTorch."""
        with self.placement.scope():
            logits = self.model.predict_on_batch(self.batches[0])
        return float(logits[0, 0])  # NumPy: the backend has finished

    def _images(self, steps: int) -> Any:
        """`steps` batches as one array, made once per step count (never inside a timed round)."""
        if steps not in self._made:
            self._made[steps] = batches_for(self.batches, steps)
        return self._made[steps]

    def _predict(self, steps: int) -> float:
        with self.placement.scope():
            logits = self.model.predict(self._images(steps), batch_size=self.batch_size, verbose=0)
        return float(logits[0, 0])  # NumPy: the backend has finished


SVM_INFERENCE_FIT = 1000  # images the SVM is fitted on before its predictions are measured


def fitted_estimator(spec: ModelSpec, dataset: Dataset, options: ModelOptions) -> Any:
    """A scikit-learn model fitted on the first SVM_INFERENCE_FIT flattened training images."""
    n = min(SVM_INFERENCE_FIT, len(dataset.x_train))
    x, y = dataset.x_train[:n].reshape(n, -1), dataset.y_train[:n]
    return build.fit_estimator(spec, dataset.input_shape, dataset.outputs, options, x, y)


@dataclass
class SklearnPredictor(BatchRounds):
    """A fitted scikit-learn estimator predicting batches of flattened test images on the CPU."""

    estimator: Any
    batches: list[Any]
    batch_size: int
    steps: int = 1
    compile_seconds: float = 0.0  # nothing to compile

    @classmethod
    def build(
        cls,
        spec: ModelSpec,
        dataset: Dataset,
        placement: Placement,
        batch_size: int,
        options: ModelOptions,
        round_seconds: float,
        steps: int | None = None,
    ) -> SklearnPredictor:
        import numpy as np

        estimator = fitted_estimator(spec, dataset, options)
        flat = dataset.x_test.reshape(len(dataset.x_test), -1)
        repeats = -(-batch_size // len(flat))  # a batch may be larger than the test set
        pool = np.concatenate([flat] * repeats) if repeats > 1 else flat
        batches = [pool[i : i + batch_size] for i in range(0, len(pool) - batch_size + 1, batch_size)]
        predictor = cls(estimator, batches, batch_size)
        predictor.steps = steps or measure.steps_for(round_seconds, measure.seconds(lambda: predictor._predict(1)))
        return predictor

    def _predict(self, steps: int) -> float:
        for index in range(steps):
            labels = self.estimator.predict(self.batches[index % len(self.batches)])
        return float(labels[0])

    def flops_per_sample(self) -> None:
        return None  # unknown: kernel evaluations, not the dense/conv work the FLOP count covers


PREDICTORS = {"keras": Predictor, "sklearn": SklearnPredictor}


@dataclass
class OneBatch:
    """One batch of test images predicted the way a caller would: what memory is measured on."""

    predict: Any  # () -> predictions, synced with the device
    model: Any  # the Keras model, None for scikit-learn
    images: Any = None  # the batch predicted

    @classmethod
    def build(
        cls, spec: ModelSpec, dataset: Dataset, placement: Placement, batch_size: int, options: ModelOptions
    ) -> OneBatch:
        (images,) = one_batch((dataset.x_test,), batch_size)
        if spec.framework == "sklearn":
            estimator = fitted_estimator(spec, dataset, options)
            flat = images.reshape(batch_size, -1)
            one = cls(lambda: estimator.predict(flat), None)
        else:
            model = serving_model(spec, dataset, placement, options)

            def predict():
                with placement.scope():
                    return model.predict_on_batch(images)  # numpy: waits for the device

            one = cls(predict, model, images)
        one.predict()  # trace and settle caches outside any measurement
        one.predict()
        return one
