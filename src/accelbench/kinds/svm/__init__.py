"""The RBF SVM study: fit time and accuracy on n-image subsets, grayscale vs binarized
(kinds/__init__.py says which file is which)."""
