"""A plain-Python reading of docs/analytics.md: episodes and group metrics of a list of events.

Written from the documentation, independently of the Spark job, to be compared with it on many
generated logs. Simple over fast: one group at a time, events in log order, no cleverness.
Events are the JSON objects of a valid log, in file order (the position breaks ts ties).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import Any

Event = dict[str, Any]
Assignments = dict[str, list[list[Any]] | None]

ENDINGS = {"group_stable": "completed", "group_empty": "empty"}
REBALANCE_TYPES = {"rebalance_started", "join_completed", "group_empty", "sync_completed"}
REBALANCE_TYPES |= {"group_stable"}
HOUR_MS = 3_600_000


def _measurable(assignments: Assignments | None) -> bool:
    return assignments is not None and all(v is not None for v in assignments.values())


def _claims(assignments: Assignments) -> dict[tuple[str, int], set[str]]:
    owners: dict[tuple[str, int], set[str]] = {}
    for member, entries in assignments.items():
        for topic, partitions in entries or []:
            for p in partitions:
                owners.setdefault((topic, p), set()).add(member)
    return owners


def _moved(before: Assignments, after: Assignments) -> int:
    """Partitions with an owner after that did not own them before."""
    old, new = _claims(before), _claims(after)
    return sum(1 for tp, owners in new.items() if owners - old.get(tp, set()))


def _partition_count(assignments: Assignments) -> int:
    return sum(len(ps) for entries in assignments.values() for _, ps in entries or [])


def _held(assignments: Assignments | None, member: str) -> set[tuple[str, int]]:
    entries = (assignments or {}).get(member) or []
    return {(topic, p) for topic, partitions in entries for p in partitions}


def kept_through_join(owned: Assignments | None) -> bool | None:
    """True when a member said it owned partitions when it joined, False when every member could
    say and none did, None when the log cannot tell."""
    if owned is None:
        return None
    if any(partitions for entries in owned.values() for _, partitions in entries or []):
        return True
    return False if all(entries is not None for entries in owned.values()) else None


def _group_kept(events: list[Event]) -> bool | None:
    """What the group's joins say, all of them: True if one kept partitions."""
    said = [kept_through_join(e.get("owned")) for e in events if e["type"] == "join_completed"]
    known = [s for s in said if s is not None]
    return any(known) if known else None


def _episode(
    group: str, number: int, start: Event, body: list[Event], next_start: Event | None,
    before: Assignments | None, group_kept: bool | None,
) -> dict[str, Any]:  # fmt: skip
    ending = next((e for e in body if e["type"] in ENDINGS), None)
    inside = body[: body.index(ending)] if ending is not None else body
    joins = [e for e in inside if e["type"] == "join_completed"]
    syncs = [e for e in inside if e["type"] == "sync_completed"]
    join = joins[-1] if joins else None
    if ending is not None:
        outcome, end_ts = ENDINGS[ending["type"]], ending["ts"]
    elif next_start is not None:
        outcome, end_ts = "superseded", next_start["ts"]
    else:
        outcome, end_ts = "unfinished", None
    after: Assignments | None = None
    if outcome == "completed":
        after = syncs[-1]["assignments"] if syncs else None
    elif outcome == "empty":
        after = {}
    members_after = list(join["members"]) if join else []
    protocol = join["protocol"] if join else None
    owned = join.get("owned") if join else None
    # What the members did; the protocol's name only where the log cannot say.
    cooperative = next(
        (said for said in (kept_through_join(owned), group_kept) if said is not None),
        protocol is not None and "cooperative" in protocol,
    )
    waits: dict[str, int] = {}
    if outcome == "completed":
        wait = end_ts - start["ts"]
        for member in dict.fromkeys(members_after):
            said = (owned or {}).get(member)
            held = {member: said} if said is not None else before
            keeps = _held(held, member) & _held(after, member)
            waits[member] = 0 if cooperative and keeps else wait
    return {
        "group": group, "group_type": "classic", "episode": number, "node": start["node"],
        "generation": join["generation"] if join else None, "outcome": outcome,
        "start_ts": start["ts"], "end_ts": end_ts,
        "duration_ms": None if end_ts is None else end_ts - start["ts"],
        "trigger": start["trigger"], "members_before": start["members"],
        "members_after": members_after,
        "members_after_count": len(members_after) if join else (0 if outcome == "empty" else None),
        "leader": join["leader"] if join else None, "protocol": protocol,
        "cooperative": cooperative, "owned": owned,
        "partitions_moved": _moved(before, after)  # type: ignore[arg-type]
        if _measurable(before) and _measurable(after) else None,
        "partitions_assigned": _partition_count(after) if _measurable(after) else None,  # type: ignore[arg-type]
        "stop_the_world_ms": waits,
        "stop_the_world_max_ms": max(waits.values()) if waits else None,
        "stop_the_world_total_ms": sum(waits.values()),
        "assignment": after,
    }  # fmt: skip


def episodes(events: list[Event]) -> list[dict[str, Any]]:
    """Every group's episodes, by group then episode number."""
    by_group: dict[str, list[tuple[int, Event]]] = {}
    for position, event in enumerate(events):
        if event.get("group") is not None and event["type"] in REBALANCE_TYPES:
            by_group.setdefault(event["group"], []).append((position, event))
    result = []
    for group in sorted(by_group):
        ordered = [e for _, e in sorted(by_group[group], key=lambda pe: (pe[1]["ts"], pe[0]))]
        starts = [i for i, e in enumerate(ordered) if e["type"] == "rebalance_started"]
        group_kept = _group_kept(ordered)
        for number, i in enumerate(starts, start=1):
            following = starts[number] if number < len(starts) else len(ordered)
            in_force: Assignments | None = None
            for e in ordered[:i]:
                if e["type"] == "sync_completed":
                    in_force = e["assignments"]
                elif e["type"] == "group_empty":
                    in_force = {}
            if in_force is None and ordered[i]["generation"] == 0:
                in_force = {}
            next_start = ordered[following] if following < len(ordered) else None
            body = ordered[i + 1 : following]
            result.append(
                _episode(group, number, ordered[i], body, next_start, in_force, group_kept)
            )
    return result


def _percentile(values: list[int], q: float) -> float | None:
    """Exact percentile with linear interpolation between ranks (Spark's `percentile`)."""
    if not values:
        return None
    ranked = sorted(values)
    position = q * (len(ranked) - 1)
    low = int(position)
    high = min(low + 1, len(ranked) - 1)
    return ranked[low] + (ranked[high] - ranked[low]) * (position - low)


def group_metrics(events: list[Event], episode_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per group with an event, by group."""
    by_group: dict[str, list[Event]] = {}
    for event in events:
        if event.get("group") is not None and not event["type"].startswith("partition_"):
            by_group.setdefault(event["group"], []).append(event)
    rows = []
    for group in sorted(by_group):
        mine = by_group[group]
        eps = [e for e in episode_rows if e["group"] == group]
        first, last = min(e["ts"] for e in mine), max(e["ts"] for e in mine)
        durations = [e["duration_ms"] for e in eps if e["duration_ms"] is not None]
        moved = [e["partitions_moved"] for e in eps if e["partitions_moved"] is not None]
        outcomes = Counter(e["outcome"] for e in eps)
        triggers = Counter(e["trigger"] for e in eps)
        types = Counter(e["type"] for e in mine)
        rows.append({
            "group": group, "first_ts": first, "last_ts": last, "events": len(mine),
            "rebalances": len(eps),
            **{o: outcomes[o] for o in ("completed", "superseded", "empty", "unfinished")},
            "rebalances_per_hour": len(eps) * HOUR_MS / (last - first) if last > first else None,
            "duration_p50_ms": _percentile(durations, 0.5),
            "duration_p95_ms": _percentile(durations, 0.95),
            "duration_p99_ms": _percentile(durations, 0.99),
            "duration_max_ms": max(durations) if durations else None,
            "partitions_moved": sum(moved) if moved else None,
            "stop_the_world_total_ms": sum(e["stop_the_world_total_ms"] for e in eps)
            if eps else None,
            "offset_commits": types["offset_commit"], "fenced_commits": types["commit_fenced"],
            "expirations": types["member_expired"],
            "top_triggers": sorted(triggers.items(), key=lambda tc: (-tc[1], tc[0]))[:3],
        })  # fmt: skip
    return rows


def compared_types(
    episode_rows: list[dict[str, Any]], without_episodes: Collection[str] = ()
) -> set[str]:
    """The group types of the `protocols` table: each group's episodes' type, "classic-cooperative"
    for a classic group with a cooperative episode (members kept partitions through it), and the
    types whose rows come from their own events (`without_episodes`); none when that makes fewer
    than two, nothing to compare."""
    cooperative = {e["group"] for e in episode_rows
                   if e["group_type"] == "classic" and e["cooperative"]}  # fmt: skip
    types = {"classic-cooperative" if e["group"] in cooperative else e["group_type"]
             for e in episode_rows} | set(without_episodes)  # fmt: skip
    return types if len(types) > 1 else set()
