"""The event log's schema (v1, see `rebalance.events`) as Spark sees it.

Raw JSON Lines are parsed with `RAW_JSON_SCHEMA`, then normalised into `EVENT_SCHEMA`: the one
table every later stage reads, and the layout of Parquet input. Normalising splits the
overloaded `members` field (a count in `rebalance_started`, a list of ids in `join_completed`)
into `member_count` and `member_ids`, and turns each assignment entry `[topic, [partitions]]`
into a struct. Three `source_*` columns record where each event came from so that events with
the same millisecond keep the order in which the coordinator wrote them.
"""

from __future__ import annotations

from pyspark.sql import types as T

SUPPORTED_VERSION = 1

CLASSIC_GROUP_EVENT_TYPES = (
    "member_joined",
    "member_left",
    "member_expired",
    "rebalance_started",
    "join_completed",
    "group_empty",
    "sync_completed",
    "group_stable",
    "offset_commit",
    "commit_fenced",
    "group_deleted",
)
ZOOKEEPER_EVENT_TYPES = (
    "zk_claims_failed",
    "zk_rebalance_retry",
    "zk_rebalance_completed",
    "zk_rebalance_failed",
    "zk_session_expired",
)
"""Written by ZooKeeper-coordinated consumers (`group_type` "zookeeper"), next to the classic
types they share (member_joined, member_left, rebalance_started, offset_commit)."""
GROUP_EVENT_TYPES = CLASSIC_GROUP_EVENT_TYPES + ZOOKEEPER_EVENT_TYPES
PARTITION_EVENT_TYPES = ("partition_loaded", "partition_unloaded")
EVENT_TYPES = GROUP_EVENT_TYPES + PARTITION_EVENT_TYPES

COMMON_REQUIRED = ("ts", "node", "type")
"""Fields every event must carry (besides `v`); `group` too for group events."""

REQUIRED_BY_TYPE: dict[str, tuple[str, ...]] = {
    "member_joined": ("member",),
    "member_left": ("member", "reason"),
    "member_expired": ("member", "reason"),
    "rebalance_started": ("trigger", "member_count"),
    "join_completed": ("generation", "leader", "protocol", "member_ids"),
    "group_empty": ("generation",),
    "sync_completed": ("generation", "assignments"),
    "group_stable": ("generation",),
    "offset_commit": ("partitions",),
    "commit_fenced": ("error", "code"),
    "partition_loaded": ("partition", "groups"),
    "partition_unloaded": ("partition", "groups"),
    "group_deleted": ("reason",),
    "zk_claims_failed": ("member", "attempt"),
    "zk_rebalance_retry": ("member", "attempt"),
    "zk_rebalance_completed": ("member", "assignments", "attempt"),
    "zk_rebalance_failed": ("member", "attempt"),
    "zk_session_expired": ("member",),
}
"""Type-specific fields that must be present and well typed (normalised names)."""

FIELD_CHECK_ORDER: tuple[str, ...] = (
    "group",
    *dict.fromkeys(field for fields in REQUIRED_BY_TYPE.values() for field in fields),
)
"""The order in which missing fields are reported: `group` first, then each type's own list
(every list in `REQUIRED_BY_TYPE` follows this order, so the first missing field is the same)."""

REQUIRED_MASK: dict[str, int] = {
    name: sum(
        1 << FIELD_CHECK_ORDER.index(field)
        for field in (("group",) if name in GROUP_EVENT_TYPES else ()) + REQUIRED_BY_TYPE[name]
    )
    for name in EVENT_TYPES
}
"""Per type, the fields it needs as a bit mask over `FIELD_CHECK_ORDER`."""

CORRUPT_COLUMN = "_corrupt_record"

OPTIONAL_RAW_FIELDS: tuple[tuple[str, T.DataType], ...] = (
    ("group_type", T.StringType()),
    ("attempt", T.IntegerType()),
    ("zk_ops", T.LongType()),
    ("partitions_total", T.IntegerType()),
    ("consumers", T.ArrayType(T.StringType())),
    ("watch_events", T.IntegerType()),
    ("backoff_ms", T.LongType()),
    ("strategy", T.StringType()),
    ("session_timeout_ms", T.LongType()),
)
"""Optional fields: `group_type` ("zookeeper"; absent for classic groups), the ZooKeeper
consumers' own (see `coordinator.zookeeper.events`) and the session timeout of a member that
expired; read as they are."""
OPTIONAL_COLUMNS = (*(name for name, _ in OPTIONAL_RAW_FIELDS), "conflict_count")
"""Columns a Parquet input written before they existed may lack (read as null)."""

RAW_JSON_SCHEMA = T.StructType(
    [
        T.StructField("v", T.LongType()),
        T.StructField("ts", T.LongType()),
        T.StructField("node", T.IntegerType()),
        T.StructField("type", T.StringType()),
        T.StructField("group", T.StringType()),
        T.StructField("generation", T.IntegerType()),
        T.StructField("member", T.StringType()),
        T.StructField("client_id", T.StringType()),
        T.StructField("instance_id", T.StringType()),
        T.StructField("protocols", T.ArrayType(T.StringType())),
        T.StructField("reason", T.StringType()),
        T.StructField("trigger", T.StringType()),
        # A count or a list of ids depending on the type: kept as raw JSON text, split later.
        T.StructField("members", T.StringType()),
        T.StructField("leader", T.StringType()),
        T.StructField("protocol", T.StringType()),
        # [[topic, [partitions]]]: the inner pair is heterogeneous, so its items stay text.
        T.StructField(
            "assignments", T.MapType(T.StringType(), T.ArrayType(T.ArrayType(T.StringType())))
        ),
        T.StructField("sizes", T.MapType(T.StringType(), T.IntegerType())),
        T.StructField("error", T.StringType()),
        T.StructField("code", T.IntegerType()),
        T.StructField("partitions", T.IntegerType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("groups", T.IntegerType()),
        *(T.StructField(name, kind) for name, kind in OPTIONAL_RAW_FIELDS),
        T.StructField("conflicts", T.ArrayType(T.ArrayType(T.StringType()))),
        T.StructField(CORRUPT_COLUMN, T.StringType()),
    ]
)

TOPIC_PARTITIONS = T.ArrayType(
    T.StructType(
        [
            T.StructField("topic", T.StringType()),
            T.StructField("partitions", T.ArrayType(T.IntegerType())),
        ]
    )
)
"""One member's assignment: a list of (topic, partitions)."""

ASSIGNMENTS = T.MapType(T.StringType(), TOPIC_PARTITIONS)

EVENT_SCHEMA = T.StructType(
    [
        T.StructField("v", T.IntegerType()),
        T.StructField("ts", T.LongType()),
        T.StructField("node", T.IntegerType()),
        T.StructField("type", T.StringType()),
        T.StructField("group", T.StringType()),
        T.StructField("generation", T.IntegerType()),
        T.StructField("member", T.StringType()),
        T.StructField("client_id", T.StringType()),
        T.StructField("instance_id", T.StringType()),
        T.StructField("protocols", T.ArrayType(T.StringType())),
        T.StructField("reason", T.StringType()),
        T.StructField("trigger", T.StringType()),
        T.StructField("member_count", T.IntegerType()),
        T.StructField("member_ids", T.ArrayType(T.StringType())),
        T.StructField("leader", T.StringType()),
        T.StructField("protocol", T.StringType()),
        T.StructField("assignments", ASSIGNMENTS),
        T.StructField("sizes", T.MapType(T.StringType(), T.IntegerType())),
        T.StructField("error", T.StringType()),
        T.StructField("code", T.IntegerType()),
        T.StructField("partitions", T.IntegerType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("groups", T.IntegerType()),
        *(T.StructField(name, kind) for name, kind in OPTIONAL_RAW_FIELDS),
        T.StructField("conflict_count", T.IntegerType()),
        T.StructField("source_file", T.StringType()),
        T.StructField("source_offset", T.LongType()),
        T.StructField("source_row", T.LongType()),
    ]
)

ORDER_COLUMNS = ("ts", "source_file", "source_offset", "source_row")
"""Total order of a group's events: time first, then the position in the log."""
