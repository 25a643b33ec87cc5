"""Every layer's FLOP counter (axes/flops.py) held to an independent count: XLA's cost analysis
of the layer alone (JAX, in a process of its own: this one's Keras runs TensorFlow), recurrent
layers to their closed formula, ResNet-50 to its paper, a BERT-base-sized encoder to
2 x parameters x tokens plus the attention products."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

# Each case: a layer built in a one-layer functional model on an input shape (batch excluded).
# XLA counts every multiply-add of the convention, and also work the convention leaves out (a
# gate's sigmoid, the softmax, the normalization's statistics), and leaves out padded positions.
XLA_PROBE = r"""
import json, os, sys
os.environ["KERAS_BACKEND"] = "jax"
import jax, keras, numpy as np
from keras import layers
from accelbench.axes import flops

CASES = {
    "Dense": (lambda: layers.Dense(30, use_bias=False), (20,)),
    "Dense over a sequence": (lambda: layers.Dense(30, use_bias=False), (7, 20)),
    "EinsumDense": (lambda: layers.EinsumDense("abc,cd->abd", output_shape=(None, 16)), (5, 12)),
    "Conv1D": (lambda: layers.Conv1D(8, 3, use_bias=False), (10, 4)),
    "Conv2D": (lambda: layers.Conv2D(8, 3, use_bias=False), (10, 10, 4)),
    "Conv2D strided, grouped": (lambda: layers.Conv2D(8, 3, strides=2, groups=2, use_bias=False), (11, 11, 4)),
    "Conv3D": (lambda: layers.Conv3D(8, 3, use_bias=False), (6, 6, 6, 4)),
    "Conv2DTranspose": (lambda: layers.Conv2DTranspose(8, 3, use_bias=False), (10, 10, 4)),
    "Conv2DTranspose strided": (lambda: layers.Conv2DTranspose(8, 3, strides=2, use_bias=False), (10, 10, 4)),
    "DepthwiseConv2D": (lambda: layers.DepthwiseConv2D(3, depth_multiplier=2, use_bias=False), (10, 10, 4)),
    "SeparableConv2D": (lambda: layers.SeparableConv2D(8, 3, use_bias=False), (10, 10, 4)),
    "MaxPooling2D": (lambda: layers.MaxPooling2D(2), (10, 10, 4)),
    "AveragePooling2D": (lambda: layers.AveragePooling2D(2), (10, 10, 4)),
    "GlobalAveragePooling2D": (lambda: layers.GlobalAveragePooling2D(), (10, 10, 4)),
    "Conv2D same": (lambda: layers.Conv2D(8, 3, padding="same", use_bias=False), (10, 10, 4)),
    "Conv2D same 5x5 on 8x8": (lambda: layers.Conv2D(32, 5, padding="same", use_bias=False), (8, 8, 1)),
    "Conv2D same strided": (lambda: layers.Conv2D(8, 3, strides=2, padding="same", use_bias=False), (11, 11, 4)),
    "Conv1D causal dilated": (lambda: layers.Conv1D(8, 3, padding="causal", dilation_rate=2, use_bias=False), (10, 4)),
    "DepthwiseConv2D same": (lambda: layers.DepthwiseConv2D(3, padding="same", use_bias=False), (10, 10, 4)),
    "SeparableConv2D same": (lambda: layers.SeparableConv2D(8, 3, padding="same", use_bias=False), (10, 10, 4)),
    "SimpleRNN": (lambda: layers.SimpleRNN(64, unroll=True, use_bias=False), (5, 32)),
    "GRU": (lambda: layers.GRU(64, unroll=True, use_bias=False), (5, 32)),
    "LSTM": (lambda: layers.LSTM(64, unroll=True, use_bias=False), (5, 32)),
    "Bidirectional": (lambda: layers.Bidirectional(layers.LSTM(64, unroll=True, use_bias=False)), (5, 32)),
    "MultiHeadAttention": (lambda: layers.MultiHeadAttention(4, 32, use_bias=False), (16, 128)),
    "BatchNormalization": (lambda: layers.BatchNormalization(), (10, 10, 16)),
    "LayerNormalization": (lambda: layers.LayerNormalization(), (16, 128)),
}
found = {}
for name, (make, shape) in CASES.items():
    layer = make()
    inputs = keras.Input(shape)
    outputs = layer(inputs, inputs) if isinstance(layer, layers.MultiHeadAttention) else layer(inputs)
    model = keras.Model(inputs, outputs)
    trainable = [v.value for v in model.trainable_variables]
    frozen = [v.value for v in model.non_trainable_variables]
    run = lambda trainable, frozen, x: model.stateless_call(trainable, frozen, x)[0]
    x = np.zeros((1, *shape), "float32")
    analysis = jax.jit(run).lower(trainable, frozen, x).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    counted = flops.count(model)
    found[name] = [counted.forward, analysis["flops"], counted.executed]
print(json.dumps(found))
"""

# How far XLA's count may lie above the convention's: 0 where the layer is products only (or,
# for pooling, the comparisons and adds the counter states); the elementwise work beside the
# products otherwise, measured here at these sizes and stated as a bound.
ABOVE = {
    "SimpleRNN": 0.05,  # tanh and the sum of the two products
    "GRU": 0.05,  # the gates' sigmoids and products (2.4% at 64 units)
    "LSTM": 0.05,
    "Bidirectional": 0.05,
    "MultiHeadAttention": 0.05,  # the softmax
    "BatchNormalization": 0.05,  # the per-channel scale: rsqrt(variance + epsilon) x gamma
    "LayerNormalization": 0.15,  # XLA: 9 per element, the counter's breakdown: 8
}


@pytest.fixture(scope="module")
def xla_counts():
    pytest.importorskip("jax", reason="XLA's own count is taken through JAX, which is not installed here")
    result = subprocess.run(
        [sys.executable, "-c", XLA_PROBE],
        capture_output=True,
        text=True,
        env={**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_each_counter_agrees_with_xla_on_the_layer_alone(xla_counts):
    wrong = {}
    for name, (counted, xla, _) in xla_counts.items():
        if name in PADDED:
            continue  # padded positions: the next test
        above = ABOVE.get(name, 0.0)
        if not (counted <= xla * (1 + 1e-9) and xla <= counted * (1 + above) + 1e-9):
            wrong[name] = (counted, xla, above)
    assert not wrong, f"(counted, XLA, allowed excess) off: {wrong}"
    assert len(xla_counts) == 27


PADDED = ("Conv2D same", "Conv2D same 5x5 on 8x8", "Conv2D same strided", "Conv1D causal dilated")
PADDED += ("DepthwiseConv2D same", "SeparableConv2D same")


def test_padded_positions_count_by_the_convention_and_the_executed_count_is_xlas(xla_counts):
    """The convention counts every output position x the kernel; the kernels skip the taps that
    fall in the padding, and the executed count (what a device's roof bounds) leaves them out as
    XLA does, exactly."""
    counted, xla, executed = xla_counts["Conv2D same"]
    assert counted == 2 * 3 * 3 * 4 * 8 * 10 * 10  # output size x kernel
    assert xla < counted
    for name in PADDED:
        counted, xla, executed = xla_counts[name]
        assert executed == xla < counted, name
    for name, (counted, _, executed) in xla_counts.items():
        assert name in PADDED or executed == counted, name


def test_recurrent_layers_are_their_closed_formula_times_steps(heavy_imports):
    import keras

    from accelbench.axes import flops

    steps, features, units = 20, 28, 32
    inputs = keras.Input((steps, features))
    for layer, gates in (
        (keras.layers.SimpleRNN(units), 1),
        (keras.layers.GRU(units), 3),
        (keras.layers.LSTM(units), 4),
    ):
        model = keras.Model(inputs, layer(inputs))
        assert flops.count(model).forward == 2 * gates * (features + units) * units * steps
    both = keras.Model(inputs, keras.layers.Bidirectional(keras.layers.GRU(units))(inputs))
    assert flops.count(both).forward == 2 * 2 * 3 * (features + units) * units * steps


def test_resnet50_at_224_is_within_2_percent_of_its_papers_multiply_adds(heavy_imports):
    """He et al. 2015, Table 1: 3.8 x 10^9 multiply-adds (FLOPs there) for ResNet-50 at 224 x 224."""
    import keras

    from accelbench.axes import flops

    model = keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3))
    forward = flops.count(model).forward
    assert forward is not None
    assert abs(forward / 2 / 3.8e9 - 1) < 0.02, forward


def test_a_bert_base_sized_encoder_is_two_flops_per_parameter_and_token_plus_attention(heavy_imports):
    """12 blocks, 768 wide, 12 heads, a 3072 feed-forward, 128 tokens: every weight outside the
    embeddings multiplies once per token (2 FLOPs), and attention multiplies each token's query
    by every key and each weight by every value: 2 x 2 x tokens^2 x width per block."""
    import keras
    from keras import layers

    from accelbench.axes import flops

    tokens, width, heads, blocks, vocabulary = 128, 768, 12, 12, 30522
    ids = keras.Input((tokens,), dtype="int32")
    x = layers.Embedding(vocabulary, width)(ids)
    for _ in range(blocks):
        attended = layers.MultiHeadAttention(heads, width // heads)(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, attended]))
        fed = layers.Dense(width)(layers.Dense(4 * width, activation="gelu")(x))
        x = layers.LayerNormalization()(layers.Add()([x, fed]))
    model = keras.Model(ids, layers.Dense(2, name="classifier")(x[:, 0]))  # the first token's
    per_token = sum(  # the weights each token meets once: every kernel but the classifier's
        math.prod(weight.shape)
        for layer in model.layers
        if isinstance(layer, (layers.MultiHeadAttention, layers.Dense)) and layer.name != "classifier"
        for weight in layer.weights
        if "kernel" in weight.path
    )
    assert per_token == blocks * (4 * width * width + 2 * 4 * width * width)
    attention = blocks * 2 * 2 * tokens * tokens * width
    norms = blocks * 2 * 8 * tokens * width  # LayerNormalization's 8 per element, as the counter states
    classifier = 2 * width * 2
    assert flops.count(model).forward == 2 * per_token * tokens + attention + norms + classifier


def test_a_layer_with_weights_and_no_counter_makes_the_count_unknown_naming_it(heavy_imports):
    import keras

    from accelbench.axes import flops

    class Scale(keras.layers.Layer):
        def build(self, shape):
            self.scale = self.add_weight(shape=(shape[-1],))

        def call(self, x):
            return x * self.scale

    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(4)(Scale(name="my_scale")(inputs)))
    counted = flops.count(model)
    assert counted.forward is None  # never the Dense layer's 64 alone
    assert flops.forward_flops_per_sample(model) == (
        "unknown: FLOPs not counted for my_scale (Scale): has weights and no counter; "
        "register a counter with accelbench.register_layer_flops"
    )
    table = {layer.layer_class: layer for layer in counted.layers}
    assert table["Scale"].forward_flops is None and table["Dense"].forward_flops == 2 * 8 * 4
    # a layer without weights whose size is unknown (a sequence of any length) is not a 0 either
    steps = keras.Input((None, 8))
    pooled = keras.Model(steps, keras.layers.Dense(4)(keras.layers.MaxPooling1D(2)(steps)))
    assert flops.count(pooled).forward is None
    reason = flops.forward_flops_per_sample(pooled)  # why: its size, not a missing counter
    assert reason.startswith("unknown: FLOPs not counted for max_pooling1d")  # Keras numbers the name in a busy process
    assert "(MaxPooling1D): a dimension of unknown size" in reason
    assert "register" not in reason


def test_nested_models_are_walked_and_a_users_counter_is_used(heavy_imports):
    import keras

    import accelbench
    from accelbench.axes import flops

    class Doubler(keras.layers.Layer):
        def build(self, shape):
            self.gain = self.add_weight(shape=(shape[-1],))

        def call(self, x):
            return x * self.gain

    accelbench.register_layer_flops("Doubler", lambda layer, inputs, outputs: 1.0 * inputs[0][-1])
    try:
        inner = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), Doubler()], name="inner")
        inputs = keras.Input((8,))
        model = keras.Model(inputs, keras.layers.Dense(2)(inner(inputs)))
        counted = flops.count(model)
        assert [layer.path.split("/")[0] for layer in counted.layers if layer.layer_class != "InputLayer"][:2] == [
            "inner",
            "inner",
        ]
        assert counted.forward == 2 * 8 * 16 + 16 + 2 * 16 * 2
    finally:
        flops.COUNTERS._entries.pop("Doubler")


USERS_GRU = """
import accelbench


def build(input_shape, outputs, options):
    import keras

    return keras.Sequential([keras.Input(input_shape), keras.layers.Reshape((8, 8)), keras.layers.GRU(16),
                             keras.layers.Dense(outputs)])


accelbench.register_model(accelbench.ModelSpec("rows_gru", "a GRU over image rows", build))
"""


def test_accelbench_layers_prints_each_layers_share_for_a_zoo_model_and_a_users_own(
    heavy_imports, tmp_path, monkeypatch, capsys
):
    from accelbench import cli

    assert cli.main(["layers", "cnn"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "FLOPs per layer of cnn on digits (8, 8, 1) (forward, per sample; 2 x multiply-adds)"
    rows = [line.split()[1:] for line in printed[2:-1]]  # a layer's name depends on what was built before
    assert any(row[:2] == ["Conv2D", "51,264"] and row[-1] == "71.6%" for row in rows)
    assert ["Flatten", "0", "0"] in rows
    assert printed[-1].startswith("total: 325,514 parameters, 2.29 MFLOP forward, 6.86 MFLOP a training step")

    (tmp_path / "my_gru_models.py").write_text(USERS_GRU)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["layers", "rows_gru", "--modules", "my_gru_models"]) == 0
    printed = capsys.readouterr().out.splitlines()
    gru = next(line for line in printed if line.split()[1:2] == ["GRU"])
    assert f"{2 * 3 * (8 + 16) * 16 * 8 / 1e3:.3g} kFLOP" in gru  # 8 steps of 3 gates


def test_accelbench_layers_says_an_unknown_model_in_one_line(capsys):
    from accelbench import cli

    assert cli.main(["layers", "resnet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model 'resnet'" in err


def test_accelbench_layers_leaves_out_tensorflows_start_notices_and_keeps_other_stderr(tmp_path):
    # A fresh process: TensorFlow's native start prints its notices once, at its first import.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-m", "accelbench.cli", "layers", "mlp"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "FLOPs per layer of mlp" in done.stdout
    assert "absl::InitializeLog" not in done.stderr and "cpu_feature_guard" not in done.stderr
    assert "I0000" not in done.stderr, done.stderr
    if not os.path.exists("/dev/nvidiactl"):  # no NVIDIA driver: CUDA's failure says only that
        assert "cuInit" not in done.stderr, done.stderr

    script = (
        "import os\n"
        "from accelbench.axes.backends.tensorflow import start_notices_dropped\n"
        "with start_notices_dropped():\n"
        "    os.write(2, b'I0000 00:00:1795609444.446948   30315 port.cc:153] oneDNN custom operations are on.\\n')\n"
        "    os.write(2, b'a line of the user\\n')\n"
        "    os.write(2, b'E0000 00:00:1795609447.023265   30315 cuda_platform.cc:52] failed call to cuInit: "
        "INTERNAL: CUDA error\\n')\n"
        "    os.write(2, b'E0000 00:00:1795609447.023265   30315 other.cc:52] a real error\\n')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    real = "E0000 00:00:1795609447.023265   30315 other.cc:52] a real error\n"
    if os.path.exists("/dev/nvidiactl"):  # a driver: CUDA's failure is a fault, and kept
        assert done.stderr.startswith("a line of the user\n") and done.stderr.endswith(real)
    else:
        assert done.stderr == "a line of the user\n" + real
