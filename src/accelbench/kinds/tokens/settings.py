"""What each preset sets for the token cells (run.presets.KIND_SETTINGS "tokens")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from accelbench.kinds.tokens.serve import Requests, TokenBatching
from accelbench.run.presets import KIND_SETTINGS, KindSettings


@dataclass(frozen=True)
class TokenSettings:
    """The decoders timed (where --models names none of the run's generative models), the prompt
    lengths prefill is timed at, the batches decode is timed at and the contexts (each
    sequence's prompt before the steps), the decode steps in a round, and the rounds. Under
    load (serve.py): the requests' distributions, the batchings Server's peak search tries (the
    first also serves Offline and is gated), how long each LoadGen run lasts at least, and when
    the search stops."""

    models: tuple[str, ...]
    prompt_lengths: tuple[int, ...]
    batches: tuple[int, ...]
    decode_steps: int
    rounds: int
    contexts: tuple[int, ...] = (16,)
    # Outputs long beside prompts, as served text's are: decode is most of a request's time, so a
    # slower decode step shows in Offline's tokens/s and the peak rate. With 8 to 24 tokens out a
    # request's prefill and its insert into the batch were near half of it on TensorFlow, and a
    # planted 2x slower decode step read 0.53-0.80 of the peak's baseline; with 16 to 48,
    # 0.48-0.77 and Offline's 0.37-0.65 (docs/measurements.md).
    requests: Requests = Requests((16, 32), (16, 48))
    batchings: tuple[TokenBatching, ...] = (TokenBatching("continuous", 8),)
    min_duration_ms: int = 500
    min_query_count: int = 64
    rate_precision: float = 0.3
    max_search_runs: int = 4
    attempts: int = 2  # LoadGen runs at most per gated result, until one holds its gates (serve.py's TokenPlan)


QUICK_TOKENS = TokenSettings(("gpt_tiny",), (16, 64), (1, 8), decode_steps=8, rounds=8, contexts=(16, 96))
KIND_SETTINGS.register(
    "tokens",
    KindSettings(
        {
            "quick": QUICK_TOKENS,
            # GPT-2 small's shape: prompts of 128 to 512 tokens, 32 to 128 out; static and
            # continuous batching of 8 and 32 sequences, each searched for its peak rate.
            "full": TokenSettings(
                ("gpt2_small",),
                (128, 512),
                (1, 8, 32),
                decode_steps=32,
                rounds=10,
                contexts=(128, 896),
                requests=Requests((128, 256, 512), (32, 128)),
                batchings=tuple(
                    TokenBatching(policy, slots, 5.0) for policy in ("continuous", "static") for slots in (8, 32)
                ),
                min_duration_ms=10_000,
                min_query_count=256,
                rate_precision=0.1,
                max_search_runs=8,
            ),
            "smoke": dataclasses.replace(
                QUICK_TOKENS,
                prompt_lengths=(16,),
                batches=(1,),
                contexts=(16,),
                decode_steps=4,
                rounds=4,
                requests=Requests((16,), (4, 8)),
                batchings=(TokenBatching("static", 4, 2.0),),
                max_search_runs=3,
                rate_precision=0.5,
                attempts=1,
            ),
        }
    ),
    origin=__name__,
)
