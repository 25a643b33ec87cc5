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

from accelbench.axes.data import DATASETS, Dataset
from accelbench.axes.models import MODELS, ModelOptions, ModelSpec

__all__ = [
    "DATASETS",
    "MODELS",
    "Dataset",
    "ModelOptions",
    "ModelSpec",
    "register_benchmark",
    "register_dataset",
    "register_layer_flops",
    "register_model",
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
    """Declare a kind of timed work: `builder(site, steps)` returns an object with `run_round()`,
    `samples_per_round`, `steps`, `compile_seconds` and `flops_per_sample()` (work.kinds.Work),
    built from `site` (work.kinds.Site: the cell's model, data, placement, batch size) at `steps`
    per round (None: the builder's choice). The pytest process builds it for its own cells, and
    an A/B run's workers and another backend's worker build it from the same spec, as they
    import this module too: a kind's Bench times it with `benches.timed_work.time_work`."""
    from accelbench.work.kinds import WORKS

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
