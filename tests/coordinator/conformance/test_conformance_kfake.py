"""`rebalance conformance` against franz-go's kfake (`kfake_broker`, built by
scripts/ensure-kfake): the product must tell the truth about a broker that is not Kafka. What kfake
answers as Kafka does passes; where kfake answers otherwise (docs/conformance.md, "Findings against
real brokers") the scenario fails, naming the step and the answers that differ; what kfake's
settings make slow or meaningless is skipped with the reason. Every scenario is accounted for: a
new one is expected to pass against kfake until a run shows otherwise.

kfake runs with classic sessions of 250 ms (`TEST_SETTINGS`); the rules that need a small
`group.max.size` or a quick offsets cleanup run on kfake brokers of their own, as on Kafka."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from coordinator.cli.main import main
from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.cleanup import clean_up
from coordinator.conformance.differential import replay
from coordinator.conformance.output import summary
from coordinator.conformance.runner import run_scenarios
from coordinator.conformance.scenario import SCENARIOS
from coordinator.testing.peers.kfake import KFAKE_ASSUMED, KfakeBroker
from coordinator.testing.peers.pytest_plugin import KfakeBrokers

#: A LeaveGroup naming a group kfake does not have: Kafka answers NONE with the member
#: UNKNOWN_MEMBER_ID, kfake GROUP_ID_NOT_FOUND. Both differential runs meet it first (shrunk).
LEAVE_OF_AN_UNKNOWN_GROUP = (
    "the broker and the model differ at step 1 (leave a0):\n"
    "  model:  error=none members=:unknown_member_id\n"
    "  broker: error=group_id_not_found\n"
)
#: The Hypothesis-driven runs: against kfake they can find two distinct divergences in one batch,
#: which the differential run does not handle yet (an ExceptionGroup ends the whole command), so
#: here the divergence they shrink to is replayed instead (test_a_leave_of_an_unknown_group_...).
DIFFERENTIAL = {"differential.lockstep", "differential.timed"}
#: Where kfake answers otherwise than Kafka: the failure each scenario reports (a pattern).
DIFFERS = {
    # No online migration: a KIP-848 join to a classic group with members is refused.
    "consumer.migration_upgrade": re.escape(
        "the KIP-848 join to the classic group: expected 'none', got 'group_id_not_found'"
    ),
    "consumer.migration_downgrade": re.escape(
        "the KIP-848 join to the classic group: expected 'none', got 'group_id_not_found'"
    ),
    # A follower that never sends SyncGroup stays a member past the rebalance timeout.
    "sync.timeout_removes_silent_members": re.escape(
        "the silent follower: expected 'unknown_member_id', got 'none'"
    ),
    # Before JoinGroup v9 the restarted static leader is made leader under another id and told
    # both members (it would assign again), where Kafka names the old id and lists none.
    "static.leader_restart_before_v9": r"leader, members: expected \('([^']+)', 0\), "
    r"got \('(?!\1')[^']+', 2\)$",
}
#: What kfake's settings leave nothing to observe in, or make slow, on the test broker.
SKIPPED = {
    "join.initial_delay": "group.initial.rebalance.delay.ms=0 < 200: nothing to observe",
    "join.max_size_refused": "group.max.size=2147483647 > 5: the scenario would be slow",
    "retention.explicit_expiry": (
        "offsets.retention.check.interval.ms=600000 > 5000: the scenario would be slow"
    ),
}
#: The rule kfake breaks on a broker with a 200 ms offsets cleanup: it expires offsets by
#: `offsets.retention.minutes` only, ignoring a commit's own retention time (OffsetCommit v2-v4).
RETENTION_DIFFERS = re.escape("the offset after its retention: expected -1, got 11")


def conformance(
    kfake: KfakeBroker, tmp_path: Path, *options: str
) -> tuple[int, dict[str, dict[str, Any]]]:
    """Run the command against `kfake`; its exit status and its JSON report's scenarios."""
    assumed = [f"--assume={key}={value}" for key, value in KFAKE_ASSUMED.items()]
    report = tmp_path / "kfake.json"
    run = ["conformance", "--bootstrap", kfake.bootstrap, *assumed, "--json", str(report)]
    status = main([*run, *options])
    scenarios = json.loads(report.read_text())["scenarios"]
    return status, {s["name"]: s for s in scenarios}


async def test_the_product_reports_kfake_scenario_by_scenario(kfake_broker: KfakeBroker) -> None:
    broker = await BrokerUnderTest.connect(kfake_broker.bootstrap, KFAKE_ASSUMED)
    chosen = [s for s in SCENARIOS if s.name not in DIFFERENTIAL]
    try:
        run = await run_scenarios(broker, chosen)
    finally:
        cleaned = await clean_up(broker)
    outcomes = {o.scenario.name: {"status": o.status, "detail": o.detail} for o in run}
    assert set(outcomes) == {s.name for s in chosen}
    for name, outcome in outcomes.items():
        if name in DIFFERS:
            assert outcome["status"] == "failed", (name, outcome["detail"])
            assert re.match(DIFFERS[name], outcome["detail"]), (name, outcome["detail"])
        elif name in SKIPPED:
            assert (outcome["status"], outcome["detail"]) == ("skipped", SKIPPED[name])
        else:
            assert outcome["status"] == "passed", (name, outcome["detail"])
    passed = len(chosen) - len(DIFFERS) - len(SKIPPED)
    assert summary(run) == f"{passed} passed, {len(DIFFERS)} failed, {len(SKIPPED)} skipped"
    assert "left:" not in cleaned.summary()


def test_a_leave_of_an_unknown_group_is_the_divergence_reported(kfake_broker: KfakeBroker) -> None:
    broker = asyncio.run(BrokerUnderTest.connect(kfake_broker.bootstrap, KFAKE_ASSUMED))
    report = replay(broker, "leave a0")
    assert report.failure is not None
    assert report.failure.startswith(LEAVE_OF_AN_UNKNOWN_GROUP), report.failure


@pytest.mark.parametrize(
    ("setting", "scenario", "status", "detail"),
    [
        ({"group.max.size": 3}, "join.max_size_refused", "passed", ""),
        (
            {"offsets.retention.check.interval.ms": 200},
            "retention.explicit_expiry",
            "failed",
            RETENTION_DIFFERS,
        ),
    ],
)
def test_the_rules_of_other_settings_are_reported_on_a_kfake_of_those_settings(
    kfake_brokers: KfakeBrokers,
    tmp_path: Path,
    setting: dict[str, object],
    scenario: str,
    status: str,
    detail: str,
) -> None:
    exit_status, outcomes = conformance(kfake_brokers.get(setting), tmp_path, "-k", scenario)
    assert list(outcomes) == [scenario]
    assert outcomes[scenario]["status"] == status, outcomes[scenario]["detail"]
    assert re.fullmatch(detail, outcomes[scenario]["detail"]), outcomes[scenario]["detail"]
    assert exit_status == (0 if status == "passed" else 1)
