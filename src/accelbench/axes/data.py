"""The dataset registry: loaders that return NumPy arrays (the zoo's: images scaled to [0, 1] in
NHWC float32, ten classes), and the qualities a recipe is scored by (QUALITIES): accuracy for
labels, higher is better; mean absolute error for a regression target, lower is better."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.axes import formats
from accelbench.axes.formats import DataError
from accelbench.registry import Registry
from accelbench.user_modules import last_line

NUM_CLASSES = 10
DOWNLOAD_TIMEOUT_S = 30  # an offline machine must fail fast, not hang in a Keras download
SYNTHETIC_SAMPLES = (8192, 1024)
# Synthetic data of real architectures' shapes (axes/architectures.py): throughput and memory
# only, as `synthetic` (their labels carry no signal). Few samples: a 224 x 224 image is 588 KiB.
SHAPED = {
    "images_224": ((224, 224, 3), (256, 64)),
    "images_96": ((96, 96, 3), (1024, 256)),
    "tokens_128": ((128,), (2048, 512)),
}
TOKEN_VOCABULARY = 30522  # BERT's WordPiece vocabulary (axes/models.py VOCABULARY)
UNLABELLED = frozenset({"synthetic", *SHAPED})  # datasets whose labels carry no signal: no accuracy
# The smaller input a shape has for the presets that keep inputs small (Preset.full_size_inputs
# False): a 224 x 224 image costs 5.4 times a 96 x 96 one, minutes of a CPU's quick run.
SMALLER = {"images_224": "images_96"}
DEFAULT_DATASET = "digits"  # a model's data where neither --dataset nor the model names one: offline


@dataclass(frozen=True)
class Quality:
    """What a recipe's trained model is scored by on the test set, and which way is better."""

    name: str  # the metric's name in results, verdicts and baselines
    summary: str
    higher_is_better: bool
    loss: Callable[[], Any]  # the Keras loss a model is trained with, unless its ModelSpec names one
    score: Callable[[np.ndarray, np.ndarray], float]  # (model outputs, targets) -> the quality
    regression: bool  # targets are numbers to predict, not class labels
    show: Callable[[float], str] = "{:.4g}".format
    # (model outputs, targets) -> which test items the model got right, for a paired test of two
    # models on the same items (analysis.paired); None where a quality is no count of right answers.
    correct: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None

    def better(self, measured: float, than: float) -> bool:
        """Whether `measured` is at least as good as `than`."""
        return measured >= than if self.higher_is_better else measured <= than


def _sparse_crossentropy() -> Any:
    import keras

    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)  # models end in logits


def _mean_squared_error() -> Any:
    import keras

    return keras.losses.MeanSquaredError()


def _correct_labels(outputs: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.argmax(outputs, axis=1) == y


def _accuracy(outputs: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(_correct_labels(outputs, y)))


def _mean_absolute_error(outputs: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.abs(outputs.reshape(y.shape) - y)))


QUALITIES: Registry[Quality] = Registry("quality")
QUALITIES.register(
    "accuracy",
    Quality(
        "accuracy",
        "share of test labels predicted (higher is better)",
        True,
        _sparse_crossentropy,
        _accuracy,
        regression=False,
        show="{:.2%}".format,
        correct=_correct_labels,
    ),
)
QUALITIES.register(
    "mae",
    Quality(
        "mae",
        "mean absolute error on the test targets (lower is better)",
        False,
        _mean_squared_error,
        _mean_absolute_error,
        regression=True,
    ),
)


@dataclass(frozen=True)
class Dataset:
    """Training and test arrays, and what a recipe trained on them is scored by.

    quality: a QUALITIES name. "accuracy": y holds integer class labels 0..classes-1 (classes:
    given, else the largest label + 1); the model has one output per class, logits. "mae": y holds
    numbers to predict (one column, or one per output); the model has that many outputs.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    quality: str = "accuracy"
    classes: int | None = None

    @property
    def scored_by(self) -> Quality:
        return QUALITIES[self.quality]

    @property
    def outputs(self) -> int:
        """The model's output width: a logit per class, or a number per regression target."""
        if self.scored_by.regression:
            return 1 if self.y_train.ndim == 1 else int(self.y_train.shape[1])
        if self.classes is not None:
            return self.classes
        return NUM_CLASSES if self.name in UNLABELLED else int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def labelled(self) -> bool:
        """False for synthetic tensors: throughput only, no accuracy."""
        return self.name not in UNLABELLED

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    @property
    def key(self) -> str:
        """Names the data a result was measured on: accuracy depends on the training set size."""
        return f"{self.name}-n{len(self.x_train)}"

    def head(self, n_train: int | None) -> Dataset:
        """The first n training images (MNIST-style files are already shuffled)."""
        if n_train is None or n_train >= len(self.x_train):
            return self
        return dataclasses.replace(self, x_train=self.x_train[:n_train], y_train=self.y_train[:n_train])

    def binarized(self, threshold: float = 0.5) -> Dataset:
        """Pixels as 0/1, as the published SVM study did for a faster fit."""
        binarize = lambda x: (x > threshold).astype(np.float32)
        return dataclasses.replace(self, x_train=binarize(self.x_train), x_test=binarize(self.x_test))


Loader = Callable[[Path | None], Dataset]
DATASETS: Registry[Loader] = Registry("dataset")


def load(name: str, data_dir: Path | None = None) -> Dataset:
    loader = DATASETS[name]
    try:
        made = loader(data_dir)
    except DataError:
        raise
    except Exception as error:  # a user's loader may raise anything: one line naming it
        raise DataError(f"dataset {name!r}: its loader raised {last_line(error)}") from error
    return checked(made, name)


def checked(dataset: Any, name: str) -> Dataset:
    """A loader's result, or one line saying what is wrong with it (a user's loader may return
    anything): four arrays of matching lengths, a known quality, labels that fit the classes."""
    if not isinstance(dataset, Dataset):
        raise DataError(f"dataset {name!r}: its loader returned {type(dataset).__name__}, not an accelbench.Dataset")
    if dataset.quality not in QUALITIES:
        raise DataError(f"dataset {name!r}: unknown quality {dataset.quality!r}; choose from: {', '.join(QUALITIES)}")
    for part, x, y in (("training", dataset.x_train, dataset.y_train), ("test", dataset.x_test, dataset.y_test)):
        if len(x) == 0 or len(x) != len(y):
            raise DataError(f"dataset {name!r}: {len(x)} {part} inputs and {len(y)} {part} targets")
        if not np.all(np.isfinite(x)):
            raise DataError(f"dataset {name!r}: its {part} inputs hold NaN or infinite values")
    if dataset.scored_by.regression:
        if not all(np.all(np.isfinite(y)) for y in (dataset.y_train, dataset.y_test)):
            raise DataError(f"dataset {name!r}: its regression targets hold NaN or infinite values")
        return dataset
    labels = np.concatenate([dataset.y_train.reshape(-1), dataset.y_test.reshape(-1)])
    if not np.issubdtype(labels.dtype, np.integer):
        raise DataError(
            f"dataset {name!r}: quality 'accuracy' needs integer class labels, got {labels.dtype} "
            "(a regression target: quality='mae')"
        )
    if labels.min() < 0 or labels.max() >= dataset.outputs:
        raise DataError(f"dataset {name!r}: labels {labels.min()}..{labels.max()} outside 0..{dataset.outputs - 1}")
    return dataset


def _images(x: np.ndarray, scale: float) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32) / scale
    return x[..., None] if x.ndim == 3 else x  # grayscale gets a channel axis


def _labels(y: np.ndarray, source: str) -> np.ndarray:
    y = np.asarray(y).reshape(-1).astype(np.int32)
    if y.size and (y.min() < 0 or y.max() >= NUM_CLASSES):
        raise DataError(f"{source}: labels outside 0..{NUM_CLASSES - 1}")
    return y


def _from_uint8(name: str, arrays: tuple[np.ndarray, ...], source: str) -> Dataset:
    x_train, y_train, x_test, y_test = arrays
    return Dataset(
        name, _images(x_train, 255.0), _labels(y_train, source), _images(x_test, 255.0), _labels(y_test, source)
    )


def _digits(data_dir: Path | None) -> Dataset:
    """scikit-learn's 8x8 digits: ships with scikit-learn, so it works offline."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.images, digits.target, test_size=0.25, stratify=digits.target, random_state=0
    )
    return Dataset(
        "digits", _images(x_train, 16.0), _labels(y_train, "digits"), _images(x_test, 16.0), _labels(y_test, "digits")
    )


IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _find(directory: Path, stem: str) -> Path | None:
    for candidate in (directory / f"{stem}.gz", directory / stem):
        if candidate.is_file():
            return candidate
    return None


def _read_idx_dir(name: str, directory: Path, npz_name: str) -> Dataset:
    """Four IDX files (gzipped or not), else a Keras-style .npz archive."""
    if not directory.is_dir():
        raise DataError(f"--data-dir {directory} is not a directory")
    found = [_find(directory, stem) for stem in IDX_FILES]
    if all(found):
        train = formats.read_idx_pair(found[0], found[1])
        test = formats.read_idx_pair(found[2], found[3])
        return _from_uint8(name, (*train, *test), str(directory))
    npz = directory / npz_name
    if npz.is_file():
        return _from_uint8(name, formats.read_npz(npz), str(npz))
    missing = [f"{stem}.gz" for stem, path in zip(IDX_FILES, found) if path is None]
    raise DataError(f"{directory}: {name} needs {', '.join(missing)} (or {npz_name})")


def _keras_download(name: str, hint: str) -> Dataset:
    """The Keras cache (~/.keras/datasets), else a Keras download, with a bounded wait."""
    import keras

    module = getattr(keras.datasets, name)
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_S)
    try:
        arrays = module.load_data()
    except Exception as error:  # keras raises bare Exception subclasses for network failures
        raise DataError(
            f"{name} is not in the Keras cache and could not be downloaded ({type(error).__name__}); {hint}"
        ) from None
    finally:
        socket.setdefaulttimeout(previous)
    (x_train, y_train), (x_test, y_test) = arrays
    return _from_uint8(name, (x_train, y_train, x_test, y_test), f"Keras {name}")


def _idx_loader(name: str, npz_name: str) -> Loader:
    hint = f"put {', '.join(s + '.gz' for s in IDX_FILES)} (or {npz_name}) in a directory and pass --data-dir DIR"

    def load_idx(data_dir: Path | None) -> Dataset:
        if data_dir is None:
            return _keras_download(name, hint)
        return _read_idx_dir(name, data_dir, npz_name)

    return load_idx


CIFAR_DIR = "cifar-10-batches-py"
CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))


def _cifar10(data_dir: Path | None) -> Dataset:
    hint = f"unpack cifar-10-python.tar.gz so that DIR/{CIFAR_DIR} exists and pass --data-dir DIR"
    if data_dir is None:
        return _keras_download("cifar10", hint)
    directory = data_dir / CIFAR_DIR if (data_dir / CIFAR_DIR).is_dir() else data_dir
    needed = (*CIFAR_TRAIN, "test_batch")
    missing = [name for name in needed if not (directory / name).is_file()]
    if missing:
        raise DataError(f"{directory}: CIFAR-10 needs {', '.join(missing)}; {hint}")
    train = [formats.read_cifar_batch(directory / name) for name in CIFAR_TRAIN]
    x_test, y_test = formats.read_cifar_batch(directory / "test_batch")
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train])
    return _from_uint8("cifar10", (x_train, y_train, x_test, y_test), str(directory))


def _synthetic(data_dir: Path | None) -> Dataset:
    """Random MNIST-shaped tensors for pure-throughput runs; the labels carry no signal."""
    rng = np.random.default_rng(0)
    n_train, n_test = SYNTHETIC_SAMPLES
    shape = (28, 28, 1)
    return Dataset(
        "synthetic",
        rng.random((n_train, *shape), dtype=np.float32),
        rng.integers(0, NUM_CLASSES, n_train, dtype=np.int32),
        rng.random((n_test, *shape), dtype=np.float32),
        rng.integers(0, NUM_CLASSES, n_test, dtype=np.int32),
    )


def _shaped(name: str) -> Loader:
    shape, (n_train, n_test) = SHAPED[name]

    def load(data_dir: Path | None) -> Dataset:
        rng = np.random.default_rng(0)

        def inputs(n: int) -> np.ndarray:
            if len(shape) == 1:  # token ids
                return rng.integers(0, TOKEN_VOCABULARY, (n, *shape), dtype=np.int32)
            return rng.random((n, *shape), dtype=np.float32)

        x_train, x_test = inputs(n_train), inputs(n_test)
        labels = lambda n: rng.integers(0, NUM_CLASSES, n, dtype=np.int32)  # noqa: E731
        return Dataset(name, x_train, labels(n_train), x_test, labels(n_test))

    return load


DATASETS.register("digits", _digits)
DATASETS.register("mnist", _idx_loader("mnist", "mnist.npz"))
DATASETS.register("fashion_mnist", _idx_loader("fashion_mnist", "fashion_mnist.npz"))
DATASETS.register("cifar10", _cifar10)
DATASETS.register("synthetic", _synthetic)
for _name in SHAPED:
    DATASETS.register(_name, _shaped(_name))
