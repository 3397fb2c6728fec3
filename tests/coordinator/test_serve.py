"""`rebalance serve` as a process: options, SIGTERM exits 0, data survives a restart."""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import sys
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from coordinator.serve import add_serve_arguments, parse_bind, parse_topic
from coordinator.testing import WireClient, read_records, record_batch


def test_parse_bind_and_topic() -> None:
    assert parse_bind("127.0.0.1:9092") == ("127.0.0.1", 9092)
    assert parse_bind("[::1]:0") == ("::1", 0)
    assert parse_topic("orders:3") == ("orders", 3)
    for bad in ("9092", "host:", "host:port", "h:70000"):
        with pytest.raises(argparse.ArgumentTypeError, match="HOST:PORT"):
            parse_bind(bad)
    for bad in ("orders", "orders:0", ":3"):
        with pytest.raises(argparse.ArgumentTypeError, match="NAME:PARTITIONS"):
            parse_topic(bad)


def test_arguments() -> None:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    args = parser.parse_args(
        ["--data-dir", "d", "--topic", "a:2", "--topic", "b:1", "--set", "num.partitions=3"]
    )
    assert args.bind == ("127.0.0.1", 9092)
    assert args.topic == [("a", 2), ("b", 1)]
    assert args.settings == ["num.partitions=3"]


async def start(data_dir: Path, *extra: str) -> tuple[asyncio.subprocess.Process, int]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "coordinator.serve", "--bind", "127.0.0.1:0",
        "--data-dir", str(data_dir), *extra,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    while True:
        line = (await asyncio.wait_for(process.stderr.readline(), timeout=30)).decode()
        assert line, "server exited before listening"
        if found := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
            return process, int(found.group(1))


async def stop(process: asyncio.subprocess.Process) -> str:
    process.send_signal(signal.SIGTERM)
    assert process.stderr is not None
    rest = await asyncio.wait_for(process.stderr.read(), timeout=30)
    assert await process.wait() == 0
    return rest.decode()


async def test_sigterm_exits_zero_and_data_survives_restart(tmp_path: Path) -> None:
    process, port = await start(tmp_path, "--topic", "events:2")
    client = await WireClient.connect("127.0.0.1", port)
    produced = await client.request(
        0,
        9,
        {
            "acks": -1,
            "timeout": 1000,
            "topic_data": [
                {
                    "name": "events",
                    "partition_data": [{"index": 1, "records": record_batch([b"kept"])}],
                }
            ],
        },
    )
    assert produced.responses[0].partition_responses[0].error_code is ErrorCode.none
    await client.close()
    assert "stopped" in await stop(process)

    process, port = await start(tmp_path)
    client = await WireClient.connect("127.0.0.1", port)
    fetched = await client.request(
        1,
        12,
        {
            "max_wait": 0,
            "min_bytes": 0,
            "topics": [
                {
                    "topic": "events",
                    "partitions": [
                        {"partition": 1, "fetch_offset": 0, "partition_max_bytes": 65536}
                    ],
                }
            ],
        },
    )
    records = fetched.responses[0].partitions[0].records
    assert [r.value for r in read_records(records)] == [b"kept"]
    await client.close()
    await stop(process)


async def test_bad_setting_exits_2_naming_the_key(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "coordinator.serve", "--data-dir", str(tmp_path),
        "--set", "num.partitions=lots",
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 2
    assert b"bad value for num.partitions" in stderr
