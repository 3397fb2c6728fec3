"""The client-balance group's responses (TubeMQ's ClientBalanceConsumer): heartbeat,
register, release, describe."""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.errors import ErrorCode

#: (topic, partitions), both sorted: the partitions a node holds.
HeldPartitions = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class ClientBalanceHeartbeatReply:
    """A node's join, heartbeat or leave answered. `held` is what the coordinator records this
    node as holding after the heartbeat (the client drops anything else it thought it held)."""

    error: ErrorCode
    error_message: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    source_count: int = -1
    held: HeldPartitions = ()


@dataclass(frozen=True, slots=True)
class RegisteredPartition:
    topic: str
    partition: int
    error: ErrorCode
    #: The offset consumption starts from: the bootstrap offset if one was given, else the
    #: committed one (-1: none).
    offset: int = -1
    #: The live node holding it, on PARTITION_OCCUPIED.
    holder: str | None = None


@dataclass(frozen=True, slots=True)
class RegisterPartitionsReply:
    error: ErrorCode
    partitions: tuple[RegisteredPartition, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ReleasedPartition:
    topic: str
    partition: int
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class ReleasePartitionsReply:
    error: ErrorCode
    partitions: tuple[ReleasedPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribedNode:
    """One node as TubeMQ's `admin_query_consume_group_detail` shows it."""

    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    source_count: int
    node_id: int
    topics: tuple[str, ...]
    held: HeldPartitions


@dataclass(frozen=True, slots=True)
class DescribedClientBalanceGroup:
    group_id: str
    error: ErrorCode
    state: str = ""
    group_epoch: int = 0
    source_count: int = -1
    topics: tuple[str, ...] = ()
    nodes: tuple[DescribedNode, ...] = ()


@dataclass(frozen=True, slots=True)
class ClientBalanceDescribeReply:
    groups: tuple[DescribedClientBalanceGroup, ...]
