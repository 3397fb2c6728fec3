"""Broker settings the tests against Apache Kafka share (each set is one broker per session)."""

from __future__ import annotations

#: KIP-848 sessions a timed differential run's waits outlast, heartbeats every 100 ms, a target
#: per epoch bump: the KIP-848 questions and the timed differential run.
SETTINGS: dict[str, object] = {
    "group.consumer.session.timeout.ms": 900,
    "group.consumer.min.session.timeout.ms": 500,
    "group.consumer.heartbeat.interval.ms": 100,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.assignment.interval.ms": 0,
    "group.consumer.assignor.offload.enable": False,
}
#: Targets batched by Kafka 4.4's default interval, and the classic rules that need an initial
#: delay and a small group.max.size (test_conformance.py's QUICK).
BATCHED: dict[str, object] = {
    **SETTINGS,
    "group.consumer.assignment.interval.ms": 1000,
    "group.initial.rebalance.delay.ms": 300,
    "group.max.size": 3,
}
#: Offsets cleaned up every 200 ms: the retention rule's broker.
RETENTION: dict[str, object] = {"offsets.retention.check.interval.ms": 200}
