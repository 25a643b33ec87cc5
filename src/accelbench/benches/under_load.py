"""What a cell under MLPerf LoadGen (the serving cells, the token-serving cells) makes of its
runs: each gated number the best of the cell's repeats against this machine's baseline, or
LoadGen's INVALID line where no run gave it; and in an A/B run, the cell served in A and B in the
order A B B A, B's median (or best) judged against A's by the same rules."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelbench.processes.workers import WorkerFailed

AB_ORDER = ("A", "B", "B", "A")  # an A/B run's turns: drift over the cell cancels out
AB_PREFIX = "ab_"  # an A/B verdict's metric: B's median against A's, by the gate's rule


@dataclass(frozen=True)
class Headline:
    """A cell's gated numbers from one serving (gate metric -> value), and for each it could not
    give, why (LoadGen found the run INVALID, or no rate met the bound)."""

    numbers: dict[str, float]
    invalid: dict[str, str]


def judge_best(bench: Any, heads: list[Headline], fails: bool, medians: tuple[str, ...] = ()) -> None:
    """Each metric the heads name: the best of their numbers (the highest rate, the lowest
    latency: noise on a busy machine only adds time), or for the metrics in `medians` their
    median (a number whose error goes both ways), against the baseline; where none gave one, the
    last head's reason as an INVALID verdict (a failure where the run holds to MLPerf's rules)."""
    for metric in dict.fromkeys(metric for head in heads for metric in (*head.numbers, *head.invalid)):
        values = [head.numbers[metric] for head in heads if metric in head.numbers]
        if values:
            gate = bench.gates[metric]
            value = statistics.median(values) if metric in medians else best_of(values, gate.rule)
            bench.verdicts.against_baseline(bench.name, gate, value, key=bench.baseline_key)
        else:
            bench.verdicts.invalid(bench.name, metric, heads[-1].invalid[metric], fails=fails)


def best_of(values: list[float], rule: Any) -> float:
    """The best of a number's values by its gate's rule: the highest rate, the lowest latency."""
    return max(values) if rule.relation == ">=" else min(values)


def judge_ab(bench: Any, serve_side: Callable[[str, int], Headline], failed_metric: str, best: bool = False) -> None:
    """In an A/B run: serve_side(side, turn) serves the cell in that side's worker and returns
    its headline, in the order A B B A; B's median of each number (with `best`, its best: a side
    whose two turns are each a second or so, where a slow stretch of the machine can take one
    whole turn) judged against A's by the gate's rule. A side that fails (WorkerFailed) fails
    `failed_metric`'s A/B verdict in one line."""
    ab_run = bench.session.ab_run
    if ab_run is None:
        return
    heads: dict[str, list[Headline]] = {"A": [], "B": []}
    try:
        for turn, side in enumerate(AB_ORDER):
            heads[side].append(serve_side(side, turn))
    except WorkerFailed as error:
        bench.verdicts.failed(bench.name, AB_PREFIX + failed_metric, f"{bench.name}: A/B: {error}")
        return
    environment = ab_run.setup.b.describe()
    for metric in dict.fromkeys(m for side in heads.values() for head in side for m in head.numbers):
        a = [head.numbers[metric] for head in heads["A"] if metric in head.numbers]
        b = [head.numbers[metric] for head in heads["B"] if metric in head.numbers]
        if not a or not b:
            continue
        rule = bench.gates[metric].rule
        pick = (lambda values: best_of(values, rule)) if best else statistics.median
        base = dict(cell=bench.name, metric=AB_PREFIX + metric, measured=pick(b), tolerance=rule.describe())
        against = f"environment A, served A B B A ({environment} is B)"
        bench.verdicts.judge(base, pick(a), against, rule, ())
