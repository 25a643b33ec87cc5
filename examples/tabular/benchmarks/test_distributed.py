"""Beyond one device and one process: tf.distribute over several replicas and several workers."""


def test_multi_device(benchmark, multi_device):
    multi_device(benchmark)


def test_multi_worker(benchmark, multi_worker):
    multi_worker(benchmark)
