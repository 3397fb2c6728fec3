"""The server's log tells a group's story at INFO, one line per state change, in Kafka's words;
`--log-format json` writes the same lines as JSON objects."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from coordinator.cli.log_format import JsonFormatter
from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.consumer_scenarios import ConsumerMember
from coordinator.testing.server import WireClient, running_server

LEAVE_EPOCH = -1

SETTINGS = [
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=100",
    "offsets.topic.num.partitions=1",
]


async def test_a_join_leave_expire_story_is_logged_once_per_state_change(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    with caplog.at_level(logging.INFO, logger="coordinator.groups"):
        async with running_server(settings=SETTINGS, data_dir=tmp_path) as server:
            broker = await BrokerUnderTest.connect(server.bootstrap, {})
            alice, bob = await broker.member("story"), await broker.member("story")
            await alice.join_fully(session_ms=60_000)
            await alice.sync({alice.member_id: b""})  # generation 1: alice alone
            bob_joins = asyncio.create_task(bob.join_fully(session_ms=300, rebalance_ms=60_000))
            while (await alice.heartbeat()).name != "rebalance_in_progress":
                await asyncio.sleep(0.01)
            await alice.join(session_ms=60_000)
            await bob_joins  # generation 2: both
            await alice.leave()  # bob is left alone, then falls silent and expires
            while "is now empty" not in caplog.text:
                await asyncio.sleep(0.05)
            await alice.client.close()
            await bob.client.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "coordinator.groups"]
    story = [line for line in lines if "story" in line]
    a, b = alice.member_id, bob.member_id
    assert story == [
        f"Member {a} joins group story.",
        "Preparing to rebalance group story in state PreparingRebalance with old generation 0 "
        "(reason: member_joined).",
        f"Stabilized group story generation 1 with 1 member (leader {a}, protocol range).",
        "Assignment received from leader for group story for generation 1. The group has 1 member.",
        f"Member {b} joins group story.",
        "Preparing to rebalance group story in state PreparingRebalance with old generation 1 "
        "(reason: member_joined).",
        f"Stabilized group story generation 2 with 2 members (leader {a}, protocol range).",
        f"[Group story] Member {a} has left group through explicit `LeaveGroup` request.",
        "Preparing to rebalance group story in state PreparingRebalance with old generation 2 "
        "(reason: member_left).",
        f"Member {b} in group story has failed, removing it from the group (session timeout).",
        "Group story with generation 3 is now empty.",
    ]
    assert all(r.levelno == logging.INFO for r in caplog.records if "story" in r.getMessage())
    assert not [line for line in lines if "loading" in line]  # nothing to load: at DEBUG
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="coordinator.groups"):
        async with running_server(settings=SETTINGS, data_dir=tmp_path):
            pass
    assert [r.getMessage() for r in caplog.records if r.name == "coordinator.groups"] == [
        "Finished loading offsets and group metadata from __consumer_offsets-0 (1 group)."
    ]


def test_json_log_lines_carry_the_groups_fields() -> None:
    record = logging.LogRecord("coordinator.groups.extension", logging.INFO, __file__, 1,
                               "Group %s is now empty.", ("g",), None)  # fmt: skip
    record.group, record.generation, record.event = "g", 3, "group_empty"
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "Group g is now empty."
    assert (line["level"], line["logger"], line["group"], line["generation"]) == (
        "INFO",
        "coordinator.groups.extension",
        "g",
        3,
    )
    assert line["event"] == "group_empty" and line["time"].endswith("+00:00")


async def test_a_consumer_groups_epochs_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    """KIP-848: the join, the epoch bump, the target, the member's new state, the leave."""
    settings = [*SETTINGS, "group.consumer.assignment.interval.ms=0"]
    with caplog.at_level(logging.INFO, logger="coordinator.groups"):
        async with running_server(settings=settings, topics=[("epochs-t", 4)]) as server:
            client = await WireClient.connect(server.host, server.port)
            member = ConsumerMember(client, 1, "epochs", "epochs-t")
            await member.joined()
            await member.heartbeat(LEAVE_EPOCH)
            await client.close()
    lines = [r.getMessage() for r in caplog.records if "[GroupId epochs]" in r.getMessage()]
    m = member.member_id
    # A new consumer group starts at epoch 1, as Kafka 4.4's does: the first join makes it 2.
    assert lines == [
        f"[GroupId epochs] Member {m} joins the consumer group.",
        "[GroupId epochs] Bumped group epoch to 2 (reason: member_joined).",
        "[GroupId epochs] Computed a new target assignment for epoch 2 with 'uniform' assignor.",
        f"[GroupId epochs] Member {m} new assignment state: epoch=2, state=stable, "
        "assignedPartitions=4.",
        f"[GroupId epochs] Member {m} left the consumer group.",
        "[GroupId epochs] Bumped group epoch to 3 (reason: member_left).",
    ]
    assert len(lines) == len(set(lines))  # each state change once
