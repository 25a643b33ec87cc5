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
    bytes_per_step: float | None = None  # weights and cache a step reads (prefill: its one step)
    flops_per_step: float | None = None  # a step's FLOPs: prefill the prompt's, decode every sequence's token
    compute_share: float | None = None  # prefill: FLOP/s over the compute roof
    bandwidth_share: float | None = None  # decode: bytes read per second over the copy roof
    roof_device: str | None = None
    roof_flops_per_s: float | None = None
    roof_bytes_per_s: float | None = None


@dataclass(frozen=True)
class TokenLoad(Part):
    """A generative model under LoadGen with token latencies on (kinds/tokens/serve.py): Server's
    peak request rate under the model's limits and its latencies at the fixed rate, or Offline's
    tokens/s, as LoadGen's summary log reports them."""

    scenario: str | None = None
    loadgen_valid: bool | None = None
    loadgen_why_invalid: str | None = None  # LoadGen's unsatisfied constraints and recommendations
    early_stopping: str | None = None  # its TTFT and TPOT early-stopping lines
    gated_batching: str | None = None  # the first batching's ("continuous 8"): the gated numbers'
    peak_rate: float | None = None  # Server: requests/s, the highest whose TTFT and TPOT met the limits
    best_batching: str | None = None  # Server: the batching with the highest peak rate
    rate_precision: float | None = None  # the search bracket's relative width when it stopped
    fixed_rate: float | None = None  # Server: the rate TTFT and TPOT are gated at (half the peak, or the baseline's)
    ttft_p50_ms: float | None = None  # at the fixed rate (Offline: of its one query)
    ttft_held_ms: float | None = None  # the held percentile (held_percentile)
    tpot_p50_ms: float | None = None
    tpot_held_ms: float | None = None  # the held percentile
    held_percentile: str | None = None  # the percentile the limits hold ("p90" in a preset's run, "p99" MLPerf's)
    ttft_limit_ms: float | None = None
    tpot_limit_ms: float | None = None
    output_tokens_per_s: float | None = None  # Offline: tokens/s; Server: completed at the fixed rate
    requests_per_s: float | None = None  # Offline: requests/s; Server: completed at the fixed rate
    # Server: every rate tried ({batching, rate, valid, ttft/tpot p50 and held ms, completed: requests/s, goodput:
    # requests/s that met both limits, each request its own TTFT and TPOT, as the loop timed them})
    rates_tried: list | None = None
    capacity_requests_per_s: float | None = None  # the rate the search started from, measured just before
    # Server, at the fixed rate: the loop's median decode step by its own clock (the model's
    # decode and the greedy pick), its share of TPOT's median, and so the smallest slowdown of
    # that step TPOT's gate fails: 1 + tolerance x TPOT / step. A step is only part of a served
    # token (the loop's work and other requests' prefills are the rest): the tiny decoder's on
    # JAX on a 2-core CPU was 72% of it, so a gate at 55% failed it only 1.76x slower or more.
    decode_step_ms: float | None = None
    decode_share_of_tpot: float | None = None
    tpot_gate_sees_decode_slowdown: float | None = None
    loadgen_logs: str | None = None
