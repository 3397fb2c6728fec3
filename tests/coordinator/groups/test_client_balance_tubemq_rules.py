"""TubeMQ's client-balance rules case by case, over a real connection to a node (issue 36):
what a user of TubeMQ's ClientBalanceConsumer would hit. Each rule names where TubeMQ has it
(apache/inlong, tubemq-server and tubemq-client). The rules about sessions are exercised with
SIGKILLed node processes in test_client_balance_churn and test_client_balance_processes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from test_client_balance_processes import committed, produce
from test_client_balance_wire import SETTINGS, join, register

from coordinator.testing.server import WireClient, running_server
from coordinator.wire import client_balance_schema as schema

DELETE_RECORDS = 21


@pytest.fixture
async def client() -> AsyncIterator[WireClient]:
    schema.register_with_codec()
    async with running_server(topics=[("t", 4)], settings=SETTINGS) as node:
        connection = await WireClient.connect(node.host, node.port)
        yield connection
        await connection.close()


async def heartbeat(client: WireClient, member: str, epoch: int, held: list[int]) -> Any:
    return await client.request(
        schema.HEARTBEAT_KEY,
        0,
        {
            "group_id": "g",
            "member_id": member,
            "member_epoch": epoch,
            "held": [{"topic": "t", "partitions": held}],
        },
    )


async def release(client: WireClient, member: str, epoch: int, partition: int) -> int:
    response = await client.request(
        schema.RELEASE_KEY,
        0,
        {
            "group_id": "g",
            "member_id": member,
            "member_epoch": epoch,
            "topics": [{"name": "t", "partitions": [partition]}],
        },
    )
    return int(response.topics[0].partitions[0].error_code)


async def holders(client: WireClient) -> dict[str, list[int]]:
    response = await client.request(schema.DESCRIBE_KEY, 0, {"group_ids": ["g"]})
    return {
        n.member_id: sorted(int(p) for h in n.held for p in h.partitions)
        for n in response.groups[0].nodes
    }


def started_at(response: Any) -> list[tuple[int, int]]:
    return [(int(p.error_code), int(p.offset)) for p in response.topics[0].partitions]


async def test_a_heartbeat_report_older_than_a_registration_does_not_undo_it(
    client: WireClient,
) -> None:
    # The report was taken before the registration was answered: TubeMQ's heartbeats report,
    # only register/unregister and the holder's timeout change holdings.
    await join(client, "a", 0)
    assert started_at(await register(client, "a", 1, (0, -1))) == [(0, -1)]
    beat = await heartbeat(client, "a", 1, [])
    assert int(beat.error_code) == 0
    assert [(h.topic, list(h.partitions)) for h in beat.held] == [("t", [0])]  # to resync by
    # A report listing a partition nobody holds does not register it either.
    await heartbeat(client, "a", 1, [0, 3])
    assert await holders(client) == {"a": [0]}
    await join(client, "b", 1)
    assert started_at(await register(client, "b", 2, (3, -1))) == [(0, -1)]
    assert await holders(client) == {"a": [0], "b": [3]}


async def test_a_bootstrap_offset_is_clamped_to_the_log(client: WireClient) -> None:
    # DefaultOffsetManager.loadOffset: MixedUtils.mid(bootstrapOffset, logStart, logEnd).
    await produce(client, 0, [b"%d" % i for i in range(20)])
    await produce(client, 1, [b"%d" % i for i in range(20)])
    deleted = await client.request(
        DELETE_RECORDS,
        2,
        {
            "topics": [{"name": "t", "partitions": [{"partition_index": 1, "offset": 8}]}],
            "timeout_ms": 1000,
        },
    )
    assert int(deleted.topics[0].partitions[0].error_code) == 0
    await join(client, "a", 0)
    answer = await register(client, "a", 1, (0, 1000), (1, 3), (2, 0))
    assert started_at(answer) == [(0, 20), (0, 8), (0, 0)]
    assert await committed(client) == {0: 20, 1: 8, 2: 0}


async def test_the_first_nodes_source_count_stays_until_the_group_empties(
    client: WireClient,
) -> None:
    # ConsumeGroupInfo.addConsumer takes sourceCount from the first consumer of the empty
    # group; ConsumerInfoHolder.removeConsumer drops the group only once it is empty.
    assert int((await join(client, "a", 0, source_count=-1)).error_code) == 0
    assert int((await join(client, "b", 0, source_count=3)).error_code) == 0
    left = await client.request(
        schema.HEARTBEAT_KEY, 0, {"group_id": "g", "member_id": "a", "member_epoch": -1}
    )
    assert int(left.error_code) == 0
    c = await join(client, "c", 0, source_count=4)  # the checks are still off
    assert (int(c.error_code), int(c.source_count)) == (0, -1)


async def test_releases_answer_tubemqs_broker_codes(client: WireClient) -> None:
    await join(client, "a", 0)
    await join(client, "b", 1)
    await register(client, "a", 1, (0, -1))
    assert await release(client, "b", 2, 0) == 412  # DUPLICATE_PARTITION: a holds it
    assert await release(client, "a", 1, 0) == 0
    assert await release(client, "a", 1, 0) == 411  # HB_NO_NODE: nobody holds it
    assert await holders(client) == {"a": [], "b": []}


async def test_a_partition_outside_the_nodes_metadata_is_not_found(client: WireClient) -> None:
    await join(client, "a", 0)
    assert started_at(await register(client, "a", 1, (4, -1))) == [(404, -1)]
