"""Training: steady-state throughput, time to accuracy, and the harness's own
overhead."""


def test_train(benchmark, train_bench):
    train_bench(benchmark)


def test_harness_overhead(benchmark, overhead_bench):
    overhead_bench(benchmark)


def test_time_to_accuracy(benchmark, accuracy_bench):
    accuracy_bench(benchmark)


def test_threads(benchmark, threads_bench):
    threads_bench(benchmark)
