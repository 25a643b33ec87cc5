"""Step traces (--trace-dir): a few steady-state steps of a cell under its backend's profiler (Backend.profiler),
taken once every cell of the run has finished, so that no timed round follows a trace.

Each traced cell gets a folder with
- tensorboard/: the profiler's own output, which TensorBoard's profile tab reads
  (`tensorboard --logdir DIR/<cell>/tensorboard`): TensorFlow's and JAX's XSpace
  (plugins/profile/<run>/<host>.xplane.pb), every step a step marker, so its step-time view
  lines up with the steps below; PyTorch's profiler trace (*.pt.trace.json) on torch;
- steps.trace.json: a Chrome-trace JSON of the same steps, one complete event each on one
  thread, that opens in Perfetto (ui.perfetto.dev) or chrome://tracing without TensorBoard.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accelbench import progress
from accelbench.axes.backends import BACKENDS
from accelbench.measured import StepTrace

PHASES = {"train": "train", "inference": "predict"}  # a work.builders.STEPS kind -> the phase its trace is named by

TRACED_STEPS = 5
WARMUP_STEPS = 2  # run untraced first: the step's function is traced and its memory allocated


def folder_for(directory: Path, cell_name: str) -> Path:
    """test_train[cpu-bs256-mlp] -> DIR/test_train-cpu-bs256-mlp: one folder per cell."""
    return directory / re.sub(r"[^A-Za-z0-9_.-]+", "-", cell_name).strip("-")


def trace_steps(
    directory: Path,
    cell_name: str,
    phase: str,
    step: Callable[[], Any],
    say: Callable[[str], None] = progress.quiet,
    steps: int = TRACED_STEPS,
    backend: str = "tensorflow",
) -> StepTrace:
    """Profile `steps` calls of `step` (one training or inference step each) with the backend's
    profiler; returns where the trace is and the steps' times."""
    folder = folder_for(directory, cell_name)
    folder.mkdir(parents=True, exist_ok=True)
    say(f"tracing {steps} {phase} steps")
    for _ in range(WARMUP_STEPS):
        step()
    spans = []
    with BACKENDS[backend].profiler(folder / "tensorboard") as marked:
        for number in range(steps):
            with marked(phase, number):
                start = time.perf_counter_ns()
                step()
                spans.append((start, time.perf_counter_ns()))
    chrome = folder / "steps.trace.json"
    chrome.write_text(json.dumps(chrome_trace(cell_name, phase, spans), indent=1), encoding="utf-8")
    return StepTrace(
        trace_dir=str(folder / "tensorboard"),
        chrome_trace=str(chrome),
        traced_steps=steps,
        traced_step_ms=[round((end - start) / 1e6, 4) for start, end in spans],
        profiler=backend,
    )


def chrome_trace(cell_name: str, phase: str, spans: list[tuple[int, int]]) -> dict[str, Any]:
    """Chrome's Trace Event Format: complete ("X") events in microseconds, one per step, on
    this process's and thread's ids, with names for both."""
    pid, tid = os.getpid(), threading.get_ident() % 2**31
    origin = spans[0][0] if spans else 0
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": tid, "args": {"name": f"accelbench {cell_name}"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"{phase} steps"}},
    ]
    events += [
        {
            "ph": "X",
            "name": f"{phase} step {number}",
            "cat": phase,
            "pid": pid,
            "tid": tid,
            "ts": (start - origin) / 1e3,
            "dur": (end - start) / 1e3,
            "args": {"step": number},
        }
        for number, (start, end) in enumerate(spans)
    ]
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"cell": cell_name}}
