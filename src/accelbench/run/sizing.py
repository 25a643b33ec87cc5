"""How big a run may go: training-step memory over a ladder of batch sizes, the largest batch
that fits, and the batch sweep up to it (the full preset)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accelbench import units
from accelbench.axes.devices import is_accelerator, type_of
from accelbench.axes.models import MODELS
from accelbench.grid.cells import Cell
from accelbench.run.config import RunConfig
from accelbench.work import memory
from accelbench.work.training import OneStep


@dataclass(frozen=True)
class Scaling:
    """One model's training-step host peaks over a ladder of batch sizes, and what follows."""

    batch_sizes: tuple[int, ...]
    peaks: tuple[int, ...]
    fit: memory.LinearFit
    estimate: memory.Estimate
    budget: int
    largest_batch: int | None  # None: not even the smallest batch fits
    searched_by: str  # how fits(batch) was answered


class Sizing:
    """Measures what it needs through the callables it is given (the run context's), so it
    does not hold the run context: a device's presence, a cell's training step, the number of
    training samples, each asked only when a sweep needs it."""

    def __init__(
        self,
        run: RunConfig,
        one_step: Callable[[Cell], OneStep],
        present: Callable[[str], bool],
        training_samples: Callable[[str], int],  # of a model's data
    ) -> None:
        self.run = run
        self.one_step = one_step
        self.present = present
        self.training_samples = training_samples
        self._scalings: dict[tuple[str, str], Scaling] = {}

    @property
    def budget(self) -> int:
        return self.run.memory_budget

    @property
    def machine_memory(self) -> int:
        """Physical memory of this machine: what one machine of this kind can hold."""
        return memory.physical_memory_bytes() or 2 * self.budget

    def scaling(self, device: str, model: str) -> Scaling:
        """Measured once per device and model: the ladder's peaks, their fit and the largest batch.

        Called outside test bodies (fixture setup, collection): pytest-memray may be tracking
        a test body, and memray runs one tracker at a time.
        """
        key = (device, model)
        if key not in self._scalings:
            ladder = self.run.preset.sizing.ladder
            step = self.one_step(Cell(device, ladder[0], model))
            steps = [step, *(step.resized(b) for b in ladder[1:])]
            peaks = tuple(memory.median_host_peak(s.run) for s in steps)
            fit = memory.fit_line(ladder, peaks)
            estimate = memory.estimate(step.model)
            fits, searched_by = self._fits_predicate(step, fit, estimate)
            largest = memory.largest_fitting(fits, start=1, limit=self._search_limit(estimate))
            self._scalings[key] = Scaling(ladder, peaks, fit, estimate, self.budget, largest, searched_by)
        return self._scalings[key]

    def _fits_predicate(self, step: OneStep, fit: memory.LinearFit, estimate: memory.Estimate):
        if not is_accelerator(step.placement.device_type):
            return (
                memory.budget_predicate(fit, estimate.resident, self.budget),
                f"predicted: resident state + fitted step peak <= {units.format_bytes(self.budget)}",
            )
        return (
            memory.oom_predicate(lambda batch_size: step.resized(batch_size)),
            f"probed: real steps on {step.placement.description} until out of memory",
        )

    def _search_limit(self, estimate: memory.Estimate) -> int:
        """No batch whose input alone would take a quarter of the budget on the host."""
        return max(1, min(memory.MAX_SEARCH_BATCH, self.budget // (4 * max(1, estimate.input_per_sample))))

    def sweep(self, device: str, model: str) -> tuple[int, ...]:
        """Doubling batch sizes from the preset's smallest up to the largest that fits, or the
        training set's size: a batch larger than the data set is not a batch."""
        spec, run = MODELS[model], self.run
        start = min(run.batch_sizes)
        if not spec.batch_trained or not self.present(device) or type_of(device) not in spec.device_types:
            return run.batch_sizes
        ceiling = min(self.scaling(device, model).largest_batch or 0, self.training_samples(model))
        sizes = []
        while start <= ceiling:
            sizes.append(start)
            start *= 2
        return tuple(sizes) or (min(run.batch_sizes),)
