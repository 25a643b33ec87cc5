"""Registries and option parsers: duplicates rejected, unknown names list the choices."""

import pytest

from accelbench.axes.devices import parse_devices
from accelbench.axes.models import MODELS
from accelbench.plugin import options
from accelbench.registry import Registry, UnknownName


def test_register_rejects_duplicates():
    registry = Registry("thing")
    registry.register("a", 1)
    with pytest.raises(ValueError, match="thing 'a' is already registered"):
        registry.register("a", 2)


def test_unknown_name_lists_the_choices():
    with pytest.raises(UnknownName, match="unknown model 'resnet'; choose from: mlp, mlp_wide"):
        MODELS["resnet"]


@pytest.mark.parametrize(("text", "expected"), [
    ("cpu", ("cpu",)), ("cpu,gpu:1", ("cpu", "gpu:1")), ("CPU, tpu,cpu", ("cpu", "tpu")), ("all", ()),
])
def test_parse_devices(text, expected):
    assert parse_devices(text) == expected


@pytest.mark.parametrize("text", ["cuda", "gpu:x", "", "cpu,all2"])
def test_parse_devices_rejects(text):
    with pytest.raises(ValueError):
        parse_devices(text)


def test_batch_sizes_parse_and_deduplicate():
    assert options.positive_ints("32, 256,32") == (32, 256)


@pytest.mark.parametrize("text", ["0", "abc", "-1", "3.5", ""])
def test_batch_sizes_reject(text):
    with pytest.raises(ValueError):
        options.positive_ints(text)


@pytest.mark.parametrize(("text", "ok"), [("0.02", True), ("0", True), ("1", False), ("x", False)])
def test_fraction(text, ok):
    if ok:
        assert options.fraction(text) == float(text)
    else:
        with pytest.raises(ValueError):
            options.fraction(text)


def test_every_benchmark_kind_has_a_plain_fixture_of_its_name(pytester):
    from accelbench.benches.catalog import BENCHMARKS

    listed = pytester.runpytest("-p", "accelbench.plugin", "-p", "no:cacheprovider", "--fixtures").stdout.str()
    assert [name for name in BENCHMARKS if f"{name} -- " not in listed and f"{name} [" not in listed] == []


def test_flops_are_counted_for_dense_and_conv_layers_and_unknown_for_any_other_with_weights(heavy_imports):
    import keras

    from accelbench.axes.models import forward_flops_per_sample

    dense = keras.Sequential([keras.Input((20,)), keras.layers.Embedding(100, 8), keras.layers.Flatten(),
                              keras.layers.Dense(4)])
    assert forward_flops_per_sample(dense) == 2 * 160 * 4  # the lookup holds weights but does no multiply-adds
    recurrent = keras.Sequential([keras.Input((20,)), keras.layers.Embedding(100, 8), keras.layers.GRU(8),
                                  keras.layers.Dense(4)])
    assert forward_flops_per_sample(recurrent) is None  # unknown, not the Dense layer's 64 alone
