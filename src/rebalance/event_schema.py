"""The event log's schema, declared once: types, their fields, and the values fields take.

Everything that knows the schema reads it from here: the core and the ZooKeeper consumers
(the enums below are what they write), `check_event` (the plain-Python validation the tests run
on every event the core emits), the Spark schema and validation of `rebalance report`
(`coordinator.analytics.schema` derives its structs and required fields from `FIELDS` and
`EVENTS`), and the table in the README (`markdown_table`; a test fails when they drift).

Schema version 2, one JSON object a line:

    {"v": 2, "ts": <ms since epoch>, "node": <int>, "type": <name>, "group": <id or null>,
     "generation": <int or null>, "member": <id or null>, ...fields of the type}

`group` is null for the events about a partition, not a group. An optional `group_type` names a
group type other than the classic one (absent): "zookeeper" for Kafka 0.8's ZooKeeper-coordinated
consumers, which write this schema with types of their own (`coordinator.zookeeper.events`), and
"consumer" for KIP-848 consumer groups (`rebalance.consumer_group`), "client-balance" for TubeMQ's
client-side assignment (`rebalance.client_balance`).

Version 2 adds `owned` to `join_completed`: what each member of the new generation said it owned
when it joined (a consumer protocol subscription's owned partitions, v1 and later), which tells
a member that kept its partitions through the rebalance (cooperative) from one that revoked them
all first (eager). Version 1 lines differ in nothing else and are still read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

SCHEMA_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
"""The versions readers accept: version 1 lines are version 2 lines without `owned`."""


class EventType(StrEnum):
    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    MEMBER_EXPIRED = "member_expired"
    REBALANCE_STARTED = "rebalance_started"
    JOIN_COMPLETED = "join_completed"
    GROUP_EMPTY = "group_empty"
    SYNC_COMPLETED = "sync_completed"
    GROUP_STABLE = "group_stable"
    OFFSET_COMMIT = "offset_commit"
    COMMIT_FENCED = "commit_fenced"
    GROUP_DELETED = "group_deleted"
    ZK_CLAIMS_FAILED = "zk_claims_failed"
    ZK_REBALANCE_RETRY = "zk_rebalance_retry"
    ZK_REBALANCE_COMPLETED = "zk_rebalance_completed"
    ZK_REBALANCE_FAILED = "zk_rebalance_failed"
    ZK_SESSION_EXPIRED = "zk_session_expired"
    GROUP_EPOCH_BUMPED = "group_epoch_bumped"
    TARGET_ASSIGNMENT = "target_assignment"
    MEMBER_RECONCILED = "member_reconciled"
    PARTITION_LOADED = "partition_loaded"
    PARTITION_UNLOADED = "partition_unloaded"
    PARTITION_REGISTERED = "partition_registered"
    PARTITION_RELEASED = "partition_released"


class Trigger(StrEnum):
    """Why a classic group's rebalance started (`rebalance_started.trigger`)."""

    MEMBER_JOINED = "member_joined"
    MEMBER_REJOINED = "member_rejoined"
    LEADER_REJOINED = "leader_rejoined"
    METADATA_CHANGED = "metadata_changed"
    MEMBER_LEFT = "member_left"
    MEMBER_EXPIRED = "member_expired"
    STATIC_REPLACED = "static_replaced"
    SYNC_TIMEOUT = "sync_timeout"
    OVER_MAX_SIZE = "over_max_size"


class ConsumerTrigger(StrEnum):
    """Why a consumer (KIP-848) group's epoch was bumped (`group_epoch_bumped.trigger`)."""

    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    MEMBER_EXPIRED = "member_expired"
    SUBSCRIPTION_CHANGED = "subscription_changed"
    METADATA_CHANGED = "metadata_changed"


class ZooKeeperTrigger(StrEnum):
    """Why a ZooKeeper-coordinated consumer rebalanced (its `rebalance_started.trigger`)."""

    STARTED = "started"
    CONSUMERS_CHANGED = "consumers_changed"
    TOPIC_CHANGED = "topic_changed"
    TOPICS_CHANGED = "topics_changed"
    BROKERS_CHANGED = "brokers_changed"
    SESSION_EXPIRED = "session_expired"


class LeaveReason(StrEnum):
    """`member_left.reason`."""

    LEAVE = "leave"
    ADMIN_REMOVAL = "admin_removal"


class ExpiryReason(StrEnum):
    """`member_expired.reason`."""

    SESSION_TIMEOUT = "session_timeout"
    NEW_MEMBER_TIMEOUT = "new_member_timeout"
    REBALANCE_TIMEOUT = "rebalance_timeout"
    SYNC_TIMEOUT = "sync_timeout"
    MAX_SIZE = "max_size"
    REPLACED = "replaced"
    #: A consumer-group member that did not acknowledge a revocation within its rebalance
    #: timeout (KIP-848 fences it).
    REVOCATION_TIMEOUT = "revocation_timeout"


class ReleaseReason(StrEnum):
    """`partition_released.reason`: why a client-balance node stopped holding a partition."""

    RELEASE = "release"  # the node released it
    #: Logs written before issue 36 only: a heartbeat that no longer listed it released it.
    #: Heartbeats no longer change holdings (TubeMQ's report, not applied).
    NOT_REPORTED = "not_reported"
    LEFT = "left"  # the node left the group
    EXPIRED = "expired"  # the node's session expired


class DeleteReason(StrEnum):
    """`group_deleted.reason`."""

    DELETE_GROUPS = "delete_groups"
    EXPIRED = "expired"


class Kind(Enum):
    """A field's JSON shape (the Spark schema maps each to a column type)."""

    STRING = "string"
    INT = "int"
    LONG = "long"
    STRINGS = "list of strings"
    #: `members`: a count in `rebalance_started`, a list of member ids in `join_completed`.
    COUNT_OR_IDS = "count or list of ids"
    #: {member id: [[topic, [partitions]]]} (null per member for a non-consumer protocol, or
    #: for `owned`, a subscription that cannot say: version 0, or unreadable).
    ASSIGNMENTS = "assignments"
    #: {member id: int}
    SIZES = "sizes"
    #: [[topic, partition]]
    PAIRS = "topic-partition pairs"


@dataclass(frozen=True)
class Field:
    kind: Kind
    doc: str
    #: Added after the log's first release: tables of events written before may lack it.
    late: bool = False


#: Every field an event may carry beyond the common ones, in the log's column order.
FIELDS: Mapping[str, Field] = {
    "client_id": Field(Kind.STRING, "the member's client id"),
    "instance_id": Field(Kind.STRING, "its group.instance.id (null: dynamic member)"),
    "protocols": Field(Kind.STRINGS, "protocol names, in preference order"),
    "reason": Field(Kind.STRING, "why the member left or expired, or the group was deleted"),
    "trigger": Field(Kind.STRING, "why the rebalance started"),
    "members": Field(Kind.COUNT_OR_IDS, "members of the generation it ends / member ids"),
    "leader": Field(Kind.STRING, "the new generation's leader"),
    "protocol": Field(Kind.STRING, "the protocol the group voted for"),
    "assignments": Field(Kind.ASSIGNMENTS, "each member's partitions"),
    "owned": Field(
        Kind.ASSIGNMENTS,
        "the partitions each member said it owned when it joined (schema v2, consumer protocol)",
        late=True,
    ),
    "sizes": Field(Kind.SIZES, "each member's assignment in bytes"),
    "error": Field(Kind.STRING, "Kafka error name"),
    "code": Field(Kind.INT, "Kafka error code"),
    "partitions": Field(Kind.INT, "offsets stored"),
    "partition": Field(Kind.INT, "the __consumer_offsets partition"),
    "groups": Field(Kind.INT, "groups on it"),
    "group_type": Field(
        Kind.STRING,
        'the group type ("zookeeper", "consumer", "client-balance"; absent: classic)',
        late=True,
    ),
    "attempt": Field(Kind.INT, "the rebalance attempt, from 1", late=True),
    "zk_ops": Field(Kind.LONG, "ZooKeeper requests of the whole rebalance", late=True),
    "partitions_total": Field(Kind.INT, "partitions of the subscribed topics", late=True),
    "consumers": Field(Kind.STRINGS, "consumer ids in the group as read", late=True),
    "watch_events": Field(Kind.INT, "watch events folded into this rebalance", late=True),
    "backoff_ms": Field(Kind.LONG, "the back-off before the next attempt", late=True),
    "strategy": Field(Kind.STRING, "partition.assignment.strategy", late=True),
    "session_timeout_ms": Field(Kind.LONG, "the expired member's session timeout", late=True),
    "conflicts": Field(Kind.PAIRS, "partitions another consumer still owned", late=True),
    "rolled_back": Field(Kind.INT, "claims undone after the conflict", late=True),
    "member_state": Field(Kind.STRING, "a consumer-group member's reconciliation state", late=True),
    "assigned": Field(Kind.INT, "how many partitions a member holds now", late=True),
    "revoking": Field(Kind.INT, "how many it is asked to give up", late=True),
    "target_epoch": Field(Kind.INT, "the target assignment's epoch", late=True),
    "assignor": Field(Kind.STRING, "the server assignor that computed it", late=True),
    "source_count": Field(Kind.INT, "a client-balance node's sourceCount", late=True),
    "node_id": Field(Kind.INT, "a client-balance node's nodeId", late=True),
    "topic": Field(Kind.STRING, "the topic of a registered or released partition", late=True),
    "topic_partition": Field(Kind.INT, "that partition's number in its topic", late=True),
    "bootstrap_offset": Field(Kind.LONG, "the offset a registration set (≥ 0)", late=True),
}


@dataclass(frozen=True)
class EventSpec:
    """One event type: the fields it must carry (beyond the common ones), those it may carry,
    which group types write it, and whether it is about a group (else `group` is null)."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    written_by: tuple[str, ...] = ("classic",)
    about_group: bool = True
    #: The values of `reason` / `trigger` this type takes, where they are an enum.
    reasons: type[StrEnum] | None = None
    note: str = ""


CLASSIC = ("classic",)
BOTH = ("classic", "zookeeper")
ZOOKEEPER = ("zookeeper",)
CONSUMER = ("consumer",)
ALL_THREE = ("classic", "zookeeper", "consumer")
CLIENT_BALANCE = ("client-balance",)

EVENTS: Mapping[EventType, EventSpec] = {
    EventType.MEMBER_JOINED: EventSpec(
        ("member",),
        ("client_id", "instance_id", "protocols", "source_count", "node_id"),
        (*ALL_THREE, "client-balance"),
        note="the optional fields are always written (source_count, node_id: client-balance "
        "only); the report does not need them",
    ),
    EventType.MEMBER_LEFT: EventSpec(
        ("member", "reason"), (), (*ALL_THREE, "client-balance"), reasons=LeaveReason
    ),
    EventType.MEMBER_EXPIRED: EventSpec(
        ("member", "reason"),
        ("session_timeout_ms",),
        ("classic", "consumer", "client-balance"),
        reasons=ExpiryReason,
        note="session_timeout_ms for session_timeout (the last heartbeat was then)",
    ),
    EventType.REBALANCE_STARTED: EventSpec(
        ("trigger", "members"),
        ("watch_events",),
        BOTH,
        note="members: of the generation it ends (ZooKeeper: consumers in the last view)",
    ),
    EventType.JOIN_COMPLETED: EventSpec(
        ("generation", "leader", "protocol", "members"),
        ("owned",),
        note="members: ids; `generation` is the new one; owned: consumer protocol only (v2)",
    ),
    EventType.GROUP_EMPTY: EventSpec(("generation",), note="the join phase ended with nobody left"),
    EventType.SYNC_COMPLETED: EventSpec(("generation", "assignments"), ("sizes",)),
    EventType.GROUP_STABLE: EventSpec(("generation",), note="the assignment is handed out"),
    EventType.OFFSET_COMMIT: EventSpec(("partitions",), (), ALL_THREE),
    EventType.COMMIT_FENCED: EventSpec(
        ("error", "code"), (), ("classic", "consumer"), note="generation and member as sent"
    ),
    EventType.GROUP_DELETED: EventSpec(
        ("reason",), (), ("classic", "consumer"), reasons=DeleteReason
    ),
    EventType.GROUP_EPOCH_BUMPED: EventSpec(
        ("trigger", "generation"),
        ("members",),
        CONSUMER,
        note="`generation` is the new group epoch; members: how many the group has now",
    ),
    EventType.TARGET_ASSIGNMENT: EventSpec(
        ("generation", "assignments", "assignor"),
        (),
        CONSUMER,
        note="`generation` is the target epoch; assignments by topic name",
    ),
    EventType.MEMBER_RECONCILED: EventSpec(
        ("member", "generation", "member_state", "assigned"),
        ("revoking", "target_epoch"),
        CONSUMER,
        note="`generation` is the member epoch; one line whenever a member's assignment moves",
    ),
    EventType.ZK_CLAIMS_FAILED: EventSpec(
        ("member", "attempt"), ("conflicts", "rolled_back"), ZOOKEEPER
    ),
    EventType.ZK_REBALANCE_RETRY: EventSpec(
        ("member", "attempt"), ("backoff_ms", "reason"), ZOOKEEPER
    ),
    EventType.ZK_REBALANCE_COMPLETED: EventSpec(
        ("member", "assignments", "attempt"),
        ("consumers", "partitions_total", "strategy", "zk_ops"),
        ZOOKEEPER,
    ),
    EventType.ZK_REBALANCE_FAILED: EventSpec(("member", "attempt"), ("zk_ops",), ZOOKEEPER),
    EventType.ZK_SESSION_EXPIRED: EventSpec(("member",), (), ZOOKEEPER),
    EventType.PARTITION_REGISTERED: EventSpec(
        ("member", "generation", "topic", "topic_partition"),
        ("bootstrap_offset",),
        CLIENT_BALANCE,
        note="`generation` is the node's member epoch; bootstrap_offset when one was given",
    ),
    EventType.PARTITION_RELEASED: EventSpec(
        ("member", "reason", "generation", "topic", "topic_partition"),
        (),
        CLIENT_BALANCE,
        reasons=ReleaseReason,
        note="`generation` is the node's member epoch",
    ),
    EventType.PARTITION_LOADED: EventSpec(("partition", "groups"), about_group=False),
    EventType.PARTITION_UNLOADED: EventSpec(("partition", "groups"), about_group=False),
}

#: The fields whose values the core passes as enums (turned into plain strings in `Result.event`).
ENUM_FIELDS = ("trigger", "reason")

#: The fields every line carries, and their kinds (`group`, `generation`, `member` may be null).
COMMON: Mapping[str, Kind] = {
    "v": Kind.INT,
    "ts": Kind.LONG,
    "node": Kind.INT,
    "type": Kind.STRING,
    "group": Kind.STRING,
    "generation": Kind.INT,
    "member": Kind.STRING,
}
COMMON_FIELDS = tuple(COMMON)
#: Common fields a type may list as required (they are nullable in general).
NULLABLE_COMMON = ("generation", "member")

_CHECKS: Mapping[Kind, Any] = {
    Kind.STRING: lambda v: isinstance(v, str),
    Kind.INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
    Kind.LONG: lambda v: isinstance(v, int) and not isinstance(v, bool),
    Kind.STRINGS: lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    Kind.COUNT_OR_IDS: lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, list) and all(isinstance(x, str) for x in v))
    ),
    Kind.ASSIGNMENTS: lambda v: isinstance(v, dict),
    Kind.SIZES: lambda v: isinstance(v, dict) and all(isinstance(x, int) for x in v.values()),
    Kind.PAIRS: lambda v: isinstance(v, list) and all(isinstance(x, list) for x in v),
}

#: Fields that may be null even when required (a dynamic member has no instance id).
_NULLABLE = frozenset({"instance_id", "protocol", "leader"})


def check_event(line: Mapping[str, Any]) -> str | None:
    """Why `line` (one decoded log line) breaks the schema, or None when it conforms."""
    version = line.get("v")
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        return f"unknown version {version!r}"
    if version < 2 and "owned" in line:
        return "owned is a field of version 2"
    for name in ("ts", "node"):
        if not _CHECKS[Kind.LONG](line.get(name)):
            return f"{name} is not an integer"
    try:
        event_type = EventType(str(line.get("type")))
    except ValueError:
        return f"unknown type {line.get('type')!r}"
    spec = EVENTS[event_type]
    if spec.about_group != isinstance(line.get("group"), str):
        return "group must be a string" if spec.about_group else "group must be null"
    for name in spec.required:
        if name in NULLABLE_COMMON:
            if line.get(name) is None:
                return f"{event_type}: {name} missing"
            continue
        if name not in line:
            return f"{event_type}: {name} missing"
        value = line[name]
        if value is None and name in _NULLABLE:
            continue
        if not _CHECKS[FIELDS[name].kind](value):
            return f"{event_type}: {name} is not {FIELDS[name].kind.value}"
    for name in spec.optional:  # checked when present with a value (null: not known)
        value = line.get(name)
        if value is not None and not _CHECKS[FIELDS[name].kind](value):
            return f"{event_type}: {name} is not {FIELDS[name].kind.value}"
    unknown = set(line) - set(COMMON_FIELDS) - set(FIELDS)
    if unknown:
        return f"{event_type}: unknown fields {sorted(unknown)}"
    allowed = set(spec.required) | set(spec.optional) | {"group_type"}
    stray = {name for name in line if name in FIELDS} - allowed
    if stray:
        return f"{event_type}: fields {sorted(stray)} do not belong to it"
    values = spec.reasons
    if values is not None and "reason" in line and line["reason"] not in set(values):
        return f"{event_type}: reason {line['reason']!r} is not one of {[str(v) for v in values]}"
    if event_type is EventType.GROUP_EPOCH_BUMPED and line["trigger"] not in set(ConsumerTrigger):
        return f"group_epoch_bumped: trigger {line['trigger']!r} is unknown"
    if event_type is EventType.REBALANCE_STARTED:
        triggers = ZooKeeperTrigger if line.get("group_type") == "zookeeper" else Trigger
        if line["trigger"] not in set(triggers):
            return f"rebalance_started: trigger {line['trigger']!r} is unknown"
    return None


def markdown_table() -> str:
    """The README's table of event types, generated from `EVENTS`."""
    rows = ["| type | written by | fields (optional in brackets) |", "|---|---|---|"]
    for event_type, spec in EVENTS.items():
        parts = []
        for name in spec.required:
            if name in NULLABLE_COMMON:
                continue
            text = name
            if name == "reason" and spec.reasons is not None:
                text += ": " + ", ".join(spec.reasons)
            if name == "trigger" and event_type is EventType.GROUP_EPOCH_BUMPED:
                text += ": " + ", ".join(ConsumerTrigger)
            elif name == "trigger":
                text += (
                    ": " + ", ".join(Trigger) + " (ZooKeeper: " + ", ".join(ZooKeeperTrigger) + ")"
                )
            parts.append(text)
        parts.extend(f"[{name}]" for name in spec.optional)
        fields = "; ".join(text for text in (", ".join(parts), spec.note) if text) or "—"
        if not spec.about_group:
            fields += " (`group` is null)"
        rows.append(f"| {event_type} | {', '.join(spec.written_by)} | {fields} |")
    return "\n".join(rows) + "\n"
