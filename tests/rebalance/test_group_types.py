"""Group types own what differs per type; the core's shared modules know none of them.

Every registered type brings its routes, timers and records to the core. The shared modules
import no group-type package. And a group type written here, in the tests (`roster_type`),
runs on the core with nothing but its own files and its registration.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from roster_type.commands import Enlist, EnlistReply
from roster_type.group_type import SESSION, RosterGroupType

from rebalance.classic.commands import JoinGroup
from rebalance.classic.replies import JoinGroupReply
from rebalance.commands import (
    Command,
    CommitPartition,
    CommitTopic,
    DeleteGroups,
    DescribeGroups,
    ListGroups,
    OffsetCommit,
)
from rebalance.core import GroupCoordinatorCore
from rebalance.errors import ErrorCode
from rebalance.registry import GROUP_TYPES
from rebalance.replies import DeleteGroupsReply, DescribeGroupsReply, ListGroupsReply
from rebalance.testing import GroupHarness


@dataclasses.dataclass(frozen=True)
class SecondRosterRecord:
    group_id: str
    value: object


SRC = Path(__file__).resolve().parents[2] / "src" / "rebalance"
ROSTER = Path(__file__).resolve().parent / "roster_type"

#: The core's shared modules: what every group type runs on.
SHARED = (
    "commands",
    "config",
    "core",
    "effects",
    "errors",
    "event_schema",
    "events",
    "group_types",
    "lifecycle",
    "offsets",
    "placement",
    "quick_init",
    "records",
    "replies",
    "rng",
    "state",
    "subscription",
    "timers",
    "topics",
)
#: The packages beside them: group types (classic, consumer_group, ...) and the member library.
PACKAGES = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file())


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, anywhere in it (functions and TYPE_CHECKING included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def _packages_imported(path: Path) -> set[str]:
    return {
        m.split(".")[1]
        for m in _imports(path)
        if m.startswith("rebalance.") and m.split(".")[1] in PACKAGES
    }


@pytest.mark.parametrize("module", SHARED)
def test_a_shared_module_imports_no_group_type_package(module: str) -> None:
    assert _packages_imported(SRC / f"{module}.py") == set()


def test_the_import_check_sees_imports_in_functions_and_under_type_checking(
    tmp_path: Path,
) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from rebalance.classic.group import Group\n"
        "def f():\n    import rebalance.consumer_group.group\n"
    )
    assert _packages_imported(module) == {"classic", "consumer_group"}


@pytest.mark.parametrize("factory", GROUP_TYPES, ids=lambda f: f.name)
def test_every_registered_type_brings_its_routes_timers_and_records(factory: type) -> None:
    core = GroupCoordinatorCore()
    group_type = core.group_types[factory.name]
    routes = group_type.routes()
    assert routes, "a group type answers at least one command of its own"
    for command in routes:
        assert issubclass(command, Command)
        assert core._routes[command] is not None
    assert group_type.timer_kinds
    for kind in group_type.timer_kinds:
        assert core.state.types_by_timer[kind] is group_type
    fields = {f.name for f in dataclasses.fields(group_type.record_class)}
    assert {"group_id", "value"} <= fields
    assert core.state.types_by_record[group_type.record_class] is group_type
    assert group_type.group_class.group_type == group_type.name


class SecondRoster(RosterGroupType):
    """Another type that claims the roster's command."""

    name = "second_roster"
    record_class = SecondRosterRecord
    timer_kinds = frozenset({"second_roster_session"})


def test_a_type_registered_twice_or_claiming_anothers_command_is_refused() -> None:
    with pytest.raises(ValueError, match="group type 'classic' registered twice"):
        GroupCoordinatorCore(group_types=(*GROUP_TYPES, GROUP_TYPES[0]))
    with pytest.raises(ValueError, match="Enlist routed twice"):
        GroupCoordinatorCore(group_types=(*GROUP_TYPES, RosterGroupType, SecondRoster))


# -- a group type of the tests' own ------------------------------------------------------------
def test_a_new_group_type_is_made_of_its_own_files_on_the_shared_modules_alone() -> None:
    files = sorted(p.name for p in ROSTER.glob("*.py"))
    assert files == ["__init__.py", "commands.py", "group.py", "group_type.py", "records.py"]
    for path in ROSTER.glob("*.py"):
        assert _packages_imported(path) == set(), path.name
        rebalance_modules = {m for m in _imports(path) if m.startswith("rebalance.")}
        assert {m.split(".")[1] for m in rebalance_modules} <= set(SHARED), path.name


@pytest.fixture
def h() -> GroupHarness:
    return GroupHarness(group_types=(*GROUP_TYPES, RosterGroupType))


def enlist(h: GroupHarness, member: str, *, leave: bool = False) -> EnlistReply:
    reply = h.reply(h.send(Enlist("crew", member, 5_000, leave=leave)))
    assert isinstance(reply, EnlistReply)
    return reply


def commit(h: GroupHarness, member: str, epoch: int) -> ErrorCode:
    topics = (CommitTopic("t", (CommitPartition(0, 42),)),)
    reply = h.reply(h.send(OffsetCommit("crew", topics, epoch, member)))
    return reply.topics[0][1][0][1]


def test_its_command_is_routed_and_its_records_replay(h: GroupHarness) -> None:
    assert enlist(h, "a") == EnlistReply(ErrorCode.NONE, 1)
    assert enlist(h, "b") == EnlistReply(ErrorCode.NONE, 2)
    assert enlist(h, "a") == EnlistReply(ErrorCode.NONE, 2)  # no change, no new epoch
    h.failover()
    assert h.core.group("crew").members == {"a": 5_000, "b": 5_000}
    assert enlist(h, "c") == EnlistReply(ErrorCode.NONE, 3)


def test_the_shared_offset_code_asks_it_who_may_commit(h: GroupHarness) -> None:
    enlist(h, "a")
    assert commit(h, "a", 1) is ErrorCode.NONE
    assert commit(h, "a", 0) is ErrorCode.ILLEGAL_GENERATION
    assert commit(h, "stranger", 1) is ErrorCode.UNKNOWN_MEMBER_ID


def test_its_timer_fires_to_it(h: GroupHarness) -> None:
    enlist(h, "a")
    assert h.advance(5_000) == [(SESSION, "crew", "a")]
    assert h.core.group("crew").members == {}


def test_the_shared_views_and_deletion_ask_it(h: GroupHarness) -> None:
    enlist(h, "a")
    listed = h.reply(h.send(ListGroups()))
    assert isinstance(listed, ListGroupsReply)
    assert [(g.group_id, g.group_type, g.state) for g in listed.groups] == [
        ("crew", "roster", "Stable")
    ]
    described = h.reply(h.send(DescribeGroups(("crew",))))
    assert isinstance(described, DescribeGroupsReply)
    assert [m.member_id for m in described.groups[0].members] == ["a"]
    deleted = h.reply(h.send(DeleteGroups(("crew",))))
    assert deleted == DeleteGroupsReply((("crew", ErrorCode.NON_EMPTY_GROUP),))
    enlist(h, "a", leave=True)
    deleted = h.reply(h.send(DeleteGroups(("crew",))))
    assert deleted == DeleteGroupsReply((("crew", ErrorCode.NONE),))
    assert h.core.group("crew") is None


def test_another_types_command_naming_its_group_gets_that_apis_refusal(h: GroupHarness) -> None:
    enlist(h, "a")
    join = JoinGroup("crew", "", "consumer", (("range", b""),), 10_000, 30_000)
    reply = h.reply(h.send(join))
    # Kafka 4.4's answer to a JoinGroup naming a group that takes no classic requests.
    assert reply == JoinGroupReply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
