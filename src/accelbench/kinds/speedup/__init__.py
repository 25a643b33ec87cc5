"""Speedups of a larger batch and of an accelerator, interleaved, and the harness's own
overhead against a hand-written loop (kinds/__init__.py says which file is which)."""
