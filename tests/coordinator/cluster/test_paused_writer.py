"""A writer frozen (SIGSTOP, a real process) inside an open fenced transaction: its FOR SHARE
lock holds the takeover of its partition back only until PostgreSQL ends the idle session
(`idle_in_transaction_session_timeout`, set on every node session), and its write, never
committed, is not there when the new owner takes over; after SIGCONT its commit fails."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import psycopg

from coordinator.cluster.connection import SESSION_SETTINGS
from coordinator.cluster.leases import LeaseManager, LeaseSettings
from coordinator.node.ownership import NodeAddress

FAST = LeaseSettings(lease_ms=1000, renew_ms=250, partitions=50)
IDLE_TIMEOUT_S = int(SESSION_SETTINGS["idle_in_transaction_session_timeout"]) / 1000

WRITER = """
import sys
import psycopg
from coordinator.cluster.connection import session_options
from coordinator.cluster.store import FENCED_APPEND_CALL
db = psycopg.connect(sys.argv[1], options=session_options())  # a transaction stays open
row = db.execute(
    FENCED_APPEND_CALL, ([5], [1], [5], ["offset"], [1], b"k", [1], b"v")
).fetchone()
print("written", row[0], flush=True)
sys.stdin.readline()
try:
    db.commit()
    print("committed", flush=True)
except psycopg.Error as exc:
    print("commit failed:", type(exc).__name__, flush=True)
"""


async def until_held(leases: LeaseManager, partitions: set[int], timeout: float) -> float:
    began = time.monotonic()
    while not partitions <= set(leases.held()):
        assert time.monotonic() - began < timeout, f"holds {sorted(leases.held())}"
        await asyncio.sleep(0.05)
    return time.monotonic() - began


async def test_a_writer_frozen_in_a_transaction_delays_the_takeover_only_until_its_timeout(
    postgresql_database: str,
) -> None:
    old = LeaseManager(postgresql_database, NodeAddress(1, "127.0.0.1", 9001), settings=FAST)
    await old.start()
    await until_held(old, set(range(50)), 10)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, postgresql_database],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "written []"  # epoch 1 matched: not fenced
        os.kill(writer.pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        await old.close()  # the old owner dies; its leases lapse on the server's clock
        new = LeaseManager(postgresql_database, NodeAddress(2, "127.0.0.1", 9002), settings=FAST)
        await new.start()
        try:
            await until_held(new, set(range(50)) - {5}, 10)
            assert 5 not in new.held()  # its lease row is locked by the frozen transaction
            await until_held(new, {5}, IDLE_TIMEOUT_S + 5)
            waited = time.monotonic() - frozen_at
            assert waited >= IDLE_TIMEOUT_S * 0.9
            assert new.held()[5] == 2
            with psycopg.connect(postgresql_database) as db:
                assert db.execute("SELECT count(*) FROM records").fetchone() == (0,)
        finally:
            await new.close()
        os.kill(writer.pid, signal.SIGCONT)
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.stdout.readline().startswith("commit failed:")
    finally:
        os.kill(writer.pid, signal.SIGCONT)
        writer.kill()
        writer.communicate()  # closes its pipes
