"""The pytest side: options, hooks, fixtures and the terminal (with benches/, the only packages
that import pytest).

`pytest_plugins = ("accelbench.plugin",)` in a conftest.py (or `-p accelbench.plugin`) loads
the hooks, which pytest finds through this module's own `pytest_plugins`; the hooks register
one fixture per benchmark kind once the run's modules are imported (fixtures.py).
"""

pytest_plugins = ("accelbench.plugin.hooks",)
