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

This module is the parent side: run_job and WorkerGroup own every process they start: a deadline, one retry on
a transient gRPC failure, and a kill of the whole group at the end. They are one-shot
processes (TensorFlow fixes its cluster at start), started and killed through workers.py like
every process of the run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from accelbench.axes.devices import is_accelerator
from accelbench.kinds.distributed.job import Job, Result
from accelbench.processes import workers

LOSS_TOLERANCE = 1e-5  # the loss of W workers against one process's, after the same steps
# backend -> the module whose main runs one process of a job on it: tf.distribute's strategies
# (single, replicas, workers), or Keras' DataParallel on JAX (single, replicas). PyTorch's Keras
# backend has no multi-device path (keras.distribution runs on JAX only).
JOB_MAINS = {"tensorflow": "accelbench.kinds.distributed.job_main", "jax": "accelbench.kinds.distributed.jax_job_main"}
JOB_MODES = {"tensorflow": ("single", "replicas", "workers"), "jax": ("single", "replicas")}
TRANSIENT = (
    "UNAVAILABLE",
    "Connection reset",
    "Socket closed",
    "failed to connect",
    "DEADLINE_EXCEEDED",
    "Address already in use",
)

__all__ = [
    "JOB_MAINS",
    "JOB_MODES",
    "LOSS_TOLERANCE",
    "Job",
    "JobFailed",
    "Result",
    "WorkerGroup",
    "free_ports",
    "job_backend",
    "run_job",
    "tf_config",
]


def job_backend(mode: str, process_backend: str) -> str | None:
    """The backend that runs a job of `mode`: the process backend where it has such a job, else
    TensorFlow's tf.distribute where TensorFlow is installed; None where neither can."""
    from accelbench.axes.backends import BACKENDS

    for backend in dict.fromkeys((process_backend, "tensorflow")):
        if mode in JOB_MODES.get(backend, ()) and BACKENDS[backend].installed():
            return backend
    return None


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
    return json.dumps(
        {"cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]}, "task": {"type": "worker", "index": index}}
    )


class WorkerGroup:
    """Processes started together and ended together: every one is killed (with its process
    group) when the group ends, whether they finished, failed or ran out of time."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.processes: list[subprocess.Popen] = []

    def start(self, job: Job, index: int, env: dict[str, str]) -> Path:
        job_path, result_path = self.folder / f"job{index}.json", self.folder / f"result{index}.json"
        job_path.write_text(json.dumps(asdict(job)))
        self.processes.append(
            workers.spawn(
                [sys.executable, "-m", JOB_MAINS[job.backend], str(job_path), str(result_path)],
                {**env, "KERAS_BACKEND": job.backend},  # the job's backend, whatever the process backend
                self.folder / f"log{index}.txt",
            )
        )
        return result_path

    def wait(self, deadline: float) -> None:
        for index, process in enumerate(self.processes):
            try:
                code = process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise JobFailed(f"worker {index} ran past its deadline; {self._tail(index)}") from None
            if code != 0:
                tail = self._tail(index)
                raise JobFailed(
                    f"worker {index} exited with status {code}: {tail}",
                    transient=any(word in tail for word in TRANSIENT),
                )

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
                if not is_accelerator(job.device):
                    env["CUDA_VISIBLE_DEVICES"] = "-1"  # a CPU job: a GPU host's cards stay out of it
                results.append(group.start(job.with_threads(job.run.intra_op_threads or threads), index, env))
            if on_start:
                on_start(group.pids)
            group.wait(time.monotonic() + timeout_s)
            return Result(**json.loads(results[0].read_text()))  # the chief's (worker 0's) view
        finally:
            group.end()
