"""A roster group's durable state: its epoch and members, one snapshot per group."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RosterValue:
    epoch: int
    members: tuple[tuple[str, int], ...]  # (member id, session timeout ms), in enlistment order


@dataclass(frozen=True, slots=True)
class RosterRecord:
    group_id: str
    value: RosterValue | None  # None: the group is deleted
