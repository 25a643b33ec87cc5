"""Registers the accelbench plugin for this repository's benchmarks and tests."""

pytest_plugins = ("accelbench.plugin",)
