"""`python -m accelbench.kinds.distributed.job_main JOB_JSON RESULT_JSON`: the child half of a
tf.distribute job (jobs.py starts it): one process of a single, replicas or workers
job, run from a fresh TensorFlow runtime, its Result written back as JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from accelbench import user_modules
from accelbench.kinds.distributed.job import Job, Result


def _cpu_replicas(tf: Any, count: int) -> Any:
    """`count` logical CPU devices under one MirroredStrategy (set before TensorFlow uses any)."""
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
    return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])


def _gpu_replicas(tf: Any, count: int) -> Any:
    """The first `count` GPUs under one MirroredStrategy, not every GPU the host has."""
    return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("GPU")][:count])


# device type -> (tf, count) -> a strategy over `count` replicas of it in this process (the kinds
# whose DeviceType.replicas is set)
REPLICA_STRATEGIES = {"cpu": _cpu_replicas, "gpu": _gpu_replicas}


def _strategy(job: Job, tf: Any) -> Any:
    if job.mode == "workers":
        return tf.distribute.MultiWorkerMirroredStrategy()  # first: before any other TF op
    if job.mode == "replicas":
        return REPLICA_STRATEGIES[job.device](tf, job.replicas)
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


# The parity steps (the losses one device and N replicas or workers must share) compare like with
# like: no dropout masks or per-replica batch statistics (training=False), which differ between
# one device and N by design (the cnn's gap was 0.00275 at its first step, before any update);
# and plain SGD, whose update is linear in the gradient. Adam's first steps move each weight by
# about its learning rate whatever the gradient's size, so a gradient that is round-off on one
# side and round-off of the other sign on the other (after a LayerNormalization) became a full
# step: an attention encoder's losses parted by 0.023 at the second step. A wrong reduction
# (a loss not averaged over the global batch) still moves SGD's loss by far more than 1e-5.
PARITY_LEARNING_RATE = 0.01


def _parity_optimizer(model: Any, strategy: Any) -> Any:
    import keras

    with strategy.scope():
        optimizer = keras.optimizers.SGD(PARITY_LEARNING_RATE)
        optimizer.build(model.trainable_variables)
    return optimizer


def _train(
    job: Job, strategy: Any, dataset: Any, batch: int, global_batch: int, rounds: int, check_steps: int
) -> tuple[list[float], list[float]]:
    """(losses of the first check_steps steps, seconds of each timed round) of a model freshly
    built from the job's seed."""
    import tensorflow as tf

    from accelbench.axes.backends.tensorflow import custom_step
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.build import build_model

    model = build_model(
        MODELS[job.model],
        dataset.input_shape,
        ModelOptions(deep_layers=job.run.deep_layers, seed=job.run.seed),
        strategy.scope(),
        train=True,
        outputs=dataset.outputs,
        quality=dataset.quality,
        input_dtype=str(dataset.x_train.dtype),
    )
    x, y = dataset.x_train, dataset.y_train
    iterator = _distributed_input(strategy, x, y, batch, tf)
    parity_step = custom_step(model, _parity_optimizer(model, strategy), global_batch, training=False)
    replica_step = custom_step(model, model.optimizer, global_batch)

    @tf.function
    def check(iterator):
        return strategy.reduce("SUM", strategy.run(parity_step, next(iterator)), axis=None)

    @tf.function
    def step(iterator):
        return strategy.reduce("SUM", strategy.run(replica_step, next(iterator)), axis=None)

    @tf.function
    def loop(iterator, steps):
        loss = tf.constant(0.0)
        for _ in tf.range(steps):
            loss = step(iterator)
        return loss

    losses = [float(check(iterator)) for _ in range(check_steps)]
    steps = tf.constant(job.steps_per_round)
    float(loop(iterator, steps))  # trace the timed loop outside the clock
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        float(loop(iterator, steps))  # float() waits for every replica
        seconds.append(time.perf_counter() - start)
    return losses, seconds


def _fit(job: Job, strategy: Any, dataset: Any, tf: Any) -> None:
    """Keras fit() under the job's strategy: what keras-team/keras#20585 says fails for workers."""
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.build import build_model

    model = build_model(
        MODELS[job.model],
        dataset.input_shape,
        ModelOptions(deep_layers=job.run.deep_layers, seed=job.run.seed),
        strategy.scope(),
        train=True,
        outputs=dataset.outputs,
        quality=dataset.quality,
        input_dtype=str(dataset.x_train.dtype),
    )
    x, y = dataset.x_train, dataset.y_train
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

    if job.run.intra_op_threads:
        tf.config.threading.set_intra_op_parallelism_threads(job.run.intra_op_threads)
    strategy = _strategy(job, tf)
    job = replicated(job, strategy)
    from accelbench.axes import data

    dataset = data.load(job.run.dataset_of(job.model), Path(job.run.data_dir) if job.run.data_dir else None).head(
        job.run.max_train_samples
    )
    if job.use_fit:
        _fit(job, strategy, dataset, tf)
        return Result([], [], 0, strategy.num_replicas_in_sync)
    batch = job.global_batch if job.mode == "single" else job.per_replica_batch  # what one replica takes
    losses, seconds = _train(job, strategy, dataset, batch, job.global_batch, job.rounds, job.check_steps)
    result = Result(
        losses,
        seconds,
        job.global_batch * job.steps_per_round,
        strategy.num_replicas_in_sync,
        devices=_devices(strategy),
    )
    if job.mode == "single" and job.replicas > 1:  # the same device at the per-replica batch
        _, reference = _train(job, strategy, dataset, job.per_replica_batch, job.per_replica_batch, job.rounds, 0)
        result.reference_round_seconds = reference
        result.reference_samples_per_round = job.per_replica_batch * job.steps_per_round
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m accelbench.kinds.distributed.job_main JOB_JSON RESULT_JSON`: run one job, write its result."""
    job_path, result_path = argv if argv is not None else sys.argv[1:]
    fields = json.loads(Path(job_path).read_text())
    job = Job.from_json(fields)
    # the user's models, as the pytest process has them
    user_modules.import_modules(job.run.modules, job.run.module_roots)
    result = run_in_process(job)
    Path(result_path).write_text(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
