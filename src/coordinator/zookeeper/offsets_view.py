"""`rebalance zk-offsets GROUP`: owners, offsets and lag of a ZooKeeper-coordinated group, as
0.8's `kafka.tools.ConsumerOffsetChecker` printed them: one line per partition with the columns
Group, Topic, Pid, Offset, logSize, Lag and Owner, padded as its `%-15s %-30s %-3s %-15s %-15s
%-15s %s`.

Offsets come from `/consumers/<group>/offsets/<topic>/<partition>` ("unknown" when none was
committed), owners from `/consumers/<group>/owners/<topic>/<partition>` ("none"), the log size
from the partition's leader (found through the brokers registered in ZooKeeper, ListOffsets
latest). 0.8.2 takes the topics from the group's `owners` directory; we also look in its
`offsets` directory, so a group whose consumers are all gone still shows its offsets.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from coordinator.wire.client import WireClient, list_offsets
from coordinator.zookeeper.client import ZooKeeper
from coordinator.zookeeper.fetcher import LATEST, find_leaders
from rebalance.zookeeper.formats import (
    BROKER_IDS,
    BrokerRegistration,
    offset_path,
    offsets_dir,
    owner_path,
    owners_dir,
    parse_broker,
    parse_offset,
    parse_topic,
    topic_path,
)

ROW_FORMAT = "{:<15} {:<30} {:<3} {:<15} {:<15} {:<15} {}"
"""`%-15s %-30s %-3s %-15s %-15s %-15s %s`, ConsumerOffsetChecker's line."""
HEADER = ("Group", "Topic", "Pid", "Offset", "logSize", "Lag", "Owner")


@dataclass(frozen=True)
class PartitionRow:
    group: str
    topic: str
    partition: int
    offset: int | None
    log_size: int | None
    owner: str | None

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset < 0 or self.log_size is None:
            return None
        return self.log_size - self.offset

    def format(self) -> str:
        def shown(value: int | None) -> str:
            return "unknown" if value is None else str(value)

        return ROW_FORMAT.format(
            self.group, self.topic, self.partition, shown(self.offset), shown(self.log_size),
            shown(self.lag), self.owner or "none",
        )  # fmt: skip


async def group_offsets(
    connect: str, group: str, topics: list[str] | None = None, timeout_s: float = 10.0
) -> list[PartitionRow]:
    zk = ZooKeeper(connect, session_timeout_ms=int(timeout_s * 1000))
    await zk.start()
    try:
        if topics is None:
            topics = sorted(
                set(await zk.children(owners_dir(group)))
                | set(await zk.children(offsets_dir(group)))
            )
        partitions: list[tuple[str, int]] = []
        for topic in topics:
            stored = await zk.get_or_none(topic_path(topic))
            partitions += (
                [(topic, p) for p in sorted(parse_topic(topic, stored[0]))] if stored else []
            )
        offsets: dict[tuple[str, int], int | None] = {}
        owners: dict[tuple[str, int], str | None] = {}
        for tp in partitions:
            stored = await zk.get_or_none(offset_path(group, *tp))
            offsets[tp] = parse_offset(offset_path(group, *tp), stored[0]) if stored else None
            owner = await zk.get_or_none(owner_path(group, *tp))
            owners[tp] = owner[0].decode() if owner else None
        brokers = []
        for name in sorted(await zk.children(BROKER_IDS), key=int):
            stored = await zk.get_or_none(f"{BROKER_IDS}/{name}")
            if stored is not None:
                brokers.append(parse_broker(int(name), stored[0]))
    finally:
        await zk.close()
    sizes = await _log_sizes(brokers, partitions, timeout_s)
    return [
        PartitionRow(group, t, p, offsets[(t, p)], sizes.get((t, p)), owners[(t, p)])
        for t, p in partitions
    ]


async def _log_sizes(
    brokers: list[BrokerRegistration], partitions: list[tuple[str, int]], timeout_s: float
) -> dict[tuple[str, int], int]:
    clients: list[WireClient] = []

    async def connect(host: str, port: int) -> WireClient:
        async with asyncio.timeout(timeout_s):
            client = await WireClient.connect(host, port)
        clients.append(client)
        return client

    sizes: dict[tuple[str, int], int] = {}
    try:
        if partitions:
            leaders = await find_leaders(brokers, partitions, connect)
            for (host, port), tps in leaders.items():
                sizes.update(await list_offsets(await connect(host, port), tps, LATEST))
    except (OSError, asyncio.IncompleteReadError, TimeoutError):
        pass  # no broker reachable: log sizes stay unknown, as 0.8 skips such partitions
    finally:
        for client in clients:
            await client.close()
    return sizes


def render(rows: list[PartitionRow]) -> str:
    return "\n".join([ROW_FORMAT.format(*HEADER), *(row.format() for row in rows)])
