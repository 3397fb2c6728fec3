"""`quick_init` keeps a frozen slotted dataclass what it was: same signature, defaults, errors,
equality, hashing, immutability and pickling; it refuses what it cannot build."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from rebalance.classic.commands import JoinGroup, SyncGroup
from rebalance.classic.replies import JoinGroupMember, JoinGroupReply, SyncGroupReply
from rebalance.effects import Reply, Schedule
from rebalance.errors import ErrorCode
from rebalance.quick_init import quick_init


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: str = "b"
    c: tuple[int, ...] = ()


Quick = quick_init(
    dataclasses.make_dataclass(
        "Quick",
        [("a", int), ("b", str, dataclasses.field(default="b")), ("c", tuple, ())],
        frozen=True,
        slots=True,
    )
)


def test_it_builds_what_the_generated_init_builds() -> None:
    for args, kwargs in [((1,), {}), ((1, "x"), {}), ((), {"a": 2, "c": (3,)}), ((1,), {"b": ""})]:
        plain, quick = Plain(*args, **kwargs), Quick(*args, **kwargs)
        assert dataclasses.astuple(plain) == dataclasses.astuple(quick)
    assert str(inspect.signature(Quick)).startswith("(a: int, b: str = 'b'")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        Quick()
    with pytest.raises(TypeError, match="unexpected keyword argument 'd'"):
        Quick(1, d=2)


def test_instances_stay_frozen_equal_hashable_and_picklable() -> None:
    join = JoinGroup("g", "m", "consumer", (("range", b"x"),), 10, 20, client_host="/h")
    same = JoinGroup("g", "m", "consumer", (("range", b"x"),), 10, 20, client_host="/h")
    assert join == same and hash(join) == hash(same) and join.version == same.version
    assert pickle.loads(pickle.dumps(join)) == join
    with pytest.raises(dataclasses.FrozenInstanceError):
        join.group_id = "other"  # type: ignore[misc]
    reply = JoinGroupReply(ErrorCode.NONE, 3, members=(JoinGroupMember("m", None, b""),))
    assert reply.members[0].metadata == b"" and reply.leader == ""
    assert SyncGroupReply(ErrorCode.NONE).assignment == b""
    assert SyncGroup("g", 1, "m").assignments == ()
    assert Schedule("k", 5) == Schedule("k", 5) and Reply(1, reply).response is reply


def test_it_refuses_what_it_cannot_build() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(slots=True)
    class NotFrozen:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (NoSlots, NotFrozen, Factory, PostInit):
        with pytest.raises(TypeError, match="quick_init"):
            quick_init(cls)
