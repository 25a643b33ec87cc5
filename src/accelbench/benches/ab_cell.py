"""A cell in an A/B run: its work's rounds in worker A and worker B, interleaved, judged B
against A; then each side's host peak of one round and its compile seconds. Any WORKS entry
(work/builders.py) is compared this way, a user's too: both workers build it from the same spec."""

from __future__ import annotations

import statistics
from typing import Any

from accelbench.benches.base import Bench
from accelbench.judge import ab_verdicts
from accelbench.judge.rules import AB_COMPILE_RULE
from accelbench.judge.verdicts import AB_COMPILE, AB_METRICS, AB_PEAK, AB_TIME, MEMRAY_REASON
from accelbench.measured import AgainstB, Workers
from accelbench.processes.workers import WorkerFailed


def against_b(bench: Bench, work_name: str, steps: int) -> None:
    """In an A/B run: the cell's rounds of `work_name` in worker A and worker B, at the steps this
    process calibrated. A worker that crashed or hung fails the cell with one line; the run goes on."""
    ab_run = bench.session.ab_run
    if ab_run is None:
        return
    if bench.session.run.memray_tracking:
        bench.verdicts.skipped(bench.name, AB_METRICS, MEMRAY_REASON)
        return
    plan = ab_run.plan(*bench.preset.ab_pairs)
    try:
        rounds = ab_run.compare(work_name, bench.cell, plan, bench.say, steps)
    except WorkerFailed as error:
        bench.verdicts.failed(bench.name, AB_TIME, f"{bench.name}: A/B: {error}")
        return
    finally:
        bench.record(Workers(ab_run.workers.pids))  # a test checks none outlives the run
    found, environment_b = rounds.verdict, ab_run.setup.b.describe()
    a_round, b_round = statistics.median(rounds.a_seconds), statistics.median(rounds.b_seconds)
    ab_verdicts.interleaved(
        bench.verdicts, bench.name, AB_TIME, found, a_round, b_round, plan.min_effect, environment_b
    )
    ab_verdicts.one_a_side(
        bench.verdicts, bench.name, AB_PEAK, rounds.a_peak, rounds.b_peak, bench.gates["peak_memory_bytes"].rule
    )
    try:
        a_compile, b_compile = _compile_seconds(bench, ab_run, work_name, steps, rounds)
    except WorkerFailed as error:
        bench.verdicts.failed(bench.name, AB_COMPILE, f"{bench.name}: A/B compile measured again: {error}")
        a_compile, b_compile = rounds.a_build.compile_seconds, rounds.b_build.compile_seconds
    else:
        ab_verdicts.one_a_side(bench.verdicts, bench.name, AB_COMPILE, a_compile, b_compile, AB_COMPILE_RULE)
    bench.record(
        AgainstB(
            ab_environment_b=environment_b,
            ab_ratio=found.ratio,
            ab_ci95=[found.low, found.high],
            ab_p_value=found.p_value,
            ab_pairs=found.pairs,
            ab_verdict=found.outcome,
            ab_steps_per_round=steps,
            ab_a_round_seconds=rounds.a_seconds,
            ab_b_round_seconds=rounds.b_seconds,
            ab_a_compile_seconds=a_compile,
            ab_b_compile_seconds=b_compile,
            ab_a_peak_memory_bytes=rounds.a_peak,
            ab_b_peak_memory_bytes=rounds.b_peak,
        )
    )
    bench.record(sides_own(rounds.a_own, rounds.b_own))


# A side's own numbers (a user's kind's work.measured()) go under these prefixes beside the
# cell's own: "ab_a_<key>", "ab_b_<key>".
SIDE_PREFIXES = {"A": "ab_a_", "B": "ab_b_"}


def sides_own(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Each side's own numbers, as the cell's extra_info keeps them."""
    return {SIDE_PREFIXES[side] + key: value for side, own in (("A", a), ("B", b)) for key, value in own.items()}


def _compile_seconds(bench: Bench, ab_run: Any, work_name: str, steps: int, rounds: Any) -> tuple[float, float]:
    """A's and B's compile seconds, from the builds made at once; where B looked slower by the
    rule, each side's fastest of that and one more build made alone (a fail must repeat: on
    a loaded machine two compiles at once slowed one side 2.2x in an A/A run)."""
    a_compile, b_compile = rounds.a_build.compile_seconds, rounds.b_build.compile_seconds
    if AB_COMPILE_RULE.holds(b_compile, a_compile):
        return a_compile, b_compile
    bench.say("A/B: B compiled slower: measuring both compiles again, one at a time")
    again = ab_run.compile_again(work_name, bench.cell, steps)
    bench.record(
        AgainstB(ab_compile_seconds_at_once=[a_compile, b_compile], ab_compile_seconds_alone=[again["A"], again["B"]])
    )
    return min(a_compile, again["A"]), min(b_compile, again["B"])
