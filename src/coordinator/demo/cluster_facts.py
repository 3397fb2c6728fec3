"""What the cluster demo (`coordinator.demo.cluster`) observes, and how it tells it.

`Member` follows one member process (`coordinator.demo.cluster_member`): its assignments and
every commit acknowledged to it, stamped with the monotonic time and the node that acknowledged
it. `Failover` is one group's failover after a fault, `StoryFacts` everything the story found;
the test of the demo checks these facts, the story prints them. `tell_history` prints who
coordinated each group when, from the ownership history PostgreSQL keeps
(`coordinator.cluster.history`); `fetch_offsets` asks a group's coordinator for its offsets.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from coordinator.cluster.history import OwnershipChange
from coordinator.demo.common import Say
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient

RETRIED = {"COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"}
"""What a client asks again about (the coordinator loads, moved, or is being elected)."""


@dataclass(frozen=True)
class Ack:
    at: float
    """time.monotonic() of the acknowledgement (one clock for every process on the machine)."""
    node: int | None
    generation: int
    offsets: dict[int, int]


@dataclass
class Member:
    name: str
    group: str
    client: str
    process: asyncio.subprocess.Process
    node_of: Callable[[object], int | None]
    """The node id of what the member reports as its coordinator (an id, or "host:port")."""
    partitions: list[int] = field(default_factory=list)
    generation: int = -1
    acks: list[Ack] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    async def follow(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = json.loads(raw)
            if line["event"] == "assigned":
                self.partitions, self.generation = line["partitions"], line["generation"]
            elif line["event"] == "acked":
                offsets = {int(p): int(o) for p, o in line["offsets"].items()}
                node = self.node_of(line["coordinator"])
                self.acks.append(Ack(line["at"], node, line["generation"], offsets))


def acks_of(members: Sequence[Member], group: str) -> list[Ack]:
    """The group's acknowledged commits, in time order."""
    return sorted((a for m in members if m.group == group for a in m.acks), key=lambda a: a.at)


def last_acked(
    members: Sequence[Member], group: str, before: float | None = None
) -> dict[int, int]:
    """Per partition, the greatest offset acknowledged (before `before`); offsets only grow."""
    found: dict[int, int] = {}
    for ack in acks_of(members, group):
        if before is not None and ack.at > before:
            break
        for p, offset in ack.offsets.items():
            found[p] = max(found.get(p, -1), offset)
    return found


@dataclass(frozen=True)
class Failover:
    group: str
    fault: str
    """"SIGKILL" or "SIGSTOP"."""
    node: int
    successor: int
    seconds: float
    """From the fault to the first commit the successor acknowledged."""
    epoch_before: int
    epoch_after: int
    generation_before: int
    generation_after: int
    acked_before: dict[int, int]
    """The last offsets acknowledged before the fault."""
    fetched: dict[int, int]
    """What the successor's first OffsetFetch that it answered returned."""

    @property
    def kept(self) -> bool:
        return all(self.fetched.get(p, -1) >= o for p, o in self.acked_before.items())


@dataclass
class StoryFacts:
    killed: int = -1
    frozen: int = -1
    failovers: list[Failover] = field(default_factory=list)
    probes: dict[str, str] = field(default_factory=dict)
    """Group -> the error code of the OffsetFetch the frozen node read once resumed."""
    acks_from_deposed: int = -1
    """Commits the frozen node acknowledged for a group it lost, until it held it again."""
    changes: list[OwnershipChange] = field(default_factory=list)
    """PostgreSQL's ownership history of the run, oldest first."""
    last_acked: dict[str, dict[int, int]] = field(default_factory=dict)
    committed: dict[str, dict[int, int]] = field(default_factory=dict)

    @property
    def lost(self) -> int:
        """Partitions whose committed offset at the end is below the last one acknowledged."""
        return sum(
            1
            for group, acked in self.last_acked.items()
            for p, offset in acked.items()
            if self.committed.get(group, {}).get(p, -1) < offset
        )


async def fetch_offsets(host: str, port: int, group: str) -> tuple[str, dict[int, int]]:
    """OffsetFetch (v8, no member: an admin's read) of every offset of `group` at a node: the
    error code's name and the offsets (empty unless NONE)."""
    client = await WireClient.connect(host, port)
    try:
        answer = await client.request(
            ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}]}
        )
    finally:
        await client.close()
    (found,) = answer.groups
    offsets = {p.partition_index: p.committed_offset for t in found.topics for p in t.partitions}
    return found.error_code.name.upper(), offsets


def tell_history(
    say: Say, changes: Sequence[OwnershipChange], groups: dict[str, int], origin_wall: float
) -> None:
    """Each group's `__consumer_offsets` partition, every change of its owner, with seconds
    since the story began; then how many changes of each kind the cluster recorded."""
    say("\nwho coordinated which group when (PostgreSQL's ownership history, partition@epoch):")
    for group, partition in groups.items():
        say(f"  {group} (__consumer_offsets partition {partition}):")
        for change in changes:
            if change.partition == partition:
                at = change.at.timestamp() - origin_wall
                say(f"    {at:6.1f} s  {partition}@{change.epoch}  {change.describe()}")
    taken = [c for c in changes if c.owner is not None]
    lapsed = sum(1 for c in taken if c.previous_owner is not None and c.previous_lapsed)
    handed = sum(1 for c in taken if c.previous_owner is not None and not c.previous_lapsed)
    first = len(taken) - lapsed - handed
    say(
        f"  all 50 partitions: {len(changes)} ownership changes recorded: {first} first takeovers,"
        f" {lapsed} after a lapsed lease, {handed} handed over, "
        f"{len(changes) - len(taken)} releases"
    )
