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
from typing import Any

import pytest

from accelbench.benches.base import Bench
from accelbench.benches.catalog import BENCHMARKS
from accelbench.plugin.state import session_of
from accelbench.user_modules import call_user

PLUGIN_NAME = "accelbench-benchmark-fixtures"


def bench_for(name: str, request: pytest.FixtureRequest) -> Bench:
    """The Bench of benchmark kind `name` for the cell pytest parameterized this test with. A
    user's kind's comes wrapped (UsersBench): its code raising is the user's code raising."""
    kind = BENCHMARKS[name].bench
    if kind.__module__.split(".")[0] == "accelbench":
        made = kind(session_of(request.config), request.param, request.node.name)
        made.setup(request.node)
        return made
    made = call_user(f"benchmark kind {name!r}", kind, session_of(request.config), request.param, request.node.name)
    call_user(f"benchmark kind {name!r}: its setup", made.setup, request.node)
    return UsersBench(name, made)  # type: ignore[return-value]


class UsersBench:
    """A user's kind's Bench, as its test sees it: called, whatever its code raises (its own
    measuring, its work's builder, a round) stops the run in one line naming the kind and the
    error's last line, as a user's model builder that raises does (UserCodeFailed; the whole
    traceback under -v or --tb=long), and the run is not saved as one to compare with. Every
    other attribute is the Bench's own."""

    def __init__(self, kind: str, bench: Bench) -> None:
        self._kind, self._bench = kind, bench

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bench, name)

    def __setattr__(self, name: str, value: Any) -> None:  # the hooks set the Bench's own (extra_info)
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._bench, name, value)

    def __call__(self, *args: Any) -> Any:
        return call_user(f"benchmark kind {self._kind!r}", self._bench, *args)


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
