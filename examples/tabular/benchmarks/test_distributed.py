"""Beyond one device and one process: several replicas (tf.distribute, or Keras'
DataParallel on JAX) and several workers (tf.distribute)."""


def test_multi_device(benchmark, multi_device):
    multi_device(benchmark)


def test_multi_worker(benchmark, multi_worker):
    multi_worker(benchmark)
