"""The address clients are told (Metadata, FindCoordinator): `--advertise HOST:PORT`, else the
bound address, and for a wildcard bind the machine's host name, said at start."""

from __future__ import annotations

import argparse
import logging
import socket
from pathlib import Path

import pytest
from serve_process import start_serve, stop

from coordinator.cli.serve import parse_advertise
from coordinator.testing.server import WireClient, running_server


async def advertised(port: int) -> list[tuple[str, int]]:
    """(host, port) of the broker in Metadata and of the coordinator in FindCoordinator."""
    client = await WireClient.connect("127.0.0.1", port)
    metadata = await client.request(3, 12, {"topics": None})
    found = await client.request(10, 3, {"key": "g", "key_type": 0})
    await client.close()
    (broker,) = metadata.brokers
    return [(broker.host, broker.port), (found.host, found.port)]


async def test_a_wildcard_bind_advertises_the_host_name_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="coordinator.wire"):
        async with running_server(host="0.0.0.0") as node:
            assert await advertised(node.port) == [(socket.gethostname(), node.port)] * 2
    assert (
        f"listening on 0.0.0.0:{node.port} (node 1), advertised to clients as "
        f"{socket.gethostname()}:{node.port} (the host name, since a wildcard address is not "
        "one clients can reach; choose with --advertise HOST:PORT)"
    ) in caplog.text


async def test_a_loopback_bind_advertises_itself() -> None:
    async with running_server() as node:
        assert await advertised(node.port) == [("127.0.0.1", node.port)] * 2


async def test_advertise_is_what_clients_are_told(tmp_path: Path) -> None:
    server, port = await start_serve(tmp_path, "--advertise", "kafka-1.example:19092")
    assert await advertised(port) == [("kafka-1.example", 19092)] * 2
    await stop(server)


def test_advertise_needs_a_host_and_a_real_port() -> None:
    assert parse_advertise("kafka-1.example:19092") == ("kafka-1.example", 19092)
    assert parse_advertise("[::1]:9092") == ("::1", 9092)
    for bad in ("kafka:0", "kafka", ":9092", "kafka:99999"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"^expected HOST:PORT"):
            parse_advertise(bad)
