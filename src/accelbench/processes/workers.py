"""Processes the run starts: long-lived workers fed over a pipe, and one-shot jobs.

Everything the suite spawns goes through spawn() and is killed, with its process group, by
end_all() when the run ends (the plugin calls it; atexit is the fallback), so no process
outlives the session.

A Worker is one interpreter with its own environment variables (environment A: this one; B:
another interpreter or variables), started once and reused across cells. The parent sends it
one call at a time, `module:function` and keyword arguments as a JSON line, and reads one JSON
line back. The work measures itself inside the worker (its rounds' seconds), so the pipe adds
nothing to a timed round. A call that raises in the worker fails that call and leaves the
worker running; a worker that dies (a crash, the kernel's out-of-memory killer) or does not
answer by the call's deadline is killed and fails the call with one line; the next call
starts a fresh one.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.environments import Environment
from accelbench.user_modules import UserCodeFailed

STDERR_TAIL_LINES = 3  # of a dead worker's stderr, in its one-line failure
_LIVE: dict[int, subprocess.Popen] = {}  # pid -> every process spawn() started and end_all() has not reaped


def spawn(argv: Sequence[str], env: Mapping[str, str], log: Path, pass_fds: Sequence[int] = ()) -> subprocess.Popen:
    """Start a process in a session (process group) of its own, its output to `log`."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            list(argv),
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    _LIVE[process.pid] = process
    return process


def kill(process: subprocess.Popen) -> None:
    """Kill the process and whatever it started, and reap it."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()
    _LIVE.pop(process.pid, None)


def end_all() -> list[int]:
    """Kill every process still alive that spawn() started; returns their pids."""
    ended = list(_LIVE)
    for process in list(_LIVE.values()):
        kill(process)
    return ended


atexit.register(end_all)


def alive(pid: int) -> bool:
    """Whether a process of that pid is running (a zombie does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def tail(log: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return "(no output)"
    return " | ".join(line.strip() for line in text[-lines:]) or "(no output)"


HUGE_PAGES_TUNABLE = "glibc.malloc.hugetlb=1"


def huge_pages(environ: Mapping[str, str]) -> dict[str, str]:
    """GLIBC_TUNABLES with malloc's transparent huge pages on, for every worker alike.

    Two processes of the same code differ: mlp_wide's training rounds in six pairs of fresh
    A/A workers differed by 0.947-1.028x between the two processes of a pair, four of six
    pairs with 95% intervals that excluded 1 (where its large weights landed in memory, and
    which got huge pages). With malloc asking for huge pages (glibc >= 2.35; older ones ignore
    the tunable; a kernel with THP "never" ignores the request) the six pairs read
    0.984-1.019x, every interval holding 1. A tunable the environment sets already stays.
    """
    tunables = environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb" in tunables:
        return {}
    return {"GLIBC_TUNABLES": ":".join(filter(None, (tunables, HUGE_PAGES_TUNABLE)))}


# --- a long-lived worker ----------------------------------------------------------------------


class WorkerFailed(RuntimeError):
    """A call did not come back: the worker raised, died or ran past its deadline. One line."""


@dataclass
class Worker:
    environment: Environment
    folder: Path
    process: subprocess.Popen | None = None
    starts: int = 0
    pids: list[int] = field(default_factory=list)  # every process this worker has been
    _requests: Any = None
    _replies: Any = None

    @property
    def log(self) -> Path:
        return self.folder / f"worker-{self.environment.name}-{self.starts}.log"

    def start(self) -> None:
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        self.starts += 1
        try:
            self.process = spawn(
                [self.environment.python, "-m", "accelbench.processes.worker_main", str(to_child), str(from_child)],
                {**huge_pages(os.environ), **dict(self.environment.variables), "PYTHONUNBUFFERED": "1"},
                self.log,
                pass_fds=(to_child, from_child),
            )
        finally:
            os.close(to_child)
            os.close(from_child)
        self.pids.append(self.process.pid)
        self._requests = os.fdopen(from_parent, "w", buffering=1)
        self._replies = os.fdopen(to_parent, "r")

    def call(self, function: str, deadline_s: float, **kwargs: Any) -> Any:
        """Run `module:function(**kwargs)` in the worker; its JSON result, or WorkerFailed."""
        return self.receive(self.send(function, **kwargs), time.monotonic() + deadline_s, deadline_s)

    def send(self, function: str, **kwargs: Any) -> str:
        """Ask for a call without waiting for it (starting the worker if it is not running);
        receive() gets the answer. Returns what the call is, for its failure's line."""
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self.start()
        try:
            self._requests.write(json.dumps({"function": function, "kwargs": kwargs}) + "\n")
            self._requests.flush()
        except BrokenPipeError:  # it died already: receive() reads the end of file and says how
            pass
        return f"worker {self.environment.describe()}, {function.rpartition(':')[2]}"

    def receive(self, what: str, end: float, deadline_s: float) -> Any:
        """The answer to the call sent, by time.monotonic() `end` (its deadline_s after it was
        sent); or WorkerFailed."""
        line = self._read_line(end)
        if line is None:
            self.stop()
            raise WorkerFailed(
                f"{what}: no answer within its {deadline_s:.0f} s deadline; killed (it is restarted for the next cell)"
            )
        if not line:
            code = self.process.wait()
            log = self.log
            self.stop()
            raise WorkerFailed(
                f"{what}: the worker died ({_exit(code)}); restarted for the next cell; its last output: {tail(log)}"
            )
        reply = json.loads(line)
        if reply.get("user_code"):  # the user's own code raised there: one line, and the run stops
            raise UserCodeFailed(reply["error"])
        if "error" in reply:
            raise WorkerFailed(f"{what}: {reply['error']}")
        return reply["result"]

    def _read_line(self, end: float) -> str | None:
        """The worker's next line; '' at end of file (it died); None past time.monotonic() `end`."""
        while True:
            ready, _, _ = select.select([self._replies], [], [], max(0.0, end - time.monotonic()))
            if ready:
                return self._replies.readline()
            if time.monotonic() >= end:
                return None

    def stop(self) -> None:
        for stream in (self._requests, self._replies):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # the worker is gone: what was left unflushed goes with it
                    pass
        self._requests = self._replies = None
        if self.process is not None:
            kill(self.process)
            self.process = None


def _exit(code: int) -> str:
    if code >= 0:
        return f"exit status {code}"
    name = signal.Signals(-code).name
    return f"killed by {name}" + (" - out of memory?" if name == "SIGKILL" else "")


@dataclass
class WorkerPool:
    """One worker per environment, started on first use and ended together."""

    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="accelbench-workers-")))
    by_environment: dict[Environment, Worker] = field(default_factory=dict)

    def get(self, environment: Environment) -> Worker:
        if environment not in self.by_environment:
            self.by_environment[environment] = Worker(environment, self.folder)
        return self.by_environment[environment]

    def call(self, environment: Environment, function: str, deadline_s: float, **kwargs: Any) -> Any:
        return self.get(environment).call(function, deadline_s, **kwargs)

    def call_each(
        self, environments: Sequence[Environment], function: str, deadline_s: float, **kwargs: Any
    ) -> list[Any]:
        """The same call in every environment's worker at once (for work that is not timed
        against the other side: starting, building, a memory peak); their results in order.
        Every answer is awaited, so a failure on one side leaves the other in step; the first
        failure is then raised."""
        end = time.monotonic() + deadline_s
        asked = [
            (self.get(environment), self.get(environment).send(function, **kwargs)) for environment in environments
        ]
        results, failures = [], []
        for worker, what in asked:
            try:
                results.append(worker.receive(what, end, deadline_s))
            except WorkerFailed as failure:
                failures.append(failure)
        if failures:
            raise failures[0]
        return results

    @property
    def pids(self) -> list[int]:
        return [pid for worker in self.by_environment.values() for pid in worker.pids]

    def end(self) -> None:
        """Stop every worker and remove their logs (a failure has already quoted what it needed)."""
        for worker in self.by_environment.values():
            worker.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
