"""What a worker process does for a cell (called over the pipe; see workers.py and the calls
declared in protocol.Cellwork). The child half: the pytest process never imports it.

Everything here runs inside the worker: it builds the cell's work once (a Trainer or a
Predictor, exactly as the pytest process builds its own), times rounds with the worker's
own clock and answers with plain numbers. The worker's TensorFlow, Keras and environment
variables are its environment's, which is the point of an A/B run.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from accelbench import user_modules
from accelbench.axes import backends
from accelbench.axes.backends import PROCESS_BACKEND
from accelbench.measured import StepTrace
from accelbench.processes.protocol import CellSpec, Described, Prepared, RunFields
from accelbench.work import measure

_WORK: dict[str, Any] = {}  # key -> the built work of a cell, until forget(key)


@functools.cache
def _inventory(intra_op_threads: int) -> Any:
    """This worker's devices, as its backend finds them."""
    return backends.inventory(PROCESS_BACKEND, intra_op_threads)


def _placement(device: str, intra_op_threads: int) -> Any:
    """Where the cell runs, as this worker's backend places it."""
    inventory = _inventory(intra_op_threads)
    placement = inventory.get(device)
    if placement is None:
        raise LookupError(f"{backends.absent_reason(inventory, device)} on {PROCESS_BACKEND}")
    return placement


@functools.cache
def _import_user_modules(names: tuple[str, ...], roots: tuple[str, ...]) -> None:
    """The user's models, as the pytest process has them: imported once per worker."""
    user_modules.import_modules(names, roots)


@functools.cache
def _dataset(name: str, run: RunFields) -> Any:
    from accelbench.axes import data

    return data.load(name, Path(run.data_dir) if run.data_dir else None).head(run.max_train_samples)


def _site(wire: dict[str, Any]) -> tuple[CellSpec, Any]:
    """The cell's spec, and what its work is built from here (work.builders.Site), as the pytest
    process builds its own: the user's modules imported first, so their kinds are known."""
    from accelbench.axes.models import MODELS, ModelOptions
    from accelbench.work.builders import Site

    spec = CellSpec.from_wire(wire)
    _import_user_modules(spec.run.modules, spec.run.module_roots)
    options = ModelOptions(deep_layers=spec.run.deep_layers, seed=spec.run.seed, precision=spec.precision)
    return spec, Site(
        spec.cell_id,
        MODELS[spec.model],
        _dataset(spec.run.dataset_of(spec.model), spec.run),
        _placement(spec.device, spec.run.intra_op_threads),
        spec.batch_size,
        options,
        spec.run.round_seconds,
        spec.run.predict_round_seconds,
    )


def prepare(spec: dict[str, Any], steps: int | None) -> Prepared:
    """Build the cell's work (a work.builders.WORKS entry) at `steps` per round, as the pytest
    process calibrated it (None: calibrate here, to the run's round length), and warm it up; what
    it measured while building (compile seconds) and what the caller needs to report rounds."""
    from accelbench.work.builders import WORKS, call_cost, costs_of, jit_compiled, weights_device

    cell, site = _site(spec)
    work = _WORK[cell.key] = WORKS[cell.work](site, steps)
    costs = costs_of(work)
    return Prepared(
        compile_seconds=work.compile_seconds,
        steps=work.steps,
        samples_per_round=work.samples_per_round,
        flops_per_sample=work.flops_per_sample(),
        executed_flops_per_sample=costs.executed_flops,
        bytes_per_sample=costs.bytes,
        device=site.placement.description,
        jit_compile=jit_compiled(work),
        weights_on=weights_device(work),
        **call_cost(work),
    )


def one_round(key: str) -> float:
    """Seconds of one round of the cell's work, timed here."""
    return measure.seconds(_WORK[key].run_round)


def its_own(key: str) -> dict[str, Any]:
    """The numbers the cell's work measured of its own, after its rounds (work.builders.its_own)."""
    from accelbench.work.builders import its_own as numbers

    return numbers(_WORK[key])


def one_prediction(key: str) -> float:
    """Seconds of one prediction that waits for its result (a latency cell's sample), timed here."""
    return measure.seconds(_WORK[key].predict_one)


def peak(key: str) -> int:
    """Host bytes memray sees at the high-water mark of one round of the cell's work."""
    from accelbench.work import memory

    return memory.host_peak(_WORK[key].run_round)


def trace_steps(spec: dict[str, Any], directory: str, cell_name: str) -> StepTrace:
    """A step trace of the cell's work (a training step, or a predicted batch) taken here with
    this backend's profiler (Backend.profiler)."""
    from accelbench.work import traces
    from accelbench.work.builders import STEPS

    cell, site = _site(spec)
    step = STEPS[cell.work](site)
    return traces.trace_steps(Path(directory), cell_name, traces.PHASES[cell.work], step.run, backend=PROCESS_BACKEND)


def kind_call(target: str, run: dict[str, Any], arguments: dict[str, Any]) -> Any:
    """A benchmark kind's own function called here with no cell built (Bench.apart: work that
    must not load a Keras backend, and builds what it measures from `arguments`): the run's user
    modules imported first, as for kind_work; its reply crosses as JSON."""
    import importlib

    fields = RunFields.from_wire(run)
    _import_user_modules(fields.modules, fields.module_roots)
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)(**arguments)


def forget(key: str) -> None:
    """Drop a finished cell's model, so the worker's memory does not grow cell by cell."""
    _WORK.pop(key, None)
    import gc

    gc.collect()


def describe() -> Described:
    """What this environment is: its Keras backend, its libraries' versions and its machine
    fingerprint, its accelerators as its own backend finds them."""
    backend = backends.BACKENDS[PROCESS_BACKEND]
    return Described(
        backend=backend.name,
        compiles=backend.compiles,
        versions=backends.versions(),
        fingerprint=_inventory(0).fingerprint().key,
    )


def roof(device: str, dtype: str, intra_op_threads: int, kept: dict[str, Any] | None) -> dict[str, Any]:
    """The roofs of a device in a compute dtype, measured with this worker's backend (or a kept
    roof checked: backends.measure_roof), as JSON."""
    from accelbench.measured import Roof

    placement = _placement(device, intra_op_threads)
    return backends.measure_roof(PROCESS_BACKEND, placement, dtype, Roof.from_json(kept) if kept else None).as_json()


def kind_work(target: str, spec: dict[str, Any], arguments: dict[str, Any]) -> Any:
    """A benchmark kind's own work measured here (a built-in kind's work.py, or a user's module,
    which every worker imports): `target` ("module:function") is called with the cell's Site, built
    here from its spec as every call builds one, and the kind's `arguments`; its reply crosses as
    JSON (a dataclass as its fields), for the kind to read back."""
    import importlib

    _, site = _site(spec)  # first: it imports the user's modules, where a user's target lives
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)(site, **arguments)
