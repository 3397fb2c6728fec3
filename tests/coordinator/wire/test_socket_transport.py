"""The lean plaintext transport: asyncio's semantics for what the wire server uses, and no
buffer kept by an idle connection."""

from __future__ import annotations

import asyncio
import gc
import socket
import sys
import weakref

import pytest

from coordinator.wire.transport.socket_transport import HIGH_WATER, SocketTransport


class Recorder(asyncio.Protocol):
    def __init__(self, keep_open_on_eof: bool = False) -> None:
        self.events: list[object] = []
        self.transport: asyncio.BaseTransport | None = None
        self.received = bytearray()
        self.keep_open_on_eof = keep_open_on_eof
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # (as a server's protocol does: a cycle while connected)
        self.events.append("made")

    def data_received(self, data: bytes) -> None:
        self.received += data

    def eof_received(self) -> bool:
        self.events.append("eof")
        return self.keep_open_on_eof

    def pause_writing(self) -> None:
        self.events.append("pause")

    def resume_writing(self) -> None:
        self.events.append("resume")

    def connection_lost(self, exc: Exception | None) -> None:
        self.events.append(("lost", exc))
        self.lost.set_result(None)


def pair() -> tuple[socket.socket, socket.socket]:
    """A connected TCP pair over loopback (what the acceptor hands over)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        served, _ = listener.accept()
    client.setblocking(False)
    return served, client


async def test_reads_and_writes_and_holds_no_buffer_while_idle() -> None:
    served, client = pair()
    loop = asyncio.get_running_loop()
    protocol = Recorder()
    transport = SocketTransport.open(loop, served, protocol)
    assert not hasattr(transport, "__dict__")
    assert transport.get_extra_info("peername") == client.getsockname()
    assert transport.get_extra_info("sockname") == client.getpeername()
    await loop.sock_sendall(client, b"hello")
    while len(protocol.received) < 5:
        await asyncio.sleep(0.01)
    transport.write(b"world")
    assert await loop.sock_recv(client, 16) == b"world"
    assert transport.get_write_buffer_size() == 0 and transport._buffer is None
    transport.close()
    await protocol.lost
    assert protocol.events == ["made", ("lost", None)]
    assert transport.get_extra_info("peername") is None  # the socket is closed
    assert await loop.sock_recv(client, 16) == b""
    client.close()


async def test_a_slow_reader_pauses_the_protocol_and_close_sends_the_rest_first() -> None:
    served, client = pair()
    served.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    loop = asyncio.get_running_loop()
    protocol = Recorder()
    transport = SocketTransport.open(loop, served, protocol)
    payload = bytes(range(256)) * 4096  # 1 MiB: more than the socket takes at once
    transport.write(payload)
    assert transport.get_write_buffer_size() > HIGH_WATER
    assert protocol.events == ["made", "pause"]
    transport.close()
    assert transport.is_closing()
    received = bytearray()
    while len(received) < len(payload):
        received += await loop.sock_recv(client, 1 << 16)
    assert bytes(received) == payload
    await protocol.lost
    assert protocol.events == ["made", "pause", "resume", ("lost", None)]
    assert transport._buffer is None
    client.close()


async def test_eof_closes_unless_the_protocol_keeps_it_open() -> None:
    for keep_open in (False, True):
        served, client = pair()
        loop = asyncio.get_running_loop()
        protocol = Recorder(keep_open_on_eof=keep_open)
        transport = SocketTransport.open(loop, served, protocol)
        client.shutdown(socket.SHUT_WR)
        while "eof" not in protocol.events:
            await asyncio.sleep(0.01)
        assert not transport.is_reading()
        if keep_open:
            transport.write(b"late")  # the other direction still works
            assert await loop.sock_recv(client, 16) == b"late"
            transport.abort()
        await protocol.lost
        assert protocol.events[-1] == ("lost", None)
        client.close()


async def test_pause_and_resume_reading() -> None:
    served, client = pair()
    loop = asyncio.get_running_loop()
    protocol = Recorder()
    transport = SocketTransport.open(loop, served, protocol)
    transport.pause_reading()
    await loop.sock_sendall(client, b"wait")
    await asyncio.sleep(0.05)
    assert protocol.received == b""
    transport.resume_reading()
    while protocol.received != b"wait":
        await asyncio.sleep(0.01)
    transport.abort()
    await protocol.lost
    client.close()


@pytest.mark.skipif(sys.platform == "win32", reason="reset semantics of loopback sockets")
async def test_a_reset_connection_is_lost_with_its_error_and_later_writes_are_dropped() -> None:
    served, client = pair()
    loop = asyncio.get_running_loop()
    protocol = Recorder()
    transport = SocketTransport.open(loop, served, protocol)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.close()  # RST
    await protocol.lost
    (lost,) = [event for event in protocol.events if isinstance(event, tuple)]
    assert isinstance(lost[1], ConnectionResetError)
    transport.write(b"nobody")  # dropped, no error
    assert transport.get_write_buffer_size() == 0


async def test_a_failing_protocol_ends_only_its_connection() -> None:
    class Failing(Recorder):
        def data_received(self, data: bytes) -> None:
            raise RuntimeError("bug")

    served, client = pair()
    loop = asyncio.get_running_loop()
    protocol = Failing()
    SocketTransport.open(loop, served, protocol)
    await loop.sock_sendall(client, b"x")
    await protocol.lost
    (lost,) = [event for event in protocol.events if isinstance(event, tuple)]
    assert isinstance(lost[1], RuntimeError)
    client.close()


async def test_a_closed_connection_is_freed_without_the_collector() -> None:
    served, client = pair()
    loop = asyncio.get_running_loop()
    protocol = Recorder()
    transport = SocketTransport.open(loop, served, protocol)
    lost = protocol.lost
    gone = weakref.ref(protocol)
    gc.disable()
    try:
        transport.close()
        await lost
        del protocol, transport
        await asyncio.sleep(0)
        assert gone() is None
    finally:
        gc.enable()
        client.close()


async def test_the_server_serves_plaintext_connections_with_it() -> None:
    from coordinator.testing.server import WireClient, running_server

    async with running_server(groups=False) as node:
        client = await WireClient.connect(node.host, node.port)
        try:
            assert node.app.server is not None
            while not node.app.server._connections:
                await asyncio.sleep(0.01)
            (conn,) = node.app.server._connections
            assert isinstance(conn.transport, SocketTransport)
            assert conn.session is not None and conn.session.client_host == "127.0.0.1"
        finally:
            await client.close()
