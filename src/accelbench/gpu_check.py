"""`accelbench gpu-check`: the quick suite on `cpu,gpu` once per installed Keras backend, each as
the process backend (KERAS_BACKEND set), then one table of what each accelerator decision came to
on this host (docs/distributed.md, "On accelerators"): the devices each backend found, the
fingerprint, where a gpu cell ran and in what arithmetic, the GPU over the CPU, the roofs, the
highest utilization, device peaks against the estimate, and the latency cell against LoadGen's
SingleStream. It reads only the runs' saved JSON, so what it prints is what the runs measured.

Written here because it is the one place that runs pytest once per backend: each run is a
plain `pytest benchmarks` in a process of its own, as a user would type it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from accelbench.axes.backends import BACKENDS
from accelbench.judge.fingerprint import FINGERPRINT_KEY
from accelbench.measured import (
    ROOFS_KEY,
    VERDICTS_KEY,
    Latency,
    Place,
    PrecisionUsed,
    Roof,
    Serving,
    Speedup,
    StepMemory,
    Throughput,
    Timed,
    Utilization,
)
from accelbench.units import flops

# One backend's quick run on one GPU: the quick suite takes about a minute on a 2-core CPU, and
# the gpu cells add their own; three backends must fit the check's 10 minutes.
RUN_TIMEOUT_S = 240


def installed() -> list[str]:
    return [name for name in BACKENDS if BACKENDS[name].installed()]


def run_backend(backend: str, benchmarks: Path, out: Path, extra: Sequence[str]) -> tuple[Path, int, float]:
    """The quick suite with `backend` as the process backend; (its saved JSON, exit code, seconds)."""
    saved = out / f"run-{backend}.json"
    log = out / f"run-{backend}.log"
    command = [sys.executable, "-m", "pytest", str(benchmarks), "--devices", "cpu,gpu", "-p", "no:cacheprovider"]
    command += [f"--benchmark-json={saved}", *extra]
    started = time.perf_counter()
    with log.open("w") as written:
        try:
            code = subprocess.run(
                command,
                env={**os.environ, "KERAS_BACKEND": backend},
                stdout=written,
                stderr=subprocess.STDOUT,
                timeout=RUN_TIMEOUT_S,
            ).returncode
        except subprocess.TimeoutExpired:
            code = -1
    return saved, code, time.perf_counter() - started


def cells(saved: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every cell's extra_info, timed or not, by name."""
    found = {bench["name"]: bench.get("extra_info", {}) for bench in saved.get("benchmarks", [])}
    found.update({cell["name"]: cell["extra_info"] for cell in saved.get("accelbench", {}).get("untimed_cells", [])})
    return found


def _place(info: dict[str, Any]) -> Place:
    return Place.read(info) or Place()


def _fingerprint_accelerators(machine: dict[str, Any]) -> str:
    key = machine.get(FINGERPRINT_KEY, "")
    return next((part.split("=", 1)[1] for part in key.split("; ") if part.startswith("accelerators=")), "?")


def rows(backend: str, saved: dict[str, Any]) -> list[tuple[str, str]]:
    """(decision, what was seen) for one backend's run, read through the result parts."""
    machine = saved.get("machine_info", {})
    by_cell = cells(saved)
    seen: list[tuple[str, str]] = []
    devices = machine.get("accelbench_devices", {})
    seen.append(("devices found", "; ".join(f"{name}: {what}" for name, what in devices.items()) or "?"))
    seen.append(("fingerprint names the accelerator", _fingerprint_accelerators(machine)))
    seen.append(("driver among the libraries", machine.get("nvidia-driver") or "no nvidia-smi here"))
    trained = {
        name: info
        for name, info in by_cell.items()
        if _place(info).benchmark == "train_bench" and Throughput.of(info).samples_per_s
    }
    for device in ("cpu", "gpu"):
        on = {name: info for name, info in trained.items() if (_place(info).device or "").split(":")[0] == device}
        if not on:
            seen.append((f"a {device} cell runs on the {device}", "no cell ran there"))
            continue
        name, info = max(on.items(), key=lambda item: Throughput.of(item[1]).samples_per_s or 0.0)
        rates = Throughput.of(info)
        seen.append(
            (
                f"a {device} cell runs on the {device}",
                f"{name}: on {Timed.of(info).device}, {rates.samples_per_s:,.0f} samples/s, jit_compile "
                f"{rates.jit_compile}, float32 as {PrecisionUsed.of(info).float32_arithmetic}",
            )
        )
    speedups = [
        f"{name} {Speedup.of(info).speedup:.2f}x"
        for name, info in by_cell.items()
        if _place(info).benchmark == "device_speedup" and Speedup.of(info).speedup is not None
    ]
    seen.append(("GPU over CPU (training)", ", ".join(speedups) or "not measured (no GPU cell ran)"))
    for roof in (Roof.from_json(saved_roof) for saved_roof in saved.get("accelbench", {}).get(ROOFS_KEY, [])):
        seen.append(
            (
                f"roof of {roof.device} in {roof.dtype}",
                f"{flops(roof.flops_per_s)}/s, {roof.bytes_per_s / 2**30:.1f} GiB/s (by {roof.backend})",
            )
        )
    shares = [
        (used.hfu if used.hfu is not None else used.mfu, name)
        for name, used in ((name, Utilization.of(info)) for name, info in by_cell.items())
        if used.mfu is not None
    ]
    if shares:
        share, name = max(shares)
        seen.append(("highest utilization (at most 105%)", f"{share:.0%} ({name})"))
    peaks = []
    for name, info in by_cell.items():
        memory = StepMemory.of(info)
        if memory.device_peak_memory_bytes is not None:
            ratio = memory.device_peak_over_estimate
            peaks.append(
                f"{name} {memory.device_peak_memory_bytes / 2**20:.1f} MiB"
                + (f" ({ratio:.2f}x the estimate)" if ratio else "")
            )
    seen.append(("device peaks of the memory cells", "; ".join(peaks) or "none measured (no accelerator cell)"))
    seen.extend(_latency_rows(by_cell))
    outcomes: dict[str, int] = {}
    for verdict in saved.get("accelbench", {}).get(VERDICTS_KEY, []):
        outcomes[verdict["outcome"]] = outcomes.get(verdict["outcome"], 0) + 1
    seen.append(("verdicts", ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))))
    return [(f"{backend}: {decision}", what) for decision, what in seen]


def _latency_rows(by_cell: dict[str, dict[str, Any]]) -> Iterable[tuple[str, str]]:
    """The latency cell's p50 beside LoadGen SingleStream's for the same model, device and backend."""
    served = {
        (place.device, place.model_name, place.backend): Serving.of(info).serving_p50_ms
        for place, info in ((_place(info), info) for info in by_cell.values())
        if place.benchmark == "serving_bench" and Serving.of(info).scenario == "SingleStream"
    }
    for info in by_cell.values():
        place, latency = _place(info), Latency.of(info).latency_p50_ms
        single = served.get((place.device, place.model_name, place.backend))
        if place.benchmark != "latency_bench" or latency is None or not single:
            continue
        yield (
            f"latency cell against LoadGen SingleStream ({place.device}, {place.model_name})",
            f"p50 {latency:.3f} ms against {single:.3f} ms ({latency / single:.2f}x)",
        )


def table(all_rows: list[tuple[str, str]]) -> list[str]:
    width = max((len(decision) for decision, _ in all_rows), default=0)
    return [f"{decision.ljust(width)}  {what}" for decision, what in all_rows]


def main(benchmarks: Path, out: Path, extra: Sequence[str]) -> int:
    """Each installed backend's run, then the table; exit 1 where a run failed or did not finish."""
    out.mkdir(parents=True, exist_ok=True)
    backends = installed()
    if not backends:
        print(f"accelbench gpu-check: no Keras backend is installed: {BACKENDS['tensorflow'].install}, or jax, torch")
        return 2
    all_rows: list[tuple[str, str]] = []
    failed = []
    for backend in backends:
        print(f"accelbench gpu-check: the quick suite on cpu,gpu with {backend} as the process backend ...", flush=True)
        saved, code, seconds = run_backend(backend, benchmarks, out, extra)
        all_rows.append((f"{backend}: the run", f"exit {code} in {seconds:.0f} s (log: {saved.with_suffix('.log')})"))
        if code != 0:
            failed.append(backend)
        if saved.exists():
            all_rows.extend(rows(backend, json.loads(saved.read_text())))
    print("\n".join(table(all_rows)))
    return 1 if failed else 0
