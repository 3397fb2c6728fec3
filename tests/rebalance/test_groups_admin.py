"""DescribeGroups, ListGroups, DeleteGroups conformance: spec §3.5, §3.6, §3.7, §9 rule 15."""

from __future__ import annotations

from rebalance.commands import DeleteGroups, DescribeGroups, ListGroups
from rebalance.errors import ErrorCode
from rebalance.replies import (
    DeleteGroupsReply,
    DescribedGroup,
    DescribeGroupsReply,
    ListGroupsReply,
)
from rebalance.testing import GroupHarness

G = "g"


def _describe(h: GroupHarness, *group_ids: str) -> tuple[DescribedGroup, ...]:
    reply = h.reply(h.send(DescribeGroups(group_ids)))
    assert isinstance(reply, DescribeGroupsReply)
    return reply.groups


def _list(
    h: GroupHarness, states: tuple[str, ...] = (), types: tuple[str, ...] = ()
) -> set[tuple[str, str, str, str]]:
    reply = h.reply(h.send(ListGroups(states, types)))
    assert isinstance(reply, ListGroupsReply)
    assert reply.error is ErrorCode.NONE
    return {(g.group_id, g.state, g.protocol_type, g.group_type) for g in reply.groups}


def _delete(h: GroupHarness, *group_ids: str) -> dict[str, ErrorCode]:
    reply = h.reply(h.send(DeleteGroups(group_ids)))
    assert isinstance(reply, DeleteGroupsReply)
    return dict(reply.results)


def test_describe_unknown_group_is_dead() -> None:
    """§3.6 / §9 rule 15: unknown -> NONE, state "Dead", type/data "", no members."""
    h = GroupHarness()
    (group,) = _describe(h, "nope")
    assert group == DescribedGroup("nope", ErrorCode.NONE, "Dead", "", "", ())


def test_describe_stable_group() -> None:
    """§3.6: Stable -> protocol type, selected protocol, members with metadata and assignment."""
    h = GroupHarness()
    members, _ = h.form_group(G, 2, protocols=(("range", b"meta"),), client_id="c")
    (group,) = _describe(h, G)
    assert group.error is ErrorCode.NONE
    assert group.state == "Stable"
    assert group.protocol_type == "consumer" and group.protocol_data == "range"
    assert {m.member_id for m in group.members} == set(members)
    for m in group.members:
        assert m.metadata == b"meta"
        assert m.assignment == m.member_id.encode()
        assert m.client_id == "c"


def test_describe_rebalancing_group_has_no_protocol_data_or_metadata() -> None:
    """§3.6 / §8.1: non-stable -> ProtocolData "", members without metadata; the new
    coordinator includes the current assignment."""
    h = GroupHarness()
    (leader, _), _ = h.form_group(G, 2)
    h.join(G, leader)
    (group,) = _describe(h, G)
    assert group.state == "PreparingRebalance"
    assert group.protocol_data == ""
    assert all(m.metadata == b"" for m in group.members)
    assert {m.assignment for m in group.members} == {m.member_id.encode() for m in group.members}


def test_describe_states_and_coordinator_errors() -> None:
    """§1.3 wire names; §4: coordinator errors are set on the group entry."""
    h = GroupHarness()
    token = h.new_member(G)[1]
    assert _describe(h, G)[0].state == "PreparingRebalance"
    h.run_until(lambda: h.reply(token) is not None)
    assert _describe(h, G)[0].state == "CompletingRebalance"
    h.commit("simple", {("t", 0): 1})
    assert _describe(h, "simple")[0].state == "Empty"
    h.core.unload(h.core.partition_for(G), h.clock.now_ms())
    (group,) = _describe(h, G)
    assert group.error is ErrorCode.NOT_COORDINATOR and group.state == ""


def test_list_groups_with_case_insensitive_state_filter() -> None:
    """§3.7: every group with type ("" if none), state and group type "classic"; the states
    filter is case-insensitive (J also trims)."""
    h = GroupHarness()
    h.form_group("stable", 1)
    h.commit("simple", {("t", 0): 1})
    h.join("rebalancing", version=3)
    everything = _list(h)
    assert everything == {
        ("stable", "Stable", "consumer", "classic"),
        ("simple", "Empty", "", "classic"),
        ("rebalancing", "PreparingRebalance", "consumer", "classic"),
    }
    assert {g[0] for g in _list(h, ("STABLE", " empty "))} == {"stable", "simple"}
    assert {g[0] for g in _list(h, ("preparingrebalance",))} == {"rebalancing"}
    assert _list(h, ("Dead",)) == set()


def test_list_groups_type_filter() -> None:
    """§3.7: TypesFilter case-insensitive; classic groups match "classic" only."""
    h = GroupHarness()
    h.form_group(G, 1)
    assert {g[0] for g in _list(h, types=("Classic",))} == {G}
    assert _list(h, types=("consumer",)) == set()
    assert _list(h, types=("unknown",)) == set()


def test_list_groups_while_loading_is_error_with_empty_list() -> None:
    """§3.7 / §8.1: a loading partition -> COORDINATOR_LOAD_IN_PROGRESS and an empty list (J)."""
    h = GroupHarness()
    h.form_group(G, 1)
    other = (h.core.partition_for(G) + 1) % 50
    h.core.unload(other, h.clock.now_ms())
    h.core.begin_load(other)
    reply = h.reply(h.send(ListGroups()))
    assert isinstance(reply, ListGroupsReply)
    assert reply.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and reply.groups == ()


def test_delete_empty_group_tombstones_offsets_and_group() -> None:
    """§3.5: Empty -> offsets and group tombstoned, NONE; afterwards Describe -> Dead and
    Fetch -> -1."""
    h = GroupHarness()
    (member,), generation = h.form_group(G, 1)
    h.commit(G, {("t", 0): 5}, member_id=member, generation=generation)
    h.leave(G, member)
    assert _delete(h, G) == {G: ErrorCode.NONE}
    assert h.core.group(G) is None
    assert _describe(h, G)[0].state == "Dead"
    assert h.committed(G, ("t", 0)) == {("t", 0): -1}


def test_delete_non_empty_and_unknown_groups() -> None:
    """§3.5: PR/CR/S -> NON_EMPTY_GROUP; absent -> GROUP_ID_NOT_FOUND; unowned ->
    NOT_COORDINATOR; results per group."""
    h = GroupHarness()
    h.form_group("stable", 1)
    h.join("rebalancing", version=3)
    h.commit("simple", {("t", 0): 1})
    result = _delete(h, "stable", "rebalancing", "nope", "simple")
    assert result == {
        "stable": ErrorCode.NON_EMPTY_GROUP,
        "rebalancing": ErrorCode.NON_EMPTY_GROUP,
        "nope": ErrorCode.GROUP_ID_NOT_FOUND,
        "simple": ErrorCode.NONE,
    }
    h.core.unload(h.core.partition_for("stable"), h.clock.now_ms())
    assert _delete(h, "stable") == {"stable": ErrorCode.NOT_COORDINATOR}
