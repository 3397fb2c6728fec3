"""Generated event logs meant to be awkward for the analytics job: events out of order and sharing
milliseconds, endings followed by stray events, rebalances superseded or never finished, logs that
start mid-life, duplicate owners, non-consumer groups and cooperative protocols; schema v2 groups
whose members say what they owned when they joined (eager, cooperative, some unable to say)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

GROUPS = 400
SESSION_TIMEOUT_MS = 300
TYPES = [
    ("rebalance_started", 6), ("join_completed", 5), ("sync_completed", 5), ("group_stable", 5),
    ("group_empty", 1), ("offset_commit", 3), ("commit_fenced", 1), ("member_expired", 1),
    ("member_joined", 1),
]  # fmt: skip


def _assignments(rng: random.Random, members: list[str]) -> dict[str, Any]:
    if rng.random() < 0.1:  # a non-consumer protocol: opaque bytes, no entries
        return dict.fromkeys(members)
    topics = ["a", "b"] if rng.random() < 0.5 else ["a"]
    result: dict[str, Any] = {m: [] for m in members}
    for topic in topics:
        for p in range(rng.randint(0, 5)):
            owners = rng.sample(members, 2) if rng.random() < 0.05 and len(members) > 1 else None
            for owner in owners or [rng.choice(members)]:
                entries = result[owner]
                entry = next((e for e in entries if e[0] == topic), None)
                if entry is None:
                    entry = [topic, []]
                    entries.append(entry)
                entry[1].append(p)
    return result


def _owned(said: random.Random, mode: str, members: list[str], last: dict[str, Any]) -> Any:
    """`join_completed.owned` (schema v2): eager members say they own nothing, cooperative ones
    part of what they were last given; in "mixed" some cannot say."""
    owned: dict[str, Any] = {}
    for member in members:
        held = [[t, [p for p in ps if said.random() < 0.7]] for t, ps in last.get(member) or []]
        owned[member] = [] if mode == "eager" else [e for e in held if e[1]]
        if mode == "mixed" and said.random() < 0.3:
            owned[member] = None
    return owned


def _group_events(rng: random.Random, group: str) -> list[dict[str, Any]]:
    names, weights = zip(*TYPES, strict=True)
    protocol = rng.choice(["range", "cooperative-sticky", "roundrobin"])
    pool = [f"{group}-m{i}" for i in range(rng.randint(1, 4))]
    ts = rng.randrange(1_000, 100_000)
    generation = rng.choice([0, 0, 3])  # 3: a log that starts mid-life
    events: list[dict[str, Any]] = []
    # Its own generator: the draws of `rng` stay what the seed always gave.
    said = random.Random(f"owned-{group}")
    mode = said.choice(["v1", "v1", "eager", "cooperative", "mixed"])
    last: dict[str, Any] = {}
    for _ in range(rng.randint(0, 25)):
        kind = rng.choices(names, weights)[0]
        ts += rng.choice([0, 0, 1, 7, 50, 400, -30])  # ties and the odd step back in time
        event: dict[str, Any] = {"v": 1, "ts": ts, "node": 1, "type": kind, "group": group}
        members = rng.sample(pool, rng.randint(1, len(pool)))
        if kind == "rebalance_started":
            event |= {"generation": generation, "trigger": rng.choice(["member_joined", "x"])}
            event["members"] = rng.randint(0, 4)
        elif kind == "join_completed":
            generation += 1
            event |= {"generation": generation, "leader": members[0], "protocol": protocol}
            event["members"] = members + ([members[0]] if rng.random() < 0.05 else [])
            if mode != "v1":
                event |= {"v": 2, "owned": _owned(said, mode, members, last)}
        elif kind == "sync_completed":
            event |= {"generation": generation, "assignments": _assignments(rng, members)}
            last = event["assignments"]
        elif kind in ("group_stable", "group_empty"):
            event["generation"] = generation
        elif kind == "offset_commit":
            event |= {"member": members[0], "partitions": 1}
        elif kind == "commit_fenced":
            event |= {"member": members[0], "error": "ILLEGAL_GENERATION", "code": 22}
        else:
            event |= {"member": members[0], "reason": "session_timeout"}
            # Deterministic (no draw): the rest of the log stays what the seed always gave.
            if kind == "member_joined":
                event["client_id"] = f"client-{members[0]}"
            else:
                event["session_timeout_ms"] = SESSION_TIMEOUT_MS
        events.append(event)
    return events


def messy_log(seed: int, groups: int = GROUPS) -> list[dict[str, Any]]:
    """`groups` groups interleaved line by line, with a partition event now and then (no group)."""
    rng = random.Random(seed)
    streams = [_group_events(rng, f"g{i:03d}") for i in range(groups)]
    log: list[dict[str, Any]] = []
    while any(streams):
        stream = rng.choice([s for s in streams if s])
        log.append(stream.pop(0))
        if rng.random() < 0.01:  # older logs say "" for the group of a partition event
            log.append({"v": 1, "ts": 5, "node": 1, "type": "partition_loaded", "partition": 0,
                        "groups": 3, "group": rng.choice([None, ""])})  # fmt: skip
    return log


def write_rotated(log: list[dict[str, Any]], directory: Path) -> Path:
    """The log as two rotated JSONL files in `directory`, split in the middle (a real rotation)."""
    half = len(log) // 2
    lines = [json.dumps(e) for e in log]
    (directory / "events-0001.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (directory / "events-0002.jsonl").write_text("\n".join(lines[half:]) + "\n")
    return directory
