"""A plain-Python reading of docs/analytics.md's ownership table, from the reference episodes and
the events: one group at a time, its episodes in order, a dictionary of what each member holds.
Written from the documentation, independently of the Spark job."""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]
Partition = tuple[str, int]


def _measurable(assignment: dict[str, Any] | None) -> bool:
    return assignment is not None and all(v is not None for v in assignment.values())


def _partitions(entries: list[list[Any]] | None) -> list[Partition]:
    return sorted({(topic, p) for topic, partitions in entries or [] for p in partitions})


def _notes(events: list[Event]) -> dict[tuple[str, str], dict[str, Any]]:
    """(group, member) -> client id of the first join, last heartbeat of the first expiry."""
    ordered = sorted(enumerate(events), key=lambda pe: (pe[1]["ts"], pe[0]))
    notes: dict[tuple[str, str], dict[str, Any]] = {}
    for _, e in ordered:
        if e.get("group") is None:
            continue
        note = notes.setdefault(
            (e["group"], e.get("member")), {"client_id": None, "last_heard": None}
        )
        if e["type"] == "member_joined" and note["client_id"] is None:
            note["client_id"] = e.get("client_id")
        expired = e["type"] == "member_expired" and e.get("reason") == "session_timeout"
        if expired and note["last_heard"] is None and e.get("session_timeout_ms") is not None:
            note["last_heard"] = e["ts"] - e["session_timeout_ms"]
    return notes


def _row(group: str, member: str, partitions: list[Partition], start: int, end: int | None,
         start_episode: int, end_episode: int | None, ended_by: str | None,
         kept: bool) -> dict[str, Any]:  # fmt: skip
    return {"group": group, "member": member, "start_ts": start, "end_ts": end,
            "partitions": partitions, "start_episode": start_episode,
            "end_episode": end_episode, "ended_by": ended_by, "kept": kept}  # fmt: skip


def _revoker(episodes: list[dict[str, Any]], after: int) -> dict[str, Any] | None:
    """The first episode after index `after` that revokes: any eager one, or a cooperative one
    that decides (completed or empty)."""
    for e in episodes[after + 1 :]:
        if not e["cooperative"] or e["outcome"] in ("completed", "empty"):
            return e
    return None


def ownership(events: list[Event], episode_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows ordered by group, member, start_ts, start_episode, kept."""
    notes = _notes(events)
    rows: list[dict[str, Any]] = []
    groups = sorted({e["group"] for e in episode_rows})
    for group in groups:
        episodes = [e for e in episode_rows if e["group"] == group]
        for i, episode in enumerate(episodes):
            assignment = episode["assignment"]
            if episode["outcome"] != "completed" or not _measurable(assignment):
                continue
            revoker = _revoker(episodes, i)
            for member, entries in assignment.items():
                held = _partitions(entries)
                if not held:
                    continue
                rows.append(_row(
                    group, member, held, episode["end_ts"],
                    revoker["start_ts"] if revoker else None, episode["episode"],
                    revoker["episode"] if revoker else None,
                    revoker["trigger"] if revoker else None, False,
                ))  # fmt: skip
                if (
                    revoker is not None
                    and revoker["outcome"] == "completed"
                    and revoker["cooperative"]
                    and _measurable(revoker["assignment"])
                ):
                    kept = sorted(set(held) & set(_partitions(revoker["assignment"].get(member))))
                    said = (revoker["owned"] or {}).get(member)
                    if said is not None:  # it kept only what it said it owned when it joined
                        kept = sorted(set(kept) & set(_partitions(said)))
                    if kept:
                        rows.append(_row(
                            group, member, kept, revoker["start_ts"], revoker["end_ts"],
                            revoker["episode"], revoker["episode"], "assignment", True,
                        ))  # fmt: skip
    for row in rows:
        note = notes.get((row["group"], row["member"]), {"client_id": None, "last_heard": None})
        row["client_id"] = note["client_id"]
        heard = note["last_heard"]
        if (
            heard is not None
            and row["start_ts"] < heard
            and (row["end_ts"] is None or row["end_ts"] > heard)
        ):
            row |= {"end_ts": heard, "end_episode": None, "ended_by": "last_heartbeat"}
        row["duration_ms"] = None if row["end_ts"] is None else row["end_ts"] - row["start_ts"]
        row["partition_count"] = len(row["partitions"])
    rows.sort(key=lambda r: (r["group"], r["member"], r["start_ts"], r["start_episode"], r["kept"]))
    return rows


def drawn_groups(metrics: list[dict[str, Any]], requested: list[str], count: int = 8) -> list[str]:
    """The groups whose ownership the report's table holds (docs/analytics.md): the `count` that
    rebalance most, ties by name, then those `requested` that rebalanced, in the order asked."""
    ranked = sorted(metrics, key=lambda m: (-m["rebalances"], m["group"]))
    drawn = [m["group"] for m in ranked[:count] if m["rebalances"]]
    rebalanced = {m["group"] for m in metrics if m["rebalances"]}
    return drawn + [g for g in dict.fromkeys(requested) if g in rebalanced and g not in drawn]
