"""The event log's schema (v1 and v2) as Spark sees it, derived from `rebalance.event_schema`.

Raw JSON Lines are parsed with `RAW_JSON_SCHEMA`, then normalised into `EVENT_SCHEMA`: the one
table every later stage reads, and the layout of Parquet input. Normalising splits the
overloaded `members` field (a count in `rebalance_started`, a list of ids in `join_completed`)
into `member_count` and `member_ids`, and turns each assignment entry `[topic, [partitions]]`
into a struct. Three `source_*` columns record where each event came from so that events with
the same millisecond keep the order in which the coordinator wrote them.

Nothing here names an event type or field by hand except how a field is normalised: types,
fields, their kinds and which fields each type requires all come from the one declaration.
"""

from __future__ import annotations

from pyspark.sql import types as T

from rebalance import event_schema
from rebalance.event_schema import COMMON, EVENTS, FIELDS, EventType, Kind

SUPPORTED_VERSIONS = event_schema.SUPPORTED_VERSIONS

NOT_READ = frozenset({"rolled_back"})
"""Fields the report has no use for: not read, not kept."""

_SPARK: dict[Kind, T.DataType] = {
    Kind.STRING: T.StringType(),
    Kind.INT: T.IntegerType(),
    Kind.LONG: T.LongType(),
    Kind.STRINGS: T.ArrayType(T.StringType()),
    Kind.SIZES: T.MapType(T.StringType(), T.IntegerType()),
}
# Read as JSON text and split by type when normalised (`members`), or with the inner pair's
# heterogeneous items kept as text (`assignments`, `conflicts`).
_RAW_ONLY: dict[Kind, T.DataType] = {
    Kind.COUNT_OR_IDS: T.StringType(),
    Kind.ASSIGNMENTS: T.MapType(T.StringType(), T.ArrayType(T.ArrayType(T.StringType()))),
    Kind.PAIRS: T.ArrayType(T.ArrayType(T.StringType())),
}
_READ = tuple((name, f) for name, f in FIELDS.items() if name not in NOT_READ)

TOPIC_PARTITIONS = T.ArrayType(
    T.StructType(
        [
            T.StructField("topic", T.StringType()),
            T.StructField("partitions", T.ArrayType(T.IntegerType())),
        ]
    )
)
ASSIGNMENTS = T.MapType(T.StringType(), TOPIC_PARTITIONS)

# How a field with more than one meaning, or a nested shape, becomes columns.
_NORMALISED: dict[str, tuple[tuple[str, T.DataType], ...]] = {
    "members": (("member_count", T.IntegerType()), ("member_ids", T.ArrayType(T.StringType()))),
    "assignments": (("assignments", ASSIGNMENTS),),
    "owned": (("owned", ASSIGNMENTS),),
    "conflicts": (("conflict_count", T.IntegerType()),),
}
_MEMBERS_AS = {EventType.REBALANCE_STARTED: "member_count", EventType.JOIN_COMPLETED: "member_ids"}

CLASSIC_GROUP_EVENT_TYPES = tuple(
    str(t) for t, s in EVENTS.items() if s.about_group and "classic" in s.written_by
)
ZOOKEEPER_EVENT_TYPES = tuple(
    str(t)
    for t, s in EVENTS.items()
    if s.about_group and "classic" not in s.written_by and "zookeeper" in s.written_by
)
"""Written by ZooKeeper-coordinated consumers (`group_type` "zookeeper"), next to the classic
types they share (member_joined, member_left, rebalance_started, offset_commit)."""
CONSUMER_EVENT_TYPES = tuple(
    str(t) for t, s in EVENTS.items() if s.about_group and s.written_by == ("consumer",)
)
"""Written only by KIP-848 consumer groups (`group_type` "consumer")."""
GROUP_EVENT_TYPES = tuple(str(t) for t, s in EVENTS.items() if s.about_group)
"""Every event about a group, whichever group type writes it (a type written only by a new group
type, such as client-balance's `partition_registered`, is valid the day it is declared)."""
PARTITION_EVENT_TYPES = tuple(str(t) for t, s in EVENTS.items() if not s.about_group)
EVENT_TYPES = GROUP_EVENT_TYPES + PARTITION_EVENT_TYPES

COMMON_REQUIRED = ("ts", "node", "type")
"""Fields every event must carry (besides `v`); `group` too for group events."""

REQUIRED_BY_TYPE: dict[str, tuple[str, ...]] = {
    str(t): tuple(_MEMBERS_AS[t] if name == "members" else name for name in spec.required)
    for t, spec in EVENTS.items()
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

OPTIONAL_RAW_FIELDS = tuple(
    (name, _SPARK[f.kind]) for name, f in _READ if f.late and name not in _NORMALISED
)
"""Late fields read as they are (see `Field.late`)."""
OPTIONAL_COLUMNS = (
    *(name for name, _ in OPTIONAL_RAW_FIELDS),
    *(
        column
        for name, f in _READ
        if f.late and name in _NORMALISED
        for column, _ in _NORMALISED[name]
    ),
)
"""Columns a Parquet input written before they existed may lack (read as null)."""

CORRUPT_COLUMN = "_corrupt_record"

# `v` is read wide, so that an out-of-range version is reported as such, not as a type error.
_COMMON_RAW = {**{n: _SPARK[k] for n, k in COMMON.items()}, "v": T.LongType()}
RAW_JSON_SCHEMA = T.StructType(
    [
        *(T.StructField(n, t) for n, t in _COMMON_RAW.items()),
        *(T.StructField(n, _RAW_ONLY.get(f.kind) or _SPARK[f.kind]) for n, f in _READ),
        T.StructField(CORRUPT_COLUMN, T.StringType()),
    ]
)
"""The raw lines: every field as written (`members`, `assignments`, `owned` and `conflicts` still
raw)."""

EVENT_SCHEMA = T.StructType(
    [
        *(T.StructField(n, _SPARK[k]) for n, k in COMMON.items()),
        *(
            T.StructField(column, kind)
            for n, f in _READ
            for column, kind in _NORMALISED.get(n) or ((n, _SPARK[f.kind]),)
        ),
        T.StructField("source_file", T.StringType()),
        T.StructField("source_offset", T.LongType()),
        T.StructField("source_row", T.LongType()),
    ]
)

ORDER_COLUMNS = ("ts", "source_file", "source_offset", "source_row")
"""Total order of a group's events: time first, then the position in the log."""
