"""Every benchmark kind, by fixture name. A kind is declared whole in its own module (its KINDS:
cells, Bench, what it judges, its summary tables, its plots); this registers the built-in ones,
module by module in the order the terminal shows their tables. The plugin's fixtures
(plugin/fixtures.py), the scaffold's test files (scaffold.py), the run's order
(plugin/hooks.py) and the summary's tables (sections()) are made from the registrations; a
user's module may register more (accelbench.register_benchmark)."""

from __future__ import annotations

from accelbench.benches import accuracy, data_scaling, distributed, memory, serving, speedup, throughput
from accelbench.benches.base import Benchmark
from accelbench.registry import Registry
from accelbench.results.summary import Section

BENCHMARKS: Registry[Benchmark] = Registry("benchmark fixture")
for module in (throughput, speedup, accuracy, memory, serving, distributed, data_scaling):
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
    """The report's plots the registered kinds draw, by name (results/report/plots.py PLOTS)."""
    return list(dict.fromkeys(name for kind in BENCHMARKS.values() for name in kind.plots))
