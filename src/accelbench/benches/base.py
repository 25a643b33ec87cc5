"""Bench: what every benchmark kind shares: time rounds through pytest-benchmark, put context
into extra_info, hand every judged number to the run's verdicts; a cell in an A/B run, in its
workers. A cell on another Keras backend is other_backend.py's."""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from accelbench.axes.backends import BACKENDS, FLOAT32_IEEE, PROCESS_BACKEND
from accelbench.axes.devices import is_accelerator, kind_of
from accelbench.axes.models import MODELS, UNKNOWN_FLOPS
from accelbench.axes.precisions import PRECISIONS, REFERENCE_PRECISION
from accelbench.grid.cells import Grid
from accelbench.judge import fingerprint
from accelbench.judge.rules import AB_COMPILE_RULE
from accelbench.judge.verdicts import AB_COMPILE, AB_PEAK, AB_TIME, MEMRAY_REASON
from accelbench.measured import AgainstB, BackendUsed, Part, PrecisionUsed, Throughput, Timed, Workers
from accelbench.processes.protocol import Cellwork
from accelbench.processes.workers import WorkerFailed
from accelbench.run.session import Session
from accelbench.work import traces

TRACED_KINDS = {"train": "train", "predict": "inference"}  # a trace's phase -> the kind of cell work it traces
# pytest-benchmark's unpaired warm-up rounds of a cell on another backend (its worker's first
# round after the build; the tensorflow partner is already warm)
BACKEND_WARMUP_ROUNDS = 1

AB_METRICS = (AB_TIME, AB_PEAK, AB_COMPILE)  # what an A/B run judges of a timed cell


def throughput(samples_per_round: int, median_round: float | None, flops_per_sample: float | None, **measured: Any):
    """Samples/s from the median round (none under --benchmark-disable), and FLOP/s where the
    model's work is counted; "unknown" where it is not (models.forward_flops_per_sample), never
    a silent 0."""
    if not median_round:
        return Throughput(**measured)
    samples_per_s = samples_per_round / median_round
    if flops_per_sample is None:
        return Throughput(samples_per_s=samples_per_s, flops_per_sample=UNKNOWN_FLOPS, **measured)
    return Throughput(
        samples_per_s=samples_per_s,
        flops_per_sample=flops_per_sample,
        achieved_flops=flops_per_sample * samples_per_s,
        **measured,
    )


@dataclass
class Bench:
    session: Session
    cell: Any
    name: str  # the test's name with its id: what results, baselines and verdicts are keyed by
    extra_info: dict[str, Any] = field(default_factory=dict)  # goes into the benchmark JSON (record)

    @property
    def preset(self):
        return self.session.run.preset

    @property
    def baseline_key(self) -> str:
        """What the cell's baselines are stored under: its name, but a cell named with its backend
        and precision (a run of several) that runs the default ones shares the plain cell's."""
        cell = self.cell
        if (
            getattr(cell, "backend", PROCESS_BACKEND) == PROCESS_BACKEND
            and getattr(cell, "precision", REFERENCE_PRECISION) == REFERENCE_PRECISION
            and any(getattr(cell, "tagged", ()))
        ):
            return self.name.replace(f"[{cell.id}]", f"[{dataclasses.replace(cell, tagged=(False, False)).id}]")
        return self.name

    @property
    def verdicts(self):
        return self.session.verdicts

    @property
    def gates(self):
        return self.session.gates

    def placement(self, device: str | None = None):
        return self.session.placement(device or self.cell.device)

    def say(self, text: str) -> None:
        """The run's one-line status: what this cell is measuring now."""
        self.session.progress(f"{self.name}: {text}")

    def setup(self, node: pytest.Item) -> None:
        """Work done when the fixture is made, before the test body (which pytest-memray may track)."""

    def record(self, *parts: Part) -> None:
        """The one place a cell's result goes into its extra_info: typed parts, each written
        under its fields' keys (accelbench.measured)."""
        for part in parts:
            self.extra_info.update(part.entries())

    def time_rounds(
        self,
        benchmark: Any,
        target: Callable[[], object],
        samples_per_round: int,
        work: str,
        rounds: int,
        warmup_rounds: int = 1,
        setup: Callable | None = None,
        teardown: Callable | None = None,
    ) -> float | None:
        """Time rounds of fixed work through pytest-benchmark and judge them against a compared
        run, per sample; returns the median round's seconds (None under --benchmark-disable)."""
        benchmark.pedantic(
            target, setup=setup, teardown=teardown, rounds=rounds, warmup_rounds=warmup_rounds, iterations=1
        )
        self.record(Timed(work=work, cell=self.cell.id, device=self.placement().description))
        stats = getattr(benchmark, "stats", None)
        if not stats:  # --benchmark-disable: nothing was timed
            return None
        per_sample = [seconds / samples_per_round for seconds in stats.stats.data]
        self.record(Timed(seconds_per_sample=per_sample))
        self.verdicts.timing(self.name, per_sample)
        return stats.stats.median

    def trace(self, phase: str, build_step: Callable[[], Callable[[], object]]) -> None:
        """With --trace-dir: profile a few steady-state steps of this cell's model once every
        cell has run. A trace left the next cell's timed rounds 1.4-1.75x slower when taken
        in place, so no timed round of the run follows one. Estimators have no TensorFlow
        steps to trace."""
        directory = self.session.run.trace_dir
        if directory is None or MODELS[self.cell.model].framework == "sklearn":
            return
        if self.on_other_backend():  # that backend's profiler, in its worker
            spec = self.session.cell_spec(TRACED_KINDS[phase], self.cell)
            take = lambda: self.session.backend_call(  # noqa: E731
                self.cell.backend, Cellwork.TRACE_STEPS, spec=spec, directory=str(directory), cell_name=self.name
            )
        else:
            take = lambda: traces.trace_steps(directory, self.name, phase, build_step(), self.say)  # noqa: E731
        self.session.deferred.append((f"step trace of {self.name}", lambda: self.record(take())))

    def against_b(self, kind: str, steps: int) -> None:
        """In an A/B run: this cell's rounds in worker A and worker B, interleaved, judged B
        against A. A worker that crashed or hung fails the cell with one line; the run goes on."""
        ab_run = self.session.ab_run
        if ab_run is None:
            return
        if self.session.run.memray_tracking:
            self.verdicts.skipped(self.name, AB_METRICS, MEMRAY_REASON)
            return
        plan = ab_run.plan(*self.preset.ab_pairs)
        try:
            rounds = ab_run.compare(kind, self.cell, plan, self.say, steps)  # the steps this process calibrated
        except WorkerFailed as error:
            self.verdicts.failed(self.name, AB_TIME, f"{self.name}: A/B: {error}")
            return
        finally:
            self.record(Workers(ab_run.workers.pids))  # a test checks none outlives the run
        found, environment_b = rounds.verdict, ab_run.setup.b.describe()
        a_round, b_round = statistics.median(rounds.a_seconds), statistics.median(rounds.b_seconds)
        self.verdicts.ab(self.name, AB_TIME, found, a_round, b_round, plan.min_effect, environment_b)
        self.verdicts.ab_single(self.name, AB_PEAK, rounds.a_peak, rounds.b_peak, self.gates["peak_memory_bytes"].rule)
        try:
            a_compile, b_compile = self.compile_seconds(ab_run, kind, steps, rounds)
        except WorkerFailed as error:
            self.verdicts.failed(self.name, AB_COMPILE, f"{self.name}: A/B compile measured again: {error}")
            a_compile, b_compile = rounds.a_build.compile_seconds, rounds.b_build.compile_seconds
        else:
            self.verdicts.ab_single(self.name, AB_COMPILE, a_compile, b_compile, AB_COMPILE_RULE)
        self.record(
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

    def compile_seconds(self, ab_run: Any, kind: str, steps: int, rounds: Any) -> tuple[float, float]:
        """A's and B's compile seconds, from the builds made at once; where B looked slower by the
        rule, each side's fastest of that and one more build made alone (a fail must repeat: on
        a loaded machine two compiles at once slowed one side 2.2x in an A/A run)."""
        a_compile, b_compile = rounds.a_build.compile_seconds, rounds.b_build.compile_seconds
        if AB_COMPILE_RULE.holds(b_compile, a_compile):
            return a_compile, b_compile
        self.say("A/B: B compiled slower: measuring both compiles again, one at a time")
        again = ab_run.compile_again(kind, self.cell, steps)
        self.record(
            AgainstB(
                ab_compile_seconds_at_once=[a_compile, b_compile], ab_compile_seconds_alone=[again["A"], again["B"]]
            )
        )
        return min(a_compile, again["A"]), min(b_compile, again["B"])

    def time_steady_state(self, benchmark: Any, work: Any, work_kind: str, flops_per_sample: float | None) -> None:
        """Rounds of a trainer or predictor: samples/s from the median round. No warm-up round:
        the work comes warm from its build (calibrating, or a round, ran it)."""
        median = self.time_rounds(
            benchmark, work.run_round, work.samples_per_round, work_kind, self.preset.rounds, warmup_rounds=0
        )
        self.record(
            throughput(
                work.samples_per_round,
                median,
                flops_per_sample,
                batch_size=self.cell.batch_size,
                steps_per_round=work.steps,
                compile_seconds=work.compile_seconds,
            )
        )

    def process_backend_info(self) -> None:
        """The pytest process's own backend, recorded as a worker's is."""
        backend = BACKENDS[PROCESS_BACKEND]
        self.record(
            BackendUsed(
                backend=backend.name,
                backend_versions=fingerprint.versions(backend.packages),
                compiled_with=backend.compiles,
            )
        )
        self.precision_info()

    def precision_info(self) -> None:
        """The cell's dtype policy, and on a CPU whether it computes natively in it, and why not."""
        precision = PRECISIONS[self.cell.precision]
        arithmetic, note = None, None
        if not is_accelerator(kind_of(self.cell.device)):
            arithmetic, note = precision.cpu_arithmetic(
                fingerprint.cpu_flags(), os.environ, getattr(self.cell, "backend", PROCESS_BACKEND)
            )
        self.record(
            PrecisionUsed(
                precision=precision.name,
                precision_arithmetic=arithmetic,
                precision_note=note,
                float32_arithmetic=FLOAT32_IEEE,
            )
        )

    def on_other_backend(self) -> bool:
        return getattr(self.cell, "backend", PROCESS_BACKEND) != PROCESS_BACKEND


# When a kind's cells run within the session (plugin/hooks.py sorts by it): the harness's own
# overhead first, on a quiet machine; the speedups last, as they take the best round each
# trainer showed in the run.
FIRST, IN_TURN, LAST = 0, 1, 2


@dataclass(frozen=True)
class Benchmark:
    """A benchmark kind, registered under its fixture's name: the cells it is parameterized over,
    what it runs on each, the metrics it judges (a skipped cell gets a skipped verdict for each),
    and where its test lives. The fixture, the scaffold's test file and the run's order are made
    from this."""

    cells: Callable[[Grid], list]
    bench: type[Bench]
    test: str  # the test function that asks for this fixture (scaffold.py writes it)
    judges: tuple[str, ...] = ()
    ab: bool = False  # judged B against A in an A/B run
    timed: bool = True  # its test hands pytest-benchmark's `benchmark` fixture over (memory cells: not timed)
    file: str = "test_benchmarks.py"  # the file under benchmarks/ its test lives in
    about: str = ""  # what it measures, in a line: its fixture's docstring (pytest --fixtures)
    order: int = IN_TURN  # FIRST, IN_TURN or LAST
