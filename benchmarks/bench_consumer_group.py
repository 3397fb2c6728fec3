"""KIP-848 consumer groups in the pure core: a member joins a stable group of N members; how
many heartbeats and how much core CPU until the group is Stable again, and how many members had
to stop fetching anything. Also the CPU to form the group of N (N joins 1 ms apart, then every
member heartbeats once a second until Stable), with a target assignment per epoch bump
(`group.consumer.assignment.interval.ms` 0, Kafka 4.0-4.2) against Kafka 4.3's batching (one
target a second, the default), measured in the same run.

Peer, measured in the same run on the same core: a classic group of N members that one member
joins (every member's JoinGroup and SyncGroup of the new generation; under the eager protocol
every member stops fetching everything meanwhile).

Run: `.venv/bin/python benchmarks/bench_consumer_group.py [--members N] [--partitions P]
[--repeat R]`. Figures are medians over `--repeat` runs (CPU time of this process); the machine
is shared and noisy.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from rebalance import (
    CoordinatorConfig,
    GroupCoordinatorCore,
    JoinGroup,
    SplitMix64,
    SyncGroup,
)
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.lifecycle import GroupState
from rebalance.topics import TopicInfo, TopicMetadata

CONFIG = CoordinatorConfig.from_properties({"group.initial.rebalance.delay.ms": "0"})
#: Kafka 4.0-4.2: a target assignment per epoch bump.
PER_BUMP = CONFIG.model_copy(update={"group_consumer_assignment_interval_ms": 0})
ROUND_MS = 1000  # every member heartbeats once per round
PROTOCOLS = (("range", b"\x00\x00\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff"),)
Owned = dict[str, tuple[tuple[str, tuple[int, ...]], ...]]


def loaded_core(partitions: int, config: CoordinatorConfig = CONFIG) -> GroupCoordinatorCore:
    core = GroupCoordinatorCore(config, SplitMix64(1))
    for p in range(CONFIG.offsets_topic_num_partitions):
        core.load(p, (), 0)
    core.topics_changed(TopicMetadata.of([TopicInfo("orders", "id-orders", partitions)]), 0)
    return core


def heartbeat(
    core: GroupCoordinatorCore, member: str, epoch: int, owned: Owned, now: int
) -> ConsumerGroupHeartbeatReply:
    if epoch == 0:
        command = ConsumerGroupHeartbeat(
            "g", member, 0, rebalance_timeout_ms=30000, subscribed_topic_names=("orders",),
            topic_partitions=(),
        )  # fmt: skip
    else:
        command = ConsumerGroupHeartbeat("g", member, epoch, topic_partitions=owned[member])
    (reply,) = core.handle(command, now, member).replies
    response = reply.response
    assert isinstance(response, ConsumerGroupHeartbeatReply)
    if response.assignment is not None:
        owned[member] = response.assignment
    return response


def stable(core: GroupCoordinatorCore) -> bool:
    group = core.group("g")
    return isinstance(group, ConsumerGroup) and group.kafka_state == "Stable"


def kip848_join(
    members: int, partitions: int, config: CoordinatorConfig = CONFIG
) -> tuple[float, int, int, float]:
    """(CPU ms until Stable, heartbeats, members that gave up partitions, forming CPU s)."""
    core = loaded_core(partitions, config)
    owned: Owned = {}
    epochs: dict[str, int] = {}
    now = 0
    setup = time.process_time()
    for i in range(members):  # joins 1 ms apart
        m = f"m{i:05d}"
        epochs[m] = heartbeat(core, m, 0, owned, now).member_epoch
        now += 1
    while not stable(core):
        now += ROUND_MS
        for m in list(epochs):
            epochs[m] = heartbeat(core, m, epochs[m], owned, now).member_epoch
    setup = time.process_time() - setup
    before = dict(owned)
    now += ROUND_MS
    start = time.process_time()
    epochs["new"] = heartbeat(core, "new", 0, owned, now).member_epoch
    beats = 1
    while not stable(core):  # every member heartbeats once per round, in turn
        now += ROUND_MS
        for m in list(epochs):
            epochs[m] = heartbeat(core, m, epochs[m], owned, now).member_epoch
            beats += 1
            if stable(core):
                break
    elapsed = (time.process_time() - start) * 1000
    losers = sum(1 for m, held in before.items() if owned[m] != held)
    return elapsed, beats, losers, setup


def classic_join(members: int) -> tuple[float, int]:
    """(CPU ms, requests) for one more member joining a stable classic group of `members`."""
    core = loaded_core(1)
    ids = []
    for token in range(members):
        core.handle(JoinGroup("g", "", "consumer", PROTOCOLS, 10_000, 10_000, version=3), 0, token)
    while (group := core.group("g")) is not None and group.state is GroupState.JOINING:
        core.on_timer(("join", "g", ""), 0)
    assert group is not None
    ids = list(group.members)
    leader = group.leader_id
    assert leader is not None
    assignment = tuple((m, b"x" * 24) for m in ids)
    core.handle(SyncGroup("g", group.generation, leader, assignment, version=3), 0, "s")
    for m in ids:
        if m != leader:
            core.handle(SyncGroup("g", group.generation, m, version=3), 0, "s")
    start = time.process_time()
    requests = 1
    core.handle(JoinGroup("g", "", "consumer", PROTOCOLS, 10_000, 10_000, version=3), 0, "new")
    for m in ids:  # each member learns of the rebalance and rejoins
        core.handle(JoinGroup("g", m, "consumer", PROTOCOLS, 10_000, 10_000, version=3), 0, m)
        requests += 1
    assert group.state is GroupState.AWAITING_SYNC, group.state
    everyone = list(group.members)
    leader = group.leader_id
    assert leader is not None
    assignment = tuple((m, b"x" * 24) for m in everyone)
    core.handle(SyncGroup("g", group.generation, leader, assignment, version=3), 0, "s")
    for m in everyone:
        if m != leader:
            core.handle(SyncGroup("g", group.generation, m, version=3), 0, "s")
    requests += len(everyone)
    synced = core.group("g")  # afresh: mypy would still hold `group.state` as AWAITING_SYNC
    assert synced is group and synced.state is GroupState.STABLE
    return (time.process_time() - start) * 1000, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, {args.members} members, {args.partitions} partitions"
    )
    runs = [kip848_join(args.members, args.partitions) for _ in range(args.repeat)]
    ms, beats, losers, setup = (statistics.median(r[i] for r in runs) for i in range(4))
    per_bump = statistics.median(
        kip848_join(args.members, args.partitions, PER_BUMP)[3] for _ in range(args.repeat)
    )
    classic = [classic_join(args.members) for _ in range(args.repeat)]
    classic_ms, requests = (statistics.median(r[i] for r in classic) for i in range(2))
    print(
        f"KIP-848, one member joins: {ms:.0f} ms core CPU, {beats:.0f} heartbeats until Stable, "
        f"{losers:.0f} of {args.members} members gave up partitions"
    )
    print(
        f"classic, one member joins: {classic_ms:.0f} ms core CPU, {requests:.0f} requests "
        f"(JoinGroup + SyncGroup), all {args.members} members stop fetching under eager"
    )
    print(f"ratio core CPU KIP-848 / classic: {ms / classic_ms:.2f}")
    print(
        f"forming the group of {args.members}: {setup:.2f} s core CPU with assignment batching "
        f"(one target a second), {per_bump:.2f} s with a target per epoch bump; "
        f"ratio per-bump / batched: {per_bump / setup:.1f}"
    )


if __name__ == "__main__":
    main()
