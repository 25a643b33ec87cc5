"""A one-line status of what a long cell is measuring, shown in pytest's terminal reporter.

On a terminal the line is rewritten in place and wiped when the cell ends; in a log (not a
terminal) a status is written as its own line at most every LOG_EVERY seconds, so a long CI
run shows it is alive without flooding. Silent under -q.
"""

from __future__ import annotations

import time
from typing import Any

LOG_EVERY = 30.0  # seconds between status lines in a log


def quiet(text: str) -> None:
    """The status sink of code run outside pytest (and of the harness's own tests)."""


class Progress:
    def __init__(self, config: Any = None) -> None:
        self.config = config  # pytest's; None: silent (outside pytest)
        self.shown = False  # a status line is on screen
        self.last_logged = float("-inf")

    @property
    def reporter(self) -> Any:
        if self.config is None or self.config.get_verbosity() < 0:
            return None
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def __call__(self, text: str) -> None:
        reporter = self.reporter
        if reporter is None:
            return
        if reporter.isatty():
            reporter.ensure_newline()  # after the file's dots, which pytest then starts afresh
            reporter.rewrite(f"  ... {text}", erase=True)
            self.shown = True
        elif time.monotonic() - self.last_logged >= LOG_EVERY:
            reporter.ensure_newline()
            reporter.write_line(f"  ... {text}")
            self.last_logged = time.monotonic()

    def done(self) -> None:
        """Wipe the status once the cell has finished measuring."""
        reporter = self.reporter
        if self.shown and reporter is not None:
            reporter.rewrite("", erase=True)
            self.shown = False
