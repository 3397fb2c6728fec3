"""The readiness hub: many plaintext connections behind one descriptor of the event loop."""

from __future__ import annotations

import asyncio
import socket

import pytest

from coordinator.wire.transport import readiness
from coordinator.wire.transport.readiness import ReadinessHub
from coordinator.wire.transport.socket_transport import SocketTransport

pytestmark = pytest.mark.skipif(
    not hasattr(__import__("select"), "epoll"), reason="epoll (Linux) only"
)


class Collect(asyncio.Protocol):
    def __init__(self) -> None:
        self.received = bytearray()
        self.arrived = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.received += data
        self.arrived.set()


def pairs(count: int) -> list[tuple[socket.socket, socket.socket]]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        made = []
        for _ in range(count):
            client = socket.create_connection(listener.getsockname())
            served, _ = listener.accept()
            made.append((served, client))
    return made


def watched_by_loop(loop: asyncio.AbstractEventLoop) -> int:
    """Descriptors the loop's own selector watches (asyncio's selector loop)."""
    return len(loop._selector.get_map())  # type: ignore[attr-defined]


async def test_connections_share_one_loop_descriptor_which_goes_with_the_last() -> None:
    loop = asyncio.get_running_loop()
    before = watched_by_loop(loop)
    connected = pairs(20)
    protocols = [Collect() for _ in connected]
    transports = [
        SocketTransport.open(loop, served, protocol)
        for (served, _), protocol in zip(connected, protocols, strict=True)
    ]
    assert watched_by_loop(loop) == before + 1  # the hub's epoll set, not 20 sockets
    for index, (_, client) in enumerate(connected):
        client.sendall(f"hello {index}".encode())
    await asyncio.wait_for(asyncio.gather(*(p.arrived.wait() for p in protocols)), 5)
    assert [bytes(p.received) for p in protocols] == [f"hello {i}".encode() for i in range(20)]

    for transport in transports:
        transport.abort()
    await asyncio.sleep(0)
    assert watched_by_loop(loop) == before
    assert loop not in readiness._hubs
    for _, client in connected:
        client.close()


async def test_a_paused_connection_is_not_read_until_resumed() -> None:
    loop = asyncio.get_running_loop()
    (served, client), (other_served, other_client) = pairs(2)
    paused, other = Collect(), Collect()
    transport = SocketTransport.open(loop, served, paused)
    other_transport = SocketTransport.open(loop, other_served, other)
    transport.pause_reading()
    client.sendall(b"waits")
    other_client.sendall(b"flows")
    await asyncio.wait_for(other.arrived.wait(), 5)
    await asyncio.sleep(0.05)
    assert paused.received == b""
    transport.resume_reading()
    await asyncio.wait_for(paused.arrived.wait(), 5)
    assert paused.received == b"waits"
    for t in (transport, other_transport):
        t.abort()
    for c in (client, other_client):
        c.close()


async def test_more_ready_connections_than_one_pass_takes_are_all_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The set is level-triggered: what one pass leaves is reported on the next pass.
    monkeypatch.setattr(readiness, "_EVENTS_PER_PASS", 2)
    loop = asyncio.get_running_loop()
    connected = pairs(7)
    protocols = [Collect() for _ in connected]
    transports = [
        SocketTransport.open(loop, served, protocol)
        for (served, _), protocol in zip(connected, protocols, strict=True)
    ]
    for _, client in connected:
        client.sendall(b"x")
    await asyncio.wait_for(asyncio.gather(*(p.arrived.wait() for p in protocols)), 5)
    for transport in transports:
        transport.abort()
    for _, client in connected:
        client.close()


async def test_a_failing_read_callback_does_not_stop_the_others_in_its_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    (bad_served, bad_client), (served, client) = pairs(2)
    hub = ReadinessHub.of(loop)
    read: list[bytes] = []

    def broken() -> None:
        bad_served.recv(100)
        raise RuntimeError("broken callback")

    def reads() -> None:
        read.append(served.recv(100))

    hub.watch(bad_served.fileno(), broken)
    hub.watch(served.fileno(), reads)
    bad_client.sendall(b"a")
    client.sendall(b"b")
    for _ in range(100):
        if read:
            break
        await asyncio.sleep(0.01)
    assert read == [b"b"]
    assert "a read callback failed" in caplog.text
    hub.unwatch(bad_served.fileno())
    hub.unwatch(served.fileno())
    assert loop not in readiness._hubs
    for s in (bad_served, bad_client, served, client):
        s.close()


async def test_a_held_hub_stays_open_without_sockets_until_released() -> None:
    # The acceptors hold it from the server's start: no descriptor is needed when a client comes.
    loop = asyncio.get_running_loop()
    before = watched_by_loop(loop)
    hub = ReadinessHub.hold(loop)
    ((served, client),) = pairs(1)
    transport = SocketTransport.open(loop, served, Collect())
    transport.abort()
    await asyncio.sleep(0)
    assert ReadinessHub.of(loop) is hub and watched_by_loop(loop) == before + 1
    hub.release()
    assert loop not in readiness._hubs and watched_by_loop(loop) == before
    client.close()
