"""Device types (DEVICE_TYPES: cpu, gpu, tpu), the names --devices takes, and the inventory of
the devices a run found. Finding and placing them is the backend's (axes/backends/): a
TensorFlow device scope or tf.distribute strategy there, keras.device elsewhere.

A device type is one DeviceType entry here: the names --devices accepts for it, whether it
is an accelerator (its own allocator's memory, XLA as Keras chooses, the largest batch found
by real steps), and whether it hosts the multi-replica cells."""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from accelbench.judge import fingerprint
from accelbench.judge.fingerprint import Fingerprint, hardware
from accelbench.registry import Registry


def parse_devices(text: str) -> tuple[str, ...]:
    """'cpu,gpu:1' -> ('cpu', 'gpu:1'); 'all' -> () meaning every device present."""
    words = [word.strip().lower() for word in text.split(",") if word.strip()]
    if not words:
        raise ValueError("empty device list")
    if words == ["all"]:
        return ()
    bad = [word for word in words if not _named(word)]
    if bad:
        raise ValueError(
            f"unknown device {bad[0]!r}; use {', '.join(kind.usage for kind in DEVICE_TYPES.values())} or all"
        )
    return tuple(dict.fromkeys(words))


def _named(word: str) -> bool:
    kind = DEVICE_TYPES.get(type_of(word))
    return kind is not None and (word == kind.name or (kind.numbered and re.fullmatch(rf"{kind.name}:\d+", word)))


def type_of(name: str) -> str:
    return name.split(":")[0]


AUTO = "auto"  # Keras' own choice of XLA


def jit_compile_for(kind: str) -> bool | str:
    """XLA for a TensorFlow cell, decided by the cell's own device. Keras' default ("auto",
    Trainer._resolve_auto_jit_compile) turns XLA on whenever the process sees any GPU, whatever
    the model's placement: on a GPU host every CPU cell would be compiled with XLA, which ran
    the cnn 3-9x slower on a CPU here, and every gpu-over-cpu speedup would be inflated. So a
    CPU cell is compiled without XLA, and an accelerator's cell as Keras chooses."""
    return AUTO if is_accelerator(kind) else False


def is_accelerator(kind: str) -> bool:
    return DEVICE_TYPES[kind].accelerator


class Placement(Protocol):
    """Where a cell runs, as the work asks of it (each backend makes its own: the TensorFlow
    backend's tf.device scope or tf.distribute strategy, backends.Neutral elsewhere)."""

    name: str  # as --devices names it: cpu, gpu, gpu:1
    description: str  # what the device is
    FEEDS_ARRAYS: ClassVar[bool]  # fed NumPy arrays (Neutral), or tf.data pipelines (TensorFlow)

    @property
    def device_type(self) -> str: ...
    @property
    def jit_compile(self) -> bool | str: ...
    def scope(self) -> Any: ...


def cpu_description() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass(frozen=True)
class DeviceType:
    """A type of device, as --devices names it (each backend finds its own: Backend.placements)."""

    name: str  # "cpu", "gpu", "tpu": also the name of the placement of every device of the kind
    accelerator: bool  # memory from its own allocator, XLA as Keras chooses, largest batch probed
    numbered: bool = False  # also names one device of several: gpu:0, gpu:1
    # Whether it hosts the multi-replica cells: several replicas of this kind in one fresh
    # process (tf.distribute's, kinds/distributed/job_main.py).
    replicas: bool = False

    @property
    def usage(self) -> str:
        return f"{self.name}, {self.name}:N" if self.numbered else self.name


# Device kinds in the order --devices all lists them; the first is the reference every
# device's speedup and parity are measured against.
DEVICE_TYPES: Registry[DeviceType] = Registry("device type")
DEVICE_TYPES.register("cpu", DeviceType("cpu", accelerator=False, replicas=True))
DEVICE_TYPES.register("gpu", DeviceType("gpu", accelerator=True, numbered=True, replicas=True))
DEVICE_TYPES.register("tpu", DeviceType("tpu", accelerator=True))
REFERENCE_DEVICE = next(iter(DEVICE_TYPES))  # "cpu"


@dataclass(frozen=True)
class Inventory:
    """The devices this machine has, found once per run by the backend that runs them
    (backends.inventory)."""

    placements: dict[str, Placement]
    backend: str = ""  # the Keras backend that found them, and places the cells on them

    def default_names(self) -> tuple[str, ...]:
        """'all': one placement per device type present."""
        return tuple(name for name in DEVICE_TYPES if name in self.placements)

    def get(self, name: str) -> Placement | None:
        return self.placements.get(name)

    def absent_reason(self, name: str) -> str:
        return f"device {name} requested but not present (present: {', '.join(self.placements)})"

    def fingerprint(self) -> Fingerprint:
        """What speedup and memory baselines are keyed by (see fingerprint.py): the
        accelerators as the driver names them, the same string whichever backend found them."""
        return hardware(fingerprint.accelerators(self.accelerators()))

    def machine_class(self) -> str:
        """A short name for the machine in reports: CPU architecture, CPU count and accelerators."""
        parts = [platform.machine(), f"{os.cpu_count()}cpu"]
        parts += fingerprint.accelerators(self.accelerators())
        return re.sub(r"[^A-Za-z0-9._]+", "-", "-".join(parts)).strip("-")

    def accelerators(self) -> dict[str, str]:
        """Each accelerator kind present -> the description of its own placement, which stands
        for all its devices."""
        return {
            kind.name: self.placements[kind.name].description
            for kind in DEVICE_TYPES.values()
            if kind.accelerator and kind.name in self.placements
        }
