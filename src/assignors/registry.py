"""Assignors by name: the built-ins plus user-defined ones.

User code registers an instance with `register`, or ships it as an entry point in the group
``rebalance.assignors`` (``name = "module:factory"``; the factory is called with no arguments);
entry points are loaded the first time a name is not found among the registered assignors.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .seeds import TubeMQModuloAssignor, ZooKeeperRangeAssignor, ZooKeeperRoundRobinAssignor
from .spec import PartitionAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor
from .uniform import UniformAssignor

ENTRY_POINT_GROUP = "rebalance.assignors"


class UnknownAssignorError(KeyError):
    """No assignor is registered under this name."""


def _builtins() -> list[PartitionAssignor]:
    return [
        RangeAssignor(),
        RoundRobinAssignor(),
        StickyAssignor(),
        CooperativeStickyAssignor(),
        UniformAssignor(),
        ZooKeeperRangeAssignor(),
        ZooKeeperRoundRobinAssignor(),
        TubeMQModuloAssignor(),
    ]


class Registry:
    """A name -> assignor map; names are unique, as Kafka requires of a consumer's assignors."""

    def __init__(self, assignors: list[PartitionAssignor] | None = None) -> None:
        self._by_name: dict[str, PartitionAssignor] = {}
        self._entry_points_loaded = False
        for assignor in assignors or []:
            self.register(assignor)

    def register(self, assignor: PartitionAssignor, *, replace: bool = False) -> None:
        name = assignor.name
        if not name:
            raise ValueError("an assignor needs a non-empty name")
        if name in self._by_name and not replace:
            raise ValueError(f"an assignor named {name!r} is already registered")
        self._by_name[name] = assignor

    def get(self, name: str) -> PartitionAssignor:
        if name not in self._by_name and not self._entry_points_loaded:
            self._load_entry_points()
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownAssignorError(
                f"unknown assignor {name!r}; known: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def _load_entry_points(self) -> None:
        self._entry_points_loaded = True
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            if entry.name in self._by_name:
                continue
            factory = entry.load()
            assignor: PartitionAssignor = factory()
            if assignor.name != entry.name:
                raise ValueError(
                    f"entry point {entry.name!r} builds an assignor named {assignor.name!r}"
                )
            self._by_name[entry.name] = assignor


DEFAULT_REGISTRY = Registry(_builtins())


def register(assignor: PartitionAssignor, *, replace: bool = False) -> None:
    """Register a user-defined assignor in the default registry."""
    DEFAULT_REGISTRY.register(assignor, replace=replace)


def get(name: str) -> PartitionAssignor:
    """The assignor registered under ``name`` (built-in, registered or from an entry point)."""
    return DEFAULT_REGISTRY.get(name)


def names() -> list[str]:
    """Names currently registered in the default registry."""
    return DEFAULT_REGISTRY.names()
