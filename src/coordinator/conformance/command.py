"""`rebalance conformance`: connect, run the scenarios, print progress and the summary, write the
reports; exit status 1 on any failure."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path

from coordinator.conformance.broker import BrokerError, BrokerUnderTest
from coordinator.conformance.output import (
    progress_line,
    settings_lines,
    summary,
    write_json,
    write_junit,
)
from coordinator.conformance.runner import run_scenarios, select
from coordinator.errors import OperationalError


def run_conformance(
    bootstrap: str,
    *,
    assume: Mapping[str, str] = {},
    pattern: str | None = None,
    json_path: Path | None = None,
    junit_path: Path | None = None,
    say: Callable[[str], None] = print,
) -> int:
    return asyncio.run(_run(bootstrap, assume, pattern, json_path, junit_path, say))


async def _run(
    bootstrap: str,
    assume: Mapping[str, str],
    pattern: str | None,
    json_path: Path | None,
    junit_path: Path | None,
    say: Callable[[str], None],
) -> int:
    try:
        broker = await BrokerUnderTest.connect(bootstrap, assume)
    except BrokerError as exc:
        raise OperationalError(str(exc)) from None
    scenarios = select(pattern)
    say(f"conformance of {bootstrap}'s group coordinator: {len(scenarios)} scenarios")
    say("settings:")
    for line in settings_lines(broker):
        say(line)
    outcomes = await run_scenarios(broker, scenarios, lambda o: say(progress_line(o)))
    if json_path is not None:
        write_json(json_path, broker, outcomes)
    if junit_path is not None:
        write_junit(junit_path, outcomes)
    say(summary(outcomes))
    return 1 if any(o.status == "failed" for o in outcomes) else 0
