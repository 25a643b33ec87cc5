"""What decides a measured number on this machine: its fingerprint.

Two 2-core x86_64 machines gave the same training step host peaks 3-5x apart (an AMD EPYC
with AVX2 against an Intel Xeon with AVX-512: cnn at batch 32, 14.7 MiB against 3.1 MiB),
and not only through oneDNN's ISA: the CPU model and its caches set the GEMM blocking that
sizes the scratch buffers. So a baseline is keyed by everything of that kind that can be
read without running anything: the CPU model, its caches, the ISA oneDNN dispatches to
(honouring ONEDNN_MAX_CPU_ISA), whether oneDNN is on, the usable cores and the accelerators.
Memory baselines add the TensorFlow and Keras versions, whose allocation patterns change
between releases.

A fingerprint is stored as its key, `name=value` pairs joined by "; ", so a baseline file
says in plain words which machine each number was measured on, and the nearest recorded
machine to this one can be found and its differences named. Pure Python: no TensorFlow.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEPARATOR = "; "
UNKNOWN = "unknown"
CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
# oneDNN's x64 ISAs from least to most capable: (name, the ISA it extends, the cpuinfo flags
# it adds; oneDNN's cpu_isa_traits). ONEDNN_MAX_CPU_ISA names these, in upper case.
X64_ISA_STEPS: tuple[tuple[str, str | None, frozenset[str]], ...] = (
    ("sse41", None, frozenset({"sse4_1"})),
    ("avx", "sse41", frozenset({"avx"})),
    ("avx2", "avx", frozenset({"avx2", "fma"})),
    ("avx2_vnni", "avx2", frozenset({"avx_vnni"})),
    ("avx512_core", "avx2", frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq"})),
    ("avx512_core_vnni", "avx512_core", frozenset({"avx512_vnni"})),
    ("avx512_core_bf16", "avx512_core_vnni", frozenset({"avx512_bf16"})),
    ("avx512_core_fp16", "avx512_core_bf16", frozenset({"avx512_fp16"})),
    ("avx512_core_amx", "avx512_core_bf16", frozenset({"amx_tile", "amx_int8", "amx_bf16"})),
)


def _isa_needs() -> dict[str, frozenset[str]]:
    needs: dict[str, frozenset[str]] = {}
    for name, base, flags in X64_ISA_STEPS:
        needs[name] = flags | (needs[base] if base else frozenset())
    return needs


X64_ISAS = _isa_needs()  # every flag each ISA needs, in order of capability
ISA_CAP_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


@dataclass(frozen=True)
class Fingerprint:
    """Ordered (name, value) pairs; equal fingerprints mean comparable measurements."""

    fields: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        return SEPARATOR.join(f"{name}={value}" for name, value in self.fields)

    @classmethod
    def parse(cls, key: str) -> Fingerprint:
        """A stored key back into its fields; a key from before fingerprints (`x86_64-2cpu`)
        is one field, `machine_class`, that no fingerprint of today shares."""
        pairs = [part.partition("=") for part in key.split(SEPARATOR)]
        if not all(equals for _, equals, _ in pairs):
            return cls((("machine_class", key),))
        return cls(tuple((name, value) for name, _, value in pairs))

    def as_dict(self) -> dict[str, str]:
        return dict(self.fields)

    def __add__(self, other: Fingerprint) -> Fingerprint:
        return Fingerprint(self.fields + other.fields)

    def differences(self, other: Fingerprint) -> list[str]:
        """'cpu: AMD EPYC here, Intel(R) Xeon(R) Processor there', for every field that differs."""
        mine, theirs = self.as_dict(), other.as_dict()
        if "machine_class" in theirs and "machine_class" not in mine:
            return [f"recorded before fingerprints, as machine class {theirs['machine_class']}"]
        names = [*mine, *(name for name in theirs if name not in mine)]
        return [
            f"{name}: {mine.get(name, 'absent')} here, {theirs.get(name, 'absent')} there"
            for name in names
            if mine.get(name) != theirs.get(name)
        ]


def _clean(value: str) -> str:
    """Values must not contain what separates fields."""
    return " ".join(value.replace(";", ",").replace("=", ":").split()) or UNKNOWN


def make(**fields: str) -> Fingerprint:
    return Fingerprint(tuple((name, _clean(str(value))) for name, value in fields.items()))


# --- reading this machine -------------------------------------------------------------------


def cpuinfo() -> dict[str, str]:
    """The first processor's entries of /proc/cpuinfo (empty where there is none)."""
    found: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as lines:
            for line in lines:
                if not line.strip():
                    break
                name, _, value = line.partition(":")
                found[name.strip()] = value.strip()
    except OSError:
        pass
    return found


def cpu_model(info: Mapping[str, str]) -> str:
    return info.get("model name") or info.get("Model name") or platform.processor() or UNKNOWN


def cpu_caches(root: Path = CPU_CACHES) -> str:
    """'L1d 32K, L1i 32K, L2 512K, L3 32768K': one core's caches as the kernel reports them."""
    caches = []
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        caches.append(f"L{level}{suffix} {size}")
    return ", ".join(caches) or UNKNOWN


def onednn_isa(flags: Iterable[str], environ: Mapping[str, str] = os.environ) -> str:
    """The ISA oneDNN dispatches to: the most capable one the CPU's flags allow, capped by
    ONEDNN_MAX_CPU_ISA (or its old name DNNL_MAX_CPU_ISA) where set."""
    have = set(flags)
    supported = [name for name, needs in X64_ISAS.items() if needs <= have]
    if not supported:
        return "sve" if "sve" in have else "asimd" if "asimd" in have else UNKNOWN
    cap = next((environ[v].strip().lower() for v in ISA_CAP_VARIABLES if environ.get(v, "").strip()), "")
    order = list(X64_ISAS)
    if cap in ("", "all", "default"):
        return supported[-1]
    if cap not in order:
        return f"{supported[-1]} (cap {cap} not understood)"
    return next((name for name in reversed(supported) if order.index(name) <= order.index(cap)), supported[0])


def onednn_state(environ: Mapping[str, str] = os.environ) -> str:
    """TensorFlow's oneDNN CPU kernels: on unless TF_ENABLE_ONEDNN_OPTS turns them off."""
    return "off" if environ.get("TF_ENABLE_ONEDNN_OPTS", "").strip().lower() in ("0", "false") else "on"


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as cpuinfo lists them (x86 `flags`, Arm `Features`)."""
    info = cpuinfo()
    return frozenset((info.get("flags") or info.get("Features") or "").split())


# The NVIDIA driver's own names for its boards: the same on every backend, where each framework
# words a GPU its own way (TensorFlow's device_name, JAX's device_kind, torch's device name),
# and with the board's memory, which tells an H100 80GB from an H100 NVL.
NVIDIA_SMI = ("nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader")
NVIDIA_SMI_TIMEOUT_S = 20


def _nvidia_smi(*arguments: str) -> str:
    """What nvidia-smi prints; "" where there is no NVIDIA driver (or it does not answer)."""
    try:
        return subprocess.run(
            arguments, capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def gpu_rows(listed: str) -> tuple[tuple[str, str, str], ...]:
    """(name, memory, driver version) of each GPU in NVIDIA_SMI's CSV."""
    rows = [tuple(part.strip() for part in line.split(",")) for line in listed.splitlines() if line.strip()]
    return tuple(row for row in rows if len(row) == 3)  # type: ignore[misc]


def cuda_version(banner: str) -> str | None:
    """The CUDA version the driver supports, from nvidia-smi's banner ('CUDA Version: 13.0'):
    its query has no field for it."""
    found = re.search(r"CUDA Version:\s*([0-9][0-9.]*)", banner)
    return found.group(1) if found else None


@functools.cache
def nvidia_gpus() -> tuple[tuple[str, str, str], ...]:
    """(name, memory, driver version) of each NVIDIA GPU, as nvidia-smi lists them; () where
    there is no NVIDIA driver."""
    return gpu_rows(_nvidia_smi(*NVIDIA_SMI))


@functools.cache
def nvidia_cuda() -> str | None:
    return cuda_version(_nvidia_smi("nvidia-smi")) if nvidia_gpus() else None


def accelerators(found: Mapping[str, str]) -> list[str]:
    """The accelerators a backend found (device type -> its description), worded alike on every
    backend: the GPUs as their driver names them ('1 x NVIDIA H200 (143771 MiB)') where
    nvidia-smi answers; otherwise (a TPU, a GPU without nvidia-smi) the backend's own words."""
    worded = []
    for kind, description in found.items():
        boards = nvidia_gpus() if kind == "gpu" else ()
        if boards:
            counted = {f"{name} ({memory})": 0 for name, memory, _ in boards}
            for name, memory, _ in boards:
                counted[f"{name} ({memory})"] += 1
            description = ", ".join(f"{count} x {board}" for board, count in counted.items())
        worded.append(description)
    return worded


def driver_versions() -> dict[str, str]:
    """The accelerator driver's version and the CUDA version it supports, among the libraries a
    number depends on."""
    drivers = sorted({driver for _, _, driver in nvidia_gpus()})
    cuda = nvidia_cuda()
    return ({"nvidia-driver": ", ".join(drivers)} if drivers else {}) | ({"cuda": cuda} if cuda else {})


def hardware(accelerators: Sequence[str] = ()) -> Fingerprint:
    """This machine as a speedup depends on it."""
    info = cpuinfo()
    return make(
        arch=platform.machine() or UNKNOWN,
        cpu=cpu_model(info),
        caches=cpu_caches(),
        isa=onednn_isa(cpu_flags()),
        onednn=onednn_state(),
        cpus=str(usable_cpus()),
        accelerators=", ".join(accelerators) or "none",
    )


def minor_version(package: str) -> str:
    try:
        return ".".join(importlib.metadata.version(package).split(".")[:2])
    except importlib.metadata.PackageNotFoundError:
        return "absent"


LIBRARIES = ("tensorflow", "keras", "scikit-learn", "numpy")


def versions(packages: Sequence[str] = LIBRARIES) -> dict[str, str]:
    """Full versions of the libraries a number depends on, those installed."""
    found = {}
    for package in packages:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


FINGERPRINT_KEY = "accelbench_fingerprint"  # machine_info: the hardware fingerprint of the run
# machine_info: the Keras backend the run's pytest process ran, whose cells carry no backend in
# their names; absent from runs saved before any other could be (TensorFlow's, then).
PROCESS_BACKEND_KEY = "accelbench_process_backend"
SOFTWARE_KEY = "accelbench_software"  # machine_info: the run's software fingerprint (software())
BEFORE_PROCESS_BACKENDS = "tensorflow"


def process_backend_of(recorded: Mapping[str, Any]) -> str:
    """The process backend a saved run's machine_info names."""
    return str(recorded.get(PROCESS_BACKEND_KEY) or BEFORE_PROCESS_BACKENDS)


def backend(name: str) -> Fingerprint:
    """The process backend: the Keras backend of every cell named without one. A speedup, a
    memory peak or a served latency of one backend says nothing of another's, so each is its
    own baseline."""
    return make(backend=name)


def software(process_backend: str, library: str) -> Fingerprint:
    """The process backend, and the libraries whose releases change allocation patterns and
    served latencies (its framework, `library`, and Keras) to their minor version."""
    return backend(process_backend) + make(**{package: minor_version(package) for package in (library, "keras")})


def software_of(recorded: Mapping[str, Any]) -> Fingerprint:
    """software() as a saved run recorded it; for a run saved before it was recorded, from its
    versions (versions(): tensorflow's and keras's, which were all a TensorFlow run's key then,
    and all such a run recorded; another backend's run of then matches no software of now)."""
    if recorded.get(SOFTWARE_KEY):
        return Fingerprint.parse(str(recorded[SOFTWARE_KEY]))
    name = process_backend_of(recorded)
    if name != BEFORE_PROCESS_BACKENDS:
        return backend(name) + make(keras="unrecorded")
    return backend(name) + make(
        **{
            package: ".".join(str(recorded[package]).split(".")[:2]) if package in recorded else "absent"
            for package in (name, "keras")
        }
    )


# --- the nearest recorded machine -----------------------------------------------------------


def nearest(mine: Fingerprint, recorded: Iterable[Fingerprint]) -> tuple[Fingerprint, list[str]] | None:
    """The recorded fingerprint that differs from this one in the fewest fields, with those
    differences; None when nothing is recorded."""
    ranked = sorted(
        ((mine.differences(other), other.key, other) for other in recorded), key=lambda entry: (len(entry[0]), entry[1])
    )
    return (ranked[0][2], ranked[0][0]) if ranked else None
