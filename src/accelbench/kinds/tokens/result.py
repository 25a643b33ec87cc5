"""A token cell's result, typed (accelbench.measured.Part): no framework, no pytest."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.measured import Part


@dataclass(frozen=True)
class Tokens(Part):
    """Prefill (a prompt into an empty cache) or decode (one token per sequence per step)."""

    phase: str | None = None
    prompt_tokens: int | None = None  # a prompt's length: prefill's axis; decode's prompt before its steps
    sequences: int | None = None  # the batch: sequences decoded together
    decode_steps: int | None = None  # tokens per sequence in a timed decode round
    tokens_per_s: float | None = None  # prompt tokens (prefill) or new tokens of every sequence (decode)
    ttft_ms: float | None = None  # prefill of one prompt: time to the first token, no queue
    tpot_ms: float | None = None  # decode: a step's time, each sequence's time per output token
    cache_bytes_per_token: int | None = None  # counted: one position of one sequence
    cache_bytes_measured: int | None = None  # what the cache's tensors hold, as allocated
    cache_positions: int | None = None  # positions per sequence the measured cache holds
    flops_per_token: float | None = None  # prefill: the prompt's FLOPs per token
    bytes_per_step: float | None = None  # decode: weights and cache a step reads
    compute_share: float | None = None  # prefill: FLOP/s over the compute roof
    bandwidth_share: float | None = None  # decode: bytes read per second over the copy roof
    roof_device: str | None = None
    roof_flops_per_s: float | None = None
    roof_bytes_per_s: float | None = None
