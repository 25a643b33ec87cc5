"""The data-scaling cells: time and host memory as the training or test set grows, fitted and
projected to the run's target sizes (--target-sizes), the projected times feeding the cost table."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from accelbench.axes.models import MODELS
from accelbench.benches.base import Bench, Benchmark
from accelbench.grid.cells import Grid, ModelOn, device_absent, device_unsupported, params
from accelbench.judge import projection
from accelbench.kinds.data_scaling import work as growth
from accelbench.kinds.data_scaling.result import MEMORY_PROJECTION, TIME_PROJECTION, DataScaling, Projected
from accelbench.kinds.data_scaling.settings import DataScalingSettings
from accelbench.processes.workers import WorkerFailed
from accelbench.results import costs
from accelbench.results.summary import Section
from accelbench.run import presets

SETTINGS = "data_scaling"  # its settings' name in run.presets.KIND_SETTINGS (settings.py)
# What the worker without TensorFlow runs for it (growth.MEASURED_APART's models)
BUILD_APART, PEAKS_APART, FORGET_APART = (
    f"accelbench.kinds.data_scaling.work:{name}" for name in ("build_apart", "peaks_apart", "forget_apart")
)
DOUBLED_CUBIC = 8  # how much longer an O(n^3) fit takes on twice the data


class DataScalingBench(Bench):
    """Time and host memory of one phase at log-spaced data sizes, fitted, back-tested and
    projected to the run's target size.

    Peaks are measured in setup (memray runs one tracker at a time, and pytest-memray may
    track the body); the body times every size in interleaved rounds through pytest-benchmark
    (one pytest-benchmark round is the whole sweep).
    """

    cell: ModelOn
    phase: str = ""

    @property
    def settings(self) -> DataScalingSettings:
        return self.session.grid.settings[SETTINGS]

    @property
    def slot(self) -> int:
        return growth.PHASES[self.phase].slot

    def setup(self, node: pytest.Item) -> None:
        dataset, spec, phase = self.dataset, MODELS[self.cell.model], growth.PHASES[self.phase]
        self.work = phase.works[spec.framework](
            self.name, spec, dataset, self.placement(), self.session.run.model_options
        )
        sizes = growth.ladder(self.settings.smallest[self.slot], len(phase.images(dataset)), self.work.unit)
        if len(sizes) < projection.MIN_SIZES:
            pytest.skip(
                f"{dataset.key} gives {len(sizes)} sizes {list(sizes)} for {self.phase}; a fit "
                f"needs {projection.MIN_SIZES} (more data, or a smaller preset start)"
            )
        self.peaks = self.measure_peaks(sizes)
        if len(self.peaks.sizes) < projection.MIN_SIZES:  # a busy machine can stop the ladder early
            pytest.skip(
                f"{len(self.peaks.sizes)} sizes measured for {self.phase} ({self.peaks.stopped}); a fit "
                f"needs {projection.MIN_SIZES}"
            )

    def measure_peaks(self, sizes: tuple[int, ...]) -> growth.Peaks:
        """Every size's host peaks: here, or for a model of growth.MEASURED_APART in a worker
        that has not loaded TensorFlow, on the work its builder makes there as here."""
        repeats, slowest = self.settings.memory_repeats, self.settings.slowest_seconds
        if MODELS[self.cell.model].framework not in growth.MEASURED_APART:
            return growth.measure_peaks(
                lambda size: growth.peaks_at(self.work, size, repeats), sizes, slowest, self.say
            )
        key = f"growth:{self.name}"
        # A size is the last once its warm-up passes `slowest`, so one call (its warm-up and
        # `repeats` tracked runs) may hold a size a doubling past that: an O(n^3) fit, 8x.
        deadline = max(self.session.run.worker_deadline_s, (repeats + 1) * slowest * DOUBLED_CUBIC)
        run = self.session.run
        try:
            self.apart(
                BUILD_APART,
                key=key,
                where=self.name,
                model=self.cell.model,
                phase=self.phase,
                dataset=run.dataset_of(self.cell.model),
                data_dir=str(run.data_dir) if run.data_dir else None,
                head=run.preset.max_train_samples,
                options=dataclasses.asdict(run.model_options),
            )
            peaks = growth.measure_peaks(
                lambda size: growth.SizePeaks(
                    **self.apart(PEAKS_APART, deadline_s=deadline, key=key, size=size, repeats=repeats)
                ),
                sizes,
                slowest,
                self.say,
            )
        except WorkerFailed as error:
            pytest.fail(f"{self.name}: {error}", pytrace=False)
        self.apart(FORGET_APART, key=key)
        return peaks

    def __call__(self, benchmark: Any) -> None:
        sizes = self.peaks.sizes
        seconds = benchmark.pedantic(
            growth.time_rounds,
            args=(self.work, sizes, self.settings.rounds, self.say),
            rounds=1,
            iterations=1,
        )
        target = self.session.run.target_sizes[self.slot]
        time = projection.project(projection.Curve(sizes, seconds), target)
        peak = projection.project(projection.Curve(sizes, self.peaks.peaks), target)
        reasons = self.unsafe_reasons(time, peak)
        self.record(
            DataScaling(
                device=self.placement().description,
                phase=self.phase,
                work=self.work.description,
                sizes=list(sizes),
                seconds=projection.medians(seconds),
                seconds_rounds=[list(r) for r in seconds],
                peak_memory_bytes=[int(x) for x in projection.medians(self.peaks.peaks)],
                sizes_stopped=self.peaks.stopped,
                target_n=target,
                machine_memory_bytes=self.session.sizing.machine_memory,
                projection_verdict=projection.verdict(reasons),
                unsafe_reasons=reasons,
                memray_tracking=self.session.run.memray_tracking,
            ),
            _projected(time, TIME_PROJECTION),
            _projected(peak, MEMORY_PROJECTION),
        )
        self.session.projections.append(
            costs.ProjectedTime(
                self.cell.model, self.phase, self.cell.device, target, time.value, time.ci95, tuple(reasons)
            )
        )

    def unsafe_reasons(self, time: projection.Projection, peak: projection.Projection) -> list[str]:
        """Everything that keeps the projection from being a safe extrapolation: distance, the
        fits' own doubts, and what the target sizes would need of machines like this one."""
        reasons = projection.beyond_data(time) + projection.doubts(time, "time", "s")
        reasons += projection.doubts(peak, "memory", "B")
        return reasons + growth.regime_reasons(
            MODELS[self.cell.model],
            self.phase,
            self.dataset.input_shape,
            time.target,
            peak.value,
            self.session.sizing.machine_memory,
        )


def _projected(fit: projection.Projection, naming: dict[str, str]) -> Projected:
    """One projection's numbers, as the data-scaling cell records them."""
    backtest = fit.backtest
    return Projected(
        **naming,
        exponent=fit.exponent,
        exponent_stderr=fit.exponent_stderr,
        loglog_exponent=fit.loglog_exponent,
        loglog_exponent_stderr=fit.loglog_stderr,
        fit={"a": fit.fit.a, "b": fit.fit.b, "k": fit.fit.k},
        projected=fit.value,
        projected_ci95=list(fit.ci95),
        backtest_ok=fit.backtest_ok,
        backtest=None
        if backtest is None
        else {
            "size": backtest.size,
            "measured": backtest.measured,
            "predicted": backtest.predicted,
            "ci95": list(backtest.ci95),
        },
    )


class TrainDataScalingBench(DataScalingBench):
    phase = "train"


class PredictDataScalingBench(DataScalingBench):
    phase = "predict"


# Its cells: what grid the kind runs over, and why a cell is skipped.
def not_data_scaled(grid: Grid, cell) -> str | None:
    settings: DataScalingSettings = grid.settings[SETTINGS]
    scaled = presets.chosen(settings.models)
    if cell.model in scaled:
        return None
    return f"this preset scales the data for {', '.join(scaled)} only; --preset full scales every model"


def data_scaling_cells(grid: Grid) -> list:
    """Every model on every device: time and memory as the data grows."""
    cells = [ModelOn(d, m) for d, m in itertools.product(grid.devices, grid.models)]
    return params(grid, cells, (device_absent, device_unsupported, not_data_scaled))


# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 70
# This module's benchmark kinds, by fixture name (benches/catalog.py registers them): each
# with its cells, its Bench, what it judges, its summary tables and its report's plots.
KINDS: dict[str, Benchmark] = {
    "train_data_scaling": Benchmark(
        data_scaling_cells,
        TrainDataScalingBench,
        "test_train_data_scaling",
        file="test_data_scaling.py",
        file_doc="Time and memory as the data grows, fitted and projected to sizes far beyond the data.",
        about="Training time and memory as the training set grows, projected (kinds/data_scaling).",
        plots=("data_size",),
    ),
    "predict_data_scaling": Benchmark(
        data_scaling_cells,
        PredictDataScalingBench,
        "test_predict_data_scaling",
        file="test_data_scaling.py",
        about="Prediction time and memory as the test set grows, projected (kinds/data_scaling).",
        sections=(
            Section(
                "data scaling: time exponent k in a + b·n^k",
                {"train_data_scaling": "train", "predict_data_scaling": "predict"},
                Projected.key_for("exponent", **TIME_PROJECTION),
                "two_places",
                stderr=Projected.key_for("exponent_stderr", **TIME_PROJECTION),
            ),
        ),
    ),
}
