"""`rebalance conformance` against Apache Kafka's own broker (4.4, `kafka_broker`): Kafka is the
oracle, so every scenario and the timed differential run (classic groups a and b, KIP-848
group c) must pass against it. Scenarios that need other broker settings run on brokers
started with them (`kafka_brokers`). The differential runs, untimed (lockstep) and timed, run
against the broker of the KIP-848 questions (`SETTINGS`)."""

from __future__ import annotations

import asyncio

from kafka_peer_settings import BATCHED, RETENTION, SETTINGS

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.differential import replay, run_differential
from coordinator.conformance.runner import Outcome, run_scenarios
from coordinator.conformance.scenario import SCENARIOS
from coordinator.testing.peers.kafka_broker import KafkaBroker
from coordinator.testing.peers.pytest_plugin import KafkaBrokers

#: The rules that need an initial delay, a small group.max.size, or a quick offsets cleanup.
SLOW_SETTINGS = {"join.initial_delay", "join.max_size_refused", "retention.explicit_expiry"}
DIFFERENTIAL = {"differential.lockstep", "differential.timed"}


def failures(outcomes: list[Outcome]) -> list[tuple[str, str]]:
    return [(o.scenario.name, o.detail) for o in outcomes if o.status != "passed"]


async def test_every_scenario_passes_against_kafka(kafka_broker: KafkaBroker) -> None:
    broker = await BrokerUnderTest.connect(kafka_broker.bootstrap, {})
    chosen = [s for s in SCENARIOS if s.name not in SLOW_SETTINGS | DIFFERENTIAL]
    outcomes = await run_scenarios(broker, chosen)
    assert failures(outcomes) == []
    assert len(outcomes) >= 26


async def test_the_scenarios_of_other_settings_pass_against_kafka(
    kafka_brokers: KafkaBrokers,
) -> None:
    quick = await BrokerUnderTest.connect(kafka_brokers.get(BATCHED).bootstrap, {})
    outcomes = await run_scenarios(
        quick, [s for s in SCENARIOS if s.name in SLOW_SETTINGS - {"retention.explicit_expiry"}]
    )
    retention = await BrokerUnderTest.connect(kafka_brokers.get(RETENTION).bootstrap, {})
    outcomes += await run_scenarios(
        retention, [s for s in SCENARIOS if s.name == "retention.explicit_expiry"]
    )
    assert failures(outcomes) == []
    assert len(outcomes) == 3


async def test_an_untimed_lockstep_run_agrees_with_kafka(kafka_brokers: KafkaBrokers) -> None:
    # 50,000 steps ran against Kafka 4.4 without a divergence when this rule was settled.
    broker = await BrokerUnderTest.connect(kafka_brokers.get(SETTINGS).bootstrap, {})
    report = await asyncio.to_thread(
        run_differential, broker, steps=1000, steps_per_run=25, budget_s=60, timed=False
    )
    assert report.failure is None, report.failure
    assert report.groups == "a b c" and report.steps >= 1000


async def test_a_timed_differential_run_agrees_with_kafka(kafka_brokers: KafkaBrokers) -> None:
    kafka = kafka_brokers.get(SETTINGS)
    broker = await BrokerUnderTest.connect(kafka.bootstrap, {})
    report = await asyncio.to_thread(
        run_differential, broker, steps=60, steps_per_run=25, budget_s=120, timed=True
    )
    assert report.failure is None, report.failure
    assert report.groups == "a b c" and report.steps >= 60


def test_a_kip848_commit_at_an_older_member_epoch_is_judged_as_kafka_judges_it(
    kafka_brokers: KafkaBrokers,
) -> None:
    # c1 held t-0 and t-1 from epoch 2, then kept t-0 into epoch 3 (c0 joined): Kafka 4.4 takes
    # a commit of t-0 at epoch 2 (KIP-1251's assignment epochs) and refuses one of t-1.
    broker = asyncio.run(BrokerUnderTest.connect(kafka_brokers.get(SETTINGS).bootstrap, {}))
    report = replay(
        broker, "beat c1; beat c0; beat c1 join; commit c1 p0 0 stale; commit c1 p1 0 stale"
    )
    assert report.failure is None, report.failure
    answers = [line.split("-> ")[1].strip() for line in report.log[-2:]]
    assert answers == ["p0=none", "p1=stale_member_epoch"]
