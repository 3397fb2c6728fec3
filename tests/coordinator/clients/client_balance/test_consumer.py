"""The client-balance client (`ClientBalanceConsumer`) against a server in this event loop (the
`node` fixture: topic t of 6 partitions, 5 records each): the modulo split, consuming and
confirming, pinned partitions, the heartbeat's resynchronisation, and `partitions_ready` waiting
as long as it is asked (an observation of spec §D.9 not repeated)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from coordinator.clients.client_balance import (
    ClientBalanceConfig,
    ClientBalanceConsumer,
    ClientBalanceError,
    ClientCode,
    modulo_assigned,
)
from coordinator.clients.client_balance.allocation import allocation_pass
from coordinator.testing.server import RunningServer, WireClient
from coordinator.wire.api_keys import ApiKey
from rebalance.errors import ErrorCode


def consumer(node: RunningServer, **config: Any) -> ClientBalanceConsumer:
    return ClientBalanceConsumer(
        ClientBalanceConfig(node.bootstrap, "g", session_timeout_ms=5000, **config)
    )


async def drain(c: ClientBalanceConsumer, expected: int) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []
    while len(seen) < expected:
        result = await c.get_message(max_wait_ms=2000)
        await c.confirm(result.confirm_context)
        seen += [(result.partition_key, m.offset) for m in result.messages]
    return seen


async def test_three_nodes_split_by_modulo_and_consume_everything(node: RunningServer) -> None:
    nodes = [consumer(node) for _ in range(3)]
    for node_id, c in enumerate(nodes):
        await c.start(["t"], 3, node_id)
    meta = await nodes[0].partition_meta()
    assert len(meta) == 6 and all(meta.values())
    for c in nodes:
        await allocation_pass(
            c, lambda m, c=c: modulo_assigned(m, c.source_count, c.node_id), lambda key: -1
        )
    held = [c.registered() for c in nodes]
    assert held == [modulo_assigned(meta, 3, i) for i in range(3)]
    assert set().union(*held) == set(meta)
    consumed = [await drain(c, 5 * len(h)) for c, h in zip(nodes, held, strict=True)]
    assert sorted(k for part in consumed for k, _ in part) == sorted(
        key for key in meta for _ in range(5)
    )
    for c in nodes:
        assert {info.current_offset for info in c.offsets().values()} == {5}
        await c.shutdown()


async def test_confirm_not_consumed_hands_the_same_records_out_again(node: RunningServer) -> None:
    c = consumer(node)
    await c.start(["t"], -1, 0)
    assert c.source_count == c.node_id == -2  # TubeMQ's undefined when the checks are off
    key = sorted(await c.partition_meta())[0]
    assert await c.connect(key, 2) == 2  # the bootstrap offset is where it starts
    first = await c.get_message(max_wait_ms=2000)
    assert [m.offset for m in first.messages] == [2, 3, 4]
    with pytest.raises(ClientBalanceError) as busy:
        await c.get_message(max_wait_ms=50)
    assert busy.value.code == ClientCode.ALL_PARTITION_INUSE
    await c.confirm(first.confirm_context, consumed=False)
    again = await c.get_message(max_wait_ms=2000)
    assert [m.offset for m in again.messages] == [2, 3, 4]
    assert await c.confirm(again.confirm_context) == 5
    await c.disconnect(key)
    # Registered again: it starts from the committed offset.
    assert await c.connect(key) == 5
    await c.shutdown()


async def test_a_pinned_partition_held_by_another_node_is_occupied(node: RunningServer) -> None:
    a, b = consumer(node), consumer(node, occupied_retry_backoff_ms=60_000)
    await a.start(["t"], 2, 0)
    await b.start(["t"], 2, 1)
    key = sorted(await a.partition_meta())[0]
    await a.connect(key)
    with pytest.raises(ClientBalanceError) as occupied:
        await b.connect(key)
    assert occupied.value.code == ErrorCode.PARTITION_OCCUPIED
    assert a.consumer_id in occupied.value.message
    with pytest.raises(ClientBalanceError) as again:
        await b.connect(key)
    assert again.value.code == ClientCode.CLIENT_HIGH_FREQUENCY_REQUEST
    with pytest.raises(ClientBalanceError) as duplicate:
        await consumer(node, register_retries=1).start(["t"], 2, 1)
    assert duplicate.value.code == ErrorCode.CLIENT_DUPLICATE_INDEXID
    await a.shutdown()
    await b.shutdown()


async def test_partitions_ready_waits_for_a_registration(node: RunningServer) -> None:
    c = consumer(node)
    await c.start(["t"], 1, 0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert not await c.partitions_ready(400)
    assert loop.time() - started >= 0.4  # TubeMQ's returned after one ~250 ms sleep
    key = sorted(await c.partition_meta())[0]

    async def later() -> None:
        await asyncio.sleep(0.3)
        await c.connect(key)

    task = asyncio.create_task(later())
    assert await c.partitions_ready(5000)
    await task
    await c.shutdown()


async def test_after_shutdown_every_action_says_so(node: RunningServer) -> None:
    c = consumer(node)
    await c.start(["t"], 1, 0)
    await c.shutdown()
    assert c.is_shutdown
    for action in (c.partition_meta(), c.connect("1:t:0"), c.get_message(10), c.confirm("x")):
        with pytest.raises(ClientBalanceError) as stopped:
            await action
        assert stopped.value.code == ClientCode.CLIENT_SHUTDOWN


async def test_start_checks_the_node_id_locally(node: RunningServer) -> None:
    c = consumer(node)
    with pytest.raises(ClientBalanceError) as bad:
        await c.start(["t"], 3, 3)
    assert bad.value.code == ErrorCode.BAD_REQUEST
    assert c.is_shutdown


async def test_a_key_the_metadata_does_not_list_is_not_found(node: RunningServer) -> None:
    c = consumer(node)
    await c.start(["t"], 1, 0)
    with pytest.raises(ClientBalanceError) as missing:
        await c.connect("1:t:6")
    assert int(missing.value.code) == 404  # TubeMQ's RmtDataCache.getSubscribablePartition
    await c.shutdown()


async def test_the_client_resynchronises_from_the_heartbeats_answer(node: RunningServer) -> None:
    # A registration whose answer never reached the client: the coordinator records it as the
    # node's, the node does not hold it. The heartbeat's answer tells; the node releases it.
    c = ClientBalanceConsumer(ClientBalanceConfig(node.bootstrap, "g", session_timeout_ms=600))
    await c.start(["t"], 1, 0)
    await c.connect("1:t:0")
    raw = await WireClient.connect(node.host, node.port)
    lost = await raw.request(
        ApiKey.PARTITION_REGISTER,
        0,
        {
            "group_id": "g",
            "member_id": c.consumer_id,
            "member_epoch": c.member_epoch,
            "topics": [{"name": "t", "partitions": [{"partition_index": 1}]}],
        },
    )
    assert int(lost.topics[0].partitions[0].error_code) == 0

    async def booked() -> list[int]:
        answer = await raw.request(ApiKey.CLIENT_BALANCE_DESCRIBE, 0, {"group_ids": ["g"]})
        return sorted(int(p) for n in answer.groups[0].nodes for h in n.held for p in h.partitions)

    async with asyncio.timeout(10):
        while await booked() != [0]:
            await asyncio.sleep(0.05)
    assert c.registered() == {"1:t:0"}  # what it was told it holds, it keeps
    await raw.close()
    await c.shutdown()
