"""Distributed cells: the processes they own, the loss they must match, and Keras fit() under
MultiWorkerMirroredStrategy (keras-team/keras#20585)."""

import dataclasses
import json
import os
import subprocess
import time

import pytest

from accelbench.axes.backends import BACKENDS
from accelbench.kinds.distributed import jobs as distributed
from accelbench.kinds.distributed.bench import DistributedCell
from accelbench.kinds.distributed.jobs import Job, JobFailed, WorkerGroup
from accelbench.processes.protocol import RunFields
from conftest import needs_tensorflow

# what a worker gets of a run: digits, the zoo's options, TensorFlow's threads
DIGITS = RunFields("digits", None, None, deep_layers=5, seed=0, intra_op_threads=0, round_seconds=0.2,
                   predict_round_seconds=0.2)  # fmt: skip


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead too, only not yet reaped
        return stat.read().split(") ")[1][0] != "Z"


def test_tf_config_names_every_worker_and_this_task():
    config = json.loads(distributed.tf_config([4001, 4002], 1))
    assert config == {
        "cluster": {"worker": ["127.0.0.1:4001", "127.0.0.1:4002"]},
        "task": {"type": "worker", "index": 1},
    }
    assert len(set(distributed.free_ports(3))) == 3


def test_a_group_kills_every_process_it_started_even_after_a_timeout(tmp_path):
    """A worker that hangs (here: sleeps) runs past the deadline; ending the group kills it."""
    group = WorkerGroup(tmp_path)
    group.processes.append(subprocess.Popen(["sleep", "60"], start_new_session=True))  # a hung worker
    (tmp_path / "log0.txt").write_text("waiting for the cluster\n")
    with pytest.raises(JobFailed, match="worker 0 ran past its deadline; waiting for the cluster"):
        group.wait(time.monotonic() + 0.5)
    group.end()
    assert not any(alive(pid) for pid in group.pids)


def test_a_transient_grpc_failure_is_retried_once_and_then_reported(monkeypatch):
    calls = []

    def failing(job, timeout_s, on_start):
        calls.append(job)
        raise JobFailed("worker 1 exited with status 1: UNAVAILABLE: failed to connect", transient=True)

    monkeypatch.setattr(distributed, "_run_once", failing)
    with pytest.raises(JobFailed, match="UNAVAILABLE"):
        distributed.run_job(Job("workers", "mlp", 32, 2, run=DIGITS), 10.0)
    assert len(calls) == 2


# Two replicas and two workers against one process: test_plugin's multi-worker and multi-device cells.
SMALL = dict(model="mlp", run=DIGITS, per_replica_batch=32, check_steps=5, rounds=2, steps_per_round=5)


@pytest.mark.xfail(
    strict=True,
    raises=JobFailed,
    reason="keras-team/keras#20585: Keras 3's fit() does not run "
    "under MultiWorkerMirroredStrategy; this passes once Keras fixes it",
)
@needs_tensorflow
@pytest.mark.slow
def test_keras_fit_under_multi_worker_mirrored_strategy():
    try:
        distributed.run_job(Job("workers", replicas=2, use_fit=True, **SMALL), 120.0)
    except JobFailed as error:  # the known failure; any other is a real one
        if "PerReplica" not in str(error):
            pytest.fail(f"fit() failed for another reason than keras-team/keras#20585: {error}")
        raise


@needs_tensorflow
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_the_parity_steps_catch_a_loss_not_averaged_over_the_global_batch(model, heavy_imports):
    """The planted fault a strategy's reduction can make: each replica's loss averaged over its
    own batch, not the global one, doubling the summed gradient (on one device: a global batch
    of half the batch). The parity steps (SGD, training=False) must move the loss by far more
    than the gate's tolerance; and two unchanged runs must agree within it."""
    import numpy as np
    import tensorflow as tf

    from accelbench.axes.backends.tensorflow import custom_step
    from accelbench.axes.data import load
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.kinds.distributed import job_main
    from accelbench.work.build import build_model

    dataset = load("digits")
    x, y = dataset.x_train[:64], dataset.y_train[:64]

    def losses(global_batch):
        strategy = tf.distribute.get_strategy()
        built = build_model(MODELS[model], dataset.input_shape, ModelOptions(), strategy.scope(), train=True)
        step = custom_step(built, job_main._parity_optimizer(built, strategy), global_batch, training=False)
        return np.array([float(step(x, y)) for _ in range(4)])

    right, again, planted = losses(64), losses(64), losses(32)
    assert np.max(np.abs(right - again)) <= distributed.LOSS_TOLERANCE
    # the first loss is before any update (and doubled by the planted scale): compare the later ones
    assert np.max(np.abs(right[1:] - planted[1:] / 2)) > 100 * distributed.LOSS_TOLERANCE


needs_jax = pytest.mark.skipif(not BACKENDS["jax"].installed(), reason=BACKENDS["jax"].missing_reason())


@needs_jax
@pytest.mark.slow(25)
def test_three_cpu_devices_under_keras_data_parallel_train_to_the_loss_of_one_device_on_jax():
    """JAX's multi-device job (keras.distribution.DataParallel over 3 logical CPU devices, the
    cnn with its dropout) against JAX's one-device job at the same global batch: within the
    gate's tolerance; and the planted fault, one device stepping on a third of the global batch
    (a sharding that dropped two replicas' rows), moves the losses by far more than it."""
    small = dict(
        model="cnn", run=DIGITS, per_replica_batch=32, check_steps=3, rounds=1, steps_per_round=2, backend="jax"
    )
    reference = distributed.run_job(Job("single", replicas=3, **small), 120.0)
    spread = distributed.run_job(Job("replicas", replicas=3, **small), 120.0)
    assert spread.replicas_in_sync == 3 and spread.devices == ["cpu:0", "cpu:1", "cpu:2"]
    assert (
        spread.samples_per_round == reference.samples_per_round == 96 * 2
        and reference.reference_samples_per_round == 64
    )
    assert max(abs(a - b) for a, b in zip(spread.losses, reference.losses)) <= distributed.LOSS_TOLERANCE
    planted = distributed.run_job(Job("single", replicas=1, **small), 120.0)
    assert max(abs(a - b) for a, b in zip(spread.losses[1:], planted.losses[1:])) > 100 * distributed.LOSS_TOLERANCE


def test_replicas_run_on_the_process_backends_own_job_workers_on_tensorflows_and_else_one_line(monkeypatch):
    """Which backend's job a distributed cell runs, and the one line where none can."""
    from accelbench.kinds.distributed import bench

    for name in ("tensorflow", "jax", "torch"):  # each installed (a module every Python has)
        monkeypatch.setitem(BACKENDS._entries, name, dataclasses.replace(BACKENDS[name], module="json"))
    assert distributed.job_backend("replicas", "jax") == "jax"
    assert distributed.job_backend("workers", "jax") == "tensorflow"
    assert distributed.job_backend("replicas", "torch") == "tensorflow"
    monkeypatch.setitem(BACKENDS._entries, "tensorflow", dataclasses.replace(BACKENDS["tensorflow"], module="absent_"))
    assert distributed.job_backend("replicas", "torch") is None and distributed.job_backend("workers", "jax") is None
    monkeypatch.setattr(bench, "PROCESS_BACKEND", "torch")
    cell = DistributedCell("cpu", 256, "mlp", 2, "replicas")
    assert bench.no_job_backend(None, cell) == (
        "replicas cells run on tensorflow or jax (torch has no replicas job): "
        "pip install 'accelbench[tensorflow]' or 'accelbench[jax]'"
    )
    assert bench.no_job_backend(None, dataclasses.replace(cell, unit="workers")) == (
        "workers cells run on tensorflow (torch has no workers job): pip install 'accelbench[tensorflow]'"
    )
