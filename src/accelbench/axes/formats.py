"""Readers for the on-disk dataset formats: IDX (MNIST, Fashion-MNIST), Keras .npz, CIFAR pickles.

Every reader raises DataError naming the offending file, never a bare numpy/gzip error.
"""

from __future__ import annotations

import gzip
import pickle
import struct
import zlib
from pathlib import Path

import numpy as np

IDX_UBYTE = 0x08  # the only element type MNIST-style files use
IMAGES_MAGIC = 0x00000803  # unsigned bytes, 3 dimensions
LABELS_MAGIC = 0x00000801  # unsigned bytes, 1 dimension


class DataError(Exception):
    """A dataset that is missing, unreadable or inconsistent."""


def read_bytes(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as handle:
                return handle.read()
        return path.read_bytes()
    except (OSError, EOFError, zlib.error) as error:
        raise DataError(f"{path}: cannot read ({error})") from None


def read_idx(path: Path, magic: int) -> np.ndarray:
    """Parse one IDX file, checking magic number and that the payload matches the header."""
    raw = read_bytes(path)
    if len(raw) < 4:
        raise DataError(f"{path}: only {len(raw)} bytes, too short for an IDX header")
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise DataError(f"{path}: magic number {found:#010x}, expected {magic:#010x}")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"{path}: truncated IDX header")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    expected = header + int(np.prod(dims))
    if len(raw) != expected:
        raise DataError(
            f"{path}: {len(raw)} bytes but its header {dims} needs {expected}; the file is truncated or corrupt"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def read_idx_pair(images: Path, labels: Path) -> tuple[np.ndarray, np.ndarray]:
    x = read_idx(images, IMAGES_MAGIC)
    y = read_idx(labels, LABELS_MAGIC)
    if len(x) != len(y):
        raise DataError(f"{images} has {len(x)} images but {labels} has {len(y)} labels")
    return x, y


def read_npz(path: Path) -> tuple[np.ndarray, ...]:
    """A Keras-cache style archive with x_train, y_train, x_test, y_test."""
    keys = ("x_train", "y_train", "x_test", "y_test")
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [key for key in keys if key not in archive]
            if missing:
                raise DataError(f"{path}: missing arrays {missing}")
            return tuple(archive[key] for key in keys)
    except (OSError, ValueError, zlib.error) as error:
        raise DataError(f"{path}: not a readable .npz archive ({error})") from None


def read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One python-pickled CIFAR-10 batch, returned as NHWC uint8 images and labels."""
    try:
        with path.open("rb") as handle:
            batch = pickle.load(handle, encoding="bytes")
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"])
        images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    except (OSError, EOFError, pickle.UnpicklingError, KeyError, ValueError, TypeError) as error:
        raise DataError(f"{path}: not a CIFAR-10 python batch ({error})") from None
    if len(images) != len(labels):
        raise DataError(f"{path}: {len(images)} images but {len(labels)} labels")
    return images, labels
