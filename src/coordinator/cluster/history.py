"""The cluster's ownership changes, kept by PostgreSQL itself: schema version 3.

`ownership_changes(id, at, partition, epoch, owner, previous_owner, previous_lapsed)` gets a row
from a trigger on `leases` whenever a partition's epoch or owner changes: a takeover (epoch + 1,
the new owner; `previous_lapsed` when the old owner's lease had run out, a failover, rather than
been released, a handover) or a release (owner NULL). The trigger writes it in the takeover's own
transaction, so the history never misses or invents one, and no node has to remember to. A
takeover after a release names the node that released it. It keeps
the last `KEPT` rows. `rebalance cluster status` prints the newest (`last_changes`).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Final

KEPT: Final = 10_000

OWNERSHIP_CHANGES: Final = f"""
CREATE TABLE IF NOT EXISTS ownership_changes (
    id              bigserial   PRIMARY KEY,
    at              timestamptz NOT NULL,
    partition       integer     NOT NULL,
    epoch           bigint      NOT NULL,
    owner           integer,
    previous_owner  integer,
    previous_lapsed boolean     NOT NULL
);
CREATE INDEX IF NOT EXISTS ownership_changes_partition ON ownership_changes (partition, id);
CREATE OR REPLACE FUNCTION rebalance_log_ownership() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    made bigint;
    previous integer := OLD.owner;
BEGIN
    IF previous IS NULL AND NEW.owner IS NOT NULL THEN  -- taken after a release: by whom
        SELECT c.previous_owner INTO previous FROM ownership_changes AS c
         WHERE c.partition = NEW.partition AND c.owner IS NULL ORDER BY c.id DESC LIMIT 1;
    END IF;
    INSERT INTO ownership_changes (at, partition, epoch, owner, previous_owner, previous_lapsed)
    VALUES (clock_timestamp(), NEW.partition, NEW.epoch, NEW.owner, previous,
            OLD.owner IS NOT NULL AND OLD.lease_expires < clock_timestamp())
    RETURNING id INTO made;
    DELETE FROM ownership_changes WHERE id <= made - {KEPT};
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS leases_ownership_changes ON leases;
CREATE TRIGGER leases_ownership_changes AFTER UPDATE OF epoch, owner ON leases FOR EACH ROW
    WHEN (OLD.epoch IS DISTINCT FROM NEW.epoch OR OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION rebalance_log_ownership();
"""


@dataclass(frozen=True)
class OwnershipChange:
    at: datetime.datetime
    partition: int
    epoch: int
    owner: int | None
    previous_owner: int | None
    previous_lapsed: bool

    def describe(self) -> str:
        if self.owner is None:
            return f"released by node {self.previous_owner}"
        if self.previous_owner is None:
            return f"taken by node {self.owner}"
        how = "its lease lapsed" if self.previous_lapsed else "handed over"
        return f"node {self.previous_owner} -> node {self.owner} ({how})"


def last_changes(db: Any, count: int) -> list[OwnershipChange]:
    """The newest `count` changes, newest first (`db`: a psycopg connection)."""
    rows = db.execute(
        "SELECT at, partition, epoch, owner, previous_owner, previous_lapsed"
        " FROM ownership_changes ORDER BY id DESC LIMIT %s",
        (count,),
    ).fetchall()
    return [OwnershipChange(*row) for row in rows]
