"""Memory: host and device peaks of one step, their growth with batch size, and leaks."""


def test_train_memory(benchmark, train_memory):
    train_memory(benchmark)


def test_inference_memory(benchmark, inference_memory):
    inference_memory(benchmark)


def test_memory_scaling(benchmark, memory_scaling):
    memory_scaling(benchmark)


def test_inference_leaks(benchmark, inference_leaks):
    inference_leaks(benchmark)
