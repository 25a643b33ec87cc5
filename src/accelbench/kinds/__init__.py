"""Benchmark kinds, a folder each: `kinds/<name>/` holds everything one kind is, split by
which process and which layer runs it, so the house outside stays generic over kinds:

- `result.py`: its typed result parts (accelbench.measured.Part): no framework, no pytest;
  the judge, the report and the history read them;
- `gates.py`: its gates against stored baselines (judge.gates.GATES);
- `settings.py`: what each preset sets for it (run.presets.KIND_SETTINGS);
- `plots.py`: the report's plots of its numbers (a PLOTS dict the report finds): no pytest,
  no framework, no process code;
- `series.py`: its numbers in `accelbench history` (results.history.series.NUMBERS);
- `tables.py`: records its cells' numbers derive together, for its summary tables (a DERIVED
  tuple results.summary.derived_records finds);
- `work.py` and its helpers: the work it measures, child-safe: a backend's or an A/B side's
  worker runs it too (processes.cellwork.kind_work);
- `bench.py` (the pytest side, the parent): its cells and skip rules, its Bench, and its KINDS,
  which benches/catalog.py registers.

tests/test_layers.py holds each file to its layer and checks that no module outside a kind's
folder names the kind's fixture, result parts or folder.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def each(file: str) -> list[ModuleType]:
    """Every kind folder's `file` module (plots, series), imported by the generic code that reads
    them (the report, the history) in the folders' order; a folder without one has none. An
    import error inside one is raised, not taken for a missing file."""
    found = []
    for folder in pkgutil.iter_modules(__path__):
        name = f"{__name__}.{folder.name}.{file}"
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
    return found
