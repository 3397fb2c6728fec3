"""Read the event log and split it into valid events and quarantined lines.

The input is a file, a directory of `*.jsonl` files (the log is rotated by size) or a glob; or a
Parquet table already in `EVENT_SCHEMA` (what the benchmark reads). Every input line ends up in
exactly one of the two outputs: a valid, normalised event or a quarantined line with the reason it
was rejected. Nothing is dropped silently and nothing here can make the job fail on bad content.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from functools import reduce
from urllib.parse import urlparse

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from coordinator.analytics.schema import (
    COMMON_REQUIRED,
    CORRUPT_COLUMN,
    EVENT_SCHEMA,
    EVENT_TYPES,
    GROUP_EVENT_TYPES,
    RAW_JSON_SCHEMA,
    REQUIRED_BY_TYPE,
    SUPPORTED_VERSION,
)

GLOB_CHARS = frozenset("*?[")
EXAMPLES_PER_REASON = 3
PLAIN_FIELDS = (
    *("ts", "node", "type", "group", "generation", "member"),
    *("client_id", "instance_id", "protocols", "reason", "trigger"),
)
"""Raw JSON fields that keep their name and type in `EVENT_SCHEMA`."""


class InputError(ValueError):
    """The input path cannot be read as an event log (missing, empty, or of unknown layout)."""


@dataclass(frozen=True)
class EventInput:
    """Where the log is and how it is stored: "jsonl" or "parquet"."""

    paths: tuple[str, ...]
    format: str


@dataclass(frozen=True)
class LoadedLog:
    """The valid events (`EVENT_SCHEMA`) and the rejected lines (reason, line, source_file)."""

    events: DataFrame
    quarantine: DataFrame


def _is_remote(path: str) -> bool:
    scheme = urlparse(path).scheme
    return len(scheme) > 1 and scheme != "file"  # one letter is a Windows drive, not a scheme


def _local_path(path: str) -> str:
    return urlparse(path).path if path.startswith("file:") else path


def resolve_input(path: str) -> EventInput:
    """Check a local input early (with a clear message); remote URIs are left to Spark."""
    if _is_remote(path):
        fmt = "parquet" if path.rstrip("/").endswith(".parquet") else "jsonl"
        return EventInput((path,), fmt)
    local = _local_path(path)
    if GLOB_CHARS & set(local):
        matches = sorted(p for p in glob.glob(local) if os.path.isfile(p))
        if not matches:
            raise InputError(f"no file matches the input pattern {path!r}")
        return EventInput(tuple(os.path.abspath(p) for p in matches), "jsonl")
    if os.path.isdir(local):
        jsonl = sorted(glob.glob(os.path.join(local, "*.jsonl")))
        if jsonl:
            return EventInput(tuple(os.path.abspath(p) for p in jsonl), "jsonl")
        if glob.glob(os.path.join(local, "*.parquet")):
            return EventInput((os.path.abspath(local),), "parquet")
        raise InputError(f"input directory {path!r} holds no *.jsonl or *.parquet files")
    if os.path.isfile(local):
        fmt = "parquet" if local.endswith(".parquet") else "jsonl"
        return EventInput((os.path.abspath(local),), fmt)
    raise InputError(f"input path {path!r} does not exist")


def load_events(spark: SparkSession, source: EventInput) -> LoadedLog:
    """Read the log and validate every line (lazily: nothing runs until an output is written)."""
    if source.format == "parquet":
        return _validate(_read_parquet(spark, source.paths))
    return _validate(_read_jsonl(spark, source.paths))


def _read_jsonl(spark: SparkSession, paths: tuple[str, ...]) -> DataFrame:
    lines = spark.read.text(list(paths)).select(
        F.col("value").alias("line"),
        F.col("_metadata.file_path").alias("source_file"),
        F.col("_metadata.file_block_start").alias("source_offset"),
        # Increases with the line order inside one file block: the tiebreak for equal ts.
        F.monotonically_increasing_id().alias("source_row"),
    )
    parsed = lines.withColumn(
        "j", F.from_json("line", RAW_JSON_SCHEMA, {"columnNameOfCorruptRecord": CORRUPT_COLUMN})
    )
    j = F.col("j")
    raw_members = j["members"]
    assignments = F.transform_values(
        j["assignments"],
        lambda _member, entries: F.transform(
            entries,
            lambda pair: F.struct(
                F.get(pair, 0).alias("topic"),
                F.from_json(F.get(pair, 1), "array<int>").alias("partitions"),
            ),
        ),
    )
    blank = F.trim(F.col("line")) == ""
    unparsed = j.isNull() | (
        j[CORRUPT_COLUMN].isNotNull() & j["v"].isNull() & j["ts"].isNull() & j["type"].isNull()
    )
    normalised = [
        F.when(j["v"].between(-(2**31), 2**31 - 1), j["v"].cast("int")).alias("v"),
        *(j[name].alias(name) for name in PLAIN_FIELDS),
        F.when(j["type"] == "rebalance_started", raw_members.try_cast("int")).alias("member_count"),
        F.when(j["type"] == "join_completed", F.from_json(raw_members, "array<string>")).alias(
            "member_ids"
        ),
        j["leader"].alias("leader"),
        j["protocol"].alias("protocol"),
        assignments.alias("assignments"),
        *(j[name].alias(name) for name in ("sizes", "error", "code", "partitions")),
        *(j[name].alias(name) for name in ("partition", "groups")),
        *(F.col(name) for name in ("source_file", "source_offset", "source_row")),
    ]
    return parsed.select(
        *normalised,
        F.col("line"),
        F.when(blank, "blank_line")
        .when(unparsed, "malformed_json")
        .when(j[CORRUPT_COLUMN].isNotNull(), "invalid_field_type")
        .alias("parse_problem"),
    )


def _read_parquet(spark: SparkSession, paths: tuple[str, ...]) -> DataFrame:
    table = spark.read.parquet(*paths)
    missing = [f.name for f in EVENT_SCHEMA.fields if f.name not in table.columns]
    if missing:
        raise InputError(f"Parquet input lacks the event columns {missing}")
    columns = [F.col(f.name).cast(f.dataType).alias(f.name) for f in EVENT_SCHEMA.fields]
    no_text = F.lit(None).cast("string")  # rejected rows get their JSON text in `_validate`
    return table.select(*columns, no_text.alias("line"), no_text.alias("parse_problem"))


def _missing(field: str) -> Column:
    return F.col(field).isNull()


def _assignment_entries_invalid() -> Column:
    entries_ok = F.forall(
        F.map_values(F.col("assignments")),
        lambda entries: (
            entries.isNull()
            | F.forall(
                entries,
                lambda e: (
                    e["topic"].isNotNull()
                    & e["partitions"].isNotNull()
                    & F.forall(e["partitions"], lambda p: p.isNotNull())
                ),
            )
        ),
    )
    return F.col("assignments").isNotNull() & ~entries_ok


def _rejection_reason() -> Column:
    """The first thing wrong with a row, or null when it is a valid event."""
    event_type = F.col("type")
    rules: list[tuple[Column, str]] = [
        (F.col("parse_problem").isin("blank_line", "malformed_json"), "parse_problem"),
        (_missing("v"), "unknown_version"),
        (F.col("v") != SUPPORTED_VERSION, "unknown_version"),
    ]
    rules += [(_missing(name), f"missing_field:{name}") for name in COMMON_REQUIRED]
    rules.append((~event_type.isin(*EVENT_TYPES), "unknown_type"))
    rules.append((event_type.isin(*GROUP_EVENT_TYPES) & _missing("group"), "missing_field:group"))
    for name, required in REQUIRED_BY_TYPE.items():
        rules += [((event_type == name) & _missing(f), f"missing_field:{f}") for f in required]
    rules.append((_assignment_entries_invalid(), "invalid_field:assignments"))
    rules.append((F.col("parse_problem").isNotNull(), "parse_problem"))
    first, *rest = rules

    def label(reason: str) -> Column:
        return F.col("parse_problem") if reason == "parse_problem" else F.lit(reason)

    chain = F.when(first[0], label(first[1]))
    chain = reduce(lambda acc, rule: acc.when(rule[0], label(rule[1])), rest, chain)
    return chain


def _validate(rows: DataFrame) -> LoadedLog:
    checked = rows.withColumn("reason", _rejection_reason())
    events = checked.where(F.col("reason").isNull()).select(
        *(F.col(f.name) for f in EVENT_SCHEMA.fields)
    )
    row_as_json = F.to_json(F.struct(*(F.col(f.name) for f in EVENT_SCHEMA.fields)))
    quarantine = checked.where(F.col("reason").isNotNull()).select(
        "reason",
        F.coalesce(F.col("line"), row_as_json).alias("line"),
        "source_file",
        "source_offset",
        "source_row",
    )
    return LoadedLog(events, quarantine)


def quarantine_summary(quarantine: DataFrame) -> DataFrame:
    """Per reason: how many lines, and the first few of them as examples (a small table)."""
    first_lines = Window.partitionBy("reason").orderBy("source_file", "source_offset", "source_row")
    examples = (
        quarantine.withColumn("n", F.row_number().over(first_lines))
        .where(F.col("n") <= EXAMPLES_PER_REASON)
        .groupBy("reason")
        .agg(F.sort_array(F.collect_list(F.struct("n", "line"))).alias("ex"))
        .select("reason", F.transform("ex", lambda e: e["line"]).alias("examples"))
    )
    counts = quarantine.groupBy("reason").agg(F.count(F.lit(1)).alias("lines"))
    return counts.join(examples, "reason").orderBy(F.desc("lines"), "reason")
