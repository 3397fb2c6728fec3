"""What cluster mode's send-time check costs a reply: `GroupRuntime.heartbeat_now` (the hot path:
a stable group's heartbeat answered synchronously) and a classic round's delivery (JoinGroup +
SyncGroup of N members, every reply handed over by `_deliver`), in one process over an in-memory
store.

Each figure is measured three ways in the same run, interleaved:
- `single`: the default `SingleNodeOwnership` (no gate: what every single node pays);
- `gated`: an ownership whose `may_answer` is always true (the check made for every reply, as a
  cluster node makes it; the real one reads a deadline and a dict);
- with `--base DIR`, the same `single` figures from another checkout's `src` (the tree before
  the gate), with that tree first on `sys.path`.

Every measurement runs in a child process of its own.

Run: .venv/bin/python benchmarks/bench_reply_gate.py [--heartbeats 200000] [--members 1000]
[--runs 5] [--base /tmp/base-checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from coordinator.groups.runtime import GroupRuntime
from coordinator.groups.store.memory import MemoryStore
from coordinator.node.ownership import NodeAddress, SingleNodeOwnership
from rebalance import (
    CoordinatorConfig,
    ErrorCode,
    GroupCoordinatorCore,
    Heartbeat,
    JoinGroup,
    SplitMix64,
    SyncGroup,
)
from rebalance.classic.replies import JoinGroupReply

CONFIG = CoordinatorConfig.from_properties({"group.initial.rebalance.delay.ms": "100"})
NODE = NodeAddress(1, "127.0.0.1", 9092)


class AlwaysOwner:
    """A cluster node's ownership that never loses a partition: the check, never a refusal."""

    def owner_of(self, partition: int) -> NodeAddress | None:
        return NODE

    def live_nodes(self) -> Sequence[NodeAddress]:
        return (NODE,)

    def may_answer(self, partition: int) -> bool:
        return True


def new_runtime(gated: bool) -> GroupRuntime:
    core = GroupCoordinatorCore(CONFIG, SplitMix64(1))
    if "ownership" not in inspect.signature(GroupRuntime).parameters:  # the tree before it
        return GroupRuntime(core, MemoryStore())
    ownership = AlwaysOwner() if gated else SingleNodeOwnership(NODE)
    return GroupRuntime(core, MemoryStore(), ownership=ownership)


def join(group: str, member: str = "") -> JoinGroup:
    return JoinGroup(group, member, "consumer", (("range", b"m"),), 30_000, 30_000, version=5)


async def round_ms(runtime: GroupRuntime, group: str, members: int) -> float:
    """One round of `members` (all joined, then all synced): the process's CPU time from the
    first join with a member id (the initial delay's wait costs none)."""
    first = await asyncio.gather(*(runtime.submit(join(group)) for _ in range(members)))
    ids = [r.member_id for r in first if isinstance(r, JoinGroupReply)]
    start = time.process_time()
    joined = await asyncio.gather(*(runtime.submit(join(group, m)) for m in ids))
    assert all(isinstance(r, JoinGroupReply) and r.error is ErrorCode.NONE for r in joined)
    generation = joined[0].generation_id
    leader = joined[0].leader
    syncs = [
        SyncGroup(
            group,
            generation,
            m,
            tuple((x, b"a") for x in ids) if m == leader else (),
            protocol_type="consumer",
            protocol_name="range",
        )
        for m in ids
    ]
    synced = await asyncio.gather(*(runtime.submit(s) for s in syncs))
    assert all(r.error is ErrorCode.NONE for r in synced), {r.error for r in synced}
    return (time.process_time() - start) * 1000


async def measure(gated: bool, heartbeats: int, members: int) -> dict[str, float]:
    runtime = new_runtime(gated)
    await runtime.start()
    ms = await round_ms(runtime, "round", members)
    joined = await runtime.submit(join("hb"))
    assert isinstance(joined, JoinGroupReply)
    again = await runtime.submit(join("hb", joined.member_id))
    assert isinstance(again, JoinGroupReply)
    await runtime.submit(
        SyncGroup("hb", again.generation_id, again.member_id, ((again.member_id, b"a"),), version=3)
    )
    beat = Heartbeat("hb", again.generation_id, again.member_id)
    answer = runtime.heartbeat_now
    gc.collect()
    start = time.process_time()  # CPU time: steadier than the clock on a shared machine
    for _ in range(heartbeats):
        answer(beat)
    ns = (time.process_time() - start) / heartbeats * 1e9
    reply = answer(beat)
    assert reply is not None and reply.error is ErrorCode.NONE
    await runtime.close()
    return {"heartbeat_ns": ns, "round_ms": ms}


def child(gated: bool, heartbeats: int, members: int) -> dict[str, float]:
    return asyncio.run(measure(gated, heartbeats, members))


def in_child(kind: str, base: Path | None, heartbeats: int, members: int) -> dict[str, float]:
    """One measurement in a fresh interpreter (each kind alike: no garbage of another's run),
    for `base` with that checkout's `src` first on the path."""
    env = dict(os.environ)
    if base is not None:
        env["PYTHONPATH"] = str(base / "src")
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--heartbeats", str(heartbeats),
         "--members", str(members)],
        env=env, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    figures: dict[str, float] = json.loads(out.splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--heartbeats", type=int, default=200_000)
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", type=Path, default=None, help="checkout before the change")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child == "gated", args.heartbeats, args.members)))
        return
    kinds = ["single", "gated"] + (["base"] if args.base else [])
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
    for _ in range(args.runs):
        for kind in kinds:
            base = args.base if kind == "base" else None
            runs[kind].append(in_child(kind, base, args.heartbeats, args.members))
    print(f"# reply gate, {args.runs} runs, medians; load {os.getloadavg()[0]:.2f}")
    single = {k: statistics.median(r[k] for r in runs["single"]) for k in runs["single"][0]}
    for kind in kinds:
        med = {k: statistics.median(r[k] for r in runs[kind]) for k in runs[kind][0]}
        ratio = ", ".join(f"{k} x{med[k] / single[k]:.3f} of single" for k in med)
        print(
            f"{kind:>6}: heartbeat_now {med['heartbeat_ns']:.0f} ns CPU, "
            f"{args.members}-member round {med['round_ms']:.1f} ms CPU ({ratio})"
        )


if __name__ == "__main__":
    main()
