"""A frozen copy of the assignors as they were before the speed work of issue 21: the oracle.

`tests/assignors/test_assignor_equality.py` runs these and the current assignors on the same
random groups and requires identical results. Only the modules that compute assignments are
copied (their imports point at the live `assignors.spec`, whose value types did not change);
`assign` mirrors the public `assignors.assign` of that time. Do not edit: a change here would
let the equality test pass for the wrong reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assignors.spec import (
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
    PartitionAssignor,
    StaticTopics,
    TopicPartition,
)

from .range import RangeAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor
from .uniform import UniformAssignor

ASSIGNORS: dict[str, PartitionAssignor] = {
    "range": RangeAssignor(),
    "sticky": StickyAssignor(),
    "cooperative-sticky": CooperativeStickyAssignor(),
    "uniform": UniformAssignor(),
}


def group_spec(
    subscriptions: Mapping[str, Iterable[str]],
    *,
    owned: Mapping[str, Iterable[TopicPartition]] | None = None,
    generations: Mapping[str, int] | None = None,
    member_racks: Mapping[str, str | None] | None = None,
    instance_ids: Mapping[str, str] | None = None,
) -> GroupSpec:
    """The public `assignors.group_spec` as it was."""
    owned = owned or {}
    generations = generations or {}
    member_racks = member_racks or {}
    instance_ids = instance_ids or {}
    return GroupSpec(
        {
            member: MemberSubscription(
                topics=frozenset(topics),
                owned=tuple((t, p) for t, p in owned.get(member, ())),
                generation=generations.get(member),
                rack=member_racks.get(member),
                instance_id=instance_ids.get(member),
            )
            for member, topics in subscriptions.items()
        }
    )


def assign(
    name: str,
    subscriptions: Mapping[str, Iterable[str]],
    partitions: Mapping[str, int],
    *,
    owned: Mapping[str, Iterable[TopicPartition]] | None = None,
    generations: Mapping[str, int] | None = None,
    member_racks: Mapping[str, str | None] | None = None,
    partition_racks: Mapping[TopicPartition, Iterable[str]] | None = None,
    instance_ids: Mapping[str, str] | None = None,
) -> GroupAssignment:
    """The public `assignors.assign` as it was, over the frozen assignors."""
    spec = group_spec(
        subscriptions,
        owned=owned,
        generations=generations,
        member_racks=member_racks,
        instance_ids=instance_ids,
    )
    topics = StaticTopics(dict(partitions), dict(partition_racks or {}))
    result = ASSIGNORS[name].assign(spec, topics)
    return {member: sorted(result.get(member, [])) for member in spec.members}
