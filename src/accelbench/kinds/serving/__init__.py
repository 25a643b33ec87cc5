"""Serving under load: a model served under MLPerf LoadGen's scenarios (kinds/__init__.py says
which file is which)."""
