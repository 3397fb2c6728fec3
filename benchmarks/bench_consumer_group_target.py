"""The server assignor end to end in the core: a KIP-848 group of 10,000 members over 100 topics x
10,000 partitions (1M), `uniform` and `range`.

Measured, per assignor, as the core call that causes the new target, from the request to the
records written (inputs copied from the group, the assignor, the result turned back into topic-id
assignments, one record per changed member, the target event, the reply):

* fresh: the 1M partitions appear (`topics_changed`) for 10,000 members who joined before the
  topics existed, so nobody owns anything yet;
* one member leaves (a heartbeat with epoch -1) and another heartbeats (which computes the
  target: a departure only bumps the group epoch, as in Kafka);
* one member joins (a heartbeat with epoch 0).

The process's garbage collector is set up as `rebalance serve` sets it
(`coordinator.node.collector.tune_for_serving`) unless `--collector default`: a target of a million
partitions allocates millions of small objects, and CPython's default thresholds make it pay
for full collections of everything alive on the way.

Targets are computed inline (`group.consumer.assignor.offload.enable=false`; the offloaded path
runs the same computation in a thread) and the clock moves past the assignment interval before
each call, so every call computes its target.

Peer, measured in the same run on the same inputs: the bare assignor (`assignors.assign` with
plain subscriptions, topic sizes and owned partitions already built), i.e. what the core adds
around it. Java's figures for the same shape, as recorded in RESULTS.md (bench_assignors D):
uniform fresh 44 ms, one member joins 35 ms; no Java figure is recorded for server-side range
at this shape (63 ms at 1,000 topics x 1,000 partitions).

The event: each "fresh" call's `target_assignment` event (every member's whole target by topic
name: 10,000 members x 100 topics, a million (topic, partitions) entries) is then written
through the server's event log (`coordinator.groups.event_log.log.EventLog`, its writer process in a
temporary directory), measured apart from the core call: what the loop pays to hand it over
(`emit`: the batch, `marshal`, the queue), the time until the writer reports it written, the
writer process's CPU time, and the line's size. Peer: the core call that made the event.
`--no-event-log` skips it.

Run: `.venv/bin/python benchmarks/bench_consumer_group_target.py [--members N] [--topics T]
[--partitions P] [--repeat R] [--collector serving|default] [--no-event-log]`. Figures are
medians: of R groups for "fresh", of R calls each for "leaves" and "joins" (alternated on one
group); wall time with CPU time of the process.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import assignors
from coordinator.groups.event_log.log import EventLog
from coordinator.node.collector import tune_for_serving
from rebalance import CoordinatorConfig, GroupCoordinatorCore, SplitMix64
from rebalance.consumer_group.commands import ConsumerGroupHeartbeat
from rebalance.consumer_group.group import ConsumerGroup
from rebalance.consumer_group.replies import ConsumerGroupHeartbeatReply
from rebalance.effects import Result
from rebalance.event_schema import EventType
from rebalance.events import Event
from rebalance.topics import TopicInfo, TopicMetadata

INTERVAL_MS = 1000  # group.consumer.assignment.interval.ms (Kafka 4.3's default)
GOAL_MS = 2000
JAVA_MS = {("uniform", "fresh"): 44.0, ("uniform", "joins"): 35.0}


def config(assignor: str) -> CoordinatorConfig:
    return CoordinatorConfig.from_properties(
        {
            "group.consumer.assignors": assignor,
            "group.consumer.assignor.offload.enable": "false",
            "group.consumer.assignment.interval.ms": str(INTERVAL_MS),
            "group.consumer.max.size": "100000",
            "group.consumer.session.timeout.ms": "600000",
            "group.consumer.max.session.timeout.ms": "600000",
        }
    )


def metadata(topics: int, partitions: int) -> TopicMetadata:
    return TopicMetadata.of(
        TopicInfo(f"t{n:03d}", f"id-t{n:03d}", partitions) for n in range(topics)
    )


def join(member: str, topics: tuple[str, ...]) -> ConsumerGroupHeartbeat:
    return ConsumerGroupHeartbeat(
        "g", member, 0, rebalance_timeout_ms=60000, subscribed_topic_names=topics,
        topic_partitions=(),
    )  # fmt: skip


class Bench:
    """One core holding one group; `now` advances past the assignment interval per call."""

    def __init__(self, assignor: str, members: int, topics: int, partitions: int) -> None:
        self.assignor = assignor
        self.core = GroupCoordinatorCore(config(assignor), SplitMix64(1))
        for p in range(self.core.config.offsets_topic_num_partitions):
            self.core.load(p, (), 0)
        self.metadata = metadata(topics, partitions)
        self.names = tuple(sorted(self.metadata.topics))
        self.now = 0
        #: The `target_assignment` events of the last call.
        self.events: list[Event] = []
        for i in range(members):  # all at once, before the topics exist: one (empty) target
            m = f"m{i:05d}"
            self.core.handle(join(m, self.names), self.now, m)
        self.now += INTERVAL_MS

    @property
    def group(self) -> ConsumerGroup:
        group = self.core.group("g")
        assert isinstance(group, ConsumerGroup)
        return group

    def call(self, run: Callable[[], Any]) -> tuple[float, float]:
        """(wall ms, CPU ms) of one core call; the clock then moves past the interval."""
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        self.events = [e for e in result.events if e.type is EventType.TARGET_ASSIGNMENT]
        for reply in result.replies:
            response = reply.response
            if isinstance(response, ConsumerGroupHeartbeatReply):
                assert response.error.name == "NONE", response
        self.now += INTERVAL_MS
        return wall * 1000, cpu * 1000

    def peer(self, leaving: str | None, joining: str | None) -> float:
        """Wall ms of the bare assignor on the inputs the next call will see."""
        members = [m for m in self.group.members if m != leaving]
        if joining is not None:
            members.append(joining)
        by_id = self.metadata.by_id()
        owned = {
            m: [
                (by_id[t].name, p)
                for t, ps in sorted(self.group.target.get(m, {}).items())
                for p in sorted(ps)
            ]
            for m in members
        }
        subscriptions = {m: list(self.names) for m in members}
        sizes = {t.name: t.partitions for t in self.metadata.topics.values()}
        start = time.perf_counter()
        assignors.assign(self.assignor, subscriptions, sizes, owned=owned)
        return (time.perf_counter() - start) * 1000

    def fresh(self) -> tuple[float, float, float]:
        self.peer(None, None)  # builds the shared (topic, partition) tuples for both
        peer = self.peer(None, None)
        wall, cpu = self.call(lambda: self.core.topics_changed(self.metadata, self.now))
        assert self.group.target_epoch == self.group.group_epoch
        assert sum(len(ps) for t in self.group.target.values() for ps in t.values()) == sum(
            t.partitions for t in self.metadata.topics.values()
        )
        return wall, cpu, peer

    def leave(self, member: str) -> tuple[float, float, float]:
        """A member leaves and another heartbeats: the departure only bumps the group epoch (as
        Kafka's), the heartbeat computes the target; both are timed."""
        peer = self.peer(member, None)
        command = ConsumerGroupHeartbeat("g", member, -1)
        other = next(m for m in self.group.members if m != member)
        beat = ConsumerGroupHeartbeat("g", other, self.group.members[other].member_epoch)

        def departure() -> Result:
            left = self.core.handle(command, self.now, member)
            (answer,) = left.replies
            assert isinstance(answer.response, ConsumerGroupHeartbeatReply)
            assert answer.response.error.name == "NONE"
            return self.core.handle(beat, self.now, other)

        wall, cpu = self.call(departure)
        assert member not in self.group.members
        assert self.group.target_epoch == self.group.group_epoch
        return wall, cpu, peer

    def join(self, member: str) -> tuple[float, float, float]:
        peer = self.peer(None, member)
        command = join(member, self.names)
        wall, cpu = self.call(lambda: self.core.handle(command, self.now, member))
        assert self.group.target_epoch == self.group.group_epoch
        assert self.group.target.get(member)
        return wall, cpu, peer


def median(rows: list[tuple[float, float, float]], index: int) -> float:
    return statistics.median(r[index] for r in rows)


def process_cpu_ms(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux `/proc/PID/stat`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def write_event(
    log: EventLog, directory: Path, events: list[Event]
) -> tuple[float, float, float, float]:
    """(emit ms, ms until written, writer CPU ms, MB appended) for `events` through `log`."""
    pid = log.writer_pid
    assert pid is not None and len(events) == 1
    before_bytes = sum(f.stat().st_size for f in directory.glob("*.jsonl"))
    before_cpu = process_cpu_ms(pid)
    wanted = log.accepted + len(events)
    start = time.perf_counter()
    log.emit(events, 0)  # off a loop: handed over at once, as one loop iteration's would be
    emitted = time.perf_counter()
    while log.written < wanted:
        time.sleep(0.002)
    written = time.perf_counter()
    cpu = process_cpu_ms(pid) - before_cpu
    size = sum(f.stat().st_size for f in directory.glob("*.jsonl")) - before_bytes
    return (emitted - start) * 1000, (written - start) * 1000, cpu, size / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=10_000, help="per topic")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--assignor", action="append", choices=["uniform", "range"])
    parser.add_argument("--collector", choices=["serving", "default"], default="serving")
    parser.add_argument("--no-event-log", dest="event_log", action="store_false")
    args = parser.parse_args()
    if args.collector == "serving":
        tune_for_serving()
    total = args.topics * args.partitions
    print(
        f"{args.members:,} members x {args.topics} topics x {args.partitions:,} partitions "
        f"({total:,}); Python {platform.python_version()}; medians of {args.repeat}; "
        f"collector: {args.collector}"
    )
    print(
        f"{'assignor':<8} {'case':<6} {'core ms':>9} {'(CPU)':>8} {'assignor ms':>12} "
        f"{'core/assignor':>14} {'Java ms':>8} {'goal <= 2 s':>12} {'form s':>7}"
    )
    written: dict[str, list[tuple[float, float, float, float]]] = {}
    cores: dict[str, list[float]] = {}
    for assignor in args.assignor or ["uniform", "range"]:
        rows: dict[str, list[tuple[float, float, float]]] = {"fresh": [], "leaves": [], "joins": []}
        forming: list[float] = []
        bench: Bench | None = None
        for _ in range(args.repeat):
            bench = None  # the previous group goes before the next is formed
            start = time.perf_counter()
            bench = Bench(assignor, args.members, args.topics, args.partitions)
            forming.append(time.perf_counter() - start)
            rows["fresh"].append(bench.fresh())
            if args.event_log:
                with tempfile.TemporaryDirectory() as tmp:
                    log = EventLog(Path(tmp), 1)
                    try:
                        written.setdefault(assignor, []).append(
                            write_event(log, Path(tmp), bench.events)
                        )
                    finally:
                        log.close()
                cores.setdefault(assignor, []).append(rows["fresh"][-1][0])
        assert bench is not None
        for n in range(args.repeat):
            rows["leaves"].append(bench.leave(f"m{n:05d}"))
            rows["joins"].append(bench.join(f"new{n:05d}"))
        for case, measured in rows.items():
            wall, cpu, peer = (median(measured, i) for i in range(3))
            java = JAVA_MS.get((assignor, case))
            print(
                f"{assignor:<8} {case:<6} {wall:>9,.0f} {cpu:>8,.0f} {peer:>12,.0f} "
                f"{wall / peer:>13.1f}x {f'{java:.0f}' if java else 'none':>8} "
                f"{'met' if wall <= GOAL_MS else 'not met':>12} "
                f"{statistics.median(forming):>7.1f}"
            )
    if written:
        print(
            "\nThe fresh target's `target_assignment` event through the event log "
            f"(medians of {args.repeat}):"
        )
        print(
            f"{'assignor':<8} {'emit ms':>8} {'written ms':>11} {'writer CPU ms':>14} "
            f"{'line MB':>8} {'core ms':>8} {'written/core':>13}"
        )
    for assignor, logged in written.items():
        emit, done, cpu, size = (statistics.median(m[i] for m in logged) for i in range(4))
        core = statistics.median(cores[assignor])
        print(
            f"{assignor:<8} {emit:>8,.0f} {done:>11,.0f} {cpu:>14,.0f} {size:>8.1f} "
            f"{core:>8,.0f} {done / core:>12.1f}x"
        )


if __name__ == "__main__":
    main()
