"""Throughput and latency: steady-state training and inference rounds per cell, batch-1 latency
percentiles, and what their numbers say across batch sizes and precisions (kinds/__init__.py says
which file is which)."""
