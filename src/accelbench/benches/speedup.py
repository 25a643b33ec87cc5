"""Speedups: interleaved rounds of two trainers (batch sizes, devices), and the suite's fit()
against a hand-written loop."""

from __future__ import annotations

import statistics
from typing import Any

from accelbench.benches.base import Bench
from accelbench.grid.cells import Cell, Pair
from accelbench.judge import analysis
from accelbench.work import measure
from accelbench.work.training import HandLoop


class SpeedupBench(Bench):
    """Throughput of one cell over another: the best round each trainer showed in the run
    (these interleaved pairs, and the rounds test_train timed before them), with the
    interleaved pairs as the evidence a shortfall must be significant on.

    Keras's fit() has a slow mode that sticks for seconds (see docs/measured.md, Harness
    efficiency); once it held a trainer through all 6 pairs of a cell, and the best-of-pairs
    speedup read 1.39 where 2.79 was recorded. A trainer's best round over the whole run is
    its capability; noise and the slow mode only take from it."""

    cell: Pair

    def throughputs(self) -> tuple[list[float], list[float]]:
        reference, candidate = (self.session.trainer(c) for c in self.cell.cells)
        return measure.interleaved(reference.throughput, candidate.throughput,
                                   self.preset.interleaved_pairs)

    def __call__(self, benchmark: Any) -> None:
        reference, candidate = benchmark.pedantic(self.throughputs, rounds=1, iterations=1)
        fastest = [self.session.trainer(c).fastest_samples_per_s for c in self.cell.cells]
        speedup = fastest[1] / fastest[0]
        ratios = measure.pair_ratios(reference, candidate)
        self.info(speedup=speedup, interleaved_speedup=measure.best_ratio(reference, candidate),
                  reference=self.cell.reference.id, candidate=self.cell.candidate.id,
                  reference_samples_per_s=fastest[0], candidate_samples_per_s=fastest[1],
                  pair_ratios=[round(r, 4) for r in ratios])
        self.verdicts.against_baseline(self.name, self.gates["speedup"], speedup, ratios)


class OverheadBench(Bench):
    """The suite's fit() throughput over a hand-written tf.function loop on the same data:
    the median of interleaved pair ratios with its 95% interval, reported and not gated
    (fit() has a slow mode of its own on small VMs; see docs/measured.md, Harness efficiency)."""

    cell: Cell

    def throughputs(self) -> tuple[list[float], list[float]]:
        trainer = self.session.trainer(self.cell)
        hand = HandLoop.like(trainer)
        return measure.interleaved(hand.throughput, trainer.throughput, self.preset.interleaved_pairs)

    def __call__(self, benchmark: Any) -> None:
        hand, suite = benchmark.pedantic(self.throughputs, rounds=1, iterations=1)
        ratios = measure.pair_ratios(hand, suite)
        self.info(harness_efficiency=statistics.median(ratios), harness_efficiency_ci95=analysis.median_interval_or_none(ratios),
                  best_round_ratio=measure.best_ratio(hand, suite), suite_samples_per_s=max(suite),
                  hand_loop_samples_per_s=max(hand), pair_ratios=[round(r, 4) for r in ratios])
