"""Gates: metrics held against baselines stored in the repository, keyed by what the numbers
depend on (the machine's fingerprint, the library versions, the data). GATES lists them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.judge import fingerprint
from accelbench.judge.baselines import BaselineFile, save_all
from accelbench.judge.rules import (
    ALLOCATOR_SLACK_BYTES,
    RUNS_SUFFIX,
    SPREAD_SUFFIX,
    AbsoluteDrop,
    RelativeGrowth,
    RelativeRise,
    SpreadGrowth,
)
from accelbench.option import Option
from accelbench.registry import Registry


@dataclass(frozen=True)
class Gate:
    """A metric judged against stored baselines: the file, what the numbers depend on, the rule."""

    metric: str
    store: BaselineFile
    scope: tuple[str, ...]
    rule: Any
    timed: bool = False  # derived from timings: neither judged nor recorded under --memray
    significance: bool = False  # a ratio of interleaved pairs: fails only if the shortfall is significant
    fingerprints: int = 0  # leading scope keys that are machine fingerprints (hardware, software)
    spread: bool = False  # a memory peak: its baseline is stored with its spread (SpreadGrowth)
    # a number under load: recorded as the median of this run and the same commit's earlier runs
    # judged against the baseline it replaces (gated_history)
    history: bool = False

    def rule_for(self, stored: str) -> Any:
        """The rule for one cell: from its recorded spread where there is one; the gate's fixed
        rule for a baseline recorded without (one run, or an older accelbench)."""
        spread = self.store.get(self.scope, stored, self.metric + SPREAD_SUFFIX) if self.spread else None
        if spread is None:
            return self.rule
        return SpreadGrowth.of(
            spread,
            int(self.store.get(self.scope, stored, self.metric + RUNS_SUFFIX) or 0),
            self.store.get(self.scope, stored, self.metric) or 0.0,
        )

    def missing_machine(self) -> str:
        """Why a number of this machine is ungated: what it is, and the nearest recorded
        machine for the same data with what differs."""
        if not self.fingerprints:
            present = ", ".join(self.store.scopes()) or "none"
            return (
                f"no {self.metric} baselines for {'/'.join(self.scope)} in {self.store.path.name} (it has: {present})"
            )
        mine = _fingerprint(self.scope[: self.fingerprints])
        rest = self.scope[self.fingerprints :]
        recorded = [
            _fingerprint(path[: self.fingerprints])
            for path in self.store.scope_paths()
            if path[self.fingerprints :] == rest
        ]
        found = fingerprint.nearest(mine, recorded)
        text = (
            f"no {self.metric} baselines for this machine's fingerprint and {'/'.join(rest)} in {self.store.path.name}"
        )
        if found is None:
            # This machine's own, under other settings (another preset's served numbers): what
            # it would be held to, had the run those settings.
            here = [
                "/".join(path[self.fingerprints :])
                for path in self.store.scope_paths()
                if path[: self.fingerprints] == self.scope[: self.fingerprints]
            ]
            if here:
                return f"{text}; this machine's are for {' and '.join(here)}"
            return f"{text} (none recorded for {'/'.join(rest)})"
        _, differences = found
        return f"{text}; nearest recorded machine differs in {'; '.join(differences)}"


@dataclass(frozen=True)
class Scope:
    """What a run's baselines are keyed by: this machine's hardware and software fingerprint keys
    (the software's holds the process backend: `backend`), the data, and what the run serves under
    (the gates of numbers measured under LoadGen key by it, and by their own kind's options:
    `served`)."""

    hardware: str
    software: str
    dataset: Any  # axes.data.Dataset: its name, and its key (name and size)
    # The preset (its requests or batch sizes, its LoadGen runs' durations and search) and
    # LoadGen's rules (--serving-rules): "quick preset, preset rules".
    served_under: str
    options: Mapping[str, Any]  # the run's kind options, by flag (RunConfig.kind_options)

    @property
    def backend(self) -> str:
        """The process backend alone, as fingerprint.backend() keys it: the software key's field."""
        name = fingerprint.Fingerprint.parse(self.software).as_dict().get("backend", fingerprint.UNKNOWN)
        return fingerprint.backend(name).key


def served(scope: Scope, *options: Option) -> str:
    """A served number's key beside the machine: what the run serves under, and each of `options`
    the run gave a value (a latency bound, token limits). A baseline recorded under others is
    another number: a peak rate searched in the full preset's 10 s runs, or under tighter
    limits, held to the quick preset's would fail or pass by the settings alone, so it is kept
    apart, and this run's number is ungated until recorded."""
    values = {option.flag: option.of(scope.options) for option in options}
    return ", ".join([scope.served_under, *(f"{flag} {value}" for flag, value in values.items() if value is not None)])


@dataclass(frozen=True)
class GateSpec:
    """A metric held against baselines stored in the repository: the file, the keys its numbers
    depend on, and its rule (from the run's tolerances: --accuracy-tolerance, ...)."""

    metric: str
    file: str  # under --baselines
    keys: Callable[[Scope], tuple[str, ...]]
    rule: Callable[[dict[str, float]], Any]  # the run's tolerances by name -> the rule
    timed: bool = False
    significance: bool = False
    fingerprints: int = 0
    spread: bool = False
    history: bool = False


# Every gate against stored baselines, by metric: a new gate is a GATES.register here, and the
# bench that measures its number hands it over (self.verdicts.against_baseline(..., self.gates[metric], ...)).
# Speedups depend on the hardware and the process backend; allocation patterns on the library
# versions as well (software(), which holds the backend). Accuracy from a fixed seed holds across
# machines and backends within its tolerance, so it is keyed by the data alone.
GATES: Registry[GateSpec] = Registry("gate")
GATES.register(
    "accuracy",
    GateSpec(
        "accuracy", "accuracy.json", lambda s: (s.dataset.key,), lambda tolerances: AbsoluteDrop(tolerances["accuracy"])
    ),
)
# A regression's error (axes.data.QUALITIES "mae"): lower is better, within a relative rise.
GATES.register(
    "mae", GateSpec("mae", "mae.json", lambda s: (s.dataset.key,), lambda tolerances: RelativeRise(tolerances["error"]))
)
for _metric in ("peak_memory_bytes", "device_peak_memory_bytes"):
    GATES.register(
        _metric,
        GateSpec(
            _metric,
            "memory.json",
            lambda s: (s.hardware, s.software, s.dataset.name),
            lambda tolerances: RelativeGrowth(tolerances["memory"], slack=ALLOCATOR_SLACK_BYTES),
            fingerprints=2,
            spread=True,
        ),
    )


@dataclass(frozen=True)
class Gates:
    """The run's gates against stored baselines, by metric (GATES), their files loaded once."""

    by_metric: dict[str, Gate]

    @classmethod
    def load(
        cls, directory: Path, scope: Scope, tolerances: dict[str, float], stores: dict[str, BaselineFile]
    ) -> Gates:
        """The gates of one scope; `stores` holds the files loaded so far by name, shared with the
        run's other scopes (another dataset's) so that one file is loaded and written once."""
        gates = {}
        for spec in GATES.values():
            keys = spec.keys(scope)
            if spec.file not in stores:
                stores[spec.file] = BaselineFile.load(directory / spec.file, len(keys))
            gates[spec.metric] = Gate(
                spec.metric,
                stores[spec.file],
                keys,
                spec.rule(tolerances),
                timed=spec.timed,
                significance=spec.significance,
                fingerprints=spec.fingerprints,
                spread=spec.spread,
                history=spec.history,
            )
        return cls(gates)

    def __getitem__(self, metric: str) -> Gate:
        return self.by_metric[metric]

    def all(self) -> list[Gate]:
        return list(self.by_metric.values())


def write_staged(stores: dict[str, BaselineFile]) -> list[str]:
    """Write the baselines staged in a run's files, all or nothing (atomically); what was written."""
    staged = [store for store in stores.values() if store.staged]
    save_all(staged)
    return [f"{store.path} ({store.staged} values)" for store in staged]


def _fingerprint(keys: tuple[str, ...]) -> fingerprint.Fingerprint:
    """The fingerprint of a scope's leading keys (hardware, then software or the backend)."""
    parsed = [fingerprint.Fingerprint.parse(key) for key in keys]
    return sum(parsed[1:], parsed[0])
