"""The client-balance group's requests as the core sees them.

TubeMQ splits them between the master (register, heartbeat, close: `consumerRegisterC2MV2`,
`consumerHeartbeatC2MV2`, `consumerCloseClientC2M`) and the brokers (a partition's register and
unregister). Here one coordinator answers all of them, so partition exclusivity and the group's
view of who holds what are one table instead of two that converge.

`ClientBalanceHeartbeat` is the node's one liveness request, shaped like KIP-848's: epoch 0 joins
(or re-joins under the same member id), -1 leaves, any other epoch is a heartbeat that carries
the partitions the node holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.client_balance.replies import (
    ClientBalanceDescribeReply,
    ClientBalanceHeartbeatReply,
    DescribedClientBalanceGroup,
    HeldPartitions,
    RegisteredPartition,
    RegisterPartitionsReply,
    ReleasedPartition,
    ReleasePartitionsReply,
)
from rebalance.commands import Command
from rebalance.errors import ErrorCode

JOIN_EPOCH = 0
LEAVE_EPOCH = -1

#: TubeMQ's `bootstrapOffset` below zero: keep the offset stored on the server.
KEEP_OFFSET = -1


@dataclass(frozen=True, slots=True)
class ClientBalanceHeartbeat(Command[ClientBalanceHeartbeatReply]):
    group_id: str
    member_id: str
    member_epoch: int
    #: Join only: the group's node count (≤ 0 turns the sourceCount/nodeId checks off).
    source_count: int = -1
    node_id: int = -1
    topics: tuple[str, ...] = ()
    session_timeout_ms: int = 30_000
    client_id: str = ""
    client_host: str = ""
    #: Heartbeat only: the partitions the node reports holding; None: not reported. A report
    #: is never applied (holdings change by register, release, expiry); the reply says what
    #: the coordinator records.
    held: HeldPartitions | None = None

    def error_reply(self, code: ErrorCode) -> ClientBalanceHeartbeatReply:
        return ClientBalanceHeartbeatReply(code)


@dataclass(frozen=True, slots=True)
class PartitionRequest:
    topic: str
    partition: int
    #: Register only: < 0 keeps the stored offset, ≥ 0 replaces it (TubeMQ's bootstrapOffset).
    bootstrap_offset: int = KEEP_OFFSET
    #: Register only, from the shell: the partition's (log start, log end) when this node has
    #: its log; a bootstrap offset is clamped into it. None: not known here.
    log_range: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class RegisterPartitions(Command[RegisterPartitionsReply]):
    group_id: str
    member_id: str
    member_epoch: int
    partitions: tuple[PartitionRequest, ...]

    def error_reply(self, code: ErrorCode) -> RegisterPartitionsReply:
        return RegisterPartitionsReply(
            code, tuple(RegisteredPartition(p.topic, p.partition, code) for p in self.partitions)
        )


@dataclass(frozen=True, slots=True)
class ReleasePartitions(Command[ReleasePartitionsReply]):
    group_id: str
    member_id: str
    member_epoch: int
    partitions: tuple[PartitionRequest, ...]

    def error_reply(self, code: ErrorCode) -> ReleasePartitionsReply:
        return ReleasePartitionsReply(
            code, tuple(ReleasedPartition(p.topic, p.partition, code) for p in self.partitions)
        )


@dataclass(frozen=True, slots=True)
class ClientBalanceDescribe(Command[ClientBalanceDescribeReply]):
    """TubeMQ's `admin_query_consume_group_detail`: each node's source count, node id, held
    partitions."""

    group_ids: tuple[str, ...]

    def error_reply(self, code: ErrorCode) -> ClientBalanceDescribeReply:
        return ClientBalanceDescribeReply(
            tuple(DescribedClientBalanceGroup(g, code) for g in self.group_ids)
        )
