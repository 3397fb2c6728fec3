"""`rebalance serve --zookeeper`: the node registers as a Kafka 0.8 broker, byte-for-byte."""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from coordinator.testing.server import running_server
from coordinator.zookeeper.broker import ZooKeeperBrokerRegistration
from coordinator.zookeeper.client import ZooKeeper
from coordinator.zookeeper.connect import BrokerRegistrationError
from coordinator.zookeeper.server import free_port
from rebalance.zookeeper.formats import BrokerRegistration, encode_topic

BROKER_JSON = re.compile(
    rb'\{"jmx_port":-1,"timestamp":"(\d{13})","host":"127\.0\.0\.1","version":1,"port":(\d+)\}'
)


async def eventually(check: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def test_registers_broker_and_topics_as_0_8_writes_them(
    zookeeper_connect: str, zk: ZooKeeper
) -> None:
    port = free_port()
    registration = ZooKeeperBrokerRegistration(zookeeper_connect)
    async with running_server(
        topics=[("orders", 3), ("payments", 12)], extensions=[registration], port=port,
        settings=["broker.id=7"], groups=False,
    ):  # fmt: skip
        data, stat = await zk.get("/brokers/ids/7")
        match = BROKER_JSON.fullmatch(data)
        assert match is not None, data
        assert int(match.group(2)) == port
        assert (
            data == BrokerRegistration(7, "127.0.0.1", port, timestamp=match[1].decode()).encode()
        )
        assert stat.ephemeral_owner != 0
        # Topics given at start are created once every extension is in; each is written to
        # ZooKeeper as it is created, by a task of the registration, which `settled` waits for.
        await registration.settled()
        assert await zk.exists("/brokers/topics/payments")
        orders, orders_stat = await zk.get("/brokers/topics/orders")
        assert orders == b'{"version":1,"partitions":{"2":[7],"1":[7],"0":[7]}}'
        assert orders_stat.ephemeral_owner == 0
        payments, _ = await zk.get("/brokers/topics/payments")
        assert payments == encode_topic({p: [7] for p in range(12)})
        assert payments == (
            b'{"version":1,"partitions":{"8":[7],"4":[7],"11":[7],"9":[7],"5":[7],"10":[7],'
            b'"6":[7],"1":[7],"0":[7],"2":[7],"7":[7],"3":[7]}}'
        )
    assert not await zk.exists("/brokers/ids/7")  # ephemeral: gone with the session
    assert await zk.exists("/brokers/topics/orders")  # persistent


async def test_follows_topic_creation_growth_and_deletion(
    zookeeper_connect: str, zk: ZooKeeper
) -> None:
    registration = ZooKeeperBrokerRegistration(zookeeper_connect)
    async with running_server(extensions=[registration], port=free_port(), groups=False) as node:
        topics = node.broker.topics
        created = topics.create("late", 2)
        await eventually(lambda: zk.exists("/brokers/topics/late"))
        assert (await zk.get("/brokers/topics/late"))[0] == encode_topic({0: [1], 1: [1]})
        topics.add_partitions(created, 3)  # what CreatePartitions does
        grown = encode_topic({0: [1], 1: [1], 2: [1]}, grown=True)
        await eventually(lambda: _data_is(zk, "/brokers/topics/late", grown))
        topics.delete(created)  # what DeleteTopics does
        await topics.announce_deleted(["late"])
        await eventually(lambda: _gone(zk, "/brokers/topics/late"))


async def _gone(zk: ZooKeeper, path: str) -> bool:
    return not await zk.exists(path)


async def _data_is(zk: ZooKeeper, path: str, expected: bytes) -> bool:
    stored = await zk.get_or_none(path)
    return stored is not None and stored[0] == expected


async def test_a_second_node_with_the_same_id_is_refused(zookeeper_connect: str) -> None:
    first = ZooKeeperBrokerRegistration(zookeeper_connect)
    async with running_server(extensions=[first], port=free_port(), groups=False):
        second = ZooKeeperBrokerRegistration(zookeeper_connect)
        with pytest.raises(BrokerRegistrationError, match=r"^A broker is already registered on "
                           r"the path /brokers/ids/1\. This probably indicates"):  # fmt: skip
            async with running_server(extensions=[second], port=free_port(), groups=False):
                pass


async def test_registers_again_after_its_session_expired(
    zookeeper_connect: str, zk: ZooKeeper
) -> None:
    registration = ZooKeeperBrokerRegistration(zookeeper_connect, session_timeout_ms=2000)
    async with running_server(extensions=[registration], port=free_port(), groups=False):
        _, before = await zk.get("/brokers/ids/1")
        assert registration.zk is not None
        await asyncio.to_thread(expire_session, registration.zk)
        await eventually(lambda: _owner_changed(zk, before.ephemeral_owner))


async def _owner_changed(zk: ZooKeeper, old_owner: int) -> bool:
    stored = await zk.get_or_none("/brokers/ids/1")
    return stored is not None and stored[1].ephemeral_owner not in (0, old_owner)


def expire_session(session: ZooKeeper) -> None:
    """Expire a live session for real: a second client joins it with its id and password and
    closes it, which ends the session on the server; the first client is then told it expired."""
    client_id = session.kazoo_client_id
    assert client_id is not None
    hosts = session.connect.partition("/")[0]
    thief = KazooClient(hosts=hosts, client_id=client_id)
    thief.start(timeout=10)
    thief.stop()
    thief.close()


def test_serve_refuses_a_duplicate_broker_id_with_one_line(zookeeper_connect: str) -> None:
    """Two `rebalance serve` processes: the second exits 1 with 0.8's message."""
    command = [sys.executable, "-m", "coordinator.cli.main", "serve", "--zookeeper",
    zookeeper_connect,
               "--broker-id", "3"]  # fmt: skip
    with _serve(command, free_port()) as first:
        assert first.poll() is None
        second = subprocess.run(
            [*command, "--bind", f"127.0.0.1:{free_port()}", "--data-dir", first.args[-1] + "-2"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 1
        message = second.stderr.strip().splitlines()[-1]
        assert message.startswith(
            "rebalance serve: A broker is already registered on the path /brokers/ids/3."
        )


class _serve:
    """A `rebalance serve` process that is registered once entered, stopped on exit."""

    def __init__(self, command: list[str], port: int) -> None:
        self.scratch = tempfile.mkdtemp(prefix="serve-")
        self.command = [*command, "--bind", f"127.0.0.1:{port}", "--data-dir", self.scratch]

    def __enter__(self) -> subprocess.Popen[str]:
        self.process = subprocess.Popen(self.command, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if "Registered broker" in line:
                return self.process
        raise AssertionError(f"serve exited with {self.process.wait()} before registering")

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.stderr is not None
        self.process.stderr.read()
        self.process.stderr.close()
        assert self.process.wait(30) == 0
        shutil.rmtree(self.scratch, ignore_errors=True)
        shutil.rmtree(self.scratch + "-2", ignore_errors=True)
