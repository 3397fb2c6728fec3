"""A cheaper `__init__` for the frozen slotted dataclasses a rebalance round makes per member.

A frozen dataclass's generated `__init__` stores each field with `object.__setattr__(self,
"name", value)`: a lookup of the name on the type and a call per field. A 1000-member round
builds a command and a reply per request plus its effects, a visible part of the round's Python
work in process (RESULTS.md: figures behind the code). `quick_init` replaces that
`__init__` with one of the same signature and defaults that stores each field through its slot's
own descriptor (bound once, at decoration): half the cost. Nothing else changes: the instances
stay frozen (assignment still raises `FrozenInstanceError`), equal, hashable and picklable as
before. Only plain fields are supported (no `default_factory`, `kw_only`, `InitVar` or
`__post_init__`); anything else is refused when the class is decorated.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, cast

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Give the frozen slotted dataclass `cls` an `__init__` that sets its slots directly.

    Apply it above `@dataclass(frozen=True, slots=True)` (to the class that decorator made)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"quick_init needs a frozen slotted dataclass, not {cls.__qualname__}")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"quick_init: {cls.__qualname__} has a __post_init__")
    namespace: dict[str, Any] = {}
    arguments: list[str] = []
    body: list[str] = []
    for index, field in enumerate(dataclasses.fields(cast(Any, cls))):
        if (
            not field.init
            or field.kw_only
            or field.default_factory is not dataclasses.MISSING
            or field.name.startswith("_")
        ):
            raise TypeError(f"quick_init: field {field.name} of {cls.__qualname__} is not plain")
        namespace[f"_set{index}"] = getattr(cls, field.name).__set__
        if field.default is dataclasses.MISSING:
            arguments.append(field.name)
        else:
            namespace[f"_default{index}"] = field.default
            arguments.append(f"{field.name}=_default{index}")
        body.append(f"    _set{index}(self, {field.name})")
    source = f"def __init__(self, {', '.join(arguments)}):\n" + "\n".join(body or ["    pass"])
    exec(compile(source, f"<quick_init {cls.__qualname__}>", "exec"), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    setattr(cls, "__init__", init)  # noqa: B010 (mypy refuses assigning to a method)
    return cls
