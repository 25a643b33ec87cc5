"""Cells whose work runs in fresh processes (jobs.py runs them): one model
across replicas of one process (tf.distribute's MirroredStrategy, or Keras' DataParallel on JAX)
and across worker processes (tf.distribute), and one intra-op thread against all."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND
from accelbench.axes.devices import DEVICE_TYPES, REFERENCE_DEVICE, type_of
from accelbench.benches.base import Bench, Benchmark
from accelbench.grid.cells import Cell, Grid, device_absent, device_unsupported, params, placeholder
from accelbench.judge import comparison, held_to
from accelbench.kinds.distributed import jobs as distributed
from accelbench.kinds.distributed.result import Distributed, Threads
from accelbench.kinds.distributed.settings import DistributedSettings
from accelbench.measured import BackendUsed, Place, Workers
from accelbench.results.summary import Section
from accelbench.work import measure


@dataclass(frozen=True)
class DistributedCell:
    """One model trained across several replicas of one process, or several worker processes:
    `cpu-bs256-mlp-2workers`. batch_size is per replica."""

    device: str
    batch_size: int
    model: str
    count: int
    unit: str  # replicas or workers

    @property
    def id(self) -> str:
        return f"{self.device}-bs{self.batch_size}-{self.model}-{self.count}{self.unit}"

    def fields(self) -> dict:
        keys = Place.keys
        return {
            keys.device: self.device,
            keys.model: self.model,
            keys.batch_size: self.batch_size,
            keys.column: f"bs{self.batch_size} x {self.count} {self.unit}",
        }


class ProcessBench(Bench):
    """A cell whose work runs in fresh processes (distributed.py owns them): TensorFlow fixes
    its threads, devices and cluster when it starts."""

    def job(
        self, mode: str, replicas: int = 1, threads: int | None = None, backend: str = "tensorflow", **fields: Any
    ) -> distributed.Job:
        """The cell's job, the run's fields as every worker gets them (RunConfig.worker_fields);
        `threads`: intra-op threads other than the run's; `backend`: whose job runs it."""
        job = distributed.Job(
            mode=mode,
            backend=backend,
            model=self.cell.model,
            per_replica_batch=self.cell.batch_size,
            replicas=replicas,
            run=self.session.run.worker_fields(),
            device=type_of(self.cell.device),
            **fields,
        )
        return job if threads is None else job.with_threads(threads)

    def run_job(self, job: distributed.Job) -> distributed.Result:
        return distributed.run_job(job, PROCESS_TIMEOUT_S, self.watch)

    def watch(self, pids: list[int]) -> None:
        self.record(Workers(process_ids=[*(Workers.of(self.extra_info).process_ids or ()), *pids]))  # none is left


SETTINGS = "distributed"  # its settings' name in run.presets.KIND_SETTINGS (settings.py)
THREADS = {"A": 1, "B": 0}  # a threads cell's sides: one intra-op thread, and TensorFlow's default (all)
PROCESS_TIMEOUT_S = 90.0  # per job: TensorFlow's start in each process, a gRPC cluster, a few rounds


class ThreadsBench(ProcessBench):
    """The slides' 1 vCPU against 8: the cell's model trained with 1 intra-op thread and with
    TensorFlow's default (all cores), each side in fresh processes, interleaved A B B A; each
    process times its own rounds."""

    cell: Cell

    def throughputs(self) -> tuple[list[float], list[float]]:
        one, every = [], []
        processes = settings_of(self.session.grid).thread_processes
        for threads in (THREADS[side] for pair in comparison.order(processes) for side in pair):
            self.say(f"training with {threads or 'all'} intra-op thread(s)")
            result = self.run_job(self.job("single", check_steps=0, threads=threads))
            (one if threads == 1 else every).append(result.fastest_samples_per_s)
        return one, every

    def __call__(self, benchmark: Any) -> None:
        one, every = benchmark.pedantic(self.throughputs, rounds=1, iterations=1)
        speedup = measure.best_ratio(one, every)
        cores = os.cpu_count() or 1
        self.record(
            Threads(
                device=self.placement().description,
                batch_size=self.cell.batch_size,
                cores=cores,
                one_thread_samples_per_s=max(one),
                all_threads_samples_per_s=max(every),
                all_threads_speedup=speedup,
                parallel_efficiency=speedup / cores,
                pair_ratios=[round(r, 4) for r in measure.pair_ratios(one, every)],
            )
        )


class DistributedBench(ProcessBench):
    """One model trained across N replicas (one process) or N worker processes, against the
    same model on one device: the loss after the same steps from the same seed, and the
    scaling efficiency, throughput on N / (N x throughput on one) at the same per-replica batch.
    Each side runs in fresh processes (distributed.py owns them)."""

    cell: DistributedCell

    @property
    def backend(self) -> str:
        """Whose job trains the cell: the process backend's where it has one (the cells' rule
        skipped it where no installed backend has)."""
        return distributed.job_backend(self.cell.unit, PROCESS_BACKEND) or "tensorflow"

    def run_both(self) -> tuple[distributed.Result, distributed.Result]:
        reference_job = self.job("single", self.cell.count, backend=self.backend)
        reference = self.session.process_results.get(reference_job)
        if reference is None:  # replicas and workers of one model share the same reference
            self.say("training on one device (the reference)")
            reference = self.session.process_results[reference_job] = self.run_job(reference_job)
        self.say(f"training on {self.cell.count} {self.cell.unit}")
        return reference, self.run_job(self.job(self.cell.unit, self.cell.count, backend=self.backend))

    def __call__(self, benchmark: Any) -> None:
        reference, distributed_run = benchmark.pedantic(self.run_both, rounds=1, iterations=1)
        if distributed_run.replicas_in_sync != self.cell.count:  # another global batch: the losses do not compare
            pytest.fail(
                f"{self.name}: the strategy ran {distributed_run.replicas_in_sync} replicas in sync, not "
                f"{self.cell.count} ({', '.join(distributed_run.devices) or 'no devices listed'})",
                pytrace=False,
            )
        gap = max(abs(a - b) for a, b in zip(distributed_run.losses, reference.losses))
        one_device = reference.reference_samples_per_s
        self.record(BackendUsed(backend=self.backend, compiled_with=BACKENDS[self.backend].compiles))
        self.record(
            Distributed(
                **{self.cell.unit: self.cell.count},  # replicas or workers
                device=self.placement().description,
                per_replica_batch=self.cell.batch_size,
                global_batch=self.cell.batch_size * self.cell.count,
                replicas_in_sync=distributed_run.replicas_in_sync,
                replica_devices=distributed_run.devices,
                samples_per_s=distributed_run.samples_per_s,
                one_device_samples_per_s=one_device,
                scaling_efficiency=distributed_run.samples_per_s / (distributed_run.replicas_in_sync * one_device),
                losses=distributed_run.losses,
                reference_losses=reference.losses,
                loss_gap=gap,
                loss_tolerance=distributed.LOSS_TOLERANCE,
            )
        )
        held_to.within_gap(self.verdicts, self.name, "loss_gap", gap, distributed.LOSS_TOLERANCE)


# Its cells: what grid the kind runs over, and why a cell is skipped.
SPREAD_BATCH = 256  # per replica, at most: what one replica of the studies' MLPs trained at


def settings_of(grid: Grid) -> DistributedSettings:
    return grid.settings[SETTINGS]


def _distributed_cells(grid: Grid, unit: str, devices: Iterable[str]) -> list:
    replicas = settings_of(grid).replicas
    if not replicas:
        return placeholder(
            f"no-{unit}",
            f"the quick preset leaves the {unit} cells out (each starts fresh "
            f"TensorFlow processes: 20-40 s); run them with --preset full",
        )
    batch = max((b for b in grid.batch_sizes if b <= SPREAD_BATCH), default=min(grid.batch_sizes))
    cells = [DistributedCell(d, batch, m, replicas, unit) for d in devices for m in grid.trainable_models()]
    return params(grid, cells, (no_job_backend, device_absent, device_unsupported))


def no_job_backend(grid: Grid, cell: DistributedCell) -> str | None:
    """Replicas run on the process backend where it has a multi-device job (TensorFlow's
    MirroredStrategy, JAX's DataParallel), workers on tf.distribute only; else on TensorFlow
    where it is installed."""
    if distributed.job_backend(cell.unit, PROCESS_BACKEND) is not None:
        return None
    runs = " or ".join(backend for backend, modes in distributed.JOB_MODES.items() if cell.unit in modes)
    extras = " or ".join(
        f"'accelbench[{backend}]'" for backend, modes in distributed.JOB_MODES.items() if cell.unit in modes
    )
    return f"{cell.unit} cells run on {runs} ({PROCESS_BACKEND} has no {cell.unit} job): pip install {extras}"


def no_tensorflow(grid: Grid, cell: object) -> str | None:
    """These cells are tf.distribute jobs (job_main.py), TensorFlow's by nature, whichever
    backend runs the pytest process."""
    tensorflow = BACKENDS["tensorflow"]
    return None if tensorflow.installed() else f"tf.distribute's jobs: {tensorflow.missing_reason()}"


def multi_device_cells(grid: Grid) -> list:
    """N replicas in one process: N logical CPU devices (here), or N GPUs."""
    return _distributed_cells(grid, "replicas", [d for d in grid.devices if DEVICE_TYPES[type_of(d)].replicas])


def multi_worker_cells(grid: Grid) -> list:
    """N worker processes on this host, each a CPU worker of a MultiWorkerMirroredStrategy cluster."""
    return _distributed_cells(grid, "workers", [d for d in grid.devices if d == REFERENCE_DEVICE])


def threads_cells(grid: Grid) -> list:
    """1 intra-op thread against all of them, per model at its largest batch, on the CPU."""
    if not settings_of(grid).thread_processes:
        return placeholder(
            "no-threads",
            "the quick preset leaves the 1-thread-against-all cells out (each "
            "starts 4 TensorFlow processes); run them with --preset full",
        )
    cells = [Cell(REFERENCE_DEVICE, max(grid.batch_sizes_for(REFERENCE_DEVICE, m)), m) for m in grid.trainable_models()]
    return params(grid, cells, (no_tensorflow, device_absent, device_unsupported))


# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 60
# This module's benchmark kinds, by fixture name (benches/catalog.py registers them): each
# with its cells, its Bench, what it judges, its summary tables and its report's plots.
KINDS: dict[str, Benchmark] = {
    "threads_bench": Benchmark(
        threads_cells,
        ThreadsBench,
        "test_threads",
        file="test_training.py",
        about="One intra-op thread against all, in fresh processes (kinds/distributed/).",
        sections=(
            Section(
                "all intra-op threads against 1 (interleaved processes)",
                {"threads_bench": "{column}"},
                Threads.keys.all_threads_speedup,
                "times",
            ),
        ),
    ),
    "multi_device": Benchmark(
        multi_device_cells,
        DistributedBench,
        "test_multi_device",
        ("loss_gap",),
        file="test_distributed.py",
        file_doc="Beyond one device and one process: several replicas (tf.distribute, or Keras' DataParallel on "
        "JAX) and several workers (tf.distribute).",
        about="One model across replicas of one process against one device: tf.distribute's MirroredStrategy, or "
        "Keras' DataParallel on JAX (kinds/distributed/).",
    ),
    "multi_worker": Benchmark(
        multi_worker_cells,
        DistributedBench,
        "test_multi_worker",
        ("loss_gap",),
        file="test_distributed.py",
        about="tf.distribute across worker processes against one process (kinds/distributed/).",
        sections=(
            Section(
                "scaling efficiency: throughput on N / (N x on one device)",
                {"multi_device": "{column}", "multi_worker": "{column}"},
                Distributed.keys.scaling_efficiency,
                "plain",
            ),
            Section(
                "loss gap to one device after the same steps",
                {"multi_device": "{column}", "multi_worker": "{column}"},
                Distributed.keys.loss_gap,
                "small",
                ("loss_gap",),
            ),
        ),
    ),
}
