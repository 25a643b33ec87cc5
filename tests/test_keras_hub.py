"""KerasHub's CausalLM models as generative models (axes/hub_models.py), where the keras-hub extra
is installed (tox -e tests installs it): the zoo's GPT-2 and a user's Llama through the public
API, their cached calls agreeing with recomputing, their caches' layouts found and counted, and
their token cells run as the house decoder's do."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("keras_hub")

from accelbench.axes.models import MODELS, ModelOptions  # noqa: E402

HUB = MODELS["hub_gpt2_tiny"]

# A user's KerasHub model, as docs/generative.md declares one: Llama's architecture (grouped-query
# attention, rotary positions), its cache laid out unlike GPT-2's heads.
USERS = """
import accelbench


def make():
    import keras_hub

    backbone = keras_hub.models.LlamaBackbone(
        vocabulary_size=300, num_layers=2, num_query_heads=4, num_key_value_heads=2,
        hidden_dim=64, intermediate_dim=128,
    )
    return keras_hub.models.LlamaCausalLM(backbone=backbone, preprocessor=None)


accelbench.register_model(
    accelbench.keras_hub_causal_lm(
        "my_llama", "KerasHub's Llama, tiny, random weights", make,
        vocabulary=300, context=64, cache_bytes_per_token=2 * 2 * 2 * 16 * 4,
    )
)
"""


# The comparison, as source: run here, and in a process per backend below.
CHECK = """
import numpy as np
from keras import ops


def greedy(spec, model, prompt, new_tokens, cached):
    # `new_tokens` greedy tokens after `prompt`: through the spec's Generation (prefill, then a
    # decode step per token), or by the model's own call on the whole sequence for each.
    tokens, made = np.asarray(prompt, dtype="int32"), []
    if cached:
        logits, cache = spec.generation.prefill(model, tokens)
    for step in range(new_tokens):
        if not cached:
            sequence = np.concatenate([tokens, *made], axis=1)
            logits = model({"token_ids": sequence, "padding_mask": np.ones_like(sequence)})
        made.append(np.argmax(ops.convert_to_numpy(logits[:, -1]), axis=-1).astype("int32")[:, None])
        if cached and step + 1 < new_tokens:
            logits, cache = spec.generation.decode(model, made[-1], cache, tokens.shape[1] + step)
    return np.concatenate(made, axis=1).tolist()
"""
CHECKS: dict = {}
exec(CHECK, CHECKS)
greedy = CHECKS["greedy"]


@pytest.fixture(scope="module")
def hub(heavy_imports):
    return HUB.build(None, None, ModelOptions(seed=0))


def test_the_cached_call_makes_the_tokens_recomputing_makes(hub):
    prompt = np.random.default_rng(1).integers(0, HUB.generation.vocabulary, (2, 12))
    cached = greedy(HUB, hub, prompt, 10, cached=True)
    assert cached == greedy(HUB, hub, prompt, 10, cached=False)


def test_a_planted_position_fault_is_caught_by_the_same_comparison(hub):
    """The comparison can fail: decode steps one position off give other tokens."""
    import dataclasses

    prompt = np.random.default_rng(1).integers(0, HUB.generation.vocabulary, (2, 12))
    decode = HUB.generation.decode
    off = dataclasses.replace(
        HUB, generation=dataclasses.replace(HUB.generation, decode=lambda m, t, c, i: decode(m, t, c, i + 1))
    )
    assert greedy(off, hub, prompt, 10, cached=True) != greedy(HUB, hub, prompt, 10, cached=False)


def test_the_counts_agree_with_the_built_model(hub):
    """KerasHub's GPT-2 at gpt_tiny's sizes holds the weights DecoderShape counts, its Dense
    kernels the matmul FLOPs it counts, and its cache the bytes per token it counts."""
    from accelbench.axes.hub_models import HUB_GPT2_TINY, gpt2_shape

    shape = gpt2_shape(HUB_GPT2_TINY)
    assert hub.count_params() == shape.parameters()
    kernels = [w for w in hub.weights if w.path.endswith("kernel")]
    assert shape.matmul_flops_per_token() == 2 * sum(int(np.prod(w.shape)) for w in kernels) + 2 * 64 * 512
    _, cache = HUB.generation.prefill(hub, np.zeros((3, 5), dtype="int32"))
    assert HUB.generation.cache_bytes(cache) == 3 * 128 * HUB.generation.cache_bytes_per_token == 3 * 128 * 1024


def test_a_batch_at_several_positions_is_one_clear_error(hub):
    """Its cached call takes one position for the batch: no insert, and a vector of positions
    is refused in one line."""
    assert HUB.generation.insert is None
    _, cache = HUB.generation.prefill(hub, np.zeros((2, 4), dtype="int32"))
    with pytest.raises(ValueError, match="one position"):
        HUB.generation.decode(hub, np.zeros((2, 1), dtype="int32"), cache, np.array([4, 5]))


@pytest.mark.slow(60)
def test_it_caches_as_recomputing_on_every_installed_backend(tmp_path):
    """The GPT-2 and a user's Llama (grouped-query attention, rotary positions), each backend in
    a process of its own: TensorFlow's through a tf.function (its eager CPU kernels lack
    slice_update), JAX's and PyTorch's eagerly."""
    from accelbench.axes.backends import BACKENDS

    (tmp_path / "users.py").write_text(USERS)
    script = (
        CHECK
        + f"""
import sys
sys.path.insert(0, {str(tmp_path)!r})
import users
from accelbench.axes.models import MODELS, ModelOptions
for name in ("hub_gpt2_tiny", "my_llama"):
    spec = MODELS[name]
    model = spec.build(None, None, ModelOptions(seed=0))
    prompt = np.random.default_rng(2).integers(0, spec.generation.vocabulary, (2, 7))
    assert greedy(spec, model, prompt, 6, cached=True) == greedy(spec, model, prompt, 6, cached=False), name
    _, cache = spec.generation.prefill(model, prompt)
    assert spec.generation.cache_bytes(cache) == 2 * spec.generation.context * spec.generation.cache_bytes_per_token
print("agreed")
"""
    )
    backends = [name for name in BACKENDS if BACKENDS[name].installed()]
    assert backends
    for backend in backends:
        environment = {**os.environ, "KERAS_BACKEND": backend}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment)
        assert done.returncode == 0 and "agreed" in done.stdout, (backend, done.stderr[-2000:])


@pytest.mark.slow(40)
def test_its_token_cells_run_under_the_smoke_preset(pytester, heavy_imports):
    """Prefill and decode cells of KerasHub's GPT-2 and of a user's Llama, timed and saved; their
    serving cells under LoadGen one request at a time (a KerasHub cache takes no request between
    steps), whatever the smoke preset's batching of 4 slots."""
    from accelbench import scaffold

    pytester.makepyfile(test_tokens=scaffold.benchmark_files()["test_tokens.py"], users=USERS)
    (pytester.path / "baselines").mkdir()
    result = pytester.runpytest(
        "-p", "accelbench.plugin", "-p", "no:cacheprovider", "--preset", "smoke", "--baselines", "baselines",
        "--modules", "users", "--models", "hub_gpt2_tiny,my_llama", "--benchmark-json=run.json", "-rs",
        "test_tokens.py",
    )  # fmt: skip
    result.assert_outcomes(passed=8)
    document = json.loads((pytester.path / "run.json").read_text())
    saved = {cell["name"]: cell["extra_info"] for cell in document["benchmarks"]}
    for name, held in (("hub_gpt2_tiny", 128 * 1024), ("my_llama", 64 * 512)):
        decode = saved[f"test_decode[cpu-bs1-ctx16-{name}]"]
        assert decode["tpot_ms"] > 0 and decode["cache_bytes_measured"] == held
        assert saved[f"test_prefill[cpu-p16-{name}]"]["tokens_per_s"] > 0
    assert saved["test_prefill[cpu-p16-hub_gpt2_tiny]"]["flops_per_token"] > 0
    assert "flops_per_token" not in saved["test_prefill[cpu-p16-my_llama]"]  # not counted: no FLOPs invented
    untimed = {cell["name"]: cell["extra_info"] for cell in document["accelbench"]["untimed_cells"]}
    for name in ("hub_gpt2_tiny", "my_llama"):
        server, offline = (untimed[f"test_token_serving[cpu-{name}-{scenario}]"] for scenario in ("server", "offline"))
        assert server["gated_batching"] == "static 1" and server["peak_rate"] > 0
        assert offline["loadgen_valid"] and offline["output_tokens_per_s"] > 0
