"""SCRAM credentials of SASL users, durable in `DATA_DIR/credentials.sqlite`.

One row per (user, mechanism): salt, StoredKey, ServerKey and iteration count (see
`coordinator.wire.security.scram`); never the password. A file of its own rather than a kind of
record in
`groups.sqlite`, because `rebalance users add/remove` writes it while a server may be running
(SQLite's locking makes that safe; the file is in WAL mode with `synchronous=FULL`, so a user
added is on disk when the command returns) and the server reads the credential at each
authentication: a change applies to the next login, with no restart and no replay. SASL/PLAIN
checks its password against the same credentials.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

from coordinator.errors import OperationalError
from coordinator.wire.security.scram import (
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
    salted_credential,
)

FILE_NAME: Final = "credentials.sqlite"

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS scram_credentials (
    user       TEXT    NOT NULL,
    mechanism  TEXT    NOT NULL,
    salt       BLOB    NOT NULL,
    stored_key BLOB    NOT NULL,
    server_key BLOB    NOT NULL,
    iterations INTEGER NOT NULL,
    PRIMARY KEY (user, mechanism)
) WITHOUT ROWID;
"""


class CredentialStore:
    """The credentials file of a data dir (created on first use)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=10)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise OperationalError(f"cannot use {self.path}: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def add(
        self,
        user: str,
        password: str,
        mechanisms: Iterable[str] = tuple(MECHANISMS),
        *,
        iterations: int = MIN_ITERATIONS,
    ) -> None:
        """Create or replace the user's credential for each mechanism."""
        if not user:
            raise ValueError("a user name must not be empty")
        credentials = [
            (user, mechanism, salted_credential(mechanism, password, iterations=iterations))
            for mechanism in mechanisms
        ]
        self.alter((), credentials)

    def alter(
        self,
        deletions: Iterable[tuple[str, str]],
        upsertions: Iterable[tuple[str, str, ScramCredential]],
    ) -> None:
        """Delete (user, mechanism) credentials and create or replace others, in one
        transaction: all of it is on disk when this returns, or none of it."""
        rows = [
            (user, mechanism, c.salt, c.stored_key, c.server_key, c.iterations)
            for user, mechanism, c in upsertions
        ]
        with self._transaction():
            self._db.executemany(
                "DELETE FROM scram_credentials WHERE user = ? AND mechanism = ?", list(deletions)
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO scram_credentials VALUES (?, ?, ?, ?, ?, ?)", rows
            )

    def remove(self, user: str, mechanisms: Iterable[str] = tuple(MECHANISMS)) -> int:
        """Delete the user's credentials for these mechanisms; returns how many there were."""
        with self._transaction():
            removed = 0
            for mechanism in mechanisms:
                cursor = self._db.execute(
                    "DELETE FROM scram_credentials WHERE user = ? AND mechanism = ?",
                    (user, mechanism),
                )
                removed += cursor.rowcount
        return removed

    def users(self) -> list[tuple[str, str, int]]:
        """(user, mechanism, iterations) of every credential, by user."""
        return [
            (str(user), str(mechanism), int(iterations))
            for user, mechanism, iterations in self._db.execute(
                "SELECT user, mechanism, iterations FROM scram_credentials ORDER BY user, mechanism"
            )
        ]

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        row = self._db.execute(
            "SELECT salt, stored_key, server_key, iterations FROM scram_credentials "
            "WHERE user = ? AND mechanism = ?",
            (user, mechanism),
        ).fetchone()
        return None if row is None else ScramCredential(*row)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
