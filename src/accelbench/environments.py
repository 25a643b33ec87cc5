"""Where a worker runs: an interpreter and the environment variables set for it alone
(A and B of an A/B run, a Keras backend's worker). A plain value, so that the axes that
name an environment (backends) need no process code."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Environment:
    """An interpreter and the variables set for it alone."""

    name: str  # "A", "B"
    python: str = sys.executable
    variables: tuple[tuple[str, str], ...] = ()
    label: str = ""  # what it is, where its variables would say it badly (--ab-ref: "git main = 1a2b3c4d5e")

    def describe(self) -> str:
        if self.label:
            return f"{self.name} ({self.label})"
        parts = [] if self.python == sys.executable else [self.python]
        parts += [f"{key}={value}" for key, value in self.variables]
        return f"{self.name} ({', '.join(parts) or 'this interpreter'})"
