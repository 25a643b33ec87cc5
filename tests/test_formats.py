"""Dataset files: the IDX reader accepts real layouts and names the file it rejects."""

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from accelbench.axes import data, formats
from accelbench.axes.formats import DataError

SHARED_MNIST = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist-10k"


def idx_bytes(array: np.ndarray) -> bytes:
    header = struct.pack(">BBBB", 0, 0, formats.IDX_UBYTE, array.ndim)
    return header + struct.pack(f">{array.ndim}I", *array.shape) + array.astype(np.uint8).tobytes()


def write_mnist_dir(directory: Path, n_train: int = 20, n_test: int = 10) -> Path:
    rng = np.random.default_rng(0)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28)),
        "train-labels-idx1-ubyte": rng.integers(0, 10, n_train),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28)),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test),
    }
    directory.mkdir(parents=True, exist_ok=True)
    for stem, array in arrays.items():
        with gzip.open(directory / f"{stem}.gz", "wb") as out:
            out.write(idx_bytes(array))
    return directory


def test_reads_an_idx_directory(tmp_path):
    dataset = data.load("mnist", write_mnist_dir(tmp_path))
    assert dataset.x_train.shape == (20, 28, 28, 1) and dataset.x_test.shape == (10, 28, 28, 1)
    assert dataset.x_train.dtype == np.float32 and 0.0 <= dataset.x_train.min() <= dataset.x_train.max() <= 1.0
    assert dataset.key == "mnist-n20"


def test_bad_magic_names_the_file(tmp_path):
    directory = write_mnist_dir(tmp_path)
    path = directory / "train-labels-idx1-ubyte.gz"
    with gzip.open(path, "wb") as out:  # an images header where labels belong
        out.write(idx_bytes(np.zeros((20, 28, 28))))
    with pytest.raises(DataError, match=r"train-labels-idx1-ubyte.gz: magic number 0x00000803, expected 0x00000801"):
        data.load("mnist", directory)


def test_truncated_file_names_the_file(tmp_path):
    directory = write_mnist_dir(tmp_path)
    path = directory / "t10k-images-idx3-ubyte.gz"
    raw = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(raw[:-100]))
    with pytest.raises(DataError, match="t10k-images-idx3-ubyte.gz: .* truncated or corrupt"):
        data.load("mnist", directory)


def test_corrupt_gzip_names_the_file(tmp_path):
    directory = write_mnist_dir(tmp_path)
    (directory / "train-images-idx3-ubyte.gz").write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="train-images-idx3-ubyte.gz: cannot read"):
        data.load("mnist", directory)


def test_mismatched_counts(tmp_path):
    directory = write_mnist_dir(tmp_path)
    with gzip.open(directory / "train-labels-idx1-ubyte.gz", "wb") as out:
        out.write(idx_bytes(np.zeros(19)))
    with pytest.raises(DataError, match="has 20 images but .* has 19 labels"):
        data.load("mnist", directory)


def test_missing_files_say_which_and_where(tmp_path):
    with pytest.raises(DataError, match="mnist needs train-images-idx3-ubyte.gz, .*t10k-labels-idx1-ubyte.gz"):
        data.load("mnist", tmp_path)


def test_keras_npz_archive(tmp_path):
    rng = np.random.default_rng(1)
    np.savez(
        tmp_path / "fashion_mnist.npz",
        x_train=rng.integers(0, 256, (6, 28, 28), dtype=np.uint8),
        y_train=np.arange(6) % 10,
        x_test=np.zeros((2, 28, 28), np.uint8),
        y_test=[1, 2],
    )
    dataset = data.load("fashion_mnist", tmp_path)
    assert dataset.x_train.shape == (6, 28, 28, 1) and list(dataset.y_test) == [1, 2]


def test_cifar_batches(tmp_path):
    directory = tmp_path / "cifar-10-batches-py"
    directory.mkdir()
    for name in (*data.CIFAR_TRAIN, "test_batch"):
        batch = {b"data": np.full((3, 3072), 255, np.uint8), b"labels": [0, 1, 2]}
        (directory / name).write_bytes(pickle.dumps(batch))
    dataset = data.load("cifar10", tmp_path)
    assert dataset.x_train.shape == (15, 32, 32, 3) and dataset.x_train.max() == 1.0


def test_corrupt_cifar_batch(tmp_path):
    test_cifar_batches(tmp_path)
    (tmp_path / "cifar-10-batches-py" / "data_batch_3").write_bytes(b"\x80garbage")
    with pytest.raises(DataError, match="data_batch_3: not a CIFAR-10 python batch"):
        data.load("cifar10", tmp_path)


def test_digits_ship_with_scikit_learn():
    dataset = data.load("digits")
    assert dataset.input_shape == (8, 8, 1)
    assert len(dataset.x_train) + len(dataset.x_test) == 1797
    assert set(np.unique(dataset.binarized().x_train)) <= {0.0, 1.0}


def test_synthetic_is_unlabelled():
    assert not data.load("synthetic").labelled


@pytest.mark.skipif(not SHARED_MNIST.is_dir(), reason=f"real MNIST data not found at {SHARED_MNIST}")
def test_shared_mnist_class_counts():
    dataset = data.load("mnist", SHARED_MNIST)
    assert list(np.bincount(dataset.y_train)) == [773, 905, 834, 803, 788, 723, 756, 813, 787, 818]
    assert list(np.bincount(dataset.y_test)) == [207, 230, 198, 207, 194, 169, 202, 215, 187, 191]
