"""Consumer ids and consumer thread ids, as `ZookeeperConsumerConnector` and `TopicCount` make
them.

The consumer id is `<group.id>_<consumer.id>` when `consumer.id` is configured (0.8 says "for
testing only"), else `<group.id>_<hostname>-<currentTimeMillis>-<8 hex digits>`: the first eight
characters of `Long.toHexString` of the most significant half of a random UUID (unpadded, so a
UUID whose top nibble is 0 contributes a digit of its second byte). The 0.8 docs say
`hostname:uuid`; the code is followed. Ids come from configuration rather than sequential
znodes because a sequential create whose reply is lost cannot be recovered (0.8's comment).

Thread ids `<consumer id>-<n>`, n = 0..streams-1, are the units partitions are assigned to
(`ConsumerThreadId`); they order as Java strings order (UTF-16 code units), so "c-10" < "c-2".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

UINT64 = (1 << 64) - 1


def consumer_id(
    group: str, configured: str | None, *, host: str, now_ms: int, uuid_int: int
) -> str:
    """The consumer's id in the group's registry (`consumerIdString`)."""
    if configured is not None:
        return f"{group}_{configured}"
    most_significant = (uuid_int >> 64) & UINT64
    return f"{group}_{host}-{now_ms}-{format(most_significant, 'x')[:8]}"


def thread_id(consumer: str, index: int) -> str:
    return f"{consumer}-{index}"


def threads_per_topic(consumer: str, counts: Mapping[str, int]) -> dict[str, list[str]]:
    """`TopicCount.makeConsumerThreadIdsPerTopic`: topic -> this consumer's thread ids."""
    return {
        topic: [thread_id(consumer, n) for n in range(n_streams)]
        for topic, n_streams in counts.items()
    }


def java_order(values: Iterable[str]) -> list[str]:
    """Sorted as Java's `String.compareTo` sorts (UTF-16 code units)."""
    return sorted(values, key=lambda v: v.encode("utf-16-be", "surrogatepass"))


def consumer_of_thread(thread: str) -> str:
    """The consumer id of a thread id (everything before the last '-')."""
    return thread.rpartition("-")[0]
