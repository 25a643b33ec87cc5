"""Generative models' tokens: prefill tokens/s against prompt length, decode tokens/s and time
per output token against batch size and context, with the key/value cache's bytes and each
phase's share of its roof, and tokens under LoadGen: Server's peak request rate under TTFT and
TPOT limits, Offline's tokens/s (kinds/__init__.py says which file is which)."""
