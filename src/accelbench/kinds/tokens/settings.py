"""What each preset sets for the token cells (run.presets.KIND_SETTINGS "tokens")."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.run.presets import KIND_SETTINGS, KindSettings


@dataclass(frozen=True)
class TokenSettings:
    """The decoders timed (where --models names none of the run's generative models), the prompt
    lengths prefill is timed at, the batches decode is timed at (after a prompt of the first
    length), the decode steps in a round, and the rounds."""

    models: tuple[str, ...]
    prompt_lengths: tuple[int, ...]
    batches: tuple[int, ...]
    decode_steps: int
    rounds: int


KIND_SETTINGS.register(
    "tokens",
    KindSettings(
        {
            "quick": TokenSettings(("gpt_tiny",), (16, 64), (1, 8), decode_steps=16, rounds=8),
            "full": TokenSettings(("gpt2_small",), (128, 512), (1, 8, 32), decode_steps=32, rounds=10),
            "smoke": TokenSettings(("gpt_tiny",), (16,), (1,), decode_steps=4, rounds=4),
        }
    ),
    origin=__name__,
)
