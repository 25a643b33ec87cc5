"""A cell on a Keras backend other than the pytest process's: built, warmed up and timed in that
backend's worker (KERAS_BACKEND set), each timed round paired with a round of the same cell on
the pytest process's backend. Training and inference cells time it this way; the latency cell
builds its work here too."""

from __future__ import annotations

import contextlib
import statistics
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND
from accelbench.axes.flops import Costs
from accelbench.benches.base import Bench
from accelbench.benches.context import placed_as_asked, precision_used, record_rates, throughput
from accelbench.judge import analysis, comparison
from accelbench.judge.verdicts import MEMRAY_REASON
from accelbench.measured import AgainstTensorflow, BackendUsed, Throughput, Timed, Workers
from accelbench.processes.protocol import Cellwork, Prepared
from accelbench.processes.workers import WorkerFailed
from accelbench.work import measure

# pytest-benchmark's unpaired warm-up rounds of a cell on another backend (its worker's first
# round after the build; the tensorflow partner is already warm)
BACKEND_WARMUP_ROUNDS = 1


@contextlib.contextmanager
def built_in_worker(bench: Bench, work_name: str, steps: int | None = None) -> Iterator[tuple[Prepared, Callable]]:
    """A cell on another Keras backend, built and warmed up in that backend's worker
    (KERAS_BACKEND set; steps None: calibrated there): what it built, and a call of a
    cellwork function on it. A worker that failed fails the cell in one line; the cell's
    work is dropped afterwards."""
    backend, workers = BACKENDS[bench.cell.backend], bench.session.backends
    spec = workers.spec(work_name, bench.cell)
    key = spec["key"]

    def call(function: Cellwork, **kwargs: Any) -> Any:
        return workers.call(backend.name, function, **kwargs)

    try:
        bench.say(f"building in the {backend.name} worker")
        built = call(Cellwork.PREPARE, spec=spec, steps=steps)
        versions = call(Cellwork.DESCRIBE).versions
        bench.record(
            BackendUsed(
                backend=backend.name,
                compiled_with=backend.compiles,
                backend_versions={name: versions[name] for name in backend.packages if name in versions},
            ),
            Throughput(
                jit_compile=built.jit_compile,
                batch_size=bench.cell.batch_size,
                steps_per_round=built.steps,
                compile_seconds=built.compile_seconds,
                call_seconds=built.call_seconds,
                call_share=built.call_share,
            ),
            Timed(device=built.device),
            Workers(workers.pool.pids),
        )
        bench.record(precision_used(bench.cell))
        placed_as_asked(bench, built.weights_on)
        yield built, lambda function: call(function, key=key)
    except WorkerFailed as error:
        pytest.fail(f"{bench.name}: {error}", pytrace=False)
    finally:
        if workers.pool.get(backend.environment()).process is not None:
            with contextlib.suppress(WorkerFailed):
                call(Cellwork.FORGET, key=key)


def time_in_worker(bench: Bench, benchmark: Any, work_name: str) -> None:
    """Rounds of a cell on another backend, timed through pytest-benchmark as calls to its
    worker, each paired with a round of the same cell on tensorflow (_round_for_round).
    The worker's own clock is kept beside pytest-benchmark's: the difference is the pipe's cost."""
    inside: list[float] = []
    with built_in_worker(bench, work_name) as (built, call):
        reference = _reference(bench, work_name)
        partner = _round_for_round(bench, reference) if reference else None
        median = bench.time_rounds(
            benchmark,
            lambda: inside.append(call(Cellwork.ONE_ROUND)),
            built.samples_per_round,
            work_name,
            bench.preset.rounds,
            BACKEND_WARMUP_ROUNDS,
            setup=partner.setup if partner else None,
            teardown=partner.teardown if partner else None,
        )
        bench.record(call(Cellwork.ITS_OWN))  # the work's own numbers, measured there
    inside = inside[BACKEND_WARMUP_ROUNDS : BACKEND_WARMUP_ROUNDS + bench.preset.rounds]
    rates = throughput(
        built.samples_per_round,
        median,
        built.flops_per_sample,
        worker_round_seconds=inside,
        pipe_seconds=median - statistics.median(inside) if median else None,
    )
    record_rates(bench, rates, Costs(built.executed_flops_per_sample, built.bytes_per_sample))
    if partner and len(partner.seconds) == len(inside) > 1:
        _against_reference(
            bench,
            [s / reference.samples_per_round for s in partner.seconds],
            [s / built.samples_per_round for s in inside],
        )
        bench.record(
            AgainstTensorflow(tensorflow_round_seconds=partner.seconds, tensorflow_steps_per_round=reference.steps)
        )


def _reference(bench: Bench, work_name: str) -> Any:
    """The same cell's work on tensorflow, in this process (built once, as its own cell timed
    it); None under pytest-memray, which would slow only this process's rounds."""
    if bench.session.run.memray_tracking:
        bench.record(AgainstTensorflow(time_per_sample_over_tensorflow=f"not measured: {MEMRAY_REASON}"))
        return None
    bench.say(f"timed round for round with {PROCESS_BACKEND}'s work of the same cell, in this process")
    return bench.session.built.reference_work(work_name, bench.cell)


def _round_for_round(bench: Bench, reference: Any) -> measure.Partner:
    """The reference's rounds around this backend's timed rounds, in seeded A B / B A order,
    as an A/B run interleaves A and B."""
    orders = comparison.order(bench.preset.rounds, zlib.crc32(bench.name.encode()))
    return measure.Partner(lambda: measure.seconds(reference.run_round), orders, BACKEND_WARMUP_ROUNDS)


def _against_reference(bench: Bench, tensorflow_per_sample: list[float], here_per_sample: list[float]) -> None:
    """This backend's time per sample over tensorflow's, the median of the pairs' ratios with
    its 95% interval. Per sample: each backend runs its own calibrated steps a round, the
    round length the same. Reported, not gated: backends are compared, not regressed."""
    ratios = comparison.ratios(tensorflow_per_sample, here_per_sample)
    bench.record(
        AgainstTensorflow(
            time_per_sample_over_tensorflow=statistics.median(ratios),
            time_per_sample_over_tensorflow_ci95=analysis.median_interval_or_none(ratios),  # None: too few pairs
            time_per_sample_over_tensorflow_pairs=len(ratios),
        )
    )
