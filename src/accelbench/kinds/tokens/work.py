"""A generative model's prefill and decode rounds, child-safe: built from the zoo's ModelSpec
(its Generation) on a placement, on synthetic prompts of its own vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench.axes.models import Generation, ModelOptions, ModelSpec
from accelbench.user_modules import call_user


def build(spec: ModelSpec, placement: Any, options: ModelOptions) -> Any:
    """The model, its weights drawn from the run's seed on the cell's device; a user's builder
    that raises is one UserCodeFailed, as every builder's is (work/build.py)."""
    with placement.scope():
        return call_user(f"model {spec.name!r}: its builder", spec.build, None, None, options)


def warmed(spec: ModelSpec, work: Any) -> Any:
    """`work` after one untimed round (traced, compiled); a user's prefill or decode that raises
    there is one UserCodeFailed naming the model."""
    call_user(f"model {spec.name!r}: its generation (prefill or decode)", work.run)
    return work


def prompts(generation: Generation, sequences: int, length: int, seed: int) -> np.ndarray:
    """Synthetic prompts: tokens drawn uniformly from the vocabulary, seeded (the time of a step
    does not depend on which tokens it sees)."""
    return np.random.default_rng(seed).integers(0, generation.vocabulary, (sequences, length)).astype("int32")


def waited(tensor: Any) -> np.ndarray:
    """The tensor on the host: a round ends when the device has finished it."""
    from keras import ops

    return ops.convert_to_numpy(tensor)


@dataclass
class Prefill:
    """One prompt into an empty cache; the round ends with the last position's logits on the host."""

    model: Any
    generation: Generation
    placement: Any
    prompt: np.ndarray

    def run(self) -> np.ndarray:
        with self.placement.scope():
            logits, _ = self.generation.prefill(self.model, self.prompt)
            return waited(logits[:, -1])


@dataclass
class Decode:
    """`steps` greedy tokens per sequence against a prefilled cache, the next token chosen on the
    device (no host round trip between steps); the round ends with the last tokens on the host."""

    model: Any
    generation: Generation
    placement: Any
    first: Any  # batch x 1: the token after the prompt
    cache: Any
    start: int  # the first new token's position
    steps: int

    @classmethod
    def after(cls, model: Any, generation: Generation, placement: Any, prompt: np.ndarray, steps: int) -> Decode:
        from keras import ops

        with placement.scope():
            logits, cache = generation.prefill(model, prompt)
            first = ops.cast(ops.expand_dims(ops.argmax(logits[:, -1], axis=-1), -1), "int32")
        return cls(model, generation, placement, first, cache, prompt.shape[1], steps)

    def run(self) -> np.ndarray:
        from keras import ops

        tokens, cache = self.first, self.cache
        with self.placement.scope():
            for step in range(self.steps):
                logits, cache = self.generation.decode(self.model, tokens, cache, self.start + step)
                tokens = ops.cast(ops.expand_dims(ops.argmax(logits[:, -1], axis=-1), -1), "int32")
            return waited(tokens)
