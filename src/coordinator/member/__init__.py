"""The member side as an asyncio library: `GroupMember` runs a pure `rebalance.member`
state machine on Kafka-protocol connections (kio, the codec the server uses)."""

from coordinator.member.group_member import CommitFailed, GroupMember

__all__ = ["CommitFailed", "GroupMember"]
