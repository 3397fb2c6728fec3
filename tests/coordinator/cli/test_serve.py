"""`rebalance serve` as a process: options, SIGTERM exits 0, data survives a restart."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from serve_process import start_serve, stop

from coordinator.cli.serve import add_serve_arguments, parse_bind, parse_topic
from coordinator.testing.server import WireClient, read_records, record_batch


def test_parse_bind_and_topic() -> None:
    assert parse_bind("127.0.0.1:9092") == ("127.0.0.1", 9092)
    assert parse_bind("[::1]:0") == ("::1", 0)
    assert parse_topic("orders:3") == ("orders", 3)
    for bad in ("9092", "host:", "host:port"):
        with pytest.raises(argparse.ArgumentTypeError, match=f"^expected HOST:PORT, got '{bad}'$"):
            parse_bind(bad)
    with pytest.raises(argparse.ArgumentTypeError, match=r"^port 70000 is out of range \(0-65535"):
        parse_bind("h:70000")
    for bad in ("orders", ":3"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"^expected NAME:PARTITIONS"):
            parse_topic(bad)
    with pytest.raises(
        argparse.ArgumentTypeError, match=r"^partitions must be at least 1, got 'orders:0'$"
    ):
        parse_topic("orders:0")
    for illegal in ("a/b:3", "..:1", "spaces here:2", "x" * 250 + ":1"):
        with pytest.raises(argparse.ArgumentTypeError, match="illegal topic name"):
            parse_topic(illegal)


def test_arguments() -> None:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    args = parser.parse_args(
        ["--data-dir", "d", "--topic", "a:2", "--topic", "b:1", "--set", "num.partitions=3"]
    )
    assert args.bind is None  # 127.0.0.1:9092 unless the listeners setting says otherwise
    assert args.topic == [("a", 2), ("b", 1)]
    assert args.settings == ["num.partitions=3"]


async def test_sigterm_exits_zero_and_data_survives_restart(tmp_path: Path) -> None:
    process, port = await start_serve(tmp_path, "--topic", "events:2")
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

    process, port = await start_serve(tmp_path)
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
