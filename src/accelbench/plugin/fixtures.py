"""One plain fixture per benchmark kind, made from its registration (benches/catalog.py, and the
kinds a user's module registers), each parameterized over its cells by pytest_generate_tests
(hooks.py): a test file asks for one and calls it with pytest-benchmark's `benchmark`, e.g.
`def test_train(train_bench, benchmark): train_bench(benchmark)`.

The Bench is made when the fixture is, and its setup (building and stepping a memory cell's
model) runs then: outside the test body that pytest-benchmark times and pytest-memray tracks.

The fixtures are made once the run's modules are imported (hooks.pytest_configure registers
them as a plugin of their own), so a kind a user registers gets its fixture as the built-in
ones do; pytest finds the fixtures of any registered plugin, as of a module of them.
"""

from __future__ import annotations

import types
from collections.abc import Callable

import pytest

from accelbench.benches.base import Bench
from accelbench.benches.catalog import BENCHMARKS
from accelbench.plugin.state import session_of

PLUGIN_NAME = "accelbench-benchmark-fixtures"


def bench_for(name: str, request: pytest.FixtureRequest) -> Bench:
    """The Bench of benchmark kind `name` for the cell pytest parameterized this test with."""
    made = BENCHMARKS[name].bench(session_of(request.config), request.param, request.node.name)
    made.setup(request.node)
    return made


def _fixture(name: str) -> Callable[[pytest.FixtureRequest], Bench]:
    def make(request: pytest.FixtureRequest) -> Bench:
        return bench_for(name, request)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = BENCHMARKS[name].about
    return pytest.fixture(name=name)(make)


def register(config: pytest.Config) -> None:
    """Every registered kind's fixture, as one plugin (once per run)."""
    if config.pluginmanager.has_plugin(PLUGIN_NAME):
        return
    holder = types.ModuleType(PLUGIN_NAME, "accelbench's benchmark fixtures, one per registered kind")
    for name in BENCHMARKS:
        setattr(holder, name, _fixture(name))
    config.pluginmanager.register(holder, PLUGIN_NAME)
