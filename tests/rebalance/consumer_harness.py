"""A harness for KIP-848 consumer groups over `GroupHarness`: topics, heartbeats, a client model.

`Client` plays a well-behaved consumer: it heartbeats with the partitions it owns, drops the
partitions a reply no longer lists (StopFetcher) at once, and starts the ones it adds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rebalance.config import CoordinatorConfig
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.errors import ErrorCode
from rebalance.testing import GroupHarness
from rebalance.topics import TopicInfo, TopicMetadata

Owned = tuple[tuple[str, tuple[int, ...]], ...]


def topic_id(name: str) -> str:
    return f"id-{name}"


def assert_one_holder_per_partition(group: ConsumerGroup) -> None:
    """The coordinator's side of "never two owners": no partition is assigned to, or still being
    revoked from, two members of the group at once."""
    held: dict[tuple[str, int], str] = {}
    for member in group.members.values():
        for partitions in (member.assigned, member.pending_revocation):
            for t, ps in partitions.items():
                for p in ps:
                    assert (t, p) not in held, f"{t}-{p}: {held[(t, p)]} and {member.member_id}"
                    held[(t, p)] = member.member_id


class ConsumerHarness(GroupHarness):
    """Targets are computed on every epoch bump (`group.consumer.assignment.interval.ms` 0,
    Kafka 4.0-4.2) unless `batching`: most rules are about one epoch bump at a time; assignment
    batching has tests of its own."""

    def __init__(
        self, config: CoordinatorConfig | None = None, *, batching: bool = False, **topics: int
    ) -> None:
        config = config or CoordinatorConfig()
        if not batching:
            config = config.model_copy(update={"group_consumer_assignment_interval_ms": 0})
        super().__init__(config)
        self.metadata: TopicMetadata = TopicMetadata()
        if topics:
            self.set_topics(**topics)

    def set_topics(self, **topics: int) -> None:
        self.topics_changed(
            TopicMetadata.of(TopicInfo(n, topic_id(n), p) for n, p in topics.items())
        )

    def hb(self, command: ConsumerGroupHeartbeat) -> ConsumerGroupHeartbeatReply:
        reply = self.reply(self.send(command))
        assert isinstance(reply, ConsumerGroupHeartbeatReply)
        return reply

    def join(
        self,
        group: str,
        member: str,
        topics: tuple[str, ...] = ("t",),
        **fields: object,
    ) -> ConsumerGroupHeartbeatReply:
        return self.hb(
            ConsumerGroupHeartbeat(
                group,
                member,
                0,
                rebalance_timeout_ms=fields.pop("rebalance_timeout_ms", 30000),  # type: ignore[arg-type]
                subscribed_topic_names=topics,
                topic_partitions=(),
                **fields,  # type: ignore[arg-type]
            )
        )

    def group(self, group_id: str) -> ConsumerGroup:  # type: ignore[override]
        group = self.core.group(group_id)
        assert isinstance(group, ConsumerGroup)
        return group


@dataclass
class Client:
    """A consumer that follows the protocol: it owns what the last reply listed."""

    harness: ConsumerHarness
    group_id: str
    member_id: str
    topics: tuple[str, ...] = ("t",)
    epoch: int = 0
    owned: dict[str, set[int]] = field(default_factory=dict)
    fenced: bool = False

    def owned_tuple(self) -> Owned:
        return tuple((t, tuple(sorted(ps))) for t, ps in sorted(self.owned.items()) if ps)

    def heartbeat(self) -> ConsumerGroupHeartbeatReply:
        if self.epoch == 0:
            reply = self.harness.join(self.group_id, self.member_id, self.topics)
        else:
            reply = self.harness.hb(
                ConsumerGroupHeartbeat(
                    self.group_id, self.member_id, self.epoch, topic_partitions=self.owned_tuple()
                )
            )
        if reply.error is ErrorCode.FENCED_MEMBER_EPOCH or reply.error is (
            ErrorCode.UNKNOWN_MEMBER_ID
        ):
            self.owned = {}
            self.epoch = 0
            self.fenced = True
            return reply
        assert reply.error is ErrorCode.NONE, reply
        self.epoch = reply.member_epoch
        if reply.assignment is not None:
            self.owned = {t: set(ps) for t, ps in reply.assignment}
        return reply

    def leave(self) -> ConsumerGroupHeartbeatReply:
        reply = self.harness.hb(ConsumerGroupHeartbeat(self.group_id, self.member_id, -1))
        self.owned = {}
        return reply
