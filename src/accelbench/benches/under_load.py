"""What a cell under MLPerf LoadGen (the serving cells, the token-serving cells) makes of its
runs: each gated number the best of the cell's repeats against this machine's baseline, or
LoadGen's INVALID line where no run gave it; and in an A/B run, the cell served in A and B in the
order A B B A, B's best turn judged against A's by the same rules."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accelbench.judge.verdicts import AB_PREFIX
from accelbench.processes.workers import WorkerFailed

AB_ORDER = ("A", "B", "B", "A")  # an A/B run's turns: drift over the cell cancels out


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


def judge_ab(bench: Any, serve_side: Callable[[str, int], Headline], failed_metric: str) -> None:
    """In an A/B run: serve_side(side, turn) serves the cell in that side's worker and returns
    its headline, in the order A B B A; B's best of its two turns judged against A's best by the
    gate's rule. The best, not the median of two (their mean): a turn lasts a second or a few,
    and a slow stretch of the machine can take one whole A turn, which the mean carries into
    A's number (it let a planted 2x slower step in B pass, in a token run and in a serving run;
    docs/measurements.md). A side that fails (WorkerFailed) fails `failed_metric`'s A/B verdict
    in one line."""
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
        base = dict(cell=bench.name, metric=AB_PREFIX + metric, measured=best_of(b, rule), tolerance=rule.describe())
        against = f"environment A, served A B B A ({environment} is B)"
        bench.verdicts.judge(base, best_of(a, rule), against, rule, ())
