"""`rebalance conformance` checked on our own server, as every commit runs it: every scenario
passes against it, a fault injected into the coordinator makes exactly the scenarios of that
rule fail, unmet assumptions skip, and the command's outputs and exit statuses are as documented."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from xml.etree import ElementTree

import pytest

from coordinator.cli.main import main
from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.runner import Outcome, run_scenarios, select
from coordinator.conformance.scenario import SCENARIOS
from coordinator.testing.server import RunningServer, running_server, server_in_thread
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient
from rebalance import ErrorCode
from rebalance.classic import ClassicGroupType, expiry, join, liveness, rebalance
from rebalance.classic.group import Group, Member
from rebalance.classic.rebalance import join_reply
from rebalance.classic.replies import JoinGroupReply
from rebalance.consumer_group import membership, migration
from rebalance.effects import Reply, Result
from rebalance.offsets import Offsets
from rebalance.state import CoordinatorState

DIFFERENTIAL = "differential.lockstep"
TIMER_RULES = (
    "sync.timeout_removes_silent_members",
    "join.rebalance_timeout_removes_absent_members",
    "join.leader_reelected",
)

# Short timeouts, as a test broker is configured: the time-dependent rules run in seconds.
QUICK = [
    "group.initial.rebalance.delay.ms=300",
    "group.min.session.timeout.ms=1000",
    "group.max.size=3",
]
# Offsets cleaned up every 200 ms: the retention rule's broker. Not QUICK's, because a cleanup
# that often deletes a forming group (Empty, no offsets) between a member's two joins.
RETENTION = [*QUICK, "offsets.retention.check.interval.ms=200"]


@pytest.fixture
async def node() -> AsyncIterator[RunningServer]:
    async with running_server(settings=QUICK) as server:
        yield server


def by_status(outcomes: list[Outcome]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {"passed": set(), "failed": set(), "skipped": set()}
    for o in outcomes:
        found[o.status].add(o.scenario.name)
    return found


async def test_every_scenario_passes_against_our_server(node: RunningServer) -> None:
    # Three want other settings: the differential runs no initial delay and short sessions
    # (test_differential.py), the retention rule a short cleanup interval (below).
    broker = await BrokerUnderTest.connect(node.bootstrap, {})
    elsewhere = {DIFFERENTIAL, "differential.timed", "retention.explicit_expiry"}
    outcomes = await run_scenarios(broker, [s for s in SCENARIOS if s.name not in elsewhere])
    assert [(o.scenario.name, o.detail) for o in outcomes if o.status != "passed"] == []
    assert len(outcomes) == len(SCENARIOS) - 3 >= 28
    assert broker.sources["group.min.session.timeout.ms"] == "broker"  # read by DescribeConfigs


async def test_the_timer_rules_pass_where_sessions_are_shorter_than_a_scheduling_hiccup() -> None:
    # A 100 ms minimum session: the rebalance-timeout rule once slept 200 ms without a heartbeat
    # and timed its own leader out (a scenario valid for any broker settings may not).
    settings = ["group.min.session.timeout.ms=100", "group.initial.rebalance.delay.ms=0"]
    async with running_server(settings=settings) as server:
        broker = await BrokerUnderTest.connect(server.bootstrap, {})
        timers = [s for s in SCENARIOS if s.name in TIMER_RULES]
        outcomes = await run_scenarios(broker, timers)
    assert [(o.scenario.name, o.status, o.detail) for o in outcomes] == [
        (name, "passed", "") for name in TIMER_RULES
    ]


async def test_unfenced_commits_fail_the_commit_rules(
    node: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ClassicGroupType, "validate_offset_commit", lambda *args: None)
    broker = await BrokerUnderTest.connect(node.bootstrap, {})
    found = by_status(await run_scenarios(broker, select("commit.")))
    assert found["failed"] == {"commit.stale_generation_fenced", "commit.unknown_member_fenced"}


async def test_a_heartbeat_that_always_says_ok_fails_the_liveness_rules(
    node: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(liveness, "_heartbeat", lambda *args: ErrorCode.NONE)
    broker = await BrokerUnderTest.connect(node.bootstrap, {})
    no_classic_heartbeat = ("consumer.", "retention.", "differential.")
    classic = [s for s in SCENARIOS if not s.name.startswith(no_classic_heartbeat)]
    found = by_status(await run_scenarios(broker, classic))
    assert {
        "heartbeat.rebalance_in_progress",
        "heartbeat.illegal_generation",
        "leave.group_becomes_empty",
        "session.expiry_removes_member",
        "static.replacement_fences_old_id",
    } <= found["failed"]
    assert {"join.member_id_required", "commit.stale_generation_fenced"} <= found["passed"]


async def test_unchecked_member_epochs_fail_the_kip848_epoch_rule(
    node: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(membership, "_check_epoch", lambda *args: None)
    broker = await BrokerUnderTest.connect(node.bootstrap, {})
    found = by_status(await run_scenarios(broker, select("consumer.")))
    assert found["failed"] == {"consumer.epoch_ahead_fenced"}
    assert len(found["passed"]) == 9 and not found["skipped"]


async def test_no_online_migration_fails_the_migration_rules(
    node: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A coordinator that never converts a group with members (every policy as `disabled`)."""
    monkeypatch.setattr(migration, "upgrade_allowed", lambda *args: False)
    broker = await BrokerUnderTest.connect(node.bootstrap, {})
    found = by_status(await run_scenarios(broker, select("consumer.migration")))
    assert found["failed"] == {"consumer.migration_upgrade", "consumer.migration_downgrade"}


def told_to_assign(
    state: CoordinatorState, result: Result, group: Group, member: Member, old_leader: str | None
) -> None:
    """The fault: a restarted static leader is answered as a leader that must assign."""
    token = group.unpark_join(member)
    assert token is not None
    result.reply(token, join_reply(group, member))


async def test_a_restarted_static_leader_told_to_assign_fails_the_kip814_rules(
    node: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(join, "_answer_static_rejoin_without_rebalance", told_to_assign)
    broker = await BrokerUnderTest.connect(node.bootstrap, {})
    found = by_status(await run_scenarios(broker, select("static.")))
    assert found["failed"] == {
        "static.leader_restart_skips_assignment",
        "static.leader_restart_before_v9",
    }
    assert found["passed"] == {"static.replacement_fences_old_id"}


async def test_offsets_expire_and_offsets_that_never_expire_fail_the_retention_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running_server(settings=RETENTION) as server:
        broker = await BrokerUnderTest.connect(server.bootstrap, {})
        (passing,) = await run_scenarios(broker, select("retention."))
        monkeypatch.setattr(Offsets, "expire", lambda *args: Result())
        (failing,) = await run_scenarios(broker, select("retention."))
    assert (passing.status, passing.detail) == ("passed", "")
    assert failing.status == "failed"
    assert failing.detail == "the offset after its retention: expected -1, got 11"


async def test_an_ignored_sync_timeout_fails_its_rule(
    node: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(expiry, "expire_sync", lambda *args: Result())
    broker = await BrokerUnderTest.connect(node.bootstrap, {})
    found = by_status(await run_scenarios(broker, select("sync.")))
    assert found["failed"] == {"sync.timeout_removes_silent_members"}
    assert found["passed"] == {"sync.leader_assignment_relayed"}


async def test_a_leader_not_reelected_fails_its_rule(
    node: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = rebalance.complete_join

    def keeps_departed_leader(
        state: CoordinatorState, result: Result, group: Group, now_ms: int
    ) -> None:
        """The fault: a round that ends without its leader keeps it, and says so."""
        old = group.leader_id
        real(state, result, group, now_ms)
        if old is None or old in group.members or not group.members:
            return
        group.leader_id = old
        for i, r in enumerate(result.replies):
            if isinstance(r.response, JoinGroupReply) and not r.response.error:
                result.replies[i] = Reply(r.token, replace(r.response, leader=old, members=()))

    monkeypatch.setattr(rebalance, "complete_join", keeps_departed_leader)
    monkeypatch.setattr(expiry, "complete_join", keeps_departed_leader)
    broker = await BrokerUnderTest.connect(node.bootstrap, {})
    found = by_status(await run_scenarios(broker, select("join.")))
    assert found["failed"] == {"join.leader_reelected"}
    assert "join.rebalance_timeout_removes_absent_members" in found["passed"]


async def test_scenarios_whose_assumptions_fail_are_skipped_with_the_reason(
    node: RunningServer,
) -> None:
    slow = {"group.min.session.timeout.ms": "45000"}  # as if the broker said so
    broker = await BrokerUnderTest.connect(node.bootstrap, slow)
    assert broker.sources["group.min.session.timeout.ms"] == "assumed"
    outcomes = await run_scenarios(broker, select("session."))
    assert [(o.status, o.detail) for o in outcomes] == [
        ("skipped", "group.min.session.timeout.ms=45000 > 10000: the scenario would be slow")
    ]


def test_the_command_writes_json_and_junit_and_exits_0(tmp_path: Path) -> None:
    with server_in_thread(settings=QUICK) as server:
        reports = ["--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")]
        status = main(["conformance", "--bootstrap", server.bootstrap, "-k", "join.", *reports])
    assert status == 0
    report = json.loads((tmp_path / "r.json").read_text())
    joins = [s for s in SCENARIOS if "join." in s.name]
    assert report["summary"] == f"{len(joins)} passed, 0 failed, 0 skipped"
    assert {s["status"] for s in report["scenarios"]} == {"passed"}
    suite = ElementTree.parse(tmp_path / "r.xml").getroot()
    assert (suite.get("tests"), suite.get("failures")) == (str(len(joins)), "0")


def what_remains(bootstrap: str) -> tuple[list[str], list[str]]:
    """The broker's groups and topics (ListGroups, Metadata), the offsets topic aside."""

    async def ask() -> tuple[list[str], list[str]]:
        host, _, port = bootstrap.rpartition(":")
        client = await WireClient.connect(host, int(port))
        try:
            listed = await client.request(ApiKey.LIST_GROUPS, 4, {"states_filter": []})
            everything = {"topics": None, "allow_auto_topic_creation": False}
            metadata = await client.request(ApiKey.METADATA, 12, everything)
        finally:
            await client.close()
        topics = [t.name for t in metadata.topics if t.name != "__consumer_offsets"]
        return sorted(g.group_id for g in listed.groups), sorted(topics)

    return asyncio.run(ask())


def test_a_run_removes_its_groups_and_topics_and_a_second_run_passes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Three runs of the command (the point; about 2 s each). Consumer scenarios create topics,
    # KIP-848 groups and classic ones (migration), and leave members behind whose sessions have
    # not expired: the run removes them all at the end.
    with server_in_thread(settings=QUICK) as server:
        run = ["conformance", "--bootstrap", server.bootstrap, "-k", "consumer."]
        for _ in range(2):
            assert main(run) == 0
            assert re.search(
                r"removed [1-9]\d* groups and [1-9]\d* topics of this run\n",
                capsys.readouterr().out,
            )
            assert what_remains(server.bootstrap) == ([], [])
        assert main([*run, "--keep"]) == 0
        groups, topics = what_remains(server.bootstrap)
        assert groups and topics and all(g.startswith("conformance-") for g in groups)


async def test_the_differential_runs_are_skipped_under_a_quick_offsets_cleanup() -> None:
    quick_cleanup = [
        "group.initial.rebalance.delay.ms=0",
        "group.min.session.timeout.ms=250",
        "offsets.retention.check.interval.ms=200",
    ]
    async with running_server(settings=quick_cleanup) as server:
        broker = await BrokerUnderTest.connect(server.bootstrap, {})
        outcomes = await run_scenarios(broker, select("differential."))
    assert {o.status for o in outcomes} == {"skipped"} and len(outcomes) == 2
    assert all("offsets.retention.check.interval.ms=200 < 60000" in o.detail for o in outcomes)


def test_a_run_that_checked_nothing_exits_5(capsys: pytest.CaptureFixture[str]) -> None:
    with server_in_thread(settings=["group.initial.rebalance.delay.ms=0"]) as server:
        nothing = main(["conformance", "--bootstrap", server.bootstrap, "-k", "no-such-rule"])
        skipped = main(["conformance", "--bootstrap", server.bootstrap, "-k", "join.initial"])
    out = capsys.readouterr().out
    assert (nothing, skipped) == (5, 5)
    assert "nothing was checked: no scenario matched" in out
    assert "nothing was checked: every scenario was skipped" in out


def test_an_unreachable_broker_is_one_line_and_status_1(
    capsys: pytest.CaptureFixture[str], unused_tcp_port: int
) -> None:
    assert main(["conformance", "--bootstrap", f"127.0.0.1:{unused_tcp_port}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot connect to 127.0.0.1:" in err[0]


def test_a_malformed_assumption_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--bootstrap", "h:1", "--assume", "nonsense"]) == 2
    assert "--assume wants KEY=" in capsys.readouterr().err
