"""The parent's mirror of a group the child holds: a group's inputs change it by only what
differs (members by equality, in the child's order of application; targets by identity; the
metadata by identity), equal subscriptions go as one tuple, and a member that left and came
back is sent with the new order."""

from __future__ import annotations

from coordinator.groups.assignor_worker.mirror import Change, Mirror
from rebalance.consumer_group.group import MemberInputs
from rebalance.consumer_group.records import Assignment
from rebalance.consumer_group.target import TargetInputs
from rebalance.topics import TopicInfo, TopicMetadata

METADATA = TopicMetadata.of([TopicInfo("t", "id-t", 4)])


def member(member_id: str, *topics: str) -> MemberInputs:
    return MemberInputs(member_id, tuple(topics), None, None, None)


def inputs(
    members: list[MemberInputs],
    targets: dict[str, Assignment],
    metadata: TopicMetadata = METADATA,
) -> TargetInputs:
    return TargetInputs("g", 1, "uniform", metadata, tuple(members), targets)


def test_the_first_inputs_are_sent_whole_with_one_tuple_per_subscription() -> None:
    mirror = Mirror()
    a, b = member("a", "t", "u"), member("b", "t", "u")
    assert a.topic_names is not b.topic_names
    target: Assignment = (("id-t", (0, 1)),)
    change = mirror.update(inputs([a, b], {"a": target}))
    assert change == Change(METADATA, [], [a, b], None, {"a": target})
    assert change.upserts[0].topic_names is change.upserts[1].topic_names


def test_unchanged_inputs_send_nothing() -> None:
    mirror = Mirror()
    target: Assignment = (("id-t", (0, 1)),)
    members = [member("a", "t"), member("b", "t")]
    mirror.update(inputs(members, {"a": target}))
    # equal members (not the same objects), the very same target and metadata
    again = [member("a", "t"), member("b", "t")]
    assert mirror.update(inputs(again, {"a": target})) == Change(None, [], [], None, {})


def test_what_changed_is_sent_and_nothing_else() -> None:
    mirror = Mirror()
    old: Assignment = (("id-t", (0, 1)),)
    mirror.update(inputs([member("a", "t"), member("b", "t")], {"a": old, "b": old}))
    grown = TopicMetadata.of([TopicInfo("t", "id-t", 8)])
    new: Assignment = tuple([("id-t", (0, 1))])  # equal, but another object: a new record's
    assert new == old and new is not old
    change = mirror.update(inputs([member("a", "t", "u"), member("c", "t")], {"a": new}, grown))
    assert change[:4] == (grown, ["b"], [member("a", "t", "u"), member("c", "t")], None)
    assert change.targets == {"b": None, "a": new} and change.targets["a"] is new
    assert list(mirror.members) == ["a", "c"] and mirror.targets == {"a": new}


def test_a_member_that_left_and_came_back_is_sent_with_the_new_order() -> None:
    mirror = Mirror()
    mirror.update(inputs([member("a", "t"), member("b", "t")], {}))
    # a left and came back: last now, with what it had (nothing to upsert)
    change = mirror.update(inputs([member("b", "t"), member("a", "t")], {}))
    assert change == Change(None, [], [], ["b", "a"], {})
    assert list(mirror.members) == ["b", "a"]
