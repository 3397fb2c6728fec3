"""`rebalance groups list` and `rebalance groups describe GROUP` against a running server:
a client-balance group shows each node's sourceCount, nodeId and partitions; a classic group its
members and their assigned partitions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from coordinator.cli.main import main
from coordinator.clients.client_balance import ClientBalanceConfig, ClientBalanceConsumer
from coordinator.clients.member import GroupMember
from coordinator.testing.server import RunningServer, server_in_thread


@pytest.fixture
def node() -> Iterator[RunningServer]:
    with server_in_thread(topics=[("t", 4)]) as server:
        yield server


def test_describe_a_client_balance_group(
    node: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    async def two_nodes() -> list[ClientBalanceConsumer]:
        nodes = []
        for node_id, keys in enumerate([("1:t:0", "1:t:2"), ("1:t:1",)]):
            c = ClientBalanceConsumer(
                ClientBalanceConfig(node.bootstrap, "g", client_id=f"n{node_id}")
            )
            await c.start(["t"], 2, node_id)
            for key in keys:
                await c.connect(key)
            nodes.append(c)
        return nodes

    async def scenario() -> None:
        nodes = await two_nodes()
        try:
            describe = ["groups", "describe", "g", "--bootstrap", node.bootstrap]
            assert await asyncio.to_thread(main, describe) == 0
            listing = ["groups", "list", "--bootstrap", node.bootstrap]
            assert await asyncio.to_thread(main, listing) == 0
        finally:
            for c in nodes:
                await c.shutdown()

    asyncio.run(scenario())
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "group g: client-balance, Stable, sourceCount 2, topics t, group epoch 2"
    assert out[1].split() == [
        "nodeId", "sourceCount", "member", "client", "host", "count", "partitions"
    ]  # fmt: skip
    first, second = out[2].split(), out[3].split()
    assert (first[0], first[1], first[3], first[5], first[6]) == ("0", "2", "n0", "2", "t:0,2")
    assert (second[0], second[1], second[3], second[5], second[6]) == ("1", "2", "n1", "1", "t:1")
    assert first[2].startswith("n0-")
    assert out[4].split() == ["group", "type", "state"]
    assert out[5].split() == ["g", "client-balance", "Stable"]


def test_describe_a_missing_group_says_so(
    node: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["groups", "describe", "nobody", "--bootstrap", node.bootstrap]) == 0
    assert "no such group here (Dead)" in capsys.readouterr().out


def test_an_unreachable_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["groups", "list", "--bootstrap", "127.0.0.1:1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot connect to 127.0.0.1:1" in err[0]


def test_describe_a_consumer_group(node: RunningServer, capsys: pytest.CaptureFixture[str]) -> None:
    async def scenario() -> None:
        members = [
            GroupMember(node.bootstrap, "kip848", ["t"], group_protocol="consumer",
                        client_id=f"c{i}")
            for i in range(2)
        ]  # fmt: skip
        for m in members:
            await m.__aenter__()
        try:
            for _ in range(100):  # until the two members split the four partitions
                owned = [len(await m.wait_stable(10)) for m in members]
                if owned == [2, 2]:
                    break
                await asyncio.sleep(0.1)
            describe = ["groups", "describe", "kip848", "--bootstrap", node.bootstrap]
            assert await asyncio.to_thread(main, describe) == 0
        finally:
            for m in members:
                await m.close()

    asyncio.run(scenario())
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("group kip848: consumer, Stable, group epoch 3, target epoch 3, ")
    assert out[1].split() == ["member", "client", "host", "epoch", "partitions"]
    rows = sorted((line.split() for line in out[2:4]), key=lambda row: row[1])  # by client
    assert [(r[1], r[3]) for r in rows] == [("c0", "3"), ("c1", "3")]
    assert sorted(p for r in rows for p in r[4].removeprefix("t:").split(",")) == list("0123")
