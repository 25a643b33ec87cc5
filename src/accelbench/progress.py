"""A one-line status of what a long cell is measuring, shown in pytest's terminal reporter.

On a terminal the line is rewritten in place below the file's dots and wiped when the cell
ends, and the dots go on where they were; in a log (not a terminal) a status is written as
its own line at most every LOG_EVERY seconds, so a long CI run shows it is alive without
flooding. Silent under -q. Cells run under pytest's output capture, which is lifted for the
status only (as pytest's live logging does).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from typing import Any

LOG_EVERY = 30.0  # seconds between status lines in a log


def quiet(text: str) -> None:
    """The status sink of code run outside pytest (and of the harness's own tests)."""


class Progress:
    def __init__(self, config: Any = None) -> None:
        self.config = config  # pytest's; None: silent (outside pytest)
        self.shown = False  # a status line is on screen
        self.resume: Any = None  # what pytest's reporter was writing on the line the status broke
        self.last_logged = float("-inf")

    @property
    def reporter(self) -> Any:
        if self.config is None or self.config.get_verbosity() < 0:
            return None
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def _uncaptured(self):
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        return capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()

    @staticmethod
    def _overwrite(reporter: Any, text: str) -> None:
        """Replace the line on screen, past pytest's own writer: it counts the width of the
        line it writes on to place the [ 33%] column, and a status is not part of that line."""
        reporter.flush()
        width = shutil.get_terminal_size().columns - 1
        sys.stdout.write(f"\r{text[:width].ljust(width)}\r")
        sys.stdout.flush()

    def __call__(self, text: str) -> None:
        reporter = self.reporter
        if reporter is None:
            return
        with self._uncaptured():
            if reporter.isatty():
                if not self.shown:
                    self.resume = reporter.currentfspath
                    reporter.ensure_newline()
                self._overwrite(reporter, f"  ... {text}")
                self.shown = True
            elif time.monotonic() - self.last_logged >= LOG_EVERY:
                reporter.ensure_newline()
                reporter.write_line(f"  ... {text}")
                self.last_logged = time.monotonic()

    def done(self) -> None:
        """Wipe the status once the cell has finished measuring; the dots go on on that line."""
        reporter = self.reporter
        if not self.shown or reporter is None:
            return
        with self._uncaptured():
            self._overwrite(reporter, "")
            if isinstance(self.resume, os.PathLike):  # the file's name, as pytest writes it
                reporter.write(f"{os.path.relpath(self.resume, reporter.startpath)} ")
                reporter.currentfspath = self.resume
            elif isinstance(self.resume, str):  # -v: the test's location line
                reporter.write(self.resume)
                reporter.currentfspath = self.resume
        self.shown = False
