"""The user's own modules (ini `accelbench_modules`, option --modules): where their models and
datasets are declared through the public API. The pytest process imports them before it reads
--models and --dataset, and every process it starts (A/B and backend workers, tf.distribute
jobs) imports them before it builds a cell, so every kind of cell sees the same models."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from pathlib import Path


class UserModuleError(ImportError):
    """A named module could not be imported: one line naming it and why."""


def import_modules(names: Iterable[str], roots: Iterable[str] = ()) -> None:
    """Import each named module, with `roots` (the folders the pytest process found them in)
    first on sys.path: a worker starts in a fresh interpreter, which has neither pytest's
    rootdir nor a conftest's folder on its path."""
    for root in reversed(tuple(roots)):
        if root not in sys.path:
            sys.path.insert(0, root)
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:  # the user's code: any failure is one line, naming the module
            first_line = next(iter(str(error).splitlines()), "")
            raise UserModuleError(f"accelbench_modules: {name} could not be imported: "
                                  f"{type(error).__name__}: {first_line}") from None


def roots_of(names: Iterable[str]) -> tuple[str, ...]:
    """The folder each (imported) module's top-level package was found in: what another
    interpreter needs on its path to import it the same way."""
    roots = []
    for name in names:
        top = sys.modules.get(name.split(".")[0])
        location = getattr(top, "__file__", None)
        if location is None:
            continue
        path = Path(location).resolve()
        root = path.parent.parent if path.name == "__init__.py" else path.parent
        roots.append(str(root))
    return tuple(dict.fromkeys(roots))
