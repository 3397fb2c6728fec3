"""A client that sends requests and never reads the answers makes the server hold a bounded
amount: once the unsent answers pass the transport's high-water mark the server stops reading
that client (its requests then wait in the kernel's socket buffers), and other clients are
served meanwhile."""

from __future__ import annotations

import asyncio
import socket

from coordinator.testing.server import running_server
from coordinator.wire.client import WireClient

API_VERSIONS = 18


async def test_a_client_that_never_reads_is_stopped_at_a_bound() -> None:
    async with running_server() as node:
        loop = asyncio.get_running_loop()
        greedy = socket.socket()
        greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # reads nothing anyway
        greedy.setblocking(False)
        await loop.sock_connect(greedy, (node.host, node.port))
        probe = WireClient(*await asyncio.open_connection(node.host, node.port))
        request = probe.encode(API_VERSIONS, 3, {})
        sent = 0
        try:
            while sent < 64 << 20:  # far more than any socket buffers hold
                await asyncio.wait_for(loop.sock_sendall(greedy, request * 256), 0.5)
                sent += len(request) * 256
        except TimeoutError:
            pass  # the server stopped reading: the kernel buffers are full
        assert sent < 64 << 20
        (held,) = [c for c in node.app.server._connections if c.peer.endswith(
            str(greedy.getsockname()[1]))]  # fmt: skip
        assert held.transport is not None
        unsent = held.transport.get_write_buffer_size()
        unparsed = len(held._buffer) + held._more_size
        assert unsent < 256 << 10, unsent  # high-water mark (64 KiB) + one batch (64 KiB)
        assert unparsed < 512 << 10, unparsed  # at most one socket read
        assert (await probe.request(API_VERSIONS, 3, {})).api_keys  # others are served
        await probe.close()
        greedy.close()
