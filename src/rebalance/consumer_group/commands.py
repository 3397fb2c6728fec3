"""The consumer group's one request, KIP-848's `ConsumerGroupHeartbeat`, as the core sees it.

Optional fields keep Kafka's null-means-unchanged meaning: None is "not sent" (the member's
previous value stays), an empty tuple or string is a value. `version` matters once: from v1 the
client chooses its member id (KIP-1082), so an empty one is INVALID_REQUEST; on v0 the
coordinator chooses it on the first heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance.commands import Command
from rebalance.consumer_group.replies import (
    ConsumerGroupDescribeReply,
    ConsumerGroupHeartbeatReply,
    DescribedConsumerGroup,
)
from rebalance.errors import ErrorCode

#: Kafka's special member epochs.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

#: The first version whose member id is the client's (KIP-1082).
CLIENT_MEMBER_ID_VERSION = 1


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeat(Command[ConsumerGroupHeartbeatReply]):
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: (topic id, partitions) the client owns now; None: not sent.
    topic_partitions: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1

    def error_reply(self, code: ErrorCode) -> ConsumerGroupHeartbeatReply:
        return ConsumerGroupHeartbeatReply(code, member_id=self.member_id or None)


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribe(Command[ConsumerGroupDescribeReply]):
    """KIP-848's describe: epochs, assignor, each member's current and target assignment."""

    group_ids: tuple[str, ...]

    def error_reply(self, code: ErrorCode) -> ConsumerGroupDescribeReply:
        return ConsumerGroupDescribeReply(
            tuple(DescribedConsumerGroup(g, code) for g in self.group_ids)
        )
