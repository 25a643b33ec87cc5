"""The benchmark grid: which cells each benchmark fixture is parameterized over, and why a
cell that cannot run is skipped. Cell ids read device-batch-model: `cpu-bs256-mlp`; training
and inference cells read backend-device-batch-model-precision where a run asks for several
Keras backends or precisions: `jax-cpu-bs256-mlp`, `cpu-bs256-mlp-bf16`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND, absent_reason, importable
from accelbench.axes.devices import REFERENCE_DEVICE, Inventory, type_of
from accelbench.axes.models import MODELS
from accelbench.axes.precisions import PRECISIONS, REFERENCE_PRECISION
from accelbench.measured import Place


@dataclass(frozen=True)
class Cell:
    device: str
    batch_size: int
    model: str
    backend: str = PROCESS_BACKEND  # the Keras backend it runs on (backends.py)
    precision: str = REFERENCE_PRECISION  # the Keras dtype policy its model is built under (precisions.py)
    # Whether the id names the backend and the precision: where the run asks for more than one
    # of them, or for another than the default (Grid.tags). Not part of equality, so that a cell
    # and the same cell named with its backend share their built work.
    tagged: tuple[bool, bool] = field(default=(False, False), compare=False)

    @property
    def id(self) -> str:
        return tagged_id(f"{self.device}-bs{self.batch_size}-{self.model}", self)

    def fields(self) -> dict:
        """Where a summary table puts the cell: row device x model (x backend x precision, where
        the run has several, so that they read side by side), column (a batch size)."""
        backend, precision = self.tagged
        model = self.model + (f" on {self.backend}" if backend else "") + (f" {self.precision}" if precision else "")
        return {
            "device": self.device,
            "model": model,
            "batch_size": self.batch_size,
            "column": f"bs{self.batch_size}",
            "model_name": self.model,
            "backend": self.backend,
            "precision": self.precision,
        }


def fields_in_column(cell, column: str) -> dict:
    """Where a summary table puts a cell whose column is not a batch size (a prompt length, a
    LoadGen scenario): its model's row as Cell.fields names it (with its backend and precision
    where the run has several), the column given."""
    fields = Cell(cell.device, cell.batch_size, cell.model, cell.backend, cell.precision, cell.tagged).fields()
    fields.pop("batch_size")
    fields["column"] = column
    return fields


def tagged_id(plain: str, cell) -> str:
    """A cell's id, led by its backend and ended by its precision where the run names them
    (cell.tagged): `jax-cpu-bs256-mlp-bf16`."""
    backend, precision = cell.tagged
    plain = f"{cell.backend}-{plain}" if backend else plain
    return f"{plain}-{PRECISIONS[cell.precision].short}" if precision else plain


@dataclass(frozen=True)
class ModelOn:
    """A model on a device across batch sizes: `cpu-mlp`."""

    device: str
    model: str

    @property
    def id(self) -> str:
        return f"{self.device}-{self.model}"

    def fields(self) -> dict:
        return {"device": self.device, "model": self.model, "column": ""}


@dataclass(frozen=True)
class Pair:
    """Two cells timed against each other: ratio = throughput(candidate) / throughput(reference)."""

    reference: Cell
    candidate: Cell
    id: str

    @property
    def cells(self) -> tuple[Cell, Cell]:
        return self.reference, self.candidate

    @property
    def model(self) -> str:
        return self.candidate.model

    def fields(self) -> dict:
        """The candidate's row; the column says what it is compared with."""
        reference, candidate = self.reference, self.candidate
        compared = (
            f"bs{candidate.batch_size}/bs{reference.batch_size}"
            if reference.device == candidate.device
            else f"bs{candidate.batch_size} vs {reference.device}"
        )
        return {**candidate.fields(), Place.keys.column: compared, Place.keys.reference: reference.id}


@dataclass(frozen=True)
class Grid:
    """What this run asked for, resolved against the devices this machine has."""

    devices: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    models: tuple[str, ...]
    inventory: Inventory
    # Batch sizes for one device and model, where they depend on them (the full preset sweeps
    # up to the largest batch that fits); None: batch_sizes everywhere.
    sweep: Callable[[str, str], tuple[int, ...]] | None = None
    # Each registered kind's settings under the run's preset, by the name its settings.py
    # registered them under (run.presets.KIND_SETTINGS): what its cells function reads of them.
    settings: Mapping[str, object] = field(default_factory=dict)
    user_models: bool = False  # --models was given: the run's models are the user's choice
    # the generative models --models named (ModelSpec.generation): the token cells', kept out of `models`
    generative: tuple[str, ...] = ()
    left_out: Mapping[str, str] = field(default_factory=dict)  # benchmark fixture -> why the preset leaves it out
    backends: tuple[str, ...] = (PROCESS_BACKEND,)  # Keras backends of the training and inference cells
    precisions: tuple[str, ...] = (REFERENCE_PRECISION,)  # their Keras dtype policies
    unlabelled: frozenset[str] = frozenset()  # models whose data's labels carry no signal (synthetic)

    def tags(self) -> tuple[bool, bool]:
        """Whether cell ids name their backend and their precision: where the run has several,
        or one other than the default. A cell on jax alone is named so, lest it take a
        tensorflow cell's name, baselines and --benchmark-compare history."""
        return (self.backends != (PROCESS_BACKEND,), self.precisions != (REFERENCE_PRECISION,))

    def params_of(self, benchmark: str, cells: Callable[[Grid], list], left_out: str | None = None) -> list:
        """The benchmark's cells, or one skipped placeholder saying why the preset leaves it out
        (`left_out`: the kind's own reason for this preset, Benchmark.left_out)."""
        reason = left_out or self.left_out.get(benchmark)
        return placeholder(f"not-in-{benchmark}", reason) if reason else cells(self)

    def batch_sizes_for(self, device: str, model: str) -> tuple[int, ...]:
        return self.sweep(device, model) if self.sweep else self.batch_sizes

    def trainable_models(self) -> list[str]:
        return [name for name in self.models if MODELS[name].batch_trained]

    def other_devices(self) -> list[str]:
        return [device for device in self.devices if device != REFERENCE_DEVICE]


# Each rule says why a cell cannot run, or None; the first reason wins.
Rule = Callable[[Grid, object], "str | None"]


def device_absent(grid: Grid, cell) -> str | None:
    devices = getattr(cell, "cells", (cell,))
    absent = [c.device for c in devices if grid.inventory.get(c.device) is None]
    return absent_reason(grid.inventory, absent[0]) if absent else None


def device_unsupported(grid: Grid, cell) -> str | None:
    for c in getattr(cell, "cells", (cell,)):
        spec = MODELS[c.model]
        if type_of(c.device) not in spec.device_types:
            return f"{spec.name} runs on {', '.join(sorted(spec.device_types))} only, not {c.device}"
    return None


def model_missing(grid: Grid, cell) -> str | None:
    """A model that needs a module not installed here (ModelSpec.requires): KerasHub's."""
    for c in getattr(cell, "cells", (cell,)):
        needs = MODELS[c.model].requires
        if needs and not importable(needs[0]):
            return f"{c.model} needs {needs[0]}, which is not installed here: {needs[1]}"
    return None


def not_batch_trained(grid: Grid, cell) -> str | None:
    if MODELS[cell.model].batch_trained:
        return None
    return f"{cell.model} fits the whole subset at once, not in batches: see test_svm"


def unlabelled(grid: Grid, cell) -> str | None:
    if cell.model not in grid.unlabelled:
        return None
    return "synthetic data has random labels: no accuracy to measure"


@dataclass(frozen=True)
class Param:
    """One cell of a benchmark's grid, as pytest will parameterize it (the plugin makes a
    pytest.param of it): the cell, its id, and why it is skipped (None: it runs)."""

    cell: object
    id: str
    skip_reason: str | None = None


def params(grid: Grid, cells: Iterable, rules: tuple[Rule, ...]) -> list[Param]:
    return [Param(cell, cell.id, next((r for r in (rule(grid, cell) for rule in rules) if r), None)) for cell in cells]


def placeholder(name: str, reason: str) -> list[Param]:
    """A single skipped param, so a benchmark that has nothing to compare says why."""
    return [Param(None, name, reason)]


def base_cells(grid: Grid) -> list[Cell]:
    """Device x batch size x model, each model at its own batch sizes; ordered batch size first."""
    cells = [Cell(d, b, m) for d, m in itertools.product(grid.devices, grid.models) for b in grid.batch_sizes_for(d, m)]
    return sorted(cells, key=lambda c: (grid.devices.index(c.device), c.batch_size, grid.models.index(c.model)))


def backend_cells(grid: Grid, base: list[Cell] | None = None) -> list[Cell]:
    """The base cells (_cells) on every backend and precision asked for, each Keras cell once
    per pair, side by side; a model that is not Keras (the SVM) once, its id plain: it has neither."""
    order = base_cells(grid) if base is None else base
    tagged = grid.tags()
    keras_cells = [
        Cell(c.device, c.batch_size, c.model, backend, precision, tagged)
        for c in order
        for backend in grid.backends
        for precision in grid.precisions
        if MODELS[c.model].framework == "keras"
    ]
    others = [c for c in order if MODELS[c.model].framework != "keras"]
    return sorted(keras_cells + others, key=lambda c: order.index(Cell(c.device, c.batch_size, c.model)))


def backend_missing(grid: Grid, cell) -> str | None:
    backend = BACKENDS[getattr(cell, "backend", PROCESS_BACKEND)]
    return None if backend.installed() else backend.missing_reason()


def device_pairs(grid: Grid, batch_sizes_of: Callable[[str, str], Iterable[int]], verb: str) -> list[Pair]:
    return [
        Pair(Cell(REFERENCE_DEVICE, b, m), Cell(d, b, m), f"{d}-{verb}-{REFERENCE_DEVICE}-bs{b}-{m}")
        for d in grid.other_devices()
        for m in grid.trainable_models()
        for b in batch_sizes_of(d, m)
    ]


def one_device(grid: Grid) -> list:
    present = ", ".join(grid.inventory.placements)
    return placeholder(
        "one-device",
        f"needs a device besides {REFERENCE_DEVICE} and a batch-trained "
        f"model; selected: {', '.join(grid.devices)}; present: {present}",
    )
