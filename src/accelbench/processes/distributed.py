"""Training beyond one device and one process, with tf.distribute.

Three kinds of job, each run in a process of its own, because TensorFlow fixes its devices
and its cluster when its runtime starts (MultiWorkerMirroredStrategy must be made before any
other TensorFlow op; logical CPU devices must be configured before any is used):

- single:   one device, the reference: the loss of the first steps at the global batch, and
            the throughput at the per-replica batch;
- replicas: MirroredStrategy over N devices of one process (N logical CPU devices here,
            the GPUs on a GPU host);
- workers:  MultiWorkerMirroredStrategy over W processes, one TF_CONFIG each (local
            processes on free loopback ports here, the user's cluster elsewhere).

Every job trains with the same custom loop (Keras 3's fit() does not run under
MultiWorkerMirroredStrategy: keras-team/keras#20585), from the same seed, on the same global
batches: step i's global batch is rows [i·G, (i+1)·G) of the training set, replica r of N
taking its r-th slice. So after k steps the loss of every job must equal the reference's up to
floating-point summation order.

The parent side (run_job, WorkerGroup) owns every process it starts: a deadline, one retry on
a transient gRPC failure, and a kill of the whole group at the end. They are one-shot
processes (TensorFlow fixes its cluster at start), started and killed through workers.py like
every process of the run.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from accelbench.processes import workers

LOSS_TOLERANCE = 1e-5  # the loss of W workers against one process's, after the same steps
TRANSIENT = ("UNAVAILABLE", "Connection reset", "Socket closed", "failed to connect", "DEADLINE_EXCEEDED",
             "Address already in use")


@dataclass(frozen=True)
class Job:
    """What one process of a distributed cell does; passed to it as JSON."""

    mode: str  # single, replicas, workers
    model: str
    dataset: str
    data_dir: str | None
    per_replica_batch: int
    replicas: int  # devices (replicas) or processes (workers); 1 for single
    check_steps: int = 5  # steps whose losses are compared
    rounds: int = 5
    steps_per_round: int = 10
    max_train_samples: int | None = None
    seed: int = 0
    deep_layers: int = 5
    device: str = "cpu"  # replicas: cpu (logical CPU devices) or gpu (the GPUs)
    threads: int = 0  # intra-op threads; 0: TensorFlow's choice
    use_fit: bool = False  # train with Keras fit() instead of the custom loop (the xfail check)

    @property
    def global_batch(self) -> int:
        return self.per_replica_batch * self.replicas


@dataclass
class Result:
    losses: list[float]  # the reduced loss of each of the first check_steps steps
    round_seconds: list[float]
    samples_per_round: int
    replicas_in_sync: int
    devices: list[str] = field(default_factory=list)
    reference_round_seconds: list[float] = field(default_factory=list)  # single: at the per-replica batch
    reference_samples_per_round: int = 0

    @property
    def samples_per_s(self) -> float:
        return self.samples_per_round / statistics.median(self.round_seconds)

    @property
    def fastest_samples_per_s(self) -> float:
        """Of the best round: what A/B comparisons rank (noise only ever slows a round)."""
        return self.samples_per_round / min(self.round_seconds)

    @property
    def reference_samples_per_s(self) -> float:
        return self.reference_samples_per_round / statistics.median(self.reference_round_seconds)


# --- inside a job's process ------------------------------------------------------------------

def _strategy(job: Job, tf: Any) -> Any:
    if job.mode == "workers":
        return tf.distribute.MultiWorkerMirroredStrategy()  # first: before any other TF op
    if job.mode == "replicas":
        if job.device == "gpu":  # the first N GPUs, not every GPU the host has
            return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("GPU")][:job.replicas])
        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(job.replicas)])
        return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])
    return tf.distribute.get_strategy()  # the default: one device


def replicated(job: Job, strategy: Any) -> Job:
    """The job as its strategy runs it: the replicas the strategy has in sync, not the count
    asked for (a host with fewer GPUs, a cluster of another size). The global batch, which
    scales the loss, and the throughput's share per replica follow from it."""
    if job.mode == "single":
        return job
    return replace(job, replicas=int(strategy.num_replicas_in_sync))


def _per_replica_batches(x: Any, y: Any, batch: int, tf: Any) -> Any:
    """Contiguous batches of the training set in order, forever: global batch i is the
    replicas' batches i·N .. i·N+N-1."""
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch, drop_remainder=True)


def _distributed_input(strategy: Any, x: Any, y: Any, batch: int, tf: Any) -> Any:
    def input_fn(context):
        batches = _per_replica_batches(x, y, batch, tf)
        # Worker w of W takes every W-th batch, starting at its own: slice w of each global batch.
        return batches.shard(context.num_input_pipelines, context.input_pipeline_id)

    options = tf.distribute.InputOptions(experimental_replication_mode=tf.distribute.InputReplicationMode.PER_WORKER)
    return iter(strategy.distribute_datasets_from_function(input_fn, options))


def _train(job: Job, strategy: Any, x: Any, y: Any, batch: int, global_batch: int, rounds: int,
           check_steps: int) -> tuple[list[float], list[float]]:
    """(losses of the first check_steps steps, seconds of each timed round) of a model freshly
    built from the job's seed."""
    import tensorflow as tf

    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.build import build_model
    from accelbench.work.training import custom_step

    model = build_model(MODELS[job.model], x.shape[1:], ModelOptions(deep_layers=job.deep_layers, seed=job.seed),
                        strategy.scope(), train=True)
    optimizer = model.optimizer
    replica_step = custom_step(model, optimizer, global_batch)
    iterator = _distributed_input(strategy, x, y, batch, tf)

    @tf.function
    def step(iterator):
        return strategy.reduce("SUM", strategy.run(replica_step, next(iterator)), axis=None)

    @tf.function
    def loop(iterator, steps):
        loss = tf.constant(0.0)
        for _ in tf.range(steps):
            loss = step(iterator)
        return loss

    losses = [float(step(iterator)) for _ in range(check_steps)]
    steps = tf.constant(job.steps_per_round)
    float(loop(iterator, steps))  # trace the timed loop outside the clock
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        float(loop(iterator, steps))  # float() waits for every replica
        seconds.append(time.perf_counter() - start)
    return losses, seconds


def _fit(job: Job, strategy: Any, x: Any, y: Any, tf: Any) -> None:
    """Keras fit() under the job's strategy: what keras-team/keras#20585 says fails for workers."""
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.build import build_model

    model = build_model(MODELS[job.model], x.shape[1:], ModelOptions(deep_layers=job.deep_layers, seed=job.seed),
                        strategy.scope(), train=True)
    data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(job.global_batch)
    model.fit(data, epochs=1, steps_per_epoch=job.check_steps, verbose=0)


def _devices(strategy: Any) -> list[str]:
    try:
        return list(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy: one device, whichever TensorFlow placed it on
        return []


def run_in_process(job: Job) -> Result:
    """The job's work, in this (fresh) process."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    if job.threads:
        tf.config.threading.set_intra_op_parallelism_threads(job.threads)
    strategy = _strategy(job, tf)
    job = replicated(job, strategy)
    from accelbench.axes import data

    dataset = data.load(job.dataset, Path(job.data_dir) if job.data_dir else None).head(job.max_train_samples)
    x, y = dataset.x_train, dataset.y_train
    if job.use_fit:
        _fit(job, strategy, x, y, tf)
        return Result([], [], 0, strategy.num_replicas_in_sync)
    batch = job.global_batch if job.mode == "single" else job.per_replica_batch  # what one replica takes
    losses, seconds = _train(job, strategy, x, y, batch, job.global_batch, job.rounds, job.check_steps)
    result = Result(losses, seconds, job.global_batch * job.steps_per_round, strategy.num_replicas_in_sync,
                    devices=_devices(strategy))
    if job.mode == "single" and job.replicas > 1:  # the same device at the per-replica batch
        _, reference = _train(job, strategy, x, y, job.per_replica_batch, job.per_replica_batch, job.rounds, 0)
        result.reference_round_seconds = reference
        result.reference_samples_per_round = job.per_replica_batch * job.steps_per_round
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m accelbench.processes.distributed JOB_JSON RESULT_JSON`: run one job, write its result."""
    job_path, result_path = (argv if argv is not None else sys.argv[1:])
    job = Job(**json.loads(Path(job_path).read_text()))
    result = run_in_process(job)
    Path(result_path).write_text(json.dumps(asdict(result)))
    return 0


# --- the parent: starting, bounding and ending the processes ----------------------------------

class JobFailed(RuntimeError):
    """A job's process failed or ran out of time; the message ends with its stderr's tail."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


def free_ports(count: int) -> list[int]:
    """Ports free on the loopback now (the OS picks them; they are released for the workers)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tf_config(ports: Sequence[int], index: int) -> str:
    """The TF_CONFIG of worker `index` of a loopback cluster."""
    return json.dumps({"cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
                       "task": {"type": "worker", "index": index}})


class WorkerGroup:
    """Processes started together and ended together: every one is killed (with its process
    group) when the group ends, whether they finished, failed or ran out of time."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.processes: list[subprocess.Popen] = []

    def start(self, job: Job, index: int, env: dict[str, str]) -> Path:
        job_path, result_path = self.folder / f"job{index}.json", self.folder / f"result{index}.json"
        job_path.write_text(json.dumps(asdict(job)))
        self.processes.append(workers.spawn([sys.executable, "-m", "accelbench.processes.distributed", str(job_path),
                                             str(result_path)], env, self.folder / f"log{index}.txt"))
        return result_path

    def wait(self, deadline: float) -> None:
        for index, process in enumerate(self.processes):
            try:
                code = process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise JobFailed(f"worker {index} ran past its deadline; {self._tail(index)}") from None
            if code != 0:
                tail = self._tail(index)
                raise JobFailed(f"worker {index} exited with status {code}: {tail}",
                                transient=any(word in tail for word in TRANSIENT))

    def _tail(self, index: int) -> str:
        return workers.tail(self.folder / f"log{index}.txt")

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    def end(self) -> None:
        for process in self.processes:
            workers.kill(process)


def run_job(job: Job, timeout_s: float, on_start=None) -> Result:
    """Run a job in fresh processes (W of them for workers), retrying once with new ports
    after a transient gRPC failure. on_start(pids) lets a caller watch the processes."""
    for attempt in (1, 2):
        try:
            return _run_once(job, timeout_s, on_start)
        except JobFailed as error:
            if not error.transient or attempt == 2:
                raise
    raise AssertionError("unreachable")


def _run_once(job: Job, timeout_s: float, on_start) -> Result:
    processes = job.replicas if job.mode == "workers" else 1
    ports = free_ports(processes) if job.mode == "workers" else []
    threads = max(1, (os.cpu_count() or 1) // processes) if job.mode == "workers" else 0
    with tempfile.TemporaryDirectory(prefix="accelbench-dist-") as folder:
        group = WorkerGroup(Path(folder))
        try:
            results = []
            for index in range(processes):
                env = {"TF_CONFIG": tf_config(ports, index)} if job.mode == "workers" else {}
                if job.device == "cpu":
                    env["CUDA_VISIBLE_DEVICES"] = "-1"  # a CPU job: a GPU host's cards stay out of it
                results.append(group.start(replace(job, threads=job.threads or threads), index, env))
            if on_start:
                on_start(group.pids)
            group.wait(time.monotonic() + timeout_s)
            return Result(**json.loads(results[0].read_text()))  # the chief's (worker 0's) view
        finally:
            group.end()


if __name__ == "__main__":
    raise SystemExit(main())
