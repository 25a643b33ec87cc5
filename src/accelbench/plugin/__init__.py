"""The pytest side: the only package that imports pytest.

`pytest_plugins = ("accelbench.plugin",)` in a conftest.py (or `-p accelbench.plugin`) loads
the hooks and the benchmark fixtures, which pytest finds through this module's own
`pytest_plugins`.
"""

pytest_plugins = ("accelbench.plugin.hooks", "accelbench.plugin.fixtures")
