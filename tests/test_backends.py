"""Backends and precisions: what a worker on another Keras backend is fed, and what a lower
precision says on a CPU that lacks it. No TensorFlow is needed here."""

import numpy as np
import pytest

from accelbench.precisions import PRECISIONS
from accelbench.training import ArrayInput, fixed_batches


def test_array_input_gives_exactly_the_steps_asked_for_wrapping_round_the_fixed_batches():
    x = np.arange(10 * 3, dtype="float32").reshape(10, 3)
    y = np.arange(10)
    feed = ArrayInput(fixed_batches((x, y), 4))  # 2 distinct batches of 4 (the last 2 samples left out)
    given = feed.for_steps(5)
    assert given["batch_size"] == 4
    assert given["x"].shape == (20, 3) and given["y"].shape == (20,)
    assert list(given["y"]) == [0, 1, 2, 3, 4, 5, 6, 7] * 2 + [0, 1, 2, 3]
    assert feed.for_steps(5) is given  # made once, never inside a timed round


def test_a_lower_precision_is_marked_emulated_on_a_cpu_without_its_arithmetic():
    avx2_only = {"avx", "avx2", "fma"}
    assert PRECISIONS["float32"].cpu_note(avx2_only) is None
    assert PRECISIONS["mixed_bfloat16"].cpu_note(avx2_only) == (
        "emulated: this CPU has no native bfloat16 arithmetic (amx_bf16 or avx512_bf16)")
    assert PRECISIONS["mixed_bfloat16"].cpu_note(avx2_only | {"avx512_bf16"}) is None
    assert PRECISIONS["mixed_float16"].cpu_note(avx2_only | {"avx512_fp16"}) is None


def test_the_jax_placement_pins_work_to_its_cpu():
    jax = pytest.importorskip("jax", reason="the jax extra is not installed: pip install 'accelbench[jax]'")
    from accelbench.backends import Neutral

    with Neutral("cpu", "a CPU", "jax").scope():
        assert jax.numpy.ones(2).devices() == {jax.devices("cpu")[0]}
