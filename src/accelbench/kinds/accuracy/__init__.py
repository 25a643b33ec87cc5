"""Accuracy: the published recipe's accuracy (gated), a lower precision against float32, a
backend against the process backend's, a device against the CPU (kinds/__init__.py says which
file is which)."""
