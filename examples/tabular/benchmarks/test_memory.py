"""Memory: host and device peaks of one step, their growth with batch size, and leaks.

pytest-memray measures these; they are not timings, so pytest-benchmark does not time
them.
"""


def test_train_memory(train_memory):
    train_memory()


def test_inference_memory(inference_memory):
    inference_memory()


def test_memory_scaling(memory_scaling):
    memory_scaling()


def test_inference_leaks(inference_leaks):
    inference_leaks()
