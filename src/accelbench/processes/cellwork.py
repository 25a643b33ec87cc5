"""What a worker process does for a cell (called over the pipe; see workers.py).

Everything here runs inside the worker: it builds the cell's work once (a Trainer or a
Predictor, exactly as the pytest process builds its own), times rounds with the worker's
own clock and answers with plain numbers. The worker's TensorFlow, Keras and environment
variables are its environment's, which is the point of an A/B run.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from accelbench.axes import backends
from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.work import measure

_WORK: dict[str, Any] = {}  # key -> the built work of a cell, until forget(key)


def _backend() -> str:
    """This worker's Keras backend, as Keras will read it (without importing Keras before
    TensorFlow's variables are set: see devices.init_tensorflow)."""
    return os.environ.get("KERAS_BACKEND", PROCESS_BACKEND)


@functools.cache
def _inventory(intra_op_threads: int) -> Any:
    from accelbench.axes.devices import Inventory

    return Inventory.discover(intra_op_threads)


def _placement(device: str, intra_op_threads: int) -> Any:
    """Where the cell runs: a TensorFlow placement, or backends.Neutral on another backend."""
    backend = _backend()
    if backend == PROCESS_BACKEND:
        inventory = _inventory(intra_op_threads)
        placement = inventory.get(device)
        if placement is None:
            raise LookupError(inventory.absent_reason(device))
        return placement
    found = backends.devices_here(backend)
    if device not in found:
        raise LookupError(f"device {device} requested but not present on {backend} (present: {', '.join(found)})")
    return backends.Neutral(device, found[device], backend)


@functools.cache
def _dataset(name: str, data_dir: str | None, max_train_samples: int | None) -> Any:
    from accelbench.axes import data

    return data.load(name, Path(data_dir) if data_dir else None).head(max_train_samples)


def _trainer(cell_id: str, spec: Any, dataset: Any, placement: Any, batch_size: int, options: Any,
             run: dict[str, Any], steps: int) -> Any:
    from accelbench.work.training import Trainer

    return Trainer.build(cell_id, spec, dataset, placement, batch_size, options, run["round_seconds"], steps=steps)


def _predictor(cell_id: str, spec: Any, dataset: Any, placement: Any, batch_size: int, options: Any,
               run: dict[str, Any], steps: int) -> Any:
    from accelbench.work.inference import PREDICTORS

    return PREDICTORS[spec.framework].build(spec, dataset, placement, batch_size, options,
                                            run["predict_round_seconds"], steps=steps)


BUILDERS = {"train": _trainer, "inference": _predictor}  # a cell's kind -> how its work is built


def prepare(key: str, kind: str, run: dict[str, Any], cell_id: str, device: str, batch_size: int, model: str,
            steps: int | None, precision: str = REFERENCE_PRECISION) -> dict[str, Any]:
    """Build the cell's work (a BUILDERS kind) at `steps` per round, as the pytest process
    calibrated it (None: calibrate here, to the run's round length), and warm it up; what it
    measured while building (compile seconds) and what the caller needs to report rounds."""
    from accelbench.axes.models import MODELS, ModelOptions

    placement = _placement(device, run["intra_op_threads"])
    dataset = _dataset(run["dataset"], run["data_dir"], run["max_train_samples"])
    options = ModelOptions(deep_layers=run["deep_layers"], seed=run["seed"], precision=precision)
    work = _WORK[key] = BUILDERS[kind](cell_id, MODELS[model], dataset, placement, batch_size, options, run, steps)
    return {"compile_seconds": work.compile_seconds, "steps": work.steps, "samples_per_round": work.samples_per_round,
            "flops_per_sample": work.flops_per_sample(), "device": placement.description,
            "jit_compile": bool(getattr(getattr(work, "model", None), "jit_compile", False))}


def accuracy_run(run: dict[str, Any], cell_id: str, device: str, batch_size: int, model: str, epochs: int,
                 target: float, precision: str = REFERENCE_PRECISION) -> dict[str, Any]:
    """The published recipe from the run's seed (training.train_to_accuracy), here."""
    import dataclasses

    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.training import train_to_accuracy

    placement = _placement(device, run["intra_op_threads"])
    dataset = _dataset(run["dataset"], run["data_dir"], run["max_train_samples"])
    options = ModelOptions(deep_layers=run["deep_layers"], seed=run["seed"], precision=precision)
    return dataclasses.asdict(train_to_accuracy(cell_id, MODELS[model], dataset, placement, batch_size, epochs,
                                                target, options))


def one_round(key: str) -> float:
    """Seconds of one round of the cell's work, timed here."""
    return measure.seconds(_WORK[key].run_round)


def one_prediction(key: str) -> float:
    """Seconds of one prediction that waits for its result (a latency cell's sample), timed here."""
    return measure.seconds(_WORK[key].predict_one)


def _training_step(cell_id: str, spec: Any, dataset: Any, placement: Any, batch_size: int, options: Any) -> Any:
    from accelbench.work import memory
    from accelbench.work.training import OneStep

    step = OneStep.build(cell_id, spec, dataset, placement, batch_size, options)
    return step.run, memory.estimate(step.model).step(batch_size)


def _predicted_batch(cell_id: str, spec: Any, dataset: Any, placement: Any, batch_size: int, options: Any) -> Any:
    from accelbench.work import memory
    from accelbench.work.inference import OneBatch

    one = OneBatch.build(spec, dataset, placement, batch_size, options)
    return one.predict, memory.estimate(one.model).inference(batch_size) if one.model else 0


MEMORY_WORK = {"train": _training_step, "inference": _predicted_batch}  # a memory cell's kind -> its step


def _step(kind: str, run: dict[str, Any], cell_id: str, device: str, batch_size: int, model: str,
          precision: str) -> tuple[Any, Any, int]:
    """(placement, one step of the cell's kind, its estimated bytes), built and warmed up."""
    from accelbench.axes.models import MODELS, ModelOptions

    placement = _placement(device, run["intra_op_threads"])
    dataset = _dataset(run["dataset"], run["data_dir"], run["max_train_samples"])
    options = ModelOptions(deep_layers=run["deep_layers"], seed=run["seed"], precision=precision)
    return placement, *MEMORY_WORK[kind](cell_id, MODELS[model], dataset, placement, batch_size, options)


def step_memory(kind: str, run: dict[str, Any], cell_id: str, device: str, batch_size: int, model: str,
                steps_measured: int, precision: str = REFERENCE_PRECISION) -> dict[str, Any]:
    """A memory cell measured here, as the pytest process measures its own (StepMemoryBench):
    the step built and warmed up, then memray's host peak over `steps_measured` steps, the
    backend allocator's device peak where it keeps one, and the analytic estimate."""
    from accelbench.work import memory

    placement, work, estimated = _step(kind, run, cell_id, device, batch_size, model, precision)

    def steps() -> None:
        for _ in range(steps_measured):
            work()

    host_peak = memory.host_peak(steps)
    device_peak = backends.device_peak_bytes(_backend(), device, steps)
    return {"host_peak_bytes": host_peak, "device_peak_bytes": device_peak, "estimated_bytes": estimated,
            "device": placement.description}


def peak(key: str) -> int:
    """Host bytes memray sees at the high-water mark of one round of the cell's work."""
    from accelbench.work import memory

    return memory.host_peak(_WORK[key].run_round)


def trace_steps(phase: str, run: dict[str, Any], cell_id: str, device: str, batch_size: int, model: str,
                directory: str, cell_name: str, precision: str = REFERENCE_PRECISION) -> dict[str, Any]:
    """A step trace of the cell's phase ("train" or "predict") taken here with this backend's
    profiler (traces.PROFILERS)."""
    from accelbench.work import traces

    _, work, _ = _step(TRACED_KINDS[phase], run, cell_id, device, batch_size, model, precision)
    return traces.trace_steps(Path(directory), cell_name, phase, work, backend=_backend())


TRACED_KINDS = {"train": "train", "predict": "inference"}  # a trace's phase -> the MEMORY_WORK step it traces


def forget(key: str) -> None:
    """Drop a finished cell's model, so the worker's memory does not grow cell by cell."""
    _WORK.pop(key, None)
    import gc

    gc.collect()


def describe() -> dict[str, Any]:
    """What this environment is: its Keras backend, its libraries' versions and its machine
    fingerprint."""
    from accelbench.judge import fingerprint

    backend = backends.BACKENDS[_backend()]
    return {"backend": backend.name, "compiles": backend.compiles,
            "versions": fingerprint.versions((*fingerprint.LIBRARIES, *backend.packages)),
            "fingerprint": fingerprint.hardware(()).key}
