"""The one path by which a Keras model of the zoo is made: seeded, under the cell's dtype
policy, inside the placement's (or strategy's) scope, and, for training, compiled with its
optimizer's slots made up front. Trainers, predictors, memory steps, recipes, data-scaling
cells and tf.distribute jobs all take it, so a model is the same model wherever it is timed.
A scikit-learn model is built and fitted by fit_estimator, its user's code behind the same
one-line failure."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from accelbench.axes import precisions
from accelbench.axes.backends import BACKENDS
from accelbench.axes.data import NUM_CLASSES, QUALITIES
from accelbench.axes.devices import AUTO
from accelbench.axes.models import ModelOptions, ModelSpec
from accelbench.user_modules import call_user


def seed_everything(seed: int) -> None:
    """keras.utils.set_random_seed, without importing TensorFlow where Keras runs on another backend.

    Keras seeds TensorFlow whenever it is installed (for tf.data's shuffles), and importing it
    costs a JAX or PyTorch worker seconds of CPU (2.5 s of a JAX recipe's 10.5 here), for nothing: those
    workers are fed NumPy arrays, never tf.data. Keras has no switch for this, so its lazy
    TensorFlow module is marked absent for the one call (and only while TensorFlow is not loaded).
    """
    import keras
    from keras.src.utils import module_utils

    lazy_tensorflow = module_utils.tensorflow
    if (
        keras.backend.backend() == "tensorflow"
        or lazy_tensorflow.module is not None
        or lazy_tensorflow._available is not None
    ):
        keras.utils.set_random_seed(seed)
        return
    lazy_tensorflow._available = False
    try:
        keras.utils.set_random_seed(seed)
    finally:
        lazy_tensorflow._available = None


def build_model(
    spec: ModelSpec,
    input_shape: tuple[int, ...],
    options: ModelOptions,
    scope: AbstractContextManager,
    *,
    train: bool,
    jit_compile: bool | str = AUTO,
    outputs: int = NUM_CLASSES,
    quality: str = "accuracy",
    input_dtype: str = "float32",
) -> Any:
    """The model of `spec` with `outputs` outputs, its variables made in `scope` from the options' seed.

    train: compiled as fit() will run it (the spec's optimizer and loss, else the quality's:
    sparse cross-entropy on logits for accuracy; `jit_compile`), with the optimizer's slots built
    now where the model has its variables: a tf.function that creates variables is traced twice,
    which made the first fit() 1.6-2.9x slower in every trainer, memory step and recipe. Not
    train: as inference runs it, uncompiled; a CPU cell (jit_compile False) is kept off XLA
    whatever other devices the process sees.
    """
    import keras

    def seeded() -> Any:
        seed_everything(options.seed)  # same seed on every device: accuracy parity
        built = call_user(f"model {spec.name!r}: its builder", spec.build, input_shape, outputs, options)
        if not built.built:
            # A subclassed keras.Model makes its variables at its first call: one symbolic call
            # makes them here, in the scope and under the seed, as every other model's are.
            built(keras.KerasTensor((None, *input_shape), dtype=input_dtype))
        return built

    backend = BACKENDS[keras.backend.backend()]
    with precisions.policy(options.precision), scope:  # entered once: torch's keras.device() is one-shot
        model = seeded()
        if backend.drawn_on_device(model):  # the CPU's draw of the same seed, copied in (Backend.drawn_on_device)
            with keras.device(backend.cpu_device):
                model.set_weights(seeded().get_weights())
        if train:
            optimizer = (
                call_user(f"model {spec.name!r}: its optimizer factory", spec.optimizer)
                if spec.optimizer
                else keras.optimizers.Adam()
            )  # a spec may leave it to us
            loss = (
                call_user(f"model {spec.name!r}: its loss factory", spec.loss)
                if spec.loss
                else QUALITIES[quality].loss()
            )
            model.compile(optimizer=optimizer, jit_compile=jit_compile, loss=loss)
            if model.built and model.trainable_variables:
                # A subclassed keras.Model makes its variables at its first call: an optimizer
                # built now would know none of them ("Unknown variable" at the first step).
                model.optimizer.build(model.trainable_variables)
    if not train and jit_compile is False:
        model.jit_compile = False
    return model


def fit_estimator(spec: ModelSpec, input_shape: tuple[int, ...], outputs: int, options: ModelOptions, x, y) -> Any:
    """The scikit-learn model of `spec` fitted on (x, y). Its builder and its fit are the user's
    code (scikit-learn checks an estimator's parameters when it fits): either raising ends the
    run on one line naming the model, as a Keras model's builder does."""
    estimator = call_user(f"model {spec.name!r}: its builder", spec.build, input_shape, outputs, options)
    return call_user(f"model {spec.name!r}: its fit", estimator.fit, x, y)
