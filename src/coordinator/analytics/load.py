"""Read the event log and split it into valid events and quarantined lines.

The input is a file, a directory of `*.jsonl` files (the log is rotated by size) or a glob; or a
Parquet table already in `EVENT_SCHEMA` (what the benchmark reads). Every input line ends up in
exactly one of the two outputs: a valid, normalised event or a quarantined line with the reason it
was rejected. Nothing is dropped silently and nothing here can make the job fail on bad content.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import reduce
from operator import or_
from urllib.parse import urlparse

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from coordinator.analytics.schema import (
    COMMON_REQUIRED,
    CORRUPT_COLUMN,
    EVENT_SCHEMA,
    EVENT_TYPES,
    FIELD_CHECK_ORDER,
    OPTIONAL_COLUMNS,
    OPTIONAL_RAW_FIELDS,
    RAW_JSON_SCHEMA,
    REQUIRED_MASK,
    SUPPORTED_VERSIONS,
    TOPIC_PARTITIONS,
)

GLOB_CHARS = frozenset("*?[")
EXAMPLES_PER_REASON = 3
_EVENT_COLUMNS = EVENT_SCHEMA.fieldNames()
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
    """The normalised rows of the input, not yet validated, and lazy views of them.

    Validation runs inside whichever job reads a view, as a filter of that job's scan. It is a
    plain conjunction of small checks, and the reason is computed only for rejected rows: Spark
    compiles a stage into one Java method, HotSpot leaves methods over 8000 bytes of bytecode
    interpreted, and with the reason's whole CASE inlined into the filter every row was validated
    by the bytecode interpreter, three times slower.
    """

    rows: DataFrame
    rows_of: Callable[[Collection[str]], DataFrame] | None = None
    """For a JSON Lines input: the rows of the lines that can hold an event of the given types,
    the others dropped before they are parsed (`_may_be_of_type`)."""

    @property
    def events(self) -> DataFrame:
        """The valid events (`EVENT_SCHEMA`)."""
        return self.rows.where(_is_valid()).select(*_EVENT_COLUMNS)

    def events_of(self, types: Collection[str]) -> DataFrame:
        """The valid events of some types: the type is tested first, so a job that needs few of
        the rows validates only those."""
        rows = self.rows if self.rows_of is None else self.rows_of(types)
        of_type = rows.where(F.col("type").isin(*types))
        return of_type.where(_is_valid(types)).select(*_EVENT_COLUMNS)

    @property
    def quarantine(self) -> DataFrame:
        """The rejected lines: reason, line, source_file, source_offset, source_row."""
        row_as_json = F.to_json(F.struct(*_EVENT_COLUMNS))
        return self.rows.where(~_is_valid()).select(
            _rejection_reason().alias("reason"),
            F.coalesce(F.col("line"), row_as_json).alias("line"),
            "source_file",
            "source_offset",
            "source_row",
        )

    @property
    def checked(self) -> DataFrame:
        """Every row: its `EVENT_SCHEMA` columns and whether it is `valid`, for jobs that count
        both kinds in one scan."""
        return self.rows.select(*_EVENT_COLUMNS, _is_valid().alias("valid"))


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
        return LoadedLog(_read_parquet(spark, source.paths))
    return LoadedLog(
        _read_jsonl(spark, source.paths),
        lambda types: _read_jsonl(spark, source.paths, _may_be_of_type(types)),
    )


def _may_be_of_type(types: Collection[str]) -> Column:
    """A test of the raw line that keeps every line whose event can be of one of `types`: the
    type's name is written in it, or it has a `\\u` escape (which could spell the name). The
    others are not parsed at all: parsing is most of the cost of a JSON Lines scan, and a job
    that reads one type in six (the rebalance events) or a few membership events would
    otherwise parse every line. A superset: the type is still tested after parsing."""
    line = F.col("value")
    test = line.contains("\\u")
    for name in types:
        test = test | line.contains(name)
    return test


def _read_jsonl(
    spark: SparkSession, paths: tuple[str, ...], lines: Column | None = None
) -> DataFrame:
    # Parsing and numbering happen in one projection on purpose: `source_row` is
    # non-deterministic, so the optimizer cannot push the validation filters below it and inline
    # `from_json` into every rule that reads a field (which parsed each line ~90 times). For the
    # same reason a test of the line (`lines`) must come before that projection: it numbers the
    # lines it keeps, in the same order, which is all `source_row` is used for (a tiebreak).
    text = spark.read.text(list(paths))
    if lines is not None:
        text = text.where(lines)
    parsed = text.select(
        F.col("value").alias("line"),
        F.col("_metadata.file_path").alias("source_file"),
        F.col("_metadata.file_block_start").alias("source_offset"),
        # Increases with the line order inside one file block: the tiebreak for equal ts.
        F.monotonically_increasing_id().alias("source_row"),
        F.from_json("value", RAW_JSON_SCHEMA, {"columnNameOfCorruptRecord": CORRUPT_COLUMN}).alias(
            "j"
        ),
    )
    j = F.col("j")
    raw_members = j["members"]
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
        _as_entries(j["assignments"]).alias("assignments"),
        _as_entries(j["owned"]).alias("owned"),
        *(j[name].alias(name) for name in ("sizes", "error", "code", "partitions")),
        *(j[name].alias(name) for name in ("partition", "groups")),
        *(j[name].alias(name) for name, _ in OPTIONAL_RAW_FIELDS),
        F.when(j["conflicts"].isNotNull(), F.size(j["conflicts"])).alias("conflict_count"),
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


def _as_entries(raw: Column) -> Column:
    """An assignments map as read (`[topic, "[partitions]"]` pairs) with structs for entries."""
    return F.transform_values(
        raw,
        lambda _member, entries: F.transform(
            entries,
            lambda pair: F.struct(
                F.get(pair, 0).alias("topic"),
                F.from_json(F.get(pair, 1), "array<int>").alias("partitions"),
            ),
        ),
    )


def _read_parquet(spark: SparkSession, paths: tuple[str, ...]) -> DataFrame:
    table = spark.read.parquet(*paths)
    missing = [
        f.name
        for f in EVENT_SCHEMA.fields
        if f.name not in table.columns and f.name not in OPTIONAL_COLUMNS
    ]
    if missing:
        raise InputError(f"Parquet input lacks the event columns {missing}")
    columns = [
        (F.col(f.name) if f.name in table.columns else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in EVENT_SCHEMA.fields
    ]
    # Rejected rows get their JSON text in `LoadedLog.quarantine`.
    no_text = F.lit(None).cast("string")
    return table.select(*columns, no_text.alias("line"), no_text.alias("parse_problem"))


def _missing(field: str) -> Column:
    return F.col(field).isNull()


def _contains_null(values: Column) -> Column:
    """Whether an array holds a null element: an ascending sort puts nulls first."""
    return F.coalesce(F.get(F.sort_array(values), 0).isNull() & (F.size(values) > 0), F.lit(False))


def _assignment_entries_invalid(column: str = "assignments") -> Column:
    """An assignment entry without a topic, without partitions, or with a null partition.

    A member whose entry is null (a non-consumer protocol; for `owned`, a subscription that
    cannot say) is valid and left out first; a null partition list makes the flattened list null.
    """
    assignments = F.col(column)
    no_entry = F.lit(None).cast(TOPIC_PARTITIONS)
    entries = F.flatten(F.array_except(F.map_values(assignments), F.array(no_entry)))
    partitions = F.flatten(entries["partitions"])  # null when one entry's partitions is null
    return assignments.isNotNull() & (
        _contains_null(entries["topic"]) | partitions.isNull() | _contains_null(partitions)
    )


def _missing_fields(types: Collection[str] | None = None) -> Column:
    """Bit mask (over `FIELD_CHECK_ORDER`) of the fields the row's type requires and it lacks;
    null when the type is unknown. With `types`, exact for rows of those types only: the
    presence of the fields none of them requires is not tested, so a scan of some types (see
    `LoadedLog.events_of`) reads none of those columns.

    One lookup of the type's mask and one mask of the fields present replace a rule per (type,
    field) pair, which kept the generated code too large for the JIT (see `LoadedLog`).
    """
    masks = F.create_map(*(F.lit(v) for item in REQUIRED_MASK.items() for v in item))
    required = F.try_element_at(masks, F.col("type"))
    needed = -1 if types is None else reduce(or_, (REQUIRED_MASK.get(t, 0) for t in types), 0)
    present = reduce(
        lambda total, bit: total + bit,
        (
            F.when(F.col(name).isNotNull(), F.lit(1 << i)).otherwise(F.lit(0))
            for i, name in enumerate(FIELD_CHECK_ORDER)
            if needed & (1 << i)
        ),
        F.lit(0),
    )
    return required.bitwiseAND(F.bitwise_not(present))


def _first_missing_name(missing: Column) -> Column:
    """`missing_field:NAME` for the lowest bit set in a `_missing_fields` mask."""
    lowest_bit = F.instr(F.reverse(F.bin(missing)), "1") - 1
    names = F.array(*(F.lit(name) for name in FIELD_CHECK_ORDER))
    return F.concat(F.lit("missing_field:"), F.get(names, lowest_bit))


def _rules(types: Collection[str] | None = None) -> list[tuple[Column, Column]]:
    """(broken, reason) in the order reasons are reported; `broken` is never null. With `types`,
    exact for rows of those types only (`_missing_fields`)."""
    parse_problem = F.col("parse_problem")
    missing = _missing_fields(types)
    rules = [
        (parse_problem.isin("blank_line", "malformed_json"), parse_problem),
        (_missing("v") | ~F.col("v").isin(*SUPPORTED_VERSIONS), F.lit("unknown_version")),
        *((_missing(name), F.lit(f"missing_field:{name}")) for name in COMMON_REQUIRED),
        (~F.col("type").isin(*EVENT_TYPES), F.lit("unknown_type")),
        (missing != 0, _first_missing_name(missing)),
        (_assignment_entries_invalid(), F.lit("invalid_field:assignments")),
        (_assignment_entries_invalid("owned"), F.lit("invalid_field:owned")),
        (parse_problem.isNotNull(), parse_problem),
    ]
    return [(F.coalesce(broken, F.lit(False)), reason) for broken, reason in rules]


def _is_valid(types: Collection[str] | None = None) -> Column:
    """True when no rule is broken: the filter that every job's event scan runs on every row.
    With `types`, exact for rows of those types only (the scans of `events_of`, which keep only
    those): a field no such type requires is not read."""
    rules = _rules(types)
    return ~reduce(lambda either, broken: either | broken, (broken for broken, _ in rules))


def _rejection_reason() -> Column:
    """The first rule a row breaks (evaluated only for rows that `_is_valid` rejects)."""
    (first_broken, first_reason), *rest = _rules()
    chain = F.when(first_broken, first_reason)
    return reduce(lambda acc, rule: acc.when(rule[0], rule[1]), rest, chain)


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
