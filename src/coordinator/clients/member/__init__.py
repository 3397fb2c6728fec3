"""The member side as an asyncio library: `GroupMember` runs a pure `rebalance.member`
state machine (classic eager/cooperative or KIP-848) on Kafka-protocol connections (kio, the
codec the server uses); `ResourceGroup` shares named resources through a group."""

from coordinator.clients.member.group_member import CommitFailed, GroupMember
from coordinator.clients.member.resources import ResourceGroup

__all__ = ["CommitFailed", "GroupMember", "ResourceGroup"]
