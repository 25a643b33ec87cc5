"""Generative models' tokens: prefill tokens/s against prompt length and decode tokens/s and
time per output token against batch size, with the key/value cache's bytes and each phase's share
of its roof (kinds/__init__.py says which file is which)."""
