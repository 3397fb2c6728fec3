"""A harness for client-balance groups over `GroupHarness`: topics, nodes, their requests."""

from __future__ import annotations

from rebalance.client_balance.commands import (
    ClientBalanceDescribe,
    ClientBalanceHeartbeat,
    PartitionRequest,
    RegisterPartitions,
    ReleasePartitions,
)
from rebalance.client_balance.group import ClientBalanceGroup
from rebalance.client_balance.replies import (
    ClientBalanceDescribeReply,
    ClientBalanceHeartbeatReply,
    DescribedClientBalanceGroup,
    HeldPartitions,
    RegisterPartitionsReply,
    ReleasePartitionsReply,
)
from rebalance.config import CoordinatorConfig
from rebalance.event_schema import check_event
from rebalance.testing import GroupHarness
from rebalance.topics import TopicInfo, TopicMetadata

SESSION_MS = 10_000


class ClientBalanceHarness(GroupHarness):
    def __init__(self, config: CoordinatorConfig | None = None, **topics: int) -> None:
        super().__init__(config or CoordinatorConfig())
        self.metadata: TopicMetadata = TopicMetadata()
        self.epochs: dict[str, int] = {}
        if topics:
            self.set_topics(**topics)

    def set_topics(self, **topics: int) -> None:
        self.topics_changed(TopicMetadata.of(TopicInfo(n, f"id-{n}", p) for n, p in topics.items()))

    def hb(self, command: ClientBalanceHeartbeat) -> ClientBalanceHeartbeatReply:
        reply = self.reply(self.send(command))
        assert isinstance(reply, ClientBalanceHeartbeatReply)
        return reply

    def join_node(
        self,
        member: str,
        source_count: int = 3,
        node_id: int = 0,
        topics: tuple[str, ...] = ("t",),
        group: str = "g",
        session_timeout_ms: int = SESSION_MS,
    ) -> ClientBalanceHeartbeatReply:
        reply = self.hb(
            ClientBalanceHeartbeat(
                group,
                member,
                0,
                source_count=source_count,
                node_id=node_id,
                topics=topics,
                session_timeout_ms=session_timeout_ms,
                client_id=f"client-{member}",
            )
        )
        if reply.member_epoch > 0:
            self.epochs[member] = reply.member_epoch
        return reply

    def beat(
        self, member: str, held: HeldPartitions | None = None, group: str = "g"
    ) -> ClientBalanceHeartbeatReply:
        return self.hb(ClientBalanceHeartbeat(group, member, self.epochs[member], held=held))

    def leave_node(self, member: str, group: str = "g") -> ClientBalanceHeartbeatReply:
        return self.hb(ClientBalanceHeartbeat(group, member, -1))

    def register(
        self, member: str, *partitions: tuple[str, int] | tuple[str, int, int], group: str = "g"
    ) -> RegisterPartitionsReply:
        requests = tuple(PartitionRequest(*p) for p in partitions)
        reply = self.reply(
            self.send(RegisterPartitions(group, member, self.epochs.get(member, 1), requests))
        )
        assert isinstance(reply, RegisterPartitionsReply)
        return reply

    def release(
        self, member: str, *partitions: tuple[str, int], group: str = "g"
    ) -> ReleasePartitionsReply:
        requests = tuple(PartitionRequest(*p) for p in partitions)
        reply = self.reply(
            self.send(ReleasePartitions(group, member, self.epochs.get(member, 1), requests))
        )
        assert isinstance(reply, ReleasePartitionsReply)
        return reply

    def describe_cb(self, group: str = "g") -> DescribedClientBalanceGroup:
        reply = self.reply(self.send(ClientBalanceDescribe((group,))))
        assert isinstance(reply, ClientBalanceDescribeReply)
        return reply.groups[0]

    def group(self, group_id: str = "g") -> ClientBalanceGroup:  # type: ignore[override]
        group = self.core.group(group_id)
        assert isinstance(group, ClientBalanceGroup)
        return group

    def holders(self, group_id: str = "g") -> dict[tuple[str, int], str]:
        return dict(self.group(group_id).holders)

    def bad_events(self) -> list[str]:
        problems = []
        for event in self.events:
            problem = check_event(event.to_json_dict(0))
            if problem is not None:
                problems.append(problem)
        return problems
