"""What a differential run asks the broker before its runs, over probe groups of their own:
whether its group coordinator knows the runs' topic yet, and whether it resolves a new
subscription regex at once, as the model does (else `beat cN regex` steps are left out)."""

from __future__ import annotations

import asyncio
import time
import uuid

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.broker_side import BrokerSide, ConnectionPool
from coordinator.conformance.lockstep import ANSWER_TIMEOUT_S, Divergence
from coordinator.conformance.step_requests import LONG_MS
from coordinator.wire.api_keys import ApiKey
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply

#: How long a broker that resolves regexes in the background is given to assign the topic to a
#: member subscribed by a regex matching it (Kafka: milliseconds, one scan of the topic names).
REGEX_RESOLUTION_S = 2.0
#: How long the broker's group coordinator is given to learn the runs' new topic.
TOPIC_KNOWN_S = 10.0


class RegexNeverResolved(Divergence):
    """A member subscribed by a regex matching the run's topic was never assigned it."""


async def coordinator_knows_the_topic(
    broker: BrokerUnderTest, pool: ConnectionPool, topic: str, group_id: str
) -> None:
    """Wait until a lone member subscribing to the topic by name is assigned it: Kafka's
    group coordinator learns a new topic after Metadata shows it (its own metadata image),
    and a run's first join before that would be assigned nothing, where the model's is."""
    member_id = str(uuid.uuid4())
    version = broker.versions[ApiKey.CONSUMER_GROUP_HEARTBEAT]
    side = BrokerSide(broker, pool)
    await side.open({"probe": group_id})

    async def beat(command: ConsumerGroupHeartbeat) -> ConsumerGroupHeartbeatReply:
        reply = await asyncio.wait_for(await side.send("probe", command), ANSWER_TIMEOUT_S)
        assert isinstance(reply, ConsumerGroupHeartbeatReply)
        return reply

    join = ConsumerGroupHeartbeat(
        group_id, member_id, 0, rebalance_timeout_ms=LONG_MS,
        subscribed_topic_names=(topic,), topic_partitions=(), version=version,
    )  # fmt: skip
    try:
        reply = await beat(join)
        deadline = time.monotonic() + TOPIC_KNOWN_S
        while not reply.error and not reply.assignment and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            again = ConsumerGroupHeartbeat(
                group_id, member_id, reply.member_epoch, topic_partitions=(), version=version
            )
            reply = await beat(again)
    finally:
        try:
            await beat(ConsumerGroupHeartbeat(group_id, member_id, -1, version=version))
        finally:
            await side.close()


async def resolves_regexes_at_once(
    broker: BrokerUnderTest, pool: ConnectionPool, topic: str, topic_id: str, group_id: str
) -> str | None:
    """The pattern `beat cN regex` subscribes with, where the broker resolves a new regex
    as the model does: at once, a lone member joining with it assigned the topic in the
    answer. Kafka 4.x resolves a regex no member of the group used before in the
    background (GroupMetadataManager.maybeUpdateRegularExpressions schedules it on the
    coordinator's executor, without bumping the group epoch); the resolution then bumps the
    group epoch and the member's next heartbeat gets the new target. Its first answer
    assigns nothing and every later epoch is one ahead of the model's: no normalising of
    answers makes the two agree, so the steps are left out there (None). A broker that
    never assigns the topic to the member is a divergence (`RegexNeverResolved`)."""
    pattern = f"differential[-]{broker.run_id}"  # a regex that matches `topic` only
    member_id = str(uuid.uuid4())
    version = broker.versions[ApiKey.CONSUMER_GROUP_HEARTBEAT]
    side = BrokerSide(broker, pool)
    await side.open({"probe": group_id})

    async def beat(command: ConsumerGroupHeartbeat) -> ConsumerGroupHeartbeatReply:
        reply = await asyncio.wait_for(await side.send("probe", command), ANSWER_TIMEOUT_S)
        assert isinstance(reply, ConsumerGroupHeartbeatReply)
        if reply.error:
            raise RegexNeverResolved(
                f"a join subscribing by the regex {pattern!r}: {reply.error.name.lower()}"
            )
        return reply

    def assigned(reply: ConsumerGroupHeartbeatReply) -> bool:
        return any(t == topic_id and ps for t, ps in reply.assignment or ())

    try:
        join = ConsumerGroupHeartbeat(
            group_id, member_id, 0, rebalance_timeout_ms=LONG_MS, subscribed_topic_names=(),
            subscribed_topic_regex=pattern, topic_partitions=(), version=version,
        )  # fmt: skip
        reply = await beat(join)
        if assigned(reply):
            return pattern
        deadline = time.monotonic() + REGEX_RESOLUTION_S
        while time.monotonic() < deadline:  # resolved in the background, or never?
            await asyncio.sleep(0.05)
            again = ConsumerGroupHeartbeat(
                group_id, member_id, reply.member_epoch, topic_partitions=(), version=version
            )
            reply = await beat(again)
            if assigned(reply):
                return None
        raise RegexNeverResolved(
            f"a lone member subscribed by the regex {pattern!r} was not assigned the topic "
            f"{topic!r} it matches within {REGEX_RESOLUTION_S:.0f} s"
        )
    finally:
        leave = ConsumerGroupHeartbeat(group_id, member_id, -1, version=version)
        try:
            await asyncio.wait_for(await side.send("probe", leave), ANSWER_TIMEOUT_S)
        finally:
            await side.close()
