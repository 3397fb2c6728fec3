"""The demo's closing summary, computed apart from its printing: on a recorded demo log (the
classic story's, `tests/coordinator/analytics/demo_log`), the partitions each generation moved
are what the demo's own step lines count from the owners it saw (a first owner counts as a
move, as in the report: the story once said 0 for generation 1 where the report said 12), and
the summary prints one line per episode."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.demo.common import partitions_moved
from coordinator.demo.summary import Episode, Summary, ZooKeeperEpisode, tell

DEMO_LOG = Path(__file__).parents[1] / "analytics" / "demo_log"
STAGE = re.compile(r"^.*: generation (\d+), stable after")
OWNED = re.compile(r"^    (\w+)\s+\[([\d, ]*)\]$")


def owners_per_generation(steps: str) -> dict[int, dict[int, str]]:
    """Generation -> partition -> member, from the story's printed steps."""
    found: dict[int, dict[int, str]] = {}
    generation = None
    for line in steps.splitlines():
        if stage := STAGE.match(line):
            generation = int(stage[1])
            found[generation] = {}
        elif (owned := OWNED.match(line)) and generation is not None:
            for p in filter(None, owned[2].split(", ")):
                found[generation][int(p)] = owned[1]
    return found


def test_the_demo_counts_a_first_owner_as_a_move() -> None:
    assert partitions_moved({}, {0: "alice", 1: "bob"}) == 2
    assert partitions_moved({0: "alice", 1: "bob"}, {0: "alice", 1: "alice"}) == 1
    assert partitions_moved({0: "alice", 1: "bob"}, {0: "alice"}) == 0  # released, not moved


@pytest.mark.spark
# Its own JVM, not the shared session: beside the Spark worker, not after it (the critical path).
@pytest.mark.xdist_group("spark_processes")
def test_each_generation_moves_what_the_report_counts_for_the_same_log(tmp_path: Path) -> None:
    # Spark in a process of its own: `summarise` stops its session, which must not be a
    # session another test of this worker shares.
    script = (
        "import json, sys; from pathlib import Path; "
        "from coordinator.demo.summary import summarise; "
        "s = summarise(Path(sys.argv[1]), Path(sys.argv[2])); "
        "print(json.dumps([[e.label, e.partitions_moved] for e in s.episodes]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(DEMO_LOG), str(tmp_path / "report")],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    moved = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    owners = owners_per_generation((DEMO_LOG / "steps.txt").read_text())
    previous: dict[int, str] = {}
    counted = {}
    for generation, now in sorted(owners.items()):
        counted[f"generation {generation}"] = partitions_moved(previous, now)
        previous = now
    assert counted["generation 1"] == 12  # every partition got its first owner
    assert {label: moved[label] for label in counted} == counted


def test_the_summary_is_told_one_line_per_episode() -> None:
    summary = Summary(
        40,
        1,
        (Episode("generation 1", "member_joined", "completed", 3812, 12),),
        (ZooKeeperEpisode(1, 3, 2, 140, 5200),),
        Path("/tmp/report/index.html"),
    )
    lines: list[str] = []
    tell(summary, lines.append)
    assert lines == [
        "40 events (1 malformed lines) -> 1 episodes",
        "    generation 1: member_joined  completed   3812 ms, 12 partitions moved",
        "    ZooKeeper episode 1: 3 consumer runs, 2 failed claim rounds, 140 ZooKeeper requests, "
        "5200 ms without partitions (all consumers)",
        "report: /tmp/report/index.html",
    ]
