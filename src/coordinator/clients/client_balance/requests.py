"""A client-balance node's requests to its group's coordinator, one function per request: the
values sent, and the answer checked (a refusal raises `ClientBalanceError`) or handed back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from coordinator.clients.client_balance.connections import Connections
from coordinator.clients.client_balance.errors import ClientBalanceError
from coordinator.clients.client_balance.partitions import PartitionState, partition_key
from coordinator.wire.api_keys import ApiKey

#: The version sent of each Kafka API the node uses (OffsetCommit v9: the member epoch).
VERSIONS: Final[dict[ApiKey, int]] = {
    ApiKey.METADATA: 1,
    ApiKey.OFFSET_COMMIT: 9,
}


def check(code: Any, message: str | None = None) -> None:
    if int(code) != 0:
        raise ClientBalanceError(int(code), message or "")


async def join(
    connections: Connections,
    member_id: str,
    source_count: int,
    node_id: int,
    topics: Sequence[str],
) -> tuple[int, float]:
    """ClientBalanceHeartbeat at epoch 0: the member epoch given, and the heartbeat interval in
    seconds."""
    config = connections.config
    response = await connections.group_request(
        ApiKey.CLIENT_BALANCE_HEARTBEAT,
        {
            "group_id": config.group_id,
            "member_id": member_id,
            "member_epoch": 0,
            "source_count": source_count,
            "node_id": node_id,
            "topics": list(topics),
            "session_timeout_ms": config.session_timeout_ms,
        },
    )
    check(response.error_code, response.error_message)
    return int(response.member_epoch), max(int(response.heartbeat_interval_ms), 1) / 1000


async def heartbeat(
    connections: Connections, member_id: str, epoch: int, held: Iterable[tuple[str, int]]
) -> Any:
    """ClientBalanceHeartbeat reporting the partitions `held`; the answer, unchecked."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in held:
        by_topic.setdefault(topic, []).append(partition)
    return await connections.group_request(
        ApiKey.CLIENT_BALANCE_HEARTBEAT,
        {
            "group_id": connections.config.group_id,
            "member_id": member_id,
            "member_epoch": epoch,
            "held": [{"topic": t, "partitions": sorted(ps)} for t, ps in by_topic.items()],
        },
    )


async def leave(connections: Connections, member_id: str) -> None:
    """ClientBalanceHeartbeat at epoch -1."""
    await connections.group_request(
        ApiKey.CLIENT_BALANCE_HEARTBEAT,
        {"group_id": connections.config.group_id, "member_id": member_id, "member_epoch": -1},
    )


async def metadata(
    connections: Connections, topics: Sequence[str]
) -> tuple[dict[int, tuple[str, int]], dict[str, bool]]:
    """Metadata of `topics`: broker id -> address, and every partition key -> whether it can be
    consumed now (a partition with a leader)."""
    response = await connections.group_request(
        ApiKey.METADATA,
        {"topics": [{"name": t} for t in topics]},
        version=VERSIONS[ApiKey.METADATA],
    )
    leaders = {int(b.node_id): (b.host, int(b.port)) for b in response.brokers}
    meta: dict[str, bool] = {}
    for topic in response.topics:
        for p in topic.partitions:
            leader = int(p.leader_id)
            usable = p.error_code == 0 and topic.error_code == 0 and leader in leaders
            meta[partition_key(leader, topic.name, int(p.partition_index))] = usable
    return leaders, meta


async def register(
    connections: Connections,
    member_id: str,
    epoch: int,
    topic: str,
    partition: int,
    bootstrap_offset: int,
) -> Any:
    """PartitionRegister of one partition; the partition's answer (its own code unchecked)."""
    response = await connections.group_request(
        ApiKey.PARTITION_REGISTER,
        {
            "group_id": connections.config.group_id,
            "member_id": member_id,
            "member_epoch": epoch,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": partition, "bootstrap_offset": bootstrap_offset}
                    ],
                }
            ],
        },
    )
    check(response.error_code, response.error_message)
    return response.topics[0].partitions[0]


async def release(
    connections: Connections, member_id: str, epoch: int, topic: str, partition: int
) -> None:
    """PartitionRelease of one partition. Its per-partition answer needs nothing more: NONE, or
    HB_NO_NODE (411: nobody holds it, e.g. a retry) or DUPLICATE_PARTITION (412: another node
    does), after which it is not ours either way."""
    response = await connections.group_request(
        ApiKey.PARTITION_RELEASE,
        {
            "group_id": connections.config.group_id,
            "member_id": member_id,
            "member_epoch": epoch,
            "topics": [{"name": topic, "partitions": [partition]}],
        },
    )
    check(response.error_code)


async def commit(
    connections: Connections, member_id: str, epoch: int, parts: Sequence[PartitionState]
) -> tuple[str, int] | None:
    """OffsetCommit of each of `parts`' position, fenced by the member epoch; the first partition
    refused (its key and code), if any."""
    by_topic: dict[str, list[dict[str, int]]] = {}
    for part in parts:
        by_topic.setdefault(part.topic, []).append(
            {"partition_index": part.partition, "committed_offset": part.position}
        )
    response = await connections.group_request(
        ApiKey.OFFSET_COMMIT,
        {
            "group_id": connections.config.group_id,
            "generation_id_or_member_epoch": epoch,
            "member_id": member_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        },
        version=VERSIONS[ApiKey.OFFSET_COMMIT],
    )
    for topic in response.topics:
        for p in topic.partitions:
            code = int(p.error_code)
            if code != 0:
                broker = broker_of(parts, topic.name, int(p.partition_index))
                return partition_key(broker, topic.name, int(p.partition_index)), code
    return None


def broker_of(parts: Sequence[PartitionState], topic: str, partition: int) -> int:
    for part in parts:
        if (part.topic, part.partition) == (topic, partition):
            return part.broker_id
    return -1
