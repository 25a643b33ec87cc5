"""Time and memory as the data grows, fitted and projected to sizes far beyond the
data."""


def test_train_data_scaling(benchmark, train_data_scaling):
    train_data_scaling(benchmark)


def test_predict_data_scaling(benchmark, predict_data_scaling):
    predict_data_scaling(benchmark)
