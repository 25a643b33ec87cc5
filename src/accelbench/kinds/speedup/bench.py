"""Speedups: interleaved rounds of two trainers (batch sizes, devices), and the suite's fit()
against a hand-written loop."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from typing import Any

from accelbench.axes.backends import BACKENDS
from accelbench.axes.devices import REFERENCE_DEVICE, is_accelerator, type_of
from accelbench.benches.base import FIRST, LAST, Bench, Benchmark
from accelbench.grid.cells import (
    Cell,
    Grid,
    Pair,
    device_absent,
    device_pairs,
    device_unsupported,
    one_device,
    params,
    placeholder,
)
from accelbench.judge import analysis
from accelbench.kinds.speedup.gates import SPEEDUP_TOLERANCE
from accelbench.kinds.speedup.result import HarnessOverhead, Speedup
from accelbench.kinds.speedup.settings import SpeedupSettings
from accelbench.results.summary import Section
from accelbench.work import measure
from accelbench.work.training import HandLoop

INPUTS_ON_DEVICE = "train_inputs_on_device"  # the WORKS kind whose trainer's inputs lie on the device


def inputs_can_lie_on(cell: Cell) -> bool:
    """Whether a device speedup's candidate is timed again with its inputs on the device: an
    accelerator, on a backend that can put them there (Backend.resident)."""
    return is_accelerator(type_of(cell.device)) and BACKENDS[cell.backend].resident is not None


def timed_pairs(benchmark: Any, make: Callable[[], tuple[Any, Any]], pairs: int) -> tuple[list[float], list[float]]:
    """The two works `make` returns, timed in interleaved pairs (measure.interleaved) as one
    pytest-benchmark round. They are made, and warmed by one step each, in the round's setup,
    outside the clock: a work goes cold when another model is built after it (building seeds
    TensorFlow, and tf.random.set_seed clears its kernel cache). Without that, a trainer built
    just before its partner ran its first round 4-5x slow (1,750 against 7,000 samples/s), and a
    speedup cell run alone read 28-128x in its first pair where the others read 3-12x: with 5
    pairs, no shortfall could be significant, and a tenfold speedup baseline passed 18 runs in
    18. One step warms as a whole round did (the first pair's rates among the others', quick's
    four cells, 2026-11-26), in 0.94 s of the four cells' warm-ups where rounds took 1.53 s."""

    def setup() -> tuple[tuple[Any, Any], dict]:
        works = make()
        for work in works:
            work.warm()
        return works, {}

    return benchmark.pedantic(
        lambda first, second: measure.interleaved(first.throughput, second.throughput, pairs),
        setup=setup,
        rounds=1,
        iterations=1,
    )


SETTINGS = "speedup"  # its settings' name in run.presets.KIND_SETTINGS (settings.py)


class PairedBench(Bench):
    """A cell whose number is a ratio of interleaved pairs, as many as the preset sets."""

    @property
    def pairs(self) -> int:
        settings: SpeedupSettings = self.session.grid.settings[SETTINGS]
        return settings.interleaved_pairs


class SpeedupBench(PairedBench):
    """Throughput of one cell over another: the best round each trainer showed in the run
    (these interleaved pairs, and the rounds test_train timed before them), with the
    interleaved pairs as the evidence a shortfall must be significant on.

    Keras's fit() has a slow mode that sticks for seconds (see docs/measured.md, Harness
    efficiency); once it held a trainer through all 6 pairs of a cell, and the best-of-pairs
    speedup read 1.39 where 2.79 was recorded. A trainer's best round over the whole run is
    its capability; noise and the slow mode only take from it."""

    cell: Pair

    def trainers(self) -> tuple[Any, Any]:
        reference, candidate = self.cell.cells
        return self.session.built.trainer(reference), self.session.built.trainer(candidate)

    def __call__(self, benchmark: Any) -> None:
        reference, candidate = timed_pairs(benchmark, self.trainers, self.pairs)
        fastest = [trainer.fastest_samples_per_s for trainer in self.trainers()]
        speedup = fastest[1] / fastest[0]
        ratios = measure.pair_ratios(reference, candidate)
        self.record(
            Speedup(
                speedup=speedup,
                interleaved_speedup=measure.best_ratio(reference, candidate),
                reference=self.cell.reference.id,
                candidate=self.cell.candidate.id,
                reference_samples_per_s=fastest[0],
                candidate_samples_per_s=fastest[1],
                pair_ratios=[round(r, 4) for r in ratios],
            )
        )
        self.verdicts.against_baseline(self.name, self.gates["speedup"], speedup, ratios)
        if inputs_can_lie_on(self.cell.candidate):
            self.without_the_copy(benchmark)

    def without_the_copy(self, benchmark: Any) -> None:
        """The accelerator over the CPU once more, its trainer's inputs made resident on the
        device first (Backend.resident), interleaved with the same CPU trainer: the speedup
        without the host-to-device copy of the inputs, gated as the speedup is."""
        reference, candidate = self.cell.cells
        built = self.session.built

        def trainers() -> tuple[Any, Any]:
            return built.trainer(reference), built.work(INPUTS_ON_DEVICE, candidate)

        self.say("the accelerator again, its inputs on the device from the start")
        works = trainers()
        for work in works:  # warm again: another model was built since (timed_pairs says why)
            work.warm()
        cpu, resident = measure.interleaved(works[0].throughput, works[1].throughput, self.pairs)
        fastest = [work.fastest_samples_per_s for work in works]
        ratios = measure.pair_ratios(cpu, resident)
        self.record(
            Speedup(
                speedup_inputs_on_device=fastest[1] / fastest[0],
                inputs_on_device_samples_per_s=fastest[1],
                inputs_on_device_pair_ratios=[round(r, 4) for r in ratios],
            )
        )
        self.verdicts.against_baseline(
            self.name, self.gates["speedup_inputs_on_device"], fastest[1] / fastest[0], ratios
        )


class OverheadBench(PairedBench):
    """The suite's fit() throughput over a hand-written tf.function loop on the same data:
    the median of interleaved pair ratios with its 95% interval, reported and not gated
    (fit() has a slow mode of its own on small VMs; see docs/measured.md, Harness efficiency)."""

    cell: Cell

    def works(self) -> tuple[Any, Any]:
        trainer = self.session.built.trainer(self.cell)
        return HandLoop.like(trainer), trainer

    def __call__(self, benchmark: Any) -> None:
        hand, suite = timed_pairs(benchmark, self.works, self.pairs)
        ratios = measure.pair_ratios(hand, suite)
        self.record(
            HarnessOverhead(
                harness_efficiency=statistics.median(ratios),
                harness_efficiency_ci95=analysis.median_interval_or_none(ratios),
                best_round_ratio=measure.best_ratio(hand, suite),
                suite_samples_per_s=max(suite),
                hand_loop_samples_per_s=max(hand),
                pair_ratios=[round(r, 4) for r in ratios],
            )
        )


# Its cells: what grid the kind runs over, and why a cell is skipped.
def overhead_cells(grid: Grid) -> list:
    cells = [
        Cell(d, max(grid.batch_sizes_for(d, m)), m) for d, m in itertools.product(grid.devices, grid.trainable_models())
    ]
    return params(grid, cells, (device_absent, device_unsupported, no_bare_loop))


def no_bare_loop(grid: Grid, cell: Cell) -> str | None:
    """fit() is held to a bare loop written for the backend (HandLoop: a tf.function loop)."""
    if BACKENDS[cell.backend].bare_loop is not None:
        return None
    having = ", ".join(name for name in BACKENDS if BACKENDS[name].bare_loop is not None)
    return f"the bare loop fit() is held to is written for {having} only, not {cell.backend}: run it there"


def _batch_pair(device: str, model: str, sizes: tuple[int, ...]) -> Pair | None:
    small, large = min(sizes), max(sizes)
    if small == large:
        return None
    return Pair(Cell(device, small, model), Cell(device, large, model), f"{device}-bs{large}-over-bs{small}-{model}")


def batch_speedup_cells(grid: Grid) -> list:
    pairs = [
        _batch_pair(d, m, grid.batch_sizes_for(d, m))
        for d, m in itertools.product(grid.devices, grid.trainable_models())
    ]
    pairs = [pair for pair in pairs if pair]
    if not pairs:
        return placeholder("one-batch-size", "a batch speedup needs at least two --batch-sizes")
    return params(grid, pairs, (device_absent, device_unsupported))


def device_speedup_cells(grid: Grid) -> list:
    def shared(device: str, model: str) -> list[int]:  # batch sizes both devices run
        theirs = set(grid.batch_sizes_for(device, model))
        return [b for b in grid.batch_sizes_for(REFERENCE_DEVICE, model) if b in theirs]

    pairs = device_pairs(grid, shared, "over")
    return params(grid, pairs, (device_absent, device_unsupported)) if pairs else one_device(grid)


# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 20
# This module's benchmark kinds, by fixture name (benches/catalog.py registers them): each
# with its cells, its Bench, what it judges, its summary tables and its report's plots.
KINDS: dict[str, Benchmark] = {
    "overhead_bench": Benchmark(
        overhead_cells,
        OverheadBench,
        "test_harness_overhead",
        file="test_training.py",
        about="The suite's fit() against a hand-written training loop (kinds/speedup/).",
        order=FIRST,
        # Slow and never decisive in a quick run: it is reported, not gated (docs/measured.md).
        left_out={
            "quick": "the harness-efficiency check is reported, not gated, and takes 35 s: run it with --preset full"
        },
        sections=(
            Section(
                "harness efficiency: fit() / a hand-written loop, median of pairs [95% interval] (not gated)",
                {"overhead_bench": "{column}"},
                HarnessOverhead.keys.harness_efficiency,
                "plain",
                interval=HarnessOverhead.keys.harness_efficiency_ci95,
            ),
        ),
    ),
    "batch_speedup": Benchmark(
        batch_speedup_cells,
        SpeedupBench,
        "test_batch_speedup",
        ("speedup",),
        file="test_speedup.py",
        file_doc="Speedups of a larger batch and of an accelerator, and accuracy parity across devices.",
        about="The largest batch's training throughput over the smallest's, interleaved (kinds/speedup/).",
        order=LAST,
        options=(SPEEDUP_TOLERANCE,),
        plots=("speedup",),
        sections=(
            Section(
                "speedup, best round over best round (a shortfall must also show in interleaved pairs)",
                {"batch_speedup": "{column}", "device_speedup": "{column}"},
                Speedup.keys.speedup,
                "times",
                ("speedup",),
            ),
        ),
    ),
    "device_speedup": Benchmark(
        device_speedup_cells,
        SpeedupBench,
        "test_device_speedup",
        ("speedup",),  # and speedup_inputs_on_device where it is measured (an accelerator's cells)
        file="test_speedup.py",
        about="A device's training throughput over the CPU's, interleaved, with its inputs copied from the host "
        "and (on an accelerator) lying on it (kinds/speedup/).",
        order=LAST,
        sections=(
            Section(
                "an accelerator over the CPU with its inputs on the device from the start (no host-to-device copy "
                "in its rounds), best round over best round",
                {"device_speedup": "{column}"},
                Speedup.keys.speedup_inputs_on_device,
                "times",
                ("speedup_inputs_on_device",),
            ),
        ),
    ),
}
