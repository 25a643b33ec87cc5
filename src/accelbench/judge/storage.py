"""pytest-benchmark's storage: which JSON files under a folder are saved runs."""

from __future__ import annotations

from pathlib import Path


def runs_in(folder: Path) -> list[Path]:
    """The saved runs in a storage folder, by path (a machine's runs oldest first, as
    pytest-benchmark numbers them): its `<machine id>/NNNN_*.json`, as pytest-benchmark's own
    storage looks them up, or the files of one machine's folder when that is the folder named.
    No deeper: the serving cells keep LoadGen's logs under `.benchmarks/loadgen/<run>/<cell>/`,
    and their JSON files (the accuracy and trace logs) are not runs."""
    return sorted([*folder.glob("*.json"), *folder.glob("*/*.json")])
