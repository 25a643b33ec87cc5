"""The devices' roofs a run's cells are held to: measured once per backend, device and dtype
by the backend that runs the cells (axes/backends/roof_kernels.py), kept between runs per
machine fingerprint, checked at the start of each run (one
matmul and the bandwidth kernels: a roof kept from a busy moment rises to the better of the two, run by run),
measured again in full when a cell beats one. One roof per run, device and dtype: when it is
measured again, the cells already held to it are held again to the new one, so every cell of a
run is against the same roof.

Kept in pytest's cache (`.pytest_cache`; `pytest --cache-clear` measures again), or in the folder
ACCELBENCH_ROOFS_DIR names (a CI cache that outlives the checkout; runs made with
`-p no:cacheprovider`), as a JSON file a roof.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accelbench.measured import Roof

ROOFS_DIR = "ACCELBENCH_ROOFS_DIR"
# measure(backend, device name, dtype, a kept roof to check or None) -> the roofs, measured by
# that backend in the process that runs its cells (the session's: this one, or its worker)
Measure = Callable[[str, str, str, "Roof | None"], Roof]


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
        """Whole or not at all: a parallel run reads one file or the other. Each writer has a
        temporary file of its own (two parallel runs writing one named .tmp raced: the second
        replace found it gone, a FileNotFoundError at collection in CI's slow tier)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self._path(key)
        with tempfile.NamedTemporaryFile("w", dir=self.folder, prefix=target.stem, suffix=".tmp", delete=False) as file:
            file.write(json.dumps(value))
        Path(file.name).replace(target)


# hold(roof): a cell's utilization stated against `roof` (recorded into its results)
Hold = Callable[[Roof], None]


class Roofs:
    """The roofs per backend, device and dtype: measured (or a kept one checked) before the
    cells, and measured once more if a cell runs above them; each cell's utilization is held to
    the run's last roof of its device, the earlier cells' restated when the roof rises."""

    def __init__(self, fingerprint: Callable[[], str], progress: Callable[[str], None], measure: Measure) -> None:
        self.fingerprint = fingerprint
        self.progress = progress
        self.measure = measure
        self.cache: Any = FolderCache(Path(os.environ[ROOFS_DIR])) if os.environ.get(ROOFS_DIR) else None
        self.by_device: dict[tuple[str, str, str], Roof] = {}  # (backend, device, dtype) -> its roofs
        self.measured_again: set[tuple[str, str, str]] = set()
        self.held: dict[tuple[str, str, str], list[Hold]] = {}  # what to restate when a roof rises

    def use_cache(self, cache: Any) -> None:
        """pytest's cache, unless ACCELBENCH_ROOFS_DIR names a folder."""
        if self.cache is None:
            self.cache = cache

    def measured(self) -> list[Roof]:
        return list(self.by_device.values())

    def of(self, backend: str, device: str, dtype: str, again: bool = False) -> Roof:
        """A device's roofs in a dtype, as `backend` reaches them. `again`: a cell ran above
        them, so they are measured once more this run (a busy moment while they were measured
        lowers them), the better kept."""
        key = (backend, device, dtype)
        where = f"{device} on {backend}"
        if key not in self.by_device:
            saved = self._saved(key)
            if saved is None:
                self.progress(f"measuring the {dtype} roofs of {where} (once per machine)")
            else:  # checked in a fraction of a second: a roof kept from a busy moment rises
                self.progress(f"checking the kept {dtype} roofs of {where}")
            self._keep(key, self.measure(backend, device, dtype, saved))
        if again and key not in self.measured_again:
            self.measured_again.add(key)
            self.progress(f"a cell ran above the {dtype} roof of {where}: measuring it again")
            self._keep(key, self.by_device[key].best_of(self.measure(backend, device, dtype, None)))
            for hold in self.held.get(key, ()):
                hold(self.by_device[key])
        return self.by_device[key]

    def hold(self, backend: str, device: str, dtype: str, hold: Hold) -> Roof:
        """Hold a cell to the device's roof now (its roof, returned) and again whenever the roof
        is measured again later in the run (a cell above it), so that no two cells of one run are
        held to different roofs of one device and dtype."""
        roof = self.of(backend, device, dtype)
        self.held.setdefault((backend, device, dtype), []).append(hold)
        hold(roof)
        return roof

    def _saved(self, key: tuple[str, str, str]) -> Roof | None:
        saved = self.cache.get(self._key(key), None) if self.cache is not None else None
        try:
            return Roof.from_json(saved) if saved else None
        except (KeyError, TypeError):  # kept by another version: measured anew
            return None

    def _keep(self, key: tuple[str, str, str], roof: Roof) -> None:
        self.by_device[key] = roof
        if self.cache is not None:
            self.cache.set(self._key(key), roof.as_json())

    def _key(self, key: tuple[str, str, str]) -> str:
        backend, device, dtype = key
        machine = hashlib.sha1(self.fingerprint().encode()).hexdigest()[:12]
        return f"accelbench/roofs/{machine}/{backend}/{device.replace(':', '_')}/{dtype}"
