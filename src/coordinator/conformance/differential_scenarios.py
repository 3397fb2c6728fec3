"""The differential runs as scenarios: `differential.lockstep` (time stands still) and
`differential.timed` (short timeouts, waits between steps), each a `run_differential` on a
worker thread, failed by the first divergence it finds (see `differential`). Hypothesis is
imported only when one runs."""

from __future__ import annotations

import asyncio

from coordinator.conformance.assumptions import (
    hypothesis_installed,
    no_quick_offsets_cleanup,
    setting_at_most,
    version_at_least,
)
from coordinator.conformance.scenario import Context, ScenarioFailed, expect, scenario
from coordinator.wire.api_keys import ApiKey


@scenario(
    "differential.lockstep",
    rule="every rule at once (§1.5, §1.6, §2, §3.1, §5, §7): random sequences of JoinGroup, "
    "SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch and DescribeGroups from six "
    "members of two classic groups, and ConsumerGroupHeartbeat from three of a KIP-848 group "
    "(subscribed by name, or by a regex where the broker resolves one at once), "
    "answered as the executable model (the pure core) answers them",
    kafka="the model's answers: error codes, generations, leader (where Kafka's choice is not "
    "free), protocol, member lists, assignments, offsets, group states",
    assumes=(
        hypothesis_installed,
        setting_at_most("group.initial.rebalance.delay.ms", 0),
        no_quick_offsets_cleanup,
        version_at_least(ApiKey.JOIN_GROUP, 4),
        version_at_least(ApiKey.DESCRIBE_GROUPS, 0),
        version_at_least(ApiKey.OFFSET_COMMIT, 2),
        version_at_least(ApiKey.CREATE_TOPICS, 0),
    ),
    timeout_s=None,  # run_differential keeps to its own time budget
)
async def differential(ctx: Context) -> None:
    from coordinator.conformance.differential import run_differential

    report = await asyncio.to_thread(run_differential, ctx.broker, steps=ctx.differential_steps)
    if report.failure is not None:
        raise ScenarioFailed(report.failure)
    expect(report.steps >= ctx.differential_steps, True, f"{report.summary()}: steps made")
    ctx.note = report.summary()


TIMED_STEPS_FRACTION = 40
"""A timed run makes `differential_steps // TIMED_STEPS_FRACTION` steps: its waits cost real time
(10,000 asked: 250 timed steps, about 5-10 s, nearly all of it waiting)."""


@scenario(
    "differential.timed",
    rule="the timers (§1.5 session, §2 rebalance and sync timeouts, §1.6 leader re-election; "
    "§7 KIP-848 session and revocation timeouts): the same random sequences for the two "
    "classic groups with short timeouts (900 ms session, 300 ms rebalance) and waits drawn "
    "below, between and past them, the model's clock moved by the time waited; the KIP-848 "
    "group too where the broker's group.consumer.session.timeout.ms is at most 900 ms (its "
    "members' rebalance timeout 300 ms)",
    kafka="the model's answers after each wait: parked requests the timers released, group "
    "states and members (DescribeGroups; ConsumerGroupDescribe: epochs, members, assignments "
    "and targets after fencing); waits never end near a deadline, and a run whose "
    "real time may have passed a deadline the model's has not is counted inconclusive, not "
    "failed",
    assumes=(
        hypothesis_installed,
        setting_at_most("group.initial.rebalance.delay.ms", 0),
        setting_at_most("group.min.session.timeout.ms", 900),
        no_quick_offsets_cleanup,
        version_at_least(ApiKey.JOIN_GROUP, 4),
        version_at_least(ApiKey.DESCRIBE_GROUPS, 0),
        version_at_least(ApiKey.OFFSET_COMMIT, 2),
        version_at_least(ApiKey.CREATE_TOPICS, 0),
    ),
    timeout_s=None,  # run_differential keeps to its own time budget
)
async def differential_timed(ctx: Context) -> None:
    from coordinator.conformance.differential import run_differential

    steps = max(1, ctx.differential_steps // TIMED_STEPS_FRACTION)
    report = await asyncio.to_thread(
        run_differential, ctx.broker, steps=steps, steps_per_run=25, timed=True
    )
    if report.failure is not None:
        raise ScenarioFailed(report.failure)
    expect(report.steps >= steps, True, f"{report.summary()}: steps made")
    expect(report.inconclusive < report.runs, True, f"{report.summary()}: runs clear of deadlines")
    ctx.note = report.summary()
