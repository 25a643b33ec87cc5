"""What crosses to another process, declared once: the cell a worker builds (CellSpec, with
the run's settings in RunFields), the calls a worker answers (Cellwork) and their typed replies
(Prepared, Described).

A CellSpec is made from a grid cell in one place (CellSpec.of) and serialized in one place
(to_wire / from_wire): the pytest process sends it, cellwork.py rebuilds it. A new field of
a cell is one edit here.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

from accelbench.axes.precisions import REFERENCE_PRECISION
from accelbench.measured import StepTrace

CELLWORK_MODULE = "accelbench.processes.cellwork"


class Cellwork(enum.Enum):
    """The functions of cellwork.py a worker is asked to run, and their wire name."""

    PREPARE = "prepare"  # build and warm up a cell's work: (spec, steps) -> what it built
    ONE_ROUND = "one_round"  # (key) -> seconds of one round
    ONE_PREDICTION = "one_prediction"  # (key) -> seconds of one waited-for prediction
    ITS_OWN = "its_own"  # (key) -> the work's own numbers (work.builders.its_own), after its rounds
    PEAK = "peak"  # (key) -> host bytes of one round (memray)
    FORGET = "forget"  # (key) -> drop the built work
    TRACE_STEPS = "trace_steps"  # (spec, directory, cell_name) -> where the step trace went
    DESCRIBE = "describe"  # () -> the worker's backend, versions and fingerprint
    ROOF = "roof"  # (device, dtype, intra_op_threads, kept) -> measured.Roof's JSON, by this backend
    # (target, spec, arguments) -> a kind's own work in a worker: `target`, "module:function",
    # called with the cell's Site built from `spec` and `arguments`; its JSON reply as it is
    KIND_WORK = "kind_work"
    # (target, run, arguments) -> a kind's own function called with `arguments` and no cell
    # built (work apart from any Keras backend), the run's user modules imported first; its JSON
    KIND_CALL = "kind_call"

    @property
    def target(self) -> str:
        """`module:function`, as worker_main resolves it."""
        return f"{CELLWORK_MODULE}:{self.value}"

    def reply(self, wire: Any) -> Any:
        """The call's answer as its type (REPLIES), from the JSON the worker sent (worker_main
        writes a dataclass as its fields); a plain number, list or None as it came."""
        made = REPLIES.get(self)
        return made(**wire) if made is not None and isinstance(wire, dict) else wire


@dataclass(frozen=True)
class Prepared:
    """What a worker built for a cell (Cellwork.PREPARE), and what it measured while building."""

    compile_seconds: float
    steps: int  # per round, as the pytest process calibrated them (or the worker, if it did not)
    samples_per_round: int
    flops_per_sample: float | str | None  # "unknown: why" (a layer not counted); None: the work counts none
    device: str
    jit_compile: bool
    # a sample's executed FLOPs and bytes moved (axes/flops.Costs; flat: a reply crosses as JSON)
    executed_flops_per_sample: float | None = None
    bytes_per_sample: float | None = None
    call_seconds: float | None = None  # a round's call's own cost, where the work sized its steps by it
    call_share: float | None = None
    weights_on: str | None = None  # where its model's weights lie (work/builders.py weights_device)


@dataclass(frozen=True)
class Described:
    """What a worker's environment is (Cellwork.DESCRIBE)."""

    backend: str
    compiles: bool
    versions: dict[str, str]
    fingerprint: str


REPLIES: dict[Cellwork, type] = {
    Cellwork.PREPARE: Prepared,
    Cellwork.DESCRIBE: Described,
    Cellwork.TRACE_STEPS: StepTrace,  # a result part (accelbench.measured): it crosses as itself
}


@dataclass(frozen=True)
class RunFields:
    """What a worker needs of the run to build a cell as the pytest process does."""

    dataset: str | None  # --dataset: every model's data; None: each model's own (dataset_of)
    data_dir: str | None
    max_train_samples: int | None
    deep_layers: int
    seed: int
    intra_op_threads: int
    round_seconds: float
    predict_round_seconds: float
    modules: tuple[str, ...] = ()  # the user's modules (--modules), imported before a cell is built
    module_roots: tuple[str, ...] = ()  # where the pytest process found them
    full_size_inputs: bool = False  # the preset's: a model's data at its full input size

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> RunFields:
        """As asdict wrote it: its tuples as lists."""
        return cls(
            **{**wire, "modules": tuple(wire.get("modules", ())), "module_roots": tuple(wire.get("module_roots", ()))}
        )

    def dataset_of(self, model: str) -> str:
        """The dataset `model` runs on, as the pytest process chose it (its user's modules
        imported first: a model of theirs names a dataset of theirs)."""
        from accelbench.axes.models import MODELS

        return MODELS[model].dataset_in(self.dataset, self.full_size_inputs)


@dataclass(frozen=True)
class CellSpec:
    """A cell as a worker builds it: the one typed message for a cell across processes."""

    key: str  # names the built work in the worker until it is forgotten
    work: str  # "train", "inference" or a user's (work.builders.WORKS): which work cellwork builds
    cell_id: str
    device: str
    batch_size: int
    model: str
    precision: str
    run: RunFields

    @classmethod
    def of(cls, work_name: str, cell: Any, run: RunFields, tag: str = "") -> CellSpec:
        """The spec of a grid cell (grid.cells.Cell); `tag` tells apart two builds of one cell."""
        key = f"{work_name}:{cell.id}" + (f":{tag}" if tag else "")
        return cls(
            key,
            work_name,
            cell.id,
            cell.device,
            cell.batch_size,
            cell.model,
            getattr(cell, "precision", REFERENCE_PRECISION),
            run,
        )

    def to_wire(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> CellSpec:
        return cls(**{**wire, "run": RunFields.from_wire(wire["run"])})
