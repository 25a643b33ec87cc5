"""The RBF SVM study: fit time and accuracy on n-image subsets, grayscale vs
binarized."""


def test_svm(benchmark, svm_bench):
    svm_bench(benchmark)
