"""Disk full: every request is answered with Kafka's error, nothing acknowledged is lost, and
service resumes as soon as space returns, without a restart.

The data dir lives on a real 4 MiB tmpfs (mounted for the test; skipped where mounting is not
allowed), filled with a scratch file until produce and commit writes fail with ENOSPC.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator.testing.server import read_records, record_batch, running_server
from coordinator.wire.client import WireClient
from rebalance.errors import ErrorCode

PRODUCE, FETCH, OFFSET_COMMIT, OFFSET_FETCH, CREATE_TOPICS, DELETE_RECORDS = 0, 1, 8, 9, 19, 21


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "tmpfs"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of `disk` with a scratch file; returns it (delete it to free)."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 4096)
    return filler


async def produce(client: WireClient, value: bytes, topic: str = "t") -> Any:
    response = await client.request(
        PRODUCE,
        9,
        {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": record_batch([value])}]}
            ],
        },
    )
    return response.responses[0].partition_responses[0]


async def commit(client: WireClient, offset: int) -> ErrorCode:
    response = await client.request(
        OFFSET_COMMIT,
        8,
        {
            "group_id": "g",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "x" * 2000,
                        }
                    ],
                }
            ],
        },
    )
    return ErrorCode(response.topics[0].partitions[0].error_code)


async def create_topic(client: WireClient, name: str) -> ErrorCode:
    response = await client.request(
        CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": 1000,
            "validate_only": False,
        },
    )
    return ErrorCode(response.topics[0].error_code)


async def delete_records(client: WireClient, topic: str, before: int) -> ErrorCode:
    response = await client.request(
        DELETE_RECORDS,
        2,
        {
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": before}]}],
            "timeout": 1000,
        },
    )
    return ErrorCode(response.topics[0].partitions[0].error_code)


async def committed(client: WireClient) -> int:
    response = await client.request(
        OFFSET_FETCH,
        7,
        {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]},
    )
    return int(response.topics[0].partitions[0].committed_offset)


async def stored_values(client: WireClient) -> list[bytes | None]:
    response = await client.request(
        FETCH,
        12,
        {
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 24,
            "isolation_level": 1,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 24}
                    ],
                }
            ],
        },
    )
    return [r.value for r in read_records(response.responses[0].partitions[0].records or b"")]


async def test_full_disk_answers_storage_errors_loses_nothing_and_recovers(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = small_disk / "data"
    acknowledged: list[bytes] = []
    last_commit = -1
    async with running_server(topics=[("t", 1), ("d", 1)], data_dir=data_dir) as node:
        client = await WireClient.connect(node.host, node.port)
        assert (await produce(client, b"before")).error_code == ErrorCode.NONE
        acknowledged.append(b"before")
        assert (await produce(client, b"deleted", "d")).error_code == ErrorCode.NONE
        filler = fill(small_disk)
        # Writes that are not produce or group writes: refused in the same way.
        assert await create_topic(client, "new") == ErrorCode.KAFKA_STORAGE_ERROR
        assert await delete_records(client, "d", 1) == ErrorCode.KAFKA_STORAGE_ERROR
        produce_errors: set[ErrorCode] = set()
        commit_errors: set[ErrorCode] = set()
        for n in range(40):
            value = f"{n}-".encode() + os.urandom(16 << 10)
            answer = await produce(client, value)
            if answer.error_code == ErrorCode.NONE:
                acknowledged.append(value)
            else:
                produce_errors.add(ErrorCode(answer.error_code))
            code = await commit(client, n)
            if code == ErrorCode.NONE:
                last_commit = n
            else:
                commit_errors.add(code)
        # Kafka's answers: the partition's KAFKA_STORAGE_ERROR; for a group write the
        # coordinator's mapping of it, NOT_COORDINATOR (spec/group-protocol.md), and
        # COORDINATOR_LOAD_IN_PROGRESS while the group's partition loads again.
        assert produce_errors == {ErrorCode.KAFKA_STORAGE_ERROR}
        assert ErrorCode.NOT_COORDINATOR in commit_errors
        assert commit_errors <= {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
        assert await stored_values(client) == acknowledged  # nothing unacknowledged visible

        filler.unlink()  # space returns: the same connection is served again
        assert (await produce(client, b"after")).error_code == ErrorCode.NONE
        acknowledged.append(b"after")
        for _attempt in range(50):  # as clients do: retry while the partition loads
            code = await commit(client, 99)
            if code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                break
            await asyncio.sleep(0.02)
        assert code == ErrorCode.NONE
        last_commit = 99
        assert await create_topic(client, "new") == ErrorCode.NONE
        assert await delete_records(client, "d", 1) == ErrorCode.NONE
        await client.close()

    async with running_server(data_dir=data_dir) as restarted:
        client = await WireClient.connect(restarted.host, restarted.port)
        assert await stored_values(client) == acknowledged
        assert await committed(client) == last_commit
        assert restarted.broker.topics.get("new") is not None
        assert restarted.broker.topics.get("d").partition(0).log_start_offset == 1  # type: ignore[union-attr]
        await client.close()
    assert not [record.getMessage() for record in caplog.records if record.exc_info]
    # One report for a full disk's many failed writes, not one per write.
    assert sum("store write failed" in r.getMessage() for r in caplog.records) == 1


async def test_a_real_producer_rides_out_a_full_disk(small_disk: Path) -> None:
    """aiokafka takes KAFKA_STORAGE_ERROR as retriable: a send made while the disk is full is
    stored once space returns, with no restart of anything."""
    from aiokafka import AIOKafkaProducer

    async with running_server(topics=[("t", 1)], data_dir=small_disk / "data") as node:
        producer = AIOKafkaProducer(
            bootstrap_servers=node.bootstrap, retry_backoff_ms=50, request_timeout_ms=10_000
        )
        await producer.start()
        try:
            await producer.send_and_wait("t", b"first", partition=0)
            filler = fill(small_disk)
            pending = asyncio.ensure_future(
                producer.send_and_wait("t", os.urandom(64 << 10), partition=0)
            )
            await asyncio.sleep(0.5)
            assert not pending.done()  # refused and retried meanwhile
            filler.unlink()
            stored = await asyncio.wait_for(pending, 10)
            assert stored.offset == 1
        finally:
            await producer.stop()
        client = await WireClient.connect(node.host, node.port)
        assert len(await stored_values(client)) == 2
        await client.close()


def test_the_event_log_writes_again_when_space_returns_and_keeps_only_whole_lines(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from coordinator.groups.event_log.log import EventLog
    from rebalance.events import Event

    def event(ts: int) -> Event:  # ~3 KB a line: a page of space holds one and a torn one
        return Event("offset_commit", ts, "g", 1, "m", {"partitions": 1, "pad": "x" * 3000})

    directory = small_disk / "events"
    log = EventLog(directory, node_id=1)
    filler = fill(small_disk)
    size = filler.stat().st_size
    os.truncate(filler, size - 4096)  # one page free: the next flush is cut short
    for ts in range(10):
        log.emit([event(ts)], 0)
    deadline = time.monotonic() + 10
    while "event log writer failed" not in caplog.text:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    filler.unlink()
    ts = 10
    while "writes again" not in caplog.text:
        assert time.monotonic() < deadline + 10
        log.emit([event(ts)], 0)
        ts += 1
        time.sleep(0.05)
    log.emit([event(100_000)], 0)
    log.close()
    written = [
        json.loads(line)["ts"]  # a torn line would not parse
        for path in sorted(directory.glob("events-*.jsonl"))
        for line in path.read_bytes().split(b"\n")
        if line
    ]
    assert written[-1] == 100_000 and written == sorted(written)
    assert len(written) < ts + 1  # some were lost while the disk was full
