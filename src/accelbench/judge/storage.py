"""pytest-benchmark's storage: which JSON files under a folder are saved runs, which code a
saved run ran, and the saved runs of one machine, read."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from accelbench.judge import fingerprint
from accelbench.judge.fingerprint import FINGERPRINT_KEY


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


def read_runs_of(
    files: Iterable[Path], hardware: str, software: str, purpose: str, read: Callable[[dict[str, Any]], None]
) -> list[str]:
    """Each saved run of this hardware and software fingerprint (numbers move with both), handed
    to `read` as pytest-benchmark saved it; one line for each file that could not be read,
    `purpose` saying what for (the others are still read)."""
    unreadable = []
    for path in files:
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            machine = saved.get("machine_info", {})
            if machine.get(FINGERPRINT_KEY) == hardware and fingerprint.software_of(machine).key == software:
                read(saved)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError, KeyError, TypeError) as error:
            unreadable.append(f"saved run {path} not read {purpose}: {type(error).__name__}: {error}"[:300])
    return unreadable
