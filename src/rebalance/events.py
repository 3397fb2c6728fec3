"""Operational events: what happened to a group and why, for the event log and analytics.

Handlers append `Event`s to their `Result` (the core stays pure: it never writes them); the shell
stamps them with the node id and writes them as JSON Lines. The schema (types, fields, the values
of triggers and reasons) is declared once, in `rebalance.event_schema`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rebalance.event_schema import SCHEMA_VERSION, EventType
from rebalance.subscription import CONSUMER_PROTOCOL_TYPE, assigned_partitions, owned_partitions

EVENT_SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True, slots=True)
class Event:
    type: EventType
    ts: int
    group: str | None  # None for events about no group (partition loads): "" is a valid group id
    generation: int | None = None
    member: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self, node: int) -> dict[str, Any]:
        """The log line (schema above). `sync_completed` carries raw assignment bytes and
        `join_completed` raw subscriptions until here; they are decoded now, by whoever writes
        the log, not on the request path."""
        fields = self.fields
        if self.type == EventType.SYNC_COMPLETED:  # a str from older callers too
            fields = dict(fields)
            raw: dict[str, bytes] = fields.pop("assignments")
            consumer = fields.pop("protocol_type", None) == CONSUMER_PROTOCOL_TYPE
            fields["assignments"] = {
                member: assigned_partitions(data) if consumer else None
                for member, data in raw.items()
            }
            fields["sizes"] = {member: len(data) for member, data in raw.items()}
        elif self.type == EventType.JOIN_COMPLETED and "subscriptions" in fields:
            # Raw subscriptions too: their owned partitions (consumer protocol only), decoded here.
            fields = dict(fields)
            subscriptions: dict[str, bytes] = fields.pop("subscriptions")
            if fields.pop("protocol_type", None) == CONSUMER_PROTOCOL_TYPE:
                fields["owned"] = {
                    member: owned_partitions(data) for member, data in subscriptions.items()
                }
        return {
            "v": EVENT_SCHEMA_VERSION,
            "ts": self.ts,
            "node": node,
            "type": self.type,
            "group": self.group,
            "generation": self.generation,
            "member": self.member,
            **fields,
        }
