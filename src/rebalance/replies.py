"""Responses as the core produces them: frozen, version-agnostic values.

The wire layer turns each into the kio response class of the request's version (dropping fields
a version lacks and applying per-version nullability, e.g. ProtocolName "" before JoinGroup v7).
Each command says which of these answers it (`rebalance.commands.Command`), and how it is
answered when the whole request fails (`Command.error_reply`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.errors import ErrorCode
from rebalance.quick_init import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@quick_init
@dataclass(frozen=True, slots=True)
class JoinGroupReply:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    skip_assignment: bool = False
    members: tuple[JoinGroupMember, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class SyncGroupReply:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeftMember:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveGroupReply:
    error: ErrorCode
    members: tuple[LeftMember, ...] = ()

    @property
    def folded_error(self) -> ErrorCode:
        """LeaveGroup v0-2 has one error: the top-level one, else the first member error."""
        if self.error is not ErrorCode.NONE:
            return self.error
        for member in self.members:
            if member.error is not ErrorCode.NONE:
                return member.error
        return ErrorCode.NONE


@quick_init
@dataclass(frozen=True, slots=True)
class OffsetCommitReply:
    topics: tuple[tuple[str, tuple[tuple[int, ErrorCode], ...]], ...]


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchReply:
    error: ErrorCode
    topics: tuple[tuple[str, tuple[FetchedOffset, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetDeleteReply:
    error: ErrorCode
    topics: tuple[tuple[str, tuple[tuple[int, ErrorCode], ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeGroupsReply:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class ListGroupsReply:
    error: ErrorCode
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteGroupsReply:
    results: tuple[tuple[str, ErrorCode], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatReply:
    """KIP-848's heartbeat answer. `assignment` (topic id, partitions) is None when unchanged
    since the last reply and the request was not a full one (the wire sends null then)."""

    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None = None


#: (topic id, topic name, partitions): ConsumerGroupDescribe shows both the id and the name.
NamedAssignment = tuple[tuple[str, str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: NamedAssignment
    target_assignment: NamedAssignment
    #: The member speaks the classic protocol (online migration), not ConsumerGroupHeartbeat.
    classic: bool = False


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    group_id: str
    error: ErrorCode
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeReply:
    groups: tuple[DescribedConsumerGroup, ...]


# -- client-balance groups (TubeMQ's ClientBalanceConsumer, `rebalance.client_balance`) --------
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


AnyReply = (
    JoinGroupReply
    | SyncGroupReply
    | HeartbeatReply
    | LeaveGroupReply
    | OffsetCommitReply
    | OffsetFetchReply
    | OffsetDeleteReply
    | DescribeGroupsReply
    | ListGroupsReply
    | DeleteGroupsReply
    | ConsumerGroupHeartbeatReply
    | ConsumerGroupDescribeReply
    | ClientBalanceHeartbeatReply
    | RegisterPartitionsReply
    | ReleasePartitionsReply
    | ClientBalanceDescribeReply
)
