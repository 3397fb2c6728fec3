"""`rebalance conformance`: connect, run the scenarios, print progress and the summary, write the
reports; exit status 1 on any failure, 5 when nothing was checked (as pytest's)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path

from coordinator.conformance.broker import BrokerError, BrokerUnderTest
from coordinator.conformance.cleanup import clean_up
from coordinator.conformance.output import (
    progress_line,
    settings_lines,
    summary,
    write_json,
    write_junit,
)
from coordinator.conformance.runner import run_scenarios, select
from coordinator.errors import OperationalError

#: The exit status of a run that checked nothing: no scenario matched `-k`, or all were skipped.
NOTHING_CHECKED = 5


def run_conformance(
    bootstrap: str,
    *,
    assume: Mapping[str, str] = {},
    pattern: str | None = None,
    json_path: Path | None = None,
    junit_path: Path | None = None,
    differential_steps: int = 10_000,
    replay: str | None = None,
    keep: bool = False,
    say: Callable[[str], None] = print,
) -> int:
    broker = asyncio.run(_connect(bootstrap, assume))
    try:
        if replay is not None:
            return _replay(broker, replay, say)
        return asyncio.run(
            _run(broker, bootstrap, pattern, json_path, junit_path, differential_steps, say)
        )
    finally:
        if not keep:  # the run's groups and topics go, whatever its outcome (`--keep`: not)
            say(asyncio.run(clean_up(broker)).summary())


async def _connect(bootstrap: str, assume: Mapping[str, str]) -> BrokerUnderTest:
    try:
        return await BrokerUnderTest.connect(bootstrap, assume)
    except BrokerError as exc:
        raise OperationalError(str(exc)) from None


def _replay(broker: BrokerUnderTest, text: str, say: Callable[[str], None]) -> int:
    from coordinator.conformance.differential import replay
    from coordinator.conformance.steps import StepSyntaxError

    try:
        report = replay(broker, text)
    except StepSyntaxError as exc:
        raise OperationalError(str(exc)) from None
    for line in report.log:
        say(line)
    if report.failure is not None:
        say(report.failure)
    say(report.summary())
    return 1 if report.failure is not None else 0


async def _run(
    broker: BrokerUnderTest,
    bootstrap: str,
    pattern: str | None,
    json_path: Path | None,
    junit_path: Path | None,
    differential_steps: int,
    say: Callable[[str], None],
) -> int:
    scenarios = select(pattern)
    say(f"conformance of {bootstrap}'s group coordinator: {len(scenarios)} scenarios")
    say("settings:")
    for line in settings_lines(broker):
        say(line)
    outcomes = await run_scenarios(
        broker, scenarios, lambda o: say(progress_line(o)), differential_steps
    )
    if json_path is not None:
        write_json(json_path, broker, outcomes)
    if junit_path is not None:
        write_junit(junit_path, outcomes)
    say(summary(outcomes))
    if any(o.status == "failed" for o in outcomes):
        return 1
    if not any(o.status == "passed" for o in outcomes):
        what = "no scenario matched" if not scenarios else "every scenario was skipped"
        say(f"nothing was checked: {what}")
        return NOTHING_CHECKED
    return 0
