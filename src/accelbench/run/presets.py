"""Run presets: how much of the grid a run covers and how long each cell is measured."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from accelbench.axes.models import MODELS
from accelbench.registry import Registry


@dataclass(frozen=True)
class SizingSettings:
    """How the run finds the largest batch that fits (run/sizing.py) and whether it sweeps to it."""

    # Batch sizes whose step peaks fit memory = fixed + per-sample. Not smaller: below about
    # 256 a step's peak sits on a floor set by the optimizer update, not by the batch.
    ladder: tuple[int, ...]
    sweep_to_largest: bool  # batch sweep: doubling up to the largest batch that fits, not batch_sizes


@dataclass(frozen=True)
class Preset:
    name: str
    about: str  # what it is for, in a few words (--preset's help lists every preset's)
    batch_sizes: tuple[int, ...]
    models: tuple[str, ...]  # ALL_MODELS (): every registered model
    # Timed rounds per cell: a comparison with a saved run ranks the fast half of each, so
    # fewer than 8 rounds (4 a side, p >= 0.014) can hardly be significant.
    rounds: int
    # Target length of one round. A round is one fit() call running its steps as one compiled
    # execution; what fit() costs per call beyond its steps was 1-7 ms on a 2-core EPYC, up to
    # 7% of quick's 0.1 s rounds, so a trainer's steps are raised past this length until that
    # cost is within 2% of a round (work/measure.py sized_for_calls). Speedups compare rounds of
    # equal length.
    round_seconds: float
    # A prediction round is one compiled loop with no per-call cost worth amortising: shorter.
    predict_round_seconds: float
    max_train_samples: int | None  # cap on the training set, None for all of it
    # Whether a model's data comes at its full input size (ModelSpec.dataset: 224 x 224 images),
    # or at the smaller one (axes/data.py SMALLER: 96 x 96) that keeps a short run short.
    full_size_inputs: bool
    latency_rounds: int  # batch-1 predictions timed for p50/p90/p99
    sizing: SizingSettings
    # A/B runs: pairs of rounds a cell is judged after, then every `step` more, up to `most`
    # (comparison.Plan). With 12/12/48 a 10% slowdown fails in all of 100 draws of this
    # machine's pair noise and a 3% one in none; with each cell's spread between processes
    # added, 93 of 100 cells fail at 10% (tests/test_comparison.py).
    ab_pairs: tuple[int, int, int] = (12, 12, 48)
    # An A/B run's round lengths (training, prediction), where they differ from the above: the
    # A/B rule's error rates were simulated from the pair noise of rounds of these lengths
    # (tests/data/aa_log_ratios*.json, tests/test_comparison.py), so an A/B run keeps them.
    ab_round_seconds: tuple[float, float] | None = None
    # Benchmark fixtures this preset leaves out, and why (shown as the skip reason).
    left_out: Mapping[str, str] = field(default_factory=dict)


PRESETS: Registry[Preset] = Registry("preset")


@dataclass(frozen=True)
class KindSettings:
    """A benchmark kind's own settings, one per preset (a kind's settings.py registers them in
    KIND_SETTINGS): a preset it names none for (a user's) runs it with `fallback`'s."""

    by_preset: Mapping[str, object]
    fallback: str = "quick"

    def of(self, preset: str) -> object:
        return self.by_preset.get(preset, self.by_preset[self.fallback])


KIND_SETTINGS: Registry[KindSettings] = Registry("kind's settings")


def kind_settings(preset: Preset) -> dict[str, object]:
    """Every registered kind's settings under `preset`, by the name they were registered under."""
    return {name: KIND_SETTINGS[name].of(preset.name) for name in KIND_SETTINGS}


# Every model registered when the run starts, the user's (--modules) included, in registration order.
ALL_MODELS: tuple[str, ...] = ()

# The quick and smoke presets' sizing: the ladder's first three rungs, no sweep.
SHORT_LADDER = SizingSettings(ladder=(256, 512, 1024), sweep_to_largest=False)
PRESETS.register(
    "quick",
    Preset(
        "quick",
        "about two minutes on a 2-core CPU",
        batch_sizes=(32, 256),
        models=ALL_MODELS,
        rounds=8,
        round_seconds=0.1,
        predict_round_seconds=0.05,
        max_train_samples=10_000,
        full_size_inputs=False,
        latency_rounds=100,
        ab_round_seconds=(0.2, 0.1),
        sizing=SHORT_LADDER,
    ),
)
PRESETS.register(
    "full",
    Preset(
        "full",
        "the published settings and every benchmark",
        batch_sizes=(32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
        models=ALL_MODELS,
        rounds=20,
        round_seconds=0.5,
        predict_round_seconds=0.5,
        max_train_samples=None,
        full_size_inputs=True,
        latency_rounds=1000,
        sizing=SizingSettings(ladder=(256, 512, 1024, 2048, 4096), sweep_to_largest=True),
    ),
)
# Every benchmark, each measured as briefly as it can be: does the whole grid run here? Every
# gate runs, on rounds too short to trust as timings; the harness's own tests use it.
PRESETS.register(
    "smoke",
    Preset(
        "smoke",
        "every benchmark as briefly as it runs, to check the harness here",
        batch_sizes=(32, 256),
        models=ALL_MODELS,
        rounds=4,
        round_seconds=0.05,
        predict_round_seconds=0.05,
        max_train_samples=10_000,
        full_size_inputs=False,
        latency_rounds=10,
        sizing=SHORT_LADDER,
        ab_pairs=(6, 6, 12),
    ),
)


def for_ab_run(preset: Preset) -> Preset:
    """The preset an A/B run (--ab-python, --ab-env, --ab-ref) measures with: its A/B round lengths."""
    if preset.ab_round_seconds is None:
        return preset
    training, prediction = preset.ab_round_seconds
    return dataclasses.replace(preset, round_seconds=training, predict_round_seconds=prediction)


def chosen(models: tuple[str, ...]) -> tuple[str, ...]:
    """A preset's models as the run takes them: ALL_MODELS is every model registered by now,
    but those left out of the presets (ModelSpec.default False: the real architectures)."""
    return models or tuple(name for name in MODELS if MODELS[name].default)
