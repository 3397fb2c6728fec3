"""What a rebalance attempt reads from, and claims in, Kafka 0.8's ZooKeeper registry.

0.8's `ZKRebalancerListener` reads through `ZkUtils`: this consumer's own subscription, the
brokers, every consumer's subscription and the partitions of the topics (`getConsumersPerTopic`,
`getPartitionsForTopics`), the committed offsets, and then claims its partitions one owner
znode at a time (`reflectPartitionOwnershipDecision`). Kept apart from the consumer so that the
consumer holds its life cycle and state, and this module every znode path an attempt touches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from coordinator.zookeeper.client import NodeExists, ZooKeeper, ZooKeeperError
from coordinator.zookeeper.fetcher import INVALID_OFFSET
from rebalance.zookeeper.assignment import GroupView
from rebalance.zookeeper.formats import (
    BROKER_IDS,
    BROKER_TOPICS,
    STATIC,
    BrokerRegistration,
    ConsumerRegistration,
    consumer_path,
    consumer_registry_dir,
    offset_path,
    owner_path,
    parse_broker,
    parse_consumer,
    parse_offset,
    parse_topic,
    topic_path,
)
from rebalance.zookeeper.topic_filter import TopicFilter

log = logging.getLogger("coordinator.zookeeper")

TopicPartition = tuple[str, int]
Watch = Callable[[str, str], None]


@dataclass(frozen=True)
class GroupRead:
    """The group as one attempt read it, and what it saw of the znodes it watches."""

    view: GroupView
    consumers: list[str]
    #: znode versions seen: "ids" -> the consumer ids, topic -> its znode's modified zxid.
    seen: dict[str, object]

    @property
    def partitions_total(self) -> int:
        return sum(len(p) for p in self.view.partitions.values())


class GroupRegistry:
    """One group's znodes, read and claimed through `zk`."""

    def __init__(self, zk: ZooKeeper, group: str, exclude_internal_topics: bool) -> None:
        self.zk = zk
        self.group = group
        self.exclude_internal_topics = exclude_internal_topics

    async def subscription_of(self, consumer: str) -> dict[str, int]:
        """`TopicCount.constructTopicCount` from a consumer's znode (a filter resolved against
        the topics registered now)."""
        data, _ = await self.zk.get(consumer_path(self.group, consumer))
        return await self.topic_counts(parse_consumer(consumer, data))

    async def topic_counts(self, registration: ConsumerRegistration) -> dict[str, int]:
        if registration.pattern == STATIC:
            return registration.counts
        ((regex, streams),) = registration.subscription
        topic_filter = TopicFilter(regex, registration.pattern)
        names = await self.zk.children(BROKER_TOPICS)
        return {
            t: streams
            for t in sorted(names)
            if topic_filter.allows(t, self.exclude_internal_topics)
        }

    async def brokers(self) -> list[BrokerRegistration]:
        """`getAllBrokersInCluster`: every registered broker, by id."""
        brokers = []
        for name in sorted(await self.zk.children(BROKER_IDS), key=int):
            stored = await self.zk.get_or_none(f"{BROKER_IDS}/{name}")
            if stored is not None:
                brokers.append(parse_broker(int(name), stored[0]))
        return brokers

    async def read_group(
        self, mine: Mapping[str, int], on_consumers: Watch, on_topic: Watch
    ) -> GroupRead:
        """`getConsumersPerTopic` and `getPartitionsForTopics`, re-arming the watches."""
        ids = await self.zk.children(consumer_registry_dir(self.group), on_consumers)
        seen: dict[str, object] = {"ids": ids}
        subscriptions: dict[str, dict[str, int]] = {}
        for consumer in sorted(ids):
            stored = await self.zk.get_or_none(consumer_path(self.group, consumer))
            if stored is None:
                raise ZooKeeperError(f"consumer {consumer} left while the group was read")
            subscriptions[consumer] = await self.topic_counts(parse_consumer(consumer, stored[0]))
        partitions: dict[str, list[int]] = {}
        for topic in sorted(mine):
            stored = await self.zk.get_or_none(topic_path(topic), on_topic)
            seen[topic] = stored[1].modified_zxid if stored else None
            partitions[topic] = sorted(parse_topic(topic, stored[0])) if stored else []
        return GroupRead(GroupView(subscriptions, partitions), sorted(ids), seen)

    async def offset(self, tp: TopicPartition) -> int:
        """The committed offset of `tp`, or -1 where none was ever written."""
        path = offset_path(self.group, *tp)
        stored = await self.zk.get_or_none(path)
        return parse_offset(path, stored[0]) if stored else INVALID_OFFSET

    async def release(self, partitions: list[TopicPartition]) -> None:
        """Delete our owner znodes (0.8 releases all of them, then claims again)."""
        for topic, partition in sorted(partitions):
            await self.zk.delete(owner_path(self.group, topic, partition))

    async def claim(
        self, decision: Mapping[TopicPartition, str]
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """`reflectPartitionOwnershipDecision`: try every claim; on any conflict undo ours.

        Returns (claimed, conflicts); when there are conflicts nothing stays claimed."""
        claimed: list[TopicPartition] = []
        conflicts: list[TopicPartition] = []
        for tp, thread in sorted(decision.items()):
            try:
                await self.zk.create(
                    owner_path(self.group, *tp), thread.encode(), ephemeral=True, makepath=True
                )
                claimed.append(tp)
            except NodeExists:
                stored = await self.zk.get_or_none(owner_path(self.group, *tp))
                if stored is not None and stored[0] == thread.encode():
                    claimed.append(tp)  # our own create; its reply was lost
                    continue
                log.info("waiting for the partition ownership to be deleted: %s", tp)
                conflicts.append(tp)
        if conflicts:
            for tp in claimed:
                await self.zk.delete(owner_path(self.group, *tp))
        return claimed, conflicts
