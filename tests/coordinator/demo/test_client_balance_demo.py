"""The client-balance demo's story (`rebalance demo --protocol client-balance` without the
Spark report): its steps, and an event log the report can read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from coordinator.demo.client_balance import RECORDS, run_client_balance_story
from rebalance.event_schema import check_event


def test_the_story_and_its_event_log(tmp_path: Path) -> None:
    lines: list[str] = []
    asyncio.run(run_client_balance_story(tmp_path / "data", lines.append))
    text = "\n".join(lines)
    assert "no allocation round: each node's first record came" in text
    assert "free now:" in text and "a new node 1 takes them" in text
    assert "node 2 is SIGKILLed" in text and "a replacement node 2 takes them" in text
    assert f"records consumed: {RECORDS} of {RECORDS} distinct" in text
    assert "pin-b asks for 1:orders:0: PARTITION_OCCUPIED (410), held by pin-a" in text
    assert "pin-b registers it from the committed offset 0" in text

    logs = sorted((tmp_path / "data" / "events").glob("events-*.jsonl"))
    events = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    assert [e for e in events if check_event(e) is not None] == []
    ours = [e for e in events if e.get("group_type") == "client-balance"]
    kinds = {(e["type"], e.get("reason")) for e in ours}
    assert {
        ("member_joined", None),
        ("member_left", "leave"),
        ("member_expired", "session_timeout"),
        ("partition_registered", None),
        ("partition_released", "release"),
        ("partition_released", "expired"),
    } <= kinds  # a clean shutdown releases each partition before it leaves
    joined = [e for e in ours if e["type"] == "member_joined" and e["group"] == "demo-audit"]
    assert sorted(e["node_id"] for e in joined) == [0, 1, 1, 2, 2]
    assert {e["source_count"] for e in joined} == {3}
