"""What a cluster looks like now, read from its PostgreSQL: `rebalance cluster status`.

`read_status(url)` reads, in one snapshot, the registered nodes (alive while their lease has not
expired on the server's clock), each `__consumer_offsets` partition's owner, epoch and lease, and
the partitions' last ownership changes (`leases.changed_at`: the last takeover or release of each
partition, newest first; the schema keeps no longer history). `format_status` prints it.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.cluster.connection import driver, one_line, redacted
from coordinator.cluster.schema import SCHEMA_VERSION, newer_schema_error
from coordinator.errors import ClusterError

LAST_CHANGES = 10
"""How many ownership changes the status shows."""


@dataclass(frozen=True)
class NodeRow:
    node_id: int
    host: str
    port: int
    alive: bool
    lease_left_s: float


@dataclass(frozen=True)
class LeaseRow:
    partition: int
    epoch: int
    owner: int | None
    live: bool
    changed_at: datetime.datetime


@dataclass(frozen=True)
class ClusterStatus:
    url: str
    nodes: Sequence[NodeRow]
    leases: Sequence[LeaseRow]

    def held_by(self, node_id: int) -> list[LeaseRow]:
        return [row for row in self.leases if row.live and row.owner == node_id]

    def unowned(self) -> list[LeaseRow]:
        return [row for row in self.leases if not row.live]

    def last_changes(self, count: int = LAST_CHANGES) -> list[LeaseRow]:
        changed = [row for row in self.leases if row.epoch > 0]
        return sorted(changed, key=lambda r: (r.changed_at, r.partition), reverse=True)[:count]


def read_status(url: str) -> ClusterStatus:
    """The cluster at `url` now; `ClusterError` (one line) if it cannot be read or has no
    schema (no node ever started there)."""
    driver()
    import psycopg

    shown = redacted(url)
    try:
        with (
            psycopg.connect(url, connect_timeout=5, application_name="rebalance status") as db,
            db.transaction(),  # one snapshot: nodes and leases of the same moment
        ):
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            row = db.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
            if not row or not row[0]:
                raise ClusterError(
                    f"no cluster at {shown}: no node has started there yet "
                    f"(rebalance serve --cluster creates its tables)"
                )
            version = db.execute("SELECT max(version) FROM schema_version").fetchone()
            if version and version[0] is not None and version[0] > SCHEMA_VERSION:
                raise newer_schema_error(version[0], shown)
            nodes = db.execute(
                "SELECT node_id, host, port, lease_expires > clock_timestamp(),"
                " CASE WHEN lease_expires > clock_timestamp()"
                " THEN extract(epoch FROM lease_expires - clock_timestamp()) ELSE 0 END"
                " FROM nodes ORDER BY node_id"
            ).fetchall()
            leases = db.execute(
                "SELECT partition, epoch, owner, lease_expires > clock_timestamp(),"
                " changed_at FROM leases ORDER BY partition"
            ).fetchall()
    except psycopg.Error as exc:
        raise ClusterError(f"cannot read the cluster at {shown}: {one_line(exc)}") from exc
    return ClusterStatus(
        shown,
        [NodeRow(int(i), h, int(p), bool(a), float(left)) for i, h, p, a, left in nodes],
        [LeaseRow(int(p), int(e), o, bool(live), at) for p, e, o, live, at in leases],
    )


def format_status(status: ClusterStatus) -> str:
    lines = [f"cluster at {status.url}: {len(status.nodes)} nodes, {len(status.leases)} partitions"]
    lines.append("")
    lines.append("nodes:")
    for node in status.nodes:
        state = f"alive (lease {node.lease_left_s:.1f} s left)" if node.alive else "gone"
        held = status.held_by(node.node_id)
        address = f"{node.host}:{node.port}"
        lines.append(f"  node {node.node_id}  {address}  {state}  {len(held)} partitions")
        if held:
            lines.append("    " + " ".join(f"{r.partition}@{r.epoch}" for r in held))
    unowned = status.unowned()
    if unowned:
        lines.append(f"  no owner: {len(unowned)} partitions")
        lines.append("    " + " ".join(f"{r.partition}@{r.epoch}" for r in unowned))
    lines.append("")
    lines.append("last ownership changes (partition@epoch, newest first):")
    for row in status.last_changes():
        at = row.changed_at.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        if row.live:
            what = f"taken by node {row.owner}"
        elif row.owner is None:
            what = "released"
        else:
            what = f"lease of node {row.owner} expired"
        lines.append(f"  {at} UTC  {row.partition}@{row.epoch}  {what}")
    return "\n".join(lines)
