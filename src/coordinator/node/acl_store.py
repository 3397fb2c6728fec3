"""The node's ACLs, durable in `DATA_DIR/acls.sqlite` and held in memory for the authorizer.

At start every stored ACL is read back (replayed) into memory; CreateAcls and DeleteAcls write
through, committing (WAL, `synchronous=FULL`) before they are answered, so an acknowledged
change survives a crash. ACL changes are rare administrative requests, so the commit runs on the
event loop (a few milliseconds) instead of a writer thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from coordinator.errors import OperationalError
from coordinator.wire.security.acls import (
    Acl,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

FILE_NAME: Final = "acls.sqlite"

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS acls (
    resource_type INTEGER NOT NULL,
    resource_name TEXT    NOT NULL,
    pattern_type  INTEGER NOT NULL,
    principal     TEXT    NOT NULL,
    host          TEXT    NOT NULL,
    operation     INTEGER NOT NULL,
    permission    INTEGER NOT NULL,
    PRIMARY KEY (resource_type, resource_name, pattern_type, principal, host, operation,
                 permission)
) WITHOUT ROWID;
"""


class AclStore:
    """The ACLs of a data dir; `changed` is called after every change."""

    def __init__(self, data_dir: Path, changed: Callable[[], None] = lambda: None) -> None:
        self.path = data_dir / FILE_NAME
        self._changed = changed
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            rows = self._db.execute("SELECT * FROM acls").fetchall()
        except sqlite3.DatabaseError as exc:
            raise OperationalError(f"cannot use {self.path}: {exc}") from None
        self._acls: dict[Acl, None] = {_acl(row): None for row in rows}

    def __len__(self) -> int:
        return len(self._acls)

    def all(self) -> list[Acl]:
        return list(self._acls)

    def close(self) -> None:
        self._db.close()

    def add(self, acls: Iterable[Acl]) -> None:
        new = [acl for acl in acls if acl not in self._acls]
        if not new:
            return
        self._write("INSERT OR IGNORE INTO acls VALUES (?, ?, ?, ?, ?, ?, ?)", new)
        self._acls.update(dict.fromkeys(new))
        self._changed()

    def remove(self, selector: AclFilter) -> list[Acl]:
        """Delete the ACLs the filter matches; returns them."""
        gone = [acl for acl in self._acls if selector.matches(acl)]
        if gone:
            self._write(
                "DELETE FROM acls WHERE resource_type = ? AND resource_name = ? AND "
                "pattern_type = ? AND principal = ? AND host = ? AND operation = ? AND "
                "permission = ?",
                gone,
            )
            for acl in gone:
                del self._acls[acl]
            self._changed()
        return gone

    def _write(self, statement: str, acls: list[Acl]) -> None:
        rows = [
            (int(a.resource_type), a.resource_name, int(a.pattern_type), a.principal, a.host,
             int(a.operation), int(a.permission))
            for a in acls
        ]  # fmt: skip
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(statement, rows)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def _acl(row: tuple[int, str, int, str, str, int, int]) -> Acl:
    kind, name, pattern, principal, host, operation, permission = row
    return Acl(
        ResourceType(kind), name, PatternType(pattern), principal, host, Operation(operation),
        Permission(permission),
    )  # fmt: skip
