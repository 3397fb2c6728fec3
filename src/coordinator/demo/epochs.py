"""What each group epoch of the demo's KIP-848 group did, read from its event log (no Spark).

One line per group epoch: why it was bumped, the members then, how many partitions the target
assignment moved, and which members had to give partitions back. Under KIP-848 only those
stop fetching anything, and only the partitions they lose; everyone else keeps consuming
through the epoch (the classic eager protocol stops every member for every rebalance).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.demo.common import partitions_moved

Say = Callable[[str], None]


@dataclass
class Epoch:
    trigger: str
    members: int
    moved: int = 0
    revoking: set[str] = field(default_factory=set)


def consumer_epochs(events_dir: Path, group: str) -> dict[int, Epoch]:
    """Group epoch -> what happened in it, from the `group_type` "consumer" events."""
    epochs: dict[int, Epoch] = {}
    owners: dict[tuple[str, int], str] = {}
    for log in sorted(events_dir.glob("events-*.jsonl")):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("group") != group or event.get("group_type") != "consumer":
                continue
            epoch = event["generation"]
            if event["type"] == "group_epoch_bumped":
                epochs[epoch] = Epoch(event["trigger"], event["members"])
            elif event["type"] == "target_assignment" and epoch in epochs:
                target = {
                    (topic, p): member
                    for member, topics in event["assignments"].items()
                    for topic, partitions in topics
                    for p in partitions
                }
                epochs[epoch].moved = partitions_moved(owners, target)
                owners = target
            elif event["type"] == "member_reconciled" and event["revoking"] > 0:
                target_epoch = event["target_epoch"]
                if target_epoch in epochs:
                    epochs[target_epoch].revoking.add(event["member"])
    return epochs


def counted(count: int, noun: str) -> str:
    """`1 member`, `2 members`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def tell_consumer_epochs(events_dir: Path, group: str, say: Say) -> None:
    epochs = consumer_epochs(events_dir, group)
    say(
        f"\nthe KIP-848 group's {len(epochs)} group epochs, from the event log (a member that "
        "gives nothing back never stops consuming):"
    )
    for number, epoch in sorted(epochs.items()):
        say(
            f"    group epoch {number}: {epoch.trigger:<14} {counted(epoch.members, 'member')}, "
            f"{counted(epoch.moved, 'partition')} moved, "
            f"{counted(len(epoch.revoking), 'member')} gave some back"
        )
