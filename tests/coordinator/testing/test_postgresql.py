"""PostgreSQL as the tests start it: the session's server (fsync on, loopback only, not as root),
a database of each test's own, a crash by SIGKILL, and a start that fails with one line."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from coordinator.testing.peers.postgresql import (
    SUPERUSER,
    PostgreSQLServer,
    PostgreSQLUnavailable,
)


def test_the_session_server_is_durable_and_listens_on_loopback_only(
    postgresql_server: PostgreSQLServer, postgresql: str
) -> None:
    assert postgresql == postgresql_server.url("postgres")
    with psycopg.connect(postgresql) as connection:
        settings = dict(
            connection.execute(
                "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)",
                (["fsync", "synchronous_commit", "listen_addresses", "port"],),
            ).fetchall()
        )
        (user,) = connection.execute("SELECT current_user").fetchone() or ("",)
    assert settings == {
        "fsync": "on",
        "synchronous_commit": "on",
        "listen_addresses": "127.0.0.1",
        "port": str(postgresql_server.port),
    }
    assert user == SUPERUSER


def test_the_server_does_not_run_as_root(postgresql_server: PostgreSQLServer) -> None:
    postmaster = postgresql_server.postmaster_pid()
    assert postmaster is not None
    owner = Path(f"/proc/{postmaster}").stat().st_uid
    assert owner != 0 or os.geteuid() != 0


def database_names(url: str) -> set[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT datname FROM pg_database").fetchall()
    return {name for (name,) in rows}


def test_each_test_gets_a_database_of_its_own(postgresql: str, postgresql_database: str) -> None:
    name = postgresql_database.rsplit("/", 1)[1]
    assert name in database_names(postgresql)
    with psycopg.connect(postgresql_database) as connection:
        connection.execute("CREATE TABLE mine (x int)")
        (tables,) = connection.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone() or (0,)
    assert tables == 1  # nothing left by another test


def test_a_second_test_sees_no_table_of_the_first(postgresql_database: str) -> None:
    with psycopg.connect(postgresql_database) as connection:
        rows = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert rows.fetchall() == []


def test_a_killed_server_is_gone_and_a_stopped_one_leaves_no_folder() -> None:
    server = PostgreSQLServer.start({"shared_buffers": "16MB"})
    try:
        with psycopg.connect(server.url()) as connection:
            (buffers,) = connection.execute("SHOW shared_buffers").fetchone() or ("",)
        assert buffers == "16MB"
        postmaster = server.postmaster_pid()
        server.kill()
        assert postmaster is not None
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(server.url(), connect_timeout=2)
    finally:
        server.stop()
    assert not server.data_dir.exists()


def test_settings_postgresql_refuses_fail_the_start_with_its_reason() -> None:
    with pytest.raises(PostgreSQLUnavailable) as refused:
        PostgreSQLServer.start({"shared_buffers": "lots"}, attempts=1)
    message = str(refused.value)
    assert "\n" not in message
    assert "shared_buffers" in message
