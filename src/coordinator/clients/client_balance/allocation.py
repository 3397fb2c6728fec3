"""Which partitions a node takes, and the loop that keeps it taking them.

`modulo_assigned` is TubeMQ's default split (its example's `partition_assigner`): a partition
key belongs to node `unsigned(String.hashCode(key)) % sourceCount`; the hash is Java's over
UTF-16 code units (`assignors.seeds`, the `tubemq-modulo` assignor's). As TubeMQ's docs advise,
the split is made over the full configured partition set and only then filtered by whether a
partition is subscribable, so a broker going away does not move every other partition.

`allocate` is the ready-made loop for the common case: every `interval_ms` it unregisters what
the split no longer gives this node (or what became unsubscribable) and registers what it gives
and the node does not hold yet, with the bootstrap offset the application supplies (or -1: the
committed offset). TubeMQ leaves this loop to the application; a custom placement writes its own
with the same calls.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from assignors.seeds import tubemq_node_for
from coordinator.clients.client_balance.consumer import ClientBalanceConsumer
from coordinator.clients.client_balance.errors import ClientBalanceError, ClientCode
from rebalance.errors import ErrorCode

log = logging.getLogger("coordinator.client_balance")

#: The partitions a node may connect to: key -> subscribable (TubeMQ's QueryMetaResult).
Meta = Mapping[str, bool]


def modulo_assigned(meta: Meta, source_count: int, node_id: int) -> set[str]:
    """The subscribable partition keys node `node_id` of `source_count` takes."""
    if source_count <= 0:
        raise ValueError("the modulo split needs a positive source count")
    return {
        key
        for key, subscribable in meta.items()
        if subscribable and tubemq_node_for(key, source_count) == node_id
    }


async def allocate(
    consumer: ClientBalanceConsumer,
    *,
    interval_ms: int | None = None,
    bootstrap_offset: Callable[[str], int] = lambda key: -1,
    assign: Callable[[Meta], set[str]] | None = None,
) -> None:
    """Run TubeMQ's allocation loop until the consumer shuts down (then return).

    `assign` picks this node's keys from the metadata (default: `modulo_assigned` with the
    consumer's source count and node id); `bootstrap_offset(key)` is the offset a newly
    registered partition starts from (< 0: the committed one). One pass runs at once, then one
    every `interval_ms` (default: the consumer's metadata check interval).
    """
    interval = (interval_ms or consumer.config.meta_check_interval_ms) / 1000
    choose = assign or (lambda meta: modulo_assigned(meta, consumer.source_count, consumer.node_id))
    while not consumer.is_shutdown:
        try:
            await allocation_pass(consumer, choose, bootstrap_offset)
        except ClientBalanceError as exc:
            if exc.code == ClientCode.CLIENT_SHUTDOWN:
                return
            log.warning("allocation pass failed: %s", exc)
        await asyncio.sleep(interval)


async def allocation_pass(
    consumer: ClientBalanceConsumer,
    choose: Callable[[Meta], set[str]],
    bootstrap_offset: Callable[[str], int],
) -> None:
    """One pass: release what is no longer ours, then register what is."""
    meta = await consumer.partition_meta()
    wanted = choose(meta)
    held = consumer.registered()
    for key in sorted(held - wanted):
        await consumer.disconnect(key)
    for key in sorted(wanted - held):
        try:
            await consumer.connect(key, bootstrap_offset(key))
        except ClientBalanceError as exc:
            busy = (ErrorCode.PARTITION_OCCUPIED, ClientCode.CLIENT_HIGH_FREQUENCY_REQUEST)
            if exc.code in busy:
                continue  # its holder is still live: the next pass tries again
            raise
