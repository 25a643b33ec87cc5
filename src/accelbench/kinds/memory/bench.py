"""Memory: host and device peaks of a training step and a predicted batch (gated), leaks under
pytest-memray's limit_leaks, and peaks against batch size."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from accelbench.axes import backends
from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND, StepCount
from accelbench.axes.models import MODELS
from accelbench.benches.base import Bench, Benchmark
from accelbench.benches.context import placed_as_asked, precision_used
from accelbench.grid.cells import (
    Cell,
    Grid,
    ModelOn,
    backend_cells,
    backend_missing,
    device_absent,
    device_unsupported,
    not_batch_trained,
    params,
)
from accelbench.judge import held_to
from accelbench.judge.rules import MIN_SPREAD_RUNS, RelativeGrowth
from accelbench.judge.verdicts import LEAKS, PEAK_CAP
from accelbench.kinds.memory.result import Leaks, MemoryScaling, StepMemory
from accelbench.kinds.memory.settings import MemorySettings
from accelbench.kinds.memory.work import StepMemoryReply
from accelbench.processes.workers import WorkerFailed
from accelbench.results.summary import Section
from accelbench.work import memory
from accelbench.work.builders import weights_device

# A memory cell measured in a backend's worker: pytest-memray's limit_memory cap cannot reach
# that process, so its peak is held to the same cap here.
WITHIN_CAP = RelativeGrowth(0.0)
# limit_leaks: what one allocation site may still hold after the repeated predictions.
LEAK_LIMIT_PER_LOCATION = 2**20
MEMORY = (StepMemory.keys.peak_memory_bytes, PEAK_CAP)
STEP_MEMORY_IN_WORKER = "accelbench.kinds.memory.work:step_memory_in_worker"  # what Bench.in_worker runs there
SETTINGS = "memory"  # its settings' name in run.presets.KIND_SETTINGS (settings.py)
TRAIN_STEPS_MEASURED = 20  # a training step's host peak is the worst of this many (see TrainMemoryBench)


def skip_without_memray(node: pytest.Item) -> None:
    """Memory and leak cells are measured by pytest-memray, through the markers they add."""
    if not node.config.pluginmanager.has_plugin("memray_manager"):
        pytest.skip(
            "pytest-memray is not active (was it disabled with -p no:memray?): it measures host memory and leaks"
        )


def over(peak: int | None, estimated: int | None) -> float | None:
    """A device peak over the analytic estimate, where both are known."""
    return peak / estimated if peak is not None and estimated else None


class StepMemoryBench(Bench):
    """Host and device peak memory of one step, built and warmed up before the test body.

    pytest-memray tracks the body, because setup gives the cell a limit_memory cap; the
    plugin hands the host peak it measured to host_peak_measured. The device peak on an
    accelerator (backends.device_peak_bytes: the allocator's, or XLA's count on JAX) is recorded
    beside the estimate and their ratio.
    """

    cell: Cell
    cap: int = 0
    estimated: int | None = 0  # None: the estimate does not know the model (cap_basis says why)
    cap_basis: str = ""
    steps_measured: int = 1  # the peak is the high-water mark over this many steps
    counted: StepCount | None = None  # the compiler's count of the step's device bytes, where it counts (JAX)
    weights_on: str | None = None  # where the step's model's weights lie once built (backends.weights_on)

    work_name = "train"  # a work.builders.STEPS entry: the step measured

    def build(self) -> Any:
        """(work, estimated bytes, why none): the step to measure, what the analytic estimate says
        it needs, and, where the estimate does not know the model (bytes None), why."""
        step = self.session.built.step(self.work_name, self.cell)
        self.weights_on = weights_device(step.built)  # checked in the body
        # in setup, outside the body pytest-memray tracks: counting compiles the step once more
        self.counted = backends.counted_step_bytes(PROCESS_BACKEND, self.placement(), step.compiled)
        return step.run, step.estimated_bytes, step.why_unknown

    def set_cap(self, estimated: int | None, why_unknown: str | None) -> None:
        """The step's host cap: from the estimate where it knows the model, else the run's budget."""
        headroom = MODELS[self.cell.model].memory_headroom
        self.estimated = estimated
        self.cap = memory.host_cap(headroom, estimated, self.session.run.memory_budget)
        self.cap_basis = (
            "the run's memory budget"
            if headroom is None
            else f"the run's memory budget ({why_unknown})"
            if estimated is None
            else f"{headroom:g} x the estimate + 16 MiB"
        )

    @property
    def tracked_here(self) -> bool:
        """pytest-memray measures this cell in the pytest process (its body); a cell on another
        backend is measured by memray inside that backend's worker."""
        return not self.on_other_backend()

    def setup(self, node: pytest.Item) -> None:
        if not self.tracked_here:
            return
        skip_without_memray(node)
        self.work, estimated, why_unknown = self.build()
        self.set_cap(estimated, why_unknown)
        if self.recording:  # memray tracks one at a time: these before pytest-memray tracks the body
            self.keep_repeats([memory.host_peak(self.steps) for _ in range(MIN_SPREAD_RUNS - 1)])
        node.add_marker(pytest.mark.limit_memory(f"{self.cap} B"))

    @property
    def recording(self) -> bool:
        """--update-baselines: the peak is measured MIN_SPREAD_RUNS times in this run, and the
        baseline is their median. They are no spread: peaks in one process agree far better than
        peaks of separate processes do (one recording's five peaks gave a gate that failed the
        next, unchanged, run at 5.1 MiB against 3.5 MiB), so the spread's rule (SpreadGrowth)
        waits for MIN_SPREAD_RUNS saved runs of the machine, and the fixed rule holds till then."""
        return self.session.run.update_baselines

    def keep_repeats(self, peaks: list[int]) -> None:
        """Host peaks of the same step measured apart from the body's, in this process."""
        self.verdicts.repeat_peaks.setdefault((self.name, "peak_memory_bytes"), []).extend(float(p) for p in peaks)

    def steps(self) -> None:
        for _ in range(self.steps_measured):
            self.work()

    def __call__(self) -> None:
        if not self.tracked_here:
            self.measure_in_backend_worker()
            return
        placed_as_asked(self, self.weights_on)
        device_peak, found_by = backends.device_peak_bytes(PROCESS_BACKEND, self.placement(), self.steps, self.counted)
        self.record(
            StepMemory(
                device=self.placement().description,
                batch_size=self.cell.batch_size,
                steps_measured=self.steps_measured,
                estimated_bytes=self.estimated,
                host_memory_cap_bytes=self.cap,
                host_memory_cap_from=self.cap_basis,
                device_peak_over_estimate=over(device_peak, self.estimated),
                device_peak_from=found_by or None,
                device_workspace_bytes=self.counted.workspace_bytes if self.counted else None,
            )
        )
        if device_peak is not None:
            self.peak_against_baseline(self.gates["device_peak_memory_bytes"], device_peak)

    def host_peak_measured(self, peak: int) -> None:
        self.host_peak = peak  # what a pytest-memray limit's verdict shows (plugin/hooks.py)
        self.peak_against_baseline(self.gates["peak_memory_bytes"], peak)

    def peak_against_baseline(self, gate: Any, peak: int) -> None:
        """A peak judged against its baseline; beside it, the smallest growth its gate detects
        (from the spread recorded with the baseline), which the summary shows."""
        verdict = self.verdicts.against_baseline(self.name, gate, peak, key=self.baseline_key)
        growth = dict(verdict.statistic).get("smallest_detectable_growth")
        # the gate's metric is the field's name (peak_memory_bytes, device_peak_memory_bytes)
        self.record(StepMemory(**{gate.metric: peak, f"{gate.metric}_detectable_growth": growth}))

    def measure_in_backend_worker(self) -> None:
        """The same steps, built and measured in the backend's worker (cellwork.step_memory),
        judged as here: host peak against its baseline and the estimate's cap, device peak
        (the backend allocator's) against its baseline."""
        backend = self.cell.backend
        where = f"the {backend} worker"
        self.say(f"measuring in {where} (memray there)")
        try:
            found = StepMemoryReply(
                **self.in_worker(
                    STEP_MEMORY_IN_WORKER,
                    work_name=self.work_name,
                    steps_measured=self.steps_measured,
                    repeats=MIN_SPREAD_RUNS if self.recording else 1,
                )
            )
        except WorkerFailed as error:
            pytest.fail(f"{self.name}: {error}", pytrace=False)
        placed_as_asked(self, found.weights_on)
        self.set_cap(found.estimated_bytes, found.estimate_unknown)
        self.record(
            StepMemory(
                device=found.device,
                backend=backend,
                batch_size=self.cell.batch_size,
                steps_measured=self.steps_measured,
                estimated_bytes=self.estimated,
                host_memory_cap_bytes=self.cap,
                host_memory_cap_from=self.cap_basis,
                memory_measured_in=where,
                device_peak_over_estimate=over(found.device_peak_bytes, self.estimated),
                device_peak_from=found.device_peak_from or None,
                device_workspace_bytes=found.device_workspace_bytes,
            )
        )
        self.record(precision_used(self.cell))
        self.keep_repeats(found.host_peak_repeats)
        self.host_peak_measured(found.host_peak_bytes)
        held_to.against_reference(
            self.verdicts,
            self.name,
            PEAK_CAP,
            found.host_peak_bytes,
            self.cap,
            WITHIN_CAP,
            f"the cap, {self.cap_basis}",
        )
        if found.device_peak_bytes is not None:
            self.peak_against_baseline(self.gates["device_peak_memory_bytes"], found.device_peak_bytes)


class TrainMemoryBench(StepMemoryBench):
    """Training steps (train_on_batch): gradients, activations and the input batch.

    One step's peak depends on how TensorFlow's executor happens to interleave its ops: single
    cnn steps at batch 32 peaked at 11.4, 13.3, 14.7 or 19.7 MiB in one process, so a baseline
    recorded from one step flapped. The worst of 20 steps held within 0.1 MiB (20.79-20.86 MiB,
    8 repeats); it is also the number that decides whether a batch fits.
    """

    steps_measured = TRAIN_STEPS_MEASURED
    work_name = "train"


class InferenceMemoryBench(StepMemoryBench):
    """One batch predicted (predict_on_batch, or the estimator's predict)."""

    work_name = "inference"


class LeakBench(Bench):
    """The same batch predicted many times: whatever the predictions leave behind must not grow.

    pytest-memray's limit_leaks fails the cell when any one allocation site still holds more
    than LEAK_LIMIT_PER_LOCATION at the end; the model and its traced functions are made in
    setup, so only the predictions are watched.
    """

    cell: Cell

    @property
    def leak_predictions(self) -> int:
        settings: MemorySettings = self.session.grid.settings[SETTINGS]
        return settings.leak_predictions

    def setup(self, node: pytest.Item) -> None:
        skip_without_memray(node)
        self.one = self.session.built.step("inference", self.cell)  # warm: built.step says why
        node.add_marker(pytest.mark.limit_leaks(f"{LEAK_LIMIT_PER_LOCATION} B"))

    def predict_repeatedly(self) -> None:
        for _ in range(self.leak_predictions):
            self.one.run()
        BACKENDS[PROCESS_BACKEND].settle()  # what the last prediction let go of, gone before the watch ends

    def __call__(self) -> None:
        self.predict_repeatedly()
        self.record(
            Leaks(
                device=self.placement().description,
                batch_size=self.cell.batch_size,
                predictions=self.leak_predictions,
                leak_limit_per_location_bytes=LEAK_LIMIT_PER_LOCATION,
            )
        )


class ScalingBench(Bench):
    """Training-step host peak against batch size: the fit, the analytic estimate, the largest batch.

    The ladder is measured in setup (memray runs one tracker at a time, and pytest-memray may
    be tracking the body); the body reports it.
    """

    cell: ModelOn

    def setup(self, node: pytest.Item) -> None:
        self.scaling = self.session.sizing.scaling(self.cell.device, self.cell.model)

    def __call__(self) -> None:
        scaling = self.scaling
        estimate, fit = scaling.estimate, scaling.fit
        self.record(
            MemoryScaling(
                device=self.placement().description,
                ladder_batch_sizes=list(scaling.batch_sizes),
                ladder_peak_bytes=list(scaling.peaks),
                fixed_bytes=fit.fixed,
                per_sample_bytes=fit.per_sample,
                fit_max_residual_bytes=fit.max_residual,
                estimated_fixed_bytes=estimate.step_fixed,
                estimated_per_sample_bytes=estimate.step_per_sample,
                weight_bytes=estimate.weights,
                optimizer_slot_bytes=estimate.optimizer_slots,
                memory_budget_bytes=scaling.budget,
                largest_batch=scaling.largest_batch,
                largest_batch_search=scaling.searched_by,
            )
        )


# Its cells: what grid the kind runs over, and why a cell is skipped.
def train_memory_cells(grid: Grid) -> list:
    return params(grid, backend_cells(grid), (device_absent, device_unsupported, not_batch_trained, backend_missing))


def inference_memory_cells(grid: Grid) -> list:
    return params(grid, backend_cells(grid), (device_absent, device_unsupported, backend_missing))


def leak_cells(grid: Grid) -> list:
    """Repeated inference at the largest batch size, where a Keras model's leak grows fastest. An
    estimator's at the smallest: scikit-learn's SVC.predict makes an allocation per image and
    support vector (137k for 256 images), each unwound by the native tracing limit_leaks turns
    on, which made 20 predictions 5 s of the quick suite; what its calls could leave behind
    (Python-level caches) does not grow with the batch."""

    def batch_size(device: str, model: str) -> int:
        sizes = grid.batch_sizes_for(device, model)
        return max(sizes) if MODELS[model].batch_trained else min(sizes)

    cells = [Cell(d, batch_size(d, m), m) for d, m in itertools.product(grid.devices, grid.models)]
    return params(grid, cells, (device_absent, device_unsupported))


def scaling_cells(grid: Grid) -> list:
    cells = [ModelOn(d, m) for d, m in itertools.product(grid.devices, grid.models)]
    return params(grid, cells, (device_absent, device_unsupported, not_batch_trained))


# A table of both steps' peaks: a column per phase and batch size.
STEP_PEAKS = {"train_memory": "train {column}", "inference_memory": "predict {column}"}

# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 40
# This module's benchmark kinds, by fixture name (benches/catalog.py registers them): each
# with its cells, its Bench, what it judges, its summary tables and its report's plots.
KINDS: dict[str, Benchmark] = {
    "train_memory": Benchmark(
        train_memory_cells,
        TrainMemoryBench,
        "test_train_memory",
        MEMORY,
        timed=False,
        file="test_memory.py",
        file_doc="Memory: host and device peaks of one step, their growth with batch size, and leaks.\n\n"
        "pytest-memray measures these; they are not timings, so pytest-benchmark does not time them.\n",
        about="Host and device peak of a training step, gated (kinds/memory/).",
    ),
    "inference_memory": Benchmark(
        inference_memory_cells,
        InferenceMemoryBench,
        "test_inference_memory",
        MEMORY,
        timed=False,
        file="test_memory.py",
        about="Host and device peak of a predicted batch, gated (kinds/memory/).",
        sections=(
            Section(
                "host memory peak of one step",
                STEP_PEAKS,
                StepMemory.keys.peak_memory_bytes,
                "bytes",
                MEMORY,
            ),
            Section(
                "smallest growth of the host peak its gate detects (from the spread recorded with the baseline)",
                STEP_PEAKS,
                StepMemory.keys.peak_memory_bytes_detectable_growth,
                "growth",
            ),
            Section(
                "device memory peak of one step",
                STEP_PEAKS,
                StepMemory.keys.device_peak_memory_bytes,
                "bytes",
                ("device_peak_memory_bytes",),
            ),
        ),
    ),
    "memory_scaling": Benchmark(
        scaling_cells,
        ScalingBench,
        "test_memory_scaling",
        timed=False,
        file="test_memory.py",
        about="Training-step peaks against batch size and the largest batch that fits (kinds/memory/).",
        # Slow and never decisive in a quick run: it is reported, not gated (docs/measured.md).
        left_out={
            "quick": "the memory ladder (fixed + per-sample bytes, largest batch) is reported, not gated, and "
            "takes 20 s: run it with --preset full"
        },
        sections=(
            Section(
                "training memory per sample (fitted)",
                {"memory_scaling": "{column}"},
                MemoryScaling.keys.per_sample_bytes,
                "bytes",
            ),
            Section(
                "largest batch that fits", {"memory_scaling": "{column}"}, MemoryScaling.keys.largest_batch, "count"
            ),
        ),
        plots=("memory",),
    ),
    "inference_leaks": Benchmark(
        leak_cells,
        LeakBench,
        "test_inference_leaks",
        (LEAKS,),
        timed=False,
        file="test_memory.py",
        about="Repeated predictions under pytest-memray's limit_leaks (kinds/memory/).",
    ),
}
