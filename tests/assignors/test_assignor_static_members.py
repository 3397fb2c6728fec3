"""Static members (instance ids) in random groups: validity, balance and restart stability."""

from __future__ import annotations

from assignor_checks import assert_balanced, assert_valid, groups
from hypothesis import given, settings
from hypothesis import strategies as st

import assignors

PROPERTY = settings(max_examples=100, deadline=None)
ALL = ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "zookeeper-range"]


@PROPERTY
@given(group=groups(), data=st.data(), name=st.sampled_from(ALL))
def test_static_members_valid_and_balanced(group, data, name) -> None:  # type: ignore[no-untyped-def]
    subscriptions, partitions, racks, replica_racks = group
    static = data.draw(st.sets(st.sampled_from(sorted(subscriptions))))
    instance_ids = {m: f"instance-{m[::-1]}" for m in static}
    result = assignors.assign(
        name,
        subscriptions,
        partitions,
        member_racks=racks,
        partition_racks=replica_racks,
        instance_ids=instance_ids,
    )
    assert_valid(result, subscriptions, partitions)
    if name in ("sticky", "cooperative-sticky", "uniform"):
        assert_balanced(result, subscriptions)


@PROPERTY
@given(group=groups(with_racks=False), name=st.sampled_from(["range", "roundrobin"]))
def test_restarted_static_members_get_the_same_partitions(group, name) -> None:  # type: ignore[no-untyped-def]
    """A static member restarts with a new member id; with every member static, nothing moves."""
    subscriptions, partitions, _, _ = group
    instance_ids = {m: f"i-{m}" for m in subscriptions}
    before = assignors.assign(name, subscriptions, partitions, instance_ids=instance_ids)
    renamed = {f"zz-new-{m}": s for m, s in subscriptions.items()}
    after = assignors.assign(
        name, renamed, partitions, instance_ids={f"zz-new-{m}": i for m, i in instance_ids.items()}
    )
    assert {instance_ids[m]: v for m, v in before.items()} == {
        instance_ids[m[len("zz-new-") :]]: v for m, v in after.items()
    }
