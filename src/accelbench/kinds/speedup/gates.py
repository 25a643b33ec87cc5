"""The speedups' gates: a speedup may not drop past its tolerance below this machine's
baseline, and only where the interleaved pairs show the drop."""

from __future__ import annotations

from accelbench.judge.gates import GATES, GateSpec
from accelbench.judge.rules import RelativeDrop
from accelbench.option import Option, fraction

SPEEDUP_TOLERANCE = Option(
    "--speedup-tolerance", fraction, "FRACTION", "Relative speedup drop allowed below a baseline.", "0.3"
)
# A device speedup is gated twice on an accelerator: as its inputs come from the host, and with
# them lying on the device from the start (bench.py).
for _metric in ("speedup", "speedup_inputs_on_device"):
    GATES.register(
        _metric,
        GateSpec(
            _metric,
            "speedup.json",
            lambda s: (s.hardware, s.backend, s.dataset.name),
            lambda tolerances: RelativeDrop(SPEEDUP_TOLERANCE.of(tolerances)),
            timed=True,
            significance=True,
            fingerprints=2,
        ),
    )
