"""Kafka's classic requests naming a live client-balance group are answered as Kafka's broker
answers them for a group of another type that takes none: the same requests go to Kafka 4.4
naming a live share group and to a node naming a live client-balance group, and the answers
must match. (TubeMQ's consume-type check would say CLIENT_INCONSISTENT_CONSUMETYPE, 424, which
Kafka's clients do not know.)"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

from test_client_balance_wire import SETTINGS, join

from coordinator.testing.peers.kafka_broker import KafkaBroker
from coordinator.testing.server import WireClient, running_server
from coordinator.wire import client_balance_schema as schema

JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, SHARE_GROUP_HEARTBEAT = 11, 12, 13, 14, 76


async def classic_answers(client: WireClient, group: str, member: str) -> list[Any]:
    timeout = timedelta(seconds=10)
    joined = await client.request(JOIN_GROUP, 5, {
        "group_id": group, "session_timeout": timeout, "rebalance_timeout": timeout,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    })  # fmt: skip
    member_fields = {"generation_id": 1, "member_id": member, "group_instance_id": None}
    synced = await client.request(
        SYNC_GROUP, 3, {"group_id": group, "assignments": []} | member_fields
    )
    beat = await client.request(HEARTBEAT, 3, {"group_id": group} | member_fields)
    left = await client.request(LEAVE_GROUP, 3, {
        "group_id": group, "members": [{"member_id": member, "group_instance_id": None}],
    })  # fmt: skip
    return [
        (int(joined.error_code), joined.member_id),
        int(synced.error_code),
        int(beat.error_code),
        (int(left.error_code), [int(m.error_code) for m in left.members]),
    ]


async def test_classic_requests_get_kafkas_answers_for_a_group_of_another_type(
    kafka_broker: KafkaBroker,
) -> None:
    host, port = kafka_broker.bootstrap.rsplit(":", 1)
    kafka = await WireClient.connect(host, int(port))
    member = uuid.uuid4().hex[:22]
    async with asyncio.timeout(60):  # the share coordinator loads its state topic first
        while True:
            share = await kafka.request(SHARE_GROUP_HEARTBEAT, 1, {
                "group_id": "cb-share", "member_id": member, "member_epoch": 0,
                "rack_id": None, "subscribed_topic_names": ["t"],
            })  # fmt: skip
            if int(share.error_code) == 0:
                break
            await asyncio.sleep(0.2)
    expected = await classic_answers(kafka, "cb-share", member)
    await kafka.close()

    schema.register_with_codec()
    async with running_server(topics=[("t", 4)], settings=SETTINGS) as node:
        ours = await WireClient.connect(node.host, node.port)
        assert int((await join(ours, "a", 0)).error_code) == 0
        assert await classic_answers(ours, "g", "a") == expected
        await ours.close()
