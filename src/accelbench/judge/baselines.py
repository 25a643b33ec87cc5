"""Stored baselines: load, compare, and write back atomically when asked.

A baseline file is sorted, indented JSON: scope keys (what the number depends on), then
the cell (test name with its id), then the metric: {"digits-n1347": {"test_x[cpu-bs100-mlp]":
{"accuracy": 0.97}}}. What a number may do against its baseline is decided in verdicts.py.
"""

from __future__ import annotations

import json
import numbers
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class BaselineError(Exception):
    """A baseline file that cannot be read or does not have the expected shape."""


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
            raise BaselineError(
                f"{path}: corrupt baseline JSON ({error}); fix it, or delete it and "
                "record again with --update-baselines"
            ) from None
        found = _scope_depth(data)
        if found is not None and found != depth:
            raise BaselineError(
                f"{path}: its numbers lie {found} keys deep before each cell, where this accelbench keys them "
                f"{depth} deep: a file from an older accelbench (docs/baselines.md, 'Files from an older "
                "accelbench', says how to move it); or delete it and record again with --update-baselines"
            )
        _validate(data, depth + 1, str(path))
        return cls(path, depth, data)

    def get(self, scope: tuple[str, ...], cell: str, metric: str) -> float | None:
        node: Any = self.data
        for key in (*scope, cell):
            node = node.get(key, {})
        return node.get(metric)

    def has_scope(self, scope: tuple[str, ...]) -> bool:
        """Whether any baseline was recorded under this scope (this machine class, dataset, ...)."""
        node: Any = self.data
        for key in scope:
            node = node.get(key)
            if not node:
                return False
        return True

    def scope_paths(self) -> list[tuple[str, ...]]:
        """Every recorded scope, as a tuple of its keys."""

        def walk(node: Any, path: tuple[str, ...], depth: int) -> list[tuple[str, ...]]:
            if depth == 0:
                return [path]
            return [s for key, child in sorted(node.items()) for s in walk(child, (*path, key), depth - 1)]

        return walk(self.data, (), self.depth)

    def scopes(self) -> list[str]:
        """Every recorded scope, as 'machine/dataset' paths."""
        return ["/".join(path) for path in self.scope_paths()]

    def stage(self, scope: tuple[str, ...], cell: str, metric: str, value: float) -> None:
        node = self.data
        for key in (*scope, cell):
            node = node.setdefault(key, {})
        value = round(float(value), 4)
        node[metric] = int(value) if value.is_integer() else value  # bytes stay whole numbers
        self.staged += 1

    def drop(self, scope: tuple[str, ...], cell: str, metric: str) -> None:
        """Remove a value, where there is one (a spread that a new baseline no longer has)."""
        node: Any = self.data
        for key in (*scope, cell):
            node = node.get(key, {})
        node.pop(metric, None)

    def save(self) -> None:
        """Write this file alone, atomically (save_all writes several as one)."""
        save_all([self])

    def text(self) -> str:
        return json.dumps(self.data, indent=2, sort_keys=True) + "\n"


def save_all(files: list[BaselineFile]) -> None:
    """Write every file or none: each goes to a temporary file beside its target first (with an
    ordinary file's mode: mkstemp makes 0600), and only when all are written are they renamed
    over their targets; a rename that fails puts back the files already replaced. Readers never
    see half a file, nor a new accuracy file beside an old memory file."""
    staged: list[tuple[Path, str]] = []  # (target, its temporary file)
    kept: list[tuple[Path, str]] = []  # (target, the temporary hard link to its old contents)
    umask = os.umask(0)
    os.umask(umask)
    try:
        for file in files:
            file.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=file.path.parent, prefix=f".{file.path.name}.")
            staged.append((file.path, temporary))
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(file.text())
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temporary, 0o666 & ~umask)
        for target, temporary in staged:
            if target.exists():
                backup = f"{temporary}.old"  # beside a name mkstemp made unique
                os.link(target, backup)
                kept.append((target, backup))
        replaced: list[Path] = []
        try:
            for target, temporary in staged:
                os.replace(temporary, target)
                replaced.append(target)
        except BaseException:
            old = dict(kept)
            for target in replaced:
                if target in old:
                    os.replace(old.pop(target), target)
                else:
                    target.unlink()
            raise
    finally:
        for _, leftover in [*staged, *kept]:
            if os.path.exists(leftover):
                os.unlink(leftover)


def _scope_depth(data: Any) -> int | None:
    """The scope keys before each cell in a file, read down its first path (a cell's metrics are
    the first object whose values are numbers); None where it holds no number to read it by."""
    depth = 0
    node = data
    while isinstance(node, dict) and node:
        child = next(iter(node.values()))
        if isinstance(child, numbers.Real) and not isinstance(child, bool):
            return depth - 1  # node is a cell's metrics; the level above it is the cells'
        node = child
        depth += 1
    return None


def _validate(node: Any, depth: int, where: str) -> None:
    """depth levels of string-keyed objects, then objects of metric name -> number."""
    if not isinstance(node, dict):
        raise BaselineError(f"{where}: expected a JSON object, found {type(node).__name__}")
    for key, child in node.items():
        if depth:
            _validate(child, depth - 1, f"{where}: {key}")
        elif not isinstance(child, numbers.Real) or isinstance(child, bool):
            raise BaselineError(f"{where}: {key} must be a number, found {child!r}")
