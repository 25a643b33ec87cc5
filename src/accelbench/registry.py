"""A name -> entry mapping whose lookups name the valid choices."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """A lookup of a name that was never registered."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class Registry(Generic[T]):
    """Holds named entries (models, datasets, ...) registered once each."""

    def __init__(self, noun: str) -> None:
        self.noun = noun
        self._entries: dict[str, T] = {}
        self._origins: dict[str, str] = {}  # name -> the module that declared it, where one said

    def register(self, name: str, entry: T, origin: str | None = None) -> T:
        """Add an entry; a name taken is refused, unless `origin` (the declaring module) declared
        it: a module imported anew (pytester's runs, importlib.reload) replaces its own entries."""
        if name in self._entries and (origin is None or self._origins.get(name) != origin):
            raise ValueError(f"{self.noun} {name!r} is already registered")
        self._entries[name] = entry
        if origin is not None:
            self._origins[name] = origin
        return entry

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(f"unknown {self.noun} {name!r}; choose from: {', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def values(self) -> list[T]:
        return list(self._entries.values())

    def get(self, name: str, default: T | None = None) -> T | None:
        return self._entries.get(name, default)
