"""The devices' roofs a run's cells are held to: measured once per device and dtype
(work/peak.py), kept between runs per machine fingerprint, checked at the start of each run (one
matmul and the triad: a roof kept from a busy moment rises to the better of the two, run by run),
measured again in full when a cell beats one.

Kept in pytest's cache (`.pytest_cache`; `pytest --cache-clear` measures again), or in the folder
ACCELBENCH_ROOFS_DIR names (a CI cache that outlives the checkout; runs made with
`-p no:cacheprovider`), as a JSON file a roof.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accelbench.axes.devices import Placement
from accelbench.measured import Roof
from accelbench.work import peak

ROOFS_DIR = "ACCELBENCH_ROOFS_DIR"
# A kept roof's check: one matmul, twice its size but at most 2048 (a 4096 one took 0.63 s a
# call here, 2048 0.08 s: every run, and every run a test starts, pays the check), and the
# triad, each the best of 2.
CHECK_SIZE = 2048
CHECK_REPEATS = 2


class FolderCache:
    """pytest's Cache's get and set, on a folder of JSON files."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        return self.folder / (key.replace("/", "__") + ".json")

    def get(self, key: str, default: Any) -> Any:
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return default

    def set(self, key: str, value: Any) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        written = self._path(key).with_suffix(".tmp")
        written.write_text(json.dumps(value))
        written.replace(self._path(key))  # whole or not at all: a parallel run reads one or the other


class Roofs:
    def __init__(self, fingerprint: Callable[[], str], progress: Callable[[str], None]) -> None:
        self.fingerprint = fingerprint
        self.progress = progress
        self.cache: Any = FolderCache(Path(os.environ[ROOFS_DIR])) if os.environ.get(ROOFS_DIR) else None
        self.by_device: dict[tuple[str, str], Roof] = {}  # (TensorFlow device, dtype) -> its roofs
        self.measured_again: set[tuple[str, str]] = set()

    def use_cache(self, cache: Any) -> None:
        """pytest's cache, unless ACCELBENCH_ROOFS_DIR names a folder."""
        if self.cache is None:
            self.cache = cache

    def measured(self) -> list[Roof]:
        return list(self.by_device.values())

    def of(self, placement: Placement, dtype: str, again: bool = False) -> Roof:
        """The device's roofs in a dtype. `again`: a cell ran above them, so they are measured
        once more this run (a busy moment while they were measured lowers them), the better kept."""
        key = (placement.device, dtype)
        if key not in self.by_device:
            saved = self._saved(placement, dtype)
            if saved is None:
                self.progress(f"measuring the {dtype} roofs of {placement.device} (once per machine)")
                self._keep(placement, dtype, peak.measure(placement.device, dtype))
            else:  # checked in a fraction of a second: a roof kept from a busy moment rises
                self.progress(f"checking the kept {dtype} roofs of {placement.device}")
                size = (min(2 * saved.matmul_size, CHECK_SIZE),)  # up a size from a busy 512 or 1024
                checked = peak.measure(placement.device, dtype, sizes=size, repeats=CHECK_REPEATS)
                self._keep(placement, dtype, saved.best_of(checked))
        if again and key not in self.measured_again:
            self.measured_again.add(key)
            self.progress(f"a cell ran above the {dtype} roof of {placement.device}: measuring it again")
            self._keep(placement, dtype, self.by_device[key].best_of(peak.measure(placement.device, dtype)))
        return self.by_device[key]

    def _saved(self, placement: Placement, dtype: str) -> Roof | None:
        saved = self.cache.get(self._key(placement, dtype), None) if self.cache is not None else None
        try:
            return Roof.from_json(saved) if saved else None
        except (KeyError, TypeError):  # kept by another version: measured anew
            return None

    def _keep(self, placement: Placement, dtype: str, roof: Roof) -> None:
        self.by_device[(placement.device, dtype)] = roof
        if self.cache is not None:
            self.cache.set(self._key(placement, dtype), roof.as_json())

    def _key(self, placement: Placement, dtype: str) -> str:
        machine = hashlib.sha1(self.fingerprint().encode()).hexdigest()[:12]
        return f"accelbench/roofs/{machine}/{placement.device.strip('/').replace(':', '_')}/{dtype}"
