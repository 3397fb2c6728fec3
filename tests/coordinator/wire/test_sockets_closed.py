"""Our client and our server close every socket they open: after a normal exchange, a
connection the server cuts for a malformed frame, a request cancelled in flight and a client
that vanishes without a goodbye, nothing is left for the garbage collector to close.

(The suite ignores unclosed-socket warnings raised in other tests, which the client libraries
cause under load; this test is where our own code is held to closing them.)
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
from collections.abc import Iterator

import pytest

from coordinator.testing.server import WireClient, running_server
from coordinator.wire.api_keys import ApiKey


@contextlib.contextmanager
def unraisables() -> Iterator[list[str]]:
    """What the garbage collector reports as ignored while the block runs, collected at its end."""
    seen: list[str] = []
    previous = sys.unraisablehook

    def keep(report: sys.UnraisableHookArgs) -> None:
        seen.append(f"{report.exc_type.__name__}: {report.exc_value} in {report.object!r}")

    sys.unraisablehook = keep
    try:
        yield seen
        gc.collect()
    finally:
        sys.unraisablehook = previous


async def exchange_and_close(host: str, port: int) -> None:
    client = await WireClient.connect(host, port)
    response = await client.request(ApiKey.API_VERSIONS, 3, {})
    assert int(response.error_code) == 0
    await client.close()


async def malformed_frame(host: str, port: int) -> None:
    client = await WireClient.connect(host, port)
    await client.send(b"\x00\x00\x00\x04\xff\xff\xff\xff")  # api key -1: the node hangs up
    with pytest.raises(asyncio.IncompleteReadError):
        await client.read_frame()
    await client.close()


async def cancelled_in_flight(host: str, port: int) -> None:
    client = await WireClient.connect(host, port)
    request = asyncio.create_task(client.request(ApiKey.API_VERSIONS, 3, {}))
    await asyncio.sleep(0)
    request.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await request
    await client.close()


async def vanished(host: str, port: int) -> None:
    client = await WireClient.connect(host, port)
    await client.request(ApiKey.API_VERSIONS, 3, {})
    client.writer.transport.abort()  # a reset, as from a killed process
    await asyncio.sleep(0.05)


async def test_no_socket_is_left_to_the_garbage_collector() -> None:
    with unraisables() as left:
        async with running_server() as server:
            host, port = server.host, server.port
            for way in (exchange_and_close, malformed_frame, cancelled_in_flight, vanished):
                await way(host, port)
            await asyncio.sleep(0.1)  # the node notices the reset
    assert left == []
