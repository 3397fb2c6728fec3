"""The assignor worker's child process: a copy of each big group's inputs, brought up to date by
the parent's deltas, and the same `compute_target` as the inline path run on it.

It keeps the `uniform` assignor's previous outcome per group, so that an epoch changing one
member decodes only that member (`UniformAssignor.assign_incremental`, same result as
`assign`); it sends back only the changed members' targets, in chunks, with their target
records encoded here, and updates its copy with them; it runs at a lower CPU priority than the
server. Started as ``python -m coordinator.groups.assignor_worker.child`` (`parent.COMMAND`).
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO

import assignors
from assignors.balance import BalanceOutcome
from assignors.spec import StaticTopics
from assignors.uniform import UniformAssignor
from coordinator.groups import record_codec
from coordinator.groups.assignor_worker.messages import (
    Compute,
    Delta,
    Failed,
    Forget,
    Order,
    Prime,
    Primed,
    Result,
    Stats,
    StatsRequest,
    encode,
    read_request,
    result_chunks,
)
from coordinator.groups.store.base import StoredRecord
from rebalance.consumer_group.group import MemberInputs
from rebalance.consumer_group.records import Assignment, ConsumerGroupRecord, TargetMemberValue
from rebalance.consumer_group.target import TargetInputs, compute_target
from rebalance.topics import TopicMetadata

NICENESS = 5
"""How much lower the worker's CPU priority is than the server's (`os.nice`)."""


class _Incremental:
    """`assignors.assign` for one group, keeping `uniform`'s outcome from epoch to epoch."""

    def __init__(self) -> None:
        self.previous: BalanceOutcome | None = None

    def __call__(
        self,
        name: str,
        subscriptions: Mapping[str, list[str]],
        partitions: Mapping[str, int],
        *,
        owned: Mapping[str, list[assignors.TopicPartition]],
        member_racks: Mapping[str, str | None],
        instance_ids: Mapping[str, str],
    ) -> assignors.GroupAssignment:
        assignor = assignors.get(name)
        if not isinstance(assignor, UniformAssignor):
            self.previous = None
            return assignors.assign(
                name,
                subscriptions,
                partitions,
                owned=owned,
                member_racks=member_racks,
                instance_ids=instance_ids,
            )
        spec = assignors.group_spec(
            subscriptions, owned=owned, member_racks=member_racks, instance_ids=instance_ids
        )
        outcome = assignor.assign_incremental(spec, StaticTopics(dict(partitions)), self.previous)
        self.previous = outcome
        # what `assignors.assign` returns for an assignor with sorted output
        return {member: outcome.assignment.get(member) or [] for member in spec.members}


@dataclass
class GroupCopy:
    """The worker's copy of one group's inputs."""

    metadata: TopicMetadata = field(default_factory=TopicMetadata)
    members: dict[str, MemberInputs] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    run: _Incremental = field(default_factory=_Incremental)
    subscriptions: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)

    def delta(self, message: Delta) -> None:
        if message.metadata is not None:
            self.metadata = message.metadata
        for member_id in message.removed:
            self.members.pop(member_id, None)
        shared = self.subscriptions
        for member in message.upserts:
            # one tuple per distinct subscription, not one per member (their names arrive as
            # separate strings: ~60 MB at 10,000 members x 100 topics)
            names = shared.setdefault(member.topic_names, member.topic_names)
            self.members[member.member_id] = member._replace(topic_names=names)
        for member_id, assignment in message.targets.items():
            if assignment is None:
                self.targets.pop(member_id, None)
            else:
                self.targets[member_id] = assignment

    def warm(self, group_id: str, assignor: str) -> None:
        """Run `uniform` once over the copy and keep only its outcome, so that the next epoch
        decodes only what changed (`assign_incremental` gives `assign`'s result whatever the
        outcome it is passed). The targets stay as the parent sent them: they are its mirror's.
        Any other assignor keeps nothing, so nothing is run."""
        try:
            if not isinstance(assignors.get(assignor), UniformAssignor):
                return
            members = tuple(self.members.values())
            inputs = TargetInputs(group_id, 0, assignor, self.metadata, members, self.targets)
            compute_target(inputs, self.run, named=False)
        except Exception:  # the computation that follows meets the same failure and reports it
            self.run.previous = None

    def reorder(self, order: list[str]) -> None:
        self.members = {member_id: self.members[member_id] for member_id in order}

    def compute(
        self, group_id: str, epoch: int, assignor: str, order: list[str] | None
    ) -> dict[str, Assignment]:
        if order is not None:
            self.reorder(order)
        inputs = TargetInputs(
            group_id,
            epoch,
            assignor,
            self.metadata,
            tuple(self.members.values()),
            self.targets,
        )
        changed = compute_target(inputs, self.run, named=False).changed
        self.targets.update(changed)
        return changed


def _rows(group_id: str, chunk: dict[str, Assignment]) -> dict[str, StoredRecord]:
    """The stored rows of the chunk's target records, encoded here rather than on the server's
    loop (JSON for 10,000 changed targets is long work)."""
    return {
        member_id: record_codec.encode(
            ConsumerGroupRecord(group_id, TargetMemberValue(member_id, assignment))
        )
        for member_id, assignment in chunk.items()
    }


def _peak_rss() -> int:
    """This process's peak resident set in bytes: the kernel's VmHWM, which starts afresh at
    exec (`ru_maxrss` does not: it would report the server's size at the fork)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _compute(groups: dict[str, GroupCopy], message: Compute, outbound: IO[bytes]) -> None:
    group_id, job = message.group_id, message.job
    try:
        changed = groups.setdefault(group_id, GroupCopy()).compute(
            group_id, message.group_epoch, message.assignor, message.order
        )
    except Exception as exc:  # the assignor's failure is the core's to handle
        groups.pop(group_id, None)  # the parent forgets its mirror too
        outbound.write(encode(Failed(job, repr(exc))))
        return
    *rest, last = list(result_chunks(changed))
    for chunk in rest:
        outbound.write(encode(Result(job, chunk, _rows(group_id, chunk), False)))
    outbound.write(encode(Result(job, last, _rows(group_id, last), True)))


def serve(inbound: IO[bytes], outbound: IO[bytes]) -> None:
    """The worker's loop: messages in until the input ends."""
    with contextlib.suppress(OSError):
        # Below the server's loop for the CPU: on a busy machine the loop answering heartbeats
        # runs first and a target lands later, rather than the reverse.
        os.nice(NICENESS)
    groups: dict[str, GroupCopy] = {}
    while (message := read_request(inbound)) is not None:
        match message:
            case Delta():
                groups.setdefault(message.group_id, GroupCopy()).delta(message)
            case Compute():
                _compute(groups, message, outbound)
            case Order():
                groups.setdefault(message.group_id, GroupCopy()).reorder(message.order)
            case Prime():  # every delta before it is applied: the parent may name
                copy = groups.get(message.group_id)
                if copy is not None:
                    copy.warm(message.group_id, message.assignor)
                outbound.write(encode(Primed(message.job)))
            case Forget():
                groups.pop(message.group_id, None)
            case StatsRequest():
                outbound.write(encode(Stats(message.job, _peak_rss())))
        outbound.flush()


def main() -> None:
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
