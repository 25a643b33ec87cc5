"""accelbench: how fast, how accurately and with how much memory your models train and infer on
each device, batch size, Keras backend and precision, as pytest benchmarks that gate CI.

The public API declares your own models and datasets, as the built-in zoo is declared. Put the
declarations in a module of your own and name it once, in the ini key `accelbench_modules` (or
--modules): the pytest process and every process it starts import it.

    import accelbench

    def build(input_shape, outputs, options):
        import keras
        return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(), keras.layers.Dense(outputs)])

    accelbench.register_model(accelbench.ModelSpec("tiny", "a linear classifier", build))
"""

import sys

from accelbench.axes.backends import compiled
from accelbench.axes.data import DATASETS, Dataset
from accelbench.axes.models import MODELS, Generation, ModelOptions, ModelSpec, keras_hub_causal_lm

__all__ = [
    "DATASETS",
    "MODELS",
    "Dataset",
    "Generation",
    "ModelOptions",
    "ModelSpec",
    "compiled",
    "keras_hub_causal_lm",
    "register_benchmark",
    "register_dataset",
    "register_gate",
    "register_layer_flops",
    "register_model",
    "register_plot",
    "register_settings",
    "register_work",
]


def register_model(spec: ModelSpec) -> ModelSpec:
    """Declare a model under spec.name, as the zoo's are: --models then takes its name. A name
    another module declared is refused; the same module declaring it again replaces it."""
    return MODELS.register(spec.name, spec, origin=spec.build.__module__)


def register_dataset(name: str, loader) -> None:
    """Declare a dataset: `loader(data_dir)` returns a Dataset of NumPy arrays (--dataset NAME)."""
    DATASETS.register(name, loader, origin=loader.__module__)


def register_work(name: str, builder) -> None:
    """Declare a timed work under its name: `builder(site, steps)` returns an object with `run_round()`,
    `samples_per_round`, `steps`, `compile_seconds` and `flops_per_sample()` (work.builders.Work),
    built from `site` (work.builders.Site: the cell's model, data, placement, batch size) at `steps`
    per round (None: the builder's choice). The pytest process builds it for its own cells, and
    an A/B run's workers and another backend's worker build it from the same spec, as they
    import this module too: a kind's Bench times it with `benches.timed_work.time_work`."""
    from accelbench.work.builders import WORKS

    WORKS.register(name, builder, origin=builder.__module__)


def register_layer_flops(layer_class: str, counter) -> None:
    """Count the FLOPs of a Keras layer class of your own (by its class name), so a model that
    holds it gets FLOPs, FLOP/s and its share of the device's peak: `counter(layer, inputs,
    outputs)` gets the layer and its input and output shapes without the batch dimension, and
    returns forward FLOPs per sample, 2 x multiply-adds (accelbench.axes.flops)."""
    from accelbench.axes.flops import COUNTERS

    COUNTERS.register(layer_class, counter, origin=getattr(counter, "__module__", None))


def register_benchmark(name: str, benchmark, *sections) -> None:
    """Declare a benchmark kind under its fixture's name, with the tables of its numbers: a
    `benches.base.Benchmark` (its cells, its `Bench`, its test's name and file, its `sections`
    and `plots`), and any more `results.summary.Section`s. Its fixture, its place in the terminal's summary and in the
    report (which reads the tables from the saved run) follow; its test file asks for the
    fixture as the built-in ones do. Imported here only when called: `accelbench report`
    imports this package and must not load pytest."""
    import dataclasses

    from accelbench.benches.catalog import BENCHMARKS

    benchmark = dataclasses.replace(benchmark, sections=(*benchmark.sections, *sections))
    BENCHMARKS.register(name, benchmark, origin=benchmark.bench.__module__)


def register_plot(name: str, draw) -> None:
    """Declare a plot of your kind's numbers for `accelbench report`: `draw(runs)` returns a list
    of `results.report.plots.Plot` (a name, a title, a PNG as base64: `plots.encode(figure)`)
    from the saved runs (`results.report.runs.Run`: `run.cells_of(fixture)` gives its cells).
    Name it in your Benchmark's `plots`, and give the report your module (`accelbench report
    --modules yours`), as the pytest process got it."""
    from accelbench.results.report.plots import USER_PLOTS

    USER_PLOTS.register(name, draw, origin=getattr(draw, "__module__", None))


def register_settings(name: str, by_preset: dict, fallback: str = "quick") -> None:
    """Your kind's own settings, one per preset, as the built-in kinds declare theirs
    (kinds/<name>/settings.py): `by_preset` maps a preset's name (quick, full, smoke) to any
    object of yours; a preset it names none for runs with `fallback`'s. Your cells function
    reads them as `grid.settings[name]`, your Bench as `self.session.grid.settings[name]`: the
    ones of the run's --preset. Bad input is one ValueError."""
    from accelbench.run.presets import KIND_SETTINGS, KindSettings

    if fallback not in by_preset:
        raise ValueError(f"settings {name!r}: the fallback preset {fallback!r} is not among {sorted(by_preset)}")
    KIND_SETTINGS.register(
        name, KindSettings(dict(by_preset), fallback), origin=sys._getframe(1).f_globals.get("__name__")
    )


# register_gate's rules by the word a user gives: what a number may not do past its tolerance
GATE_RULES = {
    "drop": "RelativeDrop",  # a rate: may not fall by more than the tolerance, as a fraction
    "rise": "RelativeRise",  # a time or a size: may not rise by more than the tolerance
    "absolute_drop": "AbsoluteDrop",  # an accuracy: may not fall by more than the tolerance itself
}
# what a baseline is keyed by: this machine (its hardware fingerprint) and the data's name, or
# the data alone (a number that holds across machines, as accuracy from a fixed seed does)
GATE_KEYS = {"machine": 1, "data": 0}


def register_gate(metric: str, rule: str, tolerance: float, keyed_by: str = "machine") -> None:
    """Hold a number of your kind to stored baselines, as the built-in gates hold theirs: `rule`
    is "drop" (a rate may not fall by more than `tolerance`, a fraction), "rise" (a time or a
    size may not rise by more) or "absolute_drop" (may not fall by more than `tolerance`
    itself); `keyed_by` "machine" (this machine's hardware fingerprint and the data's name) or
    "data" (the data alone). The baselines live in `<metric>.json` under --baselines, written
    by --update-baselines. Your Bench hands a number over with
    `self.verdicts.against_baseline(self.name, self.gates[metric], value)`: the verdict names
    the cell, the baseline, the value and the tolerance, and a machine with no baseline reads
    `ungated`. Bad words are one ValueError naming the choices."""
    from accelbench.judge import rules
    from accelbench.judge.gates import GATES, GateSpec

    if rule not in GATE_RULES:
        raise ValueError(f"gate {metric!r}: rule {rule!r} is not one of {', '.join(GATE_RULES)}")
    if keyed_by not in GATE_KEYS:
        raise ValueError(f"gate {metric!r}: keyed_by {keyed_by!r} is not one of {', '.join(GATE_KEYS)}")
    if not tolerance >= 0:
        raise ValueError(f"gate {metric!r}: tolerance {tolerance!r} must be a number >= 0")
    made = getattr(rules, GATE_RULES[rule])(float(tolerance))
    fingerprints = GATE_KEYS[keyed_by]
    keys = (lambda s: (s.hardware, s.dataset.name)) if fingerprints else (lambda s: (s.dataset.key,))
    spec = GateSpec(metric, f"{metric}.json", keys, lambda tolerances: made, fingerprints=fingerprints)
    GATES.register(metric, spec, origin=sys._getframe(1).f_globals.get("__name__"))  # the declaring module
