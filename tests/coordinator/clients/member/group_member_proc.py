"""One bare `GroupMember` in its own process, telling what it does as JSON lines on stdout.

    {"t": monotonic s, "event": "assigned"|"revoking"|"revoked"|"lost", "partitions": [[t, p]..],
     "owned": [[t, p], ...]}                     (owned(): at the callback's start; "revoked":
                                                  after its drain and commit, still inside it)
    {"t": ..., "event": "committed"|"commit_failed", "offsets": [[t, p, o], ...],
     "error": class name, "retriable": bool, "code": Kafka error name or null}
    {"t": ..., "event": "closed", "owned": [...]}

`--assign-delay-ms`: as the group's leader, the member takes this long to assign (its event loop
blocked, as by a slow assignor), so that the others wait between JoinGroup and SyncGroup.
`--drain-ms`: each `on_revoked` sleeps this long (a service draining what it gives back), then
commits offset 100 + partition for each revoked partition. `--commit-every-ms`: a loop commits
offset 1000 + partition for everything `owned()` lists, as a service does, through rebalances.
SIGTERM leaves the group cleanly (the `async with` ends); a test's SIGKILL leaves it to the
session timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.clients.member import CommitError, GroupMember
from rebalance.classic.replies import JoinGroupMember
from rebalance.member import ConsumerEmbedded


@dataclass(frozen=True)
class SlowLeader(ConsumerEmbedded):
    delay_s: float = 0.0

    def assign(
        self, protocol_name: str, members: Sequence[JoinGroupMember], counts: Mapping[str, int]
    ) -> dict[str, bytes]:
        time.sleep(self.delay_s)  # blocks the loop on purpose: a slow assignor
        return super().assign(protocol_name, members, counts)


def pairs(partitions: Iterable[tuple[str, int]]) -> list[list[Any]]:
    return sorted([t, p] for t, p in partitions)


def say(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"t": time.monotonic(), "event": event, **fields}) + "\n")
    sys.stdout.flush()


async def commit(member: GroupMember, offsets: dict[tuple[str, int], int]) -> None:
    listed = sorted([t, p, o] for (t, p), o in offsets.items())
    try:
        await member.commit(offsets)
    except CommitError as exc:
        code = None if exc.code is None else exc.code.name
        say("commit_failed", offsets=listed, error=type(exc).__name__, retriable=exc.retriable,
            code=code, message=str(exc))  # fmt: skip
    else:
        say("committed", offsets=listed)


async def run(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    member: GroupMember

    def assigned(partitions: frozenset[tuple[str, int]]) -> None:  # a plain function
        say("assigned", partitions=pairs(partitions), owned=pairs(member.owned()))

    async def revoked(partitions: frozenset[tuple[str, int]]) -> None:
        say("revoking", partitions=pairs(partitions), owned=pairs(member.owned()))
        await asyncio.sleep(args.drain_ms / 1000)
        await commit(member, {tp: 100 + tp[1] for tp in partitions})
        say("revoked", partitions=pairs(partitions), owned=pairs(member.owned()))

    async def lost(partitions: frozenset[tuple[str, int]]) -> None:
        say("lost", partitions=pairs(partitions), owned=pairs(member.owned()))

    options: dict[str, Any] = {}
    if args.protocol == "classic":
        options["heartbeat_interval_ms"] = args.heartbeat_ms
    if args.assign_delay_ms:
        options["protocol"] = SlowLeader((args.topic,), delay_s=args.assign_delay_ms / 1000)
    if args.session_ms:
        options["session_timeout_ms"] = args.session_ms
    member = GroupMember(
        args.bootstrap, args.group, [args.topic], group_protocol=args.protocol,
        rebalance_timeout_ms=args.rebalance_ms, client_id=args.name,
        on_assigned=assigned, on_revoked=revoked, on_lost=lost, **options,
    )  # fmt: skip
    async with member:
        while not stop.is_set():
            if args.commit_every_ms and member.owned():
                await commit(member, {tp: 1000 + tp[1] for tp in member.owned()})
            pause = (args.commit_every_ms or 100) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), pause)
    say("closed", owned=pairs(member.owned()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    parser.add_argument("--session-ms", type=int, default=0, help="0: the member's default")
    parser.add_argument("--rebalance-ms", type=int, default=10_000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--drain-ms", type=int, default=0)
    parser.add_argument("--assign-delay-ms", type=int, default=0)
    parser.add_argument("--commit-every-ms", type=int, default=0)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
