"""`python -m accelbench.kinds.distributed.jax_job_main JOB_JSON RESULT_JSON`: the child half of a JAX
multi-device job (jobs.py starts it, as it starts tf.distribute's job_main): one process
of a single or replicas job, its Result written back as JSON.

Replicas are Keras 3's own data parallelism, `keras.distribution.DataParallel` over N devices of
one process (N logical CPU devices here, `jax_num_cpu_devices`, set before JAX starts; the first
N GPUs on a GPU host): the variables replicated, each global batch sharded over the devices, and
the step compiled once by XLA (GSPMD) for all of them. Keras' fit() and train_on_batch() run
under it unchanged, so the job trains as a user's model would. A fresh process: JAX's device
count is fixed when its backend starts.

As in job_main: the same seed and the same global batches on one device and on N, the first
steps with plain SGD (job_main.PARITY_LEARNING_RATE says why), so after k steps the loss of N
devices must equal one device's up to summation order; JAX's random bits do not depend on how an
array is sharded (jax_threefry_partitionable), so a model with dropout is held to it too.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from accelbench.kinds.distributed.job import Job, Result

PARITY_LEARNING_RATE = 0.01  # as job_main's: plain SGD, whose update is linear in the gradient


def _devices(jax: Any, job: Job) -> list[Any]:
    """The devices the job trains on: one for single, the first N of its kind for replicas."""
    devices = list(jax.devices(job.device))
    return devices[: job.replicas] if job.mode == "replicas" else devices[:1]


def _rows(array: Any, start: int, count: int) -> Any:
    """Rows [start, start + count) of the training set, wrapping round its end."""
    import numpy as np

    return np.take(array, np.arange(start, start + count) % len(array), axis=0)


def _model(job: Job, dataset: Any) -> Any:
    import contextlib

    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.build import build_model

    return build_model(
        MODELS[job.model],
        dataset.input_shape,
        ModelOptions(deep_layers=job.run.deep_layers, seed=job.run.seed),
        contextlib.nullcontext(),  # where the variables go is the distribution's (or JAX's default device)
        train=True,
        outputs=dataset.outputs,
        quality=dataset.quality,
        input_dtype=str(dataset.x_train.dtype),
    )


def _losses(job: Job, dataset: Any, global_batch: int) -> list[float]:
    """The loss of each of the first check_steps global batches, each its own step's."""
    import keras

    model = _model(job, dataset)
    model.compile(optimizer=keras.optimizers.SGD(PARITY_LEARNING_RATE), loss=model.loss)
    losses = []
    for step in range(job.check_steps):
        model.reset_metrics()  # the loss logged is this batch's, not a mean over the steps so far
        x, y = (_rows(a, step * global_batch, global_batch) for a in (dataset.x_train, dataset.y_train))
        losses.append(float(model.train_on_batch(x, y)))
    return losses


def _round_seconds(job: Job, dataset: Any, batch: int) -> list[float]:
    """Seconds of each timed round: one fit() of steps_per_round batches, after one untimed
    round that compiles the step."""
    model = _model(job, dataset)
    rows = batch * job.steps_per_round
    x, y = _rows(dataset.x_train, 0, rows), _rows(dataset.y_train, 0, rows)

    def one_round() -> None:
        history = model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
        float(history.history["loss"][-1])  # fetched: the devices are done

    one_round()
    seconds = []
    for _ in range(job.rounds):
        start = time.perf_counter()
        one_round()
        seconds.append(time.perf_counter() - start)
    return seconds


def run_in_process(job: Job) -> Result:
    """The job's work, in this (fresh) process: JAX not yet started, nor the user's modules
    imported (they may use a device)."""
    from accelbench import user_modules
    from accelbench.axes.backends.jax import start

    jax = start()
    if job.mode == "replicas" and job.device == "cpu":
        jax.config.update("jax_num_cpu_devices", job.replicas)  # before JAX's CPU backend starts
    user_modules.import_modules(job.run.modules, job.run.module_roots)  # the user's models
    import keras

    from accelbench.axes import data

    devices = _devices(jax, job)
    if job.mode == "replicas":
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
    replicas = len(devices) if job.mode == "replicas" else 1  # the devices there are, not the count asked for
    # a single job is the reference of a job of job.replicas: it trains at that global batch
    global_batch = job.per_replica_batch * (replicas if job.mode == "replicas" else job.replicas)
    dataset = data.load(job.run.dataset_of(job.model), Path(job.run.data_dir) if job.run.data_dir else None).head(
        job.run.max_train_samples
    )
    result = Result(
        _losses(job, dataset, global_batch),
        _round_seconds(job, dataset, global_batch),
        global_batch * job.steps_per_round,
        replicas,
        devices=[str(device) for device in devices] if job.mode == "replicas" else [],
    )
    if job.mode == "single" and job.replicas > 1:  # the same device at the per-replica batch
        result.reference_round_seconds = _round_seconds(job, dataset, job.per_replica_batch)
        result.reference_samples_per_round = job.per_replica_batch * job.steps_per_round
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run one job, write its result."""
    job_path, result_path = argv if argv is not None else sys.argv[1:]
    result = run_in_process(Job.from_json(json.loads(Path(job_path).read_text())))
    Path(result_path).write_text(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
