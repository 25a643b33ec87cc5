"""A GPT-style decoder-only transformer in plain Keras 3, so that every backend runs it: token and
position embeddings, pre-norm blocks of causal self-attention and a GELU MLP, a final norm and a
head tied to the token embedding (GPT-2's shape), with a key/value cache for incremental
decoding.

Written here rather than taken from KerasHub: KerasHub's Linux wheel needs tensorflow-text, which
a JAX- or PyTorch-only install does not have, and the token cells need the cache's layout and
its bytes per token in the open. The one forward pass (`run_positions`: `forward` is torch's
name for a module's call) serves three uses: the whole sequence at once (`call`: recomputing,
what a cached decode must agree with), a prompt into an empty cache (`prefill`) and one new
token per sequence against the cache (`decode`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

NEGATIVE = -1e9  # a masked score: exp() of it is 0 in float32


@dataclass(frozen=True)
class DecoderShape:
    """A decoder's size: GPT-2 small is vocabulary 50,257, context 1,024, width 768, 12 layers
    of 12 heads, hidden 3,072 (124M parameters with the tied head)."""

    vocabulary: int
    context: int  # the longest sequence its cache holds
    width: int
    layers: int
    heads: int
    hidden: int

    @property
    def head_width(self) -> int:
        return self.width // self.heads

    def cache_bytes_per_token(self, itemsize: int = 4) -> int:
        """A key and a value per layer for each position of a sequence's cache (counted;
        cache_bytes measures what a cache's buffers hold: context positions per sequence)."""
        return 2 * self.layers * self.width * itemsize

    def parameters(self) -> int:
        """Weights, the tied head counted once."""
        block = 4 * self.width * self.width + 4 * self.width  # query, key, value, projection
        block += 2 * self.width * self.hidden + self.hidden + self.width  # the MLP
        block += 4 * self.width  # two norms
        return (self.vocabulary + self.context) * self.width + self.layers * block + 2 * self.width

    def matmul_flops_per_token(self) -> float:
        """2 x multiply-adds of every weight a token passes through: the blocks' and the head's."""
        return 2.0 * self.layers * (4 * self.width * self.width + 2 * self.width * self.hidden) + 2.0 * (
            self.width * self.vocabulary
        )

    def attention_flops(self, position: int) -> float:
        """A token at `position` (0-based) against the position + 1 keys it sees: scores and the
        weighted sum of values, 2 x multiply-adds, every layer."""
        return 2.0 * 2 * self.layers * self.width * (position + 1)


def build_decoder(shape: DecoderShape, seed: int) -> Any:
    """The decoder, its matrices and embeddings drawn from `seed` (drawn)."""
    import keras

    model = decoder_class()(shape)
    # Every weight built by a symbolic call (the backend traces the call's shapes, as
    # compute_output_spec does): the same weights as an eager call, without JAX compiling each
    # op of it apart (3.2 s against 0.06 for gpt_tiny on a 2-core CPU).
    model(keras.KerasTensor((1, 1), dtype="int32"))
    drawn(model, seed)
    return model


def drawn(model: Any, seed: int) -> None:
    """The distributions of Keras' default initializers, Glorot-uniform kernels and embeddings
    uniform in +-0.05, drawn by NumPy from `seed` into the weights the layers built as zeros
    (biases stay zeros, the norms ones). Not GPT-2's N(0, 0.02): at that scale an untrained
    decoder repeats its prompt's last token, and a cache written a position off gave the same
    tokens as recomputing (tests/test_generative.py).

    Not Keras' initializers themselves: on JAX each draws through a program compiled once per
    weight shape (jax.random's), 0.13-0.21 s each on a 2-core CPU, 1.1 s of gpt_tiny's 1.5 s
    build. Not a NumPy initializer either: a weight the symbolic call builds calls its
    initializer at every read of the trace, and TensorFlow keeps each draw as a constant of the
    traced graph (GPT-2 small's build took 9.9 s so; docs/measurements.md)."""
    import numpy as np

    generator = np.random.default_rng(seed)
    for weight in model.weights:
        if len(weight.shape) == 2:
            fan_in, fan_out = weight.shape
            limit = 0.05 if weight.path.endswith("embeddings") else math.sqrt(6.0 / (fan_in + fan_out))
            values = generator.random(weight.shape, dtype=np.float32)  # [0, 1), in place: no copies
            values *= np.float32(2 * limit)
            values -= np.float32(limit)
            weight.assign(values)


@functools.cache
def decoder_class() -> type:
    """The Keras model class, made once where Keras is imported (this module is imported by the
    zoo, which must not load a framework)."""
    import keras
    import numpy as np
    from keras import ops

    class Block(keras.layers.Layer):
        """Pre-norm causal self-attention and MLP: this call's keys and values written into the
        cache at positions start.., each query attending over the positions up to its own."""

        def __init__(self, shape: DecoderShape, **kwargs):
            super().__init__(**kwargs)
            self.shape_of = shape
            self.attention_norm = keras.layers.LayerNormalization(epsilon=1e-5)
            # Built as zeros, drawn after (drawn): no random program per weight shape.
            self.query_key_value = keras.layers.Dense(3 * shape.width, kernel_initializer="zeros")
            self.projection = keras.layers.Dense(shape.width, kernel_initializer="zeros")
            self.mlp_norm = keras.layers.LayerNormalization(epsilon=1e-5)
            self.up = keras.layers.Dense(shape.hidden, activation="gelu", kernel_initializer="zeros")
            self.down = keras.layers.Dense(shape.width, kernel_initializer="zeros")

        def call(self, x, keys, values, causal, pairs):
            """`causal`: (batch, 1, length, context), which cache positions each of `x`'s tokens
            sees; `pairs`: where in the cache its keys and values go (cache_pairs)."""
            shape = self.shape_of
            batch, length = ops.shape(x)[0], ops.shape(x)[1]
            qkv = ops.reshape(self.query_key_value(self.attention_norm(x)), (batch, length, 3, shape.heads, -1))
            qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # (3, batch, heads, length, head width)
            query, key, value = qkv[0], qkv[1], qkv[2]
            keys, values = scattered(keys, key, pairs), scattered(values, value, pairs)
            scores = ops.matmul(query, ops.swapaxes(keys, -1, -2)) / math.sqrt(shape.head_width)
            scores = ops.where(causal, scores, NEGATIVE)
            attended = ops.matmul(ops.softmax(scores, axis=-1), values)
            attended = ops.reshape(ops.transpose(attended, (0, 2, 1, 3)), (batch, length, shape.width))
            x = x + self.projection(attended)
            return x + self.down(self.up(self.mlp_norm(x))), keys, values

    # The cache is a fixed buffer of the context's positions per layer, (batch, heads, context,
    # head width), written where a step's tokens stand and attended whole under the causal mask,
    # as static-shape decoders do (KerasHub's): every step has the same shapes, so a compiled
    # step is traced once. Batch and heads lead, as attention's matmuls batch them, so no step
    # transposes the cache: laid out (context, batch, heads, head width), GPT-2 small's batch-8
    # step took 193 ms on TensorFlow and 178 to 198 on JAX, against 88 to 92 and 82 to 138
    # (docs/measurements.md).
    # It is written by one scatter per tensor, over the cache seen as (batch x heads, context,
    # head width), whose two leading axes a (sequence and head, position) pair indexes:
    # scatter_update, not slice_update, as TensorFlow's slice update is an XLA op its eager CPU
    # kernels lack, and a slice writes one position range for every sequence.
    def cache_pairs(positions, heads: int):
        """(row, position) pairs, batch x heads x length of them: where each token's key and
        value for each head go, `positions` (batch, length) saying where each token stands.
        Made once a step for every layer: eagerly (PyTorch) each op is a dispatch."""
        batch, length = ops.shape(positions)[0], ops.shape(positions)[1]
        rows = ops.reshape(ops.arange(batch * heads, dtype="int32"), (batch, heads, 1))
        rows = ops.broadcast_to(rows, (batch, heads, length))
        where = ops.broadcast_to(ops.cast(positions, "int32")[:, None, :], (batch, heads, length))
        return ops.stack([ops.reshape(rows, (-1,)), ops.reshape(where, (-1,))], axis=-1)

    def scattered(cache, new, pairs):
        """`cache` (batch, heads, context, head width) with `new` (batch, heads, length, head
        width) written at `pairs` (cache_pairs)."""
        batch, heads, context, width = ops.shape(cache)
        flat = ops.scatter_update(
            ops.reshape(cache, (batch * heads, context, width)), pairs, ops.reshape(new, (-1, width))
        )
        return ops.reshape(flat, (batch, heads, context, width))

    class Decoder(keras.Model):
        def __init__(self, shape: DecoderShape, **kwargs):
            super().__init__(name="decoder", **kwargs)
            self.shape_of = shape
            self.token_embedding = keras.layers.Embedding(shape.vocabulary, shape.width, embeddings_initializer="zeros")
            self.position_embedding = keras.layers.Embedding(shape.context, shape.width, embeddings_initializer="zeros")
            self.blocks = [Block(shape, name=f"block_{i}") for i in range(shape.layers)]
            self.final_norm = keras.layers.LayerNormalization(epsilon=1e-5)

        def empty_cache(self, batch: int) -> list:
            """A key and a value buffer per layer, (batch, heads, context, head width), zeros."""
            shape = self.shape_of
            size = (batch, shape.heads, shape.context, shape.head_width)
            return [
                (ops.zeros(size, dtype=self.compute_dtype), ops.zeros(size, dtype=self.compute_dtype))
            ] * shape.layers

        def run_positions(self, tokens, cache: list, start):
            """Logits of every position of `tokens` (batch, length), which stand at positions
            start..start + length - 1, and the cache with their keys and values written in;
            `start` one int (or a 0-d tensor: a compiled step's), or a vector of one position
            per sequence: one token each (length 1), each at its own position."""
            batch, length = ops.shape(tokens)[0], ops.shape(tokens)[1]
            if one_position(start):
                positions = ops.broadcast_to((ops.arange(length) + start)[None], (batch, length))
            else:
                positions = ops.convert_to_tensor(start, dtype="int32")[:, None]
            x = self.token_embedding(tokens) + self.position_embedding(positions)
            causal = (ops.arange(self.shape_of.context)[None, None, :] <= positions[:, :, None])[:, None]
            pairs = cache_pairs(positions, self.shape_of.heads)
            written = []
            for block, (keys, values) in zip(self.blocks, cache):
                x, keys, values = block(x, keys, values, causal=causal, pairs=pairs)
                written.append((keys, values))
            x = self.final_norm(x)
            return ops.matmul(x, ops.transpose(self.token_embedding.embeddings)), written

        def call(self, tokens):
            """Every position's logits, the whole sequence at once (no cache kept)."""
            return self.run_positions(tokens, self.empty_cache(ops.shape(tokens)[0]), 0)[0]

        def prefill(self, tokens):
            """A prompt into an empty cache: its logits and the cache (a compiled step, the prompt
            padded to its length's bucket: padded_prompt)."""
            self.within_context(ops.shape(tokens)[1], 0)
            padded, length = padded_prompt(tokens, self.shape_of.context)
            logits, cache = self.compiled_steps()[0](padded)
            return logits[:, :length], cache

        def decode(self, tokens, cache: list, index):
            """One new token per sequence (tokens: batch x 1) at position `index`, or at each
            sequence's own (`index` a vector of batch ints): a compiled step, which consumes
            `cache` (its buffers donated on JAX): use the one it returns."""
            index = index if isinstance(index, int) else np.asarray(index, dtype="int32")
            self.within_context(1, index)
            return self.compiled_steps()[1](tokens, cache, index)

        def within_context(self, length: int, start) -> None:
            """Refused in one line before a step runs: a compiled step cannot raise, and a JAX
            scatter past the buffer's end is dropped."""
            last = int(np.max(start)) + int(length)
            if last > self.shape_of.context:
                raise ValueError(f"positions up to {last} past the decoder's context of {self.shape_of.context}")

        def compiled_steps(self) -> tuple:
            """(prefill, decode, insert, take) as the backend compiles a step (compiled), made once."""
            if "_accelbench_steps" not in self.__dict__:
                from accelbench.axes.backends import compiled

                eager_prefill = lambda tokens: self.run_positions(tokens, self.empty_cache(ops.shape(tokens)[0]), 0)  # noqa: E731
                # decode and insert consume the cache they update (donated on JAX); take makes
                # one of another size, and its source stays the loop's until it is replaced.
                self.__dict__["_accelbench_steps"] = (
                    compiled(eager_prefill, self),
                    compiled(self.run_positions, self, donate=(1,)),
                    compiled(self.inserted, self, donate=(0,)),
                    compiled(self.taken, self),
                )
            return self.__dict__["_accelbench_steps"]

        def insert(self, cache: list, one: list, slot: int) -> list:
            """`cache` with sequence `slot` replaced by `one`'s single sequence (a prompt's prefill):
            a request taking a finished one's place in a batch; a compiled step, as take is, which
            consumes `cache` as decode does."""
            return self.compiled_steps()[2](cache, one, slot)

        def take(self, cache: list, rows) -> list:
            """The cache of sequences `rows` of `cache`, in that order (a row may repeat): a served
            batch shrunk to the sequences it runs, or grown for new ones. A compiled step: eagerly,
            a take of gpt_tiny's four tensors cost TensorFlow 1.2 ms, as much as its decode step."""
            return self.compiled_steps()[3](cache, np.asarray(rows, dtype="int32"))

        def inserted(self, cache: list, one: list, slot) -> list:
            """insert's work. An elementwise select, not a slice update, for TensorFlow's eager
            CPU kernels (as above); positions past the new sequence's are masked until its decode
            overwrites them."""
            batch = ops.shape(cache[0][0])[0]
            chosen = (ops.arange(batch) == slot)[:, None, None, None]
            return [
                (ops.where(chosen, new_keys, keys), ops.where(chosen, new_values, values))
                for (keys, values), (new_keys, new_values) in zip(cache, one)
            ]

        def taken(self, cache: list, rows) -> list:
            return [(ops.take(keys, rows, axis=0), ops.take(values, rows, axis=0)) for keys, values in cache]

    return Decoder


def padded_prompt(tokens: Any, context: int) -> tuple[Any, int]:
    """(the prompt padded with zeros to the next power of two, at most the context; its length):
    a compiled prefill is compiled once per prompt length, and a served stream's prompts draw
    their lengths from a range, so lengths share a few buckets, as servers pad to theirs (TF
    Serving's allowed batch sizes). The pad's keys and values stand past the prompt's last
    position, where the causal mask hides them until a decode step writes that position first."""
    import numpy as np

    tokens = np.asarray(tokens, dtype="int32")
    length = tokens.shape[1]
    bucket = min(context, 1 << max(0, length - 1).bit_length())
    if bucket <= length:
        return tokens, length
    return np.pad(tokens, ((0, 0), (0, bucket - length))), length


def one_position(start: Any) -> bool:
    """Whether a step's `start` is one position for every sequence (an int, or a 0-d tensor as a
    compiled step receives it) rather than one per sequence."""
    from keras import ops

    return isinstance(start, int) or len(ops.shape(start)) == 0


def cache_bytes(cache: list) -> int:
    """The bytes a cache's tensors hold, as the backend allocated them (their element counts
    times their dtype's size)."""
    import numpy as np
    from keras import ops

    return sum(
        int(np.prod(ops.shape(tensor)))
        * np.dtype(ops.dtype(tensor) if hasattr(ops, "dtype") else tensor.dtype).itemsize
        for pair in cache
        for tensor in pair
    )


def greedy(model: Any, prompt: Any, new_tokens: int, cached: bool = True) -> list[list[int]]:
    """`new_tokens` greedy tokens after `prompt` (batch x length ints): with the cache (prefill,
    then a decode step per token), or recomputing the whole sequence for each (what the cache
    must agree with)."""
    import numpy as np
    from keras import ops

    tokens = np.asarray(prompt, dtype="int32")
    made = []
    if cached:
        logits, cache = model.prefill(tokens)
        for step in range(new_tokens):
            chosen = np.argmax(ops.convert_to_numpy(logits[:, -1]), axis=-1).astype("int32")[:, None]
            made.append(chosen)
            if step + 1 < new_tokens:
                logits, cache = model.decode(chosen, cache, tokens.shape[1] + step)
    else:
        for _ in range(new_tokens):
            logits = model(np.concatenate([tokens, *made], axis=1) if made else tokens)
            made.append(np.argmax(ops.convert_to_numpy(logits[:, -1]), axis=-1).astype("int32")[:, None])
    return np.concatenate(made, axis=1).tolist()
