"""Out of file descriptors: a real server process whose descriptor limit is lowered (the kernel's
RLIMIT_NOFILE, what `ulimit -n` sets, applied to the running process with `prlimit`) until it
can accept only a few more connections. Connections over that are refused (closed at once, not
left hanging), the ones it holds keep being served, the accept loop survives, and new clients
are served again as soon as a connection closes."""

from __future__ import annotations

import asyncio
import os
import resource
from pathlib import Path

from serve_process import start_serve, stop

from coordinator.wire.client import WireClient

API_VERSIONS = 18


def leave_free(pid: int, free: int) -> None:
    """Lower `pid`'s (soft) descriptor limit so that exactly `free` more descriptors can be
    opened."""
    in_use = sorted(int(fd) for fd in os.listdir(f"/proc/{pid}/fd"))
    limit = free
    while limit - sum(1 for fd in in_use if fd < limit) < free:
        limit += 1
    hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)[1]
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, hard))


async def served(client: WireClient) -> bool:
    try:
        response = await asyncio.wait_for(client.request(API_VERSIONS, 3, {}), 5)
    except (asyncio.IncompleteReadError, ConnectionError):
        return False
    return bool(response.api_keys)


async def test_out_of_descriptors_refuses_new_connections_and_keeps_the_old(
    tmp_path: Path,
) -> None:
    process, port = await start_serve(tmp_path / "data")
    clients: list[WireClient] = []
    limits = resource.prlimit(process.pid, resource.RLIMIT_NOFILE)
    try:
        # The node listens before its stores open: once it answers, they are open (and the
        # modules answering ApiVersions, imported on first use, are loaded).
        probe = await WireClient.connect("127.0.0.1", port)
        assert await served(probe)
        await probe.close()
        await asyncio.sleep(0.2)
        leave_free(process.pid, 3)
        for _ in range(6):
            clients.append(await WireClient.connect("127.0.0.1", port))
        assert [await served(client) for client in clients] == [True] * 3 + [False] * 3
        assert all([await served(client) for client in clients[:3]])  # still served
        await clients[0].close()
        await asyncio.sleep(0.2)  # the server sees the close and frees the descriptor
        again = await WireClient.connect("127.0.0.1", port)
        clients.append(again)
        assert await served(again)
        assert await served(clients[1])
    finally:
        for client in clients:
            await client.close()
        resource.prlimit(process.pid, resource.RLIMIT_NOFILE, limits)
        rest = await stop(process)
    assert rest.count("out of file descriptors") == 1, rest  # one warning, rate-limited
