"""An option of the run, as the plugin adds it to pytest (plugin/options.py) and a benchmark
kind declares its own (Benchmark.options): its flag, its parser, its help and its default. The
parsers a kind's options share live here too; free of pytest, as a kind's bench.py reads them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.registry import Registry


@dataclass(frozen=True)
class Option:
    flag: str
    parse: Callable[[str], Any]
    metavar: str
    help: str
    default: str | None  # as text, run through parse like any user value; None: no default

    def of(self, given: Mapping[str, Any]) -> Any:
        """Its value among a run's (RunConfig.kind_options, by flag), else its default's: a run
        made without the plugin (a test's) reads as one given nothing."""
        if self.flag in given:
            return given[self.flag]
        return None if self.default is None else self.parse(self.default)

    @property
    def dest(self) -> str:
        return "accelbench_" + self.flag.lstrip("-").replace("-", "_")


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{value} is outside [0, 1)")
    return value


def positive_number(text: str) -> float:
    """'60e9', '60000000000' or '6.88'."""
    try:
        value = float(text.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a number") from None
    if not 0.0 < value < float("inf"):
        raise ValueError(f"{text.strip()!r} is not a positive number")
    return value


def name_in(registry: Registry) -> Callable[[str], str]:
    def name(text: str) -> str:
        registry[text.strip()]
        return text.strip()

    name.__name__ = f"{registry.noun}_name"
    return name
