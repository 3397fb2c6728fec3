"""The groups' state changes in the server's log, at INFO, worded as Kafka's broker words them.

Kafka's group coordinator (GroupMetadataManager) logs one line per state change, and operators grep
for those lines: "Preparing to rebalance group …", "Stabilized group … generation … with N members",
"Member … has left group …", "Member … in group … has failed, removing it from the group", "Group …
with generation … is now empty", and for KIP-848 consumer groups "[GroupId …] Bumped group epoch to
…", the target assignment and each member's new assignment state; the coordinator's loading of
`__consumer_offsets` partitions too. This module writes those lines from the core's events
(`rebalance.events`, the same ones the JSON event log gets), to the logger `coordinator.groups`,
with the event's `group`, `generation`, `member` and `event` type as the record's extra fields
(`--log-format json` shows them). Per-request events (commits, fenced commits) are not logged: one
line per state change, not per request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Final

from rebalance.event_schema import EventType
from rebalance.events import Event

logger = logging.getLogger("coordinator.groups")

OFFSETS_TOPIC: Final = "__consumer_offsets"


def log_group_events(events: Iterable[Event]) -> None:
    """One INFO line for each state change among `events` (nothing when INFO is off)."""
    if not logger.isEnabledFor(logging.INFO):
        return
    for event in events:
        line = _LINES.get(event.type)
        if line is None:
            continue
        text = line(event)
        if text is None:
            continue
        level = logging.DEBUG if _quiet(event) else logging.INFO
        logger.log(
            level,
            text,
            extra={
                "group": event.group,
                "generation": event.generation,
                "member": event.member,
                "event": str(event.type),
            },
        )


def _consumer(event: Event) -> bool:
    return event.fields.get("group_type") == "consumer"


def _quiet(event: Event) -> bool:
    """A partition with no group loads and unloads at DEBUG (50 lines at every start else)."""
    loading = event.type in (EventType.PARTITION_LOADED, EventType.PARTITION_UNLOADED)
    return loading and not event.fields.get("groups")


def _joined(event: Event) -> str:
    if _consumer(event):
        return f"[GroupId {event.group}] Member {event.member} joins the consumer group."
    instance = event.fields.get("instance_id")
    static = f" with groupInstanceId={instance}" if instance else ""
    return f"Member {event.member}{static} joins group {event.group}."


def _left(event: Event) -> str:
    reason = event.fields.get("reason")
    if _consumer(event):
        return f"[GroupId {event.group}] Member {event.member} left the consumer group."
    how = "an admin's removal" if reason == "admin_removal" else "explicit `LeaveGroup` request"
    return f"[Group {event.group}] Member {event.member} has left group through {how}."


def _expired(event: Event) -> str:
    reason = str(event.fields.get("reason", "session_timeout"))
    if _consumer(event):
        why = "its session expired" if reason == "session_timeout" else reason.replace("_", " ")
        return f"[GroupId {event.group}] Member {event.member} fenced from the group because {why}."
    return (
        f"Member {event.member} in group {event.group} has failed, removing it from the group "
        f"({reason.replace('_', ' ')})."
    )


def _preparing(event: Event) -> str:
    return (
        f"Preparing to rebalance group {event.group} in state PreparingRebalance with old "
        f"generation {event.generation} (reason: {event.fields.get('trigger')})."
    )


def _stabilized(event: Event) -> str:
    members = event.fields.get("members")
    count = len(members) if isinstance(members, list) else members
    return (
        f"Stabilized group {event.group} generation {event.generation} with {count} "
        f"member{'' if count == 1 else 's'} (leader {event.fields.get('leader')}, protocol "
        f"{event.fields.get('protocol')})."
    )


def _assigned(event: Event) -> str:
    members = len(event.fields.get("assignments") or {})
    return (
        f"Assignment received from leader for group {event.group} for generation "
        f"{event.generation}. The group has {members} member{'' if members == 1 else 's'}."
    )


def _empty(event: Event) -> str:
    return f"Group {event.group} with generation {event.generation} is now empty."


def _deleted(event: Event) -> str:
    return f"Group {event.group} was deleted (reason: {event.fields.get('reason')})."


def _bumped(event: Event) -> str:
    return (
        f"[GroupId {event.group}] Bumped group epoch to {event.generation} "
        f"(reason: {event.fields.get('trigger')})."
    )


def _target(event: Event) -> str:
    return (
        f"[GroupId {event.group}] Computed a new target assignment for epoch {event.generation} "
        f"with '{event.fields.get('assignor')}' assignor."
    )


def _reconciled(event: Event) -> str:
    fields = event.fields
    revoking = fields.get("revoking")
    return (
        f"[GroupId {event.group}] Member {event.member} new assignment state: "
        f"epoch={event.generation}, state={fields.get('member_state')}, "
        f"assignedPartitions={fields.get('assigned')}"
        + (f", revokedPartitions={revoking}" if revoking else "")
        + "."
    )


def _partition(done: str) -> Callable[[Event], str]:
    """A `__consumer_offsets` partition loaded or unloaded, with how many groups it holds."""

    def line(event: Event) -> str:
        groups = event.fields.get("groups")
        return (
            f"{done} offsets and group metadata from {OFFSETS_TOPIC}-"
            f"{event.fields.get('partition')} ({groups} group{'' if groups == 1 else 's'})."
        )

    return line


_LINES: Final[dict[str, Callable[[Event], str | None]]] = {
    EventType.MEMBER_JOINED: _joined,
    EventType.MEMBER_LEFT: _left,
    EventType.MEMBER_EXPIRED: _expired,
    EventType.REBALANCE_STARTED: _preparing,
    EventType.JOIN_COMPLETED: _stabilized,
    EventType.SYNC_COMPLETED: _assigned,
    EventType.GROUP_EMPTY: _empty,
    EventType.GROUP_DELETED: _deleted,
    EventType.GROUP_EPOCH_BUMPED: _bumped,
    EventType.TARGET_ASSIGNMENT: _target,
    EventType.MEMBER_RECONCILED: _reconciled,
    EventType.PARTITION_LOADED: _partition("Finished loading"),
    EventType.PARTITION_UNLOADED: _partition("Unloaded"),
}
