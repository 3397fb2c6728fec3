"""Fetching the owned partitions from the brokers found in ZooKeeper (0.8's fetcher manager).

0.8's consumer reads records itself: a leader-finder thread asks the brokers listed under
`/brokers/ids` for topic metadata, and one fetcher thread per leader broker sends ordinary
Fetch requests, putting each answer ("chunk") on a bounded queue the consumer iterates. This is
the same with one task per leader over one connection (`WireClient`, requests built by kio):
Metadata v1 to find leaders, Fetch v4, and ListOffsets v1 when a partition has no committed
offset (-1) or its offset is out of range, where `auto.offset.reset` picks the earliest
(`smallest`) or the latest (`largest`) offset and resets the consumed offset too (0.8's
`handleOffsetOutOfRange`). A leader that cannot be reached is looked up again after
`refresh.leader.backoff.ms`, from the brokers registered *now*: each lookup reads `/brokers/ids`
again, as 0.8.2's `LeaderFinderThread` does (`getAllBrokersInCluster` on every pass), so a
broker that comes back under its id at another address is found without a rebalance.

Why not an existing client in manual-assignment mode (aiokafka's `assign()`): it bootstraps from
addresses, not from the registry, runs its own metadata and fetch tasks that the rebalance could
not stop and drain the way 0.8 does (stop fetchers, clear queues, then release), and is only an
optional extra of this package. Compressed record batches are not decoded (kio reads v2 batches
without compression); the consumer reports them as an error instead of skipping data.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from kio.records.schema import Record
from kio.schema.errors import ErrorCode

from coordinator.wire.client import WireClient, list_offsets, read_records
from coordinator.zookeeper.client import ZooKeeperError
from rebalance.zookeeper.config import ZooKeeperConsumerConfig
from rebalance.zookeeper.formats import BrokerRegistration

log = logging.getLogger("coordinator.zookeeper")

TopicPartition = tuple[str, int]
EARLIEST, LATEST = -2, -1
STOP_TIMEOUT_S = 5.0
INVALID_OFFSET = -1
"""`PartitionTopicInfo.InvalidOffset`: no offset committed for the partition."""


@dataclass
class PartitionTopicInfo:
    """One owned partition: the thread that owns it, where fetching and consuming stand."""

    topic: str
    partition: int
    thread: str
    fetch_offset: int
    consumed_offset: int


@dataclass(frozen=True)
class FetchedChunk:
    """Records of one partition from one Fetch answer, tagged with the fetcher that got them
    (chunks of a stopped fetcher are dropped, as 0.8 clears its queues)."""

    fetcher: int
    topic: str
    partition: int
    records: list[Record] = field(default_factory=list)


class FetchError(RuntimeError):
    """A partition's data cannot be read (for example a compressed batch)."""


ReadBrokers = Callable[[], Awaitable[Sequence[BrokerRegistration]]]


class Fetcher:
    """Fetches `infos` from their leaders into `queue` until stopped; `brokers` reads the
    broker registry (at every leader lookup)."""

    _next_id = 0

    def __init__(
        self,
        config: ZooKeeperConsumerConfig,
        brokers: ReadBrokers,
        infos: Mapping[TopicPartition, PartitionTopicInfo],
        queue: asyncio.Queue[FetchedChunk],
    ) -> None:
        Fetcher._next_id += 1
        self.id = Fetcher._next_id
        self.config = config
        self.read_brokers = brokers
        self.infos = dict(infos)
        self.queue = queue
        self.errors: list[str] = []
        self._clients: list[WireClient] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.infos:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="zk-fetcher")

    async def stop(self) -> None:
        """Stop fetching (0.8's `stopConnections`): in-flight requests are abandoned. Chunks
        it still queues are dropped by the consumer (they carry this fetcher's id)."""
        if self._task is not None:
            self._task.cancel()
            done, _ = await asyncio.wait({self._task}, timeout=STOP_TIMEOUT_S)
            if not done:
                log.error("fetcher did not stop in %.0f s; abandoned", STOP_TIMEOUT_S)
            self._task = None
        for client in self._clients:
            await client.close()
        self._clients.clear()

    async def _run(self) -> None:
        """Fetch until stopped; a failure is recorded in `errors` and, unless the data itself
        is unreadable, retried after finding the leaders again."""
        backoff = self.config.refresh_leader_backoff_ms / 1000
        while True:
            try:
                leaders = await self._find_leaders()
                await asyncio.gather(
                    *(self._fetch_from(address, tps) for address, tps in leaders.items())
                )
                return
            except FetchError as exc:
                log.error("fetcher stopped: %s", exc)
                return
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ZooKeeperError) as exc:
                log.info("fetcher: %s; finding leaders again in %.1f s", exc, backoff)
            except Exception as exc:  # a bug must not pass silently, nor stop the consumer
                log.exception("fetcher failed")
                self.errors.append(repr(exc))
                return
            finally:
                for client in self._clients:
                    await client.close()
                self._clients.clear()
            await asyncio.sleep(backoff)

    async def _connect(self, host: str, port: int) -> WireClient:
        timeout = self.config.socket_timeout_ms / 1000
        async with asyncio.timeout(timeout):
            client = await WireClient.connect(host, port)
        self._clients.append(client)
        return client

    async def _find_leaders(self) -> dict[tuple[str, int], list[TopicPartition]]:
        return await find_leaders(await self.read_brokers(), list(self.infos), self._connect)

    async def _fetch_from(self, address: tuple[str, int], partitions: list[TopicPartition]) -> None:
        client = await self._connect(*address)
        while True:
            await self._reset_invalid_offsets(client, partitions)
            # asyncio.timeout, not wait_for: on Python 3.11 a wait_for whose request completes
            # as the task is cancelled returns the result and loses the cancellation, and
            # stop() would wait for a fetcher that goes on fetching.
            limit = (self.config.socket_timeout_ms + self.config.fetch_wait_max_ms) / 1000
            async with asyncio.timeout(limit):
                response = await client.request(1, 4, self._fetch_request(partitions))
            for topic in response.responses:
                for data in topic.partitions:
                    await self._accept(topic.topic, data)

    def _fetch_request(self, partitions: list[TopicPartition]) -> dict[str, object]:
        by_topic: dict[str, list[dict[str, int]]] = {}
        for topic, partition in partitions:
            offset = self.infos[(topic, partition)].fetch_offset
            by_topic.setdefault(topic, []).append(
                {"partition": partition, "fetch_offset": offset,
                 "partition_max_bytes": self.config.fetch_message_max_bytes}
            )  # fmt: skip
        return {
            "replica_id": -1,
            "max_wait": timedelta(milliseconds=self.config.fetch_wait_max_ms),
            "min_bytes": self.config.fetch_min_bytes,
            "max_bytes": 2**31 - 1,
            "isolation_level": 0,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    async def _accept(self, topic: str, data: Any) -> None:
        info = self.infos[(topic, data.partition_index)]
        code = data.error_code
        if code == ErrorCode.offset_out_of_range:
            info.fetch_offset = INVALID_OFFSET
            return
        if code != ErrorCode.none:
            raise OSError(f"fetch {topic}-{info.partition}: {code.name}")
        raw = data.records
        if not raw:
            return
        try:
            records = [r for r in read_records(raw) if r.offset >= info.fetch_offset]
        except ValueError as exc:
            message = f"{topic}-{info.partition} at {info.fetch_offset}: unreadable batch ({exc})"
            self.errors.append(message)
            raise FetchError(message) from None
        if records:
            info.fetch_offset = int(records[-1].offset) + 1
            await self.queue.put(FetchedChunk(self.id, topic, info.partition, records))

    async def _reset_invalid_offsets(
        self, client: WireClient, partitions: list[TopicPartition]
    ) -> None:
        """ListOffsets for partitions without a valid offset, as `auto.offset.reset` says."""
        invalid = [tp for tp in partitions if self.infos[tp].fetch_offset < 0]
        if not invalid:
            return
        timestamp = EARLIEST if self.config.auto_offset_reset == "smallest" else LATEST
        for tp, offset in (await list_offsets(client, invalid, timestamp)).items():
            info = self.infos[tp]
            info.fetch_offset = info.consumed_offset = offset


Connect = Callable[[str, int], Awaitable[WireClient]]


async def find_leaders(
    brokers: Sequence[BrokerRegistration], partitions: Sequence[TopicPartition], connect: Connect
) -> dict[tuple[str, int], list[TopicPartition]]:
    """Ask the registered brokers, one after the other, for the partitions' leaders (Metadata
    v1, as 0.8's leader finder does); leader address -> its partitions."""
    wanted = set(partitions)
    topics = sorted({tp[0] for tp in wanted})
    problem: Exception = OSError("no broker is registered")
    for broker in brokers:
        try:
            client = await connect(broker.host, broker.port)
            response = await client.request(3, 1, {"topics": [{"name": t} for t in topics]})
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
            problem = exc
            continue
        addresses = {b.node_id: (b.host, b.port) for b in response.brokers}
        leaders: dict[tuple[str, int], list[TopicPartition]] = {}
        for topic in response.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if tp in wanted and p.leader_id in addresses:
                    leaders.setdefault(addresses[p.leader_id], []).append(tp)
        missing = wanted - {tp for tps in leaders.values() for tp in tps}
        if missing:
            raise OSError(f"no leader known for {sorted(missing)}")
        return leaders
    raise problem
