"""The user's own modules (ini `accelbench_modules`, option --modules): where their models and
datasets are declared through the public API. The pytest process imports them before it reads
--models and --dataset, and every process it starts (A/B and backend workers, tf.distribute
jobs) imports them before it builds a cell, so every kind of cell sees the same models."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# Set in an environment that imports the project from elsewhere (--ab-ref's worktree): "FROM<sep>TO",
# folders under FROM are imported from the same place under TO.
ROOT_MAP_VARIABLE = "ACCELBENCH_ROOT_MAP"


class UserModuleError(ImportError):
    """A named module could not be imported: one line naming it and why."""


class UserCodeFailed(Exception):
    """A user's builder, loader or factory raised: the run ends on one line naming it (the
    plugin shows the whole traceback under --tb=long or -v)."""


def last_line(error: BaseException) -> str:
    """What an error says in its last line: Keras and TensorFlow put the cause there."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[-1].strip() if lines else ''}".rstrip(": ")


def call_user(what: str, function: Callable[..., T], *args: Any) -> T:
    """function(*args), a user's code (a model's builder, its optimizer or loss factory): any
    error it raises becomes one UserCodeFailed naming `what` and the error's last line."""
    try:
        return function(*args)
    except UserCodeFailed:
        raise
    except Exception as error:  # the user's code: whatever it raises, one line names it
        raise UserCodeFailed(f"{what} raised {last_line(error)}") from error


def import_modules(names: Iterable[str], roots: Iterable[str] = ()) -> None:
    """Import each named module, with `roots` (the folders the pytest process found them in)
    first on sys.path: a worker starts in a fresh interpreter, which has neither pytest's
    rootdir nor a conftest's folder on its path."""
    for root in reversed([_mapped(root) for root in roots]):
        if root in sys.path:  # first, before the working directory a worker starts in ('' or its path)
            sys.path.remove(root)
        sys.path.insert(0, root)
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:  # the user's code: any failure is one line, naming the module
            first_line = next(iter(str(error).splitlines()), "")
            raise UserModuleError(
                f"accelbench_modules: {name} could not be imported: {type(error).__name__}: {first_line}"
            ) from None


def _mapped(root: str) -> str:
    """The root where this process imports the project from (ROOT_MAP_VARIABLE), else itself."""
    source, _, target = os.environ.get(ROOT_MAP_VARIABLE, "").partition(os.pathsep)
    if source and target and (root == source or root.startswith(source + os.sep)):
        return target + root[len(source) :]
    return root


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
