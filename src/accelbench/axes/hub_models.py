"""KerasHub's causal language models as generative models of the token cells: the prefill and
decode of a Generation (axes/models.py keras_hub_causal_lm) over the cached call every KerasHub
`CausalLM` has, `call_with_cache(token_ids, cache, cache_update_index) -> (logits, hidden
states, cache)`, the call its own `generate()` makes.

KerasHub is an extra (`accelbench[keras-hub]`), never a core dependency: its Linux wheel needs
tensorflow-text, and so TensorFlow, which a JAX- or PyTorch-only install does not have. Its
models come here as their classes, built from a config with random weights (no preset is
downloaded: a benchmark's times do not depend on the weights' values).

Its cached call runs as the house decoder's prefill and decode do (axes/decoder.py): compiled
as the backend compiles a step (Backend.traced: tf.function, jax.jit; traced once per prompt
length, the position passed as a tensor so that decode steps share one trace), as KerasHub's own
generate() compiles it; eagerly on PyTorch. TensorFlow has no choice: the call writes the cache
with `slice_update`, an XLA op TensorFlow runs inside a graph but not eagerly on a CPU.

One thing its cached call does that the house decoder does not:
- It takes one position for the whole batch (`cache_update_index` is one int): a batch's
  sequences step together, so a served batch cannot take a new request between decode steps. The
  Generation has no `insert`, and the serving cells serve one request at a time (kinds/tokens/
  bench.py ONE_AT_A_TIME).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelbench.axes import decoder
from accelbench.axes.decoder import DecoderShape

# What its models need (ModelSpec.requires): the module, and how to install it.
REQUIRES = ("keras_hub", "pip install 'accelbench[keras-hub]'")


@dataclass(frozen=True)
class _Cached:
    """How one built CausalLM is called: its cached call (a tf.function on TensorFlow) and its
    cache's layout, found by building a cache for prompts of one and two tokens."""

    call: Callable[..., Any]
    per_sequence: tuple[int, ...]  # one sequence's cache, its length axis at `length_axis`
    length_axis: int
    dtype: str

    def empty(self, batch: int, context: int) -> Any:
        from keras import ops

        shape = [batch, *self.per_sequence]
        shape[self.length_axis] = context
        return ops.zeros(shape, dtype=self.dtype)


# A model's call and layout, found at its first prefill and kept while the model lives.
_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cached(model: Any) -> _Cached:
    found = _CALLS.get(model)
    if found is None:
        found = _CALLS[model] = _layout(model)
    return found


def _layout(model: Any) -> _Cached:
    """The model's cached call, and the one axis of its cache that grows with the sequence: found
    by KerasHub's own cache builder (`_build_cache`, what its generate() seeds a cache with) on
    one and two tokens. A cache that is not one tensor with one such axis (a recurrent model's
    state, a cache per layer) is refused in one line."""
    from keras import ops

    from accelbench.axes.backends import compiled

    call, build = compiled(model.call_with_cache, model), compiled(model._build_cache, model)
    shapes = []
    for length in (1, 2):
        with warnings.catch_warnings():  # Keras warns of a softmax over one position: the one-token probe's
            warnings.simplefilter("ignore", UserWarning)
            cache = build(ops.zeros((1, length), dtype="int32"))[1]
        if not hasattr(cache, "shape"):
            raise ValueError(
                f"{type(model).__name__}'s cache is not one tensor: not served as a KerasHub CausalLM here"
            )
        shapes.append(tuple(int(size) for size in cache.shape))
    grows = [axis for axis, (one, two) in enumerate(zip(*shapes)) if two == 2 * one]
    if len(grows) != 1 or grows[0] == 0:
        raise ValueError(f"{type(model).__name__}'s cache has no single length axis (shapes {shapes[0]}, {shapes[1]})")
    return _Cached(call, shapes[0][1:], grows[0], model.compute_dtype)


def prefill(model: Any, tokens: Any, context: int) -> tuple[Any, Any]:
    from keras import ops

    cached = _cached(model)
    padded, length = decoder.padded_prompt(tokens, context)
    logits, _, cache = cached.call(padded, cached.empty(ops.shape(tokens)[0], context), 0)
    return logits[:, :length], cache


def decode(model: Any, tokens: Any, cache: Any, index: Any) -> tuple[Any, Any]:
    if not isinstance(index, int):
        raise ValueError("a KerasHub CausalLM decodes every sequence of a batch at one position")
    cached = _cached(model)
    logits, _, cache = cached.call(tokens, cache, index)
    return logits, cache


def cache_bytes(cache: Any) -> int:
    """The bytes its one tensor holds, counted as the house decoder's are."""
    return decoder.cache_bytes([(cache,)])


# GPT-2's architecture at the house tiny decoder's sizes (axes/models.py DECODERS "gpt_tiny"),
# so that the two are timed on the same shape, and counted alike: the same weights (a test
# holds the built model's to DecoderShape's count).
HUB_GPT2_TINY = dict(
    vocabulary_size=512, num_layers=2, num_heads=4, hidden_dim=64, intermediate_dim=256, max_sequence_length=128
)


def gpt2_shape(sizes: dict[str, int]) -> DecoderShape:
    return DecoderShape(
        sizes["vocabulary_size"],
        sizes["max_sequence_length"],
        sizes["hidden_dim"],
        sizes["num_layers"],
        sizes["num_heads"],
        sizes["intermediate_dim"],
    )


def hub_gpt2_tiny() -> Any:
    """KerasHub's GPT2CausalLM at HUB_GPT2_TINY's sizes, its weights random."""
    import keras_hub

    backbone = keras_hub.models.GPT2Backbone(**HUB_GPT2_TINY)
    return keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
