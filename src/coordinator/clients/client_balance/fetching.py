"""Records into the registered partitions' buffers: one Fetch per leader, and where a partition
with no committed offset starts (`auto_offset_reset`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from coordinator.clients.client_balance.errors import ClientBalanceError
from coordinator.clients.client_balance.partitions import Message, PartitionState, partition_key
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient, list_offsets, read_records

#: The Fetch version sent.
FETCH_VERSION = 4
EARLIEST, LATEST = -2, -1

Leader = Callable[[int], Awaitable[tuple[WireClient, asyncio.Lock]]]
"""A broker id's connection and the lock its requests take."""


async def fetch(
    leader: Leader,
    parts: Mapping[str, PartitionState],
    keys: Sequence[str],
    max_wait_ms: int,
) -> None:
    """One Fetch per leader for `keys`, filling their buffers (a partition of `parts` released
    while its fetch was out is left out)."""
    by_leader: dict[int, list[PartitionState]] = {}
    for key in keys:
        part = parts[key]
        by_leader.setdefault(part.broker_id, []).append(part)
    for broker, held in by_leader.items():
        client, lock = await leader(broker)
        by_topic: dict[str, list[dict[str, int]]] = {}
        for part in held:
            by_topic.setdefault(part.topic, []).append(
                {"partition": part.partition, "fetch_offset": part.fetch_position,
                 "partition_max_bytes": 1 << 20}
            )  # fmt: skip
        async with lock:
            response = await client.request(
                ApiKey.FETCH,
                FETCH_VERSION,
                {
                    "replica_id": -1,
                    "max_wait": timedelta(milliseconds=max_wait_ms),
                    "min_bytes": 1,
                    "max_bytes": 2**31 - 1,
                    "isolation_level": 0,
                    "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                },
            )
        for topic in response.responses:
            for data in topic.partitions:
                _accept(parts, broker, topic.topic, data)


def _accept(parts: Mapping[str, PartitionState], broker: int, topic: str, data: Any) -> None:
    part = parts.get(partition_key(broker, topic, int(data.partition_index)))
    if part is None:
        return  # released while the fetch was out
    if int(data.error_code) != 0:
        raise ClientBalanceError(int(data.error_code), f"fetch {topic}-{part.partition}")
    part.max_offset = int(data.high_watermark)
    if not data.records:
        return
    fresh = [r for r in read_records(data.records) if r.offset >= part.fetch_position]
    for record in fresh:
        part.buffer.append(
            Message(
                int(record.offset),
                record.key,
                record.value,
                int(record.timestamp.timestamp() * 1000),
            )
        )
    if fresh:
        part.fetch_position = int(fresh[-1].offset) + 1


async def reset_offset(
    leader: Leader, broker: int, topic: str, partition: int, auto_offset_reset: str
) -> int:
    """Where a partition with no committed offset starts: its log's start or end."""
    client, lock = await leader(broker)
    timestamp = EARLIEST if auto_offset_reset == "earliest" else LATEST
    async with lock:
        offsets = await list_offsets(client, [(topic, partition)], timestamp)
    return offsets[(topic, partition)]
