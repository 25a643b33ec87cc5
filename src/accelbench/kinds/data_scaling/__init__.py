"""Data scaling: time and host memory as the training or test set grows, fitted and projected to
sizes far beyond the data (kinds/__init__.py says which file is which)."""
