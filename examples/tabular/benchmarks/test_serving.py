"""Serving under load: MLPerf LoadGen's scenarios, dynamic batching, the peak QPS under
a latency bound.

LoadGen times these; pytest-benchmark does not.
"""


def test_serving(serving_bench):
    serving_bench()
