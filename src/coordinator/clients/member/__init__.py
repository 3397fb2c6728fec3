"""The member side as an asyncio library: `GroupMember` runs a pure `rebalance.member`
state machine (classic eager/cooperative or KIP-848) on Kafka-protocol connections (kio, the
codec the server uses); `ResourceGroup` shares named resources through a group; `errors` is
what they raise."""

from coordinator.clients.member.errors import (
    CommitError,
    CommitFailed,
    CommitTimedOut,
    MemberError,
    OffsetFetchFailed,
    RebalanceInProgress,
)
from coordinator.clients.member.group_member import GroupMember
from coordinator.clients.member.resources import ResourceGroup

__all__ = [
    "CommitError",
    "CommitFailed",
    "CommitTimedOut",
    "GroupMember",
    "MemberError",
    "OffsetFetchFailed",
    "RebalanceInProgress",
    "ResourceGroup",
]
