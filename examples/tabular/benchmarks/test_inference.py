"""Inference: throughput per batch size and batch-1 latency percentiles."""


def test_inference(benchmark, inference_bench):
    inference_bench(benchmark)


def test_latency(benchmark, latency_bench):
    latency_bench(benchmark)
