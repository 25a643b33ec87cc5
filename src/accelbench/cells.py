"""The benchmark grid: which cells each benchmark fixture is parameterized over, and why a
cell that cannot run is skipped. Cell ids read device-batch-model: `cpu-bs256-mlp`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pytest

from accelbench.devices import Inventory, kind_of
from accelbench.models import MODELS

REFERENCE_DEVICE = "cpu"  # device speedups and accuracy parity are measured against it
SVM_PIXELS = ("grayscale", "binarized")


@dataclass(frozen=True)
class Cell:
    device: str
    batch_size: int
    model: str

    @property
    def id(self) -> str:
        return f"{self.device}-bs{self.batch_size}-{self.model}"


@dataclass(frozen=True)
class Pair:
    """Two cells timed against each other: ratio = throughput(candidate) / throughput(reference)."""

    reference: Cell
    candidate: Cell
    id: str

    @property
    def cells(self) -> tuple[Cell, Cell]:
        return self.reference, self.candidate


@dataclass(frozen=True)
class SvmCell:
    device: str
    subset: int
    pixels: str
    model: str = "svm"

    @property
    def id(self) -> str:
        return f"{self.device}-n{self.subset}-{self.pixels}"


@dataclass(frozen=True)
class Grid:
    """What this run asked for, resolved against the devices this machine has."""

    devices: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    models: tuple[str, ...]
    svm_subsets: tuple[int, ...]
    labelled: bool
    inventory: Inventory

    def trainable_models(self) -> list[str]:
        return [name for name in self.models if MODELS[name].batch_trained]

    def other_devices(self) -> list[str]:
        return [device for device in self.devices if device != REFERENCE_DEVICE]


# Each rule says why a cell cannot run, or None; the first reason wins.
Rule = Callable[[Grid, object], "str | None"]


def device_absent(grid: Grid, cell) -> str | None:
    devices = getattr(cell, "cells", (cell,))
    absent = [c.device for c in devices if grid.inventory.get(c.device) is None]
    return grid.inventory.absent_reason(absent[0]) if absent else None


def device_unsupported(grid: Grid, cell) -> str | None:
    for c in getattr(cell, "cells", (cell,)):
        spec = MODELS[c.model]
        if kind_of(c.device) not in spec.device_kinds:
            return f"{spec.name} runs on {', '.join(sorted(spec.device_kinds))} only, not {c.device}"
    return None


def not_batch_trained(grid: Grid, cell) -> str | None:
    if MODELS[cell.model].batch_trained:
        return None
    return f"{cell.model} fits the whole subset at once, not in batches: see test_svm"


def unlabelled(grid: Grid, cell) -> str | None:
    return None if grid.labelled else "synthetic data has random labels: no accuracy to measure"


def params(grid: Grid, cells: Iterable, rules: tuple[Rule, ...]) -> list:
    result = []
    for cell in cells:
        reason = next((r for r in (rule(grid, cell) for rule in rules) if r), None)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        result.append(pytest.param(cell, id=cell.id, marks=marks))
    return result


def placeholder(name: str, reason: str) -> list:
    """A single skipped param, so a benchmark that has nothing to compare says why."""
    return [pytest.param(None, id=name, marks=pytest.mark.skip(reason=reason))]


def _cells(devices, batch_sizes, models) -> list[Cell]:
    return [Cell(d, b, m) for d, b, m in itertools.product(devices, batch_sizes, models)]


def train_cells(grid: Grid) -> list:
    return params(grid, _cells(grid.devices, grid.batch_sizes, grid.models),
                  (device_absent, device_unsupported, not_batch_trained))


def inference_cells(grid: Grid) -> list:
    return params(grid, _cells(grid.devices, grid.batch_sizes, grid.models),
                  (device_absent, device_unsupported))


def latency_cells(grid: Grid) -> list:
    return params(grid, _cells(grid.devices, (1,), grid.models), (device_absent, device_unsupported))


def accuracy_cells(grid: Grid) -> list:
    cells = [Cell(d, MODELS[m].recipe_batch_size, m) for d, m in itertools.product(grid.devices, grid.models)]
    return params(grid, cells, (device_absent, device_unsupported, not_batch_trained, unlabelled))


def svm_cells(grid: Grid) -> list:
    if "svm" not in grid.models:
        return placeholder("svm-not-selected", "svm is not among --models")
    cells = [SvmCell(d, n, p) for d, n, p in itertools.product(grid.devices, grid.svm_subsets, SVM_PIXELS)]
    return params(grid, cells, (device_absent, device_unsupported))


def overhead_cells(grid: Grid) -> list:
    cells = _cells(grid.devices, (max(grid.batch_sizes),), grid.trainable_models())
    return params(grid, cells, (device_absent, device_unsupported))


def batch_speedup_cells(grid: Grid) -> list:
    small, large = min(grid.batch_sizes), max(grid.batch_sizes)
    if small == large:
        return placeholder("one-batch-size", "a batch speedup needs at least two --batch-sizes")
    pairs = [Pair(Cell(d, small, m), Cell(d, large, m), f"{d}-bs{large}-over-bs{small}-{m}")
             for d, m in itertools.product(grid.devices, grid.trainable_models())]
    return params(grid, pairs, (device_absent, device_unsupported))


def _device_pairs(grid: Grid, batch_sizes_of: Callable[[str], Iterable[int]], verb: str) -> list[Pair]:
    return [Pair(Cell(REFERENCE_DEVICE, b, m), Cell(d, b, m), f"{d}-{verb}-{REFERENCE_DEVICE}-bs{b}-{m}")
            for d in grid.other_devices() for m in grid.trainable_models() for b in batch_sizes_of(m)]


def _one_device(grid: Grid) -> list:
    present = ", ".join(grid.inventory.placements)
    return placeholder("one-device", f"needs a device besides {REFERENCE_DEVICE} and a batch-trained "
                                     f"model; selected: {', '.join(grid.devices)}; present: {present}")


def device_speedup_cells(grid: Grid) -> list:
    pairs = _device_pairs(grid, lambda model: grid.batch_sizes, "over")
    return params(grid, pairs, (device_absent, device_unsupported)) if pairs else _one_device(grid)


def parity_cells(grid: Grid) -> list:
    pairs = _device_pairs(grid, lambda model: (MODELS[model].recipe_batch_size,), "vs")
    rules = (device_absent, device_unsupported, unlabelled)
    return params(grid, pairs, rules) if pairs else _one_device(grid)
