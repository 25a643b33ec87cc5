"""The real architectures beside the studies' zoo (axes/models.py): built offline on their
synthetic data's shapes, every layer's FLOPs counted, left out of the presets and run when named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelbench.axes import data
from accelbench.axes.models import MODELS
from accelbench.measured import Utilization
from accelbench.run import presets

REAL = {
    "resnet50": "images_96",
    "mobilenet_v3_small": "images_96",
    "efficientnet_b0": "images_96",
    "bert_encoder": "tokens_128",
    "lstm_text": "tokens_128",
}


def test_the_real_architectures_are_left_out_of_the_presets_and_each_dataset_has_its_shape():
    assert set(REAL) <= set(MODELS)
    assert not set(REAL) & set(presets.chosen(presets.ALL_MODELS))
    assert set(presets.chosen(presets.ALL_MODELS)) == {"mlp", "mlp_wide", "mlp_deep", "cnn", "svm"}
    for name, (shape, _) in data.SHAPED.items():
        loaded = data.load(name)
        assert loaded.input_shape == shape and not loaded.labelled
    for name, small in REAL.items():  # each model's own data: full size in --preset full, else small
        assert MODELS[name].dataset_in(None, full_size_inputs=False) == small
        assert MODELS[name].dataset_in(None, full_size_inputs=True) == small.replace("images_96", "images_224")
        assert MODELS[name].dataset_in("digits", full_size_inputs=True) == "digits"  # --dataset overrides
    tokens = data.load("tokens_128")
    assert tokens.x_train.dtype == "int32" and 0 <= tokens.x_train.min() and tokens.x_train.max() < 30522


def test_each_real_architecture_builds_offline_with_every_layers_flops_counted(heavy_imports):
    from accelbench.axes import flops
    from accelbench.axes.models import ModelOptions

    for name, dataset in REAL.items():
        shape = data.SHAPED[dataset][0]
        counted = flops.count(MODELS[name].build(shape, 10, ModelOptions()))
        assert counted.forward and not counted.uncounted, (name, counted.unknown_reason)
        assert 0 < counted.executed <= counted.forward, name


@pytest.mark.slow
def test_the_zoo_and_a_real_image_and_text_architecture_run_in_one_run_each_on_its_own_data(pytester, heavy_imports):
    """No --dataset: the MLP on digits, the image model on its images (96 x 96 in smoke), the
    text model on its tokens, each cell's record naming its data, each with its utilization."""
    for path in (Path(__file__).resolve().parents[1] / "benchmarks").glob("test_*.py"):
        pytester.makepyfile(**{path.stem: path.read_text()})
    (pytester.path / "baselines").mkdir()
    saved = pytester.path / "run.json"
    result = pytester.runpytest(
        "-p", "accelbench.plugin", "-p", "no:cacheprovider", "--preset", "smoke",
        "--baselines", str(pytester.path / "baselines"),
        "test_training.py::test_train", "test_inference.py::test_inference",
        "--models", "mlp,mobilenet_v3_small,lstm_text", "--batch-sizes", "16", f"--benchmark-json={saved}",
    )  # fmt: skip
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["data: digits (mlp); images_96 (mobilenet_v3_small); tokens_128 (lstm_text)"])
    ran_on = {}
    for cell in json.loads(saved.read_text())["benchmarks"]:
        ran_on[cell["extra_info"]["accelbench_cell"]["model"]] = cell["extra_info"]["accelbench_cell"]["dataset"]
        used = Utilization.of(cell["extra_info"])
        assert 0 < used.mfu and 0 < used.hfu <= 1.05 and used.arithmetic_intensity > 0, cell["name"]
    assert ran_on == {"mlp": "digits", "mobilenet_v3_small": "images_96", "lstm_text": "tokens_128"}
    # the pull request's comment says so too
    from accelbench.results.report import markdown
    from accelbench.results.report.runs import load_runs

    assert "  - data: digits (mlp); images_96 (mobilenet_v3_small); tokens_128 (lstm_text)\n" in markdown.render(
        load_runs([saved])
    )
