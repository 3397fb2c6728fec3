"""The cluster demo's story (`rebalance demo --protocol cluster`), checked by its facts: the
busiest coordinator is killed and its groups move to another node at a higher epoch after its
lease lapsed; a fourth node is handed its share; a node frozen past its lease loses its groups,
answers NOT_COORDINATOR once resumed and acknowledges nothing for them; PostgreSQL recorded every
move; no acknowledged commit is lost. Without PostgreSQL the demo says so in one line."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.demo.cluster import GROUPS, PARTITIONS, run_cluster_story
from coordinator.demo.cluster_facts import StoryFacts
from rebalance.placement import partition_for

pytestmark = [pytest.mark.interop, pytest.mark.slow]


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> tuple[StoryFacts, str]:
    lines: list[str] = []
    data = tmp_path_factory.mktemp("cluster-demo") / "data"
    facts = asyncio.run(run_cluster_story(data, lines.append))
    return facts, "\n".join(lines)


@pytest.mark.postgresql
@pytest.mark.xdist_group("postgresql")
def test_the_busiest_node_is_killed_and_its_groups_fail_over(story: tuple[StoryFacts, str]) -> None:
    facts, _ = story
    killed = [f for f in facts.failovers if f.fault == "SIGKILL"]
    assert killed, facts
    for failover in killed:
        assert failover.node == facts.killed
        assert failover.successor not in (-1, facts.killed)
        assert failover.epoch_after > failover.epoch_before
        assert failover.generation_after >= failover.generation_before >= 1
        assert failover.seconds > 0
        assert failover.kept, failover  # the successor's first OffsetFetch: nothing lost
        assert sorted(failover.acked_before) == list(range(PARTITIONS))
    lapsed = {
        (c.partition, c.owner)
        for c in facts.changes
        if c.previous_owner == facts.killed and c.previous_lapsed and c.owner is not None
    }
    assert {partition_for(f.group) for f in killed} <= {p for p, _ in lapsed}


@pytest.mark.postgresql
@pytest.mark.xdist_group("postgresql")
def test_a_joining_node_is_handed_its_share(story: tuple[StoryFacts, str]) -> None:
    facts, _ = story
    handed = [c for c in facts.changes if c.owner == 4 and not c.previous_lapsed]
    assert len({c.partition for c in handed}) >= 16  # its share of 50 among three
    assert all(c.previous_owner not in (None, 4) for c in handed)


@pytest.mark.postgresql
@pytest.mark.xdist_group("postgresql")
def test_a_node_frozen_past_its_lease_answers_nothing_as_owner(
    story: tuple[StoryFacts, str],
) -> None:
    facts, _ = story
    assert facts.frozen not in (-1, facts.killed)
    frozen = [f for f in facts.failovers if f.fault == "SIGSTOP"]
    assert frozen
    for failover in frozen:
        assert failover.node == facts.frozen
        assert failover.successor not in (-1, facts.frozen)
        assert failover.epoch_after > failover.epoch_before
        assert failover.kept, failover
    assert set(facts.probes) == {f.group for f in frozen}
    assert set(facts.probes.values()) == {"NOT_COORDINATOR"}
    assert facts.acks_from_deposed == 0
    lapsed = {c.partition for c in facts.changes if c.previous_owner == facts.frozen
              and c.previous_lapsed}  # fmt: skip
    assert {partition_for(f.group) for f in frozen} <= lapsed


@pytest.mark.postgresql
@pytest.mark.xdist_group("postgresql")
def test_no_acknowledged_commit_is_lost(story: tuple[StoryFacts, str]) -> None:
    facts, text = story
    assert set(facts.last_acked) == set(GROUPS)
    for group, acked in facts.last_acked.items():
        assert sorted(acked) == list(range(PARTITIONS))
        committed = facts.committed[group]
        assert all(committed[p] >= offset for p, offset in acked.items()), (acked, committed)
    assert facts.lost == 0
    for group in GROUPS:  # the history the story prints names every group's partition
        assert f"{group} (__consumer_offsets partition {partition_for(group)})" in text


def test_without_postgresql_the_demo_says_how_to_get_it_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "coordinator.cli.main", "demo", "--protocol", "cluster",
         "--output", str(tmp_path / "out")],
        env={**os.environ, "POSTGRESQL_BINDIR": str(tmp_path / "nowhere")},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("rebalance demo: the cluster demo runs its own PostgreSQL")
    assert "apt-get install postgresql" in lines[0]
