"""pytest-benchmark's storage: which JSON files under a folder are saved runs, and which code a
saved run ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def runs_in(folder: Path) -> list[Path]:
    """The saved runs in a storage folder, by path (a machine's runs oldest first, as
    pytest-benchmark numbers them): its `<machine id>/NNNN_*.json`, as pytest-benchmark's own
    storage looks them up, or the files of one machine's folder when that is the folder named.
    No deeper: the serving cells keep LoadGen's logs under `.benchmarks/loadgen/<run>/<cell>/`,
    and their JSON files (the accuracy and trace logs) are not runs."""
    return sorted([*folder.glob("*.json"), *folder.glob("*/*.json")])


def commit_of(info: dict[str, Any]) -> str | None:
    """A saved run's commit_info as the commit whose code it ran: its id where the run was in a
    clean checkout; None for a dirty tree (its code is not the commit's), or a folder outside
    version control (pytest-benchmark's "unversioned"; "unknown" where git failed)."""
    commit = info.get("id")
    if not commit or commit in ("unversioned", "unknown") or info.get("dirty"):
        return None
    return str(commit)
