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

import collections
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from accelbench.axes.backends import BACKENDS, EXTRAS, lies_elsewhere
from accelbench.axes.backends.backend import COUNTED_BY_COMPILER
from accelbench.axes.devices import type_of
from accelbench.kinds.memory.result import StepMemory
from accelbench.kinds.serving.result import Serving
from accelbench.kinds.speedup.result import Speedup
from accelbench.kinds.throughput.result import Latency
from accelbench.measured import Placed, PrecisionUsed, Throughput, Timed, Utilization
from accelbench.results.report.runs import ReportError, Run, load_run
from accelbench.results.summary import CellRecord
from accelbench.run.roofs import ROOFS_DIR
from accelbench.units import flops

# The whole check's time, shared by the installed backends' runs (the issue's 10 minutes, less a
# margin for the table): the quick suite took about two minutes a backend on a 2-core CPU.
TOTAL_S = 570
SAVE_S = 30  # how long an interrupted run is given to save what it finished
# A run starts no cell in the last STOP_S + SAVE_S of its share (--stop-after), so it ends
# between cells; the cell then running has STOP_S to finish (the H100's slowest took 27 s).
STOP_S = 30
INTERRUPTED = 2  # pytest's exit code for a run that stopped early (--stop-after, Ctrl-C)
DEADLINE = -1  # the exit code shown for a run stopped at its deadline
DURATIONS = 25  # the slowest cells in each run's log: where a host's minutes went


def installed() -> list[str]:
    return [name for name in BACKENDS if BACKENDS[name].installed()]


def run_backend(
    backend: str, benchmarks: Path, out: Path, extra: Sequence[str], timeout_s: float
) -> tuple[Path, int, float]:
    """The quick suite with `backend` as the process backend; (its saved JSON, exit code, seconds).

    Its --stop-after ends it between cells before its deadline, and pytest saves the cells it
    finished, so the table shows what ran. A cell still running at the deadline is interrupted
    as Ctrl-C would, and the run killed only if it has not stopped SAVE_S later.
    """
    saved = out / f"run-{backend}.json"
    log = out / f"run-{backend}.log"
    command = [sys.executable, "-m", "pytest", str(benchmarks), "--devices", "cpu,gpu", "-p", "no:cacheprovider"]
    command += [f"--benchmark-json={saved}", f"--durations={DURATIONS}", *extra]
    command += [f"--stop-after={max(1.0, timeout_s - SAVE_S - STOP_S):.0f}"]
    # The roofs each run measured are kept in OUT (its runs pass -p no:cacheprovider, which keeps
    # nothing): a check run again is spared them. On one H200 a JAX run's start and its two GPU
    # roofs took about 60 s of its 250 s (docs/measurements.md).
    environment = {ROOFS_DIR: str(out / "roofs"), **os.environ, "KERAS_BACKEND": backend}
    started = time.perf_counter()
    with log.open("w") as written:
        run = subprocess.Popen(command, env=environment, stdout=written, stderr=subprocess.STDOUT)
        try:
            code = run.wait(timeout=max(1.0, timeout_s - SAVE_S))
            code = DEADLINE if code == INTERRUPTED else code
        except subprocess.TimeoutExpired:
            run.send_signal(signal.SIGINT)
            try:
                run.wait(timeout=SAVE_S)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
            code = DEADLINE
    return saved, code, time.perf_counter() - started


def rows(backend: str, run: Run) -> list[tuple[str, str]]:
    """(decision, what was seen) for one backend's saved run (the report's loader reads it)."""
    seen = [
        ("cells that ran", f"{len(run.cells)}"),
        ("devices found", "; ".join(f"{n}: {what}" for n, what in run.machine.get("accelbench_devices", {}).items())),
        ("fingerprint names the accelerator", run.fingerprint_facts.get("accelerators", "?")),
        ("driver among the libraries", run.machine.get("nvidia-driver") or "no nvidia-smi here"),
        ("CUDA among the libraries", run.machine.get("cuda") or "no nvidia-smi here"),
    ]
    trained = [cell for cell in run.cells_of("train_bench") if cell.samples_per_s]
    for device in ("cpu", "gpu"):
        seen.append((f"a {device} cell runs on the {device}", _placed(run, trained, device)))
    speedups = [f"{cell.name} {Speedup.of(cell.info).speedup:.2f}x" for cell in run.cells_of("device_speedup")]
    seen.append(("GPU over CPU (training)", ", ".join(speedups) or "not measured (no GPU cell ran)"))
    resident = [
        f"{cell.name} {Speedup.of(cell.info).speedup_inputs_on_device:.2f}x"
        for cell in run.cells_of("device_speedup")
        if Speedup.of(cell.info).speedup_inputs_on_device is not None
    ]
    seen.append(("GPU over CPU, inputs on the GPU (no copy)", ", ".join(resident) or "not measured"))
    calls = [Throughput.of(cell.info).call_share for cell in trained if type_of(cell.device) == "gpu"]
    calls = [share for share in calls if share is not None]
    seen.append(("fit()'s own cost per call, of a gpu round", f"at most {max(calls):.1%}" if calls else "not measured"))
    seen += [
        (
            f"roof of {roof.device} in {roof.dtype}",
            f"{flops(roof.flops_per_s)}/s, {roof.bytes_per_s / 2**30:.1f} GiB/s by {roof.backend}",
        )
        for roof in run.roofs
    ]
    shares = [
        (used.hfu if used.hfu is not None else used.mfu, cell.name)
        for cell in run.cells
        if (used := Utilization.of(cell.info)).mfu is not None
    ]
    if shares:
        share, name = max(shares)
        seen.append(("highest utilization (at most 105%)", f"{share:.0%} ({name})"))
    peaks = [_peak(cell) for cell in run.cells if StepMemory.of(cell.info).device_peak_memory_bytes is not None]
    seen.append(("device peaks of the memory cells", "; ".join(peaks) or "none measured (no accelerator cell)"))
    seen += _latency_rows(run)
    outcomes = collections.Counter(verdict["outcome"] for verdict in run.verdicts)
    seen.append(("verdicts", ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))))
    return [(f"{backend}: {decision}", what) for decision, what in seen]


def _placed(run: Run, trained: list[CellRecord], device: str) -> str:
    """Where the weights of the run's cells asking for `device` lay once built (Placed.weights_on:
    a cell whose lay elsewhere failed in one line, and its record, saved with the run's, is
    counted here as elsewhere), and its fastest training cell's rate and arithmetic."""
    asked = [cell for cell in run.cells if type_of(cell.device) == device]
    if not asked:
        return "no cell ran there"
    found = collections.Counter(Placed.of(cell.info).weights_on for cell in asked)
    elsewhere = sum(n for where, n in found.items() if lies_elsewhere(device, where))
    cells = f"{len(asked)} {device} cells, their" if len(asked) > 1 else f"1 {device} cell, its"
    placed = f"{cells} weights on " + ", ".join(
        f"{where or 'not checked'} ({n})" for where, n in sorted(found.items(), key=lambda item: item[0] or "~")
    )
    placed += f"; {elsewhere} elsewhere" if elsewhere else ""
    fastest = max((cell for cell in trained if cell in asked), key=lambda cell: cell.samples_per_s or 0.0, default=None)
    return placed + (f"; fastest training {_where(fastest)}" if fastest else "")


def _where(cell: CellRecord) -> str:
    rates = Throughput.of(cell.info)
    return (
        f"{cell.name}: on {Timed.of(cell.info).device}, {rates.samples_per_s:,.0f} samples/s, jit_compile "
        f"{rates.jit_compile}, float32 as {PrecisionUsed.of(cell.info).float32_arithmetic}"
    )


def _peak(cell: CellRecord) -> str:
    memory = StepMemory.of(cell.info)
    ratio = memory.device_peak_over_estimate
    counted = " by XLA's count" if memory.device_peak_from == COUNTED_BY_COMPILER else ""
    workspace = memory.device_workspace_bytes
    return (
        f"{cell.name} {memory.device_peak_memory_bytes / 2**20:.1f} MiB{counted}"
        + (f" ({ratio:.2f}x the estimate)" if ratio else "")
        + (f", of it a {workspace / 2**20:.1f} MiB library workspace" if workspace else "")
    )


def _latency_rows(run: Run) -> list[tuple[str, str]]:
    """The latency cell's p50 beside LoadGen SingleStream's for the same model, device and
    backend, and what SingleStream's holds (_served_parts)."""
    single = {
        (cell.device, cell.place.model_name, cell.place.backend): Serving.of(cell.info)
        for cell in run.cells_of("serving_bench")
        if Serving.of(cell.info).scenario == "SingleStream"
    }
    found = []
    for cell in run.cells_of("latency_bench"):
        latency = Latency.of(cell.info).latency_p50_ms
        served = single.get((cell.device, cell.place.model_name, cell.place.backend))
        if latency is not None and served and served.serving_p50_ms:
            p50 = served.serving_p50_ms
            found.append(
                (
                    f"latency cell against LoadGen SingleStream ({cell.device}, {cell.place.model_name})",
                    f"p50 {latency:.3f} ms against {p50:.3f} ms ({latency / p50:.2f}x)" + _served_parts(served),
                )
            )
    return found


def _served_parts(served: Serving) -> str:
    """Where SingleStream's p50 goes, by the serving loop's own clock (kinds/serving/work.py
    LOOP_PARTS): the predict call in the loop's thread beside the same step timed alone before
    the run, the hand-off to the loop, and LoadGen's own issue and completion (its p50 less the
    loop's median query)."""
    if served.loop_ms is None:
        return ""
    alone = f" (alone, before the run: {served.expected_latency_ms:.3f})" if served.expected_latency_ms else ""
    return (
        f"; of SingleStream's: the served step {served.loop_predict_ms:.3f} ms{alone}, the hand-off "
        f"{served.loop_wait_ms:.3f}, LoadGen's own {served.serving_p50_ms - served.loop_ms:.3f}"
    )


def table(all_rows: list[tuple[str, str]]) -> list[str]:
    width = max((len(decision) for decision, _ in all_rows), default=0)
    return [f"{decision.ljust(width)}  {what}" for decision, what in all_rows]


def main(benchmarks: Path, out: Path, extra: Sequence[str], total_s: float = TOTAL_S) -> int:
    """Each installed backend's run, then the table; exit 1 where a run failed or did not finish."""
    out.mkdir(parents=True, exist_ok=True)
    backends = installed()
    if not backends:
        print(f"accelbench gpu-check: no Keras backend is installed: {EXTRAS}")
        return 2
    all_rows: list[tuple[str, str]] = []
    failed = []
    for backend in backends:
        print(f"accelbench gpu-check: the quick suite on cpu,gpu with {backend} as the process backend ...", flush=True)
        saved, code, seconds = run_backend(backend, benchmarks, out, extra, total_s / len(backends))
        ended = f"exit {code}" if code != DEADLINE else f"stopped at its deadline ({total_s / len(backends):.0f} s)"
        all_rows.append((f"{backend}: the run", f"{ended} in {seconds:.0f} s (log: {saved.with_suffix('.log')})"))
        if code != 0:
            failed.append(backend)
        if saved.exists():
            try:
                all_rows.extend(rows(backend, load_run(saved)))
            except ReportError as error:  # a run that stopped before it saved a cell
                all_rows.append((f"{backend}: its saved run", str(error)))
    print("\n".join(table(all_rows)))
    return 1 if failed else 0
