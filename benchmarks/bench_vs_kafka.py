"""Our server side by side with Apache Kafka 4.4.0's broker, every figure in one run.

Both servers run on this machine over loopback, each in its own process (tree): ours as
`rebalance serve`, Kafka as a single-node KRaft broker (`coordinator.testing.peers.kafka_broker`,
JVM options of Kafka's start script: 1 GiB heap, G1), with the same group settings
(`bench_vs_kafka_sides.BENCH_SETTINGS`). The same load generator (this process, the raw-frame
client of `bench_groups.py`) drives both, alternating sides every repetition; figures are
medians over repetitions; the machine's load (`uptime`) is printed with the table.

- start-up: launch to the first ApiVersions answered, and to serving groups (FindCoordinator and
  DescribeGroups answered); Kafka's includes its `kafka-storage format` step; idle RSS 2 s later;
- memory: RSS growth holding idle groups (1 member each, 1 committed offset) and members (10 per
  group), connections closed; Kafka's live heap growth too (after a full collection);
- classic heartbeats answered per second (many groups of 10; one in flight per connection, and
  pipelined) and the server's CPU per heartbeat;
- a classic rebalance of `--members` (1000): first JoinGroup sent -> every SyncGroup answered, and
  last JoinGroup -> last SyncGroup (the other joins parked first), wall and server CPU;
- KIP-848: N members join a consumer group at once (ConsumerGroupHeartbeat) -> every member at
  the target (`bench_vs_kafka_consumer`), then one more joins the stable group;
- durable offset commits per second (OffsetCommit v8 of 8 offsets, one in flight per
  connection). Ours answers after the SQLite transaction holding it is fsynced; Kafka after the
  offsets topic's append is acknowledged by the in-sync replicas (acks=-1; one broker: its own
  log, page cache, no fsync), also run with `flush.messages=1` set on `__consumer_offsets`
  (fsync per append) as the like-for-like peer.

Run: .venv/bin/python benchmarks/bench_vs_kafka.py [--repeat 3] [--seconds 3] [--members 1000]
     [--consumers 200 1000] [--starts 3] [--groups 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_groups import Conn, form_group, heartbeat_load, rebalance_round, subscription
from bench_vs_kafka_consumer import ConsumerGroup
from bench_vs_kafka_sides import KafkaSide, OursSide, Side
from bench_wire import machine
from coordinator.testing.peers.kafka_broker import KAFKA_VERSION
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.codec import build_request, decode_response, encode_request

COMMIT_TOPIC = ("bench-orders", 10)
TOPIC_EXISTS = 36
UNKNOWN_TOPIC = 3
OFFSETS_TOPIC = "__consumer_offsets"


@dataclass
class Figures:
    """Every repetition's value of each measure, by side: measure -> side -> values."""

    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def add(self, measure: str, side: str, value: float) -> None:
        self.values.setdefault(measure, {}).setdefault(side, []).append(value)

    def median(self, measure: str, side: str) -> float | None:
        found = self.values.get(measure, {}).get(side)
        return statistics.median(found) if found else None


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# ------------------------------------------------------------------------------ set-up
async def create_topic(side: Side, name: str, partitions: int) -> None:
    conn = await Conn.open(side.port)
    try:
        reply = await conn.call(ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout": 30_000,
        })  # fmt: skip
    finally:
        conn.close()
    code = reply.topics[0].error_code
    if code and code != TOPIC_EXISTS:
        raise RuntimeError(f"{side.name}: CreateTopics {name} answered {code!r}")


async def coordinator_knows(side: Side, topic: str, partitions: int) -> None:
    """A lone KIP-848 member is assigned the whole topic: Kafka's group coordinator learns a new
    topic from its metadata image, some time after CreateTopics answered."""
    probe = ConsumerGroup(side.port, f"probe-{topic}", topic, partitions)
    await probe.connect(1)
    probe.start()
    await probe.converged(timeout=30)
    await probe.stop()


async def set_offsets_flush(side: Side, every: int | None) -> None:
    """`flush.messages` of Kafka's offsets topic: fsync after every `every` appended records
    (None: back to the broker's default, never forced)."""
    conn = await Conn.open(side.port)
    try:
        config = {"name": "flush.messages", "config_operation": 0 if every else 1,
                  "value": str(every) if every else None}  # fmt: skip
        reply = await conn.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
            "resources": [{"resource_type": 2, "resource_name": OFFSETS_TOPIC,
                           "configs": [config]}],
            "validate_only": False,
        })  # fmt: skip
    finally:
        conn.close()
    if reply.responses[0].error_code:
        raise RuntimeError(f"IncrementalAlterConfigs: {reply.responses[0]}")


# ------------------------------------------------------------------------------ workloads
async def commit_rate(
    side: Side, run: str, writers: int, per_request: int, seconds: float
) -> tuple[float, float]:
    """(offsets committed per second, server CPU µs per OffsetCommit): `writers` connections,
    each its own simple group, one request in flight each; every answer checked (the first
    decoded, the rest the same bytes)."""
    topic, partitions = COMMIT_TOPIC
    conns = [await Conn.open(side.port) for _ in range(writers)]
    frames = [
        encode_request(build_request(ApiKey.OFFSET_COMMIT, 8, {
            "group_id": f"commit-{run}-{i}", "generation_id_or_member_epoch": -1,
            "member_id": "", "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p % partitions, "committed_offset": 42,
                 "committed_leader_epoch": -1, "committed_metadata": ""}
                for p in range(per_request)]}],
        }), 3, "b")
        for i in range(writers)
    ]  # fmt: skip
    firsts = []
    for conn, frame in zip(conns, frames, strict=True):
        firsts.append(await _first_commit(side, conn, frame))
    counts: list[int] = []
    cpu_before = side.process_cpu()
    started = time.perf_counter()
    stop_at = started + seconds

    async def loop(conn: Conn, frame: bytes, expected: bytes) -> None:
        done = 0
        while time.perf_counter() < stop_at:
            if await conn.raw(frame) != expected:
                raise RuntimeError(f"{side.name}: a commit's answer differs from the first")
            done += 1
        counts.append(done)

    await asyncio.gather(*(loop(*c) for c in zip(conns, frames, firsts, strict=True)))
    elapsed = time.perf_counter() - started
    cpu = side.process_cpu() - cpu_before
    for conn in conns:
        conn.close()
    return sum(counts) * per_request / elapsed, cpu * 1e6 / max(sum(counts), 1)


async def _first_commit(side: Side, conn: Conn, frame: bytes) -> bytes:
    """The first answer, without error on any partition (waits out a topic not yet known)."""
    deadline = time.monotonic() + 30
    while True:
        answer = await conn.raw(frame)
        response: Any = decode_response(answer, ApiKey.OFFSET_COMMIT, 8)[1]
        codes = {p.error_code for t in response.topics for p in t.partitions}
        if codes == {0}:
            return answer
        if codes != {UNKNOWN_TOPIC} or time.monotonic() > deadline:
            raise RuntimeError(f"{side.name}: a commit was refused: {codes}")
        await asyncio.sleep(0.1)


async def rebalance_rounds(
    side: Side, name: str, members: int, rounds: int, figures: Figures
) -> None:
    """A group of `members` formed, then rounds alternating all-at-once and parked rejoins."""
    conns = [await Conn.open(side.port) for _ in range(members)]
    try:
        try:
            ids, generation, leader = await form_group(conns, name)
        except RuntimeError as exc:
            raise RuntimeError(f"{side.name}: {exc}") from None
        for round_number in range(rounds * 2):
            parked = bool(round_number % 2)
            before = side.process_cpu()
            wall = await rebalance_round(
                conns, name, ids, generation, leader, parked=parked,
                metadata=subscription(round_number),
            )  # fmt: skip
            cpu = (side.process_cpu() - before) * 1000
            generation += 1
            kind = "last join" if parked else "first join"
            figures.add(f"rebalance {members}, {kind}: wall ms", side.name, wall)
            figures.add(f"rebalance {members}, {kind}: server CPU ms", side.name, cpu)
            await asyncio.sleep(0.2)  # (the parked round's CPU reading must not catch the last)
    finally:
        for conn in conns:
            conn.close()


async def consumer_convergence(
    side: Side, name: str, members: int, partitions: int, figures: Figures, settle_s: float = 1.2
) -> None:
    """`members` join at once -> converged; then one more joins -> converged again."""
    topic = f"{name}-topic"
    await create_topic(side, topic, partitions)
    await coordinator_knows(side, topic, partitions)
    group = ConsumerGroup(side.port, name, topic, partitions)
    try:
        await group.connect(members)
        cpu = side.process_cpu()
        started = group.start()
        converged = await group.converged()
        figures.add(f"KIP-848 {members} join: wall ms", side.name, (converged - started) * 1000)
        figures.add(
            f"KIP-848 {members} join: server CPU ms", side.name, (side.process_cpu() - cpu) * 1000
        )
        await _check_stable(side, group)
        await asyncio.sleep(settle_s)  # past the assignment interval of the last target
        await group.connect(1)
        cpu = side.process_cpu()
        started = group.start()
        converged = await group.converged()
        figures.add(
            f"KIP-848 {members} + 1 joins: wall ms", side.name, (converged - started) * 1000
        )
        figures.add(
            f"KIP-848 {members} + 1 joins: server CPU ms",
            side.name,
            (side.process_cpu() - cpu) * 1000,
        )
        await _check_stable(side, group)
    finally:
        await group.stop()


async def _check_stable(side: Side, group: ConsumerGroup) -> None:
    state, epoch, assignment_epoch, epochs = await group.describe()
    if state.lower() != "stable" or assignment_epoch != epoch or epochs != {epoch}:
        raise RuntimeError(
            f"{side.name}: converged by the members' answers, but described as {state}, group "
            f"epoch {epoch}, assignment epoch {assignment_epoch}, member epochs {epochs}"
        )


async def memory_growth(side: Side, sizes: Sizes, figures: Figures) -> None:
    """RSS (and live heap) growth: `groups` idle groups of one member with a committed offset
    each, then `groups` groups of `per_group` members; formed `batch` groups at a time over
    connections reused, closed before each reading (members stay until their session ends)."""
    groups, per_group = sizes.memory_groups, sizes.memory_per_group
    await create_topic(side, *COMMIT_TOPIC)
    base_rss, base_heap = await _settled(side, sizes)
    await _form_many(side, "idle", groups, 1, commit=True)
    idle_rss, idle_heap = await _settled(side, sizes)
    await _form_many(side, "members", groups, per_group, commit=False)
    full_rss, full_heap = await _settled(side, sizes)
    figures.add("bytes per idle group (RSS)", side.name, (idle_rss - base_rss) / groups)
    members = groups * per_group
    figures.add("bytes per member (RSS)", side.name, (full_rss - idle_rss) / members)
    if base_heap is not None and idle_heap is not None and full_heap is not None:
        figures.add("bytes per idle group (live heap)", side.name, (idle_heap - base_heap) / groups)
        figures.add("bytes per member (live heap)", side.name, (full_heap - idle_heap) / members)


async def _settled(side: Side, sizes: Sizes) -> tuple[int, int | None]:
    await asyncio.sleep(sizes.memory_settle_s)
    heap = await asyncio.to_thread(side.live_heap) if sizes.live_heap else None
    return side.rss(), heap


async def _form_many(side: Side, name: str, groups: int, per_group: int, commit: bool) -> None:
    batch = max(1, 1000 // per_group)
    conns = [await Conn.open(side.port) for _ in range(batch * per_group)]
    try:
        for first in range(0, groups, batch):
            names = [f"mem-{name}-{g}" for g in range(first, min(first + batch, groups))]
            formed = await asyncio.gather(*(
                form_group(conns[i * per_group : (i + 1) * per_group], group)
                for i, group in enumerate(names)
            ))  # fmt: skip
            if commit:
                await asyncio.gather(*(
                    _commit_once(conns[i * per_group], names[i], generation, ids[0])
                    for i, (ids, generation, _) in enumerate(formed)
                ))  # fmt: skip
    finally:
        for conn in conns:
            conn.close()


async def _commit_once(conn: Conn, group: str, generation: int, member: str) -> None:
    reply = await conn.call(ApiKey.OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": None,
        "topics": [{"name": COMMIT_TOPIC[0], "partitions": [
            {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}],
    })  # fmt: skip
    if any(p.error_code for t in reply.topics for p in t.partitions):
        raise RuntimeError(f"commit of {group} refused: {reply}")


# ------------------------------------------------------------------------------ the run
@dataclass
class Sizes:
    repeat: int = 3
    seconds: float = 3.0
    members: int = 1000
    rounds: int = 3
    consumers: Sequence[int] = (200, 1000)
    heartbeat_shapes: Sequence[tuple[int, int]] = ((200, 1), (50, 8))
    heartbeat_group_size: int = 10
    commit_writers: int = 200
    commit_offsets: int = 8
    memory_groups: int = 1000
    memory_per_group: int = 10
    memory_settle_s: float = 1.5
    """Seconds before each memory reading (ours trims its heap within a second of a burst)."""
    live_heap: bool = True
    """Read the JVM's live heap too (`jcmd`: a full collection, seconds each)."""
    settle_s: float = 1.2
    """Seconds a converged consumer group is left before one more joins (more than
    `group.consumer.assignment.interval.ms`: the join then computes its target at once)."""


def start_both(figures: Figures, kafka_options: Sequence[str] | None = None) -> list[Side]:
    sides: list[Side] = []
    try:
        sides.append(OursSide())
        sides.append(KafkaSide() if kafka_options is None else KafkaSide(jvm_options=kafka_options))
    except BaseException:
        for side in sides:
            side.stop()
        raise
    for side in sides:
        figures.add("start: launch -> ApiVersions answered s", side.name, side.api_versions_s)
        figures.add("start: launch -> serving groups s", side.name, side.serving_s)
    time.sleep(2.0)
    for side in sides:
        figures.add("idle RSS MiB", side.name, side.rss() / 2**20)
    return sides


def run_workloads(sides: Sequence[Side], sizes: Sizes, figures: Figures) -> None:
    """Every throughput and latency workload, alternating sides each repetition."""
    for side in sides:
        asyncio.run(create_topic(side, *COMMIT_TOPIC))
    for run in range(sizes.repeat):
        for side in sides if run % 2 == 0 else list(reversed(sides)):
            for connections, depth in sizes.heartbeat_shapes:
                label = f"{connections} connections x {depth}"
                size = sizes.heartbeat_group_size
                result = asyncio.run(heartbeat_load(
                    side, connections // size, size, sizes.seconds, depth, prefix=f"hb{run}-{depth}"
                ))  # fmt: skip
                figures.add(f"heartbeats/s, {label}", side.name, result.per_second)
                figures.add(f"server CPU us per heartbeat, {label}", side.name, result.cpu_us)
            rate, cpu = asyncio.run(commit_rate(
                side, f"{run}", sizes.commit_writers, sizes.commit_offsets, sizes.seconds
            ))  # fmt: skip
            figures.add("durable offsets/s", side.name, rate)
            figures.add("server CPU us per OffsetCommit", side.name, cpu)
            if isinstance(side, KafkaSide):
                asyncio.run(set_offsets_flush(side, 1))
                try:
                    rate, cpu = asyncio.run(commit_rate(
                        side, f"{run}f", sizes.commit_writers, sizes.commit_offsets, sizes.seconds
                    ))  # fmt: skip
                finally:
                    asyncio.run(set_offsets_flush(side, None))
                figures.add("durable offsets/s", "kafka fsync", rate)
                figures.add("server CPU us per OffsetCommit", "kafka fsync", cpu)
            asyncio.run(rebalance_rounds(side, f"round{run}", sizes.members, sizes.rounds, figures))
            for members in sizes.consumers:
                asyncio.run(consumer_convergence(
                    side, f"kip848-{run}-{members}", members, 2 * members, figures, sizes.settle_s
                ))  # fmt: skip


def run(sizes: Sizes, starts: int) -> Figures:
    figures = Figures()
    loads = [uptime()]
    for _ in range(max(starts - 1, 0)):
        for side in start_both(figures):
            side.stop()
    sides = start_both(figures)
    try:
        for side in sides:
            asyncio.run(memory_growth(side, sizes, figures))
    finally:
        for side in sides:
            side.stop()
    loads.append(uptime())
    sides = start_both(figures)
    try:
        run_workloads(sides, sizes, figures)
    finally:
        for side in sides:
            side.stop()
    loads.append(uptime())
    print(f"# ours vs Apache Kafka {KAFKA_VERSION} — {machine()}")
    print("# load: " + " | ".join(loads))
    print(table(figures))
    return figures


#: What each row means, and whether more is better (the ratio is ours / Kafka's either way).
MEANINGS: dict[str, tuple[str, bool]] = {
    "start: launch -> ApiVersions answered s": (
        "launch to the first ApiVersions answer (Kafka: incl. its format step)", False),
    "start: launch -> serving groups s": ("to FindCoordinator + DescribeGroups answered", False),
    "idle RSS MiB": ("all its processes, 2 s after serving", False),
    "bytes per idle group (RSS)": ("1 member + 1 committed offset, connections closed", False),
    "bytes per member (RSS)": ("members of groups of 10, connections closed", False),
    "bytes per idle group (live heap)": ("JVM live objects after a full GC", False),
    "bytes per member (live heap)": ("JVM live objects after a full GC", False),
    "durable offsets/s": ("8 offsets per OffsetCommit, 200 connections x 1; see durability", True),
    "server CPU us per OffsetCommit": ("its processes' CPU / commits", False),
}  # fmt: skip


def _meaning(measure: str) -> tuple[str, bool]:
    if measure in MEANINGS:
        return MEANINGS[measure]
    if measure.startswith("heartbeats/s"):
        return ("classic Heartbeat answered, groups of 10 members", True)
    if measure.startswith("server CPU us per heartbeat"):
        return ("its processes' CPU / heartbeats", False)
    if measure.startswith("rebalance") and "first join" in measure:
        return ("first JoinGroup sent -> every SyncGroup answered", False)
    if measure.startswith("rebalance"):
        return ("last JoinGroup sent -> last SyncGroup answered (others parked)", False)
    if "+ 1 joins" in measure:
        return ("one member joins the stable group -> all at the new target", False)
    if measure.startswith("KIP-848"):
        return ("all join at once (2 partitions each) -> every member at the target", False)
    return ("", False)


def table(figures: Figures) -> str:
    rows = ["| measure | ours | Kafka | ours / Kafka | what it means |", "|---|---:|---:|---:|---|"]
    for measure, by_side in figures.values.items():
        ours, kafka = figures.median(measure, "ours"), figures.median(measure, "kafka")
        meaning, more_is_better = _meaning(measure)
        rows.append(_row(measure, ours, kafka, meaning, more_is_better))
        if "kafka fsync" in by_side:
            fsync = figures.median(measure, "kafka fsync")
            meaning = "Kafka fsyncing each offsets-topic append"
            rows.append(
                _row(f"{measure}, Kafka flush.messages=1", ours, fsync, meaning, more_is_better)
            )
    return "\n".join(rows)


def _row(
    measure: str, ours: float | None, kafka: float | None, meaning: str, more_is_better: bool
) -> str:
    def shown(value: float | None) -> str:
        if value is None:
            return "—"
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"

    ratio = f"{ours / kafka:.2f}x" if ours is not None and kafka else "—"
    better = "higher is better" if more_is_better else "lower is better"
    return f"| {measure} | {shown(ours)} | {shown(kafka)} | {ratio} | {meaning} ({better}) |"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--members", type=int, default=1000, help="classic rebalance size")
    parser.add_argument("--rounds", type=int, default=3, help="rebalance rounds of each kind")
    parser.add_argument("--consumers", type=int, nargs="*", default=[200, 1000])
    parser.add_argument("--starts", type=int, default=3, help="fresh starts of each server")
    parser.add_argument("--groups", type=int, default=1000, help="groups for the memory rows")
    args = parser.parse_args(argv)
    sizes = Sizes(
        repeat=args.repeat, seconds=args.seconds, members=args.members, rounds=args.rounds,
        consumers=args.consumers, memory_groups=args.groups,
    )  # fmt: skip
    run(sizes, args.starts)


if __name__ == "__main__":
    main()
