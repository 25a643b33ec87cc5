"""What a cell ran with and what its rounds come to, as result parts: the Keras backend, the
dtype policy, the throughput; made the same way whether the cell ran in the pytest process or
in a worker."""

from __future__ import annotations

import os
from typing import Any

import pytest

from accelbench.axes.backends import BACKENDS, FLOAT32_IEEE, PROCESS_BACKEND, placed_elsewhere
from accelbench.axes.devices import is_accelerator, type_of
from accelbench.axes.flops import Costs
from accelbench.axes.precisions import PRECISIONS
from accelbench.judge import fingerprint
from accelbench.measured import BackendUsed, Placed, PrecisionUsed, Roof, Throughput, Utilization


def backend_here() -> BackendUsed:
    """The pytest process's own backend, recorded as a worker's is."""
    backend = BACKENDS[PROCESS_BACKEND]
    return BackendUsed(
        backend=backend.name,
        backend_versions=fingerprint.versions(backend.packages),
        compiled_with=backend.compiles,
    )


def precision_used(cell: Any) -> PrecisionUsed:
    """The cell's dtype policy, and on a CPU whether it computes natively in it, and why not."""
    precision = PRECISIONS[cell.precision]
    arithmetic, note = None, None
    if not is_accelerator(type_of(cell.device)):
        arithmetic, note = precision.cpu_arithmetic(
            fingerprint.cpu_flags(), os.environ, getattr(cell, "backend", PROCESS_BACKEND)
        )
    return PrecisionUsed(
        precision=precision.name,
        precision_arithmetic=arithmetic,
        precision_note=note,
        float32_arithmetic=FLOAT32_IEEE,
    )


def placed_as_asked(bench: Any, weights_on: str | None) -> None:
    """Record where the cell's model's weights lie once built, and fail the cell in one line where
    that is another kind of device than its name asks for: the device a cell asks for is what
    it reports, so it is checked, on every backend, where the work was built."""
    bench.record(Placed(weights_on=weights_on))
    error = placed_elsewhere(bench.name, bench.cell.device, weights_on)
    if error:
        pytest.fail(error, pytrace=False)


# What a work that counts no FLOPs (a user's, whose flops_per_sample returns None) reports.
NOT_COUNTED = "unknown: this work does not count its FLOPs (its flops_per_sample returns None)"


def throughput(
    samples_per_round: int, median_round: float | None, flops_per_sample: float | str | None, **measured: Any
):
    """Samples/s from the median round (none under --benchmark-disable), and FLOP/s where the
    model's work is counted; "unknown: why" where it is not (axes/flops.py), never a silent 0."""
    if not median_round:
        return Throughput(**measured)
    samples_per_s = samples_per_round / median_round
    if flops_per_sample is None or isinstance(flops_per_sample, str):
        unknown = flops_per_sample or NOT_COUNTED
        return Throughput(samples_per_s=samples_per_s, flops_per_sample=unknown, **measured)
    return Throughput(
        samples_per_s=samples_per_s,
        flops_per_sample=flops_per_sample,
        achieved_flops=flops_per_sample * samples_per_s,
        **measured,
    )


# Above this share of the measured compute roof a cell's FLOP/s is a measurement error (a wrong
# FLOP count, or a clock that stopped before the device did), not a result: the roof is the
# best a saturating matmul did on this device, and no model's mix of layers beats it by more
# than the roof's own run-to-run noise.
ABOVE_THE_ROOF = 1.05


def utilization(throughput: Throughput, costs: Costs, roof: Roof | None) -> Utilization:
    """The cell's share of its device's compute roof, by model FLOPs (MFU) and by the FLOPs its
    kernels execute (HFU), and its FLOPs per byte."""
    flops = throughput.flops_per_sample if isinstance(throughput.flops_per_sample, (int, float)) else None
    intensity = flops / costs.bytes if flops is not None and costs.bytes else None
    if roof is None or throughput.achieved_flops is None:
        return Utilization(bytes_per_sample=costs.bytes, arithmetic_intensity=intensity)
    executed = costs.executed_flops * throughput.samples_per_s if costs.executed_flops is not None else None
    return Utilization(
        roof_flops=roof.flops_per_s,
        roof_dtype=roof.dtype,
        roof_device=roof.device,
        roof_backend=roof.backend,
        mfu=throughput.achieved_flops / roof.flops_per_s,
        hfu=executed / roof.flops_per_s if executed is not None else None,
        bytes_per_sample=costs.bytes,
        arithmetic_intensity=intensity,
    )


def above_the_roof(cell_name: str, used: Utilization) -> str | None:
    """The one-line failure of a cell faster than its device can be (by the FLOPs its kernels
    execute, where they are counted: the convention's count may exceed the roof on small padded
    images, and is shown as MFU), or None."""
    share = used.hfu if used.hfu is not None else used.mfu
    if share is None or share <= ABOVE_THE_ROOF:
        return None
    return (
        f"{cell_name}: {share * used.roof_flops:.3g} FLOP/s executed is {share:.0%} of this device's measured "
        f"{used.roof_dtype} roof ({used.roof_flops:.3g} FLOP/s; more than {ABOVE_THE_ROOF:.0%} is a measurement "
        "error: a FLOP count too high, or a clock stopped before the device finished), not a result"
    )


def record_rates(bench: Any, rates: Throughput, costs: Costs) -> None:
    """Record a cell's throughput and, beside it, its utilization of the device's measured roof
    (measured once per device and dtype: run/roofs.py); a cell above the roof fails here, as
    a measurement error, before its numbers are recorded. Its utilization is restated if the
    roof is measured again later in the run: every cell of a run against one roof."""
    where = (getattr(bench.cell, "backend", PROCESS_BACKEND), bench.cell.device)
    dtype = PRECISIONS[getattr(bench.cell, "precision", "float32")].compute
    if rates.achieved_flops is None or BACKENDS[where[0]].roof is None:  # no roof to hold it to
        bench.record(rates, utilization(rates, costs, None))
        return
    used = utilization(rates, costs, bench.session.roofs.of(*where, dtype))
    if above_the_roof(bench.name, used):  # the roof may have been measured in a busy moment
        used = utilization(rates, costs, bench.session.roofs.of(*where, dtype, again=True))
    error = above_the_roof(bench.name, used)
    if error:
        pytest.fail(error, pytrace=False)
    bench.record(rates)
    bench.session.roofs.hold(*where, dtype, lambda roof: bench.record(utilization(rates, costs, roof)))
