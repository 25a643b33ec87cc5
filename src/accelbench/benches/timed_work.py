"""Rounds of a cell's timed work (a work.builders.WORKS entry: training, inference, or a user's),
the one measuring path of every such cell: built by the one builder of its work, timed round by
round, then judged B against A in an A/B run.

On the pytest process's own backend the rounds run here, timed by pytest-benchmark: that saves
each cell a worker's TensorFlow start (5-10 s) and keeps pytest-benchmark's comparison and
storage the user knows. On another backend they run in that backend's worker, built by the
same builder from the same spec, and each round is one call timed by pytest-benchmark here and
by the worker's own clock there (other_backend.py). Both paths record the same parts
(Timed, Throughput, BackendUsed, PrecisionUsed); tests/test_measured.py checks it.
"""

from __future__ import annotations

from typing import Any

from accelbench.benches import ab_cell, other_backend
from accelbench.benches.base import Bench
from accelbench.benches.context import backend_here, placed_as_asked, precision_used, record_rates, throughput
from accelbench.measured import Throughput
from accelbench.work.builders import Work, call_cost, costs_of, its_own, jit_compiled, weights_device


def time_work(bench: Bench, benchmark: Any, work_name: str) -> Work | None:
    """The cell's rounds of `work_name`: samples/s from the median round, judged against a compared
    run; in an A/B run, B against A. Returns the work where it ran here (None: in a worker)."""
    if bench.on_other_backend():
        other_backend.time_in_worker(bench, benchmark, work_name)
        return None
    work = bench.session.built.work(work_name, bench.cell)
    bench.record(backend_here(), precision_used(bench.cell), Throughput(jit_compile=jit_compiled(work)))
    placed_as_asked(bench, weights_device(work))
    # No warm-up round: the work comes warm from its build (calibrating, or a round, ran it).
    median = bench.time_rounds(
        benchmark, work.run_round, work.samples_per_round, work_name, bench.preset.rounds, warmup_rounds=0
    )
    rates = throughput(
        work.samples_per_round,
        median,
        work.flops_per_sample(),
        batch_size=bench.cell.batch_size,
        steps_per_round=work.steps,
        compile_seconds=work.compile_seconds,
        **call_cost(work),
    )
    record_rates(bench, rates, costs_of(work))
    bench.record(its_own(work))  # the work's own numbers, as a backend's worker returns them
    ab_cell.against_b(bench, work_name, work.steps)
    return work
