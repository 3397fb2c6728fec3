"""One consumer's ownership decision in a rebalance attempt (0.8.2 `PartitionAssignor`).

Every consumer decides alone, from what it read in ZooKeeper in this attempt: the subscriptions
of every registered consumer of the group and the partitions of its own topics. The decision is
the partitions *this* consumer should own, each with the thread id written into its owner znode.

* `range` (the default) is `zookeeper-range` from our `assignors`, topic by topic over all the
  group's threads subscribed to the topic (sorted as strings): thread `i` of `C` takes `P div C`
  partitions from `(P div C) * i + min(i, P mod C)`, one more if `i < P mod C`. The 0.8 docs'
  formula ignores the remainder; the code (followed) gives it to the first threads.
* `roundrobin` is `zookeeper-roundrobin`: every consumer must subscribe to the same topics with
  the same stream counts, or the attempt fails (0.8 throws inside the rebalance, which counts as
  a failed attempt).

Partition ids are whatever `/brokers/topics/<topic>` lists, sorted numerically; the assignors
number them 0..P-1 and the positions are mapped back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import assignors
from rebalance.zookeeper.ids import threads_per_topic

STRATEGIES = {"range": "zookeeper-range", "roundrobin": "zookeeper-roundrobin"}

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class GroupView:
    """What one attempt read: consumer id -> {topic: streams} (wildcards already resolved to
    topics) and topic -> partition ids of this consumer's topics."""

    subscriptions: Mapping[str, Mapping[str, int]]
    partitions: Mapping[str, Sequence[int]]


def ownership_decision(strategy: str, consumer: str, view: GroupView) -> dict[TopicPartition, str]:
    """(topic, partition) -> owning thread id, for the partitions `consumer` should own.

    Raises `assignors.AssignmentError` when roundrobin's precondition fails.
    """
    mine = view.subscriptions.get(consumer, {})
    if strategy == "range":
        topics_of_interest = set(mine)
    elif strategy == "roundrobin":
        topics_of_interest = {t for counts in view.subscriptions.values() for t in counts}
    else:
        raise ValueError(f"unknown partition.assignment.strategy {strategy!r}")
    threads: dict[str, set[str]] = {}
    for member, counts in view.subscriptions.items():
        for topic, member_threads in threads_per_topic(member, counts).items():
            if topic in topics_of_interest:
                for thread in member_threads:
                    threads.setdefault(thread, set()).add(topic)
    ordered = {topic: sorted(view.partitions.get(topic, ())) for topic in topics_of_interest}
    result = assignors.assign(
        STRATEGIES[strategy], threads, {topic: len(ids) for topic, ids in ordered.items()}
    )
    own_threads = {t for ts in threads_per_topic(consumer, mine).values() for t in ts}
    return {
        (topic, ordered[topic][position]): thread
        for thread in sorted(own_threads)
        for topic, position in result.get(thread, [])
        if topic in mine
    }
