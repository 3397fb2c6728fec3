"""The wire client keeps request and answer paired when a caller stops waiting."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from coordinator.testing.server import WireClient
from coordinator.wire.api_keys import ApiKey

pytestmark = pytest.mark.node(topics=[("t1", 1)])

PARKED_FETCH = {
    "max_wait": 500,  # nothing to read at offset 0 of an empty log: the node parks it
    "min_bytes": 1,
    "max_bytes": 1 << 20,
    "isolation_level": 0,
    "topics": [
        {"topic": "t1", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}
    ],
}  # fmt: skip


async def test_a_request_cancelled_in_flight_leaves_the_next_its_own_answer(
    client: WireClient,
) -> None:
    fetch = asyncio.create_task(client.request(ApiKey.FETCH, 4, PARKED_FETCH))
    await asyncio.sleep(0.1)  # sent and parked by the node
    fetch.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await fetch
    # The fetch's answer comes first on the connection; this request skips it.
    response = await client.request(ApiKey.API_VERSIONS, 3, {})
    assert int(response.error_code) == 0
    assert ApiKey.FETCH in {int(k.api_key) for k in response.api_keys}
    again = await client.request(ApiKey.API_VERSIONS, 3, {})
    assert int(again.error_code) == 0
