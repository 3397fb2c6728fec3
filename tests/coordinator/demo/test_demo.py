"""`rebalance demo`, the README's main command, run as a user runs it.

How many generations the first three joiners take depends on timing (one initial rebalance,
two or three), so the checks are on what every run must show: the clean leave and the crash
each cost one rebalance, the stale commit is fenced, the episodes of its event log are
the generations the story went through, and nothing the demo started outlives it.

Every story runs without the Spark report (`--no-report`): its episodes are read from the event
log by the plain-Python reading of docs/analytics.md (tests/analytics/reference_episodes.py,
which tests/analytics/test_against_reference.py holds equal to the Spark job), and the report of
a real classic demo's log is covered from tests/analytics/demo_log.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from coordinator.demo.story import GROUP, live_command
from rebalance.event_schema import check_event

sys.path.insert(0, str(Path(__file__).parents[1] / "analytics"))  # importlib mode: not on the path
from reference_episodes import episodes as reference_episodes

pytestmark = [pytest.mark.interop, pytest.mark.slow]


def _processes_with(marker: str) -> list[str]:
    """Command lines of live processes whose environment holds `marker`: every process the demo
    starts (consumers, the event log writer, Spark's JVM) inherits its environment."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environment = (proc / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if marker.encode() in environment and (command := live_command(proc)) is not None:
            found.append(command)
    return found


@pytest.mark.parametrize("protocol", ["classic", "consumer", "cooperative"])
def test_the_demo_tells_the_whole_story_and_leaves_nothing_running(
    tmp_path: Path, protocol: str
) -> None:
    output = tmp_path / "demo"
    marker = f"REBALANCE_DEMO_TEST={uuid.uuid4()}"
    name, _, value = marker.partition("=")
    done = subprocess.run(
        [sys.executable, "-m", "coordinator.cli.main", "demo", "--output", str(output),
         "--protocol", protocol, "--no-report"],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
        env=os.environ | {"PYTHONUNBUFFERED": "1", name: value},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    text = done.stdout

    assert "records consumed, all members together: 1200" in text
    assert lines[-1].startswith("done in ") and lines[-1].endswith("; nothing left running")
    assert not (output / "report").exists()
    logs = sorted((output / "data" / "events").glob("events-*.jsonl"))
    assert logs
    written = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    assert [(e, check_event(e)) for e in written if check_event(e) is not None] == []
    assert _processes_with(marker) == []
    # the hint runs as printed (its arguments parse; Spark is the report's test)
    hint = re.search(r"no report \(--no-report\): (rebalance report .*) explains it", text)
    assert hint is not None, text
    command = shlex.split(hint[1])
    from coordinator.analytics.cli import build_parser

    args = build_parser("rebalance").parse_args(command[1:])
    assert (Path(args.events), Path(args.out)) == (output / "data" / "events", output / "report")
    if protocol == "consumer":
        _check_the_consumer_group_story(text, written)
        return
    if protocol == "cooperative":
        _check_the_cooperative_story(text, written)
        return

    assert "is fenced: illegal_generation" in text

    episodes = [e for e in reference_episodes(written) if e["group"] == GROUP]
    completed = [(e["generation"], e["trigger"]) for e in episodes if e["outcome"] == "completed"]
    # the last two rebalances are bob's LeaveGroup and carol's session expiry, in that order
    assert [trigger for _, trigger in completed[-2:]] == ["member_left", "member_expired"]
    assert [g for g, _ in completed] == list(range(1, len(completed) + 1))
    # three joiners in one to three rounds (each may join after the last one completed, as on
    # a loaded machine), then dave, bob, carol
    assert 4 <= len(completed) <= 6
    # every generation the story saw settle is a completed episode, the last one the last
    settled = [int(g) for g in re.findall(r": generation (\d+), stable after", text)]
    assert len(settled) == 4 and set(settled) <= {g for g, _ in completed}
    assert settled[-1] == completed[-1][0]
    # the story's last line: the members stop, the group empties
    assert (episodes[-1]["trigger"], episodes[-1]["outcome"]) == ("member_left", "empty")


def _check_the_consumer_group_story(text: str, written: list[dict[str, Any]]) -> None:
    """KIP-848: every stage settles on a later group epoch, the stale member epoch is fenced,
    and the event log tells it with `group_type` "consumer" events."""
    settled = [int(e) for e in re.findall(r": group epoch (\d+), stable after", text)]
    assert len(settled) == 4 and settled == sorted(set(settled))
    assert "bob leaves cleanly (a heartbeat with member epoch -1)" in text
    assert re.search(r"a commit from alice's member epoch \d+ \(now \d+\) is fenced: "
                     r"stale_member_epoch", text)  # fmt: skip
    group = [e for e in written if e.get("group") == "demo-billing"]
    assert {e.get("group_type") for e in group} == {"consumer"}
    bumps = [e["trigger"] for e in group if e["type"] == "group_epoch_bumped"]
    # four joins (alice, bob, carol, dave), bob's leave, carol's expiry, the last two leave
    assert sorted(bumps) == sorted(["member_joined"] * 4 + ["member_left"] * 3
                                   + ["member_expired"])  # fmt: skip
    expired = [e for e in group if e["type"] == "member_expired"]
    assert [e["reason"] for e in expired] == ["session_timeout"]
    fenced = [e for e in group if e["type"] == "commit_fenced"]
    assert [e["error"] for e in fenced] == ["STALE_MEMBER_EPOCH"]
    assert re.search(r"the KIP-848 group's 8 group epochs, from the event log", text)


SETTLED = re.compile(
    r"^(.*): generation (\d+), stable after .* partitions moved: (\d+); "
    r"revoked from members that stay: (\d+) \(moved away from them: (\d+)\)$"
)


def _check_the_cooperative_story(text: str, written: list[dict[str, Any]]) -> None:
    """KIP-429 with GroupMembers: members give back only what moves away from them, dave's
    join takes two rebalances (revoke, then assign), a leave or an expiry at least one; the stale
    generation is fenced; the group's rebalances all agreed on cooperative-sticky."""
    stages = [m.groups() for line in text.splitlines() if (m := SETTLED.match(line.strip()))]
    assert [what for what, *_ in stages] == [
        "three members", "dave joins", "bob leaves cleanly (LeaveGroup)", "carol expired"
    ]  # fmt: skip
    assert all(given == taken for *_, given, taken in stages)
    generations = [int(g) for _, g, *_ in stages]
    # dave's join takes two rebalances at least (revoke, then assign), a leave or an expiry one.
    # (Runs gave [1, 2, 1] and [2, 2, 1] while the story called a revoking round settled: a
    # stage now waits until every member holds what the coordinator gives it.)
    steps = [b - a for a, b in itertools.pairwise(generations)]
    assert steps[0] >= 2 and steps[1] >= 1 and steps[2] >= 1, steps
    assert [int(stages[1][k]) for k in (2, 3)] == [3, 3]  # dave's three came from the others
    assert [int(stage[3]) for stage in stages[2:]] == [0, 0]  # leavers' partitions: no revoke
    assert "is fenced: illegal_generation" in text
    joins = [e for e in written if e["type"] == "join_completed"]
    assert joins and {e["protocol"] for e in joins} == {"cooperative-sticky"}
