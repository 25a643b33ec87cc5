"""The generative models and their token cells (kinds/tokens/): the decoder's cache agrees with
recomputing, its counts with what the built model holds, and the cells run as the others do."""

import json

import numpy as np
import pytest

from accelbench.axes.decoder import DecoderShape, greedy
from accelbench.axes.models import MODELS, ModelOptions

TINY = MODELS["gpt_tiny"]


@pytest.fixture(scope="module")
def tiny(heavy_imports):
    return TINY.build(None, None, ModelOptions(seed=0))


def test_cached_decoding_makes_the_tokens_recomputing_the_whole_sequence_makes(tiny):
    """Greedy from a fixed seed: a prefill and one decode step per token against the cache give
    the tokens that running the whole sequence again for each new token gives."""
    prompt = np.random.default_rng(1).integers(0, TINY.generation.vocabulary, (2, 12))
    cached = greedy(tiny, prompt, 10, cached=True)
    assert cached == greedy(tiny, prompt, 10, cached=False)
    assert len(cached) == 2 and all(len(tokens) == 10 for tokens in cached)


def test_a_planted_cache_fault_is_caught_by_the_same_comparison(tiny, monkeypatch):
    """The comparison above can fail: decode steps that write their keys one position off give
    other tokens than recomputing."""
    prompt = np.random.default_rng(1).integers(0, TINY.generation.vocabulary, (2, 12))
    honest = greedy(tiny, prompt, 10, cached=False)
    decode = type(tiny).decode
    monkeypatch.setattr(type(tiny), "decode", lambda self, tokens, cache, index: decode(self, tokens, cache, index + 1))
    assert greedy(tiny, prompt, 10, cached=True) != honest


def test_a_decode_step_and_an_insert_consume_the_cache_they_update_on_jax(tiny):
    """compiled(..., donate=): JAX writes a decode step's and an insert's cache into the buffers
    of the one they were given, which it deletes (a step that copied the cache to update one
    position of it deleted nothing); a take, which makes a cache of another size, keeps its
    source. What the steps compute is held by the greedy comparison above, which threads the
    cache as the harness does."""
    import keras

    if keras.backend.backend() != "jax":
        pytest.skip("donation is JAX's: TensorFlow and PyTorch ignore it")
    generation = TINY.generation
    _, cache = generation.prefill(tiny, np.zeros((2, 4), "int32"))
    taken = generation.take(tiny, cache, [1, 0])
    assert not any(tensor.is_deleted() for pair in cache for tensor in pair)
    _, decoded = generation.decode(tiny, np.zeros((2, 1), "int32"), cache, 4)
    assert all(tensor.is_deleted() for pair in cache for tensor in pair)
    _, one = generation.prefill(tiny, np.zeros((1, 4), "int32"))
    inserted = generation.insert(tiny, decoded, one, 1)
    assert all(tensor.is_deleted() for pair in decoded for tensor in pair)
    assert not any(tensor.is_deleted() for pairs in (inserted, one, taken) for pair in pairs for tensor in pair)


def test_a_users_step_compiled_through_the_public_api_returns_its_eager_outputs_and_compiles_once(heavy_imports):
    """accelbench.compiled: a model's own step compiled on the process backend returns what it
    returns eagerly, and calls that differ only in an int argument share one compile (its Python
    body runs once; PyTorch calls it eagerly, every time)."""
    import keras

    import accelbench
    from accelbench.axes import backends

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    bodies = []

    def step(x, position):
        bodies.append(position)
        return model(x) * keras.ops.cast(position, "float32")

    x = np.ones((2, 4), "float32")
    fast = accelbench.compiled(step, model)
    got = [keras.ops.convert_to_numpy(fast(x, position)) for position in (1, 2, 3)]
    eager = keras.ops.convert_to_numpy(model(x))
    np.testing.assert_allclose(got, [eager * position for position in (1, 2, 3)], rtol=1e-6)
    assert len(bodies) == (3 if backends.PROCESS_BACKEND == "torch" else 1)


def test_a_users_step_compiled_with_a_donated_cache_returns_its_outputs_and_on_jax_consumes_it(heavy_imports):
    """accelbench.compiled(..., donate=(0,)): a step that returns its first argument updated
    gives what it gives eagerly on every backend; on JAX the argument given is deleted."""
    import keras

    import accelbench
    from accelbench.axes import backends

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4)])
    x = np.ones((2, 4), "float32")
    step = accelbench.compiled(
        lambda cache, position: cache + model(x) * keras.ops.cast(position, "float32"), model, (0,)
    )
    cache = keras.ops.zeros((2, 4))
    updated = step(cache, 2)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(updated), 2 * keras.ops.convert_to_numpy(model(x)), rtol=1e-6)
    if backends.PROCESS_BACKEND == "jax":
        assert cache.is_deleted() and not updated.is_deleted()


def test_the_counts_agree_with_the_built_model(tiny):
    """Parameters, the cache's bytes and a token's matmul FLOPs as DecoderShape counts them,
    against the built model: its weights, its cache's tensors, and its Dense kernels (2 x
    multiply-adds of every kernel a token passes through, and the head tied to the embedding)."""
    from accelbench.axes.decoder import cache_bytes

    shape = DecoderShape(512, 128, 64, 2, 4, 256)
    assert tiny.count_params() == shape.parameters()
    _, cache = TINY.generation.prefill(tiny, np.zeros((3, 5), dtype="int32"))
    assert cache_bytes(cache) == 3 * shape.context * TINY.generation.cache_bytes_per_token == 3 * 128 * 1024
    kernels = [w for w in tiny.weights if w.path.endswith("kernel")]
    counted = 2 * sum(int(np.prod(w.shape)) for w in kernels) + 2 * shape.width * shape.vocabulary
    assert shape.matmul_flops_per_token() == counted
    assert TINY.generation.flops_per_token(9) == counted + 2 * 2 * shape.layers * shape.width * 10


def test_the_decoder_is_initialised_as_keras_defaults_are_and_by_its_seed(heavy_imports):
    """drawn: Glorot-uniform kernels, embeddings uniform in +-0.05, biases zero and norms one; the
    same seed the same weights, another seed others."""
    import keras

    from accelbench.axes.decoder import build_decoder

    shape = DecoderShape(96, 32, 24, 1, 2, 40)
    model = build_decoder(shape, 3)
    weights = {w.path: keras.ops.convert_to_numpy(w) for w in model.weights}
    assert len([w for w in weights.values() if w.ndim == 2]) == 6
    for path, weight in weights.items():
        if weight.ndim == 2:
            limit = 0.05 if path.endswith("embeddings") else np.sqrt(6 / sum(weight.shape))
            assert np.abs(weight).max() <= limit and abs(weight.std() - limit / np.sqrt(3)) < 0.1 * limit, path
        else:
            assert not weight.any() or (weight == 1).all(), path
    again = [keras.ops.convert_to_numpy(w) for w in build_decoder(shape, 3).weights]
    assert all(np.array_equal(a, b) for a, b in zip(weights.values(), again))
    other = [keras.ops.convert_to_numpy(w) for w in build_decoder(shape, 4).weights]
    assert not np.array_equal(next(iter(weights.values())), other[0])


def test_building_the_decoder_on_jax_compiles_no_random_program(heavy_imports, caplog):
    """Keras' random initializers compile a jax.random program per weight shape (0.13-0.21 s each
    on a 2-core CPU): the decoder's weights are drawn on the host instead. A shape no other test
    builds, so that no program is cached from before."""
    import keras

    from accelbench.axes.decoder import build_decoder

    if keras.backend.backend() != "jax":
        pytest.skip("compiled initializers are JAX's")
    import jax

    with caplog.at_level("WARNING"), jax.log_compiles():
        build_decoder(DecoderShape(88, 24, 20, 1, 2, 36), 0)
    compiled = [r.getMessage() for r in caplog.records if "Finished XLA compilation" in r.getMessage()]
    assert compiled, "jax.log_compiles logged nothing: the check would see no program"
    assert not [m for m in compiled if "_uniform" in m or "_normal" in m or "random" in m], compiled


def test_past_the_context_is_one_clear_error(tiny):
    with pytest.raises(ValueError, match="positions up to 129 past the decoder's context of 128"):
        TINY.generation.prefill(tiny, np.zeros((1, 129), dtype="int32"))


@pytest.mark.slow(30)
def test_the_token_cells_run_under_the_smoke_preset_with_their_tables(pytester, heavy_imports):
    """test_prefill and test_decode on the tiny decoder: timed, their tables in the terminal,
    tokens/s and the latencies saved; a run whose --models names no generative model skips them
    with one line."""
    from accelbench import scaffold

    pytester.makepyfile(test_tokens=scaffold.benchmark_files()["test_tokens.py"])
    (pytester.path / "baselines").mkdir()
    common = ("-p", "accelbench.plugin", "-p", "no:cacheprovider", "--preset", "smoke", "--baselines", "baselines")
    # Limits a busy machine does not miss (the slow tier's parallel tests once put TTFT p90 at 283 ms at
    # every rate tried, over the tiny decoder's 250): this is about the cells, not the machine.
    result = pytester.runpytest(*common, "--benchmark-json=run.json", "--token-limits", "600,300", "test_tokens.py")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*time to first token*", "cpu *gpt_tiny *ms*"])
    result.stdout.fnmatch_lines(["*time per output token*", "cpu *gpt_tiny *ms*"])
    document = json.loads((pytester.path / "run.json").read_text())
    cells = [*document["benchmarks"], *document["accelbench"]["untimed_cells"]]  # LoadGen times the served ones
    saved = {cell["name"]: cell["extra_info"] for cell in cells}
    prefill, decode = saved["test_prefill[cpu-p16-gpt_tiny]"], saved["test_decode[cpu-bs1-ctx16-gpt_tiny]"]
    assert prefill["tokens_per_s"] > 0 and prefill["ttft_ms"] > 0 and prefill["flops_per_token"] > 0
    assert decode["tpot_ms"] > 0 and decode["tokens_per_s"] == pytest.approx(1e3 / decode["tpot_ms"])
    assert decode["cache_bytes_measured"] == 128 * 1024 and decode["bytes_per_step"] > decode["cache_bytes_measured"]
    for share in (prefill.get("compute_share"), decode.get("bandwidth_share")):
        assert share is None or 0 < share <= 1.05
    # Under LoadGen (the smoke preset: static batching of 4): Server's peak rate under the
    # model's limits, its TTFT and TPOT at half of it; Offline's tokens/s; the table in the terminal.
    server, offline = (
        saved["test_token_serving[cpu-gpt_tiny-server]"],
        saved["test_token_serving[cpu-gpt_tiny-offline]"],
    )
    assert server["gated_batching"] == "static 4" and server["peak_rate"] > 0 and server["held_percentile"] == "p90"
    assert server["fixed_rate"] == pytest.approx(server["peak_rate"] / 2)
    assert 0 < server["ttft_p50_ms"] <= server["ttft_held_ms"] and 0 < server["tpot_p50_ms"] <= server["tpot_held_ms"]
    assert offline["loadgen_valid"] and offline["output_tokens_per_s"] > 0
    assert all(run["rate"] > 0 and 0 <= run["goodput"] <= run["completed"] * 1.05 for run in server["rates_tried"])
    result.stdout.fnmatch_lines(["*tokens under load (LoadGen Server)*", "cpu *gpt_tiny *ungated*"])
    skipped = pytester.runpytest(*common, "--models", "mlp", "test_tokens.py", "-rs")
    skipped.assert_outcomes(skipped=3)
    skipped.stdout.fnmatch_lines(["*no generative model among --models*"])
    # Named beside a classifier, a decoder gets token cells and no inference cell of its own.
    pytester.makepyfile(test_inference=scaffold.benchmark_files()["test_inference.py"])
    listed = pytester.runpytest(*common, "--models", "mlp,gpt_tiny", "--collect-only", "-q", "test_inference.py")
    ids = [line for line in listed.stdout.lines if "::" in line]
    assert any("mlp" in line for line in ids) and not any("gpt_tiny" in line for line in ids)
    listed = pytester.runpytest(*common, "--models", "mlp,gpt_tiny", "--collect-only", "-q", "test_tokens.py")
    assert "test_tokens.py::test_decode[cpu-bs1-ctx16-gpt_tiny]" in listed.stdout.lines


RAISING_DECODER = """
import accelbench
from accelbench.axes.models import MODELS, Generation


def fail(model, tokens, cache, index):
    raise RuntimeError("the cache went missing")


tiny = MODELS["gpt_tiny"]
generation = Generation(prefill=tiny.generation.prefill, decode=fail, vocabulary=512, context=128)
accelbench.register_model(accelbench.ModelSpec("my_decoder", "decodes nothing", tiny.build, default=False,
                                               generation=generation))
"""


@pytest.mark.slow(20)
def test_a_users_decoder_that_raises_is_one_line_and_stops_the_run(pytester, heavy_imports):
    from accelbench import scaffold

    pytester.makepyfile(test_tokens=scaffold.benchmark_files()["test_tokens.py"], my_decoder=RAISING_DECODER)
    (pytester.path / "baselines").mkdir()
    common = ("-p", "accelbench.plugin", "-p", "no:cacheprovider", "--preset", "smoke", "--baselines", "baselines")
    result = pytester.runpytest(*common, "--modules", "my_decoder", "--models", "my_decoder", "test_tokens.py")
    assert result.ret != 0
    text = result.stdout.str()
    assert "model 'my_decoder': its generation (prefill or decode) raised RuntimeError: the cache went missing" in text
    assert "Traceback" not in text
    result.assert_outcomes(passed=1, errors=1)  # its prefill cell ran; its decode cell stopped the run


COUNTED_BUILDS = """
import dataclasses
from pathlib import Path

import accelbench
from accelbench.axes.models import MODELS

tiny = MODELS["gpt_tiny"]


def build(*args, **kwargs):
    with open(Path(__file__).with_name("builds.txt"), "a") as builds:
        builds.write("built\\n")
    return tiny.build(*args, **kwargs)


accelbench.register_model(dataclasses.replace(tiny, name="my_counted", build=build, default=False))
"""


@pytest.mark.slow(20)
def test_the_token_cells_of_a_model_share_one_build_of_it(pytester, heavy_imports):
    """A run's prefill, decode and serving cells of one model, device and precision take one
    model, built once (its compiled steps traced once per shape); another precision is another
    build."""
    from accelbench import scaffold

    pytester.makepyfile(test_tokens=scaffold.benchmark_files()["test_tokens.py"], counted=COUNTED_BUILDS)
    (pytester.path / "baselines").mkdir()
    result = pytester.runpytest(
        "-p", "accelbench.plugin", "-p", "no:cacheprovider", "--preset", "smoke", "--baselines", "baselines",
        "--modules", "counted", "--models", "my_counted", "--precisions", "float32,mixed_bfloat16",
        "--token-limits", "600,300", "test_tokens.py",
    )  # fmt: skip
    result.assert_outcomes(passed=8)
    assert (pytester.path / "builds.txt").read_text().split() == ["built", "built"]


def test_the_token_cells_run_over_backends_and_precisions_named_by_them(pytester):
    """--backends and --precisions are axes of the token cells as of every kind's: each cell once
    per backend and precision, its id led by the backend (where the run names another than the
    process's) and ended by the precision."""
    from accelbench import scaffold
    from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND

    installed = [name for name in ("tensorflow", "jax", "torch") if BACKENDS[name].installed()]
    pytester.makepyfile(test_tokens=scaffold.benchmark_files()["test_tokens.py"])
    listed = pytester.runpytest(
        "-p", "accelbench.plugin", "-p", "no:cacheprovider", "--preset", "smoke", "--collect-only", "-q",
        "--backends", ",".join(installed), "--precisions", "float32,mixed_bfloat16", "test_tokens.py",
    )  # fmt: skip
    ids = {line.split("::")[1] for line in listed.stdout.lines if "::" in line}
    named = tuple(installed) != (PROCESS_BACKEND,)
    for backend in installed:
        lead = f"{backend}-" if named else ""
        for short in ("fp32", "bf16"):
            assert f"test_prefill[{lead}cpu-p16-gpt_tiny-{short}]" in ids, sorted(ids)
            assert f"test_decode[{lead}cpu-bs1-ctx16-gpt_tiny-{short}]" in ids
            assert f"test_token_serving[{lead}cpu-gpt_tiny-offline-{short}]" in ids
    assert len(ids) == len(installed) * 2 * 4


NEEDS_MISSING = """
import dataclasses

import accelbench
from accelbench.axes.models import MODELS

accelbench.register_model(
    dataclasses.replace(MODELS["gpt_tiny"], name="my_needy", requires=("no_such_module_here", "pip install needy"))
)
"""


def test_a_model_whose_module_is_missing_skips_its_cells_saying_so(pytester):
    """ModelSpec.requires (KerasHub's models: keras_hub): where the module is not installed, each
    of the model's token cells skips naming it and how to install it; nothing is built."""
    from accelbench import scaffold

    pytester.makepyfile(test_tokens=scaffold.benchmark_files()["test_tokens.py"], needy=NEEDS_MISSING)
    result = pytester.runpytest(
        "-p", "accelbench.plugin", "-p", "no:cacheprovider", "--preset", "smoke", "--modules", "needy",
        "--models", "my_needy", "-rs", "test_tokens.py",
    )  # fmt: skip
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(
        ["*my_needy needs no_such_module_here, which is not installed here: pip install needy*"]
    )


class _NotOneTensor:
    """A stand-in for a KerasHub CausalLM whose cache is a pair of tensors (one per layer)."""

    compute_dtype = "float32"
    variables: tuple = ()  # what a compiled call passes in (Backend.traced)

    def call_with_cache(self, tokens, cache, index):
        raise AssertionError("never called: the layout is refused first")

    def _build_cache(self, tokens):
        from keras import ops

        length = ops.shape(tokens)[1]
        return None, (ops.zeros((1, length, 4)), ops.zeros((1, length, 4)))


class _NoLengthAxis(_NotOneTensor):
    """... and one whose cache does not grow with the prompt."""

    def _build_cache(self, tokens):
        from keras import ops

        return None, ops.zeros((1, 2, 8, 4))


@pytest.mark.parametrize(
    "model, message",
    [(_NotOneTensor(), "_NotOneTensor's cache is not one tensor"), (_NoLengthAxis(), "has no single length axis")],
)
def test_a_keras_hub_cache_of_another_layout_is_refused_in_one_line(model, message, heavy_imports):
    """A KerasHub Generation finds its cache's length axis by building caches of one and two
    tokens (axes/hub_models.py); a cache that is not one tensor with one such axis is refused."""
    from accelbench.axes import hub_models

    with pytest.raises(ValueError, match=message):
        hub_models.prefill(model, np.zeros((1, 3), dtype="int32"), context=16)
