"""A generative model's prefill and decode rounds, child-safe: built from the zoo's ModelSpec
(its Generation) on a placement, on synthetic prompts of its own vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench.axes.backends import weights_on
from accelbench.axes.models import Generation, ModelOptions, ModelSpec
from accelbench.measured import Placed
from accelbench.user_modules import call_user


def build(spec: ModelSpec, placement: Any, options: ModelOptions) -> Any:
    """The model through the one model-building path (work/build.py): under the precision's dtype
    policy, its weights drawn from the run's seed (a GPU's from the CPU's draw), on the cell's
    device; a user's builder that raises is one UserCodeFailed, as every builder's is."""
    from accelbench.work.build import build_model

    scope = placement.scope()
    return build_model(spec, (1,), options, scope, train=False, outputs=spec.generation.vocabulary, input_dtype="int32")


def made(spec: ModelSpec, model: Any, placement: Any, phase: str, prompt: np.ndarray, steps: int = 0) -> Any:
    """A prefill cell's work (the prompt into an empty cache) or a decode cell's (`steps` tokens
    after the prompt); a user's prefill that raises making it is one UserCodeFailed."""
    generation = spec.generation
    if phase == "prefill":
        return Prefill(model, generation, placement, prompt)
    decode = lambda: Decode.after(model, generation, placement, prompt, steps)
    return call_user(f"model {spec.name!r}: its prefill", decode)


# A worker's prepared token cells, by cell id: built once, a round timed per call.
_KEPT: dict[str, Any] = {}
# A worker's models, by (model, device, options): its token cells share one, as the pytest
# process's do (bench.shared_model), so that its compiled steps are traced once per shape.
_MODELS: dict[tuple[str, str, ModelOptions], Any] = {}


def kept_model(site: Any) -> Any:
    """The site's model, built once in this worker for every token cell of its model, device and
    options."""
    key = (site.model.name, site.placement.name, site.options)
    if key not in _MODELS:
        _MODELS[key] = build(site.model, site.placement, site.options)
    return _MODELS[key]


def prepare_in_worker(site: Any, phase: str, prompt: list, steps: int = 0) -> dict[str, Any]:
    """A token cell on another backend (Bench.in_worker): built and warmed here as the pytest
    process builds its own, kept for its rounds; its parameters and its cache's bytes measured."""
    spec = site.model
    model = kept_model(site)
    work = warmed(spec, made(spec, model, site.placement, phase, np.asarray(prompt, "int32"), steps))
    _KEPT[site.cell_id] = work
    measure = spec.generation.cache_bytes
    held = measure(work.cache) if measure and phase != "prefill" else None
    return {"parameters": int(model.count_params()), "cache_bytes": held, Placed.keys.weights_on: weights_on(model)}


def round_in_worker(site: Any) -> float:
    """One round of the cell's kept work, timed here: its seconds."""
    from accelbench.work.measure import seconds

    return seconds(_KEPT[site.cell_id].run)


def warmed(spec: ModelSpec, work: Any) -> Any:
    """`work` after one untimed round (traced, compiled); a user's prefill or decode that raises
    there is one UserCodeFailed naming the model."""
    call_user(f"model {spec.name!r}: its generation (prefill or decode)", work.run)
    return work


def prompts(generation: Generation, sequences: int, length: int, seed: int) -> np.ndarray:
    """Synthetic prompts: tokens drawn uniformly from the vocabulary, seeded (the time of a step
    does not depend on which tokens it sees)."""
    return np.random.default_rng(seed).integers(0, generation.vocabulary, (sequences, length)).astype("int32")


def no_gradients() -> Any:
    """The backend's context for calls that record no gradients (Backend.no_gradients): a decode
    loop feeds each step's cache to the next, and a recorded graph would keep every step's."""
    import keras

    from accelbench.axes.backends import BACKENDS

    return BACKENDS[keras.backend.backend()].no_gradients()


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
        with self.placement.scope(), no_gradients():
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
        with placement.scope(), no_gradients():
            logits, cache = generation.prefill(model, prompt)
            first = next_tokens(logits)
        return cls(model, generation, placement, first, cache, prompt.shape[1], steps)

    def run(self) -> np.ndarray:
        """A round's steps, each from the token before. The cache a round returns is the next
        round's: a decode step may consume the one it is given (donated on JAX), and the next
        round writes the same positions again before it attends them (the causal mask hides
        those after the step's), so every round does the same work."""
        tokens, cache = self.first, self.cache
        with self.placement.scope(), no_gradients():
            for step in range(self.steps):
                logits, cache = self.generation.decode(self.model, tokens, cache, self.start + step)
                tokens = next_tokens(logits)
            self.cache = cache
            return tokens


def next_tokens(logits: Any) -> np.ndarray:
    """Greedy: each sequence's most likely next token, on the host (batch x 1 int32)."""
    return np.argmax(waited(logits[:, -1]), axis=-1).astype("int32")[:, None]
