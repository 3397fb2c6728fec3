"""Runs scenarios against a broker: each in a group of its own, with a time limit, skipped when
the broker's settings or versions break its assumptions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Imported for their registrations, in the order the scenarios run.
# isort: off
from coordinator.conformance import classic_scenarios  # noqa: F401
from coordinator.conformance import differential_scenarios  # noqa: F401
from coordinator.conformance import consumer_scenarios  # noqa: F401
from coordinator.conformance import timer_scenarios  # noqa: F401

# isort: on
from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.scenario import SCENARIOS, Context, Scenario, ScenarioFailed


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    status: str  # "passed" | "failed" | "skipped"
    detail: str
    seconds: float


def select(pattern: str | None) -> list[Scenario]:
    """Scenarios whose name contains `pattern` (all when None)."""
    return [s for s in SCENARIOS if pattern is None or pattern in s.name]


async def run_scenarios(
    broker: BrokerUnderTest,
    scenarios: Iterable[Scenario],
    on_outcome: Callable[[Outcome], None] = lambda _: None,
    differential_steps: int = 10_000,
) -> list[Outcome]:
    outcomes = []
    for s in scenarios:
        outcome = await run_one(broker, s, differential_steps)
        on_outcome(outcome)
        outcomes.append(outcome)
    return outcomes


async def run_one(
    broker: BrokerUnderTest, s: Scenario, differential_steps: int = 10_000
) -> Outcome:
    reasons = [r for r in (check(broker) for check in s.assumes) if r is not None]
    if reasons:
        return Outcome(s, "skipped", "; ".join(reasons), 0.0)
    context = Context(broker, broker.group_id(s.name), differential_steps=differential_steps)
    started = time.monotonic()
    try:
        await asyncio.wait_for(s.run(context), s.timeout_s)
        status, detail = "passed", context.note
    except ScenarioFailed as exc:
        status, detail = "failed", str(exc)
    except TimeoutError:
        status, detail = "failed", f"no answer within {s.timeout_s:.0f} s"
    except (OSError, asyncio.IncompleteReadError) as exc:
        status, detail = "failed", f"connection failed: {exc!r}"
    finally:
        await context.close()
    return Outcome(s, status, detail, time.monotonic() - started)
