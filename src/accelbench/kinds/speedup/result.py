"""The speedup and harness-overhead cells' results, typed (accelbench.measured.Part): no
framework, no pytest."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.measured import Part


@dataclass(frozen=True)
class Speedup(Part):
    """One trainer's best round over another's (batch or device), and their interleaved pairs."""

    speedup: float | None = None
    interleaved_speedup: float | None = None
    reference: str | None = None
    candidate: str | None = None
    reference_samples_per_s: float | None = None
    candidate_samples_per_s: float | None = None
    pair_ratios: list[float] | None = None
    # An accelerator over the CPU once more, its inputs lying on the device from the start: no
    # host-to-device copy in its rounds (the copy's cost: speedup_inputs_on_device over speedup)
    speedup_inputs_on_device: float | None = None
    inputs_on_device_samples_per_s: float | None = None
    inputs_on_device_pair_ratios: list[float] | None = None


@dataclass(frozen=True)
class HarnessOverhead(Part):
    harness_efficiency: float | None = None
    harness_efficiency_ci95: list[float] | None = None
    best_round_ratio: float | None = None
    suite_samples_per_s: float | None = None
    hand_loop_samples_per_s: float | None = None
    pair_ratios: list[float] | None = None
