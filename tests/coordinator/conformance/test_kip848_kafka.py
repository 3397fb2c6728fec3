"""KIP-848 questions settled against Apache Kafka 4.4's broker, each asked of our server too, so a
difference fails here: when the group epoch bumps, what a departure does to the others' targets,
target batching (`group.consumer.assignment.interval.ms`), the fencing answers for a static
member's instance id, and when a silent member's session ends."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from kafka_peer_settings import BATCHED, SETTINGS

from coordinator.conformance.broker import BrokerUnderTest, Member
from coordinator.conformance.consumer_scenarios import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerMember,
)
from coordinator.conformance.scenario import error_name
from coordinator.testing.peers.pytest_plugin import KafkaBrokers
from coordinator.testing.pytest_plugin import ServerFactory


@pytest.fixture(params=["kafka", "ours"])
def broker_of(
    request: pytest.FixtureRequest, kafka_brokers: KafkaBrokers
) -> Iterator[Callable[[dict[str, object]], str]]:
    """HOST:PORT of a broker with the given settings: Kafka's (shared per settings) or ours.
    Both ask for `kafka_brokers` (it starts nothing until asked), so all of these tests are in
    the Kafka broker's xdist group."""
    if request.param == "kafka":
        yield lambda settings: kafka_brokers.get(settings).bootstrap
    else:
        factory: ServerFactory = request.getfixturevalue("kafka_server_factory")
        yield lambda settings: factory(topics=[], settings=settings).bootstrap


GroupOn = Callable[[str, str], Awaitable["Group"]]


@pytest.fixture
async def group_on() -> AsyncIterator[GroupOn]:
    """`await group_on(bootstrap, name)`: a fresh group and 4-partition topic; connections closed
    after the test."""
    made: list[Group] = []

    async def on(bootstrap: str, name: str) -> Group:
        group = Group(await BrokerUnderTest.connect(bootstrap, {}), name)
        assert await group.broker.ensure_topic(group.topic, 4)
        made.append(group)
        # Kafka's group coordinator learns a new topic after Metadata shows it: a member of
        # another group is assigned it once it does, and then the epochs here are exact.
        probe = Group(group.broker, f"{name}-probe")
        probe.topic = group.topic
        made.append(probe)
        prober = await probe.joined()
        assert len(prober.partitions) == 4
        await prober.heartbeat(LEAVE_EPOCH)
        return group

    yield on
    for group in made:
        await group.close()


class Group:
    """A fresh group and topic on a broker, and its KIP-848 members."""

    def __init__(self, broker: BrokerUnderTest, name: str) -> None:
        self.broker = broker
        self.id = f"{name}-{uuid.uuid4().hex[:6]}"
        self.topic = f"{self.id}-t"
        self.connections: list[Member] = []

    async def close(self) -> None:
        for connection in self.connections:
            await connection.close()

    async def member(self, instance_id: str | None = None) -> ConsumerMember:
        connection = await self.broker.member(self.id)
        self.connections.append(connection)
        version = self.broker.versions[68]
        return ConsumerMember(connection.client, version, self.id, self.topic, instance_id)

    async def joined(self, instance_id: str | None = None) -> ConsumerMember:
        member = await self.member(instance_id)
        await member.joined()
        return member

    async def epochs(self) -> tuple[int, int, str]:
        """ConsumerGroupDescribe: (group epoch, assignment epoch, state)."""
        connection = await self.broker.member(self.id)
        try:
            described = await connection.client.request(
                69, 1, {"group_ids": [self.id], "include_authorized_operations": False}
            )
        finally:
            await connection.close()
        (group,) = described.groups
        return int(group.group_epoch), int(group.assignment_epoch), str(group.group_state)


async def test_the_group_epoch_bumps_on_join_leave_subscription_and_metadata(
    broker_of: Callable[[dict[str, object]], str], group_on: GroupOn
) -> None:
    group = await group_on(broker_of(SETTINGS), "epochs")
    a = await group.joined()
    assert a.epoch == 2  # a new group is at epoch 1 (Kafka 4.4); the first join makes 2
    b = await group.member()
    await b.heartbeat(0)
    assert (await group.epochs())[0] == 3  # a join
    await b.heartbeat(LEAVE_EPOCH)
    assert (await group.epochs())[0] == 4  # a leave
    other = f"{group.id}-u"
    assert await group.broker.ensure_topic(other, 1)
    a.topic = other
    await a.heartbeat(full=True)
    assert (await group.epochs())[0] == 5  # a subscription change
    assert a.epoch == 5


async def test_a_departure_bumps_the_epoch_and_the_next_heartbeat_computes_the_target(
    broker_of: Callable[[dict[str, object]], str], group_on: GroupOn
) -> None:
    group = await group_on(broker_of(SETTINGS), "departure")
    a = await group.joined()
    b = await group.member()
    await b.heartbeat(0)
    for _ in range(4):  # a gives two up, b takes them: both at epoch 3
        await a.heartbeat(full=True)
        await b.heartbeat(full=True)
    assert (a.epoch, b.epoch, len(a.partitions), len(b.partitions)) == (3, 3, 2, 2)
    await b.heartbeat(LEAVE_EPOCH)
    assert await group.epochs() == (4, 3, "Assigning")  # no target yet for epoch 4
    await a.heartbeat(full=True)
    assert (a.epoch, sorted(a.partitions)) == (4, [0, 1, 2, 3])
    assert await group.epochs() == (4, 4, "Stable")


async def test_targets_are_batched_by_the_assignment_interval(
    broker_of: Callable[[dict[str, object]], str], group_on: GroupOn
) -> None:
    group = await group_on(broker_of(BATCHED), "batched")
    a = await group.joined()  # the group's first target is computed at once
    assert (a.epoch, sorted(a.partitions)) == (2, [0, 1, 2, 3])
    joined_at = time.monotonic()
    b = await group.member()
    await b.heartbeat(0)
    assert await group.epochs() == (3, 2, "Assigning")  # the next waits for the interval
    while time.monotonic() - joined_at < 0.5:
        await a.heartbeat(full=True)
        await b.heartbeat(full=True)
        assert (await group.epochs())[1] == 2
        await asyncio.sleep(0.1)
    while (await group.epochs())[1] == 2:
        assert time.monotonic() - joined_at < 5.0
        await a.heartbeat(full=True)
        await b.heartbeat(full=True)
        await asyncio.sleep(0.05)
    assert (await group.epochs())[:2] == (3, 3)


async def test_an_instance_id_under_another_member_id_is_fenced(
    broker_of: Callable[[dict[str, object]], str], group_on: GroupOn
) -> None:
    group = await group_on(broker_of(SETTINGS), "fencing")
    instance = f"{group.id}-i"
    holder = await group.joined(instance)
    impostor = await group.member(instance)
    impostor.epoch = holder.epoch
    beat = await impostor.heartbeat()  # a member id the group lacks, a held instance id
    assert error_name(beat.error_code) == "fenced_instance_id"
    left = await impostor.heartbeat(LEAVE_EPOCH)  # a leave naming the holder's instance id
    assert error_name(left.error_code) == "fenced_instance_id"
    stranger = await group.member(f"{group.id}-nobody")
    assert error_name((await stranger.heartbeat(LEAVE_EPOCH)).error_code) == "unknown_member_id"
    again = await group.member(instance)
    again.member_id = holder.member_id  # a rejoin (epoch 0) under its own id while active
    assert error_name((await again.heartbeat(0)).error_code) == "unreleased_instance_id"
    assert error_name((await holder.heartbeat(STATIC_LEAVE_EPOCH)).error_code) == "none"


async def test_a_silent_member_is_removed_when_its_session_ends(
    broker_of: Callable[[dict[str, object]], str], group_on: GroupOn
) -> None:
    """With a 900 ms session and no batching, the other member's epoch moves only after the
    silent one's session ran out: its departure is not early, nor a late batched target."""
    group = await group_on(broker_of(SETTINGS), "expiry")
    silent = await group.joined()
    other = await group.member()
    await other.heartbeat(0)
    await silent.heartbeat(full=True)  # its last heartbeat
    last = time.monotonic()
    epoch = other.epoch
    while other.epoch == epoch or len(other.partitions) < 4:
        assert time.monotonic() - last < 10.0
        await asyncio.sleep(0.05)
        await other.heartbeat(full=True)
    assert time.monotonic() - last >= 0.85  # 900 ms after the last heartbeat Kafka read
