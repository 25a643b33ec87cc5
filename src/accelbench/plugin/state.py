"""What the plugin keeps on pytest's config and items: the run's Session, and whether a cell's
own work passed (a stash, not a global, so that pytester's runs inside a test keep theirs apart)."""

from __future__ import annotations

import pytest

from accelbench.run.session import Session

SESSION = pytest.StashKey[Session]()
BODY_PASSED = pytest.StashKey[bool]()  # the cell's own work and verdicts passed


def session_of(config: pytest.Config) -> Session:
    return config.stash[SESSION]
