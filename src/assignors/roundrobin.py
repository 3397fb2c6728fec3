"""Kafka's RoundRobinAssignor ("roundrobin").

All partitions of all subscribed topics, topics in name order and partitions ascending, are dealt
one at a time to the members in member order, cycling. A single cursor runs over the circle of
members: for each partition it skips members not subscribed to that partition's topic, gives the
partition to the member it stops at and then moves one step on. The cursor is never reset
between topics, which is why equal subscriptions end balanced within one partition.

With unequal subscriptions the result can be badly unbalanced; Kafka documents the example
t0(1), t1(2), t2(3) with C0{t0}, C1{t0,t1}, C2{t0,t1,t2} → C0 [t0-0], C1 [t1-0],
C2 [t1-1, t2-0, t2-1, t2-2]. Not rack-aware and not sticky.
"""

from __future__ import annotations

from .spec import GroupAssignment, GroupSpec, TopicDescriber, subscribed_topics


class RoundRobinAssignor:
    """One cursor over the member circle, skipping non-subscribers."""

    name = "roundrobin"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        order = spec.ordered_member_ids()
        result: GroupAssignment = {m: [] for m in spec.members}
        if not order:
            return result
        subscriptions = [spec.members[m].topics for m in order]
        size = len(order)
        cursor = 0
        for topic in subscribed_topics(spec, topics):
            for partition in range(topics.partition_count(topic) or 0):
                while topic not in subscriptions[cursor]:
                    cursor = (cursor + 1) % size
                result[order[cursor]].append((topic, partition))
                cursor = (cursor + 1) % size
        return result
