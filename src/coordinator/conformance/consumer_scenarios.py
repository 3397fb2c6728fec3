"""KIP-848 consumer-group rules as wire scenarios (spec/group-protocol.md §7): one request,
ConsumerGroupHeartbeat (key 68), carries joining (epoch 0), heartbeating, leaving (-1) and a
static member's temporary leave (-2); the assignment is computed by the broker.

Registered into `scenarios.SCENARIOS` when this module is imported (the runner does). They need
ConsumerGroupHeartbeat, which Kafka advertises from 3.7 where the new protocol is enabled (by
default from 4.0), and a topic they create. No scenario here waits on a timer.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from coordinator.conformance.broker import (
    CONSUMER_GROUP_HEARTBEAT,
    CREATE_TOPICS,
    OFFSET_COMMIT,
)
from coordinator.conformance.scenarios import (
    Context,
    advertised_at_least,
    error_name,
    expect,
    scenario,
    version_at_least,
)
from coordinator.wire.client import WireClient

JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2
PARTITIONS = 3


#: What every scenario here needs: ConsumerGroupHeartbeat and a topic to be assigned.
KIP848 = (version_at_least(CONSUMER_GROUP_HEARTBEAT, 0), version_at_least(CREATE_TOPICS, 0))


@dataclass
class ConsumerMember:
    """One KIP-848 consumer: its connection, id, epoch and assignment (partition numbers of the
    scenario's one topic)."""

    client: WireClient
    version: int
    group_id: str
    topic: str
    instance_id: str | None = None
    #: v1 (KIP-1082): the consumer chooses its id; v0: the broker does (first heartbeat).
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = JOIN_EPOCH
    partitions: frozenset[int] = frozenset()

    async def heartbeat(
        self, epoch: int | None = None, *, assignor: str | None = None, full: bool = False
    ) -> Any:
        """A heartbeat at `epoch` (default: the member's), full (subscription included, as on
        joining) or not; the member keeps what the answer gives it."""
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == JOIN_EPOCH or full
        response = await self.client.request(
            CONSUMER_GROUP_HEARTBEAT,
            self.version,
            {
                "group_id": self.group_id,
                "member_id": "" if self.version == 0 and epoch == JOIN_EPOCH else self.member_id,
                "member_epoch": epoch,
                "instance_id": self.instance_id,
                "rack_id": None,
                "rebalance_timeout": 30_000 if joining else -1,
                "subscribed_topic_names": [self.topic] if joining else None,
                "subscribed_topic_regex": None,
                "server_assignor": assignor,
                "topic_partitions": [] if joining else None,
            },
        )
        if error_name(response.error_code) == "none":
            if response.member_id:
                self.member_id = response.member_id
            self.epoch = response.member_epoch
            if response.assignment is not None:
                self.partitions = frozenset(
                    int(p) for t in response.assignment.topic_partitions for p in t.partitions
                )
        return response

    async def joined(self) -> Any:
        """Join, then heartbeat until the broker has handed out the assignment (a few beats
        at most: the target assignment may be computed after the join's answer)."""
        response = await self.heartbeat(JOIN_EPOCH)
        for _ in range(5):
            if error_name(response.error_code) != "none" or self.partitions:
                break
            response = await self.heartbeat()
        return response


async def consumer(ctx: Context, instance_id: str | None = None) -> ConsumerMember:
    """A KIP-848 consumer of the scenario's group and topic (created here)."""
    topic = f"{ctx.group_id}-t"
    expect(await ctx.broker.ensure_topic(topic, PARTITIONS), True, "topic created")
    member = await ctx.member()  # a connection to the group's coordinator
    version = ctx.broker.versions[CONSUMER_GROUP_HEARTBEAT]
    return ConsumerMember(member.client, version, ctx.group_id, topic, instance_id)


@scenario(
    "consumer.join_with_epoch_zero",
    rule="§7: a member joins with epoch 0 and is given an epoch, the heartbeat interval and, "
    "computed by the broker, its assignment",
    kafka="ConsumerGroupHeartbeat NONE, member epoch >= 1, a heartbeat interval; a lone member "
    "is assigned every partition of its topic (Kafka 3.7+, GA in 4.0)",
    assumes=KIP848,
)
async def join_with_epoch_zero(ctx: Context) -> None:
    m = await consumer(ctx)
    response = await m.joined()
    expect(error_name(response.error_code), "none", "the joining heartbeat")
    expect(m.epoch >= 1, True, f"a member epoch (got {m.epoch})")
    expect(response.heartbeat_interval.total_seconds() > 0, True, "a heartbeat interval")
    expect(sorted(m.partitions), list(range(PARTITIONS)), "the lone member's partitions")


@scenario(
    "consumer.epoch_ahead_fenced",
    rule="§7: a member epoch the coordinator never gave is fenced (throwIfMemberEpochIsInvalid)",
    kafka="FENCED_MEMBER_EPOCH for a heartbeat with an epoch above the member's",
    assumes=KIP848,
)
async def epoch_ahead_fenced(ctx: Context) -> None:
    m = await consumer(ctx)
    await m.joined()
    ahead = await m.heartbeat(m.epoch + 1)
    expect(error_name(ahead.error_code), "fenced_member_epoch", "a heartbeat one epoch ahead")


@scenario(
    "consumer.unknown_member",
    rule="§7: only a member of the group may heartbeat with an epoch other than 0",
    kafka="UNKNOWN_MEMBER_ID for a heartbeat with epoch 1 from a member id the group lacks",
    assumes=KIP848,
)
async def unknown_member(ctx: Context) -> None:
    m = await consumer(ctx)
    await m.joined()
    stranger = await consumer(ctx)
    reply = await stranger.heartbeat(1)
    expect(error_name(reply.error_code), "unknown_member_id", "a stranger's heartbeat")


@scenario(
    "consumer.leave_with_epoch_minus_one",
    rule="§7: a member leaves with epoch -1; it is gone at once",
    kafka="NONE with member epoch -1; the left member's next heartbeat is UNKNOWN_MEMBER_ID",
    assumes=KIP848,
)
async def leave(ctx: Context) -> None:
    m = await consumer(ctx)
    await m.joined()
    epoch = m.epoch
    left = await m.heartbeat(LEAVE_EPOCH)
    expect((error_name(left.error_code), left.member_epoch), ("none", -1), "the leaving heartbeat")
    again = await m.heartbeat(epoch)
    expect(error_name(again.error_code), "unknown_member_id", "a heartbeat after leaving")


@scenario(
    "consumer.static_leave_keeps_the_assignment",
    rule="§7: a static member leaves for a while with epoch -2; its instance id, rejoining with "
    "epoch 0, takes its place and its partitions",
    kafka="NONE with member epoch -2; the rejoin (a new member id, same instance id) is NONE "
    "with the same partitions",
    assumes=KIP848,
)
async def static_leave(ctx: Context) -> None:
    instance = f"{ctx.group_id}-instance"
    first = await consumer(ctx, instance)
    await first.joined()
    owned = first.partitions
    left = await first.heartbeat(STATIC_LEAVE_EPOCH)
    expect((error_name(left.error_code), left.member_epoch), ("none", -2), "the static leave")
    restarted = await consumer(ctx, instance)
    back = await restarted.joined()
    expect(error_name(back.error_code), "none", "the rejoin of the instance id")
    expect(restarted.partitions, owned, "the partitions it had")


@scenario(
    "consumer.unreleased_instance_id",
    rule="§7: an instance id belongs to one member until it leaves (static members, KIP-848)",
    kafka="UNRELEASED_INSTANCE_ID for a join with the instance id of a member still there",
    assumes=KIP848,
)
async def unreleased_instance_id(ctx: Context) -> None:
    instance = f"{ctx.group_id}-instance"
    holder = await consumer(ctx, instance)
    await holder.joined()
    other = await consumer(ctx, instance)
    reply = await other.heartbeat(JOIN_EPOCH)
    expect(error_name(reply.error_code), "unreleased_instance_id", "a join with a held id")
    expect(error_name((await holder.heartbeat()).error_code), "none", "the holder afterwards")


@scenario(
    "consumer.unsupported_assignor",
    rule="§7: a member may name a server assignor the broker has (group.consumer.assignors)",
    kafka="UNSUPPORTED_ASSIGNOR for a server assignor the broker lacks",
    assumes=KIP848,
)
async def unsupported_assignor(ctx: Context) -> None:
    m = await consumer(ctx)
    reply = await m.heartbeat(JOIN_EPOCH, assignor="no-such-assignor")
    expect(error_name(reply.error_code), "unsupported_assignor", "a join naming it")


@scenario(
    "consumer.commit_with_a_stale_epoch",
    rule="§7, §3.1: a consumer group's OffsetCommit (v9+) carries the member epoch",
    kafka="STALE_MEMBER_EPOCH for an epoch below the member's; NONE at its epoch",
    assumes=(*KIP848, advertised_at_least(OFFSET_COMMIT, 9)),
)
async def stale_epoch_commit(ctx: Context) -> None:
    m = await consumer(ctx)
    await m.joined()

    async def commit(epoch: int) -> str:
        response = await m.client.request(
            OFFSET_COMMIT,
            9,
            {"group_id": ctx.group_id, "generation_id_or_member_epoch": epoch,
             "member_id": m.member_id, "group_instance_id": None,
             "topics": [{"name": m.topic, "partitions": [
                 {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                  "committed_metadata": ""}]}]},
        )  # fmt: skip
        return error_name(response.topics[0].partitions[0].error_code)

    expect(await commit(m.epoch - 1), "stale_member_epoch", "a commit at the previous epoch")
    expect(await commit(m.epoch), "none", "a commit at the member's epoch")
