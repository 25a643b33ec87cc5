"""Backends: what a worker on another Keras backend is fed. No TensorFlow is needed here."""

import numpy as np

from accelbench.work.training import ArrayInput, fixed_batches


def test_array_input_gives_exactly_the_steps_asked_for_wrapping_round_the_fixed_batches():
    x = np.arange(10 * 3, dtype="float32").reshape(10, 3)
    y = np.arange(10)
    feed = ArrayInput(fixed_batches((x, y), 4))  # 2 distinct batches of 4 (the last 2 samples left out)
    given = feed.for_steps(5)
    assert given["batch_size"] == 4
    assert given["x"].shape == (20, 3) and given["y"].shape == (20,)
    assert list(given["y"]) == [0, 1, 2, 3, 4, 5, 6, 7] * 2 + [0, 1, 2, 3]
    assert feed.for_steps(5) is given  # made once, never inside a timed round
