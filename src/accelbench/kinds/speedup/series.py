"""The speedup's series in `accelbench history` (results.history.series.NUMBERS)."""

from __future__ import annotations

from accelbench.kinds.speedup.result import Speedup
from accelbench.results.history.series import NUMBERS, Number, info_number

NUMBERS.register(
    "speedup",
    Number("speedup", info_number(Speedup.keys.speedup), True, lambda value: f"{value:.2f}x"),
    origin=__name__,
)
