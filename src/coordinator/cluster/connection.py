"""Connections to the cluster's PostgreSQL, with psycopg 3 (the `[cluster]` extra).

Why psycopg 3 and not asyncpg: psycopg runs on libpq, so a URL means what it means to `psql`
and to every other libpq client, including multi-host URLs with `target_session_attrs=read-write`
(a promoted standby is found by the driver) and `tcp_user_timeout` / keepalives, which a node
needs to notice a silent network; its `AsyncConnection` is native asyncio with LISTEN/NOTIFY
(`notifies()`). asyncpg is faster per call, but it implements the protocol itself and its
multi-host failover was not confirmed; a fenced append is one call per group-commit batch,
so per-call speed does not decide (benchmarks/RESULTS.md, "Cluster store").

Every failure to connect or to talk is one line naming the server (`ClusterError`), never the
password.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from coordinator.errors import ClusterError, MissingExtraError

if TYPE_CHECKING:
    import psycopg

SESSION_SETTINGS: Mapping[str, str] = {
    # A node paused inside a transaction holds its row locks and so blocks a takeover: the
    # server ends such a session after this long (the node's writes are single statements and
    # never sit idle in a transaction, so this only bounds a stuck one).
    "idle_in_transaction_session_timeout": "2000",
    # A takeover never waits long behind another's lock; it tries again at the next renewal.
    "lock_timeout": "2000",
}
CONNECT_TIMEOUT_S = 5


def driver() -> None:
    """Fail in one line when the `[cluster]` extra is missing."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise MissingExtraError("cluster", "psycopg") from None


def redacted(url: str) -> str:
    """The URL without its password (`postgresql://user:secret@h/db` -> `user:***@h/db`)."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def session_options() -> str:
    return " ".join(f"-c {key}={value}" for key, value in SESSION_SETTINGS.items())


async def connect(
    url: str, *, autocommit: bool = True, application_name: str = "rebalance"
) -> psycopg.AsyncConnection[Any]:
    """An async connection with `SESSION_SETTINGS`; `ClusterError` (one line) if it fails.
    `application_name` tells sessions apart in `pg_stat_activity`."""
    driver()
    import psycopg

    try:
        return await psycopg.AsyncConnection.connect(
            url,
            autocommit=autocommit,
            connect_timeout=CONNECT_TIMEOUT_S,
            options=session_options(),
            application_name=application_name,
        )
    except psycopg.ProgrammingError as exc:  # not a URL libpq can read
        raise ClusterError(f"cluster URL {redacted(url)!r} is not valid: {one_line(exc)}") from exc
    except psycopg.Error as exc:
        raise ClusterError(f"cannot reach PostgreSQL at {redacted(url)}: {one_line(exc)}") from exc


def one_line(exc: BaseException) -> str:
    """A driver error's message as one line (libpq's are often several)."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    return text or type(exc).__name__


async def stop_tasks_then_close(tasks: list[asyncio.Task[Any]], connections: Iterable[Any]) -> None:
    """Cancel and await a component's tasks (emptying `tasks`), then close its connections
    (None skipped), whatever each of them raises: a stop never fails half-way."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    tasks.clear()
    for connection in connections:
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()
