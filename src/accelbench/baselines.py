"""Stored baselines: load, compare, and write back atomically when asked.

A baseline file is sorted, indented JSON: scope keys (what the number depends on), then
the cell (test name with its id), then the metric: {"digits-n1347": {"test_x[cpu-bs100-mlp]":
{"accuracy": 0.97}}}. Regression checks are small classes returning a message or None.
"""

from __future__ import annotations

import json
import numbers
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.memory import format_bytes


class BaselineError(Exception):
    """A baseline file that cannot be read or does not have the expected shape."""


@dataclass(frozen=True)
class AbsoluteDrop:
    """Fails when measured < baseline - tolerance (accuracy: points of accuracy)."""

    tolerance: float
    relation = ">="

    def bound(self, baseline: float) -> float:
        return baseline - self.tolerance

    def describe(self) -> str:
        return f"{self.tolerance:g} absolute"

    def show(self, value: float) -> str:
        return f"{value:.4f}"


@dataclass(frozen=True)
class RelativeDrop(AbsoluteDrop):
    """Fails when measured < baseline x (1 - tolerance) (speedups: ratios)."""

    def bound(self, baseline: float) -> float:
        return baseline * (1.0 - self.tolerance)

    def describe(self) -> str:
        return f"{self.tolerance:.0%} relative"


@dataclass(frozen=True)
class RelativeGrowth:
    """Fails when measured > baseline x (1 + tolerance) + slack (memory: bytes).

    The slack absorbs allocator granularity, which a relative tolerance cannot for small peaks.
    """

    tolerance: float
    slack: float
    relation = "<="

    def bound(self, baseline: float) -> float:
        return baseline * (1.0 + self.tolerance) + self.slack

    def describe(self) -> str:
        return f"{self.tolerance:.0%} relative + {self.show(self.slack)}"

    def show(self, value: float) -> str:
        return f"{format_bytes(value)} ({value:,.0f} B)" if value >= 1024 else f"{value:,.0f} B"


def regression(metric: str, cell: str, baseline: float, measured: float, check) -> str | None:
    bound = check.bound(baseline)
    holds = measured >= bound if check.relation == ">=" else measured <= bound
    if holds:
        return None
    return (f"{metric} regression in {cell}: measured {check.show(measured)}, baseline {check.show(baseline)}, "
            f"tolerance {check.describe()} (must be {check.relation} {check.show(bound)})")


@dataclass
class BaselineFile:
    path: Path
    depth: int  # scope keys before the cell
    data: dict[str, Any] = field(default_factory=dict)
    staged: int = 0

    @classmethod
    def load(cls, path: Path, depth: int) -> BaselineFile:
        if not path.exists():
            return cls(path, depth)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            raise BaselineError(f"{path}: cannot read ({error})") from None
        except json.JSONDecodeError as error:
            raise BaselineError(f"{path}: corrupt baseline JSON ({error}); fix it, or delete it and "
                                "record again with --update-baselines") from None
        _validate(data, depth + 1, str(path))
        return cls(path, depth, data)

    def get(self, scope: tuple[str, ...], cell: str, metric: str) -> float | None:
        node: Any = self.data
        for key in (*scope, cell):
            node = node.get(key, {})
        return node.get(metric)

    def stage(self, scope: tuple[str, ...], cell: str, metric: str, value: float) -> None:
        node = self.data
        for key in (*scope, cell):
            node = node.setdefault(key, {})
        value = round(float(value), 4)
        node[metric] = int(value) if value.is_integer() else value  # bytes stay whole numbers
        self.staged += 1

    def save(self) -> None:
        """Write to a temporary file beside the target, then rename: readers never see half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.data, indent=2, sort_keys=True) + "\n"
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            os.unlink(temporary)
            raise


def _validate(node: Any, depth: int, where: str) -> None:
    """depth levels of string-keyed objects, then objects of metric name -> number."""
    if not isinstance(node, dict):
        raise BaselineError(f"{where}: expected a JSON object, found {type(node).__name__}")
    for key, child in node.items():
        if depth:
            _validate(child, depth - 1, f"{where}: {key}")
        elif not isinstance(child, numbers.Real) or isinstance(child, bool):
            raise BaselineError(f"{where}: {key} must be a number, found {child!r}")
