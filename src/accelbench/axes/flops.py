"""What a Keras model computes: floating-point operations per sample, layer by layer.

The convention is the papers' (He et al. 2015; the PaLM paper's MFU): 2 x multiply-adds, a
convolution's output size x its kernel (so positions in "same" padding count), training =
forward x TRAIN_FLOPS_PER_FORWARD. Elementwise work a layer does beside its products (bias,
activation, a gate's sigmoid, attention's softmax) is not counted; layers that are elementwise
only (normalization, pooling) count the arithmetic each element needs, as stated per counter.
tests/test_flops.py holds every counter to XLA's cost analysis of the layer alone.

Written here because nothing kept counts Keras layers: TensorFlow's graph profiler misses a
recurrent layer's loop (a GRU over 20 steps counted 1,355 FLOPs), XLA's cost analysis drops
padded positions and needs a compiled function per model, and fvcore, ptflops and DeepSpeed's
profiler count PyTorch modules.

A layer with weights and no counter makes the model's count unknown, naming the layer: a
partial sum would pass for the whole. A project counts a layer of its own with
`accelbench.register_layer_flops`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from accelbench.registry import Registry

TRAIN_FLOPS_PER_FORWARD = 3.0  # forward, plus gradients w.r.t. activations and weights
# Bytes a step moves, estimated per layer for the arithmetic intensity (FLOPs per byte). The
# weights (float32 variables, whatever the policy computes in) are read once per batch when
# predicting; a training step reads them forward and backward, writes and reads their
# gradient, reads and writes Adam's two moments and reads and writes the weights: 10 passes.
# Each layer's inputs and outputs cross memory once predicting; training writes them forward,
# reads them backward and writes and reads their gradients: 4 passes.
WEIGHT_BYTES = 4
TRAIN_WEIGHT_PASSES = 10
TRAIN_ACTIVATION_PASSES = 4

# A counter: the layer and its (input shapes, output shapes) without the batch dimension ->
# forward FLOPs per sample.
Shapes = Sequence[tuple[int, ...]]
Counter = Callable[[Any, Shapes, Shapes], float]
COUNTERS: Registry[Counter] = Registry("layer FLOP counter")
# Layers without weights whose work is not counted: they move, reshape or drop data, or are
# elementwise beside the products the convention counts (an activation, an addition).
NOT_COUNTED_WITHOUT_WEIGHTS = "moves or reshapes data, or is elementwise: not counted"


NO_COUNTER = "has weights and no counter"  # a layer's why, where a counter would make it counted


@dataclass(frozen=True)
class LayerFlops:
    """One layer's line of a model's FLOP table."""

    path: str  # the layer's name, under its enclosing models' (encoder/block_1/attention)
    layer_class: str  # its class name
    params: int
    forward_flops: float | None  # per sample; None: not counted (why says why)
    why: str = ""  # what is or is not counted
    activations: int | None = 0  # elements per sample in its inputs and outputs (None: a size unknown)
    executed_flops: float | None = None  # what its kernels compute: padded taps left out (None: forward_flops)

    @property
    def counted(self) -> bool:
        """A layer with no counter and no weights is 0 (forward_flops 0.0); None is a layer not
        counted, weights or not (a pooling over a sequence of unknown length): never a partial sum."""
        return self.forward_flops is not None


@dataclass(frozen=True)
class FlopCount:
    """A model's forward FLOPs per sample, or why they are unknown, and the table behind it."""

    layers: tuple[LayerFlops, ...]

    @property
    def uncounted(self) -> tuple[LayerFlops, ...]:
        return tuple(layer for layer in self.layers if not layer.counted)

    @property
    def executed(self) -> float | None:
        """Forward FLOPs per sample as the kernels compute them: a convolution's taps that fall
        in its padding multiply zeros and are skipped (XLA's and oneDNN's count). What a device's
        roof bounds: the convention's count may exceed it on small, padded images."""
        if self.uncounted:
            return None
        return sum(
            layer.forward_flops if layer.executed_flops is None else layer.executed_flops
            for layer in self.layers
            if layer.forward_flops is not None
        )

    @property
    def forward(self) -> float | None:
        if self.uncounted:
            return None
        return sum(layer.forward_flops or 0.0 for layer in self.layers)

    def bytes_per_sample(self, batch_size: int, activation_bytes: int, training: bool) -> float | None:
        """What a sample moves through memory, as the module's passes estimate it: the weights
        shared by the batch, each layer's inputs and outputs its own (None: a size unknown)."""
        if any(layer.activations is None for layer in self.layers):
            return None
        weights = sum(layer.params for layer in self.layers) * WEIGHT_BYTES / batch_size
        activations = sum(layer.activations for layer in self.layers) * activation_bytes
        if training:
            return TRAIN_WEIGHT_PASSES * weights + TRAIN_ACTIVATION_PASSES * activations
        return weights + activations

    @property
    def unknown_reason(self) -> str:
        """'unknown: ...' naming the layers not counted and why each is not (it has no counter, or
        its counter met a size known only at run time); empty where the count is whole."""
        missing = self.uncounted
        if not missing:
            return ""
        named = "; ".join(f"{layer.path} ({layer.layer_class}): {layer.why}" for layer in missing[:3])
        more = f"; and {len(missing) - 3} more" if len(missing) > 3 else ""
        hint = (
            "; register a counter with accelbench.register_layer_flops"
            if any(layer.why == NO_COUNTER for layer in missing)
            else ""
        )
        return f"unknown: FLOPs not counted for {named}{more}{hint}"


def count(model: Any) -> FlopCount:
    """Every layer of a functional or Sequential model, nested models walked."""
    return FlopCount(tuple(_walk(model, "")))


ITEM_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class Costs:
    """What a sample of a Keras work costs beside its model FLOPs: the FLOPs its kernels
    execute (what the device's roof bounds) and the bytes it moves (for its intensity)."""

    executed_flops: float | None = None
    bytes: float | None = None


def costs_per_sample(model: Any, batch_size: int, training: bool) -> Costs:
    """Executed FLOPs (x TRAIN_FLOPS_PER_FORWARD when training) and bytes moved (in the model's
    compute dtype) per sample; None each where a layer is not counted."""
    counted = count(model)
    if counted.uncounted:
        return Costs()
    compute = getattr(getattr(model, "dtype_policy", None), "compute_dtype", "float32")
    return Costs(
        executed_flops=counted.executed * (TRAIN_FLOPS_PER_FORWARD if training else 1.0),
        bytes=counted.bytes_per_sample(batch_size, ITEM_BYTES.get(compute, 4), training),
    )


def forward_flops_per_sample(model: Any) -> float | str:
    """The model's forward FLOPs per sample, or 'unknown: ...' naming the layers not counted."""
    counted = count(model)
    return counted.unknown_reason or counted.forward


def _walk(model: Any, prefix: str):
    for layer in getattr(model, "layers", ()):
        path = f"{prefix}{layer.name}"
        if getattr(layer, "layers", None) and type(layer).__name__ not in COUNTERS:  # a nested model
            yield from _walk(layer, f"{path}/")
            continue
        yield _layer(layer, path)


def _layer(layer: Any, path: str) -> LayerFlops:
    layer_class = type(layer).__name__
    params = int(sum(math.prod(weight.shape) for weight in layer.weights))
    counter = COUNTERS.get(layer_class)
    if counter is None:
        if params:
            return LayerFlops(path, layer_class, params, None, NO_COUNTER)
        return LayerFlops(path, layer_class, 0, 0.0, NOT_COUNTED_WITHOUT_WEIGHTS)
    try:
        inputs, outputs = _shapes(layer.input), _shapes(layer.output)
    except (AttributeError, ValueError) as error:  # a subclassed model's layers record no shapes
        return LayerFlops(path, layer_class, params, None, f"its shapes are not recorded ({error})")
    try:
        forward = float(counter(layer, inputs, outputs))
        shapes = (*inputs, *outputs)
        activations = None if any(None in shape for shape in shapes) else sum(map(_size, shapes))
        executed = EXECUTED[layer_class](layer, inputs, outputs) if layer_class in EXECUTED else None
    except TypeError:  # a size the count needs is None: a sequence of any length, say
        return LayerFlops(path, layer_class, params, None, f"a dimension of unknown size: {inputs} -> {outputs}")
    return LayerFlops(path, layer_class, params, forward, activations=activations, executed_flops=executed)


def _shapes(tensors: Any) -> list[tuple[int | None, ...]]:
    """Each tensor's shape without its batch dimension (None: a size known only at run time)."""
    found = tensors if isinstance(tensors, (list, tuple)) else [tensors]
    return [tuple(tensor.shape[1:]) for tensor in found]


def _size(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _spatial(shape: Sequence[int], data_format: str) -> int:
    """The positions of a channels-last or channels-first feature map."""
    return _size(shape[:-1] if data_format == "channels_last" else shape[1:])


def dense(layer, inputs: Shapes, outputs: Shapes) -> float:
    """2 x inputs x units at every position of the input (a Dense over a sequence: each step)."""
    return 2.0 * layer.kernel.shape[0] * _size(outputs[0])


def einsum_dense(layer, inputs: Shapes, outputs: Shapes) -> float:
    """2 x the product of every index of the equation, the batch index at 1."""
    return 2.0 * _einsum_macs(layer.equation, (1, *inputs[0]), tuple(layer.kernel.shape))


def _einsum_macs(equation: str, input_shape: Sequence[int], kernel_shape: Sequence[int]) -> int:
    operands = equation.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for letters, shape in zip(operands, (input_shape, kernel_shape)):
        letters = letters.strip()
        if "..." in letters:  # the ellipsis: the input's leading dimensions
            head, tail = letters.split("...")
            middle = shape[len(head) : len(shape) - len(tail)]
            sizes.update(zip(head, shape[: len(head)]))
            sizes.update(zip(tail, shape[len(shape) - len(tail) :]))
            sizes["..."] = _size(middle)
        else:
            sizes.update(zip(letters, shape))
    return _size(sizes.values())


def convolution(layer, inputs: Shapes, outputs: Shapes) -> float:
    """2 x kernel (its input channels per group x filters) at every output position: Conv1D,
    Conv2D, Conv3D, DepthwiseConv (its kernel is k x k x channels x multiplier)."""
    return 2.0 * _size(layer.kernel.shape) * _spatial(outputs[0], layer.data_format)


def _taps(size_in: int, size_out: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    """Over one spatial dimension, the kernel taps that land inside the input, summed over the
    output positions (out x kernel without padding)."""
    if padding == "valid":
        return size_out * kernel
    span = (kernel - 1) * dilation + 1
    before = span - 1 if padding == "causal" else max((size_out - 1) * stride + span - size_in, 0) // 2
    return sum(
        sum(0 <= position * stride - before + tap * dilation < size_in for tap in range(kernel))
        for position in range(size_out)
    )


def _executed_taps(layer, inputs: Shapes, outputs: Shapes) -> int:
    """The product over spatial dimensions of the taps each one executes."""
    first = layer.data_format == "channels_last"
    spatial_in = inputs[0][:-1] if first else inputs[0][1:]
    spatial_out = outputs[0][:-1] if first else outputs[0][1:]
    return math.prod(
        _taps(size_in, size_out, kernel, stride, dilation, layer.padding)
        for size_in, size_out, kernel, stride, dilation in zip(
            spatial_in, spatial_out, layer.kernel_size, layer.strides, layer.dilation_rate
        )
    )


def executed_convolution(layer, inputs: Shapes, outputs: Shapes) -> float:
    """The convolution's taps inside the input only, times its channels in (per group) and out."""
    kernel = layer.depthwise_kernel if hasattr(layer, "pointwise_kernel") else layer.kernel
    channels = _size(kernel.shape[len(layer.kernel_size) :])
    executed = 2.0 * _executed_taps(layer, inputs, outputs) * channels
    if hasattr(layer, "pointwise_kernel"):  # separable: the pointwise part has no padding
        executed += 2.0 * _size(layer.pointwise_kernel.shape) * _spatial(outputs[0], layer.data_format)
    return executed


def transposed_convolution(layer, inputs: Shapes, outputs: Shapes) -> float:
    """2 x kernel at every input position: each input value is scattered through the whole kernel."""
    return 2.0 * _size(layer.kernel.shape) * _spatial(inputs[0], layer.data_format)


def separable_convolution(layer, inputs: Shapes, outputs: Shapes) -> float:
    """The depthwise kernel, then the 1 x 1 pointwise one, at every output position."""
    kernels = _size(layer.depthwise_kernel.shape) + _size(layer.pointwise_kernel.shape)
    return 2.0 * kernels * _spatial(outputs[0], layer.data_format)


def _recurrent(cell, steps: int, gates: int) -> float:
    """Each step: every gate's input and recurrent products (the gates' elementwise work left out)."""
    return 2.0 * gates * steps * (cell.kernel.shape[0] + cell.recurrent_kernel.shape[0]) * cell.units


RECURRENT_GATES = {"SimpleRNN": 1, "GRU": 3, "LSTM": 4}


def recurrent(layer, inputs: Shapes, outputs: Shapes) -> float:
    """SimpleRNN (1 gate), GRU (3), LSTM (4): 2 x gates x (inputs + units) x units per step."""
    return _recurrent(layer.cell, inputs[0][0], RECURRENT_GATES[type(layer).__name__])


def bidirectional(layer, inputs: Shapes, outputs: Shapes) -> float:
    """Both directions' layers."""
    return sum(
        _recurrent(direction.cell, inputs[0][0], RECURRENT_GATES[type(direction).__name__])
        for direction in (layer.forward_layer, layer.backward_layer)
    )


def multi_head_attention(layer, inputs: Shapes, outputs: Shapes) -> float:
    """The query, key, value and output projections, and both attention products (query x key,
    weights x value), each 2 x multiply-adds; the softmax left out."""
    query = inputs[0]
    value = inputs[1] if len(inputs) > 1 else query
    key = inputs[2] if len(inputs) > 2 else value
    heads, key_dim, value_dim = layer.num_heads, layer.key_dim, layer.value_dim or layer.key_dim
    queries, keys = _size(query[:-1]), _size(key[:-1])
    projections = (
        queries * query[-1] * heads * key_dim
        + keys * key[-1] * heads * key_dim
        + keys * value[-1] * heads * value_dim
        + queries * heads * value_dim * outputs[0][-1]
    )
    products = queries * keys * heads * (key_dim + value_dim)
    return 2.0 * (projections + products)


def embedding(layer, inputs: Shapes, outputs: Shapes) -> float:
    """A lookup: no multiply-adds."""
    return 0.0


def batch_normalization(layer, inputs: Shapes, outputs: Shapes) -> float:
    """A multiply and an add per element (its statistics folded into a scale and a shift); the
    Normalization preprocessing layer likewise."""
    return 2.0 * _size(outputs[0])


def layer_normalization(layer, inputs: Shapes, outputs: Shapes) -> float:
    """Per element: the mean's add, the variance's subtract, square and add, the normalizing
    subtract and multiply, the scale's multiply and the shift's add (8); XLA counts 9."""
    return 8.0 * _size(outputs[0])


def max_pooling(layer, inputs: Shapes, outputs: Shapes) -> float:
    """window - 1 comparisons per output."""
    return (_size(layer.pool_size) - 1) * _size(outputs[0])


def average_pooling(layer, inputs: Shapes, outputs: Shapes) -> float:
    """window - 1 adds and a divide per output."""
    return _size(layer.pool_size) * _size(outputs[0])


def global_pooling(layer, inputs: Shapes, outputs: Shapes) -> float:
    """An add (or a comparison) per input element."""
    return float(_size(inputs[0]))


# Counters of what a layer's kernels execute, where it is less than the convention's count.
EXECUTED: dict[str, Counter] = {
    name: executed_convolution
    for name in (
        "Conv1D",
        "Conv2D",
        "Conv3D",
        "DepthwiseConv1D",
        "DepthwiseConv2D",
        "SeparableConv1D",
        "SeparableConv2D",
    )
}

for _names, _counter in (
    (("Dense",), dense),
    (("EinsumDense",), einsum_dense),
    (("Conv1D", "Conv2D", "Conv3D", "DepthwiseConv1D", "DepthwiseConv2D"), convolution),
    (("Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose"), transposed_convolution),
    (("SeparableConv1D", "SeparableConv2D"), separable_convolution),
    (tuple(RECURRENT_GATES), recurrent),
    (("Bidirectional",), bidirectional),
    (("MultiHeadAttention",), multi_head_attention),
    (("Embedding",), embedding),
    (("BatchNormalization", "Normalization"), batch_normalization),
    (("LayerNormalization",), layer_normalization),
    (("MaxPooling1D", "MaxPooling2D", "MaxPooling3D"), max_pooling),
    (("AveragePooling1D", "AveragePooling2D", "AveragePooling3D"), average_pooling),
    (
        (
            "GlobalAveragePooling1D",
            "GlobalAveragePooling2D",
            "GlobalAveragePooling3D",
            "GlobalMaxPooling1D",
            "GlobalMaxPooling2D",
            "GlobalMaxPooling3D",
        ),
        global_pooling,
    ),
):
    for _name in _names:
        COUNTERS.register(_name, _counter)
