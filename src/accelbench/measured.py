"""What a cell measured, typed: the parts of a result a benchmark kind's work returns, each a
frozen dataclass. A part crosses processes as its fields (plain JSON), goes into
pytest-benchmark's extra_info in one place (Bench.record) and is read back by field
(`Throughput.of(info).samples_per_s`), so no result key is spelled in two modules.

extra_info stays flat, each field under the key saved runs have always used (SCHEMA_VERSION
1): a run saved before the parts existed reads as one saved now.
A few parts name their keys after what they measure (a recipe's quality: `accuracy`,
`target_accuracy`; a projection's quantity: `projected_seconds`): their KEYS say how, from the
fields in NAMING, which name keys and are not written themselves.

No framework, no pytest: the judge, the report and the history read these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

P = TypeVar("P", bound="Part")

# The layout of what a run saves beside pytest-benchmark's own (extra_info, the JSON's
# `accelbench` section): 1 adds `sections`, 2 `plots` and `roofs`; a run saved before has none (read as 0). A reader
# refuses a run of a newer layout than its own, in one line, rather than misread it. The parts
# below write the keys every layout has had.
SCHEMA_VERSION = 2

# Beside the parts, what the plugin adds to every cell's extra_info: where it is in the grid
# (benchmark fixture, device, model, column, the cell's fields) and its verdicts' JSON.
CELL_KEY = "accelbench_cell"
VERDICTS_KEY = "verdicts"


def plain(value: Any) -> Any:
    """A number as a float (the saved runs have them so, and the JSON must not depend on
    numpy's types); anything else as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


class _KeysOf:
    """`Part.keys.samples_per_s` -> "samples_per_s": a key by attribute, so a reader that names
    one the part does not have fails at import, not with a silently missing column."""

    def __init__(self, part: type[Part]) -> None:
        self.part = part

    def __getattr__(self, name: str) -> str:
        return self.part.key_for(name)


class _Keys:
    def __get__(self, instance: Any, owner: type[Part]) -> _KeysOf:
        return _KeysOf(owner)


@dataclass(frozen=True)
class Part:
    """A typed part of a cell's result. Every field defaults to None: a part read from an older
    run, or from a cell that did not measure a field, has None there, never a KeyError."""

    KEYS: ClassVar[Mapping[str, str]] = {}  # field -> its key, a template over the NAMING fields
    # field -> the key runs saved before a rename wrote it under: read where the key is missing,
    # so an older run still loads (its numbers under today's names)
    FORMERLY: ClassVar[Mapping[str, str]] = {}
    NAMING: ClassVar[tuple[str, ...]] = ()
    keys: ClassVar[_Keys] = _Keys()  # Part.keys.<field>: its key

    @classmethod
    def key_for(cls, name: str, **naming: str) -> str:
        if name not in {f.name for f in dataclasses.fields(cls)} or name in cls.NAMING:
            raise AttributeError(f"{cls.__name__} has no result field {name!r}")
        return cls.KEYS.get(name, name).format(**naming)

    def naming(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in self.NAMING}

    def entries(self) -> dict[str, Any]:
        """Its extra_info entries: the fields measured (None left out), as plain JSON."""
        return {
            type(self).key_for(f.name, **self.naming()): plain(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.name not in self.NAMING and getattr(self, f.name) is not None
        }

    @classmethod
    def of(cls: type[P], info: Mapping[str, Any], **naming: str) -> P:
        """The part as a cell's extra_info holds it (a saved run's, or this run's)."""
        return cls(
            **naming,
            **{
                f.name: info.get(cls.key_for(f.name, **naming), info.get(cls.FORMERLY.get(f.name, "")))
                for f in dataclasses.fields(cls)
                if f.name not in cls.NAMING
            },
        )

    @classmethod
    def fields_of(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if f.name not in cls.NAMING)


@dataclass(frozen=True)
class Place(Part):
    """Where a cell sits in the grid: the plugin writes its fixture's name and the cell's fields
    under CELL_KEY (other cells' fields too: a subset, a replica count)."""

    benchmark: str | None = None
    device: str | None = None
    model: str | None = None
    column: str | None = None
    batch_size: int | None = None
    backend: str | None = None
    precision: str | None = None
    model_name: str | None = None
    dataset: str | None = None  # the data the cell's model ran on (its own, or the run's --dataset)
    reference: str | None = None  # a pair's: the cell it is compared with (grid.cells.Pair)

    @classmethod
    def read(cls, info: Mapping[str, Any]) -> Place | None:
        where = info.get(CELL_KEY)
        return cls.of(where) if isinstance(where, Mapping) else None


# --- every timed cell ------------------------------------------------------------------------


@dataclass(frozen=True)
class Timed(Part):
    """Rounds of fixed work timed through pytest-benchmark: seconds per sample of each round
    (what a compared run's rounds are judged against), the work and where it ran."""

    work: str | None = None  # train, inference, latency, svm_fit
    cell: str | None = None  # the cell's id
    device: str | None = None  # the placement, in words
    seconds_per_sample: list[float] | None = None


@dataclass(frozen=True)
class Placed(Part):
    """Where a cell's model's weights lay once built, as its backend placed them (gpu:0; several
    joined by commas), checked against the device the cell's name asks for
    (backends.placed_elsewhere): training, inference, latency, memory, serving and token cells
    with a Keras model."""

    weights_on: str | None = None


@dataclass(frozen=True)
class Throughput(Part):
    """Steady-state rounds of a trainer or predictor: samples/s from the median round, and what
    the rounds were made of."""

    batch_size: int | None = None
    steps_per_round: int | None = None
    compile_seconds: float | None = None  # the first call's, from the build
    jit_compile: bool | None = None
    samples_per_s: float | None = None
    flops_per_sample: float | str | None = None  # "unknown: why" where a layer is not counted
    achieved_flops: float | None = None
    worker_round_seconds: list[float] | None = None  # another backend's: its worker's own clock
    pipe_seconds: float | None = None  # what the pipe to that worker added at the median round
    # fit()'s own cost per call (beyond its steps) and its share of a round, where the steps were
    # sized to keep it within work/measure.py's MAX_CALL_SHARE
    call_seconds: float | None = None
    call_share: float | None = None


@dataclass(frozen=True)
class Utilization(Part):
    """How far a throughput cell is from its device's measured roofs (axes/backends/roof_kernels.py): model FLOPs
    utilization (achieved FLOP/s over the compute roof, as the PaLM paper defines MFU) and
    arithmetic intensity (FLOPs over the bytes a sample moves, estimated per layer: axes/flops.py)."""

    # A compute limit is a roof, never a peak (a peak is memory's): saved before as peak_*
    FORMERLY: ClassVar[Mapping[str, str]] = {
        "roof_flops": "peak_flops",
        "roof_dtype": "peak_dtype",
        "roof_device": "peak_device",
    }

    roof_flops: float | None = None  # the compute roof of the cell's device and dtype
    roof_dtype: str | None = None
    roof_device: str | None = None  # the device the roof was measured on, as its backend names it (Roof.device)
    roof_backend: str | None = None  # the backend that measured the roof (Roof.backend; runs saved before: TensorFlow)
    mfu: float | None = None  # by model FLOPs (the convention's count)
    hfu: float | None = None  # by the FLOPs the kernels execute (padded taps left out): what the roof bounds
    bytes_per_sample: float | None = None
    arithmetic_intensity: float | None = None  # FLOPs per byte


# The kernels a bandwidth roof is measured by (axes/backends/roof_kernels.py), as Roof names them.
TRIAD, MATVEC = "a STREAM triad", "a matrix-vector product"


@dataclass(frozen=True)
class Roof:
    """A device's measured roofs in one compute dtype: what a saved run holds (ROOFS_KEY), the
    denominator of every cell's utilization and the roofline's lines."""

    device: str  # as its backend names it: /cpu:0 (TensorFlow's), cpu:0, gpu:1
    dtype: str
    flops_per_s: float  # the best rate of a square matmul at the size that saturated it
    bytes_per_s: float  # the better of a STREAM triad's and a matrix-vector product's
    matmul_size: int
    seconds: float  # what measuring took
    backend: str = "tensorflow"  # the Keras backend that measured it (runs saved before: TensorFlow)
    bandwidth_kernel: str = TRIAD  # which gave bytes_per_s (runs saved before: the triad)

    def as_json(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, saved: Mapping[str, Any]) -> Roof:
        roof = cls(
            **{f.name: saved[f.name] for f in dataclasses.fields(cls) if f.name in saved}
        )  # a field missing: TypeError
        return dataclasses.replace(roof, matmul_size=int(roof.matmul_size))  # JSON keeps numbers as floats

    def best_of(self, other: Roof) -> Roof:
        """Each roof at the higher of two measurements: noise only ever lowers a rate."""
        compute = self if self.flops_per_s >= other.flops_per_s else other
        bandwidth = self if self.bytes_per_s >= other.bytes_per_s else other
        return dataclasses.replace(
            compute,
            bytes_per_s=bandwidth.bytes_per_s,
            bandwidth_kernel=bandwidth.bandwidth_kernel,
            seconds=self.seconds + other.seconds,
        )

    @property
    def ridge_intensity(self) -> float:
        """FLOPs per byte where the bandwidth roof meets the compute roof."""
        return self.flops_per_s / self.bytes_per_s


ROOFS_KEY = "roofs"  # the saved JSON's accelbench section: the roofs measured for the run, as Roof.as_json


@dataclass(frozen=True)
class BackendUsed(Part):
    """The Keras backend a cell ran on, its packages' versions and what compiles it."""

    backend: str | None = None
    backend_versions: dict[str, str] | None = None
    compiled_with: str | None = None


@dataclass(frozen=True)
class PrecisionUsed(Part):
    """The cell's dtype policy, and on a CPU whether it computes natively in it, and why not."""

    precision: str | None = None
    precision_arithmetic: str | None = None
    precision_note: str | None = None
    float32_arithmetic: str | None = None


@dataclass(frozen=True)
class AgainstTensorflow(Part):
    """Another backend's time per sample over tensorflow's, round for round with the same cell."""

    time_per_sample_over_tensorflow: float | str | None = None  # "not measured: why" under memray
    time_per_sample_over_tensorflow_ci95: list[float] | None = None
    time_per_sample_over_tensorflow_pairs: int | None = None
    tensorflow_round_seconds: list[float] | None = None
    tensorflow_steps_per_round: int | None = None


@dataclass(frozen=True)
class AgainstB(Part):
    """An A/B run's rounds of this cell in worker A and worker B, interleaved, judged B against A."""

    ab_environment_b: str | None = None
    ab_ratio: float | None = None
    ab_ci95: list[float] | None = None
    ab_p_value: float | None = None
    ab_pairs: int | None = None
    ab_verdict: str | None = None
    ab_steps_per_round: int | None = None
    ab_a_round_seconds: list[float] | None = None
    ab_b_round_seconds: list[float] | None = None
    ab_a_compile_seconds: float | None = None
    ab_b_compile_seconds: float | None = None
    ab_a_peak_memory_bytes: int | None = None
    ab_b_peak_memory_bytes: int | None = None
    ab_compile_seconds_at_once: list[float] | None = None  # where B looked slower to compile
    ab_compile_seconds_alone: list[float] | None = None


@dataclass(frozen=True)
class Workers(Part):
    """The worker processes a cell used (a test checks none outlives the run)."""

    worker_process_ids: list[int] | None = None  # a backend's or an A/B run's
    process_ids: list[int] | None = None  # tf.distribute jobs'


@dataclass(frozen=True)
class StepTrace(Part):
    """Where a cell's step trace was written (--trace-dir)."""

    trace_dir: str | None = None  # the backend profiler's (TensorBoard's) folder
    chrome_trace: str | None = None  # the steps' spans, for chrome://tracing or Perfetto
    traced_steps: int | None = None
    traced_step_ms: list[float] | None = None
    profiler: str | None = None  # the backend whose profiler took it


# Every part a built-in kind records: a test reads each field of each back from a saved run.
PARTS: tuple[type[Part], ...] = (
    Place,
    Timed,
    Placed,
    Throughput,
    BackendUsed,
    PrecisionUsed,
    AgainstTensorflow,
    AgainstB,
    Workers,
    StepTrace,
)
