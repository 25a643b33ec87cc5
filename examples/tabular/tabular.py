"""This project's models and data, declared through accelbench's public API.

Two tasks the built-in zoo has no model for, on data scikit-learn ships (so it runs offline):

- wine: 178 wines, 13 chemical measurements, 3 cultivars: a classifier, scored by accuracy
  (higher is better);
- diabetes: 442 patients, 10 measurements, disease progression after a year: a regression,
  scored by the mean absolute error (lower is better).

pytest.ini names this module (accelbench_modules = tabular): the pytest process and every
process a run starts (A/B, other Keras backends, tf.distribute jobs) import it. Keras is
imported inside the builders: TensorFlow must start after accelbench has set it up.
"""

import numpy as np

import accelbench


def _split(x, y, stratify):
    """Standardized features (from the training split's statistics) and a fixed 75/25 split."""
    from sklearn.model_selection import train_test_split

    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, random_state=0, stratify=y if stratify else None
    )
    mean, std = x_train.mean(axis=0), x_train.std(axis=0)
    return ((x_train - mean) / std).astype(np.float32), y_train, ((x_test - mean) / std).astype(np.float32), y_test


def wine(data_dir):
    from sklearn.datasets import load_wine

    data = load_wine()
    x_train, y_train, x_test, y_test = _split(data.data, data.target, stratify=True)
    return accelbench.Dataset(
        "wine", x_train, y_train.astype(np.int32), x_test, y_test.astype(np.int32), quality="accuracy", classes=3
    )


def diabetes(data_dir):
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    x_train, y_train, x_test, y_test = _split(data.data, data.target, stratify=False)
    return accelbench.Dataset(
        "diabetes", x_train, y_train.astype(np.float32), x_test, y_test.astype(np.float32), quality="mae"
    )


def wine_mlp(input_shape, outputs, options):
    """13-64-32-3: one logit per cultivar (the accuracy quality trains it with cross-entropy)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(input_shape),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(outputs),
        ],
        name="wine_mlp",
    )


def diabetes_mlp(input_shape, outputs, options):
    """10-64-64-1: one number (the mae quality trains it with the mean squared error)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(input_shape),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(outputs),
        ],
        name="diabetes_mlp",
    )


def _adam(learning_rate):
    def make():
        import keras

        return keras.optimizers.Adam(learning_rate)

    return make


accelbench.register_dataset("wine", wine)
accelbench.register_dataset("diabetes", diabetes)
accelbench.register_model(
    accelbench.ModelSpec(
        "wine_mlp",
        "wine classifier 13-64-32-3, Adam",
        wine_mlp,
        _adam(1e-3),
        recipe_batch_size=16,
        recipe_epochs=30,
        recipe_target=0.95,
        dataset="wine",
    )
)
accelbench.register_model(
    accelbench.ModelSpec(
        "diabetes_mlp",
        "diabetes regression 10-64-64-1, Adam, MSE",
        diabetes_mlp,
        _adam(1e-2),
        recipe_batch_size=32,
        recipe_epochs=60,
        recipe_target=50.0,
        dataset="diabetes",
    )
)
