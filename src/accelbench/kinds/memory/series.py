"""The memory cells' peaks in `accelbench history` (results.history.series.NUMBERS)."""

from __future__ import annotations

from accelbench.kinds.memory.result import StepMemory
from accelbench.results.history.series import NUMBERS, Number, info_number
from accelbench.units import format_bytes

# A commit's peak is the largest of its runs' peaks: what the machine must hold. A peak takes a
# few values an allocator arena apart (1.02 or 1.09 MiB, run after run), and the median of three
# of them stays on one value for a few commits and then the other, which reads as a level: over
# 14 commits of 3 runs (10 unchanged, 4 with a sleep planted in each round) it named 2 memory
# changes, the largest none (docs/measurements.md).
for _peak in (StepMemory.keys.peak_memory_bytes, StepMemory.keys.device_peak_memory_bytes):
    NUMBERS.register(
        _peak, Number(_peak, info_number(_peak), False, format_bytes, floor=0.02, per_commit=max), origin=__name__
    )
