"""The model zoo, from the published CPU/GPU/TPU comparisons this suite grew out of."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import Any

from accelbench.axes.data import DEFAULT_DATASET, SMALLER
from accelbench.axes.devices import DEVICE_TYPES, REFERENCE_DEVICE
from accelbench.axes.flops import COUNTERS
from accelbench.registry import Registry

CPU_ONLY = frozenset({REFERENCE_DEVICE})
ANY_DEVICE = frozenset(DEVICE_TYPES)  # every device type (axes/devices.py)


@dataclass(frozen=True)
class ModelOptions:
    """Knobs a user may set for the whole run (validated by the plugin's option types)."""

    deep_layers: int = 5
    seed: int = 0
    precision: str = "float32"  # the Keras dtype policy models are built under (precisions.py)


@dataclass(frozen=True)
class Generation:
    """How a generative model makes tokens, for the token cells (kinds/tokens/): its built model
    (ModelSpec.build's) prefills a prompt into a key/value cache and decodes one token per
    sequence against it. The counts say what a token costs; None where not known."""

    # (model, tokens: batch x length ints) -> (logits: batch x length x vocabulary, cache)
    prefill: Callable[[Any, Any], tuple[Any, Any]]
    # (model, tokens: batch x 1, cache, position of the new tokens) -> (logits, cache). It may
    # consume the cache it is given (compiled's donate): the harness passes each step the cache
    # the step before returned, never one it passed before; insert's likewise.
    decode: Callable[[Any, Any, Any, int], tuple[Any, Any]]
    vocabulary: int
    context: int  # the longest sequence (prompt and generated tokens) its cache holds
    # (cache) -> the bytes its tensors hold, as allocated: the cache measured
    cache_bytes: Callable[[Any], int] | None = None
    cache_bytes_per_token: int | None = None  # counted: what one position of one sequence holds
    # FLOPs of the token at a position (0-based) against those before it, 2 x multiply-adds
    flops_per_token: Callable[[int], float] | None = None
    # (model, a batch's cache, one sequence's cache from prefill, slot) -> the batch's cache with
    # that sequence in the slot: a served batch takes a new request between decode steps. With
    # it, decode also takes a vector of positions, one per sequence (each sequence at its own
    # length). None: the model is served one request at a time (kinds/tokens/serve.py).
    insert: Callable[[Any, Any, Any, int], Any] | None = None
    # (model, a batch's cache, rows: ints) -> the cache of those sequences in that order (a row
    # may repeat: a slot kept for the next request). With it (and insert), the serving loop
    # decodes as many rows as it runs sequences, in powers of two, as vLLM decodes its running
    # sequences: a lone request is not stepped at the full batch's cost. None: every step
    # decodes the full batch.
    take: Callable[[Any, Any, Any], Any] | None = None
    # Its latency limits under load, milliseconds: the 99th percentiles of time to first token
    # and of time per output token that the peak request rate must keep (--token-limits sets
    # them for a run; MLPerf's Llama limits are named there). The default: MLPerf Inference's
    # for Llama 3.1 8B in Server.
    ttft_ms: float = 2000.0
    tpot_ms: float = 100.0


@dataclass(frozen=True)
class ModelSpec:
    name: str
    summary: str
    build: Callable[[tuple[int, ...], int, ModelOptions], Any]
    optimizer: Callable[[], Any] | None = None  # a fresh Keras optimizer per compiled model; None: Adam
    # A fresh Keras loss; None: the dataset's quality's (sparse cross-entropy on logits for
    # accuracy, mean squared error for a regression scored by MAE).
    loss: Callable[[], Any] | None = None
    framework: str = "keras"  # picks the predictor that runs its inference
    batch_trained: bool = True  # False: fits the whole subset at once (scikit-learn)
    device_types: frozenset[str] = ANY_DEVICE  # the device types it runs on (axes/devices.py)
    recipe_batch_size: int = 128  # the batch size of the published training recipe
    recipe_epochs: int = 20
    # The quality the recipe must reach (in its dataset's quality: an accuracy, an MAE): its
    # time to target is reported. None: the published accuracy on this dataset, else the
    # run's default for the data (a classifier), else no target (a regression).
    recipe_target: float | None = None
    published_accuracy: dict[str, float] = field(default_factory=dict)  # by dataset
    # Host memory cap of one step, as a multiple of the analytic estimate (memory.Estimate):
    # TensorFlow frees each tensor after its last use, so a step holds at most a few copies of
    # its activations and gradients (oneDNN's reordered copies among them). None: no known bound.
    memory_headroom: float | None = 4.0
    # What training must hold at once beyond the data, where it grows faster than the data:
    # (what it is, bytes for n training images). A projection past the machine's memory is unsafe.
    working_set: tuple[str, Callable[[float], float]] | None = None
    # In the presets' model lists (every registered model); False: run only when named by
    # --models (the real architectures below: minutes a cell on a CPU).
    default: bool = True
    # Server's latency bound, milliseconds: the highest QPS whose 99th-percentile latency stays
    # under it is the model's peak (kinds/serving/; --latency-bound overrides). MLPerf's
    # bounds are per model too: 15 ms for ResNet-50, 130 ms for BERT-large (docs/serving.md).
    latency_bound_ms: float = 10.0
    # The dataset it runs on (a DATASETS name, a user's module's included) unless --dataset
    # names one for the whole run: one run then holds models on different data, each judged
    # against its own data's baselines. None: the default dataset (digits).
    dataset: str | None = None
    # A generative model's prefill and decode (Generation): its cells are the token cells;
    # None: a model that maps a sample to an output.
    generation: Generation | None = None
    # A module it needs beyond Keras and how to install it (KerasHub's models: keras_hub and the
    # keras-hub extra): where the module is missing, its cells skip saying so. None: Keras alone.
    requires: tuple[str, str] | None = None
    # The field's name before "kind" came to mean a benchmark kind alone: a spec declared with it
    # still works (it sets device_types).
    device_kinds: InitVar[frozenset[str] | None] = None

    def __post_init__(self, device_kinds: frozenset[str] | None) -> None:
        if device_kinds is not None:
            object.__setattr__(self, "device_types", frozenset(device_kinds))

    def dataset_in(self, chosen: str | None, full_size_inputs: bool) -> str:
        """The dataset this model runs on in a run: the run's --dataset where it names one, else
        its own (at the smaller input a preset keeping inputs small asks for), else the default."""
        if chosen:
            return chosen
        if self.dataset is None:
            return DEFAULT_DATASET
        return self.dataset if full_size_inputs else SMALLER.get(self.dataset, self.dataset)

    @property
    def built_in(self) -> bool:
        """One of the zoo's, not declared by a user's module (accelbench.register_model)."""
        return self.build.__module__.split(".")[0] == "accelbench"


MODELS: Registry[ModelSpec] = Registry("model")


def _sequential(input_shape, layers):
    import keras

    return keras.Sequential([keras.Input(input_shape), *layers], name="accelbench")


def _dense_stack(widths, num_classes):
    import keras

    return [
        keras.layers.Flatten(),
        *(keras.layers.Dense(width, activation="relu") for width in widths),
        keras.layers.Dense(num_classes),
    ]  # logits: the loss applies the softmax


def _adam(learning_rate=1e-3):
    import keras

    return keras.optimizers.Adam(learning_rate=learning_rate)


def _sgd():
    import keras

    return keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)


def _mlp(input_shape, num_classes, options):
    return _sequential(input_shape, _dense_stack((400, 400, 500), num_classes))


def _mlp_wide(input_shape, num_classes, options):
    return _sequential(input_shape, _dense_stack((3000, 1000), num_classes))


def _mlp_deep(input_shape, num_classes, options):
    return _sequential(input_shape, _dense_stack((500,) * options.deep_layers, num_classes))


def _cnn(input_shape, num_classes, options):
    import keras

    layers = [
        keras.layers.Conv2D(32, 5, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2, padding="same"),
        keras.layers.Conv2D(64, 5, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2, padding="same"),
        keras.layers.Flatten(),
        keras.layers.Dense(1024, activation="relu"),
        keras.layers.Dropout(0.5, seed=options.seed),
        keras.layers.Dense(num_classes),
    ]
    return _sequential(input_shape, layers)


def _svm(input_shape, num_classes, options):
    from sklearn.svm import SVC

    return SVC(kernel="rbf", gamma="scale")


MODELS.register(
    "mlp",
    ModelSpec(
        "mlp",
        "MNIST MLP 784-400-400-500-10, ReLU, Adam",
        _mlp,
        _adam,
        recipe_batch_size=100,
        recipe_epochs=20,
        published_accuracy={"mnist": 0.9626},
    ),
)
MODELS.register(
    "mlp_wide",
    ModelSpec("mlp_wide", "wide MLP 3000-1000-10, SGD (CIFAR-10 study)", _mlp_wide, _sgd, recipe_batch_size=128),
)
MODELS.register(
    "mlp_deep",
    ModelSpec(
        "mlp_deep", "deep MLP of N x 500 layers, Adam (Fashion-MNIST study)", _mlp_deep, _adam, recipe_batch_size=128
    ),
)
MODELS.register(
    "cnn",
    ModelSpec(
        "cnn",
        "two-conv MNIST CNN 5x5x32, 5x5x64, fc1024, dropout",
        _cnn,
        lambda: _adam(1e-4),  # the classic tutorial's rate
        recipe_batch_size=50,
        recipe_epochs=10,
    ),
)
MODELS.register(
    "svm",
    ModelSpec(
        "svm",
        "RBF support vector machine (scikit-learn)",
        _svm,
        framework="sklearn",
        batch_trained=False,
        device_types=CPU_ONLY,
        memory_headroom=None,
        working_set=("its kernel matrix, 8·n² bytes", lambda n: 8.0 * n * n),
    ),
)


# --- real architectures beside the studies' zoo ----------------------------------------------
# Three image networks from keras.applications (weights=None: built offline, nothing
# downloaded) and two text classifiers from Keras layers, each on synthetic data of its
# realistic shape (axes/data.py SHAPED), named by each model (ModelSpec.dataset): 224 x 224 images
# and 128-token sequences; presets that keep inputs small (quick, smoke) run the images at
# 96 x 96. Left out of the presets' model lists (default=False): one ResNet-50 training step on
# 224 x 224 images is 23 GFLOPs a sample, minutes of a 2-core CPU's quick suite. Selected by
# name, each on its own data beside the MNIST zoo's: --models mlp,resnet50,bert_encoder.

VOCABULARY = 30522  # BERT's WordPiece vocabulary
# A BERT-style encoder the size of BERT-small (Turc et al. 2019: 4 layers, 512 wide, 8 heads):
# BERT-base's 12 x 768 is 22 GFLOPs a 128-token sample forward, too slow for a CPU's run.
ENCODER = {"blocks": 4, "width": 512, "heads": 8, "feed_forward": 2048}


def _application(constructor: str):
    def build(input_shape, outputs, options):
        import keras

        return getattr(keras.applications, constructor)(
            weights=None, input_shape=input_shape, classes=outputs, classifier_activation=None
        )

    return build


def _position_embedding():
    """A learned position embedding added to the token embedding, as BERT's (a layer of its own:
    Keras has none, and a Lambda would not save)."""
    import keras

    class PositionEmbedding(keras.layers.Layer):
        def build(self, input_shape):
            self.positions = self.add_weight(shape=tuple(input_shape[1:]), initializer="glorot_uniform")

        def call(self, tokens):
            return tokens + self.positions

    return PositionEmbedding


def _bert_encoder(input_shape, outputs, options):
    import keras
    from keras import layers

    ids = keras.Input(input_shape, dtype="int32")
    x = layers.Embedding(VOCABULARY, ENCODER["width"])(ids)
    x = layers.LayerNormalization()(_position_embedding()(name="position_embedding")(x))
    for _ in range(ENCODER["blocks"]):
        attended = layers.MultiHeadAttention(ENCODER["heads"], ENCODER["width"] // ENCODER["heads"])(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, attended]))
        fed = layers.Dense(ENCODER["width"])(layers.Dense(ENCODER["feed_forward"], activation="gelu")(x))
        x = layers.LayerNormalization()(layers.Add()([x, fed]))
    return keras.Model(ids, layers.Dense(outputs)(layers.GlobalAveragePooling1D()(x)), name="bert_encoder")


def _lstm_text(input_shape, outputs, options):
    import keras
    from keras import layers

    ids = keras.Input(input_shape, dtype="int32")
    x = layers.Embedding(VOCABULARY, 128)(ids)
    return keras.Model(ids, layers.Dense(outputs)(layers.LSTM(128)(x)), name="lstm_text")


def _register_architectures() -> None:
    # the position embedding adds a learned vector: elementwise beside the products, 0 FLOPs by
    # the convention (keras_hub's PositionEmbedding, a lookup and an add, likewise)
    COUNTERS.register("PositionEmbedding", lambda layer, inputs, outputs: 0.0)
    for name, summary, build, dataset in (
        ("resnet50", "ResNet-50 (keras.applications, weights=None)", _application("ResNet50"), "images_224"),
        (
            "mobilenet_v3_small",
            "MobileNetV3-Small (keras.applications, weights=None)",
            _application("MobileNetV3Small"),
            "images_224",
        ),
        (
            "efficientnet_b0",
            "EfficientNet-B0 (keras.applications, weights=None)",
            _application("EfficientNetB0"),
            "images_224",
        ),
        (
            "bert_encoder",
            "a BERT-style encoder: 4 blocks of 8-head attention, 512 wide, 128 tokens",
            _bert_encoder,
            "tokens_128",
        ),
        ("lstm_text", "an LSTM text classifier: embedding 128, LSTM 128", _lstm_text, "tokens_128"),
    ):
        MODELS.register(name, ModelSpec(name, summary, build, default=False, recipe_epochs=1, dataset=dataset))


_register_architectures()


# --- generative models ------------------------------------------------------------------------
# GPT-style decoders in plain Keras (axes/decoder.py), for the token cells (kinds/tokens/): a
# tiny one the quick and smoke presets time in seconds, and GPT-2 small's shape (124M
# parameters) for the full preset. Left out of the presets' model lists: they make tokens, not
# a sample's class, and run in the token cells alone.
# Each with its limits under load (TTFT, TPOT ms): the tiny one's sized to its steps on a CPU
# (TensorFlow's eager step is about 15 ms; a continuous batch adds a prefill between steps), so
# that a queue a short run builds shows; GPT-2 small's, MLPerf's for Llama 3.1 8B in Server.
DECODERS = {
    "gpt_tiny": (
        "a GPT-style decoder, tiny: 2 layers of width 64, 4 heads, context 128",
        (512, 128, 64, 2, 4, 256),
        (250.0, 100.0),
    ),
    "gpt2_small": (
        "a GPT-style decoder of GPT-2 small's shape: 12 layers of width 768, 12 heads, context 1,024",
        (50257, 1024, 768, 12, 12, 3072),
        (2000.0, 100.0),
    ),
}


def _register_decoders() -> None:
    from accelbench.axes.decoder import DecoderShape, build_decoder, cache_bytes

    for name, (summary, sizes, (ttft_ms, tpot_ms)) in DECODERS.items():
        shape = DecoderShape(*sizes)
        generation = Generation(
            prefill=lambda model, tokens: model.prefill(tokens),
            decode=lambda model, tokens, cache, index: model.decode(tokens, cache, index),
            insert=lambda model, cache, one, slot: model.insert(cache, one, slot),
            take=lambda model, cache, rows: model.take(cache, rows),
            ttft_ms=ttft_ms,
            tpot_ms=tpot_ms,
            vocabulary=shape.vocabulary,
            context=shape.context,
            cache_bytes=cache_bytes,
            cache_bytes_per_token=shape.cache_bytes_per_token(),
            flops_per_token=lambda position, shape=shape: (
                shape.matmul_flops_per_token() + shape.attention_flops(position)
            ),
        )
        build = lambda input_shape, outputs, options, shape=shape: build_decoder(shape, options.seed)
        MODELS.register(name, ModelSpec(name, summary, build, default=False, generation=generation))


_register_decoders()


# --- KerasHub's causal language models (axes/hub_models.py) -------------------------------------


def keras_hub_causal_lm(
    name: str,
    summary: str,
    make: Callable[[], Any],
    *,
    vocabulary: int,
    context: int,
    cache_bytes_per_token: int | None = None,
    flops_per_token: Callable[[int], float] | None = None,
    ttft_ms: float = 2000.0,
    tpot_ms: float = 100.0,
) -> ModelSpec:
    """A ModelSpec of a KerasHub CausalLM: `make()` returns it built (a backbone from its config
    and the CausalLM over it, preprocessor None: the token cells feed token ids), under the run's
    seed, dtype policy and device, as every model is built. `vocabulary` and `context` are its
    backbone's; `cache_bytes_per_token` the count a cell's measured cache is held to (float32's:
    a key and a value of each layer's key/value heads) and `flops_per_token(position)` a
    token's FLOPs (2 x multiply-adds), for the roofs' shares; None where not known. Its cached
    call takes one position for a whole batch, so it has no `insert` (axes/hub_models.py).
    Register it with `accelbench.register_model`."""
    from accelbench.axes import hub_models

    generation = Generation(
        prefill=functools.partial(hub_models.prefill, context=context),
        decode=hub_models.decode,
        vocabulary=vocabulary,
        context=context,
        cache_bytes=hub_models.cache_bytes,
        cache_bytes_per_token=cache_bytes_per_token,
        flops_per_token=flops_per_token,
        ttft_ms=ttft_ms,
        tpot_ms=tpot_ms,
    )

    def build(input_shape: tuple[int, ...], outputs: int, options: ModelOptions) -> Any:
        return make()

    build.__module__ = getattr(make, "__module__", __name__)  # the registry's origin: the caller's module
    return ModelSpec(name, summary, build, default=False, generation=generation, requires=hub_models.REQUIRES)


def _register_hub_models() -> None:
    """KerasHub's GPT-2 at gpt_tiny's sizes: registered wherever accelbench is (one list of models
    in every install), its cells skipped where the keras-hub extra is not installed."""
    from accelbench.axes import hub_models

    shape = hub_models.gpt2_shape(hub_models.HUB_GPT2_TINY)
    spec = keras_hub_causal_lm(
        "hub_gpt2_tiny",
        "KerasHub's GPT2CausalLM, random weights, at gpt_tiny's sizes (2 layers of width 64, 4 heads, context 128)",
        hub_models.hub_gpt2_tiny,
        vocabulary=shape.vocabulary,
        context=shape.context,
        cache_bytes_per_token=shape.cache_bytes_per_token(),
        flops_per_token=lambda position: shape.matmul_flops_per_token() + shape.attention_flops(position),
        ttft_ms=250.0,  # gpt_tiny's
        tpot_ms=100.0,
    )
    MODELS.register(spec.name, spec)


_register_hub_models()
