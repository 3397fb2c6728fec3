"""Allocators of the two seed designs the project started from.

*zookeeper-range* — the Kafka 0.8 high-level consumer's rebalance (``ZookeeperConsumerConnector``):
for each topic, the partition ids sorted numerically and the consumer *thread* ids of its
subscribers sorted as strings; thread at position ``i`` of ``C`` takes ``P div C`` partitions
starting at ``(P div C) * i + min(i, P mod C)``, plus one if ``i < P mod C``. Unlike today's range
there is no static-member priority: thread ids sort by plain (Java) string order, so "c-10" sorts
before "c-2". A consumer with ``n`` streams for a topic owns threads ``<consumer>-0 .. -(n-1)``;
with the default of one stream per member, each member id is its own thread.

*zookeeper-roundrobin* — 0.8.2's ``RoundRobinAssignor``: allowed only when every member (consumer
thread) subscribes to the same topics; the threads sorted as strings deal out all partitions in
the order of the Java ``hashCode`` (signed) of ``"[topic,partition]"``, one each in turn. Equal
hash codes keep 0.8's stable sort order of its topic map, which we replace by (topic,
partition) order. Members are thread ids, as for *zookeeper-range* without streams.

*tubemq-modulo* — Apache InLong TubeMQ's client-balance example: partition key
``"<brokerId>:<topic>:<partitionId>"``, owner node = unsigned 32-bit Java ``String.hashCode`` of
the key modulo ``sourceCount``. Here the members, in member order, are nodes ``0..N-1`` and
``sourceCount = N``. The broker ids come from a `BrokerDescriber`. TubeMQ requires every member of
a group to subscribe to the same topics; the allocator enforces that. It is not balanced (hash
spread only) and not sticky, by design: every node computes its share without coordination.
"""

from __future__ import annotations

from collections.abc import Mapping

from .spec import (
    AssignmentError,
    BrokerDescriber,
    GroupAssignment,
    GroupSpec,
    TopicDescriber,
    java_string_key,
    subscribed_topics,
)


class ZooKeeperRangeAssignor:
    """Kafka 0.8's range over sorted partitions and sorted consumer thread ids."""

    def __init__(self, streams: Mapping[str, int] | None = None) -> None:
        self._streams = dict(streams or {})

    @property
    def name(self) -> str:
        return "zookeeper-range"

    def threads(self, member_id: str) -> list[str]:
        """Thread ids of a member: itself, or ``<member>-<k>`` when it runs several streams."""
        count = self._streams.get(member_id, 1)
        if count == 1 and member_id not in self._streams:
            return [member_id]
        return [f"{member_id}-{k}" for k in range(count)]

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        result: GroupAssignment = {m: [] for m in spec.members}
        for topic in subscribed_topics(spec, topics):
            threads = sorted(
                (
                    (thread, member)
                    for member, sub in spec.members.items()
                    if topic in sub.topics
                    for thread in self.threads(member)
                ),
                key=lambda pair: java_string_key(pair[0]),
            )
            count = topics.partition_count(topic) or 0
            per_thread, extra = divmod(count, len(threads))
            for position, (_, member) in enumerate(threads):
                start = per_thread * position + min(position, extra)
                length = per_thread + (1 if position < extra else 0)
                result[member].extend((topic, p) for p in range(start, start + length))
        for partitions in result.values():
            partitions.sort()
        return result


class ZooKeeperRoundRobinAssignor:
    """Kafka 0.8.2's round-robin over sorted thread ids, partitions in hash-code order."""

    @property
    def name(self) -> str:
        return "zookeeper-roundrobin"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        result: GroupAssignment = {m: [] for m in spec.members}
        subscriptions = {sub.topics for sub in spec.members.values()}
        if len(subscriptions) > 1:
            raise AssignmentError(
                "Round-robin assignment is allowed only if all consumers in the group subscribe "
                "to the same topics, AND if the stream counts across topics are identical for a "
                "given consumer instance."
            )
        threads = sorted(spec.members, key=java_string_key)
        partitions = sorted(
            (
                (topic, p)
                for topic in subscribed_topics(spec, topics)
                for p in range(topics.partition_count(topic) or 0)
            ),
            key=lambda tp: (java_signed_hash(f"[{tp[0]},{tp[1]}]"), tp),
        )
        for position, partition in enumerate(partitions):
            result[threads[position % len(threads)]].append(partition)
        for assigned in result.values():
            assigned.sort()
        return result


def java_signed_hash(value: str) -> int:
    """Java's ``String.hashCode`` as the signed int Java compares."""
    h = java_string_hash(value)
    return h - (1 << 32) if h >= 1 << 31 else h


def java_string_hash(value: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units) as an unsigned 32-bit integer."""
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for k in range(0, len(data), 2):
        h = (31 * h + ((data[k] << 8) | data[k + 1])) & 0xFFFFFFFF
    return h


def tubemq_partition_key(broker_id: int, topic: str, partition: int) -> str:
    """TubeMQ's cluster-unique partition key."""
    return f"{broker_id}:{topic}:{partition}"


def tubemq_node_for(key: str, source_count: int) -> int:
    """The node id that owns ``key`` among ``source_count`` nodes."""
    return java_string_hash(key) % source_count


class TubeMQModuloAssignor:
    """TubeMQ's client-side modulo allocation over the members as nodes 0..N-1."""

    @property
    def name(self) -> str:
        return "tubemq-modulo"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        order = spec.ordered_member_ids()
        result: GroupAssignment = {m: [] for m in spec.members}
        if not order:
            return result
        first = spec.members[order[0]].topics
        if any(spec.members[m].topics != first for m in order):
            raise AssignmentError(
                "tubemq-modulo needs every member to subscribe to the same topics"
            )
        if not isinstance(topics, BrokerDescriber):
            raise AssignmentError("tubemq-modulo needs broker ids (a BrokerDescriber)")
        for topic in subscribed_topics(spec, topics):
            for partition in range(topics.partition_count(topic) or 0):
                broker = topics.broker_id(topic, partition)
                if broker is None:
                    raise AssignmentError(f"no broker id known for {topic}-{partition}")
                node = tubemq_node_for(tubemq_partition_key(broker, topic, partition), len(order))
                result[order[node]].append((topic, partition))
        return result
