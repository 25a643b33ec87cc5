"""Every benchmark kind, by fixture name. A kind is declared whole in its folder's bench.py (its
KINDS: cells, Bench, what it judges, its summary tables, its plots); this finds the built-in
ones, every kinds/<name>/bench.py that declares KINDS, and registers them folder by folder in
the order the terminal shows their tables (each bench.py's PLACE_IN_SUMMARY). The plugin's fixtures
(plugin/fixtures.py), the scaffold's test files (scaffold.py), the run's order
(plugin/hooks.py) and the summary's tables (sections()) are made from the registrations; a
user's module may register more (accelbench.register_benchmark)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from accelbench import kinds
from accelbench.benches.base import Benchmark
from accelbench.registry import Registry
from accelbench.results.summary import Section


def kind_modules(*packages: ModuleType) -> list[ModuleType]:
    """The packages' modules that declare KINDS, by their PLACE_IN_SUMMARY: a module, or a
    folder's bench.py (kinds/<name>/bench.py). A new kind's module is found
    where it is written, with no list of modules to add it to."""
    found = []
    for package in packages:
        for module_info in pkgutil.iter_modules(package.__path__):
            name = f"{package.__name__}.{module_info.name}"
            if module_info.ispkg:  # a kind's folder: its pytest side is its bench.py
                name += ".bench"
            module = importlib.import_module(name)
            if hasattr(module, "KINDS"):
                found.append(module)
    for module in found:
        if not isinstance(getattr(module, "PLACE_IN_SUMMARY", None), int):
            raise TypeError(f"{module.__name__} declares KINDS but no PLACE_IN_SUMMARY (an int): where its tables go")
    return sorted(found, key=lambda module: module.PLACE_IN_SUMMARY)


BENCHMARKS: Registry[Benchmark] = Registry("benchmark fixture")
for module in kind_modules(kinds):
    for name, kind in module.KINDS.items():
        BENCHMARKS.register(name, kind)


def sections() -> list[Section]:
    """The summary's tables: every registered kind's, in registration order; a table of a
    title already taken replaces it in its place (a user's kind may redraw a built-in table)."""
    found: dict[str, Section] = {}
    for kind in BENCHMARKS.values():
        for section in kind.sections:
            found[section.title] = section
    return list(found.values())


def plots() -> list[str]:
    """The report's plots the registered kinds draw, by name (a kind folder's plots.py PLOTS)."""
    return list(dict.fromkeys(name for kind in BENCHMARKS.values() for name in kind.plots))
