"""The cluster's tables in PostgreSQL, created and migrated by the node itself, versioned.

* `schema_version(version)`: the layout's version (`SCHEMA_VERSION`). A database whose version
  is newer than this release's refuses the node in one line; an older one is migrated in one
  transaction, under an advisory lock, so nodes starting together migrate once.
* `nodes(node_id, incarnation, host, port, rack, lease_expires, started_at)`: the live nodes
  (Metadata's broker list), each with a lease the server's clock judges.
* `leases(partition, epoch, owner, lease_expires, changed_at)`: one row per `__consumer_offsets`
  partition. `epoch` grows on every takeover: it is the fencing token. `owner` is NULL and
  `lease_expires` '-infinity' once the owner released it.
* `records(partition, kind, key, value, seq)`: the compacted (kind, key) -> value view of each
  partition's groups, as the SQLite store keeps it, with the partition added; `seq` orders a
  load by last write. No index on `seq` (a load sorts): updates then touch no index and stay
  HOT-updatable in pages left part free (`fillfactor`).
* `rebalance_fenced_append(...)`: one batch of upserts and deletes, written only if every
  partition's epoch is still the writer's (see `FENCED_APPEND`). Version 2 takes the batch's
  keys and values as two blobs with their lengths (version 1 took arrays of them, which the
  driver sent element by element: most of a large batch's time).
* `ownership_changes` (version 3): every takeover and release, written by a trigger on `leases`
  (`coordinator.cluster.history`).
* `topics`, `deleted_topics`, `topic_catalogue_version` (version 4): the cluster's topics, their
  ids, partition counts and configs, decided here for every node
  (`coordinator.cluster.topic_tables`, `coordinator.cluster.topic_catalogue`).

Every expiry is `clock_timestamp()` in SQL: the server's clock, never a node's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from coordinator.cluster.history import OWNERSHIP_CHANGES
from coordinator.cluster.topic_tables import TOPIC_CATALOGUE
from coordinator.errors import ClusterError

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION: Final = 4
LEASES_CHANNEL: Final = "rebalance_leases"
"""The NOTIFY channel every lease change is announced on (a hint; nodes also poll)."""
MIGRATION_LOCK: Final = 0x7265_6261_6C61_6E63  # "rebalanc": one advisory lock for migrations

TABLES: Final = """
CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    node_id       integer PRIMARY KEY,
    incarnation   text        NOT NULL,
    host          text        NOT NULL,
    port          integer     NOT NULL,
    rack          text,
    lease_expires timestamptz NOT NULL,
    started_at    timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    partition     integer PRIMARY KEY,
    epoch         bigint      NOT NULL DEFAULT 0,
    owner         integer,
    lease_expires timestamptz NOT NULL DEFAULT '-infinity',
    changed_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS records (
    partition integer NOT NULL,
    kind      text    NOT NULL,
    key       text    NOT NULL,
    value     bytea   NOT NULL,
    seq       bigint  NOT NULL,
    PRIMARY KEY (partition, kind, key)
) WITH (fillfactor = 80);
CREATE SEQUENCE IF NOT EXISTS records_seq;
"""

FENCED_APPEND_V1: Final = """
CREATE OR REPLACE FUNCTION rebalance_fenced_append(
    held_partitions integer[], held_epochs bigint[],
    upsert_partitions integer[], upsert_kinds text[], upsert_keys text[], upsert_values bytea[],
    delete_partitions integer[], delete_kinds text[], delete_keys text[]
) RETURNS integer[] LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'rebalance_fenced_append of schema version 1 is replaced in version 2';
END
$$;
"""

FENCED_APPEND: Final = """
DROP FUNCTION IF EXISTS rebalance_fenced_append(
    integer[], bigint[], integer[], text[], text[], bytea[], integer[], text[], text[]);
-- Rows as columns of one batch: partition, kind, the key's and the value's byte length (value
-- length -1: a tombstone), the keys and values each one blob (the driver then sends a few
-- large parameters, not thousands of array elements).
CREATE OR REPLACE FUNCTION rebalance_batch_rows(
    row_partitions integer[], row_kinds text[],
    key_lengths integer[], keys bytea, value_lengths integer[], row_values bytea
) RETURNS TABLE (n bigint, p integer, k text, key text, v bytea) LANGUAGE sql IMMUTABLE AS $$
    SELECT r.n, r.p, r.k,
           convert_from(substring(keys FROM (r.ko - r.kl + 1)::integer FOR r.kl), 'UTF8'),
           CASE WHEN r.vl < 0 THEN NULL
                ELSE substring(row_values FROM (r.vo - greatest(r.vl, 0) + 1)::integer FOR r.vl)
           END
      FROM (SELECT u.n, u.p, u.k, u.kl, u.vl,
                   sum(u.kl) OVER w AS ko, sum(greatest(u.vl, 0)) OVER w AS vo
              FROM unnest(row_partitions, row_kinds, key_lengths, value_lengths)
                   WITH ORDINALITY AS u(p, k, kl, vl, n)
            WINDOW w AS (ORDER BY u.n)) AS r
$$;
CREATE OR REPLACE FUNCTION rebalance_fenced_append(
    held_partitions integer[], held_epochs bigint[],
    row_partitions integer[], row_kinds text[],
    key_lengths integer[], keys bytea, value_lengths integer[], row_values bytea
) RETURNS integer[] LANGUAGE plpgsql AS $$
DECLARE
    fenced integer[];
BEGIN
    -- FOR SHARE, not a plain read: a takeover's UPDATE of the epoch row now waits for this
    -- transaction, so either it commits first (and the new owner loads these rows) or the
    -- check below sees its epoch. FOR KEY SHARE would not block that UPDATE.
    PERFORM 1 FROM leases WHERE partition = ANY(held_partitions) ORDER BY partition FOR SHARE;
    -- A new statement, a new snapshot: every takeover committed before the lock is seen.
    SELECT coalesce(array_agg(h.p ORDER BY h.p), '{}') INTO fenced
      FROM unnest(held_partitions, held_epochs) AS h(p, e)
      LEFT JOIN leases AS l ON l.partition = h.p
     WHERE l.epoch IS DISTINCT FROM h.e;
    IF cardinality(fenced) > 0 THEN
        RETURN fenced;  -- nothing written
    END IF;
    DELETE FROM records AS r
     USING rebalance_batch_rows(row_partitions, row_kinds, key_lengths, keys, value_lengths,
                                row_values) AS b
     WHERE b.v IS NULL AND r.partition = b.p AND r.kind = b.k AND r.key = b.key;
    INSERT INTO records (partition, kind, key, value, seq)
    SELECT b.p, b.k, b.key, b.v, nextval('records_seq')
      FROM rebalance_batch_rows(row_partitions, row_kinds, key_lengths, keys, value_lengths,
                                row_values) AS b
     WHERE b.v IS NOT NULL ORDER BY b.n
    ON CONFLICT (partition, kind, key) DO UPDATE SET value = excluded.value, seq = excluded.seq;
    RETURN fenced;
END
$$;
"""

MIGRATIONS: Final[dict[int, str]] = {
    1: TABLES + FENCED_APPEND_V1,
    2: FENCED_APPEND,
    3: OWNERSHIP_CHANGES,
    4: TOPIC_CATALOGUE,
}
"""The statements that bring a database from version N-1 to N (1: from nothing)."""


def newer_schema_error(found: int, url: str) -> ClusterError:
    return ClusterError(
        f"the cluster database at {url} has schema version {found}, newer than this release's "
        f"({SCHEMA_VERSION}): upgrade rebalance on this node"
    )


def partition_count_error(found: int, wanted: int, url: str) -> ClusterError:
    return ClusterError(
        f"the cluster at {url} has {found} __consumer_offsets partitions, this node was started "
        f"with offsets.topic.num.partitions={wanted}: start it with {found}"
    )


def steps(found: int | None, url: str) -> list[str]:
    """The migrations from version `found` (None: no tables yet) to `SCHEMA_VERSION`."""
    current = found or 0
    if current > SCHEMA_VERSION:
        raise newer_schema_error(current, url)
    return [MIGRATIONS[v] for v in range(current + 1, SCHEMA_VERSION + 1)]


async def ensure_schema(
    connection: psycopg.AsyncConnection[tuple[Any, ...]], url: str, partitions: int
) -> None:
    """Create or migrate the tables and give every partition its lease row, in one transaction
    under an advisory lock (nodes starting together wait for one another); `ClusterError` for
    a newer schema or another partition count."""
    async with connection.transaction():
        await _migrate(connection, url)
        await connection.execute(
            "INSERT INTO leases (partition) SELECT generate_series(0, %s - 1)"
            " ON CONFLICT (partition) DO NOTHING",
            (partitions,),
        )
        row = await (await connection.execute("SELECT count(*) FROM leases")).fetchone()
        count = int(row[0]) if row else 0
        if count != partitions:
            raise partition_count_error(count, partitions, url)


async def ensure_tables(connection: psycopg.AsyncConnection[tuple[Any, ...]], url: str) -> None:
    """Create or migrate the tables only (a part of the node that starts before its leases:
    the topic catalogue), in one transaction under the same advisory lock."""
    async with connection.transaction():
        await _migrate(connection, url)


async def _migrate(connection: psycopg.AsyncConnection[tuple[Any, ...]], url: str) -> None:
    await connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
    await connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)")
    row = await (await connection.execute("SELECT max(version) FROM schema_version")).fetchone()
    found = row[0] if row else None
    for step in steps(found, url):
        await connection.execute(step)
    if found != SCHEMA_VERSION:
        await connection.execute("DELETE FROM schema_version")
        await connection.execute(
            "INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION,)
        )
