"""Model families the zoo does not have, declared as a user declares them (accelbench's public API
only), each on small data of its own shape: integer token sequences, 3-D series, a regression
with two outputs. Sequential, functional and subclassed keras.Model are all here.

tests/test_conformance.py copies this module into a scratch project and runs every benchmark
kind on it, on each Keras backend: the first run on unchanged code must be green.
"""

import numpy as np

import accelbench

VOCABULARY, STEPS, FEATURES, CLASSES = 40, 12, 4, 3


def _split(x, y, train=192):
    return x[:train], y[:train], x[train:], y[train:]


def tokens(data_dir):
    """Integer tokens; the class is which of three tokens occurs most (learnable by any family)."""
    rng = np.random.default_rng(0)
    x = rng.integers(1, VOCABULARY, size=(256, STEPS)).astype(np.int32)
    y = np.argmax(np.stack([(x == token).sum(axis=1) for token in (1, 2, 3)], axis=1), axis=1).astype(np.int32)
    return accelbench.Dataset("tokens", *_split(x, y), quality="accuracy", classes=CLASSES)


def series(data_dir):
    """3-D inputs (steps x features); the class is the sign pattern of a trend."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(256, STEPS, FEATURES)).astype(np.float32)
    y = (np.digitize(x[:, :, 0].mean(axis=1), (-0.1, 0.1))).astype(np.int32)
    return accelbench.Dataset("series", *_split(x, y), quality="accuracy", classes=CLASSES)


def two_targets(data_dir):
    """A regression with two outputs (one column of y each), scored by mean absolute error."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(256, 8)).astype(np.float32)
    y = np.stack([x[:, :4].sum(axis=1), x[:, 4:].prod(axis=1)], axis=1).astype(np.float32)
    return accelbench.Dataset("two_targets", *_split(x, y), quality="mae")


def gru(input_shape, outputs, options):
    import keras

    return keras.Sequential(
        [
            keras.Input(input_shape, dtype="int32"),
            keras.layers.Embedding(VOCABULARY, 16),
            keras.layers.GRU(16),
            keras.layers.Dense(outputs),
        ],
        name="gru",
    )


def lstm(input_shape, outputs, options):
    import keras

    inputs = keras.Input(input_shape, dtype="int32")
    hidden = keras.layers.LSTM(16)(keras.layers.Embedding(VOCABULARY, 16)(inputs))
    return keras.Model(inputs, keras.layers.Dense(outputs)(hidden), name="lstm")


def bilstm(input_shape, outputs, options):
    import keras

    return keras.Sequential(
        [
            keras.Input(input_shape, dtype="int32"),
            keras.layers.Embedding(VOCABULARY, 16),
            keras.layers.Bidirectional(keras.layers.LSTM(8)),
            keras.layers.Dense(outputs),
        ],
        name="bilstm",
    )


def embed_pool(input_shape, outputs, options):
    import keras

    return keras.Sequential(
        [
            keras.Input(input_shape, dtype="int32"),
            keras.layers.Embedding(VOCABULARY, 16),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(outputs),
        ],
        name="embed_pool",
    )


def attention(input_shape, outputs, options):
    """One encoder block: token and position embeddings, multi-head self-attention, feed-forward."""
    import keras

    class TokenAndPosition(keras.layers.Layer):
        """A user's own layer: the estimate of memory has never seen it."""

        def __init__(self, steps, width, **kwargs):
            super().__init__(**kwargs)
            self.tokens = keras.layers.Embedding(VOCABULARY, width)
            self.positions = keras.layers.Embedding(steps, width)

        def call(self, inputs):
            return self.tokens(inputs) + self.positions(keras.ops.arange(keras.ops.shape(inputs)[-1]))

    inputs = keras.Input(input_shape, dtype="int32")
    x = TokenAndPosition(input_shape[0], 16)(inputs)
    x = keras.layers.LayerNormalization()(x + keras.layers.MultiHeadAttention(2, 8)(x, x))
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(16)(keras.layers.Dense(32, activation="relu")(x)))
    return keras.Model(inputs, keras.layers.Dense(outputs)(keras.layers.GlobalAveragePooling1D()(x)), name="attention")


def conv1d(input_shape, outputs, options):
    import keras

    return keras.Sequential(
        [
            keras.Input(input_shape),
            keras.layers.Conv1D(16, 3, activation="relu"),
            keras.layers.MaxPooling1D(2),
            keras.layers.Conv1D(16, 3, activation="relu"),
            keras.layers.GlobalMaxPooling1D(),
            keras.layers.Dense(outputs),
        ],
        name="conv1d",
    )


def batchnorm_dropout(input_shape, outputs, options):
    import keras

    inputs = keras.Input(input_shape)
    x = keras.layers.Flatten()(inputs)
    x = keras.layers.Dropout(0.2, seed=options.seed)(keras.layers.BatchNormalization()(keras.layers.Dense(32)(x)))
    return keras.Model(
        inputs, keras.layers.Dense(outputs)(keras.layers.Activation("relu")(x)), name="batchnorm_dropout"
    )


def subclassed(input_shape, outputs, options):
    """A subclassed keras.Model that makes its variables at its first call, as many users write."""
    import keras

    class Recurrent(keras.Model):
        def __init__(self):
            super().__init__(name="subclassed")
            self.embed = keras.layers.Embedding(VOCABULARY, 16)
            self.gru = keras.layers.GRU(16)
            self.head = keras.layers.Dense(outputs)

        def call(self, inputs, training=False):
            return self.head(self.gru(self.embed(inputs)))

    return Recurrent()


def two_outputs(input_shape, outputs, options):
    import keras

    inputs = keras.Input(input_shape)
    hidden = keras.layers.Dense(32, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(outputs)(hidden), name="two_outputs")


# dataset -> the models that run on it (tests/test_conformance.py runs each group with --dataset)
FAMILIES = {
    "tokens": (gru, lstm, bilstm, embed_pool, attention, subclassed),
    "series": (conv1d, batchnorm_dropout),
    "two_targets": (two_outputs,),
}

for loader in (tokens, series, two_targets):
    accelbench.register_dataset(loader.__name__, loader)
for dataset, builders in FAMILIES.items():
    for build in builders:
        accelbench.register_model(
            accelbench.ModelSpec(
                build.__name__,
                f"conformance: {build.__name__} on {dataset}",
                build,
                recipe_batch_size=32,
                recipe_epochs=3,
                recipe_target=None,
            )
        )
