"""Operational events: what happened to a group and why, for the event log and analytics.

Handlers append `Event`s to their `Result` (the core stays pure: it never writes them); the shell
stamps them with the node id and writes them as JSON Lines. Schema version 1, one object a line:

    {"v": 1, "ts": <ms since epoch>, "node": <int>, "type": <name>, "group": <id or null>,
     "generation": <int or null>, "member": <id or null>, ...fields of the type}

`group` is null for the events about a partition, not a group (`partition_loaded`,
`partition_unloaded`). An optional `group_type` names a group type other than the classic one
(absent): "zookeeper" for Kafka 0.8's ZooKeeper-coordinated consumers, which write this schema
with types of their own (`coordinator.zookeeper.events`).

Types and their extra fields:

* `member_joined`     client_id, instance_id, protocols (names, in preference order)
* `member_left`       reason: "leave" | "admin_removal"
* `member_expired`    reason: "session_timeout" | "new_member_timeout" | "rebalance_timeout" |
                      "sync_timeout" | "max_size" | "replaced" (a static member's old id);
                      session_timeout_ms for "session_timeout" (the last heartbeat was then)
* `rebalance_started` trigger: "member_joined" | "member_rejoined" | "leader_rejoined" |
                      "metadata_changed" | "member_left" | "member_expired" | "static_replaced" |
                      "sync_timeout" | "over_max_size"; members: how many members the
                      current (now ending) generation formed with
* `join_completed`    leader, protocol, members: [member ids] (generation is the new one)
* `group_empty`       (the join phase ended with nobody left; generation is the new one)
* `sync_completed`    assignments: {member id: [[topic, [partitions...]], ...]} when the
                      assignment is a ConsumerProtocol Assignment, else {member id: null};
                      sizes: {member id: assignment byte length}
* `group_stable`      (the assignment is handed out)
* `offset_commit`     partitions: number of offsets stored
* `commit_fenced`     error: Kafka error name; code: its number (generation/member as sent)
* `partition_loaded`  partition, groups: number of groups loaded
* `partition_unloaded` partition, groups
* `group_deleted`     reason: "delete_groups" | "expired"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rebalance.subscription import CONSUMER_PROTOCOL_TYPE, assigned_partitions

EVENT_SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Event:
    type: str
    ts: int
    group: str | None  # None for events about no group (partition loads): "" is a valid group id
    generation: int | None = None
    member: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self, node: int) -> dict[str, Any]:
        """The log line (schema above). `sync_completed` carries raw assignment bytes until
        here; they are decoded now, by whoever writes the log, not on the request path."""
        fields = self.fields
        if self.type == "sync_completed":
            fields = dict(fields)
            raw: dict[str, bytes] = fields.pop("assignments")
            consumer = fields.pop("protocol_type", None) == CONSUMER_PROTOCOL_TYPE
            fields["assignments"] = {
                member: assigned_partitions(data) if consumer else None
                for member, data in raw.items()
            }
            fields["sizes"] = {member: len(data) for member, data in raw.items()}
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
