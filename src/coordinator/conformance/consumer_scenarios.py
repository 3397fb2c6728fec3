"""KIP-848 consumer-group rules as wire scenarios (spec/group-protocol.md §7): one request,
ConsumerGroupHeartbeat (key 68), carries joining (epoch 0), heartbeating, leaving (-1) and a
static member's temporary leave (-2); the assignment is computed by the broker.

Registered into `scenario.SCENARIOS` when this module is imported (the runner does). They need
ConsumerGroupHeartbeat, which Kafka advertises from 3.7 where the new protocol is enabled (by
default from 4.0), and a topic they create. No scenario here waits on a timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from assignors.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from coordinator.conformance.assumptions import advertised_at_least, version_at_least
from coordinator.conformance.broker import Member
from coordinator.conformance.scenario import Context, error_name, expect, one_generation, scenario
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient

JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2
PARTITIONS = 3
#: How long a joined member heartbeats for its first assignment.
ASSIGNMENT_WAIT_S = 5.0


#: What every scenario here needs: ConsumerGroupHeartbeat and a topic to be assigned.
KIP848 = (
    version_at_least(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0),
    version_at_least(ApiKey.CREATE_TOPICS, 0),
)


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
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
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
        """Join, then heartbeat until the broker has handed out the assignment. The target may
        come at a later heartbeat than the join's: Kafka's group coordinator learns a new topic
        after Metadata shows it, and assigns it at the first heartbeat after that."""
        response = await self.heartbeat(JOIN_EPOCH)
        deadline = asyncio.get_running_loop().time() + ASSIGNMENT_WAIT_S
        while error_name(response.error_code) == "none" and not self.partitions:
            if asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.02)
            response = await self.heartbeat()
        return response


async def consumer(ctx: Context, instance_id: str | None = None) -> ConsumerMember:
    """A KIP-848 consumer of the scenario's group and topic (created here)."""
    topic = f"{ctx.group_id}-t"
    expect(await ctx.broker.ensure_topic(topic, PARTITIONS), True, "topic created")
    member = await ctx.member()  # a connection to the group's coordinator
    version = ctx.broker.versions[ApiKey.CONSUMER_GROUP_HEARTBEAT]
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
    kafka="STALE_MEMBER_EPOCH below the partition's assignment epoch (KIP-1251); NONE at it",
    assumes=(*KIP848, advertised_at_least(ApiKey.OFFSET_COMMIT, 9)),
)
async def stale_epoch_commit(ctx: Context) -> None:
    m = await consumer(ctx)
    await m.joined()

    async def commit(epoch: int) -> str:
        response = await m.client.request(
            ApiKey.OFFSET_COMMIT,
            9,
            {"group_id": ctx.group_id, "generation_id_or_member_epoch": epoch,
             "member_id": m.member_id, "group_instance_id": None,
             "topics": [{"name": m.topic, "partitions": [
                 {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1,
                  "committed_metadata": ""}]}]},
        )  # fmt: skip
        return error_name(response.topics[0].partitions[0].error_code)

    # A lone member got the partition at its join epoch: the previous epoch is older than that.
    expect(await commit(m.epoch - 1), "stale_member_epoch", "a commit at the previous epoch")
    expect(await commit(m.epoch), "none", "a commit at the member's epoch")


# -- online migration (group.consumer.migration.policy, Kafka 4.0 default: bidirectional) ------
MIGRATION_PLAN = ((0, 1), (2,))  # the classic leader's range assignment of the three partitions
# Nothing here is about expiry: a session and rebalance timeout a loaded machine cannot outlast
# (a classic member that expired mid-scenario would hand its partitions to the one rejoining).
MIGRATION_SESSION_MS = 30_000


async def classic_formed(ctx: Context, topic: str) -> list[tuple[Member, frozenset[int]]]:
    """Two classic consumers of `topic` (ConsumerProtocol v0 metadata, "range"), joined in one
    round and synced with `MIGRATION_PLAN`; the leader first, each with its partitions."""
    protocols = (("range", encode_subscription(Subscription((topic,)), 0)),)
    session_ms = MIGRATION_SESSION_MS
    members = [await ctx.member() for _ in range(2)]
    for m in members:  # v4+: take the id the coordinator hands out first
        await m.join(session_ms=session_ms, protocols=protocols)
    leader = await one_generation(
        members, lambda m: m.join(session_ms=session_ms, protocols=protocols)
    )
    members.sort(key=lambda m: m.member_id != leader)
    plan = {
        m.member_id: encode_assignment(Assignment(tuple((topic, p) for p in ps)))
        for m, ps in zip(members, MIGRATION_PLAN, strict=True)
    }
    synced = await asyncio.gather(members[0].sync(plan), members[1].sync())
    for reply in synced:
        expect(error_name(reply.error_code), "none", "SyncGroup of the classic group")
    return [(m, frozenset(ps)) for m, ps in zip(members, MIGRATION_PLAN, strict=True)]


def assigned(reply: Any) -> frozenset[int]:
    if not reply.assignment:
        return frozenset()
    return frozenset(p for _, p in decode_assignment(bytes(reply.assignment)).partitions)


async def upgraded(ctx: Context) -> tuple[ConsumerMember, list[tuple[Member, frozenset[int]]]]:
    """A classic group with members, joined by a KIP-848 consumer: the group converts."""
    modern = await consumer(ctx)
    classic = await classic_formed(ctx, modern.topic)
    joined = await modern.heartbeat(JOIN_EPOCH)
    expect(error_name(joined.error_code), "none", "the KIP-848 join to the classic group")
    return modern, classic


@scenario(
    "consumer.migration_upgrade",
    rule="§7 online migration: a KIP-848 member joining a classic group with members converts "
    "it (policy upgrade or bidirectional); the classic members stay, keep the partitions they "
    "were assigned, and are told to rejoin",
    kafka="NONE for the ConsumerGroupHeartbeat; REBALANCE_IN_PROGRESS for the classic members' "
    "heartbeats; their JoinGroup answered at once (no leader), their SyncGroup NONE with a part "
    "of what they had (Kafka 3.8+, default policy bidirectional from 4.0)",
    assumes=KIP848,
)
async def migration_upgrade(ctx: Context) -> None:
    modern, classic = await upgraded(ctx)
    async with heartbeating(modern):
        await rejoined(ctx, classic)


@contextlib.asynccontextmanager
async def heartbeating(member: ConsumerMember) -> AsyncIterator[None]:
    """`member` heartbeats in the background meanwhile: a KIP-848 session that expired would
    hand its partitions to the classic members rejoining."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(0.2)
            await member.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def rejoined(ctx: Context, classic: list[tuple[Member, frozenset[int]]]) -> None:
    """Each classic member is told to rejoin, rejoins (answered at once, no leader) and syncs,
    keeping a part of what it had."""
    protocols = (("range", encode_subscription(Subscription((f"{ctx.group_id}-t",)), 0)),)
    for m, owned in classic:
        expect(error_name(await m.heartbeat()), "rebalance_in_progress", "a classic heartbeat")
        again = await m.join(session_ms=MIGRATION_SESSION_MS, protocols=protocols)
        expect((error_name(again.error_code), again.leader), ("none", ""), "its rejoin")
        synced = await m.sync()
        expect(error_name(synced.error_code), "none", "its SyncGroup")
        expect(assigned(synced) <= owned, True, "it keeps a part of what it had")


@scenario(
    "consumer.migration_downgrade",
    rule="§7 online migration: when the last KIP-848 member of a group of classic members "
    "leaves, the group becomes a classic group again (policy downgrade or bidirectional) and "
    "rebalances",
    kafka="NONE for the leave; REBALANCE_IN_PROGRESS for a classic member's heartbeat (at the "
    "generation it rejoined the consumer group with); "
    "DescribeGroups shows a classic group (protocol type consumer) in PreparingRebalance",
    assumes=KIP848,
)
async def migration_downgrade(ctx: Context) -> None:
    modern, classic = await upgraded(ctx)
    async with heartbeating(modern):
        await rejoined(ctx, classic)
    left = await modern.heartbeat(LEAVE_EPOCH)
    expect(error_name(left.error_code), "none", "the last KIP-848 member's leave")
    member, _ = classic[0]
    expect(error_name(await member.heartbeat()), "rebalance_in_progress", "a classic heartbeat")
    described = await member.describe()
    expect(
        (error_name(described.error_code), described.group_state, described.protocol_type),
        ("none", "PreparingRebalance", "consumer"),
        "DescribeGroups of the group",
    )
