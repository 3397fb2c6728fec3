"""The asyncio server: in-order responses, concurrency, and bad input on raw sockets.

Every bad-input case checks three things: the offending connection is closed, a warning names
the reason on the `coordinator.wire` logger, and another connection opened before it still works.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from coordinator.node.contract import ApiSpec, RequestContext, ResponseValue
from coordinator.testing.server import RunningServer, WireClient, running_server

HEARTBEAT = 12
API_VERSIONS = 18


@pytest.fixture
async def node() -> AsyncIterator[RunningServer]:
    async with running_server(settings=["socket.request.max.bytes=4096"], groups=False) as server:
        yield server


async def connect(node: RunningServer) -> WireClient:
    return await WireClient.connect(node.host, node.port)


async def assert_closed(client: WireClient) -> None:
    data = await asyncio.wait_for(client.reader.read(), timeout=5)
    assert data == b""


async def assert_works(client: WireClient) -> None:
    response = await client.request(API_VERSIONS, 3, {})
    assert response.error_code is ErrorCode.none


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


BAD_INPUT = {
    "negative-length": (struct.pack(">i", -5), "smaller than a request header"),
    "oversized": (struct.pack(">i", 4097), "exceeds socket.request.max.bytes=4096"),
    "too-short-for-prefix": (frame(b"\x00\x12"), "smaller than a request header"),
    "unknown-api-key": (frame(struct.pack(">hhi", 999, 0, 1)), "unknown api_key 999"),
    "unsupported-version": (frame(struct.pack(">hhi", 3, 99, 1)), "unsupported version 99"),
    "garbage-body": (frame(struct.pack(">hhi", 3, 13, 1) + b"\xff" * 5), "cannot decode"),
    "truncated-frame": (struct.pack(">i", 100) + b"\x00\x03", "ended after 2 of 100"),
    "truncated-length": (b"\x00\x00", "inside a frame length"),
}


@pytest.mark.parametrize("case", BAD_INPUT, ids=list(BAD_INPUT))
async def test_bad_input_closes_only_that_connection(
    node: RunningServer, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    data, reason = BAD_INPUT[case]
    bystander = await connect(node)
    offender = await connect(node)
    with caplog.at_level(logging.WARNING, logger="coordinator.wire"):
        await offender.send(data)
        if case.startswith("truncated"):
            offender.writer.write_eof()
        await assert_closed(offender)
    assert reason in caplog.text
    await assert_works(bystander)
    latecomer = await connect(node)
    await assert_works(latecomer)
    for client in (bystander, offender, latecomer):
        await client.close()


async def test_api_versions_above_our_max_gets_kip511_answer(node: RunningServer) -> None:
    client = await connect(node)
    await client.send(frame(struct.pack(">hhi", API_VERSIONS, 99, 5) + b"\xff\xff"))
    correlation_id, response = await client.read_response(API_VERSIONS, 0)
    assert correlation_id == 5
    assert response.error_code is ErrorCode.unsupported_version
    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert versions[API_VERSIONS] == (0, 4)
    await assert_works(client)  # the connection stays usable, clients retry with v0
    await client.close()


def delayed_heartbeat(log: list[str]) -> ApiSpec:
    """A Heartbeat stand-in whose latency is chosen by the group id ("slow"/"fast")."""

    async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
        await asyncio.sleep(0.3 if request.group_id == "slow" else 0)
        log.append(request.group_id)
        return {"error_code": 0}

    return ApiSpec(HEARTBEAT, range(0, 5), handle, "test_heartbeat")


async def test_responses_are_written_in_request_order(node: RunningServer) -> None:
    finished: list[str] = []
    node.broker.registry.register(delayed_heartbeat(finished))
    client = await connect(node)
    beat = {"generation_id": 1, "member_id": "m"}
    await client.send(
        client.encode(HEARTBEAT, 4, {"group_id": "slow", **beat})
        + client.encode(HEARTBEAT, 4, {"group_id": "fast", **beat})
        + client.encode(API_VERSIONS, 3, {})
    )
    first, _ = await client.read_response(HEARTBEAT, 4)
    second, _ = await client.read_response(HEARTBEAT, 4)
    third, _ = await client.read_response(API_VERSIONS, 3)
    assert (first, second, third) == (1, 2, 3)
    assert finished == ["fast", "slow"]  # handled concurrently, answered in order
    await client.close()


async def test_registered_api_is_advertised(node: RunningServer) -> None:
    node.broker.registry.register(delayed_heartbeat([]))
    client = await connect(node)
    response = await client.request(API_VERSIONS, 3, {})
    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert versions[HEARTBEAT] == (0, 4)
    await client.close()


async def broken(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    raise RuntimeError("core exploded")


async def test_handler_failure_answers_unknown_server_error_with_a_traceback(
    node: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    node.broker.registry.register(ApiSpec(HEARTBEAT, range(0, 5), broken))
    client = await connect(node)
    with caplog.at_level(logging.ERROR, logger="coordinator.wire"):
        response = await client.request(
            HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": "m"}
        )
    assert response.error_code is ErrorCode.unknown_server_error
    assert "handler for api_key 12 v4 failed" in caplog.text
    assert "core exploded" in caplog.text
    await assert_works(client)
    await client.close()


async def disk_full(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    raise OSError(28, "No space left on device")


async def test_storage_failure_answers_kafka_storage_error_in_one_line(
    node: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    node.broker.registry.register(ApiSpec(HEARTBEAT, range(0, 5), disk_full))
    client = await connect(node)
    with caplog.at_level(logging.WARNING, logger="coordinator.wire"):
        response = await client.request(
            HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": "m"}
        )
    assert response.error_code is ErrorCode.kafka_storage_error
    (record,) = [r for r in caplog.records if r.name == "coordinator.wire"]
    assert record.exc_info is None
    assert "No space left on device; answering KAFKA_STORAGE_ERROR" in record.getMessage()
    await assert_works(client)
    await client.close()


async def test_handler_failure_without_a_top_level_error_code_closes_the_connection(
    node: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    list_offsets = 2
    node.broker.registry.register(ApiSpec(list_offsets, range(1, 12), broken), replace=True)
    client = await connect(node)
    bystander = await connect(node)
    with caplog.at_level(logging.ERROR, logger="coordinator.wire"):
        await client.send(client.encode(list_offsets, 7, {"replica_id": -1, "topics": []}))
        await assert_closed(client)
    assert "handler for api_key 2 v7 failed" in caplog.text
    assert "closing connection" in caplog.text
    await assert_works(bystander)
    await client.close()
    await bystander.close()


def parked_heartbeat(answered: list[str]) -> ApiSpec:
    """A Heartbeat stand-in answering through `answer_parked`: "slow" 0.2 s later from the
    loop, "fast" before returning, "broken" raises instead."""

    async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
        raise AssertionError("a parked API is not run as a task on the wire")

    def answer_parked(request: Any, api_version: int, ctx: RequestContext, answer: Any) -> None:
        group = request.group_id
        if group == "broken":
            raise RuntimeError("cannot park")

        def reply() -> None:
            answered.append(group)
            answer({"error_code": 0})

        if group == "slow":
            asyncio.get_running_loop().call_later(0.2, reply)
        else:
            reply()

    return ApiSpec(HEARTBEAT, range(0, 5), handle, "test_heartbeat", answer_parked=answer_parked)


# A request waiting in a task (a handler that awaits) or parked as a slot of its connection's
# queue (a JoinGroup or SyncGroup waiting for its round) is answered before the node stops.
@pytest.mark.parametrize("slow_heartbeat", [delayed_heartbeat, parked_heartbeat])
async def test_shutdown_lets_waiting_requests_finish(
    node: RunningServer, slow_heartbeat: Callable[[list[str]], ApiSpec]
) -> None:
    node.broker.registry.register(slow_heartbeat([]))
    client = await connect(node)
    await client.send(
        client.encode(HEARTBEAT, 4, {"group_id": "slow", "generation_id": 1, "member_id": "m"})
    )
    await asyncio.sleep(0.05)
    await node.app.stop(grace=5)
    correlation_id, response = await client.read_response(HEARTBEAT, 4)
    assert (correlation_id, response.error_code) == (1, ErrorCode.none)
    await assert_closed(client)
    await client.close()


async def test_reading_pauses_when_max_in_flight_is_reached(node: RunningServer) -> None:
    finished: list[str] = []
    node.broker.registry.register(delayed_heartbeat(finished))
    assert node.app.server is not None
    node.app.server.max_in_flight = 1  # applies to connections opened from now on
    client = await connect(node)
    beat = {"generation_id": 1, "member_id": "m"}
    await client.send(
        client.encode(HEARTBEAT, 4, {"group_id": "slow", **beat})
        + client.encode(HEARTBEAT, 4, {"group_id": "fast", **beat})
    )
    assert [(await client.read_response(HEARTBEAT, 4))[0] for _ in range(2)] == [1, 2]
    assert finished == ["slow", "fast"]  # the second was not read before the first was answered
    await client.close()


async def test_many_pipelining_connections_each_get_their_responses_in_order(
    node: RunningServer,
) -> None:
    """Fetches that long-poll for different times finish out of order; answers may not."""
    node.broker.topics.create("t", 1)

    def fetch(wait_ms: int) -> dict[str, object]:
        partition = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}
        return {
            "max_wait": wait_ms,
            "min_bytes": 1,
            "topics": [{"topic": "t", "partitions": [partition]}],
        }

    async def session(index: int) -> list[int]:
        client = await connect(node)
        plan = [(1, 12, fetch(((index + step) % 4) * 20)) for step in range(20)]
        plan += [(API_VERSIONS, 3, {})] * 5
        await client.send(
            b"".join(client.encode(key, version, body) for key, version, body in plan)
        )
        correlation_ids = [
            (await client.read_response(key, version))[0] for key, version, _ in plan
        ]
        await client.close()
        return correlation_ids

    results = await asyncio.gather(*(session(i) for i in range(20)))
    assert all(ids == list(range(1, 26)) for ids in results)


async def test_a_client_that_never_reads_cannot_make_the_server_buffer_without_bound(
    node: RunningServer,
) -> None:
    """A real socket sends ApiVersions requests (whose answers are ~10x their size) as fast
    as it can and never reads: the server stops reading from it, so the sender is stopped by
    TCP flow control while the server holds little of its own, and others are still served."""
    bystander = await connect(node)
    request = bystander.encode(API_VERSIONS, 3, {})
    greedy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    greedy.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    greedy.connect((node.host, node.port))
    greedy.setblocking(False)
    chunk = request * 2048
    sent, stalled_at, limit = 0, None, 64 << 20
    loop = asyncio.get_running_loop()
    try:
        while sent < limit:
            try:
                # whole frames only: resume a partly sent chunk where it stopped
                sent += greedy.send(chunk[sent % len(chunk) :] or chunk)
                stalled_at = None
            except BlockingIOError:
                stalled_at = stalled_at or loop.time()
                if loop.time() - stalled_at > 1.0:
                    break  # the server has stopped reading: what we sent is all it took
            await asyncio.sleep(0.001)
        assert sent < limit, "the server kept reading from a client that never reads"
        assert node.app.server is not None
        port = greedy.getsockname()[1]
        (conn,) = [c for c in node.app.server._connections if c.peer.endswith(f":{port}")]
        assert conn.transport is not None
        assert conn.transport.get_write_buffer_size() <= 1 << 20
        assert len(conn._buffer) <= 1 << 20
        await assert_works(bystander)
    finally:
        greedy.close()
        await bystander.close()


async def test_requests_split_across_many_reads_are_answered(node: RunningServer) -> None:
    """A frame may arrive a byte at a time, or (a large one) in many reads."""
    client = await connect(node)
    first, second = client.encode(API_VERSIONS, 3, {}), client.encode(API_VERSIONS, 3, {})
    for byte in first + second[:3]:
        await client.send(bytes([byte]))
        await asyncio.sleep(0)
    await client.send(second[3:])
    assert [(await client.read_response(API_VERSIONS, 3))[0] for _ in range(2)] == [1, 2]
    await client.close()


async def test_a_large_request_arriving_in_many_reads_is_answered() -> None:
    """2 MiB (ApiVersions v0 padded with zeros, which the server ignores after the body as it
    does librdkafka's padding) sent in 1 KiB writes."""
    async with running_server(groups=False) as server:
        client = await connect(server)
        header = struct.pack(">hhih", API_VERSIONS, 0, 7, -1)
        payload = header + bytes(2 << 20)
        data = frame(payload)
        for start in range(0, len(data), 1024):
            await client.send(data[start : start + 1024])
        correlation_id, response = await client.read_response(API_VERSIONS, 0)
        assert (correlation_id, response.error_code) == (7, ErrorCode.none)
        await client.close()


def connections(node: RunningServer) -> list[Any]:
    assert node.app.server is not None
    return list(node.app.server._connections)


async def test_parked_requests_are_slots_answered_in_request_order(node: RunningServer) -> None:
    answered: list[str] = []
    node.broker.registry.register(parked_heartbeat(answered))
    client = await connect(node)
    beat = {"generation_id": 1, "member_id": "m"}
    await client.send(
        client.encode(HEARTBEAT, 4, {"group_id": "slow", **beat})
        + client.encode(HEARTBEAT, 4, {"group_id": "fast", **beat})
        + client.encode(API_VERSIONS, 3, {})
    )
    await asyncio.sleep(0.05)
    (conn,) = connections(node)
    assert (conn.parked, len(conn.in_flight)) == (1, 0)  # a slot, no task
    first, _ = await client.read_response(HEARTBEAT, 4)
    second, _ = await client.read_response(HEARTBEAT, 4)
    third, _ = await client.read_response(API_VERSIONS, 3)
    assert (first, second, third) == (1, 2, 3)
    assert answered == ["fast", "slow"]
    assert conn.parked == 0
    await client.close()


async def test_a_request_that_fails_to_park_answers_unknown_server_error(
    node: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    node.broker.registry.register(parked_heartbeat([]))
    client = await connect(node)
    with caplog.at_level(logging.ERROR, logger="coordinator.wire"):
        response = await client.request(
            HEARTBEAT, 4, {"group_id": "broken", "generation_id": 1, "member_id": "m"}
        )
    assert response.error_code is ErrorCode.unknown_server_error
    assert "handler for api_key 12 v4 failed" in caplog.text
    assert "RuntimeError: cannot park" in caplog.text  # with its traceback
    await assert_works(client)
    await client.close()


async def test_an_answer_for_a_closed_connection_is_dropped(node: RunningServer) -> None:
    answered: list[str] = []
    node.broker.registry.register(parked_heartbeat(answered))
    client = await connect(node)
    await client.send(
        client.encode(HEARTBEAT, 4, {"group_id": "slow", "generation_id": 1, "member_id": "m"})
    )
    await asyncio.sleep(0.05)
    (conn,) = connections(node)
    await client.close()
    await asyncio.sleep(0.3)
    assert answered == ["slow"]
    assert conn.parked == 0 and conn.parked_done().done()
    assert connections(node) == []
