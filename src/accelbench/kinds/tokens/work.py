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
    """`steps` greedy tokens per sequence against a prefilled cache, each step's tokens fetched to
    the host and fed back from there, as a server streaming them to its clients must (its loop,
    serve.py, steps the same way): the time per output token a client sees."""

    model: Any
    generation: Generation
    placement: Any
    first: np.ndarray  # batch x 1: the token after the prompt
    cache: Any
    start: int  # the first new token's position
    steps: int

    @classmethod
    def after(cls, model: Any, generation: Generation, placement: Any, prompt: np.ndarray, steps: int) -> Decode:
        with placement.scope():
            logits, cache = generation.prefill(model, prompt)
            first = next_tokens(logits)
        return cls(model, generation, placement, first, cache, prompt.shape[1], steps)

    def run(self) -> np.ndarray:
        tokens, cache = self.first, self.cache
        with self.placement.scope():
            for step in range(self.steps):
                logits, cache = self.generation.decode(self.model, tokens, cache, self.start + step)
                tokens = next_tokens(logits)
            return tokens


def next_tokens(logits: Any) -> np.ndarray:
    """Greedy: each sequence's most likely next token, on the host (batch x 1 int32)."""
    return np.argmax(waited(logits[:, -1]), axis=-1).astype("int32")[:, None]
