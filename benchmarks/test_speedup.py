"""Speedups of a larger batch and of an accelerator, and accuracy parity across
devices."""


def test_batch_speedup(benchmark, batch_speedup):
    batch_speedup(benchmark)


def test_device_speedup(benchmark, device_speedup):
    device_speedup(benchmark)


def test_accuracy_parity(benchmark, accuracy_parity):
    accuracy_parity(benchmark)
