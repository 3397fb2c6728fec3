"""Cut each group's event stream into rebalance episodes (see docs/analytics.md).

An episode opens at `rebalance_started` and closes at the next `group_stable` ("completed") or
`group_empty` ("empty"); if another `rebalance_started` comes first it is "superseded", and if
the log ends first it is "unfinished". Only classic groups (no `group_type`) are cut here;
ZooKeeper groups by `analytics.zookeeper`. The whole job is one shuffle by group: a window over each
group's events in log order, an aggregate per episode on the same partitions, and row-local array
functions for what moved; nothing is collected to the driver.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from coordinator.analytics.schema import ASSIGNMENTS, ORDER_COLUMNS, TOPIC_PARTITIONS

CLASSIC_GROUP_TYPE = "classic"
"""The `group_type` of the episodes cut here: events without a `group_type` field."""
REBALANCE_EVENT_TYPES = (
    "rebalance_started",
    "join_completed",
    "group_empty",
    "sync_completed",
    "group_stable",
)
ENDING_TYPES = ("group_stable", "group_empty")


def empty_assignments() -> Column:
    """What a group owns after `group_empty`, or before the first rebalance of a new group."""
    return F.create_map().cast(ASSIGNMENTS)


def is_cooperative(protocol: Column) -> Column:
    """By the protocol's name, for logs that cannot say what the members did (schema v1,
    version-0 subscriptions): cooperative assignors only revoke the partitions that move, eager
    ones revoke them all."""
    return F.coalesce(protocol.contains("cooperative"), F.lit(False))


def kept_through_join(owned: Column) -> Column:
    """What a `join_completed`'s `owned` says of its rebalance: true when some member said it
    owned partitions when it joined (it kept them into the rebalance: cooperative), false when
    every member could say and none did (each revoked everything first, or had nothing yet),
    null when the log cannot tell (no `owned`, or a member whose subscription cannot say).

    The name of the protocol is no evidence: a cooperative assignor under a client that revokes
    everything before it joins (aiokafka) rebalances eagerly.
    """
    values = F.map_values(owned)
    known = F.flatten(values).isNotNull()  # a member's null entry makes the flattened list null
    said = F.flatten(F.array_except(values, F.array(F.lit(None).cast(TOPIC_PARTITIONS))))
    some_owned = F.size(F.flatten(said["partitions"])) > 0
    return (
        F.when(owned.isNull(), F.lit(None).cast("boolean"))
        .when(some_owned, True)
        .when(known, False)
    )


def _order_key() -> Column:
    return F.struct(*(F.col(c) for c in ORDER_COLUMNS))


def _topic_partitions(entries: Column) -> Column:
    """One member's assignment as a flat array of (topic, partition) structs."""
    return F.flatten(
        F.transform(
            entries,
            lambda e: F.transform(
                e["partitions"], lambda p: F.struct(e["topic"].alias("topic"), p.alias("partition"))
            ),
        )
    )


def _measurable(assignments: Column) -> Column:
    """Moves can be counted only from consumer-protocol assignments (no null member entry).

    `flatten` is null exactly when one of the arrays it joins is: the test needs no lambda
    (Spark evaluates higher-order functions in the interpreter, outside the generated code).
    """
    return F.flatten(F.map_values(assignments)).isNotNull()


def _partition_count(assignments: Column) -> Column:
    """The partitions of a measurable assignments map (entries of valid events have a topic and
    a partition list), counted without building them: the lengths of every entry's list."""
    return F.size(F.flatten(F.flatten(F.map_values(assignments))["partitions"]))


def _owner_claims(assignments: Column) -> Column:
    """Every (member, topic, partition) of an assignments map, each encoded as one string.

    Strings hash, so the set differences below are linear (arrays of structs are compared
    pairwise). The member comes first with its length in front, `LEN:MEMBER`, so the rest of the
    string, `PARTITION:TOPIC`, is recovered exactly whatever characters the names contain.
    """

    def claims_of(entry: Column) -> Column:
        member = entry["key"]
        prefix = F.concat(F.length(member).cast("string"), F.lit(":"), member)
        return F.flatten(
            F.transform(
                entry["value"],
                lambda tp: F.transform(
                    tp["partitions"],
                    lambda p: F.concat(prefix, p.cast("string"), F.lit(":"), tp["topic"]),
                ),
            )
        )

    return F.flatten(F.transform(F.map_entries(assignments), claims_of))


def _claimed_partition(claim: Column) -> Column:
    """`PARTITION:TOPIC` of a `LEN:MEMBER PARTITION:TOPIC` claim."""
    member_starts = F.instr(claim, ":") + 1
    member_length = F.substring_index(claim, ":", 1).cast("int")
    return claim.substr(member_starts + member_length, F.length(claim))


def partitions_moved(before: Column, after: Column) -> Column:
    """How many partitions `after` hands to a member that did not own them in `before`.

    A partition moves when it gets a new owner: exactly when one of its (member, partition)
    claims is in `after` and not in `before`, so the moved partitions are the distinct
    partitions of those claims. A partition only released (a cooperative revocation, the group
    emptied, a topic deleted) has not moved yet: a cooperative move counts once, in the
    rebalance that assigns it, as the KIP-848 and client-balance rows of the comparison count
    theirs. Computed inside the row: no explode, no join.
    """
    old, new = _owner_claims(before), _owner_claims(after)
    moved = F.size(F.array_distinct(F.transform(F.array_except(new, old), _claimed_partition)))
    # Many rebalances hand out exactly what members had (a member restarts, rejoins): identical
    # sorted entries prove nothing moved without building a claim per partition.
    unchanged = F.sort_array(F.map_entries(before)) == F.sort_array(F.map_entries(after))
    return F.when(unchanged, F.lit(0)).otherwise(moved)


def _rebalance_events(events: DataFrame) -> DataFrame:
    """The rebalance events of each group, numbered by the episode they fall in.

    One window over the group's events in log order (one shuffle by group, one sort) gives every
    row what `_episode_parts` needs: `episode` counts the `rebalance_started` events so far
    (0 before the first one); `closed` is true once the episode's ending event has been seen, for
    the events that follow it; `in_force` is the last assignment handed out (or released by
    `group_empty`) before the row; `next_start_ts` is set on the row just before a
    `rebalance_started`, so the episode that row belongs to knows when it was superseded;
    `group_kept` is `kept_through_join` over all the group's joins (the same sort: one window).
    """
    in_group = Window.partitionBy("group").orderBy(*ORDER_COLUMNS)
    so_far = in_group.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    whole_group = in_group.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    before_row = in_group.rowsBetween(Window.unboundedPreceding, -1)
    event_type = F.col("type")
    is_start = event_type == "rebalance_started"
    assignment_set = F.when(
        event_type == "sync_completed", F.struct(F.col("assignments").alias("a"))
    ).when(event_type == "group_empty", F.struct(empty_assignments().alias("a")))
    last_start = F.last(F.when(is_start, _order_key()), ignorenulls=True).over(so_far)
    last_ending = F.last(
        F.when(event_type.isin(*ENDING_TYPES), _order_key()), ignorenulls=True
    ).over(before_row)
    next_is_start = F.lead("type").over(in_group) == "rebalance_started"
    return (
        # Classic groups only: other group types (`group_type` set) rebalance differently and
        # are cut into episodes by their own module (`analytics.zookeeper`).
        events.where(event_type.isin(*REBALANCE_EVENT_TYPES) & F.col("group_type").isNull())
        .select(
            "group",
            "type",
            "ts",
            "node",
            "generation",
            "trigger",
            "member_count",
            "member_ids",
            "leader",
            "protocol",
            "assignments",
            "owned",
            *ORDER_COLUMNS[1:],
        )
        .select(
            "*",
            # What the group's members did in any rebalance the log can tell of (true if they
            # kept partitions in one): for its rebalances that cannot tell (superseded ones).
            F.max(F.when(event_type == "join_completed", kept_through_join(F.col("owned"))))
            .over(whole_group)
            .alias("group_kept"),
            F.sum(is_start.cast("int")).over(so_far).alias("episode"),
            F.when(is_start, F.last(assignment_set, ignorenulls=True).over(before_row)).alias(
                "in_force"
            ),
            F.coalesce(last_ending > last_start, F.lit(False)).alias("closed"),
            F.when(next_is_start, F.lead("ts").over(in_group)).alias("next_start_ts"),
        )
    )


def _stop_the_world(start: Column, end: Column) -> Column:
    """Per member of the new generation: ms spent without partitions during the episode.

    In an eager rebalance (`cooperative` false) members revoke everything at the start, so every
    member waits from the start until the assignment is handed out. In a cooperative one a member
    keeps the partitions that do not move, so only members that keep none wait (the log has no
    revocation time, so they are counted from the start too): kept is what it said it owned when
    it joined (`owned`) and is given again, or, where it could not say, what it held before.
    """
    members = F.array_distinct(F.col("members_after"))
    wait = end - start

    def cooperative_wait(member: Column) -> Column:
        current = _topic_partitions(F.coalesce(F.col("after")[member], F.array()))
        owned = F.col("owned")[member]
        held = F.when(owned.isNotNull(), owned).otherwise(F.col("before")[member])
        previous = _topic_partitions(F.coalesce(held, F.array()))
        keeps_something = F.size(F.array_intersect(previous, current)) > 0
        return F.when(keeps_something, F.lit(0).cast("long")).otherwise(wait)

    cooperative = F.map_from_entries(
        F.transform(members, lambda m: F.struct(m, cooperative_wait(m)))
    )
    everyone_waits = F.map_from_arrays(members, F.array_repeat(wait, F.size(members)))
    return F.when(F.col("cooperative"), cooperative).otherwise(everyone_waits)


def _episode_parts(rows: DataFrame) -> DataFrame:
    """One row per episode: its start row, with the episode's first ending, last join and last
    sync before the end, and the start of the episode that superseded it.

    A window over the whole episode, on the partitions the group window already made (no second
    shuffle). A sort aggregate with `min_by`/`max_by` over the order key gives the same rows at
    no lower cost (RESULTS.md, analytics).
    """
    event_type = F.col("type")
    open_ = ~F.col("closed")
    whole_episode = (
        Window.partitionBy("group", "episode")
        .orderBy(*ORDER_COLUMNS)
        .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    )

    def first(value: Column, when: Column) -> Column:
        return F.first(F.when(open_ & when, value), ignorenulls=True).over(whole_episode)

    def last(value: Column, when: Column) -> Column:
        return F.last(F.when(open_ & when, value), ignorenulls=True).over(whole_episode)

    before = (
        F.when(F.col("in_force").isNotNull(), F.col("in_force.a"))
        .when(F.col("generation") == 0, empty_assignments())
        .alias("before")
    )
    return (
        rows.where(F.col("episode") > 0)
        .select(
            "group",
            "episode",
            "type",
            F.col("ts").alias("start_ts"),
            "node",
            "trigger",
            F.col("member_count").alias("members_before"),
            before,
            "group_kept",
            first(F.struct("type", "ts"), event_type.isin(*ENDING_TYPES)).alias("ending"),
            last(
                F.struct("generation", "member_ids", "leader", "protocol", "owned"),
                event_type == "join_completed",
            ).alias("join"),
            last(F.struct("assignments"), event_type == "sync_completed").alias("synced"),
            F.max("next_start_ts").over(whole_episode).alias("next_start_ts"),
        )
        .where(event_type == "rebalance_started")
    )


def build_episodes(events: DataFrame) -> DataFrame:
    """One row per rebalance episode of every group (columns in docs/analytics.md)."""
    parts = _episode_parts(_rebalance_events(events))
    ending_type = F.col("ending.type")
    outcome = (
        F.when(ending_type == "group_stable", "completed")
        .when(ending_type == "group_empty", "empty")
        .when(F.col("next_start_ts").isNotNull(), "superseded")
        .otherwise("unfinished")
    )
    after = F.when(F.col("outcome") == "completed", F.col("synced.assignments")).when(
        F.col("outcome") == "empty", empty_assignments()
    )
    episodes = parts.select(
        "group",
        "episode",
        "node",
        F.col("join.generation").alias("generation"),
        outcome.alias("outcome"),
        "start_ts",
        F.coalesce(F.col("ending.ts"), F.col("next_start_ts")).alias("end_ts"),
        "trigger",
        "members_before",
        F.coalesce(F.col("join.member_ids"), F.array().cast("array<string>")).alias(
            "members_after"
        ),
        F.col("join").isNotNull().alias("joined"),
        F.col("join.leader").alias("leader"),
        F.col("join.protocol").alias("protocol"),
        F.col("join.owned").alias("owned"),
        # What the members did, where the log says; the protocol's name only where it cannot.
        F.coalesce(
            kept_through_join(F.col("join.owned")),
            F.col("group_kept"),
            is_cooperative(F.col("join.protocol")),
        ).alias("cooperative"),
        "before",
        "synced",
    ).withColumn("after", after)
    measurable = _measurable(F.col("before")) & _measurable(F.col("after"))
    no_wait = F.create_map().cast("map<string,bigint>")
    stop_the_world = F.when(
        F.col("outcome") == "completed", _stop_the_world(F.col("start_ts"), F.col("end_ts"))
    ).otherwise(no_wait)
    return episodes.withColumn("stop_the_world_ms", stop_the_world).select(
        "group",
        F.lit(CLASSIC_GROUP_TYPE).alias("group_type"),
        "episode",
        "node",
        "generation",
        "outcome",
        "start_ts",
        "end_ts",
        (F.col("end_ts") - F.col("start_ts")).alias("duration_ms"),
        "trigger",
        "members_before",
        "members_after",
        F.when(F.col("joined"), F.size("members_after"))
        .when(F.col("outcome") == "empty", 0)
        .alias("members_after_count"),
        "leader",
        "protocol",
        "cooperative",
        F.when(measurable, partitions_moved(F.col("before"), F.col("after"))).alias(
            "partitions_moved"
        ),
        F.when(_measurable(F.col("after")), _partition_count(F.col("after"))).alias(
            "partitions_assigned"
        ),
        "stop_the_world_ms",
        F.array_max(F.map_values("stop_the_world_ms")).alias("stop_the_world_max_ms"),
        F.aggregate(
            F.map_values("stop_the_world_ms"), F.lit(0).cast("long"), lambda a, b: a + b
        ).alias("stop_the_world_total_ms"),
        F.col("after").alias("assignment"),
        "owned",
    )
